"""A pre-training recipe's seeds against both floors -- their random-init controls and the char n-gram TF-IDF
baseline -- as ``reports/<name>.md`` (and a layer-curve figure) from one result store.

    python -m xeval run --model ckpt-s0 --suite engine --layers all --control random-init,charngram --out runs/
    python -m xeval run --model ckpt-s0 --suite probes --tasks alignment --layers all --control random-init --out runs/
    python bench/recipe_report.py runs/ --title "general-cpu, 2 seeds" --out reports/general-cpu.md --figure fig.png

Every model of the store whose key has no ``-random-init`` and is not ``charngram`` is a seed of the recipe;
``<name>-random-init`` is its control (same architecture and tokenizer, random weights); ``charngram`` is the string
similarity baseline (no network, no pairs; retrieval probes only, no layers). Each probe is read at the layer its own
rule chose (``choose_layers``: FLORES dev for Tatoeba and FLORES, never the reported split; the held-out pairs and
word alignment have no dev split: their best layer, marked as such), per model. Reported: per task the mean ± std
over seeds (top-1 accuracy en→xx, XTREME's official direction, and the mean of both directions; AER for alignment),
the controls and the char n-gram baseline likewise; per Tatoeba and FLORES language each seed, the mean, the
control mean, the char n-gram score and in how many languages the seeds' mean beats each floor; the means over the
Latin-script languages (where string overlap is strong); and the layer curves (every layer's language mean).
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONTROL = "-random-init"
CHARNGRAM = "charngram"
RETRIEVAL = ("tatoeba", "flores", "heldout")
TASKS = (*RETRIEVAL, "alignment")
PER_LANGUAGE = ("tatoeba", "flores")


def mean_std(values: list[float]) -> str:
    if not values:
        return "—"
    if len(values) == 1:
        return f"{values[0]:.1f} (one model)"
    return f"{statistics.mean(values):.1f} ± {statistics.stdev(values):.1f}"


def latin_languages() -> set[str]:
    """The languages whose evaluation text is in Latin script (the typology table's ``script`` column)."""
    from xeval.data.typology import typology

    table = typology()
    return set(table.index[table["script"] == "Latn"])


def _records(runs: Path) -> list:
    """The store's records as the tables show them: one per cell, a rerun with other settings beside the first
    keeping the newest, with a warning (``xeval.report.frame.shown_records``), so two configs never mix in a mean."""
    from xeval.report.frame import shown_records
    from xeval.results.store import Store

    return shown_records(Store(runs).records())


def _score(task: str, metrics: dict) -> tuple[float, float]:
    """(headline, both-direction mean): en→xx accuracy and the mean of both directions; AER twice for alignment."""
    if task == "alignment":
        return metrics["aer"], metrics["aer"]
    both = (metrics["accuracy_en_xx"] + metrics["accuracy_xx_en"]) / 2 if "accuracy_xx_en" in metrics \
        else metrics["accuracy"]
    return metrics["accuracy"], both


def collect(runs: Path):
    """(chosen, curves): chosen = {model name: {task: (layer, rule, {lang: (headline, both)})}} at each model's
    chosen layer on the reported split (never FLORES dev; the char n-gram baseline has no layer); curves =
    {model name: {task: {layer: language mean}}} on the reported split."""
    from xeval.results.layers import choose_layers, layer_curves

    records = _records(runs)
    chosen = {}
    for (model, task), (choice, curve) in choose_layers(records).items():
        if curve is None or task not in TASKS:
            continue
        if choice.rule == "dev":
            chosen[(model, task)] = (choice.layer, "FLORES dev")
        else:  # no selection split: the reported set's own best layer, which the tables mark
            chosen[(model, task)] = (curve.universal_layer, "best layer (no dev split)")
    out: dict = defaultdict(dict)
    for r in records:  # the baseline: one number per language, no layer
        u = r.unit
        if u.model.startswith(CHARNGRAM + "@") and u.task in TASKS and u.split != "dev" and r.metrics:
            out[CHARNGRAM].setdefault(u.task, (None, "no layers", {}))[2][u.lang] = _score(u.task, r.metrics)
    for (model, task), (layer, rule) in chosen.items():
        langs = {}
        for r in records:
            u = r.unit
            if u.model != model or u.task != task or u.layer != layer or u.split == "dev" or not r.metrics:
                continue
            langs[u.lang] = _score(task, r.metrics)
        out[model.split("@")[0]][task] = (layer, rule, langs)
    curves: dict = defaultdict(dict)
    for c in layer_curves(records, metric=None):
        if c.task in TASKS:
            curves[c.model.split("@")[0]][c.task] = c.scores
    return out, curves


def _models(table):
    seeds = sorted(m for m in table if not m.endswith(CONTROL) and m != CHARNGRAM)
    controls = [f"{m}{CONTROL}" for m in seeds if f"{m}{CONTROL}" in table]
    return seeds, controls


def _lang_means(table, models, task, idx, only=None):
    out = []
    for m in models:
        if task not in table.get(m, {}):
            continue
        values = [v[idx] for lang, v in table[m][task][2].items() if only is None or lang in only]
        if values:
            out.append(statistics.mean(values))
    return out


def summary(table, seeds, controls, tasks) -> list[str]:
    lines = ["| task | languages | seeds en→xx | controls en→xx | char n-gram en→xx | seeds both | controls both | "
             "char n-gram both | layer (rule) |", "|---|---|---|---|---|---|---|---|---|"]
    for task in tasks:
        n = len(table[seeds[0]][task][2]) if task in table[seeds[0]] else 0
        layers = ", ".join(f"{table[m][task][0]}" for m in seeds if task in table[m])
        rule = table[seeds[0]][task][1]
        cells = [mean_std(_lang_means(table, seeds, task, 0)), mean_std(_lang_means(table, controls, task, 0)),
                 _cell(_lang_means(table, [CHARNGRAM], task, 0)), mean_std(_lang_means(table, seeds, task, 1)),
                 mean_std(_lang_means(table, controls, task, 1)), _cell(_lang_means(table, [CHARNGRAM], task, 1))]
        name = "alignment (AER, lower is better)" if task == "alignment" else task
        lines.append(f"| {name} | {n} | " + " | ".join(cells) + f" | {layers} ({rule}) |")
    return lines


def _cell(values: list[float]) -> str:
    return f"{values[0]:.1f}" if values else "—"


def per_language(table, seeds, controls, task, latin) -> list[str]:
    langs = sorted(set().union(*(table[m][task][2] for m in seeds if task in table[m])))
    has_ngram = task in table.get(CHARNGRAM, {})
    head = " | ".join(seeds)
    lines = [f"| lang | {head} | mean | control mean | char n-gram | Δ control | Δ char n-gram | above both |",
             "|---|" + "---|" * (len(seeds) + 6)]
    above_control = above_ngram = above_both = 0
    for lang in langs:
        vals = [table[m][task][2][lang][0] for m in seeds if lang in table[m][task][2]]
        ctl = [table[c][task][2][lang][0] for c in controls if lang in table[c].get(task, (0, 0, {}))[2]]
        ngram = table[CHARNGRAM][task][2].get(lang, (float("nan"),))[0] if has_ngram else float("nan")
        mv = statistics.mean(vals)
        mc = statistics.mean(ctl) if ctl else float("nan")
        win_c, win_n = mv > mc, mv > ngram
        above_control += win_c
        above_ngram += win_n
        above_both += win_c and win_n
        script = "" if lang in latin else " *"
        lines.append(f"| {lang}{script} | " + " | ".join(f"{v:.1f}" for v in vals) +
                     f" | {mv:.1f} | {mc:.1f} | {ngram:.1f} | {mv - mc:+.1f} | {mv - ngram:+.1f} | "
                     f"{'yes' if win_c and win_n else 'no'} |")
    latin_langs = [lang for lang in langs if lang in latin]
    seeds_latin = _lang_means(table, seeds, task, 0, set(latin_langs))
    ngram_latin = _lang_means(table, [CHARNGRAM], task, 0, set(latin_langs))
    other = set(langs) - set(latin_langs)
    lines += ["", "`*`: not Latin script. Seeds' mean above the control in "
              f"**{above_control} of {len(langs)}** languages, above the char n-gram baseline in "
              f"**{above_ngram} of {len(langs)}**, above both in **{above_both}**.",
              f"Latin-script languages ({len(latin_langs)}): seeds {mean_std(seeds_latin)}, char n-gram "
              f"{_cell(ngram_latin)}; the other {len(other)}: seeds {mean_std(_lang_means(table, seeds, task, 0, other))}, "
              f"char n-gram {_cell(_lang_means(table, [CHARNGRAM], task, 0, other))}.", ""]
    return lines


def layer_table(curves, seeds, controls, task) -> list[str]:
    layers = sorted(set().union(*(curves[m].get(task, {}) for m in seeds)))
    if not layers:
        return []
    lines = ["| layer | seeds | controls |", "|---|---|---|"]
    for layer in layers:
        s = [curves[m][task][layer] for m in seeds if layer in curves[m].get(task, {})]
        c = [curves[m][task][layer] for m in controls if layer in curves.get(m, {}).get(task, {})]
        lines.append(f"| {layer} | {mean_std(s)} | {mean_std(c)} |")
    return lines


def figure(curves, table, seeds, controls, tasks, path: Path) -> None:
    """One panel per task: the seeds' language mean per layer (line: mean over seeds, band: min-max), the controls
    dashed, the char n-gram baseline dotted (one number, no layers)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = [t for t in tasks if any(t in curves[m] for m in seeds)]
    fig, axes = plt.subplots(1, len(tasks), figsize=(3.2 * len(tasks), 2.8), squeeze=False)
    for ax, task in zip(axes[0], tasks):
        for models, style, label in ((seeds, "-", "seeds"), (controls, "--", "random-init controls")):
            layers = sorted(set().union(*(curves[m].get(task, {}) for m in models))) if models else []
            if not layers:
                continue
            rows = [[curves[m][task][k] for m in models if k in curves[m].get(task, {})] for k in layers]
            ax.plot(layers, [statistics.mean(r) for r in rows], style, color="C0" if models is seeds else "C1",
                    label=label, marker="o" if models is seeds else None, ms=3)
            if len(models) > 1:
                ax.fill_between(layers, [min(r) for r in rows], [max(r) for r in rows], alpha=0.2,
                                color="C0" if models is seeds else "C1", lw=0)
        ngram = _lang_means(table, [CHARNGRAM], task, 0)
        if ngram:
            ax.axhline(ngram[0], ls=":", color="grey", label="char n-gram TF-IDF")
        metric = "AER (lower is better)" if task == "alignment" else "top-1 en→xx (%)"
        ax.set_title(task)
        ax.set_xlabel("layer (hidden_states index)")
        ax.set_ylabel(metric)
        ax.set_xticks(sorted(set().union(*(curves[m].get(task, {}) for m in seeds))))
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150)
    plt.close(fig)


FINETUNE = {"udpos": "f1", "panx": "f1", "xnli": "accuracy", "pawsx": "accuracy"}


def collect_transfer(runs: Path) -> dict:
    """{task: {model name: {lang: (split, score)}}} of the fine-tuning records (mean over fine-tuning seeds)."""
    values: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for r in _records(runs):
        u = r.unit
        if u.task in FINETUNE and r.metrics and FINETUNE[u.task] in r.metrics:
            values[u.task][u.model.split("@")[0]][(u.lang, u.split)].append(r.metrics[FINETUNE[u.task]])
    return {task: {m: {lang: (split, statistics.mean(v)) for (lang, split), v in langs.items()}
                   for m, langs in models.items()} for task, models in values.items()}


def transfer_section(runs: Path) -> list[str]:
    """Per fine-tuning task: every language's score per seed beside the control (same recipe on the random-init
    model), English, the zero-shot mean over the other languages and the transfer gap (English minus that mean)."""
    data = collect_transfer(runs)
    lines = ["## Zero-shot transfer: fine-tuned on English, tested on every language", ""]
    for task in (t for t in FINETUNE if t in data):
        models = data[task]
        seeds, controls = _models(models)
        metric = "F1" if FINETUNE[task] == "f1" else "accuracy"
        langs = sorted(set().union(*(models[m] for m in seeds)), key=lambda x: (x != "en", x))
        lines += [f"### {task} ({metric}, %)", "",
                  f"| lang | split | {' | '.join(seeds)} | mean | control mean | Δ | above control |",
                  "|---|---|" + "---|" * (len(seeds) + 4)]
        above = 0
        for lang in langs:
            split = next(models[m][lang][0] for m in seeds if lang in models[m])
            vals = [models[m][lang][1] for m in seeds if lang in models[m]]
            ctl = [models[c][lang][1] for c in controls if lang in models.get(c, {})]
            mv, mc = statistics.mean(vals), statistics.mean(ctl) if ctl else float("nan")
            above += lang != "en" and mv > mc
            lines.append(f"| {lang} | {split} | " + " | ".join(f"{v:.1f}" for v in vals) +
                         f" | {mv:.1f} | {mc:.1f} | {mv - mc:+.1f} | {'yes' if mv > mc else 'no'} |")

        def summary_of(group, models=models):
            en = [models[m]["en"][1] for m in group if "en" in models[m]]
            zero = [statistics.mean(v[1] for lang, v in models[m].items() if lang != "en") for m in group]
            gap = [e - z for e, z in zip(en, zero)]
            return mean_std(en), mean_std(zero), mean_std(gap)

        (se, sz, sg), (ce, cz, cg) = summary_of(seeds), summary_of(controls)
        others = len(langs) - ("en" in langs)
        lines += ["", f"English {se} (controls {ce}); zero-shot mean over {others} languages {sz} (controls {cz}); "
                  f"transfer gap {sg} (controls {cg}). Seeds' mean above the control in **{above} of {others}** "
                  "languages other than English.", ""]
    return lines


def build(runs: Path, title: str, command: str, how: list[str] | None = None, figure_path: Path | None = None,
          transfer: Path | None = None) -> str:
    table, curves = collect(runs)
    seeds, controls = _models(table)
    if not seeds:
        raise SystemExit(f"{runs}: no seed model with retrieval records")
    tasks = [t for t in TASKS if any(t in table[m] for m in seeds)]
    latin = latin_languages()
    lines = [f"# {title}", ""]
    if how:  # the commands that made the store
        lines += ["The runs behind this report:", "", "```", *how, "```", ""]
    lines += [f"Regenerate: `{command}`", "",
              f"Seeds: {', '.join(seeds)}; controls: {', '.join(controls) or 'none'} (same architecture and "
              "tokenizer, random weights); char n-gram: TF-IDF over character 1-4-grams, each side's IDF fitted on "
              "its own sentences, no pairs, no network (retrieval only). Scores: top-1 accuracy (%), en→xx "
              "(XTREME's official direction) and the mean of both directions, language mean, each model at the "
              "layer its rule chose (FLORES dev; never Tatoeba); word alignment: AER (OT-EMD), corpus level.", ""]
    lines += summary(table, seeds, controls, tasks)
    if figure_path is not None:
        figure(curves, table, seeds, controls, tasks, figure_path)
        lines += ["", f"![layer curves]({figure_path.name})", ""]
    for task in PER_LANGUAGE:
        if task in tasks:
            name = "Tatoeba" if task == "tatoeba" else "FLORES-200 devtest"
            lines += ["", f"## {name} per language (en→xx, %)", ""] + per_language(table, seeds, controls, task, latin)
    lines += ["## Layer curves (language mean per layer; mean ± std over models)", ""]
    for task in tasks:
        rows = layer_table(curves, seeds, controls, task)
        if rows:
            what = "AER, lower is better" if task == "alignment" else "top-1 en→xx, %"
            ngram = _lang_means(table, [CHARNGRAM], task, 0)
            floor = f"; char n-gram {ngram[0]:.1f} at no layer" if ngram else ""
            lines += [f"### {task} ({what}{floor})", "", *rows, ""]
    if transfer is not None:
        lines += transfer_section(transfer)
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", help="the result store (xeval run --out) holding the seeds, controls and baseline")
    parser.add_argument("--title", default="Pre-training recipe vs random-init control and char n-grams")
    parser.add_argument("--out", default=None, help="write the Markdown here (default: print)")
    parser.add_argument("--figure", default=None, help="also draw the layer curves here (.png / .pdf)")
    parser.add_argument("--how", action="append", default=[], help="a command that made the store (repeatable)")
    parser.add_argument("--transfer", default=None,
                        help="a store of the seeds' fine-tuning runs (xtreme-mini, --control random-init): adds "
                             "per-language zero-shot transfer and gaps")
    args = parser.parse_args(argv)
    command = "python bench/recipe_report.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    figure_path = Path(args.figure) if args.figure else None
    text = build(Path(args.runs), args.title, command, args.how, figure_path,
                 Path(args.transfer) if args.transfer else None)
    if args.out:
        from xeval.base.atomic import write_text

        write_text(Path(args.out), text)
        print(f"wrote {args.out}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    sys.exit(main())
