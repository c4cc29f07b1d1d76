"""Run collective schedules over the GPUs of a running fabric (`FabricSession`).

`JobRunner` places rank r on the namespace of the NIC beside ranks[r] and runs schedules with
`traffic.collectives.runner.CollectiveRunner`: fabric flows as real RoCEv2 packets, NVLink flows
as time at the cluster's NVLink rate. With `check` (the default) every packet carries
`traffic.payload`'s pattern and every receiver checks it, so a result's `wrong` counts the
4-byte elements that arrived wrong (nccl-tests' #wrong). Senders pace at the NIC rate with
DCQCN off unless `sender` says otherwise (`{"dcqcn": True}`).

`switch_tx(session)` reads every switch port's transmit counters (packets, bytes), keyed
(switch, neighbour): what crossed each directed fabric link.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from jobs.gpus import Cluster, Gpu
from traffic.collectives.runner import CollectiveResult, CollectiveRunner, StepResult
from traffic.collectives.schedule import Schedule

if TYPE_CHECKING:
    from experiments.framework.session import FabricSession

DirectedLink = tuple[str, str]  # (switch, neighbour it transmits to)


class JobRunner:
    """Workers on the NICs of `ranks`; `run(schedule)` may be called repeatedly."""

    def __init__(self, session: FabricSession, cluster: Cluster, ranks: Sequence[Gpu], *,
                 check: bool = True, mtu_payload: int = 1024, step_timeout_s: float = 60.0,
                 sender: dict[str, Any] | None = None,
                 receiver: dict[str, Any] | None = None) -> None:
        self.cluster = cluster
        self.ranks = list(ranks)
        self.check = check
        sender = {"dcqcn": False, **(sender or {})}
        receiver = dict(receiver or {})
        if check:
            sender.setdefault("pattern", True)
            receiver.setdefault("check_payload", True)
        self._runner = CollectiveRunner([session.host(g.nic) for g in self.ranks],
                                        cluster.link_bps, mtu_payload=mtu_payload,
                                        step_timeout_s=step_timeout_s, sender=sender,
                                        receiver=receiver, nvlink_bps=cluster.nvlink_bps)

    def run(self, schedule: Schedule,
            on_step: Callable[[StepResult], None] | None = None) -> CollectiveResult:
        return self._runner.run(schedule, on_step)

    def pids(self) -> list[int]:
        """Per rank, the process id of the worker receiving its data."""
        return self._runner.worker_pids()

    def close(self) -> None:
        self._runner.close()

    def __enter__(self) -> JobRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def switch_tx(session: FabricSession) -> tuple[Counter, Counter]:
    """(packets, bytes) every switch transmitted towards each neighbour, keyed (switch,
    neighbour), from the switches' port counters."""
    spec = session.spec
    ctl = session.connected()
    packets: Counter = Counter()
    nbytes: Counter = Counter()
    for sw in spec.switches:
        _, tx = ctl.port_counters(sw.name)
        for link in spec.links_of(sw.name):
            p, b = tx.get(link.end(sw.name).port, (0, 0))
            key = (sw.name, link.other(sw.name).node)
            packets[key] += p
            nbytes[key] += b
    return packets, nbytes
