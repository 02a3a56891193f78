"""``xeval quickstart``: the whole of xeval in a few minutes, offline, on built-in synthetic languages.

Stages, each under ``--out`` (default ``runs/quickstart``) and each reused by a rerun when its inputs match:

1. ``world/``: a synthetic world (``xeval.data.synth``), reused when its ``world.json`` has the same parameters;
2. ``model/``: a tokenizer and a tiny encoder pre-trained on the world's monolingual + parallel corpora within a
   time budget, by the engine's ``pretrain`` with its ``quickstart`` preset (``xeval.run.quickstart_model``);
   reused when ``model/quickstart.json`` names the same world and recipe. Trained in ``model.partial/`` and
   renamed when complete, so a half-trained model is never reused;
3. ``results/``: the ``synthetic`` suite through ``xeval.run.runner`` — probes (retrieval, word alignment, lexicon
   induction) over every layer, each also on the random-init control of the same architecture (seconds; the
   floor a probe score is read against, ``xeval.results.controls``), then the fine-tuning tasks trained on the base
   language ``qaa`` and tested on every language; records are stored as they come, so an interrupted run
   resumes where it stopped;
4. ``report.md`` + ``figures/layers.png|pdf``: xeval's report tables and layer-sweep plot for this model (its
   control as "(random init)" rows and dashed lines), and a terminal summary with a ``control`` column.

The time budget (``--minutes``, default 5) is split: pre-training gets what is left of ``PRETRAIN_SHARE`` of it
after the world and tokenizer are built, evaluation is subsampled by ``eval_sizes(minutes)``.
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
from xeval.base.errors import UserError
from xeval.base.hashing import hash_json
from xeval.run.quickstart_model import quickstart_config, recipe_identity, train_quickstart_model

PRETRAIN_SHARE = 0.4  # of the whole budget, minus what the world and the tokenizer took
PROBES = ("synth_tatoeba", "synth_alignment", "synth_lexicon")
FINETUNE = ("synth_udpos", "synth_panx", "synth_pawsx", "synth_qa")
SUITE = "synthetic"


@dataclass
class Options:
    out: str = "runs/quickstart"
    minutes: float = 5.0
    seed: int = 0
    overlap: tuple[float, ...] = (0.5,)
    order: tuple[str, ...] = ("SVO", "SOV", "VSO")
    languages: int = 4
    pretrain_seconds: float | None = None  # None: from --minutes
    max_steps: int = 100_000  # pre-training steps at most (the tests use a handful)
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


def eval_sizes(minutes: float) -> dict:
    """Fine-tuning subsample and evaluation limits for a budget (recorded in every record's config)."""
    scale = max(0.2, min(4.0, minutes / 5.0))
    # learning rate: a 64-wide model fine-tuned for ~60 steps needs far more than XTREME's 2e-5 (3e-3 measured best
    # of 3e-4, 1e-3, 3e-3 on the quickstart world)
    return {"max_train": int(1000 * scale), "epochs": 2, "max_dev": int(100 * scale), "max_eval": int(200 * scale),
            "learning_rate": 3e-3}  # fmt: skip


class Clock:
    """Wall and CPU seconds per stage (CPU = this process, all threads: on a shared machine wall time depends on
    the other users, CPU time does not)."""

    def __init__(self):
        self.t0, self.c0 = time.perf_counter(), time.process_time()
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


def pretrain_config(folder: Path, opts: Options, seconds: float | None):
    """The engine config that trains ``folder`` (the model folder) on its world."""
    return quickstart_config(manifest_dir(folder), opts.seed, seconds, opts.max_steps, opts.plan)


def model_key(manifest: dict, opts: Options) -> str:
    """What the model depends on: the world's bytes and the recipe, with the budget as asked (not as measured)."""
    plan = recipe_identity(quickstart_config("world", opts.seed, None, opts.max_steps, opts.plan))
    world = hash_json(manifest["files"])
    budget = opts.pretrain_seconds if opts.pretrain_seconds is not None else f"{opts.minutes} min"
    return hash_json({"world": world, "plan": plan, "budget": budget})


def ensure_model(folder: Path, manifest: dict, opts: Options, seconds: float, echo) -> tuple[dict, bool]:
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
    cfg = pretrain_config(folder, opts, seconds)
    partial = folder.with_name(folder.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    echo(f"[2/4] model: tokenizer + {cfg.model['num_hidden_layers']} x {cfg.model['hidden_size']} encoder, "
         f"objectives {'+'.join(cfg.objectives)}, budget {seconds:.0f} s")  # fmt: skip
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

    sizes = {**eval_sizes(opts.minutes), **opts.eval}
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

    results = Results(records, split=None, layer="best")
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
    mean over the same other languages at its own reported layer (the floor the ``others`` score is read against)."""
    from collections import defaultdict

    from xeval.report.frame import headline_metric
    from xeval.results.controls import control_parents

    controls = control_parents(records)
    by_task: dict[str, list] = defaultdict(list)
    control_by_task: dict[str, list] = defaultdict(list)
    for rec in records:
        (control_by_task if rec.unit.model in controls else by_task)[rec.unit.task].append(rec)
    column = f" {'control':>7}" if controls else ""
    lines = [f"{'task':<16} {'metric':<25} {base:>5} {'others':>6}{column}  per language"]
    for task, recs in by_task.items():
        metric = headline_metric(task, recs[0].metrics)
        label, per_lang = _at_best_layer(recs, metric)
        base_score = per_lang.get(base)
        others = [v for lang, v in per_lang.items() if lang != base]
        mean_other = sum(others) / len(others) if others else None
        cell = ""
        if controls:
            control = None
            if control_by_task.get(task):
                _, floor = _at_best_layer(control_by_task[task], metric)
                values = [floor[lang] for lang in per_lang if lang != base and lang in floor]
                control = sum(values) / len(values) if values else None
            cell = f" {_fmt(control):>7}"
        lines.append(f"{task:<16} {label:<25} {_fmt(base_score):>5} {_fmt(mean_other):>6}{cell}  "
                     + " ".join(f"{lang} {v:.1f}" for lang, v in sorted(per_lang.items())))  # fmt: skip
    return lines


def _at_best_layer(recs: list, metric: str) -> tuple[str, dict]:
    """(label, {lang: score}): a probe's records at the layer it is reported at (``xeval.results.layers
    .choose_layers``: chosen on a selection split, never on these scores; else the card's layer, else the last),
    or a fine-tuning task's records as they are."""
    from xeval.results.layers import choose_layers

    if recs[0].unit.layer is None:
        return metric, {r.unit.lang: r.metrics.get(metric) for r in recs if metric in r.metrics}
    best = choose_layers(recs, metric)[(recs[0].unit.model, recs[0].unit.task)][0].layer
    return f"{metric} (layer {best})", {r.unit.lang: r.metrics.get(metric) for r in recs
                                        if r.unit.layer == best and metric in r.metrics}


def _fmt(value) -> str:
    return "-" if value is None else f"{value:.1f}"


def quickstart(opts: Options, echo=print) -> dict:
    """Run every stage (reusing what matches) and return the summary also written to ``<out>/quickstart.json``."""
    if not 0 < opts.minutes < float("inf"):  # NaN too: "nan <= 0" is False
        raise UserError(f"--minutes must be a finite positive number, got {opts.minutes}")
    if opts.seed < 0:
        raise UserError(f"--seed must be an integer >= 0, got {opts.seed}")
    world_config(opts)  # bad --overlap / --order fail before anything is written
    out = Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    clock = Clock()
    with clock.stage("world"):
        manifest, world_reused = ensure_world(out / "world", opts, echo)
    budget = 60.0 * opts.minutes
    seconds = opts.pretrain_seconds
    if seconds is None:
        seconds = max(15.0, PRETRAIN_SHARE * budget - clock.wall())
    with clock.stage("pretrain"):
        summary, model_reused = ensure_model(out / "model", manifest, opts, seconds, echo)
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
        "report": {k: str(v) for k, v in paths.items()}, "eval": {**eval_sizes(opts.minutes), **opts.eval},
        "languages": manifest["languages"], "headline": lines,
    }  # fmt: skip
    write_json(out / "quickstart.json", result)
    echo("")
    for line in lines:
        echo(line)
    echo("")
    echo(f"done in {totals['wall_s']:.0f} s wall ({totals['cpu_s']:.0f} s CPU): report {paths['report']}"
         + (f", layer sweep {paths['plot']}" if "plot" in paths else "") + f"; records in {out / 'results'}")  # fmt: skip
    return result
