"""A key that reached a candidate (however it did) and comes back in an exception text is never
stored as it was, nor reversed, base64 or hex: the store redacts every write."""

import sqlite3

from harness import ENCODED, KEY
from support import CANDIDATES, EXAMPLES

from kernelevo.store import Store
from kernelevo.verify import verify_candidate

GOOD = CANDIDATES / "softmax" / "triton_ok.py"


def test_a_key_in_an_exception_text_is_not_stored_in_any_form(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)  # the engine holds it
    leak = " | ".join(ENCODED.values())
    cand = tmp_path / "leaky.py"
    cand.write_text(
        GOOD.read_text().replace(
            "class ModelNew", f"raise RuntimeError({leak!r})\n\n\nclass ModelNew", 1
        )
    )
    store = Store(tmp_path / ".kernelevo" / "store.sqlite")
    verdict = verify_candidate(
        EXAMPLES / "softmax.py", cand, device="cpu", store=store, use_cache=False
    )
    assert verdict.status in ("compile_error", "runtime_error")
    assert ENCODED["reversed"] in verdict.reason + verdict.log  # the leak did reach the engine
    store.close()
    raw = b"".join(p.read_bytes() for p in (tmp_path / ".kernelevo").iterdir())
    for name, form in ENCODED.items():
        assert form.encode() not in raw, f"the {name} key was stored"
    db = sqlite3.connect(tmp_path / ".kernelevo" / "store.sqlite")
    (stored,) = db.execute("SELECT verdict_json FROM verdicts").fetchone()
    assert "***" in stored and "RuntimeError" in stored
