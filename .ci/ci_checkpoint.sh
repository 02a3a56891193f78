#!/usr/bin/env bash
# The CI checkpoint's quality gate: build a tiny checkpoint on the CPU, evaluate it on the probes and a subsampled
# xtreme-mini, write its report, and fail (exit 1) when any number fell below reports/baselines/ci-tiny.json.
#
#   .ci/ci_checkpoint.sh             gate: compare with the committed baseline (what .ci/run calls)
#   .ci/ci_checkpoint.sh --refresh   rewrite the baseline and reports/ci-tiny/ on purpose (see reports/README.md)
#
# Environment: XEVAL_DATA (default ../shared/data), CI_OUT (default .ci-out/ci-tiny), PYTHON (default python),
# CI_TOLERANCE (default 0: everything here is seeded and single-threaded, so an unchanged recipe reproduces
# every number exactly; a tolerance would only hide small regressions), CI_TOLERANCE_EXAMPLES (default 0; 1 for a
# baseline written on another machine: each number may move by one of its examples), CI_THREADS (default 1: torch threads of
# pre-training and evaluation) and CI_DTYPE (default float32: the evaluation's --dtype). The last two exist to
# measure how far numbers drift across thread counts and precisions (docs/gate.md "Tolerance across machines").
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python}
OUT=${CI_OUT:-.ci-out/ci-tiny}
DATA=${XEVAL_DATA:-../shared/data}
TOLERANCE=${CI_TOLERANCE:-0}
TOLERANCE_EXAMPLES=${CI_TOLERANCE_EXAMPLES:-0}  # 1: a baseline from another machine (docs/gate.md)
THREADS=${CI_THREADS:-1}
DTYPE=${CI_DTYPE:-float32}
BASELINE=reports/baselines/ci-tiny.json
export PYTHONHASHSEED=0 OMP_NUM_THREADS=$THREADS MKL_NUM_THREADS=$THREADS TOKENIZERS_PARALLELISM=false
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1

rm -rf "$OUT"
mkdir -p "$OUT"
SECONDS=0

# 1. The checkpoint: the engine's XLM preset (MLM + TLM) at its CI size "micro" (seeded, one thread, 400 steps),
#    with 4 layers instead of 2 so the layer sweep has five points. The tokenizer is the committed one:
#    tokenizers' BPE/Unigram trainers are not deterministic across processes (hash-map order; huggingface/tokenizers
#    #1794), while training from a fixed tokenizer is bit-exact. --refresh trains a new one only if it is missing.
TOKENIZER=reports/ci-tiny/tokenizer
TOK=()
[ -f "$TOKENIZER/tokenizer.json" ] && TOK=(--set "tokenizer.path=$TOKENIZER")
$PY -m xeval pretrain --config xlm --size micro --set model.num_hidden_layers=4 --set "train.threads=$THREADS" \
    "${TOK[@]}" --data "$DATA" \
    --out "$OUT/ci-tiny" > "$OUT/pretrain.log"
echo "ci-checkpoint: checkpoint ready after ${SECONDS}s"

# 2. Evaluate. One thread and fixed seeds make every number reproducible on the same versions.
RUN=($PY -m xeval run --model "$OUT/ci-tiny" --data "$DATA" --out "$OUT/runs" --device cpu --threads "$THREADS"
     --dtype "$DTYPE")
# The seven fine-tuning tasks of xtreme-mini, subsampled (a suite language missing from --langs is skipped, e.g.
# PAWS-X has no en/ar here). Tagging trains long enough to land far above chance (1000 English sentences, two
# epochs, a learning rate for a tiny model), so a broken label alignment or metric shows as a large drop; the other
# tasks: 200 English training examples, one epoch, 50 examples per language evaluated.
"${RUN[@]}" --suite xtreme-mini --tasks udpos,panx --langs en,de,es,zh,ar \
    --max-train 1000 --max-eval 100 --epochs 2 --learning-rate 5e-4 > "$OUT/run-tagging.log"
"${RUN[@]}" --suite xtreme-mini --tasks xnli,pawsx,xquad,mlqa,tydiqa --langs en,de,es,zh,ar \
    --max-train 200 --max-eval 50 --epochs 1 > "$OUT/run-transfer.log"
# Probes at every layer: Tatoeba (5 languages, 200 pairs each as xtreme-mini subsamples), word alignment (AER).
"${RUN[@]}" --suite xtreme-mini --tasks tatoeba --langs de,es,fr,zh,ar --layers all > "$OUT/run-tatoeba.log"
"${RUN[@]}" --suite xtreme-mini --tasks alignment --layers all > "$OUT/run-alignment.log"
echo "ci-checkpoint: evaluation done after ${SECONDS}s"

# 3. Report (Markdown tables + layer sweep) and the gate.
$PY -m xeval report "$OUT/runs" --title "CI checkpoint (ci-tiny)" --out "$OUT/report.md" \
    --plot layers --plot languages --figures "$OUT"
if [ "${1:-}" = "--refresh" ]; then
    $PY -m xeval report "$OUT/runs" --format baseline --out "$BASELINE"
    mkdir -p reports/ci-tiny "$TOKENIZER"
    [ -f "$TOKENIZER/tokenizer.json" ] || cp "$OUT"/ci-tiny/{tokenizer.json,tokenizer_config.json,special_tokens_map.json} "$TOKENIZER/"
    cp "$OUT/report.md" reports/ci-tiny/README.md
    cp "$OUT/layers.png" "$OUT/languages.png" reports/ci-tiny/
    echo "ci-checkpoint: refreshed $BASELINE and reports/ci-tiny/ (review the diff, then commit both)"
else
    $PY -m xeval compare --baseline "$BASELINE" --current "$OUT/runs" --tolerance "$TOLERANCE" \
        --tolerance-examples "$TOLERANCE_EXAMPLES" \
        --out "$OUT/compare.md"
fi
echo "ci-checkpoint: done in ${SECONDS}s"
