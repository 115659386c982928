"""A task built from code inside the user's package imports that package: the sandboxed judge
sees the package folder read-only (never its .kernelevo store) and the task loads; the candidate's
process sees neither."""

from pathlib import Path

from test_targets_inputs import build, workspace

from kernelevo.worker.pool import task_roots

CANDIDATE = (
    "import torch\nimport triton\nimport triton.language as tl\n\n\n@triton.jit\n"
    "def _k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
    "    m = offs < n\n    x = tl.load(x_ptr + offs, mask=m)\n"
    "    tl.store(y_ptr + offs, 3.0 / (1.0 + tl.exp(-x)), mask=m)\n\n\nclass ModelNew(torch.nn.Module):\n"
    "    def forward(self, x):\n        x = x.contiguous()\n        y = torch.empty_like(x)\n"
    "        _k[(triton.cdiv(x.numel(), 256),)](x, y, x.numel(), BLOCK=256)\n        return y\n"
)


def test_a_task_importing_the_users_package_loads_in_the_sandbox(tmp_path):
    ws = workspace(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/util.py": "import torch\n\n\ndef gate(x):\n    return torch.sigmoid(x)\n\nSCALE = 3.0\n",
            "pkg/model.py": "import torch\nfrom pkg.util import gate\nfrom .util import SCALE\n\n\n"
            "def fused(x):\n    return gate(x) * SCALE\n",
        },
    )
    (ws / ".kernelevo").mkdir(exist_ok=True)
    (ws / ".kernelevo" / "secret-note").write_text("the store lives here")
    built = build(ws / "pkg" / "model.py", "fused", ws / "t")
    assert task_roots(str(built.path)) == {Path(ws).resolve()}
    cand = tmp_path / "cand.py"
    cand.write_text(
        CANDIDATE
        + "\n\nimport os\nassert not os.path.exists("
        + repr(str(ws / ".kernelevo"))
        + ") or "
        "not os.listdir(" + repr(str(ws / ".kernelevo")) + ")\n"
    )
    from kernelevo.evaluate import Evaluator
    from kernelevo.task import read_task
    from kernelevo.verify import _run_dynamic, resolve_size

    task = read_task(built.path)
    with Evaluator("cpu") as ev:
        v = _run_dynamic(
            task,
            cand,
            "triton",
            [],
            ev,
            "cpu",
            resolve_size(task, "cpu", None),
            240,
            None,
            measure=False,
        )
    assert v.status == "verified", v.reason
