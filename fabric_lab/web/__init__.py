"""The web view of a running fabric: `fabric-lab up FABRIC --web`, `fabric-lab demo --web`.

A page on 127.0.0.1 with the fabric drawing (link state and utilisation, queue depths, ECN marks
and PFC pauses per port), per-flow throughput charts, the controller's events as they happen,
and buttons that fail, restore or silently degrade a link and switch the load-balancing mode; with
`fabric-lab train --web`, the job's panel. It serves only requests with the token of the URL it
prints when it starts (as Jupyter does; `server`). `layout` (the drawing as data), `monitor`
(sampling), `actions` (the buttons), `server` (HTTP), `demo` (the demo's flows and state),
`job` (the training job's panel), `inband` (the INT panel: a flow's hops, `diagnose`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from controller.fabric import FabricController
from fabric_lab.web.actions import ActionError, Actions
from fabric_lab.web.inband import IntPanel
from fabric_lab.web.job import JobView
from fabric_lab.web.layout import fabric_json
from fabric_lab.web.monitor import FabricMonitor, Sources
from fabric_lab.web.server import HOST, WebServer, WebViewError
from targets import Target
from topos.model import FabricSpec

__all__ = ["ActionError", "Actions", "FabricMonitor", "IntPanel", "JobView", "Sources", "WebServer",
           "WebViewError", "demo_attach", "fabric_json", "serve", "train_view", "up_view"]


def serve(spec: FabricSpec, ctl: FabricController | None, *, target: Target | str,
          sources: Sources, port: int = 0, host: str = HOST, lb=None,
          inband: IntPanel | None = None) -> WebServer:
    """A started web view of `spec` (stop() it) on `host`:`port`; `lb(mode, gap)`: the CLI's
    mode switch; `inband`: the INT panel (its state goes into the snapshot)."""
    actions = Actions(spec, ctl, target, lb_handler=lb, inband=inband)
    if inband is not None:
        sources.inband = inband.state
    if sources.mode is None:
        sources.mode = actions.mode
    monitor = FabricMonitor(spec, ctl, target=target, sources=sources,
                            degraded=lambda: dict(actions.degraded))
    return WebServer(monitor, actions, fabric_json(spec), port=port, host=host).start()


@contextlib.contextmanager
def up_view(spec: FabricSpec, ctl: FabricController, rc, prober, *, port: int,
            host: str = HOST, lb=None, out=None) -> Iterator[WebServer]:
    """The web view while `fabric-lab up` holds the Mininet CLI."""
    sources = Sources(events=lambda: list(rc.events), isolated=lambda: set(prober.isolated),
                      status=lambda: "fabric up; the controller reroutes around failed links")
    server = serve(spec, ctl, target=ctl.pipeline.target, sources=sources, port=port, host=host,
                   lb=lb, inband=IntPanel(spec, ctl.pipeline.target))
    print(server.announcement(), file=out, flush=True)
    try:
        yield server
    finally:
        server.stop()


@contextlib.contextmanager
def train_view(spec: FabricSpec, ctl: FabricController, view: JobView, *, target: Target | str,
               port: int, host: str = HOST, out=None) -> Iterator[WebServer]:
    """The web view while `fabric-lab train --web` runs a job; `view` gets the job's events."""
    def status() -> str:
        job = view.state()
        if job is None:
            return "starting the job"
        return f"job {job['name']}: {job['status']}, iteration {job['iteration'] + 1} of " \
               f"{job['iterations']}"

    server = serve(spec, ctl, target=target, sources=Sources(status=status, job=view.state),
                   port=port, host=host)
    print(server.announcement(), file=out, flush=True)
    try:
        yield server
    finally:
        server.stop()


def demo_attach(port: int, target: str, host: str = HOST):
    """`run_demo(attach=...)`: the web view while the demo runs."""
    from fabric_lab.web.demo import attach

    return attach(port, target, host)
