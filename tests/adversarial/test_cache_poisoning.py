"""A candidate poisoning what the next candidate or the judge later loads.

Build caches are keyed by what an attacker can compute (Triton's kernel hash, load_inline's
name, nvcc's content hash), so one candidate that can write a cache another reads can plant a
correct, fast binary under the key of a later candidate whose own source is wrong or slow.
Candidate A plants a marker wherever it can reach (the engine's shared caches, the folder that
holds every candidate's cache, HOME, /tmp) and leaves a `setsid` daemon planting into every new
folder that appears; candidate B, next in the same worker, reports everything of A's it finds.
Nothing may be found, in the runner host (candidate processes) and in the compile worker.
"""

import json
import re

from support import EXAMPLES

from kernelevo.task import read_task
from kernelevo.verify import _run_dynamic, default_size
from kernelevo.verify.compile_ahead import precompile
from kernelevo.worker.pool import Worker, cache_dirs

SOFTMAX = EXAMPLES / "softmax.py"

POISONER = r'''
import os, subprocess, sys
own = os.path.dirname(os.environ.get("TRITON_CACHE_DIR", "/nonexistent/x"))
targets = [os.environ.get("KERNELEVO_TRITON_BASE", ""), os.path.dirname(own), own,
           os.environ.get("HOME", ""), "/tmp", "/dev/shm"]
for folder in targets:
    try:
        os.makedirs(os.path.join(folder, "planted-by-a"), exist_ok=True)
    except OSError:
        pass
DAEMON = """
import os, sys, time
root = sys.argv[1]
until = time.monotonic() + 90
while time.monotonic() < until:
    for name in os.listdir(root) if os.path.isdir(root) else []:
        try:
            os.makedirs(os.path.join(root, name, "triton", "planted-by-daemon"), exist_ok=True)
        except OSError:
            pass
    time.sleep(0.01)
"""
subprocess.Popen([sys.executable, "-c", DAEMON, os.path.dirname(own), "planted"],
                 start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL, close_fds=True)
import time
time.sleep(0.5)
raise RuntimeError("poisoner done")
'''

INSPECTOR = r"""
import json, os, time
time.sleep(0.5)  # a daemon that survived has had time to plant into this candidate's new folder
own = os.path.dirname(os.environ.get("TRITON_CACHE_DIR", "/nonexistent/x"))
found = []
for top in [os.environ.get("KERNELEVO_TRITON_BASE", ""), os.path.dirname(own),
            os.environ.get("HOME", ""), "/tmp", "/dev/shm"]:
    for folder, dirs, files in os.walk(top) if top else []:
        found += [os.path.join(folder, n) for n in dirs + files if n.startswith("planted-by")]
        if folder.count(os.sep) > 12:
            dirs[:] = []
daemon = b"\0".join([os.path.dirname(own).encode(), b"planted"])  # the end of A's daemon's argv
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if daemon in f.read():
                found.append(f"process {pid}")
    except OSError:
        pass
raise RuntimeError("FOUND " + json.dumps(sorted(set(found))[:8]))
"""


def _found(text: str) -> list[str]:
    m = re.search(r"FOUND (\[.*?\])", text)
    assert m, text[-800:]
    return json.loads(m.group(1))


def _shared_plants() -> list[str]:
    return [str(p) for d in cache_dirs().values() for p in d.rglob("planted-by-*")]


def _judge(evaluator, cand):
    task = read_task(SOFTMAX)
    return _run_dynamic(
        task,
        cand,
        "triton",
        [],
        evaluator,
        evaluator.device,
        default_size(evaluator.device),
        60.0,
        None,
        measure=False,
    )


def test_a_candidate_process_cannot_poison_the_next_or_the_shared_caches(tmp_path, evaluator):
    (tmp_path / "a.py").write_text(POISONER)
    (tmp_path / "b.py").write_text(INSPECTOR)
    first = _judge(evaluator, tmp_path / "a.py")
    assert "poisoner done" in first.reason, first.reason
    assert not _shared_plants(), "the engine's shared caches are read-only to candidates"
    second = _judge(evaluator, tmp_path / "b.py")
    assert _found(second.reason) == [], second.reason


def test_the_next_verdict_waits_until_the_host_has_swept_the_last_candidate(
    tmp_path, evaluator, monkeypatch
):
    """The runner host answers `close` at once and kills what the candidate left only after. A's
    daemon once planted into B's cache folder, installed in that gap (CI, under load): the next
    verdict's first request to the host is a ping, answered only once the sweep is done, and only
    then are the exchange folder cleared and B's cache installed."""
    from kernelevo.worker import cache_folders

    (tmp_path / "a.py").write_text(POISONER)
    (tmp_path / "b.py").write_text(INSPECTOR)
    runner, seen = evaluator.runner, []
    request, install, clear = runner.request, runner.install_cache, cache_folders.clear

    def spy_request(message, timeout):
        seen.append(message.get("op"))
        return request(message, timeout)

    def spy_install(held):
        seen.append("install cache")
        return install(held)

    def spy_clear(root):
        seen.append("clear exchange")
        return clear(root)

    monkeypatch.setattr(runner, "request", spy_request)
    monkeypatch.setattr(runner, "install_cache", spy_install)
    monkeypatch.setattr(cache_folders, "clear", spy_clear)
    assert "poisoner done" in _judge(evaluator, tmp_path / "a.py").reason
    seen.clear()
    second = _judge(evaluator, tmp_path / "b.py")
    assert _found(second.reason) == [], second.reason
    assert seen[0] == "ping", seen
    assert seen.index("ping") < seen.index("install cache"), seen
    if "clear exchange" in seen:
        assert seen.index("ping") < seen.index("clear exchange"), seen


def test_a_compile_ahead_cannot_poison_the_next_compile_or_the_shared_caches(tmp_path):
    (tmp_path / "a.py").write_text(POISONER)
    (tmp_path / "b.py").write_text(INSPECTOR)
    with Worker("compile") as w:
        first = precompile(w, SOFTMAX, tmp_path / "a.py", "triton", device="cpu", size="small")
        assert "poisoner done" in first.reason, first.reason
        assert not _shared_plants()
        second = precompile(w, SOFTMAX, tmp_path / "b.py", "triton", device="cpu", size="small")
        assert _found(second.reason) == [], second.reason
        assert w.request({"op": "ping"}, 30)["pong"], "the same compile worker, reused clean"


def test_without_the_sandbox_the_shared_cache_is_reachable(tmp_path, monkeypatch):
    """The attack is real: unsandboxed, A's plant lands in the shared Triton cache (only the
    read-only mount stops it); the daemon and the files it left are still swept after it."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "shared-triton"))
    machine_wide = ', "/tmp", "/dev/shm"'  # the machine's own folders, unsandboxed: left out
    assert machine_wide in POISONER and machine_wide in INSPECTOR
    (tmp_path / "a.py").write_text(POISONER.replace(machine_wide, ""))
    (tmp_path / "b.py").write_text(INSPECTOR.replace(machine_wide, ""))
    with Worker("compile", isolate=False) as w:
        precompile(w, SOFTMAX, tmp_path / "a.py", "triton", device="cpu", size="small")
        assert (tmp_path / "shared-triton" / "planted-by-a").is_dir()
        (tmp_path / "shared-triton" / "planted-by-a").rmdir()
        second = precompile(w, SOFTMAX, tmp_path / "b.py", "triton", device="cpu", size="small")
    assert _found(second.reason) == [], second.reason
