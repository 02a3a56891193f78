"""``xeval pretrain`` under glibc's default allocator, under the fine-tuning setting (every freed block kept in the
process) and under its own (freed blocks kept up to 32 MiB, ``xeval.base.allocator``): seconds a step and peak
resident memory, the real command end to end.

Each setting acts once per process, so each measurement is one ``xeval pretrain`` process: the same config, data,
seed and steps under each setting, interleaved (the order rotated every repeat). A step's time is the median of the
run log's ``s_per_step`` (``train.log_every`` steps each) without the first interval (warm-up: first kernels,
the first batches' buffers); peak resident memory is the process's own (``wait4``), and the resident memory at each
logged step is sampled from ``/proc`` to show growth. Numbers do not depend on the setting (where memory comes from is
not arithmetic); the final losses are printed to show it.

    python bench/pretrain_allocator.py --config xlm --size micro --steps 60 --repeats 3 \\
        --set model.num_hidden_layers=4 --set tokenizer.path=reports/ci-tiny/tokenizer
    python bench/pretrain_allocator.py --config infoxlm --size tiny --init $E5 --steps 40 --repeats 1 \\
        --set data.mono_batch=8 --set data.pair_batch=8
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SETTINGS = ("glibc", "keep-all", "xeval")
# glibc's variables act as its mallopt calls do; any of them makes xeval leave the allocator alone
ENVIRONMENTS = {"glibc": {"MALLOC_MMAP_MAX_": "65536"},  # glibc's own default
                "keep-all": {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(1 << 30)},  # fine-tuning's
                "xeval": {}}  # what xeval pretrain sets itself: blocks up to 32 MiB kept (xeval.cli.pretrain.MMAP_ABOVE)


def resident_gb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1e6  # kB -> GB
    except OSError:
        return None
    return None


def measure(args, setting: str, out: Path) -> dict:
    from xeval.base.allocator import USER_VARIABLES  # glibc's own variables: none may leak into a run

    env = {k: v for k, v in os.environ.items() if k not in USER_VARIABLES and k != "MALLOC_ARENA_MAX"}
    env["OMP_NUM_THREADS"] = str(args.threads)
    env.update(ENVIRONMENTS[setting])
    cmd = [sys.executable, "-m", "xeval", "pretrain", "--config", args.config, "--size", args.size, "--out", str(out),
           "--set", f"train.steps={args.steps}", "--set", f"train.log_every={args.log_every}",
           "--set", f"train.threads={args.threads}", "--set", "train.save_every=1000000",
           "--set", "train.export_every=null", "-q"]
    for item in args.set:
        cmd += ["--set", item]
    if args.init:
        cmd += ["--init", args.init]
    if args.data:
        cmd += ["--data", args.data]
    log = out / "log.jsonl"
    rss: dict[int, float] = {}
    with open(out.parent / f"{out.name}.stderr", "w", encoding="utf-8") as err:
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=err)
        while True:  # sample the resident memory each time the run logs a step; wait4 gives the peak at the end
            done, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if done:
                proc.returncode = os.waitstatus_to_exitcode(status)
                break
            if log.is_file():
                lines = log.read_text(encoding="utf-8").splitlines()
                try:
                    step = json.loads(lines[-1])["step"] if lines else None
                except json.JSONDecodeError:  # a line still being written
                    step = None
                if step is not None:
                    if step not in rss and (gb := resident_gb(proc.pid)) is not None:
                        rss[step] = gb
            time.sleep(0.5)
    if proc.returncode:
        sys.exit(f"bench/pretrain_allocator.py: xeval pretrain failed (exit {proc.returncode}); see {out}.stderr")
    rows = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return {"step_s": statistics.median(r["s_per_step"] for r in rows[1:]), "loss": rows[-1]["loss"],
            "peak_gb": usage.ru_maxrss / 1e6, "rss": rss}  # ru_maxrss: kB


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="xlm")
    parser.add_argument("--size", default="micro")
    parser.add_argument("--init", help="continue from this Hugging Face folder (xeval pretrain --init)")
    parser.add_argument("--data", help="../shared/data layout folder (default: XEVAL_DATA or ../shared/data)")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--log-every", type=int, default=10, help="steps a logged interval (the first is warm-up)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per setting")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--set", action="append", default=[], help="extra xeval pretrain --set")
    parser.add_argument("--settings", default="glibc,keep-all,xeval", help=f"comma-separated, of {', '.join(SETTINGS)}")
    args = parser.parse_args()
    settings = [s for s in args.settings.split(",") if s]
    if unknown := set(settings) - set(SETTINGS):
        sys.exit(f"bench/pretrain_allocator.py: --settings: unknown {', '.join(sorted(unknown))}")
    if args.steps < 2 * args.log_every:
        sys.exit("bench/pretrain_allocator.py: --steps must cover at least two --log-every intervals")
    runs: dict[str, list[dict]] = {s: [] for s in settings}
    with tempfile.TemporaryDirectory(prefix="xeval-pretrain-allocator-") as tmp:
        for r in range(args.repeats):
            for setting in settings[r % len(settings):] + settings[:r % len(settings)]:
                row = measure(args, setting, Path(tmp) / f"{setting}-{r}")
                runs[setting].append(row)
                print(f"  {setting} #{r}: {row['step_s']:.3f} s/step, peak {row['peak_gb']:.2f} GB, loss "
                      f"{row['loss']:.4f}", flush=True)
    print(f"xeval pretrain --config {args.config} --size {args.size}{' --init ' + args.init if args.init else ''} "
          f"{' '.join('--set ' + s for s in args.set)}: {args.steps} steps, {args.threads} thread(s), "
          f"{args.repeats} run(s) a setting")
    base = statistics.median(x["step_s"] for x in runs[settings[0]])
    for setting, rows in runs.items():
        step = statistics.median(x["step_s"] for x in rows)
        growth = rows[-1]["rss"]
        trace = ", ".join(f"{s}: {gb:.2f}" for s, gb in sorted(growth.items()))
        print(f"{setting:<7} {step:.3f} s/step  peak {max(x['peak_gb'] for x in rows):.2f} GB  "
              f"{settings[0]}/this {base / step:.2f}x  final loss {rows[-1]['loss']:.4f}  resident GB by step {{{trace}}}")


if __name__ == "__main__":
    main()
