"""Minimal pcap writer (classic libpcap format, Ethernet link type, µs timestamps)."""

from __future__ import annotations

import struct
import time
from typing import BinaryIO

_GLOBAL_HEADER = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)
_RECORD = struct.Struct("<IIII")


class PcapWriter:
    """Appends frames to a pcap file; each record is flushed so readers see it at once."""

    def __init__(self, path: str):
        self.path = path
        self._file: BinaryIO = open(path, "wb")  # noqa: SIM115 - closed by close()
        self._file.write(_GLOBAL_HEADER)
        self._file.flush()

    def write(self, frame: bytes, timestamp: float | None = None) -> None:
        ts = time.time() if timestamp is None else timestamp
        sec = int(ts)
        self._file.write(_RECORD.pack(sec, int((ts - sec) * 1e6), len(frame), len(frame)))
        self._file.write(frame)
        self._file.flush()

    def close(self) -> None:
        self._file.close()
