"""Source checks on a candidate's CUDA C++ strings: the cheap, sure ones.

Host threads and extra streams let a kernel run outside the stream the timer watches
(a kernel launched from a `std::thread` ran the timing phase into its limit), and dispatch-key
guards run ATen ops unseen by the op recorder; each pattern below has no honest use in a
KernelBench-style forward.
"""

from __future__ import annotations

import ast
import re

NATIVE_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"\bstd::thread\b|\bstd::jthread\b"),
        "std::thread starts a host thread that escapes the timer",
    ),
    (
        re.compile(r"\bpthread_create\s*\("),
        "pthread_create starts a host thread that escapes the timer",
    ),
    (
        re.compile(r"\bstd::async\s*[(<]"),
        "std::async runs work on a host thread that escapes the timer",
    ),
    (
        re.compile(r"\bcudaLaunchHostFunc\s*\("),
        "cudaLaunchHostFunc runs host code inside the stream",
    ),
    (
        re.compile(r"\bcudaStreamAddCallback\s*\("),
        "cudaStreamAddCallback runs host code inside the stream",
    ),
    (
        re.compile(r"\bcudaStreamCreate\w*\s*\("),
        "cudaStreamCreate makes a side stream the timer does not watch",
    ),
    (
        re.compile(r"\bgetStreamFromPool\s*\("),
        "getStreamFromPool takes a side stream the timer does not watch",
    ),
    (
        re.compile(r"\bgetStreamFromExternal\s*\("),
        "getStreamFromExternal uses a stream the timer does not watch",
    ),
    (
        re.compile(r"\bcudaStreamPerThread\b"),
        "cudaStreamPerThread is a stream the timer does not watch",
    ),
    (
        re.compile(r"\b(?:fork|popen|execv\w*)\s*\("),
        "starting processes from native code is not allowed",
    ),
    (
        re.compile(r"\b(?:\w*DispatchKeyGuard|AutoDispatch\w*|tls_set_dispatch_key\w*)\b"),
        "changing the dispatcher's keys hides ATen ops from the op recorder",
    ),
    (
        re.compile(
            r"\bnative::\w+|::redispatch\b|ATen/(?:(?:CUDA|CPU|Meta|Redispatch|Composite\w*)"
            r"Functions\w*\.h|ops/\w+_(?:native|(?:cuda|cpu|meta|composite\w*)_dispatch)\.h)"
        ),
        "ATen kernels called around the dispatcher run unseen by the op recorder; call torch:: ops",
    ),
    (
        re.compile(r"\bcu(?:da)?Graph\w*\s*\(|\bcu(?:da)?StreamBeginCapture\w*|\bCUDAGraph\b"),
        "a CUDA graph replays work captured outside the op recorder's view",
    ),
    (
        re.compile(
            r"\bPy(?:Run|Import|Eval|Sys|Object_(?:GetAttr|SetAttr|Call)|Dict|Module|Frame|Code)\w*\s*\("
            r"|\b(?:py|pybind11)::(?:module_?::import|eval|exec|globals|getattr|setattr)\b"
        ),
        "the Python C API reaches the interpreter, and through it the harness, around the allowlist",
    ),
    (
        re.compile(r"\bTORCH_LIBRARY\w*"),
        "an operator registered by the candidate runs its body unseen by the op recorder",
    ),
    (
        re.compile(r"\bDispatchKey::Python\w*"),
        "the Python dispatch keys are the op recorder's: native code does not touch them",
    ),
]
_CODE_HINT = re.compile(r"__global__|#include|<<<|torch::Tensor|cuda\w*\(")


def native_strings(tree: ast.Module) -> list[tuple[int, str]]:
    """(first line in the file, text) of every string constant that looks like C++/CUDA source."""
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and _CODE_HINT.search(node.value)
    ]


def _strip_comments(code: str) -> str:
    """Comments blanked (line structure kept), so a pattern named in a comment is not refused."""
    code = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), code, flags=re.S)
    return re.sub(r"//[^\n]*", "", code)


def check_native(tree: ast.Module) -> list[str]:
    """Problems as 'line N (CUDA source): what', N the line in the candidate file."""
    problems = []
    for first_line, text in native_strings(tree):
        code = _strip_comments(text)
        for pattern, why in NATIVE_PATTERNS:
            m = pattern.search(code)
            if m:
                line = first_line + code.count("\n", 0, m.start())
                problems.append(
                    f"line {line} (CUDA source): {m.group(0).strip('(<')} is not allowed: {why}"
                )
    return problems
