"""A job's iteration as one program per rank (jobs/ccl/program.py) on the collective runtime:
compute takes the GPU for its stated time, a collective waits for what it is issued after,
collectives of two communicators run at the same time and share the NIC, and a collective
issued under compute hides behind it. Real engines over veth on a bridge (tests/jobs/conftest)."""

from __future__ import annotations

import json

import pytest

from jobs.ccl.communicator import members
from jobs.ccl.datatypes import REDOPS, datatype
from jobs.ccl.plan import compile_collective, merge
from jobs.ccl.program import Program
from jobs.trace import write_trace

pytestmark = pytest.mark.root

FLOAT = datatype("float")
MS = 1_000_000  # ns


def _all_reduce(comm, ranks, nbytes):
    return compile_collective("all_reduce", "ring", members(comm, ranks),
                              total_ranks=len(comm.gpus), count=nbytes // 4, dtype=FLOAT,
                              redop=REDOPS["sum"])


def _run(comm, program, iterations=1):
    loaded = comm.load(program.build())
    try:
        result = comm.run(loaded, iterations, init=False, record=True)
    finally:
        comm.unload(loaded)
    assert result.complete, result.errors()
    return program.spans(result)


def _span(spans, name, rank, iteration=0):
    return next(s for s in spans if s.task.name == name and s.rank == rank
                and s.iteration == iteration)


def test_compute_takes_its_time_and_the_next_waits_for_it(bridge_comm):
    comm = bridge_comm(2, 1)
    program = Program(members(comm))
    first = program.compute(0, 40 * MS, "forward")
    program.compute(0, 20 * MS, "backward", after=[first.done[0]])
    program.compute(1, 10 * MS, "alone")
    spans = _run(comm, program, iterations=2)
    for it in (0, 1):
        forward, backward = _span(spans, "forward", 0, it), _span(spans, "backward", 0, it)
        assert forward.duration_s >= 0.040 and backward.duration_s >= 0.020
        assert backward.start_s >= forward.end_s
        # a loaded machine wakes the engine late, never early; within a scheduler's slice
        assert forward.duration_s < 0.040 + 0.030
    assert _span(spans, "forward", 0, 1).start_s >= _span(spans, "backward", 0, 0).end_s
    assert _span(spans, "alone", 1).duration_s >= 0.010


def test_a_collective_waits_for_what_it_is_issued_after_and_blocks_what_follows(bridge_comm):
    comm = bridge_comm(2, 1)
    program = Program(members(comm))
    late = program.compute(1, 60 * MS, "late rank")
    early = program.compute(0, 5 * MS, "early rank")
    reduce = program.collective("dp", _all_reduce(comm, [0, 1], 64 * 1024), "grads",
                                after={0: [early.done[0]], 1: [late.done[1]]})
    program.compute(0, 5 * MS, "after", after=[reduce.done[0]])
    spans = _run(comm, program)
    grads0, grads1 = _span(spans, "grads", 0), _span(spans, "grads", 1)
    # rank 0 starts as soon as its own compute is done, and cannot finish before rank 1,
    # which starts only after its 60 ms, has sent its part: rank 0 waited in the collective
    assert grads0.start_s >= _span(spans, "early rank", 0).end_s
    assert grads1.start_s >= _span(spans, "late rank", 1).end_s
    assert grads0.end_s >= _span(spans, "late rank", 1).end_s
    assert grads0.duration_s > 0.050
    assert _span(spans, "after", 0).start_s >= grads0.end_s


def test_two_communicators_run_at_once_and_share_the_nic(bridge_comm):
    """The same all-reduce of 1 MiB alone, then beside a second one on another communicator
    over the same two NICs: both run at the same time and each takes longer."""
    comm = bridge_comm(2, 1)
    size = 1 << 20
    alone = Program(members(comm))
    alone.collective("a", _all_reduce(comm, [0, 1], size), "a")
    t_alone = max(s.duration_s for s in _run(comm, alone))
    both = Program(members(comm))
    both.collective("a", _all_reduce(comm, [0, 1], size), "a")
    both.collective("b", _all_reduce(comm, [0, 1], size), "b")
    spans = _run(comm, both)
    a, b = _span(spans, "a", 0), _span(spans, "b", 0)
    assert b.start_s < a.end_s and a.start_s < b.end_s  # they overlap
    assert min(a.duration_s, b.duration_s) > 1.3 * t_alone, (a, b, t_alone)
    # ... and the two together take about what their bytes take on one NIC, not the sum of
    # two runs one after the other plus their fixed costs
    assert max(a.end_s, b.end_s) - min(a.start_s, b.start_s) < 2.5 * t_alone


def test_one_communicator_runs_its_collectives_in_issue_order(bridge_comm):
    comm = bridge_comm(2, 1)
    program = Program(members(comm))
    for k in range(3):
        program.collective("dp", _all_reduce(comm, [0, 1], 128 * 1024), f"bucket {k}")
    spans = _run(comm, program, iterations=2)
    for it in (0, 1):
        for rank in (0, 1):
            ends = [_span(spans, f"bucket {k}", rank, it) for k in range(3)]
            assert ends[1].start_s >= ends[0].end_s and ends[2].start_s >= ends[1].end_s


def test_a_collective_issued_under_compute_hides_behind_it(bridge_comm):
    """Blocking: compute, all-reduce, compute. Overlapped: the all-reduce issued at the start,
    beside the first compute. The overlapped iteration is shorter by about the collective."""
    comm = bridge_comm(2, 2)
    groups = [[0, 2], [1, 3]]  # the data-parallel groups across the two servers

    def iteration(overlap: bool) -> float:
        program = Program(members(comm))
        grads = merge([_all_reduce(comm, g, 512 * 1024) for g in groups])
        first = {r: program.compute(r, 80 * MS, "compute 1") for r in range(4)}
        after = {} if overlap else {r: [first[r].done[r]] for r in range(4)}
        reduce = program.collective("dp", grads, "grads", after=after)
        for r in range(4):
            program.compute(r, 80 * MS, "compute 2",
                            after=[first[r].done[r]] + ([] if overlap else [reduce.done[r]]))
        spans = _run(comm, program)
        return max(s.end_s for s in spans) - min(s.start_s for s in spans)

    blocking, overlapped = iteration(False), iteration(True)
    assert overlapped >= 0.160
    assert overlapped < blocking - 0.030, (blocking, overlapped)


def test_the_timeline_opens_as_a_chrome_trace_with_a_track_per_rank(bridge_comm, tmp_path):
    comm = bridge_comm(2, 1)
    program = Program(members(comm))
    work = {r: program.compute(r, 10 * MS, "forward") for r in (0, 1)}
    program.collective("dp", _all_reduce(comm, [0, 1], 64 * 1024), "grads",
                       after={r: [work[r].done[r]] for r in (0, 1)})
    spans = _run(comm, program, iterations=2)
    path = write_trace(tmp_path / "trace.json", spans, {0: "srv0 gpu0", 1: "srv1 gpu0"},
                       time_scale=2.0)
    trace = json.loads(path.read_text())
    events = trace["traceEvents"]
    tracks = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert tracks == {0: "srv0 gpu0", 1: "srv1 gpu0"}
    done = [e for e in events if e["ph"] == "X"]
    assert len(done) == len(spans) == 2 * 2 * 2  # two tasks, two ranks, two iterations
    for e in done:
        span = next(s for s in spans if s.rank == e["tid"] and s.task.name == e["name"]
                    and s.iteration == e["args"]["iteration"])
        assert e["ts"] == pytest.approx(span.start_s / 2 * 1e6, abs=0.01)
        assert e["dur"] == pytest.approx(span.duration_s / 2 * 1e6, abs=0.01)
    grads = [e for e in done if e["name"] == "grads"]
    assert {e["cat"] for e in grads} == {"dp"} and grads[0]["args"]["bytes"] == 64 * 1024
