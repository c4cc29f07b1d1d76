"""Device runtime state of the embedded switch and the externs' algorithms.

Tables, action profiles/selectors, the stateful externs' state (kept by their modules in
`p4switch.externs`: counters, meters, registers), the packet replication engine
(multicast and clone sessions) and digest configuration, built from a program's
`ControlPlaneModel`. Errors carry the P4Runtime code PI would return (`RuntimeApiError.code`).
"""

from typing import Any

from p4switch.cpmodel import ActionCall, FieldMatch
from p4switch.runtime.action_profiles import ActionProfile, Group, Member
from p4switch.runtime.digests import DigestConfig
from p4switch.runtime.entries import Entry, GroupRef, MemberRef, OneShot, OneShotAction
from p4switch.runtime.errors import RuntimeApiError
from p4switch.runtime.meters import GREEN, RED, YELLOW, MeterCell, MeterConfig
from p4switch.runtime.pre import CloneSession, PacketReplicationEngine
from p4switch.runtime.state import RuntimeState
from p4switch.runtime.tables import Table

__all__ = [
    "GREEN",
    "RED",
    "YELLOW",
    "ActionCall",
    "ActionProfile",
    "CloneSession",
    "CounterArray",
    "DigestConfig",
    "Entry",
    "FieldMatch",
    "Group",
    "GroupRef",
    "Member",
    "MemberRef",
    "MeterArray",
    "MeterCell",
    "MeterConfig",
    "OneShot",
    "OneShotAction",
    "PacketReplicationEngine",
    "RegisterArray",
    "RuntimeApiError",
    "RuntimeState",
    "Table",
]

# the externs' state classes live in their modules, which import this package's
_EXTERN_STATE = {"CounterArray": "counter", "MeterArray": "meter", "RegisterArray": "register"}


def __getattr__(name: str) -> Any:
    if name in _EXTERN_STATE:
        import importlib

        return getattr(importlib.import_module(f"p4switch.externs.{_EXTERN_STATE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
