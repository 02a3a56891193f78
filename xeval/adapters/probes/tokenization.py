"""Tokenizer diagnostics per language (card type ``tokenizer_stats``; the ``tokenizer`` card reads FLORES-200
devtest): how the evaluated model's tokenizer cuts each language, so a transfer gap can be read against it.

Metrics of one language, over all its sentences (special tokens left out, each sentence tokenized whole):

- ``fertility``: subwords per word, words = whitespace-separated tokens (Rust et al. 2021). Scripts written
  without spaces (Chinese, Japanese, Thai) have few "words", so their fertility is not comparable: read
  ``tokens_per_char`` there;
- ``tokens_per_char``: subwords per character (no word segmentation needed);
- ``unk_rate``: % of subwords that are the unknown token;
- ``byte_fallback_rate``: % of subwords that are byte pieces ``<0x00>``..``<0xFF>`` (SentencePiece / xeval engine
  byte fallback; a byte-level BPE such as GPT-2's has no such pieces and reports 0);
- ``shared_types_with_en``: % of the distinct subword types the language uses that English's sentences (the same
  FLORES sentences in English) use too; 100 for English itself.

A deterministic count, no model forward pass: seed 0, no layer. No per-example outcomes (nothing is predicted).
"""

from __future__ import annotations

import re
import time

from xeval.adapters.probes import base as probes

BYTE_PIECE = re.compile(r"^<0x[0-9A-Fa-f]{2}>$")


def tokenizer_stats(tokenizer, texts: list[str], reference_types: set[int] | None = None) -> tuple[dict, set[int]]:
    """(metrics, the set of subword ids used) for ``texts``; ``reference_types``: English's ids."""
    ids = tokenizer(list(texts), add_special_tokens=False)["input_ids"]
    vocab = tokenizer.convert_ids_to_tokens(sorted({i for row in ids for i in row}))
    byte_ids = {i for i, tok in zip(sorted({i for row in ids for i in row}), vocab) if BYTE_PIECE.match(tok or "")}
    unk = tokenizer.unk_token_id
    n_tokens = sum(len(row) for row in ids)
    n_words = sum(len(t.split()) for t in texts)
    n_chars = sum(len(t) for t in texts)
    used = {i for row in ids for i in row}
    metrics = {
        "fertility": n_tokens / max(n_words, 1),
        "tokens_per_char": n_tokens / max(n_chars, 1),
        "unk_rate": 100.0 * sum(i == unk for row in ids for i in row) / max(n_tokens, 1),
        "byte_fallback_rate": 100.0 * sum(i in byte_ids for row in ids for i in row) / max(n_tokens, 1),
    }
    reference = used if reference_types is None else reference_types
    metrics["shared_types_with_en"] = 100.0 * len(used & reference) / max(len(used), 1)
    return metrics, used


def run(card, langs, ctx) -> list:
    tokenizer = ctx.encoder.tokenizer
    config = {"diagnostic": "tokenizer", "words": "whitespace-separated", "special_tokens": "left out",
              "byte_pieces": "<0xNN>", "shared_with": "the English side of the same sentences"}
    records, english = [], None
    for lang in langs:
        split = card.split_for(lang)
        chash = probes.unit_hash(card, lang, split, ctx, config)
        unit = probes.unit_for(card, lang, split, ctx, None, chash)
        if ctx.store.has(unit):
            records.append(ctx.store.get(unit))
            continue
        start = time.perf_counter()
        pairs = probes.load_examples(card, lang, split, ctx)
        if english is None:
            _, english = tokenizer_stats(tokenizer, [p.tgt for p in pairs])
        metrics, _ = tokenizer_stats(tokenizer, [p.src for p in pairs], english)
        extra = {"n_words": sum(len(p.src.split()) for p in pairs), "n_chars": sum(len(p.src) for p in pairs)}
        records.append(probes.make_record(card, lang, split, ctx, None, metrics, len(pairs), config,
                                          time.perf_counter() - start, extra, config_hash=chash))
    return records
