#!/usr/bin/env bash
# One device call: install the carried wheels, then run the named steps, logging under $OUT.
# Usage: bash bench/gpu_session.sh STEP...   (steps: info, gputests, verify, optimize, bench)
set -uo pipefail
OUT=${OUT:-/tmp/kernelevo-out}
mkdir -p "$OUT"
source bench/gpu_env.sh  # carried wheels, PYTHONPATH
step() { echo "=== $1 ($(date +%T))"; }
for s in "$@"; do
  case "$s" in
    info)
      step info
      nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
      python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
      python3 -c "import pycuda; print('pycuda', pycuda.VERSION_TEXT)" ;;
    gputests)
      step gputests
      timeout 420 python3 -m pytest -q -m gpu -p no:cacheprovider --timeout 300 tests/gpu 2>&1 | tee "$OUT/gputests.log" | tail -40 ;;
    verify)
      step verify
      for t in examples/*.py; do n=$(basename "$t" .py)
        timeout 120 python3 -m kernelevo verify "$t" "tests/candidates/$n/triton_ok.py" --json > "$OUT/verify_$n.json" 2>>"$OUT/verify.err"
        python3 - "$OUT/verify_$n.json" "$n" <<'PY'
import json, sys
try:
    v = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"{sys.argv[2]:<18} no verdict ({e})"); raise SystemExit
t = v.get("timings") or {}
f = lambda x: f"{x:.4f}" if isinstance(x, (int, float)) else "-"
print(f"{sys.argv[2]:<18} {v['status']:<10} cand {f(t.get('candidate_ms'))} ms  eager {f(t.get('eager_ms'))}  compile {f(t.get('compile_ms'))}"
      f"  x{f(t.get('speedup_eager'))} / x{f(t.get('speedup_compile'))}  {v['reason'][:80]}")
PY
      done ;;
    *) step "$s"; bash -c "$s" 2>&1 | tee -a "$OUT/steps.log" ;;
  esac
done
