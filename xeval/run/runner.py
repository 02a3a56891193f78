"""``xeval run``: evaluate one model on a suite.

Loads the Encoder once, dispatches every card of the suite through ``xeval.adapters.get_adapter(card.type)``
(fine-tuning families and probes alike), and summarises the records: mean ± standard deviation over seeds, one
table per task with a row per language. Records are stored as they are computed, so an interrupted run resumes
where it stopped (``--overwrite`` recomputes).

``control="random-init"`` (``--control random-init``) also evaluates a random-initialised copy of the model
(``Encoder.random_init``: same config and tokenizer, seeded weights) on every card, right after the model, under
its own model key (see ``xeval.results.controls``); the printed tables show its headline score in a column of its own.
``control="charngram"`` adds the char n-gram TF-IDF baseline (``xeval.models.charngram``) on the sentence-retrieval
cards only (the other cards are skipped for it, with one line saying so); ``"random-init,charngram"`` both.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from itertools import groupby
from pathlib import Path

from xeval.adapters import get_adapter
from xeval.adapters.context import RunContext
from xeval.adapters.probes.base import SUBMISSION_FOLDER, export_chosen_layer
from xeval.adapters.transfer import shared_training
from xeval.base import collectives, console
from xeval.base.atomic import check_output
from xeval.base.bf16_support import warn_slow_bf16
from xeval.base.console import log
from xeval.base.errors import UserError
from xeval.cards.catalog import load_suite
from xeval.cards.compat import check_mode as check_compat
from xeval.cards.types import task_type
from xeval.data.sources import DataRoot
from xeval.models.charngram import CharNgramModel
from xeval.models.devices import check_device, check_dtype
from xeval.models.encoder import Encoder
from xeval.models.encoding_cache import EncodingCache
from xeval.models.files import locate_model
from xeval.results import shards
from xeval.results.controls import CONTROL_CHARNGRAM, CONTROL_RANDOM_INIT, check_controls
from xeval.results.memory import MemoryStore
from xeval.results.store import Store
from xeval.run import distributed
from xeval.run.checks import check_files, check_overrides, select_cards
from xeval.run.options import (
    MODES,
    SETTINGS,
    RunOptions,
    check_choice,
    check_name,
    parse_layers,
    task_options,
)
from xeval.submission.writer import check_export_folders


@dataclass
class RunSummary:
    """What the final console line says: units computed now, units found stored (resume), wall seconds."""

    computed: int = 0
    reused: int = 0
    seconds: float = 0.0

    def line(self) -> str:
        return (f"{self.computed} unit{'s' * (self.computed != 1)} computed, {self.reused} reused, "
                f"in {self.seconds:.0f} s")



def run(opts: RunOptions, echo=None, on_task=None, summary: RunSummary | None = None, encoder=None,
        problems: list[str] | None = None) -> list:
    """Run every selected unit (or find it stored); return all records of the run.

    In a file layout, languages without an evaluation file are skipped with a note and a task without its training
    file is not run: each missing training file is one error, appended to ``problems`` when given (the command
    prints them after the tables and exits 2), else raised as a UserError once everything else has run.

    ``echo(text)``: progress lines (default: xeval's log, stderr). ``on_task(records)``: called with a task's records
    (the model's and its control's) as soon as the task ends, so a long suite shows each table when it is ready.
    ``summary``: filled with the counts of computed and reused units. ``encoder``: an ``Encoder`` already loaded (the
    Python API), used instead of loading ``opts.model``.

    Under torchrun or ``--shard`` (``xeval.run.distributed``) each worker computes its own part of the run's work
    items. Ranks other than 0 return their own part; rank 0 waits for them, then reads the whole run back in run
    order (``on_task`` and the returned records as from one process; a shard: its own part, which ``xeval report``
    joins with the other shards' in the store)."""
    echo = echo or log.info
    summary = summary if summary is not None else RunSummary()
    started = time.perf_counter()
    check_device(opts.device)  # before anything loads: no CUDA, a typo -> one line
    check_dtype(opts.dtype)

    with distributed.session(opts.shard, opts.device, opts.threads, opts.ddp_finetune) as (worker, device):
        try:
            records, errors = _run(opts, worker, device, echo, on_task, summary, encoder)
        finally:
            shared_training.release()  # a model kept for the next task does not outlive the run
    summary.seconds = time.perf_counter() - started
    if errors:
        if problems is None:
            raise UserError("; ".join(errors))
        problems.extend(errors)
    return records


def _run(opts: RunOptions, worker, device: str, echo, on_task, summary: RunSummary, encoder) -> tuple[list, list]:
    controls = check_controls(opts.control)
    if opts.out is not None:  # None: the Python API with store=None keeps records in memory
        check_output(opts.out, "--out", folder=True)
    for flag, path in (("--export-predictions", opts.export_predictions), ("--export-labels", opts.export_labels)):
        if path:
            check_output(path, flag, folder=True)
    check_export_folders(opts.export_predictions, opts.export_labels)
    label = check_name(opts.name)
    check_choice("--mode", opts.mode, MODES)
    check_choice("--setting", opts.setting, SETTINGS)
    compat = check_compat(opts.compat)
    suite = load_suite(opts.suite)
    chosen = select_cards(suite, opts.tasks, opts.langs)
    # an unknown --set key, a bad value (--batch-size 0, --learning-rate nan, pooling=max) fails before any loading
    check_overrides(chosen, opts.recipe)
    tasks = task_options(opts.recipe, {card.type for card, _ in chosen}, opts.max_eval, limit=opts.limit,
                         auto_batch=opts.auto_batch)
    if encoder is None:  # a mistyped model folder is named before the data is looked for
        locate_model(opts.model)
    data = DataRoot.resolve(opts.data)
    chosen, notes, errors = check_files(chosen, data, opts.setting)
    adapters = {card.name: get_adapter(card.type) for card, _ in chosen}  # unknown types fail before loading
    if opts.ddp_finetune and opts.mode == "probe":  # its ranks would each fit the same heads, under one lock
        raise UserError("--ddp-finetune: --mode probe fine-tunes nothing (each probe's heads fit in one process); "
                        "run it without --ddp-finetune (torchrun's ranks then share the work items)")
    if opts.ddp_finetune and worker.world == 1:
        raise UserError("--ddp-finetune: needs several processes (torchrun --nproc_per_node N -m xeval run ...)")
    if worker.count > 1 and opts.out is None:
        raise UserError("several workers share their results through a store: give --out (a shared folder)")
    # the cache root is checked here, before the model loads (a cache root that is a file fails at once)
    cache = EncodingCache(opts.cache) if opts.cache and not opts.no_cache else \
        EncodingCache.default(opts.out, disabled=opts.no_cache)
    if encoder is None:
        encoder = Encoder(opts.model, device=device, dtype=check_dtype(opts.dtype), revision=opts.revision,
                          trust_remote_code=opts.trust_remote_code)
    if opts.dtype == "bfloat16" and str(device).startswith("cpu"):
        warn_slow_bf16("--dtype bfloat16")
    store = Store(opts.out, overwrite=opts.overwrite) if opts.out is not None else MemoryStore()
    if label is not None:
        encoder.label = label
    ctx = RunContext(
        encoder=encoder,
        data=data,
        store=store,
        seeds=list(opts.seeds),
        layers=parse_layers(opts.layers, encoder.num_layers),
        export_dir=Path(opts.export_predictions) if opts.export_predictions else None,
        export_labels=Path(opts.export_labels) if opts.export_labels else None,
        setting=opts.setting,
        mode=opts.mode,
        compat=compat,
        shots=tuple(opts.shots or ()),
        tasks=tasks,
        cache=cache,
    )
    if worker.leader:  # one header per command; each rank names its own items below
        # probe mode trains no seeded model: its units carry seed 0, whatever --seeds says
        seeding = f"seeds {ctx.seeds}" if opts.mode == "finetune" else "mode probe, seed 0: no seeded training"
        echo(f"xeval run: {encoder.key} on {suite.name} ({len(chosen)} tasks, {seeding}) data {data.describe()}, "
             "results in "
             f"{opts.out if opts.out is not None else 'memory (nothing written)'}; {cache.describe()}")
        for note in notes:
            echo(f"  note: {note}")
    contexts = {encoder.key: ctx}
    kinds = {}  # control's model key -> its kind
    for control in controls:
        twin = _control_model(control, encoder, opts.control_seed)
        # predictions and gold are exported for the model only (the control would overwrite its files)
        contexts[twin.key] = replace(ctx, encoder=twin, export_dir=None, export_labels=None)
        kinds[twin.key] = control
        if worker.leader:
            echo(f"control: {twin.key} ({_control_line(control, opts.control_seed)})")
    # probe mode trains no seeded model: one item per card (its units carry seed 0), whatever --seeds says
    seeds = ctx.seeds if opts.mode == "finetune" else ctx.seeds[:1]
    items = distributed.work_items(chosen, seeds, opts.setting, list(contexts),
                                   fine_tuning=lambda card: task_type(card.type).fine_tunes,
                                   joint=lambda card: task_type(card.type).joint)
    # the string-similarity baseline scores sentence vectors only: no tagging, QA, word alignment, ...
    skipped = list(dict.fromkeys(i.card.name for i in items if kinds.get(i.model) == CONTROL_CHARNGRAM
                                 and not task_type(i.card.type).sentence_retrieval))
    items = [i for i in items if kinds.get(i.model) != CONTROL_CHARNGRAM or task_type(i.card.type).sentence_retrieval]
    if skipped and worker.leader:
        echo(f"  note: control {CONTROL_CHARNGRAM} skipped for {', '.join(skipped)}: it scores sentence retrieval "
             "only (Tatoeba, FLORES, BUCC, heldout)")
    mine = distributed.plan(items, worker, opts.ddp_finetune)
    manifest = None
    if opts.out is not None and worker.leader:  # what this command is meant to compute, for xeval report's join
        manifest = _manifest(opts, ctx, suite, chosen, items, distributed.shard_plan(items, worker, opts.ddp_finetune),
                             worker)
        if worker.shards > 1:
            shards.write_manifest(opts.out, **manifest, done=False)
    if worker.count > 1:
        echo(f"[{worker.describe()}] {len(mine)} of {len(items)} work items: "
             + ", ".join(f"{i.card.name} {_item_label(i, ctx.mode)}" for i in mine))
    written = store.written
    records = _run_items(mine, adapters, contexts, kinds, echo, on_task if worker.world == 1 else None,
                         joint=opts.ddp_finetune)
    recomputed = getattr(store, "recomputed_summary", lambda: None)()
    if recomputed:
        echo(recomputed)
    if cache.enabled and cache.hits + cache.misses:
        echo(f"encoding cache: {cache.hits} layer entries reused, {cache.misses} computed")
    if worker.world == 1:
        summary.computed += store.written - written
        summary.reused += len(records) - (store.written - written)
        _export_chosen_layers(records, ctx)
        if manifest is not None:
            shards.write_manifest(opts.out, **manifest)
        return records, errors
    computed = collectives.total(store.written - written)  # over the ranks (of this shard)
    collectives.barrier()  # every rank's part is stored
    if not worker.leader:
        return records, errors
    # the whole run (a shard's part of it), read back in run order from the store
    records = _run_items(distributed.shard_plan(items, worker, opts.ddp_finetune), adapters, contexts, kinds,
                         lambda *_: None, on_task)
    summary.computed += computed
    summary.reused += len(records) - computed
    _export_chosen_layers(records, ctx)
    if manifest is not None:
        shards.write_manifest(opts.out, **manifest)
    return records, errors


def _control_model(control: str, encoder, seed: int):
    """The stand-in a control evaluates: the random-init twin of ``encoder``, or the char n-gram baseline."""
    if control == CONTROL_RANDOM_INIT:
        return Encoder.random_init(encoder, seed=seed)
    return CharNgramModel(encoder)


def _control_line(control: str, seed: int) -> str:
    if control == CONTROL_RANDOM_INIT:
        return f"{control}, seed {seed}, same config and tokenizer"
    return f"{control}: TF-IDF over character 1-4-grams, each side's IDF fitted on its own sentences, no pairs"


def _manifest(opts: RunOptions, ctx, suite, chosen, items, mine, worker) -> dict:
    """``xeval.results.shards.write_manifest``'s arguments: the settings that decide the run's items and numbers
    (not where files go, threads or devices), every item of the run and this shard's."""
    settings = {"suite": suite.name, "tasks": {card.name: list(langs) for card, langs in chosen},
                "seeds": list(ctx.seeds), "setting": opts.setting, "mode": opts.mode, "compat": ctx.compat,
                "max_eval": ctx.tasks.max_eval, "recipe": dict(ctx.tasks.recipe), "probe": dict(ctx.tasks.probe),
                "layers": ctx.layers, "shots": list(ctx.shots), "dtype": opts.dtype,
                "control": [opts.control, opts.control_seed] if opts.control else None}
    described = [{"key": i.key(), "model": i.model, "task": i.card.name, "langs": list(i.langs),
                  "seeds": list(i.seeds), "fine_tuning": i.fine_tuning} for i in items]
    return {"model": ctx.encoder.key, "settings": settings, "items": described, "mine": [i.key() for i in mine],
            "shard": worker.shard, "shards": worker.shards}


def _export_chosen_layers(records: list, ctx) -> None:
    """A probe swept over several layers: its chosen layer (on the selection split, over all its languages) is the
    submission's ``<export>/<task>/`` (a work item of one language chose on that language alone)."""
    if ctx.export_dir is None:
        return
    model = ctx.encoder.key
    for task in dict.fromkeys(r.unit.task for r in records if r.unit.layer is not None and r.unit.model == model):
        mine = [r for r in records if r.unit.task == task and r.unit.model == model]
        if len({r.unit.layer for r in mine}) > 1:
            export_chosen_layer(mine, Path(ctx.export_dir), SUBMISSION_FOLDER.get(task, task))


def _item_label(item, mode: str) -> str:
    """A work item's label, e.g. "(30 languages, seed 1)": no seed in probe mode, whose units carry seed 0."""
    langs = item.langs[0] if len(item.langs) == 1 else f"{len(item.langs)} languages"
    seeded = item.fine_tuning and mode == "finetune"
    return f"({langs}{f', seed {item.seeds[0]}' if seeded else ''})"


def _run_items(items, adapters, contexts, kinds: dict, echo, on_task=None, joint: bool = False) -> list:
    """Run work items in order, each under its lock in the store; echo a card's line at its first item (and the
    control's at the control's first); ``on_task`` with a card's records once its last item is done. The run and
    each item are activities of the heartbeat (``xeval.base.console``: what a log file shows while they run)."""
    # no run-level rate or eta: a suite's items differ in cost by two orders of magnitude (a 30-language fine-tune
    # against one Tatoeba language), so a rate over items read "eta 3h53m" 10 minutes into a 47-minute run
    with console.activity("xeval run", total=len(items), unit="work item", rate=False) as progress:
        return _run_counted(items, adapters, contexts, kinds, echo, on_task, joint, progress)


def _run_counted(items, adapters, contexts, kinds: dict, echo, on_task, joint: bool, progress) -> list:
    records = []
    model_key = next(iter(contexts))
    for _, task_items in groupby(items, key=lambda i: id(i.card)):  # items come grouped by card, in suite order
        task_items = list(task_items)
        task_records = []
        for item in task_items:
            ctx = replace(contexts[item.model], seeds=list(item.seeds), ddp_finetune=joint and item.fine_tuning)
            if item is next(i for i in task_items if i.model == item.model):
                if item.model == model_key:
                    langs = [lang for i in task_items if i.model == item.model for lang in i.langs]
                    echo(f"- {item.card.name} ({item.card.type}): {', '.join(dict.fromkeys(langs))}")
                else:
                    echo(f"  {item.card.name}: control ({kinds[item.model]})")
            # ranks training together: only rank 0 locks (a rank waiting on the lock would stall the all-reduce)
            locking = not ctx.ddp_finetune or collectives.rank_world()[0] == 0
            label = f"{item.card.name}{'' if item.model == model_key else ' control'} {_item_label(item, ctx.mode)}"
            with console.activity(label), distributed.item_lock(ctx.store.root, item, enabled=locking):
                task_records.extend(adapters[item.card.name].run(item.card, list(item.langs), ctx))
            progress.update()
        records.extend(task_records)
        if on_task is not None:
            on_task(task_records)
    return records

