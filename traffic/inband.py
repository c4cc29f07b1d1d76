"""In-band telemetry at the hosts: the records a packet brought, stripped off and read.

A sender asks for telemetry with `traffic.frames.add_int_shim` (`build_frame(int_hops=n)`,
`QueuePairConfig.int_hops`); every switch of `p4src/` pushes a 24-byte record onto the shim
(`p4src/include/int.p4`), newest first. The receiver calls `strip_int` on such a frame: the
frame as the sender built it (tag kept, shim and records gone, so its ICRC checks) and an
`IntReport` with the records in path order (the first switch first).

    frame, report = strip_int(frame)
    [hop.switch_id for hop in report.hops]      # the path, switch by switch

The byte layout comes from the scapy layers (`traffic.headers.IntShim`, `IntHop`) via
`traffic.wire`; scapy itself decodes the same frames (`Ether(frame)[IntShim].hops`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from traffic.frames import set_ipv4_checksum
from traffic.headers import INT_FLAG_NO_ROOM, INT_IP_PROTO, TAG_IP_PROTO
from traffic.wire import (
    ETH_LEN,
    INT_HOP,
    INT_HOP_LEN,
    INT_SHIM,
    IP_IHL_MASK,
    IPV4,
    TAG,
    TAG_LEN,
    int_shim_len,
)

_IP_PROTO, _IP_LEN = IPV4["proto"].at, IPV4["len"].span
_FLAGS, _MAX_HOPS, _HOP_COUNT = (INT_SHIM[f].at for f in ("flags", "max_hops", "hop_count"))


@dataclass(frozen=True)
class HopRecord:
    """One switch's record, fields as `IntHop` declares them."""

    switch_id: int
    ingress_port: int
    egress_port: int
    qdepth: int  # packets left in the egress queue as the packet left
    egress_ts: int  # µs since that switch started
    hop_latency: int  # µs the packet queued there (saturates at 65535)
    tx_bytes: int  # bytes sent on the egress port so far, modulo 2^32
    link_mbps: int  # the egress link's rate (0: not configured)

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview, base: int = 0) -> HopRecord:
        return cls(**{name: f.read(data, base) for name, f in INT_HOP.fields.items()})

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class IntReport:
    """What the INT shim of one packet said."""

    max_hops: int
    flags: int
    hops: tuple[HopRecord, ...]  # path order: the first switch first

    @property
    def no_room(self) -> bool:
        """A switch on the path found the record stack full (the path is longer than shown)."""
        return bool(self.flags & INT_FLAG_NO_ROOM)

    @property
    def path(self) -> list[int]:
        return [h.switch_id for h in self.hops]

    def to_dict(self) -> dict[str, Any]:
        return {"max_hops": self.max_hops, "no_room": self.no_room,
                "hops": [h.to_dict() for h in self.hops]}


def int_shim_at(frame: bytes | bytearray | memoryview) -> int:
    """Where the INT shim of an IPv4 frame starts (after the reorder tag, if any), or -1."""
    at = ETH_LEN + (frame[ETH_LEN] & IP_IHL_MASK) * 4
    proto = frame[ETH_LEN + _IP_PROTO]
    if proto == TAG_IP_PROTO and len(frame) > at:
        proto = frame[at]  # the tag's next_proto
        at += TAG_LEN
    return at if proto == INT_IP_PROTO and len(frame) >= at + INT_SHIM.length else -1


def read_shim(frame: bytes | bytearray | memoryview, at: int) -> IntReport:
    """What the INT shim at `at` and the records after it say (the caller checked that the
    frame holds them all), records in path order."""
    hops = tuple(HopRecord.decode(frame, at + INT_SHIM.length + i * INT_HOP_LEN)
                 for i in reversed(range(frame[at + _HOP_COUNT])))
    return IntReport(frame[at + _MAX_HOPS], frame[at + _FLAGS], hops)


def strip_int(frame: bytes | bytearray | memoryview) -> tuple[bytes, IntReport | None]:
    """The frame without its INT shim and records (IPv4 protocol chain and length restored,
    checksum recomputed) and what they said; a frame without INT comes back unchanged, None."""
    at = int_shim_at(frame)
    if at < 0:
        return bytes(frame), None
    size = int_shim_len(frame, at)
    count = frame[at + _HOP_COUNT]
    if len(frame) < at + size:
        raise ValueError(f"INT shim announces {count} records, the frame ends before them")
    report = read_shim(frame, at)
    ihl = (frame[ETH_LEN] & IP_IHL_MASK) * 4
    ip = bytearray(frame[ETH_LEN : ETH_LEN + ihl])
    between = bytearray(frame[ETH_LEN + ihl : at])  # the reorder tag, if any
    next_proto = frame[at + INT_SHIM["next_proto"].at]
    if between:
        between[TAG["next_proto"].at] = next_proto
    else:
        ip[_IP_PROTO] = next_proto
    ip[_IP_LEN] = (int.from_bytes(ip[_IP_LEN], "big") - size).to_bytes(2, "big")
    set_ipv4_checksum(ip)
    out = b"".join((bytes(frame[:ETH_LEN]), ip, between, bytes(frame[at + size :])))
    return out, report
