"""``python -m xeval tokenizer train --corpus DIR|FILE ... --vocab-size N --out DIR``: a shared multilingual
subword vocabulary (Unigram or BPE, byte fallback, XLM-R special tokens) from a language-balanced sample."""

from __future__ import annotations

import argparse

from xeval.cli._args import Deprecated, comma_list

NAME = "tokenizer"
HELP = "train a multilingual subword tokenizer (tokenizer train)"


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="SUBVERB", required=True)
    train = sub.add_parser("train", help="train on the pre-training corpora and report per-language coverage")
    train.add_argument("--corpus", action="append", required=True, metavar="DIR|FILE",
                       help="shared data root (with parallel/ and monolingual/), or a text file (one line a "
                            "sentence, optionally gzipped; the language is taken from the name, e.g. de.txt.gz); "
                            "repeatable")  # fmt: skip
    train.add_argument("--vocab-size", type=int, default=16000, metavar="N", help="vocabulary size (default 16000)")
    train.add_argument("--model", choices=("unigram", "bpe"), default="unigram",
                       help="subword model (default unigram)")
    train.add_argument("--sample-lines", type=int, default=200_000, metavar="N",
                       help="size of the balanced training sample (default 200000)")
    train.add_argument("--alpha", type=float, default=0.7, metavar="A",
                       help="language sampling exponent: p_j ∝ m_j^alpha (default 0.7)")
    train.add_argument("--max-lines", type=int, default=None, metavar="N",
                       help="read at most this many lines per language")
    train.add_argument("--langs", type=comma_list, default=None, metavar="L1,L2",
                       help="keep only these languages (comma-separated codes)")
    train.add_argument("--languages", nargs="*", dest="old_languages", action=Deprecated, new="--langs",
                       help=argparse.SUPPRESS)
    train.add_argument("--seed", type=int, default=0, help="sampling seed (default 0)")
    train.add_argument("--out", required=True, metavar="DIR", help="folder for the tokenizer files")


def run(args) -> int:
    from xeval.base.atomic import check_output
    from xeval.engine.tokenizer import build_tokenizer

    check_output(args.out, "--out", folder=True)

    build_tokenizer(args.corpus, args.out, vocab_size=args.vocab_size, model=args.model,
                    sample_lines=args.sample_lines, alpha=args.alpha, max_lines=args.max_lines,
                    languages=args.langs or args.old_languages, seed=args.seed)  # fmt: skip
    return 0
