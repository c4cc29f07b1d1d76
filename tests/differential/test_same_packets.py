"""p4switch and BMv2 get the same frames with the same table entries and must emit the same
frames, on the same ports, and count the same (counters read over P4Runtime).

Each program (ecmp, flowlet, dlb, qdlb) runs on both targets at once, programmed by the
controller (`FabricController` routes, `LoadBalancing` knobs), as a leaf with three uplinks: the
ECMP group has three members, so the member chosen depends on every bit of the selector's hash.
Frames go one at a time, each after both switches have been quiet for a while, so state that
depends on arrival times is the same on both: the flowlet gap is 1 ms, far below the spacing, so
every packet starts a new flowlet (and with a 60 s gap none does). Nothing in the programs draws
random numbers without a table entry asking for it (ECN marking profiles and PFC generation are
not configured here).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.differential.compare import run_case
from tests.differential.packets import FLOWS, Case, cases, roce, udp
from tests.differential.rig import LEAF, Rig, rig

# Beside the tests that start networks (tests/conftest.py): two lone switches answering frame by
# frame use little CPU (a late frame: rig.QUIET_S).
pytestmark = [pytest.mark.root, pytest.mark.bmv2, pytest.mark.slow, pytest.mark.timeout(900),
              pytest.mark.xdist_group("differential-frames")]

PROGRAMS = ("ecmp", "flowlet", "dlb", "qdlb")
SHORT_GAP_US = 1000


@pytest.fixture(scope="module", params=PROGRAMS)
def pair(request: pytest.FixtureRequest,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Rig, Rig]]:
    program = request.param
    workdir = tmp_path_factory.mktemp(f"differential-{program}")
    options = {"flowlet_gap_us": SHORT_GAP_US, "spines": 3}  # a group of three: H mod 3
    with rig("p4switch", program, workdir, **options) as a, \
            rig("bmv2", program, workdir, **options) as b:
        yield a, b


@pytest.mark.parametrize("case", cases(), ids=lambda c: c.name)
def test_same_frames_ports_and_counters(pair: tuple[Rig, Rig], case: Case) -> None:
    problems = run_case(pair, case)
    assert not problems, f"{pair[0].program}.p4, {case.name}:\n" + "\n".join(problems)


def test_flowlet_within_and_after_the_gap(pair: tuple[Rig, Rig]) -> None:
    """Flowlet only: with a 60 s gap a flow keeps its flowlet (and path); back at 1 ms every
    packet starts a new one. Both targets must agree in both regimes."""
    if pair[0].program != "flowlet":
        pytest.skip("flowlet.p4 only")
    flow = tuple(roce(FLOWS[5], psn=p) for p in range(6))
    problems = []
    for gap in (60_000_000, SHORT_GAP_US):
        for r in pair:
            assert r.lb is not None
            r.lb.set_flowlet_gap(gap)
            assert r.lb.flowlet_gaps() == {"leaf0": gap}
        problems += run_case(pair, Case(f"gap {gap} us", 1, flow))
    assert not problems, "\n".join(problems)


def test_packet_out_to_every_port(pair: tuple[Rig, Rig]) -> None:
    """Packet-outs (the packet_out header's egress_port, then the frame) leave on that port, and
    one to a port without an interface goes nowhere."""
    def packet_out(port: int, frame: bytes) -> Callable[[Rig], object]:
        def send(r: Rig) -> None:
            assert r.ctl is not None
            r.ctl.clients[LEAF].packet_out(frame, [(1, bytes([port]))])
        return send

    frames = [(p, roce(FLOWS[0], psn=p)) for p in (1, 2, 3, 7)] + [(2, udp(42000)[:20])]
    problems = run_case(pair, Case("packet-out", 0, (), emits=4),
                        [packet_out(p, f) for p, f in frames])
    assert not problems, "\n".join(problems)
