"""The names and ports of every test fabric, in one table.

A test that brings up a fabric takes its name prefix and its switches' gRPC and runtime-CLI
ports from its own row here, so two tests, or a test and an experiment run with its defaults
beside it, never meet. Every block lies outside the kernel's ephemeral port range (32768-60999,
net.ipv4.ip_local_port_range): any outgoing connection may take a port there as its source port,
and a switch then cannot bind it. tests/test_ports.py checks the table.

- `FABRICS`: `prefixed(spec, prefix, grpc, thrift)`; a block of 200 ports, gRPC from `grpc`,
  runtime CLI from `grpc + 100` (up to 100 switches). On several servers (the `cluster` row) a
  switch's runtime CLI listens on its server at that port + `THRIFT_SHIFT` (10000).
- `EXPERIMENT_RUNS`: `-p name_prefix=... -p port_base=...` for an experiment; a block of 1000,
  as `experiments.framework.isolated` numbers it (gRPC from the base, runtime CLI from base + 500;
  rail-vs-clos and hpn-segment step the base by 100 per fabric).
- `loose_port()`: a port of `LOOSE_PORTS` for a server a test starts on its own (a switch, an
  sshd, a web view; no fabric row), or one that nothing may listen on.
"""

from __future__ import annotations

import os
import socket
from typing import NamedTuple

from topos.model import FabricSpec
from topos.relocate import prefixed

FABRIC_BLOCK = 200
EXPERIMENT_BLOCK = 1000


class Isolation(NamedTuple):
    prefix: str
    grpc: int

    @property
    def thrift(self) -> int:
        return self.grpc + FABRIC_BLOCK // 2

    def apply(self, spec: FabricSpec, prefix: str | None = None) -> FabricSpec:
        """`spec` with this row's names (or `prefix`) and ports."""
        return prefixed(spec, self.prefix if prefix is None else prefix, self.grpc, self.thrift)


class ExperimentRun(NamedTuple):
    prefix: str
    port_base: int

    @property
    def overrides(self) -> dict[str, str]:
        return {"name_prefix": self.prefix, "port_base": str(self.port_base)}

    @property
    def argv(self) -> list[str]:
        return [arg for key, value in self.overrides.items() for arg in ("-p", f"{key}={value}")]


FABRICS: dict[str, Isolation] = {
    "controller": Isolation("ct", 10000),
    "failover": Isolation("fo", 10200),
    "jobs-perf-fabric": Isolation("jb", 10400),
    "jobs-perf-cli-p4switch": Isolation("jc", 10600),
    "jobs-perf-cli-bmv2": Isolation("jd", 10800),
    "jobs-train-cli": Isolation("tj", 11000),
    "web-up": Isolation("wu", 11200),
    "web-train": Isolation("tw", 11400),
    "web-fabric": Isolation("wv", 11600),
    "lb-fabric": Isolation("lb", 11800),
    "diagnose": Isolation("dx", 12000),
    "int": Isolation("ti", 12200),
    "hpcc": Isolation("hc", 12400),
    "session": Isolation("fs", 12600),
    "labs-lb-cli": Isolation("lc", 12800),
    "labs-lb-plot": Isolation("lp", 13000),
    "labs-replot": Isolation("rp", 13200),
    "cluster": Isolation("cl", 13400),
    "congestion-bmv2": Isolation("cv", 13600),
    "congestion": Isolation("cg", 13800),
    "jobs-layers-cli": Isolation("tk", 32400),
    "jobs-train-interrupt": Isolation("tq", 32200),
    "hostile-validate": Isolation("hv", 32000),  # fabric files refused before bring-up
}

EXPERIMENT_RUNS: dict[str, ExperimentRun] = {
    "rail-vs-clos": ExperimentRun("rx", 15000),
    "straggler": ExperimentRun("gx", 16000),
    "rank-mapping": ExperimentRun("mx", 17000),
    "scaling": ExperimentRun("cx", 18000),
    "lb": ExperimentRun("lx", 19000),
    "hpn-segment": ExperimentRun("sx", 20000),
    "pfc-deadlock": ExperimentRun("tdl", 21000),
    "rank-mapping-interrupt": ExperimentRun("qz", 63000),  # Ctrl-C midway, then replot
}


LOOSE_PORTS = range(14000, 15000)


def _worker_share(ports: range) -> range:
    """This test process's part of `ports`: under pytest-xdist each worker draws from its own
    slice, so two workers never hand out the same port."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if not worker.startswith("gw") or count <= 1:
        return ports
    return ports[int(worker[2:])::count]


_loose = iter(_worker_share(LOOSE_PORTS))


def loose_port() -> int:
    """A port of `LOOSE_PORTS` nothing listens on, never the same one twice in a test session.
    (Binding port 0 gives an ephemeral port, which an outgoing connection may take before the
    switch binds it: a switch once never came up that way.)"""
    for port in _loose:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise RuntimeError(f"tests/ports.py: all of LOOSE_PORTS ({LOOSE_PORTS.start}-"
                       f"{LOOSE_PORTS.stop - 1}) handed out in this session")
