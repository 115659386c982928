"""What a candidate's source may use, and the reason given when it uses something else.

The allowlist (imports, dunders, builtins) and the names whose use or assignment is a
reward hack (timers, correctness checks, global library state), as data the static checks
in static.py walk the syntax tree against.
"""

from __future__ import annotations

import functools
import importlib.util
import re
from collections.abc import Iterable
from pathlib import Path

FORBIDDEN_MODULES = {
    "threading": "threads escape the timer and the checks",
    "_thread": "threads escape the timer and the checks",
    "multiprocessing": "processes escape the timer and the checks",
    "concurrent": "thread/process pools escape the timer and the checks",
    "subprocess": "subprocesses are not allowed in a candidate",
    "socket": "network access is not allowed in a candidate",
    "asyncio": "background tasks escape the timer",
    "signal": "signal handlers are not allowed in a candidate",
    "ctypes": "raw memory access through ctypes is not allowed",
    "pickle": "loading pickled results is not allowed",
    "importlib": "dynamic imports are not allowed in a candidate",
    "faulthandler": "fault handlers are not allowed in a candidate",
    "gc": "reaching other objects through the garbage collector is not allowed",
    "inspect": "inspecting the harness is not allowed in a candidate",
    "requests": "network access is not allowed in a candidate",
    "urllib": "network access is not allowed in a candidate",
    "http": "network access is not allowed in a candidate",
}
GRAPH_REASON = (
    "a CUDA graph replays work captured outside the op recorder's view; launch the kernels from "
    "forward (the timing reports the forward's launch-free time as a graph beside its eager time)"
)
PRECISION_REASON = (
    "it lets library matrix products and convolutions run in TF32 or bf16 behind an fp32 "
    "reference; a task opts into TF32 with ALLOW_TF32 (the CLI with --allow-tf32)"
)
FORBIDDEN_CALLS = {
    "os.system": "running shell commands is not allowed",
    "os.fork": "forking is not allowed",
    "os.popen": "running shell commands is not allowed",
    "os.kill": "signalling processes is not allowed",
    "os._exit": "exiting the process is not allowed",
    "os.abort": "aborting the process is not allowed",
    "os.killpg": "signalling processes is not allowed",
    "sys.exit": "exiting the process is not allowed",
    "torch.cuda.Stream": "side streams escape the timer; launch on torch's current stream",
    "torch.cuda.stream": "side streams escape the timer; launch on torch's current stream",
    "torch.cuda.ExternalStream": "side streams escape the timer; launch on torch's current stream",
    "torch.Stream": "side streams escape the timer; launch on torch's current stream",
    "torch.compile": "torch.compile is the baseline, not a kernel",
    "torch.set_float32_matmul_precision": PRECISION_REASON,
    "torch.backends.cudnn.flags": PRECISION_REASON,
    "torch.cuda.CUDAGraph": GRAPH_REASON,
    "torch.cuda.graph": GRAPH_REASON,
    "torch.cuda.graphs.CUDAGraph": GRAPH_REASON,
    "torch.cuda.graphs.graph": GRAPH_REASON,
    "torch.cuda.make_graphed_callables": GRAPH_REASON,
    "torch.cuda.graphs.make_graphed_callables": GRAPH_REASON,
    "torch.jit.script": "TorchScript is not a kernel",
    "eval": "eval is not allowed in a candidate",
    "exec": "exec is not allowed in a candidate",
    "__import__": "dynamic imports are not allowed in a candidate",
    "importlib.import_module": "dynamic imports are not allowed in a candidate",
}
PATCH_ROOTS = (
    "torch",
    "triton",
    "tl",
    "time",
    "np",
    "numpy",
    "F",
    "nn",
    "builtins",
    "os",
    "sys",
    "math",
)
TENSOR_BASES = {"torch.Tensor", "Tensor"}
DUNDER_HOOKS = {"__torch_function__", "__torch_dispatch__"}
# What a Python candidate may import: the kernel languages, math, our CUDA helper, and pure
# language helpers. Anything else (numpy computes outside the op recorder, os reaches files) is refused.
ALLOWED_IMPORTS = (
    "torch",
    "triton",
    "math",
    "kernelevo.cuda",
    "__future__",
    "typing",
    "dataclasses",
    "functools",
    "itertools",
    "operator",
    "collections",
    "numbers",
    "enum",
    "warnings",
    "numpy",
)
# numpy only for the CUDA helper's fixed-width scalars: arrays would compute outside the op recorder
NUMPY_SCALARS = {
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "intp",
    "uintp",
    "bool_",
}
# numpy's constants, and its scalar maths allowed only on literal numbers (`np.log2(8)`): nothing of
# the task's data
NUMPY_CONSTANTS = {"pi", "e", "inf"}
NUMPY_LITERAL_MATH = {
    "log",
    "log2",
    "log10",
    "exp",
    "exp2",
    "sqrt",
    "floor",
    "ceil",
    "power",
    "abs",
}
BANNED_BUILTINS = {
    "getattr": "reaches attributes by computed name",
    "setattr": "sets attributes by computed name",
    "delattr": "deletes attributes",
    "vars": "exposes a module's or object's namespace",
    "globals": "exposes the module namespace",
    "locals": "exposes the frame's namespace",
    "eval": "runs code from a string",
    "exec": "runs code from a string",
    "compile": "builds code from a string",
    "open": "reads or writes files",
    "__import__": "imports modules dynamically",
    "breakpoint": "stops the process",
    "input": "reads the worker's channel",
}
ALLOWED_DUNDERS = {"__init__"}  # super().__init__(), nn.Module.__init__(self)
# Modules that torch (or triton) holds as attributes (`torch.os`, `torch.sys`): reaching them that
# way would walk around the import allowlist.
REACHABLE_MODULES = {
    "os",
    "sys",
    "ctypes",
    "subprocess",
    "builtins",
    "importlib",
    "inspect",
    "gc",
    "threading",
    "io",
    "pathlib",
    "shutil",
    "socket",
    "pickle",
    "platform",
    "glob",
    "tempfile",
    "signal",
    "multiprocessing",
    "types",
    "time",
}
# Library attributes whose assignment changes state the reference and the baselines share.
GLOBAL_STATE_PREFIXES = ("torch.backends.", "torch.set_", "torch.cuda.matmul", "torch._C")
TIMER_NAMES = (
    "time.",
    "torch.cuda.Event",
    "torch.cuda.synchronize",
    "torch.cuda.Stream",
    "torch.cuda.current_stream",
)
CHECK_NAMES = ("torch.allclose", "torch.testing", "torch.equal", "torch.isclose")


# The allowed modules' private names: torch's (`torch.utils._python_dispatch`, `torch._C`) reach
# the dispatcher and the op recorder's modes, typing's evaluate strings (`typing._eval_type`);
# published kernels use none but this weight-init helper.
# Operators (`torch.ops.aten._softmax`, as Inductor's code calls them) go through the dispatcher.
# torch's own checks (`torch._assert(cond, msg)`, `torch._check`) are harmless where model code keeps them.
PRIVATE_ALLOWED = {
    "torch.nn.init._calculate_fan_in_and_fan_out",
    "torch._assert",
    "torch._check",
    "torch._check_index",
    "torch._check_is_size",
    "torch._check_type",
    "torch._check_value",
    "torch._check_with",
}
# Inductor's Triton device helpers, which kernels taken from Inductor's output import: their own
# public names are allowed, their private ones are not.
PRIVATE_MODULES_ALLOWED = ("torch._inductor.runtime.triton_helpers",)


# Registering operators: an operator's body runs below the op recorder's dispatch mode, so the
# ATen ops inside it go unseen (torch.softmax wrapped in torch.library.custom_op passed as a kernel).
OPERATOR_REGISTRATION = ("torch.library", "torch.ops.load_library", "torch.classes")


def lies_under(name: str, prefixes: Iterable[str]) -> str | None:
    """The first of `prefixes` that `name` is or lies under (`torch.library.custom_op` lies under
    `torch.library`, `torch.libraryx` does not)."""
    return next((p for p in prefixes if name == p or name.startswith(p + ".")), None)


def registers_operators(full: str) -> str | None:
    """The registration API `full` names or lies under, if any."""
    return lies_under(full, OPERATOR_REGISTRATION)


@functools.cache
def torch_private_ops() -> frozenset[str]:
    """The private operators on torch itself (`_softmax`, `_scaled_mm`, `_foreach_add`), read from
    the installed torch's stubs without importing it; empty where they cannot be read."""
    spec = importlib.util.find_spec("torch")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        stub = Path(folder) / "_C" / "_VariableFunctions.pyi"
        if stub.is_file():
            return frozenset(re.findall(r"^def (_\w+)\(", stub.read_text(), re.MULTILINE))
    return frozenset()


def _torch_function(parts: list[str]) -> bool:
    """A private operator on torch itself goes through the dispatcher like any other; a private
    function written in Python (`torch._import_dotted_name`) is a way into torch and is not one."""
    return len(parts) == 2 and parts[0] == "torch" and parts[1] in torch_private_ops()


def private_part(full: str) -> str | None:
    """`full`'s prefix up to its first private component, when it names an allowed module's
    internals (`torch.utils._python_dispatch._pop_mode` -> `torch.utils._python_dispatch`;
    `typing._eval_type`, which evaluates strings)."""
    parts = full.split(".")
    if (
        not import_allowed(full)
        or full in PRIVATE_ALLOWED
        or parts[:2] == ["torch", "ops"]
        or _torch_function(parts)
    ):
        return None
    allowed = lies_under(full, PRIVATE_MODULES_ALLOWED)
    start = allowed.count(".") + 1 if allowed else 0
    for i, part in enumerate(parts[start:], start):
        if part.startswith("_") and not (part.startswith("__") and part.endswith("__")):
            return ".".join(parts[: i + 1])
    return None


def import_allowed(name: str) -> bool:
    """Whether `name` is, or lies inside, a module a candidate may import (`kernelevo.cuda.x`)."""
    return lies_under(name, ALLOWED_IMPORTS) is not None


def assignment_problem(target: str) -> str:
    """What assigning a library attribute does, said plainly."""
    if target.startswith(GLOBAL_STATE_PREFIXES):
        return (
            f"assigning {target} changes global state that the reference and the baselines share; "
            "a candidate must not change library settings (a task opts into TF32 with ALLOW_TF32)"
        )
    if target.startswith(TIMER_NAMES):
        return (
            f"assigning {target} patches what the timer uses; a candidate must not change the timer"
        )
    if target.startswith(CHECK_NAMES):
        return f"assigning {target} patches what the correctness checks use; a candidate must not change them"
    return (
        f"assigning {target} patches a library attribute that the reference, the checks and the timer "
        "share; keep your own state on ModelNew"
    )
