"""P4Runtime entities <-> runtime state, on a hand-built control-plane model (no data plane).

Covers the byte-string rules, id resolution, per-entity dispatch and the codes PI uses; the
process tests cover the same paths end to end.
"""

import pytest
from p4.v1 import p4runtime_pb2 as pb

from p4switch.cpmodel import (
    Action,
    ActionCall,
    ActionProfile,
    ActionRef,
    Annotation,
    ControllerHeader,
    ControlPlaneModel,
    Counter,
    Digest,
    MatchField,
    Meter,
    Param,
    Register,
    StructField,
    Table,
)
from p4switch.p4info import build_p4info
from p4switch.p4info.index import P4InfoIndex
from p4switch.runtime import RuntimeState
from p4switch.runtime.errors import RuntimeApiError
from p4switch.server.entities import EntityCodec
from p4switch.server.packetio import PacketIO


def model() -> ControlPlaneModel:
    noaction = Action("NoAction", [Annotation("noWarn", '"unused"')])
    fwd = Action("I.forward", params=[Param("port", bitwidth=9)])
    drop = Action("I.drop")
    return ControlPlaneModel(
        program="codec",
        actions=[noaction, fwd, drop],
        tables=[
            Table("I.fwd", match_fields=[MatchField("sm.ingress_port", bitwidth=9)],
                  action_refs=[ActionRef("I.forward"), ActionRef("I.drop")],
                  default_action=ActionCall("I.drop"), size=8, direct_counter="I.fwd_counter",
                  direct_meter="I.fwd_meter"),
            Table("I.acl", match_fields=[
                MatchField("h.dst", bitwidth=48, match_kind="ternary"),
                MatchField("h.type", bitwidth=16, match_kind="range"),
                MatchField("h.lpm", bitwidth=32, match_kind="lpm")],
                action_refs=[ActionRef("I.drop"), ActionRef("NoAction")],
                default_action=ActionCall("NoAction"), const_default_action=True),
            Table("I.lb", match_fields=[MatchField("h.dst", bitwidth=48),
                                        MatchField("h.src", bitwidth=48, match_kind="selector")],
                  action_refs=[ActionRef("I.forward")], implementation="I.sel"),
        ],
        action_profiles=[ActionProfile("I.sel", table_names=["I.lb"], with_selector=True,
                                       size=64, max_group_size=4,
                                       selector_algorithm="crc16")],
        counters=[Counter("I.rx", size=16), Counter("I.fwd_counter", direct_table="I.fwd")],
        meters=[Meter("I.m", size=4, unit="packets"),
                Meter("I.fwd_meter", unit="bytes", direct_table="I.fwd")],
        registers=[Register("I.r", bitwidth=32, size=4)],
        digests=[Digest("learn_t", fields=[StructField("src", 48), StructField("port", 9)])],
        controller_headers=[
            ControllerHeader("packet_in", fields=[StructField("ingress_port", 9),
                                                  StructField("_pad", 7)],
                             type_name="packet_in_h"),
            ControllerHeader("packet_out", fields=[StructField("egress_port", 9),
                                                   StructField("_pad", 7)],
                             type_name="packet_out_h"),
        ],
    )


@pytest.fixture
def env():
    m = model()
    p4info = build_p4info(m)
    index = P4InfoIndex(p4info)
    state = RuntimeState(m)
    return EntityCodec(p4info, index, m, state), index, state, p4info


def upd(kind, **entity):
    u = pb.Update(type=pb.Update.Type.Value(kind))
    for k, v in entity.items():
        getattr(u.entity, k).CopyFrom(v)
    return u


def fwd_entry(index, port_bytes: bytes, out: bytes = b"\x02") -> pb.TableEntry:
    te = pb.TableEntry(table_id=index.id("tables", "I.fwd"))
    te.match.add(field_id=1).exact.value = port_bytes
    te.action.action.action_id = index.id("actions", "I.forward")
    te.action.action.params.add(param_id=1, value=out)
    return te


def code_of(fn) -> str:
    with pytest.raises(RuntimeApiError) as err:
        fn()
    return err.value.code


def test_table_entry_round_trip_with_canonical_bytes(env):
    codec, index, state, _ = env
    codec.write(upd("INSERT", table_entry=fwd_entry(index, b"\x00\x00\x01", b"\x00\x03")))
    entry = state.tables["I.fwd"].lookup((1,))
    assert entry.action == ActionCall("I.forward", (3,))
    [got] = codec.read(pb.Entity(table_entry=pb.TableEntry()))
    assert got.table_entry.match[0].exact.value == b"\x01"
    assert got.table_entry.action.action.params[0].value == b"\x03"
    assert code_of(lambda: codec.write(upd("INSERT", table_entry=fwd_entry(
        index, b"\x01")))) == "ALREADY_EXISTS"
    assert code_of(lambda: codec.write(upd("INSERT", table_entry=fwd_entry(
        index, b"\x02\x00")))) == "INVALID_ARGUMENT"  # 512 > 9 bits
    codec.write(upd("DELETE", table_entry=fwd_entry(index, b"\x01")))
    assert codec.read(pb.Entity(table_entry=pb.TableEntry())) == []
    aging = fwd_entry(index, b"\x04")
    aging.idle_timeout_ns = 10**9  # the table has no idle timeout: spec 9.1 says INVALID_ARGUMENT
    assert code_of(lambda: codec.write(upd("INSERT", table_entry=aging))) == "INVALID_ARGUMENT"


def test_ternary_range_lpm_and_default_entries(env):
    codec, index, state, _ = env
    te = pb.TableEntry(table_id=index.id("tables", "I.acl"), priority=10)
    t = te.match.add(field_id=1).ternary
    t.value, t.mask = b"\x0a", b"\xff"
    r = te.match.add(field_id=2).range
    r.low, r.high = b"\x08\x00", b"\x08\x06"
    lpm = te.match.add(field_id=3).lpm
    lpm.value, lpm.prefix_len = bytes([10, 0, 0, 0]), 8
    te.action.action.action_id = index.id("actions", "I.drop")
    codec.write(upd("INSERT", table_entry=te))
    [got] = codec.read(pb.Entity(table_entry=pb.TableEntry(table_id=te.table_id)))
    assert got.table_entry.priority == 10
    assert got.table_entry.match[2].lpm.value == bytes([10, 0, 0, 0])
    host_bits = pb.TableEntry()
    host_bits.CopyFrom(te)
    host_bits.match[2].lpm.value = bytes([10, 0, 0, 1])
    assert code_of(lambda: codec.write(upd("INSERT", table_entry=host_bits))) == \
        "INVALID_ARGUMENT"
    default = pb.TableEntry(table_id=te.table_id, is_default_action=True)
    default.action.action.action_id = index.id("actions", "I.drop")
    assert code_of(lambda: codec.write(upd("MODIFY", table_entry=default))) == \
        "PERMISSION_DENIED"
    fwd_default = pb.TableEntry(table_id=index.id("tables", "I.fwd"), is_default_action=True)
    fwd_default.action.action.action_id = index.id("actions", "I.forward")
    fwd_default.action.action.params.add(param_id=1, value=b"\x05")
    codec.write(upd("MODIFY", table_entry=fwd_default))
    assert state.tables["I.fwd"].default_entry.action == ActionCall("I.forward", (5,))
    codec.write(upd("MODIFY", table_entry=pb.TableEntry(table_id=fwd_default.table_id,
                                                        is_default_action=True)))
    assert state.tables["I.fwd"].default_entry.action == ActionCall("I.drop")


def test_profiles_groups_and_one_shot(env):
    codec, index, state, _ = env
    prof = index.id("action_profiles", "I.sel")
    for mid, port in ((1, 2), (2, 3)):
        m = pb.ActionProfileMember(action_profile_id=prof, member_id=mid)
        m.action.action_id = index.id("actions", "I.forward")
        m.action.params.add(param_id=1, value=bytes([port]))
        codec.write(upd("INSERT", action_profile_member=m))
    g = pb.ActionProfileGroup(action_profile_id=prof, group_id=1, max_size=4)
    g.members.add(member_id=1, weight=2, watch_port=b"\x02")
    g.members.add(member_id=2, weight=1)
    codec.write(upd("INSERT", action_profile_group=g))
    [got] = codec.read(pb.Entity(action_profile_group=pb.ActionProfileGroup(
        action_profile_id=prof)))
    assert [(m.member_id, m.weight, m.watch_port) for m in got.action_profile_group.members] \
        == [(1, 2, b"\x02"), (2, 1, b"")]
    assert len(codec.read(pb.Entity(action_profile_member=pb.ActionProfileMember()))) == 2
    over = pb.ActionProfileGroup(action_profile_id=prof, group_id=2)
    over.members.add(member_id=1, weight=5)
    assert code_of(lambda: codec.write(upd("INSERT", action_profile_group=over))) == \
        "RESOURCE_EXHAUSTED"
    te = pb.TableEntry(table_id=index.id("tables", "I.lb"))
    te.match.add(field_id=1).exact.value = b"\x01"
    te.action.action_profile_group_id = 1
    codec.write(upd("INSERT", table_entry=te))
    [read] = codec.read(pb.Entity(table_entry=pb.TableEntry(table_id=te.table_id)))
    assert read.table_entry.action.action_profile_group_id == 1
    # one-shot programming cannot be mixed with manual groups
    oneshot = pb.TableEntry(table_id=te.table_id)
    oneshot.match.add(field_id=1).exact.value = b"\x02"
    a = oneshot.action.action_profile_action_set.action_profile_actions.add(weight=1)
    a.action.action_id = index.id("actions", "I.forward")
    a.action.params.add(param_id=1, value=b"\x02")
    assert code_of(lambda: codec.write(upd("INSERT", table_entry=oneshot))) == \
        "INVALID_ARGUMENT"


def test_counters_meters_registers_pre_and_digests(env):
    codec, index, state, _ = env
    cid = index.id("counters", "I.rx")
    c = pb.CounterEntry(counter_id=cid)
    c.index.index = 3
    c.data.packet_count, c.data.byte_count = 7, 700
    codec.write(upd("MODIFY", counter_entry=c))
    assert state.counters["I.rx"].read(3) == (7, 700)
    assert len(codec.read(pb.Entity(counter_entry=pb.CounterEntry(counter_id=cid)))) == 16
    assert code_of(lambda: codec.write(upd("INSERT", counter_entry=c))) == "INVALID_ARGUMENT"
    c.index.index = 99
    assert code_of(lambda: codec.write(upd("MODIFY", counter_entry=c))) == "OUT_OF_RANGE"
    m = pb.MeterEntry(meter_id=index.id("meters", "I.m"))
    m.index.index = 1
    m.config.cir, m.config.cburst, m.config.pir, m.config.pburst = 10, 5, 20, 5
    codec.write(upd("MODIFY", meter_entry=m))
    [got] = codec.read(pb.Entity(meter_entry=m))
    assert got.meter_entry.config.pir == 20
    r = pb.RegisterEntry(register_id=index.id("registers", "I.r"))
    assert code_of(lambda: codec.write(upd("MODIFY", register_entry=r))) == "UNIMPLEMENTED"
    pre = pb.PacketReplicationEngineEntry()
    pre.multicast_group_entry.multicast_group_id = 5
    pre.multicast_group_entry.replicas.add(egress_port=1, instance=0)
    pre.multicast_group_entry.replicas.add(port=b"\x02", instance=1)
    codec.write(upd("INSERT", packet_replication_engine_entry=pre))
    assert state.pre.replicas(5) == [(1, 0), (2, 1)]
    assert code_of(lambda: codec.write(upd("INSERT", packet_replication_engine_entry=pre))) \
        == "ALREADY_EXISTS"
    codec.write(upd("DELETE", packet_replication_engine_entry=pre))
    assert code_of(lambda: codec.write(upd("MODIFY", packet_replication_engine_entry=pre))) \
        == "NOT_FOUND"
    sent = []
    codec.attach_digests(sent.append)
    did = index.id("digests", "learn_t")
    state.digests.emit("learn_t", (1, 2))  # not configured: dropped
    d = pb.DigestEntry(digest_id=did)
    d.config.max_list_size = 2
    d.config.max_timeout_ns = 10**9
    codec.write(upd("INSERT", digest_entry=d))
    state.digests.emit("learn_t", (0xA, 1))
    state.digests.emit("learn_t", (0xB, 2))
    assert len(sent) == 1 and len(sent[0].digest.data) == 2
    assert [m.bitstring for m in sent[0].digest.data[1].struct.members] == [b"\x0b", b"\x02"]


def test_packet_io_framing(env):
    _, _, _, p4info = env
    io = PacketIO(p4info)
    out_id = next(m for m in p4info.controller_packet_metadata
                  if m.preamble.name == "packet_out").metadata[0].id
    msg = pb.PacketOut(payload=b"payload")
    msg.metadata.add(metadata_id=out_id, value=b"\x01\x05")  # port 261
    assert io.frame_from_packet_out(msg) == bytes([261 >> 1, (261 & 1) << 7]) + b"payload"
    bad = pb.PacketOut(payload=b"x")
    bad.metadata.add(metadata_id=99, value=b"\x01")
    with pytest.raises(RuntimeApiError, match="Unknown metadata id"):
        io.frame_from_packet_out(bad)
    pin = io.packet_in_from_frame(bytes([0x80, 0x80]) + b"data")  # ingress_port 257, pad 0
    assert [m.value for m in pin.metadata] == [b"\x01\x01", b"\x00"]
    assert pin.payload == b"data"


def test_one_shot_selector_programming_reads_back(env):
    codec, index, state, _ = env
    te = pb.TableEntry(table_id=index.id("tables", "I.lb"))
    te.match.add(field_id=1).exact.value = b"\x07"
    for port, weight in ((2, 1), (3, 2)):
        a = te.action.action_profile_action_set.action_profile_actions.add(weight=weight)
        a.action.action_id = index.id("actions", "I.forward")
        a.action.params.add(param_id=1, value=bytes([port]))
        a.watch_port = bytes([port])
    codec.write(upd("INSERT", table_entry=te))
    [got] = codec.read(pb.Entity(table_entry=pb.TableEntry(table_id=te.table_id)))
    actions = got.table_entry.action.action_profile_action_set.action_profile_actions
    assert [(a.weight, a.watch_port, a.action.params[0].value) for a in actions] == [
        (1, b"\x02", b"\x02"), (2, b"\x03", b"\x03")]
    # the hidden group is not a P4Runtime group
    assert codec.read(pb.Entity(action_profile_group=pb.ActionProfileGroup())) == []
    member = pb.ActionProfileMember(action_profile_id=index.id("action_profiles", "I.sel"),
                                    member_id=1)
    member.action.action_id = index.id("actions", "I.forward")
    member.action.params.add(param_id=1, value=b"\x02")
    assert code_of(lambda: codec.write(upd("INSERT", action_profile_member=member))) == \
        "INVALID_ARGUMENT"  # mixing one-shot and manual programming


def test_direct_meter_and_direct_counter_entries(env):
    codec, index, state, _ = env
    te = fwd_entry(index, b"\x01")
    codec.write(upd("INSERT", table_entry=te))
    dm = pb.DirectMeterEntry(table_entry=te)
    dm.config.cir, dm.config.cburst, dm.config.pir, dm.config.pburst = 1000, 100, 2000, 100
    codec.write(upd("MODIFY", direct_meter_entry=dm))
    [got] = codec.read(pb.Entity(direct_meter_entry=pb.DirectMeterEntry(table_entry=te)))
    assert got.direct_meter_entry.config.pir == 2000
    dc = pb.DirectCounterEntry(table_entry=te)
    dc.data.packet_count, dc.data.byte_count = 3, 300
    codec.write(upd("MODIFY", direct_counter_entry=dc))
    assert state.tables["I.fwd"].lookup((1,)).direct_counter == [3, 300]
    missing = pb.DirectCounterEntry(table_entry=fwd_entry(index, b"\x05"))
    assert code_of(lambda: codec.write(upd("MODIFY", direct_counter_entry=missing))) == \
        "NOT_FOUND"
    assert code_of(lambda: codec.write(upd("INSERT", direct_counter_entry=dc))) == \
        "INVALID_ARGUMENT"


def test_clone_sessions(env):
    codec, _, state, _ = env
    pre = pb.PacketReplicationEngineEntry()
    s = pre.clone_session_entry
    s.session_id = 100
    s.replicas.add(egress_port=3, instance=1)
    codec.write(upd("INSERT", packet_replication_engine_entry=pre))
    assert state.pre.clone_session(100).replicas == ((3, 1),)
    assert code_of(lambda: codec.write(upd("INSERT", packet_replication_engine_entry=pre))) \
        == "ALREADY_EXISTS"
    s.replicas[0].egress_port = 4
    codec.write(upd("MODIFY", packet_replication_engine_entry=pre))
    [got] = codec.read(pb.Entity(packet_replication_engine_entry=pb.PacketReplicationEngineEntry(
        clone_session_entry=pb.CloneSessionEntry())))
    assert got.packet_replication_engine_entry.clone_session_entry.replicas[0].egress_port == 4
    s.packet_length_bytes = 100  # truncation: BMv2 cannot
    assert code_of(lambda: codec.write(upd("MODIFY", packet_replication_engine_entry=pre))) \
        == "UNIMPLEMENTED"
    codec.write(upd("DELETE", packet_replication_engine_entry=pre))
    assert state.pre.clone_session(100) is None
    dup = pb.PacketReplicationEngineEntry()
    dup.multicast_group_entry.multicast_group_id = 9
    dup.multicast_group_entry.replicas.add(egress_port=1)
    dup.multicast_group_entry.replicas.add(egress_port=1)
    assert code_of(lambda: codec.write(upd("INSERT", packet_replication_engine_entry=dup))) \
        == "INVALID_ARGUMENT"


def test_digest_samples_suppressed_until_acked(env):
    codec, index, state, _ = env
    sent = []
    codec.attach_digests(sent.append)
    did = index.id("digests", "learn_t")
    d = pb.DigestEntry(digest_id=did)
    d.config.max_list_size = 1
    d.config.ack_timeout_ns = 60 * 10**9
    codec.write(upd("INSERT", digest_entry=d))
    for _ in range(3):
        state.digests.emit("learn_t", (0xA, 1))  # the same sample: reported once
    state.digests.emit("learn_t", (0xB, 1))
    assert [m.digest.list_id for m in sent] == [1, 2]
    codec.digests.ack(did, 1)
    state.digests.emit("learn_t", (0xA, 1))  # acknowledged: reported again
    state.digests.emit("learn_t", (0xB, 1))  # list 2 not acknowledged: still suppressed
    assert [m.digest.list_id for m in sent] == [1, 2, 3]
    assert sent[2].digest.data[0].struct.members[0].bitstring == b"\x0a"
    codec.write(upd("DELETE", digest_entry=d))
    assert code_of(lambda: codec.read(pb.Entity(digest_entry=d))) == "NOT_FOUND"
