"""Controller arbitration on the StreamChannel (P4Runtime spec §5), as PI's server does it.

The connection with the highest election id is primary: PI's rule, which the spec refines to
"the highest id ever received" (there a backup is not promoted when the primary leaves; here it
is, as on BMv2, which the lab's controllers rely on). Each stream is told the primary's election
id with OK (it is primary) or ALREADY_EXISTS (backup) whenever the primary changes or its own
election id changes; with no primary, backups are told NOT_FOUND (with the highest election id
received, if any). A duplicate election id is INVALID_ARGUMENT and closes the stream. An unset
election id is lower than any (0 included): such a stream is a backup that never becomes primary
and duplicates no one (spec §5, "Unset Election ID"; PI takes it as 0). At most
`MAX_CONNECTIONS` streams take part (PI's limit per device; the next is RESOURCE_EXHAUSTED).
Packet-ins and digests go to the primary only.

A controller that reconnects at once with its election id can arbitrate before the switch has
seen its old stream end; a new stream whose id is taken therefore waits up to
`DUPLICATE_GRACE_S` for the holder to leave before it is refused.
"""

from __future__ import annotations

import contextlib
import itertools
import queue
import threading
import time

from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4switch.runtime.errors import RuntimeApiError

_ids = itertools.count(1)
DUPLICATE_GRACE_S = 0.5
MAX_CONNECTIONS = 16  # streams in the arbitration per device, PI's `max_connections`
_LOW64 = (1 << 64) - 1


def election_id(msg: p4runtime_pb2.Uint128) -> int:
    return (msg.high << 64) | msg.low


def request_election(request: object) -> int | None:
    """The election id a request or arbitration message carries; None when it has none."""
    if not request.HasField("election_id"):  # type: ignore[attr-defined]
        return None
    return election_id(request.election_id)  # type: ignore[attr-defined]


class Connection:
    """One StreamChannel; messages for it are queued in `outbox` (None closes the stream)."""

    def __init__(self) -> None:
        self.id = next(_ids)
        self.arbitrated = False  # set by its first accepted arbitration message
        self.election: int | None = None  # None: unset (a backup for good)
        self.closed = False  # set once it left the arbitration
        self.outbox: queue.Queue = queue.Queue(maxsize=10000)

    def send(self, msg: object) -> None:
        # a controller that does not read its stream loses messages, not the switch
        with contextlib.suppress(queue.Full):
            self.outbox.put_nowait(msg)


class Arbitrator:
    def __init__(self, device_id: int):
        self.device_id = device_id
        self._lock = threading.Condition()  # notified whenever a connection leaves
        self._conns: list[Connection] = []  # sorted, highest election id first
        self._highest: int | None = None  # the highest election id received

    def __len__(self) -> int:
        return len(self._conns)

    def primary(self) -> Connection | None:
        conns = self._conns
        return conns[0] if conns and conns[0].election is not None else None

    def is_primary(self, election: int | None) -> bool:
        p = self.primary()
        return p is not None and election is not None and p.election == election

    def arbitrate(self, conn: Connection, election: int | None) -> None:
        """A stream's arbitration message: joins, or changes its election id."""
        if not conn.arbitrated:
            self.add(conn, election)
        else:
            self.update(conn, election)

    def add(self, conn: Connection, election: int | None) -> None:
        with self._lock:
            if len(self._conns) >= MAX_CONNECTIONS:
                raise RuntimeApiError("RESOURCE_EXHAUSTED", f"Too many connections: this "
                                      f"switch serves at most {MAX_CONNECTIONS} controllers")
            deadline = time.monotonic() + DUPLICATE_GRACE_S
            while self._taken(election, conn):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeApiError("INVALID_ARGUMENT", "Election id already exists")
                self._lock.wait(left)
            if conn.closed:  # its stream ended while it waited
                return
            conn.arbitrated = True
            conn.election = election
            self._saw(election)
            self._conns.append(conn)
            self._sort()
            if self.primary() is conn:
                self._notify_all()
            else:
                self._notify(conn)

    def update(self, conn: Connection, election: int | None) -> None:
        with self._lock:
            if conn.election == election:
                return
            if self._taken(election, conn):
                raise RuntimeApiError("INVALID_ARGUMENT", "New election id already exists")
            was_primary = self.primary() is conn
            conn.election = election
            self._saw(election)
            self._lock.notify_all()
            self._sort()
            if (self.primary() is conn) != was_primary:
                self._notify_all()
            else:
                self._notify(conn)

    def remove(self, conn: Connection) -> None:
        """The connection's stream ended: it leaves for good."""
        with self._lock:
            conn.closed = True
            if conn not in self._conns:
                return
            was_primary = self.primary() is conn
            self._conns.remove(conn)
            self._lock.notify_all()
            if was_primary:
                self._notify_all()

    def send_to_primary(self, msg: p4runtime_pb2.StreamMessageResponse) -> bool:
        p = self.primary()
        if p is None:
            return False
        p.send(msg)
        return True

    def _saw(self, election: int | None) -> None:
        if election is not None and (self._highest is None or election > self._highest):
            self._highest = election

    def _taken(self, election: int | None, conn: Connection) -> bool:
        return election is not None and any(c.election == election for c in self._conns
                                            if c is not conn)

    def _sort(self) -> None:
        self._conns.sort(key=lambda c: -1 if c.election is None else c.election, reverse=True)

    def _notify_all(self) -> None:
        for c in self._conns:
            self._notify(c)

    def _notify(self, conn: Connection) -> None:
        primary = self.primary()
        msg = p4runtime_pb2.StreamMessageResponse()
        arb = msg.arbitration
        arb.device_id = self.device_id
        shown = self._highest if primary is None else primary.election
        if shown is not None:  # unset while no stream ever had an election id
            arb.election_id.high = shown >> 64
            arb.election_id.low = shown & _LOW64
        if primary is None:
            arb.status.code = code_pb2.NOT_FOUND
            arb.status.message = "No primary"
        else:
            if conn is primary:
                arb.status.code = code_pb2.OK
                arb.status.message = "Is primary"
            else:
                arb.status.code = code_pb2.ALREADY_EXISTS
                arb.status.message = "Is backup"
        conn.send(msg)
