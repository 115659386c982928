"""The sandboxed workers start without importing torch._dynamo (seconds of every cold verdict), and
still record ops, compile ahead on meta tensors and compile with torch.compile when asked."""

import json

from support import CANDIDATES, EXAMPLES, fresh_python

REPORT = """
import json, os, sys
def report(**facts):
    print("FACTS " + json.dumps({"dynamo": "torch._dynamo" in sys.modules, **facts}), flush=True)
def in_child(fn):
    r, w = os.pipe()
    if os.fork() == 0:
        os.write(w, json.dumps(fn()).encode()); os._exit(0)
    os.close(w); os.wait()
    return json.loads(os.read(r, 1 << 16))
"""


def facts(code: str, env: dict | None = None) -> dict:
    done = fresh_python(REPORT + code, env=env, timeout=300)
    lines = [line for line in done.stdout.splitlines() if line.startswith("FACTS ")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    return json.loads(lines[-1][len("FACTS ") :])


def test_runner_host_preload_and_its_candidate_child_record_ops_without_dynamo():
    got = facts("""
import torch
from kernelevo.runner.preload import preload
from kernelevo.checks.opwatch import OpRecorder
preload()
def child():
    with OpRecorder() as rec:
        torch.randn(4, 4) @ torch.randn(4, 4)
    return {"ops": rec.ops, "dynamo": "torch._dynamo" in sys.modules}
report(child=in_child(child))
""")
    assert got["dynamo"] is False, "the runner host's preload imported torch._dynamo"
    assert got["child"] == {"ops": {"aten.randn": 2, "aten.mm": 1}, "dynamo": False}


def test_compile_worker_preload_and_a_meta_tensor_compile_ahead_without_dynamo():
    got = facts(
        f"""
import tempfile
from kernelevo.runner import candidate_cache
from kernelevo.runner.compile_worker import _preload, compile_request
_preload()
def child():
    candidate_cache.use(tempfile.mkdtemp())
    reply = compile_request({{"op": "precompile", "task_path": {str(EXAMPLES / "softmax.py")!r},
        "candidate_path": {str(CANDIDATES / "softmax" / "triton_ok.py")!r}, "arch": 90}})
    return {{"status": reply["status"], "reason": reply["reason"], "kernels": reply["kernels"],
        "dynamo": "torch._dynamo" in sys.modules}}
report(child=in_child(child))
""",
        env={"KERNELEVO_COMPILE_WARMUP": "triton"},
    )
    assert got["dynamo"] is False, "the compile worker's preload imported torch._dynamo"
    assert got["child"]["status"] == "compiled", got["child"]["reason"]
    assert got["child"]["kernels"] and got["child"]["dynamo"] is False


def test_judge_warm_up_probes_meta_tensors_and_records_the_reference_without_dynamo():
    got = facts(
        """
import kernelevo.worker.main as worker_main
def serve(handlers, route_all=None, warm=None):
    spent = warm()
    report(warmed=spent > 0)
    return 0
worker_main.serve = serve
from kernelevo.judge.process import main
main()
""",
        env={"KERNELEVO_WORKER_WARMUP": "light"},
    )
    assert got == {"dynamo": False, "warmed": True}


def test_a_one_verdict_judge_runs_nothing_on_meta_tensors_where_the_task_need_is_known(tmp_path):
    """The light warm-up and a Begin told the need and extra shapes an earlier probe measured build,
    draw and run the reference without a meta-tensor pass, whose checks import sympy (~0.8 s of a
    cold judge)."""
    task = EXAMPLES / "softmax.py"
    got = facts(
        f"""
import kernelevo.worker.main as worker_main
from kernelevo.judge import requests as rq
def serve(handlers, route_all=None, warm=None):
    warm()
    judge = handlers["judge"]
    common = dict(task_path={str(task)!r}, task_hash="h", size="small", device="cpu")
    begin = rq.Begin(**common, seed=3, exchange={str(tmp_path)!r}, need=[4096, 4096, 0], n_extra=2)
    begun = judge(begin.wire())
    judge(rq.Inputs(set="a", seed=3).wire())
    ran = judge(rq.Reference(set="a").wire())
    measured = judge.__self__.ref.measured  # what the output buffers are bounded by (no meta pass)
    report(sympy="sympy" in sys.modules, need=begun.get("need"), n_extra=begun.get("n_extra"),
           measured=[measured.inputs, measured.outputs, measured.weights],
           errors=[k for r in (begun, ran) for k in r if "error" in k])
    return 0
worker_main.serve = serve
from kernelevo.judge.process import main
main()
""",
        env={"KERNELEVO_WORKER_WARMUP": "light"},
    )
    assert got["errors"] == [] and got["need"] == [4096, 4096, 0] and got["n_extra"] == 2
    assert got["measured"] == [4096, 4096, 0]
    assert got["sympy"] is False, (
        "the judge ran the task on meta tensors although its need was known"
    )


def test_torch_compile_still_works_and_gets_torchs_own_disabled_functions_back():
    got = facts("""
import torch
from kernelevo.checks.opwatch import OpRecorder
from kernelevo.worker.lazy_dynamo import defer_dynamo_import
deferred = defer_dynamo_import()
raw = OpRecorder.__dict__["__torch_dispatch__"].__wrapped__
cached_before = getattr(raw, "__dynamo_disable") is raw
compiled = torch.compile(lambda a: a * 2 + 1, backend="eager")
out = compiled(torch.ones(3)).tolist()
with OpRecorder() as rec:
    torch.ones(2) + 1
real = getattr(raw, "__dynamo_disable")
report(deferred=deferred, cached_before=cached_before, out=out, ops=rec.ops,
       restored=real is not raw and getattr(real, "_torchdynamo_disable", False))
""")
    assert got["deferred"] > 100 and got["cached_before"], got
    assert got["dynamo"] and got["out"] == [3.0, 3.0, 3.0]
    assert got["ops"] == {"aten.ones": 1, "aten.add": 1}
    assert got["restored"], "after torch._dynamo's import the wrapper must get dynamo's disable"


def test_another_torch_wrapper_is_left_as_it_is():
    """Where torch's wrapper is not the one this was written against, nothing is deferred and
    torch behaves as without the call."""
    got = facts("""
import functools, torch
def other_disable_dynamo(fn=None, recursive=True):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper
torch._compile._disable_dynamo = other_disable_dynamo
from kernelevo.worker.lazy_dynamo import defer_dynamo_import
report(deferred=defer_dynamo_import(), hook=any("RestoreOnImport" in type(f).__name__ for f in sys.meta_path))
""")
    assert got == {"dynamo": False, "deferred": 0, "hook": False}


def test_poisoned_allocations_fill_new_tensors_and_leave_dynamo_unimported():
    """torch.use_deterministic_algorithms imports torch._inductor and with it torch._dynamo: the
    candidate process paid that in every verdict (1-2 s here, 4-5 s on the H200)."""
    got = facts("""
import torch
from kernelevo.runner.candidate import poisoned_allocations
with poisoned_allocations():
    inside = torch.empty(8).isnan().all().item(), torch.are_deterministic_algorithms_enabled()
report(inside=inside, after=torch.are_deterministic_algorithms_enabled())
""")
    assert got["inside"] == [True, True] and got["after"] is False
    assert got["dynamo"] is False, "poisoned_allocations imported torch._dynamo"
