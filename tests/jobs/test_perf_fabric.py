"""Collectives on a real HPN 7.0 fabric (p4switch): what the switches' counters see. One
bring-up checks: a hierarchical all-reduce inside one segment puts nothing on aggregation
links and sends on both planes; a collective inside one server puts nothing on any fabric
link and takes NVLink's time; PXN alltoall inside a segment never crosses rails on the fabric
(so never reaches an aggregation switch) while flat alltoall does; every collective measured
as nccl-tests measures it keeps its data intact, busbw = algbw x nccl-tests' factor, and its
time is no better than the alpha-beta bound."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from jobs.ccl.collectives import COLLECTIVES
from jobs.ccl.datatypes import datatype
from jobs.ccl.timing import measure as alpha_beta
from jobs.perf import PerfOptions, measure
from jobs.scale import Scale
from jobs.train_fabric import JobFabric
from tests.ports import FABRICS
from topos import build_fabric

pytestmark = [pytest.mark.mininet, pytest.mark.root, pytest.mark.slow]
PROGRAM = Path(__file__).resolve().parents[2] / "p4src" / "ecmp.p4"
ISOLATION = FABRICS["jobs-perf-fabric"]


@pytest.fixture(autouse=True)
def _needs_p4switch() -> None:
    pytest.importorskip("p4switch.compiler", reason="the p4switch compiler is not in the tree")


def delta(after: Counter, before: Counter) -> Counter:
    return Counter({k: after[k] - before[k] for k in after if after[k] != before[k]})


def test_collectives_on_hpn7_touch_only_the_links_they_should():
    spec = ISOLATION.apply(build_fabric("hpn7", rate_mbps=50.0))
    with JobFabric(spec) as fabric:
        cluster = fabric.cluster
        aggs = {sw.name for sw in spec.switches if sw.role == "agg"}
        plane = {sw.name: sw.plane for sw in spec.switches}
        segment0 = [g for s in cluster.servers if s.group == 0 for g in s.gpus]
        server0 = cluster.servers[0].gpus
        pids = list(fabric.comm.pids)

        def run(collective: str, algorithm: str, gpus, size: int):
            before = fabric.tx_bytes()
            result = fabric.run(fabric.compile(collective, algorithm, [gpus], size))
            assert result.complete and result.wrong == 0, result.errors()
            return result, delta(fabric.tx_bytes(), before)

        # hierarchical all-reduce inside segment 0: its ToRs only, both planes
        _, moved = run("all_reduce", "hierarchical", segment0, 256 * 1024)
        assert not [k for k in moved if aggs & set(k)], moved
        by_plane = Counter()
        for (sw, _), b in moved.items():
            by_plane[plane[sw]] += b
        assert set(by_plane) == {"A", "B"}
        assert min(by_plane.values()) > 0.3 * sum(by_plane.values()), by_plane

        # inside one server: NVLink only, at NVLink's rate
        size = 1 << 20
        result, moved = run("all_reduce", "ring", server0, size)
        assert moved == Counter()
        assert result.total("tx_packets") == 0
        nvlink_s = 2 * (size // 2) * 8 / cluster.nvlink_bps  # each GPU sends S/2 twice
        assert nvlink_s <= result.time_s < 2 * nvlink_s + 0.005, (result.time_s, nvlink_s)

        # alltoall inside segment 0: cross-rail pairs need an aggregation switch, unless PXN
        _, flat = run("alltoall", "flat", segment0, 64 * 1024)
        _, pxn = run("alltoall", "pxn", segment0, 64 * 1024)
        assert [k for k in flat if aggs & set(k)], "flat alltoall crosses rails on the fabric"
        assert not [k for k in pxn if aggs & set(k)], pxn

        # every collective, measured as nccl-tests measures it, on all eight GPUs
        comm = fabric.comm
        ab = alpha_beta(comm)
        scale = Scale(cluster.nic_bps, 400e9)
        for name, coll in COLLECTIVES.items():
            (row,) = measure(comm, name, coll.default_algorithm, [64 * 1024],
                             dtypes=[datatype("float")], redops=["sum"],
                             options=PerfOptions(warmup=0, iters=2), scale=scale,
                             alpha_s=ab.alpha_s)
            for m in (row.out_of_place, row.in_place):
                assert m.wrong == 0 and m.incomplete == 0, (name, m)
                assert m.busbw_gbs == pytest.approx(m.algbw_gbs * coll.factor(8))
                assert m.algbw_gbs == pytest.approx(row.size / (m.time_us / 1e6) / 1e9)
                assert 0 < m.of_bound < 1.15, (name, m)  # never (much) faster than the bound
        assert comm.pids == pids  # the same engines throughout: nothing started per run
