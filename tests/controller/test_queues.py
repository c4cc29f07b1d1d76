"""Queue settings through the runtime CLI of a running p4switch."""

from __future__ import annotations

import pytest

from controller.queues import queue_commands, run_commands
from targets import P4SWITCH, RuntimeCliError
from tests.controller.switchproc import p4switch


def test_queue_commands():
    assert queue_commands(depth=16) == ["set_queue_depth 16"]
    assert queue_commands(depth=8, rate_pps=100, ports=[1, 2]) == [
        "set_queue_depth 8 1", "set_queue_depth 8 2", "set_queue_rate 100 1",
        "set_queue_rate 100 2"]
    with pytest.raises(ValueError, match="queue depth must be an integer >= 0"):
        queue_commands(depth=-1)


def test_commands_reach_the_switch_and_errors_are_reported():
    with p4switch(device_id=4) as sw:
        run_commands(P4SWITCH, sw.thrift_port, queue_commands(depth=16, rate_pps=500))
        with pytest.raises(RuntimeCliError, match="Error"):
            run_commands(P4SWITCH, sw.thrift_port, ["set_queue_depth lots"])
