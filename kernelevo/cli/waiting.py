"""A heartbeat on stderr while one long call runs, so a command is never silent for minutes.

A verdict on the CPU (Triton's interpreter) or of a hanging candidate can take up to its time
limit. On a terminal one line counts the seconds and is cleared at the end; in a pipe or a log a
line is written after `first_s` of silence (at most half the limit) and then every `every_s`, so
short calls print nothing.
"""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import TextIO


class StillWorking:
    def __init__(
        self,
        what: str,
        limit_s: float,
        note: str,
        first_s: float = 15.0,
        every_s: float = 60.0,
        stream: TextIO | None = None,
    ) -> None:
        self.what, self.note = what, note
        self.first_s, self.every_s = min(first_s, limit_s / 2), every_s
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True)
        self._drawn = False

    def __enter__(self) -> StillWorking:
        self._started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
        if self._drawn:
            self.stream.write("\r\033[K")
            self.stream.flush()

    def line(self, elapsed: float) -> str:
        return f"kernelevo: still {self.what} ({elapsed:.0f} s; {self.note})"

    def _beat(self) -> None:
        wait = 1.0 if self.tty else self.first_s
        while not self._stop.wait(wait):
            elapsed = time.monotonic() - self._started
            if self.tty:
                if elapsed >= 2.0:
                    self.stream.write("\r\033[K" + self.line(elapsed))
                    self._drawn = True
            else:
                self.stream.write(self.line(elapsed) + "\n")
                wait = self.every_s
            self.stream.flush()
