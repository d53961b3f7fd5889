#!/bin/bash
# One call on a lent GPU machine: kNN-BioEL's recipe at full length on one corpus and seed (up to
# 20 epochs, patience 3, no time guard), and the best epoch's encoder brought back in float16 as
# parts of at most 15 MiB (the device tool returns at most 8 files, 16 MiB each), so the whole
# pipeline around it (exact shortcut, kNN datastore, NIL stage) can be built, tuned and evaluated
# on CPU: docs/results/gpu.md, "A GPU-trained encoder in the CPU pipeline".
# Needs gpu_bundle/ (`python -m bench project gpu-bundle`), carried.
# Usage: bash bench/gpu_paper_model.sh OUT GPU_ID DATASET SEED [arguments for the run]
#   DATASET: ncbi, bc5cdr or askapatient (`--paper`: lr 1e-4, 8e-5, 4e-5; about 128 mentions a step)
# Back here: cat OUT/model.tar.part-* | tar xf - -C training/encoders/gpu_paper_DATASET_sSEED
set -euo pipefail
OUT=$1; GPU=$2; DATASET=$3; SEED=$4; shift 4; EXTRA="$*"
export PYTHONUNBUFFERED=1
mkdir -p "$OUT"
rm -rf /tmp/paper_model && mkdir -p /tmp/paper_model
python3 -m bench.gpu_check run --bundle gpu_bundle --config configs/linker.cfg --dataset "$DATASET" \
  --paper --gpu-id "$GPU" --seed "$SEED" --pretrain-steps 0 --max-epochs 20 --patience 3 \
  --output "$OUT/run" --save-model /tmp/paper_model $EXTRA 2>&1 | grep -v Warning
tar cf - -C /tmp/paper_model . | split -b 15m - "$OUT/model.tar.part-"
ls -la "$OUT" "$OUT/run"
