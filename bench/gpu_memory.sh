#!/bin/bash
# One device call: the memory plan on all 200 KernelBench v0.1 level-1/2 tasks (bench/judge_memory.py),
# then torch.compile on the largest where time is left. Incremental: $OUT/memory.jsonl and memory.md
# are rewritten after every task. Usage: BUDGET_S=240 COMPILE_N=10 bash bench/gpu_memory.sh [more args]
source bench/gpu_env.sh
nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader
timeout $(( ${BUDGET_S:-240} + 90 )) python3 bench/judge_memory.py --out "$OUT" --budget-s "${BUDGET_S:-240}" \
  --compile "${COMPILE_N:-0}" --time-s "${TIME_S:-0.1}" "$@" 2>&1 | tee "$OUT/memory.txt" | cut -c1-150
tail -1 "$OUT/memory.md"
