"""The congestion paths of the lab's programs on both targets: ECN marking, traffic classes, PFC
reception (counted, punted to the controller as packet-ins), and PFC propagation (a data packet
for a paused queue pauses its upstream port through an ingress-to-egress clone that egress
rewrites into a truncated PFC frame; a later pause for that queue is relayed the same way).

Programmed with the controller's `apply_congestion` (the lab's settings, made deterministic):
DSCP 26 is priority 3, PFC XOFF is 4 packets (an idle queue never reaches it, so no pause comes from queue
depth), a pause lasts 0xFFFF quanta at 1 Mb/s (33 s, far longer than the test), and received PFC
frames are punted. ECN marks every ECN-capable packet an idle queue takes (an `ecn_profile`
entry for depth 0 with threshold 65535, so no random draw decides; the controller's profiles
start marking above kmin >= 0). Both switches run 8 priority queues, as the lab starts them for PFC; p4switch
with `--no-pfc`, so that it does not also pause its own queue on a received PFC frame (its
MAC-level extension, which BMv2 does not have): only the P4 pipelines are compared.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from p4.v1 import p4runtime_pb2

from controller.congestion import CongestionConfig, PfcConfig, apply_congestion
from controller.schema import encode
from tests.differential.compare import run_case
from tests.differential.packets import FLOWS, H0_MAC, SPINE0_MAC, Case, roce
from tests.differential.rig import Rig, exchange, rig
from traffic.pfc import build_pause

pytestmark = [pytest.mark.root, pytest.mark.bmv2, pytest.mark.slow, pytest.mark.timeout(600),
              pytest.mark.xdist_group("differential-frames")]

CONFIG = CongestionConfig(
    pfc=PfcConfig(xoff=4, xon=1, quanta=0xFFFF, refresh_us=600_000_000, link_mbps=1.0,
                  xoff_paused=2, priorities=(3,)),
    dscp_priority={26: 3},
    punt_pfc=True,
)


@pytest.fixture(scope="module", params=("ecmp", "dlb"))
def pair(request: pytest.FixtureRequest,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Rig, Rig]]:
    workdir = tmp_path_factory.mktemp(f"congestion-{request.param}")
    options = {"priority_queues": 8, "pfc_at_port": False}
    with rig("p4switch", request.param, workdir, **options) as a, \
            rig("bmv2", request.param, workdir, **options) as b:
        for r in (a, b):
            assert r.ctl is not None
            apply_congestion(r.ctl, CONFIG)
            mark_idle_queues(r)
        yield a, b


def mark_idle_queues(r: Rig) -> None:
    """ecn_profile: depth 0 -> set_mark_threshold(65535) (every draw in 0..65534 is below)."""
    assert r.ctl is not None
    schema, table = r.ctl.schema, "FabricEgress.ecn.ecn_profile"
    action = "FabricEgress.ecn.set_mark_threshold"
    update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    entry = update.entity.table_entry
    entry.table_id, entry.priority = schema.table(table).preamble.id, 1
    field = schema.match_field(table, "standard_metadata.enq_qdepth")
    fm = entry.match.add(field_id=field.id)
    fm.range.low = fm.range.high = encode(0, field.bitwidth, "depth")
    entry.action.action.action_id = schema.action(action).preamble.id
    param = schema.param(action, "threshold")
    entry.action.action.params.add(param_id=param.id, value=encode(65535, param.bitwidth, "t"))
    r.ctl.clients["leaf0"].write([update])


def check(pair: tuple[Rig, Rig], case: Case) -> None:
    problems = run_case(pair, case)
    assert not problems, f"{pair[0].program}.p4, {case.name}:\n" + "\n".join(problems)


def test_ecn_marking_and_classes(pair: tuple[Rig, Rig]) -> None:
    check(pair, Case("ecn", 1, (roce(FLOWS[0], ecn=2), roce(FLOWS[0], ecn=1),
                                roce(FLOWS[0], ecn=0), roce(FLOWS[0], ecn=3),
                                roce(FLOWS[1], dscp=0, ecn=2)), emits=5))


def test_pfc_is_counted_and_punted(pair: tuple[Rig, Rig]) -> None:
    check(pair, Case("punt", 1, (build_pause(H0_MAC, {0: 7}), build_pause(H0_MAC, {5: 0})),
                     emits=0, punts=2))


def test_pause_propagates_and_is_relayed(pair: tuple[Rig, Rig]) -> None:
    """Pause queue (port 2, priority 3) from spine0, then data for it from port 1: the second
    arrival pauses port 1; the next pause from spine0 is relayed to port 1; an XON is not."""
    first = [exchange(list(pair), 1, [roce(s, dscp=0)]) for s in FLOWS[2:]]  # same state on both
    assert all(a == b for a, b in first), "the targets route the probe flows differently"
    flows = [s for s, (a, _) in zip(FLOWS[2:], first, strict=True) if a[0][0] == 2]
    assert flows, "no test flow takes port 2"
    check(pair, Case("pause from spine0", 2, (build_pause(SPINE0_MAC, {3: 0xFFFF}),), 0, 1))
    # four packets of a flow: ECMP sends all to port 2, DLB every other one; either way the
    # queue sees a second arrival, which pauses port 1 (the refresh never comes): 4 + 1 frames
    check(pair, Case("data for the paused queue", 1,
                     tuple(roce(flows[0], psn=p) for p in range(4)), emits=5))
    check(pair, Case("second pause (relayed)", 2, (build_pause(SPINE0_MAC, {3: 0x4000}),), 1, 1))
    check(pair, Case("xon (not relayed)", 2, (build_pause(SPINE0_MAC, {3: 0}),), 0, 1))
    check(pair, Case("data after the xon", 1, (roce(flows[0], psn=9),), 1))
