"""``python -m xeval pretrain --config mlm --out DIR [--size tiny] [--resume] [--init HF_DIR]``: train an encoder with
xeval's engine, from random weights or (``--init``) continuing a pretrained BERT / XLM-R model (engine/hf_init.py).

Under ``torchrun --nproc_per_node N -m xeval pretrain ...`` the same command runs DDP (gloo on CPU, NCCL on GPU).
"""

from __future__ import annotations

from xeval.base.allocator import PRETRAIN_MMAP_ABOVE

NAME = "pretrain"
HELP = "pre-train an encoder (MLM, TLM, XLM-E, InfoXLM, VECO 2.0, quickstart presets) into a checkpoint directory"
MMAP_ABOVE = PRETRAIN_MMAP_ABOVE  # its buffers change size every step: a heap keeping them all fragments


def add_arguments(parser) -> None:
    parser.add_argument("--config", required=True, metavar="PRESET|FILE", help="preset name (mlm, xlm, xlm-e, xlm-e-no-trtd, infoxlm, "
                        "veco2, quickstart) or a YAML file")  # fmt: skip
    parser.add_argument("--out", required=True, metavar="DIR", help="output directory: the checkpoint (config.json, "
                        "model.safetensors, tokenizer) plus state/ for --resume")  # fmt: skip
    parser.add_argument("--size", metavar="SIZE", help="micro | tiny | base, or a preset's own size such as quickstart (default: "
                        "the preset's size)")  # fmt: skip
    parser.add_argument("--resume", action="store_true", help="continue from the last state in --out")
    parser.add_argument("--steps", type=int, metavar="N", help="total number of steps (overrides train.steps; 0 exports the "
                        "random initial weights)")  # fmt: skip
    parser.add_argument("--max-seconds", type=float, metavar="S", help="stop on this wall-clock budget of the training loop, "
                        "the learning rate decaying over it (overrides train.max_seconds; not bit-reproducible)")  # fmt: skip
    parser.add_argument("--data", metavar="DIR", help="the corpora's folder: the shared data root (default: $XEVAL_DATA or "
                        "a shared/data folder beside the working directory), or a synthetic world for data.layout synthetic (--config quickstart)")  # fmt: skip
    parser.add_argument("--init", metavar="DIR", help="continue pre-training from a Hugging Face BERT / XLM-R folder "
                        "(or a sentence-transformers one): its shape, weights and tokenizer (sets model.init; 0 steps "
                        "exports it unchanged)")  # fmt: skip
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override a config value, e.g. --set train.lr=1e-3 (repeatable)")  # fmt: skip


def run(args) -> int:
    import json

    from xeval.base.atomic import check_output
    from xeval.engine.config import load_config
    from xeval.engine.train import pretrain

    check_output(args.out, "--out", folder=True)

    overrides = list(args.set)
    if args.steps is not None:
        overrides.append(f"train.steps={args.steps}")
    if args.max_seconds is not None:
        overrides.append(f"train.max_seconds={args.max_seconds}")
    if args.data:
        overrides.append(f"data.root={args.data}")
    if args.init:  # a JSON string is a YAML string: any path survives --set's YAML parsing
        overrides.append(f"model.init={json.dumps(args.init)}")
    cfg = load_config(args.config, args.size, overrides)
    summary = pretrain(cfg, args.out, resume=args.resume)
    if int(__import__("os").environ.get("RANK", "0")) == 0:
        print(f"checkpoint: {summary['out']} (step {summary['step']})")
    return 0
