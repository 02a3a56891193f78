"""``python -m xeval quickstart``: synthetic world -> pre-trained tiny model -> probes + zero-shot fine-tuning ->
report, in a few minutes on a CPU (see ``xeval.run.quickstart``)."""

from __future__ import annotations

import argparse

from xeval.base.errors import UserError
from xeval.cli._args import Deprecated, option

NAME = "quickstart"
HELP = "offline end-to-end demo: synthetic languages, pre-training, probes, fine-tuning, report (~4 min on a CPU)"


def _list(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def add_arguments(parser) -> None:
    parser.add_argument("--out", default="runs/quickstart", metavar="DIR", help="folder for everything (default: runs/quickstart)")
    parser.add_argument("--steps", type=int, default=None, metavar="N",
                        help="pre-training steps (default 400: about 2 minutes on 2 CPU cores; fixed, so every machine "
                             "trains the same model and prints the same numbers)")
    parser.add_argument("--minutes", action=Deprecated, new="--steps (the quickstart trains a fixed number of steps; "
                        "--minutes is ignored)", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, metavar="SEED", help="seed of the world and of pre-training")
    parser.add_argument("--overlap", default="0.5", metavar="F[,F]",
                        help="vocabulary overlap of the derived languages with the base (0 = disjoint; a comma "
                             "list is cycled), passed to xeval synth")  # fmt: skip
    parser.add_argument("--order", default="SVO,SOV,VSO", metavar="ORDER[,ORDER]",
                        help="word order per language (SVO|SOV|VSO), cycled, base first; passed to xeval synth")
    option(parser, "--num-langs", old=("--languages",), type=int, default=4, metavar="N", dest="languages",
           help="number of languages, the base language included")
    parser.add_argument("--threads", type=int, default=1, metavar="N", help="torch CPU threads (default 1)")


def run(args) -> int:
    import torch

    from xeval.base.atomic import check_output
    from xeval.run.quickstart import STEPS, Options, quickstart

    check_output(args.out, "--out", folder=True)

    try:
        overlap = tuple(float(x) for x in _list(args.overlap))
    except ValueError:
        raise UserError(f"--overlap: expected fractions like 0.5 or 0,0.5, found {args.overlap!r}") from None
    if args.threads < 1:
        raise UserError(f"--threads: expected an integer >= 1, found {args.threads}")
    torch.set_num_threads(args.threads)
    opts = Options(out=args.out, steps=STEPS if args.steps is None else args.steps, seed=args.seed, overlap=overlap,
                   order=tuple(s.upper() for s in _list(args.order)), languages=args.languages)  # fmt: skip
    quickstart(opts, whole_process=True)
    return 0
