"""The analysis process: finds targets in source text. One `Detect` request frame in, one
`Detected` reply frame out, in the engine's framing (kernelevo/worker/protocol.py).

Parsing a 10,000-line file with `ast` takes 0.2-0.7 s and holds the GIL, so it runs
here instead of in the server's event loop. It reads text only; it never imports or
runs the user's file. `python -m kernelevo_server.analysis_worker`.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kernelevo.worker import protocol
from kernelevo.worker.protocol import Reply, Request, RequestError, RequestKinds


@dataclass(frozen=True)
class Detected(Reply):
    """The targets found in one text (maps of kernelevo.targets.model.Target's fields) and what
    stopped detection; `traceback` when the detector itself failed. `id`: the request's."""

    id: int
    targets: list[dict[str, Any]]
    errors: list[str]
    traceback: str | None = None


R = TypeVar("R", bound=Reply)


@dataclass(frozen=True)
class AnalysisRequest(Request, Generic[R]):
    """A request to the analysis process; R is the record it is answered with."""


ANALYSIS: RequestKinds[AnalysisRequest[Any]] = RequestKinds()


@ANALYSIS.kind("detect")
@dataclass(frozen=True)
class Detect(AnalysisRequest[Detected]):
    """The targets of `source`, the text of `path` as the editor holds it."""

    id: int
    path: str
    source: str


def _load_detector() -> Callable[[str, str], Any]:
    from kernelevo.targets.detect import detect_source

    return detect_source


def handle(detect: Callable[[str, str], Any], request: Detect) -> Detected:
    try:
        detection = detect(request.source, request.path)
        targets = [
            dataclasses.asdict(t)
            if dataclasses.is_dataclass(t) and not isinstance(t, type)
            else dict(t)
            for t in detection.targets
        ]
        return Detected(request.id, targets, [str(e) for e in detection.errors])
    except Exception as exc:  # a detector bug must not kill the worker
        return Detected(
            request.id, [], [f"target detection failed: {exc!r}"], traceback.format_exc()
        )


def answer(
    detect: Callable[[str, str], Any] | None, load_error: str, frame: dict[str, Any]
) -> Detected:
    """One frame's answer: its targets, or why there are none (a frame that is no request, a
    detector that could not be loaded)."""
    try:
        request = ANALYSIS.parse(frame)
    except RequestError as exc:
        seq = frame.get("id")
        return Detected(seq if isinstance(seq, int) else 0, [], [f"not a request: {exc}"])
    assert isinstance(request, Detect)
    if detect is None:
        return Detected(request.id, [], [load_error])
    return handle(detect, request)


def main(detect: Callable[[str, str], Any] | None = None) -> int:
    channel_in = sys.stdin.buffer
    channel_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)  # a stray print goes to stderr, never into the channel
    sys.stdout = sys.stderr
    load_error = ""
    try:
        detect = detect or _load_detector()
    except ImportError as exc:
        detect = None
        load_error = f"target detection is not available: {exc}"
    while (frame := protocol.read(channel_in)) is not None:
        protocol.write(channel_out, answer(detect, load_error, frame).wire())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
