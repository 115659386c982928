#!/usr/bin/env bash
# One device call for `kernelevo verify` latency (bench/shell_latency.py): the goal cases first
# (service start, warm service, cold shell with baselines stored), no case started past SHELL_S.
# Each row shows the transport (ipc or file) and where the seconds inside went. Carry .sandbox-tools.
# Usage: SHELL_S=60 bash bench/verdict_latency_gpu.sh
source bench/gpu_env.sh
SHELL_S="${SHELL_S:-60}"
timeout "$((SHELL_S + 45))" python3 bench/eval_latency.py --shell --goals-first --repeat 1 \
  --no-inline --budget-s "$SHELL_S" --out "$OUT/shell_latency.json" >"$OUT/shell.txt" 2>&1
echo "shell_latency rc $?"
tail -25 "$OUT/shell.txt"
