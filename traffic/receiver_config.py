"""Configuration of a RoCEv2 receiver (`traffic.receiver`) and the flows it expects."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class ExpectedFlow:
    src_ip: str
    qpn: int
    bytes: int


@dataclass
class ReceiverConfig:
    iface: str  # one interface, or several separated by commas (a multi-port NIC)
    duration_s: float | None = None  # stop after this long
    idle_timeout_s: float | None = 2.0  # stop this long after the last data packet
    expect: list[ExpectedFlow] = field(default_factory=list)  # stop once all are delivered
    bin_s: float = 0.010
    cnp: bool = True
    cnp_interval_s: float = 0.050  # min gap between CNPs of one QP (scaled from 50 us)
    cnp_dscp: int = 48  # CNPs on a high priority (6)
    cnp_on_out_of_order: bool = False  # also answer a PSN gap in an untagged flow with a CNP
    ack: bool = True
    reorder_capacity: int = 4096
    reorder_timeout_s: float = 0.100
    verify_icrc: bool = True
    record_delivery: bool = False  # keep each QP's released sequence numbers (tests)
    go_back_n: bool = True  # RC reliability: NAK sequence errors, cumulative ACKs (traffic.gbn)
    # with go_back_n: place packets out of order and NAK each lost PSN (traffic.selective);
    # the senders must resend selectively too (SenderConfig.selective)
    selective: bool = False
    check_payload: bool = False  # compare payloads with traffic.payload's pattern, count wrong

    def problems(self) -> list[str]:
        out = []
        if not any(i.strip() for i in self.iface.split(",")):
            out.append("no interface to receive on")
        if self.duration_s is not None and self.duration_s <= 0:
            out.append(f"duration must be > 0 s, got {self.duration_s}")
        if self.idle_timeout_s is not None and self.idle_timeout_s <= 0:
            out.append(f"idle timeout must be > 0 s, got {self.idle_timeout_s}")
        if self.bin_s <= 0:
            out.append(f"bin width must be > 0 s, got {self.bin_s}")
        if self.cnp_interval_s < 0:
            out.append(f"CNP interval must be >= 0 s, got {self.cnp_interval_s}")
        if self.duration_s is None and self.idle_timeout_s is None and not self.expect:
            out.append("nothing ends the run: give a duration, an idle timeout or expected flows")
        for e in self.expect:
            if e.bytes <= 0:
                out.append(f"expected bytes from {e.src_ip} QPN {e.qpn} must be > 0")
        return out
