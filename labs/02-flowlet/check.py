"""Checks of lab 2 (flowlet switching): the student's FlowletSwitching in the p4switch engine,
one switch with an equal-cost group and a clock the checker sets."""

from __future__ import annotations

from fabric_lab.labkit import (
    LabSwitch,
    Spread,
    Step,
    StepFailed,
    Work,
    compiles,
    reference_program,
    roce_frame,
)

TITLE = "Flowlet switching"
MINUTES = 60
PREREQS = "lab 1; P4 registers (docs/mechanisms/flowlet.md)"
FILE = "flowlet_lab.p4"
OWN_CONTROLS = ("FlowletSwitching",)
WITHHELD = ("flowlet.p4",)

PORTS = [1, 2, 3, 4]
GAP_US = 20_000


def keeps_path_inside_gap(work: Work) -> str:
    switch = work.switch(PORTS, seed=0x1234, flowlet_gap_us=GAP_US)
    for sport in range(50000, 50016):
        frame = roce_frame(sport)
        ports = set()
        for _ in range(20):
            switch.now_us += GAP_US // 4
            ports.add(switch.egress_port(frame))
        if len(ports) != 1:
            raise StepFailed(f"flow {sport}: packets {GAP_US // 4} us apart (a quarter of the "
                             f"gap) took ports {sorted(ports)}")
    return "16 flows x 20 packets a quarter gap apart: one port each"


def new_flowlets_spread(work: Work) -> str:
    out = []
    for ports in ([1, 2], [1, 2, 3, 4], list(range(1, 9))):
        switch = work.switch(ports, seed=0x1234, flowlet_gap_us=GAP_US)
        frame = roce_frame(50000)
        spread = Spread()
        for _ in range(32 * len(ports)):
            switch.now_us += 2 * GAP_US
            spread.add(switch.egress_port(frame))
        if set(spread.counts) != set(ports) or min(spread.counts.values()) < 8:
            raise StepFailed(f"{len(ports)} paths, one flow pausing 2 gaps between packets: "
                             f"{spread}; every path should carry some of its flowlets")
        out.append(f"{len(ports)} paths: all used")
    return "; ".join(out)


def gap_is_the_knob(work: Work) -> str:
    frame = roce_frame(50001)
    short = work.switch(PORTS, flowlet_gap_us=1_000)
    long = work.switch(PORTS, flowlet_gap_us=1_000_000)
    seen_short, seen_long = set(), set()
    for _ in range(40):
        for switch, seen in ((short, seen_short), (long, seen_long)):
            switch.now_us += 5_000
            seen.add(switch.egress_port(frame))
    if len(seen_long) != 1:
        raise StepFailed(f"gap 1 s, packets 5 ms apart: ports {sorted(seen_long)}; one flowlet "
                         f"should stay on one port")
    if len(seen_short) < 2:
        raise StepFailed(f"gap 1 ms, packets 5 ms apart: ports {sorted(seen_short)}; every "
                         f"packet is a new flowlet and should move")
    return f"gap 1 ms: {len(seen_short)} ports; gap 1 s: 1 port; {_hidden_schedule(work)}"


def _hidden_schedule(work: Work) -> str:
    """Hidden cases: a gap, flows and an interleaving of their packets drawn per run, with idle
    times around the gap (exactly the gap, one microsecond more); every packet must leave on
    the port p4src/flowlet.p4 picks."""
    rng = work.rng("flowlet-schedule")
    gap = rng.randrange(200, 50_000)
    ports = list(range(1, rng.randint(2, 8) + 1))
    mine = work.switch(ports, seed=0x1234, flowlet_gap_us=gap)
    lab = LabSwitch(reference_program("flowlet"), ports, seed=0x1234, flowlet_gap_us=gap)
    flows = [roce_frame(rng.randrange(1024, 65536), src_ip=f"10.0.{rng.randrange(256)}.1")
             for _ in range(6)]
    for packet in range(240):
        idle = rng.choice([1, gap // 3, gap, gap + 1, 2 * gap, rng.randrange(1, 3 * gap)])
        mine.now_us = lab.now_us = lab.now_us + idle
        frame = rng.choice(flows)
        if mine.egress_port(frame) != lab.egress_port(frame):
            raise StepFailed(f"hidden case: gap {gap} us, {len(ports)} ports, packet {packet} "
                             f"after {idle} us idle: your program and p4src/flowlet.p4 pick "
                             f"different ports (a new flowlet exactly when more than the gap "
                             f"passed)")
    return f"240 hidden packets (gap {gap} us) on the ports of p4src/flowlet.p4"


STEPS = [
    Step("compiles, declaring the lab's controls itself", compiles,
         "fix the compiler's first error (`p4switch-compile flowlet_lab.p4 -o /tmp/out` in your lab "
         "directory shows the same); declare the lab's controls in your file, never include "
         "them from p4src/"),
    Step("keeps a flowlet on one path inside the gap", keeps_path_inside_gap,
         "TODO 1 compares with gap_us, TODO 2 stores the time for every packet"),
    Step("spreads new flowlets over every path", new_flowlets_spread,
         "TODO 1 must bump the id after a gap; TODO 3 must mix it into meta.flow_hash"),
    Step("takes the gap from the flowlet_gap table", gap_is_the_knob,
         "compare against gap_us (set by set_flowlet_gap), not a constant"),
]
