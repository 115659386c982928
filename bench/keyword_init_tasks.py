"""Tasks from classes whose constructors take arguments by keyword only, in a real checkout.

For every class in CHECKOUT/PACKAGE/*.py whose `__init__` has a required keyword-only parameter
(`def __init__(self, *, image_size, dim)`, as lucidrains's vit-pytorch writes nearly every model),
runs `kernelevo task FILE::CLASS` as a user would (no edits, no script: the workspace's scripts,
the file's `__main__` block or the signature guess) with REPO's kernelevo, and counts the tasks
built and checked, the one-line refusals and any traceback.

    python bench/keyword_init_tasks.py CHECKOUT [--package vit_pytorch] [--repo .] [--out FILE]
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path


def keyword_only_classes(folder: Path) -> list[tuple[Path, str]]:
    found = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, ast.ClassDef):
                continue
            for fn in node.body:
                if (
                    isinstance(fn, ast.FunctionDef)
                    and fn.name == "__init__"
                    and any(d is None for d in fn.args.kw_defaults)
                ):
                    found.append((path, node.name))
    return found


def build(repo: Path, checkout: Path, path: Path, name: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = str(repo)
    with tempfile.TemporaryDirectory() as out:
        proc = subprocess.run(
            [sys.executable, "-m", "kernelevo", "task", f"{path}::{name}", "--out", out],
            cwd=checkout,
            env=env,
            capture_output=True,
            text=True,
            timeout=400,
        )
    text = proc.stdout + proc.stderr
    built = proc.returncode == 0 and "check ok" in text
    return {
        "target": f"{path.name}::{name}",
        "ok": built,
        "traceback": "Traceback" in text,
        "why": "" if built else (text.strip().splitlines() or [""])[-1][:400],
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("checkout", type=Path)
    p.add_argument("--package", default="vit_pytorch")
    p.add_argument("--repo", type=Path, default=Path(__file__).resolve().parents[1])
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    checkout = args.checkout.resolve()
    rows = [
        build(args.repo.resolve(), checkout, path, name)
        for path, name in keyword_only_classes(checkout / args.package)
    ]
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1))
    built = sum(bool(r["ok"]) for r in rows)
    tracebacks = sum(bool(r["traceback"]) for r in rows)
    print(f"tasks built and checked: {built} of {len(rows)}; tracebacks: {tracebacks}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
