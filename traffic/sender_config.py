"""Configuration of a RoCEv2 sender (`traffic.sender`): its queue pairs and its own settings."""

from __future__ import annotations

from dataclasses import dataclass

from traffic import netutil
from traffic.dcqcn import DcqcnParams
from traffic.entropy import MAX_ENTROPIES, SPRAY_POLICIES
from traffic.frames import STAMP_LEN
from traffic.headers import (
    SEND_FIRST,
    SEND_LAST,
    SEND_MIDDLE,
    SEND_ONLY,
    WRITE_FIRST,
    WRITE_LAST,
    WRITE_MIDDLE,
    WRITE_ONLY,
)
from traffic.hpcc import HpccParams

CC_ALGORITHMS = ("none", "dcqcn", "hpcc")  # SenderConfig.cc
MAX_INT_HOPS = 255  # the shim's max_hops byte (switches stop at their own limit, 5)

VERBS = {
    "write": (WRITE_FIRST, WRITE_MIDDLE, WRITE_LAST, WRITE_ONLY),
    "send": (SEND_FIRST, SEND_MIDDLE, SEND_LAST, SEND_ONLY),
}


@dataclass
class QueuePairConfig:
    dst_ip: str
    qpn: int
    rate_bps: float = 10e6  # start rate; 0 = unpaced (as fast as the loop goes)
    message_bytes: int = 65536
    messages: int | None = 1  # None: keep sending until the sender's duration ends
    sport: int | None = None  # default 49152 + qpn mod 16384
    dst_mac: str | None = None  # default: from the neighbour table
    verb: str = "write"
    tag: bool = False  # add the DLB reorder tag (flow id = qpn mod 65536, seq from 0)
    int_hops: int = 0  # > 0: ask the switches for in-band telemetry, up to this many records
    # packets leave from this many UDP source ports (the entropies ECMP hashes; traffic.entropy),
    # chosen per packet by `spray`: "oblivious" (in turn) or "reps" (recycle the clean ones)
    entropies: int = 1
    spray: str = "oblivious"

    def problems(self) -> list[str]:
        out = []
        name = f"QP {self.qpn}"
        if not 0 < self.qpn < 1 << 24:
            out.append(f"{name}: QPN must be 1..16777215")
        if self.rate_bps < 0:
            out.append(f"{name}: rate must be > 0 b/s (0 = unpaced), got {self.rate_bps}")
        if self.message_bytes < STAMP_LEN:
            out.append(f"{name}: message size must be >= {STAMP_LEN} bytes (the first packet "
                       f"carries the send time), got {self.message_bytes}")
        if self.messages is not None and self.messages <= 0:
            out.append(f"{name}: message count must be > 0, got {self.messages}")
        if self.sport is not None and not 0 < self.sport < 65536:
            out.append(f"{name}: UDP source port must be 1..65535, got {self.sport}")
        if not 0 <= self.int_hops <= MAX_INT_HOPS:
            out.append(f"{name}: INT records must be 0..{MAX_INT_HOPS}, got {self.int_hops}")
        if not 1 <= self.entropies <= MAX_ENTROPIES:
            out.append(f"{name}: entropies must be 1..{MAX_ENTROPIES}, got {self.entropies}")
        if self.spray not in SPRAY_POLICIES:
            out.append(f"{name}: spray must be one of {', '.join(SPRAY_POLICIES)}, "
                       f"got {self.spray!r}")
        if self.verb not in VERBS:
            out.append(f"{name}: verb must be one of {sorted(VERBS)}, got {self.verb!r}")
        try:
            netutil.validate_ipv4(self.dst_ip, "destination")
        except netutil.NetError as e:
            out.append(f"{name}: {e}")
        return out


@dataclass
class SenderConfig:
    iface: str
    qps: list[QueuePairConfig]
    mtu_payload: int = 1024  # RDMA payload bytes per packet (the path MTU)
    dscp: int = 26
    ecn_capable: bool = True  # ECT(0) on data
    priority: int = 3  # PFC priority of the data
    link_bps: float = 100e6  # for PFC pause timing
    # congestion control: "dcqcn" (cut on CNPs), "hpcc" (window and rate from the INT the ACKs
    # echo; asks for INT and an ACK per packet unless int_hops / ack_every say otherwise) or
    # "none"; None: `dcqcn` decides (True: "dcqcn", False: "none"), as before `cc` existed
    cc: str | None = None
    dcqcn: bool = True
    dcqcn_params: DcqcnParams | None = None  # default: DcqcnParams.scaled(QP start rate)
    hpcc_params: HpccParams | None = None  # default: HpccParams.scaled(QP start rate, hpcc_rtt_s)
    hpcc_rtt_s: float = 0.005  # HPCC's base RTT T when hpcc_params is not given
    duration_s: float | None = None
    src_ip: str | None = None  # default: the interface's address
    src_mac: str | None = None
    progress_s: float = 0.0  # > 0: call on_progress every so often
    ack_wait_s: float = 0.2  # at the end, wait this long at most for outstanding ACKs
    start_at: float | None = None  # epoch seconds: hold the first packet until then
    # A QP that fell behind its schedule (the process was descheduled, the loop was slow) may
    # catch up this much time at once; pauses and rate cuts never build up credit.
    max_burst_s: float = 0.005
    go_back_n: bool = True  # RC reliability: ACKs, NAKs, retransmission (traffic.gbn)
    # with go_back_n: resend only the PSNs the receiver NAKs, and una on a timeout
    # (traffic.selective); the receiver must NAK selectively too (ReceiverConfig.selective)
    selective: bool = False
    # ask for an ACK every this many packets (and at each message's end); None: 16, or 1 with
    # HPCC (it reacts to every ACK's telemetry)
    ack_every: int | None = None
    rto_s: float = 0.5  # retransmission timeout (doubles per consecutive expiry)
    max_retries: int = 7  # consecutive timeouts before the QP gives up
    pattern: bool = False  # payloads carry traffic.payload's pattern (receivers can check it)
    # flip one payload byte of every Nth packet before its ICRC is computed: data wrong at the
    # source, which the network cannot notice (tests of the receivers' payload check)
    corrupt_every: int = 0

    @property
    def congestion_control(self) -> str:
        """The algorithm in force: `cc`, or what the older `dcqcn` flag says."""
        if self.cc is not None:
            return self.cc
        return "dcqcn" if self.dcqcn else "none"

    @property
    def ack_interval(self) -> int:
        """Packets per ACK request."""
        if self.ack_every is not None:
            return self.ack_every
        return 1 if self.congestion_control == "hpcc" else 16

    def problems(self) -> list[str]:
        out = [p for qp in self.qps for p in qp.problems()]
        if self.cc is not None and self.cc not in CC_ALGORITHMS:
            out.append(f"congestion control must be one of {', '.join(CC_ALGORITHMS)}, "
                       f"got {self.cc!r}")
        if self.congestion_control == "hpcc":
            if not self.go_back_n:
                out.append("HPCC needs ACKs: it cannot run without go-back-N")
            if self.hpcc_params is not None:
                out += self.hpcc_params.problems()
            elif self.hpcc_rtt_s <= 0:
                out.append(f"HPCC base RTT must be > 0 s, got {self.hpcc_rtt_s}")
            if any(qp.rate_bps <= 0 for qp in self.qps):
                out.append("HPCC paces at W/T up to the QP's rate: unpaced QPs (rate 0) cannot "
                           "use it")
        if self.selective and not self.go_back_n:
            out.append("selective retransmission needs ACKs and NAKs: not without go-back-N")
        if self.ack_interval <= 0:
            out.append(f"ACK interval must be > 0 packets, got {self.ack_interval}")
        if self.rto_s <= 0:
            out.append(f"retransmission timeout must be > 0 s, got {self.rto_s}")
        if self.corrupt_every < 0:
            out.append(f"corrupt_every must be >= 0 packets, got {self.corrupt_every}")
        if self.max_retries < 0:
            out.append(f"retry count must be >= 0, got {self.max_retries}")
        if not self.qps:
            out.append("no queue pairs to send")
        keys = [(qp.dst_ip, qp.qpn) for qp in self.qps]
        if len(set(keys)) != len(keys):
            out.append("two queue pairs share a (destination, QPN)")
        if self.mtu_payload < STAMP_LEN:
            out.append(f"payload per packet must be >= {STAMP_LEN} bytes")
        if not 0 <= self.dscp < 64:
            out.append(f"DSCP must be 0..63, got {self.dscp}")
        if not 0 <= self.priority < 8:
            out.append(f"priority must be 0..7, got {self.priority}")
        if self.link_bps <= 0:
            out.append(f"link rate must be > 0 b/s, got {self.link_bps}")
        if self.duration_s is not None and self.duration_s <= 0:
            out.append(f"duration must be > 0 s, got {self.duration_s}")
        if self.duration_s is None and any(qp.messages is None for qp in self.qps):
            out.append("a QP without a message count needs a duration")
        return out
