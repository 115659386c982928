"""Where the user's own package is imported from, for a file that sits inside it.

A task puts the package's root on sys.path (mingpt/model.py importing mingpt.utils), also
through folders without an `__init__.py` (flux's src/flux/modules/layers.py importing
flux.math). Apply needs the same answer: a file in such a folder is imported by its program as
`flux.modules.layers`, so its guarded import of the kernel module is relative, and the
regression test imports it by that dotted name from the package's root.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass


def package_parent(folder: str, top: str) -> str | None:
    """The folder to put on sys.path so that `import top` finds the user's own package above
    `folder`: the package named `top` above it, where it has an __init__.py of its own."""
    while True:
        if os.path.basename(folder) == top and os.path.exists(os.path.join(folder, "__init__.py")):
            return os.path.dirname(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


@dataclass(frozen=True)
class OwnPackage:
    root: str  # the folder on sys.path
    dotted: str  # the file's folder as a package name, "flux.modules"

    def relative_root(self, folder: str) -> str:
        return os.path.relpath(self.root, folder)


def own_package(user_file: str, source: str) -> OwnPackage | None:
    """For a file in a folder without an __init__.py that imports its own package by name (the
    package above it): where that package is imported from. None for a regular package's file
    (its folder has an __init__.py) and for a file that imports no package above it."""
    folder = os.path.dirname(os.path.abspath(user_file))
    if os.path.exists(os.path.join(folder, "__init__.py")):
        return None
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    tops = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Import):
            tops |= {n.name.split(".")[0] for n in stmt.names}
        elif isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
            tops.add(stmt.module.split(".")[0])
    for top in sorted(tops):
        root = package_parent(folder, top)
        if root is not None:
            dotted = os.path.relpath(folder, root).replace(os.sep, ".")
            if all(part.isidentifier() for part in dotted.split(".")):
                return OwnPackage(root, dotted)
    return None
