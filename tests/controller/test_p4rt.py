"""The P4Runtime client (and a switch's sync) against a real p4switch process."""

from __future__ import annotations

import pytest
from p4.v1 import p4runtime_pb2

from controller.intent import Intent
from controller.p4rt import P4RuntimeClient, P4RuntimeError
from controller.routes import compute_routes
from controller.schema import Schema, encode
from controller.sync import ControllerError, controller_error, sync_switch
from tests.controller.fabrics import ecmp_pipeline
from tests.controller.switchproc import p4switch
from tests.ports import loose_port
from topos import build_fabric


@pytest.fixture(scope="module")
def switch():
    with p4switch(device_id=3) as sw:
        yield sw


def test_primary_then_backup_then_duplicate(switch):
    with P4RuntimeClient(switch.address, 3, election_id=(0, 5), timeout=5) as primary:
        with pytest.raises(P4RuntimeError) as backup:
            P4RuntimeClient(switch.address, 3, election_id=(0, 4), timeout=5).connect()
        assert backup.value.code == "ALREADY_EXISTS"
        assert "the primary holds (0, 5)" in str(backup.value)
        with pytest.raises(P4RuntimeError) as dup:
            P4RuntimeClient(switch.address, 3, election_id=(0, 5), timeout=5).connect()
        assert dup.value.code == "INVALID_ARGUMENT"
        assert primary.stream_closed is None
    # the primary left: the same election id can be primary again
    P4RuntimeClient(switch.address, 3, election_id=(0, 5), timeout=5).connect().close()


def test_wrong_device_id_is_refused(switch):
    with pytest.raises(P4RuntimeError) as err:
        P4RuntimeClient(switch.address, 99, timeout=5).connect()
    assert err.value.code == "NOT_FOUND"  # spec §5.3: a first arbitration for no such device
    assert "device 99" in str(err.value)


def test_no_pipeline_yet(switch):
    with P4RuntimeClient(switch.address, 3, timeout=5) as client:
        assert client.pipeline_cookie() is None
        with pytest.raises(P4RuntimeError) as err:
            client.read_counter(0x12000001)
        assert err.value.code == "FAILED_PRECONDITION"
        assert err.value.operation == "Read"


def test_nothing_listening_is_a_clear_error():
    port = loose_port()
    with pytest.raises(P4RuntimeError, match=f"no gRPC server answered at 127.0.0.1:{port}"):
        P4RuntimeClient(f"127.0.0.1:{port}", 1, timeout=0.5).connect()


def test_write_errors_name_the_switch_the_entry_and_the_reason():
    pipeline = ecmp_pipeline()
    intent = Intent(Schema(pipeline.p4info))
    routes = compute_routes(build_fabric("leafspine"))["leaf0"]
    with p4switch(device_id=5) as sw, P4RuntimeClient(sw.address, 5, timeout=10) as client:
        report = sync_switch(client, intent, routes, pipeline)
        assert report.pipeline_pushed and report.inserted > 0
        # an LPM entry with host bits set, and one that exists already
        bad = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
        entry = bad.entity.table_entry
        entry.table_id = intent.lpm.preamble.id
        entry.match.add(field_id=intent.lpm_field.id).lpm.value = encode(0x0A000001, 32)
        entry.match[0].lpm.prefix_len = 24
        entry.action.action_profile_group_id = 1
        dup = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
        dup.entity.CopyFrom(bad.entity)
        dup.entity.table_entry.match[0].lpm.value = encode(0x0A000001, 32)
        dup.entity.table_entry.match[0].lpm.prefix_len = 32
        with pytest.raises(P4RuntimeError) as err:
            client.write([bad, dup])
        text = str(controller_error("leaf0", intent, err.value))
        assert isinstance(controller_error("leaf0", intent, err.value), ControllerError)
        assert text.startswith("switch leaf0: 2 update(s) failed:")
        assert ("INSERT FabricIngress.routing.ipv4_lpm entry hdr.ipv4.dst_addr=10.0.0.1/24 "
                "-> action_profile_group_id: INVALID_ARGUMENT") in text
        assert ("INSERT FabricIngress.routing.ipv4_lpm entry hdr.ipv4.dst_addr=10.0.0.1/32 "
                "-> action_profile_group_id: ALREADY_EXISTS") in text
        # and the device still holds exactly the routes: a re-sync writes nothing
        assert sync_switch(client, intent, routes, pipeline).writes == 0
