"""The rules that turn counters and INT records into named links, one `Finding` per link and
symptom, ranked by how bad it is.

A link direction is named by its sending end and its receiving end, `leaf0:3 -> spine1:1` (a
NIC's end by its port index). Symptoms:

- `drops`: frames that left one end and never reached the other. From the port counters, on a
  link between two switches: what the near end's egress counted minus what the far end's ingress
  counted over the same interval. From INT, on any link: the probes lost on flows whose path the
  probes that did arrive show (a flow keeps its ECMP path), explained greedily by the link that
  accounts for most of them.
- `slow`: an egress that serves below its link's rate. Two consecutive INT records of the same
  egress, the first of which left packets queued behind it (`qdepth` >= 1), bracket a time in
  which that port sent without pause: their `tx_bytes` difference over their `egress_ts`
  difference is the rate it really serves at.
- `paused`: an egress queue of the lossless class held by PFC: pause frames received on the port
  over the interval, or the traffic manager reporting it paused (p4switch) in most samples. A
  paused queue also serves slowly; it is reported as paused, not slow.

Scores are fractions (loss, rate shortfall, time paused), so symptoms rank together.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from controller.diagnose.counters import PauseSampler, Port, Snapshot
from controller.diagnose.probes import Flow, Probe
from topos.model import FabricSpec, Link
from traffic.inband import HopRecord

# Counters: the two ends are read a few ms apart and frames are in flight at each reading;
# after the probes drained, the difference is exact, and with other traffic running the frames
# in flight at the two readings nearly cancel. 5 frames and 5% keep that skew out and still
# catch the lab's silent drops (the demo drops 30%).
DROP_MIN_LOST = 5
DROP_MIN_FRACTION = 0.05
# INT: a probe is late (not lost) while the agents still listen; a flow of 12 probes losing 2
# to a 10%-dropping link is the least the rule is meant to see.
PATH_MIN_LOST = 2
PATH_MIN_FRACTION = 0.1
# A port serving at half its link rate or less while backlogged is degraded; a healthy port
# serves at its link rate (or its queue never builds and gives no pair at all). Three pairs
# make the median robust to one record stamped late by a busy switch process.
SLOW_MAX_FRACTION = 0.5
SLOW_MIN_PAIRS = 3
# Paused in at least half the samples of the interval (a healthy incast pauses in bursts).
PAUSED_MIN_FRACTION = 0.5
TX_BYTES_MOD = 1 << 32


@dataclass
class Finding:
    src: str  # the sending end, "switch:port" or "nic:port"
    dst: str  # the receiving end
    symptom: str  # drops | slow | paused
    score: float  # 0..1, the fraction that is bad
    evidence: dict[str, Any] = field(default_factory=dict)

    @property
    def link(self) -> str:
        return f"{self.src} -> {self.dst}"

    def ends(self) -> tuple[str, str]:
        """The two node names, sending end first."""
        return self.src.rsplit(":", 1)[0], self.dst.rsplit(":", 1)[0]

    def to_dict(self) -> dict[str, Any]:
        return {"link": self.link, "src": self.src, "dst": self.dst, "symptom": self.symptom,
                "score": round(self.score, 4), "evidence": self.evidence}


def _end(node: str, port: int) -> str:
    return f"{node}:{port}"


class Directions:
    """A fabric's link directions by their sending end (switch or NIC, port)."""

    def __init__(self, spec: FabricSpec) -> None:
        self.spec = spec
        self.by_end: dict[Port, Link] = {}
        for ln in spec.links:
            self.by_end[(ln.a.node, ln.a.port)] = ln
            self.by_end[(ln.b.node, ln.b.port)] = ln
        self.switch_of = {sw.device_id: sw.name for sw in spec.switches}

    def far(self, node: str, port: int) -> Port:
        ln = self.by_end[(node, port)]
        end = ln.other(node)
        return end.node, end.port

    def path(self, hops: Iterable[HopRecord]) -> list[Port] | None:
        """The sending ends a probe's records show, in order (the NIC's own first); None when a
        record names a switch or port the fabric does not have."""
        out: list[Port] = []
        for hop in hops:
            switch = self.switch_of.get(hop.switch_id)
            if switch is None or (switch, hop.ingress_port) not in self.by_end \
                    or (switch, hop.egress_port) not in self.by_end:
                return None
            if not out:
                out.append(self.far(switch, hop.ingress_port))
            out.append((switch, hop.egress_port))
        return out


def counter_drops(spec: FabricSpec, before: Snapshot, after: Snapshot) -> list[Finding]:
    """Links between switches whose far end received less than the near end sent."""
    out = []
    for ln in spec.links:
        if not (spec.is_switch(ln.a.node) and spec.is_switch(ln.b.node)):
            continue
        for near, far in ((ln.a, ln.b), (ln.b, ln.a)):
            n, f = (near.node, near.port), (far.node, far.port)
            if n not in after.tx or f not in after.rx:
                continue
            sent = after.tx[n] - before.tx.get(n, 0)
            received = after.rx[f] - before.rx.get(f, 0)
            lost = sent - received
            if sent > 0 and lost >= DROP_MIN_LOST and lost >= DROP_MIN_FRACTION * sent:
                out.append(Finding(_end(*n), _end(*f), "drops", lost / sent, {
                    "sent": sent, "received": received, "lost": lost,
                    "seconds": round(after.t - before.t, 2), "from": "port counters"}))
    return out


def probe_drops(directions: Directions, probes: list[Probe],
                suspects: Iterable[Port] = ()) -> list[Finding]:
    """Link directions that explain the probes lost on flows of known path. Flows through two
    links in a row cannot tell them apart: a sending end the counters found dropping
    (`suspects`) is taken first, then the one fewer probes crossed."""
    suspects = set(suspects)
    by_flow: dict[Flow, list[Probe]] = defaultdict(list)
    for p in probes:
        by_flow[p.flow].append(p)
    paths: dict[Flow, list[Port]] = {}
    unknown = 0
    for flow, group in by_flow.items():
        arrived = [p for p in group if p.report is not None]
        path = directions.path(arrived[-1].report.hops) if arrived and arrived[-1].report else None
        if path is None:
            unknown += 1
            continue
        paths[flow] = path
    lost = {f: sum(1 for p in by_flow[f] if p.report is None) for f in paths}
    out = []
    left = {f for f in paths if lost[f]}
    while left:
        tally: dict[Port, tuple[int, int]] = {}
        for flow, path in paths.items():
            for end in path:
                sent, gone = tally.get(end, (0, 0))
                tally[end] = (sent + len(by_flow[flow]), gone + (lost[flow] if flow in left else 0))
        end, (sent, gone) = max(tally.items(),
                                key=lambda kv: (kv[1][1], kv[0] in suspects, -kv[1][0]))
        if gone < PATH_MIN_LOST or gone < PATH_MIN_FRACTION * sent:
            break
        far = directions.far(*end)
        flows = {f for f in left if end in paths[f]}
        out.append(Finding(_end(*end), _end(*far), "drops", gone / sent, {
            "probes_sent": sent, "probes_lost": gone, "flows": len(flows),
            "flows_without_arrival": unknown, "from": "INT probes"}))
        left -= flows
    return out


def slow_egresses(directions: Directions, probes: list[Probe],
                  excluded: Iterable[Port] = ()) -> list[Finding]:
    """Egresses that, backlogged, serve at most SLOW_MAX_FRACTION of their link rate (those in
    `excluded`, found paused, left out)."""
    excluded = set(excluded)
    records: dict[Port, list[HopRecord]] = defaultdict(list)
    for p in probes:
        for hop in p.report.hops if p.report else ():
            switch = directions.switch_of.get(hop.switch_id)
            if switch is not None and (switch, hop.egress_port) in directions.by_end:
                records[(switch, hop.egress_port)].append(hop)
    out = []
    for port, hops in sorted(records.items()):
        if port in excluded:
            continue
        stats = serve_rates(hops)
        link_mbps = hops[0].link_mbps
        if len(stats) < SLOW_MIN_PAIRS or not link_mbps:
            continue
        served = statistics.median(stats)
        if served <= SLOW_MAX_FRACTION * link_mbps:
            out.append(Finding(_end(*port), _end(*directions.far(*port)), "slow",
                               1 - served / link_mbps, {
                                   "served_mbps": round(served, 3), "link_mbps": link_mbps,
                                   "pairs": len(stats), **queue_evidence(hops),
                                   "from": "INT records"}))
    return out


def serve_rates(hops: list[HopRecord]) -> list[float]:
    """Mb/s served between consecutive records of one egress while it was backlogged."""
    rates = []
    ordered = sorted(hops, key=lambda h: h.egress_ts)
    for first, second in pairwise(ordered):
        dt_us = second.egress_ts - first.egress_ts
        if first.qdepth < 1 or dt_us <= 0:
            continue
        sent = (second.tx_bytes - first.tx_bytes) % TX_BYTES_MOD
        rates.append(sent * 8 / dt_us)  # bits per µs = Mb/s
    return rates


def queue_evidence(hops: list[HopRecord]) -> dict[str, int]:
    return {"qdepth_max": max(h.qdepth for h in hops),
            "hop_latency_max_us": max(h.hop_latency for h in hops)}


def paused_queues(directions: Directions, before: Snapshot, after: Snapshot,
                  sampler: PauseSampler, tm_stats: bool) -> list[Finding]:
    """Egress queues of the data class held by PFC over the interval."""
    out = []
    for port in sorted(after.pfc_rx):
        frames = after.pfc_rx[port] - before.pfc_rx.get(port, 0)
        paused = sampler.paused.get(port, 0)
        fraction = paused / sampler.samples if sampler.samples else 0.0
        if tm_stats and sampler.samples:
            bad = fraction >= PAUSED_MIN_FRACTION
            score = fraction
        else:  # no pause state to sample (BMv2): the pause frames are the evidence
            bad, score = frames > 0, 1.0
        if not bad:
            continue
        evidence: dict[str, Any] = {"pfc_frames_rx": frames, "from": "PFC counters"}
        if tm_stats:
            evidence.update({"paused_samples": paused, "samples": sampler.samples,
                             "paused_s": round(paused * sampler.interval_s, 2),
                             "depth_max": sampler.depth_max.get(port, 0),
                             "from": "PFC counters, traffic manager"})
        out.append(Finding(_end(*port), _end(*directions.far(*port)), "paused", score,
                           evidence))
    return out


def rank(findings: Iterable[Finding]) -> list[Finding]:
    """One finding per link direction and symptom (evidence of both sources merged), the worst
    first."""
    merged: dict[tuple[str, str], Finding] = {}
    for f in findings:
        key = (f.link, f.symptom)
        if key in merged:
            have = merged[key]
            have.score = max(have.score, f.score)
            have.evidence = {**f.evidence, **have.evidence,
                             "from": f"{have.evidence.get('from')}, {f.evidence.get('from')}"}
        else:
            merged[key] = f
    return sorted(merged.values(), key=lambda f: (-f.score, f.link, f.symptom))
