"""A switch of any target, started from the target's own argv on free ports (no interfaces, so
it meets no other switch), running ecmp.p4 pushed over P4Runtime."""

from __future__ import annotations

import contextlib
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from controller.p4rt import P4RuntimeClient
from controller.pipeline import Pipeline, build_pipeline
from mechanisms import program_path
from targets import BMV2, P4SWITCH, Target
from tests.ports import loose_port
from topos.mininet.procs import accepts, spawn, stop_child
from topos.model import Switch

PROGRAM = program_path("ecmp")
TARGET_PARAMS = [pytest.param(P4SWITCH, id="p4switch"),
                 pytest.param(BMV2, id="bmv2", marks=pytest.mark.bmv2)]


@dataclass
class Running:
    target: Target
    model: Switch
    proc: subprocess.Popen
    pipeline: Pipeline | None


@contextlib.contextmanager
def running_switch(target: Target, log: Path, *, program: Path | None = PROGRAM,
                   timeout: float = 30.0) -> Iterator[Running]:
    """`target`'s switch until the block ends (SIGTERM, then SIGKILL), with `program` set."""
    model = Switch("t0", "leaf", 0, device_id=7, grpc_port=loose_port(), thrift_port=loose_port())
    pipeline = build_pipeline(program, target) if program is not None else None
    with log.open("w") as out:
        proc = spawn(target.argv(model, {}), stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout
        for port in (model.grpc_port, model.thrift_port):
            while not accepts(port):  # readiness: both management ports accept
                assert proc.poll() is None, f"{target.name} exited:\n{log.read_text()}"
                assert time.monotonic() < deadline, f"{target.name} did not listen on {port}"
                time.sleep(0.05)
        if pipeline is not None:
            with P4RuntimeClient(model.grpc_addr, model.device_id) as client:
                client.set_pipeline(pipeline.p4info, pipeline.device_config, pipeline.cookie)
        yield Running(target, model, proc, pipeline)
    finally:
        stop_child(proc, 10, group=False)


@pytest.fixture(params=TARGET_PARAMS)
def switch(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Running]:
    with running_switch(request.param, tmp_path / "switch.log") as running:
        yield running
