#!/usr/bin/env bash
# What is left to show on the GPU for issues 3, 5 and 9: two calls on nvidia-h200-x2 (device tool,
# carry .device-wheels), about 9 and 6 minutes. Logs and JSON under $OUT.
#   bash bench/gpu_acceptance.sh 1   A (side by side): GPU 0 tests/gpu/test_verify_gpu.py, GPU 1 the offline
#                                    suite;  B: bench/scale.py on both;  C: timing fidelity alone on GPU 0
#   bash bench/gpu_acceptance.sh 2   the other GPU tests (timing, CUDA fast path, two GPUs), then bench/faults.py
set -uo pipefail
OUT=${OUT:-/tmp/kernelevo-out}
source bench/gpu_env.sh
PYT="python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rf --durations=15"
export KERNELEVO_FAILURES="$OUT/failures.log"
reap() { pkill -9 -f kernelevo.worker.main; sleep 1; }
summary() { grep -E "passed|failed" "$1" | tail -2; grep -E "^=== " "$OUT/failures.log" 2>/dev/null | head -20; }
if [ "${1:-1}" = 1 ]; then
  echo "=== A ($(date +%T))"
  (CUDA_VISIBLE_DEVICES=0 timeout 330 $PYT --timeout 200 tests/gpu/test_verify_gpu.py > "$OUT/gputests.log" 2>&1
   echo "verify tests rc=$?") &
  (CUDA_VISIBLE_DEVICES=1 timeout 330 python3 bench/offline_suite.py --tune-evals 6 --out "$OUT/offline_suite.json" \
     > "$OUT/offline_suite.txt" 2>&1; echo "offline_suite rc=$?") &
  wait; reap
  summary "$OUT/gputests.log"
  grep -vE "^done |^\s*$" "$OUT/offline_suite.txt" | tail -12
  echo "=== B ($(date +%T))"
  timeout 110 python3 bench/scale.py --per-gpu 16 --out "$OUT/scale.json" 2>&1 | tail -8; reap
  echo "=== C ($(date +%T))"
  CUDA_VISIBLE_DEVICES=0 timeout 100 python3 bench/timing_fidelity.py --quick --max-time 3 \
    --out "$OUT/timing_fidelity.json" 2>&1 | tail -7
else
  echo "=== tests ($(date +%T))"
  timeout 240 $PYT --timeout 200 tests/gpu/test_timing_gpu.py tests/gpu/test_cuda_gpu.py tests/gpu/test_multi_gpu.py \
    > "$OUT/gputests2.log" 2>&1; reap
  summary "$OUT/gputests2.log"
  echo "=== faults ($(date +%T))"
  CUDA_VISIBLE_DEVICES=0 timeout 120 python3 bench/faults.py --quick --out "$OUT/faults.json" 2>&1 | tail -12
fi
echo "=== done ($(date +%T))"
