"""Experiment `loss-recovery`: one queue pair over a link that loses packets at random, with
RoCE's go-back-N and with selective retransmission (Ultra Ethernet's transport; IRN, SIGCOMM
2018: 6-83% better than RoCE with PFC).

    fabric-lab run loss-recovery --quick        # about a minute: losses 0.1% and 1%, 5 runs each
    fabric-lab run loss-recovery -p losses=0.0001,0.001,0.01,0.02

Two hosts in namespaces, their link through a third where `traffic.impair` drops every data
frame with probability `loss` (retransmissions too, as a lossy link does; seeded per run, and
both transports of a run draw the same sequence) and delays every frame so that the link holds
`bdp_packets` packets in flight (a fast fabric's bandwidth-delay product at the emulated rate:
IRN's 40 Gb/s links carry about 100 packets per round trip). The sender paces one message of
`packets` packets at `rate_mbps`; the bound is the completion no transport can beat: every
packet sent once more for each time the link lost it, 1 / (1 - loss) of the message at the
rate, plus the last packet's one-way trip; `of_bound` is that time over the measured one.
Each transport resends what its receiver asks for: go-back-N everything after a hole,
selective retransmission the lost PSNs (`traffic/gbn.py`, `traffic/selective.py`); both with
the retransmission timer at `rto_rtts` round trips and an ACK every 16 packets.

Files: `trials.csv` (one row per loss, run and transport, written as measured: goodput, its
share of the bound, completion, packets resent, timeouts, NAKs, frames the link lost),
`summary.csv` (per loss and transport: medians), `goodput.png`.
"""

from __future__ import annotations

import secrets
import statistics
from typing import Any

from experiments.framework import Experiment, ExperimentError, RunContext
from experiments.loss_recovery.plots import plot
from traffic import netns
from traffic.agent import Agent
from traffic.impair import relay_in

TRANSPORTS = ("go-back-n", "selective")
TRIAL_FIELDS = ["loss", "run", "transport", "goodput_mbps", "of_bound", "completion_s",
                "bound_s",
                "retransmitted", "timeouts", "naks", "link_lost", "complete"]
SUMMARY_FIELDS = ["loss", "transport", "runs", "goodput_mbps", "of_bound", "completion_s",
                  "retransmitted", "timeouts", "link_lost"]
PAYLOAD = 1024


def check(params: dict[str, Any]) -> None:
    problems = [f"loss {x} is not within [0, 0.5)" for x in params["losses"]
                if not 0 <= x < 0.5]
    problems += [f"{name} must be > 0, got {params[name]}"
                 for name in ("packets", "rate_mbps", "rto_rtts", "runs") if params[name] <= 0]
    if params["bdp_packets"] < 0:
        problems.append(f"bdp_packets must be >= 0, got {params['bdp_packets']}")
    if problems:
        raise ExperimentError("loss-recovery: " + "; ".join(problems))


def trial(a: Any, b: Any, tx: Agent, rx: Agent, tb: netns.Testbed, transport: str,
          loss: float, seed: int, params: dict[str, Any]) -> dict[str, Any]:
    """One message through the lossy relay; its row of trials.csv."""
    selective = transport == "selective"
    size = params["packets"] * PAYLOAD
    qpn = 0x300 + seed % 0x1000
    rtt_s = round_trip_s(params)
    args = [f"--loss={loss}", f"--seed={seed}", f"--delay-ms={rtt_s / 2 * 1000}"]
    with relay_in(f"{tb.prefix}m", f"{tb.prefix}m0", f"{tb.prefix}m1", args) as counts:
        rx.start_recv({"iface": b.iface, "idle_timeout_s": 2.0, "duration_s": 120,
                       "selective": selective,
                       "expect": [{"src_ip": a.ip, "qpn": qpn, "bytes": size}]})
        tx.start_send({"iface": a.iface, "selective": selective, "dcqcn": False,
                       "rto_s": max(params["rto_rtts"] * rtt_s, 0.005), "max_retries": 12,
                       "qps": [{"dst_ip": b.ip, "qpn": qpn, "message_bytes": size,
                                "rate_bps": params["rate_mbps"] * 1e6}]})
        sent, got = tx.result(180), rx.result(180)
    q, r = sent["qps"][0], got["qps"][0] if got["qps"] else {"bytes": 0, "first_t": 0.0,
                                                             "last_t": 0.0}
    span = max(r["last_t"] - q["start"], 1e-9)
    goodput = r["bytes"] * 8 / span / 1e6 if r["bytes"] else 0.0
    bound = (params["packets"] * (PAYLOAD + _OVERHEAD) * 8 / (params["rate_mbps"] * 1e6)
             / (1 - loss) + rtt_s / 2)
    return {"loss": loss, "run": seed, "transport": transport,
            "goodput_mbps": round(goodput, 3), "of_bound": round(bound / span, 3),
            "completion_s": round(span, 4), "bound_s": round(bound, 4),
            "retransmitted": q["retransmitted_packets"],
            "timeouts": q["timeouts"], "naks": q["naks"], "link_lost": counts.get("lost", 0),
            "complete": int(r["bytes"] == size and q["acked_packets"] == params["packets"])}


_OVERHEAD = 58  # a WRITE frame's headers and ICRC beyond its payload: the rate counts them


def round_trip_s(params: dict[str, Any]) -> float:
    """The round trip that keeps `bdp_packets` frames in flight at `rate_mbps`."""
    return params["bdp_packets"] * (PAYLOAD + _OVERHEAD) * 8 / (params["rate_mbps"] * 1e6)


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for loss in dict.fromkeys(r["loss"] for r in rows):
        for transport in TRANSPORTS:
            mine = [r for r in rows if r["loss"] == loss and r["transport"] == transport]
            if not mine:
                continue
            out.append({"loss": loss, "transport": transport, "runs": len(mine),
                        **{k: statistics.median(r[k] for r in mine) for k in
                           ("goodput_mbps", "of_bound", "completion_s", "retransmitted",
                            "timeouts", "link_lost")}})
    return out


def run(ctx: RunContext) -> None:
    params = ctx.params
    check(params)
    rows: list[dict[str, Any]] = []
    with netns.relayed_pair("lr" + secrets.token_hex(2)) as tb, \
            ctx.out.append_csv("trials.csv", TRIAL_FIELDS) as trials:
        a, b = tb.hosts["a"], tb.hosts["b"]
        with Agent(b) as rx, Agent(a) as tx:
            for loss in params["losses"]:
                for k in range(params["runs"]):
                    for transport in TRANSPORTS:  # the same seed: the same draws for both
                        row = trial(a, b, tx, rx, tb, transport, loss, k + 1, params)
                        rows.append(row)
                        trials.append(row)
                        ctx.progress(f"loss-recovery: loss {loss:g} run {k + 1} {transport}: "
                                     f"{row['goodput_mbps']} Mb/s ({row['of_bound']:.0%} of "
                                     f"the bound), {row['retransmitted']} resent, "
                                     f"{row['timeouts']} timeouts")
                ctx.out.write_csv("summary.csv", summarise(rows), SUMMARY_FIELDS)


EXPERIMENT = Experiment(
    name="loss-recovery",
    summary="one queue pair over a link with random loss: go-back-N against selective "
            "retransmission, goodput against the bound and what each resends",
    duration="about 1 min with --quick, 5 min in full; network namespaces, root",
    defaults={"losses": [0.0001, 0.001, 0.01, 0.02], "runs": 5, "packets": 3000,
              "rate_mbps": 20.0, "bdp_packets": 100, "rto_rtts": 4.0},
    quick={"losses": [0.001, 0.01], "packets": 1000},
    run=run,
    plot=plot,
    needs_root=True,
    targets=("p4switch",),  # no switch: hosts and a relay
    tags=("transport", "uet"),
)
