"""P4Runtime conformance rig: one switch per target and module (p4switch always, BMv2 where it
is installed), started without interfaces; every test pushes conformance.p4 afresh from a new
primary, so it starts from empty tables whatever the test before it did."""

from __future__ import annotations

import contextlib
import itertools
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from p4.v1 import p4runtime_pb2 as pb

from controller.pipeline import Pipeline, build_pipeline
from p4switch.p4info.index import P4InfoIndex
from targets import BMV2, P4SWITCH, Target
from topos.mininet.procs import accepts, spawn, stop_child
from topos.model import Switch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "p4switch" / "switch"))
from conf_program import fwd_entry
from sw_p4rt import Client

from tests.ports import loose_port

PROGRAM = Path(__file__).resolve().parent / "programs" / "conformance.p4"
DEVICE_ID = 3
_elections = itertools.count(1000)  # rising across tests: a lingering old stream is a backup


@contextlib.contextmanager
def started(target: Target, log: Path, timeout: float = 30.0) -> Iterator[Switch]:
    """`target`'s switch with no program and no interfaces (SIGTERM, then SIGKILL, at the end)."""
    model = Switch("conf0", "leaf", 0, device_id=DEVICE_ID, grpc_port=loose_port(),
                   thrift_port=loose_port())
    with log.open("w") as out:
        proc = spawn(target.argv(model, {}), stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + timeout
        while not accepts(model.grpc_port):  # readiness: P4Runtime accepts connections
            assert proc.poll() is None, f"{target.name} exited:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"{target.name} did not listen"
            time.sleep(0.05)
        yield model
    finally:
        stop_child(proc, 10, group=False)


class Rig:
    """A switch with conformance.p4 just pushed by `primary`; clients it makes are closed at
    the end of the test."""

    def __init__(self, target: Target, model: Switch, pipeline: Pipeline):
        self.target = target
        self.addr = model.grpc_addr
        self.device_id = model.device_id
        self.pipeline = pipeline
        self.index = P4InfoIndex(pipeline.p4info)
        self._clients: list[Client] = []
        self.primary = self._first_primary()
        self.primary.set_pipeline(pipeline.p4info, pipeline.device_config)

    def _first_primary(self, timeout: float = 10.0) -> Client:
        """A primary, once the streams of the test before have left their slots."""
        deadline = time.monotonic() + timeout
        while True:
            c = self.client()
            msg = c.incoming.get(timeout=5)
            if msg is not None:
                assert msg.arbitration.status.code == 0, msg
                return c
            assert time.monotonic() < deadline, f"no stream slot: {c.stream_error}"
            time.sleep(0.05)

    def client(self, election: int | None | object = -1) -> Client:
        """A client with a stream, arbitrating with `election` (-1: a new id above all before;
        sw_p4rt.UNSET: no election id; None: no stream)."""
        if election == -1:
            election = next(_elections)
        c = Client(self.addr, self.device_id, election)
        self._clients.append(c)
        return c

    def close(self) -> None:
        for c in self._clients:
            c.close()

    def id(self, kind: str, name: str) -> int:
        return self.index.id(kind, f"ConfIngress.{name}" if "." not in name else name)

    def fwd(self, port: int, out: int = 1, *, action: str = "forward") -> pb.TableEntry:
        return fwd_entry(self.index, port, out, action=action)

    def entries(self, table: str = "") -> list[pb.TableEntry]:
        """Every entry of `table` (all tables when empty), read back."""
        te = pb.TableEntry(table_id=self.id("tables", table) if table else 0)
        return [e.table_entry for e in self.primary.read(pb.Entity(table_entry=te))]

    def departs(self, request: pytest.FixtureRequest, reason: str) -> None:
        """BMv2 itself departs from the spec here (docs/p4runtime.md): expect the failure."""
        if self.target.name == "bmv2":
            request.applymarker(pytest.mark.xfail(reason=f"BMv2 departs: {reason}", strict=True))


@pytest.fixture(scope="module", params=[pytest.param(P4SWITCH, id="p4switch"),
                                        pytest.param(BMV2, id="bmv2", marks=pytest.mark.bmv2)])
def switch(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[Target, Switch, Pipeline]]:
    target = request.param
    pipeline = build_pipeline(PROGRAM, target)
    log = tmp_path_factory.mktemp(f"conformance-{target.name}") / "switch.log"
    with started(target, log) as model:
        yield target, model, pipeline


@pytest.fixture
def bare(switch: tuple[Target, Switch, Pipeline], tmp_path: Path
         ) -> Iterator[tuple[Target, Switch, Pipeline]]:
    """A switch of the module's target of its own: no stream has ever been open on it."""
    target, _, pipeline = switch
    with started(target, tmp_path / "switch.log") as model:
        yield target, model, pipeline


@pytest.fixture
def rig(switch: tuple[Target, Switch, Pipeline]) -> Iterator[Rig]:
    r = Rig(*switch)
    try:
        yield r
    finally:
        r.close()
