"""Probe encoding speed: xeval's encoder against sentence-transformers' own ``encode``, measured in the same run.

The same Tatoeba sentences (both sides of ``--n`` pairs of each language) are encoded, with the model's prefix
(e5's ``query: ``) and the same batch size (the Tatoeba card's 100 unless ``--batch-size``), by

- st: ``SentenceTransformer(dir).encode(texts, batch_size=B, prompt=prefix)``, the call a user would make (batches
  sorted by character length, the folder's mean pooling and Normalize);
- xeval: ``Encoder(dir).sentence_embeddings`` as the Tatoeba probe calls it (``xeval.adapters.probes.base``: prefix
  before every text, mean pooling over all tokens): the last layer (the vector sentence-transformers gives), the
  card's layer (``tasks/tatoeba.yaml``: hidden_states[8] of a 12-layer model, where the layer stack stops:
  ``xeval.models.layer_stack``) and all hidden states at once (the layer sweep);
- the same with bf16 weights (``Encoder(dir, dtype=torch.bfloat16)``, ``xeval run --dtype bfloat16``;
  sentence-transformers' model cast with ``.to(torch.bfloat16)``), unless ``--no-bf16``.

Throughput = sentences per CPU second of the process for the whole call (tokenisation, forward, pooling, copy to
numpy; at one thread the CPU time is the time the call ran, without the time other jobs held the core), and per
wall second beside it. Rounds are
interleaved (the order rotates every round) after one warm-up of each, whose vectors are checked for parity:

- fp32: per-sentence cosine between xeval's last-layer vector and sentence-transformers' (min and median; the goal
  is >= 0.9999: the same maths, different batches and float rounding);
- bf16: Tatoeba top-1 accuracy (mean of en->xx and xx->en, exact cosine search) of xeval's bf16 vectors minus
  that of its fp32 vectors, per language and averaged, on ``--parity-n`` pairs a language (untimed; accuracy moves
  in steps of 100 / n), the last layer and every layer of the sweep (the goal: within 0.2 points), and the
  bf16/fp32 cosine.

Also printed: the CPU's matmul peak (fp32 and bf16, n x n x n products measured in this run) and each variant's
executed matrix-product FLOPs, counted from its batches' padded shapes, as a share of that peak; the share of real
(non-padding) tokens in each variant's batches. ``--profile`` adds torch.profiler's operator table of one pass of
sentence-transformers (fp32) and of xeval (one layer, fp32 and bf16).

    python bench/encode_throughput.py                      # multilingual-e5-small (tests/helpers/e5.py), de,fr,ja,sw
    python bench/encode_throughput.py --model DIR --langs de,ja --n 500 --rounds 5 --batch-size 64 --profile
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def data_root(arg: str | None) -> Path:
    from tests.conftest import find_data_root

    root = Path(arg) if arg else find_data_root()
    if root is None or not (root / "tatoeba").is_dir():
        sys.exit("bench/encode_throughput.py: no data: pass --data DIR (the ../shared/data layout) or set XEVAL_DATA")
    return root


def model_dir(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    from tests.helpers import e5

    try:
        return e5.e5_small()
    except e5.Unavailable as err:
        sys.exit(f"bench/encode_throughput.py: {err}; pass --model DIR")


def matmul_flops(shapes: list[tuple[int, int]], config) -> float:
    """Matrix-product FLOPs of a BERT-style forward over batches of padded shape (B, T): per layer the four
    H x H projections and the two H x I feed-forward products on every position, and the two attention products
    (Q K^T and A V, T x T x H per sequence). Layer norm, GELU, softmax and the embedding lookup are not counted."""
    h, inner, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    total = 0.0
    for b, t in shapes:
        total += layers * (2 * b * t * (4 * h * h + 2 * h * inner) + 4 * b * t * t * h)
    return total


def batch_shapes(lengths: list[int], batches) -> list[tuple[int, int]]:
    """(sentences, padded length) of each batch."""
    return [(len(idx), max(lengths[i] for i in idx)) for idx in batches]


def tatoeba_accuracy(vectors, sizes: dict[str, int]) -> dict[str, float]:
    """Per language: mean of en->xx and xx->en top-1 accuracy; ``vectors`` [sum 2n, H] holds each language's xx
    side then its English side."""
    from xeval.adapters.probes.retrieval import bidirectional_scores

    out, start = {}, 0
    for lang, n in sizes.items():
        xx, en = vectors[start : start + n], vectors[start + n : start + 2 * n]
        out[lang] = bidirectional_scores(xx, en)[0]["accuracy_mean"]
        start += 2 * n
    return out


def cosines(a, b):
    import numpy as np

    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return (a * b).sum(1)


def profile(name: str, fn, rows: int) -> None:
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    print(f"\n### profile: {name} (one pass)\n")
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="sentence-transformers model folder (default: multilingual-e5-small)")
    parser.add_argument("--data", help="data root (default: ../shared/data or $XEVAL_DATA)")
    parser.add_argument("--langs", default="de,fr,ja,sw", help="Tatoeba languages (2-letter codes)")
    parser.add_argument("--n", type=int, default=200, help="sentence pairs per language, both sides encoded")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="sentences per batch (default: the Tatoeba card's, tasks/tatoeba.yaml: 100)")
    parser.add_argument("--layer", type=int, default=None,
                        help="the single-layer probe's layer besides the last (default: the Tatoeba card's for this "
                             "depth, hidden_states[8] of 12 layers; the stack stops there)")
    parser.add_argument("--prefix", default=None,
                        help="text before each sentence (default: 'query: ' for an e5 folder, else the folder's "
                             "prompt as the probes resolve it)")
    parser.add_argument("--parity-n", type=int, default=1000,
                        help="pairs per language of the bf16 accuracy check (untimed; 0: the timed sentences)")
    parser.add_argument("--rounds", type=int, default=4, help="timed rounds after the warm-up (medians)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1: a shared CPU)")
    parser.add_argument("--no-bf16", action="store_true", help="fp32 only")
    parser.add_argument("--profile", action="store_true", help="torch.profiler tables of one fp32 pass each")
    parser.add_argument("--profile-rows", type=int, default=14)
    args = parser.parse_args()

    import os

    # the fast tokenizer's batch calls run on a thread pool of their own (Rust, rayon): the same thread budget
    os.environ.setdefault("RAYON_NUM_THREADS", str(args.threads))
    import numpy as np
    import torch

    from tests.conftest import find_data_root  # noqa: F401  (imported before the thread setting: it sets its own)
    from xeval.adapters.probes.base import DEFAULTS, resolve_prefix, with_prefix
    from xeval.data.tatoeba import read_tatoeba
    from xeval.engine.runlog import measure_peak
    from xeval.models.batching import length_batches
    from xeval.models.encoder import Encoder

    torch.set_num_threads(args.threads)
    root, folder = data_root(args.data), model_dir(args.model)
    import yaml

    card = yaml.safe_load((REPO / "tasks" / "tatoeba.yaml").read_text(encoding="utf-8"))["recipe"]
    args.batch_size = args.batch_size or int(card["batch_size"])
    data = {lang: read_tatoeba(root / "tatoeba", lang)[: args.n] for lang in args.langs.split(",")}
    sizes = {lang: len(pairs) for lang, pairs in data.items()}
    texts = [t for pairs in data.values() for t in [p.src for p in pairs] + [p.tgt for p in pairs]]

    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()  # BertModel's "pooler missing" report, once per load
    hf_logging.disable_progress_bar()
    encoders = {"fp32": Encoder(folder)}
    peers = {"fp32": SentenceTransformer(str(folder), device="cpu")}
    if not args.no_bf16:
        encoders["bf16"] = Encoder(folder, dtype=torch.bfloat16)
        peers["bf16"] = SentenceTransformer(str(folder), device="cpu").to(torch.bfloat16)
    encoder = encoders["fp32"]
    prefix = args.prefix if args.prefix is not None else (
        "query: " if "e5" in folder.name.lower() else resolve_prefix(None, encoder.sentence_pipeline))
    prefixed = with_prefix(texts, {"prefix": prefix})  # exactly what the Tatoeba probe encodes
    options = {"batch_size": args.batch_size, "pooling": DEFAULTS["pooling"],
               "include_special": DEFAULTS["include_special"], "progress": False}
    last, every = [encoder.num_layers], list(range(encoder.num_layers + 1))
    probe_layer = args.layer if args.layer is not None else card["layer_for_depth"].get(encoder.num_layers)

    def st_call(dtype):
        return lambda: peers[dtype].encode(texts, batch_size=args.batch_size, prompt=prefix or None,
                                           convert_to_numpy=True, show_progress_bar=False)

    def xeval_call(dtype, layers):
        return lambda: encoders[dtype].sentence_embeddings(prefixed, layers=layers, **options)

    variants = {}
    for dtype in encoders:
        variants[f"st {dtype}"] = st_call(dtype)
        variants[f"xeval layer {last[0]} {dtype}"] = xeval_call(dtype, last)
        if probe_layer is not None and probe_layer != last[0]:
            variants[f"xeval layer {probe_layer} {dtype}"] = xeval_call(dtype, [probe_layer])
        variants[f"xeval {len(every)} layers {dtype}"] = xeval_call(dtype, every)

    # the padded shapes each variant's batches have: sentence-transformers sorts by characters (descending,
    # as its encode does), xeval by subwords under a token budget; one tokenizer call gives both their lengths
    lengths = [len(ids) for ids in encoder.tokenizer(prefixed, truncation=True,
                                                     max_length=encoder.max_length)["input_ids"]]
    st_order = list(np.argsort([-peers["fp32"]._input_length(t) for t in texts]))
    st_batches = [st_order[s : s + args.batch_size] for s in range(0, len(st_order), args.batch_size)]
    shapes = {"st": batch_shapes(lengths, st_batches),
              "xeval": batch_shapes(lengths, length_batches(lengths, args.batch_size))}
    real = sum(lengths)
    flops = {kind: matmul_flops(s, encoder.model.config) for kind, s in shapes.items()}

    DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
    peaks = {dtype: measure_peak(torch.device("cpu"), DTYPES[dtype]) for dtype in encoders}
    print(f"model {encoder.key} ({encoder.num_layers} x {encoder.hidden_size}); {len(texts)} sentences "
          f"({', '.join(f'{k} {2 * v}' for k, v in sizes.items())}), prefix {prefix!r}, batch {args.batch_size}, "
          f"{real / len(texts):.1f} subwords a sentence; torch {torch.__version__}, {torch.get_num_threads()} "
          f"thread(s); matmul peak " + ", ".join(f"{k} {v / 1e9:.0f} GFLOP/s" for k, v in peaks.items()), flush=True)

    vectors = {name: fn() for name, fn in variants.items()}  # warm-up, and the vectors of the parity checks
    cpu, wall = {name: [] for name in variants}, {name: [] for name in variants}
    names = list(variants)
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[: r % len(names)]:  # rotate: load hits every variant alike
            start, start_cpu = time.perf_counter(), time.process_time()
            variants[name]()
            cpu[name].append(time.process_time() - start_cpu)
            wall[name].append(time.perf_counter() - start)
    for dtype in peaks:  # the best rate seen around the rounds (a contended measurement understates the peak)
        peaks[dtype] = max(peaks[dtype], measure_peak(torch.device("cpu"), DTYPES[dtype]))

    # CPU seconds of the process: at one thread the time the encoding ran, without the time other jobs on a shared
    # machine held the core (wall seconds, also given, count that too)
    median = {name: statistics.median(t) for name, t in cpu.items()}
    median_wall = {name: statistics.median(t) for name, t in wall.items()}
    print(f"\nmedians of {args.rounds} interleaved rounds; rates per CPU second of the process (wall in the last "
          f"columns); matrix FLOPs counted from the padded batch shapes\n")
    print("| variant | sentences/s | × st fp32 | × st same dtype | real tokens | matmul share of peak | "
          "wall sentences/s | wall × st fp32 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in names:
        dtype = name.split()[-1]
        kind = name.split()[0]
        rate = len(texts) / median[name]
        padded = sum(b * t for b, t in shapes[kind])
        ran = probe_layer if name.startswith(f"xeval layer {probe_layer} ") else encoder.num_layers  # stack cut
        share = flops[kind] * ran / encoder.num_layers / median[name] / peaks[dtype]
        print(f"| {name} | {rate:.1f} | {median['st fp32'] / median[name]:.2f} | "
              f"{median[f'st {dtype}'] / median[name]:.2f} | {100 * real / padded:.0f} % | {100 * share:.0f} % | "
              f"{len(texts) / median_wall[name]:.1f} | {median_wall['st fp32'] / median_wall[name]:.2f} |")

    ours = vectors[f"xeval layer {last[0]} fp32"][0]
    cos = cosines(ours, vectors["st fp32"])
    cos_all = cosines(vectors[f"xeval {len(every)} layers fp32"][-1], vectors["st fp32"])
    print(f"\nfp32 parity, xeval vs st, per-sentence cosine: last layer min {cos.min():.7f} median {np.median(cos):.7f}; "
          f"all layers' last min {cos_all.min():.7f} (goal >= 0.9999: {'ok' if min(cos.min(), cos_all.min()) >= 0.9999 else 'MISSED'})")
    if "bf16" in encoders:
        # accuracy moves in steps of 100 / n points: the parity set is larger than the timed one (not timed)
        check = {lang: read_tatoeba(root / "tatoeba", lang)[: args.parity_n] for lang in data} if args.parity_n \
            else data
        check_sizes = {lang: len(pairs) for lang, pairs in check.items()}
        check_texts = with_prefix([t for pairs in check.values() for t in [p.src for p in pairs] +
                                   [p.tgt for p in pairs]], {"prefix": prefix})
        got = {dtype: encoders[dtype].sentence_embeddings(check_texts, layers=every, **options)
               for dtype in ("fp32", "bf16")}  # [13, N, H] each: the last layer and the sweep's
        print(f"\nTatoeba accuracy (mean of en->xx and xx->en) of xeval's vectors, bf16 against fp32, "
              f"{', '.join(f'{k} {v}' for k, v in check_sizes.items())} pairs, last layer\n")
        print("| vectors | " + " | ".join(check_sizes) + " | mean | bf16 − fp32 (mean; max per language) | "
              "cosine to fp32 min |")
        print("|---|" + "---:|" * (len(check_sizes) + 3))
        fp32, bf16 = tatoeba_accuracy(got["fp32"][-1], check_sizes), tatoeba_accuracy(got["bf16"][-1], check_sizes)
        diff = [bf16[k] - fp32[k] for k in check_sizes]
        for label, acc, tail in (("fp32", fp32, " |  |  |"), ("bf16", bf16, (
                f" | {statistics.mean(diff):+.2f}; {max(diff, key=abs):+.1f} | "
                f"{cosines(got['bf16'][-1], got['fp32'][-1]).min():.5f} |"))):
            print(f"| xeval {label} | " + " | ".join(f"{acc[k]:.1f}" for k in check_sizes) +
                  f" | {statistics.mean(acc.values()):.2f}" + tail)
        sweep = [statistics.mean(tatoeba_accuracy(got["bf16"][k], check_sizes).values()) -
                 statistics.mean(tatoeba_accuracy(got["fp32"][k], check_sizes).values()) for k in every]
        print(f"\nevery layer (0..{every[-1]}), bf16 − fp32 of the mean accuracy: "
              + " ".join(f"{d:+.2f}" for d in sweep)
              + f" (goal within 0.2 points: {'ok' if max(map(abs, sweep)) <= 0.2 else 'MISSED'})")
    if args.profile:
        for name in ("st fp32", f"xeval layer {last[0]} fp32", f"xeval layer {last[0]} bf16"):
            if name in variants:
                profile(name, variants[name], args.profile_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
