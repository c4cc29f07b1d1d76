"""In-band telemetry end to end on a real fabric: Mininet hosts, p4switch switches running
dlb.p4 (the first switch adds the reorder tag in front of the INT shim), the controller's
`program()` setting switch ids and link rates. A sender asks for INT; the receiver strips the
records (its ICRC check and reordering see the packets as sent) and reports the path."""

from __future__ import annotations

import pytest

from controller.inband import int_settings
from controller.lb import LoadBalancing
from experiments.framework.session import FabricSession
from mechanisms import program_path
from tests.ports import FABRICS
from topos import build_fabric
from traffic.receiver_config import ExpectedFlow, ReceiverConfig
from traffic.sender_config import QueuePairConfig, SenderConfig

pytestmark = [pytest.mark.mininet, pytest.mark.root, pytest.mark.slow, pytest.mark.timeout(300)]

QPN, MESSAGE = 0x51, 48 * 1024


def test_a_receiver_reports_the_records_of_the_path(tmp_path) -> None:
    pytest.importorskip("p4switch.compiler", reason="the p4switch compiler is not in the tree")
    spec = FABRICS["int"].apply(build_fabric("leafspine", leaves=2, spines=1, hosts_per_leaf=1))
    src, dst = spec.host_nics()[0], spec.host_nics()[-1]
    (first, in_port), = spec.attachments(src.name)
    (last, out_port), = spec.attachments(dst.name)
    spine = next(sw.name for sw in spec.switches if sw.name not in (first, last))
    want = []  # (switch id, ingress, egress, rate) per hop
    for name, ingress, egress in ((first, in_port, spec.port_to(first, spine)),
                                  (spine, spec.port_to(spine, first), spec.port_to(spine, last)),
                                  (last, spec.port_to(last, spine), out_port)):
        switch_id, rates = int_settings(spec, name)
        want.append((switch_id, ingress, egress, rates[egress]))

    def tagging(session: FabricSession) -> None:  # dlb's switches tag on host-facing ports
        assert session.ctl is not None
        LoadBalancing(session.ctl).configure()

    with FabricSession(spec, program=program_path("dlb"), log_dir=tmp_path,
                       setup={"tagging": tagging}) as session:
        rx_host, tx_host = session.host(dst.name), session.host(src.name)
        receiver, sender = session.agent(dst.name), session.agent(src.name)
        receiver.start_recv(ReceiverConfig(iface=rx_host.iface, duration_s=60,
                                           idle_timeout_s=5,
                                           expect=[ExpectedFlow(src.ip, QPN, MESSAGE)]))
        sender.start_send(SenderConfig(iface=tx_host.iface, qps=[QueuePairConfig(
            dst_ip=dst.ip, qpn=QPN, rate_bps=2e6, message_bytes=MESSAGE, int_hops=5)]))
        sent = sender.result(timeout=120)
        got = receiver.result(timeout=120)

    assert sent["qps"][0]["acked_packets"] == sent["qps"][0]["packets"] > 0
    flow = next(q for q in got["qps"] if q["qpn"] == QPN)
    assert flow["icrc_errors"] == 0 and flow["bytes"] == MESSAGE
    assert flow["tagged"] == flow["packets"]  # the first switch tagged every packet
    assert flow["int_packets"] == flow["packets"]  # every packet carried records
    hops = flow["int_hops"]
    assert [(h["switch_id"], h["ingress_port"], h["egress_port"], h["link_mbps"])
            for h in hops] == want
    assert all(h["tx_bytes"] > 0 and h["egress_ts"] > 0 for h in hops)
    assert len(flow["int_qdepth_max"]) == 3
