"""Processes the lab starts end with the process that started them, however it ends (SIGKILL
included), and not before: a worker thread that asked for them may end first."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from killed_helpers import pids_in_netns, wait_gone

from topos.mininet.runstate import ProcessRecord, netns_inode

SPAWNER = Path(__file__).with_name("spawner.py")


def start(*args: str) -> tuple[subprocess.Popen, dict[str, ProcessRecord]]:
    proc = subprocess.Popen([sys.executable, str(SPAWNER), *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()  # blocks until every child has started (or the spawner died)
    if not line.strip():
        proc.kill()
        raise AssertionError(f"spawner did not start: {proc.stderr.read()}")
    return proc, {what: ProcessRecord.of(pid, what, what)
                  for what, pid in json.loads(line).items()}


def kill_and_check(proc: subprocess.Popen, children: dict[str, ProcessRecord]) -> None:
    try:
        # the worker thread that spawned them has ended: they still run
        assert all(rec.alive() for rec in children.values())
    finally:
        proc.kill()
        proc.wait()
    left = [what for what, rec in children.items() if not wait_gone(rec, 10.0)]
    assert left == []


def test_a_spawned_process_ends_with_its_parent_not_with_the_thread() -> None:
    proc, children = start("plain")
    assert set(children) == {"sleep"}
    kill_and_check(proc, children)


@pytest.mark.root
@pytest.mark.mininet
def test_host_processes_and_a_traffic_agent_end_with_the_lab() -> None:
    proc, children = start("host", f"kr{os.getpid() % 100000}")
    assert set(children) == {"shell", "sleep", "agent"}
    inode = netns_inode(children["shell"].pid)
    assert inode is not None and inode != netns_inode(os.getpid())
    # the agent runs inside the host's namespace, as itself (not behind a forked mnexec/nsenter)
    assert netns_inode(children["agent"].pid) == inode
    assert netns_inode(children["sleep"].pid) == inode
    # `popen` in a node detaches into a session of its own, as Mininet's `mnexec -d` does
    assert os.getsid(children["sleep"].pid) == children["sleep"].pid
    assert Path(f"/proc/{children['agent'].pid}/cmdline").read_bytes().split(b"\0")[1:4] == [
        b"-m", b"traffic", b"worker"]
    kill_and_check(proc, children)
    assert pids_in_netns({inode}) == []
    assert proc.returncode == -signal.SIGKILL
