#!/usr/bin/env bash
# What is left to show on the GPU for issues 3, 5 and 9, in one call on nvidia-h200-x2
# (device tool, carry .device-wheels; about 9 minutes). Logs and JSON under $OUT.
#   A (side by side): GPU 0 every GPU test (failures logged as they happen), GPU 1 the offline suite.
#   B (both GPUs):    bench/scale.py.
#   C (alone, GPU 0): bench/timing_fidelity.py --quick, then bench/faults.py --quick.
set -uo pipefail
OUT=${OUT:-/tmp/kernelevo-out}
source bench/gpu_env.sh
PYT="python3 -m pytest -q -m gpu -p no:cacheprovider --tb=short -rf"
export KERNELEVO_FAILURES="$OUT/failures.log"
reap() { pkill -9 -f kernelevo.worker.main; sleep 1; }
echo "=== A ($(date +%T))"
(CUDA_VISIBLE_DEVICES=0 timeout 300 $PYT --timeout 200 tests/gpu > "$OUT/gputests.log" 2>&1; echo "gputests rc=$?") &
(CUDA_VISIBLE_DEVICES=1 timeout 300 python3 bench/offline_suite.py --tune-evals 6 --out "$OUT/offline_suite.json" \
   > "$OUT/offline_suite.txt" 2>&1; echo "offline_suite rc=$?") &
wait; reap
grep -E "passed|failed" "$OUT/gputests.log" | tail -2; grep -E "^=== " "$OUT/failures.log" 2>/dev/null | head -20
grep -vE "^done |^\s*$" "$OUT/offline_suite.txt" | tail -12
echo "=== B ($(date +%T))"
timeout 110 python3 bench/scale.py --per-gpu 16 --out "$OUT/scale.json" 2>&1 | tail -8; reap
echo "=== C ($(date +%T))"
CUDA_VISIBLE_DEVICES=0 timeout 100 python3 bench/timing_fidelity.py --quick --max-time 3 --out "$OUT/timing_fidelity.json" 2>&1 | tail -7
reap
CUDA_VISIBLE_DEVICES=0 timeout 70 python3 bench/faults.py --quick --out "$OUT/faults.json" 2>&1 | tail -12
echo "=== done ($(date +%T))"
