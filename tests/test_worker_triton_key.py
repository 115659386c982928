"""Triton's source hash is computed by the judge once per installed Triton and taken, not
recomputed, by the compile worker and the runner host (kernelevo/worker/triton_key.py)."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelevo.worker import triton_key

ROOT = Path(__file__).resolve().parents[1]

pytest.importorskip("triton")


def _python(code: str, cache: Path) -> str:
    env = {**os.environ, "KERNELEVO_CACHE": str(cache), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_the_value_stored_is_tritons_own_and_a_new_process_takes_it_without_hashing(tmp_path):
    ours = _python(
        "from kernelevo.worker.triton_key import remember, stored; remember(); print(stored())",
        tmp_path,
    )
    theirs = _python("from triton.runtime.cache import triton_key; print(triton_key())", tmp_path)
    assert ours == theirs
    (memo,) = (tmp_path / "triton-key").iterdir()
    memo.write_text("stored-by-the-judge")  # a value Triton could not have computed
    taken = _python(
        "from kernelevo.runner.preload import hash_triton; hash_triton()\n"
        "import triton.runtime.cache as c; print(c.triton_key())",
        tmp_path,
    )
    assert taken == "stored-by-the-judge"


def test_a_value_that_is_not_a_hash_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELEVO_CACHE", str(tmp_path))
    root = triton_key._triton_root()
    assert root is not None
    path = triton_key._memo_path(root)
    path.write_text("a b; rm -rf /")
    assert triton_key.stored() is None
    assert triton_key.use_stored() is False


def test_a_changed_triton_file_changes_the_fingerprint(tmp_path):
    fake = tmp_path / "triton"
    (fake / "compiler").mkdir(parents=True)
    (fake / "runtime").mkdir()
    (fake / "runtime" / "cache.py").write_text("x = 1\n")
    source = fake / "compiler" / "compiler.py"
    source.write_text("y = 1\n")
    before = triton_key.fingerprint(fake)
    assert triton_key.fingerprint(fake) == before
    source.write_text("y = 22\n")  # another size
    assert triton_key.fingerprint(fake) != before
    after = triton_key.fingerprint(fake)
    os.utime(source, ns=(time.time_ns(), time.time_ns() + 10**9))  # same size, another time
    assert triton_key.fingerprint(fake) != after
    later = triton_key.fingerprint(fake)
    (fake / "compiler" / "__pycache__").mkdir()  # a process imported it and wrote its bytecode
    (fake / "compiler" / "__pycache__" / "compiler.cpython-311.pyc").write_bytes(b"\0" * 64)
    assert triton_key.fingerprint(fake) == later


def test_the_judge_stores_it_while_it_starts(tmp_path, monkeypatch):
    from kernelevo.worker.pool import Worker

    monkeypatch.setenv("KERNELEVO_CACHE", str(tmp_path / "cache"))
    judge = Worker("cpu", module="kernelevo.judge.process", env={"KERNELEVO_WORKER_WARMUP": "0"})
    try:
        judge.start()
        judge.request({"op": "ping"}, 60)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not list((tmp_path / "cache").rglob("*.txt")):
            time.sleep(0.2)
    finally:
        judge.close()
    (memo,) = (tmp_path / "cache" / "triton-key").iterdir()
    theirs = _python("from triton.runtime.cache import triton_key; print(triton_key())", tmp_path)
    assert memo.read_text() == theirs
