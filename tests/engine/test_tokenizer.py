"""Engine tokenizer: XLM-R special tokens and templates, byte fallback, AutoTokenizer loading, the CLI verb."""

from __future__ import annotations

import gzip

import pytest

from tests.helpers.tiny import TRAIN_TEXT
from xeval.engine.tokenizer import coverage, save_tokenizer, train_tokenizer

TEXTS = [f"{t} {i}" for i in range(40) for t in TRAIN_TEXT]


@pytest.mark.parametrize("model", ["unigram", "bpe"])
def test_special_tokens_templates_and_byte_fallback(tmp_path, model):
    from transformers import AutoTokenizer

    tok = train_tokenizer(TEXTS, 420, model)
    size = tok.get_vocab_size()  # Unigram stops early when a tiny text has fewer useful pieces
    assert size == 420 if model == "bpe" else 4 + 256 + 1 < size <= 420
    assert [tok.token_to_id(t) for t in ("<s>", "<pad>", "</s>", "<unk>", "<mask>")] == [0, 1, 2, 3, size - 1]
    save_tokenizer(tok, tmp_path)
    hf = AutoTokenizer.from_pretrained(tmp_path)
    assert (hf.bos_token_id, hf.pad_token_id, hf.eos_token_id, hf.mask_token_id) == (0, 1, 2, size - 1)
    one = hf("the cat")["input_ids"]
    assert one[0] == 0 and one[-1] == 2
    pair = hf("the cat", "der Hund")["input_ids"]
    n = len(one)
    assert pair[:n] == one and pair[n] == 2 and pair[-1] == 2  # <s> A </s></s> B </s>
    unseen = "ქართული 한국어 繁體"  # scripts absent from the training text
    enc = tok.encode(unseen, add_special_tokens=False)
    assert tok.token_to_id("<unk>") not in enc.ids
    assert tok.decode(enc.ids) == unseen
    rates = coverage(tok, [unseen])
    assert rates["unk_rate"] == 0.0 and rates["byte_rate"] > 50
    assert coverage(tok, ["the cat sat on the mat"])["byte_rate"] == 0.0


def test_tokenizer_train_verb(tmp_path, capsys):
    from xeval.cli import main

    for lang in ("en", "de"):
        with gzip.open(tmp_path / f"{lang}.txt.gz", "wt", encoding="utf-8") as f:
            f.write("\n".join(t for t in TEXTS) + "\n")
    out = tmp_path / "tok"
    rc = main(["tokenizer", "train", "--corpus", str(tmp_path / "en.txt.gz"), "--corpus", str(tmp_path / "de.txt.gz"),
               "--vocab-size", "400", "--model", "bpe", "--out", str(out)])  # fmt: skip
    assert rc == 0
    text = capsys.readouterr().out
    assert "trained bpe tokenizer: 400 ids" in text and "held-out coverage" in text
    assert (out / "tokenizer.json").is_file() and (out / "coverage.json").is_file()
    assert main(["tokenizer", "train", "--corpus", str(tmp_path / "missing"), "--out", str(out)]) == 2
    assert "no such file" in capsys.readouterr().err



def test_bpe_alphabet_keeps_rare_characters_out_of_byte_fallback():
    # 60 distinct CJK characters, each in one line only, beside Latin text: with an alphabet of 40 characters the
    # rarest CJK characters are left to byte fallback; with 200 each is a piece of its own
    cjk = [chr(0x4E00 + 7 * i) for i in range(60)]
    texts = TEXTS + [c * 2 + " " + c for c in cjk]
    line = "".join(cjk)
    small = coverage(train_tokenizer(texts, 600, "bpe", alphabet=40), [line])
    large = coverage(train_tokenizer(texts, 600, "bpe", alphabet=200), [line])
    assert small["byte_rate"] > 50 and large["byte_rate"] == 0.0
