#!/usr/bin/env bash
# One device call: which part of the candidate sandbox stops CUDA IPC (bench/cuda_ipc_sandbox.py),
# then where each verdict's seconds go (bench/profile_verdict.py: phases, per-op seconds, the judge's
# slowest handlers under cProfile). Tables last; details under $OUT. Carry .sandbox-tools.
# Usage: IPC_S=45 PROFILE_S=110 bash bench/verdict_phases_gpu.sh
source bench/gpu_env.sh
IPC_S="${IPC_S:-45}"
PROFILE_S="${PROFILE_S:-110}"
t0=$(date +%s)
timeout "$IPC_S" python3 bench/cuda_ipc_sandbox.py >"$OUT/ipc.txt" 2>&1
echo "cuda_ipc_sandbox rc $? in $(($(date +%s) - t0)) s"
t1=$(date +%s)
timeout "$PROFILE_S" python3 bench/profile_verdict.py --out "$OUT/profile" --top 15 \
  --budget-s "$((PROFILE_S - 30))" >"$OUT/profile.txt" 2>&1
echo "profile_verdict rc $? in $(($(date +%s) - t1)) s"
grep -E "^\('|^\| " "$OUT/ipc.txt" | tail -45
grep -E "^workers started|^\| (verdict|---|warm|cold|cached)" "$OUT/profile.txt"
