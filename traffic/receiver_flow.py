"""Receive state of one queue pair: PSN tracking, reorder buffer, go-back-N responder, message
assembly and the templates of its replies. `traffic.receiver` drives it frame by frame."""

from __future__ import annotations

from traffic.frames import Endpoints, FrameTemplate
from traffic.gbn import Responder
from traffic.headers import ENDS_MESSAGE, STARTS_MESSAGE
from traffic.receiver_config import ReceiverConfig
from traffic.reorder import ReorderBuffer
from traffic.results import Bin, MessageResult, QPRecvResult
from traffic.selective import SelectiveResponder

MISSING_TRACK_LIMIT = 1 << 16  # PSNs tracked per jump; beyond, counted as lost directly

Delivery = tuple[int, int, int, int]  # unwrapped PSN, opcode, payload bytes, send stamp (ns)


class FlowState:
    __slots__ = ("bin", "bin_index", "buffer", "delivered_bytes", "delivered_seqs", "ep", "gbn", "highest", "key",
                 "last_cnp", "last_released_psn", "missing", "msg", "msg_stamp", "replies", "res",
                 "untracked", "want")

    def __init__(self, key: tuple[bytes, int], res: QPRecvResult, cfg: ReceiverConfig,
                 want: int | None) -> None:
        self.key = key  # (source IPv4 as bytes, QPN)
        self.want = want  # payload bytes expected, if any
        self.res = res
        self.highest = -1  # highest PSN seen (unwrapped); senders start at PSN 0
        self.missing: set[int] = set()
        self.untracked = 0
        # With go-back-N a hole is resent, never given up on: the buffer waits (the responder
        # NAKs it after the reorder timeout) and a full buffer refuses packets instead.
        responder = SelectiveResponder if cfg.selective else Responder
        self.gbn = responder(cfg.reorder_timeout_s) if cfg.go_back_n else None
        timeout = 1e9 if cfg.go_back_n else cfg.reorder_timeout_s
        self.buffer = ReorderBuffer(0, cfg.reorder_capacity, timeout)
        self.last_cnp = -float("inf")
        self.replies: dict[tuple[int, int], FrameTemplate] = {}  # (opcode, syndrome) ->
        self.ep: Endpoints | None = None  # addressing of replies, from the first data frame
        self.msg: MessageResult | None = None  # message being assembled from the in-order stream
        self.msg_stamp = 0  # its send time (ns since the epoch)
        self.delivered_bytes = 0
        self.last_released_psn = -1
        self.delivered_seqs: list[int] | None = [] if cfg.record_delivery else None
        self.bin_index = -1  # the time bin last counted in, and its record
        self.bin = Bin()

    def track_psn(self, binr: Bin, ext: int) -> int:
        """PSN bookkeeping: a jump ahead records the skipped PSNs as missing, an arrival below
        the highest fills one (out of order). The gap before the packet, or -1 for a duplicate."""
        gap = 0
        if ext > self.highest:
            gap = ext - self.highest - 1
            if gap:
                if gap > MISSING_TRACK_LIMIT:
                    self.untracked += gap - MISSING_TRACK_LIMIT
                    self.missing.update(range(ext - MISSING_TRACK_LIMIT, ext))
                else:
                    self.missing.update(range(self.highest + 1, ext))
            self.highest = ext
        elif ext in self.missing:
            self.missing.discard(ext)
            res = self.res
            dist = self.highest - ext
            res.out_of_order += 1
            binr.out_of_order += 1
            res.reorder_distance_sum += dist
            if dist > res.reorder_distance_max:
                res.reorder_distance_max = dist
        else:
            return -1
        return gap

    def assemble(self, items: list[Delivery], now: float) -> bool:
        """Assemble messages from packets the reorder buffer released in order; True once the
        payload bytes expected of the flow, if any, have all been delivered."""
        res = self.res
        for ext, opcode, payload, stamp in items:
            if self.delivered_seqs is not None:
                self.delivered_seqs.append(ext)
            contiguous = ext == self.last_released_psn + 1
            self.last_released_psn = ext
            self.delivered_bytes += payload
            res.delivered += 1
            msg = self.msg
            if opcode in STARTS_MESSAGE:
                msg = self.msg = MessageResult(psn=ext & 0xFFFFFF, bytes=0, fct_s=None,
                                               complete=True)
                self.msg_stamp = stamp
            elif msg is None:  # the message's first packet was lost
                msg = self.msg = MessageResult(psn=ext & 0xFFFFFF, bytes=0, fct_s=None,
                                               complete=False)
            elif not contiguous:
                msg.complete = False
            msg.bytes += payload
            if opcode in ENDS_MESSAGE:
                if msg.complete and self.msg_stamp:
                    msg.fct_s = round(now - self.msg_stamp / 1e9, 9)
                res.messages.append(msg)
                self.msg = None
        return self.want is not None and self.delivered_bytes >= self.want
