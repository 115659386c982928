"""The constructor arguments of a task, as text the generated kernel and regression test can hold.

`get_init_inputs()` of a task may build config objects (from data saved in the task); the
code `apply` writes needs them as source. Plain values stay literals; a config object becomes
`types.SimpleNamespace(**{...})` of its fields (what a module reads from it). Run as
`python -m kernelevo.targets.init_args TASK.py`, in a child process, since it runs the
task's module-level code.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

from kernelevo.targets.user_run import run_user_code


class InitSource(str):
    """Source text that `repr` leaves as it is (for the templates' `{init!r}`)."""

    def __repr__(self) -> str:
        return str(self)


def task_init_args(
    task_path: str, readable: list[str], timeout: float = 120.0, small: bool = False
) -> list | None:
    """The constructor arguments of the task at `task_path` (`small`: at its SMALL sizes, as the
    verification built them), or None when they cannot be written as source."""
    with tempfile.TemporaryDirectory(prefix="kernelevo-init-") as tmp:
        run = run_user_code(
            "kernelevo.targets.init_args",
            [task_path, *(["--small"] if small else [])],
            [*readable, os.path.dirname(task_path)],
            tmp,
            timeout,
        )
    for line in reversed(run.stdout.strip().splitlines()):
        if line.startswith("["):
            try:
                items = json.loads(line)
            except ValueError:
                continue
            out: list = []
            for item in items:
                if "value" in item:
                    out.append(item["value"])
                elif "namespace" in item:
                    out.append(
                        InitSource(f"__import__('types').SimpleNamespace(**{item['namespace']!r})")
                    )
                else:
                    return None
            return out
    return None


def _describe(value) -> dict:  # type: ignore[no-untyped-def]
    from kernelevo.targets.capture_child import is_plain_data
    from kernelevo.targets.signature_guesses import config_fields

    if is_plain_data(value):
        return {"value": value}
    if getattr(value, "__dict__", None) is not None and not callable(value):
        fields = config_fields(value)
        return {"namespace": fields}
    return {"unsupported": type(value).__name__}


def main(task_path: str, small: bool = False) -> int:
    from kernelevo.task import load_task_module

    try:
        mod = load_task_module(task_path, "small" if small else "default")
        items = [_describe(v) for v in mod.get_init_inputs()]
    except Exception as exc:  # reported as "cannot be written as source" by the caller
        sys.stdout.write(f"\n{type(exc).__name__}: {exc}\n")
        return 1
    sys.stdout.write("\n" + json.dumps(items) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], "--small" in sys.argv[2:]))
