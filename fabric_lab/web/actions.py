"""What the page's buttons do: exactly the Mininet CLI's commands and `fabric-lab lb`.

- `fail` / `restore`: `link_fail` / `link_restore` (the link's switch-side interface down / up);
- `degrade`: `link_drop` (a silent drop of PERCENT of the frames; 0 stops it);
- `lb`: the CLI's `lb MODE` when the caller hands over its handler (`fabric-lab up`), else what
  `fabric-lab lb --mode MODE` does (the mode's program on every switch, routes, knobs);
- `int` / `diagnose`: the INT panel's trace of one flow and `fabric-lab diagnose`
  (`fabric_lab.web.inband`), when the view has the panel.
The controller's own loops see the results as they would after the CLI commands.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from controller.fabric import FabricController, ProgrammingError
from controller.lb import MODES, LbError, LoadBalancing
from controller.p4rt import P4RuntimeError
from controller.pipeline import PipelineError
from fabric_lab.web.inband import IntPanel
from targets import Target
from topos.errors import FabricLabError
from topos.mininet.failures import LinkError, find_link, link_name, set_link, set_silent_drop
from topos.model import FabricSpec


class ActionError(FabricLabError, ValueError):
    """A request the fabric cannot carry out; the message says why."""


@dataclass
class Actions:
    spec: FabricSpec
    ctl: FabricController | None
    target: Target | str = "p4switch"
    lb_handler: Callable[[str | None, int | None], list[str]] | None = None
    degraded: dict[str, float] = field(default_factory=dict)  # link -> percent dropped
    inband: IntPanel | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def mode(self) -> str:
        return LoadBalancing(self.ctl).mode if self.ctl is not None else ""

    def run(self, request: dict) -> str:
        """Carry out one request of the page; returns what was done (as the CLI says it)."""
        action = request.get("action")
        if action in ("int", "diagnose"):  # measures, changes nothing: not under the lock
            if self.inband is None:
                raise ActionError("this view has no INT panel")
            try:
                return self.inband.run(request)
            except FabricLabError as err:
                raise ActionError(str(err)) from None
        with self._lock:  # one change of the fabric at a time
            if action == "lb":
                return self._lb(str(request.get("mode", "")))
            if action not in ("fail", "restore", "degrade"):
                raise ActionError(f"unknown action {action!r}; want fail, restore, degrade or lb")
            try:
                link = find_link(self.spec, str(request.get("link", "")))
            except LinkError as err:
                raise ActionError(str(err)) from None
            if not (self.spec.is_switch(link.a.node) or self.spec.is_switch(link.b.node)):
                raise ActionError(f"{link_name(link)} has no switch end")
            name = link_name(link)
            try:
                if action == "degrade":
                    percent = _percent(request.get("percent"))
                    set_silent_drop(self.spec, link, percent / 100)
                    if percent:
                        self.degraded[name] = percent
                        return f"{name} drops {percent:g}% silently"
                    self.degraded.pop(name, None)
                    return f"{name} drops nothing"
                set_link(self.spec, link, action == "restore")
            except LinkError as err:
                raise ActionError(str(err)) from None
            return f"{name} {'up' if action == 'restore' else 'down'}"

    def _lb(self, mode: str) -> str:
        if mode not in MODES:
            raise ActionError(f"unknown load-balancing mode {mode!r}; choose from {', '.join(MODES)}")
        if self.ctl is None:
            raise ActionError("no controller: the load-balancing mode cannot change")
        try:
            if self.lb_handler is not None:
                return "; ".join(self.lb_handler(mode, None))
            LoadBalancing(self.ctl).switch_mode(mode, target=self.target)
        except (LbError, PipelineError, ProgrammingError, P4RuntimeError) as err:
            raise ActionError(f"switching to {mode}: {err}") from None
        return f"{mode}.p4 on {len(self.ctl.clients)} switches"


def _percent(value: object) -> float:
    try:
        percent = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ActionError(f"degrade: percent {value!r} is not a number") from None
    if not 0 <= percent <= 100:
        raise ActionError(f"degrade: percent must be within 0..100, not {percent:g}")
    return percent
