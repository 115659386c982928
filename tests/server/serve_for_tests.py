"""Start the real language server for the end-to-end tests.

Until `kernelevo.targets.apply` exists, Apply is planned by a test fake of it; once it
lands, the real planner is used and the same tests run against it.
"""
from __future__ import annotations

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

import server.proposals as proposals  # noqa: E402

if importlib.util.find_spec("kernelevo.targets.apply") is None:
    proposals.PLAN_COMMAND = [sys.executable, os.path.join(HERE, "fakes", "fake_plan_worker.py")]

from server.__main__ import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
