"""Applying verified kernels: the planned diff, the guard and fallback, all-or-nothing writes, and a
round trip that runs the generated regression test on the CPU under the Triton interpreter."""

import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from kernelevo.targets import edits
from kernelevo.targets.apply import ApplyError, apply_candidate, plan_apply, write_plan
from kernelevo.targets.apply_facts import ApplyFacts
from kernelevo.targets.apply_inputs import static_init_args
from kernelevo.targets.detect import detect_file, detect_source

HERE = Path(__file__).parent
CORPUS = HERE / "corpus" / "usercode"
CANDIDATES = HERE / "corpus" / "candidates"


def meta_for(path: Path, target_id: str, **extra) -> ApplyFacts:
    return ApplyFacts(
        **{
            "verified": True,
            "run_id": "run-cpu-1",
            "gpu": "CPU (Triton interpreter)",
            "date": "2026-11-29",
            "backend": "triton",
            "dtypes": ["float32"],
            "devices": ["cpu"],
            "speedup_eager": 1.31,
            "speedup_compile": 1.02,
            "source_hash": detect_file(str(path)).find(target_id).source_hash,
            **extra,
        }
    )


def user_copy(tmp_path: Path, name: str = "model.py") -> Path:
    dest = tmp_path / name
    shutil.copy(CORPUS / name, dest)
    return dest


def run(cmd: list[str], cwd: Path, interpret: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


RMS_META = dict(shapes=[[[4, 32, 64]], [[2, 5, 64]]], init_args=[64])


def test_round_trip_module_target(tmp_path):
    user = user_copy(tmp_path)
    plan = apply_candidate(
        str(user),
        "module:RMSNorm",
        str(CANDIDATES / "rmsnorm_triton.py"),
        meta_for(user, "module:RMSNorm", **RMS_META),
    )
    kernel, test = (
        tmp_path / "model_kernelevo_rmsnorm.py",
        tmp_path / "test_model_kernelevo_rmsnorm.py",
    )
    assert (
        plan.kernel_module == str(kernel)
        and plan.test_path == str(test)
        and kernel.exists()
        and test.exists()
    )
    header = kernel.read_text().split("# ---- the verified candidate")[0]
    for fact in (
        "run-cpu-1 (triton) on CPU (Triton interpreter), 2026-11-29",
        "1.31x vs eager PyTorch",
        "1.02x vs torch.compile",
        "dtypes float32; devices cpu",
        "x: [4, 32, 64] | x: [2, 5, 64]",
    ):
        assert fact in header

    result = run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test.name], tmp_path
    )
    assert result.returncode == 0 and "3 passed" in result.stdout, result.stdout + result.stderr

    (tmp_path / "use.py").write_text(
        "import torch, model\n"
        "m = model.RMSNorm(64)\n"
        "with torch.no_grad():\n"
        "    m.weight.add_(torch.randn(64))\n"
        "    k = model._kernelevo_rmsnorm\n"
        "    x = torch.randn(3, 7, 64)\n"
        "    ref = lambda t: t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + 1e-6) * m.weight.to(t.dtype)\n"
        "    assert k.supports(m, x)  # verified: float32 on cpu, any batch/seq, hidden 64\n"
        "    torch.testing.assert_close(m(x), ref(x))\n"
        "    x64 = torch.randn(3, 7, 64, dtype=torch.float64)\n"
        "    assert not k.supports(m, x64)  # unverified dtype: the original code runs\n"
        "    assert m(x64).dtype == torch.float64\n"
        "    torch.testing.assert_close(m(x64), ref(x64), atol=1e-12, rtol=1e-12)\n"
        "    assert not k.supports(m, torch.randn(3, 7, 32))  # hidden size not verified\n"
        "    assert not k.supports(m, torch.randn(64, 7, 3).transpose(0, 2))  # not contiguous\n"
        "    assert not k.supports(m, torch.randn(7, 64))  # other rank\n"
        "assert not k.supports(m, x)  # autograd on: weights require grad\n"
        "print('ok')\n"
    )
    used = run([sys.executable, "use.py"], tmp_path)
    assert used.stdout.strip() == "ok", used.stderr
    without = run(
        [
            sys.executable,
            "-c",
            "import model, torch; m = model.RMSNorm(64);"
            "print(model._kernelevo_rmsnorm.supports(m, torch.randn(2, 64)), m(torch.randn(2, 3, 64)).shape)",
        ],
        tmp_path,
        interpret=False,
    )
    assert without.stdout.strip() == "False torch.Size([2, 3, 64])", (
        without.stderr
    )  # no GPU, no interpreter


def test_round_trip_function_target_with_docstring_and_decorator(tmp_path):
    user = user_copy(tmp_path)
    shapes = [[[8, 256], [256]], [[3, 256], [256]]]
    plan = apply_candidate(
        str(user),
        "function:fused_bias_gelu",
        str(CANDIDATES / "bias_gelu_triton.py"),
        meta_for(user, "function:fused_bias_gelu", shapes=shapes),
    )
    new = user.read_text()
    doc = '    """tanh-approximated GELU of x + bias (as in GPT-2)."""\n'
    assert (
        doc
        + "    if _kernelevo_fused_bias_gelu is not None and _kernelevo_fused_bias_gelu.supports(x, bias):"
        in new
    )
    result = run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", Path(plan.test_path).name],
        tmp_path,
    )
    assert result.returncode == 0 and "3 passed" in result.stdout, result.stdout + result.stderr


def test_dry_run_writes_nothing_and_leaves_the_rest_of_the_file_alone(tmp_path):
    user = user_copy(tmp_path)
    before = sorted(os.listdir(tmp_path))
    plan = apply_candidate(
        str(user),
        "module:RMSNorm",
        str(CANDIDATES / "rmsnorm_triton.py"),
        meta_for(user, "module:RMSNorm", **RMS_META),
        dry_run=True,
    )
    assert (
        sorted(os.listdir(tmp_path)) == before
        and user.read_text() == (CORPUS / "model.py").read_text()
    )
    assert [Path(f.path).name for f in plan.files] == [
        "model_kernelevo_rmsnorm.py",
        "test_model_kernelevo_rmsnorm.py",
        "model.py",
    ]
    assert f"+++ {tmp_path}/model_kernelevo_rmsnorm.py" in plan.diff
    assert (
        "+        if _kernelevo_rmsnorm is not None and _kernelevo_rmsnorm.supports(self, x):"
        in plan.diff
    )
    edit = plan.files[2]
    new_lines = edit.new_text.split("\n")
    rest = iter(new_lines)
    assert all(
        line in rest for line in edit.old_text.split("\n")
    )  # every original line kept, in order
    added = len(new_lines) - len(edit.old_text.split("\n"))
    assert added == 7  # blank line + 4-line guarded import, 2-line guard
    assert (
        "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n        if _kernelevo_rmsnorm"
        in edit.new_text
    )


def test_refuses_when_target_changed_since_search(tmp_path):
    user = user_copy(tmp_path)
    meta = meta_for(user, "module:RMSNorm", **RMS_META)
    user.write_text(user.read_text().replace("+ self.eps)", "+ 2 * self.eps)"))
    with pytest.raises(
        ApplyError, match=r"model.py:54: RMSNorm changed since the search started \(run run-cpu-1\)"
    ):
        apply_candidate(str(user), "module:RMSNorm", str(CANDIDATES / "rmsnorm_triton.py"), meta)
    assert sorted(os.listdir(tmp_path)) == ["model.py"]


def test_edits_elsewhere_in_the_file_are_fine(tmp_path):
    user = user_copy(tmp_path)
    meta = meta_for(user, "module:RMSNorm", **RMS_META)
    user.write_text(
        user.read_text().replace("ROPE_BASE = 10_000.0", "# tuned\nROPE_BASE = 500_000.0")
    )
    plan = apply_candidate(
        str(user), "module:RMSNorm", str(CANDIDATES / "rmsnorm_triton.py"), meta, dry_run=True
    )
    assert "ROPE_BASE = 500_000.0" in plan.files[2].new_text


@pytest.mark.parametrize(
    "change, message",
    [
        ({"verified": False, "status": "incorrect"}, "not verified (status incorrect)"),
        ({"backend": "opencl"}, "unknown backend 'opencl'"),
        ({"shapes": []}, "no verified shapes recorded"),
        ({"source_hash": ""}, "no source_hash recorded"),
        ({"init_args": None}, None),
    ],
)
def test_refuses_incomplete_or_unverified_runs(tmp_path, change, message):
    user = user_copy(tmp_path)
    meta = replace(meta_for(user, "module:RMSNorm", **RMS_META), **change)
    if message is None:  # init args can come from the task's get_init_inputs
        meta = replace(
            meta, task_source="hidden = 64\ndef get_init_inputs():\n    return [hidden]\n"
        )
        apply_candidate(
            str(user), "module:RMSNorm", str(CANDIDATES / "rmsnorm_triton.py"), meta, dry_run=True
        )
        return
    with pytest.raises(ApplyError, match=re.escape(message)):
        apply_candidate(str(user), "module:RMSNorm", str(CANDIDATES / "rmsnorm_triton.py"), meta)
    assert sorted(os.listdir(tmp_path)) == ["model.py"]


def test_refuses_candidates_that_need_attributes_the_module_lacks(tmp_path):
    user = user_copy(tmp_path)
    cand = tmp_path / "cand.py"
    cand.write_text(
        (CANDIDATES / "rmsnorm_triton.py").read_text().replace("self.eps,", "self.inv_dim,")
    )
    with pytest.raises(ApplyError, match=r"reads self.inv_dim, which RMSNorm does not have"):
        apply_candidate(
            str(user), "module:RMSNorm", str(cand), meta_for(user, "module:RMSNorm", **RMS_META)
        )


def test_refuses_twice_and_syntax_errors(tmp_path):
    user = user_copy(tmp_path)
    meta = meta_for(user, "module:RMSNorm", **RMS_META)
    apply_candidate(str(user), "module:RMSNorm", str(CANDIDATES / "rmsnorm_triton.py"), meta)
    # the same run again: said so, not "changed since the search started" (its own guard did)
    with pytest.raises(
        ApplyError, match=r"already calls the kernel of run .* \(this run\): nothing"
    ):
        apply_candidate(str(user), "module:RMSNorm", str(CANDIDATES / "rmsnorm_triton.py"), meta)
    meta = replace(meta, source_hash=detect_file(str(user)).find("module:RMSNorm").source_hash)
    with pytest.raises(ApplyError, match="already applied here"):
        apply_candidate(str(user), "module:RMSNorm", str(CANDIDATES / "rmsnorm_triton.py"), meta)
    broken = user_copy(tmp_path, "broken.py")
    with pytest.raises(ApplyError, match=r"broken\.py:19: invalid syntax; fix the syntax error"):
        apply_candidate(
            str(broken),
            "module:GatedMLP",
            str(CANDIDATES / "rmsnorm_triton.py"),
            meta_for(broken, "module:GatedMLP", shapes=[[[2, 8]]], init_args=[8]),
        )


def test_write_plan_refuses_files_changed_after_planning(tmp_path):
    user = user_copy(tmp_path)
    plan = apply_candidate(
        str(user),
        "module:RMSNorm",
        str(CANDIDATES / "rmsnorm_triton.py"),
        meta_for(user, "module:RMSNorm", **RMS_META),
        dry_run=True,
    )
    user.write_text(user.read_text() + "\n# saved meanwhile\n")
    with pytest.raises(ApplyError, match=r"model\.py: changed since the change was planned"):
        write_plan(plan)
    assert sorted(os.listdir(tmp_path)) == ["model.py"]
    user.write_text((CORPUS / "model.py").read_text())
    (tmp_path / "model_kernelevo_rmsnorm.py").write_text("# someone else's file\n")
    with pytest.raises(ApplyError, match=r"model_kernelevo_rmsnorm\.py: already exists"):
        write_plan(plan)
    assert user.read_text() == (CORPUS / "model.py").read_text()


def test_write_plan_is_all_or_nothing(tmp_path, monkeypatch):
    user = user_copy(tmp_path)
    plan = apply_candidate(
        str(user),
        "module:RMSNorm",
        str(CANDIDATES / "rmsnorm_triton.py"),
        meta_for(user, "module:RMSNorm", **RMS_META),
        dry_run=True,
    )
    real_replace = os.replace
    calls = []

    def flaky(src, dst):
        calls.append(dst)
        if len(calls) == 3 and str(dst).endswith("model.py"):  # the last file: the user's
            raise OSError("disk full")
        return real_replace(src, dst)

    monkeypatch.setattr(edits.os, "replace", flaky)
    with pytest.raises(OSError, match="disk full"):
        write_plan(plan)
    monkeypatch.setattr(edits.os, "replace", real_replace)
    assert sorted(os.listdir(tmp_path)) == ["model.py"]  # new files removed, no temporaries left
    assert user.read_text() == (CORPUS / "model.py").read_text()


def test_crlf_files_keep_their_line_endings(tmp_path):
    user = tmp_path / "model.py"
    user.write_bytes((CORPUS / "model.py").read_bytes().replace(b"\n", b"\r\n"))
    apply_candidate(
        str(user),
        "module:RMSNorm",
        str(CANDIDATES / "rmsnorm_triton.py"),
        meta_for(user, "module:RMSNorm", **RMS_META),
    )
    data = user.read_bytes()
    assert (
        data.count(b"\n") == data.count(b"\r\n") and b"_kernelevo_rmsnorm.run(self, x)\r\n" in data
    )


def test_package_layout_imports_relatively(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    user = user_copy(pkg)
    plan = apply_candidate(
        str(user),
        "module:RMSNorm",
        str(CANDIDATES / "rmsnorm_triton.py"),
        meta_for(user, "module:RMSNorm", **RMS_META),
        dry_run=True,
    )
    assert (
        "    from . import model_kernelevo_rmsnorm as _kernelevo_rmsnorm\nexcept ImportError:"
        in plan.files[2].new_text
    )
    assert "from . import model as _user" in plan.files[1].new_text


def test_plan_apply_is_pure_and_uses_the_given_target_hash():
    text = (CORPUS / "model.py").read_text()
    target = detect_source(text, "somewhere/model.py").find("module:RMSNorm")
    meta = ApplyFacts(
        run_id="r9",
        backend="triton",
        verified=True,
        dtypes=["float16"],
        devices=["cuda:0"],
        shapes=[[[8, 4096]]],
        init_args=[4096],
    )
    plan = plan_apply(text, target, (CANDIDATES / "rmsnorm_triton.py").read_text(), meta)
    assert [f.path for f in plan.files] == [
        "somewhere/model_kernelevo_rmsnorm.py",
        "somewhere/test_model_kernelevo_rmsnorm.py",
        "somewhere/model.py",
    ]
    assert "_KE_RULES = [('tensor', 2, {0: 8, 1: 4096})]" in plan.files[0].new_text
    assert "_KE_DEVICES = frozenset(['cuda'])" in plan.files[0].new_text
    target.source_hash = "0" * 64
    with pytest.raises(ApplyError, match="changed since the search started"):
        plan_apply(text, target, (CANDIDATES / "rmsnorm_triton.py").read_text(), meta)


def test_static_init_args():
    assert static_init_args(
        "hidden = 96\neps = 1e-6\ndef get_init_inputs():\n    return [hidden, eps]\n"
    ) == [96, 1e-6]
    assert static_init_args("def get_init_inputs():\n    return [make()]\n") is None


def test_static_init_args_at_the_small_size_the_cpu_verified():
    task = (
        "_KERNELEVO_N4096 = 4096\nSMALL = {'_KERNELEVO_N4096': 64}\n\n\n"
        "def get_init_inputs():\n    return _kernelevo_list((_KERNELEVO_N4096,))\n"
    )
    assert static_init_args(task) == [4096]  # a GPU verifies the sizes as given
    assert static_init_args(task, small=True) == [
        64
    ]  # the regression test matches the small inputs


def test_a_file_whose_name_is_not_a_module_name(tmp_path):
    user = (
        tmp_path / "02-fused-gelu.py"
    )  # a tutorial's file name: `import 02-fused-gelu` is not Python
    shutil.copy(CORPUS / "model.py", user)
    shapes = [[[8, 256], [256]], [[3, 256], [256]]]
    plan = apply_candidate(
        str(user),
        "function:fused_bias_gelu",
        str(CANDIDATES / "bias_gelu_triton.py"),
        meta_for(user, "function:fused_bias_gelu", shapes=shapes),
    )
    assert os.path.basename(plan.kernel_module) == "_02_fused_gelu_kernelevo_fused_bias_gelu.py"
    result = run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", Path(plan.test_path).name],
        tmp_path,
    )
    assert result.returncode == 0 and "3 passed" in result.stdout, result.stdout + result.stderr


def test_the_guard_names_its_run_for_the_editor(tmp_path):
    """The editor reads "applied" from the file (kernelevo_server/applied.py): the guard line
    names the run, the original text has none, and an unrelated comment is not taken for one."""
    from kernelevo.targets.apply_templates import applied_run_id

    user = user_copy(tmp_path)
    before = user.read_text().splitlines()
    plan = plan_apply(
        user.read_text(),
        detect_file(str(user)).find("function:fused_bias_gelu"),
        (CANDIDATES / "bias_gelu_triton.py").read_text(),
        meta_for(user, "function:fused_bias_gelu", shapes=[[[8, 256], [256]]], run_id="r42"),
    )
    (after,) = [f.new_text for f in plan.files if f.path == str(user)]
    assert applied_run_id(after.splitlines()) == "r42"
    assert applied_run_id(before) is None
    assert applied_run_id(["    # KernelEvo run r42 was slower; see notes"]) is None


@pytest.mark.skipif(
    __import__("torch").cuda.is_available(), reason="the file's GPU code runs on a GPU"
)
def test_the_regression_test_skips_on_a_cpu_only_where_the_file_runs_gpu_code_at_import(tmp_path):
    user = tmp_path / "tutorial.py"
    text = (CORPUS / "model.py").read_text()
    user.write_text(text + "\n\nDATA = __import__('torch').randn(4).cuda()\n")
    shapes = [[[8, 256], [256]]]
    plan = apply_candidate(
        str(user),
        "function:fused_bias_gelu",
        str(CANDIDATES / "bias_gelu_triton.py"),
        meta_for(user, "function:fused_bias_gelu", shapes=shapes),
    )
    cmd = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"]
    result = run([*cmd, Path(plan.test_path).name], tmp_path)
    out = result.stdout + result.stderr
    assert result.returncode == 0 and "2 skipped" in out, out
    assert "tutorial.py runs GPU code when imported (AssertionError: Torch not compiled" in out
    # any other failure at import is the test's business: it fails
    user.write_text(user.read_text().replace(".cuda()", ".reshape(3)"))
    result = run([*cmd, Path(plan.test_path).name], tmp_path)
    assert result.returncode != 0 and "RuntimeError" in result.stdout + result.stderr


SCRIPTED = '''import torch


@torch.jit.script
def fused_bias_gelu(
    x: torch.Tensor, bias: torch.Tensor  # as flash-attention's bias_gelu
) -> torch.Tensor:
    """tanh-approximated GELU of x + bias."""
    y = x + bias
    return 0.5 * y * (1.0 + torch.tanh(0.7978845608028654 * (y + 0.044715 * torch.pow(y, 3))))


def block(x, bias):
    return fused_bias_gelu(x, bias) * 2
'''


def test_a_torchscript_function_keeps_its_scripted_original_beside_a_plain_guarded_one(tmp_path):
    """A guard inside a @torch.jit.script body made the user's file fail at import (TorchScript
    cannot call the Python kernel): flash-attention's bias_gelu, applied unedited."""
    user = tmp_path / "scripted.py"
    user.write_text(SCRIPTED)
    shapes = [[[8, 256], [256]], [[3, 256], [256]]]
    plan = apply_candidate(
        str(user),
        "function:fused_bias_gelu",
        str(CANDIDATES / "bias_gelu_triton.py"),
        meta_for(user, "function:fused_bias_gelu", shapes=shapes),
    )
    new = user.read_text()
    assert "@torch.jit.script\ndef _kernelevo_scripted_fused_bias_gelu(\n" in new
    assert (
        "def fused_bias_gelu(\n    x: torch.Tensor, bias: torch.Tensor  # as flash-attention's bias_gelu\n"
        ") -> torch.Tensor:\n    if _kernelevo_fused_bias_gelu is not None" in new
    )
    assert "    return _kernelevo_scripted_fused_bias_gelu(x, bias)\n\n\ndef block(x, bias):" in new
    imported = run(
        [
            sys.executable,
            "-c",
            "import torch, scripted as s; x = torch.randn(4, 256); b = torch.randn(256);"
            "o = s._kernelevo_scripted_fused_bias_gelu(x, b);"
            "print(torch.allclose(s.block(x, b), 2 * o, atol=1e-5))",
        ],
        tmp_path,
    )
    assert imported.stdout.strip() == "True", imported.stdout + imported.stderr
    result = run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", Path(plan.test_path).name],
        tmp_path,
    )
    assert result.returncode == 0 and "3 passed" in result.stdout, result.stdout + result.stderr
    ids = {t.id for t in detect_file(str(user)).targets}
    assert "function:fused_bias_gelu" in ids and not any("_kernelevo_" in i for i in ids), ids
    with pytest.raises(ApplyError, match="rename _kernelevo_scripted_fused_bias_gelu back"):
        apply_candidate(
            str(user),
            "function:fused_bias_gelu",
            str(CANDIDATES / "bias_gelu_triton.py"),
            replace(meta_for(user, "function:fused_bias_gelu", shapes=shapes), source_hash="x"),
        )


def test_a_torchscript_function_called_from_torchscript_is_refused_in_one_line(tmp_path):
    user = tmp_path / "scripted.py"
    user.write_text(SCRIPTED.replace("\ndef block(", "\n@torch.jit.script\ndef block("))
    before = user.read_text()
    with pytest.raises(
        ApplyError, match=r"scripted\.py:14: block is TorchScript and calls fused_bias_gelu"
    ):
        apply_candidate(
            str(user),
            "function:fused_bias_gelu",
            str(CANDIDATES / "bias_gelu_triton.py"),
            meta_for(user, "function:fused_bias_gelu", shapes=[[[8, 256], [256]]]),
        )
    assert user.read_text() == before


def test_a_torchscript_module_method_is_refused_in_one_line(tmp_path):
    user = tmp_path / "scripted_module.py"
    user.write_text(
        "import torch\n\n\nclass Gelu(torch.jit.ScriptModule):\n    @torch.jit.script_method\n"
        "    def forward(self, x, bias):\n        y = x + bias\n        return y * torch.sigmoid(1.702 * y)\n"
    )
    before = user.read_text()
    with pytest.raises(ApplyError, match="compiled by TorchScript as part of a class"):
        apply_candidate(
            str(user),
            "module:Gelu",
            str(CANDIDATES / "bias_gelu_triton.py"),
            meta_for(user, "module:Gelu", shapes=[[[8, 256], [256]]]),
        )
    assert user.read_text() == before
