"""The collectives' registry: every algorithm's schedule ends with what its collective
promises (replayed chunk by chunk), bytes per step, NVLink/fabric tagging, snaking rings,
hierarchical and PXN structure, nccl-tests' counts and bus bandwidth factors, rank orders
from fabrics, and a new collective added as one record runs like the others."""

from __future__ import annotations

import pytest

from jobs.ccl import algorithms
from jobs.ccl import collectives as C
from jobs.ccl.communicator import members
from jobs.ccl.datatypes import datatype
from jobs.ccl.plan import compile_collective
from jobs.ccl.schedule import FABRIC, NVLINK
from jobs.gpus import Cluster, Gpu, Server, cluster_from_fabric
from jobs.placement import bigraph_route, conflicts_per_step, rank_order
from topos import build_fabric


def gpus(servers: int, per_server: int) -> list[Gpu]:
    return [Gpu(f"srv{s}", i, f"h{s}n{i}", f"10.0.{s}.{i + 1}", i)
            for s in range(servers) for i in range(per_server)]


SHAPES = [(4, 2), (2, 4), (1, 4), (8, 1), (3, 2)]  # (servers, GPUs per server)


def cases():
    for servers, per in SHAPES:
        n = servers * per
        for coll in C.COLLECTIVES.values():
            for algo in coll.algorithms:
                if algo == "hd" and n & (n - 1):
                    continue
                yield servers, per, coll.name, algo


@pytest.mark.parametrize(("servers", "per", "coll", "algo"), list(cases()))
def test_every_rank_ends_with_what_the_collective_promises(servers, per, coll, algo):
    ranks = gpus(servers, per)
    n = len(ranks)
    size = 4096 * n
    roots = (0, n - 1) if C.get(coll).rooted else (0,)
    for root in roots:
        for ring in (0, 1):
            sched = C.build(coll, algo, ranks, size, root, ring)
            got = C.final_state(sched, coll, root)
            want = C.expected_state(coll, n, root)
            for r in range(n):
                for chunk, contributors in want[r].items():
                    assert got[r].get(chunk) == contributors, (coll, algo, root, ring, r)
            for step in sched.steps:
                for f in step.flows:
                    same = ranks[f.src].server == ranks[f.dst].server
                    assert f.link == (NVLINK if same else FABRIC) and f.chunks
            assert sched.busbw_factor == C.busbw_factor(coll, n)


def test_a_schedule_that_loses_or_double_counts_data_is_caught():
    ranks = gpus(2, 2)
    sched = C.build("all_reduce", "ring", ranks, 4096)
    sched.steps.pop()  # the last all-gather step
    got = C.final_state(sched, "all_reduce")
    want = C.expected_state("all_reduce", 4)
    assert any(got[r].get(c) != v for r in range(4) for c, v in want[r].items())
    twice = C.build("all_reduce", "ring", ranks, 4096)
    twice.steps.insert(1, twice.steps[0])  # a reduce-scatter step replayed
    with pytest.raises(ValueError, match="reduced twice|does not hold"):
        C.final_state(twice, "all_reduce")


def test_ring_and_halving_doubling_bytes_per_step():
    ranks = gpus(8, 1)
    ring = C.build("all_reduce", "ring", ranks, 8000)
    assert len(ring.steps) == 2 * 7
    assert all(sum(f.bytes for f in s.flows) == 8 * 1000 for s in ring.steps)
    hd = C.build("all_reduce", "hd", ranks, 8000)
    assert [s.flows[0].bytes for s in hd.steps] == [4000, 2000, 1000, 1000, 2000, 4000]
    assert all(len(s.flows) == 8 and {f.src ^ f.dst for f in s.flows} == {d}
               for s, d in zip(hd.steps, [1, 2, 4, 4, 2, 1], strict=True))
    with pytest.raises(ValueError, match="power-of-two"):
        C.build("all_reduce", "hd", gpus(3, 2), 6000)


@pytest.mark.parametrize(("servers", "per"), [(4, 2), (2, 4), (4, 4)])
def test_rings_snake_through_servers_and_stay_on_rails(servers, per):
    ranks = gpus(servers, per)
    rails_used = set()
    for ring in range(per):
        order = algorithms.ring_order(ranks, ring)
        assert sorted(order) == list(range(len(ranks)))
        hops = list(zip(order, order[1:] + order[:1], strict=False))
        fabric = [(a, b) for a, b in hops if ranks[a].server != ranks[b].server]
        assert len(fabric) == servers  # each server entered once and left once
        assert all(ranks[a].rail == ranks[b].rail for a, b in fabric)
        rails_used |= {ranks[a].rail for a, _ in fabric}
    assert rails_used == set(range(per))  # the channels' rings send from every NIC


def test_hierarchical_allreduce_keeps_inter_server_traffic_on_rails():
    ranks = gpus(4, 2)
    sched = C.build("all_reduce", "hierarchical", ranks, 8000)
    phases = [s.phase for s in sched.steps]
    assert phases == ["nvlink reduce-scatter"] + ["rail reduce-scatter"] * 3 + \
        ["rail all-gather"] * 3 + ["nvlink all-gather"]
    for step in sched.steps:
        links = {f.link for f in step.flows}
        if step.phase.startswith("nvlink"):
            assert links == {NVLINK}
        else:
            assert links == {FABRIC}
            assert all(ranks[f.src].rail == ranks[f.dst].rail for f in step.flows)
    # only 1/G of the data leaves a server per NIC: each rail ring carries S/G
    fabric = sum(f.bytes for s in sched.steps for f in s.flows if f.link == FABRIC)
    assert fabric == 2 * 4 * 6 * (8000 // 8)  # G rails x M ranks x 2(M-1) steps x S/(G M)


@pytest.mark.parametrize("coll", ["alltoall", "sendrecv"])
def test_pxn_crosses_rails_only_over_nvlink(coll):
    ranks = gpus(4, 2)
    flat = C.build(coll, "flat", ranks, 8 * 1024)
    pxn = C.build(coll, "pxn", ranks, 8 * 1024)

    def cross_rail(s):
        return [f for st in s.steps for f in st.flows
                if f.link == FABRIC and ranks[f.src].rail != ranks[f.dst].rail]
    assert cross_rail(flat), "the flat algorithm does cross rails on the fabric"
    assert cross_rail(pxn) == []
    assert [s.phase for s in pxn.steps] == [f"{coll} nvlink", f"{coll} rail"]

    def fabric_bytes(s):  # the fabric moves the same bytes either way; PXN adds NVLink hops
        return sum(f.bytes for st in s.steps for f in st.flows if f.link == FABRIC)
    assert fabric_bytes(pxn) == fabric_bytes(flat)


def test_busbw_factors_and_counts_are_nccl_tests():
    expected = {"all_reduce": 2 * 7 / 8, "all_gather": 7 / 8, "reduce_scatter": 7 / 8,
                "alltoall": 7 / 8, "broadcast": 1.0, "reduce": 1.0, "sendrecv": 1.0}
    assert {c: C.busbw_factor(c, 8) for c in C.COLLECTIVES} == expected
    # nccl-tests' *GetCollByteCount for 1000 floats on 8 ranks (a rank's part in whole 16 B)
    counts = {c.name: c.counts(1000, 8, 4) for c in C.COLLECTIVES.values()}
    assert {k: (v.send, v.recv, v.param) for k, v in counts.items()} == {
        "all_reduce": (1000, 1000, 1000), "all_gather": (124, 992, 124),
        "reduce_scatter": (992, 124, 124), "alltoall": (992, 992, 124),
        "broadcast": (1000, 1000, 1000), "reduce": (1000, 1000, 1000),
        "sendrecv": (1000, 1000, 1000)}
    assert C.get("all_gather").size_column(counts["all_gather"], 4) == 3968
    assert C.get("alltoall").counts(1000, 8, 1).param == 112  # uint8: 125 down to 7 x 16


def test_servers_and_rank_orders_from_fabrics():
    spec = build_fabric("hpn7")
    cluster = cluster_from_fabric(spec)
    assert cluster.gpus_per_server == 2 and len(cluster.servers) == 4
    assert cluster.ports == 2 and cluster.nic_bps == 2 * cluster.link_bps
    assert [(g.server, g.index, g.rail) for g in cluster.servers[1].gpus] == \
        [("srv1", 0, 0), ("srv1", 1, 1)]
    assert rank_order(cluster, "naive") == cluster.gpus()
    with pytest.raises(ValueError, match="BiGraph"):
        rank_order(cluster, "remap", spec)
    big = build_fabric("bigraph", switches_per_group=4, hosts_per_switch=2)
    bc = cluster_from_fabric(big)
    remapped = rank_order(bc, "remap", big)
    assert sorted(g.nic for g in remapped) == sorted(g.nic for g in bc.gpus())
    host_index = {g.nic: i for i, g in enumerate(bc.gpus())}
    sched = C.build("all_reduce", "hd", remapped, 16 * 1024)
    conflicts = conflicts_per_step(sched, [host_index[g.nic] for g in remapped],
                                   lambda h: h // 2, bigraph_route(8))
    assert max(conflicts) == 1  # EFLOPS: one flow per link per step
    naive = C.build("all_reduce", "hd", bc.gpus(), 16 * 1024)
    assert max(conflicts_per_step(naive, list(range(16)), lambda h: h // 2,
                                  bigraph_route(8))) > 1


def test_topology_order_groups_servers():
    servers = [Server(f"s{i}", [Gpu(f"s{i}", 0, f"n{i}", "", 0)], group=i % 2) for i in range(4)]
    order = rank_order(Cluster(servers, 10e6), "topology")
    assert [g.server for g in order] == ["s0", "s2", "s1", "s3"]


def test_bad_requests_are_refused_clearly():
    ranks = gpus(2, 2)
    with pytest.raises(ValueError, match="no algorithm 'pxn'"):
        C.build("all_reduce", "pxn", ranks, 1024)
    with pytest.raises(ValueError, match="unknown collective"):
        C.build("allreduce", "ring", ranks, 1024)
    with pytest.raises(ValueError, match="root"):
        C.build("broadcast", "chain", ranks, 1024, root=4)
    with pytest.raises(ValueError, match="same number"):
        C.build("all_reduce", "hierarchical", ranks[:3], 1024)


# ---- a new collective is one record -------------------------------------------------------
def _gathered_at_root(counts: C.Counts, n: int, root: int) -> list[C.Chunk]:
    b = counts.send
    return [C.Chunk(b, ((c, 0),), ((root, c * b),)) for c in range(n)]


def _direct_gather(ranks, root, ring):
    return [("gather", [(r, root, (r,)) for r in range(len(ranks)) if r != root])]


GATHER = C.Collective("gather", "the root ends with every rank's buffer, in rank order",
                      lambda n: (n - 1) / n,
                      lambda count, n, elt: C.Counts(count // n, count // n * n, count // n),
                      _gathered_at_root, {"direct": algorithms.Algorithm(_direct_gather)},
                      rooted=True)


def test_a_toy_collective_plans_and_replays_like_the_others(monkeypatch):
    monkeypatch.setitem(C.COLLECTIVES, "gather", GATHER)
    ranks = gpus(2, 2)
    sched = C.build("gather", None, ranks, 4096, root=1)
    assert C.final_state(sched, "gather", 1)[1] == C.expected_state("gather", 4, 1)[1]
    assert {f.link for f in sched.steps[0].flows} == {NVLINK, FABRIC}


@pytest.mark.root
def test_a_toy_collective_runs_in_the_runtime(monkeypatch, bridge_comm):
    monkeypatch.setitem(C.COLLECTIVES, "gather", GATHER)
    comm = bridge_comm(2, 2)
    compiled = compile_collective("gather", None, members(comm), total_ranks=4, count=4000,
                                  dtype=datatype("int32"), root=2)
    loaded = comm.load(compiled)
    try:
        result = comm.run(loaded, 1, init=True, check=True, seed=1)
        assert result.complete and result.wrong == 0
        ins = [comm.input(loaded, r) for r in range(4)]
        assert comm.output(loaded, 2) == b"".join(ins)
    finally:
        comm.unload(loaded)
