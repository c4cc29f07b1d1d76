"""The p4switch command line: simple_switch_grpc syntax, clear errors, exit status 2."""

import subprocess
import sys

import pytest
from sw_proc import REPO

from p4switch.switch.options import OptionsError, parse_args, parse_group


def test_bmv2_style_command_line(tmp_path):
    prog = tmp_path / "x.p4switch.json"
    prog.write_text("{}")
    opts = parse_args(["-i", "1@s1-eth1", "-i", "2@s1-eth2", "--device-id", "1",
                       "--pcap", str(tmp_path), "--log-console", "-L", "debug",
                       "--thrift-port", "9091", str(prog), "--",
                       "--grpc-server-addr", "0.0.0.0:50001", "--cpu-port", "510",
                       "--priority-queues", "8", "--drop-port", "500"])
    assert opts.interfaces == {1: "s1-eth1", 2: "s1-eth2"}
    assert (opts.device_id, opts.thrift_port, opts.program) == (1, 9091, str(prog))
    assert (opts.cpu_port, opts.priority_queues, opts.drop_port) == (510, 8, 500)
    assert opts.grpc_addr == "0.0.0.0:50001"
    assert opts.pcap_dir == str(tmp_path) and opts.log_console and opts.log_level == "debug"


def test_defaults_and_target_options_before_the_separator():
    opts = parse_args(["--no-p4", "--cpu-port", "255"])
    assert opts.program is None and opts.cpu_port == 255
    assert opts.grpc_addr == "127.0.0.1:9559"  # loopback unless told otherwise
    assert (opts.thrift_port, opts.device_id, opts.drop_port, opts.priority_queues) == (
        9090, 0, 511, 1)


def test_p4switch_only_pfc_options():
    assert parse_args(["--no-p4"]).pfc and parse_args(["--no-p4"]).pfc_link_mbps is None
    opts = parse_args(["--no-p4", "--no-pfc", "--pfc-link-mbps", "12.5"])
    assert not opts.pfc and opts.pfc_link_mbps == 12.5


def test_pcap_without_directory_means_current_directory(tmp_path):
    prog = tmp_path / "p.p4"
    prog.write_text("")
    assert parse_args(["--pcap", str(prog)]).pcap_dir == "."
    assert parse_args(["--pcap", str(prog)]).program == str(prog)


@pytest.mark.parametrize("argv, message", [
    (["--no-p4", "x.p4"], "mutually exclusive"),
    ([], "no program given"),
    (["missing.p4"], "does not exist"),
    (["--no-p4", "-i", "1@a", "-i", "1@b"], "port 1 given twice"),
    (["--no-p4", "-i", "1@a", "-i", "2@a"], "interface a given twice"),
    (["--no-p4", "--cpu-port", "0"], "--cpu-port must be in 1..511"),
    (["--no-p4", "--cpu-port", "3", "--", "--cpu-port", "4"], "given twice with different"),
    (["--no-p4", "--cpu-port", "511"], "equals the drop port"),
    (["--no-p4", "-i", "5@a", "--cpu-port", "5"], "also interface a"),
    (["--no-p4", "--priority-queues", "9"], "--priority-queues must be in 1..8"),
    (["--no-p4", "--", "--grpc-server-addr", "nowhere"], "HOST:PORT"),
    (["--no-p4", "--", "--bogus"], "unrecognized arguments after '--'"),
    (["--no-p4", "--pcap=/nonexistent-dir"], "does not exist"),
    (["--no-p4", "--pfc-link-mbps", "0"], "--pfc-link-mbps must be > 0"),
])
def test_bad_arguments_are_named(argv, message):
    with pytest.raises(OptionsError, match=message):
        parse_args(argv)


def test_a_group_is_command_lines_joined_by_double_colons():
    assert len(parse_group(["--no-p4"])) == 1
    group = parse_group(["-i", "1@a1", "-i", "2@a2", "--thrift-port", "9091", "--no-p4", "--",
                         "--grpc-server-addr", "127.0.0.1:9561", "::",
                         "-i", "1@b1", "--thrift-port", "9092", "--no-p4", "--device-id", "2",
                         "--", "--grpc-server-addr", "127.0.0.1:9562", "--cpu-port", "255"])
    assert [opts.interfaces for opts in group] == [{1: "a1", 2: "a2"}, {1: "b1"}]
    assert [(o.thrift_port, o.grpc_addr, o.device_id, o.cpu_port) for o in group] == [
        (9091, "127.0.0.1:9561", 0, None), (9092, "127.0.0.1:9562", 2, 255)]


def test_every_error_of_a_group_is_named_by_its_switch():
    with pytest.raises(OptionsError) as err:
        parse_group(["--no-p4", "--frobnicate", "::", "::", "--no-p4", "--cpu-port", "0"])
    assert str(err.value).splitlines() == [
        "switch 1: unrecognized arguments: --frobnicate",
        "switch 2: empty command line between '::'",
        "switch 3: --cpu-port must be in 1..511, got 0"]
    with pytest.raises(OptionsError) as err:  # the defaults clash: say where
        parse_group(["-i", "1@a", "--no-p4", "::", "-i", "1@a", "--no-p4",
                     "--thrift-port", "9091"])
    assert str(err.value).splitlines() == [
        "switch 2: interface a is also switch 1's",
        "switch 2: --grpc-server-addr 127.0.0.1:9559 is also switch 1's"]


@pytest.mark.parametrize("argv", [["--no-p4", "--frobnicate"], ["--no-p4", "-i", "eth0"],
                                  ["--no-p4", "x.p4"], ["--no-p4", "--", "--cpu-port", "x"],
                                  ["--no-p4", "::", "--no-p4"]])
def test_bad_command_line_exits_2_with_a_message(argv):
    res = subprocess.run([sys.executable, "-m", "p4switch.cli.switch", *argv], cwd=REPO,
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 2
    assert "error" in res.stderr.lower() and res.stderr.strip()
