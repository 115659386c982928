"""The heartbeat of a long command: silent for short calls, a line after the first seconds."""

import io
import time

from kernelevo.cli.waiting import StillWorking


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_short_call_prints_nothing():
    out = io.StringIO()
    with StillWorking("verifying", 60, "up to 60 s", first_s=5, stream=out):
        time.sleep(0.1)
    assert out.getvalue() == ""


def test_in_a_pipe_a_line_after_the_first_seconds_then_every_interval():
    out = io.StringIO()
    with StillWorking("verifying", 60, "up to 60 s", first_s=0.3, every_s=0.5, stream=out):
        time.sleep(1.05)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and all(x.startswith("kernelevo: still verifying (") for x in lines)
    assert lines[0].endswith("s; up to 60 s)")


def test_the_first_line_comes_by_half_the_limit():
    out = io.StringIO()
    with StillWorking("verifying", 1.0, "up to 1 s", first_s=15, stream=out):
        time.sleep(0.8)
    assert out.getvalue().startswith("kernelevo: still verifying (")


def test_on_a_terminal_one_line_is_redrawn_and_cleared_at_the_end():
    out = Terminal()
    with StillWorking("verifying", 60, "up to 60 s", stream=out):
        time.sleep(3.2)
    text = out.getvalue()
    assert "\n" not in text and text.count("\r\033[K") >= 2 and text.endswith("\r\033[K")
