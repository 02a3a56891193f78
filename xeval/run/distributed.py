"""``xeval run`` over many workers: which work items each worker computes, and the torch.distributed plumbing.

A run is a list of **work items** (``work_items``), in suite order:

- a fine-tuning task under zero-shot transfer: one item per (model, task, seed) holding *all* its test languages,
  because one English-trained model serves every language (training it once per worker would repeat the most
  expensive part of the run);
- a fine-tuning task under translate-train: one item per (model, task, seed, language) (a model per language);
- a probe: one item per (model, task, language) holding every layer (one forward pass yields all layers).

"model" is the evaluated model or its random-init control (``--control``). Items are dealt to workers by
``assign``: a deterministic greedy balance (heaviest first, each to the least-loaded worker, ties to the lower
index) over a fixed cost (a fine-tune weighs ``FINE_TUNE_COST`` probes), so every worker of the same command
computes the same partition without talking to the others. Workers are the ranks of ``torchrun`` (``RANK``,
``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``), the shards of ``--shard i/N`` (independent processes, e.g.
a SLURM job array), or both: shard i of N launched with torchrun's W ranks is workers i*W .. i*W+W-1 of N*W.

Each item runs under a file lock in the store (``<out>/.locks/``, ``filelock``): two processes that meet on the
same item (a rerun started while a killed run's worker still lives, overlapping shards, a requeued array task)
compute it once; the second finds it stored and skips it. Records themselves are written atomically
(``xeval.base.atomic``), so a killed worker leaves whole records or none, and a rerun computes only what is missing.

``--ddp-finetune``: every fine-tuning item is trained by all ranks together (data parallel: each optimiser step's
micro-batches are dealt over the ranks, gradients summed with ``all_reduce``; see
``xeval.adapters.transfer.fine_tuning.fine_tune``), then its test languages are split over the ranks; probe items are still
dealt one per rank.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from xeval.base.errors import UserError
from xeval.base.hashing import hash_json
from xeval.results.store import slug

FINE_TUNE_COST = 50  # a fine-tune costs about this many probe languages (a rough, fixed weight: see assign)
TIMEOUT = timedelta(hours=48)  # rank 0 waits at the barrier while the slowest rank still fine-tunes


@dataclass(frozen=True)
class Worker:
    """Where this process stands among the run's workers."""
    rank: int = 0  # torch.distributed rank (0 without torchrun)
    world: int = 1
    local_rank: int = 0
    local_world: int = 1
    shard: int = 0  # --shard i/N: i
    shards: int = 1  # N

    @property
    def index(self) -> int:
        """This worker's position among all workers of the command (shards x ranks)."""
        return self.shard * self.world + self.rank

    @property
    def count(self) -> int:
        return self.shards * self.world

    @property
    def leader(self) -> bool:
        """Rank 0: waits for the other ranks and prints the tables."""
        return self.rank == 0

    def describe(self) -> str:
        parts = []
        if self.shards > 1:
            parts.append(f"shard {self.shard}/{self.shards}")
        if self.world > 1:
            parts.append(f"rank {self.rank}/{self.world}")
        return ", ".join(parts)


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``"1/4"`` -> (1, 4): the second of four shards (0-based, as SLURM_ARRAY_TASK_ID counts)."""
    if text is None:
        return None
    i, slash, n = str(text).partition("/")
    try:
        index, count = int(i), int(n)
    except ValueError:
        index, count = -1, 0
    if not slash or count < 1 or not 0 <= index < count:
        raise UserError(f"--shard: expected i/N with 0 <= i < N (e.g. 0/4), found {text!r}")
    return index, count


def detect(shard: tuple[int, int] | None = None, env=None) -> Worker:
    """This process's place from torchrun's environment variables and ``--shard``."""
    env = os.environ if env is None else env

    def number(name: str, default: int) -> int:
        try:
            return int(env.get(name, default))
        except ValueError:
            raise UserError(f"environment variable {name}: expected an integer, found {env.get(name)!r}") from None

    world = number("WORLD_SIZE", 1)
    index, count = shard or (0, 1)
    return Worker(rank=number("RANK", 0), world=world, local_rank=number("LOCAL_RANK", 0),
                  local_world=number("LOCAL_WORLD_SIZE", world), shard=index, shards=count)


# --------------------------------------------------------------------------------------------------- partition


@dataclass(frozen=True)
class WorkItem:
    """What one worker computes in one go: a model's task on a language group for some seeds."""
    model: str  # the encoder's key (the model or its control)
    card: object  # xeval.cards.catalog.Card
    langs: tuple[str, ...]
    seeds: tuple[int, ...]
    fine_tuning: bool

    @property
    def cost(self) -> int:
        return FINE_TUNE_COST + len(self.langs) if self.fine_tuning else len(self.langs)

    def key(self) -> str:
        """A file-name-safe, stable name (lock files, logs)."""
        langs = self.langs[0] if len(self.langs) == 1 else f"{len(self.langs)}langs-{hash_json(self.langs)[:8]}"
        seeds = "-".join(map(str, self.seeds)) if self.fine_tuning else "probe"

        model = self.model.replace("/", "_").replace("@", "-")
        return slug(f"{model}.{self.card.name}.{langs}.s{seeds}")  # a long model name is shortened with a hash


def work_items(chosen, seeds: list[int], setting: str, models: list[str], fine_tuning,
               joint=lambda card: False) -> list[WorkItem]:
    """Every item of a run in suite order (per card: each model in turn, then seeds, then languages), the order
    one process runs them in. ``chosen``: (card, languages) pairs; ``fine_tuning(card)``: whether the card trains;
    ``joint(card)``: a probe that needs all its languages in one item (language neutrality compares them)."""
    items = []
    for card, langs in chosen:
        trains = bool(fine_tuning(card))
        for model in models:
            if not trains and joint(card):
                items.append(WorkItem(model, card, tuple(langs), tuple(seeds), False))
            elif not trains:
                items += [WorkItem(model, card, (lang,), tuple(seeds), False) for lang in langs]
            elif setting in ("zero-shot", "few-shot"):  # one English model per seed for every language
                items += [WorkItem(model, card, tuple(langs), (seed,), True) for seed in seeds]
            else:
                items += [WorkItem(model, card, (lang,), (seed,), True) for seed in seeds for lang in langs]
    return items


def assign(items: list[WorkItem], index: int, count: int) -> list[WorkItem]:
    """The items of worker ``index`` of ``count``, in run order. Greedy longest-processing-time balance on
    ``WorkItem.cost`` (heaviest first, to the least-loaded worker, ties to the lowest worker): deterministic, so
    every worker computes the same partition, and each item belongs to exactly one worker."""
    if count == 1:
        return list(items)
    load = [0] * count
    owner = {}
    for position in sorted(range(len(items)), key=lambda i: (-items[i].cost, i)):
        worker = min(range(count), key=lambda w: (load[w], w))
        owner[position] = worker
        load[worker] += items[position].cost
    return [item for position, item in enumerate(items) if owner[position] == index]


def plan(items: list[WorkItem], worker: Worker, ddp_finetune: bool = False) -> list[WorkItem]:
    """This worker's items. Under ``ddp_finetune`` the fine-tuning items are dealt to shards only (every rank of a
    shard trains each of them together); probe items are dealt to single workers either way."""
    if not ddp_finetune:
        return assign(items, worker.index, worker.count)
    joint = set(map(id, assign([i for i in items if i.fine_tuning], worker.shard, worker.shards)))
    alone = set(map(id, assign([i for i in items if not i.fine_tuning], worker.index, worker.count)))
    return [item for item in items if id(item) in joint or id(item) in alone]


def shard_plan(items: list[WorkItem], worker: Worker, ddp_finetune: bool = False) -> list[WorkItem]:
    """The items of every rank of this worker's shard (all items without ``--shard``), in run order: what rank 0
    reads back after the barrier."""
    from dataclasses import replace

    ids = {id(i) for rank in range(worker.world) for i in plan(items, replace(worker, rank=rank), ddp_finetune)}
    return [item for item in items if id(item) in ids]


@contextmanager
def item_lock(root: str | Path, item: WorkItem, enabled: bool = True) -> Iterator[None]:
    """Hold ``<root>/.locks/<item>.lock`` while the item runs (blocking: a second process waits for the first,
    then finds its records stored). The lock is an OS file lock, released when its process dies."""
    if not enabled:
        yield
        return
    from filelock import FileLock

    folder = Path(root) / ".locks"
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder / f"{item.key()}.lock")):
        yield


# --------------------------------------------------------------------------------------------------- processes


@contextmanager
def session(shard: tuple[int, int] | None = None, device: str = "auto", threads: int | None = None,
            ddp_finetune: bool = False) -> Iterator[tuple[Worker, str]]:
    """Join torchrun's process group when there is one (WORLD_SIZE > 1), pick this worker's device and CPU
    threads; yield (worker, device) and leave the group at the end.

    The group only synchronises (rank 0's barrier) unless ``ddp_finetune``; it then carries gradients too, over
    NCCL on CUDA devices, else gloo.
    """
    import torch

    worker = detect(shard)
    device = worker_device(device, worker)
    if threads:
        torch.set_num_threads(threads)
    elif worker.local_world > 1 and device == "cpu":
        torch.set_num_threads(max(1, _cpus() // worker.local_world))  # CPU threads divided among the node's ranks
    if worker.world == 1:
        yield worker, device
        return
    import torch.distributed as dist

    nccl = ddp_finetune and device.startswith("cuda")
    if device.startswith("cuda"):
        torch.cuda.set_device(torch.device(device))
    dist.init_process_group(backend="nccl" if nccl else "gloo", timeout=TIMEOUT)
    yield worker, device  # on an error the group is left as it is: torchrun stops the other ranks
    # leave together: a rank that tears down its side while rank 0 still reads the run back can abort at exit
    dist.barrier()
    dist.destroy_process_group()


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def worker_device(name: str, worker: Worker) -> str:
    """``auto``/``cuda`` under several local ranks: ``cuda:LOCAL_RANK`` (one device per rank, modulo the devices
    this process sees); an explicit ``cuda:k`` or ``cpu`` is kept."""
    import torch

    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and torch.cuda.is_available():
        return f"cuda:{worker.local_rank % torch.cuda.device_count()}"
    return name



