"""`python -m server` (same as `kernelevo serve`): the language server on stdio."""
from __future__ import annotations

import argparse
import logging
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m server", description="KernelEvo language server (stdio)")
    parser.add_argument("--log-level", default="WARNING", help="logging level for stderr (default WARNING)")
    args = parser.parse_args(argv)
    return serve(args.log_level)


def serve(log_level: str = "WARNING") -> int:
    logging.basicConfig(stream=sys.stderr, level=getattr(logging, log_level.upper(), logging.WARNING),
                        format="%(asctime)s %(name)s %(levelname)s: %(message)s")
    from server.app import create_server

    create_server().start_io()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
