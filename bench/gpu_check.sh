#!/usr/bin/env bash
# One prepared check of xeval on a CUDA machine (under 10 minutes), ending with a compact summary:
#   1. engine: the base-size (12 x 768, 64k vocabulary) MLM training step: tokens/s, and MFU against the bf16
#      matmul peak measured in the same run (bench/engine_throughput.py; fp32 and bf16 autocast);
#   2. fine-tuning a base-size encoder for a few hundred steps (UD-POS, or the synthetic tagging task), fp32 vs
#      bf16 (recipe precision=bf16): the numbers and the speed of each;
#   3. an all-layer probe sweep (Tatoeba: every hidden state from one forward pass per batch);
#   4. `xeval run --device cuda` end to end over every task type on a small sample;
#   5. torchrun with 2 ranks sharing the device: the partition of work items gives the one-process records.
#
# usage: bench/gpu_check.sh [--dry-run] [--model DIR] [--data DIR] [--work DIR]
#   --model DIR  a base-size encoder folder fetched beforehand (e.g. xlm-roberta-base); default: a random-init
#                12 x 768 BERT built here (its numbers are no model's quality, only precision and speed checks)
#   --data DIR   the ../shared/data layout (default: $XEVAL_DATA); without one, a synthetic world is generated
#   --work DIR   where logs and stores go (default: a new folder under /tmp); printed at the end
#   --dry-run    the same steps on the CPU at toy sizes, in a few minutes: checks the script, not a GPU
set -uo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DRY=0; MODEL=""; DATA="${XEVAL_DATA:-}"; WORK=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) DRY=1 ;;
    --model) MODEL="$2"; shift ;;
    --data) DATA="$2"; shift ;;
    --work) WORK="$2"; shift ;;
    *) echo "bench/gpu_check.sh: unknown option $1 (expected --dry-run, --model, --data, --work)" >&2; exit 2 ;;
  esac
  shift
done
WORK="${WORK:-$(mktemp -d /tmp/xeval-gpu-check.XXXXXX)}"
mkdir -p "$WORK"
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
PY="${PYTHON:-python}"
cd "$REPO"

if [ "$DRY" = 1 ]; then
  DEVICE=cpu; SIZE=toy; export OMP_NUM_THREADS=1
  ENGINE=(--layers 2 --hidden 64 --heads 2 --vocab 2000 --batch 4 --seq 64 --steps 1 --repeats 1 --device cpu)
  FT_STEPS=10; FT_TRAIN=64; EVAL=16; T_ENGINE=240; T_FT=240; T_PROBE=120; T_E2E=300; T_RANKS=180
else
  DEVICE=cuda; SIZE=base
  ENGINE=(--layers 12 --hidden 768 --heads 12 --vocab 64000 --batch 32 --seq 512 --steps 3 --repeats 3 --device cuda)
  FT_STEPS=300; FT_TRAIN=9600; EVAL=500; T_ENGINE=180; T_FT=100; T_PROBE=60; T_E2E=120; T_RANKS=60
fi

declare -A STATUS
run_step() {  # run_step NAME SECONDS command...: log to $WORK/NAME.log, remember "ok 12 s" / "failed (rc) 12 s"
  local name="$1" limit="$2"; shift 2
  local start=$SECONDS
  echo "== $name: $*" >&2
  timeout "$limit" "$@" > "$WORK/$name.log" 2>&1
  local rc=$?
  local took=$((SECONDS - start))
  case $rc in
    0) STATUS[$name]="ok, $took s" ;;
    124) STATUS[$name]="TIMED OUT after $limit s" ;;
    *) STATUS[$name]="FAILED (exit $rc) after $took s; see $WORK/$name.log" ;;
  esac
  echo "   ${STATUS[$name]}" >&2
}

"$PY" - > "$WORK/device.txt" <<EOF
import torch
if "$DEVICE" == "cuda":
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA device visible to torch " + torch.__version__)
    p = torch.cuda.get_device_properties(0)
    print(f"{p.name}, {p.total_memory / 2**30:.0f} GiB, {torch.cuda.device_count()} device(s), torch {torch.__version__}, CUDA {torch.version.cuda}")
else:
    print(f"CPU (--dry-run), torch {torch.__version__}")
EOF
[ $? = 0 ] || { cat "$WORK/device.txt" >&2; exit 1; }

# data: the shared layout when there is one, else a synthetic world generated here (no network needed)
if [ -n "$DATA" ] && [ -d "$DATA/udpos_xtreme" ]; then
  SUITE=xtreme-mini; FT_TASK=udpos; FT_LANGS=en,de,fr,es,ar,zh,hi,ru; PROBE=tatoeba; PROBE_LANGS=de,fr,ja,sw,zh,ar
  E2E_TASKS=udpos,panx,xnli,pawsx,xquad,mlqa,tydiqa,tatoeba,alignment; E2E_LANGS=en,de,zh
else
  DATA="$WORK/world"
  run_step world 120 "$PY" -m xeval synth --out "$DATA"
  SUITE=synthetic; FT_TASK=synth_udpos; FT_LANGS=""; PROBE=synth_tatoeba; PROBE_LANGS=""
  E2E_TASKS=""; E2E_LANGS=""
fi
LANGS() { [ -n "$1" ] && echo --langs "$1"; }

# the encoder: given, or a random-init one of the base shape with a vocabulary from the training text
if [ -z "$MODEL" ]; then
  MODEL="$WORK/encoder"
  run_step model 300 "$PY" bench/gpu_check.py model --out "$MODEL" --suite "$SUITE" --task "$FT_TASK" --data "$DATA" --size "$SIZE"
fi

run_step engine "$T_ENGINE" "$PY" bench/engine_throughput.py "${ENGINE[@]}" --no-recipes

FT=(--model "$MODEL" --suite "$SUITE" --tasks "$FT_TASK" $(LANGS "$FT_LANGS") --data "$DATA" --device "$DEVICE"
    --max-train "$FT_TRAIN" --max-steps "$FT_STEPS" --max-dev 200 --max-eval "$EVAL" --batch-size 32
    --set per_device_batch_size=32 --set learning_rate=5e-5 --set select=last -q)
for precision in fp32 bf16; do
  run_step "ft-$precision" "$T_FT" "$PY" -m xeval run "${FT[@]}" --set precision=$precision --out "$WORK/ft-$precision"
done

PROBE_RUN=(--model "$MODEL" --suite "$SUITE" --tasks "$PROBE" $(LANGS "$PROBE_LANGS") --data "$DATA" --layers all
           --max-eval "$EVAL" --device "$DEVICE" -q)
run_step probe "$T_PROBE" "$PY" -m xeval run "${PROBE_RUN[@]}" --out "$WORK/probe"

run_step e2e "$T_E2E" "$PY" -m xeval run --model "$MODEL" --suite "$SUITE" ${E2E_TASKS:+--tasks "$E2E_TASKS"} \
  $(LANGS "$E2E_LANGS") --data "$DATA" --device "$DEVICE" --max-train 64 --max-dev 16 --max-eval 32 --epochs 1 \
  --batch-size 16 -q --out "$WORK/e2e"

run_step torchrun "$T_RANKS" "$PY" -m torch.distributed.run --standalone --nproc_per_node 2 -m xeval run \
  "${PROBE_RUN[@]}" --out "$WORK/torchrun"

"$PY" - "$WORK" <<EOF
import json, sys
json.dump({$(for k in "${!STATUS[@]}"; do printf '"%s": "%s", ' "$k" "${STATUS[$k]}"; done)}, open(sys.argv[1] + "/status.json", "w"))
EOF
echo
echo "xeval GPU check$( [ "$DRY" = 1 ] && echo ' (--dry-run: CPU, toy sizes)'): model $MODEL, suite $SUITE, data $DATA"
"$PY" bench/gpu_check.py summary --work "$WORK"
echo "logs and stores: $WORK"
failed=0
for k in "${!STATUS[@]}"; do case "${STATUS[$k]}" in ok*) ;; *) failed=1 ;; esac; done
exit $failed
