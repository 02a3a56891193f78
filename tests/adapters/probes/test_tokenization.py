"""Tokenizer diagnostics: counts by hand on a tiny WordPiece vocabulary, the real CI tokenizer (byte fallback) and
all-MiniLM-L6-v2's WordPiece (unknown tokens) on FLORES-200, and report --table/--plot tokenizer."""

import pytest

from tests.conftest import require_file
from tests.helpers.report_records import rec, write_run
from xeval.adapters.probes.tokenization import tokenizer_stats
from xeval.cli import main
from xeval.report.tables.base import Results
from xeval.report.tables.gap_table import gap_table
from xeval.report.tables.tokenizer_table import tokenizer_table


def hand_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "the": 1, "dog": 2, "##s": 3, "<0x41>": 4}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]")


def test_counts_by_hand():
    tok = hand_tokenizer()
    _, english = tokenizer_stats(tok, ["the dog", "the dogs"])  # types {the, dog, ##s}
    # dog ##s [UNK] | <0x41> the: 5 subwords, 4 words, 18 characters, one unknown, one byte piece
    metrics, used = tokenizer_stats(tok, ["dogs xyz", "<0x41> the"], english)
    assert metrics["fertility"] == pytest.approx(5 / 4)
    assert metrics["tokens_per_char"] == pytest.approx(5 / 18)
    assert metrics["unk_rate"] == pytest.approx(20.0) and metrics["byte_fallback_rate"] == pytest.approx(20.0)
    assert metrics["shared_types_with_en"] == pytest.approx(60.0)  # 3 of its 5 types: the, dog, ##s
    assert used == {0, 1, 2, 3, 4}


def flores(root, code):
    return require_file(root, f"flores200/devtest/{code}.devtest").read_text(encoding="utf-8").splitlines()


def test_real_tokenizers_on_flores(data_root, minilm_dir):
    from transformers import AutoTokenizer

    from tests.conftest import REPO

    en = flores(data_root, "eng_Latn")
    # the CI checkpoint's Unigram tokenizer has byte fallback: nothing is unknown, Traditional Chinese falls back to
    # bytes far more than German does, and English shares every type with itself
    ci = AutoTokenizer.from_pretrained(str(REPO / "reports" / "ci-tiny" / "tokenizer"))
    en_stats, en_types = tokenizer_stats(ci, en)
    hant, _ = tokenizer_stats(ci, flores(data_root, "zho_Hant"), en_types)
    de, _ = tokenizer_stats(ci, flores(data_root, "deu_Latn"), en_types)
    assert en_stats["shared_types_with_en"] == 100.0 and en_stats["unk_rate"] == hant["unk_rate"] == 0.0
    assert hant["byte_fallback_rate"] > 20 > 1 > de["byte_fallback_rate"]
    assert de["fertility"] > en_stats["fertility"]
    # English-only WordPiece (MiniLM): no byte pieces; a Thai "word" (no spaces) it cannot cut is one [UNK]
    mini = AutoTokenizer.from_pretrained(str(minilm_dir))
    en_stats, en_types = tokenizer_stats(mini, en)
    th, _ = tokenizer_stats(mini, flores(data_root, "tha_Thai"), en_types)
    assert th["unk_rate"] > 30 and th["byte_fallback_rate"] == 0.0 and en_stats["unk_rate"] < 0.5


def diagnostics_records():
    model = "alpha@aaaaaaaaaaaa"
    out = [rec(model, "tokenizer", lang, {"fertility": f, "unk_rate": 0.0, "byte_fallback_rate": 0.0,
                                          "tokens_per_char": 0.3, "shared_types_with_en": 50.0}, split="devtest")
           for lang, f in (("en", 1.2), ("de", 2.4), ("ja", 9.0))]
    out += [rec(model, "xnli", lang, {"accuracy": v}) for lang, v in (("en", 80.0), ("de", 70.0), ("ja", 45.0))]
    return out


def test_tokenizer_table_and_plot(tmp_path):
    table = tokenizer_table(Results(diagnostics_records()))
    m = table.mean
    assert m.at[("alpha", "de"), "subwords / word"] == 2.4 and m.at[("alpha", "de"), "XNLI gap"] == 10.0
    assert m.at[("alpha", "ja"), "XNLI gap"] == 35.0
    # the diagnostics are not a task: no transfer gap of their own
    assert "tokenizer" not in gap_table(Results(diagnostics_records())).mean.columns
    run = write_run(tmp_path / "runs", diagnostics_records())
    assert main(["report", str(run), "--table", "tokenizer", "--plot", "tokenizer", "--figures",
                 str(tmp_path / "fig")]) == 0
    assert (tmp_path / "fig" / "tokenizer.png").stat().st_size > 5000


@pytest.mark.slow
def test_run_tokenizer_card(tmp_path, minilm_dir, data_root):
    out = tmp_path / "runs"
    assert main(["run", "--model", str(minilm_dir), "--suite", "probes", "--tasks", "tokenizer", "--langs",
                 "en,de,th", "--out", str(out)]) == 0
    from xeval.results.store import Store

    got = {r.unit.lang: r for r in Store(out).records()}
    assert set(got) == {"en", "de", "th"} and got["de"].n_examples == 1012 and got["de"].unit.split == "devtest"
    assert got["en"].metrics["shared_types_with_en"] == 100.0 and got["th"].metrics["unk_rate"] > 30
