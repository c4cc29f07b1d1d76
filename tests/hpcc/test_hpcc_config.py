"""Choosing HPCC: `SenderConfig.cc` as the one selector (the older `dcqcn` flag still works),
its defaults and the errors a bad choice gets, the CLI flag, and cc-compare's parameter check.
No network."""

from __future__ import annotations

import argparse

import pytest

from experiments.cc_compare.experiment import EXPERIMENT, check
from experiments.cc_compare.trial import percentile
from traffic.command import add_actions
from traffic.hpcc import HpccParams
from traffic.sender_config import QueuePairConfig, SenderConfig


def config(**kw) -> SenderConfig:
    return SenderConfig(iface="eth0", qps=[QueuePairConfig("10.0.0.2", 7)], **kw)


def test_cc_selects_and_the_dcqcn_flag_still_means_what_it_meant() -> None:
    assert config().congestion_control == "dcqcn" and config().ack_interval == 16
    assert config(dcqcn=False).congestion_control == "none"
    assert config(cc="none", dcqcn=True).congestion_control == "none"  # cc wins
    hpcc = config(cc="hpcc")
    assert hpcc.congestion_control == "hpcc" and hpcc.ack_interval == 1 and not hpcc.problems()
    assert config(cc="hpcc", ack_every=4).ack_interval == 4


def test_bad_choices_are_all_reported_at_once() -> None:
    problems = config(cc="timely").problems()
    assert any("one of none, dcqcn, hpcc" in p for p in problems)
    problems = SenderConfig(iface="eth0", qps=[QueuePairConfig("10.0.0.2", 7, rate_bps=0)],
                            cc="hpcc", go_back_n=False,
                            hpcc_params=HpccParams(1e6, 0.0, eta=1.5)).problems()
    assert len(problems) == 4, problems  # no ACKs, base RTT, eta, unpaced QP


def test_the_send_command_takes_cc() -> None:
    parser = argparse.ArgumentParser()
    add_actions(parser.add_subparsers(dest="action"))
    args = parser.parse_args(["send", "--iface", "eth0", "--dst", "10.0.0.2", "--cc", "hpcc",
                              "--hpcc-rtt", "4"])
    assert (args.cc, args.hpcc_rtt, args.ack_every) == ("hpcc", 4.0, None)
    with pytest.raises(SystemExit):
        parser.parse_args(["send", "--iface", "eth0", "--dst", "10.0.0.2", "--cc", "swift"])


def test_cc_compare_checks_every_parameter_and_reads_quantiles_from_histograms() -> None:
    params = {**EXPERIMENT.defaults, "patterns": ["incast", "ring"], "ccs": ["hpcc", "bbr"],
              "senders": 1, "hpcc_rtt_ms": 0}
    assert len(check(params)) == 4
    assert not check(dict(EXPERIMENT.defaults))
    hist = {0: 90, 3: 9, 40: 1}  # 100 packets
    assert (percentile(hist, 0.5), percentile(hist, 0.99), percentile(hist, 1.0)) == (0, 3, 40)
    assert percentile({}, 0.5) == 0
