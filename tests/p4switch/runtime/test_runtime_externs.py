"""Counters, meters (BMv2 trTCM with an injected clock), registers and digests."""

import pytest

from p4switch.runtime import (
    GREEN,
    RED,
    YELLOW,
    ActionCall,
    Entry,
    FieldMatch,
    MeterCell,
    MeterConfig,
    RuntimeApiError,
)


def test_counter_array(state):
    c = state.counter("port_counter")
    c.count(1, 100)
    c.count(1, 60)
    c.count(9, 60)  # out of range: ignored
    assert c.read(1) == (2, 160)
    assert c.read(0) == (0, 0)
    c.write(2, 5, 500)
    assert c.read(2) == (5, 500)
    with pytest.raises(RuntimeApiError) as e:
        c.read(4)
    assert e.value.code == "OUT_OF_RANGE"
    c.reset()
    assert c.read(1) == (0, 0) and c.read(2) == (0, 0)
    assert "MyIngress.lpm_counter" not in state.counters  # direct counters live in entries


def test_packet_meter_colours_over_time(state):
    m = state.meter("port_meter")  # packets
    assert m.execute(0, 1500, 0) == GREEN  # unconfigured
    # CIR 1000 pkt/s burst 2, PIR 2000 pkt/s burst 4 (P4Runtime units)
    m.set_config(0, cir=1000, cburst=2, pir=2000, pburst=4)
    assert m.rates(0) == [(0.001, 2), (0.002, 4)]
    colours = [m.execute(0, 1500, 0) for _ in range(5)]
    assert colours == [GREEN, GREEN, YELLOW, YELLOW, RED]
    # 1 ms later: +2 peak tokens, +1 committed token
    colours = [m.execute(0, 64, 1000) for _ in range(3)]
    assert colours == [GREEN, YELLOW, RED]
    # after a long idle time the buckets are full again, capped at the bursts
    colours = [m.execute(0, 64, 10_000_000) for _ in range(5)]
    assert colours == [GREEN, GREEN, YELLOW, YELLOW, RED]
    m.reset_config(0)
    assert m.config(0) is None and m.execute(0, 64, 10_000_001) == GREEN


def test_byte_meter_and_cli_rates():
    cell = MeterCell("bytes")
    # BMv2 CLI units: bytes per microsecond. 0.125 B/µs = 125000 B/s = 1 Mbit/s
    cell.set_rates([(0.125, 1500), (0.25, 3000)])
    assert cell.config == MeterConfig(125000, 1500, 250000, 3000)
    assert cell.execute(1000, 0) == GREEN  # peak 3000->2000, committed 1500->500
    assert cell.execute(1000, 0) == YELLOW  # peak 2000->1000, committed 500 < 1000
    assert cell.execute(1001, 0) == RED  # peak 1000 < 1001
    assert cell.execute(1000, 4000) == GREEN  # +1000 peak, +500 committed -> 1000 each
    with pytest.raises(RuntimeApiError) as e:
        cell.set_rates([(0.5, 10), (0.25, 10)])
    assert e.value.code == "INVALID_ARGUMENT"  # PIR below CIR
    with pytest.raises(RuntimeApiError) as e:
        MeterCell("bytes").set_config(MeterConfig(10, 1, 5, 1))
    assert e.value.code == "INVALID_ARGUMENT"
    with pytest.raises(RuntimeApiError) as e:
        MeterCell("bytes").set_config(MeterConfig(10, 1 << 32, 20, 1))
    assert e.value.code == "UNIMPLEMENTED"  # as PI: bursts are 32-bit
    with pytest.raises(RuntimeApiError) as e:
        MeterCell("bytes").set_config(MeterConfig(-5, 1, 20, 1))
    assert e.value.code == "INVALID_ARGUMENT"


def test_direct_meter_per_entry(state):
    t = state.table("acl")
    cfg = MeterConfig(cir=1_000_000, cburst=100, pir=2_000_000, pburst=200)
    t.insert(Entry(keys=(None, FieldMatch("optional", value=6), None), priority=1,
                   action=ActionCall("MyIngress.drop"), meter_config=cfg))
    t.insert(Entry(keys=(None, FieldMatch("optional", value=17), None), priority=1,
                   action=ActionCall("MyIngress.drop")))
    tcp = t.lookup((0, 6, 0))
    udp = t.lookup((0, 17, 0))
    assert tcp.meter_config == cfg and udp.meter_config is None
    assert [tcp.meter.execute(100, 0) for _ in range(3)] == [GREEN, YELLOW, RED]
    assert udp.meter.execute(10_000, 0) == GREEN  # unconfigured
    t.set_meter_config(udp, MeterConfig(0, 0, 0, 0))
    assert udp.meter.execute(1, 0) == RED
    with pytest.raises(RuntimeApiError) as e:
        state.table("dmac").insert(Entry(keys=(FieldMatch("exact", value=1),),
                                         action=ActionCall("MyIngress.drop"), meter_config=cfg))
    assert e.value.code == "INVALID_ARGUMENT" and "no direct meter" in str(e.value)


def test_registers(state):
    r = state.register("flow_reg")
    assert (r.width, r.size, r.signed) == (16, 8, False)
    r.write(3, 0x12345)  # truncated to 16 bits
    assert r.read(3) == 0x2345
    assert r.read(8) is None  # out of range: result unwritten
    r.write(8, 1)  # out of range: nothing happens
    assert [r.read(i) for i in range(8)] == [0, 0, 0, 0x2345, 0, 0, 0, 0]
    s = state.register("signed_reg")
    s.write(0, -2)
    assert s.read(0) == 0xFE and s.read_signed(0) == -2
    with pytest.raises(RuntimeApiError) as e:
        r.get(8)
    assert e.value.code == "OUT_OF_RANGE"
    r.reset()
    assert r.read(3) == 0


def test_digests_dropped_until_configured(state):
    got = []
    d = state.digests
    d.sink = lambda name, values: got.append((name, values))
    d.emit("mac_learn_digest_t", (0x0A0000000001, 1))
    assert got == [] and d.dropped == 1
    d.configure("mac_learn_digest_t", max_list_size=1, max_timeout_ns=0, ack_timeout_ns=0)
    d.emit("mac_learn_digest_t", (0x0A0000000002, 2))
    assert got == [("mac_learn_digest_t", (0x0A0000000002, 2))]
    d.unconfigure("mac_learn_digest_t")
    d.emit("mac_learn_digest_t", (3, 3))
    assert len(got) == 1 and d.dropped == 2
    with pytest.raises(RuntimeApiError) as e:
        d.configure("nope_t")
    assert e.value.code == "NOT_FOUND"
