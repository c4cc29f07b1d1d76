"""Collectives on a real HPN 7.0 fabric (p4switch): what the switches' counters and the
receivers see. One bring-up checks: a hierarchical allreduce inside one segment puts nothing on
aggregation links; an in-server collective nothing on any fabric link (it is NVLink time);
PXN alltoall delivers no packet between NICs of different rails (flat alltoall does); every
collective measures busbw = algbw x nccl-tests' factor with intact data; a byte corrupted at
the source is counted in #wrong."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from experiments.framework.session import FabricSession
from jobs.collectives import COLLECTIVES, DEFAULT_ALGORITHM, busbw_factor
from jobs.collectives import build as build_schedule
from jobs.gpus import cluster_from_fabric
from jobs.perf import measure
from jobs.runner import JobRunner, switch_tx
from jobs.scale import Scale
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
    spec = ISOLATION.apply(build_fabric("hpn7"))
    cluster = cluster_from_fabric(spec)
    aggs = {sw.name for sw in spec.switches if sw.role == "agg"}
    segment0 = [g for s in cluster.servers if s.group == 0 for g in s.gpus]
    server0 = cluster.servers[0].gpus
    rail_of = {nic.ip: nic.rail for nic in spec.host_nics()}
    rail_of_host = {nic.name: nic.rail for nic in spec.host_nics()}
    with FabricSession(spec, program=PROGRAM) as session:
        with JobRunner(session, cluster, segment0) as runner:
            # hierarchical allreduce inside segment 0: ToRs only
            before, _ = switch_tx(session)
            res = runner.run(build_schedule("all_reduce", "hierarchical", segment0, 64 * 1024))
            moved = delta(switch_tx(session)[0], before)
            assert res.complete and res.wrong == 0, res.to_dict()
            assert not [k for k in moved if k[0] in aggs or k[1] in aggs], moved
            assert sum(moved.values()) >= 64  # the rail steps did cross the ToRs
            # every collective: intact data, busbw = algbw x factor
            scale = Scale(cluster.link_bps, 400e9)
            for coll in COLLECTIVES:
                (row,) = measure(runner, coll, DEFAULT_ALGORITHM[coll], segment0, [16 * 1024],
                                 warmup=0, iters=1, scale=scale)
                for m in (row.out_of_place, row.in_place):
                    assert m.wrong == 0 and m.incomplete == 0, (coll, m)
                    assert m.busbw_gbs == pytest.approx(m.algbw_gbs * busbw_factor(coll, 4))
                    assert m.algbw_gbs == pytest.approx(row.size / (m.time_us / 1e6) / 1e9)
        with JobRunner(session, cluster, segment0, sender={"corrupt_every": 7}) as runner:
            res = runner.run(build_schedule("all_gather", "ring", segment0, 64 * 1024))
            packets = sum(s.packets for s in res.steps)
            assert res.complete and res.wrong > 0
            assert sum(s.wrong_packets for s in res.steps) == res.wrong  # one byte per packet
            assert res.wrong >= packets // 7 - len(res.steps) * 4
        with JobRunner(session, cluster, server0) as runner:
            # in-server only: NVLink time, no packet on any fabric link
            before, _ = switch_tx(session)
            size = 256 * 1024
            res = runner.run(build_schedule("all_reduce", "ring", server0, size))
            assert delta(switch_tx(session)[0], before) == Counter()
            assert res.complete and all(s.packets == 0 and s.fabric_s == 0 for s in res.steps)
            assert res.total_s == pytest.approx(2 * (size // 2) * 8 / cluster.nvlink_bps)
        everyone = cluster.gpus()
        with JobRunner(session, cluster, everyone) as runner:
            cross = {}
            for algo in ("flat", "pxn"):
                res = runner.run(build_schedule("alltoall", algo, everyone, 32 * 1024))
                assert res.complete and res.wrong == 0
                pairs = [p for s in res.steps for p in s.received_from]
                assert pairs
                cross[algo] = [(src, dst) for src, dst in pairs
                               if rail_of[src] != rail_of_host[dst]]
            assert cross["flat"], "flat alltoall sends between rails"
            assert cross["pxn"] == [], cross["pxn"]
