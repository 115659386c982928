"""Plan an Apply in a child process: `kernelevo.targets.apply.apply_candidate(..., dry_run=True)`.

Run apart from the server so that planning, whatever it imports, never loads torch into
the server and never blocks its event loop. Reads one JSON request on stdin, writes one
JSON reply on stdout. It writes no files (dry run).
"""

from __future__ import annotations

import dataclasses
import json
import sys
import traceback
from typing import Any


def _as_dict(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    return obj


def plan(request: dict[str, Any]) -> dict[str, Any]:
    from kernelevo.targets.apply import apply_candidate

    result = apply_candidate(
        request["user_file"],
        request["target_id"],
        request["candidate_path"],
        request.get("meta") or {},
        dry_run=True,
    )
    files = [_as_dict(f) for f in getattr(result, "files", [])]
    return {
        "files": [
            {"path": f["path"], "old_text": f.get("old_text") or "", "new_text": f["new_text"]}
            for f in files
        ],
        "diff": getattr(result, "diff", ""),
    }


def main() -> int:
    request = json.loads(sys.stdin.read())
    try:
        reply = plan(request)
    except Exception as exc:
        reply = {"error": str(exc) or type(exc).__name__, "traceback": traceback.format_exc()}
    sys.stdout.write(json.dumps(reply))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
