"""A fabric brought up for training jobs: `fabric-lab train` and the job experiments use it.

    with JobFabric(spec, target="p4switch") as fabric:
        result = fabric.train(job, order="naive", options=TrainOptions(time_scale=0.5))

The fabric runs the ECMP program (`FabricSession`); its GPUs are `jobs.gpus.cluster_from_fabric`'s
and the scale is the NIC rate standing for `model_gbps`. `train` diagnoses the slowest rank from
the fabric model's paths (the links every shortest path of a flow crosses, the NICs' own links
included) and the switches' transmit counters over the run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from functools import cache
from itertools import pairwise
from pathlib import Path
from typing import Any

from controller.lb import program_path
from experiments.framework.session import FabricSession
from jobs.collectives import build
from jobs.gpus import NVLINK_RATIO, Cluster, Gpu, cluster_from_fabric
from jobs.placement import rank_order
from jobs.progress import OnEvent
from jobs.runner import JobRunner, switch_tx
from jobs.scale import MODELLED_GBPS, Scale
from jobs.slowest import DirectedLink
from jobs.train import JobScale, TrainOptions, TrainResult, job_ranks, train
from jobs.workload import Workload
from topos.analysis import shortest_paths
from topos.model import FabricSpec
from traffic.collectives.runner import CollectiveResult


def path_links(spec: FabricSpec) -> Callable[[str, str], set[DirectedLink]]:
    """NIC pair -> the directed links every shortest path between them crosses."""

    @cache
    def links(src: str, dst: str) -> frozenset[DirectedLink]:
        paths = [set(pairwise([src, *path, dst])) for path in shortest_paths(spec, src, dst)]
        return frozenset(set.intersection(*paths)) if paths else frozenset()

    return lambda src, dst: set(links(src, dst))


class JobFabric:
    """A running fabric with GPUs on its NICs (module docstring); a context manager."""

    def __init__(self, spec: FabricSpec, *, target: str = "p4switch",
                 model_gbps: float = MODELLED_GBPS, nvlink_ratio: float = NVLINK_RATIO,
                 link_mbps: float | None = None, log_dir: Path | None = None,
                 check: bool = True) -> None:
        self.spec = spec
        self.cluster: Cluster = cluster_from_fabric(spec, nvlink_ratio=nvlink_ratio,
                                                    link_mbps=link_mbps)
        self.rate = Scale(self.cluster.link_bps, model_gbps * 1e9)
        self.check = check
        self.session = FabricSession(spec, program=program_path("ecmp"), target=target,
                                     log_dir=log_dir)
        self._links = path_links(spec)

    def __enter__(self) -> JobFabric:
        self.session.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.session.stop()

    def ranks(self, job: Workload, order: str = "naive") -> list[Gpu]:
        """The job's rank -> GPU order on this fabric."""
        _, ranks = job_ranks(job, self.cluster, lambda part: rank_order(part, order, self.spec))
        return ranks

    def counters(self) -> dict[DirectedLink, int]:
        """Packets every switch has sent towards each neighbour."""
        packets, _ = switch_tx(self.session)
        return dict(packets)

    def tx_bytes(self) -> Counter:
        """Bytes every switch has sent towards each neighbour."""
        _, nbytes = switch_tx(self.session)
        return nbytes

    def collective(self, collective: str, algorithm: str, ranks: list[Gpu], size: int,
                   reps: int = 1, warmup: int = 1) -> list[CollectiveResult]:
        """`reps` timed runs (after `warmup` untimed ones) of one collective of `size` bytes
        (nccl-tests' S) on `ranks`; busbw = result.busbw_bps(schedule factor) x scale factor."""
        sched = build(collective, algorithm, ranks, size)
        with JobRunner(self.session, self.cluster, ranks, check=self.check) as run:
            for _ in range(warmup):
                run.run(sched)
            return [run.run(sched) for _ in range(reps)]

    def runtime_cli(self, switch: str, commands: list[str]) -> str:
        """Runtime CLI commands (queue rates, ...) on one switch."""
        from controller.queues import run_commands

        return run_commands(self.session.target.name, self.spec.switch(switch).thrift_port,
                            commands)

    def train(self, job: Workload, *, order: str = "naive", options: TrainOptions | None = None,
              progress: Callable[[str], None] = print, on_event: OnEvent | None = None,
              **runner: Any) -> TrainResult:
        """Run the job's iterations on this fabric (`jobs.train.train`); `on_event` hears
        how it goes (`jobs.progress`)."""
        options = options or TrainOptions()
        ranks = self.ranks(job, order)
        scale = JobScale(self.rate, options.time_scale)
        with JobRunner(self.session, self.cluster, ranks, check=self.check, **runner) as run:
            return train(run, job, ranks, scale, options,
                         links_of=lambda s, d: self._links(ranks[s].nic, ranks[d].nic),
                         counters=self.counters, progress=progress, on_event=on_event)
