"""Result objects of senders and receivers, and their CSV/JSON writers."""

from __future__ import annotations

import csv
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class QPSendResult:
    dst_ip: str
    qpn: int
    sport: int
    packets: int = 0
    frame_bytes: int = 0  # Ethernet frame bytes (no FCS)
    payload_bytes: int = 0  # RDMA payload bytes
    messages: int = 0
    acks: int = 0
    cnps: int = 0
    rate_cuts: int = 0
    final_rate_bps: float = 0.0
    start: float = 0.0  # epoch seconds
    end: float = 0.0  # last packet sent; with go-back-N, the last PSN acknowledged
    # go-back-N (traffic.gbn): packets/frame bytes sent again (included in packets/frame_bytes),
    # NAKs received, retransmission timer expiries, PSNs acknowledged, QP gave up (retries spent)
    retransmitted_packets: int = 0
    retransmitted_bytes: int = 0
    naks: int = 0
    timeouts: int = 0
    acked_packets: int = 0
    gave_up: bool = False
    entropy_packets: list[int] = field(default_factory=list)  # packets sent per entropy
    rate_samples: list[tuple[float, float]] = field(default_factory=list)  # (s from start, b/s)

    @property
    def min_rate_bps(self) -> float:
        return min((r for _, r in self.rate_samples), default=self.final_rate_bps)


@dataclass
class SendResult:
    iface: str
    src_ip: str
    start: float
    elapsed_s: float
    qps: list[QPSendResult]
    pause_frames: int = 0
    paused_s: float = 0.0
    partial: bool = False
    tx_busy: int = 0  # sends the interface's queue refused (ENOBUFS), each retried after a wait

    @property
    def packets(self) -> int:
        return sum(q.packets for q in self.qps)

    @property
    def payload_bytes(self) -> int:
        return sum(q.payload_bytes for q in self.qps)

    @property
    def pps(self) -> float:
        return self.packets / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["packets"] = self.packets
        d["payload_bytes"] = self.payload_bytes
        d["pps"] = round(self.pps, 1)
        for qd, q in zip(d["qps"], self.qps, strict=True):
            qd["min_rate_bps"] = q.min_rate_bps
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SendResult:
        qp_fields = set(QPSendResult.__dataclass_fields__)
        qps = [QPSendResult(**{k: v for k, v in q.items() if k in qp_fields}) for q in d["qps"]]
        top = {k: v for k, v in d.items() if k in cls.__dataclass_fields__ and k != "qps"}
        return cls(qps=qps, **top)


@dataclass
class Bin:
    """One time-series bin of one QP at the receiver."""

    rx_bytes: int = 0
    rx_packets: int = 0
    out_of_order: int = 0
    ce_marked: int = 0
    cnp_sent: int = 0
    reorder_occupancy_max: int = 0


BIN_COLUMNS = ["t_s", "src_ip", "qpn", "rx_bytes", "rx_packets", "goodput_bps",
               "out_of_order", "ce_marked", "cnp_sent", "reorder_occupancy_max"]


@dataclass
class MessageResult:
    psn: int  # PSN of the message's first packet
    bytes: int
    fct_s: float | None  # last byte delivered in order - send time of the first byte
    complete: bool


@dataclass
class QPRecvResult:
    src_ip: str
    qpn: int
    packets: int = 0
    bytes: int = 0  # RDMA payload bytes (duplicates not counted)
    first_t: float = 0.0  # epoch seconds of the first/last arrival
    last_t: float = 0.0
    max_gap_s: float = 0.0  # longest silence between two arrivals (pauses, failures)
    lost: int = 0  # PSNs never received inside the range seen
    out_of_order: int = 0  # arrivals with a PSN below the highest PSN seen
    reorder_distance_max: int = 0  # highest PSN seen - PSN of the late arrival
    reorder_distance_sum: int = 0
    duplicates: int = 0
    ce_marked: int = 0
    cnp_sent: int = 0
    cnp_out_of_order: int = 0  # of those, CNPs for a PSN gap rather than an ECN mark
    acks_sent: int = 0
    icrc_errors: int = 0
    trimmed: int = 0  # packets a switch cut to their headers (trim DSCP): lost, NAKed at once
    # go-back-N: NAKs sent, untagged packets dropped for arriving ahead of the expected PSN
    naks_sent: int = 0
    seq_errors: int = 0
    tagged: int = 0
    reorder_occupancy_max: int = 0
    reorder_skipped: int = 0  # holes the reorder buffer gave up on (lost packets)
    delivered: int = 0  # packets the reorder buffer released in order
    # check_payload (traffic.payload): packets and 4-byte elements whose payload was wrong
    wrong_packets: int = 0
    wrong_elements: int = 0
    # in-band telemetry (traffic.inband): packets that carried records, the last one's records
    # (path order, IntHop fields) and the deepest queue seen at each hop of the path
    int_packets: int = 0
    int_hops: list[dict[str, int]] = field(default_factory=list)
    int_qdepth_max: list[int] = field(default_factory=list)
    # packets seen per queue depth, per "switch_id:egress_port" (depth as a string: JSON keys)
    int_qdepth_hist: dict[str, dict[str, int]] = field(default_factory=dict)
    messages: list[MessageResult] = field(default_factory=list)
    bins: dict[int, Bin] = field(default_factory=dict)

    @property
    def goodput_bps(self) -> float:
        span = self.last_t - self.first_t
        return self.bytes * 8 / span if span > 0 else 0.0

    def summary(self) -> dict[str, Any]:
        d = asdict(self)
        del d["bins"]
        d["goodput_bps"] = round(self.goodput_bps, 1)
        fcts = sorted(m.fct_s for m in self.messages if m.fct_s is not None)
        d["messages_complete"] = sum(m.complete for m in self.messages)
        d["fct_median_s"] = fcts[len(fcts) // 2] if fcts else None
        d["fct_max_s"] = fcts[-1] if fcts else None
        return d


@dataclass
class RecvResult:
    iface: str
    start: float
    elapsed_s: float
    bin_s: float
    qps: list[QPRecvResult]
    frames: int = 0  # frames the filter passed, including foreign ones
    partial: bool = False
    socket_drops: int = 0  # frames the kernel dropped: this receiver was too slow

    @property
    def bytes(self) -> int:
        return sum(q.bytes for q in self.qps)

    @property
    def packets(self) -> int:
        return sum(q.packets for q in self.qps)

    def qp(self, src_ip: str, qpn: int) -> QPRecvResult:
        for q in self.qps:
            if q.src_ip == src_ip and q.qpn == qpn:
                return q
        raise KeyError(f"no flow from {src_ip} QPN {qpn}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "iface": self.iface, "start": self.start, "elapsed_s": self.elapsed_s,
            "bin_s": self.bin_s, "frames": self.frames, "partial": self.partial,
            "socket_drops": self.socket_drops,
            "packets": self.packets, "bytes": self.bytes,
            "qps": [q.summary() for q in self.qps],
        }

    def rows(self) -> list[list[Any]]:
        """Time series rows (BIN_COLUMNS), every bin from each QP's first to its last."""
        out: list[list[Any]] = []
        for q in self.qps:
            if not q.bins:
                continue
            lo, hi = min(q.bins), max(q.bins)
            for i in range(lo, hi + 1):
                b = q.bins.get(i) or Bin()
                out.append([round(i * self.bin_s, 6), q.src_ip, q.qpn, b.rx_bytes, b.rx_packets,
                            round(b.rx_bytes * 8 / self.bin_s, 1), b.out_of_order, b.ce_marked,
                            b.cnp_sent, b.reorder_occupancy_max])
        return out


def write_json(path: str | Path, data: dict[str, Any]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
    return path


def write_csv(path: str | Path, header: list[str], rows: list[list[Any]]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return path


def write_receiver(result: RecvResult, csv_path: str | Path, json_path: str | Path) -> None:
    write_csv(csv_path, BIN_COLUMNS, result.rows())
    write_json(json_path, result.to_dict())
