"""Loss windows per failure kind on HPN 7.0 (p4switch): the failover targets, measured.

Prints, per kind, over the flows whose traced path crossed each failure: median and worst loss
window and packets lost while failed; packets lost in all when the link came back; and the
controller's detection and reroute times; then the cost of one probe round. Targets:
local (data-plane) failover under 50 ms, controller reconvergence under 1 s.
Needs root. usage: bench/failover_loss_window.py [--trials N] [--kinds uplink,downlink,...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from experiments.failover.experiment import EXPERIMENT
from experiments.failover.trial import run_trial
from experiments.framework.failover_lab import KINDS, FailoverLab, settle
from topos import build_fabric


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--fabric", default="hpn7")
    args = parser.parse_args()
    params = dict(EXPERIMENT.defaults)
    print(f"{'kind':<10}{'crossed':>10}{'window median':>15}{'worst':>9}{'lost median':>13}"
          f"{'at restore':>12}{'detect':>9}{'reroute':>9}")
    with FailoverLab(build_fabric(args.fabric)) as lab:
        for kind in args.kinds.split(","):
            windows, lost, restore_lost, detect, reroute = [], [], [], [], []
            for trial in range(args.trials):
                result = run_trial(lab, kind, trial, params)
                settle(lab)
                hit = [o for o in result.outcomes if o.crossed]
                windows += [o.loss_window_s * 1000 for o in hit]
                lost += [o.lost - o.lost_at_restore for o in hit]
                restore_lost += [o.lost_at_restore for o in result.outcomes]
                downs = [e for e in result.events if e.rerouted and not e.up]
                if downs:
                    first = min(downs, key=lambda e: e.seen)
                    detect.append((first.seen - result.failure.t_fail) * 1000)
                    reroute.append(first.reroute_s * 1000)
            med = statistics.median

            def ms(values: list[float], pick=med) -> str:
                return f"{pick(values):.0f} ms" if values else "-"

            print(f"{kind:<10}{len(windows):>10}{ms(windows):>15}{ms(windows, max):>9}"
                  f"{(med(lost) if lost else 0):>13.0f}{sum(restore_lost):>12}"
                  f"{ms(detect):>9}{ms(reroute):>9}",
                  flush=True)
        rounds = [r.seconds for r in lab.prober.rounds] if lab.prober else []
        if rounds:
            print(f"probe round: {med(rounds) * 1000:.0f} ms median over {len(rounds)} rounds "
                  f"({len(lab.prober.links)} links, {lab.prober.probes} probes per direction)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
