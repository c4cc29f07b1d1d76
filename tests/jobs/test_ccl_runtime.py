"""The collective runtime on real namespaces, packets and shared memory: every collective and
algorithm ends with nccl-tests' result, checked twice, by the engines' own check and by numpy
from the buffers read back; every datatype and reduction; schedules that lose or misdirect a
step are caught; runs back to back and on several channels; groups at once; packets lost on
the wire resent (go-back-N) with the data intact."""

from __future__ import annotations

import secrets
from dataclasses import replace

import numpy as np
import pytest

from jobs.ccl import native
from jobs.ccl.algorithms import ring_order
from jobs.ccl.collectives import COLLECTIVES, build
from jobs.ccl.communicator import Communicator, Transport, members
from jobs.ccl.datatypes import REDOPS, TYPES, datatype
from jobs.ccl.plan import compile_collective, merge
from jobs.ccl.records import Timeline
from jobs.ccl.schedule import FABRIC, NVLINK, Step
from jobs.ccl.timing import TOKEN_BYTES, TOKEN_LAPS, measure, token_plan
from jobs.gpus import Gpu
from traffic import netns

pytestmark = pytest.mark.root

SHAPES = [(4, 1), (2, 2), (1, 3)]  # (servers, GPUs per server): fabric, both, NVLink only
COUNT = 6 * 1024  # elements; divisible by every shape's rank count


def cases():
    for shape in SHAPES:
        for coll in COLLECTIVES.values():
            for algo in coll.algorithms:
                n = shape[0] * shape[1]
                if algo == "hd" and n & (n - 1):
                    continue
                yield shape, coll.name, algo


def buffers(comm: Communicator, loaded, dtype) -> tuple[list[np.ndarray], list[np.ndarray]]:
    ranks = sorted(loaded.compiled.plans)
    ins = [np.frombuffer(comm.input(loaded, r), dtype=dtype.numpy) for r in ranks]
    outs = [np.frombuffer(comm.output(loaded, r), dtype=dtype.numpy) for r in ranks]
    return ins, outs


def expected_outputs(name: str, ins: list[np.ndarray], root: int) -> dict[int, np.ndarray]:
    """nccl-tests' result of collective `name` (sum) from every rank's input, with numpy."""
    n = len(ins)
    total = np.sum(np.stack(ins), axis=0, dtype=ins[0].dtype)
    if name == "all_reduce":
        return {r: total for r in range(n)}
    if name == "reduce":
        return {root: total}
    if name == "reduce_scatter":
        b = len(ins[0]) // n
        return {r: total[r * b:(r + 1) * b] for r in range(n)}
    if name == "all_gather":
        return {r: np.concatenate(ins) for r in range(n)}
    if name == "alltoall":
        b = len(ins[0]) // n
        return {d: np.concatenate([ins[s][d * b:(d + 1) * b] for s in range(n)])
                for d in range(n)}
    if name == "broadcast":
        return {r: ins[root] for r in range(n)}
    if name == "sendrecv":
        return {(r + 1) % n: ins[r] for r in range(n)}
    raise AssertionError(f"no numpy model of {name}")


@pytest.mark.parametrize(("shape", "name", "algo"), list(cases()))
def test_every_collective_ends_with_nccl_tests_result(bridge_comm, shape, name, algo):
    comm = bridge_comm(*shape)
    n = len(comm.gpus)
    f32 = datatype("float")
    root = n - 1 if COLLECTIVES[name].rooted else 0
    for in_place in (False, True):
        compiled = compile_collective(name, algo, members(comm), total_ranks=n, count=COUNT,
                                      dtype=f32, redop=REDOPS["sum"], root=root,
                                      in_place=in_place, channels=2, slice_bytes=4096)
        loaded = comm.load(compiled)
        try:
            checked = comm.run(loaded, 1, init=True, check=True, seed=11)
            assert checked.complete, checked.errors()
            assert checked.wrong == 0
            if not in_place:  # the inputs are still there: compare with numpy
                ins, outs = buffers(comm, loaded, f32)
                for r, want in expected_outputs(name, ins, root).items():
                    np.testing.assert_array_equal(outs[r], want, err_msg=f"rank {r}")
            timed = comm.run(loaded, 3, init=False)
            assert timed.complete and timed.time_s > 0
            fabric = [f for s in compiled.schedules[0].steps for f in s.flows
                      if f.link == FABRIC]
            assert (timed.total("tx_packets") > 0) == bool(fabric)
        finally:
            comm.unload(loaded)


@pytest.mark.parametrize("dtype", list(TYPES))
def test_every_datatype_and_reduction_is_exact(bridge_comm, dtype):
    comm = bridge_comm(2, 2)
    dt = datatype(dtype)
    for op, code in REDOPS.items():
        compiled = compile_collective("all_reduce", "ring", members(comm), total_ranks=4,
                                      count=1000, dtype=dt, redop=code)
        loaded = comm.load(compiled)
        try:
            result = comm.run(loaded, 1, init=True, check=True, seed=3)
            assert result.complete and result.wrong == 0, (dtype, op, result.errors())
            if dt.numpy != "uint16" and op in ("sum", "max", "min"):  # bfloat16 aside
                ins, outs = buffers(comm, loaded, dt)
                fold = {"sum": np.add, "max": np.maximum, "min": np.minimum}[op]
                want = ins[0]
                for x in ins[1:]:
                    want = fold(want, x)
                np.testing.assert_array_equal(outs[0], want.astype(dt.numpy))
                np.testing.assert_array_equal(outs[3], want.astype(dt.numpy))
        finally:
            comm.unload(loaded)


def _run_schedule(comm: Communicator, schedule) -> int:
    compiled = compile_collective("all_reduce", "ring", members(comm), total_ranks=4,
                                  count=4096, dtype=datatype("float"), redop=REDOPS["sum"],
                                  schedule=schedule)
    loaded = comm.load(compiled)
    try:
        result = comm.run(loaded, 1, init=True, check=True, seed=5)
        assert result.complete, result.errors()
        return result.wrong
    finally:
        comm.unload(loaded)


def test_a_schedule_that_loses_or_misdirects_a_step_is_caught(bridge_comm):
    comm = bridge_comm(2, 2)
    gpus = comm.gpus
    assert _run_schedule(comm, build("all_reduce", "ring", gpus, 4096 * 4)) == 0
    lost = build("all_reduce", "ring", gpus, 4096 * 4)
    lost.steps.pop()  # the last all-gather step never runs
    assert _run_schedule(comm, lost) > 0
    wrong_way = build("all_reduce", "ring", gpus, 4096 * 4)
    last = wrong_way.steps[-1]
    f = last.flows[0]
    dst = next(r for r in range(4) if r not in (f.src, f.dst))  # a rank it was not for
    link = NVLINK if gpus[f.src].server == gpus[dst].server else FABRIC
    wrong_way.steps[-1] = Step([replace(f, dst=dst, link=link), *last.flows[1:]], last.phase)
    assert _run_schedule(comm, wrong_way) > 0


def test_runs_back_to_back_on_every_channel_record_their_messages(bridge_comm):
    comm = bridge_comm(4, 1)
    compiled = compile_collective("all_reduce", "ring", members(comm), total_ranks=4,
                                  count=64 * 1024, dtype=datatype("float"),
                                  redop=REDOPS["sum"], channels=4)
    loaded = comm.load(compiled)
    try:
        result = comm.run(loaded, 4, init=True, check=True, record=True, seed=9)
        assert result.complete and result.wrong == 0
        assert all(len(r.iter_end) == 4 for r in result.ranks.values())
        assert all(a < b for r in result.ranks.values()
                   for a, b in zip(r.iter_end, r.iter_end[1:], strict=False))
        timeline = Timeline.of(compiled, result)
        channels = {m.channel for m in timeline.messages}
        assert channels == {0, 1, 2, 3}
        # every ring neighbour pair carried 2(n-1) chunks of S/n in the (last) iteration
        per_pair = timeline.link_bytes()
        assert set(per_pair) == {(0, 1), (1, 2), (2, 3), (3, 0)}
        want = 2 * 3 * (64 * 1024 * 4 // 4)
        assert all(b == want for b in per_pair.values()), per_pair
    finally:
        comm.unload(loaded)



def test_groups_run_at_once_and_reduce_only_among_themselves(bridge_comm):
    comm = bridge_comm(4, 1)
    f32 = datatype("float")
    everyone = members(comm)
    groups = [[everyone[0], everyone[2]], [everyone[1], everyone[3]]]
    compiled = merge([compile_collective("all_reduce", "ring", g, total_ranks=4, count=8192,
                                         dtype=f32, redop=REDOPS["sum"]) for g in groups])
    assert sorted(compiled.plans) == [0, 1, 2, 3]
    loaded = comm.load(compiled)
    try:
        result = comm.run(loaded, 1, init=True, check=True, seed=4)
        assert result.complete and result.wrong == 0
        ins, outs = buffers(comm, loaded, f32)
        for a, b in ((0, 2), (1, 3)):
            np.testing.assert_array_equal(outs[a], ins[a] + ins[b])
            np.testing.assert_array_equal(outs[b], ins[a] + ins[b])
        assert not np.array_equal(outs[0], outs[1])
    finally:
        comm.unload(loaded)


def test_lost_packets_are_resent_and_the_data_still_reduces():
    """Two ranks across the impairment relay, which drops chosen PSNs' first transmission on
    every connection: mid-message (a NAK brings them back), and each connection's last packet
    (nothing after it shows the gap: the retransmission timeout does)."""
    from tests.traffic.traffic_helpers import relay

    tb = netns.relayed_pair("cl" + secrets.token_hex(2))
    try:
        hosts = [tb.hosts["a"], tb.hosts["b"]]
        gpus = [Gpu(f"srv{i}", 0, h.name, h.ip, 0) for i, h in enumerate(hosts)]
        transport = Transport(mtu=1024).scaled(100e6)  # the relayed pair's links: MTU 1500
        with Communicator(hosts, gpus, tb.spec("relayed", 100.0), nvlink_bps=900e6,
                          transport=transport) as comm:
            # 2 ranks, 2 channels: a connection carries 2 steps x S/2 / 2 = 256 packets of 1 KiB
            compiled = compile_collective("all_reduce", "ring", members(comm), total_ranks=2,
                                          count=128 * 1024, dtype=datatype("float"),
                                          redop=REDOPS["sum"], channels=2)
            loaded = comm.load(compiled)
            with relay(tb, drop="5,6,40,255") as counts:
                result = comm.run(loaded, 1, init=True, check=True, seed=2)
            assert result.complete, result.errors()
            assert result.wrong == 0
            assert counts["dropped"] >= 4
            assert result.total("naks_received") > 0 and result.total("timeouts") > 0
            assert result.total("retransmits") >= counts["dropped"]
    finally:
        tb.close()


def test_alpha_token_takes_the_hops_a_ring_takes(bridge_comm):
    comm = bridge_comm(2, 2)  # two servers of two GPUs
    order = ring_order(comm.gpus)
    assert order != list(range(4))  # the ring snakes: rank order would cross rails
    following = {order[i]: order[(i + 1) % 4] for i in range(4)}
    for rank, plan in token_plan(comm).plans.items():
        assert {o.peer for o in plan.info if o.kind == native.SEND} == {following[rank]}


def test_alpha_is_measured_over_a_chain_of_one_message_per_hop(bridge_comm):
    comm = bridge_comm(4, 1)
    token = token_plan(comm)
    hops = TOKEN_LAPS * 4
    assert token.depth == hops  # a chain: every rank's send waits for its previous receive
    for plan in token.plans.values():
        sends = [o for o in plan.info if o.kind == native.SEND]
        assert len(sends) == hops and all(o.nbytes == TOKEN_BYTES for o in sends)
    ab = measure(comm)
    assert ab.hops == hops and ab.alpha_s > 0 and ab.beta_s > 0
    assert 0 < ab.nic_efficiency <= 1.05  # the NIC never delivers more than its links' rate
