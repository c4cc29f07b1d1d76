"""Experiment `cc-compare`: no congestion control, DCQCN and HPCC on an incast and an
all-to-all, on the same switches.

    fabric-lab run cc-compare --quick     # about 25 s: 3:1 incast and 4-host all-to-all
    fabric-lab run cc-compare -p ccs=dcqcn,hpcc -p patterns=incast -p message_kb=2000

The fabric (`trial.cc_fabric`): two leaves of `senders` hosts each and one spine on the
framework's `CongestionLab` (Mininet + p4switch or BMv2, switch queues shaped in packets/s: host
ports `host_pps`, switch-to-switch ports `fabric_pps`), as the incast experiment's. ECN
marking (kmin/kmax/pmax, for DCQCN's CNPs) and, with `pfc`, PFC are configured once for all
three; each INT link rate is set to what the port's queue drains
(`trial.set_int_rates`), so HPCC's B is the real bottleneck rate. Senders start at the host
rate, as the paper's do. HPCC (`traffic.hpcc`): eta 0.95, maxStage 5, W_AI = W_init (1 - eta)/16,
T = `hpcc_rtt_ms`, an ACK per packet echoing the data packet's INT records (`traffic.echo`).

Measured per (pattern, cc), written to
- `summary.csv`: goodput and its share of the bottleneck ports' capacity, FCT slowdown p50/p99
  (FCT / the message's time alone at the host rate), queue depth p50/p99/max at the bottleneck
  ports (the receivers' host ports) from every packet's INT record, pause frames and paused
  time (hosts and switches), drops, retransmissions, CNPs and rate cuts;
- `queues.csv`: queue depth p50/p99/max/mean per switch port the flows crossed (INT);
- `queue_hist.csv`: the depth histograms behind them; `fct.csv`: every flow's FCT;
- `queues.png` (bottleneck depth CDFs), `summary.png` (queues, slowdown, goodput).
docs/mechanisms/hpcc.md puts the figures beside the paper's.
"""

from __future__ import annotations

from experiments.cc_compare.plots import plot
from experiments.cc_compare.trial import (
    CCS,
    FCT_FIELDS,
    HIST_FIELDS,
    PATTERNS,
    QUEUE_FIELDS,
    SUMMARY_FIELDS,
    cc_fabric,
    congestion_config,
    run_trial,
    set_int_rates,
)
from experiments.framework import Experiment, ExperimentError, RunContext
from experiments.framework.congestion_lab import CongestionLab


def check(params: dict) -> list[str]:
    problems = [f"unknown pattern {p!r}; choose from {', '.join(PATTERNS)}"
                for p in params["patterns"] if p not in PATTERNS]
    problems += [f"unknown congestion control {c!r}; choose from {', '.join(CCS)}"
                 for c in params["ccs"] if c not in CCS]
    if params["senders"] < 2:
        problems.append(f"senders must be >= 2 (hosts per leaf; the all-to-all uses two), got "
                        f"{params['senders']}")
    for key in ("message_kb", "host_pps", "fabric_pps", "hpcc_rtt_ms", "idle_s"):
        if params[key] <= 0:
            problems.append(f"{key} must be > 0, got {params[key]}")
    return problems


def run(ctx: RunContext) -> None:
    params = ctx.params
    problems = check(params)
    if problems:
        raise ExperimentError("; ".join(problems))
    spec, roles = cc_fabric(params["senders"], prefix=params["name_prefix"],
                            grpc_base=params["port_base"] + 559,
                            thrift_base=params["port_base"] + 90)
    summaries, queues, hist, fcts = [], [], [], []
    with CongestionLab(spec, host_pps=params["host_pps"], fabric_pps=params["fabric_pps"],
                       depth=params["depth"], fabric_depth=params["fabric_depth"],
                       link_mbps=params["link_mbps"], log_dir=ctx.out.path / "logs",
                       target=ctx.target, cluster=ctx.cluster) as lab:
        lab.configure(congestion_config(params))
        set_int_rates(lab)
        senders = {nic: lab.agent(nic) for nic in sorted({*roles.senders, *roles.alltoall})}
        receivers = {nic: lab.agent(nic) for nic in sorted({roles.receiver, *roles.alltoall})}
        ctx.progress(f"cc-compare: fabric up ({len(spec.switches)} switches, {ctx.target})")
        for pattern in params["patterns"]:
            for cc in params["ccs"]:
                result = run_trial(lab, roles, pattern, cc, params, senders, receivers)
                s = result.summary
                summaries.append(s)
                queues += result.queues
                hist += result.hist
                fcts += result.fcts
                ctx.progress(f"cc-compare: {pattern} {cc}: bottleneck queue p50 "
                             f"{s['bottleneck_queue_p50']} p99 {s['bottleneck_queue_p99']} "
                             f"packets, FCT slowdown p50 {s['fct_slowdown_p50']}, goodput "
                             f"{s['goodput_mbps']} Mb/s ({s['utilisation']:.0%}), "
                             f"{s['messages_complete']}/{s['flows']} complete")
                ctx.out.write_csv("summary.csv", summaries, SUMMARY_FIELDS)
                ctx.out.write_csv("queues.csv", queues, QUEUE_FIELDS)
                ctx.out.write_csv("queue_hist.csv", hist, HIST_FIELDS)
                ctx.out.write_csv("fct.csv", fcts, FCT_FIELDS)


EXPERIMENT = Experiment(
    name="cc-compare",
    summary="no congestion control, DCQCN and HPCC on an incast and an all-to-all: queue "
            "depth p50/p99 per port (INT), FCT slowdown, pauses, goodput",
    duration="about 25 s with --quick, 1 min in full; Mininet + p4switch or BMv2, root",
    defaults={"patterns": list(PATTERNS), "ccs": list(CCS), "senders": 3, "message_kb": 1000,
              "host_pps": 1200, "fabric_pps": 4800, "depth": 64, "fabric_depth": 128,
              "link_mbps": 10.0, "kmin": 5, "kmax": 20, "pmax": 0.2, "pfc": True,
              "xoff": 10, "xon": 4, "quanta": 1000, "refresh_us": 20_000, "hpcc_rtt_ms": 5.0,
              "idle_s": 4.0, "sample_ms": 100, "name_prefix": "cc", "port_base": 30000},
    quick={"message_kb": 200},
    run=run,
    plot=plot,
    fabrics=("leafspine",),
    scalable=False,  # the fabric is built around the patterns' roles
    needs_root=True,
    tags=("congestion", "hpcc", "dcqcn", "int", "mininet"),
)
