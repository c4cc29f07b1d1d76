"""The errors `fabric-lab` reports as one line: the lab's derive from one base, FabricLabError;
a bug still gives a traceback."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from fabric_lab.cli import EXPECTED_ERRORS, expected_error
from p4switch.frontend.diagnostics import P4CompileError
from topos.errors import FabricLabError

# every class the command line once listed by name, where it now lives
ONCE_LISTED = [
    ("topos.validation", "FabricError"),
    ("topos.placement", "PlacementError"),
    ("topos.mininet.nodes", "SwitchStartError"),
    ("topos.mininet.leftovers", "LeftoverError"),
    ("topos.mininet.patch", "PatchError"),
    ("topos.mininet.runstate", "RunStateError"),
    ("topos.mininet.cluster_servers", "ClusterError"),
    ("controller.pipeline", "PipelineError"),
    ("controller.fabric", "ProgrammingError"),
    ("controller.p4rt", "P4RuntimeError"),
    ("targets.base", "TargetError"),
    ("targets.base", "TargetUnavailable"),
    ("targets.base", "CompileError"),
    ("targets.runtime_cli", "RuntimeCliError"),
    ("controller.lb", "LbError"),
    ("controller.congestion", "CongestionConfigError"),
    ("controller.sync", "ControllerError"),
    ("traffic.hosts", "HostSpecError"),
    ("traffic.agent", "AgentError"),
    ("experiments.framework.results", "ResultDirError"),
    ("experiments.framework.experiment", "ExperimentError"),
]


@pytest.mark.parametrize(("module", "name"), ONCE_LISTED)
def test_each_expected_error_derives_from_the_labs_base(module: str, name: str) -> None:
    cls = getattr(importlib.import_module(module), name)
    assert issubclass(cls, FabricLabError)


def test_p4switch_keeps_its_own_and_the_os_errors_are_still_expected() -> None:
    assert not issubclass(P4CompileError, FabricLabError)  # p4switch imports nothing of the lab
    assert {P4CompileError, PermissionError, FileNotFoundError} <= set(EXPECTED_ERRORS)
    assert expected_error(P4CompileError([]))
    assert expected_error(PermissionError(1, "Operation not permitted", "/run/fabric-lab"))


def test_a_result_directory_error_is_one_line_and_a_bug_is_not() -> None:
    from experiments.framework.results import ResultDirError

    assert expected_error(ResultDirError("results/x exists"))
    assert not expected_error(KeyError("a bug"))


def test_bad_input_is_one_line_and_exit_status_1(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    done = subprocess.run([sys.executable, "-m", "fabric_lab.cli", "clean", "--run-dir",
                           str(tmp_path)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 1
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr
    assert lines[0].startswith(f"fabric-lab clean: {broken}: not a readable run-state file")
    assert broken.read_text() == "{not json"  # nothing lost
