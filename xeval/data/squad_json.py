"""SQuAD v1.1-format JSON: XQuAD, MLQA (``dev-context-X-question-Y.json``), TyDiQA-GoldP, SQuAD v1.1.

Every question comes with all its answers (text + ``answer_start``; -1 when a file gives no start). A start that
does not point at its answer text (``context[start:start+len(text)] != text``) is handled by ``on_mismatch``:
"warn" (default: keep the answer as given and warn once per file with the count), "error", or "ignore". The
official files of the shared data layout (XQuAD 12 languages, MLQA dev, TyDiQA-GoldP dev + train, SQuAD v1.1 dev)
have no mismatch at all; the default only keeps a file we have not seen from stopping a whole evaluation, since
the official scorers compare answer texts and never use the start.

Question ids must be unique in evaluation files (predictions are keyed by id); a repeated id is a ``DataError``
there. TyDiQA-GoldP's train files repeat ids (en: 3696 questions, 89 distinct ids), so ``split="train"`` accepts
repeats unless ``unique_ids=True``.

JSON has no useful line numbers (the official files are one line), so ``QAExample.line`` is the 0-based index
of the question in file order, and errors point at the line of the offending question id in the raw text when
it can be found there (line 1 otherwise).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

from xeval.base.errors import DataError
from xeval.base.textfile import read_utf8
from xeval.data.examples import Answer, QAExample


def mlqa_filename(context_lang: str, question_lang: str, split: str) -> str:
    """MLQA's file name for a split (``dev``/``test``) and a context / question language pair."""
    return f"{split}-context-{context_lang}-question-{question_lang}.json"


def _line_of(text: str, needle: Any) -> int:
    """1-based line of the first occurrence of ``needle`` (JSON-encoded) in ``text``; 1 if absent."""
    if needle is None:
        return 1
    for encoded in (json.dumps(needle, ensure_ascii=False), json.dumps(needle)):
        at = text.find(encoded)
        if at >= 0:
            return text.count("\n", 0, at) + 1
    return 1


def _expect(cond: bool, path: Path, text: str, needle: Any, message: str) -> None:
    if not cond:
        raise DataError(path, _line_of(text, needle), message)


def read_squad(
    path: str | Path, lang: str, split: str, *, on_mismatch: str = "warn", unique_ids: bool | None = None
) -> list[QAExample]:
    """Read a SQuAD-format file into one ``QAExample`` per question (file order)."""
    if on_mismatch not in ("warn", "error", "ignore"):
        raise ValueError(f"on_mismatch must be 'warn', 'error' or 'ignore', not {on_mismatch!r}")
    path = Path(path)
    if not path.is_file():
        raise DataError(path, None, "expected a readable file, found none")
    text = read_utf8(path, "JSON")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise DataError(
            path, err.lineno, f"expected valid JSON, found {err.msg} (column {err.colno})"
        ) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        found = f"a JSON {type(doc).__name__}" if not isinstance(doc, dict) else 'no "data" list'
        raise DataError(path, 1, f'expected a SQuAD object {{"data": [...]}}, found {found}')
    if unique_ids is None:
        unique_ids = split != "train"
    source = str(path)
    examples: list[QAExample] = []
    seen: set[str] = set()
    mismatches = 0
    first_mismatch = ""
    for article in doc["data"]:
        _expect(
            isinstance(article, dict) and isinstance(article.get("paragraphs"), list),
            path,
            text,
            article.get("title") if isinstance(article, dict) else None,
            'expected an article {"title", "paragraphs": [...]}, found none',
        )
        title = article.get("title", "")
        for paragraph in article["paragraphs"]:
            ok = isinstance(paragraph, dict) and isinstance(paragraph.get("context"), str)
            _expect(
                ok and isinstance(paragraph.get("qas"), list),
                path,
                text,
                title,
                f'expected a paragraph {{"context": str, "qas": [...]}} in article {title!r}, found none',
            )
            context = paragraph["context"]
            for qa in paragraph["qas"]:
                qid = qa.get("id") if isinstance(qa, dict) else None
                _expect(
                    isinstance(qid, (str, int)) and not isinstance(qid, bool),
                    path,
                    text,
                    title,
                    f"expected a question with an id in article {title!r}, found {qid!r}",
                )
                qid = str(qid)
                _expect(
                    not unique_ids or qid not in seen,
                    path,
                    text,
                    qid,
                    f"expected unique question ids, found {qid!r} twice",
                )
                seen.add(qid)
                _expect(
                    isinstance(qa.get("question"), str),
                    path,
                    text,
                    qid,
                    f"expected a question string for id {qid!r}, found {type(qa.get('question')).__name__}",
                )
                raw_answers = qa.get("answers", [])
                _expect(
                    isinstance(raw_answers, list),
                    path,
                    text,
                    qid,
                    f"expected a list of answers for id {qid!r}, found {type(raw_answers).__name__}",
                )
                answers: list[Answer] = []
                for ans in raw_answers:
                    ok = isinstance(ans, dict) and isinstance(ans.get("text"), str)
                    _expect(
                        ok,
                        path,
                        text,
                        qid,
                        f'expected answers {{"text", "answer_start"}} for id {qid!r}, found {ans!r}',
                    )
                    start = ans.get("answer_start", -1)
                    _expect(
                        isinstance(start, int) and not isinstance(start, bool) and start >= -1,
                        path,
                        text,
                        qid,
                        f"expected an integer answer_start for id {qid!r}, found {start!r}",
                    )
                    if start >= 0 and context[start : start + len(ans["text"])] != ans["text"]:
                        if on_mismatch == "error":
                            raise DataError(
                                path,
                                _line_of(text, qid),
                                f"expected answer {ans['text']!r} at context offset {start} for id {qid!r}, "
                                f"found {context[start : start + len(ans['text'])]!r}",
                            )
                        mismatches += 1
                        first_mismatch = first_mismatch or qid
                    answers.append(Answer(ans["text"], start))
                examples.append(
                    QAExample(
                        qid, qa["question"], context, answers, lang, split, source, len(examples), title
                    )
                )
    unanswered = [ex.id for ex in examples if not ex.answers]
    if unanswered and len(unanswered) < len(examples):
        # A file is label-free only when every question is; one question without answers among labelled ones
        # is a broken file, and scoring around it (or calling the whole file label-free) would hide that.
        raise DataError(
            path,
            _line_of(text, unanswered[0]),
            f"expected answers for question {unanswered[0]!r} as for {len(examples) - len(unanswered)} other "
            f"question(s) of the file, found none ({len(unanswered)} question(s) without answers)",
        )
    if mismatches and on_mismatch == "warn":
        warnings.warn(
            f"{path}: {mismatches} answer_start value(s) do not point at their answer text "
            f"(first: question {first_mismatch!r}); kept as given",
            stacklevel=2,
        )
    return examples


def is_label_free(examples: list[QAExample]) -> bool:
    """True when no question carries a real answer: XTREME's official test files, where
    ``remove_qa_test_annotations`` (``utils_preprocess.py``) leaves every question the dummy answer
    ``{"answer_start": 0, "text": ""}``, or files without answers at all. Scoring such a file would turn empty
    predictions into 100 and perfect ones into 0, so it is predicted and exported, never scored.

    >>> from xeval.data.examples import Answer, QAExample
    >>> dummy = QAExample("q1", "Who?", "Ann came.", [Answer("", 0)], "en", "test", "x.json", 0)
    >>> is_label_free([dummy]), is_label_free([QAExample("q2", "Who?", "Ann came.", [Answer("Ann", 0)], "en", "test", "x.json", 1)])
    (True, False)
    """
    return bool(examples) and not any(a.text.strip() for ex in examples for a in ex.answers)
