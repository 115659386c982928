"""Ctrl-C (or the editor's SIGTERM) reaches every process of the caller's group. A sandboxed
child forked at that moment must not run the caller's Python handler: CI once printed the
child's KeyboardInterrupt traceback under `kernelevo: interrupted`."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from support import ROOT

_STORM = textwrap.dedent(
    """
    import os, signal, sys, threading, time
    from kernelevo.sandbox.sandbox_process import spawn
    from kernelevo.sandbox.spec import SandboxSpec

    me = os.getpid()

    def handler(sig, frame):
        if os.getpid() != me:
            os.write(2, b"handler ran in a child\\n")

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    done = threading.Event()

    def storm():
        while not done.is_set():
            os.killpg(os.getpgrp(), signal.SIGINT)
            os.killpg(os.getpgrp(), signal.SIGTERM)
            time.sleep(0.0005)

    threading.Thread(target=storm, daemon=True).start()
    started, t0 = 0, time.monotonic()
    while time.monotonic() - t0 < float(sys.argv[1]):
        spawn(SandboxSpec(argv=["/bin/true"], isolate=False), channel=False).close()
        started += 1
    done.set()
    print(started)
    """
)


def test_a_child_forked_while_the_group_is_signalled_never_runs_the_callers_handler():
    r = subprocess.run(
        [sys.executable, "-c", _STORM, "3"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        start_new_session=True,  # the storm signals this group only
    )
    assert r.returncode == 0, r.stderr
    assert int(r.stdout) > 20  # enough forks under the storm to have hit the window
    assert "handler ran in a child" not in r.stderr
    assert "Exception ignored" not in r.stderr
