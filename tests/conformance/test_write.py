"""Write semantics (P4Runtime spec §9 and the Write RPC's batch error reporting): each rejected
update gets the spec's code, and the switch's state is what it was before (read back)."""

from __future__ import annotations

from p4.v1 import p4runtime_pb2 as pb
from p4rt_codes import write_codes
from sw_p4rt import update


def test_insert_into_a_table_without_match_key_is_invalid_argument(rig, request):
    te = pb.TableEntry(table_id=rig.id("tables", "tag"))
    te.action.action.action_id = rig.id("actions", "set_tag")
    te.action.action.params.add(param_id=1, value=b"\x07")
    before = rig.entries("tag")
    rig.departs(request, "INSERT into a table without match key is accepted (OK)")
    assert write_codes(rig.primary, update("INSERT", table_entry=te)) == ["INVALID_ARGUMENT"]
    assert rig.entries("tag") == before


def test_the_default_entry_of_a_keyless_table_is_modified_not_inserted(rig):
    te = pb.TableEntry(table_id=rig.id("tables", "tag"), is_default_action=True)
    te.action.action.action_id = rig.id("actions", "set_tag")
    te.action.action.params.add(param_id=1, value=b"\x07")
    assert write_codes(rig.primary, update("INSERT", table_entry=te)) == ["INVALID_ARGUMENT"]
    assert write_codes(rig.primary, update("MODIFY", table_entry=te)) == ["OK"]
    read = pb.TableEntry(table_id=te.table_id, is_default_action=True)
    [got] = rig.primary.read(pb.Entity(table_entry=read))
    assert got.table_entry.action.action.params[0].value == b"\x07"


def test_counter_data_on_a_table_without_direct_counter_is_invalid_argument(rig):
    te = rig.fwd(1)
    te.counter_data.packet_count = 5
    assert write_codes(rig.primary, update("INSERT", table_entry=te)) == ["INVALID_ARGUMENT"]
    assert rig.entries("fwd") == []


def test_counter_data_on_a_table_with_a_direct_counter_is_written(rig):
    te = pb.TableEntry(table_id=rig.id("tables", "acl"), priority=10)
    te.match.add(field_id=1).ternary.CopyFrom(pb.FieldMatch.Ternary(value=b"\x08\x00",
                                                                     mask=b"\xff\xff"))
    te.action.action.action_id = rig.id("actions", "allow")
    te.counter_data.packet_count = 5
    te.counter_data.byte_count = 500
    assert write_codes(rig.primary, update("INSERT", table_entry=te)) == ["OK"]
    read = pb.TableEntry(table_id=te.table_id)
    read.counter_data.SetInParent()
    [got] = rig.primary.read(pb.Entity(table_entry=read))
    assert (got.table_entry.counter_data.packet_count,
            got.table_entry.counter_data.byte_count) == (5, 500)


def test_idle_timeout_on_a_table_without_idle_timeout_is_invalid_argument(rig):
    te = rig.fwd(1)
    te.idle_timeout_ns = 1_000_000_000
    assert write_codes(rig.primary, update("INSERT", table_entry=te)) == ["INVALID_ARGUMENT"]
    assert rig.entries("fwd") == []


def test_insert_of_an_existing_key_is_already_exists_and_keeps_the_entry(rig):
    assert write_codes(rig.primary, update("INSERT", table_entry=rig.fwd(1, 2))) == ["OK"]
    assert write_codes(rig.primary, update("INSERT", table_entry=rig.fwd(1, 3))) == [
        "ALREADY_EXISTS"]
    [entry] = rig.entries("fwd")
    assert entry.action.action.params[0].value == b"\x02"


def test_modify_and_delete_of_a_missing_key_are_not_found(rig):
    assert write_codes(rig.primary, update("MODIFY", table_entry=rig.fwd(4))) == ["NOT_FOUND"]
    assert write_codes(rig.primary, update("DELETE", table_entry=rig.fwd(4))) == ["NOT_FOUND"]
    assert rig.entries("fwd") == []


def test_unknown_ids_and_missing_parameters_are_invalid_argument(rig):
    unknown_table = rig.fwd(1)
    unknown_table.table_id = rig.id("tables", "fwd") ^ 0xFFFF
    no_param = rig.fwd(1)
    del no_param.action.action.params[:]
    bad_action = rig.fwd(1)
    bad_action.action.action.action_id = rig.id("actions", "set_tag")  # not an action of fwd
    codes = write_codes(rig.primary, *(update("INSERT", table_entry=te)
                                       for te in (unknown_table, no_param, bad_action)))
    assert codes == ["INVALID_ARGUMENT"] * 3
    assert rig.entries("fwd") == []


def test_a_batch_reports_every_update_and_applies_the_good_ones(rig):
    codes = write_codes(rig.primary, update("INSERT", table_entry=rig.fwd(1, 2)),
                        update("DELETE", table_entry=rig.fwd(9)),
                        update("INSERT", table_entry=rig.fwd(3, 4)))
    assert codes == ["OK", "NOT_FOUND", "OK"]
    got = {e.match[0].exact.value: e.action.action.params[0].value for e in rig.entries("fwd")}
    assert got == {b"\x01": b"\x02", b"\x03": b"\x04"}


def test_a_const_default_action_cannot_be_changed(rig):
    te = pb.TableEntry(table_id=rig.id("tables", "fixed"), is_default_action=True)
    te.action.action.action_id = rig.id("actions", "forward")
    te.action.action.params.add(param_id=1, value=b"\x01")
    assert write_codes(rig.primary, update("MODIFY", table_entry=te)) == ["PERMISSION_DENIED"]
    read = pb.TableEntry(table_id=te.table_id, is_default_action=True)
    [got] = rig.primary.read(pb.Entity(table_entry=read))
    assert got.table_entry.action.action.action_id == rig.id("actions", "drop")


def test_ternary_entries_need_a_priority(rig):
    te = pb.TableEntry(table_id=rig.id("tables", "acl"))
    te.match.add(field_id=1).ternary.CopyFrom(pb.FieldMatch.Ternary(value=b"\x08\x00",
                                                                     mask=b"\xff\xff"))
    te.action.action.action_id = rig.id("actions", "deny")
    assert write_codes(rig.primary, update("INSERT", table_entry=te)) == ["INVALID_ARGUMENT"]
    assert rig.entries("acl") == []
