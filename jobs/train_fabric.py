"""A fabric brought up for training jobs: `fabric-lab train` and the job experiments use it.

    with JobFabric(spec, target="p4switch") as fabric:
        result = fabric.train(job, order="naive", options=TrainOptions(time_scale=0.5))
        runs = fabric.collective("all_reduce", "hierarchical", fabric.ranks(job), 1 << 20)

The fabric runs the ECMP program (`FabricSession`); its GPUs are `jobs.gpus.cluster_from_fabric`'s,
one collective engine each (`jobs.ccl.Communicator`, started once), and the scale is a NIC
standing for `model_gbps`. Links without an MTU of their own get JOB_LINK_MTU: RoCE MTU 4096,
as AI fabrics run. `train` diagnoses the slowest link from how long the job's messages
took on the fabric model's paths (the links every shortest path of a message crosses, the NICs'
own links included) and the switches' transmit counters over the run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import cache
from itertools import pairwise
from pathlib import Path

from controller.lb import program_path
from experiments.framework.session import FabricSession
from jobs.ccl.communicator import (
    Communicator,
    RunResult,
    Transport,
    nic_link_mtu,
    roce_mtu,
)
from jobs.ccl.datatypes import REDOPS, datatype
from jobs.ccl.plan import Compiled, Member, compile_collective, merge
from jobs.ccl.records import Timeline
from jobs.ccl.schedule import Schedule
from jobs.gpus import NVLINK_RATIO, Cluster, Gpu, cluster_from_fabric
from jobs.placement import rank_order
from jobs.progress import OnEvent
from jobs.scale import MODELLED_GBPS, Scale
from jobs.simai import SimaiWorkload
from jobs.slowest import DirectedLink
from jobs.train import (
    GroupRun,
    IterationRun,
    JobScale,
    TrainOptions,
    TrainResult,
    job_ranks,
    train,
)
from jobs.train_layers import LayeredResult, LayerOptions, train_layers
from jobs.workload import Workload
from topos.analysis import shortest_paths
from topos.model import FabricSpec

FLOAT = datatype("float")
JOB_LINK_MTU = 4200  # links without an MTU of their own carry RoCE MTU 4096
SUM = REDOPS["sum"]


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
                 log_dir: Path | None = None,
                 check: bool = True, transport: Transport | None = None) -> None:
        if any(ln.mtu is None for ln in spec.links):  # RoCE MTU 4096, as AI fabrics run
            spec = replace(spec, links=[ln if ln.mtu else replace(ln, mtu=JOB_LINK_MTU)
                                        for ln in spec.links])
        self.spec = spec
        self.cluster: Cluster = cluster_from_fabric(spec, nvlink_ratio=nvlink_ratio)
        self.rate = Scale(self.cluster.nic_bps, model_gbps * 1e9)
        self.check = check
        self.transport = (transport or Transport(mtu=roce_mtu(nic_link_mtu(spec)))).scaled(
            self.cluster.link_bps)
        self.session = FabricSession(spec, program=program_path("ecmp"), target=target,
                                     log_dir=log_dir)
        self._links = path_links(spec)
        self.comm: Communicator | None = None
        self._index = {g.nic: i for i, g in enumerate(self.cluster.gpus())}

    def __enter__(self) -> JobFabric:
        self.session.start()
        try:
            gpus = self.cluster.gpus()
            self.comm = Communicator([self.session.host(g.nic) for g in gpus], gpus, self.spec,
                                     nvlink_bps=self.cluster.nvlink_bps,
                                     default_port_bps=self.cluster.link_bps,
                                     transport=self.transport)
        except BaseException:
            self.session.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self.comm is not None:
                self.comm.close()
        finally:
            self.session.stop()

    def _comm(self) -> Communicator:
        if self.comm is None:
            raise RuntimeError("the job fabric is not running")
        return self.comm

    def ranks(self, job: Workload, order: str = "naive") -> list[Gpu]:
        """The job's rank -> GPU order on this fabric."""
        _, ranks = job_ranks(job, self.cluster, lambda part: rank_order(part, order, self.spec))
        return ranks

    def members(self, gpus: Sequence[Gpu]) -> list[Member]:
        """`gpus` as plan members (their engines)."""
        comm = self._comm()
        return [Member(self._index[g.nic], g, comm.port_count(self._index[g.nic])) for g in gpus]

    def compile(self, collective: str, algorithm: str, groups: Sequence[Sequence[Gpu]],
                size: int, schedule: Schedule | None = None, *, scaled: bool = False) -> Compiled:
        """`collective` of nccl-tests' size `size` on every group at once (float, sum);
        `schedule` replaces the algorithm's (the lab's own). `scaled`: `size` stands for a
        job's far larger modelled collective, which NCCL runs on all its channels."""
        comm = self._comm()
        channels = min(comm.default_channels([self._index[g.nic] for g in group],
                                             None if scaled else size)
                       for group in groups)
        return merge([compile_collective(collective, algorithm, self.members(g),
                                         total_ranks=len(comm.gpus), count=size // FLOAT.size,
                                         dtype=FLOAT, redop=SUM, schedule=schedule,
                                         channels=channels)
                      for g in groups])

    def run(self, compiled: Compiled, iterations: int = 1, record: bool = False) -> RunResult:
        comm = self._comm()
        loaded = comm.load(compiled)
        try:
            return comm.run(loaded, iterations, init=self.check, check=self.check,
                            record=record)
        finally:
            comm.unload(loaded)

    def counters(self) -> dict[DirectedLink, int]:
        """Packets every switch has sent towards each neighbour."""
        packets, _ = switch_tx(self.session)
        return dict(packets)

    def tx_bytes(self) -> Counter:
        """Bytes every switch has sent towards each neighbour."""
        _, nbytes = switch_tx(self.session)
        return nbytes

    def collective(self, collective: str, algorithm: str, ranks: list[Gpu], size: int,
                   reps: int = 1, warmup: int = 1) -> list[RunResult]:
        """`reps` runs (after `warmup` untimed ones) of one collective of `size` bytes
        (nccl-tests' S) on `ranks`; each result's `time_s` is nccl-tests' time, in emulated
        seconds (`self.rate` maps them)."""
        compiled = self.compile(collective, algorithm, [ranks], size)
        comm = self._comm()
        loaded = comm.load(compiled)
        try:
            for _ in range(warmup):
                comm.run(loaded, 1, init=self.check)
            return [comm.run(loaded, 1, init=self.check, check=self.check) for _ in range(reps)]
        finally:
            comm.unload(loaded)

    def runtime_cli(self, switch: str, commands: list[str]) -> str:
        """Runtime CLI commands (queue rates, ...) on one switch."""
        from controller.queues import run_commands

        return run_commands(self.session.target.name, self.spec.switch(switch).thrift_port,
                            commands)

    def train(self, job: Workload, *, order: str = "naive", options: TrainOptions | None = None,
              progress: Callable[[str], None] = print,
              on_event: OnEvent | None = None,
              on_iteration: Callable[[TrainResult, IterationRun], None] | None = None
              ) -> TrainResult:
        """Run the job's iterations on this fabric (`jobs.train.train`); `on_event` hears
        how it goes (`jobs.progress`), `on_iteration` gets each iteration as measured."""
        options = options or TrainOptions()
        ranks = self.ranks(job, order)
        scale = JobScale(self.rate, options.time_scale)
        return train(JobComm(self, ranks), job, ranks, scale, options,
                     links_of=lambda s, d: self._links(ranks[s].nic, ranks[d].nic),
                     counters=self.counters, progress=progress, on_event=on_event,
                     on_iteration=on_iteration)


    def train_layers(self, workload: SimaiWorkload, options: LayerOptions | None = None,
                     progress: Callable[[str], None] = print) -> LayeredResult:
        """A SimAI workload layer by layer on this fabric's GPUs, in their order
        (`jobs.train_layers`); one channel per NIC port, so both planes carry a dual-plane
        fabric's traffic."""
        options = options or LayerOptions()
        comm = self._comm()
        gpus = self.cluster.gpus()

        def run(compiled: Compiled, iterations: int, timeout_s: float) -> RunResult:
            loaded = comm.load(compiled)
            try:
                return comm.run(loaded, iterations, init=False, record=True,
                                timeout_s=timeout_s)
            finally:
                comm.unload(loaded)

        return train_layers(lambda n: self.members(gpus[:n]), run, workload,
                            JobScale(self.rate, options.time_scale), options, len(gpus),
                            progress, channels=max(1, self.cluster.ports),
                            links_of=lambda s, d: self._links(gpus[s].nic, gpus[d].nic),
                            counters=self.counters)


class JobComm:
    """A job's collectives on a JobFabric: groups of the job's ranks (indices into `ranks`)."""

    def __init__(self, fabric: JobFabric, ranks: Sequence[Gpu]) -> None:
        self.fabric = fabric
        self.ranks = list(ranks)

    def run_groups(self, kind: str, algorithm: str, groups: Sequence[Sequence[int]],
                   size: int) -> GroupRun:
        fab = self.fabric
        compiled = fab.compile(kind, algorithm, [[self.ranks[r] for r in g] for g in groups],
                               size, scaled=True)
        result = fab.run(compiled, record=True)
        timeline = Timeline.of(compiled, result)
        job_rank = {fab._index[g.nic]: k for k, g in enumerate(self.ranks)}
        n = len(self.ranks)
        steps = {s.step: s for s in timeline.steps}
        count = len(compiled.schedules[0].steps) if compiled.schedules else 0
        step_bytes = [[0] * n for _ in range(count)]
        step_end = [[0.0] * n for _ in range(count)]
        for i in range(count):
            for engine, k in job_rank.items():
                if i in steps:
                    step_bytes[i][k] = steps[i].rank_bytes.get(engine, 0)
                    step_end[i][k] = max(0.0, steps[i].rank_end_s.get(engine, 0.0))
        rank_end = [max(0.0, timeline.rank_end_s.get(e, 0.0)) for e, _ in
                    sorted(job_rank.items(), key=lambda kv: kv[1])]
        flows = [(job_rank[m.src], job_rank[m.dst], m.step, m.nbytes, m.duration_s)
                 for m in timeline.messages if m.fabric]
        return GroupRun(
            time_s=max((r.elapsed_s for r in result.ranks.values()), default=0.0),
            rank_end_s=rank_end, complete=result.complete, wrong=result.wrong,
            retransmits=result.total("retransmits"),
            phases=[st.phase for st in compiled.schedules[0].steps] if compiled.schedules else [],
            step_bytes=step_bytes, step_end_s=step_end, flows=flows)


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

