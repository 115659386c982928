"""A sandboxed process's stdout/stderr, drained and capped.

The pipe is always read (a writer blocked on a full pipe would hang, not fail), but only
the first and the last part are kept: a 2 GiB flood costs a few KiB of memory and the
verdict still shows how the output began and how it ended. Past `flood_bytes` the
process is stopped.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable


class CappedOutput:
    """Collects up to `keep` bytes (head and tail halves) from a file descriptor in a thread."""

    def __init__(self, fd: int, keep: int, flood_bytes: int, on_flood: Callable[[], None]) -> None:
        self._fd, self._half = fd, max(keep // 2, 1)
        self._flood, self._on_flood = flood_bytes, on_flood
        self.head, self._tail = bytearray(), bytearray()
        self.total = 0
        self.flooded = False
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._drain, name="sandbox-output", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        try:
            while True:
                chunk = os.read(self._fd, 1 << 20)
                if not chunk:
                    break
                self._take(chunk)
                if self.total > self._flood and not self.flooded:
                    self.flooded = True
                    self._on_flood()
        except OSError:
            pass
        finally:
            os.close(self._fd)

    def _take(self, chunk: bytes) -> None:
        with self._lock:
            self.total += len(chunk)
            room = self._half - len(self.head)
            if room > 0:
                self.head += chunk[:room]
                chunk = chunk[room:]
            if chunk:
                self._tail += chunk
                del self._tail[: -self._half]

    def join(self, timeout: float = 5.0) -> None:
        self._thread.join(timeout)

    def text(self, limit: int | None = None) -> str:
        """What was kept, with a line saying how much was left out in between."""
        with self._lock:
            head, tail, total = bytes(self.head), bytes(self._tail), self.total
        skipped = total - len(head) - len(tail)
        body = head.decode(errors="replace")
        if skipped > 0:
            body += f"\n[... {skipped} bytes of output left out ...]\n"
        body += tail.decode(errors="replace")
        if self.flooded:
            body += f"\n[output stopped after {total} bytes: the process was killed for flooding its output]\n"
        return body if limit is None else body[-limit:]
