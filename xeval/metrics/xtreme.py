"""The XTREME aggregation: which tasks and languages a benchmark has, per-task language averages, group scores
and the overall score, in the JSON structure of XTREME's official ``evaluate.py``.

XTREME (google-research/xtreme ``evaluate.py``): ``GROUP2TASK`` / ``TASK2LANGS`` below are copied from it as
data (task order and language order included, since averages are summed in that order). Per task:
``avg_<metric>`` = unweighted mean over the task's languages of every metric; ``avg_metric`` = (avg EM + avg F1) / 2
for QA tasks, else avg F1 if the task has F1, else avg accuracy. Group scores = mean of the group's tasks'
``avg_metric``, only when every task of the group is present; ``all_task`` = mean over all tasks, only when all
are present.

XTREME-R: the lists, groups and metric of the same ``evaluate.py`` (``--xtreme_version xtreme-r``), see
``XTREME_R`` below; ``GROUP_TITLES`` gives the papers' names of the groups.
"""

from __future__ import annotations

from dataclasses import dataclass

QA_TASKS = ("xquad", "mlqa", "tydiqa")


@dataclass(frozen=True)
class TaskSpec:
    """One benchmark task: its languages (in the scorer's order), metric kind and submission file extension."""

    name: str
    langs: tuple[str, ...]
    metric: str  # "accuracy" | "chunk_f1" | "squad" | "mlqa" | "bucc_f1" | "xcopa_accuracy" | "mrr_at_20" | "none"

    @property
    def suffix(self) -> str:  # evaluate.py's get_suffix
        if self.metric == "xcopa_accuracy":
            return "jsonl"
        return "json" if self.metric in ("squad", "mlqa", "mrr_at_20") else "tsv"


@dataclass(frozen=True)
class Benchmark:
    name: str
    groups: dict[str, tuple[str, ...]]
    tasks: dict[str, TaskSpec]  # in the scorer's task order


def _langs(text: str) -> tuple[str, ...]:
    return tuple(text.split(","))


_XTREME_LANGS = {
    "pawsx": _langs("de,en,es,fr,ja,ko,zh"),
    "xnli": _langs("ar,bg,de,el,en,es,fr,hi,ru,sw,th,tr,ur,vi,zh"),
    "panx": _langs(
        "ar,he,vi,id,jv,ms,tl,eu,ml,ta,te,af,nl,en,de,el,bn,hi,mr,ur,fa,fr,it,pt,es,bg,ru,ja,ka,ko,th,sw,yo,my,zh,"
        "kk,tr,et,fi,hu"
    ),
    "udpos": _langs(
        "af,ar,bg,de,el,en,es,et,eu,fa,fi,fr,he,hi,hu,id,it,ja,kk,ko,mr,nl,pt,ru,ta,te,th,tl,tr,ur,vi,yo,zh"
    ),
    "bucc2018": _langs("de,fr,ru,zh"),
    "tatoeba": _langs(
        "ar,he,vi,id,jv,tl,eu,ml,ta,te,af,nl,de,el,bn,hi,mr,ur,fa,fr,it,pt,es,bg,ru,ja,ka,ko,th,sw,zh,kk,tr,et,fi,hu"
    ),
    "xquad": _langs("en,es,de,el,ru,tr,ar,vi,th,zh,hi"),
    "mlqa": _langs("en,es,de,ar,hi,vi,zh"),
    "tydiqa": _langs("en,ar,bn,fi,id,ko,ru,sw,te"),
}
_METRIC = {
    "pawsx": "accuracy",
    "xnli": "accuracy",
    "panx": "chunk_f1",
    "udpos": "chunk_f1",
    "bucc2018": "bucc_f1",
    "tatoeba": "accuracy",
    "xquad": "squad",
    "mlqa": "mlqa",
    "tydiqa": "squad",
}

XTREME = Benchmark(
    name="xtreme",
    groups={
        "classification": ("pawsx", "xnli"),
        "tagging": ("udpos", "panx"),
        "qa": ("xquad", "mlqa", "tydiqa"),
        "retrieval": ("bucc2018", "tatoeba"),
    },
    tasks={t: TaskSpec(t, langs, _METRIC[t]) for t, langs in _XTREME_LANGS.items()},
)

# XTREME-R as the repository's evaluate.py scores it (``XTREME_R_TASK2LANGS`` / ``XTREME_R_GROUP2TASK`` at commit
# 838c13b, copied as data, orders included): XQuAD adds ro; retrieval = Tatoeba + Mewsli-X; XCOPA is also its own
# ``multi_choice`` group and is read as ``.jsonl`` (a ``label`` per row, predictions too); Mewsli-X scores
# ``map@20`` (the mean reciprocal rank of the single gold id in the top 20, ``utils_mewslix.evaluate``); LAReQA has
# no languages there, so its block is empty and ``all_task`` is never computed (the official script fails on it).
_XTREME_R_LANGS = {
    "xnli": _XTREME_LANGS["xnli"],
    "panx": _XTREME_LANGS["panx"] + _langs("qu,pl,uk,az,lt,pa,gu,ro"),
    "udpos": _XTREME_LANGS["udpos"] + _langs("lt,pl,uk,wo,ro"),
    "tatoeba": _XTREME_LANGS["tatoeba"] + _langs("az,lt,pl,uk,ro"),
    "xcopa": _langs("et,ht,id,it,qu,sw,ta,th,tr,vi,zh"),
    "lareqa": (),
    "mewslix": _langs("ar,de,en,es,fa,ja,pl,ro,ta,tr,uk"),
    "xquad": _XTREME_LANGS["xquad"] + ("ro",),
    "mlqa": _XTREME_LANGS["mlqa"],
    "tydiqa": _XTREME_LANGS["tydiqa"],
}
_XTREME_R_METRIC = {**_METRIC, "xcopa": "xcopa_accuracy", "mewslix": "mrr_at_20", "lareqa": "none"}
XTREME_R = Benchmark(
    name="xtreme-r",
    groups={
        "classification": ("xnli", "xcopa"),
        "tagging": ("udpos", "panx"),
        "qa": ("xquad", "mlqa", "tydiqa"),
        "retrieval": ("tatoeba", "mewslix"),
        "multi_choice": ("xcopa",),
    },
    tasks={t: TaskSpec(t, langs, _XTREME_R_METRIC[t]) for t, langs in _XTREME_R_LANGS.items()},
)

BENCHMARKS = {"xtreme": XTREME, "xtreme-r": XTREME_R}
GROUP_TITLES = {
    "classification": "Sentence classification",
    "tagging": "Structured prediction",
    "qa": "Question answering",
    "retrieval": "Sentence retrieval",
    "multi_choice": "Multiple choice",
}


def get_benchmark(name: str) -> Benchmark:
    try:
        return BENCHMARKS[name]
    except KeyError:
        raise ValueError(f"unknown benchmark {name!r}; choose one of {', '.join(BENCHMARKS)}") from None


def task_summary(task: str, per_lang: dict[str, dict[str, float]]) -> dict:
    """XTREME's block for one task from ``{lang: {metric: value}}`` (languages in the scorer's order).

    >>> block = task_summary("mlqa", {"en": {"exact_match": 60.0, "f1": 80.0}, "de": {"exact_match": 40.0, "f1": 60.0}})
    >>> block["f1"], block["avg_exact_match"], block["avg_f1"], block["avg_metric"]
    ({'en': 80.0, 'de': 60.0}, 50.0, 70.0, 60.0)
    >>> task_summary("udpos", {"en": {"f1": 90.0, "precision": 91.0, "recall": 89.0}})["avg_metric"]
    90.0
    """
    block: dict = {}
    for lang, metrics in per_lang.items():
        for metric, value in metrics.items():
            block.setdefault(metric, {})[lang] = value
    averages = {f"avg_{m}": sum(values.values()) / len(values) for m, values in block.items()}
    block.update(averages)
    if task in QA_TASKS:
        block["avg_metric"] = (block["avg_exact_match"] + block["avg_f1"]) / 2
    elif "avg_f1" in block:
        block["avg_metric"] = block["avg_f1"]
    elif "avg_accuracy" in block:
        block["avg_metric"] = block["avg_accuracy"]
    elif "avg_map@20" in block:  # XTREME-R's Mewsli-X
        block["avg_metric"] = block["avg_map@20"]
    return block


def overall_scores(detailed: dict[str, dict], benchmark: Benchmark | str = XTREME) -> dict[str, float]:
    """``all_task`` (all tasks present) and one score per complete group, from task blocks' ``avg_metric``.

    >>> overall_scores({"pawsx": {"avg_metric": 80.0}, "xnli": {"avg_metric": 70.0}, "udpos": {"avg_metric": 75.0}})
    {'classification': 75.0}
    """
    if isinstance(benchmark, str):
        benchmark = get_benchmark(benchmark)
    available = set(detailed)
    scores: dict[str, float] = {}
    if set(benchmark.tasks) == available and all("avg_metric" in detailed[t] for t in benchmark.tasks):
        # XTREME sums over a set of task names; summing in task order instead can differ in the last bit only.
        # (XTREME-R's LAReQA block is empty, and evaluate.py fails with a KeyError here; xeval leaves it out.)
        scores["all_task"] = sum(detailed[t]["avg_metric"] for t in benchmark.tasks) / len(benchmark.tasks)
    for group, tasks in benchmark.groups.items():
        if not set(tasks) - available:
            scores[group] = sum(detailed[t]["avg_metric"] for t in tasks) / len(tasks)
    return scores


def xtreme_result(detailed: dict[str, dict], benchmark: Benchmark | str = XTREME) -> dict:
    """The scorer's JSON: overall/group scores first, then the task blocks in the benchmark's task order."""
    if isinstance(benchmark, str):
        benchmark = get_benchmark(benchmark)
    result: dict = dict(overall_scores(detailed, benchmark))
    for task in benchmark.tasks:
        if task in detailed:
            result[task] = detailed[task]
    return result
