"""Setting one of a switch's own interfaces administratively down (`ip link set X down`, what
`topos.mininet.failures.set_link` does to a link's switch-side interface) must not stop the switch
from forwarding between its other ports.

BMv2 fails this: its single receive thread (behavioral-model src/BMI/bmi_port.c `run_select`)
reads every port through a blocking libpcap handle (src/BMI/bmi_interface.c: `pcap_set_timeout`
and immediate mode, no `pcap_setnonblock`); once the interface is down, `pcap_next_ex` on it does
not return, so no port receives anything any more (the rx counters stop) and the switch does
not recover when the interface comes back up. Losing the far end's carrier (the other tests'
link failures) does not trigger it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.differential.packets import udp
from tests.differential.rig import Rig, exchange, rig

pytestmark = [pytest.mark.root, pytest.mark.timeout(300)]

BMV2_WEDGES = ("BMv2's receive thread blocks in pcap_next_ex on an administratively down "
               "interface and stops receiving on every port (src/BMI/bmi_port.c run_select)")


@pytest.fixture(params=["p4switch",
                        pytest.param("bmv2", marks=[pytest.mark.bmv2, pytest.mark.xfail(
                            strict=True, reason=BMV2_WEDGES)])])
def switch(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Rig]:
    with rig(request.param, "ecmp", tmp_path) as r:
        yield r


def forwards_to_host(r: Rig, tries: int = 10) -> bool:
    """Frames from spine port 2 to h0n0 leave on port 1 (probed up to `tries` times)."""
    for i in range(tries):
        (emitted,) = exchange([r], 2, [udp(41000 + i, dst="10.0.0.1", port=2)], quiet=0.2)
        if [p for p, _ in emitted] == [1]:
            return True
    return False


def test_other_ports_keep_forwarding_while_a_port_is_admin_down(switch: Rig) -> None:
    assert forwards_to_host(switch, tries=1)
    switch.set_port_admin(3, up=False)
    try:
        assert forwards_to_host(switch), f"{switch.target} stopped forwarding port 2 -> 1"
    finally:
        switch.set_port_admin(3, up=True)
    assert forwards_to_host(switch, tries=20), f"{switch.target} did not recover"
    switch.check_alive("forwarding after port 3 came back")
