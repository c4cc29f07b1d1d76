"""A SimAI workload's iteration as per-rank programs (jobs/timeline.py): what each rank issues
and waits for (no network), then real runs on the collective runtime over a bridge: the 1F1B
bubble, and buckets that overlap the backward pass."""

from __future__ import annotations

import pytest

from jobs.ccl.communicator import members
from jobs.ccl.plan import Member
from jobs.gpus import Gpu
from jobs.megatron import Gpt, workload
from jobs.scale import Scale
from jobs.simai import bubble_fraction, parse
from jobs.timeline import TimelineOptions, build
from jobs.train import JobScale

SCALE = JobScale(Scale(100e6, 100e6))  # modelled = emulated: times and bytes as written


def _ring(kind, ms):
    return "ring" if kind in ("all_reduce", "all_gather", "reduce_scatter") else "flat"


def _members(n, per_server=1):
    return [Member(r, Gpu(f"srv{r // per_server}", r % per_server, f"nic{r}", f"10.0.0.{r + 1}",
                          r % per_server)) for r in range(n)]


def _tasks(job, rank):
    """The rank's tasks in its issue order, by name."""
    return [t.name for t in job.program.tasks if rank in t.ops]


def test_each_rank_walks_its_layers_in_1f1b_order_and_waits_for_its_neighbour():
    w = parse(workload(Gpt(layers=2, hidden=256, seq=64, tp=1, pp=2, dp=2, ga=3)), "gpt")
    job = build(w, _members(4), SCALE, _ring, TimelineOptions(buckets=2))
    assert job.stage_of == {0: 0, 1: 0, 2: 1, 3: 1}
    first = [n.split()[0] + " " + n.split()[-1] for n in _tasks(job, 0)
             if n.startswith(("forward attention_column", "input-grad mlp_row"))]
    # stage 0 of 2 with 3 microbatches: one warm-up forward, then F/B pairs, then backward
    assert first == ["forward mb0", "forward mb1", "input-grad mb0", "forward mb2",
                     "input-grad mb1", "input-grad mb2"]
    last = [n.split()[0] + " " + n.split()[-1] for n in _tasks(job, 2)
            if n.startswith(("forward attention_column", "input-grad mlp_row"))]
    assert last == ["forward mb0", "input-grad mb0", "forward mb1", "input-grad mb1",
                    "forward mb2", "input-grad mb2"]
    names = _tasks(job, 2)
    # stage 1 receives activations before each forward, stage 0 gradients before each backward
    assert sum(n.startswith("pp forward 0-1 mb") and n.endswith("received") for n in names) == 3
    assert sum(n.startswith("pp backward 0-1 mb") and n.endswith("received")
               for n in _tasks(job, 0)) == 3
    # data-parallel gradients: the last microbatch's only, in 2 buckets, then the optimizer
    buckets = [n for n in names if "bucket" in n]
    assert len(buckets) == 2 and names[-1] == "optimizer"
    assert sum(len(b) for b in job.bucket_layers) == 2 * len(w.layers)  # both stages' layers


def test_tensor_parallel_collectives_block_and_data_parallel_buckets_do_not():
    w = parse(workload(Gpt(layers=1, hidden=256, seq=64, tp=2, dp=2, ga=1)), "gpt")
    job = build(w, _members(4, per_server=2), SCALE, _ring, TimelineOptions(buckets=4))
    program = job.program
    plan = program.plans[0]
    by_name = {t.name: t for t in program.tasks if 0 in t.ops}
    tp = by_name["tp all_gather forward attention_column mb0"]
    after = by_name["forward attention_row mb0"]
    compute_op = after.done[0]
    assert tp.done[0] in plan.deps[compute_op]  # the next layer waits for the TP collective
    bucket = next(t for name, t in by_name.items() if "bucket 0" in name)
    waiting = {i for i, deps in enumerate(plan.deps) if bucket.done[0] in deps}
    optimizer = by_name["optimizer"].done[0]
    later_buckets = {i for name, t in by_name.items() if "bucket" in name and t is not bucket
                     for i in t.ops[0]}
    # nothing but the optimizer (and the communicator's next bucket, its stream) waits for it
    assert optimizer in waiting and waiting - {optimizer} <= later_buckets
    # buckets of at least a quarter of the gradients each, in the order backward makes them
    # (the MLP's 4h^2 weights fill one each; attention's h^2 and 3h^2 share one)
    assert job.bucket_layers == [["mlp_row"], ["mlp_column"], ["attention_row",
                                                               "attention_column"]]


@pytest.mark.root
def test_the_pipeline_bubble_is_what_1f1b_leaves(bridge_comm):
    """Two stages, four microbatches, compute-bound: each stage idles (p-1)/(m+p-1) = 1/5 of
    the iteration, within 15 %."""
    comm = bridge_comm(2, 1)
    text = ("HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 1 ep: 1 pp: 2 vpp: 1 "
            "ga: 4 all_gpus: 2 pp_comm: 4096\n1\n"
            "layer\t-1\t30000000\tNONE\t0\t30000000\tNONE\t0\t30000000\tNONE\t0\t0\n")
    w = parse(text, "pp")
    job = build(w, members(comm), SCALE, _ring)
    loaded = comm.load(job.program.build())
    try:
        result = comm.run(loaded, 1, init=False, record=True)
    finally:
        comm.unload(loaded)
    assert result.complete, result.errors()
    spans = job.program.spans(result)
    start = min(s.start_s for s in spans)
    end = max(s.end_s for s in spans)
    for rank in (0, 1):
        busy = sum(s.duration_s for s in spans if s.rank == rank and s.task.kind == "compute")
        idle = 1 - busy / (end - start)
        assert idle == pytest.approx(bubble_fraction(2, 4), rel=0.15), (rank, idle)
