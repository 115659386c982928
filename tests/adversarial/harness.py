"""Running an attack the way a candidate would meet the engine: a real engine process (holding
an API key in its environment, a config file named by KERNELEVO_CONFIG, a store in its
workspace, open descriptors) starts the attack in a worker sandbox built exactly as the worker
pool builds one. The attack prints one JSON line saying what it achieved.

`isolate=False` runs the same attack without the sandbox: each test also runs it so, where that
is safe, to show the attack really works and so the test would fail without its defence.
"""

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-ant-api03-ADVERSARIAL-" + "q7Zp4Lx9Wm2Rt6Yb" * 3  # a made-up key
ENCODED = {
    "plain": KEY,
    "reversed": KEY[::-1],
    "base64": base64.b64encode(KEY.encode()).decode(),
    "hex": KEY.encode().hex(),
}

ENGINE = r"""
import dataclasses, json, os, socket, sys
from kernelevo.sandbox import Limits, spawn
from kernelevo.store import Store
from kernelevo.worker.pool import Worker

isolate, code, limits = sys.argv[1] == "1", sys.argv[2], json.loads(sys.argv[3])
store = Store()  # .kernelevo/store.sqlite in the workspace (this process's cwd)
a, b = socket.socketpair()
for fd in (a.fileno(), b.fileno()):
    os.set_inheritable(fd, True)
held = open(os.environ["KERNELEVO_CONFIG"])  # the engine has read its config; the fd stays open
os.set_inheritable(held.fileno(), True)
worker = Worker("cpu", isolate=isolate)
spec = worker.spec()
spec = dataclasses.replace(spec, argv=[sys.executable, "-I", "-c", code, str(os.getpid()), os.getcwd(),
                                       os.environ["KERNELEVO_CONFIG"], *sys.argv[4:]],
                           limits=dataclasses.replace(spec.limits, **limits))
proc = spawn(spec, channel=False)
try:
    code = proc.wait(timeout=120)
finally:
    proc.close()
    worker.inbox.remove()
out = proc.output
print(json.dumps({"exit": code, "output": out.text(), "total": out.total, "flooded": out.flooded,
                  "scratch": str(proc.scratch)}))
"""


def engine_env(workspace: Path) -> dict[str, str]:
    config = workspace / "secret-config.toml"
    config.write_text(f'[anthropic]\napi_key = "{KEY}"\n')
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "OPENAI_", "KERNELEVO_"))
    }
    env.update(
        ANTHROPIC_API_KEY=KEY,
        KERNELEVO_CONFIG=str(config),
        XDG_CONFIG_HOME=str(workspace / "xdg"),
        PYTHONPATH=str(ROOT),
    )
    return env


def run_attack(
    code: str,
    workspace: Path,
    *,
    isolate: bool = True,
    limits: dict | None = None,
    args: tuple[str, ...] = (),
    timeout: float = 180,
) -> dict:
    """Run `code` (which gets argv: engine pid, workspace, config path, *args) from an engine
    process in `workspace`; returns the engine's report with the attack's JSON under 'attack'."""
    workspace.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            ENGINE,
            "1" if isolate else "0",
            code,
            json.dumps(limits or {}),
            *args,
        ],
        cwd=workspace,
        env=engine_env(workspace),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    lines = [line for line in report["output"].splitlines() if line.startswith("{")]
    report["attack"] = json.loads(lines[-1]) if lines else {}
    return report
