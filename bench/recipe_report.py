"""A pre-training recipe's seeds against their random-init controls: ``reports/<name>.md`` from one result store.

    python -m xeval run --model ckpt-s0 --suite engine --layers all --control random-init --out runs/   # each seed
    python bench/recipe_report.py runs/ --title "general-cpu, 2 seeds" --out reports/general-cpu.md

Every model of the store whose key has no ``-random-init`` is a seed of the recipe; ``<name>-random-init`` is its
control (same architecture and tokenizer, random weights). Each probe is read at the layer its own rule chose
(``choose_layers``: FLORES dev for Tatoeba and FLORES, never the reported split; the held-out set has no dev split:
its best layer, marked), per model. Reported: per task the mean ± std over seeds (top-1 accuracy en→xx, XTREME's
official direction, and the mean of both directions), the controls likewise; per Tatoeba language each seed, the
mean, the control mean and Δ; and in how many languages the seeds' mean beats the controls' mean.
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


def mean_std(values: list[float]) -> str:
    if not values:
        return "—"
    if len(values) == 1:
        return f"{values[0]:.1f} (1 seed)"
    return f"{statistics.mean(values):.1f} ± {statistics.stdev(values):.1f}"


def collect(runs: Path):
    """{model name: {task: (layer, rule, {lang: (en->xx, both-direction mean)})}} at each model's chosen layer, on
    the reported split (never FLORES dev)."""
    from xeval.results.layers import choose_layers
    from xeval.results.store import Store

    records = list(Store(runs).records())
    chosen = {}
    for (model, task), (choice, curve) in choose_layers(records).items():
        if curve is None:
            continue
        if choice.rule == "dev":
            chosen[(model, task)] = (choice.layer, "FLORES dev")
        else:
            chosen[(model, task)] = (curve.universal_layer, "best layer (no dev split)")
    out: dict = defaultdict(dict)
    for (model, task), (layer, rule) in chosen.items():
        langs = {}
        for r in records:
            u = r.unit
            if u.model != model or u.task != task or u.layer != layer or u.split == "dev" or not r.metrics:
                continue
            m = r.metrics
            both = (m["accuracy_en_xx"] + m["accuracy_xx_en"]) / 2 if "accuracy_xx_en" in m else m["accuracy"]
            langs[u.lang] = (m["accuracy"], both)
        out[model.split("@")[0]][task] = (layer, rule, langs)
    return out


def build(runs: Path, title: str, command: str, how: list[str] | None = None) -> str:
    table = collect(runs)
    seeds = sorted(m for m in table if not m.endswith(CONTROL))
    controls = [f"{m}{CONTROL}" for m in seeds if f"{m}{CONTROL}" in table]
    tasks = [t for t in ("tatoeba", "flores", "heldout") if any(t in table[m] for m in seeds)]
    lines = [f"# {title}", ""]
    if how:  # the commands that made the store
        lines += ["The runs behind this report:", "", "```", *how, "```", ""]
    lines += [f"Regenerate: `{command}`", "",
             f"Seeds: {', '.join(seeds)}; controls: {', '.join(controls) or 'none'} (same architecture and tokenizer, "
             "random weights). Scores: top-1 accuracy (%), en→xx (XTREME's official direction) and the mean of both "
             "directions, language mean, each model at the layer its rule chose (FLORES dev; never Tatoeba).", "",
             "| task | languages | seeds en→xx | controls en→xx | seeds both | controls both | layer (rule) |",
             "|---|---|---|---|---|---|---|"]

    def lang_means(models, task, idx):
        return [statistics.mean(v[idx] for v in table[m][task][2].values()) for m in models if task in table[m]]

    for task in tasks:
        n = len(table[seeds[0]][task][2]) if task in table[seeds[0]] else 0
        layers = ", ".join(f"{table[m][task][0]}" for m in seeds if task in table[m])
        rule = table[seeds[0]][task][1]
        lines.append(f"| {task} | {n} | {mean_std(lang_means(seeds, task, 0))} | "
                     f"{mean_std(lang_means(controls, task, 0))} | {mean_std(lang_means(seeds, task, 1))} | "
                     f"{mean_std(lang_means(controls, task, 1))} | {layers} ({rule}) |")
    if "tatoeba" in tasks:
        langs = sorted(set().union(*(table[m]["tatoeba"][2] for m in seeds if "tatoeba" in table[m])))
        head = " | ".join(seeds)
        lines += ["", "## Tatoeba per language (en→xx, %)", "",
                  f"| lang | {head} | mean | control mean | Δ | above control |",
                  "|---|" + "---|" * (len(seeds) + 4)]
        above = 0
        for lang in langs:
            vals = [table[m]["tatoeba"][2][lang][0] for m in seeds if lang in table[m]["tatoeba"][2]]
            ctl = [table[c]["tatoeba"][2][lang][0] for c in controls if lang in table[c].get("tatoeba", (0, 0, {}))[2]]
            mv, mc = statistics.mean(vals), statistics.mean(ctl) if ctl else float("nan")
            win = mv > mc
            above += win
            lines.append(f"| {lang} | " + " | ".join(f"{v:.1f}" for v in vals) +
                         f" | {mv:.1f} | {mc:.1f} | {mv - mc:+.1f} | {'yes' if win else 'no'} |")
        lines += ["", f"Above the control (seeds' mean > controls' mean): **{above} of {len(langs)}** languages.", ""]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", help="the result store (xeval run --out) holding the seeds and their controls")
    parser.add_argument("--title", default="Pre-training recipe vs random-init control")
    parser.add_argument("--out", default=None, help="write the Markdown here (default: print)")
    parser.add_argument("--how", action="append", default=[], help="a command that made the store (repeatable)")
    args = parser.parse_args(argv)
    command = "python bench/recipe_report.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    text = build(Path(args.runs), args.title, command, args.how)
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
