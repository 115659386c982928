"""Which of a kernel's listed launch configurations Inductor's own runtime benchmark keeps.

Inductor lists several configurations for most reductions and many pointwise kernels;
torch.compile times them all on the first call with the real inputs and keeps the fastest
(`CachingAutotuner` in torch._inductor.runtime.triton_heuristics). A candidate extracted from
Inductor's code that launches the first listed one instead is not the code torch.compile runs:
for a min over 64 channels the first is one output row per program. On a GPU the capture child
therefore lets that benchmark run on the task's inputs and records, per kernel, the
configuration it kept. Runs in the capture child only (imports torch's Inductor runtime).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

ConfigRecord = dict[str, Any]  # {"kwargs": {...}, "num_warps": int, "num_stages": int}


def config_record(config: Any) -> ConfigRecord:
    """A triton.Config as the plain JSON the rewrite reads."""
    return {
        "kwargs": dict(config.kwargs),
        "num_warps": config.num_warps,
        "num_stages": config.num_stages,
    }


class AutotunerLog:
    """The autotuner objects Inductor builds while the log is open, in order of creation."""

    def __init__(self) -> None:
        self.made: list[Any] = []

    @contextmanager
    def recording(self) -> Iterator[AutotunerLog]:
        """Wraps `triton_heuristics.cached_autotune` (every generated kernel's decorator goes
        through it) so each object it returns is kept; the original is put back after."""
        from torch._inductor.runtime import triton_heuristics

        original = triton_heuristics.cached_autotune

        def keeping(*args: Any, **kwargs: Any) -> Callable[[Any], Any]:
            decorate = original(*args, **kwargs)

            def keep(fn: Any) -> Any:
                made = decorate(fn)
                self.made.append(made)
                return made

            return keep

        triton_heuristics.cached_autotune = keeping
        try:
            yield self
        finally:
            triton_heuristics.cached_autotune = original


def kernel_name(autotuner: Any) -> str | None:
    meta = getattr(autotuner, "inductor_meta", None) or {}
    name = meta.get("kernel_name")
    if name:
        return str(name)
    fn = getattr(autotuner, "fn", None)
    return getattr(fn, "__name__", None)


def chosen_config(autotuner: Any) -> tuple[ConfigRecord | None, str]:
    """(the configuration the autotuner kept, "") or (None, why there is none)."""
    launchers = getattr(autotuner, "launchers", None)
    if launchers is None:
        return None, "this torch's autotuner has no `launchers` to read the kept configuration from"
    if len(launchers) != 1:
        listed = len(getattr(autotuner, "configs", None) or [])
        return None, (
            f"the kernel was not launched on the task's inputs ({len(launchers)} of "
            f"{listed} configurations still compiled, none kept)"
        )
    config = getattr(launchers[0], "config", None)
    if config is None or not hasattr(config, "kwargs"):
        return None, "this torch's launcher has no `config` to read the kept configuration from"
    return config_record(config), ""


def chosen_configs(autotuners: list[Any]) -> tuple[dict[str, ConfigRecord], dict[str, str]]:
    """Per kernel name, the configuration kept (the latest object of a name wins), and per
    kernel without one, why."""
    chosen: dict[str, ConfigRecord] = {}
    missing: dict[str, str] = {}
    for autotuner in autotuners:
        name = kernel_name(autotuner)
        if name is None:
            continue
        config, why = chosen_config(autotuner)
        if config is None:
            chosen.pop(name, None)
            missing[name] = why
        else:
            missing.pop(name, None)
            chosen[name] = config
    return chosen, missing


def forget_loaded_kernels() -> None:
    """Drops Inductor's in-process module cache, so a kernel compiled again for another input set
    is built (and benchmarked) again instead of reusing the object tuned for the first one."""
    try:
        from torch._inductor.codecache import PyCodeCache
    except ImportError:
        return
    clear = getattr(PyCodeCache, "cache_clear", None)
    if callable(clear):
        clear()
