"""The incast's quick variant on BMv2, where PFC frames go to the controller's pause agents
(BMv2 cannot pause a queue: controller/pfc_agent.py) and drops are counted by the P4 counters'
balance (BMv2 counts no tail drops: experiments/incast/drops.py). Skipped where BMv2 is not
installed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from experiments.incast.lab import DATA_PRIORITY, CongestionLab, incast_fabric
from experiments.incast.trial import drops_counted_by, run_trial
from targets import BMV2
from tests.congestion.helpers import PARAMS
from tests.ports import FABRICS

CV = FABRICS["congestion-bmv2"]

pytestmark = [pytest.mark.bmv2, pytest.mark.mininet, pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def bmv2_incast() -> Iterator[tuple[CongestionLab, Any, dict[str, dict]]]:
    """The quick incast on BMv2 without ECN/PFC, with PFC and with both."""
    spec, roles = incast_fabric(3, prefix=CV.prefix, grpc_base=CV.grpc, thrift_base=CV.thrift)
    with CongestionLab(spec, host_pps=PARAMS["host_pps"], fabric_pps=PARAMS["fabric_pps"],
                       depth=PARAMS["depth"], link_mbps=PARAMS["link_mbps"],
                       target="bmv2") as lab:
        nics = [*roles.senders, roles.receiver, roles.victim_src, roles.victim_dst]
        agents = {nic: lab.agent(nic) for nic in nics}
        runs = {setting: run_trial(lab, roles, setting, PARAMS, agents).summary
                for setting in ("none", "pfc", "ecn+pfc")}
        yield lab, roles, runs


def test_without_pfc_the_congested_port_drops(bmv2_incast) -> None:
    _, _, runs = bmv2_incast
    none = runs["none"]
    assert none["drops_counted_by"] == drops_counted_by(BMV2)
    assert none["drops_congested"] > 0  # by counter balance: BMv2 counts no tail drops
    assert none["retransmitted"] > 0  # and the senders resent them
    assert none["host_pause_frames"] == 0 and none["spine_paused_s"] == 0


@pytest.mark.parametrize("setting", ["pfc", "ecn+pfc"])
def test_pfc_on_bmv2_is_lossless_and_the_messages_complete(bmv2_incast, setting) -> None:
    _, _, runs = bmv2_incast
    run = runs[setting]
    assert run["drops_congested"] == 0  # the congested queue never overflows
    assert run["lost"] == 0 and run["messages_complete"] == run["senders"]
    # (the fabric's own queues are lossless only while the agents react within ~50 ms: a
    # slowed queue's upstream keeps sending until its own agent acts; docs/mechanisms/pfc.md)
    assert run["spine_paused_s"] > 0  # the pause agent slowed the spine's queue
    assert run["host_pause_frames"] > 0  # and the pause propagated to the senders


def test_pause_agents_slow_the_queue_and_restore_its_rate(bmv2_incast) -> None:
    lab, roles, runs = bmv2_incast
    spine = lab.pause_agents.agents[roles.spine_down[0]]
    assert spine.frames > 0  # punted PFC frames reached the agent
    assert not spine.is_paused(roles.spine_down[1], DATA_PRIORITY)  # restored after the trials
    # PFC's head-of-line blocking: the victim shares the paused queues
    pfc = runs["pfc"]
    assert pfc["victim_mbps_during"] < 0.6 * pfc["victim_mbps_before"]
