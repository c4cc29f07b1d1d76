"""One traffic pattern under one congestion control: flows, receivers, telemetry, metrics.

Patterns on a leaf-spine of two leaves and one spine (`cc_fabric`, on the framework's
`CongestionLab`: switch queues shaped in packets/s are the bottleneck):
- `incast`: every host of the first leaf writes one message to the first host of the second;
- `alltoall`: four hosts (two per leaf) each write one message to each of the three others.
Every data packet asks for INT (5 records) whatever the congestion control, so the queue each
packet met is measured the same way for all: the receivers count, per switch and egress port,
the queue depth (packets) each packet's record shows (`int_qdepth_hist`). Pauses and drops come
from the switches' telemetry (`TelemetrySampler`) and the senders' pause counters; FCTs from the
receivers (send stamp in the first packet to last byte delivered).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from controller.congestion import ROCE_CLASSES, CongestionConfig, EcnProfile, PfcConfig
from controller.inband import configure_int
from experiments.framework.congestion_lab import DATA_PRIORITY, CongestionLab
from experiments.framework.telemetry import TelemetrySampler
from mechanisms.pfc import STATE_REGISTERS
from topos import FabricSpec, build_fabric
from topos.relocate import prefixed
from traffic.agent import Agent
from traffic.receiver import ExpectedFlow, ReceiverConfig
from traffic.sender import QueuePairConfig, SenderConfig

PATTERNS = ("incast", "alltoall")
CCS = ("none", "dcqcn", "hpcc")
PAYLOAD = 1024  # RDMA payload per packet
INT_HOPS = 5
# a data frame as the last switch of a 3-hop path counts it (tx_bytes: as received there):
# 1082 B of RoCEv2 WRITE, the 4-byte INT shim and two records
INT_FRAME_BYTES = 1082 + 4 + 2 * 24
SENDER_GIVE_UP_S = 150.0  # go-back-N's retries spent (see experiments/incast/trial.py)

SUMMARY_FIELDS = ["pattern", "cc", "flows", "messages_complete", "goodput_mbps", "utilisation",
                  "fct_slowdown_p50", "fct_slowdown_p99", "bottleneck_queue_p50",
                  "bottleneck_queue_p99", "bottleneck_queue_max", "bottleneck_queue_mean",
                  "int_samples",
                  "host_pause_frames", "host_paused_s", "switch_xoff_frames", "switch_paused_s",
                  "drops", "retransmitted", "cnps", "rate_cuts", "min_rate_mbps",
                  "completion_s"]
QUEUE_FIELDS = ["pattern", "cc", "switch", "port", "bottleneck", "samples", "p50", "p99", "max",
                "mean"]
HIST_FIELDS = ["pattern", "cc", "switch", "port", "depth", "packets"]
FCT_FIELDS = ["pattern", "cc", "src", "dst", "bytes", "fct_s", "ideal_s", "slowdown"]


@dataclass(frozen=True)
class Roles:
    senders: tuple[str, ...]  # the incast's senders: every NIC of the first leaf
    receiver: str  # the incast's receiver: the first NIC of the second leaf
    alltoall: tuple[str, ...]  # two NICs per leaf
    leaves: tuple[str, str]
    spine: str


def cc_fabric(senders: int = 3, *, prefix: str = "cc", grpc_base: int = 30559,
              thrift_base: int = 30090) -> tuple[FabricSpec, Roles]:
    """Two leaves of `senders` NICs each and one spine, without kernel shaping; names start
    with `prefix`, management ports at the given bases (by default the experiment's, below
    the kernel's ephemeral port range)."""
    if senders < 2:
        raise ValueError(f"cc-compare needs at least two hosts per leaf, got {senders}")
    spec = prefixed(build_fabric("leafspine", leaves=2, spines=1, hosts_per_leaf=senders,
                                 rate_mbps=None, delay_ms=None, queue_pkts=None),
                    prefix, grpc_base, thrift_base)
    nics = [nic.name for nic in spec.host_nics()]
    first, second = nics[:senders], nics[senders:]
    roles = Roles(senders=tuple(first), receiver=second[0],
                  alltoall=(*first[:2], *second[:2]),
                  leaves=(f"{prefix}leaf0", f"{prefix}leaf1"), spine=f"{prefix}spine0")
    return spec, roles


@dataclass(frozen=True)
class Flow:
    src: str  # NIC names
    dst: str
    qpn: int


def flows_of(pattern: str, roles: Roles) -> list[Flow]:
    if pattern == "incast":
        return [Flow(s, roles.receiver, 0x300 + i) for i, s in enumerate(roles.senders)]
    if pattern == "alltoall":
        hosts = roles.alltoall
        return [Flow(a, b, 0x400 + 16 * i + j) for i, a in enumerate(hosts)
                for j, b in enumerate(hosts) if a != b]
    raise ValueError(f"unknown pattern {pattern!r}; choose from {', '.join(PATTERNS)}")


def congestion_config(params: dict[str, Any]) -> CongestionConfig:
    """ECN marking for DCQCN (the other two ignore CNPs) and, with `pfc`, PFC: the same
    switches for every congestion control."""
    pfc = (PfcConfig(params["xoff"], params["xon"], params["quanta"], params["refresh_us"],
                     params["link_mbps"]) if params["pfc"] else None)
    return CongestionConfig(ecn=EcnProfile(params["kmin"], params["kmax"], params["pmax"]),
                            pfc=pfc, dscp_priority=ROCE_CLASSES).check()


def set_int_rates(lab: CongestionLab) -> dict[str, dict[int, int]]:
    """Make the INT records' link rate what the queues drain: p4switch shapes in packets/s, so
    a port's rate is its queue rate x the INT data frame (B in HPCC's u = qlen/(B T) +
    txRate/B). Returns switch -> port -> Mb/s."""
    ctl = lab.session.connected()
    out = {}
    for sw in lab.spec.switches:
        rates = {port: max(1, round(lab.port_rate(sw.name, port) * INT_FRAME_BYTES * 8 / 1e6))
                 for port in sorted(lab.spec.ports(sw.name))}
        configure_int(ctl.clients[sw.name], ctl.schema, sw.device_id, rates)
        out[sw.name] = rates
    return out


def watched(lab: CongestionLab, roles: Roles) -> list[tuple[str, int, int]]:
    """Data queues the sampler reads: towards every host that receives, and the uplinks."""
    spec = lab.spec
    out = set()
    for nic in {roles.receiver, *roles.alltoall}:
        (switch, port), = spec.attachments(nic)
        out.add((switch, port, DATA_PRIORITY))
    (leaf0, leaf1), spine = roles.leaves, roles.spine
    for a, b in ((leaf0, spine), (leaf1, spine), (spine, leaf0), (spine, leaf1)):
        out.add((a, spec.port_to(a, b), DATA_PRIORITY))
    return sorted(out)


def percentile(hist: dict[int, int], q: float) -> int:
    """The q-quantile (0..1) of a depth -> packets histogram (nearest rank)."""
    total = sum(hist.values())
    if not total:
        return 0
    rank = max(1, math.ceil(round(q * total, 9)))
    seen = 0
    for depth in sorted(hist):
        seen += hist[depth]
        if seen >= rank:
            return depth
    return max(hist)


@dataclass
class TrialResult:
    summary: dict[str, Any]
    queues: list[dict[str, Any]]
    hist: list[dict[str, Any]]
    fcts: list[dict[str, Any]]


def run_trial(lab: CongestionLab, roles: Roles, pattern: str, cc: str,
              params: dict[str, Any], senders: dict[str, Agent],
              receivers: dict[str, Agent]) -> TrialResult:
    """`senders` / `receivers`: NIC -> traffic Agent, one of each per host, reused."""
    if cc not in CCS:
        raise ValueError(f"unknown congestion control {cc!r}; choose from {', '.join(CCS)}")
    for channel in lab.channels.values():
        for name in STATE_REGISTERS:
            channel.command(f"register_reset {name}")
    flows = flows_of(pattern, roles)
    message = params["message_kb"] * 1024
    host_bps = params["host_pps"] * 1082 * 8
    by_src: dict[str, list[Flow]] = {}
    by_dst: dict[str, list[Flow]] = {}
    for f in flows:
        by_src.setdefault(f.src, []).append(f)
        by_dst.setdefault(f.dst, []).append(f)
    sampler = TelemetrySampler(lab.channels, watched(lab, roles), target=lab.target,
                               interval_s=params["sample_ms"] / 1000)
    sampler.start()
    try:
        for dst, incoming in by_dst.items():
            receivers[dst].start_recv(ReceiverConfig(
                iface=lab.iface(dst), idle_timeout_s=params["idle_s"],
                expect=[ExpectedFlow(lab.ip(f.src), f.qpn, message) for f in incoming]))
        t0 = time.time() + 0.3
        for src, outgoing in by_src.items():
            senders[src].start_send(SenderConfig(
                iface=lab.iface(src), link_bps=params["link_mbps"] * 1e6, start_at=t0, cc=cc,
                hpcc_rtt_s=params["hpcc_rtt_ms"] / 1000,
                qps=[QueuePairConfig(lab.ip(f.dst), f.qpn, rate_bps=host_bps,
                                     message_bytes=message, int_hops=INT_HOPS)
                     for f in outgoing]))
        received = {dst: receivers[dst].result(SENDER_GIVE_UP_S) for dst in by_dst}
        sent = [senders[src].result(SENDER_GIVE_UP_S) for src in by_src]
    finally:
        rows = sampler.stop()
    if sampler.errors:
        raise RuntimeError(f"telemetry failed: {sampler.errors[0]}")
    return _measure(lab, pattern, cc, params, flows, received, sent, rows, t0)


def _measure(lab: CongestionLab, pattern: str, cc: str,
             params: dict[str, Any], flows: list[Flow], received: dict[str, dict],
             sent: list[dict], rows: list[dict], t0: float) -> TrialResult:
    names = {sw.device_id: sw.name for sw in lab.spec.switches}
    hists: dict[tuple[str, int], dict[int, int]] = {}
    fcts = []
    qps = {(q["src_ip"], q["qpn"]): q for r in received.values() for q in r["qps"]}
    packets = -(-params["message_kb"] * 1024 // PAYLOAD)
    ideal = packets / params["host_pps"]  # alone on its path, at the host port's rate
    for f in flows:
        q = qps.get((lab.ip(f.src), f.qpn))
        if q is None:
            continue
        for key, counts in q["int_qdepth_hist"].items():
            switch_id, port = (int(x) for x in key.split(":"))
            hist = hists.setdefault((names.get(switch_id, str(switch_id)), port), {})
            for depth, n in counts.items():
                hist[int(depth)] = hist.get(int(depth), 0) + n
        for m in q["messages"]:
            if m["fct_s"] is not None:
                fcts.append({"pattern": pattern, "cc": cc, "src": f.src, "dst": f.dst,
                             "bytes": m["bytes"], "fct_s": round(m["fct_s"], 4),
                             "ideal_s": round(ideal, 4),
                             "slowdown": round(m["fct_s"] / ideal, 3)})
    bottlenecks = {lab.spec.attachments(dst)[0] for dst in {f.dst for f in flows}}
    queues, hist_rows = [], []
    for (switch, port), hist in sorted(hists.items()):
        total = sum(hist.values())
        queues.append({"pattern": pattern, "cc": cc, "switch": switch, "port": port,
                       "bottleneck": int((switch, port) in bottlenecks), "samples": total,
                       "p50": percentile(hist, 0.5), "p99": percentile(hist, 0.99),
                       "max": max(hist), "mean": _mean(hist)})
        hist_rows += [{"pattern": pattern, "cc": cc, "switch": switch, "port": port,
                       "depth": d, "packets": n} for d, n in sorted(hist.items())]
    merged: dict[int, int] = {}
    for (switch, port), hist in hists.items():
        if (switch, port) in bottlenecks:
            for d, n in hist.items():
                merged[d] = merged.get(d, 0) + n
    all_qps = [q for r in received.values() for q in r["qps"]]
    first = min((q["first_t"] for q in all_qps if q["first_t"]), default=t0)
    last = max((q["last_t"] for q in all_qps), default=t0)
    span = last - first
    goodput = sum(q["bytes"] for q in all_qps) * 8 / span / 1e6 if span > 0 else 0.0
    capacity = len(bottlenecks) * params["host_pps"] * PAYLOAD * 8 / 1e6
    slowdowns = sorted(r["slowdown"] for r in fcts)
    summary = {
        "pattern": pattern, "cc": cc, "flows": len(flows),
        "messages_complete": sum(q["messages_complete"] for q in all_qps),
        "goodput_mbps": round(goodput, 3), "utilisation": round(goodput / capacity, 3),
        "fct_slowdown_p50": _quantile(slowdowns, 0.5),
        "fct_slowdown_p99": _quantile(slowdowns, 0.99),
        "bottleneck_queue_p50": percentile(merged, 0.5),
        "bottleneck_queue_p99": percentile(merged, 0.99),
        "bottleneck_queue_max": max(merged, default=0),
        "bottleneck_queue_mean": _mean(merged),
        "int_samples": sum(merged.values()),
        "host_pause_frames": sum(s["pause_frames"] for s in sent),
        "host_paused_s": round(max((s["paused_s"] for s in sent), default=0.0), 3),
        "switch_xoff_frames": _delta_sum(rows, "pfc_xoff_tx"),
        "switch_paused_s": _delta_sum(rows, "paused_s"),
        "drops": _delta_sum(rows, "dropped"),
        "retransmitted": sum(q["retransmitted_packets"] for s in sent for q in s["qps"]),
        "cnps": sum(q["cnps"] for s in sent for q in s["qps"]),
        "rate_cuts": sum(q["rate_cuts"] for s in sent for q in s["qps"]),
        "min_rate_mbps": round(min(q["min_rate_bps"] for s in sent for q in s["qps"]) / 1e6, 3),
        "completion_s": round(last - t0, 3),
    }
    return TrialResult(summary, queues, hist_rows, fcts)


def _mean(hist: dict[int, int]) -> float:
    total = sum(hist.values())
    return round(sum(d * n for d, n in hist.items()) / total, 3) if total else 0.0


def _quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return values[min(len(values) - 1, int(q * len(values)))]


def _delta_sum(rows: list[dict], key: str) -> float | None:
    """Growth of a cumulative column over the trial, summed over the queues (None where the
    target does not report it)."""
    by_queue: dict[tuple, list] = {}
    for r in rows:
        if key in r:
            by_queue.setdefault((r["switch"], r["port"], r["priority"]), []).append(r[key])
    if not by_queue:
        return None
    return round(sum(v[-1] - v[0] for v in by_queue.values()), 3)
