"""`kernelevo serve`: the language server on stdio (for any LSP editor).

Imports nothing heavy: the server starts in well under a second and never loads torch.
The server package is `kernelevo_server` (the `server/` folder of the source tree).
"""

from __future__ import annotations

import argparse
import logging
import sys


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "serve",
        help="run the KernelEvo language server on stdio",
        description="Run the KernelEvo language server on stdio.",
    )
    p.add_argument(
        "--stdio",
        action="store_true",
        help="accepted because language clients append it; stdio is the only transport",
    )
    p.add_argument(
        "--log-level", default="WARNING", help="logging level for stderr (default WARNING)"
    )
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, str(args.log_level).upper(), logging.WARNING),
        format="%(asctime)s %(name)s %(levelname)s: %(message)s",
    )
    from kernelevo_server.app import create_server
    from kernelevo_server.rpc_faults import OneLineFaults

    for handler in logging.getLogger().handlers:
        handler.addFilter(OneLineFaults())

    try:
        create_server().start_io()
    except (
        BrokenPipeError,
        ValueError,
    ) as exc:  # the client closed our stdio while we were writing
        if isinstance(exc, ValueError) and "closed file" not in str(exc):
            raise
    return 0
