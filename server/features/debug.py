"""`kernelevo/debugInfo`: what the server process holds, for tests and bug reports.

Reports whether heavy modules were imported: the server must never load torch/triton.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from kernelevo_server.app import KernelEvoServer

HEAVY = ("torch", "triton", "numpy", "jax", "cupy", "pycuda")


def register(server: KernelEvoServer) -> None:
    @server.feature("kernelevo/debugInfo")
    def debug_info(ls: KernelEvoServer, params: Any) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "heavyModules": [m for m in HEAVY if m in sys.modules],
            "analysisWorkerPid": ls.analysis.worker.pid,
            "storePath": str(ls.results.store_path),
            "settings": {k: v for k, v in vars(ls.settings).items() if k != "searchCommand"},
            "jobs": [j.to_json() | {"pid": j.pid} for j in ls.jobs.list()],
            "documents": [
                {
                    "uri": uri,
                    "targets": len(st.targets),
                    "errors": st.errors,
                    "degraded": st.degraded,
                    "analyzed": st.ready.is_set(),
                }
                for uri, st in ls.analysis.documents().items()
            ],
        }
