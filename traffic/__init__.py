"""RoCEv2 traffic for the lab: framing, senders and receivers (collectives: `jobs.ccl`).

Python API (the tool, `python -m traffic` / `fabric-lab traffic`, is `traffic.command`):
- `traffic.headers`: scapy layers RETH and ReorderTag (the DLB tag), bound into scapy.
- `traffic.frames`: `build_frame`, ICRC (`compute_icrc`, `icrc_ok`), `FrameTemplate`, tag add/strip.
- `traffic.sender`: `SenderConfig` + `QueuePairConfig` -> `run_sender()` -> `SendResult`.
- `traffic.receiver`: `ReceiverConfig` -> `run_receiver()` -> `RecvResult` (CSV/JSON writers in
  `traffic.results`).
- `traffic.dcqcn`, `traffic.hpcc`, `traffic.pfc`, `traffic.reorder`: the rate and window
  control, pause and reorder logic; `traffic.echo`: the INT echo in ACKs (HPCC).
- `traffic.hosts` (where processes run: netns, Mininet, pid), `traffic.agent`/`traffic.worker`
  (drive senders/receivers inside hosts), `traffic.paced` (paced flows through the host's UDP
  stack) and `traffic.paced_recv` (their per-packet arrival records), `traffic.netns` (standalone testbeds),
  `traffic.impair` (deterministic loss/reorder/ECN/corruption relay).
"""
