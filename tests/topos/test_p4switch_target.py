"""The real p4switch target in a fabric: every switch answers P4Runtime on its planned gRPC port
with its planned device, and stops cleanly on SIGTERM."""

from __future__ import annotations

import grpc
import pytest
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from topos_helpers import plan_interfaces, root_interfaces, shifted

from targets import P4SWITCH
from topos import build_fabric
from topos.mininet import FabricNetwork
from topos.mininet.runstate import load_all

pytestmark = [pytest.mark.root, pytest.mark.mininet,
              pytest.mark.skipif(not P4SWITCH.available(), reason="p4switch not installed")]


def test_leafspine_on_p4switch(tmp_path) -> None:
    spec = shifted(build_fabric("leafspine"))
    with FabricNetwork(spec, P4SWITCH, run_dir=tmp_path, log_dir=tmp_path / "logs") as net:
        for sw in spec.switches:
            with grpc.insecure_channel(f"127.0.0.1:{sw.grpc_port}") as channel:
                stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
                caps = stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=5)
                assert caps.p4runtime_api_version
                # No pipeline yet (--no-p4): the device answers, but refuses reads.
                req = p4runtime_pb2.ReadRequest(device_id=sw.device_id)
                req.entities.add().table_entry.table_id = 0
                with pytest.raises(grpc.RpcError) as err:
                    list(stub.Read(req, timeout=5))
                assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert net.switch("spine1").stop_target() == 0
    assert root_interfaces(plan_interfaces(spec)) == []
    assert load_all(tmp_path) == []
