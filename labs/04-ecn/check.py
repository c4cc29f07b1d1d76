"""Checks of lab 4 (ECN): the student's EcnMarking in the p4switch engine, with the controller's
RED profile (controller.congestion.EcnProfile) as range entries and the queue depth the checker
chooses for each packet."""

from __future__ import annotations

import random

from controller.congestion import EcnProfile
from fabric_lab.labkit import LabSwitch, Step, StepFailed, Work, compiles, roce_frame
from mechanisms import ecn as ecn_names

TITLE = "ECN: RED marking on the queue depth"
MINUTES = 45
PREREQS = "lab 1; ECN bits, DCQCN (docs/mechanisms/ecn.md)"
FILE = "ecn_lab.p4"
OWN_CONTROLS = ("EcnMarking",)
WITHHELD = ("ecn.p4",)

PORTS = [1]
NOT_ECT, ECT0, CE = 0, 2, 3


def _switch(work: Work, profile: EcnProfile) -> LabSwitch:
    from p4switch.cpmodel import FieldMatch

    switch = work.switch(PORTS)
    for low, high, threshold in profile.ranges():
        switch.insert(ecn_names.PROFILE_TABLE, (FieldMatch("range", low=low, high=high),),
                      ecn_names.MARK_ACTION, (threshold,), priority=1)
    return switch


def _marked(switch: LabSwitch, depth: int, count: int, ecn: int = ECT0) -> int:
    marks = 0
    for i in range(count):
        out = switch.at_depth(roce_frame(50000, psn=i, ecn=ecn), depth)
        marks += (out[15] & 3) == CE
    return marks


def marks_from_kmax(work: Work) -> str:
    switch = _switch(work, EcnProfile(kmin=5, kmax=20, pmax=0.2))
    for depth in (20, 40):
        marks = _marked(switch, depth, 30)
        if marks != 30:
            raise StepFailed(f"queue depth {depth} (>= kmax 20): {marks} of 30 ECT(0) packets "
                             f"left marked CE; every one should")
    return "depth 20 and 40: 30 of 30 marked"


def none_below_kmin(work: Work) -> str:
    switch = _switch(work, EcnProfile(kmin=5, kmax=20, pmax=0.2))
    for depth in (0, 3, 5):
        marks = _marked(switch, depth, 40)
        if marks:
            raise StepFailed(f"queue depth {depth} (<= kmin 5): {marks} of 40 packets marked")
    return "depth 0, 3, 5: none marked"


def red_probability(work: Work) -> str:
    profile = EcnProfile(kmin=4, kmax=12, pmax=1.0)
    switch = _switch(work, profile)
    marks = _marked(switch, 8, 400)
    want = profile.probability(8) * 400
    if not want * 0.7 <= marks <= want * 1.3:
        raise StepFailed(f"queue depth 8 with kmin 4, kmax 12, pmax 1: {marks} of 400 marked; "
                         f"RED marks about {want:.0f}")
    return f"depth 8: {marks} of 400 marked (expected about {want:.0f}); {_hidden_draws(work)}"


def _hidden_draws(work: Work) -> str:
    """Hidden cases: thresholds drawn per run, each met by a draw equal to it and one below.
    The engine draws random() from Python's shared generator; seeding it lets the checker
    know each packet's draw and install a threshold of exactly that draw (no mark: the draw is
    not below it) or one more (a mark)."""
    from p4switch.cpmodel import FieldMatch

    rng = work.rng("ecn-draws")
    for case in range(24):
        seed = rng.randrange(1 << 30)
        draw = random.Random(seed).randint(0, 65534)  # the draw random(draw, 0, 65534) makes
        above = rng.random() < 0.5
        switch = work.switch(PORTS)
        switch.insert(ecn_names.PROFILE_TABLE, (FieldMatch("range", low=0, high=1000),),
                      ecn_names.MARK_ACTION, (draw + above,), priority=1)
        random.seed(seed)
        marked = _marked(switch, rng.randrange(1, 1000), 1)
        if marked != above:
            raise StepFailed(f"hidden case {case}: the draw was {draw} and the threshold "
                             f"{draw + above}: the packet was {'' if marked else 'not '}marked; "
                             f"mark exactly when draw < threshold")
    return "24 hidden draws at and below their threshold"



def only_ect(work: Work) -> str:
    switch = _switch(work, EcnProfile(kmin=5, kmax=20, pmax=0.2))
    for ecn, name in ((NOT_ECT, "Not-ECT"), (CE, "CE")):
        for i in range(10):
            out = switch.at_depth(roce_frame(50000, psn=i, ecn=ecn), 40)
            if (out[15] & 3) != ecn:
                raise StepFailed(f"a {name} packet left with ECN bits {out[15] & 3}: only "
                                 f"ECN-capable packets may be marked")
    counted = switch.counter(ecn_names.MARKED_COUNTER, PORTS[0])
    if counted:
        raise StepFailed(f"10 Not-ECT and 10 CE packets at depth 40, none marked by this switch, "
                         f"yet ecn_marked_counter[{PORTS[0]}] = {counted}: a packet that arrives "
                         f"marked CE is not marked (nor counted) again")
    marks = _marked(switch, 40, 1, ecn=1)
    if marks != 1:
        raise StepFailed("an ECT(1) packet at depth 40 was not marked")
    return "Not-ECT and CE untouched, ECT(1) marked"


def counts_marks(work: Work) -> str:
    switch = _switch(work, EcnProfile(kmin=5, kmax=20, pmax=0.2))
    _marked(switch, 40, 7)
    _marked(switch, 0, 5)
    _marked(switch, 40, 3, ecn=NOT_ECT)
    counted = switch.counter(ecn_names.MARKED_COUNTER, PORTS[0])
    if counted != 7:
        raise StepFailed(f"7 packets were marked on port {PORTS[0]}; ecn_marked_counter[{PORTS[0]}]"
                         f" says {counted}")
    return f"ecn_marked_counter[{PORTS[0]}] = 7"


STEPS = [
    Step("compiles, declaring the lab's controls itself", compiles,
         "fix the compiler's first error (`p4switch-compile ecn_lab.p4 -o /tmp/out` in your lab "
         "directory shows the same); declare the lab's controls in your file, never include "
         "them from p4src/"),
    Step("marks every ECT packet from kmax on", marks_from_kmax,
         "TODO 2: threshold 65535 is above every draw in [0, 65534]: mark when draw < threshold"),
    Step("marks nothing below kmin", none_below_kmin,
         "mark only when ecn_profile hits; no entry covers depths up to kmin"),
    Step("marks with RED's probability between kmin and kmax", red_probability,
         "random(draw, 0, 65534), then draw < mark_threshold (not <=, not a constant)"),
    Step("marks only ECN-capable packets", only_ect,
         "TODO 1: skip ECN_NOT_ECT (the sender cannot react) and ECN_CE (already marked)"),
    Step("counts each mark at the egress port", counts_marks,
         "ecn_marked_counter.count((bit<32>) standard_metadata.egress_port) when marking"),
]
