"""The clock, CUDA events and device synchronisation, captured when this module is imported.

Imported (through timing.py) before any candidate code loads, so a candidate that patches
`time.perf_counter` or `torch.cuda.*` afterwards changes nothing the timers call;
`tampered()` names what was replaced.
"""

from __future__ import annotations

import time
from typing import Any

import torch

# Captured at import, before untrusted code can patch them.
_perf_counter = time.perf_counter
_EventBase = torch.cuda.Event.__mro__[1]
_event_record: Any = getattr(_EventBase, "record", None)  # absent on CPU-only builds
_event_elapsed: Any = getattr(_EventBase, "elapsed_time", None)
_event_synchronize: Any = getattr(_EventBase, "synchronize", None)
_event_query = getattr(_EventBase, "query", None)
_cuda_sleep = getattr(torch.cuda, "_sleep", None)
_Event = torch.cuda.Event
_current_stream = torch.cuda.current_stream
_cuda_synchronize = torch.cuda.synchronize
_c_cuda_synchronize = getattr(torch._C, "_cuda_synchronize", None)

_CAPTURED = {
    "time.perf_counter": (lambda: time.perf_counter, _perf_counter),
    "torch.cuda.Event": (lambda: torch.cuda.Event, _Event),
    "torch.cuda.Event.record": (lambda: torch.cuda.Event.record, torch.cuda.Event.record),
    "torch.cuda.Event.elapsed_time": (
        lambda: torch.cuda.Event.elapsed_time,
        torch.cuda.Event.elapsed_time,
    ),
    "torch.cuda.Event.synchronize": (
        lambda: torch.cuda.Event.synchronize,
        torch.cuda.Event.synchronize,
    ),
    "torch.cuda.synchronize": (lambda: torch.cuda.synchronize, _cuda_synchronize),
    "torch.cuda.current_stream": (lambda: torch.cuda.current_stream, _current_stream),
    "torch._C._cuda_synchronize": (
        lambda: getattr(torch._C, "_cuda_synchronize", None),
        _c_cuda_synchronize,
    ),
}


def tampered() -> list[str]:
    """Names of timing primitives that were replaced since they were captured."""
    return [name for name, (now, then) in _CAPTURED.items() if now() is not then]
