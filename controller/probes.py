"""Link probes: find links that stay up but drop packets, and have them isolated.

Every round (`period`), the prober reads every switch's per-port packet counters (one Read per
switch) and sends `probes` frames by P4Runtime packet-out out of both ends of every
switch-to-switch link (ethertype 0x88B5, dropped by the far switch's pipeline after its ingress
port counter has counted them). For each direction A:p -> B:q, the frames A's egress counted on p
since the previous round, less what the kernel took from A on p in the same time, were lost on
the link. What the kernel took is what the other end of p's veth received
(`/sys/class/net/<peer>/statistics`, where it is in the controller's namespace, as Mininet keeps
switch ports: q itself on a plain veth pair, the patch interface facing p on a patched link,
whence frames go into q's receive path without being counted again), what p's
side dropped (its root qdisc, the link's queue, and the veth's own drops: congestion, not a
fault) and the growth of what that queue holds (frames on their way). Elsewhere (another
server's switch) it is B's ingress counter on q and no queue is known.

A switch's counters are read at a moment the prober does not see: some time between sending the
Read and its answer, which a switch starved of CPU gives a few hundred milliseconds later, after
sending its backlog. So the kernel is read on both sides of the Reads, and a round counts what
the kernel took from the reading before the previous round's Reads to the reading after this
round's: never less than what it took while the switch's counts grew, so a slow answer cannot
look like loss (it once isolated a starved switch's links on a loaded machine). The price is a
margin of what crosses a link while a Read is under way. Judging a whole period at a time keeps
that small against what crossed the link. Probes keep idle links measured; busy links are
measured with their traffic too. This uses only packet-out, counters and the kernel's interface
statistics, so it runs on p4switch and BMv2 alike.

A direction is bad in a round when it lost at least `min_lost` frames in that round and, over
that round and the `bad_rounds - 1` before it together, at least `min_lost` frames and
`threshold` of what was sent (frames that were only late at one reading arrive in the next round
and cancel out); once its link is isolated, when it lost any frame (`direction_bad`). A link
bad for `bad_rounds` rounds in a row is isolated (`on_verdict(link, True)`); one good for
`good_rounds` rounds in a row afterwards is given back.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from controller.fabric import FabricController
from controller.linkwatch import (
    interface_counter,
    interface_rx_packets,
    interface_up,
    root_queues,
    veth_peers,
)
from controller.periodic import Periodic
from controller.schema import encode
from topos.model import Link

log = logging.getLogger(__name__)
PROBE_ETHERTYPE = 0x88B5
Counters = dict[int, int]  # port -> packets
Verdict = Callable[[Link, bool], None]


@dataclass
class KernelView:
    """What the kernel has taken from the switches on the probed links at one moment: frames
    each receiver (the other end of a near interface's veth) received, and per near interface
    (frames dropped so far, frames queued now). Their sum per link only grows."""
    received: dict[str, int]
    sending: dict[str, tuple[int, int]]

    def update(self, other: KernelView) -> None:
        self.received.update(other.received)
        self.sending.update(other.sending)


@dataclass
class Snapshot:
    """One reading of the fabric: every switch's (rx, tx) port counters, and the kernel read
    just before the Reads were sent (`opened`) and as each switch's answer came back
    (`closed`)."""
    counters: dict[str, tuple[Counters, Counters]]
    opened: KernelView
    closed: KernelView


def kernel_view(receivers: list[str], near_intfs: list[str]) -> KernelView:
    """What the kernel has taken on these interfaces now (those in this namespace): frames
    each receiver (the other end of a near interface's veth) received, and what each near
    interface's queue dropped and holds."""
    received = {intf: n for intf in receivers if (n := interface_rx_packets(intf)) is not None}
    queues = root_queues() if received else {}
    sending: dict[str, tuple[int, int]] = {}
    for intf in near_intfs:
        if intf in queues:
            drops, held = queues[intf]
            sending[intf] = (drops + (interface_counter(intf, "tx_dropped") or 0), held)
    return KernelView(received, sending)


@dataclass
class DirectionLoss:
    link: str  # "a~b"
    src: str
    dst: str
    sent: int
    received: int
    queue_drops: int = 0  # of `sent`, dropped on the sender's side by the kernel (congestion)
    queued: int = 0  # of `sent`, still in the sender's link queue (its growth; may be < 0)

    @property
    def carried(self) -> int:
        """What the link itself was given to carry in the round."""
        return self.sent - self.queue_drops - self.queued

    @property
    def lost(self) -> int:
        return max(0, self.carried - self.received)

    @property
    def loss(self) -> float:
        return self.lost / self.sent if self.sent else 0.0


@dataclass
class ProbeRound:
    started: float
    seconds: float
    directions: list[DirectionLoss]
    bad_links: list[str]  # bad in this round
    isolated: list[str]  # isolated after this round


def probe_frame(src_mac: str, dst_mac: str, seq: int) -> bytes:
    mac = bytes.fromhex
    return (mac(dst_mac.replace(":", "")) + mac(src_mac.replace(":", ""))
            + PROBE_ETHERTYPE.to_bytes(2, "big") + b"fabric-lab probe" + seq.to_bytes(4, "big")
            + bytes(26))


class Hysteresis:
    """Turns per-round bad/good marks into isolate/give-back decisions per link."""

    def __init__(self, bad_rounds: int = 2, good_rounds: int = 3):
        if bad_rounds < 1 or good_rounds < 1:
            raise ValueError("bad_rounds and good_rounds must be >= 1")
        self.bad_rounds, self.good_rounds = bad_rounds, good_rounds
        self.streak: dict[str, int] = {}  # + bad rounds in a row, - good rounds in a row
        self.isolated: set[str] = set()

    def judge(self, link: str, bad: bool) -> bool | None:
        """True: isolate `link` now; False: give it back now; None: no change."""
        streak = self.streak.get(link, 0)
        streak = (streak + 1 if streak > 0 else 1) if bad else (streak - 1 if streak < 0 else -1)
        self.streak[link] = streak
        if link not in self.isolated and streak >= self.bad_rounds:
            self.isolated.add(link)
            return True
        if link in self.isolated and -streak >= self.good_rounds:
            self.isolated.discard(link)
            return False
        return None


def direction_bad(lost_now: int, sent: int, lost: int, *, isolated: bool, threshold: float,
                  min_lost: int) -> bool:
    """Whether one direction of a link is bad this round: `lost_now` lost this round, `sent` and
    `lost` over the last rounds together (frames only late at one reading arrive in the next
    round and cancel). A link in use must lose `min_lost` frames and `threshold` of what it was
    sent. An isolated link carries the probes alone, too few to reach `min_lost`: any loss keeps
    it isolated, or a link still dropping would be given back."""
    if isolated:
        return lost_now > 0 and lost > 0
    return lost_now >= min_lost and lost >= min_lost and lost >= threshold * sent


ROUNDS_KEPT = 600  # rounds a prober remembers (10 minutes at 1 s): a long run's memory stays flat


class LinkProber:
    """Periodic loss probes over every switch-to-switch link of a controlled fabric."""

    def __init__(self, ctl: FabricController, *, period: float = 1.0, probes: int = 5,
                 threshold: float = 0.1, min_lost: int = 5,
                 bad_rounds: int = 2, good_rounds: int = 3, on_verdict: Verdict | None = None):
        self.ctl = ctl
        self.spec = ctl.spec
        self.period, self.probes = period, probes
        self.threshold, self.min_lost = threshold, min_lost
        self.on_verdict = on_verdict
        self.links = [ln for ln in self.spec.links
                      if self.spec.is_switch(ln.a.node) and self.spec.is_switch(ln.b.node)]
        self.switches = sorted({ln.a.node for ln in self.links} | {ln.b.node for ln in self.links})
        self._ports = {sw: sorted(ln.end(sw).port for ln in self.links if sw in (ln.a.node, ln.b.node))
                       for sw in self.switches}
        peers = veth_peers()
        self._receiver = {end.intf: peers.get(end.intf, ln.other(end.node).intf)
                          for ln in self.links for end in (ln.a, ln.b)}
        self._receivers = {sw: [self._receiver[ln.end(sw).intf] for ln in self.links
                                if sw in (ln.a.node, ln.b.node)] for sw in self.switches}
        self._near_intfs = {sw: [ln.end(sw).intf for ln in self.links
                                 if sw in (ln.a.node, ln.b.node)] for sw in self.switches}
        self.rounds: deque[ProbeRound] = deque(maxlen=ROUNDS_KEPT)  # the latest, oldest first
        self.verdicts = Hysteresis(bad_rounds, good_rounds)
        self._history: dict[tuple[str, str], deque] = {}  # (link, sender) -> recent rounds
        self._seq = 0
        self._last: tuple[Snapshot, set[str]] | None = None  # previous counters, links up then
        self._loop = Periodic("link-probes", period, self.probe_once, immediate=True,
                              errors=(Exception,),  # a failed round must not end the prober
                              on_error=lambda err: log.warning("probe round failed: %s", err))
        self._port_meta = self._packet_out_port()

    def _packet_out_port(self) -> tuple[int, int]:
        """(metadata id, bit width) of the packet_out header's egress port field."""
        for header in self.ctl.pipeline.p4info.controller_packet_metadata:
            if header.preamble.name == "packet_out":
                for meta in header.metadata:
                    if meta.name == "egress_port":
                        return meta.id, meta.bitwidth
        raise ValueError("the program has no packet_out controller header with an egress_port")

    @property
    def isolated(self) -> set[str]:
        """Links isolated by the probes now."""
        return self.verdicts.isolated

    # ---- one round -----------------------------------------------------------------------
    def _counters(self, switch: str) -> tuple[Counters, Counters, KernelView]:
        """(rx, tx) packets of the switch's probed ports, every cell in one Read; then, at
        once, what the kernel took from the switch on them (a starved one may take a second
        to answer)."""
        rx, tx = self.ctl.port_counters(switch, self._ports[switch])
        return ({port: c[0] for port, c in rx.items()}, {port: c[0] for port, c in tx.items()},
                kernel_view(self._receivers[switch], self._near_intfs[switch]))

    def _snapshot(self, pool: ThreadPoolExecutor) -> Snapshot:
        """Every switch's (rx, tx) port counters, with the kernel read on both sides."""
        opened = kernel_view([i for sw in self.switches for i in self._receivers[sw]],
                             [i for sw in self.switches for i in self._near_intfs[sw]])
        futures = {sw: pool.submit(self._counters, sw) for sw in self.switches}
        snap = Snapshot({}, opened, KernelView({}, {}))
        for sw, future in futures.items():
            rx, tx, closed = future.result()
            snap.counters[sw] = (rx, tx)
            snap.closed.update(closed)
        return snap

    def _send_probes(self, up: set[str]) -> None:
        """This round's probes over the links that are up (`up`: their a-end interfaces).
        None goes out of a port whose link is down: BMv2 stops forwarding for as long as the
        port stays down once a packet-out is queued for it."""
        meta_id, width = self._port_meta
        for _ in range(self.probes):
            self._seq += 1
            for ln in self.links:
                if ln.a.intf not in up:
                    continue
                for near, far in ((ln.a, ln.b), (ln.b, ln.a)):
                    self.ctl.clients[near.node].packet_out(
                        probe_frame(near.mac, far.mac, self._seq),
                        [(meta_id, encode(near.port, width, "port"))])

    def probe_once(self) -> ProbeRound | None:
        """Read the counters, judge the interval since the previous read, send this round's
        probes. The first call only starts the interval (None)."""
        started = time.time()
        up_now = {ln.a.intf for ln in self.links
                  if interface_up(ln.a.intf) and interface_up(ln.b.intf)}
        with ThreadPoolExecutor(max_workers=min(16, len(self.switches) or 1)) as pool:
            now = self._snapshot(pool)
        before, up_before = self._last or (None, set())
        self._last = (now, up_now)
        self._send_probes(up_now)
        if before is None:
            return None
        # from the kernel's reading before the previous Reads to the one after this round's
        counters, counters_before = now.counters, before.counters
        kernel, kernel_before = now.closed, before.opened
        directions = []
        for ln in self.links:
            if ln.a.intf not in up_before or ln.a.intf not in up_now:
                continue  # a link that went down is the port watcher's business, not a drop
            name = f"{ln.a.node}~{ln.b.node}"
            for near, far in ((ln.a, ln.b), (ln.b, ln.a)):
                sent = (counters[near.node][1].get(near.port, 0)
                        - counters_before[near.node][1].get(near.port, 0))
                wire = self._receiver[near.intf]
                if wire in kernel.received and wire in kernel_before.received:
                    received = kernel.received[wire] - kernel_before.received[wire]
                else:
                    received = (counters[far.node][0].get(far.port, 0)
                                - counters_before[far.node][0].get(far.port, 0))
                if (near.intf in kernel.sending) != (near.intf in kernel_before.sending):
                    continue  # tc answered at one reading only: what the queue did is unknown
                (drops, held), (drops_before, held_before) = (
                    view.sending.get(near.intf, (0, 0)) for view in (kernel, kernel_before))
                directions.append(DirectionLoss(name, near.node, far.node, sent, received,
                                                max(0, drops - drops_before), held - held_before))
        bad = sorted({d.link for d in directions if self._bad(d)})
        self._verdicts(bad, {d.link for d in directions})
        result = ProbeRound(started, time.time() - started, directions, bad,
                            sorted(self.isolated))
        self.rounds.append(result)
        return result

    def _bad(self, d: DirectionLoss) -> bool:
        window = self._history.setdefault((d.link, d.src), deque(maxlen=self.verdicts.bad_rounds))
        window.append((d.carried, d.received))
        sent = sum(w[0] for w in window)
        lost = sent - sum(w[1] for w in window)
        return direction_bad(d.lost, sent, lost, isolated=d.link in self.isolated,
                             threshold=self.threshold, min_lost=self.min_lost)

    def _verdicts(self, bad: list[str], measured: set[str]) -> None:
        by_name = {f"{ln.a.node}~{ln.b.node}": ln for ln in self.links}
        for name in sorted(measured):
            change = self.verdicts.judge(name, name in bad)
            if change is None:
                continue
            if change:
                log.warning("probes: %s drops packets: isolating it", name)
            else:
                log.info("probes: %s is clean again: giving it back", name)
            if self.on_verdict:
                self.on_verdict(by_name[name], change)

    # ---- periodic ------------------------------------------------------------------------
    def start(self) -> LinkProber:
        self._loop.start()
        return self

    def stop(self) -> None:
        self._loop.stop(timeout=None)
