#!/usr/bin/env bash
# One device call for issue 3: GPU timing/verify tests, where a verdict's time goes, eval latency.
# Usage (device tool, carry .device-wheels): bash bench/gpu_issue3.sh [eval_latency args...]
set -uo pipefail
OUT=${OUT:-/tmp/kernelevo-out}
source bench/gpu_env.sh
echo "=== tests ($(date +%T))"
timeout 170 python3 -m pytest -q -m gpu -p no:cacheprovider --timeout 120 --tb=short tests/gpu/test_timing_gpu.py \
  "tests/gpu/test_verify_gpu.py::test_worker_kept_across_timed_verdicts" \
  "tests/gpu/test_verify_gpu.py::test_kernels_compiled_ahead_are_cache_hits_on_the_gpu" > "$OUT/gputests.log" 2>&1
grep -E "passed|failed|^FAILED|^E " "$OUT/gputests.log" | head -30
echo "=== profile ($(date +%T))"
timeout 120 python3 bench/profile_verdict.py --top 12 > "$OUT/profile.txt" 2>&1; grep '^{' "$OUT/profile.txt" | cut -c1-600
echo "=== eval_latency ($(date +%T))"
timeout 330 python3 bench/eval_latency.py --out "$OUT/eval_latency.json" "$@" 2>&1 | tail -40
echo "=== done ($(date +%T))"
