#!/bin/bash
# One GPU run for the sandbox: bubblewrap there (or the Debian build carried in .sandbox-tools),
# the GPU checks of bench/sandbox_gpu_check.py, and the adversarial corpus. Details under $OUT.
source bench/gpu_env.sh
echo "bwrap on the device: $(command -v bwrap), $(bwrap --version)"  # gpu_env.sh falls back to .sandbox-tools
ls /dev | grep -i nvidia | tr '\n' ' '; echo
grep -E "pids|memory" /proc/self/cgroup; ls /sys/fs/cgroup | head -20 | tr '\n' ' '; echo
timeout 95 python3 bench/sandbox_gpu_check.py 2>&1 | tee "$OUT/gpu_check.txt"
timeout 32 python3 -m pytest -q -x -p no:cacheprovider tests/adversarial/test_sandbox_attacks.py 2>&1 | tail -15 | tee "$OUT/adversarial.txt"
