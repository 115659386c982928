"""Faults at the protocol's edge, over a raw stdio pipe (no LSP library on the client side):
every request gets an answer, however bad its params, and the server goes when its client goes."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from lsp_harness import REPO, SERVER, alive

pytestmark = pytest.mark.timeout(60)


class RawClient:
    def __init__(self, cwd: Path) -> None:
        env = dict(
            os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
        )
        self.proc = subprocess.Popen(
            SERVER,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
        )
        self.buffer = b""

    def send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def response(self, msg_id: int, timeout: float = 10.0) -> dict:
        """The answer to request `msg_id` (server notifications and requests are skipped)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            while b"\r\n\r\n" in self.buffer:
                head, rest = self.buffer.split(b"\r\n\r\n", 1)
                n = int(
                    next(
                        line.split(b":")[1]
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    )
                )
                if len(rest) < n:
                    break
                message, self.buffer = json.loads(rest[:n]), rest[n:]
                if message.get("id") == msg_id and "method" not in message:
                    return message
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready:
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                self.buffer += chunk
        raise AssertionError(f"no answer to request {msg_id} within {timeout} s")

    def initialize(self, process_id: int | None, root: Path) -> None:
        self.send(
            {
                "id": 1,
                "method": "initialize",
                "params": {"processId": process_id, "rootUri": root.as_uri(), "capabilities": {}},
            }
        )
        assert "result" in self.response(1)
        self.send({"method": "initialized", "params": {}})

    def exited_within(self, seconds: float) -> bool:
        try:
            self.proc.wait(seconds)
            return True
        except subprocess.TimeoutExpired:
            return False

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def raw(tmp_path):
    client = RawClient(tmp_path)
    yield client
    client.close()


BAD_REQUESTS = [
    ("textDocument/hover", {}),
    ("textDocument/hover", {"textDocument": {"uri": 3}, "position": {"line": "x", "character": 0}}),
    ("textDocument/codeLens", {"textDocument": {}}),
    ("textDocument/codeAction", None),
    ("kernelevo/cancel", {"jobId": [1]}),
    ("kernelevo/cancel", None),
    ("kernelevo/optimize", []),
    ("kernelevo/optimize", {"uri": 1, "targetId": {}}),
    (
        "kernelevo/optimize",
        {"uri": "file:///x.py", "targetId": "module:Model", "iterations": "many"},
    ),
    ("kernelevo/proposal", "x"),
    ("workspace/executeCommand", {"command": "kernelevo.apply", "arguments": [1, 2]}),
    ("workspace/executeCommand", {"command": "kernelevo.applied"}),
]


def test_every_bad_request_gets_an_error_answer(raw, tmp_path):
    raw.initialize(os.getpid(), tmp_path)
    for n, (method, params) in enumerate(BAD_REQUESTS, start=10):
        message = {"id": n, "method": method}
        if params is not None:
            message["params"] = params
        raw.send(message)
        got = raw.response(n)
        assert "error" in got and got["error"]["message"], (method, params, got)
        assert "Traceback" not in got["error"]["message"]
    raw.send({"id": 99, "method": "kernelevo/jobs"})  # params are optional for the job list
    assert raw.response(99)["result"] == []
    assert raw.proc.poll() is None  # still serving
    raw.proc.stdin.close()
    assert raw.exited_within(10)
    logged = raw.proc.stderr.read().decode(errors="replace")
    assert "Traceback" not in logged and "ERROR" not in logged, logged[
        -3000:
    ]  # refusals are not crashes


def test_a_frame_that_is_not_json_gets_a_parse_error_and_one_log_line(raw, tmp_path):
    raw.initialize(os.getpid(), tmp_path)
    for body in (b'{"bad json', b"\xff\xfe{}"):
        raw.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        raw.proc.stdin.flush()
        got = raw.response(None)
        assert got["error"]["code"] == -32700 and got["error"]["message"].startswith("Parse error")
    raw.send({"id": 5, "method": "kernelevo/jobs"})
    assert raw.response(5)["result"] == []  # still serving
    raw.proc.stdin.close()
    assert raw.exited_within(10)
    logged = raw.proc.stderr.read().decode(errors="replace")
    assert "Traceback" not in logged, logged[-3000:]
    assert logged.count("ignored a message the server could not read") == 2, logged[-3000:]


def test_exits_when_stdin_closes_right_after_did_open(raw, tmp_path):
    source = (REPO / "examples" / "rms_norm.py").read_text()
    (tmp_path / "rms_norm.py").write_text(source)
    raw.initialize(os.getpid(), tmp_path)
    raw.send(
        {
            "method": "textDocument/didOpen",
            "params": {
                "textDocument": {
                    "uri": (tmp_path / "rms_norm.py").as_uri(),
                    "languageId": "python",
                    "version": 1,
                    "text": source,
                }
            },
        }
    )
    raw.send({"id": 2, "method": "kernelevo/debugInfo"})
    worker = raw.response(2)["result"]["analysisWorkerPid"]
    raw.proc.stdin.close()
    assert raw.exited_within(10), "the server outlived its client's stdin"
    if worker:
        deadline = time.monotonic() + 5
        while alive(worker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not alive(worker), "the analysis worker outlived the server"


def test_exits_when_the_client_process_is_gone(raw, tmp_path):
    parent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        raw.initialize(parent.pid, tmp_path)
        raw.send({"id": 2, "method": "kernelevo/jobs", "params": None})
        assert raw.response(2)["result"] == []
        parent.kill()
        parent.wait()
        assert raw.exited_within(10), "the server outlived its client's process (stdin still open)"
    finally:
        parent.kill()
