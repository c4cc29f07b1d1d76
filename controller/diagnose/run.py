"""One diagnosis of a running fabric: counters, INT probes between its NICs, counters again, and
the findings ranked (`findings`).

    d = diagnose(spec, hosts, "p4switch")        # hosts: NIC name -> traffic.hosts.Host
    print(d.table())                              # or d.to_dict() (`fabric-lab diagnose --json`)
    d.findings[0].link                            # "leaf0:3 -> spine1:1"

It takes a few seconds: the probe agents start, every NIC sends its bursts (`ProbePlan`), the
agents listen until their probes are in or a second passes without one, and the counters are
read around it all, the pause state every quarter second meanwhile.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from controller.diagnose.counters import PauseSampler, PortReader, Snapshot
from controller.diagnose.findings import (
    Directions,
    Finding,
    counter_drops,
    paused_queues,
    probe_drops,
    rank,
    slow_egresses,
)
from controller.diagnose.probes import ProbePlan, ProbeResult, run_probes
from targets import Target, get_target
from topos.model import FabricSpec
from traffic.hosts import Host

LATENCY_SATURATED = 0xFFFF  # an INT record's hop_latency (µs) stops there


@dataclass
class Diagnosis:
    fabric: str
    target: str
    seconds: float
    probes_sent: int
    probes_arrived: int
    nics: int
    findings: list[Finding]
    result: ProbeResult | None = field(default=None, repr=False)

    @property
    def named(self) -> Finding | None:
        """The worst finding, None when nothing is wrong."""
        return self.findings[0] if self.findings else None

    def to_dict(self) -> dict[str, Any]:
        return {"fabric": self.fabric, "target": self.target, "seconds": round(self.seconds, 2),
                "probes": {"sent": self.probes_sent, "arrived": self.probes_arrived,
                           "nics": self.nics},
                "findings": [{"rank": i + 1, **f.to_dict()}
                             for i, f in enumerate(self.findings)]}

    def table(self) -> str:
        """What a person reads: one line per finding, the worst first."""
        head = (f"{self.fabric} ({self.target}): {self.probes_arrived} of {self.probes_sent} "
                f"INT probes arrived between {self.nics} NICs; {self.seconds:.1f} s")
        if not self.findings:
            return head + "\nno bad link found: nothing drops, every backlogged egress serves " \
                          "at its link rate, no data queue is held paused"
        width = max(len(f.link) for f in self.findings)
        lines = [head, f"{'#':>2}  {'link':<{width}}  {'symptom':<7}  {'score':>5}  evidence"]
        for i, f in enumerate(self.findings, 1):
            lines.append(f"{i:>2}  {f.link:<{width}}  {f.symptom:<7}  {f.score:>5.2f}  "
                         f"{describe(f)}")
        return "\n".join(lines)


def describe(f: Finding) -> str:
    """The evidence in words and numbers."""
    e = f.evidence
    parts = []
    if "sent" in e:
        parts.append(f"{e['lost']} of {e['sent']} frames sent never arrived "
                     f"(port counters, {e['seconds']} s)")
    if "probes_sent" in e:
        parts.append(f"{e['probes_lost']} of {e['probes_sent']} probes on {e['flows']} flow(s) "
                     f"through it lost")
    if "served_mbps" in e:
        latency = e["hop_latency_max_us"]
        waited = f"up to {latency / 1000:.1f} ms" if latency < LATENCY_SATURATED else \
            f"{LATENCY_SATURATED / 1000:.1f} ms or more"
        parts.append(f"serves {e['served_mbps']:g} of {e['link_mbps']} Mb/s while backlogged "
                     f"({e['pairs']} INT record pairs); up to {e['qdepth_max']} pkts queued, "
                     f"waiting {waited}")
    if "pfc_frames_rx" in e:
        text = f"{e['pfc_frames_rx']} PFC frames received"
        if "samples" in e:
            text += (f", data queue paused in {e['paused_samples']} of {e['samples']} samples "
                     f"(~{e['paused_s']} s), up to {e['depth_max']} pkts waiting")
        parts.append(text)
    return "; ".join(parts)


def diagnose(spec: FabricSpec, hosts: Mapping[str, Host], target: Target | str, *,
             nics: Sequence[str] | None = None, plan: ProbePlan | None = None,
             pause_interval_s: float = 0.25) -> Diagnosis:
    """Probe the fabric between `nics` (default: all) and name what is wrong."""
    target = get_target(target)
    plan = plan or ProbePlan.between(spec, nics)
    started = time.monotonic()
    with PortReader(spec, target) as reader:
        before = reader.snapshot()
        sampler = PauseSampler(reader, pause_interval_s)
        sampler.add(before)
        result = sampler.during(lambda: run_probes(spec, plan, hosts))
        after = reader.snapshot()
        sampler.add(after)
    return Diagnosis(spec.name, target.name, time.monotonic() - started,
                     len(result.probes), len(result.arrived()),
                     len({f.src for f in plan.flows} | {f.dst for f in plan.flows}),
                     analyse(spec, before, after, sampler, result, reader.tm_stats), result)


def analyse(spec: FabricSpec, before: Snapshot, after: Snapshot, sampler: PauseSampler,
            result: ProbeResult, tm_stats: bool) -> list[Finding]:
    """Every rule over one interval's measurements, ranked."""
    directions = Directions(spec)
    paused = paused_queues(directions, before, after, sampler, tm_stats)
    drops = counter_drops(spec, before, after)
    suspects = {_port(f.src) for f in drops}
    return rank([*drops, *probe_drops(directions, result.probes, suspects),
                 *slow_egresses(directions, result.probes, {_port(f.src) for f in paused}),
                 *paused])


def _port(end: str) -> tuple[str, int]:
    node, port = end.rsplit(":", 1)
    return node, int(port)
