#!/bin/bash
# The offline suite over the KernelBench tasks in bench/kernelbench, on the device, ending inside
# $1 seconds with every finished task's row in $OUT/offline_suite.jsonl (a later call passes that
# file as RESUME=path to run only the rest). JOBS searches side by side, TUNE evaluations of
# parameter search per task; LIBRARY=1 runs copies of the tasks that allow the library GEMM and
# convolution (for a verifier without that default policy).
limit=${1:-290}
source bench/gpu_env.sh
command -v bwrap >/dev/null || { echo "no bubblewrap here: workers run unsandboxed"; export KERNELEVO_NO_SANDBOX=1; }
python3 -c 'import torch; print(torch.__version__, torch.cuda.get_device_name(0))'
timeout "$limit" python3 bench/offline_suite.py --set kernelbench --jobs "${JOBS:-4}" --tune-evals "${TUNE:-0}" \
  --deadline $((limit - 45)) --task-timeout 120 ${LIBRARY:+--allow-library-ops} ${RESUME:+--resume "$RESUME"} --out "$OUT" > "$OUT/offline_suite.txt" 2>&1
echo "offline_suite rc=$?"
grep -vE "^done " "$OUT/offline_suite.txt" | cut -c1-230 | tail -75
[ -f "$OUT/offline_suite.json" ] || python3 bench/offline_suite.py --report "$OUT/offline_suite.jsonl" | cut -c1-230 | tail -75
