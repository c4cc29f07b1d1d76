"""Project-wide test configuration: skip what this machine cannot run, with the reason."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

# Tests press Ctrl-C on the runs they start (SIGINT). A shell starts a background job with SIGINT
# ignored, and ignored signals are inherited: the runs would not hear it. Handled, it is reset to
# the default in every child, as in a terminal.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# The tests' fabrics listen on fixed gRPC and thrift ports (names and ports no other test uses),
# many inside the kernel's ephemeral range (32768-60999): an outgoing connection of anything on
# the machine may hold one as its source port, and the switch then cannot bind it. For the
# session those ranges are reserved (not handed out as source ports), then restored.
TEST_FABRIC_PORTS = "34000-35999,39000-49999,52000-57999"
RESERVED_PORTS = Path("/proc/sys/net/ipv4/ip_local_reserved_ports")


@pytest.fixture(scope="session", autouse=True)
def _fabric_ports_not_ephemeral() -> Iterator[None]:
    before = None
    if os.geteuid() == 0:
        try:
            before = RESERVED_PORTS.read_text().strip()
            RESERVED_PORTS.write_text(",".join(p for p in (before, TEST_FABRIC_PORTS) if p))
        except OSError:  # not writable here (a container): the ports stay as they are
            before = None
    try:
        yield
    finally:
        if before is not None:
            RESERVED_PORTS.write_text(before or "\n")


def _bmv2_available() -> bool:
    return bool(shutil.which("simple_switch_grpc") and shutil.which("p4c-bm2-ss"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    is_root = os.geteuid() == 0
    has_bmv2 = _bmv2_available()
    for item in items:
        if not is_root and ("root" in item.keywords or "mininet" in item.keywords):
            item.add_marker(pytest.mark.skip(reason="needs root (network namespaces)"))
        if not has_bmv2 and "bmv2" in item.keywords:
            item.add_marker(pytest.mark.skip(reason="BMv2 (simple_switch_grpc, p4c-bm2-ss) not on PATH"))
