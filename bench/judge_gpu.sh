#!/bin/bash
# One device call for the out-of-process judge: CUDA IPC (or the file fallback) between the judge
# and the sandboxed candidate process, the GPU verifier tests it touches, the adversarial tests on
# the GPU, and the memory plan on KernelBench Level-1 sizes. Details under $OUT.
source bench/gpu_env.sh
command -v bwrap >/dev/null || export PATH="$PWD/.sandbox-tools/bin:$PATH"
export KERNELEVO_FAILURES="$OUT/failures.txt"
timeout 50 python3 -m pytest -q -x -p no:cacheprovider tests/test_judge_adversarial.py 2>&1 | tail -6 | tee "$OUT/adversarial.txt"
timeout 60 python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_verify_gpu.py \
  -k "(triton_candidate_verified_and_timed and softmax) or cuda_fast_path or worker_kept or (gpu_hack_caught and (reuses_freed or caches_by_pointer_cuda or triton_copies))" \
  2>&1 | tail -8 | tee "$OUT/gpu_tests.txt"
timeout 90 python3 bench/judge_memory.py --tasks 19_ReLU,47_Sum_reduction_over_a_dimension,23_Softmax --out "$OUT/memory.json" 2>&1 | tail -8 | tee "$OUT/memory.txt"
