"""Selective retransmission, as Ultra Ethernet's transport (and IRN before it) recovers: the
receiver places packets that arrive out of order, NAKs exactly the PSNs it knows are lost, and
the sender resends those and nothing else. The two ends' state machines, no sockets; the same
interfaces as go-back-N's (`traffic.gbn`), so sender and receiver take either.

Responder (receiver side, one per QP), expected PSN `epsn`, `highest` the highest PSN seen:
- the expected PSN is accepted; epsn advances over what was placed above it;
- a PSN above epsn is placed (held for the in-order stream); the PSNs between `highest` and it
  that never came are lost and NAKed, one NAK each (at most `NAK_BURST` per arrival; a longer
  run is left to the sender's timer), so a burst loss costs one round trip;
- a trimmed packet (its payload cut by a switch, `trimming.p4`) at or above epsn is NAKed at
  once, every time (each trim is one transmission lost), and only it: a trimmed header leaves
  at a higher priority and overtakes the data queued before it, so the PSNs below it are not
  lost yet. The gap rule above skips a PSN NAKed for its trim;
- a duplicate is dropped and re-ACKed; holes that stay open `nak_after_s` (a NAK or its resend
  was lost too) are NAKed again, every PSN still missing below the highest seen (at most
  `RENAK_BURST`), every `nak_after_s`. ACKs are cumulative (epsn - 1) and coalesced, as in gbn.
A packet that is merely late (sprayed over paths of different delay) looks lost here and is
resent needlessly: the receiver cannot tell.

Requester (sender side, one per QP): `una` the oldest unacknowledged PSN, `sent_max` one past
the highest sent; a NAK queues its PSN for resending (once, while it is unacknowledged); the
next packet is the oldest queued resend, else new data. An ACK moves una and drops the resends
below it. The timer resends una alone (doubling per consecutive expiry, as gbn; `max_retries`
expiries give up) and starts a recovery up to `sent_max`: until una passes it, an ACK that moves
una resends the new una at once (NewReno's partial ACK), so a lost tail, which no later packet
reveals to the receiver, costs one timeout rather than one per packet.
"""

from __future__ import annotations

import bisect

from traffic.gbn import RequesterBase, Responder, unwrap

NAK_BURST = 16  # NAKs at most per arrival that reveals a gap
RENAK_BURST = 64  # NAKs at most per `tick` for holes that stayed open


class SelectiveResponder(Responder):
    """Receiver-side selective-repeat state of one QP (module docstring)."""

    __slots__ = ("highest", "trimmed")

    def __init__(self, nak_after_s: float) -> None:
        super().__init__(nak_after_s)
        self.highest = -1
        self.trimmed: set[int] = set()  # PSNs NAKed for a trim, not arrived since

    def on_data(self, psn: int, ackreq: bool, tagged: bool, now: float) -> str:
        if psn < self.epsn or psn in self.ahead:
            return self._duplicate()
        self._nak_gap(psn)
        self.trimmed.discard(psn)
        if psn > self.epsn:
            return self._hold(psn, ackreq, now)
        return self._accept(psn, ackreq, now)

    def on_trimmed(self, psn: int, now: float) -> None:
        self.trims += 1
        if psn < self.epsn or psn in self.ahead:
            return
        self.trimmed.add(psn)
        self.naks += 1
        self.replies.append(("nak", psn))

    def tick(self, now: float) -> None:
        """NAK again every hole that has waited `nak_after_s` since it opened or was NAKed."""
        if not self.ahead or now - self.hole_since <= self.nak_after_s \
                or now - self.nak_t <= self.nak_after_s:
            return
        self.nak_t = now
        missing = (p for p in range(self.epsn, self.highest) if p not in self.ahead)
        for _, lost in zip(range(RENAK_BURST), missing, strict=False):
            self.naks += 1
            self.replies.append(("nak", lost))

    def _nak_gap(self, psn: int) -> None:
        """NAK the PSNs between the highest seen and `psn` (never seen: lost); `psn` is now the
        highest seen if it is above it."""
        start = max(self.highest + 1, self.epsn)
        for lost in range(start, min(psn, start + NAK_BURST)):
            if lost not in self.trimmed:
                self.naks += 1
                self.replies.append(("nak", lost))
        self.highest = max(self.highest, psn)


class SelectiveRequester(RequesterBase):
    """Sender-side selective-repeat state of one QP (module docstring)."""

    def __init__(self, total: int | None, rto_s: float, max_retries: int) -> None:
        super().__init__(total, rto_s, max_retries)
        self.resend: list[int] = []  # PSNs to send again, sorted
        self.recover = -1  # after a timeout: sent_max then; partial ACKs resend below it

    @property
    def next(self) -> int:
        """The PSN to send next: the oldest resend, else new data."""
        return self.resend[0] if self.resend else self.sent_max

    @property
    def has_to_send(self) -> bool:
        return not self.done and (bool(self.resend) or self.total is None
                                  or self.sent_max < self.total)

    def on_sent(self, psn: int, frame_bytes: int, now: float) -> bool:
        if self.resend and self.resend[0] == psn:
            self.resend.pop(0)
        return super().on_sent(psn, frame_bytes, now)

    def on_ack(self, psn: int, now: float) -> None:
        una = self.una
        super().on_ack(psn, now)
        if self.una == una:
            return
        del self.resend[:bisect.bisect_left(self.resend, self.una)]
        if self.una >= self.recover:
            self.recover = -1
        elif not self.resend or self.resend[0] != self.una:
            self.resend.insert(0, self.una)  # a partial ACK: the next hole

    def on_nak(self, psn: int, now: float) -> None:
        lost = unwrap(psn, self.una)
        if not self.una <= lost < self.sent_max:
            return  # acknowledged already, or nothing we sent
        self.stats.naks += 1
        self.progress_t = now
        at = bisect.bisect_left(self.resend, lost)
        if at == len(self.resend) or self.resend[at] != lost:
            self.resend.insert(at, lost)

    def on_timeout(self, now: float) -> None:
        super().on_timeout(now)
        if self.failed:
            return
        self.recover = self.sent_max
        if not self.resend or self.resend[0] != self.una:
            self.resend.insert(0, self.una)
