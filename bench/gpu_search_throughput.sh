#!/usr/bin/env bash
# One device call: the search throughput benchmark (GPU busy during a replayed search with 15 s
# replies, 2 requests in flight vs derived). Run from the repository root; writes under $OUT.
set -u
source bench/gpu_env.sh
command -v bwrap >/dev/null || { echo "no bubblewrap here: candidates (our own kernels) run unsandboxed"; export KERNELEVO_NO_SANDBOX=1; }
timeout 165 python3 bench/search_throughput.py --device cuda --reply-s "${REPLY_S:-15}" --wall-s "${WALL_S:-35}" \
  --out "$OUT" 2>"$OUT/stderr.log"
echo "exit $?"; tail -5 "$OUT/stderr.log"
