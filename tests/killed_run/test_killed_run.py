"""A run of `fabric-lab up` killed in every way a user can: nothing it started outlives it, and
the next run cleans what is left (saying so in one line), or refuses in one line naming the
command to run; never a traceback.

These start the real leafspine fabric on the default names and ports: run them under
`flock /tmp/fabric-lab.lock`. The run state goes to a directory of the test's own.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest
from killed_helpers import Lab, existing, fabric_interfaces, pids_in_netns, run_lab, wait_gone

from topos.mininet.cleanup import clean, remove_interfaces
from topos.mininet.runstate import RunState, load_all

pytestmark = [pytest.mark.root, pytest.mark.mininet, pytest.mark.slow]

FABRIC = "leafspine"
READY = "total"  # the last line `fabric-lab up` prints once the fabric is routed
GONE_WITHIN_S = 10.0

# `--run CMD` that prints the run-state file of the run it runs in, so the test learns the pids
# of a run that cleans up after itself
DUMP_STATE = ("--run", f"{sys.executable} -c \"import glob,json,os; "
              f"[print('STATE', json.dumps(json.load(open(p)))) for p in "
              f"glob.glob(os.environ['FABRIC_LAB_RUN_DIR'] + '/*.json')]\"")


def dumped_state(out: str) -> RunState:
    (line,) = [line for line in out.splitlines() if line.startswith("STATE ")]
    return RunState.from_dict(json.loads(line.split(" ", 1)[1]))


@pytest.fixture
def run_dir(tmp_path):
    path = tmp_path / "run"
    path.mkdir()
    yield path
    # whatever a failed test left of its own runs (recorded here, the fabric's names): removed,
    # so the next test starts from nothing; nothing else is touched
    clean(path, force=True, plans=False, timeout=2.0)
    remove_interfaces(set(fabric_interfaces(FABRIC)))


@pytest.fixture
def no_leftovers():
    assert existing(fabric_interfaces(FABRIC)) == [], "leafspine is up already (use the lock)"


def the_state(run_dir) -> RunState:
    (state,) = load_all(run_dir)
    return state


def assert_all_gone(state: RunState) -> None:
    """No process the run recorded, nothing in its hosts' namespaces, none of its interfaces."""
    left = [f"{p.kind} {p.name} pid {p.pid}" for p in state.processes
            if not wait_gone(p, GONE_WITHIN_S)]
    assert left == [], f"still running {GONE_WITHIN_S} s later: {left}"
    inodes = {p.netns for p in state.processes if p.netns is not None}
    assert inodes and pids_in_netns(inodes) == []
    assert existing(fabric_interfaces(FABRIC)) == []


def test_kill_9_takes_the_switches_along_and_the_next_run_cleans_up(run_dir, no_leftovers):
    lab = Lab(["up", FABRIC], run_dir)
    try:
        lab.wait_for(READY)
        state = the_state(run_dir)
        switches = [p for p in state.processes if p.kind == "switch"]
        assert len(switches) == 6 and all(p.alive() for p in switches)
        assert existing(fabric_interfaces(FABRIC)) != []
    finally:
        lab.kill()  # SIGKILL: nothing of the run's own teardown runs
    assert lab.proc.returncode == -signal.SIGKILL
    # the switch processes, host and node shells end with it (parent-death signal) ...
    left = [f"{p.kind} {p.name}" for p in state.processes if not wait_gone(p, GONE_WITHIN_S)]
    assert left == []
    # ... while the switch-to-switch links (root namespace) and the run state stay behind
    assert existing(fabric_interfaces(FABRIC)) != []
    assert [s.path for s in load_all(run_dir)] == [state.path]

    rc, out = run_lab(["up", FABRIC, *DUMP_STATE], run_dir)
    assert rc == 0, out
    said = [line for line in out.splitlines() if "cleaned up after a killed" in line]
    assert len(said) == 1, out
    assert said[0].startswith(f"fabric-lab: cleaned up after a killed {FABRIC} run "
                              f"(pid {state.owner.pid}, started ")
    # nothing left to stop (the processes went with the run), its links to remove
    assert "stopped 0 process(es)" in said[0] and "removed 0 interface" not in said[0]
    assert "Traceback" not in out
    second = dumped_state(out)
    assert second.owner.pid != state.owner.pid and len(second.processes) == len(state.processes)
    assert_all_gone(second)
    assert load_all(run_dir) == []


def test_a_live_run_is_refused_in_one_line_and_sigterm_tears_down(run_dir, no_leftovers):
    lab = Lab(["up", FABRIC], run_dir)
    try:
        lab.wait_for(READY)
        state = the_state(run_dir)
        rc, out = run_lab(["up", FABRIC, "--run", "true"], run_dir)
        assert rc == 1
        errors = [line for line in out.splitlines() if line.startswith("fabric-lab up: ")]
        assert len(errors) == 1 and "Traceback" not in out, out
        assert f"run (pid {state.owner.pid}" in errors[0] and "still running" in errors[0]
        assert "sudo fabric-lab clean --force" in errors[0]
        # the refused run touched nothing of the live one
        assert all(p.alive() for p in state.processes)
        assert [s.path for s in load_all(run_dir)] == [state.path]
        lab.proc.send_signal(signal.SIGTERM)  # at the Mininet CLI
        assert lab.finish() == 128 + signal.SIGTERM, lab.output
    finally:
        lab.kill()
    assert_all_gone(state)
    assert load_all(run_dir) == []


def test_sigint_tears_down_like_ctrl_c(run_dir, no_leftovers):
    lab = Lab(["up", FABRIC, "--run", "sleep 600"], run_dir)
    try:
        lab.wait_for(READY)
        state = the_state(run_dir)
        lab.proc.send_signal(signal.SIGINT)
        assert lab.finish() == 130, lab.output
        assert "interrupted; taking the fabric down" in lab.output
    finally:
        lab.kill()
    assert "Traceback" not in lab.output
    assert_all_gone(state)
    assert load_all(run_dir) == []


def test_an_unrecorded_interface_in_the_way_is_one_line(run_dir, no_leftovers):
    name = fabric_interfaces(FABRIC)[0]
    subprocess.run(["ip", "link", "add", name, "type", "veth", "peer", "name", "killedrun0"],
                   check=True)
    try:
        rc, out = run_lab(["up", FABRIC, "--run", "true"], run_dir)
        assert rc == 1
        assert "Traceback" not in out
        errors = [line for line in out.splitlines() if line.startswith("fabric-lab up: ")]
        assert errors == [f"fabric-lab up: interface {name} already exists and no recorded run "
                          f"owns it (a network with the same names?); `sudo fabric-lab clean` "
                          f"removes the lab's interfaces"], out
        # nothing of ours was removed, nothing was created
        assert existing([name, "killedrun0"]) == [name, "killedrun0"]
        assert existing(fabric_interfaces(FABRIC)) == [name]
        assert load_all(run_dir) == []
    finally:
        subprocess.run(["ip", "link", "del", name], check=False)


def test_an_unreadable_run_state_is_one_line(run_dir, no_leftovers):
    bad = run_dir / f"{FABRIC}-1-1.json"
    bad.write_text("{not json")
    rc, out = run_lab(["up", FABRIC, "--run", "true"], run_dir)
    assert rc == 1 and "Traceback" not in out, out
    errors = [line for line in out.splitlines() if line.startswith("fabric-lab up: ")]
    assert len(errors) == 1 and errors[0].startswith(f"fabric-lab up: {bad}: not a readable "
                                                     f"run-state file"), out
    assert errors[0].endswith(f"`sudo rm {bad}`")
    assert existing(fabric_interfaces(FABRIC)) == []
    bad.unlink()
