"""The figures the mechanism pages and lab handouts show, declared once: which `--quick` run
draws each, where it is installed, which pages show it, and the claim it must still support.

`make figures` (scripts/figures.py) reruns the runs, checks every claim on the run's CSV files
and installs the figures and the runs (as the shipped examples, `examples/results/`, which
`fabric-lab report` shows on a checkout without results of its own). A claim is a sentence the
page says, and a check that computes it from the run's CSV files: it returns what it measured
and raises `ClaimFailed` when the run no longer shows it. Nothing here starts a network.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from experiments.framework.ballsbins import expected_imbalance
from experiments.framework.results import ResultDir

REPO = Path(__file__).resolve().parent.parent
IMAGES = REPO / "docs" / "images"
EXAMPLES = REPO / "examples" / "results"  # the shipped runs: EXAMPLES/<experiment>/quick/
EXAMPLE_RUN = "quick"


class ClaimFailed(Exception):
    """A run that no longer shows what the page says: what was measured instead."""


@dataclass(frozen=True)
class Run:
    """One `fabric-lab run EXPERIMENT --quick` with these `-p` parameters (names isolated from
    other fabrics on the machine where the experiment takes a prefix)."""

    experiment: str
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def roots(self) -> tuple[str, ...]:
        """What the run executes (fabric_lab/measured.py follows their imports)."""
        return (f"experiments.{self.experiment.replace('-', '_')}.experiment",
                "fabric_lab.commands.run")

    def argv(self) -> list[str]:
        out = ["run", self.experiment, "--quick"]
        for key, value in self.params.items():
            out += ["-p", f"{key}={value}"]
        return out


@dataclass(frozen=True)
class Table:
    """A table a page transcribes from benchmark output: the commands (from the repository root,
    as root, in order) whose output its record keeps, and the code they measure. The page links
    the record (`runs/<name>.json` from docs/) on the line that gives the table's date."""

    name: str
    page: str  # from the repository root
    commands: tuple[tuple[str, ...], ...]  # a bench script (or `-m module`) and its arguments
    measures: tuple[str, ...] = ()  # the modules a `-m` command runs, when not its scripts

    @property
    def roots(self) -> tuple[str, ...]:
        """What it runs (fabric_lab/measured.py follows their imports)."""
        return self.measures or tuple(sorted({command[0] for command in self.commands}))

    @staticmethod
    def shown(command: tuple[str, ...]) -> str:
        """A command as the pages write it (after `sudo .venv/bin/python` or `sudo`)."""
        if command[:2] == ("-m", "fabric_lab.cli"):
            return " ".join(("fabric-lab", *command[2:]))
        return " ".join(command)

    @property
    def record(self) -> Path:
        return REPO / "docs" / "runs" / f"{self.name}.json"


@dataclass(frozen=True)
class Figure:
    name: str  # installed as docs/images/<name>.png
    run: str  # the experiment whose run draws it (RUNS)
    plot: str  # the PNG of that run
    pages: tuple[str, ...]  # the pages (from the repository root) that show it
    claim: str  # what the pages say it shows
    check: Callable[[ResultDir], str]  # measures the claim on the run; raises ClaimFailed

    @property
    def path(self) -> Path:
        return IMAGES / f"{self.name}.png"


def _require(ok: bool, measured: str) -> str:
    if not ok:
        raise ClaimFailed(measured)
    return measured


def _by(rows: list[dict[str, str]], key: str) -> dict[str, dict[str, str]]:
    return {row[key]: row for row in rows}


# -- the claims --------------------------------------------------------------------------------

def ecmp_like_balls_into_bins(run: ResultDir) -> str:
    rows = run.read_csv("imbalance.csv")
    worst, points = 0.0, {}
    for links, flows in sorted({(int(r["links"]), int(r["flows"])) for r in rows}):
        mean = statistics.mean(float(r["imbalance"]) for r in rows
                               if int(r["links"]) == links and int(r["flows"]) == flows)
        points[(links, flows)] = mean
        worst = max(worst, abs(mean / expected_imbalance(flows, links) - 1))
    two, many = points[(4, 2)], points[(4, max(f for _, f in points))]
    return _require(worst < 0.2 and two > 2.5 and many < two,
                    f"largest departure from balls into bins {worst:.0%}; on 4 links: 2 flows "
                    f"{two:.2f}, {max(f for _, f in points)} flows {many:.2f}")


def _lb_mean(rows: list[dict[str, str]], label: str, field_name: str) -> float:
    values = [float(r[field_name]) for r in rows if r["label"] == label]
    if not values:
        raise ClaimFailed(f"no {label!r} rows")
    return statistics.mean(values)


def _even(run: ResultDir) -> list[dict[str, str]]:
    return [r for r in run.read_csv("runs.csv") if r.get("scenario", "even") == "even"]


def flowlet_gap_decides(run: ResultDir) -> str:
    """The run's widest flowlet gap keeps ECMP's imbalance, its narrowest lowers it."""
    from experiments.lb_compare.experiment import label

    rows = _even(run)
    gaps = sorted(int(g) for g in run.read_params()["params"]["flowlet_gaps_us"])
    narrow_label, wide_label = label("flowlet", gaps[0]), label("flowlet", gaps[-1])
    wide = _lb_mean(rows, wide_label, "imbalance")
    narrow = _lb_mean(rows, narrow_label, "imbalance")
    spray = _lb_mean(rows, "dlb", "imbalance")
    ecmp = _lb_mean(rows, "ecmp", "imbalance")
    return _require(wide >= 1.3 and narrow < wide and spray < 1.1,
                    f"mean uplink imbalance: {wide_label} {wide:.2f}, {narrow_label} "
                    f"{narrow:.2f}, dlb {spray:.2f} (ECMP {ecmp:.2f})")


def spraying_has_no_collision_tail(run: ResultDir) -> str:
    rows = _even(run)

    def slowdowns(label: str) -> list[float]:
        values = [float(r["slowdown"]) for r in rows if r["label"] == label]
        if not values:
            raise ClaimFailed(f"no {label!r} rows")
        return values
    ecmp, dlb, untagged = slowdowns("ecmp"), slowdowns("dlb"), slowdowns("dlb untagged")
    return _require(max(dlb) < max(ecmp)
                    and statistics.median(untagged) > 5 * statistics.median(dlb),
                    f"slowest step: ECMP {max(ecmp):.2f}, dlb {max(dlb):.2f}; median: dlb "
                    f"{statistics.median(dlb):.2f}, dlb untagged "
                    f"{statistics.median(untagged):.2f}")


def ecn_slows_the_senders(run: ResultDir) -> str:
    summary = _by(run.read_csv("summary.csv"), "setting")
    none, ecn = summary["none"], summary["ecn"]
    drops_none, drops_ecn = int(none["drops_congested"]), int(ecn["drops_congested"])
    return _require(int(ecn["ecn_marked"]) > 0 and int(ecn["cnps"]) > 0
                    and int(ecn["rate_cuts"]) > 0 and drops_ecn < drops_none,
                    f"drops at the congested port: none {drops_none}, ecn {drops_ecn} "
                    f"({ecn['ecn_marked']} marks, {ecn['cnps']} CNPs, {ecn['rate_cuts']} rate "
                    f"cuts)")


def pfc_lossless_and_blocks_the_victim(run: ResultDir) -> str:
    summary = _by(run.read_csv("summary.csv"), "setting")
    none, pfc, both = summary["none"], summary["pfc"], summary["ecn+pfc"]
    before, during = float(pfc["victim_mbps_before"]), float(pfc["victim_mbps_during"])
    return _require(int(pfc["drops_congested"]) == 0 == int(both["drops_congested"])
                    and int(none["drops_congested"]) > 0
                    and int(pfc["host_pause_frames"]) > 0 and during < before / 2,
                    f"drops at the congested port: none {none['drops_congested']}, pfc "
                    f"{pfc['drops_congested']} ({pfc['host_pause_frames']} host pauses), ecn+pfc "
                    f"{both['drops_congested']}; "
                    f"victim under pfc {before:.1f} -> {during:.1f} Mb/s")


def data_plane_failover_is_fast(run: ResultDir) -> str:
    rows = run.read_csv("outcomes.csv")
    crossed = [r for r in rows if r["crossed"] == "1"]

    def worst(kind: str) -> float:
        windows = [float(r["loss_window_ms"]) for r in crossed if r["kind"] == kind]
        if not windows:
            raise ClaimFailed(f"no flow crossed the {kind} failure")
        return max(windows)
    uplink, downlink, silent = worst("uplink"), worst("downlink"), worst("silent")
    dead = [r["flow"] for r in rows if r["recovered"] != "1"]
    return _require(uplink < 50 and uplink < downlink < silent and not dead,
                    f"worst loss window: uplink {uplink:.0f} ms, downlink {downlink:.0f} ms, "
                    f"silent drop {silent:.0f} ms; {len(dead)} flow(s) never recovered")


def deadlock_forms_and_the_watchdog_breaks_it(run: ResultDir) -> str:
    summary = _by(run.read_csv("summary.csv"), "setting")
    off, drop = summary["off"], summary["drop"]
    return _require(off["deadlocked"] == "True" and int(off["ring_sent_after_stop"]) == 0
                    and drop["deadlocked"] == "False" and int(drop["detections"]) > 0
                    and set(drop["ring_depths"].split()) == {"0"}
                    and summary["prevent"]["deadlocked"] == "False",
                    f"no watchdog: deadlocked {off['deadlocked']}, ring depths "
                    f"{off['ring_depths']}, {off['ring_sent_after_stop']} sent after the "
                    f"senders stopped; drop: {drop['detections']} detections, deadlocked "
                    f"{drop['deadlocked']}, ring depths {drop['ring_depths']}; prevent: "
                    f"deadlocked {summary['prevent']['deadlocked']}")


def placement_keeps_traffic_low(run: ResultDir) -> str:
    rows = run.read_csv("collectives.csv")
    ring = {r["order"]: r for r in rows if r["part"] == "aipod"}
    naive, aware = (int(ring[o]["superspine_packets"]) for o in ("naive", "aware"))
    return _require(0 < aware <= naive / 2, f"AIPod ring, packets through the superspine: "
                                            f"naive {naive}, aware {aware} (the fabric model: "
                                            f"{ring['naive']['model_superspine_packets']}, "
                                            f"{ring['aware']['model_superspine_packets']})")


def rails_keep_the_allreduce_low(run: ResultDir) -> str:
    summary = _by(run.read_csv("summary.csv"), "fabric")
    hpn, clos = summary["hpn7"], summary["clos"]
    return _require(float(hpn["agg_bytes"]) <= 0.75 * float(clos["agg_bytes"]),
                    f"busbw: hpn7 {hpn['busbw_gbs']}, clos {clos['busbw_gbs']} GB/s; bytes into "
                    f"the aggregation layer: hpn7 {float(hpn['agg_bytes']):.0f}, clos "
                    f"{float(clos['agg_bytes']):.0f}")


def hpcc_keeps_the_queue_short(run: ResultDir) -> str:
    p99 = {(r["pattern"], r["cc"]): float(r["bottleneck_queue_p99"])
           for r in run.read_csv("summary.csv")}
    patterns = sorted({pattern for pattern, _ in p99})
    if not patterns:
        raise ClaimFailed("no rows in summary.csv")
    return _require(all(p99[(p, "hpcc")] < min(p99[(p, "dcqcn")], p99[(p, "none")])
                        for p in patterns),
                    "; ".join(f"{p} queue p99: none {p99[(p, 'none')]:.0f}, dcqcn "
                              f"{p99[(p, 'dcqcn')]:.0f}, hpcc {p99[(p, 'hpcc')]:.0f} packets"
                              for p in patterns))


# -- the declarations --------------------------------------------------------------------------

# Runs that take a name prefix get one (and ports apart) so that they can share the machine.
APART = {"name_prefix": "fg", "port_base": 31000}
RUNS: dict[str, Run] = {run.experiment: run for run in (
    Run("ecmp-hashing"),
    Run("lb-compare", APART),
    Run("incast", {"xoff": 49, "xon": 24}),  # lab 5's thresholds: the largest XOFF that fits
    Run("failover"),
    Run("pfc-deadlock"),
    Run("topology-aware", APART),
    Run("rail-vs-clos", APART),
    Run("cc-compare", APART),
)}

FIGURES: tuple[Figure, ...] = (
    Figure("ecmp-imbalance", "ecmp-hashing", "imbalance.png",
           ("docs/mechanisms/ecmp.md", "labs/00-first-fabric/README.md", "labs/01-ecmp/README.md"),
           "ECMP's measured imbalance stays within 20% of balls into bins, 2 flows on 4 links "
           "above 2.5 times the mean, falling as flows are added",
           ecmp_like_balls_into_bins),
    Figure("lb-imbalance", "lb-compare", "imbalance.png",
           ("docs/mechanisms/flowlet.md", "labs/02-flowlet/README.md"),
           "paced flows: with a 50 ms gap every flow keeps one hashed path, an imbalance of "
           "1.3 or more as ECMP's; a 0.5 ms gap moves flowlets and brings it below; per-packet "
           "dlb is under 1.1",
           flowlet_gap_decides),
    Figure("lb-completion", "lb-compare", "completion_cdf.png",
           ("docs/mechanisms/dlb.md", "labs/03-dlb/README.md"),
           "ECMP's slowest collective step (a collision) is slower than tagged dlb's slowest; "
           "untagged dlb's median slowdown is more than 5 times tagged dlb's",
           spraying_has_no_collision_tail),
    Figure("incast-queues", "incast", "queues.png",
           ("docs/mechanisms/ecn.md", "labs/04-ecn/README.md"),
           "with ECN the switch marks, the receivers send CNPs, the senders cut their rates and "
           "the congested port drops fewer packets than without",
           ecn_slows_the_senders),
    Figure("incast-summary", "incast", "summary.png",
           ("docs/mechanisms/pfc.md", "labs/05-pfc/README.md"),
           "with PFC (pfc, ecn+pfc) the congested port drops nothing (the hosts are paused) "
           "and under pfc the victim flow gets less than half its rate during the incast",
           pfc_lossless_and_blocks_the_victim),
    Figure("failover-timeline", "failover", "timeline.png",
           ("docs/mechanisms/failover.md", "labs/06-failover/README.md"),
           "an uplink failure costs the crossing flows under 50 ms (data plane), less than a "
           "downlink's (controller), which costs less than a silent drop's (probes); every flow "
           "recovers",
           data_plane_failover_is_fast),
    Figure("topology-aware", "topology-aware", "aipod_ring.png",
           ("labs/07-fabrics/README.md",),
           "the topology-aware ring order sends at most half as many packets through AIPod's "
           "superspine as the naive order",
           placement_keeps_traffic_low),
    Figure("pfc-deadlock-queues", "pfc-deadlock", "queues.png",
           ("docs/mechanisms/pfc-deadlock.md", "labs/08-pfc-deadlock/README.md"),
           "without a watchdog the ring deadlocks and sends nothing after the senders stop; "
           "the drop watchdog detects the stuck queues and the ring ends empty; the prevent "
           "setting's acyclic routes do not deadlock",
           deadlock_forms_and_the_watchdog_breaks_it),
    Figure("rail-busbw", "rail-vs-clos", "busbw.png",
           ("labs/09-collectives/README.md",),
           "on HPN 7.0 the hierarchical allreduce sends at most 3/4 of the bytes into the "
           "aggregation layer that it sends on the Clos",
           rails_keep_the_allreduce_low),
    Figure("cc-compare-queues", "cc-compare", "queues.png",
           ("docs/mechanisms/hpcc.md", "docs/mechanisms/int.md", "labs/10-hpcc/README.md"),
           "in the incast and in the all-to-all, HPCC's bottleneck queue p99 is below DCQCN's "
           "and below that of no congestion control",
           hpcc_keeps_the_queue_short),
)


_CHAIN = ("bench/chain_hops.py", "--pipeline", "c", "--rates", "8000")
_CHAIN_RATES = ("bench/chain_hops.py", "--switches", "4", "--rates", "1000,2000,4000,8000",
                "--pipeline")
TABLES: tuple[Table, ...] = (
    Table("switch-flood", "docs/packet-hop.md",
          (("bench/switch_pps.py", "--programs", "ecmp,dlb", "--pipelines", "native,c",
            "--no-kernel"),)),
    Table("chain-hop-size", "docs/packet-hop.md",
          (_CHAIN, (*_CHAIN, "--htb", "1000"),
           (*_CHAIN, "--size", "4138", "--mtu", "4200"),
           (*_CHAIN, "--size", "4138", "--mtu", "4200", "--htb", "1000")) * 2),
    Table("chain-hop-rates", "docs/packet-hop.md",
          ((*_CHAIN_RATES, "c"), (*_CHAIN_RATES, "native")) * 2),
    Table("fabric-capacity", "docs/rates.md",
          (("bench/fabric_capacity.py", "--quick", "--target", "p4switch", "--pipelines",
            "native,c"),
           ("bench/fabric_capacity.py", "--quick", "--target", "p4switch", "--pipelines", "c",
            "--size", "4096", "--mtu", "4200", "--link-mbps", "0"))),
    Table("demo-contrast", "docs/demo.md", (("-m", "fabric_lab.cli", "demo", "--contrast"),),
          measures=("fabric_lab.commands.demo",)),
    Table("fabric-bringup", "docs/bringup.md",
          (("bench/fabric_bringup.py", "--idle", "1", "hpn7", "aipod", "bigraph",
            "leafspine"),) * 2),
    Table("incast-trimming", "docs/mechanisms/trimming.md",
          (("-m", "fabric_lab.cli", "run", "incast", "--quick", "-p",
            "settings=none,trim,trim+sr,sr"),) * 5,
          measures=("experiments.incast.experiment", "fabric_lab.commands.run")),
    Table("loss-recovery", "docs/mechanisms/trimming.md",
          (("-m", "fabric_lab.cli", "run", "loss-recovery"),),
          measures=("experiments.loss_recovery.experiment", "fabric_lab.commands.run")),
)


def example_record(experiment: str, root: Path = EXAMPLES) -> Path:
    """Where the shipped run of `experiment` keeps what it measured (fabric_lab/measured.py)."""
    return root / experiment / EXAMPLE_RUN / "sources.json"


def example_run(experiment: str, root: Path = EXAMPLES) -> ResultDir:
    """The shipped run of `experiment`."""
    return ResultDir(root / experiment / EXAMPLE_RUN)


def verify(figure: Figure, run: ResultDir) -> tuple[bool, str]:
    """(holds, what was measured) of `figure`'s claim on `run`; a CSV file or column the claim
    needs that is missing fails it too."""
    try:
        return True, figure.check(run)
    except ClaimFailed as failed:
        return False, str(failed)
    except (OSError, KeyError, ValueError, statistics.StatisticsError) as error:
        return False, f"cannot compute it: {type(error).__name__}: {error}"
