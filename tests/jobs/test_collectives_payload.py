"""Checked payloads: senders fill packets with the (QPN, PSN) pattern, receivers count what
arrives wrong; a byte flipped at the source (valid ICRC, so the network passes it) is counted."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from traffic import netns, payload
from traffic.agent import Agent
from traffic.frames import Endpoints, FrameTemplate, build_frame, icrc_ok
from traffic.headers import WRITE_MIDDLE


@pytest.fixture
def pair() -> Iterator[netns.Testbed]:
    tb = netns.pair("jp" + secrets.token_hex(2), subnet="10.81.0")
    try:
        yield tb
    finally:
        tb.close()


def test_the_pattern_depends_on_qp_and_psn_and_keeps_the_icrc_valid():
    a, b = payload.expected(7, 0, 1024), payload.expected(7, 1, 1024)
    assert len(a) == 1024 and a != b and payload.expected(8, 0, 1024) != a
    assert payload.expected(7, 251, 1024) == a  # the shift repeats every 251 PSNs
    assert payload.wrong_elements(a, a) == 0
    bad = bytearray(a)
    bad[5] ^= 1
    bad[1023] ^= 1
    assert payload.wrong_elements(bad, a) == 2
    assert payload.wrong_elements(bad, a, skip=8) == 1  # the stamp is not checked
    ep = Endpoints("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.0.0.2", 49153, 7)
    tpl = FrameTemplate(build_frame(ep, WRITE_MIDDLE, 0, bytes(1024)), stamped=False)
    frame = bytes(tpl.render(3, payload=payload.expected(7, 3, tpl.payload_len)))
    assert icrc_ok(frame) and payload.expected(7, 3, 1024) in frame


def _run(tb: netns.Testbed, sender: dict, receiver: dict) -> tuple[dict, dict]:
    a, b = tb.hosts["a"], tb.hosts["b"]
    qps = [{"dst_ip": b.ip, "qpn": 11, "rate_bps": 20e6, "message_bytes": 64 * 1024},
           {"dst_ip": b.ip, "qpn": 12, "rate_bps": 20e6, "message_bytes": 32 * 1024}]
    with Agent(b) as rx, Agent(a) as tx:
        rx.start_recv({"iface": b.iface, "idle_timeout_s": 1.0, "duration_s": 30,
                       "expect": [{"src_ip": a.ip, "qpn": q["qpn"], "bytes": q["message_bytes"]}
                                  for q in qps], **receiver})
        tx.start_send({"iface": a.iface, "qps": qps, "dcqcn": False, **sender})
        return tx.result(60), rx.result(60)


@pytest.mark.root
def test_receivers_count_wrong_elements_and_nothing_else(pair):
    sent, got = _run(pair, {"pattern": True}, {"check_payload": True})
    assert sent["packets"] == 96 and [q["bytes"] for q in got["qps"]] == [65536, 32768]
    assert sum(q["wrong_packets"] for q in got["qps"]) == 0
    sent, got = _run(pair, {"pattern": True, "corrupt_every": 10}, {"check_payload": True})
    assert sent["packets"] == 96  # nothing resent: the ICRC is valid, only the data is wrong
    assert sum(q["wrong_packets"] for q in got["qps"]) == 9
    assert sum(q["wrong_elements"] for q in got["qps"]) == 9  # one flipped byte each
    # without the pattern a checking receiver finds every packet wrong (zeros)
    _, got = _run(pair, {}, {"check_payload": True})
    assert sum(q["wrong_packets"] for q in got["qps"]) == 96
