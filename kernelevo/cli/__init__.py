"""The `kernelevo` command line.

Each subcommand lives in its own module in this package and exposes
`register(subparsers)`; modules are discovered, so adding a command touches one file.
A subcommand's handler returns the process exit code.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence


class UserError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


class OneLineParser(argparse.ArgumentParser):
    """Argument errors in one line that says where the help is, not the whole usage block."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="kernelevo", description="Evolve verified GPU kernels for PyTorch code."
    )
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if register is not None:
            register(sub)
    return parser


def _version() -> str:
    from kernelevo import __version__

    return f"kernelevo {__version__}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    from kernelevo.sandbox import SandboxError, allow_unsandboxed
    from kernelevo.store_open import StoreError

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
