"""Checks every split's examples must pass, whatever reader produced them (files or the hub), before any of them is
counted by ``data check``, trained on or scored:

- a source yields at least one example (an empty file is a mistake, not "0 examples, ok");
- every gold tag / label belongs to the card's label set (``labels:``), on evaluation splits as on training data:
  a tag ``Q-LOC`` in a PAN-X test file would otherwise be scored as a wrong prediction and lower the number
  without a word. Label-free examples (``tags``/``label`` None, XTREME's official test files) are left alone;
- QA: a source is label-free only when every question is; one question without answers among labelled ones is
  an error naming it (scoring would otherwise call the whole language label-free, or skip the question).
"""

from __future__ import annotations

from xeval.base.errors import DataError
from xeval.data.examples import BuccCorpus, QAExample, SentencePair, TaggedSentence


def check_examples(card, lang: str, split: str, examples: list, where: str, *, line_per_token: bool) -> None:
    """Raise a DataError naming the file (and line) of the first problem. ``where`` names the source when it is
    empty; ``line_per_token``: a sentence's k-th word sits on line ``ex.line + k`` (XTREME's one-token-a-line
    files), else an error names the sentence's first line and the word's position."""
    # a BUCC corpus without gold is label-free (XTREME's test); an existing but empty gold file is caught by the loader
    if not examples or (isinstance(examples[0], BuccCorpus) and not (examples[0].src and examples[0].tgt)):
        raise DataError(where, None, f"expected examples for task {card.name}, language {lang}, split {split}, "
                                     f"found none (an empty file)")
    if isinstance(examples[0], QAExample):  # the SQuAD reader names the line; this catches the hub's rows too
        unanswered = [ex for ex in examples if not ex.answers]
        if unanswered and len(unanswered) < len(examples):
            ex = unanswered[0]
            raise DataError(ex.source, ex.line, f"expected answers for question {ex.id!r} as for the other "
                                                f"{len(examples) - len(unanswered)} question(s), found none")
    if not card.labels:
        return
    labels = {str(x) for x in card.labels}
    expected = ", ".join(sorted(labels))
    for ex in examples:
        if isinstance(ex, TaggedSentence) and ex.tags is not None:
            for k, tag in enumerate(ex.tags):
                if tag not in labels:
                    line, at = (ex.line + k, "") if line_per_token else (ex.line, f" (word {k + 1} of the sentence)")
                    raise DataError(ex.source, line, f"expected a tag of task {card.name} ({expected}), "
                                                     f"found {tag!r}{at}")
        elif isinstance(ex, SentencePair) and ex.label is not None and ex.label not in labels:
            raise DataError(ex.source, ex.line, f"expected a label of task {card.name} ({expected}), "
                                                f"found {ex.label!r}")
