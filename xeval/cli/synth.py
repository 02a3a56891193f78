"""``python -m xeval synth``: generate a synthetic multilingual world (corpora, tasks, cards) under --out."""

from __future__ import annotations

import time
from dataclasses import fields

from xeval.base.errors import UserError
from xeval.cli._args import option
from xeval.data.synth import MANIFEST, Sizes, WorldConfig, generate_world

NAME = "synth"
HELP = "generate a deterministic synthetic multilingual world (corpora, tasks, gold alignments, cards)"


def _list(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _fractions(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(part) for part in _list(text))
    except ValueError:
        raise UserError(f"--overlap: expected fractions like 0.5 or 0,0.5,1, found {text!r}") from None


def add_arguments(parser) -> None:
    parser.add_argument("--out", required=True, metavar="DIR", help="folder to write the world into (empty, new, or an earlier world)")
    option(parser, "--num-langs", old=("--languages",), type=int, default=4, metavar="N", dest="languages",
           help="number of languages, the base language qaa included")
    parser.add_argument("--overlap", default="0.5", metavar="F[,F]",
                        help="vocabulary overlap of each derived language with the base (fraction of lexemes; "
                             "0 = disjoint scripts); a comma list is cycled over the derived languages")
    parser.add_argument("--order", default="SVO,SOV,VSO", metavar="ORDER[,ORDER]",
                        help="word order per language (SVO|SOV|VSO), cycled, base first; SOV uses postpositions")
    parser.add_argument("--adj", default="before,after", metavar="POS[,POS]", help="adjective before|after the noun, cycled, base first")
    parser.add_argument("--morph", default="plural,plural+case", metavar="M[,M]",
                        help="suffixes per language (none|plural|case|plural+case), cycled, base first")
    parser.add_argument("--seed", type=int, default=0, metavar="SEED", help="seed of the world (default 0)")
    for f in fields(Sizes):
        parser.add_argument(f"--{f.name}", type=int, default=f.default, metavar="N",
                            help=f"size: {f.name} (default {f.default})")
    parser.add_argument("--force", action="store_true", help="write into a non-empty folder that is not a world")


def run(args) -> int:
    sizes = Sizes(**{f.name: getattr(args, f.name) for f in fields(Sizes)})
    config = WorldConfig(seed=args.seed, languages=args.languages, overlap=_fractions(args.overlap),
                         order=tuple(s.upper() for s in _list(args.order)), adj=_list(args.adj),
                         morph=_list(args.morph), sizes=sizes)  # fmt: skip
    start = time.perf_counter()
    manifest = generate_world(args.out, config, force=args.force)
    seconds = time.perf_counter() - start
    total = sum(item["bytes"] for item in manifest["files"])
    print(f"synthetic world (seed {config.seed}) in {args.out}: {len(manifest['files'])} files, "
          f"{total / 1e6:.1f} MB, {seconds:.1f} s")  # fmt: skip
    print(f"{'lang':<5} {'role':<8} {'script':<9} {'order':<5} {'adj':<7} {'morphology':<12} overlap")
    for lang in manifest["languages"]:
        print(f"{lang['code']:<5} {lang['role']:<8} {lang['script']:<9} {lang['order']:<5} {lang['adjective']:<7} "
              f"{lang['morphology']:<12} {lang['overlap']:.2f}")  # fmt: skip
    print(f"manifest: {args.out}/{MANIFEST}; cards: {args.out}/tasks/ (suite 'synthetic')")
    return 0
