"""The folders are the architecture: no import cycle between packages, no module name used for
two things, and docs/ARCHITECTURE.md names every package and only files that exist.

A node is a package of kernelevo/ (`kernelevo.search`), a module at the top of kernelevo/
(`kernelevo.store`), or the language server (`server/`, one node). Imports inside functions
count: a lazy import is still a dependency. Which code may run candidates is
tests/test_trust_boundary.py's concern.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _module_files() -> dict[str, Path]:
    found = {}
    for folder, name in (("kernelevo", "kernelevo"), ("server", "kernelevo_server")):
        for path in (ROOT / folder).rglob("*.py"):
            parts = [name, *path.relative_to(ROOT / folder).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _node(module: str) -> str:
    """`kernelevo.search.loop` → `kernelevo.search`; `kernelevo_server.*` → `server`."""
    parts = module.split(".")
    return "server" if parts[0] == "kernelevo_server" else ".".join(parts[:2])


def _imports(source: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def node_graph(sources: dict[str, str]) -> dict[str, set[str]]:
    """Node → the nodes it imports, from module name → source text."""
    graph: dict[str, set[str]] = defaultdict(set)
    for module, source in sources.items():
        here = _node(module)
        for name in _imports(source):
            while name and name not in sources:
                name = name.rpartition(".")[0]
            if name and (there := _node(name)) != here:
                graph[here].add(there)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(frozenset(component))

    for v in list(graph):
        if v not in index:
            visit(v)
    return out


def _project_graph() -> dict[str, set[str]]:
    return node_graph({m: p.read_text() for m, p in _module_files().items()})


def test_no_import_cycle_between_packages():
    found = sorted(sorted(c) for c in cycles(_project_graph()))
    assert not found, f"import cycle between packages: {found}"


def test_the_cycle_check_catches_a_lazy_import_cycle():
    sources = {
        "kernelevo.store": "from kernelevo.search.loop import run\n",
        "kernelevo.search": "",
        "kernelevo.search.loop": "def f():\n    from kernelevo.store import Store\n",
        "kernelevo.verdict": "",
    }
    assert cycles(node_graph(sources)) == [frozenset({"kernelevo.store", "kernelevo.search"})]
    sources["kernelevo.search.loop"] = "from kernelevo.verdict import Verdict\n"
    assert cycles(node_graph(sources)) == []


def test_architecture_doc_names_every_package_and_only_files_that_exist():
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    packages = sorted(
        p.name for p in (ROOT / "kernelevo").iterdir() if (p / "__init__.py").is_file()
    )
    missing = [p for p in packages if f"kernelevo/{p}/" not in text]
    assert not missing, f"docs/ARCHITECTURE.md does not name these packages: {missing}"
    named = set(re.findall(r"\b((?:kernelevo|server|client-vscode)/[\w/.-]+\.(?:py|ts))\b", text))
    stale = sorted(n for n in named if not (ROOT / n).is_file())
    assert not stale, f"docs/ARCHITECTURE.md names files that do not exist: {stale}"


MAX_MODULE_LINES = 400

# Modules over MAX_MODULE_LINES, with the line count each may not grow past (none since
# 2026-12-01); split one and delete its entry (the test says when an entry is stale).
KNOWN_LONG_MODULES: dict[str, int] = {}


def _line_counts() -> dict[str, int]:
    return {
        str(p.relative_to(ROOT)): len(p.read_text().splitlines())
        for folder in ("kernelevo", "server")
        for p in (ROOT / folder).rglob("*.py")
    }


def long_modules(counts: dict[str, int], known: dict[str, int]) -> tuple[list[str], list[str]]:
    """Modules over the limit that are not known or grew past their entry, and stale entries."""
    too_long = sorted(
        f"{path} ({n} lines)"
        for path, n in counts.items()
        if n > MAX_MODULE_LINES and n > known.get(path, MAX_MODULE_LINES)
    )
    stale = sorted(p for p, _ in known.items() if counts.get(p, 0) <= MAX_MODULE_LINES)
    return too_long, stale


def test_every_module_is_under_the_line_limit_or_a_known_exception():
    too_long, stale = long_modules(_line_counts(), KNOWN_LONG_MODULES)
    assert not too_long, (
        f"over {MAX_MODULE_LINES} lines (one concept per module: split it): {too_long}"
    )
    assert not stale, (
        f"now within {MAX_MODULE_LINES} lines, delete from KNOWN_LONG_MODULES: {stale}"
    )


def test_the_line_limit_catches_a_new_long_module_and_a_known_one_growing():
    known = {"kernelevo/a.py": 450}
    counts = {"kernelevo/a.py": 450, "kernelevo/b.py": 401, "server/c.py": 400}
    assert long_modules(counts, known) == (["kernelevo/b.py (401 lines)"], [])
    counts["kernelevo/a.py"] = 451
    assert long_modules(counts, known)[0] == [
        "kernelevo/a.py (451 lines)",
        "kernelevo/b.py (401 lines)",
    ]
    counts["kernelevo/a.py"] = 399
    assert long_modules(counts, known)[1] == ["kernelevo/a.py"]


# Tests at the top of tests/ are named test_<package or top-level module>_<what>.py after the code
# they test (`cli`, `bench` and `server` count as packages); `architecture` and `trust_boundary`
# tests are about the whole tree.
WHOLE_TREE = {"architecture", "trust_boundary"}


def misnamed_tests(test_files: list[str], names: set[str]) -> list[str]:
    """Test files whose name does not start with one of `names` (package or module names)."""
    return sorted(
        f
        for f in test_files
        if not any(f == f"test_{n}.py" or f.startswith(f"test_{n}_") for n in names | WHOLE_TREE)
    )


def _code_names() -> set[str]:
    top = ROOT / "kernelevo"
    names = {p.stem for p in top.glob("*.py") if p.stem != "__init__"}
    names |= {p.name for p in top.iterdir() if (p / "__init__.py").is_file()}
    return names | {"bench", "server"}


def test_tests_are_named_after_the_code_they_test():
    files = [p.name for p in (ROOT / "tests").glob("test_*.py")]
    wrong = misnamed_tests(files, _code_names())
    assert not wrong, f"name these test_<package or module>_<what>.py: {wrong}"


def test_the_naming_check_catches_a_test_named_after_no_module():
    names = {"search", "store", "cli"}
    files = ["test_search_loop.py", "test_store.py", "test_cli_apply.py", "test_loop_search.py"]
    assert misnamed_tests(files, names) == ["test_loop_search.py"]
    assert misnamed_tests(["test_storage.py", "test_architecture.py"], names) == ["test_storage.py"]


# A module may share its name with one other only as that concept's face: its command
# (`kernelevo/cli/`) or its editor feature (`server/features/`).
FACES = ("kernelevo/cli/", "server/features/")


def reused_names(paths: list[str]) -> dict[str, list[str]]:
    """Module and package names used for more than one thing: the same name in two places
    where neither is the other's command or editor feature."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in paths:
        p = Path(path)
        name = p.parent.name if p.name == "__init__.py" else p.stem
        if p.name == "__init__.py" and p.parent.name in ("kernelevo", "server"):
            continue
        by_name[name].append(path)
    reused = {}
    for name, where in by_name.items():
        things = [w for w in where if not w.startswith(FACES)]
        if len(things) > 1 or (len(where) > 1 and not things):
            reused[name] = sorted(where)
    return reused


def test_no_module_name_is_used_for_two_things():
    paths = [
        str(p.relative_to(ROOT))
        for folder in ("kernelevo", "server")
        for p in (ROOT / folder).rglob("*.py")
        if "__pycache__" not in p.parts
    ]
    reused = reused_names(paths)
    assert not reused, f"one name, two things (rename one so the name says which): {reused}"


def test_the_name_check_catches_a_reused_name_and_allows_a_face():
    paths = [
        "kernelevo/optimize.py",
        "kernelevo/cli/optimize.py",
        "server/features/jobs.py",
        "server/jobs/__init__.py",
        "server/jobs/runner.py",
        "kernelevo/sandbox/process.py",
        "kernelevo/judge/process.py",
        "server/features/hover.py",
        "kernelevo/cli/hover.py",
    ]
    assert reused_names(paths) == {
        "process": ["kernelevo/judge/process.py", "kernelevo/sandbox/process.py"],
        "hover": ["kernelevo/cli/hover.py", "server/features/hover.py"],
    }
