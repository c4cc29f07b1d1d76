"""Checks of lab 1 (ECMP): the student's FlowKey in the p4switch engine, one switch with an
equal-cost group of 4 ports; then a short experiment against the balls-into-bins expectation."""

from __future__ import annotations

import csv
import random

from experiments.framework.ballsbins import expected_max_load
from fabric_lab.labkit import LabSwitch, Spread, Step, StepFailed, Work, compiles, reference_program, roce_frame

TITLE = "ECMP: the flow key and its hash"
MINUTES = 45
PREREQS = "IPv4/UDP headers, the RoCEv2 header stack (docs/mechanisms/ecmp.md)"
FILE = "ecmp_lab.p4"
OWN_CONTROLS = ("FlowKey", "FlowIndex")
WITHHELD = ("flow.p4",)

PORTS = [1, 2, 3, 4]
SEED = 0x1234


def routes(work: Work) -> str:
    switch = work.switch(PORTS, seed=SEED)
    frame = roce_frame(50000)
    port, out = switch.forward(frame)
    if port not in PORTS:
        raise StepFailed(f"the packet left on port {port}, not one of the group's {PORTS}")
    if out[22] != frame[22] - 1:
        raise StepFailed(f"TTL {frame[22]} -> {out[22]}: it must drop by one")
    return f"10.0.1.1 -> port {port}"


def one_flow_one_path(work: Work) -> str:
    switch = work.switch(PORTS, seed=SEED)
    for sport in range(50000, 50008):
        ports = {switch.egress_port(roce_frame(sport, psn=psn)) for psn in range(10)}
        if len(ports) != 1:
            raise StepFailed(f"flow with UDP source port {sport} took ports {sorted(ports)}: a "
                             f"flow's packets would be reordered")
    return "8 flows x 10 packets, each flow on one port"


def _spread(switch: LabSwitch, frames: list[bytes]) -> Spread:
    spread = Spread()
    for frame in frames:
        spread.add(switch.egress_port(frame))
    return spread


def flows_spread(work: Work) -> str:
    switch = work.switch(PORTS, seed=SEED)
    spread = _spread(switch, [roce_frame(49152 + i) for i in range(64)])
    if len(spread.counts) < len(PORTS) or max(spread.counts.values()) > 32:
        raise StepFailed(f"64 flows (UDP source ports 49152..49215): {spread}; expected every "
                         f"port used and none above 32")
    return str(spread)


def every_field_counts(work: Work) -> str:
    switch = work.switch(PORTS, seed=SEED)
    variants = {
        "UDP source port": [roce_frame(50000 + i) for i in range(32)],
        "IPv4 source": [roce_frame(50000, src_ip=f"10.0.{i}.1") for i in range(32)],
        "IPv4 destination": [roce_frame(50000, dst_ip=f"10.1.{i}.1") for i in range(32)],
    }
    lines = []
    for what, frames in variants.items():
        spread = _spread(switch, frames)
        if len(spread.counts) < 3:
            raise StepFailed(f"32 flows differing only in the {what}: {spread}; the hash "
                             f"ignores the {what}")
        lines.append(f"{what}: {len(spread.counts)} ports")
    return "; ".join(lines)


def _address(rng: random.Random) -> str:
    return f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}"


def same_as_the_lab(work: Work) -> str:
    mine = work.switch(PORTS, seed=SEED)
    lab = LabSwitch(reference_program("ecmp"), PORTS, seed=SEED)
    for i in range(64):
        frame = roce_frame(49152 + 7 * i, src_ip=f"10.0.{i % 8}.1")
        if mine.egress_port(frame) != lab.egress_port(frame):
            raise StepFailed(f"flow {i}: your program and p4src/ecmp.p4 pick different ports")
    # hidden cases: group sizes, hash seeds and flows drawn per run
    rng = work.rng("ecmp-same-as-the-lab")
    for _ in range(4):
        ports = list(range(1, rng.randint(2, 8) + 1))
        seed = rng.randrange(1 << 16)
        mine, lab = work.switch(ports, seed=seed), LabSwitch(reference_program("ecmp"), ports,
                                                              seed=seed)
        for _ in range(32):
            src, dst, sport = _address(rng), _address(rng), rng.randrange(1024, 65536)
            frame = roce_frame(sport, src_ip=src, dst_ip=dst)
            if mine.egress_port(frame) != lab.egress_port(frame):
                raise StepFailed(f"hidden case: {src} -> {dst}, UDP source port {sport}, "
                                 f"{len(ports)} ports, hash seed {seed:#x}: your program and "
                                 f"p4src/ecmp.p4 pick different ports")
    return "64 flows, and 128 hidden ones on 2-8 ports, on the same ports as p4src/ecmp.p4"


def collisions_experiment(work: Work) -> str:
    """A short experiment: 8 flows on 4 ports, 150 trials of random source ports; the mean
    busiest port against the exact balls-into-bins expectation. Writes ecmp-collisions.csv
    next to the program."""
    rng = random.Random(7)
    switch = work.switch(PORTS, seed=SEED)
    rows = []
    for trial in range(150):
        sports = rng.sample(range(49152, 65536), 8)
        spread = _spread(switch, [roce_frame(s) for s in sports])
        rows.append({"trial": trial, "flows": 8, "links": 4,
                     "max_load": max(spread.counts.values()),
                     "links_used": len(spread.counts)})
    where = ""
    if work.out_dir is not None:
        out = work.out_dir / "ecmp-collisions.csv"
        with out.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        where = f"; per trial in {out}"
    mean = sum(r["max_load"] for r in rows) / len(rows)
    expected = float(expected_max_load(8, 4))
    if abs(mean - expected) > 0.35:
        raise StepFailed(f"mean busiest port {mean:.2f} flows, balls-into-bins expects "
                         f"{expected:.2f}: the hash is not spreading like a random one")
    return f"mean max_load {mean:.2f} flows (expected {expected:.2f}){where}"


STEPS = [
    Step("compiles, declaring the lab's controls itself", compiles,
         "fix the compiler's first error (`p4switch-compile ecmp_lab.p4 -o /tmp/out` in your lab "
         "directory shows the same); declare the lab's controls in your file, never include "
         "them from p4src/"),
    Step("routes a RoCEv2 packet to a group port", routes,
         "routing is the lab's; if this fails the program no longer includes fabric_main.p4"),
    Step("keeps every flow on one path", one_flow_one_path,
         "the hash may only use fields that stay the same for every packet of a flow (not the "
         "PSN, not a counter)"),
    Step("spreads 64 flows over all 4 paths", flows_spread,
         "TODO 2: meta.flow_hash must come from hash(...) over the 5-tuple"),
    Step("hashes source port, source and destination address", every_field_counts,
         "TODO 1 and 2: all five fields go into the hash; the L4 ports are copied first"),
    Step("picks the same paths as p4src/ecmp.p4", same_as_the_lab,
         "CRC-32, base 0, max 2^32, fields in the order of TODO 2"),
    Step("collisions match balls-into-bins (short experiment)", collisions_experiment,
         "compare with `fabric-lab run ecmp-hashing --quick`: imbalance.csv, column max_load",
         after_all=True),
]
