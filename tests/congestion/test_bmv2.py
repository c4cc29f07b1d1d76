"""The incast on BMv2, where PFC frames go to the controller's pause agents (BMv2 cannot pause
a queue; controller/pfc_agent.py). Skipped where BMv2 is not installed."""

from __future__ import annotations

import pytest

from experiments.incast_lab import CongestionLab, incast_fabric
from experiments.incast_trial import run_trial
from tests.congestion.helpers import PARAMS

pytestmark = [pytest.mark.bmv2, pytest.mark.mininet, pytest.mark.slow, pytest.mark.timeout(600)]


def test_pause_agents_carry_pfc_on_bmv2() -> None:
    spec, roles = incast_fabric(3, prefix="cv", grpc_base=46559, thrift_base=46090)
    with CongestionLab(spec, host_pps=PARAMS["host_pps"], fabric_pps=PARAMS["fabric_pps"],
                       depth=PARAMS["depth"], link_mbps=PARAMS["link_mbps"],
                       target="bmv2") as lab:
        nics = [*roles.senders, roles.receiver, roles.victim_src, roles.victim_dst]
        agents = {nic: lab.agent(nic) for nic in nics}
        params = {**PARAMS, "sample_ms": 500}
        none = run_trial(lab, roles, "none", params, agents).summary
        pfc = run_trial(lab, roles, "pfc", params, agents).summary
        frames = sum(agent.frames for agent in lab.pause_agents.agents.values())
    assert none["lost"] > 0
    assert frames > 0  # punted PFC frames reached the agents
    assert pfc["host_pause_frames"] > 0  # and the hosts obeyed theirs
    assert pfc["lost"] < none["lost"]
