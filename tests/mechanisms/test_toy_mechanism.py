"""Adding a mechanism touches nothing but its own files: a toy mechanism (`toy/toy.p4`, a
program that includes it, and its description below) is programmed by the controller's generic
knob writer and read by the experiments' telemetry reader, on a real switch with packets.

The switch runs as `leaf0` of a two-leaf fabric on veth pairs (`tests.differential.rig`): port 1
faces h0n0, ports 2 and 3 the spines.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.fabric import FabricController
from controller.knobs import knob_values, set_knob
from controller.pipeline import build_pipeline
from experiments.framework.telemetry import read_telemetry
from mechanisms import (
    MECHANISMS,
    P4_INCLUDE,
    Control,
    Knob,
    Mechanism,
    Program,
    Telemetry,
    flow,
    port_io,
    routing,
)
from targets import get_target
from tests.differential.packets import udp
from tests.differential.rig import LEAF, Rig, exchange, fabric

pytestmark = [pytest.mark.root, pytest.mark.timeout(120)]

HERE = Path(__file__).resolve().parent / "toy"
TOY = Control("ToyWatch", "FabricIngress.toy")
WATCHED_PORTS = TOY.name("watched_ports")
WATCH = TOY.name("watch")
WATCHED = Telemetry("watched", TOY.name("watched_counter"), "counter",
                    "the cell the controller gives the ingress port", "IPv4 packets in")
TOY_MECHANISM = Mechanism(
    name="toy",
    include=HERE / "toy.p4",
    summary="counts IPv4 packets of the listed ingress ports into a cell per port",
    controls=(TOY,),
    tables=(WATCHED_PORTS,),
    actions=(WATCH,),
    counters=(WATCHED.p4_name,),
    knobs=(Knob("watched_ports", WATCHED_PORTS, WATCH, ("cell",),
                ("standard_metadata.ingress_port",), "ingress port -> counter cell"),),
    telemetry=(WATCHED,),
)
TOY_PROGRAM = Program("toy_fabric", HERE / "toy_fabric.p4", "routing, port I/O and the toy",
                      (flow.MECHANISM, port_io.MECHANISM, routing.MECHANISM, TOY_MECHANISM))
CELL = 7  # where the controller puts port 1's packets


@pytest.fixture(params=["p4switch", pytest.param("bmv2", marks=pytest.mark.bmv2)])
def toy_switch(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Rig]:
    """A switch running the toy program, routed by the controller (nothing of the toy set)."""
    pipeline = build_pipeline(TOY_PROGRAM.path, request.param, include_dirs=[P4_INCLUDE])
    r = Rig(request.param, "toy_fabric", f"mt{os.getpid() % 100000}{request.param[0]}",
            tmp_path / "switch.log")
    try:
        r.make_links()
        spec = fabric(r.spines)
        r.start(spec)
        r.ctl = FabricController(spec, pipeline)
        r.ctl.connect([LEAF])
        r.ctl.program()
        r.drain()
        yield r
    finally:
        r.stop()
        r.remove_links()


def test_the_description_is_the_compiled_programs_names() -> None:
    pipeline = build_pipeline(TOY_PROGRAM.path, "p4switch", include_dirs=[P4_INCLUDE])
    p4info = pipeline.p4info
    compiled = {item.preamble.name for kind in ("tables", "actions", "action_profiles",
                                                "counters", "registers")
                for item in getattr(p4info, kind)} - {"NoAction"}
    assert compiled == TOY_PROGRAM.names()
    assert TOY_MECHANISM.problems() == []
    assert TOY_MECHANISM not in MECHANISMS  # nothing registered it: the test's own


def test_the_controller_programs_the_toy_and_an_experiment_reads_its_counter(
        toy_switch: Rig) -> None:
    r = toy_switch
    assert r.ctl is not None
    knob = TOY_MECHANISM.knob("watched_ports")
    assert set_knob(r.ctl, knob, [((1,), {"cell": CELL})]) == {LEAF: 1}
    assert set_knob(r.ctl, knob, [((1,), {"cell": CELL})]) == {LEAF: 0}  # held already
    assert knob_values(r.ctl.clients[LEAF], r.ctl.schema, knob) == {(1,): {"cell": CELL}}

    sent = 12
    emitted = exchange([r], 1, [udp(42000 + i) for i in range(sent)], quiet=0.2)[0]
    assert len(emitted) == sent and {port for port, _ in emitted} <= {2, 3}  # routed to h1n0
    exchange([r], 2, [udp(43000, dst="10.0.0.1", port=2)], quiet=0.2)  # port 2: not watched

    model = r.ctl.spec.switch(LEAF)
    with get_target(r.target).cli(model.thrift_port) as channel:
        deadline = time.monotonic() + 5  # BMv2 counts as its pipeline drains
        while True:
            values = read_telemetry(channel, TOY_MECHANISM.telemetry, [CELL, 1, 2])
            if values["watched"][CELL] == sent or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    assert values == {"watched": {CELL: sent, 1: 0, 2: 0}}
    rx, _tx = r.ctl.port_counters(LEAF, [1, 2])
    assert rx[1][0] == sent and rx[2][0] == 1  # the lab's own counters saw the same packets
