"""The P4Runtime client against a real p4switch process."""

from __future__ import annotations

import pytest

from controller.p4rt import P4RuntimeClient, P4RuntimeError
from tests.controller.switchproc import free_port, p4switch


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
    assert err.value.code == "FAILED_PRECONDITION"
    assert "device 99" in str(err.value)


def test_no_pipeline_yet(switch):
    with P4RuntimeClient(switch.address, 3, timeout=5) as client:
        assert client.pipeline_cookie() is None
        with pytest.raises(P4RuntimeError) as err:
            client.read_counter(0x12000001)
        assert err.value.code == "FAILED_PRECONDITION"
        assert err.value.operation == "Read"


def test_nothing_listening_is_a_clear_error():
    port = free_port()
    with pytest.raises(P4RuntimeError, match=f"no gRPC server answered at 127.0.0.1:{port}"):
        P4RuntimeClient(f"127.0.0.1:{port}", 1, timeout=0.5).connect()
