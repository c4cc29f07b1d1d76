"""The web view's INT panel: the path of a chosen flow hop by hop (switch, ports, queue depth and
queueing delay from the INT records of probes sent along it), and the link `fabric-lab
diagnose` names, marked on the drawing.

    panel = IntPanel(spec, target)              # hosts from this process's fabric's run state
    panel.trace("h0n0", "h3n0")                 # the page's "Trace" button
    panel.diagnose()                            # the page's "Diagnose" button
    Sources(inband=panel.state)                 # the snapshot's "int" section

A trace sends `rounds` bursts of `burst` probes on one flow (one UDP source port, so one ECMP
path) from the source NIC's namespace and reads the records of those that arrived.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from controller.diagnose.findings import Directions
from controller.diagnose.hosts import fabric_hosts, running_fabric
from controller.diagnose.probes import SPORT_BASE, Flow, ProbePlan, run_probes
from controller.diagnose.run import Diagnosis, describe, diagnose
from targets import Target
from topos.errors import FabricLabError
from topos.mininet.failures import link_name
from topos.model import FabricSpec
from traffic.hosts import Host


class IntPanelError(FabricLabError, ValueError):
    """A trace between NICs the fabric does not have, or one that brought nothing back."""


class IntPanel:
    def __init__(self, spec: FabricSpec, target: Target | str,
                 hosts: Callable[[], Mapping[str, Host]] | None = None, *,
                 rounds: int = 2, burst: int = 4) -> None:
        self.spec, self.target = spec, target
        self._hosts = hosts or (  # the fabric this process runs (`fabric-lab up --web`)
            lambda: fabric_hosts(spec, running_fabric(spec.name, owner=os.getpid())))
        self.rounds, self.burst = rounds, burst
        self.directions = Directions(spec)
        self._lock = threading.Lock()  # one trace or diagnosis at a time
        self._state_lock = threading.Lock()
        self._flow: dict[str, Any] | None = None
        self._diagnosis: dict[str, Any] | None = None

    def run(self, request: dict) -> str:
        """The page's request: {"action": "int", "src": NIC, "dst": NIC} or "diagnose"."""
        if request.get("action") == "diagnose":
            return self.diagnose()
        return self.trace(str(request.get("src", "")), str(request.get("dst", "")),
                          int(request.get("sport") or SPORT_BASE))

    def trace(self, src: str, dst: str, sport: int = SPORT_BASE) -> str:
        nics = {n.name for n in self.spec.host_nics()}
        wrong = [f"{what} {name!r}" for what, name in (("source", src), ("destination", dst))
                 if name not in nics]
        if wrong or src == dst:
            raise IntPanelError(f"trace: {', '.join(wrong) or 'source and destination are one'}"
                                f" (want two NICs of {self.spec.name})")
        plan = ProbePlan([Flow(src, dst, sport)], rounds=self.rounds, burst=self.burst)
        with self._lock:
            result = run_probes(self.spec, plan, self._hosts(), idle_s=0.5, max_s=5.0)
        arrived = result.arrived()
        flow: dict[str, Any] = {"src": src, "dst": dst, "sport": sport, "t": time.time(),
                                "sent": len(result.probes), "arrived": len(arrived), "hops": []}
        if arrived:
            flow["hops"] = self._hops([p.report.hops for p in arrived if p.report])
        with self._state_lock:
            self._flow = flow
        if not arrived:
            return f"trace {src} -> {dst}: none of {len(result.probes)} probes arrived"
        path = " > ".join(h["switch"] for h in flow["hops"])
        return f"trace {src} -> {dst}: {len(arrived)} of {len(result.probes)} probes via {path}"

    def _hops(self, records: list) -> list[dict[str, Any]]:
        """Per hop of the last probe: where it went, its queue and delay, the worst of all."""
        last = records[-1]
        out = []
        for i, hop in enumerate(last):
            switch = self.directions.switch_of.get(hop.switch_id, f"id {hop.switch_id}")
            ln = self.directions.by_end.get((switch, hop.egress_port))
            same = [r[i] for r in records if len(r) > i and r[i].switch_id == hop.switch_id]
            out.append({"switch": switch, "switch_id": hop.switch_id,
                        "ingress_port": hop.ingress_port, "egress_port": hop.egress_port,
                        "link": link_name(ln) if ln else "", "link_mbps": hop.link_mbps,
                        "qdepth": hop.qdepth, "hop_latency_us": hop.hop_latency,
                        "qdepth_max": max(h.qdepth for h in same),
                        "hop_latency_max_us": max(h.hop_latency for h in same)})
        return out

    def diagnose(self) -> str:
        with self._lock:
            result = diagnose(self.spec, self._hosts(), self.target)
        with self._state_lock:
            self._diagnosis = self._summary(result)
        named = result.named
        if named is None:
            return "diagnose: no bad link found"
        return f"diagnose: {named.link} {named.symptom} ({describe(named)})"

    def _summary(self, d: Diagnosis) -> dict[str, Any]:
        findings = []
        for f in d.findings:
            node, port = f.src.rsplit(":", 1)
            ln = self.directions.by_end.get((node, int(port)))
            findings.append({**f.to_dict(), "link_name": link_name(ln) if ln else "",
                             "text": describe(f)})
        return {"t": time.time(), "seconds": round(d.seconds, 2), "sent": d.probes_sent,
                "arrived": d.probes_arrived, "findings": findings,
                "named": findings[0] if findings else None}

    def state(self) -> dict[str, Any] | None:
        """The snapshot's "int" section: the last trace and the last diagnosis."""
        with self._state_lock:
            return {"flow": self._flow, "diagnosis": self._diagnosis,
                    "nics": [n.name for n in self.spec.host_nics()]}
