"""The one runtime-CLI client against real switches of every target: p4switch's own channel and
BMv2's long-lived simple_switch_CLI. BMv2 cases skip where BMv2 is not installed."""

from __future__ import annotations

import os
import signal

import pytest

from experiments.framework.telemetry import REGISTERS, parse_cli_values, telemetry_cell
from targets import BMV2, P4SWITCH, RuntimeCliError
from targets.runtime_cli import ProcessCli
from tests.ports import loose_port
from tests.targets.conftest import Running

pytestmark = pytest.mark.timeout(180)
DEPTH_LAST = REGISTERS["depth_last"]


def test_commands_batches_and_errors(switch: Running) -> None:
    with switch.target.cli(switch.model.thrift_port) as cli:
        assert cli.command("set_queue_depth 16 1") == ""
        cell = telemetry_cell(1, 3)
        cli.command(f"register_write {DEPTH_LAST} {cell} 42")
        out = cli.batch([f"register_read {DEPTH_LAST} {cell}",
                         f"register_read {DEPTH_LAST} {cell + 1}"])
        assert parse_cli_values(out) == {f"{DEPTH_LAST}[{cell}]": 42,
                                         f"{DEPTH_LAST}[{cell + 1}]": 0}
        with pytest.raises(RuntimeCliError,
                           match=rf"'set_queue_rate fast 1' on port {switch.model.thrift_port}: "
                                 r".*Error"):
            cli.command("set_queue_rate fast 1")
        with pytest.raises(ValueError, match="one command per call"):
            cli.command("help\nhelp")
        assert cli.command("set_queue_rate 100 1") == ""  # an error leaves the client usable
    # closed: the next command connects again
    assert "42" in cli.command(f"register_read {DEPTH_LAST} {cell}")
    cli.close()


def test_queue_stats_where_the_traffic_manager_reports_them(tmp_path) -> None:
    from tests.targets.conftest import running_switch

    with running_switch(P4SWITCH.with_queues(8, 10), tmp_path / "switch.log") as switch, \
            switch.target.cli(switch.model.thrift_port) as cli:
        assert switch.target.caps.reports_tm_stats
        cli.command("set_queue_depth 5 2 3")
        assert cli.queue_stats(2, 3) == {"depth": 0, "enqueued": 0, "dequeued": 0,
                                         "dropped": 0, "paused": False}


@pytest.mark.bmv2
def test_bmv2_cli_is_one_process_started_again_when_it_dies(tmp_path) -> None:
    from tests.targets.conftest import running_switch

    with running_switch(BMV2.with_queues(8, 10), tmp_path / "switch.log") as switch:
        cli = BMV2.cli(switch.model.thrift_port)
        try:
            assert cli.command("set_queue_rate 100 1 3") == ""
            first = cli._proc.pid
            assert cli.batch(["set_queue_depth 10 1 3", "set_queue_rate 0 1 3"]) == ""
            assert cli._proc.pid == first  # the batch went to the same CLI
            os.kill(first, signal.SIGKILL)  # the CLI dies: the next command starts another
            cli._proc.wait()
            assert cli.command("set_queue_rate 100 1 3") == ""
            assert cli._proc.pid != first
        finally:
            cli.close()
        assert cli._proc is None


def test_connect_opens_the_client_before_the_first_command(switch: Running) -> None:
    cli = switch.target.cli(switch.model.thrift_port)

    def opened() -> object:
        return cli._proc if isinstance(cli, ProcessCli) else getattr(cli, "_sock", None)

    try:
        assert cli.connect() is cli
        first = opened()
        assert first is not None
        assert cli.command("set_queue_rate 100 1") == ""
        assert opened() is first  # the command went over the connection connect() opened
    finally:
        cli.close()


@pytest.mark.parametrize("target", [pytest.param(P4SWITCH, id="p4switch"),
                                    pytest.param(BMV2, id="bmv2", marks=pytest.mark.bmv2)])
def test_without_a_switch_the_error_says_why(target) -> None:
    port = loose_port()  # nothing listens there
    cli = target.cli(port, timeout=5.0)
    with pytest.raises(RuntimeCliError, match=f"runtime CLI on port {port}"):
        cli.command("help")
    with pytest.raises(RuntimeCliError, match=f"runtime CLI on port {port}"):
        cli.connect()
    cli.close()
