"""Control flow and stateful externs through a real program."""

from __future__ import annotations

from p4switch.cpmodel import ActionCall, FieldMatch
from p4switch.runtime import Entry, GroupRef
from p4switch.runtime.hashing import crc16

P = "CfIngress."


def req(op: int, key: int = 0, value: int = 0) -> bytes:
    return bytes([op, key]) + value.to_bytes(2, "big") + bytes(8)


def resp(out: list[tuple[int, bytes]]) -> tuple[int, int, int, int, int]:
    ((port, data),) = out
    assert port == 2
    body = data[4:12]
    return (body[0], body[1], body[2], body[3], int.from_bytes(body[4:8], "big"))


def test_switch_on_action_run_and_hit_miss(switch):
    sw = switch("control_flow.p4")
    t = sw.table(P + "exact_tbl")
    t.insert(Entry(keys=(FieldMatch("exact", value=1),), action=ActionCall(P + "hit_one", (5,))))
    t.insert(Entry(keys=(FieldMatch("exact", value=2),), action=ActionCall(P + "hit_two")))
    t.insert(Entry(keys=(FieldMatch("exact", value=3),), action=ActionCall("NoAction")))
    assert resp(sw.send(0, req(1, 1)))[:3] == (5, 0, 1)
    assert resp(sw.send(0, req(1, 2)))[:3] == (0x22, 0, 2)
    assert resp(sw.send(0, req(1, 3)))[:3] == (0, 0, 3)
    assert resp(sw.send(0, req(1, 9)))[:3] == (0x77, 0, 1)  # default action with an argument
    assert resp(sw.send(0, req(2, 2)))[2] == 0x48
    assert resp(sw.send(0, req(2, 9)))[2] == 0x4D


def test_sub_controls_const_entries_and_exit(switch):
    sw = switch("control_flow.p4")
    # first classifies key, second key + 1 (ternary const entries, first listed wins)
    assert resp(sw.send(0, req(3, 0x13)))[:3] == (1, 1, 0xCC)
    # 0x1F also matches the 0x1F entry, but 0x10 &&& 0xF0 is listed first
    assert resp(sw.send(0, req(3, 0x1E)))[:3] == (1, 1, 0xCC)
    assert resp(sw.send(0, req(3, 0x40)))[:3] == (3, 3, 0xCC)
    # key + 1 == 0xFF: the second classifier's action exits the whole ingress
    assert resp(sw.send(0, req(3, 0xFE)))[:3] == (3, 0xEE, 0)
    # the two instances have their own registers
    assert sw.state.registers[P + "first.last_key"].read(0) == 0xFE
    assert sw.state.registers[P + "second_classifier.last_key"].read(0) == 0xFF


def test_function_with_out_parameter_and_return(switch):
    sw = switch("control_flow.p4")
    assert resp(sw.send(0, req(4, 100, 55)))[:2] == (155, 0)
    assert resp(sw.send(0, req(4, 200, 100)))[:2] == (255, 1)


def test_register_read_modify_write(switch):
    sw = switch("control_flow.p4")
    assert resp(sw.send(0, req(5, 3, 1000)))[4] == 1000
    assert resp(sw.send(0, req(5, 3, 24)))[4] == 1024
    assert sw.state.registers[P + "store"].read(3) == 1024
    # out-of-range index: the read leaves the result unwritten, the write does nothing
    assert resp(sw.send(0, req(5, 9, 5)))[4] == 0
    # reads and writes are inlined on the register's cell list: a reset (register_reset)
    # clears it in place, and the program sees the cleared cells
    sw.state.registers[P + "store"].reset()
    assert resp(sw.send(0, req(5, 3, 7)))[4] == 7
    assert sw.state.registers[P + "store"].read(3) == 7


def test_top_level_register(switch):
    sw = switch("control_flow.p4")
    assert resp(sw.send(0, req(12, 0, 4242)))[4] == 4242
    assert sw.state.registers["shared"].read(1) == 4242


def test_in_argument_is_a_copy_even_when_aliased(switch):
    sw = switch("control_flow.p4")
    assert resp(sw.send(0, req(13)))[:2] == (0x55, 0x11)


def test_meters(switch):
    sw = switch("control_flow.p4")
    assert resp(sw.send(0, req(6, 1)))[0] == 0  # unconfigured: GREEN
    sw.state.meters[P + "limiter"].set_config(1, 1, 1, 2, 2)  # 1 pkt/s, burst 1; 2 pkt/s, burst 2
    colors = [resp(sw.send(0, req(6, 1)))[0] for _ in range(4)]
    assert colors[0] == 0 and colors[-1] == 2


def test_direct_meter_colour_read_in_the_action(switch):
    sw = switch("control_flow.p4")
    t = sw.table(P + "exact_tbl")
    t.insert(Entry(keys=(FieldMatch("exact", value=1),), action=ActionCall(P + "hit_one", (5,))))
    assert resp(sw.send(0, req(1, 1)))[3] == 0
    from p4switch.runtime import MeterConfig
    t.set_meter_config(t.lookup((1,)), MeterConfig(1, 1, 1, 1))
    colors = [resp(sw.send(0, req(1, 1)))[3] for _ in range(3)]
    assert colors[0] == 0 and colors[-1] == 2


def test_action_selector_picks_hash_mod_n(switch):
    sw = switch("control_flow.p4")
    prof = sw.state.action_profiles[P + "sel"]
    for m in range(3):
        prof.insert_member(m + 1, ActionCall(P + "pick", (0xA0 + m,)))
    prof.insert_group(7, [(1, 1, None), (2, 1, None), (3, 1, None)], 8)
    sw.table(P + "ecmp").insert(Entry(keys=(FieldMatch("exact", value=4),), action=GroupRef(7)))
    for value in (0, 1, 4791, 65535):
        h = crc16(value.to_bytes(2, "big"))
        assert resp(sw.send(0, req(7, 4, value)))[1] == 0xA0 + h % 3


def test_range_const_entries_first_wins(switch):
    sw = switch("control_flow.p4")
    assert resp(sw.send(0, req(8, 0, 10)))[1] == 1
    assert resp(sw.send(0, req(8, 0, 60)))[1] == 1
    assert resp(sw.send(0, req(8, 0, 150)))[1] == 2
    assert resp(sw.send(0, req(8, 0, 300)))[1] == 0


def test_set_valid_zeroes_and_log_msg(switch):
    sw = switch("control_flow.p4")
    ((_, data),) = sw.send(0, req(9, 3, 0x1234))
    assert data[12:] == b"\x00\x00\x12\x34"
    assert "key=3 value=4660" in sw.logs


def test_assert_failure_drops_and_return_leaves_the_control(switch):
    sw = switch("control_flow.p4")
    assert sw.send(0, req(10, 0)) == []
    assert resp(sw.send(0, req(10, 1)))[0] == 1
    assert resp(sw.send(0, req(11, 1)))[0] == 0
    assert resp(sw.send(0, req(11, 2)))[0] == 0x11
