"""bench/recipe_report.py: a recipe's seeds against both floors (random-init control, char n-gram baseline), on a
hand-made store whose expected counts and means are computed by hand in the comments."""

from __future__ import annotations

from tests.helpers.bench import load_bench
from tests.helpers.report_records import rec, write_run


def _tatoeba(model, scores, layers=(0, 1, 2), peak=None, dev_peak=None):
    """Tatoeba records: ``scores`` {lang: en→xx at the peak layer}, 5 points lower elsewhere; dev (the selection
    split) peaks at ``dev_peak``; ``layers=None``: the char n-gram baseline (no layer)."""
    out = []
    if layers is None:
        for lang, score in scores.items():
            out.append(rec(model, "tatoeba", lang, {"accuracy": score, "accuracy_en_xx": score,
                                                    "accuracy_xx_en": score - 2}))
        return out
    for layer in layers:
        for lang, score in scores.items():
            value = score if layer == peak else score - 5
            out.append(rec(model, "tatoeba", lang, {"accuracy": value, "accuracy_en_xx": value,
                                                    "accuracy_xx_en": value}, layer=layer))
            dev = 30.0 if layer == dev_peak else 10.0
            out.append(rec(model, "tatoeba", lang, {"accuracy": dev, "accuracy_en_xx": dev, "accuracy_xx_en": dev},
                           layer=layer, split="dev"))
    return out


def test_counts_both_floors_and_the_latin_script_means(tmp_path):
    records = (
        # seeds peak at layer 2 on test but dev chooses layer 1 for s0 (test 5 points lower there) and 2 for s1
        _tatoeba("s0@000000000000", {"de": 25.0, "zh": 15.0}, peak=2, dev_peak=1)    # read at 1: de 20, zh 10
        + _tatoeba("s1@111111111111", {"de": 22.0, "zh": 12.0}, peak=2, dev_peak=2)  # read at 2: de 22, zh 12
        + _tatoeba("s0-random-init@222222222222", {"de": 5.0, "zh": 1.0}, peak=0, dev_peak=0)
        + _tatoeba("s1-random-init@333333333333", {"de": 7.0, "zh": 1.0}, peak=0, dev_peak=0)
        + _tatoeba("charngram@444444444444", {"de": 25.0, "zh": 1.0}, layers=None)
    )
    run = write_run(tmp_path / "runs", records)
    text = load_bench("recipe_report").build(run, "t", "cmd", figure_path=tmp_path / "fig.png")
    # de: seeds (20 + 22) / 2 = 21 < 25 (char n-gram), > 6 (controls); zh: 11 > 1 and > 1
    assert "| de | 20.0 | 22.0 | 21.0 | 6.0 | 25.0 | +15.0 | -4.0 | no |" in text
    assert "| zh * | 10.0 | 12.0 | 11.0 | 1.0 | 1.0 | +10.0 | +10.0 | yes |" in text
    assert "above the control in **2 of 2** languages, above the char n-gram baseline in **1 of 2**" in text
    # Latin script (de): seeds 20 and 22 -> 21.0 ± 1.4; char n-gram 25.0; the other (zh): 10, 12 -> 11.0 ± 1.4
    assert "Latin-script languages (1): seeds 21.0 ± 1.4, char n-gram 25.0; the other 1: seeds 11.0 ± 1.4" in text
    # summary: seed means (20+10)/2 = 15, (22+12)/2 = 17 -> 16.0 ± 1.4; controls 3, 4 -> 3.5 ± 0.7; char n-gram 13.0,
    # both directions (25 + 23) / 2 and (1 - 1) / 2 -> 12.0
    assert "| tatoeba | 2 | 16.0 ± 1.4 | 3.5 ± 0.7 | 13.0 | 16.0 ± 1.4 | 3.5 ± 0.7 | 12.0 | 1, 2 (FLORES dev) |" in text
    # the layer curve, every model at every layer: layer 2 = s0 (25 + 15) / 2 = 20, s1 17 -> 18.5 ± 2.1; controls
    # 5 points under their layer-0 peak: (0 + -4) / 2 = -2 and (2 + -4) / 2 = -1 -> -1.5 ± 0.7
    curves = text.split("## Layer curves")[1]
    assert "\n| 2 | 18.5 ± 2.1 | -1.5 ± 0.7 |\n" in curves
    assert (tmp_path / "fig.png").stat().st_size > 0


def test_transfer_section_counts_languages_above_the_control_and_the_gap(tmp_path):
    # UD-POS F1: s0 en 80 de 50 zh 30, s1 en 82 de 54 zh 26; controls en 40 de 20 zh 28 (both seeds)
    scores = {"s0@000000000000": (80.0, 50.0, 30.0), "s1@111111111111": (82.0, 54.0, 26.0),
              "s0-random-init@222222222222": (40.0, 20.0, 28.0), "s1-random-init@333333333333": (40.0, 20.0, 28.0)}
    records = [rec(model, "udpos", lang, {"f1": v}, split="dev" if lang == "de" else "test")
               for model, values in scores.items() for lang, v in zip(("en", "de", "zh"), values)]
    run = write_run(tmp_path / "transfer", records)
    text = "\n".join(load_bench("recipe_report").transfer_section(run))
    assert "| de | dev | 50.0 | 54.0 | 52.0 | 20.0 | +32.0 | yes |" in text
    assert "| zh | test | 30.0 | 26.0 | 28.0 | 28.0 | +0.0 | no |" in text
    # zero-shot means: s0 (50 + 30) / 2 = 40, s1 40 -> 40.0 ± 0.0; gaps 80 - 40 = 40, 82 - 40 = 42 -> 41.0 ± 1.4
    assert ("English 81.0 ± 1.4 (controls 40.0 ± 0.0); zero-shot mean over 2 languages 40.0 ± 0.0 (controls "
            "24.0 ± 0.0); transfer gap 41.0 ± 1.4 (controls 16.0 ± 0.0)") in text
    assert "above the control in **1 of 2** languages other than English" in text
