"""Fixtures for the job tests: collective runtimes on a bridge of namespaces (no switches), so
that what they test is the runtime itself; namespaces named cc<random>, always removed."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator

import pytest

from jobs.ccl.communicator import Communicator, Transport
from jobs.gpus import Gpu
from traffic import netns

BRIDGE_MBPS = 100.0
NVLINK_BPS = 900e6

BridgeComm = Callable[[int, int], Communicator]


@pytest.fixture(scope="module")
def bridge_comm() -> Iterator[BridgeComm]:
    """`make(servers, gpus_per_server)`: a communicator of that many GPUs, every GPU a NIC
    on one Linux bridge at BRIDGE_MBPS, the GPUs of a server joined by NVLink; one per shape
    for the module."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    made: dict[tuple[int, int], tuple[netns.Testbed, Communicator]] = {}

    def make(servers: int, per_server: int) -> Communicator:
        if (servers, per_server) not in made:
            tb = netns.star("cc" + secrets.token_hex(2), servers * per_server, mtu=4200)
            try:
                hosts = list(tb.hosts.values())
                gpus = [Gpu(f"srv{i // per_server}", i % per_server, h.name, h.ip,
                            i % per_server) for i, h in enumerate(hosts)]
                comm = Communicator(hosts, gpus, tb.spec("bridge", BRIDGE_MBPS),
                                    nvlink_bps=NVLINK_BPS,
                                    transport=Transport().scaled(BRIDGE_MBPS * 1e6))
            except BaseException:
                tb.close()
                raise
            made[servers, per_server] = tb, comm
        return made[servers, per_server][1]

    try:
        yield make
    finally:
        for tb, comm in made.values():
            comm.close()
            tb.close()
