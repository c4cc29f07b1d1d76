"""A job's timeline as a Chrome trace (the JSON Trace Event Format that chrome://tracing and
Perfetto's ui.perfetto.dev open, as PyTorch's profiler writes it): one process for the job,
one track (thread) per rank, a complete event ("ph": "X") per compute stretch or collective.

    write_trace(path, spans, names={0: "server0 gpu0", ...})

Times are microseconds from the launch, in the modelled job's units when `time_scale` is
given (emulated seconds / time_scale, as the job's reports are).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from jobs.ccl.program import Span

PID = 1


def chrome_trace(spans: Iterable[Span], names: Mapping[int, str] | None = None,
                 time_scale: float = 1.0) -> dict[str, Any]:
    """The trace of `spans`: a track per rank (named `names[rank]`), in rank order."""
    spans = list(spans)
    names = names or {}
    ranks = sorted({s.rank for s in spans} | set(names))
    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": PID, "tid": 0, "args": {"name": "job"}}]
    for rank in ranks:
        events.append({"name": "thread_name", "ph": "M", "pid": PID, "tid": rank,
                       "args": {"name": names.get(rank, f"rank {rank}")}})
        events.append({"name": "thread_sort_index", "ph": "M", "pid": PID, "tid": rank,
                       "args": {"sort_index": rank}})
    for s in sorted(spans, key=lambda s: (s.rank, s.start_s)):
        task = s.task
        events.append({
            "name": task.name, "cat": "compute" if task.kind == "compute" else task.comm,
            "ph": "X", "pid": PID, "tid": s.rank,
            "ts": round(s.start_s / time_scale * 1e6, 3),
            "dur": round(max(0.0, s.duration_s) / time_scale * 1e6, 3),
            "args": {"iteration": s.iteration, "kind": task.kind,
                     **({"communicator": task.comm, "bytes": task.nbytes} if task.comm else {})}})
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def write_trace(path: Path, spans: Iterable[Span], names: Mapping[int, str] | None = None,
                time_scale: float = 1.0) -> Path:
    """`chrome_trace` written to `path` (atomically)."""
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(json.dumps(chrome_trace(spans, names, time_scale), separators=(",", ":")))
    partial.replace(path)
    return path
