"""RunOutcome: the one definition of "improved" and the sentence every front end prints."""

from kernelevo.outcome import OutcomeKind, RunOutcome, from_status, judge
from kernelevo.store import ResultSummary


def timed(se, sc, cand=(0.9, 1.0), eager=(1.5, 1.6), compile_=(1.2, 1.3)):
    return {
        "speedup_eager": se,
        "speedup_compile": sc,
        "detail": {
            "candidate": {"ci_low_ms": cand[0], "ci_high_ms": cand[1]},
            "eager": {"ci_low_ms": eager[0], "ci_high_ms": eager[1]},
            "compile": {"ci_low_ms": compile_[0], "ci_high_ms": compile_[1]},
        },
    }


def test_improved_is_faster_than_eager_and_not_slower_than_torch_compile():
    beats = judge(timed(1.6, 1.25), verified=True, device="cuda")
    assert beats.kind is OutcomeKind.IMPROVED and beats.versus_compile == "beats"
    assert (
        beats.headline() == "verified, 1.60x faster than eager PyTorch, beats torch.compile (1.25x)"
    )
    # Level with torch.compile (intervals overlap): a standalone kernel as fast as it is proposed.
    level = judge(timed(25.0, 0.99, compile_=(0.95, 1.05)), verified=True, device="cuda")
    assert level.kind is OutcomeKind.IMPROVED and level.applicable
    assert level.headline() == (
        "verified, 25.00x faster than eager PyTorch, matches torch.compile (0.99x, within the "
        "timing noise)"
    )
    # Slower than torch.compile beyond the noise: not improved, and it says why.
    slow = judge(timed(1.6, 0.9, compile_=(0.8, 0.85)), verified=True, device="cuda")
    assert slow.kind is OutcomeKind.NO_IMPROVEMENT and not slow.applicable
    assert slow.headline().startswith(
        "verified, no faster kernel: slower than torch.compile beyond the timing noise (0.90x"
    )
    # 1.05x over eager, but the intervals overlap: within the noise.
    noisy = judge(timed(1.05, 1.02, cand=(0.9, 1.55)), verified=True, device="cuda")
    assert noisy.kind is OutcomeKind.NO_IMPROVEMENT and "timing noise" in noisy.headline()


def test_a_cpu_run_is_verified_with_speed_not_measured():
    o = judge({}, verified=True, device="cpu")
    assert o.kind is OutcomeKind.VERIFIED_UNMEASURED and o.applicable and not o.improved
    assert o.headline() == "verified, speed not measured without a GPU"


def test_no_verified_candidate_names_the_failures():
    o = judge(
        None,
        verified=False,
        device="cpu",
        counts={"verified": 0, "compile_error": 3, "wrong_output": 1, "screened": 4},
    )
    # a screened parameter-search configuration failed nothing
    assert o.headline() == "no verified candidate: 3 compile error; 1 wrong output"
    assert not o.applicable


def test_round_trip_and_old_rows():
    o = judge(timed(1.6, 1.25), verified=True, device="cuda")
    assert RunOutcome.from_dict(o.to_dict()) == o
    assert (
        o.to_dict()["headline"]
        == "verified, 1.60x faster than eager PyTorch, beats torch.compile (1.25x)"
    )
    # Rows stored before outcomes were recorded: a CPU-verified "no_improvement" is unmeasured.
    old = ResultSummary(
        run_id="r", source_file="f", target_id="t", status="no_improvement", verified=True
    )
    assert old.run_outcome().kind is OutcomeKind.VERIFIED_UNMEASURED
    assert (
        from_status("no_improvement", verified=False, speedup_eager=None, speedup_compile=None).kind
        is OutcomeKind.NO_VERIFIED
    )
    new = ResultSummary(
        run_id="r",
        source_file="f",
        target_id="t",
        status="no_improvement",
        verified=True,
        speedup_eager=1.3,
        outcome=slow_outcome(),
    )
    assert new.run_outcome().headline().startswith("verified, no faster kernel")


def slow_outcome():
    return judge(timed(1.3, 0.8, compile_=(0.7, 0.8)), verified=True, device="cuda").to_dict()


def test_the_editor_title_says_when_the_kernel_only_matches_torch_compile():
    from kernelevo_server.present import result_title

    def title(sc, compile_):
        outcome = judge(timed(25.0, sc, compile_=compile_), verified=True, device="cuda")
        r = ResultSummary(
            run_id="r",
            source_file="f",
            target_id="t",
            status=outcome.kind.value,
            verified=True,
            speedup_eager=25.0,
            outcome=outcome.to_dict(),
        )
        return result_title(r)

    assert title(0.99, (0.95, 1.05)).endswith("kernel, as fast as torch.compile")
    assert "torch.compile" not in title(1.25, (1.2, 1.3))
