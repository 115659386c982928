"""Attacks on the verifier by a candidate that only writes zeros: none may yield "verified".

Each attack worked against the in-process checks (the candidate ran beside the reference
and the comparison). They go straight to the dynamic judge (kernelevo/judge/), past the
static checks, so what is tested is the process boundary: the judge computes the
reference and compares in a process that never runs candidate code, and each candidate
runs in a fresh process of its own.
"""

import os

import pytest
from support import CANDIDATES, EXAMPLES

from kernelevo.task import read_task
from kernelevo.verify import _run_dynamic, default_size, resolve_size

SOFTMAX = EXAMPLES / "softmax.py"

ZERO = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def zero_kernel(out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(out_ptr + offsets, tl.zeros([BLOCK_SIZE], tl.float32), mask=offsets < n_elements)


def zeros_from_kernel(x):
    out = torch.empty_like(x)
    n = out.numel()
    zero_kernel[(triton.cdiv(n, 1024),)](out, n, BLOCK_SIZE=1024)
    return out


class ModelNew(nn.Module):
    def forward(self, x):
        return self.attack(x)

    def attack(self, x):
        return zeros_from_kernel(x)
"""

ATTACKS = {
    # the reference's library patched so the reference also returns zeros
    "patch_torch_through_alias": "import torch as _t\n_t.softmax = lambda x, dim=-1, **k: _t.zeros_like(x)\n"
    "_t.Tensor.softmax = lambda self, dim=-1, **k: _t.zeros_like(self)\n",
    "patch_torch_through_vars": "vars(torch)['softmax'] = lambda x, dim=-1, **k: torch.zeros_like(x)\n",
    # the comparison replaced wherever it is loaded
    "replace_comparison_in_sys_modules": """
import sys
def _always(*a, **k):
    return True, "outputs match", {}
for _name in list(sys.modules):
    _m = sys.modules[_name]
    for _fn in ("compare_outputs", "compare_any_size"):
        if _name.startswith("kernelevo") and hasattr(_m, _fn):
            setattr(_m, _fn, _always)
""",
    # the reference module found through gc, its output rewritten by a forward hook
    "gc_forward_hook_on_reference": """
import gc
_hooked = set()

def _attack(self, x):
    for _o in gc.get_objects():
        if isinstance(_o, torch.nn.Module) and type(_o).__name__ == "Model" and id(_o) not in _hooked:
            _o.register_forward_hook(lambda m, i, out: torch.zeros_like(out))
            _hooked.add(id(_o))
    return zeros_from_kernel(x)
ModelNew.attack = _attack
""",
    # the reference called from the candidate with every dispatch mode (the op recorder) off
    "reference_called_with_recorder_off": """
import gc, sys
from torch.utils._python_dispatch import _disable_current_modes

def _find_reference():
    for _o in gc.get_objects():
        if isinstance(_o, torch.nn.Module) and type(_o).__name__ == "Model":
            return _o
    for _name, _m in list(sys.modules.items()):
        if _name.startswith("_kernelevo_task") and hasattr(_m, "Model"):
            return _m.Model()
    return None

def _attack(self, x):
    out = zeros_from_kernel(x)
    ref = _find_reference()
    if ref is not None:
        with _disable_current_modes():
            out.copy_(ref(x))
    return out
ModelNew.attack = _attack
""",
    # a verdict written as a protocol frame on every descriptor and on the parent's pipes
    "forged_verified_frame": """
import os, struct, msgpack
_VERDICT = {"status": "verified", "reason": "outputs match the reference on 5 input sets", "checks": [],
            "kernel_launches": 1}
def _frames():
    for body in ({"reply": _VERDICT}, _VERDICT, {"checks": [{"name": "match[forged]", "passed": True,
                                                               "message": "", "detail": {}}]}):
        data = msgpack.packb(body)
        yield struct.pack(">I", len(data)) + data

def _attack(self, x):
    out = zeros_from_kernel(x)
    targets = [f"/proc/{os.getppid()}/fd/{n}" for n in range(0, 64)] + [f"/proc/self/fd/{n}" for n in range(0, 64)]
    for path in targets:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            for frame in _frames():
                os.write(fd, frame)
        except OSError:
            pass
        finally:
            os.close(fd)
    return out
ModelNew.attack = _attack
""",
}


def _candidate(tmp_path, name: str, prelude: str) -> os.PathLike:
    path = tmp_path / f"{name}.py"
    path.write_text(ZERO + "\n" + prelude)
    return path


def judge(evaluator, cand, timeout=60.0):
    """The dynamic verdict alone (no static checks): what a candidate that evaded them gets."""
    device = evaluator.device
    task = read_task(SOFTMAX)
    return _run_dynamic(
        task,
        cand,
        "triton",
        [],
        evaluator,
        device,
        default_size(device),
        timeout,
        None,
        measure=False,
    )


def test_zero_kernel_alone_is_incorrect(tmp_path, evaluator):
    v = judge(evaluator, _candidate(tmp_path, "zeros", ""))
    assert v.status == "incorrect", (v.status, v.reason)


@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_attack_does_not_verify(name, tmp_path, evaluator):
    v = judge(evaluator, _candidate(tmp_path, name, ATTACKS[name]))
    assert v.status != "verified", (name, v.reason)
    assert v.status in ("incorrect", "rejected", "runtime_error"), (v.status, v.reason)
    honest = judge(
        evaluator, CANDIDATES / "softmax" / "triton_ok.py"
    )  # the channels are clean afterwards
    assert honest.status == "verified", (name, honest.reason, honest.log[-1500:])


def test_patch_does_not_persist_into_the_next_candidate(tmp_path, evaluator):
    """A patches the runner harness so every output becomes the real softmax; B only writes zeros.
    In a reused process B would be verified; each candidate gets a fresh process."""
    patcher = _candidate(
        tmp_path,
        "patcher",
        """
import sys
_m = sys.modules.get("kernelevo.runner.candidate")
if _m is not None:
    _orig = _m.CandidateProcess._forward
    def _forward(self, args, label, record=True):
        out = _orig(self, args, label, record)
        out.copy_(torch.softmax(args[0], dim=-1))
        return out
    _m.CandidateProcess._forward = _forward
_old = sys.modules.get("kernelevo.verify.checks")  # where candidates ran when they shared the checks' process
if _old is not None:
    _orig_run = _old.Session.run_candidate
    def _run_candidate(self, args, label):
        out = _orig_run(self, args, label)
        out.copy_(torch.softmax(args[0], dim=-1))
        return out
    _old.Session.run_candidate = _run_candidate
""",
    )
    host_pid = evaluator.runner.proc.pid if evaluator.runner.alive else None
    first = judge(evaluator, patcher)
    assert first.status == "verified", first.reason  # the patch works on its own process...
    second = judge(evaluator, _candidate(tmp_path, "zeros_after", ""))
    assert second.status == "incorrect", second.reason  # ...and not on the next candidate's
    if host_pid is not None:
        assert evaluator.runner.proc.pid == host_pid, (
            "the host was not restarted: the fresh child did it"
        )


def test_each_candidate_gets_a_fresh_process():
    from kernelevo.worker import candidate_replies as cp
    from kernelevo.worker.candidate_requests import Close, Open, Ping
    from kernelevo.worker.pool import Worker

    with Worker("cpu", module="kernelevo.runner.host") as host:

        def child() -> int | None:
            return cp.HostPong.parse(host.request(Ping().wire(), 60)).child

        first = cp.Opened.parse(host.request(Open().wire(), 60)).opened
        host.request(Close().wire(), 60)
        second = cp.Opened.parse(host.request(Open().wire(), 60)).opened
        assert first and second and first != second
        assert child() == second
        host.request(Close().wire(), 60)
        assert child() is None  # closed means killed and reaped


def test_out_of_memory_is_the_candidates_and_the_next_one_is_judged(tmp_path, evaluator):
    hog = _candidate(
        tmp_path,
        "hog",
        """
def _attack(self, x):
    torch.empty(1 << 46, dtype=torch.uint8, device=x.device).fill_(1)
    return zeros_from_kernel(x)
ModelNew.attack = _attack
""",
    )
    v = judge(evaluator, hog)
    assert v.status == "runtime_error" and v.reason.startswith("out of memory"), v.reason
    assert "needs ~" in v.reason
    assert judge(evaluator, CANDIDATES / "softmax" / "triton_ok.py").status == "verified"


def test_a_killed_candidate_process_is_not_a_lost_worker(tmp_path, evaluator):
    from kernelevo.dispatch import lost_worker

    killed = _candidate(
        tmp_path,
        "killed",
        """
import os, signal
def _attack(self, x):
    os.kill(os.getpid(), signal.SIGKILL)
ModelNew.attack = _attack
""",
    )
    v = judge(evaluator, killed)
    assert v.status == "runtime_error" and "signal 9" in v.reason, v.reason
    assert not lost_worker(v), (
        "an OOM-killed candidate must not be retried as if its worker were lost"
    )


RELU_TASK = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def get_inputs():
    return [torch.randn(64, 256)]


def get_init_inputs():
    return []
"""


def test_a_thread_rewriting_shared_inputs_cannot_steer_the_reference(tmp_path, evaluator):
    """The candidate returns zeros and leaves a hidden thread writing -1 into the inputs it was given:
    a reference reading that memory would return zeros too. The judge's reference reads only its own copy."""
    (tmp_path / "relu.py").write_text(RELU_TASK)
    cand = _candidate(
        tmp_path,
        "steers",
        """
import _thread, time

def _steer(x, until):
    while time.monotonic() < until:
        x.fill_(-1.0)

def _attack(self, x):
    out = zeros_from_kernel(x)
    x.fill_(-1.0)
    _thread.start_new_thread(_steer, (x, time.monotonic() + 3.0))
    return out
ModelNew.attack = _attack
""",
    )
    task = read_task(tmp_path / "relu.py")
    v = _run_dynamic(
        task,
        cand,
        "triton",
        [],
        evaluator,
        evaluator.device,
        resolve_size(task, evaluator.device, None),
        60.0,
        None,
        measure=False,
    )
    assert v.status in ("incorrect", "rejected"), (v.status, v.reason)
