"""Plan an Apply in a child process: `kernelevo.targets.apply.apply_candidate(..., dry_run=True)`;
or (`"op": "guess_inputs"`) guess a target's example inputs for the editor to ask about.

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


def guess(request: dict[str, Any]) -> dict[str, Any]:
    """The best guess at a target's example inputs (`kernelevo.targets.inputs.guess_inputs`)."""
    from kernelevo.targets.detect import analyze_source
    from kernelevo.targets.inputs import guess_inputs
    from kernelevo.targets.reference import resolve_reference

    a = analyze_source(request["text"], request["user_file"])
    target = next((t for t in a.targets if t.id == request["target_id"]), None)
    if target is None:
        raise LookupError(f"no target {request['target_id']} in {request['user_file']}")
    g = guess_inputs(a, resolve_reference(a, target))
    line = a.lines[g.line - 1]
    return {**dataclasses.asdict(g), "indent": line[: len(line) - len(line.lstrip())]}


def main() -> int:
    request = json.loads(sys.stdin.read())
    try:
        reply = guess(request) if request.get("op") == "guess_inputs" else plan(request)
    except Exception as exc:
        reply = {"error": str(exc) or type(exc).__name__, "traceback": traceback.format_exc()}
    sys.stdout.write(json.dumps(reply))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
