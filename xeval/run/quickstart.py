"""``xeval quickstart``: the whole of xeval in a few minutes, offline, on built-in synthetic languages.

Stages, each under ``--out`` (default ``runs/quickstart``) and each reused by a rerun when its inputs match:

1. ``world/``: a synthetic world (``xeval.data.synth``), reused when its ``world.json`` has the same parameters;
2. ``model/``: a tokenizer and a tiny encoder pre-trained on the world's monolingual + parallel corpora for a fixed
   number of steps (``--steps``, default ``STEPS``: the same model, and the same numbers, on every machine), by the
   engine's ``pretrain`` with its ``quickstart`` preset (``xeval.run.quickstart_model``); reused when
   ``model/quickstart.json`` names the same world and recipe. Trained in ``model.partial/`` and
   renamed when complete, so a half-trained model is never reused;
3. ``results/``: the ``synthetic`` suite through ``xeval.run.runner`` — probes (retrieval, word alignment, lexicon
   induction) over every layer, each also on the random-init control of the same architecture (seconds; the
   floor a probe score is read against, ``xeval.results.controls``), then the fine-tuning tasks trained on the base
   language ``qaa`` and tested on every language; records are stored as they come, so an interrupted run
   resumes where it stopped;
4. ``report.md`` + ``figures/layers.png|pdf``: xeval's report tables and layer-sweep plot for this model (its
   control as "(random init)" rows and dashed lines), and a terminal summary with a ``control`` column and the
   chance and majority-class baselines of every task that has one (``xeval.results.baselines``).

Seconds are measured and printed (per stage and in total, the total from the process's start, imports included),
never used to decide anything: a time budget (the quickstart's before) trained 349 steps on one machine and 1,249
on another, so its numbers differed from machine to machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from xeval.base.atomic import write_json, write_text
from xeval.base.clock import process_seconds
from xeval.base.errors import UserError
from xeval.base.hashing import hash_json
from xeval.run.quickstart_model import quickstart_config, recipe_identity, train_quickstart_model

# Pre-training steps: what the old 5-minute budget reached on the team's 2-core machine (349 and 361 steps, about
# 2 minutes of training), as a fixed count; docs/measurements.md "Quickstart" holds the measurement.
STEPS = 400
PROBES = ("synth_tatoeba", "synth_alignment", "synth_lexicon")
FINETUNE = ("synth_udpos", "synth_panx", "synth_pawsx", "synth_qa")
SUITE = "synthetic"


@dataclass
class Options:
    out: str = "runs/quickstart"
    steps: int = STEPS  # pre-training steps (0: the untrained model)
    seed: int = 0
    overlap: tuple[float, ...] = (0.5,)
    order: tuple[str, ...] = ("SVO", "SOV", "VSO")
    languages: int = 4
    tasks: tuple[str, ...] = PROBES + FINETUNE
    sizes: dict = field(default_factory=dict)  # synth.Sizes overrides
    plan: dict = field(default_factory=dict)  # engine config overrides of the quickstart preset: {section: {k: v}}
    eval: dict = field(default_factory=dict)  # eval_sizes overrides (fine-tuning recipe fields, max_eval)
    control: str | None = "random-init"  # probes also run on the random-init control (None: not)


# A world small enough to generate in seconds, with a small lexicon so that a model trained for two minutes on a
# CPU learns it (each word is seen often); the grammar, the knobs and the file formats are those of any world.
WORLD_LEXICON = {"nouns": 80, "transitive_verbs": 20, "intransitive_verbs": 10, "adjectives": 30, "adverbs": 10,
                 "names": 20}  # fmt: skip
WORLD_SIZES = {"mono": 5000, "parallel": 3000, "train": 1000, "dev": 200, "test": 300, "tatoeba": 300,
               "alignment": 200}  # fmt: skip


# Fine-tuning subsample and evaluation limits (recorded in every record's config). Learning rate: a 64-wide model
# fine-tuned for ~60 steps needs far more than XTREME's 2e-5 (3e-3 measured best of 3e-4, 1e-3, 3e-3 on the
# quickstart world).
EVAL_SIZES = {"max_train": 1000, "epochs": 2, "max_dev": 100, "max_eval": 200, "learning_rate": 3e-3}


class Clock:
    """Wall and CPU seconds per stage (CPU = this process, all threads: on a shared machine wall time depends on
    the other users, CPU time does not). ``whole_process``: the totals count from the process's start (the
    interpreter and the imports included, as a stopwatch started with the command would read: ``xeval quickstart``),
    else from now (a caller's own process, the Python API)."""

    def __init__(self, whole_process: bool = False):
        now = time.perf_counter()
        self.t0 = now - process_seconds() if whole_process else now
        self.c0 = 0.0 if whole_process else time.process_time()
        self.stages: dict[str, dict] = {}

    def wall(self) -> float:
        return time.perf_counter() - self.t0

    @contextlib.contextmanager
    def stage(self, name: str):
        t, c = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.stages[name] = {"wall_s": round(time.perf_counter() - t, 1), "cpu_s": round(time.process_time() - c, 1)}

    def totals(self) -> dict:
        return {"wall_s": round(self.wall(), 1), "cpu_s": round(time.process_time() - self.c0, 1)}


def world_config(opts: Options):
    from xeval.data.synth import Sizes, WorldConfig

    sizes = Sizes(**{**WORLD_SIZES, **opts.sizes})
    return WorldConfig(seed=opts.seed, languages=opts.languages, overlap=tuple(opts.overlap),
                       order=tuple(opts.order), sizes=sizes, **WORLD_LEXICON).validate()  # fmt: skip


def ensure_world(folder: Path, opts: Options, echo) -> tuple[dict, bool]:
    """The world's manifest and whether it was reused."""
    from xeval.data.synth import MANIFEST, SYNTH_FORMAT, generate_world

    config = world_config(opts)
    wanted = json.loads(json.dumps(config.as_json()))  # tuples -> lists, as in the manifest
    manifest_path = folder / MANIFEST
    if manifest_path.is_file():
        try:
            old = json.loads(manifest_path.read_text(encoding="utf-8"))
        except ValueError:
            old = {}
        if old.get("format") == SYNTH_FORMAT and old.get("parameters") == wanted and _world_complete(folder, old):
            echo(f"[1/4] world: reusing {folder}")
            return old, True
    echo(f"[1/4] world: generating {opts.languages} languages (overlap {','.join(map(str, opts.overlap))}, "
         f"order {','.join(opts.order)}) into {folder}")  # fmt: skip
    return generate_world(folder, config, force=False), False


def _world_complete(folder: Path, manifest: dict) -> bool:
    return all((folder / item["path"]).is_file() and (folder / item["path"]).stat().st_size == item["bytes"]
               for item in manifest.get("files", []))  # fmt: skip


def pretrain_config(folder: Path, opts: Options):
    """The engine config that trains ``folder`` (the model folder) on its world."""
    return quickstart_config(manifest_dir(folder), opts.seed, opts.steps, opts.plan)


def model_key(manifest: dict, opts: Options) -> str:
    """What the model depends on: the world's bytes and the recipe (its step count included)."""
    plan = recipe_identity(quickstart_config("world", opts.seed, opts.steps, opts.plan))
    return hash_json({"world": hash_json(manifest["files"]), "plan": plan})


def ensure_model(folder: Path, manifest: dict, opts: Options, echo) -> tuple[dict, bool]:
    marker = folder / "quickstart.json"
    key = model_key(manifest, opts)
    if marker.is_file():
        try:
            info = json.loads(marker.read_text(encoding="utf-8"))
        except ValueError:
            info = {}
        if info.get("key") == key and (folder / "model.safetensors").is_file():
            echo(f"[2/4] model: reusing {folder} ({info['summary']['steps']} steps)")
            return info["summary"], True
    cfg = pretrain_config(folder, opts)
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    echo(f"[2/4] model: tokenizer + {cfg.model['num_hidden_layers']} x {cfg.model['hidden_size']} encoder, "
         f"objectives {'+'.join(cfg.objectives)}, {cfg.train.steps} steps")  # fmt: skip
    summary = train_quickstart_model(cfg, partial, echo=lambda text: echo(f"      {text}"))
    write_json(partial / "quickstart.json", {"key": key, "summary": summary, "plan": recipe_identity(cfg)})
    if folder.exists():
        shutil.rmtree(folder)
    os.replace(partial, folder)
    last = summary.get("last", {})
    echo(f"      {summary['steps']} steps, {summary['tokens'] / 1e6:.2f}M tokens in {summary['train_seconds']:.0f} s; "
         + ", ".join(f"{k} {v:.2f}" for k, v in last.items()))  # fmt: skip
    return summary, False


def manifest_dir(model_folder: Path) -> Path:
    return model_folder.parent / "world"


@contextlib.contextmanager
def _tasks_of(world: Path):
    """The world's own cards (its languages may differ from the committed default world's)."""
    old = os.environ.get("XEVAL_TASKS")
    os.environ["XEVAL_TASKS"] = str(world / "tasks")
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("XEVAL_TASKS", None)
        else:
            os.environ["XEVAL_TASKS"] = old


def evaluate(out: Path, opts: Options, echo) -> list:
    """Probes over every layer, each beside the random-init control of the same architecture (``opts.control``:
    seconds), then the fine-tuning tasks; records stored in ``out/results``."""
    from xeval.run.options import RunOptions
    from xeval.run.runner import run

    sizes = {**EVAL_SIZES, **opts.eval}
    records = []
    with _tasks_of(out / "world"):
        for step, names, layers in (("3/4", [t for t in opts.tasks if t in PROBES], "all"),
                                    ("3/4", [t for t in opts.tasks if t in FINETUNE], None)):  # fmt: skip
            if not names:
                continue
            run_opts = RunOptions(model=str(out / "model"), suite=SUITE, tasks=names, seeds=[1],
                                  data=str(out / "world"), out=str(out / "results"), layers=layers,
                                  recipe=dict(sizes), max_eval=sizes["max_eval"],
                                  control=opts.control if layers else None)  # fmt: skip
            echo(f"[{step}] {'probes (every layer)' if layers else 'fine-tuning on qaa, testing every language'}: "
                 f"{', '.join(names)}" + (f" (+ {opts.control} control)" if layers and opts.control else ""))  # fmt: skip
            records.extend(run(run_opts, echo=lambda text: echo(f"      {text}")))
    return records


def write_report(out: Path, records: list, title: str) -> dict[str, Path]:
    """report.md (xeval report's tables) and figures/layers.png|pdf for the records of this model."""
    from xeval.report import plots
    from xeval.report.build import build
    from xeval.report.formats import render
    from xeval.report.tables.base import Results, probe_tasks

    results = Results(records, split=None)
    built = build(results, "all")
    preamble = ["Model pre-trained and evaluated by `python -m xeval quickstart` on a synthetic world "
                "(`world/world.json`); fine-tuning tasks are trained on the base language qaa only.",
                "Scores in points (%); probes at their reported layer (never chosen on these scores)."]  # fmt: skip
    if results.controls:
        preamble.append("Rows marked (random init): the probes on the same architecture and tokenizer with random "
                        "weights, the floor that shared word forms alone give; dashed in the layer-sweep plot.")
    paths = {"report": out / "report.md"}
    write_text(paths["report"], render.render(built, "md", heading=title, preamble=preamble))
    if probe_tasks(results):
        for path in plots.plot(results, "layers", out / "figures" / "layers"):
            paths.setdefault("plot", path)
    return paths


def headline(records: list, base: str) -> list[str]:
    """A few lines for the terminal: per task, base-language score vs the other languages (transfer), and for
    probes their reported layer. With a random-init control among the records, a ``control`` column: the control's
    mean over the same other languages at its own reported layer (the floor the ``others`` score is read against).
    ``chance`` and ``majority``: the task's baselines on the same examples, where it has them (a score at its
    majority baseline learnt nothing: ``xeval.results.baselines``)."""
    from collections import defaultdict

    from xeval.report.frame import headline_metric
    from xeval.results.controls import control_parents

    controls = control_parents(records)
    by_task: dict[str, list] = defaultdict(list)
    control_by_task: dict[str, list] = defaultdict(list)
    for rec in records:
        (control_by_task if rec.unit.model in controls else by_task)[rec.unit.task].append(rec)
    column = f" {'control':>7}" if controls else ""
    lines = [f"{'task':<16} {'metric':<25} {base:>5} {'others':>6}{column} {'chance':>6} {'majority':>8}  per language"]
    for task, recs in by_task.items():
        metric = headline_metric(task, recs[0].metrics)
        label, per_lang, shown = _at_best_layer(recs, metric)
        floors = _baselines(shown)
        base_score = per_lang.get(base)
        others = [v for lang, v in per_lang.items() if lang != base]
        mean_other = sum(others) / len(others) if others else None
        cell = ""
        if controls:
            control = None
            if control_by_task.get(task):
                _, floor, _ = _at_best_layer(control_by_task[task], metric)
                values = [floor[lang] for lang in per_lang if lang != base and lang in floor]
                control = sum(values) / len(values) if values else None
            cell = f" {_fmt(control):>7}"
        cell += f" {_fmt(floors.get('chance')):>6} {_fmt(floors.get('majority')):>8}"
        lines.append(f"{task:<16} {label:<25} {_fmt(base_score):>5} {_fmt(mean_other):>6}{cell}  "
                     + " ".join(f"{lang} {v:.1f}" for lang, v in sorted(per_lang.items())))  # fmt: skip
    return lines


def _baselines(shown: list) -> dict[str, float]:
    """The chance and majority-class baselines (``xeval.results.baselines``) of the records a headline row shows,
    the mean over their languages, where the task has them (AER, QA and lexicon induction have none)."""
    from xeval.results.baselines import baselines

    found: dict[str, list[float]] = {}
    for rec in shown:
        for kind, value in baselines(rec).items():
            found.setdefault(kind, []).append(value)
    return {kind: sum(v) / len(v) for kind, v in found.items() if len(v) == len(shown)}


def _at_best_layer(recs: list, metric: str) -> tuple[str, dict, list]:
    """(label, {lang: score}, those records): a probe's records at the layer it is reported at (``xeval.results.layers
    .choose_layers``: chosen on a selection split, never on these scores; else the card's layer, else the last),
    or a fine-tuning task's records as they are."""
    from xeval.results.layers import choose_layers

    label = metric
    if recs[0].unit.layer is not None:
        best = choose_layers(recs, metric)[(recs[0].unit.model, recs[0].unit.task)][0].layer
        recs, label = [r for r in recs if r.unit.layer == best], f"{metric} (layer {best})"
    shown = [r for r in recs if metric in r.metrics]
    return label, {r.unit.lang: r.metrics[metric] for r in shown}, shown


def _fmt(value) -> str:
    return "-" if value is None else f"{value:.1f}"


def quickstart(opts: Options, echo=print, whole_process: bool = False) -> dict:
    """Run every stage (reusing what matches) and return the summary also written to ``<out>/quickstart.json``;
    ``whole_process``: the reported total counts from the process's start (the command line's)."""
    if isinstance(opts.steps, bool) or not isinstance(opts.steps, int) or opts.steps < 0:
        raise UserError(f"--steps must be an integer >= 0, got {opts.steps!r}")
    if opts.seed < 0:
        raise UserError(f"--seed must be an integer >= 0, got {opts.seed}")
    world_config(opts)  # bad --overlap / --order fail before anything is written
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    clock = Clock(whole_process)
    with clock.stage("world"):
        manifest, world_reused = ensure_world(out / "world", opts, echo)
    with clock.stage("pretrain"):
        summary, model_reused = ensure_model(out / "model", manifest, opts, echo)
    with clock.stage("evaluate"):
        records = evaluate(out, opts, echo)
    from xeval.models.encoder import Encoder

    key = Encoder(str(out / "model")).key
    records = [r for r in records if r.unit.model == key or (r.model.get("parent") or {}).get("key") == key]
    echo("[4/4] report")
    with clock.stage("report"):
        paths = write_report(out, records, "xeval quickstart")
    lines = headline(records, manifest["base"])
    totals = clock.totals()
    result = {
        "out": str(out), "model": key, "world_reused": world_reused, "model_reused": model_reused,
        "pretrain": summary, "stages": clock.stages, "total": totals, "records": len(records),
        "report": {k: str(v) for k, v in paths.items()}, "eval": {**EVAL_SIZES, **opts.eval},
        "languages": manifest["languages"], "headline": lines,
    }  # fmt: skip
    write_json(out / "quickstart.json", result)
    echo("")
    for line in lines:
        echo(line)
    echo("")
    since = "from the start of the process" if whole_process else "of this call"
    echo(f"done in {totals['wall_s']:.0f} s wall ({totals['cpu_s']:.0f} s CPU, both {since}): "
         + ", ".join(f"{name} {times['wall_s']:.0f} s" for name, times in clock.stages.items())
         + f"; report {paths['report']}"
         + (f", layer sweep {paths['plot']}" if "plot" in paths else "") + f"; records in {out / 'results'}")  # fmt: skip
    return result
