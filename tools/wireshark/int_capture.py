"""Capture real INT packets: a two-leaf, one-spine fabric in Mininet (p4switch, dlb.p4, so the
first switch also adds the reorder tag), one RoCEv2 message from h0 to h1 asking for telemetry;
the switches write pcaps of their ports into OUTDIR (the last leaf's port to h1 carries packets
with three records). Needs root; about a minute.

    sudo .venv/bin/python tools/wireshark/int_capture.py /tmp/int-capture
    tshark -r /tmp/int-capture/<last leaf's host port>_out.pcap -c 1 -V   # with the dissectors
"""

from __future__ import annotations

import argparse
from pathlib import Path

from controller.lb import LoadBalancing
from experiments.framework.session import FabricSession
from mechanisms import program_path
from topos import build_fabric
from topos.relocate import prefixed
from traffic.receiver_config import ExpectedFlow, ReceiverConfig
from traffic.sender_config import QueuePairConfig, SenderConfig

QPN, MESSAGE = 0x51, 8 * 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", type=Path, help="where the switches' pcaps go")
    out = parser.parse_args().outdir.resolve()
    out.mkdir(parents=True, exist_ok=True)
    spec = prefixed(build_fabric("leafspine", leaves=2, spines=1, hosts_per_leaf=1), "ic",
                    38831, 38331)
    src, dst = spec.host_nics()[0], spec.host_nics()[-1]

    def tagging(session: FabricSession) -> None:
        assert session.ctl is not None
        LoadBalancing(session.ctl).configure()

    with FabricSession(spec, program=program_path("dlb"), pcap_dir=out,
                       setup={"tagging": tagging}) as session:
        receiver, sender = session.agent(dst.name), session.agent(src.name)
        receiver.start_recv(ReceiverConfig(iface=session.host(dst.name).iface, duration_s=60,
                                           expect=[ExpectedFlow(src.ip, QPN, MESSAGE)]))
        sender.start_send(SenderConfig(iface=session.host(src.name).iface, qps=[
            QueuePairConfig(dst_ip=dst.ip, qpn=QPN, rate_bps=1e6, message_bytes=MESSAGE,
                            int_hops=5)]))
        sender.result(timeout=120)
        flow = next(q for q in receiver.result(timeout=120)["qps"] if q["qpn"] == QPN)
    (last, port), = spec.attachments(dst.name)
    print(f"{flow['int_packets']} packets with INT; last path {flow['int_hops']}")
    print(f"pcaps in {out}; {last} port {port} faces {dst.name}")


if __name__ == "__main__":
    main()
