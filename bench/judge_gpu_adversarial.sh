#!/bin/bash
# One GPU run for the verifier's trust boundaries on a GPU: every adversarial test of the judge
# (test_judge_adversarial.py, the cache-poisoning and forged-count attacks), the GPU hack corpus's
# CUDA C++ candidates (fast path: nvcc cubins), then verdict latency through sandbox + judge.
# Candidate code runs as an unprivileged uid when the GPU's device nodes allow it. Details under $OUT.
source bench/gpu_env.sh
export KERNELEVO_FAILURES="$OUT/failures.txt"
ls -l /dev/nvidia* > "$OUT/device_nodes.txt" 2>&1
if find /dev -maxdepth 1 -name 'nvidia*' -type c ! -perm -o=rw | grep -q .; then
  echo "GPU nodes not world read-write: candidates stay uid 0 without capabilities"; export KERNELEVO_SANDBOX_UID=0
fi
python3 -c "from kernelevo.sandbox import isolation as i; x=i(); print('isolation:', x.level, x.user, x.reason)"
G=tests/gpu/test_verify_gpu.py::test_gpu_hack_caught
# what the 2026-12-01 19:27 call did not reach comes first; PART=all adds test_judge_adversarial.py
FIRST=("$G[caches_by_pointer_cuda]" "$G[illegal_address_cuda]" "$G[side_stream_unlisted]" "$G[thread_launch]"
  "$G[uninitialised_rows_cuda]" tests/gpu/test_verify_gpu.py::test_kernels_compiled_ahead_are_cache_hits_on_the_gpu
  tests/adversarial/test_forged_counts.py tests/adversarial/test_cache_poisoning.py)
[ "${PART:-all}" = all ] && FIRST+=(tests/test_judge_adversarial.py)
timeout "${ADV_S:-140}" python3 -m pytest -q -p no:cacheprovider -rfE "${FIRST[@]}" > "$OUT/adversarial.txt" 2>&1
echo "adversarial exit $?"; grep -E "passed|failed|error" "$OUT/adversarial.txt" | tail -3
grep -E "^(FAILED|ERROR|XPASS)" "$OUT/adversarial.txt" | head -8
timeout "${LAT_S:-70}" python3 bench/eval_latency.py --quick --no-inline --queue 4 --out "$OUT/eval_latency.json" > "$OUT/eval_latency.txt" 2>&1
echo "eval_latency exit $?"; tail -14 "$OUT/eval_latency.txt"
