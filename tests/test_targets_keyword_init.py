"""Constructors that take arguments by keyword only (kernelevo/targets/init_keywords.py), on
lucidrains's vit-pytorch files in tests/corpus/public, unedited: every route to a task (the
signature, a script, the decorator, the comments) builds the model by name where it must, and the
regression test `apply` writes builds the user's class the same way."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_targets_corpus_public import kernelevo  # the CLI as a user runs it

from kernelevo.targets.detect import analyze_source
from kernelevo.targets.init_keywords import init_by_name, init_keywords, split_keyword_init
from kernelevo.targets.inputs import _from_comments, guess_inputs
from kernelevo.targets.reference_call import resolve_reference

ROOT = Path(__file__).resolve().parents[1]
VIT = ROOT / "tests" / "corpus" / "public" / "vit-pytorch"
SIMPLE_VIT_NAMES = ("image_size", "patch_size", "num_classes", "dim", "depth", "heads", "mlp_dim")


def workspace(tmp_path: Path) -> Path:
    shutil.copytree(VIT, tmp_path / "vit-pytorch")
    return tmp_path / "vit-pytorch" / "vit_pytorch"


def built_task(out: str) -> str:
    path = next(ln.split("task: ", 1)[1] for ln in out.splitlines() if ln.startswith("task: "))
    return Path(path.strip()).read_text()


def test_a_dict_of_constructor_arguments_is_split_into_values_and_names() -> None:
    assert split_keyword_init("dict(dim=64, depth=N)") == ("(64, N,)", ["dim", "depth"])
    assert split_keyword_init('{"dim": 64}') == ("(64,)", ["dim"])
    assert split_keyword_init("(64, 2)") == ("(64, 2)", [])  # by position, as written
    assert split_keyword_init("dict(base, dim=2)") == ("dict(base, dim=2)", [])
    assert split_keyword_init("dict(**cfg)") == ("dict(**cfg)", [])


def test_the_task_builds_its_model_by_position_and_passes_the_last_values_by_name() -> None:
    text = (
        "class Model:\n"
        "    def __init__(self, dim, *, depth, heads=1):\n"
        "        self.got = (dim, depth, heads)\n" + init_by_name(["depth", "heads"])
    )
    space: dict = {}
    exec(compile(text, "task.py", "exec"), space)
    assert space["Model"](*[64, 2, 4]).got == (64, 2, 4)
    assert init_keywords(text) == ["depth", "heads"]
    assert init_by_name([]) == "" and init_keywords("class Model: pass\n") == []


def test_the_signature_guess_builds_a_model_whose_constructor_takes_keywords_only(
    tmp_path: Path,
) -> None:
    """SimpleViT(*, image_size, patch_size, ...): the guess was called by position ("takes 1
    positional argument but 8 were given"), and its image, cut into patches with einops, had no
    convolution to read a shape from."""
    folder = workspace(tmp_path)
    run = kernelevo(["task", f"{folder / 'simple_vit.py'}::SimpleViT"], tmp_path)
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "check ok" in out, out
    assert "inputs float32[2, 3, 32, 32]" in out
    assert init_keywords(built_task(out)) == list(SIMPLE_VIT_NAMES)


def test_a_video_model_gets_a_video_from_its_constructors_frames(tmp_path: Path) -> None:
    """simple_vit_3d's SimpleViT(*, image_size, image_patch_size, frames, frame_patch_size, ...)
    takes (B, C, frames, H, W): no image of any rank fitted before."""
    folder = workspace(tmp_path)
    run = kernelevo(["task", f"{folder / 'simple_vit_3d.py'}::SimpleViT"], tmp_path)
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "check ok" in out, out
    assert "inputs float32[2, 3, 16, 32, 32]" in out


def test_a_script_that_passes_keyword_only_arguments_is_recorded_by_name(tmp_path: Path) -> None:
    """The recording kept only positional parameters: a script building SimpleViT by name gave a
    task whose check failed with "missing 7 required keyword-only arguments"."""
    folder = workspace(tmp_path)
    script = folder.parent / "train.py"
    script.write_text(
        "import sys\n\nimport torch\n\nsys.path.insert(0, 'vit_pytorch')\n"
        "from simple_vit import SimpleViT\n\n"
        "model = SimpleViT(image_size=32, patch_size=8, num_classes=10, dim=64, depth=1, heads=2,\n"
        "                  mlp_dim=128, channels=1, dim_head=32)\n"
        "print(model(torch.randn(2, 1, 32, 32)).shape)\n"
    )
    run = kernelevo(
        ["task", f"{folder / 'simple_vit.py'}::SimpleViT", "--script", str(script)], folder.parent
    )
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "check ok" in out, out
    assert "inputs float32[2, 1, 32, 32]" in out
    text = built_task(out)
    # channels and dim_head have defaults: kept because the script gave other values
    assert init_keywords(text) == [*SIMPLE_VIT_NAMES, "channels", "dim_head"]
    assert "return [32, 8, 10, 64, 1, 2, _KERNELEVO_N128, 1, 32]" in text


DECORATED = """import kernelevo


@kernelevo.example(
    lambda: (torch.randn(2, 3, 32, 32),),
    init=lambda: dict(image_size=32, patch_size=8, num_classes=10, dim=64, depth=1, heads=2, mlp_dim=96),
)
class SimpleViT(nn.Module):"""


def test_the_decorator_and_the_comments_take_constructor_arguments_by_name(
    tmp_path: Path,
) -> None:
    folder = workspace(tmp_path)
    path = folder / "simple_vit.py"
    source = path.read_text()
    path.write_text(source.replace("class SimpleViT(nn.Module):", DECORATED.split("\n", 3)[3]))
    path.write_text("import kernelevo\n" + path.read_text())
    run = kernelevo(["task", f"{path}::SimpleViT"], tmp_path)
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "check ok" in out and "@kernelevo.example" in out, out
    text = built_task(out)
    assert init_keywords(text) == list(SIMPLE_VIT_NAMES)
    assert "_kernelevo_list((32, 8, 10, 64, 1, 2, _KERNELEVO_N96,))" in text

    commented = source.replace(
        "class SimpleViT(nn.Module):",
        "# kernelevo: inputs = (torch.randn(2, 3, 32, 32),)\n"
        "# kernelevo: init = dict(image_size=32, patch_size=8, num_classes=10, dim=64, depth=1, "
        "heads=2, mlp_dim=96)\nclass SimpleViT(nn.Module):",
    )
    a = analyze_source(commented, str(path))
    ref = resolve_reference(a, next(t for t in a.targets if t.id == "module:SimpleViT"))
    found = _from_comments(a, ref)
    assert found is not None and found.init_keywords == list(SIMPLE_VIT_NAMES)


def test_the_suggested_inputs_name_keyword_only_constructor_arguments() -> None:
    """What the error and the editor's input box offer must be something the decorator reads."""
    path = VIT / "vit_pytorch" / "simple_vit.py"
    a = analyze_source(path.read_text(), str(path))
    g = guess_inputs(
        a, resolve_reference(a, next(t for t in a.targets if t.id == "module:SimpleViT"))
    )
    assert g.init_params == list(SIMPLE_VIT_NAMES)
    assert g.init is not None and g.init.startswith("dict(image_size=")
    assert split_keyword_init(g.init)[1] == list(SIMPLE_VIT_NAMES)
    a = analyze_source((VIT / "vit_pytorch" / "normalized_vit.py").read_text(), "normalized_vit.py")
    g = guess_inputs(
        a, resolve_reference(a, next(t for t in a.targets if t.id == "module:FeedForward"))
    )
    assert g.init_params == ["dim", "dim_inner"] and g.init == "dict(dim=1024, dim_inner=1024)"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_keyword_only_module_is_optimized_applied_and_its_regression_test_passes(
    tmp_path: Path,
) -> None:
    """normalized_vit's FeedForward(dim, *, dim_inner), unedited, shapes from the file's own
    __main__ block: the regression test apply writes builds the user's class by name too."""
    folder = workspace(tmp_path)
    spec = f"{folder / 'normalized_vit.py'}::FeedForward"
    summary = tmp_path / "summary.json"
    run = kernelevo(
        ["optimize", spec, "--iterations", "1", "--json-out", str(summary)], tmp_path, 900
    )
    out = run.stdout + run.stderr
    assert run.returncode == 0 and "Traceback" not in out, out
    s = json.loads(summary.read_text())
    assert s["best_candidate"] is not None, out
    applied = kernelevo(["apply", s["run_id"], "--force"], tmp_path)
    out = applied.stdout + applied.stderr
    assert applied.returncode == 0, out
    test = next(
        ln.rsplit("regression test: ", 1)[1].strip()
        for ln in out.splitlines()
        if "regression test: " in ln
    )
    assert "INIT_KEYWORDS = ('dim_inner',)" in Path(test).read_text()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", test],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, PYTHONPATH=str(ROOT), TRITON_INTERPRET="1"),
    )
    last = proc.stdout.strip().splitlines()[-1]
    assert proc.returncode == 0 and " passed" in last and "skipped" not in last, proc.stdout[-2000:]
