"""A shared multilingual subword vocabulary: Unigram (default, like XLM-R's sentencepiece) or BPE, both with
byte fallback, so no character of an unseen script becomes ``<unk>`` (a first measurement: 38 % of Tatoeba's
Traditional Chinese sentences hit ``<unk>`` without it, their script being absent from Simplified corpora).

Ids follow XLM-R: ``<s>``=0 ``<pad>``=1 ``</s>``=2 ``<unk>``=3, then the 256 byte pieces ``<0x00>``..``<0xFF>``,
the learned pieces, and ``<mask>`` last. The post-processor adds ``<s> A </s>`` and ``<s> A </s></s> B </s>``.
Saved as ``tokenizer.json`` + ``tokenizer_config.json`` + ``special_tokens_map.json`` so that
``AutoTokenizer.from_pretrained(dir)`` loads it (as a tokenizers-backed fast tokenizer).

Determinism: ``tokenizers``' trainers are not bit-reproducible across runs (Rust hash-map order, parallel EM sums:
measured, Unigram keeps the same piece set but scores move by up to 0.03; BPE breaks count ties differently). A
recipe that must be reproducible (CI) trains its tokenizer once and pins it (``tokenizer.path``); everything after
the tokenizer is deterministic.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

from xeval.base.atomic import atomic_path, write_json
from xeval.base.errors import ConfigError
from xeval.data.corpora import iter_monolingual
from xeval.engine.config import MIN_VOCAB
from xeval.engine.corpus import Corpora, balanced_sample, is_heldout, load_corpora

BOS, PAD, EOS, UNK, MASK = "<s>", "<pad>", "</s>", "<unk>", "<mask>"
SPECIALS = [BOS, PAD, EOS, UNK]
BYTE_PIECES = [f"<0x{i:02X}>" for i in range(256)]
SPACE = "\u2581"  # sentencepiece's "▁" word-boundary marker


def _unigram(pieces: list[tuple[str, float]]) -> models.Unigram:
    return models.Unigram(pieces, unk_id=SPECIALS.index(UNK), byte_fallback=True)


def train_tokenizer(texts: Iterable[str], vocab_size: int, model: str = "unigram", alphabet: int = 1000) -> Tokenizer:
    """Train on ``texts`` (an already language-balanced sample) to exactly ``vocab_size`` ids in total. ``alphabet``
    (BPE only): the most characters kept as pieces of their own; the rarer ones fall back to bytes. 1,000 leaves
    most Chinese and Japanese characters to byte fallback (3 pieces a character, shared by every character)."""
    n_learned = vocab_size - len(SPECIALS) - len(BYTE_PIECES) - 1  # minus specials, bytes, <mask>
    if n_learned < 100:
        raise ValueError(f"vocab size {vocab_size} leaves {n_learned} learned pieces; use at least 361")
    texts = list(texts)
    if model == "unigram":
        tok = Tokenizer(models.Unigram())
        _set_pipeline(tok)
        trainer = trainers.UnigramTrainer(
            vocab_size=n_learned + 1, special_tokens=[UNK], unk_token=UNK, max_piece_length=16,
            shrinking_factor=0.75, n_sub_iterations=2, show_progress=False,
        )  # fmt: skip
        tok.train_from_iterator(texts, trainer=trainer)
        learned = [(p, s) for p, s in json.loads(tok.to_str())["model"]["vocab"] if p != UNK]
        learned = [(p, s) for p, s in learned if p not in BYTE_PIECES and p not in SPECIALS][:n_learned]
        learned.sort(key=lambda ps: (-ps[1], ps[0]))  # ties come out of the trainer in hash order: fix the ids
        floor = min(s for _, s in learned) - 10.0  # byte pieces only win when nothing else covers a character
        pieces = [(t, 0.0) for t in SPECIALS] + [(b, floor) for b in BYTE_PIECES] + learned + [(MASK, 0.0)]
        final = Tokenizer(_unigram(pieces))
    elif model == "bpe":
        tok = Tokenizer(models.BPE(unk_token=UNK, byte_fallback=True))
        _set_pipeline(tok)
        trainer = trainers.BpeTrainer(
            vocab_size=vocab_size - 1, special_tokens=SPECIALS + BYTE_PIECES, show_progress=False,
            limit_alphabet=alphabet,
        )  # fmt: skip
        tok.train_from_iterator(texts, trainer=trainer)
        data = json.loads(tok.to_str())
        vocab, merges = data["model"]["vocab"], [tuple(m) if isinstance(m, list) else tuple(m.split(" ")) for m in data["model"]["merges"]]
        vocab[MASK] = len(vocab)
        final = Tokenizer(models.BPE(vocab=vocab, merges=merges, unk_token=UNK, byte_fallback=True))
    else:
        raise ValueError(f"tokenizer model must be unigram|bpe, got {model!r}")
    _set_pipeline(final)
    final.add_special_tokens(SPECIALS + [MASK])
    final.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A {EOS}",
        pair=f"{BOS} $A {EOS} {EOS} $B {EOS}",
        special_tokens=[(BOS, final.token_to_id(BOS)), (EOS, final.token_to_id(EOS))],
    )
    return final


def _set_pipeline(tok: Tokenizer) -> None:
    tok.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Replace(r"\s+", " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement=SPACE, prepend_scheme="always")
    tok.decoder = decoders.Sequence(  # as Llama's: "▁" -> " ", bytes -> characters, drop the leading space
        [decoders.Replace(SPACE, " "), decoders.ByteFallback(), decoders.Fuse(), decoders.Strip(" ", 1, 0)]
    )


def save_tokenizer(tok: Tokenizer, out: str | Path, model_max_length: int = 512) -> None:
    """Write the files AutoTokenizer needs (atomically, one file at a time)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    with atomic_path(out / "tokenizer.json") as tmp:
        tok.save(str(tmp))
    specials = {"bos_token": BOS, "eos_token": EOS, "unk_token": UNK, "sep_token": EOS, "pad_token": PAD,
                "cls_token": BOS, "mask_token": MASK}  # fmt: skip
    write_json(
        out / "tokenizer_config.json",
        {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": model_max_length,
         "model_input_names": ["input_ids", "attention_mask"], "clean_up_tokenization_spaces": False, **specials},
    )  # fmt: skip
    write_json(out / "special_tokens_map.json", specials)


def load_tokenizer(path: str | Path) -> Tokenizer:
    path = Path(path)
    file = path / "tokenizer.json" if path.is_dir() else path
    return Tokenizer.from_file(str(file))


def coverage(tok: Tokenizer, texts: list[str]) -> dict[str, float]:
    """Share of (non-special) tokens that are ``<unk>`` and that are byte-fallback pieces, plus tokens per char."""
    unk_id = tok.token_to_id(UNK)
    byte_ids = {tok.token_to_id(b) for b in BYTE_PIECES}
    n = unk = byte = chars = 0
    for enc in tok.encode_batch(texts, add_special_tokens=False):
        n += len(enc.ids)
        unk += sum(1 for i in enc.ids if i == unk_id)
        byte += sum(1 for i in enc.ids if i in byte_ids)
    chars = sum(len(t) for t in texts)
    return {
        "tokens": n,
        "unk_rate": 100.0 * unk / max(n, 1),
        "byte_rate": 100.0 * byte / max(n, 1),
        "tokens_per_char": n / max(chars, 1),
    }


def build_tokenizer(corpus: list[str], out: str | Path, vocab_size: int = 16000, model: str = "unigram",
                    sample_lines: int = 200_000, alpha: float = 0.7, max_lines: int | None = None,
                    languages: list[str] | None = None, seed: int = 0, log=print) -> dict:  # fmt: skip
    """Train on a language-balanced sample (p_j ∝ m_j^alpha) of ``corpus`` (shared-data roots and/or text files
    named by language), save to ``out``, and return {lang: coverage on held-out lines} (also written to
    ``out/coverage.json``). Held-out lines (a fixed 1 % by hash) never enter the training sample."""
    if vocab_size < MIN_VOCAB:  # before reading any corpus
        raise ConfigError(f"--vocab-size: expected at least {MIN_VOCAB} (4 specials, 256 byte pieces, <mask> and 100 "
                          f"learned pieces), found {vocab_size}")
    if sample_lines < 1 or (max_lines is not None and max_lines < 1) or not 0 <= alpha < float("inf"):
        raise ConfigError(f"expected --sample-lines >= 1, --max-lines >= 1 and a finite --alpha >= 0, found "
                          f"{sample_lines}, {max_lines} and {alpha}")
    t0 = time.time()
    train = Corpora({}, {}, pairs_in_mono=True)
    held: dict[str, list[str]] = {}
    for spec in corpus:
        path = Path(spec)
        if path.is_dir():
            c = load_corpora(path, languages=languages, max_lines=max_lines, seed=seed, pairs_as_mono=True)
            h = load_corpora(path, languages=languages, max_lines=200, seed=seed, split="heldout", pairs_as_mono=True)
            for lang, rows in c.mono.items():
                train.mono.setdefault(lang, []).extend(rows)
            for lang, rows in h.mono.items():
                held.setdefault(lang, []).extend(rows)
        elif path.is_file():
            lang = path.name.split(".")[0]
            if languages and lang not in languages:
                continue
            rows = [line.strip() for line in iter_monolingual(path) if line.strip()]
            train.mono.setdefault(lang, []).extend(r for r in rows if not is_heldout(r))
            held.setdefault(lang, []).extend(r for r in rows if is_heldout(r))
        else:
            raise ConfigError(f"--corpus {spec}: no such file or directory")
    if not train.mono:
        raise ConfigError(f"--corpus {' '.join(corpus)}: no text found")
    sample = balanced_sample(train, sample_lines, alpha, seed)
    texts = [t for rows in sample.values() for t in rows]
    tok = train_tokenizer(texts, vocab_size, model)
    save_tokenizer(tok, out)
    log(f"trained {model} tokenizer: {tok.get_vocab_size()} ids from {len(texts)} lines of {len(sample)} languages "
        f"(alpha {alpha}) in {time.time() - t0:.0f}s -> {out}")  # fmt: skip
    report = {}
    log("held-out coverage   lang  lines   unk %   byte %  tokens/char")
    for lang in sorted(held):
        rows = held[lang][:800]
        if rows:
            report[lang] = {"lines": len(rows), **coverage(tok, rows)}
            r = report[lang]
            log(f"held-out coverage   {lang:4s} {len(rows):6d} {r['unk_rate']:7.2f} {r['byte_rate']:8.2f} "
                f"{r['tokens_per_char']:11.3f}")  # fmt: skip
    write_json(Path(out) / "coverage.json", report)
    return report
