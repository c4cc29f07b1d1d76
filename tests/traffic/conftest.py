"""Fixtures for the traffic tests: namespaces named tr<random>, always removed."""

from __future__ import annotations

import os
import secrets
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from traffic import netns
from traffic.agent import Agent
from traffic.hosts import NetnsHost


def _prefix() -> str:
    return "tr" + secrets.token_hex(2)


@pytest.fixture(scope="module")
def loopback_ns() -> Iterator[str]:
    """A namespace with only its loopback up (root), for a module's paced senders and
    receivers: port 4791 there is theirs."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    name = _prefix()
    subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True)
    try:
        subprocess.run(["ip", "-n", name, "link", "set", "lo", "up"], check=True,
                       capture_output=True)
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)


@pytest.fixture
def pair_net() -> Iterator[netns.Testbed]:
    tb = netns.pair(_prefix())
    try:
        yield tb
    finally:
        tb.close()


@pytest.fixture
def relayed_net() -> Iterator[netns.Testbed]:
    tb = netns.relayed_pair(_prefix())
    try:
        yield tb
    finally:
        tb.close()


@pytest.fixture
def star4() -> Iterator[netns.Testbed]:
    tb = netns.star(_prefix(), 4)
    try:
        yield tb
    finally:
        tb.close()


RunFlow = Callable[..., tuple[dict[str, Any], dict[str, Any]]]


@pytest.fixture
def run_flow() -> RunFlow:
    """Receive on `rx`, then send from `tx`; returns (send result, receive result)."""

    def run(tx: NetnsHost, rx: NetnsHost, qps: list[dict[str, Any]],
            send: dict[str, Any] | None = None, recv: dict[str, Any] | None = None):
        recv_cfg = {"iface": rx.iface, "idle_timeout_s": 0.5, "duration_s": 30, **(recv or {})}
        send_cfg = {"iface": tx.iface, "qps": qps, **(send or {})}
        with Agent(rx) as ra, Agent(tx) as ta:
            ra.start_recv(recv_cfg)
            ta.start_send(send_cfg)
            sent = ta.result(60)
            got = ra.result(60)
        return sent, got

    return run
