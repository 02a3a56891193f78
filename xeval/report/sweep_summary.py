"""The lines ``xeval run`` prints after its tables when probes ran over several layers: the layer each probe is
reported at (chosen on the selection split, never on the reported one) with its score there, beside its control's;
for ``--mode probe`` the layer chosen on the selection set with every layer's selection score; and the layer-sweep
figure of ``--plot``."""

from __future__ import annotations

from collections import defaultdict

from xeval.report import plots
from xeval.report.tables import base as tables
from xeval.results.controls import LABELS, MODEL_FREE, control_parents
from xeval.results.layers import choose_layers, chosen_layers, layer_curves


def sweep_lines(records) -> list[str]:
    """One line per probe run over several layers (and per probe-mode task first)."""
    lines = probe_mode_lines(records)
    records = [r for r in records if r.unit.mode != "probe"]  # probe mode picks its layer on English dev (above)
    chosen = {k: v for k, v in choose_layers(records).items() if len({r.unit.layer for r in records
                                                                        if (r.unit.model, r.unit.task) == k
                                                                        and r.unit.layer is not None}) > 1}
    parents = control_parents(records)

    def phrase(choice, curve) -> str:
        text = f"layer {choice.layer} ({choice.describe()}"
        if choice.selection_score is not None:
            text += f": {curve.metric if curve else 'score'} {choice.selection_score:.1f} there"
        text += ")"
        if curve is not None and choice.layer in curve.scores:
            text += (f"; {curve.split} {curve.metric} {curve.scores[choice.layer]:.1f}, mean over "
                     f"{len(curve.languages)} languages")
        elif curve is None:
            text += "; the reported split is label-free (predictions exported)"
        return text

    for (model, task), (choice, curve) in chosen.items():
        if model in parents:
            continue
        line = f"{task}: {phrase(choice, curve)}"
        for (other, other_task), (c2, curve2) in chosen.items():
            if other_task == task and parents.get(other, (None,))[0] == model:
                line += f"; {LABELS[parents[other][1]]}: {phrase(c2, curve2)}"
        for other, (parent, kind) in parents.items():
            if parent == model and kind in MODEL_FREE:
                line += layerless_phrase(records, other, task, curve, LABELS[kind])
        lines.append(line)
    return lines


def layerless_phrase(records, model: str, task: str, curve, label: str) -> str:
    """"; char n-gram TF-IDF (no layers): test accuracy 14.2, mean over 4 languages" for a control without layers
    (the char n-gram baseline), over the languages of the model's curve; "" when it has no record of them all."""
    if curve is None:
        return ""
    values = {r.unit.lang: r.metrics[curve.metric] for r in records
              if r.unit.model == model and r.unit.task == task and r.unit.split == curve.split
              and r.unit.layer is None and curve.metric in r.metrics}
    if not values or not set(curve.languages) <= set(values):
        return ""
    mean = sum(values[lang] for lang in curve.languages) / len(curve.languages)
    return (f"; {label} (no layers): {curve.split} {curve.metric} {mean:.1f}, mean over "
            f"{len(curve.languages)} languages")


def probe_mode_lines(records) -> list[str]:
    """--mode probe: per task, the layer chosen on the selection set and every layer's selection score."""
    scores: dict = defaultdict(dict)
    for r in records:
        sel = (r.extra or {}).get("probe_selection")
        if r.unit.mode == "probe" and sel:
            scores[(r.unit.model, r.unit.task, r.unit.setting)][r.unit.layer] = sel["score"]
    lines = []
    for key, (layer, _score, on) in chosen_layers(records).items():
        by_layer = " ".join(f"L{k} {v:.1f}" for k, v in sorted(scores[key].items()))
        lines.append(f"probe layer of {key[1]} ({key[0]}): {layer}, chosen on {on} ({by_layer})")
    return lines


def sweep_figure(records, stem: str) -> str:
    """``--plot STEM``: the layer-sweep figure (PNG and PDF), and the line that says where it went."""
    records = [r for r in records if r.unit.mode != "probe"]
    if not [c for c in layer_curves(records) if len(c.scores) > 1]:
        return "--plot: no probe was run over several layers; no figure written"
    paths = plots.plot(tables.Results(records), "layers", stem)
    return "layer-sweep figure: " + ", ".join(map(str, paths))
