"""Digest configuration (DigestEntry) and digest lists for the primary controller."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any, TypeAlias

from p4.v1 import p4runtime_pb2

from p4switch.p4info.index import P4InfoIndex
from p4switch.runtime.errors import already_exists, invalid_id, not_found
from p4switch.server.bytestrings import to_bytes
from p4switch.server.pre import check_update

Update = p4runtime_pb2.Update
Entity: TypeAlias = p4runtime_pb2.Entity


class DigestCodec:
    """DigestEntry configuration, and digest lists for the primary controller's stream.

    As PI's digest manager: samples are batched per digest, a list goes out when it holds
    `max_list_size` samples (0 = no limit) or `max_timeout_ns` after its first sample (0 = at
    once). With `ack_timeout_ns` > 0 a sample already pending or sent is suppressed until its
    list is acknowledged (DigestListAck) or `ack_timeout_ns` has passed since it was sent.
    List ids count from 1 per digest.
    """

    def __init__(self, index: P4InfoIndex, state: Any):
        self.index = index
        self.digests = state.digests
        self.configs: dict[int, p4runtime_pb2.DigestEntry.Config] = {}
        self._sink: Callable[[p4runtime_pb2.StreamMessageResponse], Any] | None = None
        self._lock = threading.Lock()
        self._pending: dict[str, list[tuple[int, ...]]] = {}
        self._next_list: dict[str, int] = {}
        # suppressed samples per digest: sample -> expiry (monotonic s; None while pending)
        self._cache: dict[str, dict[tuple[int, ...], float | None]] = {}
        self._unacked: dict[tuple[str, int], list[tuple[int, ...]]] = {}

    def attach(self, sink: Callable[[p4runtime_pb2.StreamMessageResponse], Any]) -> None:
        self._sink = sink
        self.digests.sink = self._on_sample

    def _on_sample(self, name: str, values: tuple[int, ...]) -> None:
        settings = self.digests.settings(name)
        if settings is None:
            return
        with self._lock:
            if settings.ack_timeout_ns > 0:
                cache = self._cache.setdefault(name, {})
                if values in cache:
                    expiry = cache[values]
                    if expiry is None or expiry > time.monotonic():
                        return  # pending or sent and not yet acknowledged
                cache[values] = None
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
            info = self.index.find("digests", name)
            settings = self.digests.settings(name)
            if not samples or self._sink is None or info is None or settings is None:
                return
            list_id = self._next_list.get(name, 1)
            self._next_list[name] = list_id + 1
            if settings.ack_timeout_ns > 0:
                now = time.monotonic()
                cache = self._cache.setdefault(name, {})
                for key in [k for k, exp in cache.items() if exp is not None and exp <= now]:
                    del cache[key]  # ack timeout passed: may be reported again
                expiry = now + settings.ack_timeout_ns / 1e9
                for values in samples:
                    cache[values] = expiry
                self._unacked[name, list_id] = samples
            msg = p4runtime_pb2.StreamMessageResponse()
            dl = msg.digest
            dl.digest_id, dl.list_id, dl.timestamp = info.preamble.id, list_id, time.time_ns()
            for values in samples:
                members = dl.data.add().struct.members
                for v in values:
                    members.add().bitstring = to_bytes(v)
        self._sink(msg)

    def ack(self, digest_id: int, list_id: int) -> None:
        """A DigestListAck from the controller: its samples may be reported again."""
        info = self.index.get(digest_id)
        if info is None or self.index.kind(digest_id) != "digests":
            return
        name = info.preamble.name
        with self._lock:
            cache = self._cache.get(name, {})
            for values in self._unacked.pop((name, list_id), []):
                if cache.get(values) is not None:
                    del cache[values]

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
            with self._lock:  # as PI: pending samples and the ack cache go with the config
                self._pending.pop(name, None)
                self._cache.pop(name, None)
                for key in [k for k in self._unacked if k[0] == name]:
                    del self._unacked[key]
            return
        c = msg.config
        self.digests.configure(name, c.max_list_size, c.max_timeout_ns, c.ack_timeout_ns)
        cfg = p4runtime_pb2.DigestEntry.Config()
        cfg.CopyFrom(c)
        self.configs[msg.digest_id] = cfg

    def read(self, msg: p4runtime_pb2.DigestEntry) -> list[Entity]:
        if msg.digest_id and self.index.kind(msg.digest_id) != "digests":
            raise invalid_id("digest", msg.digest_id)
        if msg.digest_id and msg.digest_id not in self.configs:
            raise not_found(f"Digest {msg.digest_id} not configured")
        ids = [msg.digest_id] if msg.digest_id else list(self.configs)
        out = []
        for did in ids:
            if did in self.configs:
                ent = Entity()
                ent.digest_entry.digest_id = did
                ent.digest_entry.config.CopyFrom(self.configs[did])
                out.append(ent)
        return out
