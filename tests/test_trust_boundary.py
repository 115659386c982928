"""The folders show the trust boundary: only kernelevo/runner/ executes candidate code.

No module outside the runner package imports it (other processes start it with
`python -m` and talk to it through pipes, as data), and outside it `import_file` loads
only tasks, the user's own code and the offline templates' generated candidates (which are ours).
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNNER = "kernelevo.runner"
# tasks, the offline templates' own candidates, and the user's workspace code (targets/: detection and
# input capture run the user's files, as the reference is run: trusted differently from a candidate)
IMPORT_FILE_ALLOWED = {
    ("kernelevo/task.py", "task"),
    ("kernelevo/offline/graph_trace.py", "template"),
    ("kernelevo/targets/init_args.py", "init"),
    ("kernelevo/targets/probe_child.py", "probe"),
}


def _violations(path: Path, source: str) -> list[str]:
    rel = path.relative_to(ROOT).as_posix() if path.is_absolute() else path.as_posix()
    bad = []
    for node in ast.walk(ast.parse(source)):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        if any(n == RUNNER or n.startswith(RUNNER + ".") for n in names):
            bad.append(
                f"{rel}:{node.lineno} imports candidate-executing code ({', '.join(names)[:80]})"
            )
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", getattr(node.func, "attr", None)) == "import_file"
        ):
            prefix = (
                node.args[1].value
                if len(node.args) > 1 and isinstance(node.args[1], ast.Constant)
                else None
            )
            if (rel, prefix) not in IMPORT_FILE_ALLOWED:
                bad.append(
                    f"{rel}:{node.lineno} imports a file as code with prefix {prefix!r} outside the runner"
                )
    return bad


def _modules():
    for folder in ("kernelevo", "server"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if not rel.startswith("kernelevo/runner/"):
                yield path


def test_only_the_runner_package_executes_candidates():
    bad = [v for path in _modules() for v in _violations(path, path.read_text())]
    assert not bad, "\n".join(bad)


def test_the_boundary_check_catches_an_import():
    fake = Path("kernelevo/judge/leak.py")
    assert _violations(fake, "from kernelevo.runner.candidate import CandidateProcess\n")
    assert _violations(fake, "import kernelevo.runner.host\n")
    assert _violations(
        fake, "from kernelevo.task import import_file\nm = import_file(p, 'candidate')\n"
    )
    assert not _violations(fake, "from kernelevo.task import load_task_module\n")


def test_the_judge_process_and_the_engine_never_import_the_runner():
    from support import fresh_python

    code = (
        "import sys, kernelevo.judge.process, kernelevo.judge.session, kernelevo.verify\n"
        "print(sorted(m for m in sys.modules if m.startswith('kernelevo.runner')))"
    )
    out = fresh_python(code, inherit=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", out.stdout
