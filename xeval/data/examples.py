"""Typed examples: what every reader returns and every adapter / probe consumes.

Each example records where it came from (``lang``, ``split``, ``source`` file, 1-based ``line`` of its first line
in that file, or the index of the record for JSON sources), so an error or a prediction can point back to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class TaggedSentence:
    """UD-POS / PAN-X / CoNLL-U: one sentence of words with one tag each (``tags`` is None in label-free test files)."""

    tokens: list[str]
    tags: list[str] | None
    lang: str
    split: str
    source: str
    line: int


@dataclass
class SentencePair:
    """XNLI / PAWS-X: two texts and a label (``label`` is None when the file has none)."""

    text_a: str
    text_b: str
    label: str | None
    lang: str
    split: str
    source: str
    line: int


@dataclass
class Answer:
    text: str
    start: int  # character offset into the context; -1 when the source gives none


@dataclass
class QAExample:
    """SQuAD-format extractive QA (XQuAD, MLQA, TyDiQA-GoldP, SQuAD)."""

    id: str
    question: str
    context: str
    answers: list[Answer]
    lang: str
    split: str
    source: str
    line: int  # index of the question in file order (JSON has no useful line numbers)
    title: str = ""


@dataclass
class Bitext:
    """A translation pair for retrieval: Tatoeba (``src`` = xx, ``tgt`` = English) or a BUCC sentence pair."""

    src: str
    tgt: str
    lang: str  # xx of the xx-en pair (2-letter code where XTREME has one)
    split: str
    source: str
    line: int


@dataclass
class BuccCorpus:
    """BUCC 2018 mining data: two monolingual id→sentence maps and the gold (src id, tgt id) pairs."""

    src: dict[str, str]
    tgt: dict[str, str]
    gold: list[tuple[str, str]]
    lang: str
    split: str
    source: str


@dataclass
class AlignedPair:
    """A word-alignment sentence pair. Links are 0-based (i, j) word indices, whatever the file's base was."""

    src_tokens: list[str]
    tgt_tokens: list[str]
    sure: set[tuple[int, int]] = field(default_factory=set)
    possible: set[tuple[int, int]] = field(default_factory=set)  # possible-only links; P = sure ∪ possible
    lang: str = ""  # e.g. "de-en"
    source: str = ""
    line: int = 0
