"""While another verdict's timing has the GPU alone, a paused verdict's candidate process is
stopped by its runner host: the process itself, what it forked into its group, and what it
started outside its group (a `setsid` daemon). Resumed, all of them go on. The host runs in a
process of its own (it becomes a subreaper and forks)."""

import json

from support import fresh_python

CANDIDATE = """
import os, sys, time
sys.path.insert(0, os.getcwd())
from ticker import ticking
if os.fork() == 0:
    ticking("in_group")
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        ticking("escaped")
    os._exit(0)
time.sleep(0.3)
"""

TICKER = """
import time
def ticking(name):  # appends to `name` every 10 ms
    while True:
        with open(name, "a") as f:
            f.write("x")
        time.sleep(0.01)
"""

SCRIPT = r"""
import json, os, sys, time
import kernelevo.runner.host as runner_host
from kernelevo.runner.host import Host

def size(name):
    return os.path.getsize(name) if os.path.exists(name) else 0

def grew():
    a = [size("in_group"), size("escaped")]
    time.sleep(0.4)
    return [size("in_group") - a[0], size("escaped") - a[1]]

seen = {}
host = Host("candidate")
try:
    host.open(set())
    host.relay({"op": "load", "candidate_path": os.path.abspath("candidate.py"),
                "exchange": os.getcwd()}, 60)
    seen["before"] = grew()
    seen["stop"] = runner_host._answer(host, {"op": "pause", "stop": True})
    time.sleep(0.1)
    seen["while_stopped"] = grew()
    seen["resume"] = runner_host._answer(host, {"op": "pause", "stop": False})
    seen["after_resume"] = grew()
finally:
    seen["swept"] = host.close(final=True).swept
print(json.dumps(seen), flush=True)
"""


def test_a_paused_candidate_and_everything_it_started_stop_until_resumed(tmp_path):
    (tmp_path / "candidate.py").write_text(CANDIDATE)
    (tmp_path / "ticker.py").write_text(TICKER)
    env = {"HOME": str(tmp_path), "CUDA_VISIBLE_DEVICES": ""}
    out = fresh_python(SCRIPT, cwd=tmp_path, env=env, inherit=False, timeout=120)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    assert lines, out.stderr[-3000:]
    seen = json.loads(lines[-1])
    assert all(n > 0 for n in seen["before"]), seen
    assert seen["stop"]["stopped"] is True and seen["resume"]["stopped"] is False
    assert seen["while_stopped"] == [0, 0], seen
    assert all(n > 0 for n in seen["after_resume"]), seen
    assert any(s.startswith("process") for s in seen["swept"]), seen  # the daemon goes at close
