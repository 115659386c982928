#!/usr/bin/env bash
# A short device call: the load_inline path on GPU 0, a verdict's phase breakdown on GPU 1,
# then the multi-GPU dispatcher test on both.
set -uo pipefail
OUT=${OUT:-/tmp/kernelevo-out}; mkdir -p "$OUT"
source bench/gpu_env.sh  # carried wheels, PYTHONPATH
( CUDA_VISIBLE_DEVICES=0 timeout 150 python3 -m pytest -v -rfE -m gpu -p no:cacheprovider --timeout 140 \
    tests/gpu/test_verify_gpu.py -k "inline" > "$OUT/inline.log" 2>&1 ) &
( cd /tmp && for i in 1 2; do CUDA_VISIBLE_DEVICES=1 timeout 60 python3 -m kernelevo verify "$OLDPWD/examples/softmax.py" \
    "$OLDPWD/tests/candidates/softmax/triton_ok.py" --no-cache --json; done > "$OUT/phases.jsonl" 2>"$OUT/phases.err" ) &
wait
timeout 60 python3 -m pytest -v -rfE -m gpu -p no:cacheprovider --timeout 55 tests/gpu/test_multi_gpu.py > "$OUT/multi.log" 2>&1
tail -15 "$OUT/inline.log"; tail -12 "$OUT/multi.log"
python3 - "$OUT/phases.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    v = json.loads(line); t = v.get("timings") or {}
    print(v["status"], round(v["elapsed_s"], 2), "verify phases", v.get("phases"), "measure phases", t.get("phases"))
PY
