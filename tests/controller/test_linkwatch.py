"""Link events from interface state, on a real veth pair."""

from __future__ import annotations

import subprocess
import time

import pytest

from controller.linkwatch import LinkWatcher
from topos.model import Endpoint, FabricSpec, Host, Link, Nic, Switch

pytestmark = pytest.mark.root


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def next_changes(watcher: LinkWatcher, timeout: float = 3.0) -> list:
    """Poll until the kernel shows a change (operstate updates are deferred a little)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        changes = watcher.poll()
        if changes:
            return changes
        time.sleep(0.01)  # polling interval of the probe loop
    return []


@pytest.fixture
def veth():
    _ip("link", "add", "ctlw-s1", "type", "veth", "peer", "name", "ctlw-h1")
    try:
        _ip("link", "set", "ctlw-s1", "up")
        _ip("link", "set", "ctlw-h1", "up")
        yield "ctlw-s1", "ctlw-h1"
    finally:
        subprocess.run(["ip", "link", "del", "ctlw-s1"], check=False, capture_output=True)


def test_changes_are_reported_once_per_transition(veth):
    spec = FabricSpec(
        name="ctlw", kind="test", switches=[Switch("ctsw", "leaf", 1, device_id=1)],
        hosts=[Host("ctsrv", [Nic("ctnic", "10.0.0.1", "02:00:0a:00:00:01")])],
        links=[Link(Endpoint("ctsw", 1, veth[0]), Endpoint("ctnic", 0, veth[1]))])
    watcher = LinkWatcher(spec, lambda *_: None)
    assert watcher.poll() == []
    assert watcher.down_now() == []
    _ip("link", "set", veth[1], "down")  # the far end going down takes the carrier away
    assert next_changes(watcher) == [("ctsw", 1, False)]
    assert watcher.poll() == []
    assert watcher.down_now() == [("ctsw", 1)]
    _ip("link", "set", veth[1], "up")
    assert next_changes(watcher) == [("ctsw", 1, True)]
