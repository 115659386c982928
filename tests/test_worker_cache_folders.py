"""Build-cache folders held between a candidate's compile and its run (kernelevo/worker/cache_folders.py).

The dispatcher compiles ahead on one thread per compile worker, so folders are held, seeded and
installed from several threads at once; none of them may see another's folder half moved."""

from __future__ import annotations

import threading
from pathlib import Path

from kernelevo.worker import cache_folders


def _compiled(root: Path, n: int) -> Path:
    folder = cache_folders.fresh(root)
    for i in range(n):
        (folder / f"kernel{i}.cubin").write_bytes(b"x" * 512)
    return folder


def test_holding_from_many_threads_keeps_the_newest_and_raises_nothing(tmp_path):
    root = cache_folders.make_root(str(tmp_path / "compile-"))
    errors: list[BaseException] = []
    keys = [f"key{k}" for k in range(4)]

    def compile_and_hold(t: int) -> None:
        try:
            for i in range(40):
                key = keys[(t + i) % len(keys)]
                cache_folders.seed(_compiled(root, 0), key)
                held = cache_folders.hold(_compiled(root, 3), key, keep=2)
                run_root = cache_folders.make_root(str(tmp_path / "run-"))
                cache_folders.install(held, run_root)
        except BaseException as exc:  # any thread's failure is the test's
            errors.append(exc)

    threads = [threading.Thread(target=compile_and_hold, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]
    assert len(list(cache_folders.holding().iterdir())) <= 2
