"""What ``--compat xtreme``'s QA answer text costs: the oracle (each question's gold span as the prediction, cut to
the tokens that cover it) scored through character offsets (xeval's default) and through XTREME's
``get_final_text`` (``xeval.cards.compat``), with an XLM-R-style SentencePiece tokenizer (unigram, ``▁`` word marks,
byte fallback off).

The tokenizer: ``--tokenizer DIR`` (XLM-R's own: multilingual-e5-small's folder, ``tests/helpers/e5.py``, has
XLM-R's 250k vocabulary -- the published pipeline's figures), or, without it, one trained here with the
``tokenizers`` library on general-domain pre-training text of ``../shared/data/parallel/general`` (never evaluation
text): both sides of en-zh, en-de, en-es, en-ar, en-hi, en-vi (``--lines`` per pair), vocabulary ``--vocab`` (for
zh and de it gave the same figures as XLM-R's within a point: the loss is the whitespace words, not the vocabulary).

    python bench/compat_oracle.py [--data ../shared/data] [--lines 40000] [--vocab 32000] [--tokenizer DIR] [--all]

``--all`` scores every XQuAD language, MLQA's dev sets and TyDiQA-GoldP's dev sets (XTREME's TyDiQA test), not only
zh and de.
"""

from __future__ import annotations

import argparse
import gzip
import sys
import time
from pathlib import Path

PAIRS = ("zh", "de", "es", "ar", "hi", "vi")
TASKS = (("xquad", "zh", "xquad/xquad.zh.json"), ("mlqa", "zh", "mlqa_v1/dev/dev-context-zh-question-zh.json"),
         ("xquad", "de", "xquad/xquad.de.json"), ("mlqa", "de", "mlqa_v1/dev/dev-context-de-question-de.json"))
XQUAD_LANGS = ("ar", "de", "el", "en", "es", "hi", "ro", "ru", "th", "tr", "vi", "zh")
MLQA_LANGS = ("ar", "de", "en", "es", "hi", "vi", "zh")
TYDIQA_LANGS = ("en", "ar", "bn", "fi", "id", "ko", "ru", "sw", "te")
EVERY_SET = tuple(("xquad", lang, f"xquad/xquad.{lang}.json") for lang in XQUAD_LANGS) + tuple(
    ("mlqa", lang, f"mlqa_v1/dev/dev-context-{lang}-question-{lang}.json") for lang in MLQA_LANGS) + tuple(
    ("tydiqa", lang, f"tydiqa_goldp_v1.1/tydiqa-goldp-v1.1-dev/tydiqa.goldp.{lang}.dev.json") for lang in TYDIQA_LANGS)


def train_tokenizer(data: Path, lines: int, vocab: int, out: Path):
    """An XLM-R-style SentencePiece unigram tokenizer (``<s> </s> <pad> <unk> <mask>``), saved to ``out``."""
    from tokenizers import SentencePieceUnigramTokenizer
    from transformers import PreTrainedTokenizerFast

    def texts():
        for lang in PAIRS:
            with gzip.open(data / "parallel" / "general" / f"en-{lang}.tsv.gz", "rt", encoding="utf-8") as handle:
                for i, line in enumerate(handle):
                    if i >= lines:
                        break
                    fields = line.rstrip("\n").split("\t")
                    yield from fields[:2]

    spm = SentencePieceUnigramTokenizer(replacement="▁", add_prefix_space=True)
    spm.train_from_iterator(texts(), vocab_size=vocab, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
                            unk_token="<unk>", show_progress=False)
    from tokenizers.processors import TemplateProcessing

    spm._tokenizer.post_processor = TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", spm.token_to_id("<s>")), ("</s>", spm.token_to_id("</s>"))])
    fast = PreTrainedTokenizerFast(tokenizer_object=spm._tokenizer, bos_token="<s>", eos_token="</s>",
                                   sep_token="</s>", cls_token="<s>", unk_token="<unk>", pad_token="<pad>",
                                   mask_token="<mask>")
    fast.save_pretrained(out)
    return fast


def oracle(tokenizer, examples, metric: str, lang: str) -> dict[str, float]:
    """EM / F1 of the gold spans as predictions, answer text through offsets and through get_final_text."""
    from xeval.cards.compat import xtreme_answer
    from xeval.metrics import gold_answers, mlqa_scores, squad_scores

    by_offsets, by_xtreme = {}, {}
    for ex in examples:
        answer = ex.answers[0]
        start = answer.start if ex.context[answer.start:answer.start + len(answer.text)] == answer.text \
            else ex.context.find(answer.text)
        end = start + len(answer.text)
        enc = tokenizer(ex.context, add_special_tokens=False, return_offsets_mapping=True)
        covering = [t for t, (a, b) in enumerate(enc["offset_mapping"]) if b > start and a < end and b > a]
        s, e = covering[0], covering[-1]
        a, b = enc["offset_mapping"][s][0], enc["offset_mapping"][e][1]
        by_offsets[ex.id] = ex.context[a:b]
        by_xtreme[ex.id] = xtreme_answer(tokenizer, enc["input_ids"][s:e + 1], ex.context, a, b)
    gold = gold_answers(examples)
    score = (lambda p: mlqa_scores(p, gold, lang)) if metric == "mlqa" else (lambda p: squad_scores(p, gold))
    return {"offsets": score(by_offsets), "get_final_text": score(by_xtreme)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    parser.add_argument("--lines", type=int, default=40000, help="lines per language pair for the tokenizer")
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--tokenizer", type=Path, help="an existing (XLM-R) tokenizer folder instead of training one")
    parser.add_argument("--all", action="store_true", help="every XQuAD language, MLQA and TyDiQA-GoldP dev set (default: zh, de)")
    args = parser.parse_args(argv)
    from transformers import AutoTokenizer

    from xeval.data.squad_json import read_squad

    if args.tokenizer:
        tokenizer, what = AutoTokenizer.from_pretrained(args.tokenizer), str(args.tokenizer)
    else:
        started = time.perf_counter()
        out = Path("/tmp") / f"xeval-spm-{args.vocab}-{args.lines}"
        tokenizer = train_tokenizer(args.data, args.lines, args.vocab, out)
        what = (f"SentencePiece unigram, {len(tokenizer)} pieces, trained on {args.lines} lines x 2 sides of en-"
                f"{{{','.join(PAIRS)}}} (parallel/general) in {time.perf_counter() - started:.0f} s")
    print(f"tokenizer: {what}")
    print("| set | questions | EM offsets | EM get_final_text | F1 offsets | F1 get_final_text |")
    print("|---|---:|---:|---:|---:|---:|")
    for task, lang, rel in EVERY_SET if args.all else TASKS:
        examples = read_squad(args.data / rel, lang, "test")
        found = oracle(tokenizer, examples, "mlqa" if task == "mlqa" else "squad", lang)
        off, xt = found["offsets"], found["get_final_text"]
        print(f"| {task}-{lang} | {len(examples)} | {off['exact_match']:.1f} | {xt['exact_match']:.1f} | "
              f"{off['f1']:.1f} | {xt['f1']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
