"""docs/ARCHITECTURE.md's "Click to applied edit, hop by hop" stays true to the code.

Each numbered step of that section is a list of chains, `A` → `B` → [P] `C`, separated by `;`.
Every arrow is one hop. A hop without `[P]` is a call inside one process, so A and B must be
real modules with an import between them (either way: a call, or a callback or object that B
registered with A; importing a package counts as importing the modules of it that its
`__init__.py` re-exports). A call through an object a third module wired in is written
`A` → `B` (handed by `W`): W, which made the object or the callable, must import B. A hop with `[P]` crosses
a process boundary (a pipe, a socket, a spawned command), so no import is asked for; its ends
must still exist. A name that is not a file (`workspace/applyEdit`, a CLI command) is the editor's
or the system's and is not checked. The step counts and the total must add up.
"""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ARCHITECTURE.md"
SECTION = "## Click to applied edit, hop by hop"
# Where a short name in the section is looked for; it must name exactly one file.
ROOTS = ("client-vscode/src", "server", "kernelevo", "")

ELEMENT = re.compile(r"(\[P\]\s*)?`([^`]+)`(?:\s*\(handed by `([^`]+)`\))?")


def section(text: str) -> str:
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    return text[start : end if end >= 0 else len(text)]


def steps(text: str) -> list[tuple[str, int, str]]:
    """(title, stated hop count, chains text) per numbered step."""
    found = re.findall(r"^\d+\. ([^(\n]+)\((\d+)\): (.*?)(?=^\d+\. |^\S|\Z)", text, re.M | re.S)
    return [(title.strip(), int(n), " ".join(body.split())) for title, n, body in found]


def hops(chains: str) -> list[tuple[str, str, bool, str | None]]:
    """(from, to, crosses a process, wired by) for every arrow of a step's chains."""
    out = []
    for chain in chains.split(";"):
        parts = chain.split("→")
        if len(parts) < 2:
            continue
        elements = []
        for part in parts:
            m = ELEMENT.search(part)
            assert m, f"no `module` in {part!r} of chain {chain!r}"
            elements.append((m.group(2), bool(m.group(1)), m.group(3)))
        for (a, _, _), (b, crosses, wired) in itertools.pairwise(elements):
            out.append((a, b, crosses, wired))
    return out


def resolve(name: str) -> Path | None:
    """The one file a short name means; None for what is not a project file."""
    if not name.endswith((".py", ".ts")):
        return None
    matches = [ROOT / r / name for r in ROOTS if (ROOT / r / name).is_file()]
    assert len(matches) == 1, f"{name!r} names {len(matches)} files: {matches}"
    return matches[0].resolve()


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[0] == "server":
        parts[0] = "kernelevo_server"
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> set[Path]:
    """The project files `path` imports (lazy imports count)."""
    text = path.read_text()
    found: set[Path] = set()
    if path.suffix == ".ts":
        for spec in re.findall(r"""from\s+['"](\.[^'"]+)['"]""", text):
            target = (path.parent / spec).with_suffix(".ts")
            if target.is_file():
                found.add(target.resolve())
        return found
    names: set[str] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    for name in names:
        parts = name.split(".")
        if parts[0] not in ("kernelevo", "kernelevo_server") or len(parts) == 1:
            continue
        folder = ROOT / ("server" if parts[0] == "kernelevo_server" else "kernelevo")
        rel = Path(*parts[1:])
        for candidate in (folder / rel.with_suffix(".py"), folder / rel / "__init__.py"):
            if candidate.is_file():
                found.add(candidate.resolve())
                break
    for init in [f for f in found if f.name == "__init__.py" and f != path.resolve()]:
        # a package's public names come from its own modules: importing it reaches them
        found |= {f for f in imports(init) if f.parent == init.parent}
    return found


def depends(a: Path, b: Path) -> bool:
    return b in imports(a) or a in imports(b)


def check(text: str) -> tuple[list[str], int, int]:
    """Problems found, hops counted, process crossings counted."""
    problems: list[str] = []
    total = crossings = 0
    for title, stated, chains in steps(section(text)):
        found = hops(chains)
        if len(found) != stated:
            problems.append(f"step '{title}' says {stated} hops but lists {len(found)}")
        total += len(found)
        for a, b, crosses, wired in found:
            crossings += crosses
            pa, pb = resolve(a), resolve(b)
            if crosses or pa is None or pb is None:
                continue
            if wired:
                pw = resolve(wired)
                assert pw is not None, wired
                if pb not in imports(pw):
                    problems.append(f"{a} → {b}: {wired} does not wire them (no imports)")
            elif not depends(pa, pb):
                problems.append(f"{a} → {b}: neither imports the other")
    return problems, total, crossings


def test_every_hop_of_the_click_to_edit_path_is_a_real_call():
    text = DOC.read_text()
    problems, total, crossings = check(text)
    assert not problems, "docs/ARCHITECTURE.md's hop list is out of date:\n" + "\n".join(problems)
    stated = re.search(r"Now: (\d+) hops, (\d+) of them across a process boundary", text)
    assert stated, "the section states 'Now: N hops, M of them across a process boundary'"
    assert (int(stated.group(1)), int(stated.group(2))) == (total, crossings), (total, crossings)


def test_the_hop_check_catches_a_hop_that_is_no_call_and_a_wrong_count():
    doc = (
        f"{SECTION}\n\n"
        "1. Request (2): `extension.ts` → `commands.ts` → `lsp.ts`.\n"
        "2. Server (2): `features/jobs.py` → `jobs/manager.py` → [P] `rebase.py`.\n\n"
        "## Next\n"
    )
    assert check(doc) == ([], 4, 1)
    miscounted = check(doc.replace("Server (2)", "Server (3)"))[0]
    assert miscounted == ["step 'Server' says 3 hops but lists 2"]
    no_call = check(doc.replace("`jobs/manager.py` → [P]", "`jobs/manager.py` →"))[0]
    assert no_call == ["jobs/manager.py → rebase.py: neither imports the other"]
    unwired = doc.replace("`lsp.ts`.", "`lsp.ts` → `rebase.py` (handed by `features/jobs.py`).")
    assert check(unwired)[0] == [
        "step 'Request' says 2 hops but lists 3",
        "lsp.ts → rebase.py: features/jobs.py does not wire them (no imports)",
    ]
