"""Finding the bad link of a running fabric from INT and port counters alone (`fabric-lab
diagnose`, the web view's INT panel).

- `agent`: the probe process run in each host's namespace (standard library only, so it starts
  at once): sends the INT-asking probe frames it is given, returns what of them it received;
- `probes`: the probe plan (who sends what to whom, over which UDP source ports), the frames,
  running the agents and decoding the INT records of what arrived;
- `counters`: the switches' port counters (packets in and out, PFC frames received) and
  queue pause state over the runtime CLI, before and after the probes;
- `findings`: the rules: which link drops, which egress serves below its link rate, which queue
  is paused; thresholds and why; one `Finding` each, ranked;
- `run`: `diagnose(spec, hosts, target)`, the whole measurement, and `Diagnosis` (table, JSON);
- `hosts`: the running fabric's hosts (from its run-state file) as `traffic.hosts.PidHost`.

Nothing is imported here: `python -m controller.diagnose.agent` must not load scapy.
"""
