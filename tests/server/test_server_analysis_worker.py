"""The analysis process speaks the engine's framing with typed records (server/analysis_worker.py):
a `Detect` frame is answered with a `Detected` frame carrying the request's id, a frame that is
no request gets an answer saying so and the process keeps serving, and the server's
AnalysisWorker turns the answer into its targets."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

from kernelevo_server.analysis_worker import Detect, Detected
from kernelevo_server.analyzer import WORKER_COMMAND, AnalysisWorker, child_pythonpath

from kernelevo.worker import protocol

REPO = Path(__file__).resolve().parents[2]
SOFTMAX = REPO / "examples" / "softmax.py"


def test_the_process_answers_each_frame_and_outlives_one_that_is_no_request() -> None:
    env = dict(os.environ, PYTHONPATH=child_pythonpath())
    proc = subprocess.Popen(
        WORKER_COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=REPO
    )
    assert proc.stdin and proc.stdout
    try:
        source = SOFTMAX.read_text()
        for frame in (
            Detect(id=1, path=str(SOFTMAX), source=source).wire(),
            {"op": "exec", "id": 2, "code": "print(1)"},
            Detect(id=3, path=str(SOFTMAX), source=source).wire(),
        ):
            proc.stdin.write(protocol.encode(frame))
        proc.stdin.close()
        answers = []
        while (frame := protocol.read(proc.stdout)) is not None:
            answers.append(Detected.parse(frame))
    finally:
        proc.kill()
        proc.wait()
    first, refused, third = answers
    assert first.id == 1 and first.targets and not first.errors
    assert refused.id == 2 and not refused.targets and "not a request" in refused.errors[0]
    assert third.id == 3 and third.targets == first.targets


def test_the_server_side_reads_targets_from_the_process() -> None:
    async def detect() -> tuple[list, list[str]]:
        worker = AnalysisWorker(cwd=str(REPO))
        try:
            return await worker.detect(str(SOFTMAX), SOFTMAX.read_text())
        finally:
            await worker.close()

    targets, errors = asyncio.run(detect())
    assert targets and not errors, errors
    assert all(t.start_line <= t.end_line and t.path == str(SOFTMAX) for t in targets)
    assert "Model" in {t.name for t in targets}
