#!/bin/bash
# One GPU run for the out-of-process judge: the memory plan on KernelBench Level-1 sizes, the GPU
# verifier tests the judge touches, and adversarial tests on the GPU (CUDA IPC from the judge into the
# sandboxed candidate process, outputs copied back into the judge's buffers). Details under $OUT.
source bench/gpu_env.sh
command -v bwrap >/dev/null || export PATH="$PWD/.sandbox-tools/bin:$PATH"
export KERNELEVO_FAILURES="$OUT/failures.txt"
timeout 60 python3 bench/judge_memory.py --tasks 19_ReLU,47_Sum_reduction_over_a_dimension --out "$OUT/memory.json" > "$OUT/memory.txt" 2>&1
tail -4 "$OUT/memory.txt"
timeout 50 python3 -m pytest -q -x -p no:cacheprovider -m gpu tests/gpu/test_verify_gpu.py -s \
  -k "(triton_candidate_verified_and_timed and softmax) or cuda_fast_path or worker_kept" > "$OUT/gpu_tests.txt" 2>&1
grep -E "passed|failed|candidate .* ms|^E " "$OUT/gpu_tests.txt" | tail -8
timeout 45 python3 -m pytest -q -x -p no:cacheprovider tests/test_judge_adversarial.py \
  -k "alias or sys_modules or gc_forward or forged or persist" > "$OUT/adversarial.txt" 2>&1
tail -3 "$OUT/adversarial.txt"; cat "$OUT/failures.txt" 2>/dev/null | grep -E "^E |===" | head -12
