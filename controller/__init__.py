"""The fabric's control plane: routes from the fabric model, programmed over P4Runtime.

- `routes`: shortest-path ECMP next-hop sets per switch and NIC, shared groups (networkx-free BFS);
- `pipeline`: P4Info + device config for a target (p4switch compiler or p4c-bm2-ss);
- `schema`: id lookups by name in a P4Info, canonical value encoding;
- `p4rt`: a small P4Runtime client (arbitration, pipeline, write, read, counters, packet I/O);
- `intent` / `state` / `sync`: the state a switch should hold, the difference to what it holds,
  and the writes that close it (idempotent re-runs write nothing);
- `fabric`: `FabricController`, every switch in parallel, link events, port counters;
- `linkwatch`: link events from interface state; `queues`: queue settings via the runtime CLI;
- `knobs`: a mechanism's knobs (`mechanisms.Knob`) as P4Runtime entries, written as differences;
  `congestion` (ECN, PFC) and `lb` (flowlet gap, tagging, queue awareness) use it;
- `checks`: pingall and UDP probes run from the hosts;
- `diagnose/`: `fabric-lab diagnose`, the link that drops, slows or pauses, from INT probes and
  port counters.
"""
