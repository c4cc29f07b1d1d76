"""Experiment `segment`: what the HPN 7.0 design argues, measured on the scaled-down fabric.

Three parts, each written to its own CSV:
- paths (Mininet, dual-ToR hpn7): flows of three classes are traced hop by hop from the
  switches' port counters (each flow alone, same 5-tuple as when it runs): `same-rail` (NIC r to
  NIC r of another server of the segment), `cross-rail` (NIC 0 to NIC 1 of another server of the
  segment) and `cross-segment` (NIC r to NIC r of a server in the other segment). Expected:
  same-rail crosses one switch (its rail ToR, no hashing at all); the others cross ToR, an
  aggregation switch and a ToR, spread over both planes (the NIC's two ports) and over the
  plane's aggregation switches (the ToR's single ECMP decision).
- polarisation (the P4 engine, no network): flows from one ToR spread over k uplinks by
  `ecmp.p4`; HPN's dual-plane pod has one hash stage (an aggregation switch has exactly one
  path down), a 3-tier design (DCN+) has two. End-to-end paths used out of those available:
  HPN uses all k; two stages with the same hash seed use k of k^2 (polarised), per-switch seeds
  about all.
- tor-failure (Mininet, dual-ToR hpn7 and `dual_tor=False`): flows from the first server's NICs
  to the last server's; the ToR the first flow leaves through is switched off for `fail_s`.
  Dual-homed NICs move to the other plane (the host's multipath route) and keep sending;
  single-homed NICs on that ToR stall until it returns.

Parameters `name_prefix` / `port_base` isolate the fabrics' names and ports as in lb-compare.
Files: paths.csv, polarisation.csv, tor_failure.csv (per flow: goodput before, during, after),
tor_timeline.csv (100 ms bins); plots paths.png, polarisation.png, tor_failure.png.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Iterator

from experiments.framework import Experiment, ExperimentError, RunContext, scaled_fabric
from experiments.framework.engine_switch import LbSwitch, roce_frame
from experiments.framework.failover_lab import FailoverLab, Failure, Flow
from experiments.framework.results import CsvAppender
from experiments.hpn_segment.plots import plot
from topos import FabricSpec
from topos.relocate import prefixed

PATH_FIELDS = ["class", "flow", "src", "dst", "switch_hops", "switches", "aggs", "plane",
               "model_paths"]
POLAR_FIELDS = ["design", "trial", "flows", "stages", "paths_available", "paths_used"]
TOR_FIELDS = ["fabric", "flow", "src", "crossed", "before_bps", "during_bps", "after_bps",
              "during_share"]
TIMELINE_FIELDS = ["fabric", "flow", "t_s", "goodput_bps"]
PARTS = ("paths", "polarisation", "tor-failure")
BIN_S = 0.1


def hpn(params: dict, dual_tor: bool) -> FabricSpec:
    spec = scaled_fabric("hpn7", params, dual_tor=dual_tor, rate_mbps=params["link_mbps"])
    if not params["name_prefix"]:
        return spec
    base = params["port_base"] + (0 if dual_tor else 100)
    return prefixed(spec, params["name_prefix"], base, base + 500)


def servers(spec: FabricSpec) -> list[list[str]]:
    """NIC names per server, in fabric order (NIC r on rail r)."""
    return [[nic.name for nic in host.nics] for host in spec.hosts]


def segment_of(spec: FabricSpec, nic: str) -> int:
    segment = spec.switch(spec.attachments(nic)[0][0]).group
    assert segment is not None, f"{nic}: its ToR has no segment"  # hpn7 gives every ToR one
    return segment


def class_pairs(spec: FabricSpec) -> dict[str, list[tuple[str, str]]]:
    hosts = servers(spec)
    first = hosts[0]
    same_seg = [h for h in hosts[1:] if segment_of(spec, h[0]) == segment_of(spec, first[0])]
    other_seg = [h for h in hosts if segment_of(spec, h[0]) != segment_of(spec, first[0])]
    if not same_seg or not other_seg or len(first) < 2:
        raise ExperimentError("segment: needs 2+ servers per segment, 2+ segments, 2+ rails")
    return {"same-rail": [(first[r], same_seg[0][r]) for r in range(len(first))],
            "cross-rail": [(first[0], same_seg[0][1]), (first[1], same_seg[0][0])],
            "cross-segment": [(first[r], other_seg[-1][r]) for r in range(len(first))]}


def run_paths(ctx: RunContext, params: dict, target: str, out: CsvAppender) -> None:
    """Each class's traced flows, appended to `out` as the class is traced."""
    from topos.analysis import shortest_paths

    spec = hpn(params, True)
    with FailoverLab(spec, target=target, log_dir=ctx.out.path / "logs" / "paths",
                     reconverge=False, probes=False, cluster=ctx.cluster) as lab:
        for cls, pairs in class_pairs(spec).items():
            flows = lab.plan_flows(pairs, params["flows_per_pair"])
            traced = lab.trace_paths(flows)
            rows: list[dict] = []
            for f in flows:
                switches = sorted({sw for sw, _ in traced[f.name]})
                aggs = [sw for sw in switches if spec.switch(sw).tier == 2]
                planes = sorted({spec.switch(sw).plane or "" for sw in switches})
                rows.append({"class": cls, "flow": f.name, "src": f.src, "dst": f.dst,
                             "switch_hops": len(switches), "switches": " ".join(switches),
                             "aggs": " ".join(aggs), "plane": "/".join(planes),
                             "model_paths": len(shortest_paths(spec, f.src, f.dst))})
            out.extend(rows)
            ctx.progress(f"segment: {cls}: {len(flows)} flows, switch hops "
                         f"{sorted({r['switch_hops'] for r in rows})}")


def run_polarisation(params: dict) -> Iterator[dict]:
    """End-to-end paths used by `polar_flows` flows over k x k (two stages) or k (one)."""
    k = params["polar_links"]
    ports = list(range(1, k + 1))
    for trial in range(params["polar_trials"]):
        rng = random.Random(f"segment-polar-{trial}")
        sports = rng.sample(range(49152, 65536), params["polar_flows"])
        frames = [roce_frame(s, src_ip=f"10.0.{rng.randrange(256)}.1",
                             dst_ip=f"10.1.{rng.randrange(256)}.1") for s in sports]
        seed1, seed2 = rng.randrange(1 << 16), rng.randrange(1 << 16)
        tor = LbSwitch("ecmp", ports, seed=seed1)
        first = [tor.egress_port(f) for f in frames]
        yield {"design": "HPN dual-plane (1 hash stage)", "trial": trial,
               "flows": len(frames), "stages": 1, "paths_available": k,
               "paths_used": len(set(first))}
        for label, seed in (("3-tier, same seed", seed1), ("3-tier, per-switch seeds", seed2)):
            agg = LbSwitch("ecmp", ports, seed=seed)
            used = {(p, agg.egress_port(f)) for p, f in zip(first, frames, strict=True)}
            yield {"design": label, "trial": trial, "flows": len(frames), "stages": 2,
                   "paths_available": k * k, "paths_used": len(used)}


def run_tor_failure(ctx: RunContext, params: dict, target: str, out: CsvAppender,
                    timeline: CsvAppender) -> None:
    """Per fabric (dual-ToR, then single-ToR): its flows' rows appended to `out`, their
    goodput bins to `timeline`."""
    for dual in (True, False):
        spec = hpn(params, dual)
        name = "dual-ToR" if dual else "single-ToR"
        with FailoverLab(spec, target=target, log_dir=ctx.out.path / "logs" / name,
                         probes=False, cluster=ctx.cluster) as lab:
            flows = lab.plan_flows(lab.default_pairs(), params["flows_per_pair"])
            paths = lab.trace_paths(flows)  # which ToR (plane) each flow really leaves by
            tor = next(sw for sw, _ in sorted(paths[flows[0].name])
                       if spec.switch(sw).tier == 1 and sw in
                       {s for s, _ in spec.attachments(flows[0].src)})
            failure = Failure("tor", tor)
            with lab.start_flows(flows, pps=params["pps"], size=params["size"]) as run:
                _sleep(params["before_s"])
                lab.fail(failure)
                _sleep(params["fail_s"])
                lab.restore(failure)
                _sleep(params["after_s"])
            bins = run.snapshot()
            rows = tor_rows(name, flows, paths, tor, bins, run, failure, params)
            out.extend(rows)
            timeline.extend({"fabric": name, "flow": f.name, "t_s": t, "goodput_bps": v}
                            for f in flows for t, v in coarse(bins.get(f.name, {}), run, failure))
            lost = [r for r in rows if r["crossed"]]
            ctx.progress(f"segment: {name}: ToR {tor} off for {params['fail_s']} s; flows "
                         f"through it kept {statistics.mean(r['during_share'] for r in lost):.0%}"
                         f" of their goodput")


def _sleep(seconds: float) -> None:
    import time

    time.sleep(seconds)  # the phases of the trial are timed, not waited for


def coarse(bins: dict[int, int], run, failure: Failure) -> list[tuple[float, float]]:
    """(s relative to the failure, b/s) per 100 ms from the flow's 10 ms byte bins."""
    step = max(1, round(BIN_S / run.bin_s))
    out: dict[int, int] = {}
    for i, n in bins.items():
        out[i // step] = out.get(i // step, 0) + n
    offset = failure.t_fail - run.t0
    return [(round(j * BIN_S - offset, 3), n * 8 / BIN_S) for j, n in sorted(out.items())]


def tor_rows(name: str, flows: list[Flow], paths: dict, tor: str, bins: dict, run,
             failure: Failure, params: dict) -> list[dict]:
    """Goodput per flow before, during and after the failure; `crossed`: its traced path
    went through the failed ToR."""
    out = []
    t_fail, t_restore = failure.t_fail - run.t0, failure.t_restore - run.t0
    for f in flows:
        series = bins.get(f.name, {})

        def rate(lo: float, hi: float, series: dict = series) -> float:
            n = sum(v for i, v in series.items() if lo <= i * run.bin_s < hi)
            return n * 8 / (hi - lo) if hi > lo else 0.0
        settle = params["settle_s"]
        before = rate(max(0.0, t_fail - params["before_s"] + settle), t_fail)
        during = rate(t_fail + settle, t_restore)
        after = rate(t_restore + settle, t_restore + params["after_s"] - 0.2)
        crossed = any(sw == tor for sw, _ in paths[f.name])
        out.append({"fabric": name, "flow": f.name, "src": f.src, "crossed": int(crossed),
                    "before_bps": round(before), "during_bps": round(during),
                    "after_bps": round(after),
                    "during_share": round(during / before, 3) if before else 0.0})
    return out


def run(ctx: RunContext) -> None:
    params = ctx.params
    parts = list(params["parts"])
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        raise ExperimentError(f"segment: unknown part(s) {', '.join(unknown)}; choose from "
                              f"{', '.join(PARTS)}")
    target = ctx.target  # resolved by the framework: p4switch or bmv2
    if "paths" in parts:
        with ctx.out.append_csv("paths.csv", PATH_FIELDS) as paths:
            run_paths(ctx, params, target, paths)
    if "polarisation" in parts:
        rows = []
        with ctx.out.append_csv("polarisation.csv", POLAR_FIELDS) as polarisation:
            for row in run_polarisation(params):
                polarisation.append(row)
                rows.append(row)
        for design in dict.fromkeys(r["design"] for r in rows):
            mine = [r for r in rows if r["design"] == design]
            ctx.progress(f"segment: {design}: {statistics.mean(r['paths_used'] for r in mine):.1f}"
                         f" of {mine[0]['paths_available']} paths used")
    if "tor-failure" in parts:
        with ctx.out.append_csv("tor_failure.csv", TOR_FIELDS) as tor, \
                ctx.out.append_csv("tor_timeline.csv", TIMELINE_FIELDS) as timeline:
            run_tor_failure(ctx, params, target, tor, timeline)


EXPERIMENT = Experiment(
    name="segment",
    summary="HPN 7.0's segment: same-rail traffic one ToR hop, cross-segment hashed once over "
            "planes and aggregation switches, no hash polarisation, dual-ToR surviving a ToR "
            "failure that stalls single-homed NICs",
    duration="about 2.5 min with --quick, 4 min in full; Mininet, root",
    defaults={"parts": list(PARTS), "flows_per_pair": 4, "link_mbps": 10.0, "pps": 200.0,
              "size": 256, "before_s": 2.0, "fail_s": 3.0, "after_s": 3.0, "settle_s": 0.5,
              "polar_links": 4, "polar_flows": 64, "polar_trials": 20,
              "name_prefix": "", "port_base": 24000},
    quick={"flows_per_pair": 3, "before_s": 1.5, "fail_s": 2.0, "after_s": 2.0,
           "polar_trials": 8},
    run=run,
    plot=plot,
    fabrics=("hpn7",),
    needs_root=True,
    tags=("mininet",),
)
