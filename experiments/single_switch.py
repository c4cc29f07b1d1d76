"""One p4switch pipeline driven directly (no processes, no Mininet) for data-plane experiments.

Loads a lab program, programs an ECMP route to a group of equal-cost ports through the runtime
API, and reports which port each packet leaves on.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from p4switch.compiler import CompiledProgram, compile_program
from p4switch.cpmodel import ActionCall, FieldMatch
from p4switch.engine import EngineConfig
from p4switch.runtime import GroupRef, RuntimeState
from p4switch.runtime.entries import Entry

P4SRC = Path(__file__).resolve().parent.parent / "p4src"


@cache
def load_program(name: str = "ecmp") -> CompiledProgram:
    return compile_program(P4SRC / f"{name}.p4")


def _by_suffix(names, suffix: str) -> str:
    matches = [name for name in names if name == suffix or name.endswith("." + suffix)]
    if len(matches) != 1:
        raise LookupError(f"expected one name ending in {suffix!r}, found {matches}")
    return matches[0]


class EcmpSwitch:
    """A switch whose only route sends 0.0.0.0/0... (any IPv4) to `ports` as one ECMP group."""

    def __init__(self, ports: list[int], seed: int = 0, program: str = "ecmp") -> None:
        compiled = load_program(program)
        self.state = RuntimeState(compiled.model)
        self.engine = compiled.new_engine(self.state, EngineConfig())
        model = compiled.model
        tables = [t.name for t in model.tables]
        actions = [a.name for a in model.actions]
        seed_table = _by_suffix(tables, "routing.hash_seed")
        self.state.table(seed_table).set_default(
            ActionCall(_by_suffix(actions, "routing.set_hash_seed"), (seed,)))
        lpm = model.table(_by_suffix(tables, "routing.ipv4_lpm"))
        profile = self.state.action_profile(lpm.implementation)
        next_hop = _by_suffix(actions, "routing.set_next_hop")
        for port in ports:
            profile.insert_member(port, ActionCall(next_hop, (port, 0x020000000000 + port)))
        profile.insert_group(1, [(port, 1, None) for port in ports], max_size=len(ports))
        self.state.table(lpm.name).insert(
            Entry(keys=(FieldMatch("lpm", value=0x0A000000, prefix_len=8),), action=GroupRef(1)))

    def egress_port(self, frame: bytes, ingress_port: int = 0) -> int | None:
        """Port the frame leaves on, or None when the pipeline drops it."""
        out = self.engine.process(ingress_port, frame)
        return out[0][0] if out else None
