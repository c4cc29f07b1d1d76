"""Comparing what two switches did with the same frames: emitted frames per egress port (in
order), counter deltas and packet-ins, described readably when they differ."""

from __future__ import annotations

from collections.abc import Callable

from tests.differential.packets import Case
from tests.differential.rig import LEAF, QUIET_S, Emitted, Rig, exchange, inject

Counters = dict[str, dict[int, tuple[int, int]]]
NAMES = ("p4switch", "bmv2")


def per_port(emitted: Emitted) -> dict[int, list[bytes]]:
    """Frames by egress port, each port's frames in the order they left (ports are
    independent queues: their relative order is not part of the behaviour)."""
    out: dict[int, list[bytes]] = {}
    for port, frame in emitted:
        out.setdefault(port, []).append(frame)
    return out


def counter_delta(before: Counters, after: Counters) -> Counters:
    out: Counters = {}
    for name, cells in after.items():
        old = before.get(name, {})
        delta = {i: (p - old.get(i, (0, 0))[0], b - old.get(i, (0, 0))[1])
                 for i, (p, b) in cells.items()}
        out[name] = {i: v for i, v in delta.items() if v != (0, 0)}
    return out


def packet_ins(rig: Rig) -> list[bytes]:
    """Packet-ins the controller's stream received since the last call (payload + metadata)."""
    assert rig.ctl is not None
    queue = rig.ctl.clients[LEAF].packet_ins
    out = []
    while not queue.empty():
        pin = queue.get_nowait()
        meta = b"".join(m.value for m in sorted(pin.metadata, key=lambda m: m.metadata_id))
        out.append(meta + b"|" + pin.payload)
    return out


def _first_difference(a: bytes, b: bytes) -> str:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"first difference at byte {i}"
    return f"lengths {len(a)} and {len(b)}"


def describe(names: tuple[str, str], a: Emitted, b: Emitted) -> list[str]:
    """Lines naming every difference between two targets' emitted frames."""
    pa, pb = per_port(a), per_port(b)
    lines = []
    for port in sorted(set(pa) | set(pb)):
        fa, fb = pa.get(port, []), pb.get(port, [])
        if len(fa) != len(fb):
            lines.append(f"port {port}: {names[0]} emitted {len(fa)} frame(s), "
                         f"{names[1]} {len(fb)}")
        for i, (x, y) in enumerate(zip(fa, fb, strict=False)):
            if x != y:
                lines.append(f"port {port} frame {i}: {_first_difference(x, y)}\n"
                             f"    {names[0]}: {x.hex()}\n    {names[1]}: {y.hex()}")
        for i, frame in enumerate(fa[len(fb):]):
            lines.append(f"port {port}: only {names[0]} frame {len(fb) + i}: {frame.hex()}")
        for i, frame in enumerate(fb[len(fa):]):
            lines.append(f"port {port}: only {names[1]} frame {len(fa) + i}: {frame.hex()}")
    return lines


def describe_counters(names: tuple[str, str], a: Counters, b: Counters) -> list[str]:
    lines = []
    for name in sorted(set(a) | set(b)):
        if a.get(name, {}) != b.get(name, {}):
            lines.append(f"counter {name}: {names[0]} {a.get(name)} vs {names[1]} {b.get(name)}")
    return lines


def run_case(pair: tuple[Rig, Rig], case: Case,
             sends: list[Callable[[Rig], object]] | None = None, quiet: float = QUIET_S) -> list[str]:
    """Send the case to both switches (its frames into its port, or `sends`); the differences
    found (empty when none). `quiet`: see `inject`."""
    rigs = list(pair)
    # the counters as the previous case left them (what came between counts on both alike)
    before = [r.last_counters if r.last_counters is not None else r.counters() for r in rigs]
    emitted = (inject(rigs, sends, quiet) if sends is not None
               else exchange(rigs, case.port, list(case.frames), quiet))
    for r in rigs:
        r.check_alive(f"handling case {case.name}")
        r.last_counters = r.counters()
    deltas = [counter_delta(b, r.last_counters) for b, r in zip(before, rigs, strict=True)]
    ins = [packet_ins(r) for r in rigs]
    problems = describe(NAMES, *emitted) + describe_counters(NAMES, *deltas)
    if ins[0] != ins[1]:
        problems.append(f"packet-ins: {NAMES[0]} {ins[0]} vs {NAMES[1]} {ins[1]}")
    problems += [f"{name} sent {len(i)} packet-in(s), the program says {case.punts}"
                 for name, i in zip(NAMES, ins, strict=True) if len(i) != case.punts]
    if case.emits is not None:
        problems += [f"{name} emitted {len(e)} frame(s), the program says {case.emits}"
                     for name, e in zip(NAMES, emitted, strict=True) if len(e) != case.emits]
    return problems
