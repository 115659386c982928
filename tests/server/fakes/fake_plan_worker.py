"""Stands in for `kernelevo.targets.apply` until it lands (tests only).

Same reply as `server.plan_worker`: a new kernel module next to the user's file, and the
target's lines replaced by an import of the candidate's class under the target's name.
"""
from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))


def main() -> int:
    from kernelevo.targets.detect import detect_source

    req = json.loads(sys.stdin.read())
    path = req["user_file"]
    with open(path) as fh:
        old = fh.read()
    target = next((t for t in detect_source(old, path).targets if t.id == req["target_id"]), None)
    if target is None:
        print(json.dumps({"error": f"no target {req['target_id']}"}))
        return 0
    with open(req["candidate_path"]) as fh:
        candidate = fh.read()
    stem = os.path.splitext(os.path.basename(path))[0]
    module = f"{stem}_{target.name.lower()}_kernel"
    new_path = os.path.join(os.path.dirname(path), module + ".py")
    lines = old.splitlines(keepends=True)
    replacement = f"from {module} import ModelNew as {target.name}  # KernelEvo run {req['meta'].get('run_id')}\n"
    new = "".join(lines[:target.start_line] + [replacement] + lines[target.end_line + 1:])
    print(json.dumps({"files": [{"path": new_path, "old_text": "", "new_text": candidate},
                                {"path": path, "old_text": old, "new_text": new}], "diff": ""}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
