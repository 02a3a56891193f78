"""CoNLL-U (Universal Dependencies) → word/UPOS sentences, by default exactly as XTREME's ``udpos`` files have them.

What XTREME's udpos files hold (checked against the shared data layout: every sentence of the 16 UD v2.5 dev/test files
there — German, Spanish, French, Hebrew, Turkish, Finnish, … — equals its sentence in ``udpos_xtreme``):

- A multi-word token (``4-5 im`` over ``4 in ADP``, ``5 dem DET``) is kept as ONE word with its fused surface form.
  Its UPOS is that of the span head chosen as by ud-conversion-tools' ``conllu_to_conll.py --keep_fused_forms``
  (coastalcph/ud-conversion-tools, the conversion XTREME's ``.conll`` inputs went through): the syntactic word of
  the span with the fewest ancestors in the dependency tree; on a tie the first word in the POS precedence
  ``VERB NOUN PROPN PRON ADJ NUM ADV INTJ AUX ADP DET PART CCONJ SCONJ X PUNCT`` (the tool's default list, with UD
  v2's CCONJ in v1's CONJ place; tags missing from it, e.g. SYM, rank last); then the first in span order. So
  ``im`` → ADP, Hebrew ``מתאילנד`` (ADP + PROPN head) → PROPN, Turkish ``içinse`` (ADP, AUX on one head) → AUX.
  XTREME's ``utils_preprocess.py`` itself (``udpos_preprocess``) only reads the already converted files.
- ``multiword="words"`` gives the syntactic words instead (``in dem``), as most UD tools do.
- Empty nodes (``8.1``) and comment lines are skipped.
- ``xtreme_normalize=True`` (default) applies ``udpos_preprocess``'s ``remove_empty_space``: spaces and ZWNJ
  (U+200C) are removed inside a word (Vietnamese ``hải quân`` → ``hảiquân``), and sentences whose forms are
  (almost) all ``_`` (treebanks distributed without text) are dropped as XTREME drops them.
"""

from __future__ import annotations

from pathlib import Path

from xeval.base.errors import DataError
from xeval.data._text import iter_lines
from xeval.data.examples import TaggedSentence

# ud-conversion-tools' default POS precedence (conllu_to_conll.py), CONJ renamed to UD v2's CCONJ.
POS_PRECEDENCE = "VERB NOUN PROPN PRON ADJ NUM ADV INTJ AUX ADP DET PART CCONJ SCONJ X PUNCT".split()
_RANK = {tag: i for i, tag in enumerate(POS_PRECEDENCE)}


def _rank(tag: str) -> int:
    return _RANK.get(tag, len(POS_PRECEDENCE))


class _Word:
    __slots__ = ("form", "upos", "head", "line")

    def __init__(self, form: str, upos: str, head: int | None, line: int):
        self.form, self.upos, self.head, self.line = form, upos, head, line


def _depths(words: list[_Word]) -> list[int]:
    """Number of ancestors (the root 0 included) of each word; words without a HEAD count as depth 0."""
    depths: list[int] = []
    n = len(words)
    for i in range(n):
        depth, node = 0, i + 1
        while True:
            head = words[node - 1].head
            if head is None:
                break
            depth += 1
            if head == 0 or depth > n:  # depth > n: a cycle; the validator reports heads, not trees
                break
            node = head
        depths.append(depth)
    return depths


def _span_tag(words: list[_Word], depths: list[int], start: int, end: int) -> str:
    span = range(start, end + 1)  # 1-based word ids
    best = min(depths[i - 1] for i in span)
    highest = [i for i in span if depths[i - 1] == best]
    return min((words[i - 1].upos for i in highest), key=_rank)  # min keeps the first on equal rank


def _normalize(form: str) -> str:
    return "".join(form.replace("\u200c", "").split(" "))


def read_conllu(
    path: str | Path, lang: str, split: str, multiword: str = "surface", *, xtreme_normalize: bool = True
) -> list[TaggedSentence]:
    """Read a CoNLL-U file into word/UPOS sentences; ``multiword`` is "surface" (XTREME) or "words"."""
    if multiword not in ("surface", "words"):
        raise ValueError(f"multiword must be 'surface' or 'words', not {multiword!r}")
    path = Path(path)
    source = str(path)
    sentences: list[TaggedSentence] = []
    words: list[_Word] = []
    spans: list[tuple[int, int, str, int]] = []  # (start, end, form, line)
    start_line = 0

    def flush() -> None:
        if not words:
            if spans:
                raise DataError(
                    path, spans[0][3], "expected the words of multi-word token after it, found none"
                )
            return
        for s, e, _, line in spans:
            if e > len(words):
                raise DataError(
                    path,
                    line,
                    f"expected words {s}..{e} after this multi-word token, found only {len(words)} words",
                )
        for w in words:
            if w.head is not None and w.head > len(words):
                raise DataError(path, w.line, f"expected a HEAD between 0 and {len(words)}, found {w.head}")
        tokens: list[str] = []
        tags: list[str] = []
        if multiword == "words":
            tokens = [w.form for w in words]
            tags = [w.upos for w in words]
        else:
            depths = _depths(words)
            by_start = {s: (e, form) for s, e, form, _ in spans}
            i = 1
            while i <= len(words):
                if i in by_start:
                    e, form = by_start[i]
                    tokens.append(form)
                    tags.append(_span_tag(words, depths, i, e))
                    i = e + 1
                else:
                    tokens.append(words[i - 1].form)
                    tags.append(words[i - 1].upos)
                    i += 1
        if xtreme_normalize:
            tokens = [_normalize(t) for t in tokens]
            underscores = sum(t == "_" for t in tokens)
            if underscores and underscores >= len(tokens) - 1:  # XTREME: text withheld by the treebank
                words.clear()
                spans.clear()
                return
        sentences.append(TaggedSentence(tokens, tags, lang, split, source, start_line))
        words.clear()
        spans.clear()

    covered_to = 0  # last word id covered by a multi-word token
    for number, line in iter_lines(path):
        if not line.strip():
            flush()
            covered_to = 0
            continue
        if line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) != 10:
            raise DataError(path, number, f"expected 10 tab-separated CoNLL-U columns, found {len(fields)}")
        if not words and not spans:
            start_line = number
        wid, form, upos, head = fields[0], fields[1], fields[3], fields[6]
        if "." in wid:  # empty node of the enhanced graph
            a, _, b = wid.partition(".")
            if not (a.isdigit() and b.isdigit()):
                raise DataError(path, number, f"expected an empty-node id like 8.1, found {wid!r}")
            continue
        if "-" in wid:
            a, _, b = wid.partition("-")
            if not (a.isdigit() and b.isdigit()) or int(a) >= int(b):
                raise DataError(path, number, f"expected a multi-word token range like 4-5, found {wid!r}")
            if int(a) != len(words) + 1 or int(a) <= covered_to:
                raise DataError(
                    path, number, f"expected a range starting at word {len(words) + 1}, found {wid!r}"
                )
            spans.append((int(a), int(b), form, number))
            covered_to = int(b)
            continue
        if not wid.isdigit():
            raise DataError(path, number, f"expected a word id (integer), found {wid!r}")
        if int(wid) != len(words) + 1:
            raise DataError(path, number, f"expected word id {len(words) + 1}, found {wid}")
        if not form:
            raise DataError(path, number, "expected a word form in column 2, found an empty field")
        if not upos or upos == "_":
            raise DataError(path, number, f"expected a UPOS tag in column 4, found {upos!r}")
        if head == "_":
            head_id = None
        elif head.isdigit():
            head_id = int(head)
        else:
            raise DataError(path, number, f"expected a HEAD id (integer or _) in column 7, found {head!r}")
        words.append(_Word(form, upos, head_id, number))
    flush()
    return sentences
