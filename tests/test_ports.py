"""tests/ports.py: every test fabric's block apart from every other and from the experiments'
default blocks, all of them above the default fabrics' ports and outside the kernel's ephemeral
port range."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

from experiments.framework.registry import all_experiments
from fabric_lab.figures import APART
from tests import ports
from tests.ports import EXPERIMENT_BLOCK, EXPERIMENT_RUNS, FABRIC_BLOCK, FABRICS, LOOSE_PORTS
from topos.mininet.cluster_nodes import THRIFT_SHIFT

FIRST_FREE = 10_000  # above the default fabrics' ports (9090 + n, 9559 + n)


def _blocks() -> dict[str, range]:
    blocks = {f"test fabric {name}": range(row.grpc, row.grpc + FABRIC_BLOCK)
              for name, row in FABRICS.items()}
    blocks |= {f"test run of {name}": range(run.port_base, run.port_base + EXPERIMENT_BLOCK)
               for name, run in EXPERIMENT_RUNS.items()}
    for experiment in all_experiments().values():
        base = experiment.defaults.get("port_base")
        if base is not None:
            blocks[f"experiment {experiment.name}'s default"] = range(base,
                                                                      base + EXPERIMENT_BLOCK)
    blocks["switches tests start on their own"] = LOOSE_PORTS
    base = APART["port_base"]
    blocks["make figures' runs"] = range(base, base + EXPERIMENT_BLOCK)
    return blocks


def test_every_block_is_its_own() -> None:
    blocks = sorted(_blocks().items(), key=lambda kv: kv[1].start)
    overlaps = [f"{a} {ra.start}-{ra.stop - 1} and {b} {rb.start}-{rb.stop - 1}"
                for (a, ra), (b, rb) in pairwise(blocks)
                if rb.start < ra.stop]
    assert not overlaps, "overlapping port blocks: " + "; ".join(overlaps)
    prefixes = [row.prefix for row in FABRICS.values()] + [r.prefix for r in EXPERIMENT_RUNS.values()]
    assert len(set(prefixes)) == len(prefixes), f"a name prefix is used twice: {sorted(prefixes)}"


def test_every_block_lies_outside_the_ephemeral_range() -> None:
    low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    cluster = FABRICS["cluster"].thrift + THRIFT_SHIFT  # the runtime CLI on the far server
    blocks = {**_blocks(), "test fabric cluster's far runtime CLI": range(cluster, cluster + 100)}
    outside = [f"{name} {r.start}-{r.stop - 1}" for name, r in blocks.items()
               if r.start < FIRST_FREE or (r.start <= high and r.stop > low) or r.stop > 65536]
    assert not outside, (f"port blocks inside this machine's ephemeral range {low}-{high} "
                         f"(net.ipv4.ip_local_port_range) or below {FIRST_FREE}: "
                         + "; ".join(outside))


def test_parallel_test_workers_draw_loose_ports_from_disjoint_shares(monkeypatch) -> None:
    shares = []
    for worker in ("gw0", "gw1", "gw2"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "3")
        shares.append(set(ports._worker_share(LOOSE_PORTS)))
    assert all(len(share) >= len(LOOSE_PORTS) // 3 for share in shares)
    assert not (shares[0] & shares[1]) and not (shares[1] & shares[2]) and not (shares[0] & shares[2])
    assert set().union(*shares) == set(LOOSE_PORTS)
    monkeypatch.delenv("PYTEST_XDIST_WORKER")
    assert ports._worker_share(LOOSE_PORTS) == LOOSE_PORTS
