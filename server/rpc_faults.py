"""The JSON-RPC layer's fault handling: every request gets an answer, refusals are not crashes.

pygls drops a request whose params do not fit its type (`hover {}`, a custom request without
params) without answering it; a language client then waits forever. Here such a request is
answered with InvalidParams naming the method, a custom request may omit its params, and a
refusal meant for the user (`KernelEvoError`) is logged as one line instead of a traceback.
A frame whose body is not JSON is answered with a JSON-RPC parse error (id null) and logged as
one line; the editor gets no "Error in server" popup for its own malformed frame.
"""

from __future__ import annotations

import json
import logging
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from cattrs import transform_error
from cattrs.errors import ClassValidationError
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcParseError
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCRequestMessage

logger = logging.getLogger(__name__)


class KernelEvoError(JsonRpcException):
    """A request the server refuses, with a message meant for the user (LSP RequestFailed)."""

    CODE = -32803


@dataclass
class _Unreadable:
    """A request whose params could not be read: answered with InvalidParams, never run."""

    id: Any
    method: str
    detail: str


class KernelEvoProtocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]) -> Any:
        if not ("jsonrpc" in data and "id" in data and "method" in data and "error" not in data):
            return super().structure_message(data)
        request_type = self.get_message_type(data["method"])
        if request_type is None:  # a custom request: params are optional
            data = {"params": None, **data}
            request_type = JsonRPCRequestMessage
        try:
            return self._converter.structure(data, request_type)
        except Exception as exc:
            detail = _describe(exc)
            logger.info("request %s %r: unreadable params (%s)", data["id"], data["method"], detail)
            return _Unreadable(data["id"], str(data["method"]), detail)

    def handle_message(self, message: Any) -> None:
        if isinstance(message, _Unreadable):
            error = JsonRpcInvalidParams(
                f"{message.method}: the params do not fit this request ({message.detail})"
            )
            self._send_response(message.id, error=error.to_response_error())
            return
        super().handle_message(message)

    def _send_handler_result(self, future: Future[Any], *, msg_id: Any) -> None:
        exc = None if future.cancelled() else future.exception()
        if isinstance(exc, KernelEvoError):
            self._request_futures.pop(msg_id, None)
            logger.info("request %s refused: %s", msg_id, exc.message)
            self._send_response(msg_id, error=exc.to_response_error())
            return
        super()._send_handler_result(future, msg_id=msg_id)


def answer_unreadable_frame(protocol: LanguageServerProtocol, error: Exception) -> bool:
    """Answer a frame pygls could not parse as JSON-RPC's parse error; False for other faults."""
    if not isinstance(error, (json.JSONDecodeError, UnicodeDecodeError)):
        return False
    error_field = {"code": JsonRpcParseError.CODE, "message": f"Parse error: {_describe(error)}"}
    protocol._send_data({"jsonrpc": "2.0", "id": None, "error": error_field})
    return True


class OneLineFaults(logging.Filter):
    """pygls logs a frame it cannot read with a traceback; the editor's log gets one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.msg == "Unable to handle message":
            exc = record.exc_info[1]
            record.msg = "ignored a message the server could not read: %s"
            record.args = (_describe(exc) if isinstance(exc, Exception) else "unknown fault",)
            record.exc_info = None
            record.exc_text = None
        return True


def _describe(exc: Exception) -> str:
    """E.g. "required field missing @ $.params.textDocument" rather than cattrs' summary line."""
    if isinstance(exc, ClassValidationError):
        return "; ".join(transform_error(exc))[:300]
    return (str(exc).splitlines() or [type(exc).__name__])[0][:300]
