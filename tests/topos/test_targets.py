"""Switch targets: argv as p4switch and simple_switch_grpc expect it, availability, selection."""

from __future__ import annotations

import pytest

from topos import build_fabric
from topos.mininet.targets import BMV2, P4SWITCH, Target, select_target


def test_p4switch_argv() -> None:
    spec = build_fabric("leafspine")
    sw = spec.switch("leaf1")
    argv = P4SWITCH.argv(sw, spec.ports(sw.name), log_console=True)
    assert argv[0].endswith("p4switch")
    assert argv[1:] == ["-i", "1@leaf1-eth1", "-i", "2@leaf1-eth2", "-i", "3@leaf1-eth3",
                        "-i", "4@leaf1-eth4", "--device-id", "2", "--thrift-port", "9091",
                        "--cpu-port", "510", "--log-console", "--no-p4", "--",
                        "--grpc-server-addr", "127.0.0.1:9560"]


def test_bmv2_takes_cpu_port_as_target_option(tmp_path) -> None:
    spec = build_fabric("leafspine")
    sw = spec.switch("spine0")
    argv = BMV2.argv(sw, spec.ports(sw.name), pcap_dir=tmp_path)
    assert argv[0].endswith("simple_switch_grpc")
    sep = argv.index("--")
    assert argv[sep + 1:] == ["--grpc-server-addr", "127.0.0.1:9563", "--cpu-port", "510"]
    assert argv[sep - 1] == "--no-p4"
    assert argv[argv.index("--pcap") + 1] == str(tmp_path)
    assert "--cpu-port" not in argv[:sep]


def test_availability_and_selection() -> None:
    ghost = Target("ghost", ("no-such-switch-program",))
    assert not ghost.available() and ghost.missing() == ["no-such-switch-program"]
    with pytest.raises(ValueError, match="unknown target 'nope'"):
        select_target("nope")
    if not BMV2.available():
        with pytest.raises(RuntimeError, match="simple_switch_grpc"):
            select_target("bmv2")
    if P4SWITCH.available():  # auto is p4switch, installed BMv2 or not
        assert select_target("auto") == P4SWITCH
    else:
        with pytest.raises(RuntimeError, match="target p4switch is not available"):
            select_target("auto")
