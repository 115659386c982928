"""The input sets of one verification, in the order that keeps the dynamic checks honest: each
drawn by the judge from a seed the candidate never learns, the candidate run before the
reference on alternate sets, the first set refilled with new values in the same buffers (a
kernel that caches results by pointer fails), then the task's extra shapes; each set dropped on
both sides before the next (the memory plan).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from kernelevo.judge import requests as rq
from kernelevo.judge.replies import Begun
from kernelevo.worker import candidate_requests as cr

if TYPE_CHECKING:
    from kernelevo.judge.session import Session


def one_set(
    session: Session,
    name: str,
    label: str,
    seed: int,
    candidate_first: bool,
    rerun: int | None,
    extra: int | None = None,
) -> None:
    """One input set: drawn by the judge, run by the candidate and the reference (in the given
    order), compared, optionally refilled and compared again, then dropped on both sides. Each
    of those requests ends with its GPU work done (both sides synchronise), so a waiting timing
    of another slot goes between any two of them: it waits for one step, not for a whole set."""
    t0 = time.perf_counter()
    inp = session.judge.ask(rq.Inputs(set=name, seed=seed, extra=extra))
    session.inputs.append(inp.summary)
    when = f"running forward on {label}"
    if candidate_first:
        step_aside(session)
        out = session.delivered(
            session.cand.ask(cr.Run(set=name, args=inp.args, label=label), when), label
        )
        step_aside(session)
        session.judge.ask(rq.Reference(set=name))
    else:
        step_aside(session)
        session.judge.ask(rq.Reference(set=name))
        step_aside(session)
        out = session.delivered(
            session.cand.ask(cr.Run(set=name, args=inp.args, label=label), when), label
        )
    session._facts(out, label)
    step_aside(session)
    verdict = session.judge.ask(
        rq.Compare(set=name, outputs=out.outputs, aliased=out.aliased, label=label)
    )
    session._drop_outputs(out.outputs)
    session.fail_on([verdict])
    if rerun is not None:
        again = f"{label}, new values in the same buffers"
        step_aside(session)
        session.judge.ask(rq.Refill(set=name, seed=rerun))
        step_aside(session)
        out = session.delivered(
            session.cand.ask(
                cr.Run(set=name, args=inp.args, label=again), f"running forward on {again}"
            ),
            again,
        )
        session._facts(out, again)
        step_aside(session)
        session.judge.ask(rq.Reference(set=name))
        step_aside(session)
        verdict = session.judge.ask(
            rq.Compare(
                set=name,
                outputs=out.outputs,
                aliased=out.aliased,
                label=again,
                name="same_buffers_new_values",
                suffix=" (results cached by pointer?)",
            )
        )
        session._drop_outputs(out.outputs)
        session.fail_on([verdict])
    session.cand.ask(cr.Drop(set=name), "dropping an input set")
    session.judge.ask(rq.Drop(set=name))
    session.phases.setdefault("per_set_s", []).append(round(time.perf_counter() - t0, 4))
    step_aside(session)


def step_aside(session: Session) -> None:
    """Called where nothing of this verdict runs on the GPU (after the load, between input sets,
    between the steps after its own timing): a timing of another slot on this GPU that waits
    takes the GPU now, with this candidate's process stopped meanwhile, instead of waiting for
    this whole check phase (kernelevo/gpu_gate.py). A no-op while this verdict holds the GPU alone."""
    if session.hold is not None:
        session.hold.pause_for_timing(
            lambda: session.cand.pause(True), lambda: session.cand.pause(False)
        )


def check_input_sets(
    session: Session, seeds: list[int], begin: Begun, extra_shapes: bool = True
) -> None:
    """Every input set in turn (the first also refilled with new values), then the extra shapes;
    a waiting timing goes first after the candidate's load and after each set."""
    step_aside(session)
    for i, seed in enumerate(seeds):
        one_set(
            session,
            f"s{i}",
            f"input set {i + 1} (seed {seed})",
            seed,
            candidate_first=i % 2 == 0,
            rerun=seed + 1 if i == 0 else None,
        )
    for j in range(begin.n_extra if extra_shapes else 0):
        one_set(session, f"x{j}", f"extra input set {j + 1}", seeds[0] + j, True, None, extra=j)
