"""Per-example outcomes of a result record: what each example scored, so reports can resample examples.

A record's headline number is an aggregate over examples. Keeping, per example, its id, gold, prediction and the
additive statistics the aggregate is built from lets ``report`` draw bootstrap confidence intervals and ``compare
--significance`` run paired tests without re-running a model. Three aggregates cover the metrics xeval stores:

- ``mean``: the metric is the mean of a per-example score in points (accuracy: 0 or 100 per example; QA EM/F1:
  the question's max over gold answers × 100; Tatoeba top-1: 0 or 100 per query; lexicon induction: 0 or 100
  per source word);
- ``f1``: corpus-level chunk F1 (seqeval, UD-POS and PAN-X) = 100 · 2·Σcorrect / (Σpredicted + Σgold) over
  sentences (chunks never cross a sentence boundary, so the per-sentence counts add up to seqeval's);
- ``aer``: corpus-level AER (Och & Ney) = 100 · (1 − (Σ|A∩S| + Σ|A∩P|) / (Σ|A| + Σ|S|)) over sentence pairs.

The file sits beside its record, ``<record stem>.outcomes.json.gz`` (schema ``xeval.results.outcomes/1``), gzipped JSON
in columns::

    {"schema": "xeval.results.outcomes/1", "ids": [...], "gold": [...], "prediction": [...],
     "inputs": [...],                      # optional: what each example gave the model (its text)
     "metrics": {"f1": {"aggregate": "f1", "stats": {"correct": [...], "predicted": [...], "gold": [...]}}},
     "record": {"unit": {...}, "n_examples": 977, "timestamp": "..."}, "sha256": "..."}

The file is bound to its record: ``record`` holds the identity of the record it was written with (its unit, config
hash included, its number of examples and its timestamp) and ``sha256`` the checksum of everything else. Read with
the record (``Record.outcomes()``), a file must carry that identity, the checksum must hold, it must have one row per
example, and every metric it has must reproduce the record's number; otherwise ``UnboundOutcomes`` (a
``DataError`` naming the file and why): an outcomes file copied from another run, left by an older record, or
edited never gives an interval or a significance test around a number it does not belong to. Reports then show
the cell without an interval and say why; ``xeval run`` fails where it would export such a file.

``inputs`` (files written since it exists) hold each example's text as the task reads it: the tokens of a tagged
sentence, the two texts of a pair, a question with its context, a retrieval query (the English sentence, the
official direction's), an aligned sentence pair; the ``.jsonl`` beside exported predictions shows it as ``input``.

Records written before outcomes existed, and probes whose number is not an aggregate over independent examples
(BUCC mining: a threshold chosen over the whole corpus), have no file; reports then show no interval.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from xeval.base.atomic import atomic_path
from xeval.base.errors import DataError

SCHEMA = "xeval.results.outcomes/1"
AGGREGATES = {
    "mean": ("score",),
    "f1": ("correct", "predicted", "gold"),
    "aer": ("predicted_sure", "predicted_possible", "predicted", "sure"),
}
SUFFIX = ".outcomes.json.gz"
_REPRODUCE = 1e-5  # points: records round metrics to 1e-6; the per-example sums reproduce them to float precision


class UnboundOutcomes(DataError):
    """An outcomes file that does not belong to the record beside it (another run's, an older record's, edited)."""


def aggregate(kind: str, sums: dict[str, np.ndarray], n: int) -> np.ndarray:
    """The metric (points) from summed statistics; ``sums`` values may be arrays (one per bootstrap replicate)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if kind == "mean":
            return np.asarray(sums["score"], dtype=np.float64) / n
        if kind == "f1":
            denominator = np.asarray(sums["predicted"] + sums["gold"], dtype=np.float64)
            return np.where(denominator > 0, 200.0 * sums["correct"] / np.where(denominator > 0, denominator, 1), 0.0)
        if kind == "aer":
            hits = np.asarray(sums["predicted_sure"] + sums["predicted_possible"], dtype=np.float64)
            return 100.0 * (1.0 - hits / (sums["predicted"] + sums["sure"]))
    raise ValueError(f"unknown aggregate {kind!r}; expected one of {', '.join(AGGREGATES)}")


@dataclass
class MetricOutcomes:
    aggregate: str
    stats: dict[str, np.ndarray]  # stat name -> float64 [N], one value per example

    def value(self, index: np.ndarray | None = None) -> np.ndarray:
        """The metric over all examples (index None), or over rows ``index`` [..., N] (one value per leading
        position: bootstrap replicates)."""
        if index is None:
            return aggregate(self.aggregate, {k: v.sum() for k, v in self.stats.items()}, len(self))
        return aggregate(self.aggregate, {k: v[index].sum(axis=-1) for k, v in self.stats.items()}, index.shape[-1])

    def __len__(self) -> int:
        return len(next(iter(self.stats.values())))


@dataclass
class Outcomes:
    """One record's per-example outcomes: ids, gold, predictions, and per metric its statistics."""

    ids: list[str]
    gold: list
    prediction: list
    metrics: dict[str, MetricOutcomes] = field(default_factory=dict)
    inputs: list | None = None  # each example's input text (see the module docstring), None in older files

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, metric: str, aggregate_kind: str, **stats) -> Outcomes:
        need = AGGREGATES[aggregate_kind]
        if sorted(stats) != sorted(need):
            raise ValueError(f"aggregate {aggregate_kind!r} needs the statistics {', '.join(need)}")
        arrays = {k: np.asarray(v, dtype=np.float64) for k, v in stats.items()}
        if any(a.shape != (len(self.ids),) for a in arrays.values()):
            raise ValueError(f"{metric}: expected one statistic per example ({len(self.ids)})")
        self.metrics[metric] = MetricOutcomes(aggregate_kind, arrays)
        return self

    def with_inputs(self, inputs: list) -> Outcomes:
        if len(inputs) != len(self.ids):
            raise ValueError(f"expected one input per example ({len(self.ids)}), found {len(inputs)}")
        self.inputs = list(inputs)
        return self

    def to_json(self) -> dict:
        out = {"schema": SCHEMA, "ids": [str(i) for i in self.ids], "gold": self.gold, "prediction": self.prediction,
               "metrics": {name: {"aggregate": m.aggregate, "stats": {k: _plain(v) for k, v in m.stats.items()}}
                           for name, m in self.metrics.items()}}
        if self.inputs is not None:
            out["inputs"] = self.inputs
        return out

    @classmethod
    def from_json(cls, obj: dict, path: str | Path) -> Outcomes:
        if not isinstance(obj, dict) or obj.get("schema") != SCHEMA:
            found = obj.get("schema") if isinstance(obj, dict) else type(obj).__name__
            raise DataError(path, None, f"expected per-example outcomes with schema {SCHEMA!r}, found {found!r}")
        try:
            out = cls(list(obj["ids"]), list(obj["gold"]), list(obj["prediction"]))
            for name, m in obj["metrics"].items():
                out.add(name, m["aggregate"], **m["stats"])
            if obj.get("inputs") is not None:
                out.with_inputs(list(obj["inputs"]))
        except (KeyError, TypeError, ValueError) as err:
            raise DataError(path, None, f"expected complete per-example outcomes, found a bad field ({err})") from None
        return out


def _plain(values: np.ndarray) -> list:
    """JSON numbers: integers where every value is whole (counts, 0/100 scores), so files stay small."""
    if np.all(values == np.round(values)):
        return [int(v) for v in values]
    return [float(v) for v in values]


def outcomes_path(record_path: str | Path) -> Path:
    path = Path(record_path)
    return path.with_name(path.name.removesuffix(".json") + SUFFIX)


def record_identity(record) -> dict:
    """What binds an outcomes file to its record: the unit (config hash included), n_examples, the timestamp."""
    return {"unit": asdict(record.unit), "n_examples": int(record.n_examples),
            "timestamp": (record.provenance or {}).get("timestamp")}


def _checksum(body: dict) -> str:
    text = json.dumps({k: v for k, v in body.items() if k != "sha256"}, sort_keys=True, ensure_ascii=False,
                      separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def write_outcomes(record_path: str | Path, outcomes: Outcomes, record=None) -> Path:
    """Write ``outcomes`` beside the record file, bound to ``record`` (the one about to be written there)."""
    path = outcomes_path(record_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = outcomes.to_json()
    if record is not None:
        body["record"] = record_identity(record)
    body["sha256"] = _checksum(body)
    data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    with atomic_path(path) as tmp:
        # mtime=0: the same outcomes give the same bytes
        with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as handle:
            handle.write(data)
    return path


def read_outcomes(record_path: str | Path, record=None) -> Outcomes | None:
    """The outcomes stored beside a record file, or None when it has none (older records, BUCC). With ``record``
    (the record as stored in that file), an ``UnboundOutcomes`` unless the file is that record's (module docstring)."""
    path = outcomes_path(record_path)
    if not path.is_file():
        return None
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            obj = json.load(handle)
    except (OSError, EOFError, json.JSONDecodeError) as err:
        raise DataError(path, None, f"expected gzipped JSON outcomes, found unreadable data ({err})") from None
    outcomes = Outcomes.from_json(obj, path)
    if record is not None:
        check_binding(obj, outcomes, record, path)
    return outcomes


def check_binding(obj: dict, outcomes: Outcomes, record, path: Path) -> None:
    """``UnboundOutcomes`` unless the outcomes file ``obj`` (parsed as ``outcomes``) belongs to ``record``."""
    def fail(why: str):
        raise UnboundOutcomes(path, None, f"per-example outcomes that do not belong to the record beside them "
                                          f"({why}); rerun the unit with --overwrite")

    bound = obj.get("record")
    if not isinstance(bound, dict):
        fail("no record identity: written by an older xeval")
    if obj.get("sha256") != _checksum(obj):
        fail("the checksum written with them does not hold: edited since")
    if bound != record_identity(record):
        differ = [k for k, v in record_identity(record).items() if bound.get(k) != v]
        fail(f"written with another record: {', '.join(differ)} differ")
    if len(outcomes) != record.n_examples:
        fail(f"{len(outcomes)} examples, the record has {record.n_examples}")
    for name, metric in outcomes.metrics.items():
        stored = record.metrics.get(name)
        value = float(metric.value())
        if stored is not None and not (math.isnan(stored) and math.isnan(value)) \
                and not abs(value - float(stored)) <= _REPRODUCE * max(1.0, abs(float(stored))):
            fail(f"they give {name} {value:.6g}, the record {stored:.6g}")


# ------------------------------------------------------------------------------------- builders per task family


def example_id(example, index: int | None = None) -> str:
    """A stable id for an example: its own id (QA), else ``<file name>:<line>``, else its position."""
    own = getattr(example, "id", None)
    if own:
        return str(own)
    if getattr(example, "source", "") and getattr(example, "line", 0):
        return f"{Path(example.source).name}:{example.line}"
    return str(index)


def classification_outcomes(ids, gold, predicted) -> Outcomes:
    """Accuracy: 100 for a correct example, 0 otherwise."""
    scores = [100.0 * (g == p) for g, p in zip(gold, predicted)]
    return Outcomes(list(ids), list(gold), list(predicted)).add("accuracy", "mean", score=scores)


def tagging_outcomes(ids, gold: list[list[str]], predicted: list[list[str]], legacy_types: bool = False) -> Outcomes:
    """seqeval chunk F1 from per-sentence chunk counts (the headline; precision, recall and token accuracy stay
    in the record only)."""
    from xeval.metrics import get_chunks

    correct, n_pred, n_gold = [], [], []
    for g, p in zip(gold, predicted):
        true, pred = set(get_chunks(g, legacy_types=legacy_types)), set(get_chunks(p, legacy_types=legacy_types))
        correct.append(len(true & pred))
        n_pred.append(len(pred))
        n_gold.append(len(true))
    out = Outcomes(list(ids), [list(g) for g in gold], [list(p) for p in predicted])
    return out.add("f1", "f1", correct=correct, predicted=n_pred, gold=n_gold)


def qa_outcomes(ids, golds: list[list[str]], predicted: list[str], em: list[float], f1: list[float]) -> Outcomes:
    """EM and F1 per question (0-1 each, max over gold answers) in points."""
    out = Outcomes(list(ids), [list(g) for g in golds], list(predicted))
    out.add("exact_match", "mean", score=[100.0 * x for x in em])
    return out.add("f1", "mean", score=[100.0 * x for x in f1])
