"""``xeval run`` over many workers (xeval.run.distributed): the partition of a run's work items, torchrun ranks (gloo on
the CPU), ``--shard i/N``, a killed worker, two commands meeting on one store, and ``--ddp-finetune``.

The multi-process tests run the tiny BERT on real UD-POS and Tatoeba data and compare every record with the same
command run by one process: same units, same numbers, same training curves, same prediction files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import transfer as helpers_transfer
from xeval.base.errors import UserError
from xeval.cards.catalog import load_suite
from xeval.cards.types import task_type
from xeval.cli import main
from xeval.run import distributed
from xeval.run.checks import select_cards

REPO = Path(__file__).resolve().parents[2]
WORKER = REPO / "tests" / "helpers" / "dist_worker.py"
# udpos: 2 seeds x 4 languages (two fine-tunes, each with 4 test languages); tatoeba: 3 languages x 3 layers.
# pass_tokens 0: one micro-batch a pass, as --ddp-finetune's ranks run them, so one process draws the same dropout
COMMAND = ["--suite", "xtreme-mini", "--tasks", "udpos,tatoeba", "--langs", "en,de,fr,es", "--seeds", "2",
           "--max-train", "32", "--max-dev", "8", "--max-eval", "8", "--epochs", "1", "--batch-size", "16",
           "--set", "per_device_batch_size=4", "--set", "learning_rate=0.001", "--set", "pass_tokens=0",
           "--threads", "1"]


# ----------------------------------------------------------------------------------------------- the partition


def items_of(tasks=("udpos", "tatoeba"), langs=("en", "de", "fr"), seeds=(1, 2), setting="zero-shot",
             models=("m@1",)):
    chosen = select_cards(load_suite("xtreme-mini"), list(tasks), list(langs))
    return distributed.work_items(chosen, list(seeds), setting, list(models), lambda c: task_type(c.type).fine_tunes)


def test_parse_shard():
    assert distributed.parse_shard("0/1") == (0, 1)
    assert distributed.parse_shard("3/4") == (3, 4)
    assert distributed.parse_shard(None) is None
    for bad in ("4/4", "-1/2", "1", "a/b", "1/0"):
        with pytest.raises(UserError, match="--shard"):
            distributed.parse_shard(bad)


def test_worker_from_torchrun_environment_and_shard():
    env = {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}
    worker = distributed.detect((1, 3), env)
    assert (worker.rank, worker.world, worker.local_rank, worker.local_world) == (3, 4, 1, 2)
    assert (worker.index, worker.count) == (1 * 4 + 3, 12) and not worker.leader
    assert distributed.detect(None, {}) == distributed.Worker()


def test_zero_shot_fine_tune_is_one_item_per_seed_with_every_language():
    items = items_of(models=("m@1", "m-random-init@2"))
    fine = [i for i in items if i.fine_tuning]
    # one English-trained model per (model, task, seed) serves all test languages: trained once, on one worker
    assert [(i.model, i.seeds, i.langs) for i in fine] == [
        ("m@1", (1,), ("en", "fr", "de")), ("m@1", (2,), ("en", "fr", "de")),
        ("m-random-init@2", (1,), ("en", "fr", "de")), ("m-random-init@2", (2,), ("en", "fr", "de"))]
    probes = [(i.model, i.langs) for i in items if not i.fine_tuning]  # tatoeba: a language per item, all layers
    assert probes == [("m@1", ("de",)), ("m@1", ("fr",)), ("m-random-init@2", ("de",)), ("m-random-init@2", ("fr",))]
    assert len({i.key() for i in items}) == len(items)


def test_item_labels_name_a_seed_only_where_a_seeded_model_trains():
    from xeval.run.runner import _item_label

    items = items_of(seeds=(1,))
    udpos = next(i for i in items if i.card.name == "udpos")
    tatoeba = next(i for i in items if i.card.name == "tatoeba")
    assert _item_label(udpos, "finetune") == "(3 languages, seed 1)"
    # probe mode: a frozen encoder and heads, units of seed 0 -- the heartbeat said "seed 1" there
    assert _item_label(udpos, "probe") == "(3 languages)"
    assert _item_label(tatoeba, "finetune") == f"({tatoeba.langs[0]})"


def test_translate_train_is_one_item_per_seed_and_language():
    items = items_of(tasks=("udpos",), setting="translate-train", seeds=(1,))
    assert [(i.seeds, i.langs) for i in items] == [((1,), ("en",)), ((1,), ("fr",)), ((1,), ("de",))]


def test_every_item_belongs_to_exactly_one_worker_in_run_order():
    items = items_of(seeds=(1, 2, 3), langs=("en", "de", "fr", "es", "ar", "zh"), models=("a@1", "b@2"))
    for count in range(1, 7):
        parts = [distributed.assign(items, i, count) for i in range(count)]
        owned = [id(item) for part in parts for item in part]
        assert sorted(owned) == sorted(map(id, items)) and len(set(owned)) == len(items)
        for part in parts:
            assert part == [i for i in items if i in part]  # each worker keeps the run's order
        assert parts == [distributed.assign(items, i, count) for i in range(count)]  # deterministic
        loads = [sum(i.cost for i in part) for part in parts]
        assert max(loads) - min(loads) <= max(i.cost for i in items)  # greedy balance


def test_shards_and_ranks_compose_to_one_partition():
    items = items_of(seeds=(1, 2, 3), langs=("en", "de", "fr", "es"))
    # shard i of 2, each launched with 2 ranks = workers 2i, 2i+1 of 4; shard_plan is what a shard's rank 0 reads back
    workers = [distributed.Worker(rank=r, world=2, shard=s, shards=2) for s in range(2) for r in range(2)]
    plans = [distributed.plan(items, w) for w in workers]
    assert plans == [distributed.assign(items, i, 4) for i in range(4)]
    for s in range(2):
        union = {id(i) for w, p in zip(workers, plans) if w.shard == s for i in p}
        assert [id(i) for i in distributed.shard_plan(items, workers[2 * s])] == [id(i) for i in items
                                                                                 if id(i) in union]


def test_ddp_finetune_plan_trains_every_fine_tune_on_every_rank():
    items = items_of()
    plans = [distributed.plan(items, distributed.Worker(rank=r, world=2), ddp_finetune=True) for r in range(2)]
    for plan in plans:
        assert [i for i in plan if i.fine_tuning] == [i for i in items if i.fine_tuning]
    probes = [id(i) for plan in plans for i in plan if not i.fine_tuning]
    assert sorted(probes) == sorted(id(i) for i in items if not i.fine_tuning)


def test_each_rank_gets_its_own_device(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert distributed.worker_device("auto", distributed.Worker(local_rank=1, local_world=2)) == "cuda:1"
    assert distributed.worker_device("cuda", distributed.Worker(local_rank=3, local_world=4)) == "cuda:1"
    assert distributed.worker_device("cuda:0", distributed.Worker(local_rank=1, local_world=2)) == "cuda:0"  # as given
    assert distributed.worker_device("cpu", distributed.Worker(local_rank=1, local_world=2)) == "cpu"


def test_cpu_ranks_of_a_node_divide_its_threads(monkeypatch):
    import torch

    before = torch.get_num_threads()
    monkeypatch.setattr(distributed, "_cpus", lambda: 16)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")  # 4 ranks on this node (WORLD_SIZE unset: no group to join)
    try:
        with distributed.session(None, device="cpu") as (worker, device):
            assert (worker.local_world, device, torch.get_num_threads()) == (4, "cpu", 4)
        with distributed.session(None, device="cpu", threads=3):
            assert torch.get_num_threads() == 3  # --threads wins
    finally:
        torch.set_num_threads(before)


def test_ddp_finetune_needs_several_processes(tmp_path, data_root, capsys):
    model = helpers_transfer.tiny_model(data_root)
    assert main(["run", "--model", str(model), "--data", str(data_root), "--out", str(tmp_path), *COMMAND,
                 "--ddp-finetune"]) == 2
    assert "--ddp-finetune: needs several processes" in capsys.readouterr().err


def test_ddp_finetune_is_refused_in_probe_mode(tmp_path, data_root, capsys):
    """Probe mode trains no model: under --ddp-finetune each rank of a shard would fit the same heads (only rank 0
    holds the item's lock), so the combination is a usage error before anything loads."""
    model = helpers_transfer.tiny_model(data_root)
    assert main(["run", "--model", str(model), "--data", str(data_root), "--out", str(tmp_path), *COMMAND,
                 "--mode", "probe", "--ddp-finetune"]) == 2
    assert "--ddp-finetune: --mode probe fine-tunes nothing" in capsys.readouterr().err
    assert not list(tmp_path.rglob("*.json"))  # nothing computed, nothing written


# ------------------------------------------------------------------------------------------- many processes


def comparable(out: Path) -> dict:
    """Every record (less timings and timestamps) and prediction file of a store, by path."""
    found = {}
    for path in sorted(out.rglob("*.json")):
        rel = path.relative_to(out).as_posix()
        if re.fullmatch(r"results(\.shard-\d+-of-\d+)?\.json", rel):  # a run's summary (xeval.results/1): timings
            continue
        if "/predictions/" in rel:
            found[rel] = path.read_text(encoding="utf-8")
            continue
        rec = json.loads(path.read_text(encoding="utf-8"))  # a partial record would fail here
        rec.pop("provenance")
        rec.get("extra", {}).get("training", {}).pop("duration_s", None)
        found[rel] = rec
    for path in sorted(out.rglob("predictions/*.tsv")):
        found[path.relative_to(out).as_posix()] = path.read_text(encoding="utf-8")
    return found


def puts(log: Path) -> list[tuple[int, int, str]]:
    if not log.is_file():
        return []
    return [(int(p), int(r), path) for p, r, path in (line.split(" ", 2) for line in log.read_text().splitlines())]


def launch(tmp_path: Path, data_root: Path, out: Path, *extra: str, nproc: int | None = 2, env=None,
           wait: bool = True):
    model = helpers_transfer.tiny_model(data_root)
    prefix = [sys.executable] if nproc is None else [sys.executable, "-m", "torch.distributed.run", "--standalone",
                                                     "--nproc_per_node", str(nproc)]
    args = [*prefix, str(WORKER), "run", "--model", str(model), "--data", str(data_root), "--out", str(out),
            *COMMAND, *extra]
    full_env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", "XEVAL_TEST_PUT_LOG":
                str(tmp_path / "puts.log"), **(env or {})}
    proc = subprocess.Popen(args, cwd=REPO, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if not wait:
        return proc
    stdout, stderr = proc.communicate(timeout=600)
    return proc.returncode, stdout, stderr


@pytest.fixture(scope="module")
def single(tmp_path_factory, data_root):
    """The reference: the command run by one process (in this one), its store and its printed tables."""
    import contextlib
    import io

    import torch

    threads = torch.get_num_threads()
    out = tmp_path_factory.mktemp("single") / "runs"
    model = helpers_transfer.tiny_model(data_root)
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(["run", "--model", str(model), "--data", str(data_root), "--out", str(out), *COMMAND]) == 0
    torch.set_num_threads(threads)  # --threads 1 set it for this process
    tables = buffer.getvalue()
    tables = tables[tables.index("udpos (zero-shot"):]  # the tables and the layer each probe is reported at,
    return comparable(out), tables[:tables.rindex("\n", 0, tables.index(" units computed")) + 1]  # not the timing


def expected_units(single_store: dict) -> set[str]:
    return {p for p in single_store if "/predictions/" not in p}


@pytest.mark.slow
def test_two_torchrun_workers_store_exactly_the_records_of_one(tmp_path, data_root, single):
    reference, tables = single
    out = tmp_path / "runs"
    rc, stdout, stderr = launch(tmp_path, data_root, out)
    assert rc == 0, stderr[-3000:]
    assert comparable(out) == reference
    log = puts(tmp_path / "puts.log")
    paths = [path for _, _, path in log]
    assert sorted(paths) == sorted(expected_units(reference))  # each unit computed exactly once
    assert {rank for _, rank, _ in log} == {0, 1}  # both workers computed a part
    for seed in (1, 2):  # a zero-shot fine-tune is trained by one worker, which evaluates all its languages
        trained = {rank for _, rank, p in log if "/udpos/" in p and re.search(rf"\.s{seed}[.~]", p)}
        assert len(trained) == 1, trained
    assert tables in stdout  # rank 0 printed the tables of the whole run, as one process does
    assert stdout.count("udpos (zero-shot; 2 seeds)") == 1
    assert f"{len(paths)} units computed, 0 reused" in stdout  # counted over both ranks


@pytest.mark.slow
def test_a_killed_worker_loses_only_its_unit_and_a_rerun_completes(tmp_path, data_root, single):
    reference, _ = single
    out = tmp_path / "runs"
    # rank 1 dies right after storing its first record: in the middle of a fine-tune item (1 of its 3 languages)
    rc, _, _ = launch(tmp_path, data_root, out, env={"XEVAL_TEST_KILL": "1:1"})
    assert rc != 0
    first = puts(tmp_path / "puts.log")
    stored = comparable(out)  # every record left behind parses: no partial record
    assert 0 < len(expected_units(stored)) < len(expected_units(reference))
    assert all(stored[p] == reference[p] for p in stored)
    rc, _, stderr = launch(tmp_path, data_root, out)  # the same command again
    assert rc == 0, stderr[-3000:]
    assert comparable(out) == reference
    again = puts(tmp_path / "puts.log")[len(first):]
    assert sorted(p for _, _, p in first + again) == sorted(expected_units(reference))  # no unit twice


@pytest.mark.slow
def test_two_shards_equal_the_single_run_and_report_joins_them(tmp_path, data_root, single, capsys):
    reference, _ = single
    out = tmp_path / "runs"
    model = helpers_transfer.tiny_model(data_root)
    for shard in ("0/2", "1/2"):
        assert main(["run", "--model", str(model), "--data", str(data_root), "--out", str(out), *COMMAND,
                     "--shard", shard]) == 0
    printed = capsys.readouterr().out
    assert "shard 1/2: the tables above hold this shard's units" in printed
    assert comparable(out) == reference
    assert main(["report", str(out), "--table", "languages", "--format", "csv"]) == 0
    joined = capsys.readouterr().out
    assert "udpos" in joined and "tatoeba" in joined


@pytest.mark.slow
def test_two_commands_meeting_on_one_store_compute_each_unit_once(tmp_path, data_root, single):
    reference, _ = single
    out = tmp_path / "runs"
    procs = [launch(tmp_path, data_root, out, nproc=None, wait=False) for _ in range(2)]
    for proc in procs:
        _, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, stderr[-3000:]
    assert comparable(out) == reference
    log = puts(tmp_path / "puts.log")
    assert sorted(p for _, _, p in log) == sorted(expected_units(reference))  # the item lock: none twice


@pytest.mark.slow
def test_ddp_finetune_two_processes_match_one(tmp_path, data_root, single):
    """Each fine-tune trained by 2 gloo ranks together (its 4 micro-batches per step dealt 2 and 2, dropout on)
    gives the one-process numbers: metrics, dev curve and final loss within 1e-4."""
    reference, _ = single
    out = tmp_path / "runs"
    rc, stdout, stderr = launch(tmp_path, data_root, out, "--ddp-finetune")
    assert rc == 0, stderr[-3000:]
    got = comparable(out)
    assert got.keys() == reference.keys()
    for path, rec in reference.items():
        if "/udpos/" not in path or "/predictions/" in path:
            assert got[path] == rec, path
            continue
        mine = got[path]
        assert mine["metrics"].keys() == rec["metrics"].keys()
        for name, value in rec["metrics"].items():
            assert mine["metrics"][name] == pytest.approx(value, abs=1e-4), (path, name)
        ours, theirs = mine["extra"]["training"], rec["extra"]["training"]
        assert ours["final_loss"] == pytest.approx(theirs["final_loss"], abs=1e-4)
        assert [s for s, _ in ours["dev_curve"]] == [s for s, _ in theirs["dev_curve"]]
        assert [v for _, v in ours["dev_curve"]] == pytest.approx([v for _, v in theirs["dev_curve"]], abs=1e-4)
        assert mine["config"] == rec["config"]
    ranks = {rank for _, rank, p in puts(tmp_path / "puts.log") if "/udpos/" in p}
    assert ranks == {0, 1}  # after a joint fine-tune its languages are evaluated on both ranks
