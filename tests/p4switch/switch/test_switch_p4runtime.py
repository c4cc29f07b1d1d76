"""P4Runtime server: arbitration, every error code PI uses, entities read back, digests,
multicast and watch-port failover, on a running p4switch that keeps forwarding throughout."""

import queue
import time

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2 as pb
from sw_frames import eth, mac
from sw_netenv import drain, raw_socket, recv_frames
from sw_p4rt import PROGRAMS, Client, compile_program, load_p4info, update
from sw_proc import SwitchProcess

from p4switch.p4info.index import P4InfoIndex

pytestmark = pytest.mark.root


@pytest.fixture(params=["python", "c"])
def rig(net, tmp_path, request):
    """Switch with ports 1..3 to hosts h1..h3, the test program pushed by a primary client;
    its pipeline the default one, or the C data plane."""
    p4info_path, config_path = compile_program(PROGRAMS / "switch_test.p4", tmp_path)
    hosts = [net.host(f"h{i}") for i in (1, 2, 3)]
    ifs = [net.link(h, "eth0", i + 1) for i, h in enumerate(hosts)]
    socks = [raw_socket(h, "eth0") for h in hosts]
    args = [a for i, name in enumerate(ifs) for a in ("-i", f"{i + 1}@{name}")]
    with SwitchProcess([*args, "--pipeline", request.param, "--no-p4", "--", "--cpu-port",
                        "510"]) as sw:
        p4info = load_p4info(p4info_path)
        client = Client(sw.addr, election=10)
        assert client.next("arbitration").status.code == code_pb2.OK
        client.set_pipeline(p4info, config_path.read_bytes())
        assert (sw.command("show_pipeline") == "c") == (request.param == "c")
        rig = Rig(sw, client, P4InfoIndex(p4info), socks, hosts, ifs, net)
        yield rig
        client.close()
        for s in socks:
            s.close()


class Rig:
    def __init__(self, sw, client, index, socks, hosts, ifs, net):
        self.sw, self.client, self.index = sw, client, index
        self.socks, self.hosts, self.ifs, self.net = socks, hosts, ifs, net

    def id(self, kind, name):
        return self.index.id(kind, name)

    def fwd_entry(self, in_port: int, out_port: int | None, action="TestIngress.forward"):
        te = pb.TableEntry(table_id=self.id("tables", "TestIngress.fwd"))
        te.match.add(field_id=1).exact.value = bytes([in_port])
        te.action.action.action_id = self.id("actions", action)
        if out_port is not None:
            te.action.action.params.add(param_id=1, value=out_port.to_bytes(2, "big"))
        return te

    def forwards(self, src: int, dst: int) -> bool:
        """A frame sent on host src's link comes out of host dst's link."""
        drain(self.socks[dst - 1])
        frame = eth(mac(dst), mac(src), 0x0800, b"still forwarding " + bytes([src]))
        self.socks[src - 1].send(frame)
        return recv_frames(self.socks[dst - 1], 2.0, count=1) == [frame]


def test_arbitration_primary_backup_and_duplicates(rig):
    c1 = rig.client  # election 10, primary
    c2 = Client(rig.sw.addr, election=20)
    arb = c2.next("arbitration")
    assert arb.status.code == code_pb2.OK and arb.election_id.low == 20
    demoted = c1.next("arbitration")
    assert demoted.status.code == code_pb2.ALREADY_EXISTS and demoted.election_id.low == 20
    with pytest.raises(grpc.RpcError) as err:
        c1.write(update("INSERT", table_entry=rig.fwd_entry(1, 2)))
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    c2.write(update("INSERT", table_entry=rig.fwd_entry(1, 2)))
    assert rig.forwards(1, 2)
    # a third client with a taken election id: INVALID_ARGUMENT on its stream
    c3 = Client(rig.sw.addr, election=20)
    with pytest.raises(EOFError):
        c3.next("arbitration")
    assert c3.stream_error.code() == grpc.StatusCode.INVALID_ARGUMENT
    # a backup's packet-out is ignored, reads are allowed
    assert len(c1.read(pb.Entity(table_entry=pb.TableEntry()))) >= 1
    # the primary leaves: the backup is promoted
    c2.close()
    promoted = c1.next("arbitration")
    assert promoted.status.code == code_pb2.OK and promoted.election_id.low == 10
    c1.write(update("INSERT", table_entry=rig.fwd_entry(2, 1)))
    assert rig.forwards(2, 1)
    c3.close()


def test_every_error_code_while_forwarding_continues(rig):
    c = rig.client
    c.write(update("INSERT", table_entry=rig.fwd_entry(1, 2)))
    assert rig.forwards(1, 2)
    fwd = rig.fwd_entry(1, 2)
    bad_table = pb.TableEntry(table_id=0x02FFFFFF)
    too_big = rig.fwd_entry(3, 2)
    too_big.match[0].exact.value = b"\x02\x00"  # 512 does not fit in 9 bits
    no_key = rig.fwd_entry(3, 2)
    del no_key.match[:]
    acl_id = rig.id("tables", "TestIngress.acl")
    mask0 = pb.TableEntry(table_id=acl_id, priority=1)
    t = mask0.match.add(field_id=1).ternary
    t.value, t.mask = b"\x00", b"\x00"
    mask0.action.action.action_id = rig.id("actions", "NoAction")
    no_prio = pb.TableEntry(table_id=acl_id)
    t = no_prio.match.add(field_id=1).ternary
    t.value, t.mask = b"\x01", b"\xff"
    no_prio.action.action.action_id = rig.id("actions", "NoAction")
    inverted = pb.TableEntry(table_id=acl_id, priority=3)
    r = inverted.match.add(field_id=2).range
    r.low, r.high = b"\x09", b"\x08"
    inverted.action.action.action_id = rig.id("actions", "NoAction")
    missing_param = rig.fwd_entry(4, None)
    guard_default = pb.TableEntry(table_id=rig.id("tables", "TestIngress.guard"),
                                  is_default_action=True)
    guard_default.action.action.action_id = rig.id("actions", "TestIngress.drop")
    prof = rig.index.p4info.action_profiles[0].preamble.id
    member = pb.ActionProfileMember(action_profile_id=prof, member_id=1)
    member.action.action_id = rig.id("actions", "TestIngress.forward")
    member.action.params.add(param_id=1, value=b"\x02")
    too_big_group = pb.ActionProfileGroup(action_profile_id=prof, group_id=7, max_size=1)
    too_big_group.members.add(member_id=1, weight=2)
    zero_weight = pb.ActionProfileGroup(action_profile_id=prof, group_id=8)
    zero_weight.members.add(member_id=1, weight=0)
    counter_oob = pb.CounterEntry(counter_id=rig.id("counters", "TestIngress.rx_port_counter"))
    counter_oob.index.index = 600
    register = pb.RegisterEntry(register_id=rig.id("registers", "TestIngress.scratch"))
    register.index.index = 0
    mc0 = pb.PacketReplicationEngineEntry()
    mc0.multicast_group_entry.multicast_group_id = 0

    results = c.write_errors(
        update("INSERT", table_entry=fwd),                        # 0 duplicate
        update("MODIFY", table_entry=rig.fwd_entry(9, 2)),         # 1 missing
        update("DELETE", table_entry=rig.fwd_entry(10, 2)),        # 2 missing
        update("INSERT", table_entry=bad_table),                   # 3 unknown id
        update("INSERT", table_entry=too_big),                     # 4 value too wide
        update("INSERT", table_entry=no_key),                      # 5 exact field missing
        update("INSERT", table_entry=mask0),                       # 6 ternary mask 0
        update("INSERT", table_entry=no_prio),                     # 7 priority 0
        update("INSERT", table_entry=inverted),                    # 8 low > high
        update("INSERT", table_entry=missing_param),               # 9 parameter missing
        update("MODIFY", table_entry=guard_default),               # 10 const default
        update("INSERT", action_profile_member=member),            # 11 ok
        update("INSERT", action_profile_member=member),            # 12 duplicate member
        update("DELETE", action_profile_member=pb.ActionProfileMember(
            action_profile_id=prof, member_id=99)),                # 13 unknown member
        update("INSERT", action_profile_group=too_big_group),      # 14 over max group size
        update("INSERT", action_profile_group=zero_weight),         # 15 weight 0
        update("MODIFY", counter_entry=counter_oob),               # 16 index out of range
        update("MODIFY", register_entry=register),                 # 17 registers (BMv2)
        update("INSERT", packet_replication_engine_entry=mc0),     # 18 group 0
        update("INSERT", table_entry=rig.fwd_entry(2, 1)),         # 19 ok
    )
    codes = [code for code, _ in results]
    assert codes == [
        "ALREADY_EXISTS", "NOT_FOUND", "NOT_FOUND", "INVALID_ARGUMENT", "INVALID_ARGUMENT",
        "INVALID_ARGUMENT", "INVALID_ARGUMENT", "INVALID_ARGUMENT", "INVALID_ARGUMENT",
        "INVALID_ARGUMENT", "PERMISSION_DENIED", "OK", "ALREADY_EXISTS", "NOT_FOUND",
        "RESOURCE_EXHAUSTED", "INVALID_ARGUMENT", "OUT_OF_RANGE", "UNIMPLEMENTED",
        "INVALID_ARGUMENT", "OK"], results
    assert all(msg for code, msg in results if code != "OK")
    # whole-request errors
    req = pb.WriteRequest(device_id=0, atomicity=pb.WriteRequest.DATAPLANE_ATOMIC)
    req.election_id.low = 10
    with pytest.raises(grpc.RpcError) as err:
        c.stub.Write(req)
    assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED
    with pytest.raises(grpc.RpcError) as err:
        c.read(pb.Entity(counter_entry=counter_oob))
    assert err.value.code() == grpc.StatusCode.OUT_OF_RANGE
    with pytest.raises(grpc.RpcError) as err:
        c.stub.Write(pb.WriteRequest(device_id=5))
    assert err.value.code() == grpc.StatusCode.NOT_FOUND
    # a P4Info that does not match the device config is refused
    p4info = pb.ForwardingPipelineConfig().p4info
    p4info.CopyFrom(rig.index.p4info)
    p4info.tables[0].preamble.name = "Other.table"
    with pytest.raises(grpc.RpcError) as err:
        c.set_pipeline(p4info, b"")
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "does not match" in err.value.details()
    assert rig.sw.alive() and rig.forwards(1, 2) and rig.forwards(2, 1)


def test_reads_return_canonical_entities(rig):
    c = rig.client
    c.write(update("INSERT", table_entry=rig.fwd_entry(1, 2)))
    acl = pb.TableEntry(table_id=rig.id("tables", "TestIngress.acl"), priority=5)
    t = acl.match.add(field_id=1).ternary
    t.value, t.mask = b"\x00\x00\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\xff"
    r = acl.match.add(field_id=2).range
    r.low, r.high = b"\x08\x00", b"\x08\x06"
    acl.action.action.action_id = rig.id("actions", "TestIngress.drop")
    c.write(update("INSERT", table_entry=acl))
    entries = c.read(pb.Entity(table_entry=pb.TableEntry()))
    by_table = {e.table_entry.table_id: e.table_entry for e in entries}
    fwd = by_table[rig.id("tables", "TestIngress.fwd")]
    assert fwd.match[0].exact.value == b"\x01"
    assert fwd.action.action.params[0].value == b"\x02"
    got = by_table[rig.id("tables", "TestIngress.acl")]
    assert got.priority == 5
    assert (got.match[0].ternary.value, got.match[0].ternary.mask) == (b"\x01", b"\xff")
    assert (got.match[1].range.low, got.match[1].range.high) == (b"\x08\x00", b"\x08\x06")
    # default entry read, direct counter after traffic
    assert rig.forwards(1, 2)
    d = c.read(pb.Entity(direct_counter_entry=pb.DirectCounterEntry(table_entry=pb.TableEntry(
        table_id=rig.id("tables", "TestIngress.fwd")))))
    assert [x.direct_counter_entry.data.packet_count for x in d] == [1]
    default = c.read(pb.Entity(table_entry=pb.TableEntry(
        table_id=rig.id("tables", "TestIngress.fwd"), is_default_action=True)))
    assert default[0].table_entry.action.action.action_id == rig.id("actions", "TestIngress.drop")


def test_digests_arrive_once_configured(rig):
    c = rig.client
    c.write(update("INSERT", table_entry=rig.fwd_entry(1, 2)))
    digest_id = rig.index.p4info.digests[0].preamble.id
    assert rig.forwards(1, 2)  # not configured yet: dropped
    cfg = pb.DigestEntry(digest_id=digest_id)
    cfg.config.max_list_size = 1
    c.write(update("INSERT", digest_entry=cfg))
    assert rig.forwards(1, 2)
    digest = c.next("digest")
    assert digest.digest_id == digest_id
    members = digest.data[0].struct.members
    assert [m.bitstring for m in members] == [mac(1).lstrip(b"\x00"), b"\x01"]
    assert c.write_errors(update("INSERT", digest_entry=cfg))[0][0] == "ALREADY_EXISTS"
    # with an ack timeout, a sample is not reported again until its list is acknowledged
    cfg.config.ack_timeout_ns = 60 * 10**9
    c.write(update("MODIFY", digest_entry=cfg))
    assert rig.forwards(1, 2)
    first = c.next("digest")
    assert rig.forwards(1, 2)
    with pytest.raises(queue.Empty):
        c.next("digest", timeout=0.5)
    c.ack_digest(digest_id, first.list_id)
    deadline = time.monotonic() + 10
    while True:  # the ack travels on the stream, the packets on the wire: retry until it counts
        assert rig.forwards(1, 2)
        try:
            again = c.next("digest", timeout=0.3)
            break
        except queue.Empty:
            assert time.monotonic() < deadline, "no digest after the ack"
    assert again.list_id == first.list_id + 1


def test_multicast_group_replicates(rig):
    c = rig.client
    pre = pb.PacketReplicationEngineEntry()
    g = pre.multicast_group_entry
    g.multicast_group_id = 1
    g.replicas.add(egress_port=2, instance=0)
    g.replicas.add(egress_port=3, instance=0)
    c.write(update("INSERT", packet_replication_engine_entry=pre))
    for s in rig.socks:
        drain(s)
    frame = eth(b"\xff" * 6, mac(1), 0x0800, b"flood")
    rig.socks[0].send(frame)
    assert recv_frames(rig.socks[1], 2.0, count=1) == [frame]
    assert recv_frames(rig.socks[2], 2.0, count=1) == [frame]
    read = c.read(pb.Entity(packet_replication_engine_entry=pb.PacketReplicationEngineEntry(
        multicast_group_entry=pb.MulticastGroupEntry(multicast_group_id=1))))
    assert len(read[0].packet_replication_engine_entry.multicast_group_entry.replicas) == 2


def test_watch_port_failover_when_an_interface_goes_down(rig):
    c = rig.client
    prof = rig.index.p4info.action_profiles[0].preamble.id
    fwd_id = rig.id("actions", "TestIngress.forward")
    group = pb.ActionProfileGroup(action_profile_id=prof, group_id=1)
    for member_id, port in ((1, 2), (2, 3)):
        m = pb.ActionProfileMember(action_profile_id=prof, member_id=member_id)
        m.action.action_id = fwd_id
        m.action.params.add(param_id=1, value=bytes([port]))
        c.write(update("INSERT", action_profile_member=m))
        group.members.add(member_id=member_id, weight=1, watch_port=bytes([port]))
    c.write(update("INSERT", action_profile_group=group))
    te = pb.TableEntry(table_id=rig.id("tables", "TestIngress.lb"))
    te.match.add(field_id=1).exact.value = mac(100)
    te.action.action_profile_group_id = 1
    c.write(update("INSERT", table_entry=te))

    def spread() -> tuple[int, int]:
        for s in rig.socks[1:]:
            drain(s)
        for i in range(64):  # the source MAC feeds the selector hash
            rig.socks[0].send(eth(mac(100), mac(1000 + i), 0x0800, b"ecmp"))
        got2 = recv_frames(rig.socks[1], 1.0, count=64)
        got3 = recv_frames(rig.socks[2], 0.5, count=64)
        return len(got2), len(got3)

    n2, n3 = spread()
    assert n2 + n3 == 64 and n2 > 0 and n3 > 0
    rig.net.set_up("eth0", False, ns=rig.hosts[1])  # port 2 loses its carrier
    deadline = time.monotonic() + 10  # a wait for the switch, not a speed bound
    while True:
        n2, n3 = spread()
        if n3 == 64 or time.monotonic() > deadline:
            break
    assert (n2, n3) == (0, 64)
    rig.net.set_up("eth0", True, ns=rig.hosts[1])
    deadline = time.monotonic() + 10  # a wait for the switch, not a speed bound
    while True:
        n2, n3 = spread()
        if n2 > 0 or time.monotonic() > deadline:
            break
    assert n2 > 0 and n2 + n3 == 64


def test_pipeline_config_actions_and_get(rig, tmp_path):
    c = rig.client
    Req = pb.SetForwardingPipelineConfigRequest
    device_config = (tmp_path / "switch_test.p4switch.json").read_bytes()
    c.write(update("INSERT", table_entry=rig.fwd_entry(1, 2)))
    # VERIFY and VERIFY_AND_SAVE leave the running pipeline (and its entries) alone
    c.set_pipeline(rig.index.p4info, device_config, action=Req.VERIFY)
    c.set_pipeline(rig.index.p4info, device_config, action=Req.VERIFY_AND_SAVE)
    assert rig.forwards(1, 2)
    assert len(c.read(pb.Entity(table_entry=pb.TableEntry()))) == 1
    c.set_pipeline(rig.index.p4info, b"", action=Req.COMMIT)  # the saved one: fresh state
    assert c.read(pb.Entity(table_entry=pb.TableEntry())) == []
    with pytest.raises(grpc.RpcError) as err:
        c.set_pipeline(rig.index.p4info, b"", action=Req.COMMIT)  # nothing saved any more
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    # RECONCILE_AND_COMMIT keeps the forwarding state
    c.write(update("INSERT", table_entry=rig.fwd_entry(1, 2)))
    c.set_pipeline(rig.index.p4info, device_config, action=Req.RECONCILE_AND_COMMIT)
    assert len(c.read(pb.Entity(table_entry=pb.TableEntry()))) == 1
    assert rig.forwards(1, 2)
    # VERIFY_AND_COMMIT with a cookie; Get returns what was set
    req = Req(device_id=0, action=Req.VERIFY_AND_COMMIT)
    req.election_id.low = 10
    req.config.p4info.CopyFrom(rig.index.p4info)
    req.config.p4_device_config = device_config
    req.config.cookie.cookie = 42
    c.stub.SetForwardingPipelineConfig(req)
    Get = pb.GetForwardingPipelineConfigRequest
    got = c.stub.GetForwardingPipelineConfig(Get(device_id=0, response_type=Get.ALL)).config
    assert got.p4info == rig.index.p4info and got.p4_device_config == device_config
    assert got.cookie.cookie == 42
    cookie_only = c.stub.GetForwardingPipelineConfig(
        Get(device_id=0, response_type=Get.COOKIE_ONLY)).config
    assert cookie_only.cookie.cookie == 42 and not cookie_only.HasField("p4info")
    bad = pb.ForwardingPipelineConfig().p4info
    with pytest.raises(grpc.RpcError) as err:
        c.set_pipeline(bad, b"not a device config")
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert rig.sw.alive()
