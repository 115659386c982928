#!/usr/bin/env bash
# Last call on nvidia-h200-x2 (device tool, carry .device-wheels); logs and JSON under $OUT.
#   A (side by side): GPU 0 every GPU test (failures logged as they happen); GPU 1 the offline suite.
#   B: the 2-GPU test, then bench/timing_fidelity.py --quick alone on GPU 0.
set -uo pipefail
OUT=${OUT:-/tmp/kernelevo-out}
source bench/gpu_env.sh
PYT="python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rf"
export KERNELEVO_FAILURES="$OUT/failures.log"
echo "=== A ($(date +%T))"
(CUDA_VISIBLE_DEVICES=0 timeout 350 $PYT --timeout 200 tests/gpu/test_verify_gpu.py tests/gpu/test_timing_gpu.py \
   tests/gpu/test_cuda_gpu.py > "$OUT/gputests.log" 2>&1; echo "gputests rc=$?") &
(CUDA_VISIBLE_DEVICES=1 timeout 350 python3 bench/offline_suite.py --tune-evals 6 --out "$OUT/offline_suite.json" \
   > "$OUT/offline_suite.txt" 2>&1; echo "offline_suite rc=$?") &
wait
pkill -9 -f kernelevo.worker.main; sleep 1
grep -E "passed|failed" "$OUT/gputests.log" | tail -3; grep -E "^=== " "$OUT/failures.log" 2>/dev/null | head -20
grep -vE "^done |^\s*$" "$OUT/offline_suite.txt" | tail -14
echo "=== B ($(date +%T))"
timeout 80 $PYT --timeout 75 tests/gpu/test_multi_gpu.py > "$OUT/multi_gpu.log" 2>&1; grep -E "passed|failed" "$OUT/multi_gpu.log"
pkill -9 -f kernelevo.worker.main; sleep 1
CUDA_VISIBLE_DEVICES=0 timeout 100 python3 bench/timing_fidelity.py --quick --max-time 3 --out "$OUT/timing_fidelity.json" 2>&1 | tail -9
echo "=== done ($(date +%T))"
