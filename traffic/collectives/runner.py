"""Run a collective schedule over real hosts, step by step.

Every host gets two workers (`traffic.worker`): one receives, one sends, and both live for the
whole collective. For each step the runner arms the receivers of that step's destinations with
the flows they must get, starts the senders (one RDMA WRITE message per flow, the host's rate
shared equally among its flows of the step, all starting at one agreed moment) and waits for
every receiver to have delivered all its bytes in order. A step's time runs from the earliest
first send to the latest last arrival (process control is not counted); the total is the sum
of the steps. A step still running after `step_timeout_s` ends there: its senders and receivers
stop and report what they did, and the step is incomplete.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from traffic.agent import Agent
from traffic.collectives.schedule import Schedule, Step
from traffic.hosts import Host


@dataclass
class StepResult:
    index: int
    phase: str
    flows: int
    bytes: int
    time_s: float
    complete: bool  # every flow delivered all its bytes
    lost_packets: int = 0
    out_of_order: int = 0
    receiver_drops: int = 0  # frames the receivers' sockets overflowed on (CPU starved)
    packets: int = 0
    tagged_packets: int = 0  # arrived with the DLB reorder tag (host- or switch-added)


@dataclass
class CollectiveResult:
    name: str
    ranks: int
    size: int
    hosts: list[str]  # rank -> host name
    steps: list[StepResult] = field(default_factory=list)

    @property
    def total_s(self) -> float:
        return sum(s.time_s for s in self.steps)

    @property
    def complete(self) -> bool:
        return all(s.complete for s in self.steps)

    @property
    def algbw_bps(self) -> float:
        return self.size * 8 / self.total_s if self.total_s > 0 else 0.0

    def busbw_bps(self, factor: float) -> float:
        return self.algbw_bps * factor

    def to_dict(self, busbw_factor: float = 1.0) -> dict[str, Any]:
        return {
            "name": self.name, "ranks": self.ranks, "size": self.size, "hosts": self.hosts,
            "total_s": self.total_s, "complete": self.complete,
            "algbw_bps": self.algbw_bps, "busbw_bps": self.busbw_bps(busbw_factor),
            "steps": [asdict(s) for s in self.steps],
        }


START_MARGIN_S = 0.02  # per sending host: time to deliver a request and build templates


def flow_qpn(src: int, dst: int, ranks: int) -> int:
    """A QPN per (src, dst) rank pair, so every flow has its own QP and UDP source port."""
    return 1 + src * ranks + dst


class CollectiveRunner:
    """Workers on a rank -> host placement; `run(schedule)` may be called repeatedly."""

    def __init__(self, hosts: Sequence[Host], rate_bps: float, mtu_payload: int = 1024,
                 step_timeout_s: float = 60.0, tag: bool = False,
                 sender: dict[str, Any] | None = None,
                 receiver: dict[str, Any] | None = None) -> None:
        """`tag`: hosts add the DLB reorder tag; `sender`/`receiver`: extra SenderConfig /
        ReceiverConfig fields for every step (e.g. {"cnp_on_out_of_order": True})."""
        if rate_bps <= 0:
            raise ValueError(f"rate must be > 0 b/s, got {rate_bps}")
        if len(hosts) < 2:
            raise ValueError("a collective needs at least 2 ranks")
        self.hosts = list(hosts)
        self.rate_bps = rate_bps
        self.mtu_payload = mtu_payload
        self.step_timeout_s = step_timeout_s
        self.tag = tag
        self.sender_extra = sender or {}
        self.receiver_extra = receiver or {}
        self._rx: dict[str, Agent] = {}
        self._tx: dict[str, Agent] = {}
        unique = list({h.name: h for h in self.hosts}.values())
        agents = Agent.start_many([h for h in unique for _ in ("rx", "tx")])
        for i, h in enumerate(unique):
            self._rx[h.name], self._tx[h.name] = agents[2 * i], agents[2 * i + 1]

    def close(self) -> None:
        for agent in [*self._rx.values(), *self._tx.values()]:
            agent.close()
        self._rx.clear()
        self._tx.clear()

    def __enter__(self) -> CollectiveRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, schedule: Schedule,
            on_step: Callable[[StepResult], None] | None = None) -> CollectiveResult:
        if schedule.ranks != len(self.hosts):
            raise ValueError(f"schedule has {schedule.ranks} ranks, placement has "
                             f"{len(self.hosts)} hosts")
        result = CollectiveResult(schedule.name, schedule.ranks, schedule.size,
                                  [h.name for h in self.hosts])
        for i, step in enumerate(schedule.steps):
            res = self._run_step(i, step, schedule.ranks)
            result.steps.append(res)
            if on_step:
                on_step(res)
        return result

    def _run_step(self, index: int, step: Step, ranks: int) -> StepResult:
        by_dst: dict[str, list[dict[str, Any]]] = defaultdict(list)
        by_src: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for f in step.flows:
            src, dst = self.hosts[f.src], self.hosts[f.dst]
            if src.name == dst.name:
                continue  # ranks sharing a host exchange in memory
            qpn = flow_qpn(f.src, f.dst, ranks)
            by_dst[dst.name].append({"src_ip": src.ip, "qpn": qpn, "bytes": f.bytes})
            by_src[src.name].append({"dst_ip": dst.ip, "qpn": qpn, "message_bytes": f.bytes,
                                     "messages": 1, "tag": self.tag})
        ifaces = {h.name: h.iface for h in self.hosts}
        for name, expect in by_dst.items():
            self._rx[name].start_recv({
                "iface": ifaces[name], "expect": expect, "duration_s": self.step_timeout_s,
                "idle_timeout_s": 2.0, **self.receiver_extra,
            })
        # Senders start together: each is told when, a little after all requests are out.
        start_at = time.time() + START_MARGIN_S * (1 + len(by_src))
        for name, qps in by_src.items():
            for qp in qps:
                qp["rate_bps"] = self.rate_bps / len(qps)  # the NIC's rate, shared
            self._tx[name].start_send({"iface": ifaces[name], "qps": qps, "start_at": start_at,
                                       "mtu_payload": self.mtu_payload,
                                       "duration_s": self.step_timeout_s, **self.sender_extra})
        deadline = time.monotonic() + self.step_timeout_s + 30
        sent = [self._tx[n].result(max(1.0, deadline - time.monotonic())) for n in by_src]
        got = [self._rx[n].result(max(1.0, deadline - time.monotonic())) for n in by_dst]
        starts = [q["start"] for s in sent for q in s["qps"]]
        ends = [q["last_t"] for g in got for q in g["qps"] if q["last_t"]]
        complete = True
        for name, expect in by_dst.items():
            g = got[list(by_dst).index(name)]
            have = {(q["src_ip"], q["qpn"]): q for q in g["qps"]}
            for e in expect:
                q = have.get((e["src_ip"], e["qpn"]))
                if q is None or q["bytes"] < e["bytes"] or q["lost"]:
                    complete = False
        qps = [q for g in got for q in g["qps"]]
        return StepResult(
            index=index, phase=step.phase, flows=len(step.flows),
            bytes=sum(f.bytes for f in step.flows),
            time_s=max(ends) - min(starts) if starts and ends else 0.0,
            complete=complete,
            lost_packets=sum(q["lost"] for q in qps),
            out_of_order=sum(q["out_of_order"] for q in qps),
            receiver_drops=sum(g["socket_drops"] for g in got),
            packets=sum(q["packets"] for q in qps),
            tagged_packets=sum(q["tagged"] for q in qps),
        )


def run_collective(schedule: Schedule, hosts: Sequence[Host], rate_bps: float,
                   **kwargs: Any) -> CollectiveResult:
    """One-shot: start workers, run the schedule, stop the workers."""
    on_step = kwargs.pop("on_step", None)
    with CollectiveRunner(hosts, rate_bps, **kwargs) as runner:
        return runner.run(schedule, on_step)
