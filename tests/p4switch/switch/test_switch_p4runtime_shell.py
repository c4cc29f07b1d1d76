"""p4runtime-shell, unchanged, drives a running p4switch: pipeline, entries, reads, packet I/O."""

import pytest
from sw_frames import eth, mac
from sw_netenv import drain, raw_socket, recv_frames
from sw_p4rt import PROGRAMS, compile_program
from sw_proc import SwitchProcess

pytestmark = pytest.mark.root


@pytest.fixture
def shell():
    import p4runtime_sh.shell as sh

    yield sh
    if sh.client is not None:
        sh.teardown()


def test_p4runtime_shell_programs_forwards_reads_and_does_packet_io(net, tmp_path, shell):
    sh = shell
    p4info, config = compile_program(PROGRAMS / "switch_test.p4", tmp_path)
    h1, h2 = net.host("h1"), net.host("h2")
    p1, p2 = net.link(h1, "eth0", 1), net.link(h2, "eth0", 2)
    s1, s2 = raw_socket(h1, "eth0"), raw_socket(h2, "eth0")
    with SwitchProcess(["-i", f"1@{p1}", "-i", f"2@{p2}", "--device-id", "1", "--no-p4",
                        "--", "--cpu-port", "510"]) as sw:
        sh.setup(device_id=1, grpc_addr=sw.addr, election_id=(0, 1),
                 config=sh.FwdPipeConfig(str(p4info), str(config)), verbose=False)
        for src, dst in ((1, 2), (2, 1)):
            te = sh.TableEntry("TestIngress.fwd")(action="TestIngress.forward")
            te.match["standard_metadata.ingress_port"] = str(src)
            te.action["port"] = str(dst)
            te.insert()
        smac = sh.TableEntry("TestIngress.smac")(action="NoAction")
        smac.match["hdr.ethernet.src_addr"] = "02:00:00:00:00:01"
        smac.insert()

        # the entries read back as written (canonical byte strings)
        read = {(e.match["standard_metadata.ingress_port"].exact.value,
                 e.action["port"].value) for e in sh.TableEntry("TestIngress.fwd").read()}
        assert read == {(b"\x01", b"\x02"), (b"\x02", b"\x01")}

        drain(s2)
        frame = eth(mac(2), mac(1), 0x0800, b"hello p4switch")
        s1.send(frame)
        got = recv_frames(s2, 2.0, count=1)
        assert got == [frame]

        entries = list(sh.CounterEntry("TestIngress.rx_port_counter").read())
        assert len(entries) == 512
        by_index = {c.index: (c.packet_count, c.byte_count) for c in entries}
        assert by_index[1] == (1, len(frame)) and by_index[2] == (0, 0)

        # packet-out: the controller names the port in the packet_out header
        out_frame = eth(mac(2), mac(9), 0x0800, b"from the controller")
        sh.PacketOut(payload=out_frame, egress_port="2").send()
        assert recv_frames(s2, 2.0, count=1) == [out_frame]

        # packet-in: port 1 traffic goes to the CPU port
        te = sh.TableEntry("TestIngress.fwd")(action="TestIngress.to_cpu")
        te.match["standard_metadata.ingress_port"] = "1"
        te.modify()
        packet_in = sh.PacketIn()
        s1.send(frame)
        msgs = list(packet_in.sniff(timeout=2))
        assert len(msgs) == 1
        pin = msgs[0].packet
        assert pin.payload == frame
        assert [(m.metadata_id, m.value) for m in pin.metadata] == [(1, b"\x01"), (2, b"\x00")]
        s1.close()
        s2.close()
        sh.teardown()
        assert sw.alive()
