"""random, checksums over the payload, optional match, @id, struct initializers, inout
action parameters, assume, @atomic and @hidden."""

from __future__ import annotations

from p4switch.cpmodel import ActionCall, FieldMatch
from p4switch.runtime import Entry
from p4switch.runtime.hashing import csum16

ING = "MiscIngress."


def op(code: int, key: int = 0, payload: bytes = b"") -> bytes:
    return bytes([code, key, 0, 0, 0, 0]) + payload


def out(sw, frame: bytes) -> tuple[int, int, bytes]:
    ((_, data),) = sw.send(0, frame)
    return int.from_bytes(data[2:4], "big"), data[4], data[6:]


def test_random_stays_in_range_and_varies(switch):
    sw = switch("misc.p4")
    seen = {out(sw, op(1))[0] for _ in range(200)}
    assert seen == {100, 101, 102}


def test_struct_initializer_copy_and_inout_action_parameter(switch):
    sw = switch("misc.p4")
    value, byte, _ = out(sw, op(2, 7))
    assert byte == 17                 # bump() changed the copy through its inout parameter
    assert value == (7 << 8) | 2      # the original struct kept its fields


def test_assume_inside_an_atomic_block(switch):
    sw = switch("misc.p4")
    assert out(sw, op(3, 1))[1] == 1
    assert sw.send(0, op(3, 2)) == []  # assume() failed: dropped (BMv2 aborts)


def test_optional_match_and_ids(switch):
    sw = switch("misc.p4")
    t = sw.table(ING + "opt")
    t.insert(Entry(keys=(FieldMatch("optional", value=9),), priority=1,
                   action=ActionCall(ING + "secret")))
    assert out(sw, op(4, 9))[1] == 0xAA
    assert out(sw, op(4, 8))[1] == 0
    m = sw.program.model
    assert m.table(ING + "opt").explicit_id == 0x0200007F
    assert m.action(ING + "secret").annotation("hidden") is not None
    assert [(r.name, r.scope) for r in m.table(ING + "opt").action_refs] == [
        (ING + "secret", "TABLE_AND_DEFAULT"), ("NoAction", "TABLE_ONLY")]


def test_for_loop_with_break_and_continue(switch):
    sw = switch("misc.p4")
    for key in (0, 1, 6, 15, 40):
        assert out(sw, op(6, key))[0] == sum(i for i in range(min(key, 15)) if i % 2)


def test_selector_instantiated_in_the_table(switch):
    sw = switch("misc.p4")
    (prof,) = sw.program.model.action_profiles
    assert (prof.name, prof.with_selector, prof.size, prof.selector_output_width,
            prof.table_names) == ("inline_sel", True, 16, 8, [ING + "inline_impl"])
    sel = sw.state.action_profiles["inline_sel"]
    sel.insert_member(1, ActionCall(ING + "secret"))
    sel.insert_group(1, [(1, 1, None)], 4)
    from p4switch.runtime import GroupRef
    sw.table(ING + "inline_impl").insert(
        Entry(keys=(FieldMatch("exact", value=3),), action=GroupRef(1)))
    assert out(sw, op(7, 3))[1] == 0xAA


def test_update_checksum_with_payload(switch):
    sw = switch("misc.p4")
    payload = b"\x12\x34\x56"
    value, _, rest = out(sw, op(5, 0x42, payload))
    assert rest == payload
    assert value == csum16(bytes([0x42, 0]) + payload)
