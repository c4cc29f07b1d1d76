"""Checks of lab 5 (PFC): the student's thresholds against the lab's headroom rule, then a short
incast on Mininet with them (`fabric-lab run incast --quick -p settings=pfc`, root)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from experiments.incast.experiment import EXPERIMENT as INCAST_EXPERIMENT
from fabric_lab.labkit import Step, StepFailed, Work

TITLE = "PFC: thresholds for a lossless queue"
MINUTES = 45
PREREQS = "lab 4; PFC pause frames (docs/mechanisms/pfc.md); root for the last step"
FILE = "pfc_lab.py"

REACTION_S = 0.003  # the lab's model: the pause acts 3 ms after it is decided
CASES = [(64, 1000, 250), (64, 250, 250), (32, 2000, 250), (100, 1000, 1000), (50, 3000, 1000)]
# the queue and rates of `fabric-lab run incast` (its defaults, on p4switch)
INCAST = {key: INCAST_EXPERIMENT.defaults[key] for key in ("depth", "fabric_pps", "host_pps")}


def _thresholds(work: Work, depth: int, fabric: float, host: float) -> tuple[int, int]:
    got = work.function("pfc_thresholds")(depth, fabric, host)
    if (not isinstance(got, tuple) or len(got) != 2
            or not all(isinstance(v, int) and not isinstance(v, bool) for v in got)):
        raise StepFailed(f"pfc_thresholds({depth}, {fabric}, {host}) returned {got!r}, not "
                         f"(xoff, xon) as two ints")
    return got


def loads(work: Work) -> str:
    work.function("pfc_thresholds")
    return "pfc_thresholds() found"


def xoff_fits(work: Work) -> str:
    for depth, fabric, host in CASES:
        xoff, _ = _thresholds(work, depth, fabric, host)
        need = xoff * fabric / host + fabric * REACTION_S
        if need > depth:
            raise StepFailed(f"depth {depth}, fabric {fabric} pps, host {host} pps: XOFF {xoff} "
                             f"needs {need:g} packets of queue; the queue drops before the "
                             f"pause acts")
    return f"{len(CASES)} cases fit"


def xoff_largest(work: Work) -> str:
    shown = []
    for depth, fabric, host in CASES:
        xoff, _ = _thresholds(work, depth, fabric, host)
        if xoff * fabric / host + fabric * REACTION_S > depth:
            raise StepFailed(f"depth {depth}: XOFF {xoff} does not fit at all (step 2 first)")
        if (xoff + 1) * fabric / host + fabric * REACTION_S <= depth:
            raise StepFailed(f"depth {depth}, fabric {fabric} pps, host {host} pps: XOFF "
                             f"{xoff + 1} would still fit; a low XOFF pauses more than needed")
        shown.append(f"{depth}/{fabric}/{host}: XOFF {xoff}")
    return "; ".join(shown)


def xon_half(work: Work) -> str:
    for depth, fabric, host in CASES:
        xoff, xon = _thresholds(work, depth, fabric, host)
        if xon != xoff // 2:
            raise StepFailed(f"XOFF {xoff} with XON {xon}: resume at half of XOFF ({xoff // 2});"
                             f" XON right below XOFF makes the port flap between pause and "
                             f"resume")
    return "XON = XOFF // 2 in every case"


def refuses_small_queue(work: Work) -> str:
    try:
        got = work.function("pfc_thresholds")(8, 2000, 250)
    except ValueError:
        return "an 8-packet queue at 2000/250 pps is refused"
    raise StepFailed(f"an 8-packet queue filled 8x faster than it drains got {got!r}; it cannot "
                     f"be lossless: raise ValueError")


def incast_lossless(work: Work) -> str:
    if os.geteuid() != 0:
        raise StepFailed("this step runs an incast on Mininet and needs root: sudo fabric-lab "
                         "lab check 5")
    from experiments.framework import execute

    xoff, xon = _thresholds(work, INCAST["depth"], INCAST["fabric_pps"], INCAST["host_pps"])
    overrides = {"settings": "pfc", "xoff": str(xoff), "xon": str(xon)}
    with tempfile.TemporaryDirectory(prefix="lab5-") as tmp:
        out = (work.out_dir / "lab5-incast") if work.out_dir else Path(tmp) / "incast"
        if out.exists() and any(out.iterdir()):
            out = out.with_name(f"{out.name}-{os.getpid()}")
        try:
            result = execute(INCAST_EXPERIMENT, quick=True, target="p4switch", out=out,
                             overrides=overrides, progress=lambda _line: None)
        except Exception as err:  # the run itself failed: a stalled fabric, a missing tool
            raise StepFailed(f"the incast with XOFF {xoff}, XON {xon} did not complete "
                             f"({type(err).__name__}: {err}); thresholds this close to the "
                             f"queue's size can stall the fabric") from None
        row = result.read_csv("summary.csv")[0]
    drops, lost = int(row["drops_congested"]), int(row["lost"])
    complete = f"{row['messages_complete']}/{row['senders']}"
    if drops or lost or row["messages_complete"] != row["senders"]:
        raise StepFailed(f"incast with XOFF {xoff}, XON {xon}: drops_congested {drops}, lost "
                         f"{lost}, messages complete {complete}; PFC should lose nothing")
    where = f"; {out}/summary.csv" if work.out_dir else ""
    return (f"XOFF {xoff}, XON {xon}: drops_congested 0, peak_queue_congested "
            f"{row['peak_queue_congested']} of {INCAST['depth']}, {complete} messages{where}")


STEPS = [
    Step("defines pfc_thresholds()", loads, "keep the function's name and arguments"),
    Step("XOFF leaves room for the headroom", xoff_fits,
         "TODO 1: XOFF x fabric_pps / host_pps + fabric_pps x REACTION_S <= depth; round down, "
         "never up"),
    Step("XOFF is the largest that fits", xoff_largest,
         "TODO 1: floor((depth - fabric_pps x REACTION_S) x host_pps / fabric_pps)"),
    Step("XON is half of XOFF", xon_half, "TODO 3: xoff // 2"),
    Step("refuses a queue too small for PFC", refuses_small_queue,
         "TODO 2: raise ValueError when XOFF < 2"),
    Step("an incast with these thresholds loses nothing (short experiment)", incast_lossless,
         "read summary.csv: drops_congested, peak_queue_congested; compare with the docs' "
         "exercise `-p xoff=96 -p xon=40`", after_all=True),
]
