"""Switch targets: the registry, argv as p4switch and simple_switch_grpc expect it, what each
can do, availability, finding programs, real compiles and versions."""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import sys
from pathlib import Path

import pytest

from targets import (
    BMV2,
    CHOICES,
    NAMES,
    P4SWITCH,
    CompileError,
    TargetError,
    TargetUnavailable,
    find_program,
    get_target,
)
from targets.bmv2 import Bmv2Target
from tests.targets.conftest import PROGRAM, TARGET_PARAMS
from topos import build_fabric

BROKEN = "control C() { apply { undefined_thing(); } }\n"


def test_registry_resolves_names_and_passes_targets_through() -> None:
    assert get_target() is P4SWITCH and get_target("auto") is P4SWITCH
    assert get_target("p4switch") is P4SWITCH and get_target("bmv2") is BMV2
    assert get_target(BMV2) is BMV2
    assert CHOICES == ("auto", "p4switch", "bmv2") and NAMES == ("p4switch", "bmv2")
    with pytest.raises(TargetError, match="unknown target 'tofino'; choose auto, p4switch, bmv2"):
        get_target("tofino")
    assert issubclass(TargetError, ValueError)


def test_every_commands_target_choices_are_the_registrys() -> None:
    from fabric_lab.cli import build_parser

    commands = next(a.choices for a in build_parser()._actions
                    if isinstance(a, argparse._SubParsersAction))
    offered = {name: action.choices for name, command in commands.items()
               for action in command._actions if "--target" in action.option_strings}
    assert {"run", "up", "controller", "lb", "demo"} <= set(offered)
    assert all(choices in (CHOICES, NAMES) for choices in offered.values()), offered


def test_capabilities_are_named_not_looked_up_by_name() -> None:
    assert P4SWITCH.caps.can_pause_queues and not BMV2.caps.can_pause_queues
    assert P4SWITCH.caps.reports_tm_stats and not BMV2.caps.reports_tm_stats
    assert P4SWITCH.caps.serves_runtime_cli and not BMV2.caps.serves_runtime_cli
    assert BMV2.caps.group_needs_live_member and not P4SWITCH.caps.group_needs_live_member
    assert BMV2.caps.group_reads_lose_watch_ports
    assert not P4SWITCH.caps.group_reads_lose_watch_ports
    assert P4SWITCH.caps.serves_several_switches and not BMV2.caps.serves_several_switches


def test_p4switch_argv() -> None:
    spec = build_fabric("leafspine")
    sw = spec.switch("leaf1")
    argv = P4SWITCH.argv(sw, spec.ports(sw.name), log_console=True)
    assert argv[0].endswith("p4switch")
    assert argv[1:] == ["-i", "1@leaf1-eth1", "-i", "2@leaf1-eth2", "-i", "3@leaf1-eth3",
                        "-i", "4@leaf1-eth4", "--device-id", "2", "--thrift-port", "9091",
                        "--cpu-port", "510", "--log-console", "--no-p4", "--",
                        "--grpc-server-addr", "127.0.0.1:9560"]


def test_bmv2_takes_cpu_port_as_target_option(tmp_path: Path) -> None:
    spec = build_fabric("leafspine")
    sw = spec.switch("spine0")
    argv = BMV2.argv(sw, spec.ports(sw.name), pcap_dir=tmp_path)
    assert argv[0].endswith("simple_switch_grpc")
    sep = argv.index("--")
    assert argv[sep + 1:] == ["--grpc-server-addr", "127.0.0.1:9563", "--cpu-port", "510"]
    assert argv[sep - 1] == "--no-p4"
    # BMv2's --pcap takes its directory only as --pcap=DIR; a separate word is the program
    assert f"--pcap={tmp_path}" in argv[:sep]
    assert "--cpu-port" not in argv[:sep]


def test_the_log_level_reaches_both_switches_and_logs_to_the_log_file() -> None:
    spec = build_fabric("leafspine")
    sw = spec.switch("leaf0")
    for target in (P4SWITCH, BMV2):
        argv = target.with_log_level("trace").argv(sw, spec.ports(sw.name))
        main = argv[:argv.index("--")]
        assert main[main.index("--log-level") + 1] == "trace" and "--log-console" in main
        assert "--log-level" not in target.argv(sw, spec.ports(sw.name))


def test_queue_options_go_where_each_target_takes_them() -> None:
    spec = build_fabric("leafspine")
    sw = spec.switch("leaf1")
    ours = P4SWITCH.with_queues(8, 12.5).argv(sw, spec.ports(sw.name))
    assert ours[1:5] == ["--priority-queues", "8", "--pfc-link-mbps", "12.5"]
    theirs = BMV2.with_queues(8, 12.5).argv(sw, spec.ports(sw.name))
    assert theirs[theirs.index("--"):][-2:] == ["--priority-queues", "8"]
    assert "--pfc-link-mbps" not in theirs  # BMv2 does not pause: nothing to time
    assert P4SWITCH.with_queues(8, 1).caps == P4SWITCH.caps
    assert P4SWITCH.switch_options == ()  # the registry's target is unchanged


def test_switches_share_processes_only_where_the_target_serves_several() -> None:
    spec = build_fabric("leafspine")
    argvs = [P4SWITCH.argv(sw, spec.ports(sw.name)) for sw in spec.switches[:3]]
    group = P4SWITCH.group_argv(argvs)
    assert group[0].endswith("p4switch") and group.count("::") == 2
    segments = " ".join(group[1:]).split(" :: ")
    assert segments == [" ".join(argv[1:]) for argv in argvs]
    from p4switch.switch.options import parse_group  # what the switch makes of it

    assert [opts.grpc_addr for opts in parse_group(group[1:])] == [
        sw.grpc_addr for sw in spec.switches[:3]]
    shared = P4SWITCH.sharing_processes(2)
    assert shared.switch_processes == 2 and P4SWITCH.switch_processes is None
    assert shared.sharing_processes(None).switch_processes is None
    with pytest.raises(TargetError, match="target bmv2 runs one switch per process"):
        BMV2.sharing_processes(2)
    with pytest.raises(TargetError, match="target bmv2 runs one switch per process"):
        BMV2.group_argv(argvs)
    with pytest.raises(TargetError, match="must be 1 or more, got 0"):
        P4SWITCH.sharing_processes(0)


def test_availability() -> None:
    ghost = dataclasses.replace(BMV2, name="ghost", requires=("no-such-switch-program",))
    assert not ghost.available() and ghost.missing() == ["no-such-switch-program"]
    with pytest.raises(TargetUnavailable, match="target ghost is not available: "
                                                "no-such-switch-program not found on PATH"):
        ghost.ensure_available()
    if not BMV2.available():
        with pytest.raises(TargetUnavailable, match="simple_switch_grpc"):
            BMV2.ensure_available()
    assert P4SWITCH.ensure_available() is P4SWITCH  # installed with the project


def test_find_program(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # the venv's programs are found off PATH too
    assert find_program("p4switch") == str(Path(sys.executable).parent / "p4switch")
    tool = tmp_path / "sometool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    assert find_program("sometool") == str(tool)
    assert find_program("no-such-program-anywhere") is None
    assert find_program(str(tmp_path / "nothing")) is None
    assert find_program(str(tmp_path)) == str(tmp_path)


@pytest.mark.parametrize("target", TARGET_PARAMS)
def test_real_compile(target, tmp_path: Path) -> None:
    compiled = target.compile(PROGRAM)
    tables = {t.preamble.name for t in compiled.p4info.tables}
    assert {"FabricIngress.routing.ipv4_lpm", "FabricEgress.pfc.pfc_config"} <= tables
    assert compiled.device_config
    broken = tmp_path / "broken.p4"
    broken.write_text(BROKEN)
    with pytest.raises(CompileError, match="broken.p4"):
        target.compile(broken)


def test_bmv2_compiler_argv(tmp_path: Path) -> None:
    argv = Bmv2Target.compile_argv(Path("p4src/ecmp.p4"), tmp_path, ["p4src/include"])
    assert argv[0] == "p4c-bm2-ss" and argv[-1] == "p4src/ecmp.p4"
    assert argv[argv.index("--arch") + 1] == "v1model"
    assert argv[argv.index("--p4runtime-files") + 1] == str(tmp_path / "ecmp.p4info.txt")
    assert argv[argv.index("-o") + 1] == str(tmp_path / "ecmp.json")
    assert argv[argv.index("-I") + 1] == "p4src/include"


def test_versions() -> None:
    assert P4SWITCH.versions() == {"p4switch": importlib.metadata.version("ai-fabric-lab")}
    missing = dataclasses.replace(BMV2, requires=("no-such-program-anywhere",))
    assert missing.versions() == {"no-such-program-anywhere": "not installed"}


@pytest.mark.bmv2
def test_bmv2_versions() -> None:
    versions = BMV2.versions()
    assert set(versions) == {"simple_switch_grpc", "p4c-bm2-ss"}
    assert "not installed" not in versions.values()
