#!/usr/bin/env bash
# The whole GPU acceptance batch in one device call on a 2-GPU machine (phases run two jobs
# side by side, one per GPU). Logs go to $OUT (7 files). Usage: bash bench/gpu_final.sh
set -uo pipefail
OUT=${OUT:-/tmp/kernelevo-out}; mkdir -p "$OUT" /tmp/kjson
source bench/gpu_env.sh  # carried wheels, PYTHONPATH
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/tests.log"
on() { local gpu=$1 limit=$2 log=$3; shift 3; ( echo "### $* (GPU $gpu, $(date +%T))"; CUDA_VISIBLE_DEVICES=$gpu timeout "$limit" "$@" 2>&1; echo "### exit $? ($(date +%T))" ) >>"$OUT/$log"; }
echo "phase A $(date +%T)"
on 0 270 tests.log python3 -m pytest -v -rfE -m "gpu and not slow" -p no:cacheprovider --timeout 120 \
   tests/gpu/test_verify_gpu.py tests/gpu/test_cuda_gpu.py tests/gpu/test_timing_gpu.py &
on 1 270 offline.log python3 bench/offline_suite.py --tune-evals 4 --out /tmp/kjson/offline.json &
wait
echo "phase B $(date +%T)"
on 0,1 110 scale.log python3 bench/scale.py --per-gpu 8 --out /tmp/kjson/scale.json
echo "phase C $(date +%T)"
( mkdir -p /tmp/replay && cd /tmp/replay && on 0 80 replay.log env KERNELEVO_REPLAY_FILE="$OLDPWD/bench/replay/softmax.jsonl" \
   python3 -m kernelevo optimize "$OLDPWD/examples/softmax.py" --provider replay --iterations 3 --concurrency 1 \
   --no-offline-seeds --progress text ) &
on 1 80 faults.log env OUT=/tmp/kjson python3 bench/faults.py --quick &
wait
echo "phase D $(date +%T)"
on 0 75 latency.log env OUT=/tmp/kjson python3 bench/eval_latency.py --quick --no-inline &
on 1 75 fidelity.log env OUT=/tmp/kjson python3 bench/timing_fidelity.py --quick &
wait
echo "done $(date +%T)"
tar czf "$OUT/json.tgz" -C /tmp kjson
for f in "$OUT"/*.log; do echo "===== $f"; tail -25 "$f"; done
