"""The judge process's entry (`python -m kernelevo.judge`): CUDA starts on a thread while torch
imports (kernelevo/judge/cuda_early.py), then the judge's loop (kernelevo/judge/process.py)."""

from kernelevo.judge.cuda_early import start_cuda_early

start_cuda_early()

from kernelevo.judge.process import main  # noqa: E402  (after CUDA's start is under way)

raise SystemExit(main())
