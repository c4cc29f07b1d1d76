"""The lab's Wireshark dissectors (`tools/wireshark/fabric_lab.lua`) read a tagged packet with INT
records, as the dlb program's switches make it, the way the hosts' own parser does; and whatever
follows (UDP, RoCEv2) still decodes. Skips without tshark."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from scapy.layers.l2 import Ether
from scapy.utils import wrpcap

from controller.inband import configure_int
from experiments.framework.engine_switch import EngineSwitch, load_program
from traffic.frames import Endpoints, build_frame
from traffic.headers import WRITE_ONLY
from traffic.inband import strip_int

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")

LUA = Path(__file__).resolve().parents[2] / "tools" / "wireshark" / "fabric_lab.lua"
FIELDS = ("fabtag.flags", "fabtag.flow_id", "fabtag.seq", "fabtag.next_proto",
          "fabint.hop_count", "fabint.max_hops", "fabint.switch_id", "fabint.ingress_port",
          "fabint.egress_port", "fabint.qdepth", "fabint.egress_ts", "fabint.hop_latency",
          "fabint.tx_bytes", "fabint.link_mbps", "udp.dstport", "infiniband.bth.psn")


def _switch_made_frame() -> bytes:
    """A RoCEv2 packet asking for INT through two dlb.p4 switches: the first tags it."""
    ep = Endpoints("02:00:0a:00:00:01", "02:53:00:01:00:01", "10.0.0.1", "10.0.1.1", 49777, 9)
    frame = build_frame(ep, WRITE_ONLY, 33, bytes(100), dlen=100, int_hops=4)
    for switch_id, (ingress, egress, mbps, clock) in ((7, (1, 2, 25, 4000)),
                                                     (8, (3, 5, 40, 123456))):
        sw = EngineSwitch(load_program("dlb"), [egress], host_ports=[1])
        configure_int(sw.client, sw.client.schema, switch_id, {egress: mbps})
        sw.now_us = clock
        port, frame = sw.forward(frame, ingress_port=ingress)
        assert port == egress
    return frame


def test_tshark_decodes_the_tag_and_the_records(tmp_path: Path) -> None:
    frame = _switch_made_frame()
    pcap = tmp_path / "int.pcap"
    wrpcap(str(pcap), [Ether(frame)])
    done = subprocess.run(
        ["tshark", "-X", f"lua_script:{LUA}", "-r", str(pcap), "-T", "fields",
         "-E", "separator=|", "-E", "aggregator=,", *(a for f in FIELDS for a in ("-e", f))],
        capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin",
                                                         "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    got = dict(zip(FIELDS, done.stdout.strip().split("|"), strict=True))

    _, report = strip_int(frame)
    assert report is not None
    newest_first = list(reversed(report.hops))

    def column(name: str) -> str:
        return ",".join(str(getattr(h, name)) for h in newest_first)

    assert got["fabtag.flags"] == "0x02"  # tagged by the switch
    assert got["fabtag.next_proto"] == "254"
    assert int(got["fabtag.seq"]) == 0
    assert got["fabint.hop_count"] == "2" and got["fabint.max_hops"] == "4"
    assert got["fabint.switch_id"] == "8,7"
    for name in ("ingress_port", "egress_port", "qdepth", "egress_ts", "hop_latency",
                 "tx_bytes", "link_mbps"):
        assert got[f"fabint.{name}"] == column(name), name
    assert got["fabint.egress_ts"] == "123456,4000"
    assert got["udp.dstport"] == "4791" and got["infiniband.bth.psn"] == "33"
