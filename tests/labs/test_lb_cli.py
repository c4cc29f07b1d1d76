"""The load-balancing mode of a running `fabric-lab up`: from its CLI (`lb`), from a second
terminal (`fabric-lab lb`, served by the running controller instead of clashing with its election
id), and RoCEv2 traffic sent by hand with the CLI's `traffic` command."""

from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.ports import FABRICS
from topos import build_fabric

pytestmark = [pytest.mark.mininet, pytest.mark.slow, pytest.mark.root]
ROOT = Path(__file__).resolve().parents[2]


class Console:
    """`fabric-lab up` at its CLI: feed commands, wait for output."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     bufsize=1)
        self.out: list[str] = []
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)

    def send(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def wait_for(self, text: str, timeout: float = 90) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self._lines.get(timeout=0.5)
            except queue.Empty:
                if self.proc.poll() is not None and self._lines.empty():
                    break
                continue
            self.out.append(line)
            if text in line:
                return line
        raise AssertionError(f"no {text!r} in the output:\n{''.join(self.out)}")

    def close(self) -> int:
        if self.proc.poll() is None:
            try:
                self.send("exit")
                self.proc.stdin.close()
                return self.proc.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.terminate()  # up takes its network down on SIGTERM
                return self.proc.wait(timeout=60)
        return self.proc.returncode


def test_lb_from_the_cli_and_from_a_second_terminal_and_traffic_by_hand(tmp_path):
    pytest.importorskip("p4switch.compiler", reason="the p4switch compiler is not in the tree")
    spec = FABRICS["labs-lb-cli"].apply(
        build_fabric("leafspine", leaves=2, spines=2, hosts_per_leaf=1))
    model = tmp_path / "lc.json"
    model.write_text(spec.to_json())
    run = tmp_path / "run"
    env = {**os.environ, "FABRIC_LAB_RUN_DIR": str(run), "PYTHONUNBUFFERED": "1"}
    env.pop("FABRIC_LAB_FABRIC", None)
    console = Console([sys.executable, "-m", "fabric_lab.cli", "up", str(model), "--target",
                       "p4switch"], env)
    lb = [sys.executable, "-m", "fabric_lab.cli", "lb"]
    try:
        console.wait_for("  total ")
        deadline = time.monotonic() + 30  # the CLI starts serving once the fabric is routed
        while not (sockets := list(run.glob("*.lb.sock"))) and time.monotonic() < deadline:
            assert console.proc.poll() is None, "".join(console.out)
            time.sleep(0.1)
        assert [p.name for p in sockets] == [f"{spec.name}-{console.proc.pid}.lb.sock"]

        # a second terminal: the running controller does the switch
        other = subprocess.run([*lb, "--mode", "flowlet", "--flowlet-gap-us", "30000"],
                               cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert other.returncode == 0, other.stdout + other.stderr
        lines = other.stdout.splitlines()
        assert lines[0].startswith("(switched by the running controller")
        assert lines[1] == "flowlet.p4 on 4 switches"
        assert sorted(lines[2:]) == sorted(f"  {sw.name}: flowlet gap 30000 us"
                                           for sw in spec.switches)

        # connecting as a second primary is refused, with the way out in the message
        clash = subprocess.run([*lb, "--direct", "--fabric", str(model), "--target", "p4switch",
                                "--mode", "ecmp"], cwd=ROOT, env=env, capture_output=True,
                               text=True, timeout=120)
        assert clash.returncode == 1
        assert "another controller is primary" in clash.stderr, clash.stderr

        # the CLI sees what the second terminal set, and switches itself
        console.send("lb")
        console.wait_for("flowlet.p4 on 4 switches")
        console.wait_for("flowlet gap 30000 us")
        console.send("lb dlb 5")
        console.wait_for("*** lb: usage")
        console.send("lb dlb")
        console.wait_for("dlb.p4 on 4 switches")
        tagged = console.wait_for("lcleaf0: tags on ports")
        host_ports = sorted(ln.end("lcleaf0").port for ln in spec.links_of("lcleaf0")
                            if not spec.is_switch(ln.b.node if ln.a.node == "lcleaf0"
                                                  else ln.a.node))
        assert tagged.strip() == f"lcleaf0: tags on ports {','.join(map(str, host_ports))}"

        # traffic by hand, across the spines (sprayed, then put back in order by the receiver)
        console.send("traffic lch0n0 lch1n0 --qps 2 --size 64K --messages 2")
        sent = console.wait_for("sent:     total")
        assert "packets" in sent
        for qpn in (100, 101):
            got = console.wait_for(f"received: QP {qpn} from 10.0.0.1")
            assert f"{2 * 64 * 1024} B" in got and "lost 0" in got, got
        console.send("traffic lch0n0 nosuch")
        console.wait_for("*** traffic: no NIC named 'nosuch'")
    finally:
        rc = console.close()
    assert rc == 0, "".join(console.out)
    assert not list(run.glob("*.lb.sock")), "the socket outlived the fabric"


def test_a_students_program_with_pcaps_and_trace_logs_and_lb_only_turning_its_knob(tmp_path):
    """The labs' debugging path as the handouts give it: `up --program` a student's flowlet
    program with `--pcap DIR` (a directory that does not exist yet), `--log-level trace`;
    `lb flowlet 20000` sets the gap of that program, `lb dlb` refuses to replace it."""
    pytest.importorskip("p4switch.compiler", reason="the p4switch compiler is not in the tree")
    from fabric_lab.closedbook import pipeline_copy
    from fabric_lab.labkit import lab

    flowlet = lab(2)
    work = tmp_path / "lab2"
    work.mkdir()
    pipeline_copy(work / "include", flowlet.withheld, flowlet.file, flowlet.own_controls)
    program = work / flowlet.file
    program.write_text(flowlet.solution.read_text())
    spec = FABRICS["labs-lb-plot"].apply(
        build_fabric("leafspine", leaves=2, spines=2, hosts_per_leaf=1))
    model = tmp_path / "lp.json"
    model.write_text(spec.to_json())
    pcaps, logs = tmp_path / "pcap" / "new", tmp_path / "logs"
    env = {**os.environ, "FABRIC_LAB_RUN_DIR": str(tmp_path / "run"), "PYTHONUNBUFFERED": "1"}
    env.pop("FABRIC_LAB_FABRIC", None)
    console = Console([sys.executable, "-m", "fabric_lab.cli", "up", str(model), "--target",
                       "p4switch", "--program", str(program), "--pcap", str(pcaps),
                       "--log-dir", str(logs), "--log-level", "trace"], env)
    try:
        console.wait_for("  total ")
        console.send("lb flowlet 20000")
        console.wait_for("flowlet_lab.p4 on 4 switches (flowlet mode)")
        console.wait_for("lpleaf0: flowlet gap 20000 us")
        console.send("lb dlb")
        refused = console.wait_for("*** lb: ")
        assert "flowlet_lab.p4 (flowlet mode), which has no dlb mechanism" in refused
        console.send("lb")
        console.wait_for("flowlet_lab.p4 on 4 switches (flowlet mode)")  # still the student's
        console.send("traffic lph0n0 lph1n0 --qps 2 --size 16K --messages 1")
        console.wait_for("received: QP 101 from 10.0.0.1")
    finally:
        rc = console.close()
    assert rc == 0, "".join(console.out)
    captured = {path.name for path in pcaps.iterdir()}
    assert "lpleaf0-eth1_in.pcap" in captured and "lpleaf0-eth1_out.pcap" in captured, captured
    assert any((pcaps / name).stat().st_size > 24 for name in captured)  # beyond the header
    assert "transmit" in (logs / "lpleaf0.log").read_text()  # trace: every packet sent

    # with no controller running (`up --run CMD`), lb connects itself: it refuses all the same
    direct = subprocess.run([sys.executable, "-m", "fabric_lab.cli", "up", str(model), "--target",
                             "p4switch", "--program", str(program), "--run",
                             f"{sys.executable} -m fabric_lab.cli lb --mode dlb --target p4switch"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert direct.returncode == 1, direct.stdout + direct.stderr
    assert "a program of your own on lpleaf0 (flowlet mode)" in direct.stderr, direct.stderr
