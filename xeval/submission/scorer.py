"""Score a submission folder in XTREME's layout, as XTREME's official ``evaluate.py`` does, and return the JSON
structure that scorer produces (``xeval score`` is the thin CLI over ``score_submission``).

Layout (both folders): ``<task>/test-<lang>.<ext>``, ext ``json`` for QA (and XTREME-R's Mewsli-X / LAReQA),
``tsv`` otherwise. File formats, as ``evaluate.py`` reads them:

- tagging (udpos, panx): one tag per line, a blank line between sentences. Labels in the same layout. A line
  ``token<TAB>tag`` is also accepted (the last field is the tag), so XTREME's labelled data files can serve as
  labels directly; the official scorer would take the whole line as the tag. Any other line is an error naming the
  file and line: three tab-separated fields, or a "tag" with a space in it (``Berlin B-LOC``: space-separated
  columns, which would otherwise be read as one unknown tag and score a perfect prediction 66.67).
- classification (pawsx, xnli, xcopa) and tatoeba: one label (tatoeba: one index) per line.
- bucc2018: one ``src-id<TAB>tgt-id`` pair per line, compared as sets.
- QA: predictions ``{question id: answer text}``; labels SQuAD v1.1 JSON (``{"data": [...]}`` or the list).
- XTREME-R (``--benchmark xtreme-r``, evaluate.py's lists): xcopa ``.jsonl`` with a ``label`` per row on both
  sides; mewslix predictions ``{query id: [ranked ids]}``, labels ``{query id: [gold id]}``, scored ``map@20``
  (mean reciprocal rank); lareqa has no languages in evaluate.py, so its block is ``{}``.

Lines end at ``\n`` (``\r\n`` too) only: a token holding U+2028 or another character ``str.splitlines`` breaks on
stays one line, so the two files' line numbers agree with what an editor shows.

Where this is stricter than the official scorer (which ``assert``s or crashes), a user error names the file and
what was expected: a missing prediction file, a different number of lines / sentences / tags than the labels,
malformed JSON, a QA prediction file answering none of the questions. Individual unanswered questions score 0,
as in the official scripts, and are reported as warnings. Trailing blank lines and empty sentences are ignored on
both sides (they cannot change a score).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from xeval.base.errors import DataError, UserError
from xeval.metrics import accuracy, bucc_scores, chunk_scores, mewslix_map20, mlqa_scores, squad_scores
from xeval.metrics.xtreme import Benchmark, TaskSpec, get_benchmark, overall_scores, task_summary

FORMATS = {
    "accuracy": "one label per line",
    "chunk_f1": "one tag per line, a blank line between sentences",
    "bucc_f1": "one 'src-id<TAB>tgt-id' pair per line",
    "squad": 'a JSON object {"question id": "answer text"}',
    "mlqa": 'a JSON object {"question id": "answer text"}',
    "mrr_at_20": 'a JSON object {"query id": ["ranked id", ...]}',
    "xcopa_accuracy": 'one JSON object {"label": ...} per line',
    "none": "nothing (evaluate.py lists no language)",
}


@dataclass
class ScoreReport:
    """``result``: the official scorer's JSON (groups/overall first, then one block per task);
    ``skipped``: task -> languages left out because their label file is missing (``partial=True`` only);
    ``warnings``: one line each (unanswered questions, task folders not scored)."""

    benchmark: str
    result: dict
    skipped: dict[str, list[str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def _read_text(path: Path) -> str:
    from xeval.base.textfile import read_utf8

    return read_utf8(path)  # a bad byte is named with its line; a BOM is accepted


def _lines(path: Path) -> list[str]:
    """The file's lines, split at ``\n`` only (``str.splitlines`` also splits at U+2028, U+0085, form feeds...)."""
    return [line.removesuffix("\r") for line in _read_text(path).removesuffix("\n").split("\n")]


def _tag(path: Path, number: int, line: str) -> str:
    """The tag of a stripped tagging line: ``tag`` or ``token<TAB>tag``."""
    fields = line.split("\t")
    tag = fields[-1].strip()
    if len(fields) > 2 or not tag or any(c.isspace() for c in tag):
        found = f"{len(fields)} tab-separated fields" if len(fields) > 2 else f"{line!r:.60}"
        hint = " (space-separated columns?)" if len(fields) == 1 and " " in tag else ""
        raise DataError(path, number, f"expected one tag, or token<TAB>tag, per line, found {found}{hint}")
    return tag


def read_tags(path: Path) -> list[tuple[int, list[str]]]:
    """Sentences of tags with the 1-based line of each sentence's first tag; empty sentences are dropped."""
    sentences: list[tuple[int, list[str]]] = []
    current: list[str] = []
    start = 0
    for number, line in enumerate(_lines(path), start=1):
        line = line.strip()
        if line:
            if not current:
                start = number
            current.append(_tag(path, number, line))
        elif current:
            sentences.append((start, current))
            current = []
    if current:
        sentences.append((start, current))
    return sentences


def read_lines(path: Path) -> list[str]:
    """Stripped lines, trailing blank lines dropped (``evaluate.py: read_label``)."""
    lines = [line.strip() for line in _lines(path)]
    while lines and not lines[-1]:
        lines.pop()
    for number, line in enumerate(lines, start=1):
        if "\t" in line:
            raise DataError(path, number, f"expected one label per line, found {line.count(chr(9)) + 1} "
                                          "tab-separated fields")
    return lines


def read_json(path: Path):
    try:
        return json.loads(_read_text(path))
    except json.JSONDecodeError as err:
        raise DataError(path, err.lineno, f"not valid JSON: {err.msg}") from None


def read_squad_gold(path: Path) -> dict[str, list[str]]:
    """``{question id: [answer texts]}`` in file order from a SQuAD v1.1 JSON file."""
    data = read_json(path)
    articles = data.get("data") if isinstance(data, dict) else data
    if not isinstance(articles, list):
        raise DataError(path, None, 'expected SQuAD JSON: {"data": [articles]} or a list of articles')
    gold: dict[str, list[str]] = {}
    try:
        for article in articles:
            for paragraph in article["paragraphs"]:
                for qa in paragraph["qas"]:
                    if qa["id"] in gold:
                        raise DataError(path, None, f"question id {qa['id']!r} appears twice")
                    gold[qa["id"]] = [a["text"] for a in qa["answers"]]
    except (KeyError, TypeError) as err:
        raise DataError(
            path, None, f"expected SQuAD JSON articles/paragraphs/qas/answers, missing {err}"
        ) from None
    return gold


def _string_map(path: Path, *, lists: bool) -> dict:
    data = read_json(path)
    want = "a list of strings" if lists else "a string"
    if not isinstance(data, dict):
        raise DataError(path, None, f"expected a JSON object mapping each id to {want}")
    for key, value in data.items():
        ok = (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
            if lists
            else isinstance(value, str)
        )
        if not ok:
            raise DataError(path, None, f"id {key!r}: expected {want}, found {type(value).__name__}")
    return data


def _count_error(pred: Path, label: Path, what: str, expected: int, found: int) -> DataError:
    return DataError(pred, None, f"expected {expected} {what} as in {label}, found {found}")


def _score_tagging(pred: Path, label: Path) -> dict[str, float]:
    gold = read_tags(label)
    predicted = read_tags(pred)
    if len(predicted) != len(gold):
        raise _count_error(
            pred, label, "sentences (one tag per line, blank line between)", len(gold), len(predicted)
        )
    for i, ((line, p), (gold_line, g)) in enumerate(zip(predicted, gold)):
        if len(p) != len(g):
            raise DataError(
                pred,
                line,
                f"sentence {i + 1} has {len(p)} tags, the labels have {len(g)} ({label}:{gold_line})",
            )
    return chunk_scores([g for _, g in gold], [p for _, p in predicted])


def _score_lines(pred: Path, label: Path) -> dict[str, float]:
    gold = read_lines(label)
    predicted = read_lines(pred)
    if len(predicted) != len(gold):
        raise _count_error(pred, label, "lines (one label per line)", len(gold), len(predicted))
    return accuracy(gold, predicted)


def _read_pairs(path: Path) -> list[tuple[str, str]]:
    pairs = []
    for number, line in enumerate(_lines(path), start=1):
        line = line.strip()
        if not line:
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            raise DataError(path, number, f"expected 'src-id<TAB>tgt-id', found {len(fields)} field(s)")
        pairs.append((fields[0], fields[1]))
    return pairs


def _check_answered(pred: Path, label: Path, answered: int, total: int, warnings: list[str]) -> None:
    if answered == 0:
        raise DataError(pred, None, f"none of the {total} ids in {label} has a prediction; wrong file?")
    if answered < total:
        warnings.append(f"{pred}: {total - answered} of {total} ids have no prediction (scored 0)")


def score_file(spec: TaskSpec, lang: str, pred: Path, label: Path, warnings: list[str]) -> dict[str, float]:
    """One task and language: the metrics XTREME's ``evaluate_one_task`` returns (percentages)."""
    try:
        return _score_file(spec, lang, pred, label, warnings)
    except ValueError as err:  # a metric's own check, e.g. an empty label file
        raise DataError(label, None, str(err)) from None


def _score_file(spec: TaskSpec, lang: str, pred: Path, label: Path, warnings: list[str]) -> dict[str, float]:
    if spec.metric == "chunk_f1":
        return _score_tagging(pred, label)
    if spec.metric == "accuracy":
        return _score_lines(pred, label)
    if spec.metric == "bucc_f1":
        return bucc_scores(_read_pairs(label), _read_pairs(pred))
    if spec.metric in ("squad", "mlqa"):
        gold = read_squad_gold(label)
        predictions = _string_map(pred, lists=False)
        _check_answered(pred, label, sum(q in predictions for q in gold), len(gold), warnings)
        if spec.metric == "mlqa":
            return mlqa_scores(predictions, gold, lang)
        return squad_scores(predictions, gold)
    if spec.metric == "mrr_at_20":
        gold = _string_map(label, lists=True)
        predictions = _string_map(pred, lists=True)
        _check_answered(pred, label, sum(q in predictions for q in gold), len(gold), warnings)
        return mewslix_map20(predictions, gold, k=20)
    if spec.metric == "xcopa_accuracy":
        gold, predicted = read_jsonl_labels(label), read_jsonl_labels(pred)
        if len(predicted) != len(gold):
            raise _count_error(pred, label, "rows (one JSON object with a label per line)", len(gold), len(predicted))
        return accuracy(gold, predicted)
    raise ValueError(f"unknown metric kind {spec.metric!r}")


def read_jsonl_labels(path: Path) -> list:
    """XCOPA's ``.jsonl`` (evaluate.py ``read_xcopa``): the ``label`` of every row, predictions and labels alike."""
    out = []
    for number, line in enumerate(_lines(path), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataError(path, number, f"expected one JSON object per line, found {err.msg}") from None
        if not isinstance(row, dict) or "label" not in row:
            raise DataError(path, number, 'expected a JSON object with a "label", found none')
        out.append(row["label"])
    return out


def write_predictions(spec: TaskSpec, path: str | Path, predictions) -> None:
    """Write one ``<task>/test-<lang>.<ext>`` file of the submission layout, in the format ``score_file`` reads.

    ``predictions``: tagging, a list of tag lists (one per sentence); classification and tatoeba, a list of labels;
    bucc2018, a list of (src id, tgt id) pairs; QA, ``{question id: answer}``; mewslix/lareqa,
    ``{query id: [ranked ids]}``.
    """
    from xeval.base.atomic import write_text

    if spec.metric == "chunk_f1":
        text = "".join("\n".join(tags) + "\n\n" for tags in predictions)
    elif spec.metric == "accuracy":
        text = "".join(f"{label}\n" for label in predictions)
    elif spec.metric == "bucc_f1":
        text = "".join(f"{src}\t{tgt}\n" for src, tgt in predictions)
    elif spec.metric == "xcopa_accuracy":
        text = "".join(json.dumps({"label": label}) + "\n" for label in predictions)
    else:
        text = json.dumps(predictions, ensure_ascii=False, indent=1) + "\n"
    write_text(path, text)


def _subfolders(path: Path, role: str) -> set[str]:
    if not path.is_dir():
        raise UserError(f"{path}: {role} folder not found (expected <task>/test-<lang>.tsv|json inside)")
    return {p.name for p in path.iterdir() if p.is_dir()}


def score_task(
    spec: TaskSpec, predictions: Path, labels: Path, *, partial: bool, report: ScoreReport
) -> dict | None:
    """XTREME's block for one task, or None when (partial mode) no language has labels."""
    from xeval.submission.writer import check_manifest

    per_lang: dict[str, dict[str, float]] = {}
    missing_labels = []
    names = [f"test-{lang}.{spec.suffix}" for lang in spec.langs]
    scored = [n for n in names if (labels / spec.name / n).is_file() and (predictions / spec.name / n).is_file()]
    check_manifest(predictions / spec.name, scored)  # one run's files, where xeval wrote them
    for lang in spec.langs:
        name = f"test-{lang}.{spec.suffix}"
        label = labels / spec.name / name
        if not label.is_file():
            missing_labels.append(lang)
            continue
        pred = predictions / spec.name / name
        if not pred.is_file():
            raise DataError(
                pred,
                None,
                f"missing: expected the {spec.name} predictions for {lang}, {FORMATS[spec.metric]}",
            )
        per_lang[lang] = score_file(spec, lang, pred, label, report.warnings)
    if missing_labels and not partial:
        raise UserError(
            f"{labels / spec.name}: no label file for {len(missing_labels)} of the {len(spec.langs)} "
            f"{spec.name} languages ({', '.join(missing_labels)}); expected test-<lang>.{spec.suffix} for each "
            f"(use --partial to score the languages that have labels)"
        )
    if missing_labels:
        report.skipped[spec.name] = missing_labels
    if not spec.langs:  # XTREME-R's lareqa: evaluate.py lists no language and keeps an empty block
        return {}
    return task_summary(spec.name, per_lang) if per_lang else None


def score_submission(
    predictions: str | Path,
    labels: str | Path,
    benchmark: str | Benchmark = "xtreme",
    *,
    partial: bool = False,
) -> ScoreReport:
    """Score every task that has a folder in both ``predictions`` and ``labels``, as XTREME's ``evaluate``.

    ``partial=True`` skips languages without a label file; such a task keeps its averages over the languages
    scored but counts as absent for group and overall scores.
    """
    bench = get_benchmark(benchmark) if isinstance(benchmark, str) else benchmark
    predictions, labels = Path(predictions), Path(labels)
    pred_tasks = _subfolders(predictions, "predictions")
    label_tasks = _subfolders(labels, "labels")
    report = ScoreReport(benchmark=bench.name, result={})
    detailed: dict[str, dict] = {}
    for task, spec in bench.tasks.items():
        if task in pred_tasks and task in label_tasks:
            block = score_task(spec, predictions, labels, partial=partial, report=report)
            if block is not None:
                detailed[task] = block
        elif task in pred_tasks:
            report.warnings.append(f"{predictions / task}: no {labels / task} folder, task not scored")
    unknown = sorted(pred_tasks - set(bench.tasks))
    if unknown:
        report.warnings.append(f"{predictions}: folders not in {bench.name}, ignored: {', '.join(unknown)}")
    if not detailed:
        raise UserError(
            f"no {bench.name} task to score: {predictions} and {labels} share no task folder "
            f"({', '.join(bench.tasks)})"
        )
    complete = {t: block for t, block in detailed.items() if t not in report.skipped}
    report.result = {**overall_scores(complete, bench), **detailed}
    return report


def format_report(report: ScoreReport) -> str:
    """A short human-readable table: one line per task (languages scored, average of each metric), then groups."""
    bench = get_benchmark(report.benchmark)
    lines = [f"{report.benchmark} scores"]
    for task, spec in bench.tasks.items():
        block = report.result.get(task)
        if block is None:
            continue
        n_langs = len(next(v for v in block.values() if isinstance(v, dict)))
        averages = "  ".join(
            f"{k[4:]} {v:6.2f}" for k, v in block.items() if k.startswith("avg_") and k != "avg_metric"
        )
        note = "  (incomplete: not in group scores)" if task in report.skipped else ""
        lines.append(
            f"  {task:<9} {n_langs:>2}/{len(spec.langs):<2} langs  metric {block['avg_metric']:6.2f}  {averages}{note}"
        )
    groups = [(k, v) for k, v in report.result.items() if not isinstance(v, dict)]
    for name, value in groups:
        lines.append(f"  {name:<15} {value:6.2f}")
    return "\n".join(lines)
