"""A real HTTP server on 127.0.0.1 that answers from a script, for testing LLM clients end to end.

A script is a list of replies consumed one per request, in arrival order; each item is a
`Reply`, a plain string (a successful reply with that text) or a callable taking the
`RecordedRequest` and returning either. A callable may also stand for the whole script.
When the script runs out, `default` answers (if given); otherwise the server answers 500
"fake script exhausted", which a test will notice.

Every request is recorded (method, path, lower-cased headers, JSON body, arrival time), and the
server tracks how many requests were open at once (`max_in_flight`). Like the real APIs, a 429,
408/409 or 5xx answer carries `retry-after` (seconds) and `retry-after-ms` unless the script sets
them (`RETRY_AFTER_MS` by default, short so tests stay fast).
The dialects (Anthropic, OpenAI) live in anthropic_server.py and openai_server.py.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    text: str = "ok"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0  # sleep before answering (longer than the client timeout: a timeout)
    usage: dict[str, int] | None = (
        None  # overrides: input_tokens, output_tokens, cache_read_tokens, cache_write_tokens
    )
    message: str | None = None  # error message for status >= 400
    stop_reason: str | None = None  # e.g. "max_tokens" (Anthropic) / "length" (OpenAI)
    body: dict[str, Any] | None = None  # a raw JSON body, sent as is


ScriptItem = Reply | str | Callable[["RecordedRequest"], Reply | str]
RETRY_AFTER_MS = 20


def retry_headers(status: int, headers: dict[str, str]) -> dict[str, str]:
    """What real servers send with a retryable error, unless the reply chose its own."""
    retryable = status in (408, 409, 429) or status >= 500
    if retryable and "retry-after" not in headers and "retry-after-ms" not in headers:
        return {"retry-after": "1", "retry-after-ms": str(RETRY_AFTER_MS), **headers}
    return headers


def text(t: str, **usage: int) -> Reply:
    """A successful reply; keyword arguments override the simulated usage."""
    return Reply(text=t, usage=usage or None)


def error(
    status: int,
    message: str | None = None,
    *,
    retry_after: float | str | None = None,
    retry_after_ms: int | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    h = dict(headers or {})
    if retry_after is not None:
        h["retry-after"] = str(retry_after)
    if retry_after_ms is not None:
        h["retry-after-ms"] = str(retry_after_ms)
    return Reply(status=status, headers=h, message=message)


def slow(delay_s: float, then: Reply | str = "ok") -> Reply:
    reply = Reply(text=then) if isinstance(then, str) else then
    reply.delay_s = delay_s
    return reply


def kernel_reply(
    code: str, explanation: str = "Here is a faster version that fuses the operations."
) -> str:
    """Reply text holding a candidate kernel in a ```python fenced block, as a model writes it."""
    return f"{explanation}\n\n```python\n{code.strip()}\n```\n"


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    json: Any
    received_at: float


class ScriptedServer:
    """Base: subclasses implement `route` (the provider's protocol)."""

    base_path = ""

    def __init__(
        self,
        script: Iterable[ScriptItem] | Callable[[RecordedRequest], Reply | str] = (),
        *,
        default: ScriptItem | None = None,
        api_key: str | None = None,
        models: Iterable[str] | None = None,
    ) -> None:
        if callable(script):
            self._script: list[ScriptItem] = []
            default = script
        else:
            self._script = list(script)
        self.default = default
        self.api_key = api_key
        self.models = set(models) if models is not None else None
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.replies_used = 0
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self.port: int | None = None  # kept after stop(), so a test can aim at a closed port
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> ScriptedServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            wbufsize = -1  # headers and body leave in one write (no Nagle/delayed-ACK stall)
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._handle()

            def do_POST(self) -> None:
                self._handle()

            def _handle(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                req = RecordedRequest(
                    self.command,
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                    time.monotonic(),
                )
                with server._lock:
                    server.requests.append(req)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    status, headers, payload, delay = server.route(req)
                    if delay:
                        time.sleep(delay)
                    data = json.dumps(payload).encode()
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timed out)
                finally:
                    with server._lock:
                        server.in_flight -= 1

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            block_on_close = False

        self._httpd = Server(("127.0.0.1", 0), Handler)
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.02,), name=type(self).__name__, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> ScriptedServer:
        return self.start() if self._httpd is None else self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self.port is not None, "server not started"
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """What to give the SDK (or ANTHROPIC_BASE_URL / OPENAI_BASE_URL / --base-url)."""
        return self.url + self.base_path

    def posts(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.method == "POST"]

    # -- script ---------------------------------------------------------------------------
    def next_reply(self, req: RecordedRequest) -> Reply:
        with self._lock:
            if self._script:
                item: ScriptItem | None = self._script.pop(0)
            else:
                item = self.default
            self.replies_used += 1
        if item is None:
            return Reply(
                status=500, message=f"fake script exhausted after {self.replies_used - 1} replies"
            )
        if callable(item) and not isinstance(item, Reply):
            item = item(req)
        return Reply(text=item) if isinstance(item, str) else item

    def route(self, req: RecordedRequest) -> tuple[int, dict[str, str], Any, float]:
        raise NotImplementedError


def sent_key(req: RecordedRequest) -> str | None:
    """The API key a request carried: `x-api-key`, or `Authorization: Bearer` (SDK 2.x sends that)."""
    if "x-api-key" in req.headers:
        return req.headers["x-api-key"]
    auth = req.headers.get("authorization", "")
    return auth[len("Bearer ") :] if auth.startswith("Bearer ") else None


def approx_tokens(s: str) -> int:
    """The fakes' tokenizer: 4 characters a token (real ones give ~3.5-4 on code)."""
    return len(s) // 4
