"""``xeval align score``: AER, precision and recall of a word alignment against a gold standard."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from xeval.cli._args import option

NAME = "align"
HELP = "word alignment: score Pharaoh-format alignments by AER (Och & Ney)"


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="align_verb", metavar="SUBVERB", required=True)
    score = sub.add_parser(
        "score",
        help="precision, recall and AER of predicted links against gold (corpus-level sums)",
        description="Precision |A∩P|/|A|, recall |A∩S|/|S| and AER 1-(|A∩S|+|A∩P|)/(|A|+|S|) with A the predicted, "
                    "S the sure ('i-j') and P the sure and possible ('ipj') gold links, summed over the corpus.",
    )
    score.add_argument("--gold", required=True, type=Path, metavar="FILE", help="gold links, one line per sentence pair")
    option(score, "--predictions", old=("--pred",), required=True, type=Path, metavar="FILE",
           help="predicted links, one line per sentence pair")
    score.add_argument("--gold-base", type=int, choices=(0, 1), default=1,
                       help="index base of the gold file (default 1, as the usual gold standards)")
    option(score, "--predictions-base", old=("--pred-base",), type=int, choices=(0, 1), default=0,
                       help="index base of the predictions (default 0, as awesome-align/SimAlign write them)")
    score.add_argument("--text", type=Path, default=None, metavar="FILE",
                       help="the 'src ||| tgt' sentence pairs, to check every link against the sentence lengths "
                            "(default: <gold without extension>.src-tgt when that file exists)")
    score.add_argument("--skip-out-of-range", action="store_true",
                       help="drop links outside a sentence with a warning instead of failing")
    score.add_argument("--json", action="store_true", help="print one JSON object instead of a table")


def run(args) -> int:
    from xeval.metrics.aer_files import score_files

    text = args.text
    if text is None:
        sibling = args.gold.with_suffix(".src-tgt")
        if sibling.is_file() and sibling != args.gold:
            text = sibling
            print(f"note: checking link ranges against {sibling} (--text to choose another file)", file=sys.stderr)
        else:
            print("note: no --text given: links are not checked against sentence lengths", file=sys.stderr)
    result = score_files(args.gold, args.predictions, text=text, gold_base=args.gold_base,
                         pred_base=args.predictions_base,
                         skip_out_of_range=args.skip_out_of_range)
    metrics = result.as_metrics()
    if args.json:
        print(json.dumps({**{k: round(v, 4) for k, v in metrics.items()}, **result.counts(),
                          "gold": str(args.gold), "predictions": str(args.predictions), "gold_base": args.gold_base,
                          "predictions_base": args.predictions_base}, ensure_ascii=False))
        return 0
    print(f"gold        {args.gold} ({args.gold_base}-based, {result.n_sentences} sentence pairs, "
          f"{result.n_sure} sure links)")
    print(f"prediction  {args.predictions} ({args.predictions_base}-based, {result.n_predicted} links)")
    print(f"precision   {metrics['precision']:.2f}")
    print(f"recall      {metrics['recall']:.2f}")
    print(f"AER         {metrics['aer']:.2f}")
    return 0
