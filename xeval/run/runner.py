"""``xeval run``: evaluate one model on a suite.

Loads the Encoder once, dispatches every card of the suite through ``xeval.adapters.get_adapter(card.type)``
(fine-tuning families and probes alike), and summarises the records: mean ± standard deviation over seeds, one
table per task with a row per language. Records are stored as they are computed, so an interrupted run resumes
where it stopped (``--overwrite`` recomputes).

``control="random-init"`` (``--control random-init``) also evaluates a random-initialised copy of the model
(``Encoder.random_init``: same config and tokenizer, seeded weights) on every card, right after the model, under
its own model key (see ``xeval.results.controls``); the printed tables show its headline score in a column of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from xeval.base.errors import ConfigError, UserError, did_you_mean
from xeval.cards.compat import check_mode as check_compat
from xeval.results.controls import check_control
from xeval.run.checks import check_langs, check_overrides


@dataclass
class RunOptions:
    model: str
    suite: str
    tasks: list[str] | None = None
    langs: list[str] | None = None
    seeds: list[int] = field(default_factory=lambda: [1])
    data: str | None = None
    out: str | None = "runs"  # None: records kept in memory, nothing written (the Python API's store=None)
    export_predictions: str | None = None
    export_labels: str | None = None
    overwrite: bool = False
    device: str = "auto"
    layers: str | None = None  # "all" | "k,k,..." | None (each card's default)
    setting: str = "zero-shot"
    recipe: dict = field(default_factory=dict)  # recipe overrides for the fine-tuning tasks
    options: dict = field(default_factory=dict)  # further task options passed through to the adapters
    control: str | None = None  # "random-init": also evaluate the architecture with random weights
    control_seed: int = 0  # torch seed of the control's weights
    threads: int | None = None  # torch CPU threads (None: torch's default, divided among a node's torchrun ranks)
    shard: tuple[int, int] | None = None  # --shard i/N: this process computes the i-th of N parts of the run
    ddp_finetune: bool = False  # torchrun: every rank trains each fine-tune together (data parallel)
    name: str | None = None  # --name TAG: the name in the model key, so two settings of one model are two rows
    revision: str | None = None  # hub revision (branch, tag or commit) of --model
    dtype: str = "float32"  # float32 | bfloat16 | float16: the weights' and activations' dtype
    trust_remote_code: bool = False  # run the model repository's own Python code (only when asked)
    mode: str = "finetune"  # "finetune" or "probe": the fine-tuning tasks with the encoder frozen (probe_mode)
    no_cache: bool = False  # encode without the on-disk encoding cache (xeval.models.encoding_cache)
    compat: str = "none"  # "xtreme": the published XTREME pipeline's quirks (xeval.cards.compat), in every unit's config


MAX_SEEDS = 1000
MODES = ("finetune", "probe")


def parse_seeds(text: str | int) -> list[int]:
    """``3`` -> seeds 1, 2, 3; ``1,5,7`` -> exactly those."""
    text = str(text).strip()
    try:
        if "," in text:
            seeds = [int(s) for s in text.split(",") if s.strip()]
        else:
            count = int(text)
            if count > MAX_SEEDS:  # before building the list: --seeds 99999999999999999999 must not fill the memory
                raise UserError(f"--seeds: expected a count of at most {MAX_SEEDS}, found {text!r}")
            seeds = list(range(1, count + 1))
    except ValueError:
        raise UserError(f"--seeds: expected a count (3) or a list (1,2,5), found {text!r}") from None
    if not seeds or len(set(seeds)) != len(seeds):
        raise UserError(f"--seeds: expected at least one seed and no repeats, found {text!r}")
    if "," not in text and len(seeds) > MAX_SEEDS:
        raise UserError(f"--seeds: expected a count of at most {MAX_SEEDS}, found {text!r}")
    bad = [s for s in seeds if not 0 <= s < 2**32]
    if bad:
        raise UserError(f"--seeds: expected seeds in 0..{2**32 - 1} (numpy's range), found {bad[0]}")
    return seeds


def parse_layers(text: str | None, num_layers: int) -> list[int] | None:
    if text is None:
        return None
    if text == "all":
        return list(range(num_layers + 1))
    try:
        layers = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UserError(f"--layers: expected 'all' or indices like 0,6,12, found {text!r}") from None
    bad = [k for k in layers if not 0 <= k <= num_layers]
    if bad or not layers:
        raise UserError(f"--layers: layers must lie in 0..{num_layers} (hidden_states indices), found {text!r}")
    return layers


def select_cards(suite, tasks: list[str] | None, langs: list[str] | None) -> list[tuple[object, list[str]]]:
    """(card, languages) pairs the run covers, in suite order; unknown tasks are an error, languages a card does
    not have are skipped for that card (and an error when no card has any of them)."""
    cards = suite.cards
    if tasks:
        names = [c.name for c in cards]
        unknown = [t for t in tasks if t not in names]
        if unknown:
            raise ConfigError(f"suite {suite.name!r} has no task {', '.join(unknown)}"
                              f"{did_you_mean(unknown[0], names)}; it has {', '.join(names)}")
        cards = [c for c in cards if c.name in tasks]
    check_langs(suite, cards, langs)
    chosen = []
    for card in cards:
        card_langs = [lang for lang in card.languages if langs is None or lang in langs]
        if card_langs:
            chosen.append((card, card_langs))
    if not chosen:
        raise ConfigError(f"no task of suite {suite.name!r} covers the languages {', '.join(langs or [])}")
    return chosen


def check_name(name: str | None) -> str | None:
    """``--name TAG``: a label that becomes the name part of the model key (``TAG@<hash>``)."""
    if name is None:
        return None
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]*", name):
        raise UserError(f"--name: expected letters, digits and _ . + - (starting with a letter or digit), found {name!r}")
    return name


def resolve_device(name: str) -> str:
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return name


@dataclass
class RunSummary:
    """What the final console line says: units computed now, units found stored (resume), wall seconds."""

    computed: int = 0
    reused: int = 0
    seconds: float = 0.0

    def line(self) -> str:
        return (f"{self.computed} unit{'s' * (self.computed != 1)} computed, {self.reused} reused, "
                f"in {self.seconds:.0f} s")


def check_files(chosen, data, setting: str = "zero-shot") -> tuple[list, list[str], list[str]]:
    """What a file layout can run: (card, languages) pairs whose files are there, notes on languages skipped because
    their evaluation file is not in the folder (a partial XTREME download), and one error per missing training file
    (naming it and the tasks it stops). The hub (and anything but a missing file) is left to the adapters."""
    from xeval.base.errors import DataError
    from xeval.data.sources import resolve

    if data.layout == "hub":
        return chosen, [], []

    def missing(card, lang, split):
        try:
            resolve(card, lang, split, data)
        except DataError as err:
            if err.message.startswith("missing file"):
                return err
            raise
        except ConfigError:
            return None  # the card names no such split here: the adapter says so (or does without, e.g. dev)
        return None

    runnable, notes, lost_train = [], [], {}
    for card, langs in chosen:
        if card.train and setting in ("zero-shot", "few-shot"):
            err = missing(card, card.train["lang"], card.train["split"])
            if err is not None:
                lost_train.setdefault(err.path, []).append(card.name)
                continue
        skipped = [lang for lang in langs if missing(card, lang, card.split_for(lang)) is not None]
        kept = [lang for lang in langs if lang not in skipped]
        if skipped:
            notes.append(f"{card.name}: {len(skipped)} of {len(langs)} languages have no evaluation file in "
                         f"{data.path}, not run: {', '.join(skipped)}")
        if kept:
            runnable.append((card, kept))
    errors = [f"{path}: missing file: the training set of {', '.join(tasks)}; "
              f"{'that task was' if len(tasks) == 1 else 'those tasks were'} not run"
              for path, tasks in lost_train.items()]
    return runnable, notes, errors


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
    import time

    from xeval.base.console import log
    from xeval.run import distributed

    echo = echo or log.info
    summary = summary if summary is not None else RunSummary()
    started = time.perf_counter()
    from xeval.models.devices import check_device, check_dtype

    check_device(opts.device)  # before anything loads: no CUDA, a typo -> one line
    check_dtype(opts.dtype)
    from xeval.adapters.transfer import shared_training

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
    from xeval.adapters import get_adapter
    from xeval.adapters.context import RunContext
    from xeval.base import collectives
    from xeval.base.atomic import check_output
    from xeval.cards.catalog import load_suite
    from xeval.cards.types import task_type
    from xeval.data.sources import DataRoot
    from xeval.models.encoder import Encoder
    from xeval.models.encoding_cache import EncodingCache
    from xeval.results.memory import MemoryStore
    from xeval.results.store import Store
    from xeval.run import distributed

    control = check_control(opts.control)
    if opts.out is not None:  # None: the Python API with store=None keeps records in memory
        check_output(opts.out, "--out", folder=True)
    for flag, path in (("--export-predictions", opts.export_predictions), ("--export-labels", opts.export_labels)):
        if path:
            check_output(path, flag, folder=True)
    label = check_name(opts.name)
    suite = load_suite(opts.suite)
    chosen = select_cards(suite, opts.tasks, opts.langs)
    # an unknown --set key, a bad value (--batch-size 0, --learning-rate nan, pooling=max) fails before any loading
    check_overrides(chosen, opts.recipe)
    data = DataRoot.resolve(opts.data)
    chosen, notes, errors = check_files(chosen, data, opts.setting)
    adapters = {card.name: get_adapter(card.type) for card, _ in chosen}  # unknown types fail before loading
    if opts.ddp_finetune and worker.world == 1:
        raise UserError("--ddp-finetune: needs several processes (torchrun --nproc_per_node N -m xeval run ...)")
    if worker.count > 1 and opts.out is None:
        raise UserError("several workers share their results through a store: give --out (a shared folder)")
    if opts.mode not in MODES:
        raise UserError(f"--mode: expected one of {', '.join(MODES)}, found {opts.mode!r}")
    if encoder is None:
        from xeval.models.devices import check_dtype

        encoder = Encoder(opts.model, device=device, dtype=check_dtype(opts.dtype), revision=opts.revision,
                          trust_remote_code=opts.trust_remote_code)
    store = Store(opts.out, overwrite=opts.overwrite) if opts.out is not None else MemoryStore()
    if label is not None:
        encoder.label = label
    cache = EncodingCache.default(opts.out, disabled=opts.no_cache)
    ctx = RunContext(
        encoder=encoder,
        data=data,
        store=store,
        seeds=list(opts.seeds),
        layers=parse_layers(opts.layers, encoder.num_layers),
        export_dir=Path(opts.export_predictions) if opts.export_predictions else None,
        options={"setting": opts.setting, "recipe": dict(opts.recipe), "export_labels": opts.export_labels,
                 **({"mode": opts.mode} if opts.mode != "finetune" else {}),
                 **({"compat": check_compat(opts.compat)} if check_compat(opts.compat) != "none" else {}),
                 **opts.options},
        cache=cache,
    )
    if worker.leader:  # one header per command; each rank names its own items below
        echo(f"xeval run: {encoder.key} on {suite.name} ({len(chosen)} tasks, seeds {ctx.seeds}"
             f"{', mode probe' if opts.mode == 'probe' else ''}) data {data.describe()}, results in "
             f"{opts.out if opts.out is not None else 'memory (nothing written)'}; {cache.describe()}")
        for note in notes:
            echo(f"  note: {note}")
    contexts = {encoder.key: ctx}
    if control is not None:
        twin = Encoder.random_init(encoder, seed=opts.control_seed)
        # predictions and gold are exported for the model only (the control would overwrite its files)
        contexts[twin.key] = replace(ctx, encoder=twin, export_dir=None, options={**ctx.options, "export_labels": None})
        if worker.leader:
            echo(f"control: {twin.key} ({control}, seed {opts.control_seed}, same config and tokenizer)")
    # probe mode trains no seeded model: one item per card (its units carry seed 0), whatever --seeds says
    seeds = ctx.seeds if opts.mode == "finetune" else ctx.seeds[:1]
    items = distributed.work_items(chosen, seeds, opts.setting, list(contexts),
                                   fine_tuning=lambda card: task_type(card.type).fine_tunes,
                                   joint=lambda card: task_type(card.type).joint)
    mine = distributed.plan(items, worker, opts.ddp_finetune)
    if worker.count > 1:
        echo(f"[{worker.describe()}] {len(mine)} of {len(items)} work items: "
             + ", ".join(f"{i.card.name} {_item_label(i)}" for i in mine))
    written = store.written
    records = _run_items(mine, adapters, contexts, opts, echo, on_task if worker.world == 1 else None,
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
        return records, errors
    computed = collectives.total(store.written - written)  # over the ranks (of this shard)
    collectives.barrier()  # every rank's part is stored
    if not worker.leader:
        return records, errors
    # the whole run (a shard's part of it), read back in run order from the store
    records = _run_items(distributed.shard_plan(items, worker, opts.ddp_finetune), adapters, contexts, opts,
                         lambda *_: None, on_task)
    summary.computed += computed
    summary.reused += len(records) - computed
    _export_chosen_layers(records, ctx)
    return records, errors


def _export_chosen_layers(records: list, ctx) -> None:
    """A probe swept over several layers: its chosen layer (on the selection split, over all its languages) is the
    submission's ``<export>/<task>/`` (a work item of one language chose on that language alone)."""
    if ctx.export_dir is None:
        return
    from xeval.adapters.probes.base import SUBMISSION_FOLDER, export_chosen_layer

    model = ctx.encoder.key
    for task in dict.fromkeys(r.unit.task for r in records if r.unit.layer is not None and r.unit.model == model):
        mine = [r for r in records if r.unit.task == task and r.unit.model == model]
        if len({r.unit.layer for r in mine}) > 1:
            export_chosen_layer(mine, Path(ctx.export_dir), SUBMISSION_FOLDER.get(task, task))


def _item_label(item) -> str:
    langs = item.langs[0] if len(item.langs) == 1 else f"{len(item.langs)} languages"
    return f"({langs}{'' if not item.fine_tuning else f', seed {item.seeds[0]}'})"


def _run_items(items, adapters, contexts, opts: RunOptions, echo, on_task=None, joint: bool = False) -> list:
    """Run work items in order, each under its lock in the store; echo a card's line at its first item (and the
    control's at the control's first); ``on_task`` with a card's records once its last item is done."""
    from itertools import groupby

    from xeval.base import collectives
    from xeval.run import distributed

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
                    echo(f"  {item.card.name}: control ({opts.control})")
            # ranks training together: only rank 0 locks (a rank waiting on the lock would stall the all-reduce)
            locking = not ctx.ddp_finetune or collectives.rank_world()[0] == 0
            with distributed.item_lock(ctx.store.root, item, enabled=locking):
                task_records.extend(adapters[item.card.name].run(item.card, list(item.langs), ctx))
        records.extend(task_records)
        if on_task is not None:
            on_task(task_records)
    return records



# ----------------------------------------------------------------------------------------------------- summary




