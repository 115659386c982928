"""Launch configurations of Inductor-extracted candidates: the one Inductor's own benchmark keeps.

Inductor lists several configurations for a reduction and torch.compile keeps the fastest on
the real inputs; the extraction records them all, launches the kept one where a GPU ran the
benchmark (the first listed otherwise), and leaves the others for the parameter search.
The CPU tests drive a real capture of KernelBench's Conv2d + min over channels at a small size.
"""

from __future__ import annotations

import copy
import importlib.util
import re
import types
from pathlib import Path
from typing import Any

import pytest
from test_offline_inductor import _run_both

from kernelevo.offline.inductor import capture_inductor, rewrite
from kernelevo.offline.inductor_choice import AutotunerLog, chosen_configs
from kernelevo.offline.listed_configs import listed_trials
from kernelevo.offline.tunables import find_tunables
from kernelevo.offline.tune import tune

REPO = Path(__file__).resolve().parents[1]
CONV_MIN = REPO / "bench" / "kernelbench" / "level2" / "25_Conv2d_Min_Tanh_Tanh.py"
REDUCTION = "triton_per_fused_min_tanh_2"


def _task(tmp: Path, small: str) -> Path:
    task = tmp / "conv_min.py"
    task.write_text(CONV_MIN.read_text() + f"\n\nSMALL = {small}\n")
    return task


@pytest.fixture(scope="module")
def conv_min(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    task = _task(
        tmp_path_factory.mktemp("conv_min"), '{"batch_size": 2, "height": 12, "width": 12}'
    )
    captured = capture_inductor(task, device="cpu", size="small")
    assert captured["ok"], captured.get("reason")
    return task, captured


def _reduction(captured: dict[str, Any]) -> dict[str, Any]:
    return captured["variants"][0]["kernels"][REDUCTION]


def _launch(source: str, kernel: str) -> str:
    line = next(ln for ln in source.splitlines() if re.match(rf"\s*{kernel}\[", ln))
    return line[line.rindex("](") :]


def test_the_capture_keeps_every_listed_configuration(conv_min) -> None:
    _, captured = conv_min
    info = _reduction(captured)
    xblocks = [c["kwargs"]["XBLOCK"] for c in info["configs"]]
    assert len(xblocks) >= 3 and xblocks[0] == 1 and max(xblocks) >= 32, info["configs"]
    assert "chosen" not in info, "nothing benchmarks on the CPU"
    assert "only on a GPU" in info["chosen_note"]
    pointwise = [i for n, i in captured["variants"][0]["kernels"].items() if n != REDUCTION]
    assert pointwise and all(len(i["configs"]) == 1 and "chosen_note" not in i for i in pointwise)


def test_the_rewrite_launches_the_kept_configuration_else_the_first(conv_min, tmp_path) -> None:
    task, captured = conv_min
    first = rewrite(captured)
    assert "XBLOCK=1, num_warps=2, num_stages=1)" in _launch(first, REDUCTION)

    kept = copy.deepcopy(captured)
    last = _reduction(kept)["configs"][-1]
    _reduction(kept)["chosen"] = last  # what a capture on a GPU records (GPU test below)
    source = rewrite(kept)
    launch = _launch(source, REDUCTION)
    assert f"XBLOCK={last['kwargs']['XBLOCK']}, num_warps={last['num_warps']}," in launch
    # the other listed configurations stay visible to the parameter search
    listing = next(ln for ln in source.splitlines() if ln.startswith("# Inductor's launch"))
    assert '"XBLOCK":1,' in listing and "benchmark kept" in listing
    assert "autotune" not in source
    candidate = tmp_path / "kept.py"
    candidate.write_text(source)
    assert max(_run_both(task, [candidate], "small", "cpu")) < 1e-4


def test_on_a_gpu_a_kernel_launched_with_the_first_configuration_is_reported(conv_min) -> None:
    from kernelevo.offline.inductor import first_config_note

    _, captured = conv_min
    assert first_config_note(captured) == "", "on the CPU that is the rule, not news"
    gpu = copy.deepcopy(captured)
    gpu["device"] = "cuda"
    _reduction(gpu)["chosen_note"] = "this torch's autotuner has no `launchers`"
    note = first_config_note(gpu)
    assert note.startswith(REDUCTION) and "first listed" in note and "launchers" in note
    _reduction(gpu)["chosen"] = _reduction(gpu)["configs"][1]
    del _reduction(gpu)["chosen_note"]
    assert first_config_note(gpu) == ""


def test_the_kept_configuration_is_read_from_inductors_autotuner(
    conv_min, tmp_path, monkeypatch
) -> None:
    """Real CachingAutotuner objects, built by importing the captured kernel with Inductor's
    decorator: one not launched yet has no kept configuration (and says so); one narrowed to a
    single launcher, as its benchmark leaves it (autotune_to_one_config), gives that config."""
    import torch.utils._triton as torch_triton

    _, captured = conv_min
    info = _reduction(captured)
    path = tmp_path / f"{REDUCTION}.py"
    path.write_text(info["source"])
    monkeypatch.setattr(torch_triton, "triton_hash_with_backend", lambda: "0" * 64)  # no driver
    log = AutotunerLog()
    with log.recording():
        spec = importlib.util.spec_from_file_location("_kernel_under_test", path)
        assert spec is not None and spec.loader is not None
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    from torch._inductor.runtime import triton_heuristics

    assert triton_heuristics.cached_autotune.__name__ == "cached_autotune", "original restored"
    (autotuner,) = log.made
    assert isinstance(autotuner, triton_heuristics.CachingAutotuner)
    chosen, missing = chosen_configs(log.made)
    assert chosen == {} and "not launched" in missing[REDUCTION]
    autotuner.launchers = [types.SimpleNamespace(config=autotuner.configs[1])]
    chosen, missing = chosen_configs(log.made)
    assert missing == {} and chosen[REDUCTION]["kwargs"] == info["configs"][1]["kwargs"]


def test_the_parameter_search_reaches_and_first_tries_inductors_other_configurations(
    conv_min,
) -> None:
    _, captured = conv_min
    source = rewrite(captured)  # launched with XBLOCK=1: 32 lies beyond 8x of it
    tunables = find_tunables(source)
    xblock = next(t for t in tunables if t.name.startswith(f"{REDUCTION}.XBLOCK"))
    assert xblock.value == 1 and 32 in xblock.choices
    trials = listed_trials(source, {t.name for t in tunables})
    assert [t[xblock.name] for t in trials] == [1, 8, 32]

    def evaluate(text: str) -> float:  # a kernel that is fastest with 32 rows per program
        found = re.search(r"XBLOCK=(\d+), num_warps", _launch(text, REDUCTION))
        assert found is not None
        return 1.0 + abs(int(found.group(1)) - 32) / 32

    result = tune(source, evaluate, budget_evals=3, tunables=tunables)
    assert result.best_config[xblock.name] == 32, result.history
    assert [h.config[xblock.name] for h in result.history[:3]] == [1, 32, 8], "listed, model order"
    benchmarked = source.replace(
        "]\n@triton.jit",
        "] (launched with the one its benchmark kept on the task's inputs)\n@triton.jit",
    )
    assert listed_trials(benchmarked, {t.name for t in tunables}) == [], "no re-timing a choice"


@pytest.mark.gpu
def test_on_the_gpu_each_kernel_launches_the_configuration_inductor_kept(tmp_path) -> None:
    """Conv2d + min over 64 channels (KernelBench L2 25) at a reduced size: the capture runs
    Inductor's benchmark; every kernel with several configurations gets the one it kept, the
    candidate launches exactly that and matches the reference, as does the one launching the
    first listed configurations. Which is faster is bench/inductor_launch_configs.py's to
    measure: timed here, beside other GPU tests, it measured their load."""
    from kernelevo.offline.inductor_launches import launch_config

    task = _task(tmp_path, '{"batch_size": 16, "height": 128, "width": 128}')
    captured = capture_inductor(task, device="cuda", size="small")
    assert captured["ok"], captured.get("reason")
    kernels = captured["variants"][0]["kernels"]
    several = {n: i for n, i in kernels.items() if len(i["configs"]) > 1}
    assert any("_per_" in n or "_red_" in n for n in several), list(kernels)
    source = rewrite(captured)
    for name, info in several.items():
        assert "chosen" in info, f"{name}: {info.get('chosen_note')}"
        config, launch = launch_config(info), _launch(source, name)
        passed = [k for k in config["kwargs"] if f"{k}=" in launch]
        assert passed, (name, config, launch)
        assert all(f"{k}={config['kwargs'][k]}," in launch for k in passed), (name, config, launch)
        assert f"num_warps={config['num_warps']}, num_stages={config['num_stages']})" in launch
    first = copy.deepcopy(captured)
    for info in first["variants"][0]["kernels"].values():
        info.pop("chosen", None)
    paths = [tmp_path / "kept.py", tmp_path / "first.py"]
    paths[0].write_text(source)
    paths[1].write_text(rewrite(first))
    # the convolution runs in TF32 (cuDNN's default), channels-last here, NCHW in the reference
    assert max(_run_both(task, paths, "small", "cuda")) < 5e-3
