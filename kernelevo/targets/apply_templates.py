"""Text of the files `kernelevo apply` creates: the kernel module and its regression test.

Kept apart from the planning logic so the generated code can be read in one place; the
values are filled in with repr(), so they are plain Python literals.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# The guard line Apply puts at the top of the target's body ends with this comment: the editor
# reads from it which run's kernel is applied (see `applied_run_id`).
GUARD_COMMENT = "# KernelEvo run {run_id}"
# What a @torch.jit.script target's original is renamed to when Apply wraps it (apply_rewrite.py)
SCRIPTED_ORIGINAL = "_kernelevo_scripted_{name}"
_GUARD = re.compile(r"\.supports\(.*#\s*KernelEvo run (\S+)\s*$")


def applied_run_id(lines: Iterable[str]) -> str | None:
    """The run whose kernel the guard in these lines calls, or None when there is no guard."""
    for line in lines:
        m = _GUARD.search(line.rstrip("\r\n"))
        if m:
            return m.group(1)
    return None


KERNEL_ENTRY = '''

# ---- entry points called by {user_file} (generated) ----------------------------------------
import os as _ke_os

import torch as _ke_torch

_KE_BACKEND = {backend!r}
_KE_METHOD = {method!r}  # True: called as run(module, *args) on the user's nn.Module
_KE_DTYPES = frozenset({dtypes!r})
_KE_DEVICES = frozenset({devices!r})
# Per verified argument: None (not checked), ("value", literal) or ("tensor", rank, {{dim: size}}):
# a dimension is fixed unless the verified input sets differed in it.
_KE_RULES = {rules!r}
_KE_TAIL = {tail!r}  # later parameters must keep these defaults ("*": unchecked)
_KE_KEYWORDS = {keywords!r}  # keyword-only parameters and the defaults they must keep
_KE_ATTRS = {attrs!r}  # attributes of the user's module the kernel reads
_KE_INIT = {init!r}
_KE_GRAD = {grad!r}  # verified for autograd?


def available() -> bool:
    """Whether the kernel's backend can run here at all."""
    if _KE_BACKEND == "triton":
        return _ke_torch.cuda.is_available() or _ke_os.environ.get("TRITON_INTERPRET") == "1"
    return _ke_torch.cuda.is_available()


def _tensors(values):
    for v in values:
        if isinstance(v, _ke_torch.Tensor):
            yield v
        elif isinstance(v, (list, tuple)):
            yield from (x for x in v if isinstance(x, _ke_torch.Tensor))


def _same_value(value, want) -> bool:
    if want == "*":
        return True
    return not isinstance(value, _ke_torch.Tensor) and type(value) is type(want) and value == want


def supports(*args, **kwargs) -> bool:
    """True only for calls like those the kernel was verified on; anything else takes the original code."""
    if not available():
        return False
    module = None
    if _KE_METHOD:
        module, args = args[0], args[1:]
        if not all(hasattr(module, a) for a in _KE_ATTRS):
            return False
    n = len(_KE_RULES)
    if len(args) < n or len(args) > n + len(_KE_TAIL):
        return False
    for value, rule in zip(args, _KE_RULES):
        if rule is None:
            continue
        if rule[0] == "value":
            if not _same_value(value, rule[1]):
                return False
        elif not isinstance(value, _ke_torch.Tensor) or value.dim() != rule[1] or \\
                any(value.shape[d] != size for d, size in rule[2].items()):
            return False
    if not all(_same_value(v, want) for v, want in zip(args[n:], _KE_TAIL)):
        return False
    for key, value in kwargs.items():
        if key not in _KE_KEYWORDS or not _same_value(value, _KE_KEYWORDS[key]):
            return False
    tensors = list(_tensors(args))
    if module is not None:
        tensors += list(module.parameters()) + list(module.buffers())
    if not tensors:
        return False
    floating = {{t.dtype for t in tensors if t.is_floating_point()}}
    if len(floating) > 1 or any(str(d).replace("torch.", "") not in _KE_DTYPES for d in floating):
        return False
    devices = {{t.device.type for t in tensors}}
    if len(devices) != 1 or not devices <= _KE_DEVICES:
        return False
    if "cpu" in devices and (_KE_BACKEND != "triton" or _ke_os.environ.get("TRITON_INTERPRET") != "1"):
        return False
    if not all(t.is_contiguous() for t in tensors):
        return False
    if not _KE_GRAD and _ke_torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return False
    return True


class _KeView:
    """ModelNew's methods running over the user's module: its parameters, buffers and settings."""

    def __init__(self, module):
        self.__dict__["_ke_module"] = module

    def __getattr__(self, name):
        for klass in ModelNew.__mro__:
            if klass is _ke_torch.nn.Module:
                break
            if name in klass.__dict__:
                member = klass.__dict__[name]
                return member.__get__(self, type(self)) if hasattr(member, "__get__") else member
        return getattr(self.__dict__["_ke_module"], name)


_ke_instances = {{}}


def run(*args, **kwargs):
    """The verified kernel; call only when supports() said yes."""
    if _KE_METHOD:
        return ModelNew.forward(_KeView(args[0]), *args[1:], **kwargs)
    device = next(iter(_tensors(args))).device
    impl = _ke_instances.get(device)
    if impl is None:
        impl = _ke_instances[device] = ModelNew(*_KE_INIT).to(device).eval()
    return impl(*args, **kwargs)
'''

KERNEL_HEADER = '''"""KernelEvo kernel for {qualname} in {user_file}: generated, do not edit by hand.

Run        {run_id} ({backend}) on {gpu}, {date}
Speedup    {speedups}
Verified   dtypes {dtypes_text}; devices {devices_text}
Shapes     {shapes_text}
Fallback   {user_file} runs its original code for anything else: other dtypes, devices or
           shapes, non-contiguous inputs, autograd, or when {backend} is unavailable here.
Test       {test_file} compares this path with the original code.
"""
# ---- the verified candidate, verbatim -------------------------------------------------------
'''

TEST = '''"""Regression test for KernelEvo's kernel for {qualname} (run {run_id}), generated by `kernelevo apply`.

The new path must match {user_file}'s original code on the shapes and dtypes it was verified
on, and other dtypes must fall back to the original code.
"""
import ast
import os

import pytest
import torch

{backend_import}

def _needs_a_gpu(exc):
    """Whether importing {user_file} failed on module-level GPU code (`.cuda()`, a Triton driver query)."""
    text = f"{{type(exc).__name__}}: {{exc}}".lower()
    return not torch.cuda.is_available() and any(w in text for w in ("cuda", "nvidia", "active drivers", "gpu"))


try:
{import_user}
except Exception as exc:
    if not _needs_a_gpu(exc):
        raise
    _user = None
    pytestmark = pytest.mark.skip(
        reason=f"{user_file} runs GPU code when imported ({{type(exc).__name__}}: {{exc}}); "
        "run this test on a GPU machine"
    )
{import_kernel}

INIT_ARGS = {init!r}
INIT_KEYWORDS = {init_keywords!r}  # the last of INIT_ARGS, passed by these names
INPUT_SETS = {sets!r}
DTYPES = {dtypes!r}
DEVICES = {devices!r}
TOLERANCE = {{"float64": (1e-7, 1e-7), "float32": (1e-4, 1e-4), "float16": (1e-2, 1e-2), "bfloat16": (2e-2, 2e-2)}}
ALIAS = {alias!r}
METHOD = {method!r}


def _target():
    return _user.{qualname}


def _device_ok(device):
    if device.startswith("cuda"):
        return torch.cuda.is_available()
    return _kernel._KE_BACKEND == "triton" and os.environ.get("TRITON_INTERPRET") == "1"


def _make(spec, dtype, device):
    if spec is None or spec["kind"] == "value":
        return None if spec is None else ast.literal_eval(spec["repr"])
    want = getattr(torch, spec.get("dtype") or dtype)
    if want.is_floating_point:
        return torch.randn(spec["shape"], dtype=getattr(torch, dtype), device=device)
    if want == torch.bool:
        return torch.rand(spec["shape"], device=device) < 0.5
    return torch.randint(spec.get("min", 0), spec.get("max", 16) + 1, spec["shape"], dtype=want, device=device)


def _callable(dtype, device):
    if not METHOD:
        return _target()
    torch.manual_seed(0)
    n = len(INIT_ARGS) - len(INIT_KEYWORDS)
    module = _target()(*INIT_ARGS[:n], **dict(zip(INIT_KEYWORDS, INIT_ARGS[n:])))
    with torch.no_grad():  # random weights, so a kernel that ignores them fails
        for p in module.parameters():
            if p.is_floating_point():
                p.add_(torch.randn_like(p) * 0.1)
    return module.to(device=device, dtype=getattr(torch, dtype)).eval()


def _both(fn, args, monkeypatch):
    with torch.no_grad():
        new = fn(*args)
        monkeypatch.setattr(_user, ALIAS, None)
        ref = fn(*args)
    return new, ref


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", range(len(INPUT_SETS)))
def test_kernel_matches_original(case, dtype, device, monkeypatch):
    if not _device_ok(device):
        pytest.skip(f"verified on {{device}}, which is not available here")
    assert getattr(_user, ALIAS) is not None, "the user's module did not import the kernel module"
    fn = _callable(dtype, device)
    torch.manual_seed(1 + case)
    args = [_make(s, dtype, device) for s in INPUT_SETS[case]]
    with torch.no_grad():
        assert _kernel.supports(*([fn] if METHOD else []), *args), "the guard refused inputs the kernel was verified on"
    new, ref = _both(fn, args, monkeypatch)
    atol, rtol = TOLERANCE.get(dtype, (0.0, 0.0))
    torch.testing.assert_close(new, ref, atol=atol, rtol=rtol)


def test_unverified_dtype_falls_back(monkeypatch):
    dtype = next(d for d in ("float64", "float32", "float16") if d not in DTYPES)
    device = next((d for d in DEVICES if _device_ok(d)), None)
    if device is None:
        pytest.skip("no verified device available here")
    fn = _callable(dtype, device)
    args = [_make(s, dtype, device) for s in INPUT_SETS[0]]
    with torch.no_grad():
        assert not _kernel.supports(*([fn] if METHOD else []), *args)
    new, ref = _both(fn, args, monkeypatch)
    torch.testing.assert_close(new, ref, atol=0.0, rtol=0.0)
'''


# The user's file when its name is not a module name (a test cannot `import 02-fused-softmax`).
LOAD_BY_PATH = """def _load_by_path(name):
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(
        "_kernelevo_user", os.path.join(os.path.dirname(os.path.abspath(__file__)), name))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and pickling look the module up by name
    spec.loader.exec_module(module)
    return module


_user = _load_by_path({file!r})"""
