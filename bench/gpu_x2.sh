#!/usr/bin/env bash
# One call on nvidia-h200-x2 for issues 3, 5 and 9 (device tool, carry .device-wheels):
#   A (parallel): GPU 0 the GPU tests, GPU 1 the offline suite;  B: the 2-GPU test and bench/scale.py;
#   C: bench/timing_fidelity.py --quick alone on GPU 0.  Logs and JSON under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/kernelevo-out}
source bench/gpu_env.sh
PYT="python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short"
echo "=== A ($(date +%T))"
(CUDA_VISIBLE_DEVICES=0 timeout 240 $PYT --timeout 200 tests/gpu/test_verify_gpu.py tests/gpu/test_cuda_gpu.py \
   tests/gpu/test_timing_gpu.py > "$OUT/gputests.log" 2>&1; echo "gputests rc=$?") &
(CUDA_VISIBLE_DEVICES=1 timeout 240 python3 bench/offline_suite.py --tune-evals 8 --out "$OUT/offline_suite.json" \
   > "$OUT/offline_suite.txt" 2>&1; echo "offline_suite rc=$?") &
wait
grep -E "^FAILED|passed|failed" "$OUT/gputests.log" | tail -15
grep -vE "^done |^\s*$" "$OUT/offline_suite.txt" | tail -16
echo "=== B ($(date +%T))"
timeout 60 $PYT --timeout 55 tests/gpu/test_multi_gpu.py > "$OUT/multi_gpu.log" 2>&1; tail -3 "$OUT/multi_gpu.log"
timeout 110 python3 bench/scale.py --per-gpu 16 --out "$OUT/scale.json" 2>&1 | tail -12
echo "=== C ($(date +%T))"
CUDA_VISIBLE_DEVICES=0 timeout 130 python3 bench/timing_fidelity.py --quick --max-time 3 --out "$OUT/timing_fidelity.json" 2>&1 | tail -14
echo "=== done ($(date +%T))"
