"""The plain-text tables ``xeval run`` prints as each task ends: a row per language, a column per metric (mean ±
std over seeds), one compact layer-by-language table for a probe swept over several layers."""

from __future__ import annotations

import statistics
from collections import defaultdict

from xeval.cards.label_free import LABEL as UNSCORED
from xeval.report.frame import headline_metric, with_compat_setting
from xeval.results.controls import CONTROLS, LABELS, MODEL_FREE, control_parents
from xeval.results.layers import (
    SELECTION_SPLIT,
    choose_layers,
    probe_mode_chosen,
    reported_split,
    selection_source,
)


def summarise(records) -> dict:
    """{(task, setting, layer, mode): {(lang, split): {metric: (mean, std, n_seeds)}}} over seeds (sample std; 0
    for one seed), plus n_examples under the pseudo-metric "n"."""
    groups: dict = defaultdict(lambda: defaultdict(list))  # insertion order: suite order of the tasks
    for rec in records:
        u = rec.unit
        groups[(u.task, u.setting, u.layer, u.mode)][(u.lang, u.split)].append(rec)
    out: dict = {}
    for key, by_lang in groups.items():
        out[key] = {}
        for lang_split, recs in by_lang.items():
            metrics = {}
            for name in recs[0].metrics:
                values = [r.metrics[name] for r in recs if name in r.metrics]
                std = statistics.stdev(values) if len(values) > 1 else 0.0
                metrics[name] = (statistics.fmean(values), std, len(values))
            metrics["n"] = (recs[0].n_examples, 0.0, len(recs))
            out[key][lang_split] = metrics
    return out


def _cell(value: tuple) -> str:
    mean, std, k = value
    if k == 0:
        return "-"  # no number for this language (label-free: predictions stored unscored)
    return f"{mean:.1f} ± {std:.1f}" if k > 1 else f"{mean:.1f}"


def _grid(title: str, header: list[str], body: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    lines = [title, "  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in body]
    return "\n".join(lines)


def format_layer_table(task: str, setting: str, by_layer: dict, control: dict | None = None,
                       control_label: str = "", choice=None, flat: dict | None = None) -> str:
    """A probe run over several layers as ONE compact table: a row per language (pair), a column per layer, the
    headline metric in each cell (AER for word alignment, en→xx accuracy for Tatoeba, ...), an ``avg`` row over the
    reported split and, when the selection split ran, an ``avg (dev)`` row over it. ``choice`` (a
    ``xeval.results.layers.LayerChoice``) is the layer the probe is reported at: chosen on the selection split,
    never on the reported one, and the title says how. ``control`` ({layer: rows} of a ``--control``) adds its
    ``avg`` row; ``flat`` ({label: rows} of a control without layers: the char n-gram baseline) an ``avg`` row
    with its one number under every layer, a floor as a horizontal line is in the figure. Label-free rows
    (XTREME's download) read "unscored"."""
    layers = sorted(by_layer)
    names = [m for rows in by_layer.values() for metrics in rows.values() for m in metrics if m != "n"]
    head = headline_metric(task, names) if names else None
    keys = sorted({key for rows in by_layer.values() for key in rows})
    reported = reported_split({split for _, split in keys})
    selection = [k for k in keys if k[1] == SELECTION_SPLIT and reported != SELECTION_SPLIT]
    shown = [k for k in keys if k not in selection]
    source = selection_source(task)  # Tatoeba's dev rows are FLORES-200, not Tatoeba

    def label(split: str) -> str:
        return f"{split} ({source})" if split == SELECTION_SPLIT and source else split

    def row(lang: str, split: str) -> list[str]:
        cells = [lang, label(split)]
        for layer in layers:
            metrics = by_layer[layer].get((lang, split), {})
            value = metrics.get(head) if head else None
            cells.append(_cell(value) if value else ("unscored" if len(metrics) == 1 else ""))
        return cells

    def averages(group: list) -> list[str]:
        out = []
        for layer in layers:
            values = [by_layer[layer][key][head][0] for key in group if head in by_layer[layer].get(key, {})]
            out.append(f"{statistics.fmean(values):.1f}" if values and len(values) == len(group) else "")
        return out

    body = [row(*key) for key in shown]  # the reported split, its average (and the control's), then selection
    if head and len(shown) > 1:
        body.append(["avg", ""] + averages(shown))
    if control and head:
        cells = []
        for layer in layers:
            values = [control[layer][key][head][0] for key in shown if head in control.get(layer, {}).get(key, {})]
            cells.append(f"{statistics.fmean(values):.1f}" if len(values) == len(shown) else "")
        body.append([f"avg ({control_label})", ""] + cells)
    for flat_label, rows in (flat or {}).items() if head else ():
        values = [rows[key][head][0] for key in shown if head in rows.get(key, {})]
        cell = f"{statistics.fmean(values):.1f}" if values and len(values) == len(shown) else ""
        body.append([f"avg ({flat_label}, no layers)", ""] + [cell] * len(layers))
    body += [row(*key) for key in selection]
    if head and selection:
        body.append([f"avg ({SELECTION_SPLIT}{', ' + source if source else ''})", ""] + averages(selection))
    chosen = f"; reported at layer {choice.layer}: {choice.describe()}" if choice is not None else ""
    title = f"{task} ({setting}; {head or 'label-free: predictions only'} by layer, hidden_states index{chosen})"
    return _grid(title, ["lang", "split", *map(str, layers)], body)


def format_tables(records) -> str:
    """One plain-text table per task: a row per language, a column per metric (mean ± std over seeds), and the
    unweighted mean over languages (the per-task number XTREME averages). Records of a control (``--control``) are
    not tables of their own: their headline metric is one more column, "<metric> (random init)", beside the model's.
    Records run under ``--compat xtreme`` are titled "<setting>, compat xtreme"."""
    records = with_compat_setting(probe_mode_chosen(list(records)))
    parents = control_parents(records)
    main = [r for r in records if r.unit.model not in parents] or records
    by_kind = {}  # control kind -> its summary (a control's keys have its own layers: None for char n-grams)
    if len(main) < len(records):
        for kind in CONTROLS:
            mine = [r for r in records if parents.get(r.unit.model, (None, None))[1] == kind]
            if mine:
                by_kind[kind] = summarise(mine)
    layered_kinds = [k for k in by_kind if k not in MODEL_FREE]
    controls = {key: rows for k in layered_kinds for key, rows in by_kind[k].items()}
    kinds = sorted(layered_kinds)
    blocks = []
    summary = summarise(main)
    choices = {task: choice for (model, task), (choice, _) in choose_layers(main).items()}
    layered: dict = defaultdict(dict)  # (task, setting) -> {layer: rows} for probes run over several layers
    for (task, setting, layer, mode), rows in summary.items():
        if layer is not None and mode != "probe":  # probe mode: its chosen layer only
            layered[(task, setting)][layer] = rows
    compact = {key for key, by_layer in layered.items() if len(by_layer) > 1}
    shown: set = set()
    for (task, setting, layer, mode), rows in summary.items():
        if mode != "probe" and (task, setting) in compact:
            if (task, setting) not in shown:
                shown.add((task, setting))
                twin = {k[2]: v for k, v in controls.items()
                        if k[:2] == (task, setting) and k[2] is not None and k[3] != "probe"}
                flat = {LABELS[k]: by_kind[k][(task, setting, None, "finetune")] for k in by_kind
                        if k in MODEL_FREE and (task, setting, None, "finetune") in by_kind[k]}
                blocks.append(format_layer_table(task, setting, layered[(task, setting)], twin,
                                                 ", ".join(LABELS[k] for k in kinds), choices.get(task), flat))
            continue
        # every language's metrics: a label-free language (no metrics) listed first must not hide the others'
        names = list(dict.fromkeys(m for v in rows.values() for m in v if m != "n"))
        unscored_rows = {key for key, metrics in rows.items() if len(metrics) == 1}  # only "n": label-free
        if not names:
            names = ["score"]
        seeds = max(v["n"][2] for v in rows.values())
        if mode == "probe":
            title = f"{task} (probe: frozen encoder + linear head, {setting}, layer {layer} chosen on " \
                    f"{_probe_selection(records, task, setting, layer)})"
        else:
            title = f"{task} ({setting}{'' if layer is None else f', layer {layer}'}; {seeds} seed{'s' * (seeds > 1)})"
        header = ["lang", "split", "n"] + names
        # a column per control kind: the random-init twin at the model's layer, the char n-gram rows (no layer)
        columns = [(LABELS[k], by_kind[k].get((task, setting, None if k in MODEL_FREE else layer, mode)))
                   for k in by_kind]
        columns = [(label, rows) for label, rows in columns if rows]
        head = headline_metric(task, names) if columns else None
        header += [f"{head} ({label})" for label, _ in columns]
        body = []
        for (lang, split), metrics in sorted(rows.items()):
            cells = [lang, split, str(metrics["n"][0])]
            if (lang, split) in unscored_rows and names == ["score"]:  # every row label-free: say it in the cell
                body.append(cells + [UNSCORED] + [""] * (len(header) - len(cells) - 1))
                continue
            for name in names:
                cells.append(_cell(metrics.get(name, (float("nan"), 0.0, 0))))
            for _, control in columns:
                cells.append(_cell(control.get((lang, split), {}).get(head, (float("nan"), 0.0, 0))))
            body.append(cells)
        splits = sorted({split for _, split in rows})
        if len(rows) > 1 and not unscored_rows:  # an average over some languages only would mislead
            avg = ["avg", "+".join(splits) if len(splits) > 1 else "", ""]
            for name in names:
                values = [m[name][0] for m in rows.values() if name in m]
                avg.append(f"{statistics.fmean(values):.1f}")
            for _, control in columns:
                values = [control.get(key, {}).get(head, (float("nan"),))[0] for key in rows]
                avg.append(f"{statistics.fmean(values):.1f}")
            body.append(avg)
        note = f"\n- = {UNSCORED}: XTREME's test files carry no gold; predictions are exported, never scored"
        mixed = _mixed_note(rows) if len(splits) > 1 and len(rows) > 1 and not unscored_rows else ""
        blocks.append(_grid(title, header, body) + (note if unscored_rows and names != ["score"] else "") + mixed)
    return "\n\n".join(blocks)


def _mixed_note(rows: dict) -> str:
    """The line under a table whose average spans splits: it is not a test-set number."""
    counts = defaultdict(int)
    for _, split in rows:
        counts[split] += 1
    parts = " and ".join(f"{n} {split}" for split, n in sorted(counts.items()))
    return f"\navg spans splits ({parts} languages): not a test-set number"


def _probe_selection(records: list, task: str, setting: str, layer) -> str:
    """"en/dev (accuracy 61.2 there; layers 0-6: 55.0 58.1 ...)" for a table title."""
    for r in records:
        sel = (r.extra or {}).get("probe_selection")
        if r.unit.mode == "probe" and r.unit.task == task and r.unit.setting == setting and r.unit.layer == layer \
                and sel:
            return f"{sel['on']}, {sel['metric']} {sel['score']:.1f} there"
    return "the selection set"
