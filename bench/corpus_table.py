"""Measure KernelEvo on the public corpus (tests/corpus/public) and write docs/CORPUS.md.

Per file, unedited: `detect` (recall over the expected targets, false positives over what must
not be flagged), `task` for every expected target one would optimize (no hand-written inputs),
then for the first target whose task built: `optimize` offline on this machine (a verdict or a
one-line reason), `apply --force` and the regression test apply wrote. Every command runs as
a user would run it (a child `kernelevo` process in a scratch workspace); any "Traceback" in
its output counts as a traceback.

    python bench/corpus_table.py [--out docs/CORPUS.md] [--files N] [--skip N] [--no-optimize]
    python bench/corpus_table.py --combine part1.json part2.json   # parts run side by side
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "corpus" / "public"


def kernelevo(args: list[str], cwd: Path, timeout: float = 600) -> tuple[int, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), KERNELEVO_NO_KEYS="1")
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        env.pop(key, None)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "kernelevo", *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {timeout:.0f} s"
    return proc.returncode, (proc.stdout + proc.stderr)


def last_error(out: str) -> str:
    lines = [ln for ln in out.strip().splitlines() if ln.strip()]
    for ln in reversed(lines):
        if "error:" in ln or ln.startswith("check FAILED"):
            return ln.split("error: ", 1)[-1][:300]
    return (lines[-1] if lines else "")[:300]


def regression_result(returncode: int, stdout: str, failure: str) -> str:
    """passed, skipped here (with pytest's reason), or FAILED (with the first error line)."""
    if returncode != 0:
        return f"FAILED: {failure[:200]}"
    tail = stdout.strip().splitlines()[-1] if stdout.strip() else ""
    if "passed" not in tail and "skipped" in tail:
        reason = next(
            (ln.split(": ", 1)[-1] for ln in stdout.splitlines() if ln.startswith("SKIPPED")), ""
        )
        return f"skipped on this machine: {reason[:200]}"
    return "passed"


def measure_file(entry: dict, work: Path, optimize: bool) -> dict:
    top = entry["file"].split("/", 1)[
        0
    ]  # the file's folder (its package with it) becomes the user's workspace
    shutil.copytree(CORPUS / top, work / top)
    src = work / entry["file"]
    row: dict = {
        "file": entry["file"],
        "repo": entry["repo"],
        "tracebacks": 0,
        "tasks": {},
        "optimize": "-",
        "applied": "-",
    }
    rc, out = kernelevo(["detect", str(src), "--json"], work, 120)
    row["tracebacks"] += out.count("Traceback")
    found = {t["id"] for d in json.loads(out) for t in d["targets"]} if rc == 0 else set()
    expected = set(entry["expect"])
    row["expected"], row["found"] = sorted(expected), sorted(found)
    row["wanted"] = sum(1 for v in entry["expect"].values() if v)
    row["missed"] = sorted(expected - found)
    names = {i.split(":", 1)[1] for i in found}
    row["false_positives"] = sorted(n for n in entry.get("not_targets", []) if n in names)
    first_built = None
    for tid, wanted in entry["expect"].items():
        if not wanted or tid not in found:
            continue
        t0 = time.monotonic()
        rc, out = kernelevo(["task", f"{src}::{tid}", "--timeout", "120"], work, 400)
        row["tracebacks"] += out.count("Traceback")
        ok = rc == 0 and "check ok" in out
        gpu_only = rc == 0 and "can only be checked on a machine with a CUDA GPU" in out
        row["tasks"][tid] = {
            "built": ok or gpu_only,
            "checked": ok,
            "s": round(time.monotonic() - t0, 1),
            "why": "" if ok else last_error(out),
            "inputs": next(
                (
                    ln.split("example inputs: ", 1)[1]
                    for ln in out.splitlines()
                    if "example inputs: " in ln
                ),
                "",
            ),
        }
        if ok and first_built is None:
            first_built = tid
    if optimize and first_built is not None:
        row["optimized_target"] = first_built
        summary = work / "summary.json"
        rc, out = kernelevo(
            ["optimize", f"{src}::{first_built}", "--iterations", "1", "--json-out", str(summary)],
            work,
            900,
        )
        row["tracebacks"] += out.count("Traceback")
        if rc == 0 and summary.exists():
            s = json.loads(summary.read_text())
            verified = s.get("best_candidate") is not None
            row["optimize"] = f"{s['status']}: " + (
                "verified on the CPU, not timed"
                if verified and not s.get("speed_measured")
                else ("verified" if verified else "no verified candidate")
            )
            if verified:
                rc, out = kernelevo(["apply", s["run_id"], "--force"], work, 300)
                row["tracebacks"] += out.count("Traceback")
                test = next(
                    (
                        ln.rsplit("regression test: ", 1)[1].strip()
                        for ln in out.splitlines()
                        if "regression test: " in ln
                    ),
                    None,
                )
                if rc == 0 and test:
                    proc = subprocess.run(
                        [
                            sys.executable,
                            "-m",
                            "pytest",
                            "-q",
                            "-rs",
                            "-x",
                            "-p",
                            "no:cacheprovider",
                            "-n",
                            "0",
                            test,
                        ],
                        cwd=work,
                        capture_output=True,
                        text=True,
                        timeout=600,
                        env=dict(os.environ, PYTHONPATH=str(ROOT), TRITON_INTERPRET="1"),
                    )
                    failure = next(
                        (ln[1:].strip() for ln in proc.stdout.splitlines() if ln.startswith("E ")),
                        last_error(proc.stdout),
                    )
                    row["applied"] = "applied; regression test " + regression_result(
                        proc.returncode, proc.stdout, failure
                    )
                else:
                    row["applied"] = f"not applied: {last_error(out)}"
        else:
            row["optimize"] = f"reason: {last_error(out)}"
    return row


def render(rows: list[dict], elapsed: float, parts: int = 1) -> str:
    exp = sum(len(r["expected"]) for r in rows)
    hit = sum(len(r["expected"]) - len(r["missed"]) for r in rows)
    fps = sum(len(r["false_positives"]) for r in rows)
    wanted = sum(r["wanted"] for r in rows)
    built = sum(1 for r in rows for t in r["tasks"].values() if t["built"])
    unchecked = sum(
        1 for r in rows for t in r["tasks"].values() if t["built"] and not t.get("checked", True)
    )
    tbs = sum(r["tracebacks"] for r in rows)
    lines = [
        "# The public corpus: real files, unedited",
        "",
        "Written by `bench/corpus_table.py` (do not edit by hand). Files: `tests/corpus/public/` (sources and",
        "licences in its MANIFEST.json). Each command ran as a user would run it, on this machine's CPU, with no",
        "API key (offline search), in a fresh scratch workspace.",
        "",
        f"**Detection recall {hit}/{exp} ({100 * hit / max(exp, 1):.0f} %) · false positives {fps} in {len(rows)} "
        f"files · tasks built unedited {built}/{wanted} ({100 * built / max(wanted, 1):.0f} %) of the targets one "
        f"would optimize"
        + (
            f" ({unchecked} of them run only on a GPU: written, not checked here)"
            if unchecked
            else ""
        )
        + f" · tracebacks {tbs}** · {elapsed:.0f} s in all"
        + (
            f" (the corpus in {parts} parts run side by side; their seconds added)."
            if parts > 1
            else "."
        ),
        "",
        "| file | expected | found | missed | false positives | tasks built "
        "| optimize (first built target) | applied |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        nb = sum(1 for t in r["tasks"].values() if t["built"])
        lines.append(
            f"| {r['file']} ({r['repo']}) | {len(r['expected'])} | {len(r['expected']) - len(r['missed'])} "
            f"| {', '.join(r['missed']) or '-'} | {', '.join(r['false_positives']) or '-'} | "
            f"{nb}/{r['wanted']} | {r.get('optimized_target', '')} {r['optimize']} | {r['applied']} |"
        )
    notes = {
        e["file"]: e["note"]
        for e in json.loads((CORPUS / "MANIFEST.json").read_text())["files"]
        if e.get("note")
    }
    lines += ["", "## Notes on the files (MANIFEST.json)", ""]
    lines += [f"- `{r['file']}`: {notes[r['file']]}" for r in rows if r["file"] in notes]
    lines += ["", "## Targets whose task did not build, and why", ""]
    for r in rows:
        for tid, t in r["tasks"].items():
            if not t["built"]:
                lines.append(f"- `{r['file']}::{tid}`: {t['why']}")
    lines += ["", "## Where the inputs of each built task came from", ""]
    for r in rows:
        for tid, t in r["tasks"].items():
            if t["built"]:
                lines.append(f"- `{r['file']}::{tid}` ({t['s']} s): {t['inputs']}")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(ROOT / "docs" / "CORPUS.md"))
    ap.add_argument("--files", type=int, default=0, help="only the first N files")
    ap.add_argument(
        "--skip", type=int, default=0, help="skip the first N files (re-measure the rest)"
    )
    ap.add_argument("--no-optimize", action="store_true")
    ap.add_argument(
        "--combine",
        nargs="+",
        metavar="JSON",
        help="render --out from the .json of several runs over parts of the corpus (--files/--skip "
        "run side by side), their seconds added up",
    )
    args = ap.parse_args()
    if args.combine:
        parts = [json.loads(Path(p).read_text()) for p in args.combine]
        rows = [r for part in parts for r in part["rows"]]
        text = render(rows, sum(part["elapsed_s"] for part in parts), len(parts))
        Path(args.out).write_text(text)
        Path(args.out).with_suffix(".json").write_text(
            json.dumps({"rows": rows, "elapsed_s": sum(p["elapsed_s"] for p in parts)}, indent=1)
        )
        print(text.split("\n")[6])
        return 0
    entries = json.loads((CORPUS / "MANIFEST.json").read_text())["files"]
    if args.files:
        entries = entries[: args.files]
    entries = entries[args.skip :]
    rows = []
    t0 = time.monotonic()
    for e in entries:
        work = Path(tempfile.mkdtemp(prefix="kernelevo-corpus-"))
        try:
            rows.append(measure_file(e, work, not args.no_optimize))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        r = rows[-1]
        print(
            f"{r['file']}: found {len(r['expected']) - len(r['missed'])}/{len(r['expected'])}, fp "
            f"{len(r['false_positives'])}, tasks {sum(t['built'] for t in r['tasks'].values())}/{len(r['tasks'])}, "
            f"optimize {r['optimize']}, {r['applied']}, tracebacks {r['tracebacks']}",
            flush=True,
        )
    elapsed = time.monotonic() - t0
    text = render(rows, elapsed)
    Path(args.out).write_text(text)
    Path(args.out).with_suffix(".json").write_text(
        json.dumps({"rows": rows, "elapsed_s": elapsed}, indent=1)
    )  # every measurement, for re-rendering (--combine)
    print(text.split("\n")[6])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
