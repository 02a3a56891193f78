"""Language neutrality: linear CKA and the language-ID probe on inputs with known answers, mean-centring for
retrieval, and the neutrality card end to end (records, resume, the plot)."""

import numpy as np
import pytest

from tests.helpers import transfer as helpers_transfer
from xeval.adapters.probes.neutrality import language_id_accuracy, linear_cka
from xeval.adapters.probes.retrieval import both_directions, center, direction_scores
from xeval.cli import main
from xeval.results.store import Store


def test_linear_cka_known_values():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(500, 8))
    q, _ = np.linalg.qr(rng.normal(size=(8, 8)))
    assert linear_cka(x, x) == pytest.approx(1.0)
    assert linear_cka(x, 3.0 * x @ q + 5.0) == pytest.approx(1.0)  # rotation, scale and shift: the same geometry
    assert linear_cka(x, rng.normal(size=(500, 8))) < 0.05  # independent: near 0 (about H/N)
    # one shared direction out of 8: in between
    y = rng.normal(size=(500, 8))
    y[:, 0] = x[:, 0]
    assert 0.05 < linear_cka(x, y) < 0.5


def test_language_id_probe_separable_and_permuted():
    rng = np.random.default_rng(1)
    n, langs = 60, 3
    centres = rng.normal(scale=4.0, size=(langs, 16))
    vectors = np.concatenate([c + rng.normal(size=(n, 16)) for c in centres])
    labels = np.repeat(np.arange(langs), n)
    groups = np.tile(np.arange(n), langs)
    accuracy, folds = language_id_accuracy(vectors, labels, groups)
    assert accuracy == 100.0 and len(folds) == 5
    # labels shuffled within each sentence group: nothing to learn, accuracy near chance (33.3)
    shuffled = labels.copy()
    for g in range(n):
        idx = np.where(groups == g)[0]
        shuffled[idx] = rng.permutation(shuffled[idx])
    chance, _ = language_id_accuracy(vectors, shuffled, groups)
    assert chance < 50.0


def test_centring_removes_a_language_offset():
    rng = np.random.default_rng(2)
    en = rng.normal(size=(200, 32))
    xx = en + 0.3 * rng.normal(size=(200, 32)) + 40.0 * rng.normal(size=(1, 32))  # one big offset for the language
    raw = direction_scores(*both_directions(xx, en))
    centred = direction_scores(*both_directions(center(xx), center(en)))
    assert centred["accuracy"] == 100.0 and centred["accuracy_xx_en"] == 100.0
    assert raw["accuracy_xx_en"] < 20.0  # every xx vector points along the offset: cosine sees only that
    assert np.allclose(center(xx).mean(axis=0), 0.0)


@pytest.mark.slow
def test_neutrality_card_and_centred_retrieval(tmp_path, data_root, capsys):
    model = helpers_transfer.tiny_model(data_root)
    out = tmp_path / "runs"
    base = ["run", "--model", str(model), "--suite", "probes", "--data", str(data_root), "--out", str(out),
            "--max-eval", "40", "--threads", "1", "--control", "random-init"]
    assert main([*base, "--langs", "en,de,ru,zh", "--tasks", "neutrality,flores"]) == 0
    records = list(Store(out).records())
    neutral = [r for r in records if r.unit.task == "neutrality" and "random-init" not in r.unit.model]
    layers = sorted({r.unit.layer for r in neutral})
    assert layers == [0, 1, 2]  # every hidden state of the 2-layer model from one pass
    langid = {r.unit.layer: r for r in neutral if r.unit.lang == "all"}
    assert set(langid) == set(layers)
    for r in langid.values():
        assert r.metrics["langid_chance"] == 25.0 and r.n_examples == 160
        # en, de (Latin), ru (Cyrillic), zh (Han): scripts alone tell most languages apart, trained or not
        assert r.metrics["langid_accuracy"] > 50.0
        assert r.config["languages"] == ["en", "de", "ru", "zh"]
    cka = [r for r in neutral if r.unit.lang != "all"]
    assert {r.unit.lang for r in cka} == {"de", "ru", "zh"} and all(0 < r.metrics["cka"] <= 100 for r in cka)
    flores = [r for r in records if r.unit.task == "flores"]
    assert flores and not any("centered_accuracy" in r.metrics for r in flores)
    # centring asked for later: another config, so records of their own beside the raw-only ones, raw unchanged
    raw = {(r.unit.model, r.unit.lang, r.unit.layer): r.metrics["accuracy"] for r in flores}
    assert main([*base, "--langs", "de,ru,zh", "--tasks", "flores", "--set", "center=true"]) == 0
    again = [r for r in Store(out).records() if r.unit.task == "flores" and "centered_accuracy" in r.metrics]
    assert len(again) == len(flores) and {r.unit.config_hash for r in again}.isdisjoint(
        {r.unit.config_hash for r in flores})
    assert {(r.unit.model, r.unit.lang, r.unit.layer): r.metrics["accuracy"] for r in again} == raw
    for r in again:
        m = r.outcomes().metrics
        assert float(m["centered_accuracy"].value()) == pytest.approx(r.metrics["centered_accuracy"])
    capsys.readouterr()
    assert main(["report", str(out), "--plot", "neutrality", "--figures", str(tmp_path / "fig")]) == 0
    assert (tmp_path / "fig" / "neutrality.png").stat().st_size > 10_000
    assert main(["report", str(out), "--table", "neutrality", "--format", "csv"]) == 0
    table = capsys.readouterr().out
    for measure in ("language ID accuracy (%)", "CKA with English × 100", "flores accuracy, raw",
                    "flores accuracy, centred"):
        assert table.count(measure) == 2, measure  # the model's row and its control's
    assert "L0" in table and "L2" in table
