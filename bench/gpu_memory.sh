#!/bin/bash
# One device call for the verifier (carry .sandbox-tools): the memory plan on all 200 KernelBench v0.1
# level-1/2 tasks (bench/judge_memory.py, CUDA IPC layout), the same through files (/dev/shm, as on the
# H200 where IPC cannot enter the sandbox) for the largest, then `kernelevo verify` from a shell
# (bench/shell_latency.py). Incremental: $OUT/memory.jsonl and memory.md are rewritten per task.
# Worst case ~580 s (one call); FILE_TASKS= skips the file step, MEM_ARGS="--task-s 30" adds arguments. Usage: BUDGET_S=200 FILE_TASKS=L1_45_,L1_38_,L1_39_,L1_87_ REPEAT=2 bash bench/gpu_memory.sh
source bench/gpu_env.sh
nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader; df -h /dev/shm | tail -1
timeout $(( ${BUDGET_S:-200} + 60 )) python3 bench/judge_memory.py --out "$OUT" --budget-s "${BUDGET_S:-200}" \
  --compile "${COMPILE_N:-0}" --time-s "${TIME_S:-0.1}" ${MEM_ARGS:-} 2>&1 | tee "$OUT/memory.txt" | cut -c1-150
tail -1 "$OUT/memory.md"  # the summary line
if [ -n "${FILE_TASKS-L1_45_,L1_38_,L1_39_,L1_87_}" ]; then
  mkdir -p "$OUT/file"
  timeout "${FILE_S:-80}" python3 bench/judge_memory.py --out "$OUT/file" --via file --budget-s "$(( ${FILE_S:-80} - 40 ))" \
    --tasks "${FILE_TASKS:-L1_45_,L1_38_,L1_39_,L1_87_}" --time-s "${TIME_S:-0.1}" 2>&1 | cut -c1-150
fi
if [ "${REPEAT:-2}" != 0 ]; then
  timeout "${LATENCY_S:-240}" python3 bench/eval_latency.py --shell --repeat "${REPEAT:-2}" --out "$OUT/shell_latency.json" 2>&1 \
    | tee "$OUT/shell_latency.txt" | cut -c1-160
fi
