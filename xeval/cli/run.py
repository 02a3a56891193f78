"""``python -m xeval run``: fine-tune and probe one model on a suite (see ``xeval.run.runner``)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

NAME = "run"
HELP = "evaluate a model on a suite: fine-tune on English, test every language, store and print the results"

def _int_or_auto(text: str):
    """``--batch-size``: a number of examples, or ``auto``."""
    if text == "auto":
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer or 'auto', found {text!r}") from None


# Recipe overrides with their own flags (any other recipe field: --set key=value).
_RECIPE_FLAGS = {
    "max_train": (int, "train on N examples (a fixed subsample, the same for every seed)"),
    "max_dev": (int, "select the model on the first N English dev examples"),
    "max_eval": (int, "evaluate the first N examples of each language"),
    "epochs": (float, "training epochs"),
    "max_steps": (int, "stop training after N optimiser steps"),
    "learning_rate": (float, "peak learning rate"),
    "batch_size": (_int_or_auto, "examples per optimiser step; auto: the step of the recipe in the largest "
                                 "micro-batches that fit the accelerator (searched, halving on out-of-memory; on "
                                 "CPU the recipe's)"),
    "max_length": (int, "tokens per input (capped by the model's limit)"),
    "eval_every": (int, "evaluate on the English dev set every N steps (and at each epoch end)"),
    "eval_batch_size": (int, "examples per forward pass when predicting and encoding (probes: sentences)"),
}


def add_arguments(parser) -> None:
    parser.add_argument("--config", metavar="FILE",
                        help="a run config (YAML): these flags without the dashes and set: {KEY: VALUE}, merged under "
                             "the command line (docs/run.md)")
    parser.add_argument("--model", metavar="MODEL",
                        help="hub id, local Hugging Face folder or engine checkpoint; a glob ('ckpt/steps/*') or a "
                             "folder of checkpoints (an engine run's steps/) evaluates each, one model key apiece")
    parser.add_argument("--suite", metavar="NAME|FILE",
                        help="suite name (xeval tasks lists them), e.g. xtreme, xtreme-mini, or a suite YAML file")
    parser.add_argument("--tasks", metavar="T1,T2", help="comma-separated tasks of the suite (default: all)")
    parser.add_argument("--langs", metavar="L1,L2", help="comma-separated languages (default: each task's own)")
    parser.add_argument("--seeds", default="1", metavar="N|S1,S2", help="number of seeds (3 = seeds 1,2,3) or a list (1,5,7)")
    parser.add_argument("--data", metavar="DIR|hub", help="data folder (an XTREME download or the shared layout, README 'Data'), or 'hub'")
    parser.add_argument("--out", default="runs", metavar="DIR", help="result store folder (default: runs)")
    parser.add_argument("--export-predictions", metavar="DIR",
                        help="write XTREME's submission layout <DIR>/<task>/test-<lang>.tsv|json")
    parser.add_argument("--export-labels", metavar="DIR",
                        help="write the gold of exactly the evaluated examples in the same layout (for xeval score)")
    parser.add_argument("--overwrite", action="store_true", help="recompute units that are already stored")
    parser.add_argument("--device", default="auto", metavar="DEVICE", help="cpu, cuda, cuda:1, mps or auto (default)")
    parser.add_argument("--revision", metavar="REV", help="hub revision of --model: branch, tag or commit (recorded)")
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"],
                        help="weights and activations (default float32; recorded and part of each unit's identity)")
    parser.add_argument("--trust-remote-code", action="store_true",
                        help="run the Python code a hub model repository ships (off unless given; recorded)")
    parser.add_argument("--layers", metavar="all|K,K", help="probes: 'all' or hidden_states indices like 0,6,12 (default: the card's)")
    parser.add_argument("--plot", metavar="STEM",
                        help="probes: write the layer-sweep figure STEM.png and STEM.pdf (xeval report --plot layers)")
    parser.add_argument("--shots", metavar="K,K",
                        help="--setting few-shot: target-language examples per language, e.g. 10,100 (drawn from "
                             "dev, scored on test)")
    parser.add_argument("--setting", default="zero-shot", choices=["zero-shot", "translate-train", "few-shot"],
                        help="zero-shot (train on English), translate-train (the card's translated training data) or "
                             "few-shot (English, then --shots target-language examples from dev; scored on test)")
    parser.add_argument("--compat", default="none", choices=["none", "xtreme"],
                        help="xtreme: reproduce the published XTREME pipeline's quirks for like-for-like comparison "
                             "(QA answers through get_final_text, seqeval 0.0.x POS chunk types, XLM-R </s></s> in "
                             "tagging windows, dev selection at save steps and on the final weights); recorded in every result")
    parser.add_argument("--threads", type=int, metavar="N", help="torch CPU threads")
    parser.add_argument("--log-to", metavar="KIND:TARGET",
                        help="also send the run's results.json to an experiment tracker: mlflow:DIR (MLflow's local "
                             "file store, offline) or mlflow:URI; needs the extra (pip install 'xeval[mlflow]')")
    parser.add_argument("--mode", default="finetune", choices=["finetune", "probe"],
                        help="finetune (XTREME's protocol, default) or probe: the fine-tuning tasks with the encoder "
                             "frozen and a linear head on cached features of every layer (--layers; default all)")
    parser.add_argument("--no-cache", action="store_true",
                        help="encode without the on-disk encoding cache ($XEVAL_CACHE or <out>/cache)")
    parser.add_argument("--control", metavar="KIND[,KIND]",
                        help="also evaluate a control: random-init = the same architecture and tokenizer with random "
                             "weights (stored as <name>-random-init@<hash>); charngram = TF-IDF over character "
                             "n-grams, no neural network, sentence retrieval only (stored as charngram@<hash>); "
                             "both: random-init,charngram. Reports show them beside the model")
    parser.add_argument("--name", metavar="TAG",
                        help="label this run: its results are stored and shown as TAG@<model hash>, so two settings "
                             "of one model are two rows of a table (default: the model folder's name)")
    parser.add_argument("--control-seed", type=int, default=0, metavar="SEED", help="torch seed of the control's weights (default 0)")
    parser.add_argument("--shard", metavar="I/N",
                        help="compute the I-th of N parts of the run (0-based; e.g. $SLURM_ARRAY_TASK_ID/N), the same "
                             "partition torchrun's ranks use; join the parts with xeval report OUT")
    parser.add_argument("--ddp-finetune", action="store_true",
                        help="under torchrun: train each fine-tune on all ranks together (data parallel: each step's "
                             "micro-batches dealt over the ranks; same numbers as one process up to float noise)")
    group = parser.add_argument_group("recipe overrides (recorded in every result's config)")
    for name, (kind, text) in _RECIPE_FLAGS.items():
        group.add_argument(f"--{name.replace('_', '-')}", type=kind, dest=f"recipe_{name}", help=text,
                           metavar={int: "N", float: "X"}.get(kind, "N|auto"))
    group.add_argument("--limit", metavar="F|N",
                       help="score a fraction of each language's examples, the first ceil(F x n) (0.1 = a tenth, as "
                            "lm-evaluation-harness's --limit; recorded and part of each unit's identity), or with a "
                            "whole N >= 1 the first N (as --max-eval)")
    group.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="any other recipe field, e.g. --set warmup_ratio=0.1 (repeatable)")
    _defaults_unset(parser)


class _Unset:
    """The default of every flag until ``run`` merges a ``--config`` file under what the command line gave."""

    def __repr__(self) -> str:
        return "<unset>"


UNSET = _Unset()
REQUIRED = ("model", "suite")


def _defaults_unset(parser) -> None:
    """Every flag's default becomes ``UNSET`` (its real one kept in ``_flag_defaults``), so ``run`` can tell a
    value given on the command line from one a ``--config`` file may set; ``--set`` keeps its list."""
    defaults, flags = {}, {}
    for action in parser._actions:
        longs = [s for s in action.option_strings if s.startswith("--")]
        if not longs or action.dest in ("help", "config", "set", "quiet", "verbose"):
            continue
        defaults[action.dest] = action.default
        action.default = UNSET
        flags[longs[0][2:].replace("-", "_")] = action
    parser.set_defaults(_flag_defaults=defaults, _flag_actions=flags)


def _merged(args):
    """``args`` with a ``--config`` file's values where the command line gave none, then each flag's default
    (``xeval.run.config_file``); the file's ``set:`` entries before the command line's ``--set``."""
    from xeval.base.errors import UserError
    from xeval.run.config_file import read_run_config

    actions = getattr(args, "_flag_actions", {})
    config = read_run_config(args.config, {*actions, "set"}) if getattr(args, "config", None) else {}
    for name, action in actions.items():
        if getattr(args, action.dest) is not UNSET:
            continue
        if name not in config:
            setattr(args, action.dest, args._flag_defaults[action.dest])
            continue
        value, where = config[name]
        setattr(args, action.dest, _typed(action, value, where, name))
    if "set" in config:
        entries, where = config["set"]
        args.set = [f"{k}={'' if v is None else v}" for k, v in entries.items()] + list(args.set)
    for name in REQUIRED:
        if getattr(args, name, None) in (None, ""):
            raise UserError(f"--{name}: required (on the command line or in --config)")
    return args


def _typed(action, value, where: str, name: str):
    """A config file's value as the flag would have parsed it (its type, its choices); one error naming the line."""
    from xeval.base.errors import ConfigError

    if action.nargs == 0:  # store_true
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected {name}: true or false, found {value!r}")
        return value
    text = ",".join(map(str, value)) if isinstance(value, list) else str(value)
    try:
        parsed = action.type(text) if action.type is not None else text
    except (TypeError, ValueError, argparse.ArgumentTypeError) as err:
        raise ConfigError(f"{where}: {name}: expected {getattr(action.type, '__name__', 'a value')}, found "
                          f"{value!r} ({err})") from None
    if action.choices is not None and parsed not in action.choices:
        raise ConfigError(f"{where}: {name}: expected one of {', '.join(map(str, action.choices))}, found {value!r}")
    return parsed


def _split(text: str | None) -> list[str] | None:
    return [x.strip() for x in text.split(",") if x.strip()] if text else None


def _shots(args) -> list[int] | None:
    """The counts of --shots under --setting few-shot (where --shots is required), else None."""
    from xeval.adapters.transfer.few_shot import parse_shots
    from xeval.base.errors import UserError

    if args.setting != "few-shot":
        if args.shots:
            raise UserError("--shots: only with --setting few-shot")
        return None
    if not args.shots:
        raise UserError("--setting few-shot: give --shots, e.g. --shots 10,100")
    return parse_shots(args.shots)


def run(args) -> int:
    from xeval.base.console import log
    from xeval.base.errors import UserError
    from xeval.report.console_tables import format_tables
    from xeval.report.sweep_summary import sweep_figure, sweep_lines
    from xeval.run import results_file, trackers
    from xeval.run.distributed import detect, parse_shard
    from xeval.run.model_series import expand_models
    from xeval.run.options import RunOptions, parse_limit, parse_seeds
    from xeval.run.runner import RunSummary
    from xeval.run.runner import run as run_suite

    args = _merged(args)
    from xeval.results.controls import check_control

    try:  # an unknown control fails before any model loads
        args.control = check_control(args.control)
    except UserError as err:
        raise UserError(f"--control: {err}") from None
    if not 0 <= args.control_seed < 2**63:  # torch.manual_seed's range
        raise UserError(f"--control-seed: expected an integer in 0..2**63-1, found {args.control_seed}")
    if args.threads is not None and args.threads < 1:
        raise UserError(f"--threads: expected an integer >= 1, found {args.threads}")
    if args.plot:  # the figure is drawn after every unit ran: its place is checked first
        from xeval.base.atomic import check_output

        for suffix in (".png", ".pdf"):
            check_output(args.plot + suffix, "--plot", folder=False)
    recipe = {name: getattr(args, f"recipe_{name}") for name in _RECIPE_FLAGS
              if name != "max_eval" and getattr(args, f"recipe_{name}") is not None}
    auto_batch = recipe.get("batch_size") == "auto"
    if auto_batch:
        del recipe["batch_size"]  # the step stays the recipe's; only the micro-batch is searched
    for item in args.set:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise UserError(f"--set: expected KEY=VALUE, found {item!r}")
        recipe[key.strip()] = value.strip()
    sink = trackers.parse(args.log_to)  # a missing extra fails now, not after the run
    started = results_file.now()
    limit, count = parse_limit(args.limit)
    if count is not None and args.recipe_max_eval is not None and count != args.recipe_max_eval:
        raise UserError(f"--limit {args.limit} and --max-eval {args.recipe_max_eval}: give one of them")
    models = expand_models(args.model)
    if len(models) > 1:
        print(f"xeval run: {len(models)} checkpoints from {args.model}: {', '.join(Path(m).name for m in models)}",
              flush=True)
    opts = RunOptions(
        model=models[0], suite=args.suite, tasks=_split(args.tasks), langs=_split(args.langs),
        seeds=parse_seeds(args.seeds), data=args.data, out=args.out, export_predictions=args.export_predictions,
        export_labels=args.export_labels, overwrite=args.overwrite, device=args.device, layers=args.layers,
        setting=args.setting, recipe=recipe, max_eval=args.recipe_max_eval if count is None else count,
        limit=limit, auto_batch=auto_batch, shots=_shots(args),
        control=args.control, control_seed=args.control_seed, threads=args.threads,
        shard=parse_shard(args.shard), ddp_finetune=args.ddp_finetune, name=args.name,
        revision=args.revision, dtype=args.dtype, trust_remote_code=args.trust_remote_code,
        mode=args.mode, no_cache=args.no_cache, compat=args.compat,
    )
    summary = RunSummary()
    problems: list[str] = []
    records = []
    for model in models:  # each checkpoint its own model key (resume-aware: stored units are skipped)
        records += run_suite(dataclasses.replace(opts, model=model),
                             on_task=lambda task_records: print(f"\n{format_tables(task_records)}", flush=True),
                             summary=summary, problems=problems)
    worker = detect(opts.shard)
    if not worker.leader:
        return 2 if problems else 0  # rank 0 prints the tables of the whole run
    print()
    for line in sweep_lines(records):
        print(line)
    if args.plot:
        print(sweep_figure(records, args.plot))
    print(summary.line())
    written = results_file.write_run(records, dataclasses.replace(opts, model=args.model), summary, started,
                                     ["xeval", *getattr(args, "_argv", [])])
    if written:
        log.info(f"results: {written[0]}")
        try:
            if sink is not None:
                log.info(f"logged to {sink.describe()}: run {sink.log(written[1], written[0])}")
        except UserError as err:  # the tracker failed: the error after the tables, exit 2
            problems.append(str(err))
    if worker.shards > 1:
        print(f"shard {worker.shard}/{worker.shards}: the tables above hold this shard's units; once every shard is "
              f"done, xeval report {args.out} shows the whole run")
    for problem in problems:  # e.g. a training file the data folder lacks: everything else ran
        print(f"xeval run: error: {problem}", file=sys.stderr)
    return 2 if problems else 0
