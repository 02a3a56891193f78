"""``python -m xeval export --to bert CKPT --out DIR``: an engine checkpoint as a stock ``transformers.BertModel``
(exact: same hidden states), for tools that know nothing of xeval; a one-line error names the option that blocks it."""

from __future__ import annotations

import argparse
import sys

NAME = "export"
HELP = "export an engine checkpoint to a stock Hugging Face architecture (--to bert), exactly"


def add_arguments(parser) -> None:
    parser.add_argument("--to", required=True, choices=("bert",), help="target architecture")
    parser.add_argument("checkpoint", help="engine checkpoint directory (config.json with model_type xeval)")
    parser.add_argument("--out", metavar="DIR",
                        help="new output directory (BertModel config + model.safetensors + tokenizer)")
    # the first spelling, a second positional argument: still read, with a warning (--out everywhere else)
    parser.add_argument("old_out", nargs="?", help=argparse.SUPPRESS)


def run(args) -> int:
    from xeval.base.errors import UserError
    from xeval.engine.export import export_bert

    if args.old_out is not None:
        if args.out is not None:
            raise UserError(f"give the output folder once: --out {args.out} or {args.old_out}, not both")
        print("xeval: warning: the output folder as a second argument is deprecated; use --out DIR", file=sys.stderr)
        args.out = args.old_out
    if args.out is None:
        raise UserError("--out DIR is required (the new checkpoint folder)")
    out = export_bert(args.checkpoint, args.out)
    print(f"exported {args.checkpoint} -> {out} (BertModel, model_type bert)")
    return 0
