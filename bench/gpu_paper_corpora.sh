#!/bin/bash
# One call on a lent GPU machine (docs/results/gpu.md, run 5): kNN-BioEL's recipe (seed paper
# 000, Implementation Details; `bench.gpu_check run --paper`) on BC5CDR-disease (CTD diseases
# 2017, lr 8e-5, 15 documents a step: about 128 mentions) and AskAPatient fold 0 (its own
# concepts, lr 4e-5, 128 rows a step), tau 0.01, p = 4, up to 20 epochs with early stopping
# (patience 3), seeds 0-2, without synonym pre-training: six processes side by side on the one
# GPU (about 2 cores each).
# Needs gpu_bundle/ with bc5cdr and askapatient (`python -m bench project gpu-bundle`), carried.
# Usage: bash bench/gpu_paper_corpora.sh OUT GPU_ID [arguments for every run]
#   PACK=1 (for the device tool, which returns at most 8 files): the runs are written under
#   /tmp/paper_corpora and OUT gets one paper_corpora.tar.gz of them.
#   on CPU, to try the plumbing: bash bench/gpu_paper_corpora.sh /tmp/out -1 --max-epochs 1 \
#     --limit-docs 4 --encoder TINY_MODEL_DIR
set -u
OUT=$1; GPU=$2; shift 2; EXTRA="$*"
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
RUNS=$OUT; [ "${PACK:-0}" = 1 ] && { RUNS=/tmp/paper_corpora; rm -rf "$RUNS"; mkdir -p "$RUNS"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>/dev/null
python3 -c "import torch, transformers, sys; print(sys.version, torch.__version__, transformers.__version__)"
start=$(date +%s)
for s in 0 1 2; do
  for d in bc5cdr askapatient; do
    OMP_NUM_THREADS=2 timeout ${PAPER_TIMEOUT:-290} python3 -m bench.gpu_check run --bundle gpu_bundle \
      --config configs/linker.cfg --dataset $d --paper --gpu-id "$GPU" --seed $s --pretrain-steps 0 \
      --max-epochs 20 --patience 3 --max-train-seconds ${PAPER_TRAIN_S:-200} \
      --output "$RUNS/${d}_s$s" $EXTRA > "$RUNS/${d}_s$s.log" 2>&1 &
  done
done
wait
echo "paper runs: $(( $(date +%s) - start )) s side by side"
for f in "$RUNS"/*/gpu_check.md; do echo "== $f"; sed -n '/^| stage/,/^GPU memory/p' "$f"; done
for f in "$RUNS"/*.log; do grep -q "test Acc@1" "$f" || { echo "== $f did not finish"; tail -5 "$f"; }; done
[ "$RUNS" != "$OUT" ] && tar czf "$OUT/paper_corpora.tar.gz" -C "$(dirname "$RUNS")" "$(basename "$RUNS")"
exit 0
