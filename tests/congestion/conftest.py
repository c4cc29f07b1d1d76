"""Fixtures for the congestion tests: the two-leaf incast fabric on Mininet + p4switch (names
`cg*`, management ports from tests/ports.py, so it never meets other tests' networks)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.congestion.helpers import PARAMS  # noqa: E402
from tests.ports import FABRICS  # noqa: E402

CG = FABRICS["congestion"]


@pytest.fixture(scope="module")
def incast_lab() -> Iterator[tuple[Any, Any, dict[str, Any]]]:
    """(lab, roles, agents): the fabric up, routes programmed, switch queues set."""
    from experiments.incast.lab import CongestionLab, incast_fabric

    spec, roles = incast_fabric(3, prefix=CG.prefix, grpc_base=CG.grpc, thrift_base=CG.thrift)
    with CongestionLab(spec, host_pps=PARAMS["host_pps"], fabric_pps=PARAMS["fabric_pps"],
                       depth=PARAMS["depth"], link_mbps=PARAMS["link_mbps"]) as lab:
        nics = [*roles.senders, roles.receiver, roles.victim_src, roles.victim_dst]
        yield lab, roles, {nic: lab.agent(nic) for nic in nics}
