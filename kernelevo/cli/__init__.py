"""The `kernelevo` command line.

Each subcommand lives in its own module in this package and exposes
`register(subparsers)`; modules are discovered, so adding a command touches one file.
A subcommand's handler returns the process exit code.
"""

from __future__ import annotations

import argparse
import importlib
import math
import pkgutil
import sys
from collections.abc import Callable, Sequence

INT64_MAX = 2**63 - 1  # what SQLite stores, and what the judge's seeds may reach
# a week: far below what timers and waits accept, and longer than any limit a user means
MAX_SECONDS = 7 * 24 * 3600.0


class UserError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


def _number(text: str, example: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number, e.g. {example}") from None


def _whole(text: str, example: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected a whole number, e.g. {example}"
        ) from None


def seconds(text: str) -> float:
    """A time limit: nan, inf, 0 or a negative one would be read as a hang or never end."""
    value = _number(text, "600")
    if not 0 < value <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(
            f"{text}: must be a positive number of seconds, at most {MAX_SECONDS:.0f} (a week)"
        )
    return value


def positive_float(text: str) -> float:
    """An amount (dollars): nan or inf would never stop a search."""
    value = _number(text, "600")
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text}: must be a finite number more than 0")
    return value


def positive_int(text: str) -> int:
    """A count; past 2**63-1 it cannot be stored (SQLite's integers)."""
    value = _whole(text, "20")
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: must be 1 or more")
    if value > INT64_MAX:
        raise argparse.ArgumentTypeError(f"{text}: must be at most 2**63-1")
    return value


def at_most(limit: int, why: str) -> Callable[[str], int]:
    """A count from 1 to `limit`: each one more is a process, a thread or an open request, so a
    slip of the keyboard (`--workers 1000000`) would exhaust the machine rather than fail."""

    def parse(text: str) -> int:
        value = positive_int(text)
        if value > limit:
            raise argparse.ArgumentTypeError(f"{text}: must be at most {limit} ({why})")
        return value

    return parse


def count(text: str) -> int:
    """A count where 0 means none (e.g. no repairs)."""
    value = _whole(text, "3")
    if not 0 <= value <= INT64_MAX:
        raise argparse.ArgumentTypeError(f"{text}: must be a whole number from 0 to 2**63-1")
    return value


def seed_int(text: str) -> int:
    """A seed the judge's generators take: theirs are 64-bit, and input sets add small offsets."""
    value = _whole(text, "1234")
    if not 0 <= value <= INT64_MAX:
        raise argparse.ArgumentTypeError(f"{text}: must be an integer from 0 to 2**63-1")
    return value


class OneLineParser(argparse.ArgumentParser):
    """Argument errors in one line that says where the help is, not the whole usage block."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every subcommand's parser; only `command`'s where a module of that name registers it (a
    shell's `kernelevo verify` then imports one command module, not all of them)."""
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
    only = [command] if command in names else names
    parser = OneLineParser(
        prog="kernelevo", description="Evolve verified GPU kernels for PyTorch code."
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in only:
        register = getattr(importlib.import_module(f"{__name__}.{name}"), "register", None)
        if register is not None:
            register(sub)
    if command not in sub.choices and only != names:
        return build_parser()
    return parser


def _version() -> str:
    from kernelevo import __version__

    return f"kernelevo {__version__}"


def main(argv: Sequence[str] | None = None) -> int:
    from kernelevo.worker.bytecode import use_here

    use_here()
    given = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(given[0] if given else None)
    args, unknown = parser.parse_known_args(given)
    if unknown:  # said by the command's own parser, which names its own help
        commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        where = commands.choices.get(args.command) if args.command else None
        (where or parser).error(f"unrecognized arguments: {' '.join(unknown)}")
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    from kernelevo.sandbox import SandboxError, allow_unsandboxed
    from kernelevo.store.connection import StoreError

    if getattr(args, "no_sandbox", False):
        allow_unsandboxed()
        import os

        os.environ["KERNELEVO_NO_SANDBOX"] = (
            "1"  # searches and workers this command starts inherit it
        )
    try:
        code = int(args.handler(args) or 0)
        sys.stdout.flush()
        return code
    except (UserError, SandboxError, StoreError) as exc:
        print(f"kernelevo: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kernelevo: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `kernelevo runs | head`: the reader left; stop quietly
        _quiet_stdout()
        return 0
    except Exception as exc:  # never a traceback: one line, and how to get the details
        import os

        if os.environ.get("KERNELEVO_DEBUG") == "1":
            raise
        text = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
        print(
            f"kernelevo: error: {args.command} failed: {type(exc).__name__}{': ' + text if text else ''} "
            "(a KernelEvo bug; run again with KERNELEVO_DEBUG=1 for the traceback and report it)",
            file=sys.stderr,
        )
        return 1


def _quiet_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so the interpreter's final flush is silent."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
