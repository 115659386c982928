"""`kernelevo verify`: JSON output, exit codes, one-line errors for bad input, instant re-checks."""

import json
import time

import pytest
from support import CANDIDATES, EXAMPLES, HAS_GPU, run_kernelevo

SOFTMAX = EXAMPLES / "softmax.py"
GOOD = CANDIDATES / "softmax" / "triton_ok.py"


def kv(*args, cwd):
    return run_kernelevo(args, cwd)


def test_verified_json_and_cache(tmp_path):
    r = kv("verify", SOFTMAX, GOOD, "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["status"] == "verified" and out["reason"] and isinstance(out["checks"], list)
    assert (tmp_path / ".kernelevo" / "store.sqlite").exists()
    t0 = time.monotonic()
    r2 = kv("verify", SOFTMAX, GOOD, "--json", cwd=tmp_path)
    assert json.loads(r2.stdout)["cached"] is True
    assert time.monotonic() - t0 < 3.0  # no worker started for a stored verdict


def test_rejected_exit_code_and_reason(tmp_path):
    cand = tmp_path / "c.py"
    cand.write_text(
        "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return "
        "torch.softmax(x, -1)\n"
    )
    r = kv("verify", SOFTMAX, cand, "--json", cwd=tmp_path)
    assert r.returncode == 1
    out = json.loads(r.stdout)
    assert out["status"] == "rejected" and "no kernel" in out["reason"]


@pytest.mark.parametrize("case", ["missing", "no_model", "syntax", "inputs_raise"])
def test_bad_task_one_line_exit_2(tmp_path, case):
    task = tmp_path / "task.py"
    if case == "no_model":
        task.write_text(
            "import torch\ndef get_inputs():\n    return []\ndef get_init_inputs():\n    return []\n"
        )
    elif case == "syntax":
        task.write_text(
            "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x)\n        return x\n"
        )
    elif case == "inputs_raise":
        task.write_text(
            SOFTMAX.read_text().replace(
                "def get_inputs():",
                "def get_inputs():\n    raise ValueError('boom')\n\ndef _old():",
                1,
            )
        )
    r = kv("verify", task, GOOD, cwd=tmp_path)
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = [ln for ln in r.stderr.strip().splitlines() if ln and not ln.startswith(STILL)]
    assert len(lines) == 1, r.stderr
    assert str(task) in lines[0]
    if case == "syntax":
        assert f"{task}:3:" in lines[0]
    if case == "inputs_raise":
        assert "get_inputs" in lines[0] and "boom" in lines[0] and f"{task}:" in lines[0]


def test_missing_candidate_exit_2(tmp_path):
    r = kv("verify", SOFTMAX, tmp_path / "nope.py", cwd=tmp_path)
    assert r.returncode == 2 and "nope.py" in r.stderr


def test_the_engine_of_a_verify_never_imports_torch(tmp_path):
    """The engine process of `kernelevo verify` starts three workers and judges through them; it
    imports neither torch nor Triton (seconds of a cold shell each, and candidates' libraries),
    and its verdict says where each worker's start went and how long it was waited for."""
    from support import fresh_python

    code = (
        "import contextlib, io, json, sys\nfrom kernelevo.cli import main\nout = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    main(['verify', {str(SOFTMAX)!r}, {str(GOOD)!r}, '--json', '--service', 'off', "
        "'--device', 'cpu', '--no-cache'])\n"
        "v = json.loads(out.getvalue())\n"
        "print(json.dumps([v['status'], v['phases'], 'torch' in sys.modules, 'triton' in sys.modules]))\n"
    )
    r = fresh_python(code, cwd=tmp_path, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    status, phases, torch_loaded, triton_loaded = json.loads(r.stdout.strip().splitlines()[-1])
    assert status == "verified" and not torch_loaded and not triton_loaded
    # the candidate process never imported torch._dynamo (torch.use_deterministic_algorithms did,
    # through torch._inductor: 1-2 s of every verdict here, 4-5 s on the H200)
    assert phases["candidate_dynamo"] is False
    assert set(phases["worker_wait_s"]) == {"judge", "runner", "compiler"}
    parts = phases["worker_start_parts_s"]  # each worker's start, step by step
    assert {"sandbox", "python", "warm_up_begin", "warm_up_reference"} <= set(parts["judge"])
    assert {"torch", "triton", "op_recorder", "spare_child"} <= set(parts["runner"])
    assert {"torch", "warm_compile", "host"} <= set(parts["compiler"])
    for name, steps in parts.items():
        assert abs(sum(steps.values()) - phases["worker_start_s"][name]) < 0.2, (name, steps)


DICT_TASK = """import torch
from torch import nn


class Model(nn.Module):
    \"\"\"Returns its outputs by name, as a Hugging Face encoder's ModelOutput does.\"\"\"

    def forward(self, x):
        return {"last_hidden_state": torch.tanh(x), "pooled": x.mean(dim=1)}


def get_inputs():
    return [torch.randn(16, 64)]


def get_init_inputs():
    return []
"""

DICT_CANDIDATE = """import torch
import triton
import triton.language as tl
from torch import nn


@triton.jit
def _tanh_rows(x_ptr, y_ptr, m_ptr, N: tl.constexpr):
    row = tl.program_id(0)
    x = tl.load(x_ptr + row * N + tl.arange(0, N))
    e = tl.exp(2.0 * x)
    tl.store(y_ptr + row * N + tl.arange(0, N), (e - 1.0) / (e + 1.0))
    tl.store(m_ptr + row, tl.sum(x, axis=0) / N)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y, m = torch.empty_like(x), torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
        _tanh_rows[(x.shape[0],)](x, y, m, N=x.shape[1])
        return {"last_hidden_state": y, "pooled": m}
"""


def test_outputs_returned_as_a_dict_are_each_compared(tmp_path):
    """Every tensor of a dict output is judged (its values in order); one wrong value fails."""
    task, good, bad = tmp_path / "t.py", tmp_path / "good.py", tmp_path / "bad.py"
    task.write_text(DICT_TASK)
    good.write_text(DICT_CANDIDATE)
    bad.write_text(DICT_CANDIDATE.replace("tl.sum(x, axis=0) / N", "tl.sum(x, axis=0) / (N + 1)"))
    r = kv("verify", task, good, "--json", "--service", "off", cwd=tmp_path)
    assert json.loads(r.stdout)["status"] == "verified", r.stdout[-1500:] + r.stderr[-1500:]
    r = kv("verify", task, bad, "--json", "--service", "off", cwd=tmp_path)
    out = json.loads(r.stdout)
    assert out["status"] == "incorrect" and "output 1" in out["reason"], out["reason"]


STILL = "kernelevo: still "  # the heartbeat of a slow verdict (a loaded machine), not an error


def _one_line(err):
    lines = [ln for ln in err.strip().splitlines() if ln and not ln.startswith(STILL)]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--timeout", "-5", "must be a positive number of seconds"),
        ("--timeout", "0", "must be a positive number of seconds"),
        ("--timeout", "nan", "must be a positive number of seconds"),
        ("--timeout", "inf", "must be a positive number of seconds"),
        ("--timeout", "1e308", "must be a positive number of seconds"),
        ("--seed", "99999999999999999999999", "must be an integer from 0 to 2**63-1"),
        ("--seed", "-1", "must be an integer from 0 to 2**63-1"),
    ],
)
def test_numbers_out_of_range_are_refused_at_parse_time(capsys, tmp_path, flag, value, said):
    """A negative or zero time limit was reported as the candidate's hang, and a seed past 64 bits
    failed inside the judge as the candidate's runtime error (and was cached)."""
    from kernelevo.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["verify", str(SOFTMAX), str(GOOD), flag, value, "--store", str(tmp_path / "s")])
    assert exc.value.code == 2
    line = _one_line(capsys.readouterr().err)
    assert f"argument {flag}: {value}: {said}" in line
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (
            ["bench", "t.py", "--candidate", "c.py"],
            "kernelevo bench: error: unrecognized arguments: "
            "--candidate c.py (see `kernelevo bench --help`)",
        ),
        (["verify", "t.py", "c.py", "--zzz"], "see `kernelevo verify --help`"),
        (["--zzz"], "kernelevo: error: unrecognized arguments: --zzz (see `kernelevo --help`)"),
    ],
)
def test_an_unknown_option_points_at_its_own_commands_help(capsys, argv, said):
    """It pointed at `kernelevo --help`, which does not list a command's options."""
    from kernelevo.cli import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2 and said in _one_line(capsys.readouterr().err)


@pytest.mark.parametrize("json_out", [False, True])
def test_a_candidate_that_is_not_utf8_text_is_one_line(tmp_path, json_out):
    latin1 = tmp_path / "latin1.py"
    latin1.write_bytes(b"# caf\xe9\nimport torch\n")
    r = kv("verify", SOFTMAX, "latin1.py", *(["--json"] if json_out else []), cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    line = _one_line(r.stderr)
    assert line.startswith("kernelevo: error: latin1.py: not UTF-8 text (") and line.endswith(
        "; save it as UTF-8"
    )


def test_a_folder_or_fifo_where_a_file_belongs_is_named_as_such(tmp_path):
    """A folder was 'no such candidate file'; a FIFO given as the task or the candidate blocked
    forever on the read."""
    import os

    (tmp_path / "adir.py").mkdir()
    os.mkfifo(tmp_path / "fifo.py")
    for args, said in (
        (("verify", SOFTMAX, "adir.py"), "adir.py is a folder, not a file"),
        (("verify", "fifo.py", GOOD), "fifo.py is not a regular file"),
        (("verify", SOFTMAX, "fifo.py"), "fifo.py is not a regular file"),
    ):
        r = run_kernelevo(args, tmp_path, timeout=120)
        assert r.returncode == 2 and said in _one_line(r.stderr), (args, r.stderr)


def test_a_link_that_loops_is_named_as_such_not_a_bug_or_missing(tmp_path):
    """verify said 'RuntimeError: Symlink loop ... a KernelEvo bug'; bench and optimize said the
    file did not exist."""
    (tmp_path / "loop1.py").symlink_to("loop2.py")
    (tmp_path / "loop2.py").symlink_to("loop1.py")
    for args in (
        ("verify", SOFTMAX, "loop1.py"),
        ("verify", "loop1.py", GOOD),
        ("bench", "loop1.py"),
        ("optimize", "loop1.py"),
    ):
        r = run_kernelevo(args, tmp_path, timeout=120)
        line = _one_line(r.stderr)
        assert r.returncode == 2 and "loop1.py: cannot read (Too many levels" in line, (args, line)


def test_a_kernelevo_cache_that_is_a_file_is_one_line_naming_it(tmp_path):
    cache = tmp_path / "cachefile"
    cache.write_text("x")
    r = run_kernelevo(
        ["verify", SOFTMAX, GOOD, "--no-cache", "--device", "cpu"],
        tmp_path,
        {"KERNELEVO_CACHE": str(cache)},
    )
    assert r.returncode == 2, r.stderr
    line = _one_line(r.stderr)
    assert f"KERNELEVO_CACHE={cache}" in line and "point KERNELEVO_CACHE at a folder" in line
    assert cache.read_text() == "x"
    r = run_kernelevo(["optimize", SOFTMAX], tmp_path, {"KERNELEVO_CACHE": str(cache)})
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr  # before any search step
    assert f"KERNELEVO_CACHE={cache}" in r.stderr


@pytest.mark.skipif(HAS_GPU, reason="asks for CUDA where there is none")
def test_device_cuda_without_a_gpu_says_so_not_that_the_task_is_broken(tmp_path):
    r = kv("verify", SOFTMAX, GOOD, "--device", "cuda", "--no-cache", cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    line = _one_line(r.stderr)
    assert "no CUDA GPU on this machine (" in line and line.endswith("; use --device cpu")
    assert "fix the task" not in line


HANGS = """import torch
import triton
import triton.language as tl


@triton.jit
def _copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        _copy[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)
        while y.numel() > 0:
            pass
        return y
"""


def test_a_long_verdict_is_not_silent(tmp_path):
    cand = tmp_path / "hangs.py"
    cand.write_text(HANGS)
    r = kv("verify", SOFTMAX, cand, "--device", "cpu", "--timeout", "6", cwd=tmp_path)
    assert r.returncode == 1 and r.stdout.startswith("TIMEOUT:"), (r.stdout, r.stderr)
    assert "kernelevo: still verifying on the CPU" in r.stderr and "up to 6 s" in r.stderr


def test_the_verdict_line_names_the_cpu_and_the_interpreter_only_for_triton():
    from kernelevo.cli.verify import format_verdict
    from kernelevo.verdict import Verdict

    cpu = {"type": "cpu", "triton_interpreter": True}
    triton = Verdict("verified", "ok", backend="triton", device=cpu)
    cuda = Verdict("unverified", "not run", backend="cuda_inline", device=cpu)
    assert " · CPU (Triton interpreter) · " in format_verdict(triton).splitlines()[1]
    line = format_verdict(cuda).splitlines()[1]
    assert " · CPU · " in line and "interpreter" not in line and "?" not in line
