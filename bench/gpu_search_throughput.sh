#!/usr/bin/env bash
# One device call: GPU busy during a replayed search with 20 s replies and the derived number of
# requests in flight, beside a saturated queue (the ceiling). Run from the repository root with
# `.sandbox-tools` carried; writes under $OUT. The old default (2 in flight) was measured before.
set -u
source bench/gpu_env.sh
timeout "${LIMIT_S:-210}" python3 bench/search_throughput.py --device cuda --reply-s "${REPLY_S:-20}" \
  --wall-s "${WALL_S:-55}" --modes "${MODES:-new}" --saturate "${SATURATE:-24}" --out "$OUT" \
  2>"$OUT/stderr.log"
echo "exit $?"; tail -5 "$OUT/stderr.log"
