"""The results store: the only package that touches SQLite (`.kernelevo/store.sqlite`).

`database.py` is the store itself (runs, candidates, verdicts, model calls, results), `schema.py`
creates and upgrades its tables, `records.py` holds the records it hands out, and `connection.py`
opens the file (damaged, read-only, full, too long a path) and redacts every write. No torch here:
the language server reads results through this package.
"""

from kernelevo.store.connection import StoreError
from kernelevo.store.database import (
    SCHEMA_VERSION,
    ResultSummary,
    RunRecord,
    Store,
    default_store_path,
)

__all__ = [
    "SCHEMA_VERSION",
    "ResultSummary",
    "RunRecord",
    "Store",
    "StoreError",
    "default_store_path",
]
