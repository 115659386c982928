"""Where the installed packages ship no bytecode, the engine compiles it once into a folder of its
own and workers read it (read-only) instead of compiling torch from source at every start."""

import json
import os
import subprocess
import sys
import time

import pytest

from kernelevo.worker import bytecode
from kernelevo.worker.pool import Worker


def _package(root, value="1"):
    pkg = root / "bytecode_probe_pkg"
    (pkg / "tests").mkdir(parents=True)
    (pkg / "__init__.py").write_text(f"VALUE = {value}\n")
    (pkg / "tests" / "test_x.py").write_text("X = 1\n")
    return pkg


def _value(root, env_extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHONPYCACHE")}
    env.update(PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1", **env_extra)
    out = subprocess.run(
        [sys.executable, "-c", "import bytecode_probe_pkg as p; print(p.VALUE)"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return out.stdout.strip()


def test_a_built_folder_is_what_python_imports_from(tmp_path):
    root = tmp_path / "site"
    pkg = _package(root)
    where = tmp_path / "bytecode"
    assert bytecode.build(where, [root], workers=1)
    compiled = list(where.rglob("*.pyc"))
    assert [p.name for p in compiled] == [f"__init__.{sys.implementation.cache_tag}.pyc"]
    assert json.loads((where / bytecode.STAMP).read_text()) == bytecode.stamp([root])
    # same size and mtime, other source: only a read of the compiled file still says 1
    source = pkg / "__init__.py"
    st = source.stat()
    source.write_text("VALUE = 2\n")
    os.utime(source, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert _value(root, {"PYTHONPYCACHEPREFIX": str(where)}) == "1"
    assert _value(root, {}) == "2"


def test_a_second_build_while_one_holds_the_lock_leaves_it(tmp_path):
    import fcntl

    where = tmp_path / "bytecode"
    where.mkdir()
    with open(where / ".lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert not bytecode.build(where, [_package(tmp_path / "site").parent], workers=1)
    assert not (where / bytecode.STAMP).exists()


@pytest.fixture
def wanted(tmp_path, monkeypatch):
    """A setup whose packages ship no bytecode, with roots small enough to compile in a test."""
    root = tmp_path / "site"
    _package(root)
    monkeypatch.setattr(bytecode, "wanted", lambda: True)
    monkeypatch.setattr(bytecode, "roots", lambda: [root])
    monkeypatch.setattr(bytecode, "_started", set())
    for name, sub in (
        ("KERNELEVO_CACHE", "kc"),
        ("TRITON_CACHE_DIR", "triton"),
        ("TORCHINDUCTOR_CACHE_DIR", "inductor"),
    ):
        monkeypatch.setenv(name, str(tmp_path / sub))
    monkeypatch.setenv("KERNELEVO_BYTECODE", str(tmp_path / "bytecode"))
    return tmp_path / "bytecode" / sys.implementation.cache_tag


def test_the_folder_is_compiled_in_the_background_then_given_to_workers(wanted):
    assert bytecode.prefix() is None  # started, not complete
    deadline = time.monotonic() + 60
    while not (wanted / bytecode.STAMP).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert bytecode.prefix() == wanted
    spec = Worker("cpu").spec()
    assert spec.env["PYTHONPYCACHEPREFIX"] == str(wanted)
    assert wanted in spec.read_only and wanted not in spec.writable
    assert spec.env["PYTHONDONTWRITEBYTECODE"] == "1"


def test_a_folder_inside_a_build_cache_is_never_used(wanted, monkeypatch, tmp_path):
    monkeypatch.setenv("KERNELEVO_BYTECODE", str(tmp_path / "kc" / "bytecode"))
    assert bytecode.prefix() is None
    assert bytecode._started == set()
    assert "PYTHONPYCACHEPREFIX" not in Worker("cpu").spec().env


def test_a_folder_others_can_write_is_never_used(wanted):
    wanted.mkdir(parents=True)
    wanted.chmod(0o777)
    assert bytecode.prefix() is None and bytecode._started == set()


def test_packages_with_their_own_bytecode_need_none(tmp_path, monkeypatch):
    root = tmp_path / "site"
    pkg = _package(root)
    monkeypatch.syspath_prepend(str(root))
    bytecode.wanted.cache_clear()
    try:
        assert bytecode.wanted("bytecode_probe_pkg")
        bytecode.wanted.cache_clear()
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(pkg)], check=True)
        assert not bytecode.wanted("bytecode_probe_pkg")
    finally:
        bytecode.wanted.cache_clear()


def test_the_command_line_imports_through_the_folder_once_complete(wanted, monkeypatch):
    monkeypatch.setattr(sys, "pycache_prefix", None)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    started: list[object] = []
    monkeypatch.setattr(bytecode, "_start", started.append)
    bytecode.use_here()
    assert sys.pycache_prefix is None  # not built yet
    assert started == []  # nor started: a command that starts no worker compiles nothing
    assert bytecode.build(wanted, bytecode.roots(), workers=1)
    bytecode.use_here()
    assert sys.pycache_prefix == str(wanted) and sys.dont_write_bytecode


def test_doctor_says_whose_bytecode_workers_import(wanted, monkeypatch, tmp_path):
    monkeypatch.setattr(bytecode, "_start", lambda where: None)
    assert bytecode.describe().startswith(f"being compiled into {wanted}")
    assert bytecode.build(wanted, bytecode.roots(), workers=1)
    assert bytecode.describe() == f"kernelevo's own, in {wanted}"
    monkeypatch.setenv("KERNELEVO_BYTECODE", str(tmp_path / "kc" / "bytecode"))
    assert bytecode.describe().startswith("none: ")
    monkeypatch.setattr(bytecode, "wanted", lambda: False)
    assert bytecode.describe() == "torch ships its own"
