"""A program's whole pipeline in C (its generated parser, controls and deparser, and
c/engine.c) over the state of a RuntimeState:

    pipeline = CPipeline(program, state, EngineConfig(now_us=clock))
    pipeline.process(port, frame)        # as Engine.process: [(egress port, bytes), ...]

Registers and counters have one home: C memory, which the runtime's arrays use from the moment
the pipeline is made (`RegisterArray.share`, `CounterArray.share`). The rest is the runtime's,
copied (`sync`): its tables with their entries and default actions, action profiles, multicast
groups and clone sessions, the ports' states; after a packet the direct counters go back to
the runtime's entries (`write_back`). By default each packet copies: the differential path of
the tests (tests/p4switch/cdp/test_c_pipeline.py, the STF sweep's C column). `CEngine` (the
switch's) copies when the runtime has changed.

CUnsupported (from the generator) names what the C back end does not run; NativeUnavailable
says there is no C compiler.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterable

from p4switch.compiler import CompiledProgram
from p4switch.cpmodel import ActionCall, FieldMatch, MatchField
from p4switch.engine import EngineConfig
from p4switch.runtime import RuntimeState
from p4switch.runtime.entries import Entry, GroupRef, MemberRef, OneShot

from .build import C_DIR, load_library
from .gen.controls import MAX_ARGS, Layout
from .gen.program import generate_program
from .tables import MAX_PORTS, SOURCES, CSelector, CTable, PortStates, configure

REF_ACTION, REF_MEMBER, REF_GROUP = 0, 1, 2  # enum cdp_ref
_FRAMES = 1024  # the most frames one packet may make in `process`
_u32, _u64, _ptr = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_void_p


class _Entry(ctypes.Structure):
    _fields_ = [("action", ctypes.c_int32), ("ref", _u32), ("group", _u32), ("nargs", _u32),
                ("member", _ptr), ("packets", _u64), ("bytes", _u64),
                ("args", _u64 * MAX_ARGS)]


class _Profile(ctypes.Structure):
    _fields_ = [("members", _ptr), ("selector", _ptr)]


class _State(ctypes.Structure):
    _fields_ = [("tables", ctypes.POINTER(_ptr)), ("defaults", ctypes.POINTER(_ptr)),
                ("profiles", ctypes.POINTER(_ptr)), ("registers", ctypes.POINTER(_ptr)),
                ("counters", ctypes.POINTER(_ptr)), ("ports_up", ctypes.POINTER(_u64)),
                ("nports", _u32), ("drop_port", _u32), ("rng", _u64)]


class _Copy(ctypes.Structure):
    _fields_ = [("port", _u32), ("rid", _u32)]


def _array(ctype, values: Iterable):
    items = list(values)
    return (ctype * max(1, len(items)))(*items)


def program_library(program: CompiledProgram) -> tuple[ctypes.CDLL, Layout]:
    """The program's C with the engine, built once per content and compiler, and its layout."""
    generated = generate_program(program)
    assert generated.layout is not None  # generated with its controls
    lib = configure(load_library(f"p4prog_{program.name}", [*SOURCES, C_DIR / "engine.c"],
                                 generated.source))
    for name, args, res in (
            ("cdp_engine_new", [_ptr, _ptr, _u32], _ptr), ("cdp_engine_free", [_ptr], None),
            ("cdp_engine_set_clock", [_ptr, ctypes.c_int64], None),
            ("cdp_engine_set_origin", [_ptr, _u64], None),
            ("cdp_engine_internal_errors", [_ptr], _u64),
            ("cdp_engine_set_group", [_ptr, _u32, ctypes.POINTER(_Copy), _u32], ctypes.c_int),
            ("cdp_engine_set_session", [_ptr, _u32, ctypes.c_int, ctypes.POINTER(_Copy), _u32],
             ctypes.c_int),
            ("cdp_engine_process", [_ptr, _u32, ctypes.c_char_p, _u32, ctypes.c_char_p, _u64,
                                    ctypes.POINTER(_u32), ctypes.POINTER(_u32), _u32],
             ctypes.c_int64),
            ("cdp_engine_ingress", [_ptr, _u32, ctypes.c_char_p, _u32, ctypes.POINTER(_ptr)],
             _u32),
            ("cdp_engine_egress", [_ptr, _ptr, _u64, _u64, _u64, _u64, ctypes.c_char_p, _u32,
                                   ctypes.POINTER(_u32), ctypes.POINTER(_ptr)], ctypes.c_int64),
            ("cdp_item_free", [_ptr], None),
            ("cdp_engine_digest", [_ptr, ctypes.POINTER(_u32), ctypes.POINTER(_u64), _u32],
             ctypes.c_int32),
            ("cdp_engine_digests_lost", [_ptr], _u64)):
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    return lib, generated.layout


class CPipeline:
    """A program's pipeline in C over a runtime's state (see the module's docstring)."""

    def __init__(self, program: CompiledProgram, state: RuntimeState,
                 config: EngineConfig | None = None, seed: int = 0x9E3779B97F4A7C15,
                 copy_each_packet: bool = True, origin: float | None = None) -> None:
        """`copy_each_packet` False: the caller calls `sync` and `write_back`, and packets
        run on the engine's clock: µs since `origin` (time.monotonic()), or since now."""
        self.copy_each_packet = copy_each_packet
        self.state = state
        self.config = config or EngineConfig()
        if self.config.log is not None:
            raise ValueError("the C data plane does not trace packets: a switch traces on "
                             "the Python pipeline")
        self._lib, self.layout = program_library(program)
        lib, layout = self._lib, self.layout
        self._tables = {name: CTable(state.tables[name].match_fields, lib)
                        for name in sorted(layout.tables, key=lambda n: layout.tables[n].index)}
        for name, slot in layout.tables.items():
            widths = [f.bitwidth for f in self._tables[name].fields]
            if widths != slot.key_widths:
                raise ValueError(f"table {name}: the runtime's keys {widths} are not the "
                                 f"program's {slot.key_widths}")
        self._profiles = {name: (CTable(_member_key(), lib), CSelector(lib))
                          for name in layout.profiles}
        self._profile_structs = [_Profile() for _ in layout.profiles]
        for name, index in layout.profiles.items():
            members, selector = self._profiles[name]
            self._profile_structs[index].members = members._table
            self._profile_structs[index].selector = selector._selector
        self._registers = {name: (_u64 * state.registers[name].size)()
                           for name in layout.registers}
        self._counters = {name: ((_u64 * state.counters[name].size)(),
                                 (_u64 * state.counters[name].size)())
                          for name in layout.counters}
        self._ports = PortStates(nports=MAX_PORTS)
        self._records: list[_Entry] = []
        self._entry_records: list[tuple[Entry, _Entry]] = []
        self._pre_groups: set[int] = set()
        self._pre_sessions: set[int] = set()
        self._defaults = (_ptr * max(1, len(layout.tables)))()
        self._c = _State()
        c = self._c
        c.tables = _array(_ptr, [t._table for t in self._tables.values()])
        c.defaults = self._defaults
        c.profiles = _array(_ptr, [ctypes.addressof(p) for p in self._profile_structs])
        regs = sorted(layout.registers, key=layout.registers.__getitem__)
        c.registers = _array(_ptr, [ctypes.addressof(self._registers[n]) for n in regs])
        counters = sorted(layout.counters, key=layout.counters.__getitem__)
        c.counters = _array(_ptr, [ctypes.addressof(cells) for n in counters
                                   for cells in self._counters[n]])
        c.ports_up, c.nports = self._ports.words, self._ports.nports
        c.drop_port, c.rng = self.config.drop_port, seed or 1
        self._keep = (c.tables, c.profiles, c.registers, c.counters)
        desc = ctypes.addressof(ctypes.c_char.in_dll(lib, "cdp_program_desc"))
        self._engine = lib.cdp_engine_new(desc, ctypes.addressof(c),
                                          self.config.priority_queues)
        if not self._engine:
            raise MemoryError("cdp_engine_new")
        if origin is not None:
            lib.cdp_engine_set_origin(self._engine, int(origin * 1e9))
        self._digest_names = sorted(layout.digests, key=layout.digests.__getitem__)
        self._digest_number, self._digest_values = _u32(), (_u64 * 32)()  # CDP_DIGEST_FIELDS
        self._out = ctypes.create_string_buffer(1 << 20)
        self._ports_out, self._lens = (_u32 * _FRAMES)(), (_u32 * _FRAMES)()
        for name, cells in self._registers.items():  # one home for both planes
            state.registers[name].share(cells)
        for name, (packets, nbytes) in self._counters.items():
            state.counters[name].share(packets, nbytes)

    def close(self) -> None:
        if getattr(self, "_engine", None):
            self._lib.cdp_engine_free(self._engine)
            self._engine = None

    def __del__(self) -> None:
        self.close()

    @property
    def internal_errors(self) -> int:
        return int(self._lib.cdp_engine_internal_errors(self._engine))

    @property
    def engine_address(self) -> int:
        """struct cdp_engine * (for c/switch.c's loop, which must not outlive this object)."""
        assert self._engine, "closed"
        return int(self._engine)

    @property
    def digests_lost(self) -> int:
        """Digests the engine had no room for (the control plane took none for too long)."""
        return int(self._lib.cdp_engine_digests_lost(self._engine))

    # ---- the runtime's state, copied -----------------------------------------------------------
    def sync(self) -> None:
        """The C state := the runtime's."""
        state, layout = self.state, self.layout
        self._records = []
        self._entry_records = []
        for name, slot in layout.tables.items():
            table, ctable = state.tables[name], self._tables[name]
            ctable.clear()
            for entry in table.entries():
                record = self._record(entry.action, table.profile)
                record.packets, record.bytes = entry.direct_counter
                ctable.insert(entry, ctypes.addressof(record))
                if table.model.direct_counter:
                    self._entry_records.append((entry, record))
            default = None if table.is_indirect else table.default_entry.action
            self._defaults[slot.index] = \
                ctypes.addressof(self._record(default, None)) if default is not None else None
        for name in layout.profiles:
            self._sync_profile(name)
        for p in range(self._ports.nports):
            self._ports.set(p, bool(state.port_up(p)))
        self._sync_pre()

    def _record(self, action, profile) -> _Entry:
        """The C record of a table entry's action (or member or group reference)."""
        record = _Entry()
        self._records.append(record)
        if isinstance(action, ActionCall):
            record.ref = REF_ACTION
            record.action = self.layout.actions.get(action.action, -1)
            if len(action.args) > MAX_ARGS:
                raise ValueError(f"{action.action}: more than {MAX_ARGS} action arguments")
            record.nargs = len(action.args)
            for i, a in enumerate(action.args):
                record.args[i] = a & 0xFFFFFFFFFFFFFFFF
        elif isinstance(action, MemberRef):
            member = profile.member(action.member_id)
            record.ref = REF_MEMBER
            record.member = ctypes.addressof(self._record(member.action, None))
        elif isinstance(action, (GroupRef, OneShot)):
            assert action.group_id is not None  # set when the entry was written
            record.ref = REF_GROUP
            record.group = profile.group_handle(action.group_id)
        else:
            raise ValueError(f"an entry's action {action!r}")
        return record

    def _sync_profile(self, name: str) -> None:
        profile = self.state.action_profiles[name]
        members, selector = self._profiles[name]
        members.clear()
        selector.clear()
        for handle, call in profile._action_of.items():
            members.insert(_member_entry(handle), ctypes.addressof(self._record(call, None)))
        for group in profile._groups.values():
            selector.set_group(group.handle, group.slots)

    def _sync_pre(self) -> None:
        lib, pre = self._lib, self.state.pre
        self._clear_pre()
        for group in sorted(set(pre.mgrps()) | set(pre.multicast_groups())):
            copies = pre.replicas(group)
            self._pre_groups.add(group)
            lib.cdp_engine_set_group(self._engine, group, _array(_Copy, [_Copy(p, r) for p, r
                                                                        in copies]), len(copies))
        for session in pre.clone_sessions():
            targets = pre.clone_targets(session) or []
            self._pre_sessions.add(session)
            lib.cdp_engine_set_session(self._engine, session, 1,
                                       _array(_Copy, [_Copy(p, r) for p, r in targets]),
                                       len(targets))

    def _clear_pre(self) -> None:
        for group in self._pre_groups:
            self._lib.cdp_engine_set_group(self._engine, group, None, 0)
        for session in self._pre_sessions:
            self._lib.cdp_engine_set_session(self._engine, session, 0, None, 0)
        self._pre_groups, self._pre_sessions = set(), set()

    def write_back(self) -> None:
        """The runtime's direct counters := the C state's (registers and counters are one
        memory, the C plane's, which the runtime's arrays use from the start)."""
        for entry, record in self._entry_records:
            entry.direct_counter[:] = [record.packets, record.bytes]

    # ---- packets -------------------------------------------------------------------------------
    def ingress(self, port: int, data: bytes) -> list[CItem]:
        """Engine.ingress in C: the packets to enqueue."""
        self._before()
        data = bytes(data)
        head = _ptr(None)
        tail = _ptr(ctypes.addressof(head))
        self._lib.cdp_engine_ingress(self._engine, port, data, len(data), ctypes.byref(tail))
        self._after()
        return self._items(head)

    def egress(self, item: CItem, enq_timestamp: int = 0, enq_qdepth: int = 0,
               deq_qdepth: int = 0, deq_timedelta: int = 0
               ) -> tuple[list[tuple[int, bytes]], list[CItem]]:
        """Engine.egress in C for a packet `ingress` gave (used up): (frames to transmit,
        new packets to enqueue)."""
        if item.address is None:
            raise ValueError("this packet went through egress already")
        self._before()
        head = _ptr(None)
        tail = _ptr(ctypes.addressof(head))
        port = _u32()
        n = self._lib.cdp_engine_egress(self._engine, item.address, enq_timestamp, enq_qdepth,
                                        deq_qdepth, deq_timedelta, self._out, len(self._out),
                                        ctypes.byref(port), ctypes.byref(tail))
        item.address = None
        self._after()
        frames = [(port.value, ctypes.string_at(self._out, n))] if n >= 0 else []
        return frames, self._items(head)

    def _before(self) -> None:
        if self.copy_each_packet:
            self.sync()
            self._lib.cdp_engine_set_clock(self._engine, self.config.now_us())

    def _after(self) -> None:
        if self.copy_each_packet:
            self.write_back()
        if self._digest_names:
            self.hand_over_digests()

    def hand_over_digests(self) -> None:
        """The digests the packet sent, to the runtime (Engine: `digests.emit`)."""
        lib, number, values = self._lib, self._digest_number, self._digest_values
        while (count := lib.cdp_engine_digest(self._engine, ctypes.byref(number), values,
                                               len(values))) >= 0:
            self.state.digests.emit(self._digest_names[number.value], tuple(values[:count]))

    def _items(self, head: ctypes.c_void_p) -> list[CItem]:
        items, at = [], head.value
        while at:
            items.append(CItem(at, self._lib))
            at = _ptr.from_address(at).value  # struct cdp_item's first field: next
        return items

    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        """Engine.process in C, on the runtime's state as it is now."""
        self._before()
        data = bytes(data)
        n = self._lib.cdp_engine_process(self._engine, port, data, len(data), self._out,
                                         len(self._out), self._ports_out, self._lens, _FRAMES)
        self._after()
        if n < 0:
            raise RuntimeError("cdp_engine_process: more frames than the output buffer holds")
        frames, at = [], ctypes.addressof(self._out)
        for i in range(n):
            frames.append((self._ports_out[i], ctypes.string_at(at, self._lens[i])))
            at += self._lens[i]
        return frames


class _ItemHead(ctypes.Structure):  # the first fields of struct cdp_item
    _fields_ = [("next", _ptr), ("egress_port", _u32), ("priority", _u32)]


class CItem:
    """A packet between the C ingress and egress (struct cdp_item): its queue, as Queued has
    it; freed unless egress used it."""

    __slots__ = ("_lib", "address", "egress_port", "priority")

    def __init__(self, address: int, lib: ctypes.CDLL) -> None:
        head = _ItemHead.from_address(address)
        self.egress_port: int = head.egress_port
        self.priority: int = head.priority
        self.address: int | None = address
        self._lib = lib

    def __del__(self) -> None:
        if self.address is not None:
            self._lib.cdp_item_free(self.address)
            self.address = None


def _member_key() -> list[MatchField]:
    """The key of an action profile's members in C: the member's handle."""
    return [MatchField("handle", [], None, 32, "exact")]


def _member_entry(handle: int) -> Entry:
    return Entry(keys=(FieldMatch("exact", value=handle),), handle=handle)
