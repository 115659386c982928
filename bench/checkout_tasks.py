"""Tasks from a real project's checkout, unedited: `kernelevo task` on each target, as a user runs it.

For a repository too large to check into tests/corpus (Liger-Kernel, a package of Triton-backed
modules), give its checkout and the targets one would optimize; each is built in the checkout
(a child `kernelevo` process, no API key), and the table says whether its task was built, where
its inputs came from, what the task check said (ok, not checked: needs a GPU, failed) and how
long it took. Nothing in the checkout is changed but its `.kernelevo/` folder, removed first.

    python bench/checkout_tasks.py ~/src/Liger-Kernel \\
        src/liger_kernel/transformers/rms_norm.py::LigerRMSNorm ...
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build(checkout: Path, target: str, timeout: float) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith(("_API_KEY", "_TOKEN"))}
    env["PYTHONPATH"] = str(ROOT)
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "kernelevo", "task", target, "--timeout", str(int(timeout))],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout + 120,
    )
    out = proc.stdout + proc.stderr
    origin = re.search(r"example inputs: (.*?)(?: \(|$)", out, re.M)
    check = re.search(r"^check (ok|not checked|FAILED)", out, re.M)
    error = next((ln for ln in out.splitlines() if ln.startswith("kernelevo: error: ")), "")
    return {
        "target": target,
        "built": "yes" if proc.returncode == 0 else "no",
        "inputs": origin.group(1) if origin else "-",
        "check": check.group(1) if check else "-",
        "reason": error.removeprefix("kernelevo: error: ")[:160] if error else "",
        "traceback": "yes" if "Traceback" in out else "no",
        "s": f"{time.monotonic() - t0:.1f}",
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("checkout", type=Path)
    ap.add_argument("targets", nargs="+", help="FILE::NAME, FILE relative to the checkout")
    ap.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args()
    shutil.rmtree(args.checkout / ".kernelevo", ignore_errors=True)
    rows = [build(args.checkout, t, args.timeout) for t in args.targets]
    cols = ["target", "built", "inputs", "check", "reason", "traceback", "s"]
    print("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(r[c].replace("|", "\\|") for c in cols) + " |")
    built = sum(r["built"] == "yes" for r in rows)
    ok = sum(r["check"] == "ok" for r in rows)
    gpu = sum(r["check"] == "not checked" for r in rows)
    tracebacks = sum(r["traceback"] == "yes" for r in rows)
    print(
        f"\n{built} of {len(rows)} tasks built unedited ({ok} checked here, {gpu} not checked: "
        f"need a GPU); {len(rows) - built} refused with a reason; tracebacks {tracebacks}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
