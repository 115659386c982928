"""The judge starts CUDA on a thread while torch imports; a process with no GPU to use does not."""

import threading

from kernelevo.judge import cuda_early


def test_a_worker_that_hides_every_gpu_starts_no_thread(monkeypatch):
    monkeypatch.setattr(cuda_early, "_started", None)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert cuda_early.start_cuda_early() is None


def test_the_start_runs_once_and_ends_quietly_without_a_driver(monkeypatch):
    monkeypatch.setattr(cuda_early, "_started", None)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    failures: list[BaseException] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: failures.append(args.exc_value))
    first = cuda_early.start_cuda_early()
    assert first is not None and cuda_early.start_cuda_early() is first
    first.join(30)
    assert not first.is_alive() and not failures
