"""The same INT records from both targets: a real switch process (p4switch, and BMv2 when
installed) running ecmp.p4 as `leaf0` on veth pairs (`tests.differential.rig`), programmed by the
controller, whose `program()` writes the switch id and link rates (`controller.inband`); the
tx_bytes register reads back over the runtime CLI as the mechanism's telemetry.

Timestamps are µs since the switch started on both targets, so two packets sent some time apart
carry stamps that far apart; tx_bytes grows by each packet's length as received."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from controller.inband import int_settings
from experiments.framework.telemetry import read_telemetry
from mechanisms import int as inband
from targets import get_target
from tests.differential.packets import H0_IP, H0_MAC, H1_IP, LEAF_HOST_PORT_MAC
from tests.differential.rig import LEAF, exchange, rig
from traffic.frames import Endpoints, build_frame, icrc_ok
from traffic.headers import WRITE_ONLY
from traffic.inband import strip_int

pytestmark = [pytest.mark.root, pytest.mark.timeout(180)]

EP = Endpoints(H0_MAC, LEAF_HOST_PORT_MAC, H0_IP, H1_IP, 49321, 0x77)


@pytest.mark.parametrize("target", ["p4switch", pytest.param("bmv2", marks=pytest.mark.bmv2)])
def test_a_switch_pushes_its_record_with_its_id_ports_rate_clock_and_bytes(
        target: str, tmp_path: Path) -> None:
    with rig(target, "ecmp", tmp_path) as r:
        assert r.ctl is not None
        switch_id, rates = int_settings(r.ctl.spec, LEAF)
        frames = [build_frame(EP, WRITE_ONLY, psn, bytes(128 + psn), dlen=128, int_hops=3)
                  for psn in range(2)]
        sent_at, reports, emitted = [], [], []
        for frame in frames:
            sent_at.append(time.monotonic())
            out = exchange([r], 1, [frame], quiet=0.3)[0]
            assert len(out) == 1, f"{target}: emitted {len(out)} frames for one"
            port, got = out[0]
            plain, report = strip_int(got)
            assert report is not None and icrc_ok(plain)
            emitted.append(port)
            reports.append(report)
        model = r.ctl.spec.switch(LEAF)
        with get_target(r.target).cli(model.thrift_port) as channel:  # the register, as read
            register = read_telemetry(channel, inband.MECHANISM.telemetry, [emitted[0]])
    assert register == {"int_tx_bytes": {emitted[0]: reports[1].hops[0].tx_bytes}}
    assert emitted[0] == emitted[1] and emitted[0] in rates  # one flow, one uplink
    hops = [rep.hops[0] for rep in reports]
    assert all(len(rep.hops) == 1 and not rep.no_room for rep in reports)
    for hop in hops:
        assert (hop.switch_id, hop.ingress_port, hop.egress_port, hop.link_mbps) == \
            (switch_id, 1, emitted[0], rates[emitted[0]])
        assert hop.qdepth == 0  # one packet at a time: an idle queue
    assert hops[1].tx_bytes - hops[0].tx_bytes == len(frames[1])  # as received
    apart_us = (sent_at[1] - sent_at[0]) * 1e6
    stamps_us = hops[1].egress_ts - hops[0].egress_ts
    assert 0.5 * apart_us < stamps_us < 1.5 * apart_us + 100_000, (stamps_us, apart_us)
