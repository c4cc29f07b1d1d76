"""The controller's side of the collective runtime: one agent per rank (`jobs.ccl.agent`, in
its NIC's namespace, for the communicator's whole life), plans loaded once, runs launched.

    with Communicator(hosts, gpus, spec, nvlink_bps=...) as comm:
        loaded = comm.load(compile_collective(...))
        result = comm.run(loaded, iterations=20)     # back to back, one synchronised launch
        result.time_s                                # nccl-tests' time per iteration

A run is armed on every rank (input filled, when asked), then started at one agreed moment a
little ahead (CLOCK_REALTIME, which every namespace shares); from there the ranks run their
dataflows with no control traffic until each reports its result. Nothing is started, joined or
asked between the launch and the results.
"""

from __future__ import annotations

import base64
import itertools
import shutil
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from jobs.ccl.plan import MAX_CHANNELS, Compiled
from jobs.gpus import Gpu
from topos.errors import FabricLabError
from topos.mininet.procs import LineChild
from topos.mininet.shaping import rate_bucket_bytes
from topos.model import FabricSpec
from traffic.hosts import Host, python_argv

CHANNEL_MIN_BYTES = 32 * 1024  # the least a channel carries (default_channels)
RTO_FRAMES = 450  # the retransmission timeout, in frame times of the slowest port
MIN_RTO_S = 0.05
ETHERNET_ROCE_OVERHEAD = 74  # Ethernet, IPv4, UDP, BTH, RETH, ICRC around a payload
IP_ROCE_OVERHEAD = 60  # what of it a link's MTU counts (IPv4 onwards)
ROCE_MTUS = (4096, 2048, 1024, 512, 256)
DEFAULT_LINK_MTU = 1500
START_MARGIN_S = 0.02  # the launch lies this far ahead of the go requests ...
START_S_PER_RANK = 0.002  # ... and this much more per rank


class CommunicatorError(FabricLabError, RuntimeError):
    pass


@dataclass(frozen=True)
class Transport:
    """What every engine's transport uses (jobs/ccl/c/fabric.c)."""

    mtu: int = 4096  # RoCE payload bytes per packet
    credits: int = 8  # messages a connection may have unused at its receiver
    ack_every: int = 16  # packets between ACK requests
    rto_s: float = 0.1  # go-back-N retransmission timeout (doubled per expiry)
    max_retries: int = 7
    dscp: int = 26
    prio: int = 3  # the PFC priority of the data

    def scaled(self, port_bps: float) -> Transport:
        """Timers for links of `port_bps`: the retransmission timeout outlasts RTO_FRAMES
        frames (a deep queue on each of three hops, then the ACK)."""
        frame_s = (self.mtu + ETHERNET_ROCE_OVERHEAD) * 8 / port_bps
        return replace(self, rto_s=max(MIN_RTO_S, RTO_FRAMES * frame_s))

    def as_dict(self, nvlink_bps: float) -> dict[str, Any]:
        return {"mtu": self.mtu, "credits": self.credits, "ack_every": self.ack_every,
                "rto_s": self.rto_s, "max_retries": self.max_retries, "dscp": self.dscp,
                "prio": self.prio, "nvlink_bps": nvlink_bps}


def roce_mtu(link_mtu: int) -> int:
    """The largest RoCE MTU a link of `link_mtu` carries."""
    for m in ROCE_MTUS:
        if m + IP_ROCE_OVERHEAD <= link_mtu:
            return m
    raise ValueError(f"a link MTU of {link_mtu} is too small for RoCE (at least "
                     f"{ROCE_MTUS[-1] + IP_ROCE_OVERHEAD})")


def nic_link_mtu(spec: FabricSpec) -> int:
    """The smallest MTU of the links NICs attach with."""
    nics = {n.name for n in spec.host_nics()}
    return min((ln.mtu or DEFAULT_LINK_MTU for ln in spec.links
                if ln.a.node in nics or ln.b.node in nics), default=DEFAULT_LINK_MTU)


@dataclass
class RankRun:
    """One rank's report of a run (times in ns, CLOCK_REALTIME)."""

    status: str
    iterations: int
    start_ns: int
    end_ns: int
    iter_end: list[int]
    wrong: int
    pending: int
    stats: dict[str, Any]
    error: str = ""
    records: bytes = b""
    socket_drops: int = 0

    @property
    def elapsed_s(self) -> float:
        """From the launch to this rank's last iteration done."""
        last = self.iter_end[-1] if self.iter_end else self.end_ns
        return max(0.0, (last - self.start_ns) / 1e9)


@dataclass
class RunResult:
    iterations: int
    ranks: dict[int, RankRun] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return all(r.status == "done" and r.iterations == self.iterations
                   for r in self.ranks.values())

    @property
    def time_s(self) -> float:
        """nccl-tests' time: each rank's elapsed time over the iterations / iterations,
        averaged over the ranks."""
        if not self.ranks or not self.iterations:
            return 0.0
        return statistics.fmean(r.elapsed_s for r in self.ranks.values()) / self.iterations

    @property
    def wrong(self) -> int:
        return sum(r.wrong for r in self.ranks.values())

    def total(self, stat: str) -> int:
        return sum(int(r.stats.get(stat, 0)) for r in self.ranks.values())

    def errors(self) -> list[str]:
        return [f"rank {k}: {r.status}{': ' + r.error if r.error else ''}"
                for k, r in sorted(self.ranks.items()) if r.status != "done" or r.error]


@dataclass
class Loaded:
    id: int
    compiled: Compiled


class Communicator:
    """Agents on the NICs of `gpus` (rank r on gpus[r], started in hosts[r]); a context
    manager. `spec` gives every NIC's ports (interfaces, link rates) and addresses."""

    def __init__(self, hosts: Sequence[Host], gpus: Sequence[Gpu], spec: FabricSpec, *,
                 nvlink_bps: float, default_port_bps: float | None = None,
                 transport: Transport | None = None, start_timeout: float = 30.0) -> None:
        if len(hosts) != len(gpus):
            raise ValueError(f"{len(hosts)} hosts for {len(gpus)} ranks")
        self.gpus = list(gpus)
        self.spec = spec
        self.transport = transport or Transport()
        self.nvlink_bps = nvlink_bps
        self.ports = [self._ports(g, default_port_bps) for g in self.gpus]
        self._ids = itertools.count(1)
        self._run_ids = itertools.count(1)
        self.broken = ""
        self.dir = Path(tempfile.mkdtemp(prefix="fabric-lab-ccl-"))
        self.agents: list[LineChild] = []
        try:
            for r, host in enumerate(hosts):
                self.agents.append(LineChild(host.popen, python_argv("jobs.ccl.agent"),
                                             f"rank {r} ({self.gpus[r].nic}): agent",
                                             CommunicatorError))
            deadline = time.monotonic() + start_timeout + 0.3 * len(hosts)
            self.pids = [a.expect_by("started", deadline)["pid"] for a in self.agents]
            self._all("listening", [self._setup(r) for r in range(len(self.gpus))], deadline)
            self._all("ready", [{"op": "connect"}] * len(self.agents), deadline)
        except BaseException:
            self.close()
            raise

    # ---- set-up ----------------------------------------------------------------------------
    def _ports(self, gpu: Gpu, default_bps: float | None) -> list[dict[str, Any]]:
        ports = []
        for link in self.spec.links_of(gpu.nic):
            end = link.end(gpu.nic)
            bps = link.rate_mbps * 1e6 if link.rate_mbps else default_bps
            if not bps:
                raise ValueError(f"NIC {gpu.nic}: its link has no rate; give default_port_bps")
            mtu = link.mtu or DEFAULT_LINK_MTU
            if self.transport.mtu + IP_ROCE_OVERHEAD > mtu:
                raise ValueError(f"NIC {gpu.nic}: its link's MTU {mtu} carries RoCE MTU "
                                 f"{roce_mtu(mtu)} at most, the transport's is "
                                 f"{self.transport.mtu}")
            ports.append({"iface": end.intf, "rate_bps": bps,
                          "bucket_bytes": rate_bucket_bytes(link)})
        if not ports:
            raise ValueError(f"NIC {gpu.nic} has no link")
        return ports

    def _path(self, r: int) -> str:
        return str(self.dir / f"r{r}.sock")

    def _setup(self, r: int) -> dict[str, Any]:
        g = self.gpus[r]
        mates = {str(k): self._path(k) for k, other in enumerate(self.gpus)
                 if other.server == g.server and k != r}
        return {"op": "setup", "rank": r, "nranks": len(self.gpus), "ip": g.ip,
                "ports": self.ports[r],
                "peers": [{"ip": o.ip, "mac": self.spec.nic(o.nic).mac} for o in self.gpus],
                "nvlink_path": self._path(r) if mates else "", "nvlink_peers": mates,
                "transport": self.transport.as_dict(self.nvlink_bps)}

    def _all(self, event: str, requests: Sequence[dict[str, Any] | None], deadline: float,
             ranks: Sequence[int] | None = None) -> list[dict[str, Any]]:
        """Send each rank its request, then collect every answer."""
        chosen = list(range(len(self.agents))) if ranks is None else list(ranks)
        for r, req in zip(chosen, requests, strict=True):
            if req is not None:
                self.agents[r].send(req)
        return [self.agents[r].expect_by(event, deadline)
                for r, req in zip(chosen, requests, strict=True) if req is not None]

    def port_count(self, rank: int) -> int:
        return len(self.ports[rank])

    def default_channels(self, ranks: Sequence[int] | None = None, nbytes: int | None = None) -> int:
        """NCCL's choice, in effect: enough channels that every NIC port carries its own and,
        on servers of several GPUs, that the rings leave every server on every rail (ports x
        GPUs per server), at least two (two entropies per peer); for a collective of `nbytes`,
        no more than give each channel CHANNEL_MIN_BYTES (NCCL's Simple protocol: it drops
        channels until each has 512 threads x 64 bytes), so a small one is not cut into more
        messages than it has bytes for."""
        chosen = range(len(self.gpus)) if ranks is None else ranks
        ports = min(self.port_count(r) for r in chosen)
        servers = [self.gpus[r].server for r in chosen]
        per_server = max(servers.count(s) for s in servers)
        channels = min(MAX_CHANNELS, max(2, ports * per_server))
        if nbytes is not None:
            channels = min(channels, max(1, nbytes // CHANNEL_MIN_BYTES))
        return channels

    # ---- plans and runs --------------------------------------------------------------------
    def _usable(self) -> None:
        if self.broken:
            raise CommunicatorError(f"the communicator is unusable after an earlier run "
                                    f"({self.broken}); start a new one")

    def load(self, compiled: Compiled, timeout: float = 60.0) -> Loaded:
        self._usable()
        lid = next(self._ids)
        ranks = sorted(compiled.plans)
        deadline = time.monotonic() + timeout
        where = dict(zip(ranks, self._all(
            "loaded", [{"op": "load", "id": lid, "plan": compiled.plans[r].pack()}
                       for r in ranks], deadline, ranks), strict=True))
        # every rank maps the arenas of its server's other GPUs in the plan (NVLink reads them)
        attach = [{"op": "attach", "id": lid,
                   "peers": {str(k): {x: where[k][x] for x in ("pid", "fd", "size")}
                             for k in ranks if k != r
                             and self.gpus[k].server == self.gpus[r].server}} for r in ranks]
        self._all("attached", attach, deadline, ranks)
        return Loaded(lid, compiled)

    def unload(self, loaded: Loaded, timeout: float = 10.0) -> None:
        if self.broken:
            return
        ranks = sorted(loaded.compiled.plans)
        self._all("unloaded", [{"op": "unload", "id": loaded.id}] * len(ranks),
                  time.monotonic() + timeout, ranks)

    def run(self, loaded: Loaded, iterations: int = 1, *, init: bool = True,
            check: bool = False, record: bool = False, seed: int = 0,
            timeout_s: float = 120.0) -> RunResult:
        """Run the plan `iterations` times back to back on its ranks, launched together."""
        self._usable()
        if iterations < 1:
            raise ValueError(f"iterations must be >= 1, got {iterations}")
        ranks = sorted(loaded.compiled.plans)
        run_id = next(self._run_ids)
        arm = [{"op": "arm", "id": loaded.id,
                "run": {"iterations": iterations, "run_id": run_id, "init": init,
                        "check": check, "record": record, "seed": seed,
                        "timeout_s": timeout_s,
                        "nops": len(loaded.compiled.plans[r].ops)}} for r in ranks]
        self._all("armed", arm, time.monotonic() + 60 + 0.05 * len(ranks), ranks)
        start_ns = time.time_ns() + int((START_MARGIN_S + START_S_PER_RANK * len(ranks)) * 1e9)
        go = [{"op": "go", "start_ns": start_ns, "wait_s": timeout_s + 10}] * len(ranks)
        try:
            answers = self._all("result", go, time.monotonic() + timeout_s + 30, ranks)
        except CommunicatorError as e:
            self.broken = str(e)
            raise
        result = RunResult(iterations)
        for r, a in zip(ranks, answers, strict=True):
            result.ranks[r] = RankRun(
                status=a["status"], iterations=a["iterations"], start_ns=a["start_ns"],
                end_ns=a["end_ns"], iter_end=a["iter_end"], wrong=a["wrong"],
                pending=a["pending"], stats=a["stats"], error=a["error"],
                records=base64.b64decode(a["records"]) if "records" in a else b"",
                socket_drops=a.get("socket_drops", 0))
        if not result.complete:
            self.broken = "; ".join(result.errors()) or "a run did not complete"
        return result

    def read(self, loaded: Loaded, rank: int, offset: int, length: int,
             timeout: float = 30.0) -> bytes:
        """Bytes of a rank's arena (its buffers; tests compare them)."""
        self.agents[rank].send({"op": "read", "id": loaded.id, "offset": offset,
                                "length": length})
        return base64.b64decode(self.agents[rank].expect("data", timeout)["b64"])

    def output(self, loaded: Loaded, rank: int) -> bytes:
        p = loaded.compiled.plans[rank]
        return self.read(loaded, rank, p.out_off, p.out_count * p.dtype.size)

    def input(self, loaded: Loaded, rank: int) -> bytes:
        p = loaded.compiled.plans[rank]
        return self.read(loaded, rank, p.in_off, p.in_count * p.dtype.size)

    def close(self) -> None:
        for a in self.agents:
            a.close()
        self.agents = []
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> Communicator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def members(comm: Communicator, ranks: Sequence[int] | None = None) -> list:
    """The communicator's ranks (all, or `ranks`) as plan members."""
    from jobs.ccl.plan import Member

    chosen = range(len(comm.gpus)) if ranks is None else ranks
    return [Member(r, comm.gpus[r], comm.port_count(r)) for r in chosen]
