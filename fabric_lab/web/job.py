"""The web view's job panel during `fabric-lab train --web`: the training loop's events
(`jobs.progress`) folded into the "job" section of the page's state.

    view = JobView()
    fabric.train(job, on_event=view)          # the training thread calls it
    Sources(job=view.state)                   # the monitor's snapshot asks for it

The section: the job, iteration i of N and the last iteration's times (compute, exposed
communication, slowest rank), the collective in flight (name, algorithm, size, step k of K and
its phase) and per rank what it has received of that collective (bytes, steps) and when its
last byte of the last step arrived. Before the first event the section is null (no panel).
"""

from __future__ import annotations

import threading
from typing import Any

from jobs.progress import (
    CollectiveDone,
    CollectiveStarted,
    IterationDone,
    JobDone,
    JobEvent,
    JobStarted,
    StepDone,
)


class JobView:
    """Callable with each event (any thread); `state()` is the page's "job" section."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state: dict[str, Any] | None = None

    def __call__(self, event: JobEvent) -> None:
        with self._lock:
            if isinstance(event, JobStarted):
                self._state = _started(event)
            elif self._state is not None:
                _apply(self._state, event)

    def state(self) -> dict[str, Any] | None:
        with self._lock:
            if self._state is None:
                return None
            s = self._state
            return {**s, "last": dict(s["last"]) if s["last"] else None,
                    "collective": dict(s["collective"]) if s["collective"] else None,
                    "ranks": [dict(r) for r in s["ranks"]]}


def _started(e: JobStarted) -> dict[str, Any]:
    return {"name": e.job, "status": "warming up", "iteration": 0, "iterations": e.iterations,
            "done": 0, "last": None, "collective": None,
            "ranks": [{"rank": r, "nic": nic, "bytes": 0, "bytes_total": 0, "steps": 0,
                       "steps_total": 0, "last_end_s": 0.0} for r, nic in enumerate(e.nics)]}


def _apply(s: dict[str, Any], e: JobEvent) -> None:
    if isinstance(e, CollectiveStarted):
        s["status"], s["iteration"] = "running", e.iteration
        s["collective"] = {"purpose": e.purpose, "kind": e.kind, "algorithm": e.algorithm,
                           "bytes": e.bytes, "emulated_bytes": e.emulated_bytes,
                           "step": 0, "steps": len(e.phases),
                           "phase": e.phases[0] if e.phases else "", "phases": list(e.phases),
                           "in_flight": True, "time_s": None, "busbw_gbs": None,
                           "complete": None, "wrong": None}
        for rank, total, steps in zip(s["ranks"], e.rank_bytes, e.rank_steps, strict=True):
            rank.update(bytes=0, bytes_total=total, steps=0, steps_total=steps, last_end_s=0.0)
    elif isinstance(e, StepDone) and s["collective"] is not None:
        c = s["collective"]
        c["step"] = e.index + 1
        c["phase"] = c["phases"][e.index + 1] if e.index + 1 < len(c["phases"]) else ""
        for rank, got, end in zip(s["ranks"], e.rank_bytes, e.rank_end_s, strict=True):
            rank["bytes"] += got
            rank["steps"] += got > 0
            rank["last_end_s"] = round(end, 6)
    elif isinstance(e, CollectiveDone) and s["collective"] is not None:
        s["collective"].update(in_flight=False, time_s=round(e.time_s, 6),
                               busbw_gbs=round(e.busbw_gbs, 3), complete=e.complete,
                               wrong=e.wrong)
    elif isinstance(e, IterationDone):
        s["done"] = e.iteration + 1
        s["last"] = {"iteration": e.iteration, "total_s": round(e.total_s, 6),
                     "compute_s": round(e.compute_s, 6), "exposed_s": round(e.exposed_s, 6),
                     "slowest_rank": e.slowest_rank, "slowest_nic": e.slowest_nic,
                     "slowest_s": round(e.rank_s[e.slowest_rank], 6),
                     "fastest_s": round(min(e.rank_s), 6)}
    elif isinstance(e, JobDone):
        s["status"], s["done"] = "finished", e.iterations
