"""v1model_ops.p4 on real BMv2 (simple_switch reading and writing pcap files) and on p4switch's
three pipelines: the same frames out of the same ports, for the packet operations whose
semantics live in simple_switch.cpp and Packet (copies, recirculation, truncate)."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.p4switch.compiler.test_v1model import cmd
from tests.ports import loose_port

pytestmark = [pytest.mark.bmv2, pytest.mark.skipif(
    not shutil.which("simple_switch") or not shutil.which("simple_switch_CLI"),
    reason="BMv2's simple_switch and simple_switch_CLI not on PATH")]

PROGRAMS = Path(__file__).resolve().parent / "programs"
PORTS = 8
GROUP, GROUP_PORTS = 5, (2, 4)
SESSIONS = {9: 4, 3: 6}  # clone session -> port
FRAMES = [cmd(op, arg) for op, arg in [
    (1, 2), (3, GROUP), (4, 9), (5, 0), (6, 0), (8, 0), (10, 3), (11, 0),
    (13, 0), (14, 0), (15, GROUP), (16, 0), (17, 9), (18, 3)]]
WAIT_S = 4.0  # simple_switch waits this long before it reads its input files


def bmv2_frames(workdir: Path, frames: list[bytes]) -> list[tuple[int, bytes]]:
    """`frames` into port 0 of simple_switch running v1model_ops.p4 with the group and
    sessions above; every frame out of every port, in port order."""
    from scapy.all import Raw, rdpcap, wrpcap

    json_path = workdir / "ops.json"
    subprocess.run(["p4c-bm2-ss", "--arch", "v1model", "-o", str(json_path),
                    str(PROGRAMS / "v1model_ops.p4")], check=True, capture_output=True,
                   timeout=120)
    wrpcap(str(workdir / "p0_in.pcap"), [Raw(f) for f in frames])
    for i in range(1, PORTS):
        wrpcap(str(workdir / f"p{i}_in.pcap"), [])
    thrift = loose_port()
    argv = ["simple_switch", "--use-files", str(int(WAIT_S)), "--thrift-port", str(thrift)]
    for i in range(PORTS):
        argv += ["-i", f"{i}@p{i}"]
    started = time.monotonic()
    with open(workdir / "switch.log", "w") as log:
        switch = subprocess.Popen([*argv, str(json_path)], cwd=workdir, stdout=log,
                                  stderr=subprocess.STDOUT)
    try:
        config = [f"mc_mgrp_create {GROUP}",
                  f"mc_node_create 0 {' '.join(map(str, GROUP_PORTS))}",
                  f"mc_node_associate {GROUP} 0",
                  *(f"mirroring_add {s} {p}" for s, p in SESSIONS.items())]
        while True:  # ready when its Thrift server answers
            done = subprocess.run(["simple_switch_CLI", "--thrift-port", str(thrift)],
                                  input="\n".join(config) + "\n", capture_output=True,
                                  text=True, timeout=60)
            if "Error" not in done.stdout + done.stderr and done.returncode == 0:
                break
            assert switch.poll() is None, (workdir / "switch.log").read_text()
            assert time.monotonic() - started < WAIT_S, "simple_switch_CLI never connected"
            time.sleep(0.2)
        assert time.monotonic() - started < WAIT_S, \
            "configured after simple_switch began reading its files: the machine is too slow"
        return _read_outputs(workdir, rdpcap)
    finally:
        switch.terminate()
        switch.wait(timeout=30)


def _read_outputs(workdir: Path, rdpcap) -> list[tuple[int, bytes]]:
    """Every frame written so far, once the files stop growing for a second after WAIT_S (the
    writer flushes every frame)."""
    sizes: tuple[int, ...] = ()
    quiet_since = time.monotonic()
    deadline = time.monotonic() + WAIT_S + 60
    while time.monotonic() < deadline:
        now = tuple((workdir / f"p{i}_out.pcap").stat().st_size
                    if (workdir / f"p{i}_out.pcap").exists() else 0 for i in range(PORTS))
        if now != sizes:
            sizes, quiet_since = now, time.monotonic()
        elif sum(now) and time.monotonic() - quiet_since > 1.0:
            break
        time.sleep(0.1)
    out = []
    for i in range(PORTS):
        path = workdir / f"p{i}_out.pcap"
        if path.exists() and path.stat().st_size:
            out += [(i, bytes(p)) for p in rdpcap(str(path))]
    return out


@pytest.fixture(scope="module")
def on_bmv2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[tuple[int, bytes]]]:
    yield bmv2_frames(tmp_path_factory.mktemp("v1model-bmv2"), FRAMES)


def test_same_frames_as_bmv2(switch, on_bmv2: list[tuple[int, bytes]]) -> None:
    sw = switch("v1model_ops.p4")
    sw.state.pre.set_multicast_group(GROUP, [(p, 0) for p in GROUP_PORTS])
    for session, port in SESSIONS.items():
        sw.state.pre.mirroring_add(session, port)
    mine = sorted(f for frame in FRAMES for f in sw.send(0, frame))
    assert mine == sorted(on_bmv2)
