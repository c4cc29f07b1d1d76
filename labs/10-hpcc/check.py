"""Checks of lab 10 (HPCC): the student's per-link utilisation, MeasureInflight and ComputeWind
on the handout's numbers (worked out here from the paper's formulas), then whole ACK sequences
(random paths, queues, wraps, path changes) driven through Algorithm 1's NewAck with the
student's functions, against the lab's own HPCC sender (`traffic.hpcc`)."""

from __future__ import annotations

import math
from typing import Any

from fabric_lab.labkit import Step, StepFailed, Work
from traffic.hpcc import Hpcc, HpccParams
from traffic.inband import HopRecord

TITLE = "HPCC: a sender's window from in-band telemetry"
MINUTES = 45
PREREQS = "lab 4; docs/mechanisms/int.md and docs/mechanisms/hpcc.md"
FILE = "hpcc_lab.py"
FORBIDDEN_IMPORTS = {
    "traffic.hpcc": "the lab's HPCC sender is the answer; write the formulas yourself",
    "importlib": "import modules with import statements",
}
FUNCTIONS = ("link_utilisation", "measure_inflight", "compute_window")
# The handout's numbers: 80 Mb/s = 10 MB/s links, T = 1 ms, 1000-byte packets.
T, PACKET = 0.001, 1000


def hop(qdepth: int, ts_us: int, tx_bytes: int, mbps: int = 80, switch: int = 1,
        port: int = 2) -> HopRecord:
    return HopRecord(switch_id=switch, ingress_port=1, egress_port=port, qdepth=qdepth,
                     egress_ts=ts_us, hop_latency=0, tx_bytes=tx_bytes, link_mbps=mbps)


def _close(got: Any, want: float | None) -> bool:
    if want is None or got is None:
        return got is want
    return isinstance(got, (int, float)) and math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-9)


def loads(work: Work) -> str:
    for name in FUNCTIONS:
        work.function(name)
    return f"{', '.join(FUNCTIONS)} found (traffic.hpcc not imported)"


def per_link(work: Work) -> str:
    f = work.function("link_utilisation")
    cases = [
        ("the handout's link: 5000 B in 0.5 ms on 10 MB/s, queues 6 and 4 packets",
         hop(6, 1500, 5000), hop(4, 1000, 0), (4000 / (10e6 * T) + 1.0, 0.0005)),
        ("tx_bytes wrapped: 2^32 - 1000 -> 4000 in 2 ms, empty queue",
         hop(0, 3000, 4000), hop(0, 1000, 2**32 - 1000), (5000 / 0.002 / 10e6, 0.002)),
        ("a 40 Mb/s link, 2000 B in 0.4 ms, queue 3 then 2",
         hop(3, 5400, 2000, mbps=40), hop(2, 5000, 0, mbps=40),
         (2000 / (5e6 * T) + 2000 / 0.0004 / 5e6, 0.0004)),
        ("no rate configured (link_mbps 0)", hop(9, 1500, 9000, mbps=0), hop(1, 1000, 0, mbps=0),
         None),
        ("another switch at that position", hop(1, 1500, 900, switch=7), hop(1, 1000, 0), None),
        ("another egress port", hop(1, 1500, 900, port=3), hop(1, 1000, 0), None),
        ("no time passed", hop(1, 1000, 900), hop(1, 1000, 0), None),
    ]
    for what, new, old, want in cases:
        got = f(new, old, T, PACKET)
        if want is None:
            if got is not None:
                raise StepFailed(f"{what}: expected None (not comparable), got {got!r}")
            continue
        if not (isinstance(got, tuple) and len(got) == 2 and _close(got[0], want[0])
                and _close(got[1], want[1])):
            raise StepFailed(f"{what}: expected (u', tau) = ({want[0]:.6g}, {want[1]:.6g}), "
                             f"got {got!r}")
    return f"{len(cases)} cases: the formula, the wrap, and the four records that do not compare"


def inflight(work: Work) -> str:
    f = work.function("measure_inflight")
    prev = [hop(0, 1000, 0, switch=1), hop(2, 5000, 0, mbps=40, switch=2)]
    new = [hop(0, 1200, 1000, switch=1), hop(3, 5400, 2000, mbps=40, switch=2)]
    # switch 1: u' = 0.5 over 0.2 ms; switch 2: u' = 1.4 over 0.4 ms -> U = 0.6 x 1 + 0.4 x 1.4
    cases = [
        ("two links, the second busier", 1.0, new, prev, 0.6 + 0.4 * 1.4),
        ("the same from U = 0.5", 0.5, new, prev, 0.6 * 0.5 + 0.4 * 1.4),
        ("tau longer than T is capped at T: U = u'", 0.7, [hop(0, 4000, 7500)],
         [hop(0, 1000, 0)], 7500 / 0.003 / 10e6),
        ("the first record has no rate: the second decides", 1.0,
         [hop(50, 2000, 10**6, mbps=0), hop(0, 1500, 2500, switch=2)],
         [hop(50, 1000, 0, mbps=0), hop(0, 1000, 0, switch=2)], 0.5 + 0.5 * 0.5),
        ("a new path: nothing comparable", 0.8, [hop(0, 1500, 2500, switch=9)],
         [hop(0, 1000, 0)], None),
        ("the path got longer: only the common positions count", 1.0,
         [hop(0, 2000, 10_000), hop(30, 2000, 10**6, switch=3)], [hop(0, 1000, 0)], 1.0),
    ]
    for what, u, hops, prev_hops, want in cases:
        got = f(u, list(hops), list(prev_hops), T, PACKET)
        if not _close(got, want):
            raise StepFailed(f"{what}: expected U = {want!r}, got {got!r}")
    return f"{len(cases)} cases: the busiest link and its tau, tau capped at T, skipped hops"


def window(work: Work) -> str:
    f = work.function("compute_window")
    eta, stages, w_ai = 0.95, 5, 100.0
    cases = [
        ("U = 1.2 >= eta, a new RTT", (1.2, 10_000.0, 3, True),
         (10_000 / (1.2 / 0.95) + 100, 10_000 / (1.2 / 0.95) + 100, 0)),
        ("U = 1.2 >= eta, same RTT: Wc and the stage stay", (1.2, 10_000.0, 3, False),
         (10_000 / (1.2 / 0.95) + 100, 10_000.0, 3)),
        ("U = 0.25, stage 2 < 5, a new RTT: additive", (0.25, 8000.0, 2, True),
         (8100.0, 8100.0, 3)),
        ("U = 0.25, stage 2, same RTT", (0.25, 8000.0, 2, False), (8100.0, 8000.0, 2)),
        ("U = 0.25 but the stages are used up: multiplicative", (0.25, 8000.0, 5, True),
         (8000 / (0.25 / 0.95) + 100, 8000 / (0.25 / 0.95) + 100, 0)),
        ("U exactly eta counts as loaded", (0.95, 5000.0, 0, True), (5100.0, 5100.0, 0)),
    ]
    for what, (u, wc, stage, update), want in cases:
        got = f(u, wc, stage, update, eta, stages, w_ai)
        if not (isinstance(got, tuple) and len(got) == 3 and _close(got[0], want[0])
                and _close(got[1], want[1]) and got[2] == want[2]):
            raise StepFailed(f"{what}: expected (W, Wc, incStage) = {want}, got {got!r}")
    return f"{len(cases)} cases: both branches, with and without the per-RTT update"


def _student_window(work: Work, p: HpccParams, acks: list[tuple[int, int, list]]) -> list[float]:
    """Algorithm 1's NewAck with the student's functions (the first ACK only records; W kept
    in [one packet, W_init], as traffic.hpcc keeps it)."""
    measure, compute = work.function("measure_inflight"), work.function("compute_window")
    w = wc = p.w_init_bytes
    u, stage, last, links = 1.0, 0, -1, []
    out = []
    for seq, snd_nxt, hops in acks:
        if last < 0:
            last, links = snd_nxt, hops
        else:
            new_u = measure(u, list(hops), list(links), p.base_rtt_s, p.packet_bytes)
            links = hops
            if new_u is not None:
                u = new_u
                update = seq > last
                got = compute(u, wc, stage, update, p.eta, p.max_stage, p.w_ai_bytes)
                w = min(max(got[0], float(p.packet_bytes)), p.w_init_bytes)
                if update:
                    wc, stage, last = w, got[2], snd_nxt
        out.append(w)
    return out


def _sequence(rng: Any) -> list[tuple[int, int, list]]:
    """ACKs of one flow: 1-3 switches, queues that build and drain, byte counters near the
    wrap, now and then a new path."""
    n = rng.randint(1, 3)
    switches = [rng.randint(1, 9) for _ in range(n)]
    mbps = [rng.choice([0, 5, 11, 40, 100]) for _ in range(n)]
    ts = [rng.randint(0, 10**6) for _ in range(n)]
    tx = [rng.randint(2**32 - 50_000, 2**32 - 1) for _ in range(n)]
    seq, nxt, acks = 0, 0, []
    for _ in range(rng.randint(20, 60)):
        nxt += rng.randint(1, 4)
        seq = min(nxt - 1, seq + rng.randint(0, 3))
        if rng.random() < 0.05:
            switches[rng.randrange(n)] = rng.randint(10, 20)
        hops = []
        for i in range(n):
            ts[i] += rng.choice([0, rng.randint(50, 3000), rng.randint(3000, 30_000)])
            tx[i] = (tx[i] + rng.randint(1, 40_000)) % 2**32  # never 0: U > 0
            hops.append(hop(rng.choice([0, 0, 1, rng.randint(0, 60)]), ts[i], tx[i],
                            mbps=mbps[i], switch=switches[i], port=i + 1))
        acks.append((seq, nxt, hops))
    return acks


def whole_sequences(work: Work) -> str:
    rng = work.rng("sequences")
    cases = 40
    for k in range(cases):
        p = HpccParams.scaled(rng.choice([10e6, 40e6, 100e6]), rng.choice([0.001, 0.005, 0.01]),
                              packet_bytes=rng.choice([1000, 1086]), flows=rng.randint(1, 32))
        acks = _sequence(rng)
        reference = Hpcc(p)
        want = [reference.on_ack(seq, nxt, hops) for seq, nxt, hops in acks]
        got = _student_window(work, p, acks)
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            if not math.isclose(a, b, rel_tol=1e-6):
                seq, nxt, hops = acks[i]
                raise StepFailed(f"hidden case {k + 1}: at ACK {i} (seq {seq}, snd_nxt {nxt}, "
                                 f"{len(hops)} hop(s)) W = {a:.1f} B; Algorithm 1 gives "
                                 f"{b:.1f} B")
    return f"{cases} hidden ACK sequences: the same window as the lab's HPCC sender, ACK by ACK"


STEPS = [
    Step("defines link_utilisation(), measure_inflight(), compute_window()", loads,
         "keep the functions' names and arguments"),
    Step("one link's u' and tau from two records", per_link,
         "TODO 1: B in bytes/s is link_mbps x 1e6 / 8; egress_ts is in µs; compare only the "
         "same switch and port with a rate; take the tx_bytes difference modulo 2^32"),
    Step("MeasureInflight: the busiest link, tau capped at T", inflight,
         "TODO 2: the link with the largest u' sets both u and tau; tau = min(tau, T); "
         "records are compared position by position"),
    Step("ComputeWind: additive stages, then multiplicative", window,
         "TODO 3: U >= eta or incStage >= maxStage is the multiplicative branch; only a new "
         "RTT (update_wc) moves Wc and incStage"),
    Step("whole ACK sequences match the lab's HPCC sender", whole_sequences,
         "a path change, a zero rate or no time passed make a hop incomparable; a wrap is a "
         "difference modulo 2^32"),
]
