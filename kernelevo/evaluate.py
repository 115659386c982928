"""The engine's handle on its worker processes: the judge, the candidate runner host, the compiler.

The judge (kernelevo/judge/process.py) runs the reference and compares; the runner host
(kernelevo/runner/host.py) forks a fresh process per candidate; the compile worker compiles
ahead. Keeping all three alive across candidates is what makes evaluation fast (no torch
import per candidate); on a GPU machine the compile worker is what lets compiles proceed
while the GPU is busy.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from kernelevo.worker.pool import Worker, start_all

if TYPE_CHECKING:
    from kernelevo.gpu_gate import GpuGate


class Evaluator:
    """`gpu` pins the run worker to one GPU (a CUDA_VISIBLE_DEVICES entry: an index or a UUID);
    `compiler` is a compile worker shared with other evaluators (anything with Worker's
    `request`), which this evaluator then does not close; `gate` is its GPU's gate
    (kernelevo/gpu_gate.py) when several evaluators share one GPU; `runner_hosts` 2 gives it two
    runner hosts that take turns (`runner`)."""

    def __init__(
        self,
        device: str,
        *,
        gpu: int | str | None = None,
        compiler: Any = None,
        warmup: str = "1",
        compiles: str = "all",
        gate: GpuGate | None = None,
        runner_hosts: int = 1,
    ) -> None:
        """`warmup`: the judge's warm-up, "1" (a search) or "light" (one verdict, the service);
        `compiles`: the compilers its compile worker warms up before it is ready, "all", or for one
        verdict that of its backend ("triton", "cuda", "none")."""
        self.device, self.gpu, self.gate = device, gpu, gate
        from kernelevo.measure.machine import arch_env

        env = arch_env(device)
        if gpu is not None:
            env.update(
                {
                    "CUDA_VISIBLE_DEVICES": str(gpu),
                    "CUDA_DEVICE_ORDER": os.environ.get("CUDA_DEVICE_ORDER", "PCI_BUS_ID"),
                }
            )
        from kernelevo.judge.exchange import exchange_root

        self.exchange = exchange_root()
        self.transport = (
            "ipc"  # CUDA tensors between the judge and the candidate; "file" where IPC cannot cross
        )
        # tensors may cross through files of the exchange folder: as large as one tensor of a task
        big = 64 << 30 if device == "cuda" else None
        # each host its own sandbox: its own uid, PID namespace and /tmp (sandbox/sandbox_process.py)
        self.runners = [
            Worker(
                device,
                env=env,
                module="kernelevo.runner.host",
                writable=[self.exchange],
                file_bytes=big,
            )
            for _ in range(max(1, runner_hosts))
        ]
        self._turn = 0
        # sandboxed too (it runs the task's reference); on the H200 CUDA IPC did not cross into the
        # candidate's sandbox with the judge sandboxed or not, so tensors go through files there
        self.judge = Worker(
            device,
            env={
                **env,
                "KERNELEVO_WORKER_WARMUP": os.environ.get("KERNELEVO_WORKER_WARMUP", warmup),
            },
            module="kernelevo.judge.process",
            writable=[self.exchange],
            file_bytes=big,
        )
        self._owns_compiler = compiler is None
        self.compiler = (
            compiler
            if compiler is not None
            else Worker("compile", env={**arch_env(device), "KERNELEVO_COMPILE_WARMUP": compiles})
        )

    @property
    def runner(self) -> Worker:
        """The runner host whose turn it is. A host forks its next candidate's spare only once its
        last candidate is gone, so that spare never lives beside a candidate that could reach it;
        with two hosts, each verdict takes the host that sat the last one out, whose spare has
        started CUDA meanwhile, in a sandbox the running candidate cannot see."""
        return self.runners[self._turn]

    def take_turn(self) -> None:
        """A verdict is over: the next one goes to the other host (the same one when there is one)."""
        self._turn = (self._turn + 1) % len(self.runners)

    def owned_workers(self) -> list[tuple[str, Worker]]:
        """The processes this evaluator started and closes, by role (a shared compile worker is
        someone else's)."""
        named: list[tuple[str, Worker]] = [("judge", self.judge)]
        named += [(f"runner{i or ''}", w) for i, w in enumerate(self.runners)]
        if self._owns_compiler and isinstance(self.compiler, Worker):
            named.append(("compiler", self.compiler))
        return named

    def warm(self) -> None:
        """Start the workers now, side by side (each imports torch; the judge also warms up on a GPU)."""
        start_all([w for w in (self.judge, *self.runners, self.compiler) if isinstance(w, Worker)])

    def start_soon(self) -> None:
        """Begin starting every worker side by side and return at once: a one-shot verdict's first
        request (compile ahead) then waits for the compile worker only, while the judge still warms
        up and the runner host still imports."""
        for w in (self.compiler, self.judge, *self.runners):
            if isinstance(w, Worker):
                w.start_soon()

    def close(self, graceful: bool = True) -> None:
        """The compile worker closes beside the other two; the runner host, whose candidate processes
        map the judge's memory, before the judge. `graceful=False` (a one-shot verify, its verdict
        in): killed at once instead of seconds of interpreter teardown each."""
        import threading

        from kernelevo.judge.exchange import remove_exchange

        compiler = (
            threading.Thread(target=self.compiler.close, args=(graceful,))
            if self._owns_compiler
            else None
        )
        if compiler is not None:
            compiler.start()
        for runner in self.runners:
            runner.close(graceful)
        self.judge.close(graceful)
        remove_exchange(self.exchange)
        if compiler is not None:
            compiler.join()

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
