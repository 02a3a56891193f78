"""AER (Och & Ney): hand-computed cases, the published systems' outputs against the real gold, `align score`."""

from __future__ import annotations

import pytest

from tests.conftest import require_file
from xeval.base.errors import DataError, UserError
from xeval.cli import main
from xeval.metrics.aer import score_alignment
from xeval.metrics.aer_files import score_files


def test_hand_computed_with_possible_links():
    # sentence 1: S = {0-0, 1-1}, possible-only {1-2}; A = {0-0, 1-2, 2-2}
    # sentence 2: S = {0-1}, possible-only {0-0, 1-1};  A = {0-0, 1-1}
    gold = [({(0, 0), (1, 1)}, {(1, 2)}), ({(0, 1)}, {(0, 0), (1, 1)})]
    pred = [{(0, 0), (1, 2), (2, 2)}, {(0, 0), (1, 1)}]
    r = score_alignment(gold, pred)
    # |A| = 5, |S| = 3, |A∩S| = 1 (0-0), |A∩P| = 4 (0-0, 1-2, 0-0, 1-1)
    assert (r.n_predicted, r.n_sure, r.n_predicted_sure, r.n_predicted_possible) == (5, 3, 1, 4)
    assert r.precision == pytest.approx(4 / 5)
    assert r.recall == pytest.approx(1 / 3)
    assert r.aer == pytest.approx(1 - (1 + 4) / (5 + 3))
    m = r.as_metrics()
    assert m["aer"] == pytest.approx(37.5) and m["precision"] == pytest.approx(80.0)
    assert m["f1"] == pytest.approx(100 * 2 * 0.8 * (1 / 3) / (0.8 + 1 / 3))


def test_corpus_level_sums_not_sentence_means():
    # A perfect short sentence and a bad long one: the corpus AER weighs links, not sentences.
    gold = [({(0, 0)}, set()), ({(i, i) for i in range(9)}, set())]
    pred = [{(0, 0)}, {(i, (i + 1) % 9) for i in range(9)}]
    r = score_alignment(gold, pred)
    assert r.aer == pytest.approx(1 - 2 / 20)  # per-sentence mean would be 0.5


def test_perfect_and_empty():
    gold = [({(0, 0), (1, 1)}, {(0, 1)})]
    assert score_alignment(gold, [{(0, 0), (1, 1)}]).aer == 0.0
    assert score_alignment(gold, [{(0, 0), (1, 1), (0, 1)}]).aer == 0.0  # possible links are never wrong
    empty = score_alignment(gold, [set()])
    assert (empty.precision, empty.recall, empty.aer) == (0.0, 0.0, 1.0)
    with pytest.raises(UserError):
        score_alignment([(set(), set())], [set()])
    with pytest.raises(UserError):
        score_alignment(gold, [])


# Published systems' outputs (0-based) against the gold standards (1-based) of ../shared/data/word_alignment.
# Ours: computed here. Published: Cross-Align (Lai et al., EMNLP 2022, README table) de-en 13.6; awesome-align
# (Dou & Neubig, EACL 2021, README "multilingually fine-tuned") en-fr 4.1 (w/o --train_co), ro-en 20.7 (w/ co).
PUBLISHED = [
    ("deen.gold", "deen.cross-align.out", 508, 91.95, 81.48, 13.53, 13.6),
    ("enfr.gold", "enfr.awesome-align.out", 447, 96.27, 95.42, 4.07, 4.1),
    ("roen.gold", "roen.awesome-align.out", 248, 88.61, 71.68, 20.75, 20.7),
]


@pytest.mark.parametrize("gold,pred,n,precision,recall,aer,published", PUBLISHED)
def test_published_system_outputs(data_root, gold, pred, n, precision, recall, aer, published):
    folder = "word_alignment/"
    g = require_file(data_root, folder + gold)
    p = require_file(data_root, folder + pred)
    text = require_file(data_root, folder + gold.replace(".gold", ".src-tgt"))
    r = score_files(g, p, text=text, gold_base=1, pred_base=0)
    m = r.as_metrics()
    assert r.n_sentences == n
    assert round(m["precision"], 2) == precision
    assert round(m["recall"], 2) == recall
    assert round(m["aer"], 2) == aer
    assert abs(m["aer"] - published) < 0.1  # the authors' one-decimal figure


def test_wrong_base_is_an_error_naming_the_line(data_root):
    g = require_file(data_root, "word_alignment/enfr.gold")
    p = require_file(data_root, "word_alignment/enfr.awesome-align.out")
    with pytest.raises(DataError, match=r"enfr\.awesome-align\.out:1: .*1-based"):
        score_files(g, p, gold_base=1, pred_base=1)


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_align_score_cli(tmp_path, capsys):
    _write(tmp_path, "x.src-tgt", "a b ||| x y\nc ||| z\n")  # found as the sibling of x.gold
    gold = _write(tmp_path, "x.gold", "1-1 2p2\n1-1\n")
    pred = _write(tmp_path, "x.out", "0-0 1-1\n0-0\n")
    assert main(["align", "score", "--gold", str(gold), "--predictions", str(pred)]) == 0
    out = capsys.readouterr()
    assert "precision   100.00" in out.out and "recall      100.00" in out.out and "AER         0.00" in out.out
    assert "x.src-tgt" in out.err  # the sibling text file is used for range checks, and said so


def test_align_score_out_of_range(tmp_path, capsys):
    text = _write(tmp_path, "t.txt", "a b ||| x y\nc ||| z\n")
    gold = _write(tmp_path, "g.txt", "1-1 2-2\n1-1\n")
    pred = _write(tmp_path, "p.txt", "0-0 1-1\n0-0 0-3\n")
    argv = ["align", "score", "--gold", str(gold), "--predictions", str(pred), "--text", str(text)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{pred}:2:" in err and "0-3" in err and "Traceback" not in err
    assert main(argv + ["--skip-out-of-range", "--json"]) == 0
    out = capsys.readouterr()
    assert "skipped 1 out-of-range link" in out.err
    assert '"aer": 0.0' in out.out


def test_align_score_line_count_mismatch(tmp_path, capsys):
    gold = _write(tmp_path, "g.txt", "1-1\n1-1\n")
    pred = _write(tmp_path, "p.txt", "0-0\n")
    assert main(["align", "score", "--gold", str(gold), "--predictions", str(pred)]) == 2
    assert "expected 2 lines" in capsys.readouterr().err
