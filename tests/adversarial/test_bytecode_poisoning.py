"""A candidate rewriting the bytecode every worker imports torch from.

Where the installed packages ship no bytecode, the engine compiles it into a folder of its own and
every worker (the judge included) imports through it (kernelevo/worker/bytecode.py). A candidate
that could change a .pyc there would run its code in the next judge: it tries to overwrite every
file it finds, to plant a new one and to swap one by rename. Nothing may change.
"""

import hashlib
import json
import sys

from support import EXAMPLES

from kernelevo.verify.compile_ahead import precompile
from kernelevo.worker import bytecode
from kernelevo.worker.pool import Worker

SOFTMAX = EXAMPLES / "softmax.py"

REWRITER = r"""
import json, os
prefix = os.environ.get("PYTHONPYCACHEPREFIX", "")
wrote = []
for folder, dirs, files in os.walk(prefix):
    for name in files:
        path = os.path.join(folder, name)
        try:
            with open(path, "r+b") as f:
                f.write(b"poisoned")
            wrote.append(path)
        except OSError:
            pass
        try:
            with open(path + ".new", "wb") as f:
                f.write(b"poisoned")
            os.replace(path + ".new", path)
            wrote.append("replaced " + path)
        except OSError:
            pass
try:
    with open(os.path.join(prefix, "planted.pyc"), "wb") as f:
        f.write(b"x")
    wrote.append("planted")
except OSError:
    pass
raise RuntimeError("PREFIX " + prefix + " WROTE " + json.dumps(wrote))
"""


def _digest(folder):
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_a_candidate_cannot_rewrite_the_workers_bytecode(tmp_path, monkeypatch):
    site = tmp_path / "site" / "probe_pkg"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text("VALUE = 1\n")
    monkeypatch.setattr(bytecode, "wanted", lambda: True)
    monkeypatch.setattr(bytecode, "roots", lambda: [site.parent])
    monkeypatch.setattr(bytecode, "_started", set())
    monkeypatch.setenv("KERNELEVO_BYTECODE", str(tmp_path / "bytecode"))
    where = tmp_path / "bytecode" / sys.implementation.cache_tag
    assert bytecode.build(where, [site.parent], workers=1)
    assert bytecode.prefix() == where
    before = _digest(where)
    assert any(name.endswith(".pyc") for name in before)

    (tmp_path / "cand.py").write_text(REWRITER)
    with Worker("compile") as w:
        verdict = precompile(w, SOFTMAX, tmp_path / "cand.py", "triton", device="cpu", size="small")
    assert f"PREFIX {where} WROTE " in verdict.reason, verdict.reason
    wrote = json.loads(verdict.reason.split(" WROTE ", 1)[1].split("]", 1)[0] + "]")
    assert wrote == []
    assert _digest(where) == before
