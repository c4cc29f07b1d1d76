"""Provisioning waits while another package manager holds apt's locks (a fresh VM running
unattended upgrades) instead of failing. Exercised with real apt-get on a private lists
directory, whose lock a helper process holds the way apt does (fcntl)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
APT_WAIT = REPO / "scripts" / "apt_wait.sh"

pytestmark = [
    pytest.mark.skipif(shutil.which("apt-get") is None, reason="apt-get not installed"),
    pytest.mark.skipif(os.geteuid() != 0, reason="apt-get update needs root"),
]

HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o640)
fcntl.lockf(fd, fcntl.LOCK_EX)
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
"""


def private_update(root: Path) -> list[str]:
    """apt-get update options for a lists directory of its own and no sources: no network, and
    nothing of the machine's apt state is touched."""
    (root / "parts").mkdir(exist_ok=True)
    return ["update", "-o", f"Dir::State::Lists={root / 'lists'}", "-o", "Dir::Etc::SourceList=/dev/null",
            "-o", f"Dir::Etc::SourceParts={root / 'parts'}", "-o", f"Dir::Cache={root / 'cache'}"]


@pytest.fixture
def held_lock(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[subprocess.Popen[str]]:
    """The private lists lock, held for `request.param` seconds by another process."""
    (tmp_path / "lists").mkdir()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path / "lists" / "lock"),
                               str(request.param)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield holder
    finally:
        holder.terminate()
        try:
            holder.wait(timeout=5)
        except subprocess.TimeoutExpired:
            holder.kill()
            holder.wait()


def apt_wait(command: str, *args: str, wait_s: int = 60) -> subprocess.CompletedProcess[str]:
    script = f'. "{APT_WAIT}"; {command} "$@"'
    return subprocess.run(["bash", "-c", script, "apt_wait", *args], capture_output=True, text=True,
                          timeout=wait_s + 60,
                          env={**os.environ, "APT_LOCK_WAIT": str(wait_s), "APT_LOCK_POLL": "0.2",
                               "APT_WAIT_WHO": "provision"})


@pytest.mark.parametrize("held_lock", [2.0], indirect=True)
def test_update_waits_for_a_held_lists_lock(held_lock: subprocess.Popen[str], tmp_path: Path) -> None:
    plain = subprocess.run(["apt-get", *private_update(tmp_path)], capture_output=True, text=True,
                           timeout=60)
    assert plain.returncode != 0 and "Could not get lock" in plain.stderr  # what the wait is for
    done = apt_wait("apt_get", *private_update(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "provision: another package manager is running" in done.stderr
    assert held_lock.poll() is not None  # it finished only after the holder let go


@pytest.mark.parametrize("held_lock", [60.0], indirect=True)
def test_gives_up_with_a_clear_message_after_the_wait(held_lock: subprocess.Popen[str],
                                                      tmp_path: Path) -> None:
    done = apt_wait("apt_get", *private_update(tmp_path), wait_s=1)
    assert done.returncode != 0
    assert "lock was still held after 1 s" in done.stderr
    assert held_lock.poll() is None


def test_other_failures_are_not_retried(tmp_path: Path) -> None:
    done = apt_wait("with_lock_wait", "apt-get", "install", "--no-such-option")
    assert done.returncode != 0
    assert "another package manager" not in done.stderr and "still held" not in done.stderr
    assert apt_wait("with_lock_wait", "true").returncode == 0
