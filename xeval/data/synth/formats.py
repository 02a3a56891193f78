"""Serialise examples into the byte formats of the real data (the shared layout), so the same readers load both.

Every function returns bytes, so a world is hashed and written atomically in one place, and nothing here
depends on time, locale or hash order (gzip is written with mtime 0 and no file name).
"""

from __future__ import annotations

import gzip
import json

from xeval.data.synth.grammar import Token


def lines(rows: list[str]) -> bytes:
    """One item a line, LF (Tatoeba, word-alignment text, MUSE dictionaries, monolingual text)."""
    return "".join(row + "\n" for row in rows).encode("utf-8")


def gzipped(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=6, mtime=0)


def tagging_tsv(sentences: list[list[Token]], field: str) -> bytes:
    """XTREME udpos / panx: ``word<TAB>tag``, a blank line between sentences, none after the last."""
    blocks = ["\n".join(f"{t.form}\t{getattr(t, field)}" for t in sentence) for sentence in sentences]
    return ("\n\n".join(blocks) + "\n").encode("utf-8") if blocks else b""


def pairs_tsv(rows: list[tuple[str, str, str]]) -> bytes:
    """PAWS-X / XNLI as XTREME ships them: ``s1<TAB>s2<TAB>label``, CRLF, no header (no quotes to escape)."""
    for row in rows:
        assert not any(c in field for field in row for c in '\t"\r\n'), row
    return "".join("\t".join(row) + "\r\n" for row in rows).encode("utf-8")


def squad_json(articles: list[dict]) -> bytes:
    """SQuAD v1.1: {"version", "data": [{"title", "paragraphs": [{"context", "qas": [...]}]}]}."""
    return (json.dumps({"version": "1.1", "data": articles}, ensure_ascii=False) + "\n").encode("utf-8")


def parallel_tsv_gz(src: str, tgt: str, pairs: list[tuple[str, str]]) -> bytes:
    """Like parallel/gettext_mo/en-xx.tsv.gz: a '#' header, then ``src<TAB>tgt<TAB>domain``."""
    rows = [f"# {src}\t{tgt}\tsource_domain(synthetic world)"] + [f"{a}\t{b}\tsynthetic" for a, b in pairs]
    return gzipped(lines(rows))


def alignment_text(pairs: list[tuple[list[Token], list[Token]]]) -> bytes:
    """``src tokens ||| tgt tokens``, as word_alignment/deen.src-tgt."""
    return lines([" ".join(t.form for t in s) + " ||| " + " ".join(t.form for t in t_) for s, t_ in pairs])


def alignment_gold(links: list[list[tuple[int, int]]]) -> bytes:
    """1-based ``i-j`` sure links, as word_alignment/deen.gold (this world has no possible-only links)."""
    return lines([" ".join(f"{i + 1}-{j + 1}" for i, j in sorted(sentence)) for sentence in links])


def dictionary(pairs: list[tuple[str, str]]) -> bytes:
    """MUSE full dictionaries: ``src tgt`` separated by one space."""
    return lines([f"{a} {b}" for a, b in pairs])
