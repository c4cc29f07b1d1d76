"""Digest configuration (DigestEntry) and digest lists for the primary controller."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from p4.v1 import p4runtime_pb2

from p4switch.p4info_index import P4InfoIndex
from p4switch.runtime.errors import already_exists, not_found
from p4switch.server.bytestrings import to_bytes
from p4switch.server.pre import check_update
from p4switch.server.tables import invalid_id

Update = p4runtime_pb2.Update
Entity = p4runtime_pb2.Entity


class DigestCodec:
    """DigestEntry configuration, and digest lists for the primary controller's stream.

    Samples are batched per digest as the DigestEntry says: a list goes out when it holds
    `max_list_size` samples (0 = no limit) or `max_timeout_ns` after its first sample
    (0 = at once). Lists are not retransmitted, so acks (and ack_timeout_ns) change nothing.
    """

    def __init__(self, index: P4InfoIndex, state: Any):
        self.index = index
        self.digests = state.digests
        self.configs: dict[int, p4runtime_pb2.DigestEntry.Config] = {}
        self._list_id = 0
        self._sink: Callable[[p4runtime_pb2.StreamMessageResponse], Any] | None = None
        self._lock = threading.Lock()
        self._pending: dict[str, list[tuple[int, ...]]] = {}

    def attach(self, sink: Callable[[p4runtime_pb2.StreamMessageResponse], Any]) -> None:
        self._sink = sink
        self.digests.sink = self._on_sample

    def _on_sample(self, name: str, values: tuple[int, ...]) -> None:
        settings = self.digests.settings(name)
        if settings is None:
            return
        with self._lock:
            batch = self._pending.setdefault(name, [])
            batch.append(values)
            full = 0 < settings.max_list_size <= len(batch)
            if not full and settings.max_timeout_ns > 0:
                if len(batch) == 1:
                    timer = threading.Timer(settings.max_timeout_ns / 1e9, self._flush, (name,))
                    timer.daemon = True
                    timer.start()
                return
        self._flush(name)

    def _flush(self, name: str) -> None:
        with self._lock:
            samples = self._pending.pop(name, [])
            if not samples or self._sink is None:
                return
            info = self.index.find("digests", name)
            if info is None:
                return
            self._list_id += 1
            msg = p4runtime_pb2.StreamMessageResponse()
            dl = msg.digest
            dl.digest_id, dl.list_id, dl.timestamp = info.preamble.id, self._list_id, time.time_ns()
            for values in samples:
                members = dl.data.add().struct.members
                for v in values:
                    members.add().bitstring = to_bytes(v)
        self._sink(msg)

    def write(self, kind: int, msg: p4runtime_pb2.DigestEntry) -> None:
        if self.index.kind(msg.digest_id) != "digests":
            raise invalid_id("digest", msg.digest_id)
        check_update(kind)
        name = self.index.name(msg.digest_id)
        exists = msg.digest_id in self.configs
        if kind == Update.INSERT and exists:
            raise already_exists(f"digest {name} is already configured")
        if kind != Update.INSERT and not exists:
            raise not_found(f"digest {name} is not configured")
        if kind == Update.DELETE:
            self.digests.unconfigure(name)
            del self.configs[msg.digest_id]
            return
        c = msg.config
        self.digests.configure(name, c.max_list_size, c.max_timeout_ns, c.ack_timeout_ns)
        cfg = p4runtime_pb2.DigestEntry.Config()
        cfg.CopyFrom(c)
        self.configs[msg.digest_id] = cfg

    def read(self, msg: p4runtime_pb2.DigestEntry) -> list[Entity]:
        if msg.digest_id and self.index.kind(msg.digest_id) != "digests":
            raise invalid_id("digest", msg.digest_id)
        ids = [msg.digest_id] if msg.digest_id else list(self.configs)
        out = []
        for did in ids:
            if did in self.configs:
                ent = Entity()
                ent.digest_entry.digest_id = did
                ent.digest_entry.config.CopyFrom(self.configs[did])
                out.append(ent)
        return out
