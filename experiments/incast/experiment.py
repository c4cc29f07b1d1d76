"""Experiment `incast`: N-to-1 RoCEv2 incast under {no ECN/no PFC, ECN only, PFC only, ECN+PFC},
and on request with packet trimming and selective retransmission (`trim`, `trim+sr`, `sr`).

    fabric-lab run incast --quick          # about 30 s: 3 senders, 600 KB each
    fabric-lab run incast -p settings=pfc,ecn+pfc -p xoff=49
    fabric-lab run incast -p settings=none,trim,trim+sr,sr

A two-leaf, one-spine fabric on Mininet + p4switch (`incast_lab`): the senders share the first
leaf, the receiver sits on the second, and the switch queue towards the receiver (host_pps) is
the bottleneck; the fabric links are faster (fabric_pps). p4switch by default (`auto`): its
traffic manager pauses queues and counts tail drops. `--target bmv2`: BMv2 can neither pause a
queue nor count its drops, so the pause agents (controller/pfc_agent.py) slow a paused queue to
`bmv2_paused_share` of its rate, and drops come from the P4 counters' balance
(`incast_drops`); `drops_counted_by` names the source. docs/mechanisms/pfc.md compares both.
A victim flow shares the leaf uplink and the spine downlink with the incast but not the
congested port, so PFC's head-of-line blocking shows as its slowdown. Output:
- `summary.csv`: per setting drops (congested port, rest of the fabric) and how they were counted,
  the counter balances, packets the senders resent, receiver losses, complete
  messages, completion time, goodput, peak queues, ECN marks, CNPs, host pause frames and paused
  time, spine paused time, victim throughput before/during the incast;
- `timeseries.csv`: the telemetry samples (t from the incast start);
- `queues.png`, `throughput.png`, `summary.png`.

The receiver stops when every message is complete, or after `idle_s` without data: long enough
for the senders' go-back-N to resend a lost tail after a few doubled timeouts (0.5 + 1 + 2 + 4 s).

Rates (docs/rates.md): the congested port drains `host_pps` = 4800 packets/s (41.6 Mb/s of
1082-byte frames), the switch-to-switch queues `fabric_pps` = 4 x that; each sender offers the
host rate (three senders: a 3:1 incast), the victim `victim_pps` = 2400 (20.8 Mb/s, half its
port). PFC quanta count 512 bit times at `link_mbps` = 40: quanta 4000 pause for 51 ms. Queues
towards hosts hold `depth` = 256 packets (53 ms at the host rate), switch-to-switch queues
`fabric_depth` = 512: above XOFF, a paused uplink must absorb what four hosts send until their
pause takes effect, 472 packets = 25 ms at the fabric rate. `--target bmv2` runs the former
rates and queues (`per_target`): BMv2 carries a fraction of these rates.

Thresholds in packets: ECN kmin 20 / kmax 80 / pmax 0.2 (4 and 17 ms of the congested port's
queue); PFC XOFF 40, XON 16; trimming from `trim_depth` = 64 (p4src/include/trimming.p4: a data
packet headed for a deeper queue leaves as its headers at priority 7, and the receiver NAKs it
at once, so go-back-N resends within a round trip instead of after a timeout; `trimmed` counts
them at the receiver). `sr`: the senders resend only what the receiver NAKs, and the receiver
places what arrives after a gap (traffic/selective.py, Ultra Ethernet's and IRN's recovery)
instead of go-back-N. The queues serve packets, not bytes, on both targets: a trimmed header
takes a full packet's turn at the congested port. The dequeue-time XOFF rule (p4src/include/pfc.p4) sees a crossing
one queue residence late, while packets keep coming at up to the fabric rate: XOFF x fabric_pps
/ host_pps must stay within the queue depth, or the congested port drops before its pause takes
effect (exercise: `-p xoff=96 -p xon=40` and watch drops_congested); lab 5 adds the pause's
reaction time and gets XOFF 49.
"""

from __future__ import annotations

from experiments.framework import Experiment, ExperimentError, RunContext
from experiments.framework.telemetry import COLUMNS
from experiments.incast.lab import CongestionLab, incast_fabric
from experiments.incast.plots import plot
from experiments.incast.trial import SETTINGS, SUMMARY_FIELDS, run_trial

SERIES_FIELDS = ["setting", *COLUMNS]


def run(ctx: RunContext) -> None:
    params = ctx.params
    target = ctx.target  # resolved by the framework: p4switch or bmv2
    unknown = [s for s in params["settings"] if s not in SETTINGS]
    if unknown:
        raise ExperimentError(f"unknown setting(s) {', '.join(unknown)}; "
                              f"choose from {', '.join(SETTINGS)}")
    headroom = params["xoff"] * params["fabric_pps"] / params["host_pps"]
    if headroom > params["depth"]:
        ctx.progress(f"incast: warning: XOFF {params['xoff']} x fabric/host rate "
                     f"{params['fabric_pps']}/{params['host_pps']} = {headroom:g} packets "
                     f"exceeds the {params['depth']}-packet queue: PFC may not be lossless")
    spec, roles = incast_fabric(params["senders"], grpc_base=params["port_base"],
                                thrift_base=params["port_base"] + 500)
    summaries, series = [], []
    with CongestionLab(spec, host_pps=params["host_pps"], fabric_pps=params["fabric_pps"],
                       depth=params["depth"], fabric_depth=params["fabric_depth"],
                       link_mbps=params["link_mbps"],
                       log_dir=ctx.out.path / "logs", target=target,
                       paused_share=params["bmv2_paused_share"], cluster=ctx.cluster) as lab:
        ctx.progress(f"incast: fabric up ({len(spec.switches)} switches), "
                     f"{len(roles.senders)} senders -> {roles.receiver}")
        nics = [*roles.senders, roles.receiver, roles.victim_src, roles.victim_dst]
        agents = {nic: lab.agent(nic) for nic in nics}
        for setting in params["settings"]:
            result = run_trial(lab, roles, setting, params, agents)
            summaries.append(result.summary)
            series += result.series
            s = result.summary
            ctx.progress(f"incast: {setting}: {drops_text(s)}, {s['lost']} lost at the "
                         f"receiver, {s['messages_complete']}/{s['senders']} messages complete in "
                         f"{s['completion_s']} s, peak queue {s['peak_queue_congested']}, "
                         f"victim {s['victim_mbps_before']} -> {s['victim_mbps_during']} Mb/s"
                         + (f"; the switches' receive rings dropped {s['ring_drops']} frames"
                            if s["ring_drops"] else ""))
            ctx.out.write_csv("summary.csv", summaries, SUMMARY_FIELDS)
            ctx.out.write_csv("timeseries.csv", series, SERIES_FIELDS)


def drops_text(summary: dict) -> str:
    """The congested port's drops as a phrase, naming how they were counted."""
    if summary["drops_congested"] is None:
        return f"drops at the congested port not reported ({summary['drops_counted_by']})"
    return (f"{summary['drops_congested']} drops at the congested port "
            f"({summary['drops_counted_by']})")


EXPERIMENT = Experiment(
    name="incast",
    summary="N-to-1 RoCEv2 incast with and without ECN/DCQCN and PFC: drops, completion, queues, "
            "pauses and a victim flow's head-of-line blocking",
    duration="about 30 s with --quick, 40 s in full; Mininet + p4switch or BMv2, root",
    defaults={"settings": list(SETTINGS[:4]), "senders": 3, "message_kb": 2000, "host_pps": 4800,
              "fabric_pps": 19200, "depth": 256, "fabric_depth": 512, "link_mbps": 40.0,
              "kmin": 20, "kmax": 80, "pmax": 0.2,
              "xoff": 40, "xon": 16, "quanta": 4000, "refresh_us": 20_000, "trim_depth": 64,
              "victim_pps": 2400, "victim_s": 6.0, "victim_lead_s": 1.0, "idle_s": 8.0,
              "sample_ms": 50, "bmv2_paused_share": 0.1,
              # gRPC from here, runtime CLI from here + 500; above the kernel's ephemeral
              # ports (32768-60999), which an outgoing connection may hold in TIME_WAIT
              "port_base": 61000},
    quick={"message_kb": 600, "victim_s": 3.5},
    # BMv2 carries a fraction of these rates without loss (docs/rates.md, "On BMv2"): the
    # incast's former rates and queues, which docs/mechanisms/pfc.md compares on both targets
    per_target={"bmv2": {"host_pps": 250, "fabric_pps": 1000, "victim_pps": 100, "depth": 64,
                         "fabric_depth": 64, "link_mbps": 10.0, "quanta": 1000, "kmin": 5,
                         "kmax": 20, "xoff": 10, "xon": 4, "trim_depth": 16,
                         "message_kb": 100}},
    run=run,
    plot=plot,
    fabrics=("leafspine",),
    scalable=False,  # its fabric is built around the incast's roles
    needs_root=True,
    tags=("congestion", "ecn", "pfc", "mininet"),
)
