"""The first program inside a sandbox started by root: become an unprivileged user, then exec.

bubblewrap started by root makes no user namespace, so without this step the worker is uid 0
without capabilities: every file a bind leaves readable to root (mode 0600 included) is its,
RLIMIT_NPROC does not bind, and a sysctl's owner may write it. bubblewrap keeps only CAP_SETUID
and CAP_SETGID for this program; setting all uids to a non-zero one drops every capability,
and no_new_privs (bubblewrap sets it) keeps a setuid binary from giving root back.

Usage: python -m kernelevo.sandbox.enter UID -- ARGV...
"""

from __future__ import annotations

import os
import sys


def drop(uid: int) -> None:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    with open("/proc/self/status") as f:
        status = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
    if int(status["CapEff"].strip(), 16) or int(status["CapPrm"].strip(), 16):
        raise SystemExit("kernelevo sandbox: capabilities remained after dropping the uid")
    if os.getuid() != uid or os.geteuid() != uid:
        raise SystemExit("kernelevo sandbox: the uid did not change")


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] != "--":
        raise SystemExit("usage: python -m kernelevo.sandbox.enter UID -- ARGV...")
    drop(int(argv[0]))
    os.execvp(argv[2], argv[2:])
    return 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
