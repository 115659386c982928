"""`kernelevo serve`: the language server on stdio (for any LSP editor).

Imports nothing heavy: the server starts in well under a second and never loads torch.
"""
from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("serve", help="run the KernelEvo language server on stdio",
                              description="Run the KernelEvo language server on stdio.")
    p.add_argument("--stdio", action="store_true", help="accepted for editors that pass it; stdio is the only transport")
    p.add_argument("--log-level", default="WARNING", help="logging level for stderr (default WARNING)")
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from server.__main__ import serve

    return serve(args.log_level)
