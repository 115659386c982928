"""The compile worker: imports candidates to compile them ahead (no GPU), one request at a time.

It executes candidate code (imports, forward on meta tensors), so it lives in the
runner package; its answers are only ever about compiling (a compile error is the one
conclusive one), never a verdict.
"""

from __future__ import annotations


def main() -> int:
    from kernelevo.runner.aot import aot_compile
    from kernelevo.runner.precompile import precompile
    from kernelevo.worker.main import serve

    return serve({"precompile": precompile, "aot": aot_compile})


if __name__ == "__main__":
    raise SystemExit(main())
