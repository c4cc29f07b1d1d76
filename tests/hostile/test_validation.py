"""The one validation pass before anything starts: every fault of an input at once, named by its
field; names of a safe character set; sizes refused before building; a program compiled before
any network exists. (The command lines are in cases/validate.py.)"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path

import pytest

from experiments.framework.experiment import ExperimentError, resolve_params
from experiments.framework.registry import get as get_experiment
from jobs.workload import WorkloadError, load
from jobs.workload import validate as validate_job
from targets.base import CompileError, TargetError, TargetUnavailable
from tests.hostile.cases.validate import GOOD, ISOLATION, JOB
from tests.hostile.inputs import REPO
from topos import FabricError, FabricSpec, build_fabric
from topos.errors import InputError, MachineError
from topos.fabric_file import read_fabric_file, spec_from_dict
from topos.values import IFNAMSIZ, MAX_LISTED, name_problem


def test_every_bad_scale_parameter_is_named_at_once() -> None:
    with pytest.raises(FabricError) as caught:
        build_fabric("leafspine", rate_mbps="abc", delay_ms=1e9, queue_pkts=1.5, leaves=0,
                     spines=2.0, nosuch=1)
    problems = caught.value.problems
    assert len(problems) == 6, problems
    for field in ("rate_mbps", "delay_ms", "queue_pkts", "leaves", "spines", "nosuch"):
        assert sum(p.startswith(field) or repr(field) in p for p in problems) == 1, field


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
@pytest.mark.parametrize("field", ["rate_mbps", "uplink_rate_mbps", "delay_ms"])
def test_link_numbers_must_be_finite(field: str, value: float) -> None:
    with pytest.raises(FabricError, match=f"{field} must be a finite number"):
        build_fabric("hpn7", **{field: value})


def test_bools_and_bounds_of_the_scale() -> None:
    with pytest.raises(FabricError, match="dual_tor must be true or false, not 'maybe'"):
        build_fabric("hpn7", dual_tor="maybe")
    with pytest.raises(FabricError, match=r"delay_ms must be >= 0 and <= 10000 ms"):
        build_fabric("hpn7", delay_ms=1e9)
    assert len(build_fabric("hpn7", dual_tor=0).switches) < len(build_fabric("hpn7").switches)
    assert {ln.rate_mbps for ln in build_fabric("leafspine", rate_mbps=None).links} == {None}


@pytest.mark.parametrize(("fabric", "scale"), [("hpn7", {"segments": 100000}),
                                                ("fattree", {"k": 1000000}),
                                                ("leafspine", {"spines": 60000})])
def test_a_huge_scale_is_refused_before_building(fabric: str, scale: dict) -> None:
    started = time.monotonic()
    with pytest.raises(FabricError) as caught:
        build_fabric(fabric, **scale)
    assert time.monotonic() - started < 1.0  # computed from the parameters, nothing built
    message = str(caught.value)
    assert "switches (at most 469" in message and "interfaces (at most 8192" in message
    assert len(message.splitlines()) <= 1 + MAX_LISTED + 1


def test_the_size_of_each_default_fabric_is_what_it_builds() -> None:
    from topos.builders import SIZES, fabric_parameters

    for name, size_of in SIZES.items():
        for scale in ({}, {"nics_per_server": 2} if name == "bigraph" else {}):
            spec = build_fabric(name, **scale)
            size = size_of(**{**fabric_parameters(name), **scale})
            ports = max(len(spec.links_of(sw.name)) for sw in spec.switches)
            assert (size.switches, size.servers, size.links, size.switch_ports) == (
                len(spec.switches), len(spec.hosts), len(spec.links), ports), name


def test_a_fabric_file_lists_every_field_at_fault() -> None:
    data = json.loads(json.dumps(GOOD))
    data["links"][0]["rate_mbps"] = "fast"
    del data["links"][1]["b"]
    data["switches"][0]["grpc_port"] = "9559"
    data["hosts"][0]["nics"][0]["rail"] = True
    data["colour"] = "blue"
    with pytest.raises(FabricError) as caught:
        spec_from_dict(data)
    assert sorted(caught.value.problems) == sorted([
        "colour: unknown field",
        "links[0].rate_mbps: must be a number or null, not 'fast'",
        "links[1].b: missing",
        "switches[0].grpc_port: must be an integer, not '9559'",
        "hosts[0].nics[0].rail: must be an integer or null, not True"])
    assert isinstance(caught.value, InputError)


def test_a_fabric_file_checks_ranges_and_names_after_types(tmp_path: Path) -> None:
    data = json.loads(json.dumps(GOOD))
    data["switches"][0]["grpc_port"] = 99999
    data["links"][0]["delay_ms"] = math.nan
    data["name"] = "../../etc"
    path = tmp_path / "f.json"
    path.write_text(json.dumps(data))
    with pytest.raises(FabricError) as caught:
        read_fabric_file(path)
    text = str(caught.value)
    assert "grpc_port must be >= 1 and <= 65535, not 99999" in text
    assert "delay_ms must be a finite number" in text
    assert "fabric name '../../etc' may hold only" in text
    assert read_fabric_file(_written(tmp_path / "good.json", GOOD)) == FabricSpec.from_dict(GOOD)


def test_many_faults_are_listed_a_few_then_counted(tmp_path: Path) -> None:
    data = json.loads(json.dumps(GOOD))
    for link in data["links"]:
        link["a"]["intf"] = link["a"]["intf"] + ";"
        link["b"]["intf"] = link["b"]["intf"] + "#"
    with pytest.raises(FabricError) as caught:
        read_fabric_file(_written(tmp_path / "f.json", data))
    faults = 2 * len(data["links"])
    assert len(caught.value.problems) == faults
    lines = str(caught.value).splitlines()
    assert len(lines) == 1 + MAX_LISTED + 1 and lines[-1].endswith(
        f"and {faults - MAX_LISTED} more")


@pytest.mark.parametrize("name", ["../x", "a/b", "a;b", "a>b", "a#b", "a b", "$(id)", ".x",
                                  "-x", "", "a\nb", "é"])
def test_unsafe_names_are_refused(name: str) -> None:
    assert name_problem(name) is not None


@pytest.mark.parametrize("name", ["leaf0", "h0n0-eth1", "ta-s0r0", "a_b.c", "0"])
def test_safe_names_pass(name: str) -> None:
    assert name_problem(name) is None


def test_interface_names_fit_linux(tmp_path: Path) -> None:
    data = json.loads(json.dumps(GOOD))
    data["links"][0]["a"]["intf"] = "x" * (IFNAMSIZ + 1)
    with pytest.raises(FabricError, match=f"is {IFNAMSIZ + 1} characters"):
        read_fabric_file(_written(tmp_path / "f.json", data))


def test_job_file_faults_name_the_path_and_field(tmp_path: Path) -> None:
    assert issubclass(WorkloadError, InputError)
    nan = tmp_path / "nan.yaml"
    nan.write_text(JOB.replace("compute_s: 0.1", "compute_s: .nan") + "iterations: 1e12\n")
    with pytest.raises(WorkloadError) as caught:
        load(nan)
    assert [e.split(":")[0] for e in caught.value.errors] == ["compute_s", "iterations"]
    for content, needle in ((b"", "is empty"), (b"\xff\xfe\x00", "is not a text file"),
                            (b"name: [", "not valid yaml")):
        path = tmp_path / "job.yaml"
        path.write_bytes(content)
        with pytest.raises(WorkloadError, match=needle) as caught:
            load(path)
        assert str(path) in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(WorkloadError, match="cannot be read: Is a directory"):
        load(tmp_path)
    with pytest.raises(WorkloadError, match="cannot be read: No such file"):
        load(tmp_path / "nope.yaml")
    with pytest.raises(WorkloadError, match="compute_s: a time in seconds: must be a finite"):
        validate_job({"name": "j", "servers": 1, "gpus_per_server": 1, "compute_s": math.inf,
                      "gradient_bytes": 0})


def test_experiment_parameters_are_finite_and_names_safe() -> None:
    lb = get_experiment("lb-compare")
    with pytest.raises(ExperimentError, match="slow_factor: must be a finite number, not nan"):
        resolve_params(lb, False, {"slow_factor": "nan"})
    with pytest.raises(ExperimentError, match="name_prefix: 'a;b' may hold only"):
        resolve_params(lb, False, {"name_prefix": "a;b"})
    with pytest.raises(ExperimentError, match="port_base: must be >= 1 and <= 65535"):
        resolve_params(lb, False, {"port_base": "65000"})
    assert resolve_params(lb, False, {"name_prefix": "hv", "slow_factor": "0.5"})[
        "slow_factor"] == 0.5
    assert issubclass(ExperimentError, InputError)


def test_each_class_of_error_has_its_status() -> None:
    assert issubclass(TargetError, InputError) and issubclass(CompileError, InputError)
    assert issubclass(TargetUnavailable, MachineError)
    assert issubclass(FabricError, InputError)


def _names_with(prefix: str) -> set[str]:
    """Interfaces and namespaces on this machine whose name starts with `prefix`."""
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True,
                           check=True).stdout
    names = {line.split(":")[1].strip().split("@")[0] for line in links.splitlines()}
    spaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                            check=False).stdout
    names |= {line.split()[0] for line in spaces.splitlines() if line.strip()}
    return {name for name in names if name.startswith(prefix)}


@pytest.mark.parametrize(("program", "needle"), [
    ("nope.p4", "does not exist"), ("bad.p4", "syntax error"), ("bin.p4", "not a text file")])
def test_up_refuses_a_bad_program_before_any_network_is_built(tmp_path: Path, program: str,
                                                               needle: str) -> None:
    (tmp_path / "bad.p4").write_text("#include <core.p4>\ncontrol C( { }\n")
    (tmp_path / "bin.p4").write_bytes(b"\x7fELF\x00\xff" * 64)
    fabric = _written(tmp_path / "fabric.json", GOOD)
    before = _names_with(ISOLATION.prefix)
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "fabric_lab.cli", "up", str(fabric), "--pingall",
         "--program", str(tmp_path / program)],
        capture_output=True, text=True, timeout=120, cwd=REPO)
    took = time.monotonic() - started
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr and program in proc.stderr
    assert "Traceback" not in proc.stderr
    assert "mininet" not in proc.stdout  # the bring-up stage never began
    assert _names_with(ISOLATION.prefix) == before  # no interface, no namespace
    assert took < 60, took


def _written(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data))
    return path
