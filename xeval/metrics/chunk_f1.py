"""seqeval-style chunk precision / recall / F1 (seqeval's default, conlleval-like mode), written here so that the
exact chunking rules are visible and tested: it gives the same numbers as ``seqeval.metrics`` 1.2.2
(``f1_score`` / ``precision_score`` / ``recall_score`` with default arguments, micro average), which is what
XTREME's ``evaluate.py`` calls for both PAN-X (NER) and UD-POS.

How XTREME feeds POS to seqeval: the raw UPOS tags ("NOUN", "ADP", ...) go in unchanged, one list per sentence
(``evaluate.py: read_tag`` / ``run_tag.py``). seqeval then reads the first character of each tag as the
chunk prefix and the rest as the type. So:

- runs of the same tag form one chunk ("NOUN NOUN" is one chunk; a prefix "N" is neither B nor I, so only a
  change of type ends it);
- tags whose first letter is "S" (SCONJ, SYM) are single-token chunks, because "S" is seqeval's singleton
  prefix; "INTJ" has prefix "I", which continues a run like any other letter;
- seqeval 1.x takes the type as ``tag[1:]``, so CCONJ and SCONJ both have type "CONJ": a gold CCONJ predicted as
  SCONJ (or the reverse) counts as a correct single-token chunk. seqeval 0.0.x (what XTREME's 2020 paper used)
  took the type as the whole tag; ``legacy_types=True`` reproduces that. The two differ only on CCONJ/SCONJ.

For NER with IOB2 tags, the rules are conlleval's: a stray ``I-X`` after ``O`` (or after another type) starts a
new chunk; ``B-X`` always starts one.
"""

from __future__ import annotations

from collections.abc import Sequence


def _split(label: str, legacy_types: bool) -> tuple[str, str]:
    if not label:
        raise ValueError("empty tag")
    prefix = label[0]
    if legacy_types:  # seqeval 0.0.x: type = text after the last '-', or the whole tag
        kind = label.split("-")[-1]
    else:  # seqeval 1.x: type = text after the first '-' of tag[1:], '_' when empty
        kind = label[1:].split("-", maxsplit=1)[-1] or "_"
    return prefix, kind


def _ends(prev_tag: str, tag: str, prev_type: str, kind: str) -> bool:
    """seqeval ``end_of_chunk``: does a chunk end between the previous token and this one?"""
    if prev_tag in ("E", "S"):
        return True
    if prev_tag in ("B", "I") and tag in ("B", "S", "O"):
        return True
    return prev_tag not in ("O", ".") and prev_type != kind


def _starts(prev_tag: str, tag: str, prev_type: str, kind: str) -> bool:
    """seqeval ``start_of_chunk``: does a chunk start at this token?"""
    if tag in ("B", "S"):
        return True
    if prev_tag in ("E", "S", "O") and tag in ("E", "I"):
        return True
    return tag not in ("O", ".") and prev_type != kind


def get_chunks(tags: Sequence[str], *, legacy_types: bool = False) -> list[tuple[str, int, int]]:
    """(type, first, last) chunks of one tag sequence, token indices inclusive, as seqeval's ``get_entities``.

    IOB2 with a stray I- tag (conlleval starts a chunk there):

    >>> get_chunks(["B-PER", "I-PER", "O", "I-LOC", "I-LOC", "B-LOC"])
    [('PER', 0, 1), ('LOC', 3, 4), ('LOC', 5, 5)]

    UPOS tags: runs of equal tags form one chunk, SCONJ/SYM are always single tokens:

    >>> get_chunks(["DET", "NOUN", "NOUN", "SCONJ", "SCONJ", "VERB"])
    [('ET', 0, 0), ('OUN', 1, 2), ('CONJ', 3, 3), ('CONJ', 4, 4), ('ERB', 5, 5)]
    >>> get_chunks(["DET", "NOUN", "NOUN"], legacy_types=True)
    [('DET', 0, 0), ('NOUN', 1, 2)]
    """
    chunks = []
    prev_tag, prev_type, begin = "O", "", 0
    for i, label in enumerate([*tags, "O"]):  # the trailing "O" closes a chunk open at the end
        tag, kind = _split(label, legacy_types)
        if _ends(prev_tag, tag, prev_type, kind):
            chunks.append((prev_type, begin, i - 1))
        if _starts(prev_tag, tag, prev_type, kind):
            begin = i
        prev_tag, prev_type = tag, kind
    return chunks


def _corpus_chunks(sentences: Sequence[Sequence[str]], legacy_types: bool) -> set[tuple[str, int, int]]:
    # seqeval joins the sentences with an "O" after each one and chunks the whole stream, so offsets are global.
    flat: list[str] = []
    for sentence in sentences:
        flat.extend(sentence)
        flat.append("O")
    return set(get_chunks(flat, legacy_types=legacy_types))


def chunk_scores(
    gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]], *, legacy_types: bool = False
) -> dict[str, float]:
    """Micro-averaged chunk F1 / precision / recall over a corpus of sentences, in percent (XTREME's ``f1``).

    Zero divisions give 0, as seqeval's default. Float operations follow seqeval's order
    (``2 * p * r / (p + r)``, then ``* 100`` as XTREME does), so results are bit-identical.

    NER: one of two gold entities found, plus one false positive:

    >>> chunk_scores([["B-PER", "I-PER", "O", "B-LOC"]], [["B-PER", "I-PER", "B-ORG", "O"]])
    {'f1': 50.0, 'precision': 50.0, 'recall': 50.0}

    POS (runs of equal tags are chunks): gold has DET | NOUN NOUN | VERB, the prediction splits nothing
    but tags the verb as a noun, which merges it into the noun run; 1 of 3 gold chunks is matched by 1 of 2:

    >>> chunk_scores([["DET", "NOUN", "NOUN", "VERB"]], [["DET", "NOUN", "NOUN", "NOUN"]])
    {'f1': 40.0, 'precision': 50.0, 'recall': 33.33333333333333}
    """
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences but {len(predicted)} predicted")
    for i, (g, p) in enumerate(zip(gold, predicted)):
        if len(g) != len(p):
            raise ValueError(f"sentence {i}: {len(g)} gold tags but {len(p)} predicted")
    true = _corpus_chunks(gold, legacy_types)
    pred = _corpus_chunks(predicted, legacy_types)
    correct = len(true & pred)
    precision = correct / len(pred) if pred else 0.0
    recall = correct / len(true) if true else 0.0
    denominator = precision + recall
    f1 = (1 + 1.0) * precision * recall / denominator if denominator else 0.0
    return {"f1": f1 * 100, "precision": precision * 100, "recall": recall * 100}
