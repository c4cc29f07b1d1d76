"""Fabric specs, job files, experiment parameters and the commands' arguments, each wrong in
one way: refused before anything starts, in one short error naming the field, exit status 2.

The fabric files are a small leaf-spine on its own row of tests/ports.py (names `hv...`, ports
32000 up), so a case that got through would meet no other fabric.
"""

from __future__ import annotations

import json
from typing import Any

from tests.hostile.inputs import Case
from tests.ports import FABRICS
from topos import build_fabric

ISOLATION = FABRICS["hostile-validate"]
GOOD = ISOLATION.apply(build_fabric("leafspine", leaves=1, spines=1, hosts_per_leaf=2)).to_dict()
JOB = ("name: tiny\nservers: 2\ngpus_per_server: 1\nparallelism: {data: 2}\n"
       "compute_s: 0.1\ngradient_bytes: 1M\n")
FABRIC_ARG = "{dir}/fabric.json"
WRONG_INPUT = 2  # InputError's exit status (topos/errors.py)


def fabric_json(change: Any) -> str:
    """GOOD with one change (a function of its mapping), as JSON text."""
    data = json.loads(json.dumps(GOOD))
    change(data)
    return json.dumps(data)


def refused(name: str, argv: list[str], must_say: str, files: dict[str, bytes | str] | None = None,
            timeout_s: float = 30.0) -> Case:
    return Case(f"validate-{name}", argv, files or {}, must_say, timeout_s, status=WRONG_INPUT)


def refused_fabric(name: str, change: Any, must_say: str) -> Case:
    """`fabric-lab controller --once` on a fabric file with one fault (nothing listens on its
    ports: one that got through would fail to connect, not program anything)."""
    return refused(name, ["fabric-lab", "controller", "--once", "--fabric", FABRIC_ARG],
                   must_say, {"fabric.json": fabric_json(change)})


def _set(path: str, value: Any) -> Any:
    """A change setting `path` ("links.0.rate_mbps") to `value`."""
    *parents, last = path.split(".")

    def change(data: Any) -> None:
        for key in parents:
            data = data[int(key)] if key.isdigit() else data[key]
        data[int(last) if last.isdigit() else last] = value
    return change


def _drop(path: str) -> Any:
    *parents, last = path.split(".")

    def change(data: Any) -> None:
        for key in parents:
            data = data[int(key)] if key.isdigit() else data[key]
        del data[last]
    return change


def show(*scale: str) -> list[str]:
    fabric, *pairs = scale
    return ["fabric-lab", "show", fabric, "--out", "{dir}", "--scale", *pairs]


def train(*extra: str) -> list[str]:
    return ["fabric-lab", "train", "{dir}/job.yaml", "--fabric", FABRIC_ARG, *extra]


def up(*extra: str) -> list[str]:
    return ["fabric-lab", "up", FABRIC_ARG, "--pingall", *extra]


GOOD_FILES: dict[str, bytes | str] = {"fabric.json": json.dumps(GOOD), "job.yaml": JOB}

CASES: list[Case] = [
    # types and finite numbers of --scale
    refused("scale-rate-abc", show("leafspine", "rate_mbps=abc"), "rate_mbps"),
    refused("scale-queue-abc", show("leafspine", "queue_pkts=abc"), "queue_pkts"),
    refused("scale-delay-abc", show("leafspine", "delay_ms=abc"), "delay_ms"),
    refused("scale-uplink-abc", show("hpn7", "uplink_rate_mbps=abc"), "uplink_rate_mbps"),
    refused("scale-rate-nan", show("hpn7", "rate_mbps=nan"), "rate_mbps"),
    refused("scale-uplink-inf", show("hpn7", "uplink_rate_mbps=inf"), "uplink_rate_mbps"),
    refused("scale-queue-fraction", show("hpn7", "queue_pkts=1.5"), "queue_pkts"),
    refused("scale-dual-tor-maybe", show("hpn7", "dual_tor=maybe"), "dual_tor"),
    refused("scale-delay-huge", show("hpn7", "delay_ms=1e9"), "delay_ms"),
    refused("scale-unknown", show("fattree", "leaves=2"), "leaves"),
    refused("run-scale-rate-abc", ["fabric-lab", "run", "failover", "--results", "{dir}",
                                   "--scale", "rate_mbps=abc"], "rate_mbps"),
    # size limits, computed before building
    refused("size-hpn7-segments", show("hpn7", "segments=100000"), "switches", timeout_s=15),
    refused("size-fattree-k", show("fattree", "k=1000000"), "switches", timeout_s=15),
    refused("size-leafspine-spines", show("leafspine", "spines=60000"), "switches",
            timeout_s=15),
    # fabric files: types, ranges, names, structure
    refused_fabric("json-rate-fast", _set("links.0.rate_mbps", "fast"), "links[0].rate_mbps"),
    refused_fabric("json-rate-nan", _set("links.0.rate_mbps", float("nan")), "rate_mbps"),
    refused_fabric("json-delay-inf", _set("links.1.delay_ms", float("inf")), "delay_ms"),
    refused_fabric("json-grpc-port", _set("switches.0.grpc_port", 99999), "grpc_port"),
    refused_fabric("json-link-without-end", _drop("links.0.b"), "links[0].b"),
    refused_fabric("json-switch-without-name", _drop("switches.1.name"), "switches[1].name"),
    refused_fabric("json-fabric-name-escapes", _set("name", "../../tmp/x"), "fabric name"),
    refused_fabric("json-switch-name-shell", _set("switches.0.name", "s;reboot"), "switch name"),
    refused_fabric("json-interface-redirect", _set("links.0.a.intf", "x>y"), "interface name"),
    refused_fabric("json-interface-comment", _set("links.0.b.intf", "x#y"), "interface name"),
    refused("json-empty", ["fabric-lab", "controller", "--once", "--fabric", FABRIC_ARG],
            "fabric.json", {"fabric.json": ""}),
    refused("json-not-json", ["fabric-lab", "controller", "--once", "--fabric", FABRIC_ARG],
            "fabric.json", {"fabric.json": "switches: [leaf0]\n"}),
    refused("json-binary", ["fabric-lab", "controller", "--once", "--fabric", FABRIC_ARG],
            "fabric.json", {"fabric.json": bytes(range(256))}),
    refused("perf-fabric-is-a-job", ["fabric-lab", "perf", "all_reduce", "--fabric",
                                     "{dir}/job.json"], "job.json",
            {"job.json": json.dumps({"name": "j", "servers": 2, "gpus_per_server": 1,
                                     "compute_s": 1, "gradient_bytes": "1M"})}),
    # job files and train's arguments
    refused("train-binary", train(), "job.yaml", {**GOOD_FILES, "job.yaml": b"\x00\xff" * 64}),
    refused("train-directory", ["fabric-lab", "train", "{dir}/jobs", "--fabric", FABRIC_ARG],
            "jobs", {**GOOD_FILES, "jobs/a.yaml": JOB}),
    refused("train-missing", ["fabric-lab", "train", "{dir}/nope.yaml", "--fabric", FABRIC_ARG],
            "nope.yaml", GOOD_FILES),
    refused("train-empty", train(), "empty", {**GOOD_FILES, "job.yaml": ""}),
    refused("train-compute-nan", train(), "compute_s",
            {**GOOD_FILES, "job.yaml": JOB.replace("compute_s: 0.1", "compute_s: .nan")}),
    refused("train-compute-inf", train(), "compute_s",
            {**GOOD_FILES, "job.yaml": JOB.replace("compute_s: 0.1", "compute_s: .inf")}),
    refused("train-out-is-a-file", train("--out", "{dir}/job.yaml"), "--out", GOOD_FILES),
    refused("train-time-scale-nan", train("--time-scale", "nan"), "--time-scale", GOOD_FILES),
    refused("train-model-gbps-inf", train("--model-gbps", "inf"), "--model-gbps", GOOD_FILES),
    refused("train-nvlink-ratio-nan", train("--nvlink-ratio", "nan"), "--nvlink-ratio",
            GOOD_FILES),
    # perf's arguments: finite, and bounds a run can finish
    refused("perf-model-gbps-nan", ["fabric-lab", "perf", "all_reduce", "--fabric", FABRIC_ARG,
                                    "--model-gbps", "nan"], "--model-gbps", GOOD_FILES),
    refused("perf-nvlink-inf", ["fabric-lab", "perf", "all_reduce", "--fabric", FABRIC_ARG,
                                "--nvlink-ratio", "inf"], "--nvlink-ratio", GOOD_FILES),
    refused("perf-link-mbps-nan", ["fabric-lab", "perf", "all_reduce", "--link-mbps", "nan"],
            "--link-mbps"),
    refused("perf-maxbytes-huge", ["fabric-lab", "perf", "all_reduce", "--fabric", FABRIC_ARG,
                                   "-e", "999999999G"], "-e", GOOD_FILES),
    refused("perf-iters-huge", ["fabric-lab", "perf", "all_reduce", "--fabric", FABRIC_ARG,
                                "-n", "100000000000"], "-n", GOOD_FILES),
    # up's arguments and program: refused before any network is built
    refused("up-web-port", up("--web-port", "99999"), "--web-port", GOOD_FILES),
    refused("up-election-id", up("--election-id", "-1"), "--election-id", GOOD_FILES),
    refused("up-queue-depth", up("--queue-depth", "-5"), "--queue-depth", GOOD_FILES),
    refused("up-program-missing", up("--program", "{dir}/nope.p4"), "nope.p4", GOOD_FILES),
    refused("up-program-syntax", up("--program", "{dir}/bad.p4"), "bad.p4",
            {**GOOD_FILES, "bad.p4": "#include <core.p4>\ncontrol C( { }\n"}),
    refused("up-program-binary", up("--program", "{dir}/bin.p4"), "bin.p4",
            {**GOOD_FILES, "bin.p4": b"\x7fELF\x00\xff\xfe" * 32}),
    # run's directories and parameters
    refused("run-out-is-a-file", ["fabric-lab", "run", "ecmp-hashing", "--quick", "--out",
                                  "{dir}/file"], "--out", {"file": "x"}),
    refused("run-results-is-a-file", ["fabric-lab", "run", "ecmp-hashing", "--quick",
                                      "--results", "{dir}/file"], "--results", {"file": "x"}),
    refused("run-param-nan", ["fabric-lab", "run", "lb-compare", "--results", "{dir}",
                              "-p", "name_prefix=hv", "-p", "slow_factor=nan"], "slow_factor"),
    refused("run-name-prefix-shell", ["fabric-lab", "run", "lb-compare", "--results", "{dir}",
                                      "-p", "name_prefix=a;b"], "name_prefix"),
]
