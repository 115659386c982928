"""Build caches a candidate may write: its own, never one another candidate or the judge reads.

Compiled artefacts are looked up by a key the attacker can compute (Triton's hash of a kernel's
source and options, load_inline's name and flags, nvcc's content hash), so a candidate that can
write a shared cache can plant a fast, correct binary under the key of a later candidate whose
source is slow or wrong, or slow down the judge's torch.compile baseline. So:

- the engine's shared caches (Triton, Inductor, kernelevo's) are read-only in every sandbox
  that runs candidate code; only the judge, which never runs a candidate, writes them;
- each candidate gets a fresh folder of its own (`use(folder)` points every build cache at
  it): the compile worker fills it ahead, the engine moves it out of the compile sandbox's
  reach at once and into the runner host's only for that candidate's verdict, then deletes it;
- Triton reads through `LayeredCache`: the candidate's folder first, then the shared cache
  (read-only: Triton's own driver helpers and launchers the judge already built).
"""

from __future__ import annotations

import functools
import os
from typing import Any

BASE_ENV = "KERNELEVO_TRITON_BASE"


def use(folder: str) -> None:
    """Point every build cache of this (fresh, single-candidate) process at `folder`."""
    if "TRITON_CACHE_DIR" in os.environ and BASE_ENV not in os.environ:
        os.environ[BASE_ENV] = os.environ["TRITON_CACHE_DIR"]
    places = {
        "TRITON_CACHE_DIR": "triton",
        "KERNELEVO_CACHE": "kernelevo",
        "TORCH_EXTENSIONS_DIR": "torch_extensions",
        "TORCHINDUCTOR_CACHE_DIR": "inductor",
        "CUDA_CACHE_PATH": "nv",
    }
    for name, sub in places.items():
        path = os.path.join(folder, sub)
        os.makedirs(path, exist_ok=True)
        os.environ[name] = path
    os.environ["TRITON_CACHE_MANAGER"] = "kernelevo.runner.candidate_cache:LayeredCache"


def _group(folder: str, filename: str) -> dict[str, str] | None:
    import json

    try:
        with open(os.path.join(folder, f"__grp__{filename}")) as f:
            children = json.load(f)["child_paths"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    found = {}
    for name, path in children.items():
        here = os.path.join(folder, os.path.basename(str(path)))
        if not os.path.exists(here):
            return None
        found[name] = here
    return found


@functools.cache
def _layered() -> type:
    from triton.runtime.cache import FileCacheManager

    class Layered(FileCacheManager):
        """Writes go to the candidate's own folder; reads fall back to the shared, read-only cache."""

        def __init__(self, key: str, override: bool = False, dump: bool = False) -> None:
            super().__init__(key, override=override, dump=dump)
            base = os.environ.get(BASE_ENV)
            self.base_dir = os.path.join(base, key) if base and not (override or dump) else None

        def get_file(self, filename: str) -> str | None:
            found = super().get_file(filename)
            if found is None and self.base_dir:
                path = os.path.join(self.base_dir, filename)
                return path if os.path.exists(path) else None
            return found

        def get_group(self, filename: str) -> dict[str, str] | None:
            """Triton's group file names its members by absolute path; the engine moves a
            candidate's folder between sandboxes, so members are found by name in this entry."""
            for folder in (self.cache_dir, self.base_dir):
                found = _group(folder, filename) if folder else None
                if found is not None:
                    return found
            return None

    return Layered


def __getattr__(name: str) -> Any:
    if (
        name == "LayeredCache"
    ):  # Triton imports the class by name; built on first use (Triton loaded)
        return _layered()
    raise AttributeError(name)
