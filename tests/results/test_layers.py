"""Layer sweeps (universal layer, figure), lexicon induction, BUCC probe end to end on a tiny corpus."""

from __future__ import annotations

import numpy as np
import pytest

from xeval.results.layers import layer_curves, universal_layer
from xeval.results.store import Record, Unit


def rec(task, lang, layer, **metrics):
    return Record(Unit("m@1", task, lang, "test", 0, layer), metrics, 10)


def test_universal_layer_is_argmax_of_language_mean():
    records = [
        rec("tatoeba", "de", 0, accuracy=10), rec("tatoeba", "de", 1, accuracy=50), rec("tatoeba", "de", 2, accuracy=40),
        rec("tatoeba", "fr", 0, accuracy=10), rec("tatoeba", "fr", 1, accuracy=20), rec("tatoeba", "fr", 2, accuracy=60),
        rec("tatoeba", "ja", 2, accuracy=0),  # only one layer: left out of the mean, not counted as zero elsewhere
        rec("alignment", "de-en", 0, aer=50), rec("alignment", "de-en", 1, aer=30), rec("alignment", "de-en", 2, aer=35),
        Record(Unit("m@1", "xnli", "de", "test", 1, None), {"accuracy": 70}, 10),  # fine-tuning: ignored
    ]
    found = universal_layer(records)
    assert found[("m@1", "tatoeba")] == (2, 50.0)  # means: 10, 35, 50
    assert found[("m@1", "alignment")] == (1, 30)  # AER: lowest is best
    curve = next(c for c in layer_curves(records) if c.task == "tatoeba")
    assert curve.languages == ["de", "fr"] and curve.scores == {0: 10, 1: 35, 2: 50}


def test_ties_pick_the_lowest_layer():
    records = [rec("t", "de", k, accuracy=5) for k in range(4)]
    assert universal_layer(records)[("m@1", "t")] == (0, 5)


def test_plot_writes_png_and_pdf(tmp_path):
    from xeval.report import plots
    from xeval.report.tables import base as tables

    records = [rec("tatoeba", lang, k, accuracy=k * 10 + i) for i, lang in enumerate("ab") for k in range(4)]
    records += [rec("alignment", "de-en", k, aer=60 - k * 5) for k in range(4)]
    paths = plots.plot(tables.Results(records), "layers", tmp_path / "sweep")
    assert [p.suffix for p in paths] == [".png", ".pdf"]
    assert paths[0].read_bytes()[:4] == b"\x89PNG" and paths[1].read_bytes()[:4] == b"%PDF"


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory):
    from tests.helpers.tiny import make_tiny_bert
    from xeval.models.encoder import Encoder

    return Encoder(make_tiny_bert(tmp_path_factory.mktemp("sweep") / "model", vocab_size=200))


def test_lexicon_precision_at_k(tiny_encoder):
    from xeval.adapters.probes.lexicon import lexicon_layers, precision_at_k

    # hand-built vectors: "cat" -> "chat" right, "dog" -> "chat" wrong (gold "chien")
    src = np.array([[1.0, 0.0], [0.9, 0.1]])
    tgt = np.array([[1.0, 0.0], [0.0, 1.0]])
    scores = precision_at_k(src, tgt, ["cat", "dog"], ["chat", "chien"], {"cat": {"chat"}, "dog": {"chien"}})
    assert scores == {"precision_at_1": 50.0, "precision_at_5": 100.0}
    # identical words on both sides retrieve themselves at every layer
    pairs = [("cat", "cat"), ("house", "house"), ("dog", "dog"), ("dog", "hound")]
    results = list(lexicon_layers(tiny_encoder, pairs, [0, 1, 2]))
    assert [layer for layer, *_ in results] == [0, 1, 2]
    assert all(m["precision_at_1"] == 100.0 and n_src == 3 and n_tgt == 4 for _, m, n_src, n_tgt, _ in results)
    outcomes = results[0][4]  # per source word, reproducing the metric
    assert outcomes.ids == ["cat", "house", "dog"] and outcomes.gold[2] == ["dog", "hound"]
    assert float(outcomes.metrics["precision_at_1"].value()) == 100.0


def test_bucc_probe_on_a_small_corpus(tiny_encoder, tmp_path):
    from xeval.adapters.probes.mining import mine_layers
    from xeval.data.examples import BuccCorpus

    # Each English sentence has its exact copy on the "xx" side: identical texts give cosine 1 and margin > 1.
    en = {f"en-{i}": s for i, s in enumerate(["the cat sat on the mat", "a quick brown fox jumps",
                                              "der Hund schläft im Haus", "le chat dort sur le tapis",
                                              "el perro come en la casa", "we eat bread"])}
    xx = {f"xx-{i}": s for i, s in enumerate(["the cat sat on the mat", "a quick brown fox jumps",
                                              "der Hund schläft im Haus", "mat mat mat"])}
    corpus = BuccCorpus(xx, en, [("xx-0", "en-0"), ("xx-1", "en-1"), ("xx-2", "en-2")], "xx", "dev", "test")
    options = {"pooling": "mean", "include_special": True, "batch_size": 8, "max_length": None}
    for layer, metrics, predicted, _threshold, held_out in mine_layers(tiny_encoder, corpus, [0, 2], options, k=2):
        assert metrics["recall"] == 100.0, (layer, predicted)
        # both halves (xx-0, xx-2 | xx-1) have a mined gold pair, so each half's threshold is a tuned margin
        assert held_out is not None and all(t > 0 for t in held_out["thresholds_held_out"])
        assert held_out["recall_held_out"] > 0
        assert {("xx-0", "en-0"), ("xx-1", "en-1"), ("xx-2", "en-2")} <= set(predicted)


def _bucc_corpus(folder, split, en, xx, gold=None):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"zh-en.{split}.en").write_text("".join(f"en-{split}-{i}\t{t}\n" for i, t in enumerate(en)), "utf-8")
    (folder / f"zh-en.{split}.zh").write_text("".join(f"zh-{split}-{i}\t{t}\n" for i, t in enumerate(xx)), "utf-8")
    if gold is not None:
        (folder / f"zh-en.{split}.gold").write_text(
            "".join(f"zh-{split}-{i}\ten-{split}-{j}\n" for i, j in gold), "utf-8")


def test_bucc_test_is_mined_with_the_dev_threshold(tiny_encoder, tmp_path):
    """XTREME's protocol: the margin threshold is tuned on the dev gold and applied to test (same layer); without
    test gold the mined pairs are exported and the record carries no number."""
    from dataclasses import replace

    from xeval.adapters.context import RunContext
    from xeval.adapters.probes import mining
    from xeval.cards.catalog import load_card
    from xeval.data.sources import DataRoot
    from xeval.results.store import Store

    en = ["the cat sat on the mat", "a quick brown fox jumps", "der Hund schläft im Haus", "we eat bread",
          "le chat dort sur le tapis", "el perro come en la casa", "rain falls in spring", "birds sing at dawn"]
    xx = en[:3] + ["mat mat mat", "el perro come en la casa"]
    root = tmp_path / "download"
    _bucc_corpus(root / "bucc2018", "dev", en, xx, gold=[(0, 0), (1, 1), (2, 2)])
    _bucc_corpus(root / "bucc2018", "test", en[2:], xx[1:], gold=None)  # XTREME's download: no test gold
    card = replace(load_card("bucc"), languages=["zh"])
    ctx = RunContext(encoder=tiny_encoder, data=DataRoot.resolve(str(root)), store=Store(tmp_path / "runs"),
                     layers=[0, 2], export_dir=tmp_path / "submission")
    records = mining.run(card, ["zh"], ctx)
    dev = {r.unit.layer: r for r in records if r.unit.split == "dev"}
    test = {r.unit.layer: r for r in records if r.unit.split == "test"}
    assert sorted(dev) == sorted(test) == [0, 2]
    for layer in (0, 2):
        assert dev[layer].metrics and dev[layer].extra["threshold_from"] == "dev gold (this corpus)"
        # the held-out-threshold F1 needs a mined gold pair in each half (zh-dev-0, 2 | zh-dev-1): where all three
        # are found it is there, with two tuned thresholds; without it, some half had nothing to tune on
        if "f1_held_out" in dev[layer].metrics:
            assert all(t > 0 for t in dev[layer].extra["thresholds_held_out"])
        else:
            assert dev[layer].metrics["recall"] < 100.0
        assert test[layer].extra["threshold"] == dev[layer].extra["threshold"]  # the dev threshold, not re-tuned
        assert test[layer].extra["threshold_from"] == "dev (same language and layer)"
        assert test[layer].metrics == {} and "unscored" in test[layer].extra
    mined = (tmp_path / "submission" / "layer-2" / "bucc2018" / "test-zh.tsv").read_text(encoding="utf-8")
    assert mined.splitlines() and all(line.startswith("zh-test-") for line in mined.splitlines())
    assert not (tmp_path / "submission" / "layer-2" / "bucc2018" / "dev-zh.tsv").exists()
    # with test gold the same dev threshold is applied and the test is scored
    _bucc_corpus(root / "bucc2018", "test", en[2:], xx[1:], gold=[(0, 0), (3, 3)])
    again = mining.run(card, ["zh"], replace(ctx, store=Store(tmp_path / "runs2"), layers=[2]))
    scored = next(r for r in again if r.unit.split == "test")
    assert scored.extra["threshold"] == dev[2].extra["threshold"] and set(scored.metrics) == {"f1", "precision",
                                                                                                "recall"}
