"""What a collective should take on this fabric: the alpha-beta model, with the lab's own alpha
and beta measured, and the bound a compiled collective's links allow.

    ab = measure(comm)                       # alpha per message hop, beta per byte, per NIC
    bound_s(compiled, comm, ab.alpha_s)      # depth x alpha + the busiest link's bytes

alpha is what one message costs beyond its bytes, as a collective's steps meet it: every rank
passes a 16-byte token to the next rank of the ring a ring all-reduce takes (NVLink inside a
server, a rail between servers) and forwards the one it gets, K laps of the ring, all ranks at
once; the time per step (each step is a whole message: sent, carried through
the switches, taken by the next rank's engine, while every other rank does the same), timed
over back-to-back iterations after the first, so the launch's skew across ranks is not in it.
beta is the per-byte cost when every NIC sends at once: each rank sends a large message to the
rank on its rail in the next server (the fabric only), on all its ports; beta = (time - alpha)
/ bytes, and 1/beta is the NIC bandwidth the emulation delivers, beside the rate its links are
shaped to.

The bound of a collective: its longest chain of messages (the compiled dataflow's depth) x
alpha, plus the time the busiest resource needs for its bytes at its rate, with every frame's
headers counted: each NIC port sending and receiving at its link rate, each GPU's NVLink at
the NVLink rate in each direction. A resource's bytes that its token buckets let through at
once do not count (an emulated link carries at most bucket + rate x t in any time t: the
engine's batch, `native.send_allowance`, at a sender; at a receiver the link shaper's bucket
or its senders' batches, whichever is more), so the bound holds for the emulation at every
size. A receiving port is taken to be shaped at its rate, as Mininet's links are. The
emulation meeting the bound means it adds nothing of its own beyond alpha; the fabric
(contention, loss, its inner links) shows as time above it.

Whether a time is the fabric's or the machine's: `cpu_ticks` before and after a run give the
share of every CPU's time the machine was busy (`busy_share`); near 100%, the engines and
switches waited for a CPU, and the time measures the emulator more than the fabric.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from jobs.ccl import native
from jobs.ccl.algorithms import ring_order
from jobs.ccl.communicator import Communicator, members
from jobs.ccl.datatypes import datatype
from jobs.ccl.plan import Compiled, compile_collective
from jobs.ccl.schedule import FABRIC, NVLINK, Flow, Schedule, Step

FRAME_OVERHEAD = 14 + 20 + 8 + 12 + 4  # Ether, IPv4, UDP, BTH, ICRC: every packet
RETH = 16  # a message's first packet
TOKEN_LAPS = 4
TOKEN_RUNS = 4  # iterations of the token ring timed, after one that absorbs the launch
BETA_BYTES = 1 << 20
SATURATED = 0.9  # a machine busier than this during a run: the emulator's time, not the fabric's


@dataclass(frozen=True)
class AlphaBeta:
    alpha_s: float  # per message hop (emulated)
    beta_s: float  # per byte, per NIC, every NIC sending (emulated)
    nic_bps: float  # the NIC's link rate (all ports)
    hops: int  # the token's hops measured

    @property
    def nic_efficiency(self) -> float:
        """The NIC bandwidth delivered, as a share of its links' rate."""
        return 8 / self.beta_s / self.nic_bps if self.beta_s > 0 else 0.0


def wire_bytes(payload: int, mtu: int) -> int:
    """What a message of `payload` bytes puts on a link: its frames' headers included."""
    packets = max(1, -(-payload // mtu))
    return payload + packets * FRAME_OVERHEAD + RETH


TOKEN_BYTES = 16  # a rank's part of an all-gather is whole 16 bytes (nccl-tests' counts)


def _token_ring(order: list[int], laps: int) -> Schedule:
    """Every rank forwards to the next in `order` the token it got (an all-gather's chunks of
    TOKEN_BYTES, kept going round): `laps` x n steps, each rank's step waiting for its
    previous."""
    n = len(order)
    steps = [Step([Flow(order[i], order[(i + 1) % n], TOKEN_BYTES, FABRIC, (order[(i - t) % n],))
                   for i in range(n)], "token") for t in range(laps * n)]
    return Schedule("token_ring", n, TOKEN_BYTES * n, steps, 1.0)


def token_plan(comm: Communicator) -> Compiled:
    """The plan alpha is measured with: TOKEN_LAPS x n messages in a chain per rank, around
    the ring a ring all-reduce takes (`ring_order`: over NVLink inside a server, along a rail
    between servers), so alpha is the cost of the hops collectives chain."""
    ms = members(comm)
    n = len(ms)
    return compile_collective("all_gather", None, ms, total_ranks=n,
                              count=TOKEN_BYTES // 4 * n, dtype=datatype("float"),
                              schedule=_token_ring(ring_order(comm.gpus), TOKEN_LAPS))


def _rail_shift(comm: Communicator) -> Schedule:
    """Every rank sends its buffer to the rank on its rail in the next server (sendrecv's
    chunk r from rank r): fabric only, every NIC at once."""
    gpus = comm.gpus
    servers = list(dict.fromkeys(g.server for g in gpus))
    by = {(g.server, g.index): r for r, g in enumerate(gpus)}
    flows = []
    for r, g in enumerate(gpus):
        nxt = servers[(servers.index(g.server) + 1) % len(servers)]
        dst = by.get((nxt, g.index))
        if dst is not None and dst != r:
            flows.append(Flow(r, dst, BETA_BYTES, FABRIC, (r,)))
    return Schedule("rail_shift", len(gpus), BETA_BYTES, [Step(sorted(flows), "shift")], 1.0)


def measure(comm: Communicator, repeats: int = 3) -> AlphaBeta:
    """alpha and beta of the communicator's fabric (module docstring); medians of `repeats`."""
    ms = members(comm)
    n = len(ms)
    token = token_plan(comm)
    ports = min(m.ports for m in ms)
    shift = compile_collective("sendrecv", None, ms, total_ranks=n, count=BETA_BYTES // 4,
                               dtype=datatype("float"), channels=max(2, ports),
                               schedule=_rail_shift(comm))
    alphas, betas = [], []
    for compiled in (token, shift):
        loaded = comm.load(compiled)
        try:
            comm.run(loaded, 1)  # warm
            for _ in range(repeats):
                res = comm.run(loaded, 1 + TOKEN_RUNS if compiled is token else 1, init=False)
                if not res.complete:
                    raise RuntimeError(f"measuring alpha and beta: {'; '.join(res.errors())}")
                if compiled is token:  # after the first iteration: the launch's skew aside
                    alphas.append(statistics.fmean(
                        (r.iter_end[-1] - r.iter_end[0]) / 1e9 for r in res.ranks.values()) /
                        (TOKEN_RUNS * TOKEN_LAPS * n))
                else:
                    betas.append(max(r.elapsed_s for r in res.ranks.values()))
        finally:
            comm.unload(loaded)
    alpha = statistics.median(alphas)
    beta = max(1e-12, (statistics.median(betas) - alpha) / BETA_BYTES)
    nic = min(sum(p["rate_bps"] for p in comm.ports[r]) for r in range(n))
    return AlphaBeta(alpha, beta, nic, TOKEN_LAPS * n)


def bound_s(compiled: Compiled, comm: Communicator, alpha_s: float) -> float:
    """depth x alpha + the busiest resource's time for its bytes (module docstring)."""
    mtu = comm.transport.mtu
    nvlink_free = native.send_allowance(native.NVLINK, comm.nvlink_bps, mtu)
    load: dict[tuple, float] = {}  # resource -> bytes
    senders: dict[tuple, set[tuple[int, int]]] = {}  # a receiving port -> who sends to it

    def add(resource: tuple, nbytes: float) -> None:
        load[resource] = load.get(resource, 0.0) + nbytes

    for rank, plan in compiled.plans.items():
        for o in plan.info:
            if o.kind != native.SEND:
                continue
            if o.transport == native.FABRIC:
                rx = ("rx", o.peer, o.port % len(comm.ports[o.peer]))
                add(("tx", rank, o.port), wire_bytes(o.nbytes, mtu))
                add(rx, wire_bytes(o.nbytes, mtu))
                senders.setdefault(rx, set()).add((rank, o.port))
            else:
                add(("nvtx", rank), o.nbytes)
                add(("nvrx", o.peer), o.nbytes)

    def port_free(rank: int, port: int) -> float:
        return native.send_allowance(native.FABRIC, comm.ports[rank][port]["rate_bps"], mtu)

    busy = [0.0]
    for resource, nbytes in load.items():
        kind = resource[0]
        if kind in ("nvtx", "nvrx"):
            rate, free = comm.nvlink_bps, nvlink_free
        else:
            port = comm.ports[resource[1]][resource[2]]
            rate = port["rate_bps"]
            free = (port_free(resource[1], resource[2]) if kind == "tx" else
                    max(port.get("bucket_bytes", 0),
                        sum(port_free(r, k) for r, k in senders[resource])))
        busy.append(max(0.0, nbytes - free) * 8 / rate)
    return compiled.depth * alpha_s + max(busy)


def cpu_ticks() -> tuple[int, int]:
    """(busy, all) ticks of every CPU so far (/proc/stat's first line)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    idle = v[3] + v[4]  # idle, iowait
    return sum(v) - idle, sum(v)


def busy_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The share of the CPUs' time busy between two `cpu_ticks()`."""
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total > 0 else 0.0


__all__ = ["FABRIC", "NVLINK", "SATURATED", "AlphaBeta", "bound_s", "busy_share", "cpu_ticks",
           "measure", "token_plan", "wire_bytes"]
