"""Cost of a layer sweep: a probe over ALL layers vs the same probe on ONE layer, measured in the same run.

The encoder returns every hidden state from one forward pass, so a sweep should cost about one single-layer probe
(target: ratio <= 1.2). Word alignment extracts every layer's links in one call per method and chunk of pairs:
argmax-inter is one tensor operation over the layers, Sinkhorn iterates all (pair, layer) problems of the chunk
together (xeval/adapters/probes/sinkhorn.py), exact OT stays one network-simplex solve per pair and layer (~1-2 ms each
at ~50 x 50 subwords: that is what remains of its ratio).

    python bench/layer_sweep.py                       # tiny 4-layer model built on the fly, Tatoeba de,fr,ja,sw
    python bench/layer_sweep.py --model ckpt/ --langs de,fr --n 500 --repeats 7 --probe both

Repeats are interleaved (all, one, one, all, ...) after one warm-up of each, and medians are compared.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def data_root(arg: str | None) -> Path:
    from tests.conftest import find_data_root

    root = Path(arg) if arg else find_data_root()
    if root is None or not (root / "tatoeba").is_dir():
        sys.exit("bench/layer_sweep.py: no data: pass --data DIR (the ../shared/data layout) or set XEVAL_DATA")
    return root


def tiny_model(root: Path, folder: Path, layers: int, hidden: int) -> Path:
    from tests.helpers.tiny import make_tiny_bert

    lines = []
    for name in ("deu-eng.deu", "deu-eng.eng", "fra-eng.fra", "jpn-eng.jpn"):
        lines += (root / "tatoeba" / f"tatoeba.{name}").read_text(encoding="utf-8").splitlines()[:300]
    return make_tiny_bert(folder, texts=lines, vocab_size=2000, layers=layers, hidden=hidden)


def timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def compare(name: str, run_layers, all_layers: list[int], one: list[int], repeats: int) -> float:
    run_layers(all_layers), run_layers(one)  # warm-up: imports, allocator, FAISS/POT first calls
    t_all, t_one = [], []
    for r in range(repeats):
        order = [("all", all_layers), ("one", one)] if r % 2 == 0 else [("one", one), ("all", all_layers)]
        for tag, layers in order:
            (t_all if tag == "all" else t_one).append(timed(run_layers, layers))
    m_all, m_one = statistics.median(t_all), statistics.median(t_one)
    ratio = m_all / m_one
    print(f"{name:<36} all {len(all_layers):>2} layers {m_all:7.3f} s   one layer {m_one:7.3f} s   ratio {ratio:.2f}",
          flush=True)
    return ratio


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="model directory (default: a tiny BERT built in a temp folder)")
    parser.add_argument("--data", help="data root (default: ../shared/data or $XEVAL_DATA)")
    parser.add_argument("--langs", default="de,fr,ja,sw", help="Tatoeba languages (2-letter codes)")
    parser.add_argument("--n", type=int, default=1000, help="sentence pairs per language (Tatoeba has <= 1000)")
    parser.add_argument("--pairs", type=int, default=100, help="word-alignment sentence pairs (de-en)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--probe", choices=["tatoeba", "alignment", "both"], default="both")
    parser.add_argument("--tiny-layers", type=int, default=4)
    parser.add_argument("--tiny-hidden", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1: a shared CPU)")
    args = parser.parse_args()

    import faiss
    import torch

    from tests.conftest import find_data_root  # noqa: F401  (imported before the thread setting: it sets its own)
    from xeval.adapters.probes.alignment import ALIGN_DEFAULTS, align_layers
    from xeval.adapters.probes.base import DEFAULTS
    from xeval.adapters.probes.retrieval import tatoeba_layers
    from xeval.data.alignment_gold import read_alignment
    from xeval.data.tatoeba import read_tatoeba
    from xeval.models.encoder import Encoder

    torch.set_num_threads(args.threads)
    faiss.omp_set_num_threads(args.threads)  # OpenMP spinning on a shared CPU distorts every timing
    root = data_root(args.data)
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model or tiny_model(root, Path(tmp) / "tiny", args.tiny_layers, args.tiny_hidden)
        encoder = Encoder(model)
        all_layers = list(range(encoder.num_layers + 1))
        one = [encoder.num_layers]
        print(f"model {encoder.key}: {encoder.num_layers} layers, hidden {encoder.hidden_size}; "
              f"torch threads {torch.get_num_threads()}; median of {args.repeats} interleaved repeats", flush=True)
        ratios = {}
        if args.probe in ("tatoeba", "both"):
            data = {lang: read_tatoeba(root / "tatoeba", lang)[: args.n] for lang in args.langs.split(",")}
            options = dict(DEFAULTS)

            def tatoeba(layers):
                for pairs in data.values():
                    list(tatoeba_layers(encoder, [p.src for p in pairs], [p.tgt for p in pairs], layers, options))

            n = sum(len(v) for v in data.values())
            ratios["tatoeba"] = compare(f"tatoeba ({len(data)} langs, {n} pairs)", tatoeba, all_layers, one,
                                        args.repeats)
        if args.probe in ("alignment", "both"):
            folder = root / "word_alignment"
            pairs = read_alignment(folder / "deen.src-tgt", folder / "deen.gold", "de-en")[: args.pairs]
            for methods in (["argmax-inter"], ["ot-emd"], ["ot-sinkhorn"]):
                options = {**ALIGN_DEFAULTS, "methods": methods}

                def align(layers, options=options):
                    align_layers(encoder, pairs, layers, options)

                label = "+".join(methods)
                ratios[f"alignment {label}"] = compare(f"alignment de-en {len(pairs)} ({label})", align,
                                                       all_layers, one, args.repeats)
        if "tatoeba" in ratios:
            verdict = "ok" if ratios["tatoeba"] <= 1.2 else "ABOVE TARGET"
            print(f"tatoeba sweep-cost ratio {ratios['tatoeba']:.2f} (target <= 1.2: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
