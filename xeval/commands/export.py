"""``python -m xeval export --to bert CKPT OUT``: an engine checkpoint as a stock ``transformers.BertModel``
(exact: same hidden states), for tools that know nothing of xeval; a one-line error names the option that blocks it."""

from __future__ import annotations

NAME = "export"
HELP = "export an engine checkpoint to a stock Hugging Face architecture (--to bert), exactly"


def add_arguments(parser) -> None:
    parser.add_argument("--to", required=True, choices=("bert",), help="target architecture")
    parser.add_argument("checkpoint", help="engine checkpoint directory (config.json with model_type xeval)")
    parser.add_argument("out", help="new output directory (BertModel config + model.safetensors + tokenizer)")


def run(args) -> int:
    from xeval.engine.export import export_bert

    out = export_bert(args.checkpoint, args.out)
    print(f"exported {args.checkpoint} -> {out} (BertModel, model_type bert)")
    return 0
