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
import statistics
from collections import defaultdict
from dataclasses import dataclass, field, replace
from pathlib import Path

from xeval.base.errors import ConfigError, UserError
from xeval.cards.compat import check_mode as check_compat
from xeval.cards.label_free import LABEL as UNSCORED
from xeval.results.controls import check_control, control_parents
from xeval.run.checks import check_langs, check_overrides, did_you_mean


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
    from xeval.adapters import FINE_TUNING, JOINT_PROBES, RunContext, get_adapter
    from xeval.base.atomic import check_output
    from xeval.cards.catalog import load_suite
    from xeval.data.sources import DataRoot
    from xeval.models.encoder import Encoder
    from xeval.models.encoding_cache import EncodingCache
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
                                   fine_tuning=lambda card: card.type in FINE_TUNING,
                                   joint=lambda card: card.type in JOINT_PROBES)
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
    computed = distributed.total(store.written - written)  # over the ranks (of this shard)
    distributed.barrier()  # every rank's part is stored
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
            locking = not ctx.ddp_finetune or distributed.rank_world()[0] == 0
            with distributed.item_lock(ctx.store.root, item, enabled=locking):
                task_records.extend(adapters[item.card.name].run(item.card, list(item.langs), ctx))
        records.extend(task_records)
        if on_task is not None:
            on_task(task_records)
    return records


class MemoryStore:
    """A store that keeps records in memory and writes nothing (``xeval.evaluate(..., store=None)``): the same
    interface as ``xeval.results.store.Store``. Fine-tuning's prediction files go to a temporary folder removed at exit."""

    def __init__(self):
        import atexit
        import shutil
        import tempfile

        from xeval.results.store import Store

        self.records: dict = {}
        self.kept_outcomes: dict = {}
        self.written = 0
        self.overwrite = False
        self._paths = Store(tempfile.mkdtemp(prefix="xeval-memory-"))  # only path() is used: prediction files
        atexit.register(shutil.rmtree, self._paths.root, ignore_errors=True)
        self.root = self._paths.root

    def path(self, unit) -> Path:
        return self._paths.path(unit)

    def has(self, unit) -> bool:
        return unit in self.records

    def get(self, unit):
        return self.records.get(unit)

    def put(self, record, outcomes=None) -> None:
        self.records[record.unit] = record
        self.kept_outcomes[record.unit] = outcomes
        self.written += 1

    def outcomes_of(self, unit):
        return self.kept_outcomes.get(unit)


# ----------------------------------------------------------------------------------------------------- summary


def summarise(records) -> dict:
    """{(task, setting, layer, mode): {(lang, split): {metric: (mean, std, n_seeds)}}} over seeds (sample std; 0
    for one seed), plus n_examples under the pseudo-metric "n"."""
    groups: dict = defaultdict(lambda: defaultdict(list))  # insertion order: suite order of the tasks
    for rec in records:
        u = rec.unit
        groups[(u.task, u.setting, u.layer, u.mode)][(u.lang, u.split)].append(rec)
    out: dict = {}
    for key, by_lang in groups.items():
        out[key] = {}
        for lang_split, recs in by_lang.items():
            metrics = {}
            for name in recs[0].metrics:
                values = [r.metrics[name] for r in recs if name in r.metrics]
                std = statistics.stdev(values) if len(values) > 1 else 0.0
                metrics[name] = (statistics.fmean(values), std, len(values))
            metrics["n"] = (recs[0].n_examples, 0.0, len(recs))
            out[key][lang_split] = metrics
    return out


def _cell(value: tuple) -> str:
    mean, std, k = value
    if k == 0:
        return "-"  # no number for this language (label-free: predictions stored unscored)
    return f"{mean:.1f} ± {std:.1f}" if k > 1 else f"{mean:.1f}"


def _grid(title: str, header: list[str], body: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    lines = [title, "  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in body]
    return "\n".join(lines)


def format_layer_table(task: str, setting: str, by_layer: dict, control: dict | None = None,
                       control_label: str = "", choice=None) -> str:
    """A probe run over several layers as ONE compact table: a row per language (pair), a column per layer, the
    headline metric in each cell (AER for word alignment, en→xx accuracy for Tatoeba, ...), an ``avg`` row over the
    reported split and, when the selection split ran, an ``avg (dev)`` row over it. ``choice`` (a
    ``xeval.results.layers.LayerChoice``) is the layer the probe is reported at: chosen on the selection split,
    never on the reported one, and the title says how. ``control`` ({layer: rows} of a ``--control``) adds its
    ``avg`` row. Label-free rows (XTREME's download) read "unscored"."""
    from xeval.report.frame import headline_metric
    from xeval.results.layers import SELECTION_SPLIT, reported_split

    layers = sorted(by_layer)
    names = [m for rows in by_layer.values() for metrics in rows.values() for m in metrics if m != "n"]
    head = headline_metric(task, names) if names else None
    keys = sorted({key for rows in by_layer.values() for key in rows})
    reported = reported_split({split for _, split in keys})
    selection = [k for k in keys if k[1] == SELECTION_SPLIT and reported != SELECTION_SPLIT]
    shown = [k for k in keys if k not in selection]
    def row(lang: str, split: str) -> list[str]:
        cells = [lang, split]
        for layer in layers:
            metrics = by_layer[layer].get((lang, split), {})
            value = metrics.get(head) if head else None
            cells.append(_cell(value) if value else ("unscored" if len(metrics) == 1 else ""))
        return cells

    def averages(group: list) -> list[str]:
        out = []
        for layer in layers:
            values = [by_layer[layer][key][head][0] for key in group if head in by_layer[layer].get(key, {})]
            out.append(f"{statistics.fmean(values):.1f}" if values and len(values) == len(group) else "")
        return out

    body = [row(*key) for key in shown]  # the reported split, its average (and the control's), then selection
    if head and len(shown) > 1:
        body.append(["avg", ""] + averages(shown))
    if control and head:
        cells = []
        for layer in layers:
            values = [control[layer][key][head][0] for key in shown if head in control.get(layer, {}).get(key, {})]
            cells.append(f"{statistics.fmean(values):.1f}" if len(values) == len(shown) else "")
        body.append([f"avg ({control_label})", ""] + cells)
    body += [row(*key) for key in selection]
    if head and selection:
        body.append([f"avg ({SELECTION_SPLIT})", ""] + averages(selection))
    chosen = f"; reported at layer {choice.layer}: {choice.describe()}" if choice is not None else ""
    title = f"{task} ({setting}; {head or 'label-free: predictions only'} by layer, hidden_states index{chosen})"
    return _grid(title, ["lang", "split", *map(str, layers)], body)


def format_tables(records) -> str:
    """One plain-text table per task: a row per language, a column per metric (mean ± std over seeds), and the
    unweighted mean over languages (the per-task number XTREME averages). Records of a control (``--control``) are
    not tables of their own: their headline metric is one more column, "<metric> (random init)", beside the model's.
    Records run under ``--compat xtreme`` are titled "<setting>, compat xtreme"."""
    from xeval.report.frame import with_compat_setting

    records = with_compat_setting(probe_mode_chosen(list(records)))
    parents = control_parents(records)
    main = [r for r in records if r.unit.model not in parents] or records
    controls = summarise([r for r in records if r.unit.model in parents]) if len(main) < len(records) else {}
    kinds = sorted({kind for _, kind in parents.values()})
    blocks = []
    summary = summarise(main)
    from xeval.results.layers import choose_layers

    choices = {task: choice for (model, task), (choice, _) in choose_layers(main).items()}
    layered: dict = defaultdict(dict)  # (task, setting) -> {layer: rows} for probes run over several layers
    for (task, setting, layer, mode), rows in summary.items():
        if layer is not None and mode != "probe":  # probe mode: its chosen layer only
            layered[(task, setting)][layer] = rows
    compact = {key for key, by_layer in layered.items() if len(by_layer) > 1}
    shown: set = set()
    for (task, setting, layer, mode), rows in summary.items():
        if mode != "probe" and (task, setting) in compact:
            if (task, setting) not in shown:
                shown.add((task, setting))
                from xeval.results.controls import LABELS

                twin = {k[2]: v for k, v in controls.items()
                        if k[:2] == (task, setting) and k[2] is not None and k[3] != "probe"}
                blocks.append(format_layer_table(task, setting, layered[(task, setting)], twin,
                                                 ", ".join(LABELS[k] for k in kinds), choices.get(task)))
            continue
        # every language's metrics: a label-free language (no metrics) listed first must not hide the others'
        names = list(dict.fromkeys(m for v in rows.values() for m in v if m != "n"))
        unscored_rows = {key for key, metrics in rows.items() if len(metrics) == 1}  # only "n": label-free
        if not names:
            names = ["score"]
        seeds = max(v["n"][2] for v in rows.values())
        if mode == "probe":
            title = f"{task} (probe: frozen encoder + linear head, {setting}, layer {layer} chosen on " \
                    f"{_probe_selection(records, task, setting, layer)})"
        else:
            title = f"{task} ({setting}{'' if layer is None else f', layer {layer}'}; {seeds} seed{'s' * (seeds > 1)})"
        header = ["lang", "split", "n"] + names
        control = controls.get((task, setting, layer, mode))
        if control:
            from xeval.report.frame import headline_metric
            from xeval.results.controls import LABELS

            head = headline_metric(task, names)
            header.append(f"{head} ({', '.join(LABELS[k] for k in kinds)})")
        body = []
        for (lang, split), metrics in sorted(rows.items()):
            cells = [lang, split, str(metrics["n"][0])]
            if (lang, split) in unscored_rows and names == ["score"]:  # every row label-free: say it in the cell
                body.append(cells + [UNSCORED] + [""] * (len(header) - len(cells) - 1))
                continue
            for name in names:
                cells.append(_cell(metrics.get(name, (float("nan"), 0.0, 0))))
            if control:
                cells.append(_cell(control.get((lang, split), {}).get(head, (float("nan"), 0.0, 0))))
            body.append(cells)
        if len(rows) > 1 and not unscored_rows:  # an average over some languages only would mislead
            avg = ["avg", "", ""]
            for name in names:
                values = [m[name][0] for m in rows.values() if name in m]
                avg.append(f"{statistics.fmean(values):.1f}")
            if control:
                values = [control.get(key, {}).get(head, (float("nan"),))[0] for key in rows]
                avg.append(f"{statistics.fmean(values):.1f}")
            body.append(avg)
        note = f"\n- = {UNSCORED}: XTREME's test files carry no gold; predictions are exported, never scored"
        blocks.append(_grid(title, header, body) + (note if unscored_rows and names != ["score"] else ""))
    return "\n\n".join(blocks)


def probe_mode_chosen(records: list) -> list:
    """The records with each probe-mode sweep narrowed to its chosen layer (``probe_mode.chosen_layers``: best on
    the selection set, never on a reported one). A control keeps the layer chosen for its model, so the two
    columns compare like with like."""
    from xeval.results.store import PROBE_MODE as MODE
    from xeval.results.store import chosen_layers

    chosen = chosen_layers(records)
    if not chosen:
        return records
    parents = control_parents(records)
    out = []
    for r in records:
        u = r.unit
        if u.mode != MODE:
            out.append(r)
            continue
        model = parents[u.model][0] if u.model in parents else u.model
        pick = chosen.get((model, u.task, u.setting)) or chosen.get((u.model, u.task, u.setting))
        if pick is not None and u.layer == pick[0]:
            out.append(r)
    return out


def _probe_selection(records: list, task: str, setting: str, layer) -> str:
    """"en/dev (accuracy 61.2 there; layers 0-6: 55.0 58.1 ...)" for a table title."""
    for r in records:
        sel = (r.extra or {}).get("probe_selection")
        if r.unit.mode == "probe" and r.unit.task == task and r.unit.setting == setting and r.unit.layer == layer \
                and sel:
            return f"{sel['on']}, {sel['metric']} {sel['score']:.1f} there"
    return "the selection set"
