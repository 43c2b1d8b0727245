#!/usr/bin/env bash
# Ground truth on a machine with an NVIDIA GPU, in about ten minutes, everything into one folder:
#   1. probe memory over a grid (benchmarks/gpu_ground_truth.py: architectures scaled to fit, full and LoRA,
#      checkpointing on and off, two sequence lengths, bf16-mixed and bf16-true) -> cases.yaml, summary.json
#   2. probe profile of one built-in step                                        -> profile.json
#   3. probe comm over all local GPUs (skipped with one GPU: no link to measure)  -> comm.json, links.yaml
#   4. a 2-minute burn-in with NVML                                              -> burnin.db, burnin.json
#   5. validate of the new cases against the estimator                           -> validate.json
# Usage: bash benchmarks/gpu_ground_truth.sh [OUT] [MEMORY_BUDGET_S]
#        SMOKE=1 bash benchmarks/gpu_ground_truth.sh OUT 20    # the same steps on a CPU (tiny models, fake NVML)
# Then copy OUT/cases.yaml to validation/measured/<gpu>-<date>.yaml with environment.json beside it.
# Needs the [probe,burnin] extras (torch, transformers, peft, nvidia-ml-py, prometheus-client). Where the
# package cannot be installed (an image with torch but no network), PYTHONPATH=src runs it from the checkout
# as long as pydantic, PyYAML, typer, rich and numpy are importable: benchmarks/device_wheels.sh fetches the
# pydantic wheels elsewhere, to be carried and installed with --target (see that script).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-ground-truth-$(date +%Y%m%d-%H%M%S)}"
BUDGET="${2:-330}"
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD/src"
TS="python3 -m trainsizer.cli"
if [ "${SMOKE:-0}" = 1 ]; then
  GRID_ARGS="--smoke --device cpu"; PROFILE_ARGS="--cpu --layers 1 --steps 2"; BURNIN_ARGS="--backend fake"
  BURNIN_TIME=10s; PROFILE_JOB="model: {preset: qwen2.5-0.5b}
training: {method: full, precision: bf16-mixed, micro_batch_size: 1, seq_len: 512}"
else
  GRID_ARGS=""; PROFILE_ARGS="--steps 5"; BURNIN_ARGS=""; BURNIN_TIME=2m
  PROFILE_JOB="model: {preset: qwen2.5-1.5b}
training: {method: full, precision: bf16-mixed, micro_batch_size: 2, seq_len: 2048}"
fi
log() { echo "== $(date +%H:%M:%S) $*" | tee -a "$OUT/log.txt"; }

log "environment"
nvidia-smi -q > "$OUT/nvidia-smi.txt" 2>&1 || echo "nvidia-smi failed" >> "$OUT/log.txt"
python3 -m pip list 2>/dev/null > "$OUT/pip-list.txt"

log "probe memory grid (budget ${BUDGET}s)"
# shellcheck disable=SC2086
timeout $((BUDGET + 120)) python3 benchmarks/gpu_ground_truth.py "$OUT" --budget-s "$BUDGET" $GRID_ARGS 2>&1 \
  | tee -a "$OUT/log.txt"

log "probe profile"
cat > "$OUT/profile-job.yaml" <<YAML
$PROFILE_JOB
parallel: {gpus: 1}
hardware: {gpu: h100-sxm5-80gb}
YAML
# shellcheck disable=SC2086
timeout 120 $TS probe profile "$OUT/profile-job.yaml" $PROFILE_ARGS --trace-out "$OUT/profile-trace.json" --json \
  > "$OUT/profile.json" 2>> "$OUT/log.txt" || log "probe profile failed"

GPUS=$(nvidia-smi -L 2>/dev/null | wc -l)
if [ "$GPUS" -ge 2 ]; then
  log "probe comm over $GPUS GPUs"
  timeout 180 $TS probe comm --nproc "$GPUS" --out "$OUT/comm.json" --link-profile "$OUT/links.yaml" \
    2>&1 | tee -a "$OUT/log.txt" || log "probe comm failed"
else
  log "probe comm skipped: $GPUS GPU (a collective needs two ranks on two GPUs)"
fi

log "burn-in $BURNIN_TIME"
# shellcheck disable=SC2086
timeout 200 $TS burnin --duration "$BURNIN_TIME" --interval 1 --db "$OUT/burnin.db" --quiet --json $BURNIN_ARGS \
  > "$OUT/burnin.json" 2>> "$OUT/log.txt" || log "burn-in ended with status $? (1 = FAIL verdict)"

log "validate the new cases"
[ -f "$OUT/cases.yaml" ] && $TS validate "$OUT/cases.yaml" --json > "$OUT/validate.json" 2>> "$OUT/log.txt"
log "done: $OUT"
