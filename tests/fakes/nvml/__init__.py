"""A stand-in NVML library (libnvidia-ml.so.1, built from libnvidia_ml.c) that the real
nvidia-ml-py loads on a machine without an NVIDIA driver: two H200s, and the failures of a
driver that is not loaded or too old to report the compute capability.

    lib_dir = build_fake_nvml(tmp_path)   # None where no C compiler is found
    subprocess.run([...], env={**os.environ, "LD_LIBRARY_PATH": str(lib_dir)})

The library is found through LD_LIBRARY_PATH, which the dynamic loader reads at process start:
use it in a child process.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

SOURCE = Path(__file__).with_name("libnvidia_ml.c")


def build_fake_nvml(folder: Path) -> Path | None:
    """Compile the stand-in into `folder`/lib/libnvidia-ml.so.1; the folder holding it."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    lib = folder / "lib"
    lib.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [cc, "-shared", "-fPIC", "-O1", "-o", str(lib / "libnvidia-ml.so.1"), str(SOURCE)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return lib
