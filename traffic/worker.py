"""A sender/receiver process driven by JSON lines, so a controller can run many flows in a host.

    python -m traffic worker        (what `traffic.agent.Agent` starts)
stdin, one request per line:
    {"op": "send", "config": {SenderConfig fields, "qps": [QueuePairConfig fields...]}}
    {"op": "recv", "config": {ReceiverConfig fields, "expect": [ExpectedFlow fields...]}}
    {"op": "quit"}
stdout, one event per line: {"event": "ready"} once at start and again when a receiver's socket
is open, {"event": "result", "result": {...}}, or {"event": "error", "message": "..."}.
A request runs to completion before the next is read; SIGTERM ends the current run early.
"""

from __future__ import annotations

import json
import sys
from dataclasses import fields
from typing import Any, TextIO

from traffic.dcqcn import DcqcnParams
from traffic.hpcc import HpccParams
from traffic.receiver import ExpectedFlow, ReceiverConfig, run_receiver
from traffic.sender import QueuePairConfig, SenderConfig, run_sender


def _known(cls: type, d: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(d) - names)
    if unknown:
        raise ValueError(f"unknown {cls.__name__} fields: {', '.join(unknown)}")
    return dict(d)


def sender_config(d: dict[str, Any]) -> SenderConfig:
    d = _known(SenderConfig, d)
    d["qps"] = [QueuePairConfig(**_known(QueuePairConfig, q)) for q in d.get("qps", [])]
    if d.get("dcqcn_params"):
        d["dcqcn_params"] = DcqcnParams(**_known(DcqcnParams, d["dcqcn_params"]))
    if d.get("hpcc_params"):
        d["hpcc_params"] = HpccParams(**_known(HpccParams, d["hpcc_params"]))
    return SenderConfig(**d)


def receiver_config(d: dict[str, Any]) -> ReceiverConfig:
    d = _known(ReceiverConfig, d)
    d["expect"] = [ExpectedFlow(**_known(ExpectedFlow, e)) for e in d.get("expect", [])]
    return ReceiverConfig(**d)


def _emit(out: TextIO, event: str, **data: Any) -> None:
    out.write(json.dumps({"event": event, **data}) + "\n")
    out.flush()


def handle(request: dict[str, Any], out: TextIO) -> bool:
    """Run one request; False when asked to quit."""
    op = request.get("op")
    if op == "quit":
        return False
    if op == "send":
        sent = run_sender(sender_config(request.get("config", {})))
        _emit(out, "result", result=sent.to_dict())
    elif op == "recv":
        cfg = receiver_config(request.get("config", {}))
        result, rx = run_receiver(cfg, ready=lambda: _emit(out, "ready"))
        data = result.to_dict()
        if cfg.record_delivery:
            for q in data["qps"]:
                q["delivered_seqs"] = rx.delivered(q["src_ip"], q["qpn"])
        _emit(out, "result", result=data)
    else:
        raise ValueError(f"unknown op {op!r} (send, recv, quit)")
    return True


def main(stdin: TextIO = sys.stdin, stdout: TextIO = sys.stdout) -> int:
    _emit(stdout, "ready")
    for line in stdin:
        if not line.strip():
            continue
        try:
            if not handle(json.loads(line), stdout):
                break
        except Exception as e:  # reported to the controller, which decides
            _emit(stdout, "error", message=f"{type(e).__name__}: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
