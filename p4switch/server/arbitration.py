"""Controller arbitration on the StreamChannel, as PI's server does it.

The connection with the highest election id is primary. Each stream is told the primary's
election id with OK (it is primary) or ALREADY_EXISTS (backup) whenever the primary changes or
its own election id changes; a duplicate election id is INVALID_ARGUMENT and closes the stream.
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


def election_id(msg: p4runtime_pb2.Uint128) -> int:
    return (msg.high << 64) | msg.low


class Connection:
    """One StreamChannel; messages for it are queued in `outbox` (None closes the stream)."""

    def __init__(self) -> None:
        self.id = next(_ids)
        self.election: int | None = None  # set by the first arbitration message
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
        self._conns: list[Connection] = []  # sorted, primary first

    def __len__(self) -> int:
        return len(self._conns)

    def primary(self) -> Connection | None:
        conns = self._conns
        return conns[0] if conns else None

    def is_primary(self, election: int) -> bool:
        p = self.primary()
        return p is not None and p.election == election

    def arbitrate(self, conn: Connection, election: int) -> None:
        """A stream's arbitration message: joins, or changes its election id."""
        if conn.election is None:
            self.add(conn, election)
        else:
            self.update(conn, election)

    def add(self, conn: Connection, election: int) -> None:
        with self._lock:
            deadline = time.monotonic() + DUPLICATE_GRACE_S
            while any(c.election == election for c in self._conns):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeApiError("INVALID_ARGUMENT", "Election id already exists")
                self._lock.wait(left)
            if conn.closed:  # its stream ended while it waited
                return
            conn.election = election
            self._conns.append(conn)
            self._sort()
            if self._conns[0] is conn:
                self._notify_all()
            else:
                self._notify(conn)

    def update(self, conn: Connection, election: int) -> None:
        with self._lock:
            if conn.election == election:
                return
            if any(c.election == election for c in self._conns if c is not conn):
                raise RuntimeApiError("INVALID_ARGUMENT", "New election id already exists")
            was_primary = self._conns[0] is conn
            conn.election = election
            self._lock.notify_all()
            self._sort()
            if (self._conns[0] is conn) != was_primary:
                self._notify_all()
            else:
                self._notify(conn)

    def remove(self, conn: Connection) -> None:
        """The connection's stream ended: it leaves for good."""
        with self._lock:
            conn.closed = True
            if conn not in self._conns:
                return
            was_primary = self._conns[0] is conn
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

    def _sort(self) -> None:
        self._conns.sort(key=_election, reverse=True)

    def _notify_all(self) -> None:
        for c in self._conns:
            self._notify(c)

    def _notify(self, conn: Connection) -> None:
        primary = self._conns[0]
        msg = p4runtime_pb2.StreamMessageResponse()
        arb = msg.arbitration
        arb.device_id = self.device_id
        arb.election_id.high = _election(primary) >> 64
        arb.election_id.low = _election(primary) & ((1 << 64) - 1)
        if conn is primary:
            arb.status.code = code_pb2.OK
            arb.status.message = "Is primary"
        else:
            arb.status.code = code_pb2.ALREADY_EXISTS
            arb.status.message = "Is backup"
        conn.send(msg)


def _election(conn: Connection) -> int:
    """The election id of a connection in the arbitration (set when it joined)."""
    assert conn.election is not None
    return conn.election
