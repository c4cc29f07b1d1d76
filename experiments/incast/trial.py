"""One incast under one congestion setting: senders, receiver, victim flow, telemetry, metrics.

The senders on the first leaf each write one message to the receiver on the second leaf at the
same moment; the victim flow runs from beside the senders to beside the receiver for the whole
time (it shares the leaf uplink and the spine's downlink, not the congested port). Telemetry
samples the four data queues on the way. Everything is measured, nothing is assumed: drops are
the traffic manager's tail drops, losses the receiver's PSN gaps, pauses what the hosts obeyed.

BMv2 counts no tail drops (a full queue discards the packet silently) and cannot pause: there the
drop columns come from the P4 counters' balance (`incast_drops`: data in minus data out of the
receiver's leaf, and of the spine and the senders' leaf), `drops_counted_by` says which, and
`spine_paused_s` is the time the pause agent held the spine's queue at its paused rate. The
balances are in the summary on both targets (`balance_*`), so p4switch shows how they compare
with its traffic manager's counts. `lost` is what the receiver never got; with go-back-N the
senders resend dropped packets (`retransmitted`), so a lossy setting can still lose nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from controller.congestion import (
    ROCE_CLASSES,
    CongestionConfig,
    EcnProfile,
    PfcConfig,
    TrimConfig,
)
from experiments.framework.telemetry import TelemetrySampler
from experiments.incast.drops import incast_balances, settled
from experiments.incast.lab import DATA_PRIORITY, CongestionLab, IncastRoles
from mechanisms.pfc import STATE_REGISTERS
from targets import Target
from traffic.receiver import ExpectedFlow, ReceiverConfig
from traffic.sender import QueuePairConfig, SenderConfig

# "trim": switches trim past trim_depth; "sr": senders and receiver retransmit selectively
SETTINGS = ("none", "ecn", "pfc", "ecn+pfc", "trim", "trim+sr", "sr")
# a go-back-N sender whose receiver stopped listening retries until its timeouts are spent:
# 8 expiries of 0.5 s doubling by default (traffic.sender.SenderConfig, traffic.gbn) = 127.5 s
SENDER_GIVE_UP_S = 150.0
FRAME_BITS = 1082 * 8  # a 1024-byte RoCEv2 WRITE on the wire
PFC_REGISTERS = STATE_REGISTERS  # zeroed between trials


def drops_counted_by(target: Target) -> str:
    """Where a trial's drop counts come from on `target`: its traffic manager's tail drops, or
    (a traffic manager that reports none) the balance of the P4 counters."""
    return ("traffic manager tail drops" if target.caps.reports_tm_stats
            else "counter balance; BMv2 counts no tail drops")


SUMMARY_FIELDS = ["setting", "drops_congested", "drops_fabric", "drops_counted_by", "ring_drops",
                  "balance_congested", "balance_spine", "balance_leaf", "retransmitted", "lost",
                  "trimmed", "messages_complete",
                  "senders", "completion_s", "goodput_mbps", "peak_queue_congested",
                  "peak_queue_upstream", "peak_queue_leaf_uplink", "ecn_marked", "cnps",
                  "rate_cuts", "host_pause_frames", "host_paused_s", "spine_paused_s",
                  "victim_mbps_before", "victim_mbps_during", "victim_slowdown",
                  "victim_received"]


def congestion_config(setting: str, params: dict[str, Any]) -> CongestionConfig:
    if setting not in SETTINGS:
        raise ValueError(f"unknown setting {setting!r}; choose from {', '.join(SETTINGS)}")
    ecn = EcnProfile(params["kmin"], params["kmax"], params["pmax"]) if "ecn" in setting else None
    pfc = (PfcConfig(params["xoff"], params["xon"], params["quanta"], params["refresh_us"],
                     params["link_mbps"]) if "pfc" in setting else None)
    trim = TrimConfig(params["trim_depth"]) if "trim" in setting else None
    return CongestionConfig(ecn=ecn, pfc=pfc, dscp_priority=ROCE_CLASSES, trim=trim).check()


@dataclass
class TrialResult:
    summary: dict[str, Any]
    series: list[dict[str, Any]]  # telemetry rows, t_s from the incast start


def run_trial(lab: CongestionLab, roles: IncastRoles, setting: str, params: dict[str, Any],
              agents: dict[str, Any]) -> TrialResult:
    """`agents`: NIC name -> traffic Agent, reused across trials."""
    lab.configure(congestion_config(setting, params))
    for channel in lab.channels.values():
        for name in PFC_REGISTERS:
            channel.command(f"register_reset {name}")
    message = params["message_kb"] * 1024
    host_bps = params["host_pps"] * FRAME_BITS
    link_bps = params["link_mbps"] * 1e6
    qpns = {nic: 0x100 + i for i, nic in enumerate(roles.senders)}
    victim_qpn = 0x200

    interval_s = params["sample_ms"] / 1000  # a sample takes ~5 ms on either target
    agents_paused = _agents_paused(lab, roles)
    balances = incast_balances(lab.spec, roles)
    balance_before = settled(lab.channels, balances)
    ring_before = lab.kernel_drops()
    sampler = TelemetrySampler(lab.channels, roles.watched(), target=lab.target,
                               interval_s=interval_s).start()
    try:
        rx, vrx = agents[roles.receiver], agents[roles.victim_dst]
        selective = "sr" in setting.split("+")
        rx.start_recv(ReceiverConfig(
            iface=lab.iface(roles.receiver), idle_timeout_s=params["idle_s"],
            selective=selective,
            expect=[ExpectedFlow(lab.ip(nic), qpn, message) for nic, qpn in qpns.items()]))
        vrx.start_recv(ReceiverConfig(iface=lab.iface(roles.victim_dst), idle_timeout_s=1.0,
                                      duration_s=params["victim_s"] + 2.0))
        t_victim = time.time() + 0.3
        t_incast = t_victim + params["victim_lead_s"]
        agents[roles.victim_src].start_send(SenderConfig(
            iface=lab.iface(roles.victim_src), link_bps=link_bps, start_at=t_victim,
            duration_s=params["victim_s"],
            qps=[QueuePairConfig(lab.ip(roles.victim_dst), victim_qpn,
                                 rate_bps=params["victim_pps"] * FRAME_BITS, messages=None)]))
        for nic, qpn in qpns.items():
            agents[nic].start_send(SenderConfig(
                iface=lab.iface(nic), link_bps=link_bps, start_at=t_incast, selective=selective,
                qps=[QueuePairConfig(lab.ip(roles.receiver), qpn, rate_bps=host_bps,
                                     message_bytes=message)]))
        received = rx.result(params["victim_s"] + 60)
        sent = [agents[nic].result(SENDER_GIVE_UP_S) for nic in qpns]
        victim_sent = agents[roles.victim_src].result(params["victim_s"] + 30)
        victim = vrx.result(params["victim_s"] + 30)
    finally:
        rows = sampler.stop()
    balance_after = settled(lab.channels, balances)
    ring_drops = lab.kernel_drops_since(ring_before)
    if sampler.errors:
        raise RuntimeError(f"telemetry failed: {sampler.errors[0]}")
    if lab.pause_agents is not None and lab.pause_agents.errors:
        raise RuntimeError(f"pause agent failed: {lab.pause_agents.errors[0]}")
    offset = t_incast - sampler.t0
    for row in rows:
        row["t_s"] = round(row["t_s"] - offset, 4)
        row["setting"] = setting
    incast_end = max((q["last_t"] for q in received["qps"]), default=t_incast)
    summary = _summary(setting, roles, rows, received, sent, victim_sent, victim,
                       t_incast, incast_end, params)
    summary["drops_counted_by"] = drops_counted_by(lab.target)
    # frames the switches' receive rings dropped: a switch that fell behind, not a queue
    summary["ring_drops"] = "" if ring_drops is None else ring_drops
    for key in balances:
        summary[f"balance_{key}"] = balance_after[key] - balance_before[key]
    if not lab.target.caps.reports_tm_stats:  # the balances are the drops
        summary["drops_congested"] = summary["balance_congested"]
        summary["drops_fabric"] = summary["balance_spine"] + summary["balance_leaf"]
    summary["retransmitted"] = sum(q["retransmitted_packets"] for s in sent for q in s["qps"])
    if agents_paused is not None:
        paused_now = _agents_paused(lab, roles)
        assert paused_now is not None  # the pause agents run until the lab stops
        summary["spine_paused_s"] = round(paused_now - agents_paused, 3)
    return TrialResult(summary, rows)


def _agents_paused(lab: CongestionLab, roles: IncastRoles) -> float | None:
    """Seconds BMv2's pause agent has held the spine's queue at the paused rate (None on
    p4switch, whose traffic manager reports its own pause state)."""
    if lab.pause_agents is None:
        return None
    return lab.pause_agents.paused_time(*roles.spine_down, DATA_PRIORITY)


def _delta(rows: list[dict], key: str, queue: tuple[str, int]) -> int | float | None:
    """Growth of a cumulative column over the trial; None where the target lacks it (the
    traffic manager's columns on BMv2)."""
    values = [r[key] for r in rows if (r["switch"], r["port"]) == queue and key in r]
    return values[-1] - values[0] if values else None


def _sum(values) -> int | None:
    values = list(values)
    return None if None in values else sum(values)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _peak(rows: list[dict], queue: tuple[str, int]) -> int:
    return max((r["depth_max"] for r in rows if (r["switch"], r["port"]) == queue), default=0)


def _victim_mbps(rows: list[dict], queue: tuple[str, int], lo: float, hi: float) -> float:
    """Throughput of the victim's egress port between t = lo and hi (s from the incast start)."""
    series = [r for r in rows if (r["switch"], r["port"]) == queue and lo <= r["t_s"] <= hi]
    if len(series) < 2:
        return 0.0
    packets = series[-1]["tx_packets"] - series[0]["tx_packets"]
    return packets * FRAME_BITS / (series[-1]["t_s"] - series[0]["t_s"]) / 1e6


def _summary(setting: str, roles: IncastRoles, rows: list[dict], received: dict,
             sent: list[dict], victim_sent: dict, victim: dict, t_incast: float,
             incast_end: float, params: dict[str, Any]) -> dict[str, Any]:
    qps = received["qps"]
    span = incast_end - min((q["first_t"] for q in qps), default=incast_end)
    during = max(incast_end - t_incast, 0.2)
    # the victim sends from -victim_lead_s to victim_s - victim_lead_s: a long incast (lossy
    # settings resend for seconds) outlasts it, and idle time must not count as its throughput
    victim_end = params["victim_s"] - params["victim_lead_s"]
    before = _victim_mbps(rows, roles.victim_port, -params["victim_lead_s"] + 0.1, -0.05)
    in_incast = _victim_mbps(rows, roles.victim_port, 0.0, min(during, victim_end))
    return {
        "setting": setting,
        "drops_congested": _delta(rows, "dropped", roles.congested),
        "drops_fabric": _sum(_delta(rows, "dropped", q) for q in
                             (roles.spine_down, roles.leaf_up, roles.victim_port)),
        "lost": sum(q["lost"] for q in qps),
        "trimmed": sum(q["trimmed"] for q in qps),
        "messages_complete": sum(q["messages_complete"] for q in qps),
        "senders": len(roles.senders),
        "completion_s": round(incast_end - t_incast, 3),
        "goodput_mbps": round(sum(q["bytes"] for q in qps) * 8 / span / 1e6, 3) if span else 0,
        "peak_queue_congested": _peak(rows, roles.congested),
        "peak_queue_upstream": _peak(rows, roles.spine_down),
        "peak_queue_leaf_uplink": _peak(rows, roles.leaf_up),
        "ecn_marked": _delta(rows, "ecn_marked", roles.congested),
        "cnps": sum(q["cnps"] for s in sent for q in s["qps"]),
        "rate_cuts": sum(q["rate_cuts"] for s in sent for q in s["qps"]),
        "host_pause_frames": sum(s["pause_frames"] for s in sent) + victim_sent["pause_frames"],
        "host_paused_s": round(max([s["paused_s"] for s in sent] + [victim_sent["paused_s"]]), 3),
        "spine_paused_s": _round(_delta(rows, "paused_s", roles.spine_down)),
        "victim_mbps_before": round(before, 3),
        "victim_mbps_during": round(in_incast, 3),
        "victim_slowdown": round(before / in_incast, 2) if in_incast > 0 else None,
        "victim_received": victim["packets"],
    }
