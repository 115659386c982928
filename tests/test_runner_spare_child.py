"""The candidate host's spare child: forked ahead (at start, after each close), handed the next
candidate by `open`, never swept as a leftover (nor its files, while it waits), never handed out
dead, gone with the host; what a candidate that died on its own left is still swept at close;
the compile host keeps none. Each case runs a host in a process of its own (the host becomes a
subreaper and forks, which the test process must not)."""

import json

from support import fresh_python

SCRIPT = r"""
import json, os, signal, sys, time
from kernelevo.runner.host import Host
from kernelevo.runner.leftovers import children

def alive(pid):
    try:
        return os.waitpid(pid, os.WNOHANG) == (0, 0)
    except ChildProcessError:
        return False

seen = {}
host = Host(sys.argv[1])
seen["spare_at_start"] = host.spare[0] if host.spare else None
case = sys.argv[2]
if case == "cycle":
    first = host.open(set()).wire()
    seen["first"] = first
    seen["reply"] = host.relay({"op": "run", "set": "s0"}, 60).wire()
    closed = host.close()
    seen["swept"] = closed.swept
    seen["first_alive_after_close"] = alive(first["opened"])
    seen["spare_after_close"] = host.spare[0] if host.spare else None
    seen["spare_alive"] = alive(host.spare[0])
    second = host.open(set()).wire()
    seen["second"] = second
    seen["second_reply"] = host.relay({"op": "run", "set": "s0"}, 60).wire()
    host.close(final=True)
    seen["children_after_final"] = [pid for pid, _ in children(os.getpid())]
elif case == "dead_spare":
    os.kill(host.spare[0], signal.SIGKILL)
    time.sleep(0.2)
    opened = host.open(set()).wire()
    seen["opened"] = opened
    seen["reply"] = host.relay({"op": "run", "set": "s0"}, 60).wire()
    host.close(final=True)
    seen["children_after_final"] = [pid for pid, _ in children(os.getpid())]
elif case == "files":
    with open("made_by_the_spare", "w") as f:  # as a waiting spare's CUDA start might
        f.write("x")
    host.open(set())
    seen["kept_at_open"] = os.path.exists("made_by_the_spare")
    with open("candidate.py", "w") as f:
        f.write("import os\nopen('left_by_candidate', 'w').close()\nos._exit(3)\n")
    seen["reply"] = host.relay({"op": "load", "candidate_path": os.path.abspath("candidate.py"),
                                "exchange": os.getcwd()}, 60).wire()
    os.remove("candidate.py")
    seen["swept"] = host.close(final=True).swept
elif case == "profiler":
    import kernelevo.runner.host as runner_host
    from kernelevo.runner import spare_start
    def started(profiler=False, libraries=()):  # what each spare was asked to start
        open(f"started_{os.getpid()}_{'+'.join(libraries)}_{profiler}", "w").close()
    spare_start.start_cuda = started
    host.drop_spare()
    flags = []
    for known in (True, None, False):
        host.open(set())
        request = {"op": "close"} if known is None else {"op": "close", "profiler": known}
        runner_host._answer(host, request)
        host.settle()  # as the serving loop does after each reply
        for _ in range(100):
            made = [n for n in os.listdir() if n.startswith(f"started_{host.spare[0]}_")]
            if made:
                break
            time.sleep(0.05)
        flags.append([host.profiler, made[0].rsplit("_", 1)[-1] if made else None])
    seen["flags"] = flags
    host.close(final=True)
elif case == "libraries":
    import kernelevo.runner.host as runner_host
    from kernelevo.runner import spare_start
    def started(profiler=False, libraries=()):
        open(f"started_{os.getpid()}_{'+'.join(libraries)}", "w").close()
    spare_start.start_cuda = started
    host.drop_spare()
    warmed = []
    for told in (["cudnn", "cublas", "../../etc"], None, []):
        host.open(set())
        request = {"op": "close"} if told is None else {"op": "close", "libraries": told}
        runner_host._answer(host, request)
        host.settle()
        for _ in range(100):
            made = [n for n in os.listdir() if n.startswith(f"started_{host.spare[0]}_")]
            if made:
                break
            time.sleep(0.05)
        warmed.append(made[0].split("_", 2)[-1] if made else None)
    seen["warmed"] = warmed
    host.close(final=True)
elif case in ("slow_start", "dying_start"):
    from kernelevo.runner import spare_start
    def started(profiler=False, libraries=()):
        if case == "dying_start":
            os._exit(3)
        time.sleep(0.6)  # a CUDA context starting
        open(f"started_{os.getpid()}", "w").close()
    spare_start.start_cuda = started
    host.drop_spare()
    host._fork_spare()
    spare = host.spare[0]
    opened = host.open(set()).wire()
    seen["opened"] = opened
    seen["spare_pid"] = spare
    seen["started_when_open_answered"] = os.path.exists(f"started_{spare}")
    seen["reply"] = host.relay({"op": "run", "set": "s0"}, 60).wire()
    host.close(final=True)
elif case == "later":
    import kernelevo.runner.host as runner_host
    opened = host.open(set()).wire()["opened"]
    with open("candidate.py", "w") as f:
        f.write("open('left_by_candidate', 'w').close()\n")
    host.relay({"op": "load", "candidate_path": os.path.abspath("candidate.py"),
                "exchange": os.getcwd()}, 60)
    os.remove("candidate.py")
    seen["reply"] = runner_host._answer(host, {"op": "close"})
    seen["before_settle"] = [host.child == opened, os.path.exists("left_by_candidate"),
                             host.spare is None]
    host.settle()
    seen["after_settle"] = [host.child, alive(opened), os.path.exists("left_by_candidate"),
                            host.spare is not None and alive(host.spare[0])]
    host.close(final=True)
print(json.dumps(seen), flush=True)
"""


def _run(kind: str, case: str, tmp_path) -> dict:
    env = {"HOME": str(tmp_path), "CUDA_VISIBLE_DEVICES": ""}
    out = fresh_python(SCRIPT, kind, case, cwd=tmp_path, env=env, inherit=False, timeout=300)
    lines = [line for line in out.stdout.splitlines() if line.startswith("{")]
    assert out.returncode == 0 and lines, out.stderr[-3000:]
    return json.loads(lines[-1])


def test_open_hands_the_spare_and_close_forks_the_next(tmp_path):
    seen = _run("candidate", "cycle", tmp_path)
    assert seen["spare_at_start"], "no spare forked at start"
    assert seen["first"].pop("ready_s") >= 0 and seen["second"].pop("ready_s") >= 0
    assert seen["first"] == {"opened": seen["spare_at_start"], "spare": True}
    assert seen["reply"] == {
        "reply": {"error": "no candidate loaded"}
    }  # it serves as a fresh child
    assert not seen["first_alive_after_close"], "the closed candidate's process is still there"
    assert seen["swept"] == [], "the spare must not be swept as a leftover"
    assert seen["spare_after_close"] not in (None, seen["first"]["opened"]) and seen["spare_alive"]
    assert seen["second"] == {"opened": seen["spare_after_close"], "spare": True}
    assert seen["second_reply"] == {"reply": {"error": "no candidate loaded"}}
    assert seen["children_after_final"] == [], "the host's last close left a process"


def test_a_dead_spare_is_not_handed_out(tmp_path):
    seen = _run("candidate", "dead_spare", tmp_path)
    assert seen["opened"]["spare"] is False and seen["opened"]["opened"] != seen["spare_at_start"]
    assert seen["opened"]["ready_s"] >= 0
    assert seen["reply"] == {"reply": {"error": "no candidate loaded"}}
    assert seen["children_after_final"] == []


def test_the_compile_host_keeps_no_spare(tmp_path):
    seen = _run("compile", "none", tmp_path)
    assert seen["spare_at_start"] is None


def test_a_spares_files_stay_at_open_and_a_dead_candidates_are_swept_at_close(tmp_path):
    seen = _run("candidate", "files", tmp_path)
    assert seen["kept_at_open"], "open swept although no candidate had run since the last sweep"
    assert seen["reply"].get("child_exit"), seen["reply"]  # the candidate exited on its own
    swept = [p.rsplit("/", 1)[-1] for p in seen["swept"]]
    assert "left_by_candidate" in swept and "made_by_the_spare" in swept, seen["swept"]


def test_a_spare_starts_the_profiler_when_the_last_task_profiled_its_kernels(tmp_path):
    seen = _run("candidate", "profiler", tmp_path)
    # told True: the next spare warms the profiler; not told: the last word holds; told False: off
    assert seen["flags"] == [[True, "True"], [True, "True"], [False, "False"]], seen


def test_open_answers_once_the_spare_has_started(tmp_path):
    """A spare still starting (its CUDA context: 0.15-0.27 s of a back-to-back verdict's first
    candidate request on an H100) is waited for by `open`, which the engine calls before it takes
    its GPU's gate, not inside a request made while it holds it."""
    seen = _run("candidate", "slow_start", tmp_path)
    assert seen["opened"]["opened"] == seen["spare_pid"] and seen["opened"]["spare"], seen
    assert seen["started_when_open_answered"], seen
    assert seen["opened"]["ready_s"] >= 0.5, seen
    assert seen["reply"] == {"reply": {"error": "no candidate loaded"}}


def test_a_spare_that_dies_while_starting_is_replaced_at_open(tmp_path):
    seen = _run("candidate", "dying_start", tmp_path)
    assert seen["opened"]["opened"] not in (None, seen["spare_pid"]), seen
    assert seen["opened"]["spare"] is False, seen
    assert seen["reply"] == {"reply": {"error": "no candidate loaded"}}


def test_a_spare_makes_the_library_handles_the_last_candidate_used(tmp_path):
    """cuBLAS's handle took 0.076 s of a matrix-product candidate's first run on an H100: the spare
    makes the handles of the libraries the last candidate called while it waits. Names outside
    the known libraries are dropped; not told, the last word holds; told none, none."""
    seen = _run("candidate", "libraries", tmp_path)
    assert seen["warmed"] == ["cublas+cudnn", "cublas+cudnn", ""], seen


def test_a_close_answers_first_and_the_sweep_and_spare_follow_before_the_next_request(tmp_path):
    """The runner host answers `close` once the candidate is killed; reaping it (a CUDA context's
    teardown), sweeping what it left and forking the next spare come after the reply, in
    `settle`, which the serving loop runs before it reads another request."""
    seen = _run("candidate", "later", tmp_path)
    assert seen["reply"]["closed"] and seen["reply"].get("swept", []) == []
    assert seen["before_settle"] == [True, True, True], seen
    assert seen["after_settle"] == [None, False, False, True], seen
