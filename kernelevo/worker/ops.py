"""The health check every worker answers (`ping`): versions, whether a GPU and any secret are visible."""

from __future__ import annotations

import os
import sys
from typing import Any


def ping(req: dict[str, Any]) -> dict[str, Any]:
    import torch

    return {
        "pong": True,
        "pid": os.getpid(),
        "torch": torch.__version__,
        "cuda": torch.cuda.is_available(),
        "interpreter": os.environ.get("TRITON_INTERPRET") == "1",
        "secrets_seen": [k for k in os.environ if "KEY" in k.upper() or "TOKEN" in k.upper()],
        "python": sys.version.split()[0],
    }
