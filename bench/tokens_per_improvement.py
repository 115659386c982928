"""Tokens per verified candidate on a replayed search: this tree's search (and an older tree's,
to compare), against the same scripted model on a local Anthropic-protocol server.

The scripted model behaves the same for both: its first answer from scratch is one column
short (incorrect), the next correct, and so on; asked to improve a kernel it makes one small
change, as SEARCH/REPLACE edits when the request asks for edits, else as a whole file, and every
third change brings the one-column bug back; it fixes an incorrect kernel only when the request
says where the output went wrong (first wrong index and values). Tokens are what the server
counts (4 characters a token), split into uncached input, cache reads, cache writes and output,
with their dollars at claude-sonnet-5-5 prices; the same for every tree.
On the CPU (Triton interpreter, the default) nothing is timed, so a verified candidate stands in
for an improvement; with `--device cuda` an improvement is a verified candidate whose stored
speedups over eager and over torch.compile are both above 1. Only the model's candidates count:
the parameter search after the loop (a GPU only) spends no tokens.

    python bench/tokens_per_improvement.py [--old-tree /tmp/kernelevo-old] [--iterations 6] [--device cuda]
        [--reply-s 5 --in-flight derived]
(`--in-flight derived` lets the search choose how many requests it keeps open, from the measured
reply and verdict times, where the default runs one at a time; with `--reply-s` the answers take
that long, so the choice is the one a real model's latency gives.)
(an old tree to compare with: `mkdir .old-tree && git archive e9a6c1b | tar -x -C .old-tree`,
the code before the search learned from failures; without one, the figures of this tree alone).
A GPU machine without the anthropic SDK gets its wheels beside the checkout, for its Python 3.12:
`pip download anthropic --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64
-d .device-wheels/llm`; bench/gpu_env.sh installs them apart from everything else.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fakes.anthropic_server import serve_anthropic  # noqa: E402
from fakes.scripted_server import kernel_reply, slow  # noqa: E402

sys.path.insert(0, str(ROOT))
from kernelevo.llm.prices import PRICES  # noqa: E402

PRICE = PRICES["claude-sonnet-5-5"]

GOOD = (ROOT / "tests" / "candidates" / "softmax" / "triton_ok.py").read_text()
ONE_OFF = GOOD.replace(
    "x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask",
    "x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols - 1",
    1,
)
ANCHOR = "class ModelNew(nn.Module):"


class Model:
    def __init__(self, reply_s: float = 0.0) -> None:
        self.fresh = 0
        self.tweaks = 0
        self.fixes = 0
        self.reply_s = reply_s  # each answer's latency, as a frontier model's takes seconds

    def __call__(self, req):
        text = self.answer(req)
        return slow(self.reply_s, text) if self.reply_s > 0 else text

    def answer(self, req) -> str:
        body = req.json
        text = "\n".join(
            b.get("text", "")
            for m in body["messages"]
            for b in (m["content"] if isinstance(m["content"], list) else [{"text": m["content"]}])
        )
        last = text[-20000:]
        if "Your last answer failed" in last or "Your previous answer failed" in last:
            told = "first wrong element at [" in last and "expected " in last
            self.fixes += 1
            note = f"# fix {self.fixes}\n"
            return kernel_reply((GOOD if told else ONE_OFF).replace(ANCHOR, note + ANCHOR, 1))
        if "start from" in last or "current kernel to improve" in last:
            self.tweaks += 1
            note = f"# tweak {self.tweaks}: fewer warps for short rows\n"
            buggy = self.tweaks % 3 == 0
            if "<<<<<<< SEARCH" in last:
                edit = f"<<<<<<< SEARCH\n{ANCHOR}\n=======\n{note}{ANCHOR}\n>>>>>>> REPLACE\n"
                if buggy:
                    edit += (
                        "<<<<<<< SEARCH\n    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask\n=======\n"
                        "    x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols - 1\n>>>>>>> REPLACE\n"
                    )
                return f"One change.\n\n{edit}"
            return kernel_reply(
                (ONE_OFF if buggy else GOOD).replace(ANCHOR, note + ANCHOR, 1), "One change."
            )
        self.fresh += 1
        return kernel_reply(
            (ONE_OFF if self.fresh % 2 else GOOD).replace(
                ANCHOR, f"# draft {self.fresh}\n{ANCHOR}", 1
            )
        )


def run(
    tree: Path, iterations: int, device: str, reply_s: float = 0.0, in_flight: str = "1"
) -> dict:
    model = Model(reply_s)
    work = Path(tempfile.mkdtemp(prefix="kernelevo-tokens-"))
    with serve_anthropic(model) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
        env.update(
            PYTHONPATH=os.pathsep.join(p for p in (str(tree), os.environ.get("PYTHONPATH")) if p),
            XDG_CONFIG_HOME=str(work / "xdg"),
            ANTHROPIC_BASE_URL=server.base_url,
            ANTHROPIC_API_KEY="sk-ant-bench",
        )
        cmd = [
            sys.executable,
            "-m",
            "kernelevo",
            "optimize",
            str(tree / "examples" / "softmax.py"),
            "--device",
            device,
            "--provider",
            "anthropic",
            "--model",
            "claude-sonnet-5-5",
            "--iterations",
            str(iterations),
            "--repair-tries",
            "1",
            *(["--concurrency", in_flight] if in_flight != "derived" else []),
            "--no-offline-seeds",
            "--progress",
            "none",
            "--json-out",
            str(work / "out.json"),
        ]
        if (tree / "kernelevo" / "search" / "headroom.py").exists():
            cmd.append("--past-floor")  # its kernels reach the copy peak; older trees go on anyway
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=1800)
        if proc.returncode != 0:
            raise SystemExit(f"{tree}: exit {proc.returncode}: {proc.stderr[-2000:]}")
        posts = server.posts()
    out = json.loads((work / "out.json").read_text())
    db = sqlite3.connect(work / ".kernelevo" / "store.sqlite")
    db.row_factory = sqlite3.Row
    calls = db.execute("SELECT * FROM llm_calls WHERE run_id = ?", (out["run_id"],)).fetchall()
    # the model's candidates only: the parameter search after the loop (origin 'tune', on a GPU)
    # spends no tokens, and its variants would be counted as the model's improvements
    ours = db.execute(
        "SELECT source, speedup_eager, speedup_compile FROM candidates"
        " WHERE run_id = ? AND status = 'verified' AND COALESCE(origin, '') != 'tune'",
        (out["run_id"],),
    ).fetchall()
    verified = {r["source"] for r in ours}
    faster = {
        r["source"]
        for r in ours
        if (r["speedup_eager"] or 0) > 1 and (r["speedup_compile"] or 0) > 1
    }
    tuned = db.execute(
        "SELECT COUNT(*) FROM candidates WHERE run_id = ? AND origin = 'tune'", (out["run_id"],)
    ).fetchone()[0]
    tokens = sum(
        (c["input_tokens"] or 0)
        + (c["output_tokens"] or 0)
        + (c["cache_read_tokens"] or 0)
        + (c["cache_write_tokens"] or 0)
        for c in calls
    )
    kinds = {
        k: sum(c[f"{k}_tokens"] or 0 for c in calls)
        for k in ("input", "cache_read", "cache_write", "output")
    }
    cost = sum(c["cost_usd"] or 0.0 for c in calls)
    return {
        "tree": str(tree),
        "calls": len(posts),
        "tokens": tokens,
        **{f"{k}_tokens": v for k, v in kinds.items()},
        "usd": {k: getattr(PRICE, k) * v / 1e6 for k, v in kinds.items()},
        "cost_usd": cost,
        "verified": len(verified),
        "faster": len(faster),
        "tuned": tuned,
        "status": out.get("status", ""),
        "counts": out["candidates"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old-tree", type=Path, help="a checkout of older code: a 'before' row")
    ap.add_argument("--iterations", type=int, default=6)
    ap.add_argument("--out", type=Path, default=None, help="write the rows as JSON here")
    ap.add_argument("--device", default="cpu", help="cpu (Triton interpreter) or cuda (timed)")
    ap.add_argument("--reply-s", type=float, default=0.0, help="seconds each model answer takes")
    ap.add_argument(
        "--in-flight",
        default="1",
        help="requests in flight: a number (--concurrency), or 'derived' (the search's own choice)",
    )
    args = ap.parse_args()
    import importlib.util

    if importlib.util.find_spec("anthropic") is None:  # the searches it replays need the SDK
        print(
            "tokens_per_improvement: not run: no anthropic SDK here (its wheels in .device-wheels/llm)"
        )
        return 0
    trees = [("before", args.old_tree.resolve())] if args.old_tree else []
    names = [name for name, _ in trees] + ["now"]
    rows = [
        run(tree, args.iterations, args.device, args.reply_s, args.in_flight)
        for tree in [tree for _, tree in trees] + [ROOT]
    ]
    if args.out:
        args.out.write_text(json.dumps(rows, indent=2))
    print(
        f"{'code':<8}{'calls':>6}{'tokens':>10}{'output':>9}{'$':>8}{'verified':>9}{'faster':>7}"
        f"{'tokens/verified':>17}{'tokens/faster':>15}{'$/faster':>10}  run, candidates"
    )
    for name, r in zip(names, rows, strict=True):
        n, f = r["verified"], r["faster"]
        per = f"{r['tokens'] / n:,.0f}" if n else "-"
        per_f = f"{r['tokens'] / f:,.0f}" if f else "-"
        usd = f"{r['cost_usd'] / f:.4f}" if f else "-"
        print(
            f"{name:<8}{r['calls']:>6}{r['tokens']:>10,}{r['output_tokens']:>9,}{r['cost_usd']:>8.4f}{n:>9}{f:>7}"
            f"{per:>17}{per_f:>15}{usd:>10}  {r['status']}, {r['counts']} ({r['tuned']} by tuning)"
        )
    print("\nby kind: tokens ($) per verified candidate")
    print(
        f"{'code':<8}"
        + "".join(f"{k:>22}" for k in ("uncached input", "cache read", "cache write", "output"))
    )
    for name, r in zip(names, rows, strict=True):
        n = max(1, r["verified"])
        cells = [
            f"{r[k + '_tokens'] / n:,.0f} (${r['usd'][k] / n:.4f})"
            for k in ("input", "cache_read", "cache_write", "output")
        ]
        print(f"{name:<8}" + "".join(f"{c:>22}" for c in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
