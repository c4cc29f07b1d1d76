"""Device runtime state of the embedded switch and the externs' algorithms.

Tables, action profiles/selectors, counters, meters, registers, the packet replication engine
(multicast and clone sessions) and digest configuration, built from a program's
`ControlPlaneModel`. Errors carry the P4Runtime code PI would return (`RuntimeApiError.code`).
"""

from p4switch.cpmodel import ActionCall, FieldMatch
from p4switch.runtime.action_profiles import ActionProfile, Group, Member
from p4switch.runtime.counters import CounterArray
from p4switch.runtime.digests import DigestConfig
from p4switch.runtime.entries import Entry, GroupRef, MemberRef, OneShot, OneShotAction
from p4switch.runtime.errors import RuntimeApiError
from p4switch.runtime.meters import GREEN, RED, YELLOW, MeterArray, MeterCell, MeterConfig
from p4switch.runtime.pre import CloneSession, PacketReplicationEngine
from p4switch.runtime.registers import RegisterArray
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
