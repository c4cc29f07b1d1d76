"""Packet-in / packet-out framing through the `@controller_header` headers.

Packet-out: the `packet_out` header's fields (from the PacketOut metadata, missing ones 0, as PI
does) are packed MSB first, then the payload follows; the result enters ingress on the CPU port.
Packet-in: a frame the pipeline sends to the CPU port starts with the `packet_in` header, whose
fields become the PacketIn metadata; the rest is the payload.
"""

from __future__ import annotations

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4switch.runtime.errors import RuntimeApiError
from p4switch.server.bytestrings import to_bytes, to_int


class _Header:
    def __init__(self, meta: p4info_pb2.ControllerPacketMetadata):
        self.fields = [(m.id, m.name, m.bitwidth) for m in meta.metadata]
        self.nbits = sum(w for _, _, w in self.fields)
        self.nbytes = (self.nbits + 7) // 8
        self.by_id = {fid: (i, w) for i, (fid, _, w) in enumerate(self.fields)}


class PacketIO:
    def __init__(self, p4info: p4info_pb2.P4Info):
        headers = {m.preamble.name: _Header(m) for m in p4info.controller_packet_metadata}
        self.packet_in = headers.get("packet_in")
        self.packet_out = headers.get("packet_out")

    def frame_from_packet_out(self, msg: p4runtime_pb2.PacketOut) -> bytes:
        hdr = self.packet_out
        if hdr is None:
            if msg.metadata:
                raise RuntimeApiError("INVALID_ARGUMENT", "Unexpected metadata in PacketOut "
                                      "message (the program has no packet_out header)")
            return msg.payload
        values = [0] * len(hdr.fields)
        for m in msg.metadata:
            found = hdr.by_id.get(m.metadata_id)
            if found is None:
                raise RuntimeApiError("INVALID_ARGUMENT",
                                      f"Unknown metadata id {m.metadata_id} in PacketOut message")
            index, width = found
            values[index] = to_int(m.value, width, f"packet_out field {hdr.fields[index][1]}")
        acc = 0
        for (_, _, width), value in zip(hdr.fields, values, strict=False):
            acc = (acc << width) | value
        acc <<= hdr.nbytes * 8 - hdr.nbits
        return acc.to_bytes(hdr.nbytes, "big") + msg.payload

    def packet_in_from_frame(self, frame: bytes) -> p4runtime_pb2.PacketIn:
        msg = p4runtime_pb2.PacketIn()
        hdr = self.packet_in
        if hdr is None or len(frame) < hdr.nbytes:
            msg.payload = frame
            return msg
        acc = int.from_bytes(frame[:hdr.nbytes], "big") >> (hdr.nbytes * 8 - hdr.nbits)
        shift = hdr.nbits
        for fid, _, width in hdr.fields:
            shift -= width
            meta = msg.metadata.add()
            meta.metadata_id = fid
            meta.value = to_bytes((acc >> shift) & ((1 << width) - 1))
        msg.payload = frame[hdr.nbytes:]
        return msg
