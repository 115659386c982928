"""The isolation probe: one real sandbox per process, whoever asks first."""

from __future__ import annotations

import threading
import time

from kernelevo.sandbox import probe


def test_workers_starting_side_by_side_share_one_isolation_probe(monkeypatch):
    """An evaluator's three workers start at the same moment and each asks whether the sandbox
    works: one probe sandbox answers them all (three raced each other before, each a process
    start on the verdict's path)."""
    from kernelevo.sandbox import sandbox_process

    started = []
    real = sandbox_process.spawn

    def slow_spawn(spec, **kwargs):
        started.append(spec)
        time.sleep(0.3)  # the probe's sandbox starting
        return real(spec, **kwargs)

    monkeypatch.setattr(sandbox_process, "spawn", slow_spawn)
    probe._probe_isolation.cache_clear()
    try:
        found = []
        threads = [
            threading.Thread(target=lambda: found.append(probe.isolation())) for _ in range(3)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(started) == 1
        assert len(found) == 3 and found[0] is found[1] is found[2]
    finally:
        probe._probe_isolation.cache_clear()
