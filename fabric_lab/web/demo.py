"""The web view during `fabric-lab demo --web`: the demo's flows for the charts, its phase for
the status line, its controller events across pauses; the INT panel (a flow's hops, `diagnose`
during a stage) probes from the demo's hosts."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

from fabric_lab.web import IntPanel, serve
from fabric_lab.web.monitor import Sources
from fabric_lab.web.server import WebServer

CHART_BINS = 5  # one chart point = 50 ms of the demo's 10 ms bins
CHART_POINTS = 200  # 10 s


def flow_series(run, nominal_mbps: float, now: float | None = None) -> dict:
    """The demo's flows as Mb/s per 50 ms over the last 10 s, and per point whether the flow
    lost packets in it (from the receivers' sequence numbers), for the charts."""
    now = time.time() if now is None else now
    last = int((now - run.t0) / run.bin_s) - 2  # the receivers report every 0.1 s
    ends = [e for e in (last - k * CHART_BINS for k in range(CHART_POINTS - 1, -1, -1))
            if e >= CHART_BINS]
    with run.lock:  # only the bins shown: a long run holds many
        series = {f.name: [sum(run.bins.get(f.name, {}).get(i, 0) for i in range(e - CHART_BINS, e))
                           for e in ends] for f in run.flows}
        oldest = run.t0 + (ends[0] - CHART_BINS) * run.bin_s if ends else now
        gaps = {name: [g for g in found if len(g) > 2 and g[2] and g[1] >= oldest]
                for name, found in run.lossy_gaps.items()}
    scale = 8 / (CHART_BINS * run.bin_s) / 1e6

    def lossy(name: str, end: int) -> int:
        t_end, t_start = run.t0 + end * run.bin_s, run.t0 + (end - CHART_BINS) * run.bin_s
        return int(any(g[0] < t_end and g[1] > t_start for g in gaps.get(name, [])))

    return {"t": [round(run.t0 + e * run.bin_s - now, 3) for e in ends],
            "what": "per flow, 50 ms means; red: packets lost", "nominal": nominal_mbps,
            "series": {name: [round(n * scale, 3) for n in values] for name, values in series.items()},
            "lost": {f.name: [lossy(f.name, e) for e in ends] for f in run.flows}}


def attach(port: int, target: str, host: str):
    """`run_demo(attach=...)`: the web view while the demo runs."""

    @contextlib.contextmanager
    def view(lab, state, events) -> Iterator[WebServer]:
        def isolated() -> set[str]:
            return set(lab.prober.isolated) if lab.prober else set()  # none while paused

        sources = Sources(events=events, isolated=isolated, status=state.text,
                          flows=lambda: (flow_series(state.run, state.nominal_mbps)
                                         if state.run else None))
        hosts = {nic.name: lab.session.host(nic.name) for nic in lab.spec.host_nics()}
        server = serve(lab.spec, lab.ctl, target=target, sources=sources, port=port, host=host,
                       inband=IntPanel(lab.spec, target, lambda: hosts))
        lines = server.announcement().splitlines()
        state.notes.extend(lines)
        print("\n".join(lines), flush=True)
        try:
            yield server
        finally:
            server.stop()

    return view
