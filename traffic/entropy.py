"""Which entropy a queue pair's packet leaves with: the host chooses, the switches hash.

A QP with `entropies` = N sends from N UDP source ports (its `sport` and the N - 1 after it);
ECMP hashes the 5-tuple, so each entropy is a path through the fabric, and the sender chooses a
path per packet without the switches doing anything new (Ultra Ethernet's entropy value).

- `oblivious`: the entropies in turn, blind to what happens to them (packet spraying);
- `reps`: REPS (recycled entropy packet spraying): the entropies of packets that were
  acknowledged, and never NAKed on the way (trimmed, lost), are reused oldest first; with none
  waiting the next one in turn is tried. An entropy whose path trims or drops stops coming back,
  so the QP's packets leave it within a round trip; a clean path's entropies keep returning.

The sender tells the chooser what happened (`acked`, `naked`); the chooser keeps, per PSN
outstanding, the entropy it last left with.
"""

from __future__ import annotations

from collections import deque

SPRAY_POLICIES = ("oblivious", "reps")
MAX_ENTROPIES = 256
_DYNAMIC = 49152  # the dynamic ports, 49152-65535: entropies wrap within them


def entropy_port(sport: int, entropy: int) -> int:
    """The UDP source port of entropy `entropy` of a QP whose first is `sport`."""
    port = sport + entropy
    return port if port < 65536 else _DYNAMIC + (port - 65536) % (65536 - _DYNAMIC)


class EntropyChooser:
    def __init__(self, count: int, policy: str = "oblivious") -> None:
        if count < 1:
            raise ValueError(f"a QP needs at least one entropy, got {count}")
        if policy not in SPRAY_POLICIES:
            raise ValueError(f"spray policy must be one of {', '.join(SPRAY_POLICIES)}, "
                             f"got {policy!r}")
        self.count = count
        self.reps = policy == "reps" and count > 1
        self.turn = 0
        self.recycled: deque[int] = deque()
        self.sent: dict[int, int] = {}  # PSN -> the entropy it last left with (reps)
        self.naked: set[int] = set()  # outstanding PSNs a NAK named since they were last sent
        self.packets = [0] * count  # packets sent per entropy

    def choose(self, psn: int) -> int:
        """The entropy (0 .. count - 1) packet `psn` leaves with."""
        if self.count == 1:
            entropy = 0
        elif self.reps and self.recycled:
            entropy = self.recycled.popleft()
        else:
            entropy = self.turn
            self.turn = (self.turn + 1) % self.count
        if self.reps:
            self.sent[psn] = entropy
            self.naked.discard(psn)
        self.packets[entropy] += 1
        return entropy

    def acked(self, first: int, end: int) -> None:
        """PSNs first .. end - 1 were acknowledged: recycle the entropies that delivered them."""
        if not self.reps:
            return
        for psn in range(first, end):
            entropy = self.sent.pop(psn, None)
            if entropy is not None and psn not in self.naked:
                self.recycled.append(entropy)
            self.naked.discard(psn)

    def nak(self, psn: int) -> None:
        """A NAK named `psn`: the entropy it left with lost it; never recycled."""
        if self.reps and psn in self.sent:
            self.naked.add(psn)
