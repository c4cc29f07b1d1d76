"""Go-back-N reliability as RoCEv2 RC NICs do it: the two ends' state machines, no sockets.

Responder (receiver side, one per QP), with its expected PSN `epsn`:
- the expected PSN is accepted and epsn advances; the packet is delivered;
- a PSN below epsn is a duplicate: dropped, answered with an ACK of epsn - 1 so a sender that
  went back too far skips ahead;
- a PSN above epsn in an untagged packet is a sequence error: dropped and answered with one NAK
  (PSN sequence error, carrying epsn) per epsn, as a NIC sends one NAK until the expected PSN
  arrives; that is what makes reordering expensive without reorder tags;
- a PSN above epsn in a tagged (reorderable) packet is held for reordering; only a hole that
  stays open longer than `nak_after_s` is taken for a loss and NAKed (again every `nak_after_s`);
- a trimmed packet (a switch cut it to its headers instead of dropping it, `trimming.p4`) is a
  loss known at once: at or past epsn it is NAKed with epsn right away, a trim of epsn itself
  even when epsn was NAKed before (the resend was lost too), so the sender goes back within a
  round trip instead of a timeout.
ACKs are coalesced: one cumulative ACK (PSN epsn - 1) once epsn passes a packet that asked for
one (the sender asks on the last packet of every message and every `ack_every` packets).

Requester (sender side, one per QP): `una` is the oldest unacknowledged PSN, `next` the next PSN
to send, `sent_max` one past the highest ever sent. An ACK moves una; a NAK moves una to its PSN
and sends `next` back there (go-back-N); without progress for the retransmission timeout
`rto_s` (doubled at every consecutive expiry, reset by progress) `next` goes back to una; after
`max_retries` consecutive expiries the QP gives up (a NIC's retry count, then QP error). A packet
sent below `sent_max` is a retransmission and counted apart.

PSNs here are unwrapped (they count on past 2^24); the wire carries them mod 2^24.
"""

from __future__ import annotations

from dataclasses import dataclass

NAK_SEQ_ERROR = 0x60  # AETH syndrome: NAK (011) with code 0, PSN sequence error
PSN_MASK = 0xFFFFFF


def is_nak(syndrome: int) -> bool:
    return syndrome & 0xE0 == 0x60


def unwrap(psn: int, near: int) -> int:
    """The unwrapped PSN closest to `near` whose low 24 bits are `psn`."""
    return near + ((psn - near + 0x800000) & PSN_MASK) - 0x800000


ACCEPT, HOLD, DUPLICATE, SEQ_ERROR = "accept", "hold", "duplicate", "seq_error"


class Responder:
    """Receiver-side go-back-N state of one QP. `on_data` says what to do with a packet and
    collects the replies (("ack" | "nak", psn)) to send in `replies`."""

    __slots__ = ("ack_pending", "ahead", "epsn", "hole_since", "nak_after_s", "nak_t", "naked",
                 "naks", "replies", "seq_errors", "trims")

    def __init__(self, nak_after_s: float) -> None:
        self.epsn = 0
        self.ahead: set[int] = set()  # tagged PSNs above epsn, held
        self.hole_since = 0.0  # when the current hole (held packets) opened
        self.nak_after_s = nak_after_s
        self.naked = -1  # the epsn a NAK was last sent for
        self.nak_t = 0.0
        self.ack_pending = -1  # highest PSN that asked for an ACK and is not ACKed yet
        self.naks = 0
        self.seq_errors = 0
        self.trims = 0
        self.replies: list[tuple[str, int]] = []

    def on_data(self, psn: int, ackreq: bool, tagged: bool, now: float) -> str:
        if psn < self.epsn or psn in self.ahead:
            return self._duplicate()
        if psn > self.epsn:
            if not tagged:
                self.seq_errors += 1
                if self.naked != self.epsn:
                    self._nak(now)
                return SEQ_ERROR
            return self._hold(psn, ackreq, now)
        return self._accept(psn, ackreq, now)

    def _duplicate(self) -> str:
        self.replies.append(("ack", self.epsn - 1))
        return DUPLICATE

    def _hold(self, psn: int, ackreq: bool, now: float) -> str:
        """A packet above epsn, kept for the in-order stream."""
        if not self.ahead:
            self.hole_since = now
        self.ahead.add(psn)
        if ackreq:
            self.ack_pending = max(self.ack_pending, psn)
        return HOLD

    def _accept(self, psn: int, ackreq: bool, now: float) -> str:
        """The expected PSN: epsn moves past it and what was held above it; ACK if asked."""
        self.epsn += 1
        ahead = self.ahead
        while self.epsn in ahead:
            ahead.discard(self.epsn)
            self.epsn += 1
        if ahead:
            self.hole_since = now  # the next hole starts waiting now
        if ackreq:
            self.ack_pending = max(self.ack_pending, psn)
        if 0 <= self.ack_pending < self.epsn:
            self.replies.append(("ack", self.epsn - 1))
            self.ack_pending = -1
        return ACCEPT

    def on_trimmed(self, psn: int, now: float) -> None:
        """A trimmed packet of `psn` arrived (its payload was cut away on the way)."""
        self.trims += 1
        if psn == self.epsn or (psn > self.epsn and self.naked != self.epsn):
            self._nak(now)

    def tick(self, now: float) -> None:
        """NAK a hole among held (tagged) packets that has waited too long."""
        if self.ahead and now - self.hole_since > self.nak_after_s \
                and (self.naked != self.epsn or now - self.nak_t > self.nak_after_s):
            self._nak(now)

    def _nak(self, now: float) -> None:
        self.naked = self.epsn
        self.nak_t = now
        self.naks += 1
        self.replies.append(("nak", self.epsn))


@dataclass
class RequesterStats:
    retransmitted_packets: int = 0
    retransmitted_bytes: int = 0  # frame bytes
    naks: int = 0
    timeouts: int = 0


class RequesterBase:
    """What every sender-side reliability state of one QP keeps (`total` PSNs to deliver, None =
    unlimited): una, sent_max, the retransmission timer and its retries, the counts. Subclasses
    say what to send next (`next`) and what a NAK and a timeout do."""

    def __init__(self, total: int | None, rto_s: float, max_retries: int) -> None:
        self.total = total
        self.rto_s = rto_s
        self.max_retries = max_retries
        self.una = 0
        self.sent_max = 0
        self.retries = 0
        self.progress_t = 0.0  # last ACK progress, or the send that started the outstanding run
        self.failed = False
        self.stats = RequesterStats()

    @property
    def done(self) -> bool:
        return self.failed or (self.total is not None and self.una >= self.total)

    def timer_due(self) -> float:
        """When the retransmission timer expires (inf when nothing is outstanding)."""
        if self.una >= self.sent_max or self.done:
            return float("inf")
        return self.progress_t + self.rto_s * (1 << min(self.retries, 16))

    def on_sent(self, psn: int, frame_bytes: int, now: float) -> bool:
        """Account one packet sent; True if it was sent for the first time."""
        if self.una >= self.sent_max:
            self.progress_t = now  # the timer starts with the first outstanding packet
        if psn < self.sent_max:
            self.stats.retransmitted_packets += 1
            self.stats.retransmitted_bytes += frame_bytes
            return False
        self.sent_max = psn + 1
        return True

    def on_ack(self, psn: int, now: float) -> None:
        acked = unwrap(psn, self.una) + 1
        if acked > self.una:
            self.una = min(acked, self.sent_max)
            self.retries = 0
            self.progress_t = now

    def on_timeout(self, now: float) -> None:
        """Count an expiry; the subclass resends if the QP has retries left (`failed` not)."""
        self.stats.timeouts += 1
        self.retries += 1
        if self.retries > self.max_retries:
            self.failed = True
            return
        self.progress_t = now


class Requester(RequesterBase):
    """Sender-side go-back-N state of one QP."""

    def __init__(self, total: int | None, rto_s: float, max_retries: int) -> None:
        super().__init__(total, rto_s, max_retries)
        self.next = 0

    @property
    def has_to_send(self) -> bool:
        return not self.done and (self.total is None or self.next < self.total)

    def on_sent(self, psn: int, frame_bytes: int, now: float) -> bool:
        self.next = psn + 1
        return super().on_sent(psn, frame_bytes, now)

    def on_ack(self, psn: int, now: float) -> None:
        super().on_ack(psn, now)
        self.next = max(self.next, self.una)

    def on_nak(self, psn: int, now: float) -> None:
        nak = unwrap(psn, self.una)
        if nak < self.una or nak > self.sent_max:
            return  # stale, or nothing we sent
        self.stats.naks += 1
        if nak > self.una:
            self.una = nak
            self.retries = 0
        self.progress_t = now
        self.next = min(self.next, nak)

    def on_timeout(self, now: float) -> None:
        super().on_timeout(now)
        if not self.failed:
            self.next = self.una
