"""What a recorded call passed that a task cannot, checked away by a second call (capture child).

A task calls its target positionally with values rebuilt from the recording. Two things of a
real call do not survive that: an argument that is a live object (a Hugging Face layer's KV
`cache`, a tokenizer) and keyword arguments (`**kwargs`, keyword-only ones). Dropping them in
silence would give a task that computes something else than the user's code. So, in the
recording process, the target is called a second time with each such argument at its default
and without the keywords, from the same random state; only when the outputs are the same is
the recording written that way, saying what was left out. Otherwise the recording keeps them,
and the task build refuses with the reason.
"""

from __future__ import annotations

import ast
import inspect
from typing import Any

_MUTABLE = (list, dict, set)
_MAX_DEPTH = 8  # nesting of outputs compared: a cache's layers' tensors are 3 deep


def keywords_passed(frame: Any) -> dict[str, Any]:
    """Keyword-only arguments not at their default, and everything in `**kwargs`."""
    code = frame.f_code
    start = code.co_argcount
    kwonly = code.co_varnames[start : start + code.co_kwonlyargcount]
    fn = target_function(frame)
    defaults = dict(getattr(fn, "__kwdefaults__", None) or {})
    passed = {
        n: frame.f_locals[n]
        for n in kwonly
        if n in frame.f_locals and (n not in defaults or frame.f_locals[n] is not defaults[n])
    }
    if code.co_flags & 0x08:  # **kwargs
        index = start + code.co_kwonlyargcount + (1 if code.co_flags & 0x04 else 0)
        passed.update(frame.f_locals.get(code.co_varnames[index]) or {})
    return passed


def target_function(frame: Any) -> Any:
    """The function the frame runs (a method looked up on its instance's class), or None. Under
    decorators (functools.wraps), the function itself: the frame's arguments are the ones it got."""
    code = frame.f_code
    found = []
    if code.co_argcount and code.co_varnames[0] in frame.f_locals:
        found.append(getattr(type(frame.f_locals[code.co_varnames[0]]), code.co_name, None))
    found.append(frame.f_globals.get(code.co_name))
    for fn in found:
        try:
            fn = inspect.unwrap(fn) if fn is not None else None
        except ValueError:  # a cycle of __wrapped__
            continue
        if getattr(fn, "__code__", None) is code:
            return fn
    return None


def python_original(fn: Any) -> Any:
    """The function whose parameters a call takes: a @torch.jit.script function has no Python
    signature, but the function it was scripted from (kept for Dynamo) has; a function that
    transformers' `@use_kernel_forward_from_hub` turned into a module takes `(*args, **kwargs)`,
    and the function its forward closes over is the one written."""
    original = getattr(fn, "_torchdynamo_inline", None)
    if inspect.isfunction(original):
        return original
    if not inspect.isfunction(fn) and not inspect.isclass(fn):
        forward = getattr(type(fn), "forward", None)
        inner = []
        for cell in getattr(forward, "__closure__", None) or ():
            try:
                if inspect.isfunction(cell.cell_contents):
                    inner.append(cell.cell_contents)
            except ValueError:  # an empty cell
                continue
        if len(inner) == 1:
            return inner[0]
    return fn


def literal_defaults(fn: Any, names: list[str], specs: list[dict]) -> dict[int, Any]:
    """For each recorded argument that cannot be rebuilt: its default, where that is a literal."""
    try:
        params = inspect.signature(python_original(fn)).parameters
    except (TypeError, ValueError):
        return {}
    found = {}
    for i, (name, spec) in enumerate(zip(names, specs, strict=False)):
        p = params.get(name)
        if spec.get("kind") != "unsupported" or p is None or p.default is inspect.Parameter.empty:
            continue
        try:
            if ast.literal_eval(repr(p.default)) == p.default and not isinstance(
                p.default, _MUTABLE
            ):
                found[i] = p.default
        except (ValueError, SyntaxError):
            continue
    return found


class SecondCall:
    """The local trace function of the target's recorded frame: at its return, calls the target
    again without what the task cannot pass and tells whether the outputs are the same."""

    def __init__(
        self,
        frame: Any,
        method: bool,
        values: list[Any],
        swaps: dict[int, Any],
        torch: Any,
        keep: dict[str, Any] | None = None,
    ) -> None:
        self.fn = target_function(frame)
        self.owner = frame.f_locals[frame.f_code.co_varnames[0]] if method else None
        self.values, self.swaps, self.torch = list(values), swaps, torch
        self.rng = torch.get_rng_state()
        gpu = torch.cuda.is_available() and torch.cuda.is_initialized()
        self.gpu_rng = torch.cuda.get_rng_state_all() if gpu else None
        self.raised = False
        self.verdict: str | None = None  # "same", or why not
        self.keep = keep or {}  # plain-valued keywords a task can pass as they were
        self.kept: dict[str, Any] = {}  # those the "same" outputs needed

    def on_event(self, frame: Any, event: str, arg: Any) -> Any:
        if event == "exception":
            self.raised = True
        elif event == "return":
            self.verdict = "the call raised" if self.raised else self._compare(arg)
        return self.on_event

    def _compare(self, first: Any) -> str:
        """Whether ("same") a call without what the task cannot pass gives the same outputs: first
        without any keyword, then with the plain-valued ones (`keep`), which the task passes."""
        why = "without them the outputs differ"
        for keywords in ({}, self.keep) if self.keep else ({},):
            try:
                again = self._again(keywords)
            except Exception as exc:
                why = f"called without them it raised {type(exc).__name__}: {str(exc)[:160]}"
                continue
            if same_outputs(first, again, self.torch):
                self.kept = dict(keywords)
                return "same"
        return why

    def _again(self, keywords: dict[str, Any]) -> Any:
        args = [self.swaps.get(i, v) for i, v in enumerate(self.values)]
        if self.owner is not None:
            args.insert(0, self.owner)
        self.torch.set_rng_state(self.rng)
        if self.gpu_rng is not None:
            self.torch.cuda.set_rng_state_all(self.gpu_rng)
        return self.fn(*args, **keywords)


def same_outputs(a: Any, b: Any, torch: Any, depth: int = 0) -> bool:
    """Equal tensors (to float rounding), sequences, dicts and plain values, and objects of one
    class whose attributes are (a returned KV cache) or that compare equal (a torch.device)."""
    if a is b:
        return True
    if isinstance(a, torch.Tensor):
        if not isinstance(b, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.is_floating_point() or a.is_complex():
            return bool(torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True))
        return bool(torch.equal(a, b))
    if depth > _MAX_DEPTH:
        return False
    if isinstance(a, (list, tuple)):
        return (
            isinstance(b, (list, tuple))
            and len(a) == len(b)
            and all(same_outputs(x, y, torch, depth + 1) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, dict):
        return (
            isinstance(b, dict)
            and a.keys() == b.keys()
            and all(same_outputs(a[k], b[k], torch, depth + 1) for k in a)
        )
    if a is None or isinstance(a, (bool, int, float, str)):
        return bool(a == b)
    if type(a) is not type(b):
        return False
    if hasattr(a, "__dict__") and hasattr(b, "__dict__"):
        return same_outputs(vars(a), vars(b), torch, depth + 1)
    try:  # a value without attributes of its own: a torch.device, a dtype, an enum member
        return bool(a == b)
    except Exception:  # an array's elementwise ==, or an == that raises: not the same
        return False
