"""Run a collective schedule over real hosts, step by step.

Every host gets two workers (`traffic.worker`): one receives, one sends, and both live for the
whole collective. For each step the runner arms the receivers of that step's destinations with
the flows they must get, starts the senders (one RDMA WRITE message per flow, the host's rate
shared equally among its flows of the step, all starting at one agreed moment) and waits for
every receiver to have delivered all its bytes in order. A step's time runs from the earliest
first send to the latest last arrival (process control is not counted); the total is the sum
of the steps. A step still running after `step_timeout_s` ends there: its senders and receivers
stop and report what they did, and the step is incomplete.

Flows tagged NVLINK (GPUs of one server, `jobs`) are not sent: each GPU moves its NVLink bytes
of a step at `nvlink_bps` per direction, in parallel with the step's fabric flows, so such a
step lasts max(fabric time, NVLink time) and its NVLink part never touches a fabric link.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from traffic.agent import Agent
from traffic.collectives.schedule import NVLINK, Schedule, Step
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
    fabric_s: float = 0.0  # first send to last arrival of the fabric flows
    nvlink_s: float = 0.0  # the busiest GPU's NVLink bytes at nvlink_bps
    nvlink_bytes: int = 0
    wrong_packets: int = 0  # receivers' payload check (traffic.payload), when it is on
    wrong: int = 0  # wrong 4-byte elements
    # per rank: when its last byte of the step arrived, from the step's start (0: nothing)
    rank_end_s: list[float] = field(default_factory=list)
    # per rank: bytes it received in the step (fabric: as its receiver counted; NVLink: modelled)
    rank_bytes: list[int] = field(default_factory=list)
    # (source IP, receiving host) of every queue pair the receivers got packets from
    received_from: list[tuple[str, str]] = field(default_factory=list)


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

    @property
    def wrong(self) -> int:
        return sum(s.wrong for s in self.steps)

    @property
    def rank_end_s(self) -> list[float]:
        """Per rank, the sum over steps of when its last byte of the step arrived."""
        return [sum(s.rank_end_s[r] for s in self.steps if s.rank_end_s) for r in range(self.ranks)]

    def to_dict(self, busbw_factor: float = 1.0) -> dict[str, Any]:
        return {
            "name": self.name, "ranks": self.ranks, "size": self.size, "hosts": self.hosts,
            "total_s": self.total_s, "complete": self.complete,
            "algbw_bps": self.algbw_bps, "busbw_bps": self.busbw_bps(busbw_factor),
            "wrong": self.wrong,
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
                 receiver: dict[str, Any] | None = None,
                 nvlink_bps: float | None = None) -> None:
        """`tag`: hosts add the DLB reorder tag; `sender`/`receiver`: extra SenderConfig /
        ReceiverConfig fields for every step (e.g. {"cnp_on_out_of_order": True});
        `nvlink_bps`: the NVLink rate per GPU and direction (schedules with NVLINK flows)."""
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
        self.nvlink_bps = nvlink_bps
        self._rx: dict[str, Agent] = {}
        self._tx: dict[str, Agent] = {}
        unique = list({h.name: h for h in self.hosts}.values())
        agents = Agent.start_many([h for h in unique for _ in ("rx", "tx")])
        for i, h in enumerate(unique):
            self._rx[h.name], self._tx[h.name] = agents[2 * i], agents[2 * i + 1]

    def worker_pids(self) -> list[int]:
        """Per rank, the process id of its host's receiving worker."""
        return [self._rx[h.name].proc.pid for h in self.hosts]

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

    def _nvlink(self, step: Step, ranks: int) -> tuple[float, list[float], int]:
        """NVLink time of a step (its busiest GPU, in or out), per-rank arrival times, bytes."""
        out, into = [0] * ranks, [0] * ranks
        for f in step.flows:
            if f.link == NVLINK:
                out[f.src] += f.bytes
                into[f.dst] += f.bytes
        nbytes = sum(out)
        if not nbytes:
            return 0.0, [0.0] * ranks, 0
        if not self.nvlink_bps:
            raise ValueError("the schedule has NVLink flows: give the runner an nvlink_bps")
        rate = self.nvlink_bps
        return max(*out, *into) * 8 / rate, [b * 8 / rate for b in into], nbytes

    def _run_step(self, index: int, step: Step, ranks: int) -> StepResult:
        by_dst: dict[str, list[dict[str, Any]]] = defaultdict(list)
        by_src: dict[str, list[dict[str, Any]]] = defaultdict(list)
        dst_rank: dict[int, int] = {}
        nvlink_s, rank_end, nvlink_bytes = self._nvlink(step, ranks)
        rank_bytes = [sum(f.bytes for f in step.flows if f.link == NVLINK and f.dst == r)
                      for r in range(ranks)]
        for f in step.flows:
            if f.link == NVLINK:
                continue  # time, not packets
            src, dst = self.hosts[f.src], self.hosts[f.dst]
            if src.name == dst.name:
                continue  # ranks sharing a host exchange in memory
            qpn = flow_qpn(f.src, f.dst, ranks)
            dst_rank[qpn] = f.dst
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
        fabric_s = max(ends) - min(starts) if starts and ends else 0.0
        for q in qps:
            r = dst_rank.get(q["qpn"])
            if r is not None:
                rank_bytes[r] += q["bytes"]
            if r is not None and q["last_t"] and starts:
                rank_end[r] = max(rank_end[r], q["last_t"] - min(starts))
        return StepResult(
            index=index, phase=step.phase, flows=len(step.flows),
            bytes=sum(f.bytes for f in step.flows),
            time_s=max(fabric_s, nvlink_s),
            complete=complete,
            lost_packets=sum(q["lost"] for q in qps),
            out_of_order=sum(q["out_of_order"] for q in qps),
            receiver_drops=sum(g["socket_drops"] for g in got),
            packets=sum(q["packets"] for q in qps),
            tagged_packets=sum(q["tagged"] for q in qps),
            fabric_s=fabric_s, nvlink_s=nvlink_s, nvlink_bytes=nvlink_bytes,
            wrong_packets=sum(q.get("wrong_packets", 0) for q in qps),
            wrong=sum(q.get("wrong_elements", 0) for q in qps),
            rank_end_s=rank_end, rank_bytes=rank_bytes,
            received_from=sorted((q["src_ip"], name) for name, g in zip(by_dst, got, strict=True)
                                 for q in g["qps"] if q["packets"]),
        )


def run_collective(schedule: Schedule, hosts: Sequence[Host], rate_bps: float,
                   **kwargs: Any) -> CollectiveResult:
    """One-shot: start workers, run the schedule, stop the workers."""
    on_step = kwargs.pop("on_step", None)
    with CollectiveRunner(hosts, rate_bps, **kwargs) as runner:
        return runner.run(schedule, on_step)
