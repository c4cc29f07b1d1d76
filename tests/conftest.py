"""Project-wide test configuration: skip what this machine cannot run, with the reason; under
pytest-xdist (`make test` runs `-n 2 --dist loadgroup`), the tests that start networks, switches
or change the machine run one after another in one worker, and the rest beside them."""

from __future__ import annotations

import os
import shutil
import signal

import pytest

# Tests press Ctrl-C on the runs they start (SIGINT). A shell starts a background job with SIGINT
# ignored, and ignored signals are inherited: the runs would not hear it. Handled, it is reset to
# the default in every child, as in a terminal.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _bmv2_available() -> bool:
    return bool(shutil.which("simple_switch_grpc") and shutil.which("p4c-bm2-ss"))


# Tests that start networks or switches, time what they see, or set the machine up: in one
# xdist group, so they never run two at a time or beside each other's interfaces and processes.
SERIAL_MARKERS = ("root", "mininet", "bmv2", "slow")
SERIAL_DIRS = ("tests/lab/", "tests/killed_run/")  # provisioning, launchers, owners; clean
SERIAL_GROUP = "one-at-a-time"


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    is_root = os.geteuid() == 0
    has_bmv2 = _bmv2_available()
    for item in items:
        if item.get_closest_marker("xdist_group") is None and (  # a module's own group stands
                any(m in item.keywords for m in SERIAL_MARKERS) or item.nodeid.startswith(SERIAL_DIRS)):
            item.add_marker(pytest.mark.xdist_group(SERIAL_GROUP))
        if not is_root and ("root" in item.keywords or "mininet" in item.keywords):
            item.add_marker(pytest.mark.skip(reason="needs root (network namespaces)"))
        if not has_bmv2 and "bmv2" in item.keywords:
            item.add_marker(pytest.mark.skip(reason="BMv2 (simple_switch_grpc, p4c-bm2-ss) not on PATH"))
