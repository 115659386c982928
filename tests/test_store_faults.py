"""Store faults are one-line errors and lose nothing: a damaged store is moved aside and a fresh
one started (the user is told), a read-only store still answers reads, a full disk and a path
past SQLite's limit stop with the reason; every text written is redacted."""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT, run_kernelevo

from kernelevo.store import Store
from kernelevo.store.connection import SQLITE_MAX_PATH, StoreError

needs_bwrap = pytest.mark.skipif(
    not shutil.which("bwrap"), reason="bubblewrap makes the read-only and full disks"
)


def _store_with_a_run(workspace: Path) -> str:
    with Store(workspace / ".kernelevo" / "store.sqlite") as store:
        return store.create_run(task_path="t.py", task_hash="h", config={"backend": "triton"})


def test_a_damaged_store_is_moved_aside_and_a_fresh_one_started(tmp_path):
    store_file = tmp_path / ".kernelevo" / "store.sqlite"
    store_file.parent.mkdir()
    garbage = b"not a database at all\x00" * 300
    store_file.write_bytes(garbage)
    out = run_kernelevo(["runs", "--json"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert (
        out.stderr.count("\n") == 1 and "was damaged" in out.stderr and "fresh store" in out.stderr
    )
    (moved,) = store_file.parent.glob("store.sqlite.damaged-*")
    assert moved.read_bytes() == garbage  # nothing the user had is lost
    assert json.loads(out.stdout) == [] and Store(store_file).list_runs() == []


def _in_bwrap(
    args: list[str], *, ro: Path | None = None, small: Path | None = None, cwd: Path
) -> subprocess.CompletedProcess:
    cmd = ["bwrap", "--bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    if ro is not None:
        cmd += ["--ro-bind", str(ro), str(ro)]
    if small is not None:
        cmd += ["--size", str(512 * 1024), "--tmpfs", str(small)]
    cmd += ["--chdir", str(cwd), "--", *args]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CONFIG_HOME": str(cwd / "xdg")}
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)


@needs_bwrap
def test_a_read_only_store_still_answers_reads(tmp_path):
    run_id = _store_with_a_run(tmp_path)
    listed = _in_bwrap(
        [sys.executable, "-m", "kernelevo", "runs", "--json"], ro=tmp_path, cwd=tmp_path
    )
    assert listed.returncode == 0, listed.stderr
    assert [r["id"] for r in json.loads(listed.stdout)] == [run_id]
    code = (
        "from kernelevo.store import Store\ns = Store()\nassert s.read_only\n"
        "s.put_verdict('t', 'c', 'k', {'status': 'verified'})\n"  # a cache: skipped, no error
        "s.create_run(task_path='x', task_hash='y', config={})\n"
    )
    write = _in_bwrap([sys.executable, "-c", code], ro=tmp_path, cwd=tmp_path)
    assert write.returncode == 1 and "StoreError" in write.stderr and "is read-only" in write.stderr
    assert Store(tmp_path / ".kernelevo" / "store.sqlite").get_run(run_id) is not None


@needs_bwrap
def test_a_full_disk_is_one_line_and_what_was_stored_is_intact(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    code = (
        "import json\nfrom kernelevo.store import Store\nfrom kernelevo.store.connection import StoreError\n"
        "s = Store()\nn = 0\ntry:\n"
        "    while True:\n        s.put_verdict('t', f'c{n}', 'k', {'reason': 'x' * 20000}); n += 1\n"
        "except StoreError as exc:\n    print(json.dumps({'stored': n, 'error': str(exc)}))\n"
        "again = Store()\nprint(json.dumps({'kept': len([r for r in range(n) if again.get_verdict('t', "
        "f'c{r}', 'k')])}))\n"
    )
    done = _in_bwrap([sys.executable, "-c", code], small=ws, cwd=ws)
    assert done.returncode == 0, done.stderr
    first, second = (json.loads(line) for line in done.stdout.splitlines())
    assert (
        first["stored"] > 0
        and first["error"].startswith("the disk holding")
        and "is full" in first["error"]
    )
    assert "\n" not in first["error"] and second["kept"] == first["stored"]
    make_run = "from kernelevo.store import Store; print(Store().create_run(task_path='t', task_hash='h', config={}))"
    cli = _in_bwrap(
        [
            "sh",
            "-c",
            f'{sys.executable} -c "{make_run}" && (head -c 600000 /dev/zero > filler 2>/dev/null;'
            f" {sys.executable} -m kernelevo runs --json)",
        ],
        small=ws,
        cwd=ws,
    )
    assert cli.returncode == 0 and "Traceback" not in cli.stderr, (
        cli.stderr
    )  # a full disk still reads
    run_id, listing = cli.stdout.split("\n", 1)
    assert [r["id"] for r in json.loads(listing)] == [run_id]


def test_a_workspace_path_past_sqlites_limit_is_one_line(tmp_path):
    deep = tmp_path
    while len(str(deep)) < SQLITE_MAX_PATH:
        deep = deep / ("d" * 120)
    deep.mkdir(parents=True)
    out = run_kernelevo(
        [
            "verify",
            ROOT / "examples" / "softmax.py",
            ROOT / "tests" / "candidates" / "softmax" / "triton_ok.py",
        ],
        deep,
    )
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "past SQLite's limit" in out.stderr and "KERNELEVO_STORE" in out.stderr
    with pytest.raises(StoreError):
        Store(deep / ".kernelevo" / "store.sqlite")


def test_every_text_written_is_redacted(tmp_path, monkeypatch):
    import base64

    key = "sk-test-" + "Zq81LmNx" * 5
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    forms = [key, key[::-1], base64.b64encode(key.encode()).decode(), key.encode().hex()]
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        run = store.create_run(task_path="t.py", task_hash="h", config={"note": forms[0]})
        store.put_verdict("t", "c", "k", {"status": "runtime_error", "reason": " ".join(forms)})
        store.update_run(run, summary={"error": forms[1]})
    store_bytes = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    for form in forms:
        assert form.encode() not in store_bytes, form
    db = sqlite3.connect(path)
    assert "***" in db.execute("SELECT verdict_json FROM verdicts").fetchone()[0]


@pytest.mark.parametrize("kind", ["text", "other_sqlite", "folder", "device"])
def test_a_store_path_naming_something_of_the_users_is_refused_and_left_as_it_was(tmp_path, kind):
    """`--store notes.txt` moved the user's file aside as "damaged" and put a store in its place;
    an SQLite database of other tables got KernelEvo's tables added and was switched to WAL."""
    if kind == "text":
        target = tmp_path / "notes.txt"
        target.write_text("my notes\n")
    elif kind == "other_sqlite":
        target = tmp_path / "mydata.db"
        with sqlite3.connect(target) as db:
            db.execute("CREATE TABLE customers (name TEXT)")
            db.execute("INSERT INTO customers VALUES ('ada')")
    elif kind == "folder":
        target = tmp_path / "storedir"
        target.mkdir()
    else:
        target = Path("/dev/null")
    before = target.read_bytes() if target.is_file() else None
    out = run_kernelevo(["runs", "--store", str(target)], tmp_path)
    assert out.returncode != 0
    assert out.stderr.strip().count("\n") == 0 and "Traceback" not in out.stderr, out.stderr
    assert "KERNELEVO_STORE" in out.stderr and "--store" in out.stderr
    if before is not None:
        assert target.read_bytes() == before
    assert not list(tmp_path.glob("*.damaged-*"))


def test_two_repairs_in_one_second_keep_both_damaged_copies(tmp_path):
    store_file = tmp_path / ".kernelevo" / "store.sqlite"
    store_file.parent.mkdir()
    for text in (b"GARBAGE-A" * 100, b"GARBAGE-B" * 100):
        store_file.write_bytes(text)
        Store(store_file).close()
    kept = sorted(p.read_bytes()[:9] for p in store_file.parent.glob("store.sqlite.damaged-*"))
    assert kept == [b"GARBAGE-A", b"GARBAGE-B"]


def test_a_run_id_prefix_is_matched_as_text_not_as_an_sql_pattern(tmp_path):
    """`apply _` applied the newest run: `_` and `%` were SQL wildcards."""
    store = Store(tmp_path / "store.sqlite")
    run_id = store.create_run(task_path="t.py", task_hash="h", config={})
    assert store.get_run(run_id[:8]) is not None
    for pattern in ("_", "%", "", run_id[:8].replace("2", "_")):
        assert store.get_run(pattern) is None, pattern


def test_one_damaged_record_does_not_hide_the_others(tmp_path):
    store = Store(tmp_path / "store.sqlite")
    kept = store.create_run(task_path="t.py", task_hash="h", config={"a": 1})
    broken = store.create_run(task_path="t.py", task_hash="h", config={})
    store.put_verdict("t", "c", "k", {"status": "verified"})
    with sqlite3.connect(tmp_path / "store.sqlite") as db:
        db.execute("UPDATE runs SET summary_json='{not json' WHERE id=?", (broken,))
        db.execute("UPDATE verdicts SET verdict_json='{oops'")
    again = Store(tmp_path / "store.sqlite")
    runs = {r.id: r for r in again.list_runs()}
    assert runs[kept].config == {"a": 1} and runs[broken].summary == {}
    assert again.get_verdict("t", "c", "k") is None  # a damaged cache entry: judged again


def test_a_locked_store_is_one_line_saying_to_wait():
    from kernelevo.store.connection import translate

    err = translate(sqlite3.OperationalError("database is locked"), Path("/w/.kernelevo/s.sqlite"))
    assert isinstance(err, StoreError) and "locked by another process" in str(err)
