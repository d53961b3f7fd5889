#!/bin/bash
# One call on a lent GPU machine (docs/results/gpu.md, run 3): the prepared check
# (`gpu-check`) alone, then kNN-BioEL's recipe at batch 128 for seeds 1 and 2, with and
# without synonym pre-training, four processes side by side on the one GPU (each uses under
# 5 GiB; the steps are host-bound, so four share 16 cores well). Seed 0 of the pair is run 2.
# Needs gpu_bundle/ (`python -m bench project gpu-bundle`), carried to the machine.
# Usage: bash bench/gpu_paper_seeds.sh OUT GPU_ID [arguments for every run]
#   on CPU, to try the plumbing: bash bench/gpu_paper_seeds.sh /tmp/out -1 --max-epochs 1 \
#     --pretrain-steps 2 --limit-docs 4   (the paper runs then stop at PAPER_TIMEOUT)
set -u
OUT=$1; GPU=$2; shift 2; EXTRA="$*"
export PYTHONUNBUFFERED=1
mkdir -p "$OUT" /tmp/paper
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>/dev/null
python3 -c "import torch, transformers, sys; print(sys.version, torch.__version__, transformers.__version__)"
python3 -m bench.gpu_check run --bundle gpu_bundle --config configs/linker.cfg --gpu-id "$GPU" \
  --output "$OUT/check" $EXTRA 2>&1 | grep -v Warning | tail -25
P="--paper --max-epochs 20 --patience 3 --max-train-seconds ${PAPER_TRAIN_S:-200}"
start=$(date +%s)
for s in 1 2; do
  OMP_NUM_THREADS=4 timeout ${PAPER_TIMEOUT:-330} python3 -m bench.gpu_check run --bundle gpu_bundle --config configs/linker.cfg \
    --gpu-id "$GPU" --seed $s $P --output /tmp/paper/pre_s$s $EXTRA > /tmp/paper/pre_s$s.log 2>&1 &
  OMP_NUM_THREADS=4 timeout ${PAPER_TIMEOUT:-330} python3 -m bench.gpu_check run --bundle gpu_bundle --config configs/linker.cfg \
    --gpu-id "$GPU" --seed $s --pretrain-steps 0 $P --output /tmp/paper/nopre_s$s $EXTRA > /tmp/paper/nopre_s$s.log 2>&1 &
done
wait
echo "paper runs: $(( $(date +%s) - start )) s side by side"
for f in /tmp/paper/*/gpu_check.md; do echo "== $f"; cat "$f"; done
tar czf "$OUT/paper_b128_seeds12.tar.gz" -C /tmp paper
