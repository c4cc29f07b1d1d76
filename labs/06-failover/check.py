"""Checks of lab 6 (failover): the student's route computation on the lab's fabrics with links
and switches failed, against the properties the controller's reroutes must have."""

from __future__ import annotations

import copy
import os
import sys

from controller.routes import compute_routes
from fabric_lab.labkit import Step, StepFailed, Work
from topos import build_fabric
from topos.model import FabricSpec

TITLE = "Failover: routes around failed links"
MINUTES = 45
PREREQS = "lab 1; shortest paths, ECMP groups (docs/mechanisms/failover.md)"
FILE = "failover_lab.py"
FORBIDDEN_IMPORTS = {
    "controller.fabric": "the lab's controller already holds this computation "
                         "(FabricController.routes); write it from controller.routes.compute_routes",
    "controller.reconverge": "write the route computation from controller.routes.compute_routes",
    "importlib": "import modules with import statements",
}


def _down_link(spec: FabricSpec, a: str, b: str) -> set[tuple[str, int]]:
    link = next(ln for ln in spec.links if {ln.a.node, ln.b.node} == {a, b})
    return {(link.a.node, link.a.port), (link.b.node, link.b.port)}


def _down_switch(spec: FabricSpec, switch: str) -> set[tuple[str, int]]:
    return {end for ln in spec.links_of(switch)
            for end in ((ln.a.node, ln.a.port), (ln.b.node, ln.b.port))}


def _plan(work: Work, spec: FabricSpec, down: set[tuple[str, int]]) -> dict:
    before = [(ln.a.node, ln.b.node) for ln in spec.links]
    plan = work.function("routes_after")(spec, set(down))
    if [(ln.a.node, ln.b.node) for ln in spec.links] != before:
        raise StepFailed("routes_after() changed the fabric it was given; work on a copy")
    if not isinstance(plan, dict) or set(plan) != {sw.name for sw in spec.switches}:
        raise StepFailed("routes_after() must return a SwitchRoutes for every switch, by name")
    return plan


def _ports_used(routes) -> set[int]:
    return {hop.port for hops in routes.routes.values() for hop in hops}


def loads(work: Work) -> str:
    work.function("routes_after")
    work.function("live_fabric")
    return "routes_after() and live_fabric() found (the controller's own not imported)"


def unchanged_without_failures(work: Work) -> str:
    spec = build_fabric("leafspine")
    plan, want = _plan(work, spec, set()), compute_routes(spec)
    for name, routes in want.items():
        if plan[name].routes != routes.routes:
            raise StepFailed(f"no link down, yet {name}'s routes differ from compute_routes()")
    return f"{len(want)} switches as the controller routes them"


def avoids_failed_link(work: Work) -> str:
    spec = build_fabric("leafspine")
    down = _down_link(spec, "leaf0", "spine0")
    plan = _plan(work, spec, down)
    for switch, port in down:
        if port in _ports_used(plan[switch]):
            raise StepFailed(f"leaf0~spine0 is down, but {switch} still routes out of port "
                             f"{port} (towards the failed link): those packets are lost")
    for name, routes in plan.items():
        for nic in spec.host_nics():
            hops = routes.routes.get(f"{nic.ip}/32")
            if not hops:
                raise StepFailed(f"{name} has no route to {nic.name} ({nic.ip}) although the "
                                 f"fabric still connects them")
    leaf0 = {hop.neighbour for hops in plan["leaf0"].routes.values() for hop in hops
             if spec.is_switch(hop.neighbour)}
    return f"leaf0 now reaches the fabric through {', '.join(sorted(leaf0))}"


def cut_off_switch_keeps_routes(work: Work) -> str:
    spec = build_fabric("leafspine")
    down = _down_switch(spec, "leaf1")
    plan, whole = _plan(work, spec, down), compute_routes(spec)
    if plan["leaf1"].routes != whole["leaf1"].routes:
        held = len(plan["leaf1"].routes)
        raise StepFailed(f"leaf1 lost every link and now holds {held} routes instead of its "
                         f"{len(whole['leaf1'].routes)}: when its links come back it drops its "
                         f"hosts' traffic until the controller reroutes")
    for name in ("spine0", "spine1"):
        leaf1_port = next(ln.end(name).port for ln in spec.links_of(name)
                          if "leaf1" in (ln.a.node, ln.b.node))
        if leaf1_port in _ports_used(plan[name]):
            raise StepFailed(f"{name} still routes towards the dark leaf1")
    return "leaf1 keeps its routes; the spines route around it"


def _reference(spec: FabricSpec, down: set[tuple[str, int]]) -> dict:
    live = copy.copy(spec)
    live.links = [ln for ln in spec.links if (ln.a.node, ln.a.port) not in down
                  and (ln.b.node, ln.b.port) not in down]
    return compute_routes(live)


def dual_tor_survives(work: Work) -> str:
    spec = build_fabric("hpn7")
    tor = next(sw.name for sw in spec.switches if sw.tier == 1)
    down = _down_switch(spec, tor)
    plan, want = _plan(work, spec, down), _reference(spec, down)
    homed = sorted({nic.name for nic in spec.host_nics() for ln in spec.links_of(nic.name)
                    if tor in (ln.a.node, ln.b.node)})
    kept = 0
    for name, routes in want.items():
        if name == tor:
            continue
        for nic in homed:
            prefix = f"{spec.nic(nic).ip}/32"
            if routes.routes.get(prefix) and not plan[name].routes.get(prefix):
                raise StepFailed(f"HPN: {tor} failed, and {name} has no route to {nic}, which "
                                 f"is dual-homed and still reachable through its other ToR")
            if plan[name].routes.get(prefix) and not routes.routes.get(prefix):
                raise StepFailed(f"HPN: {name} routes to {nic}, which it cannot reach with "
                                 f"{tor} dark (its plane has no other way to that NIC)")
            kept += bool(routes.routes.get(prefix))
    return (f"{tor} dark: its {len(homed)} dual-homed NICs stay reachable through the other "
            f"plane ({kept} switch-NIC routes kept)")


def hidden_failures(work: Work) -> str:
    """Hidden cases: links and whole switches failed at random (drawn per run) on fabrics at
    scales the handout does not list; every switch must hold what the controller would write."""
    rng = work.rng("failover")
    shown = 0
    for fabric, params in (("leafspine", {"leaves": rng.randint(2, 5),
                                          "spines": rng.randint(2, 4)}),
                           ("hpn7", {}), ("aipod", {"rails": rng.randint(1, 3)})):
        spec = build_fabric(fabric, **params)
        for _ in range(3):
            down: set[tuple[str, int]] = set()
            inner = [ln for ln in spec.links if spec.is_switch(ln.a.node)
                     and spec.is_switch(ln.b.node)]
            for link in rng.sample(inner, k=rng.randint(1, 3)):
                down |= {(link.a.node, link.a.port), (link.b.node, link.b.port)}
            if rng.random() < 0.5:
                down |= _down_switch(spec, rng.choice(spec.switches).name)
            plan, want = _plan(work, spec, down), _reference(spec, down)
            whole = compute_routes(spec)
            live = {name for name in want if any(
                (ln.a.node, ln.a.port) not in down and (ln.b.node, ln.b.port) not in down
                for ln in spec.links_of(name))}
            for name in want:
                expected = want[name] if name in live else whole[name]
                if plan[name].routes != expected.routes:
                    ends = ", ".join(f"{n}:{p}" for n, p in sorted(down))
                    raise StepFailed(f"hidden case: {fabric} {params} with ports down {ends}: "
                                     f"{name}'s routes differ from what the controller writes"
                                     + ("" if name in live else " (it has no link up: it keeps "
                                        "its whole-fabric routes)"))
            shown += 1
    return f"{shown} hidden failure sets on leafspine, hpn7 and aipod: every switch right"


def _receiver_losses(lines: list[str]) -> tuple[int, int, list[str]]:
    """(QPs reported, QPs complete without loss, the receiver's lines) from `traffic`."""
    got = [line for line in lines if "received: QP " in line]
    clean = [line for line in got if " lost 0," in line]
    return len(got), len(clean), got


def live_downlink(work: Work) -> str:
    """A short real run: a 2-leaf, 2-spine fabric routed by the student's routes_after(); a
    spine's downlink fails (the one failure the data plane cannot route around: the leaf's
    uplink to that spine stays up), the controller reroutes, 8 RoCEv2 queue pairs cross."""
    if os.geteuid() != 0:
        raise StepFailed("this step builds a Mininet fabric and needs root: sudo fabric-lab lab "
                         "check 6")
    from controller.fabric import FabricController
    from controller.pipeline import build_pipeline
    from fabric_lab.labkit import P4SRC
    from targets import P4SWITCH
    from topos.mininet import FabricNetwork
    from topos.mininet.failures import find_link, set_link
    from topos.mininet.traffic_cmd import TrafficError, run_traffic
    from topos.relocate import prefixed

    routes_after = work.function("routes_after")
    # ports below Linux's ephemeral range (32768-60999): no client connection's local port
    # (nor its TIME_WAIT) can hold them when the switches start
    spec = prefixed(build_fabric("leafspine", leaves=2, spines=2, hosts_per_leaf=1), "lk",
                    24559, 24090)

    class StudentRouted(FabricController):
        def routes(self) -> dict:
            plan = routes_after(self.spec, set(self.down_ports))
            for name, routes in plan.items():
                routes.source_macs = {ln.end(name).port: ln.end(name).mac
                                      for ln in self.spec.links_of(name)}
            return plan

    def cross(when: str) -> str:
        try:
            lines = run_traffic(spec, net.net, ["lkh0n0", "lkh1n0", "--qps", "8", "--messages",
                                                "2", "--size", "8K", "--time-limit", "12"],
                                python=sys.executable)
        except TrafficError as err:
            raise StepFailed(f"{when}: {err}") from None
        total, clean, got = _receiver_losses(lines)
        if clean != 8:
            raise StepFailed(f"{when}: {clean} of 8 queue pairs arrived whole (the others were "
                             f"sent where packets are lost):\n" + "\n".join(lines[1:]))
        return f"{when}: 8/8 queue pairs whole"

    net = FabricNetwork(spec, P4SWITCH.ensure_available())
    ctl = StudentRouted(spec, build_pipeline(P4SRC / "ecmp.p4", P4SWITCH))
    try:
        net.start()
        ctl.connect()
        ctl.program()
        notes = [cross("all links up")]
        link = find_link(spec, "lkspine0", "lkleaf1")
        set_link(spec, link, False)
        ctl.set_link("lkspine0", link.end("lkspine0").port, up=False)
        notes.append(cross("lkspine0~lkleaf1 down, rerouted"))
        set_link(spec, link, True)
        ctl.set_link("lkspine0", link.end("lkspine0").port, up=True)
        notes.append(cross("restored"))
    finally:
        ctl.close()
        net.stop()
    return "; ".join(notes)


STEPS = [
    Step("defines live_fabric() and routes_after()", loads, "keep the functions' names"),
    Step("routes as the controller does when nothing failed", unchanged_without_failures,
         "routes_after(spec, set()) must equal compute_routes(spec)"),
    Step("routes around a failed uplink, to every NIC", avoids_failed_link,
         "TODO 1: a link is down when either end (node, port) is in down_ports"),
    Step("a switch cut off keeps its routes", cut_off_switch_keeps_routes,
         "TODO 2: a switch with no link up in the live fabric takes compute_routes(spec)'s"),
    Step("HPN 7.0: a failed ToR leaves its dual-homed NICs reachable", dual_tor_survives,
         "nothing HPN-specific is needed: the live fabric still connects the NIC's other port"),
    Step("hidden failures: random links and switches down", hidden_failures,
         "route over the live fabric only; a switch with no link up keeps compute_routes(spec)'s"),
    Step("a fabric routed by your code survives a spine downlink failure (short real run)",
         live_downlink, "the leaves must stop sending to the spine that lost its downlink: "
         "see step 3; `sudo fabric-lab up leafspine` and `link_fail spine0 leaf1` shows it live",
         after_all=True),
]
