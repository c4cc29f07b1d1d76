"""FabricSession on a real two-leaf fabric: up, programmed, loops running; torn down in reverse
order on a normal exit, on Ctrl-C inside the block and when a setup hook fails."""

from __future__ import annotations

import os
import subprocess

import pytest

from experiments.framework.session import FabricSession
from mechanisms import program_path
from tests.ports import FABRICS
from topos import FabricSpec, build_fabric

pytestmark = [pytest.mark.mininet, pytest.mark.root]
PROGRAM = program_path("ecmp")


def fs_fabric() -> FabricSpec:
    return FABRICS["session"].apply(build_fabric("leafspine", leaves=2, spines=1, hosts_per_leaf=1))


def interfaces() -> set[str]:
    return set(os.listdir("/sys/class/net"))


@pytest.fixture(autouse=True)
def _needs_p4switch() -> None:
    pytest.importorskip("p4switch.compiler", reason="the p4switch compiler is not in the tree")


def test_a_session_brings_the_fabric_up_and_takes_it_down_in_reverse_order(tmp_path):
    spec = fs_fabric()
    order: list[str] = []

    def knobs(session: FabricSession):
        assert session.ctl is not None and session.rc is None  # programmed, loops not yet
        order.append("setup")
        return lambda: order.append(f"undo setup (controller {session.ctl is not None})")

    with FabricSession(spec, program=PROGRAM, log_dir=tmp_path, setup={"knobs": knobs},
                       reconverge=True, probes=True) as session:
        assert session.rc is not None and session.prober is not None
        assert session.prober.on_verdict == session.rc.isolate
        assert sum(r.writes for r in session.reports) > 0
        session.on_stop(lambda: order.append(f"late undo (loops {session.rc is not None})"))
        procs = list(session.net.state.processes)  # switches and hosts
        assert [p for p in procs if p.kind == "switch"]
        links = {ln.a.intf for ln in spec.links if spec.is_switch(ln.a.node)}
        assert links <= interfaces()
        ping = session.host(spec.hosts[0].nics[0].name).popen(
            ["ping", "-c", "1", "-W", "2", spec.host_nics()[-1].ip],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert ping.wait(10) == 0, ping.stderr.read()
    assert order == ["setup", "late undo (loops True)", "undo setup (controller True)"]
    assert session.ctl is None and session.rc is None and session.prober is None
    assert not links & interfaces(), "links left behind"
    assert not [p for p in procs if p.alive()], "processes left behind"


def test_ctrl_c_inside_the_block_still_takes_everything_down():
    spec = fs_fabric()
    session = FabricSession(spec, program=PROGRAM, reconverge=True)
    with pytest.raises(KeyboardInterrupt), session:
        links = {ln.a.intf for ln in spec.links if spec.is_switch(ln.a.node)}
        agent = session.agent(spec.host_nics()[0].name)
        raise KeyboardInterrupt
    assert agent.proc.poll() is not None, "the traffic worker outlived the session"
    assert not links & interfaces()
    assert session.rc is None and session.ctl is None


def test_a_failing_setup_hook_undoes_what_came_up_before_it():
    spec = fs_fabric()
    undone: list[str] = []

    def first(_session: FabricSession):
        return lambda: undone.append("first")

    def broken(_session: FabricSession):
        raise RuntimeError("the knob refused")

    session = FabricSession(spec, program=PROGRAM, setup={"first": first, "broken": broken},
                            reconverge=True)
    with pytest.raises(RuntimeError, match="the knob refused"):
        session.start()
    assert undone == ["first"]
    assert session.rc is None, "the loops started although setup failed"
    links = {ln.a.intf for ln in spec.links if spec.is_switch(ln.a.node)}
    assert not links & interfaces()
    session.stop()  # a second stop is harmless


def test_switches_sharing_two_processes_forward_across_both_and_stop(tmp_path):
    """leaf0, leaf1 and spine0 dealt to two p4switch processes: a ping from leaf0's host to
    leaf1's crosses both; each process logs to switches<N>.log; nothing outlives the session."""
    from targets import get_target

    spec = fs_fabric()
    target = get_target("p4switch").sharing_processes(2)
    with FabricSession(spec, program=PROGRAM, target=target, log_dir=tmp_path) as session:
        nodes = {sw.name: session.net.switch(sw.name) for sw in spec.switches}
        pids = {name: node.proc.pid for name, node in nodes.items()}
        first, second, third = (sw.name for sw in spec.switches)
        assert pids[first] == pids[third] != pids[second]  # dealt one each in turn
        recorded = [p for p in session.net.state.processes if p.kind == "switch"]
        assert sorted(p.name for p in recorded) == ["switches1", "switches2"]
        assert {p.pid for p in recorded} == set(pids.values())
        ping = session.host(spec.host_nics()[0].name).popen(
            ["ping", "-c", "3", "-i", "0.2", "-W", "2", spec.host_nics()[-1].ip],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        assert ping.wait(10) == 0, ping.stderr.read()
        assert sorted(path.name for path in tmp_path.glob("*.log")) == [
            "switches1.log", "switches2.log"]
        links = {ln.a.intf for ln in spec.links if spec.is_switch(ln.a.node)}
    assert not links & interfaces(), "links left behind"
    assert not [p for p in recorded if p.alive()], "processes left behind"
