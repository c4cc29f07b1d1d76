"""The C tables, action selector and hashes (p4switch/cdp/c/tables.c, selector.c, hashing.c)
against the Python runtime they copy: the same random entries with churn (inserts, deletes,
re-inserts, a clear) in a runtime Table and in a CTable give the same winner for every key;
CSelector picks the member whose action ActionProfile.select gives; the C hashes and
pack_fields give what p4switch/runtime/hashing.py gives."""

from __future__ import annotations

import contextlib
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
from runtime_models import model, refs

from p4switch import cpmodel
from p4switch.cdp import tables
from p4switch.cpmodel import FieldMatch, MatchField
from p4switch.native import NativeUnavailable
from p4switch.runtime import (
    ActionCall,
    Entry,
    GroupRef,
    OneShot,
    OneShotAction,
    RuntimeApiError,
    RuntimeState,
    hashing,
)


@pytest.fixture(scope="module", autouse=True)
def c_library():
    try:
        return tables.library()
    except NativeUnavailable as e:
        pytest.skip(f"the C data plane cannot be built here: {e}")


# ---- tables ------------------------------------------------------------------------------------

def f(name: str, width: int, kind: str = "exact") -> MatchField:
    return MatchField(name, bitwidth=width, match_kind=kind)


SHAPES = {  # the table's key fields; lookup.py picks ExactIndex, LpmIndex or PriorityIndex
    "exact3": [f("hdr.ethernet.dstAddr", 48), f("meta.vlan", 12), f("std.ingress_port", 9)],
    "lpm": [f("hdr.ipv4.dstAddr", 32, "lpm")],
    "vrf_lpm_l4": [f("meta.vrf", 8), f("hdr.ipv4.dstAddr", 32, "lpm"), f("hdr.tcp.dstPort", 16)],
    "lpm128": [f("meta.vrf", 3), f("hdr.ipv6.dstAddr", 128, "lpm")],
    "exact128": [f("hdr.ipv6.srcAddr", 128), f("meta.class", 5)],
    "acl": [f("hdr.ipv4.srcAddr", 32, "ternary"), f("hdr.ipv4.protocol", 8, "optional"),
            f("hdr.tcp.dstPort", 16, "range"), f("std.ingress_port", 9)],
    "acl128": [f("hdr.ipv6.srcAddr", 128, "ternary"), f("hdr.ipv6.dstAddr", 128, "lpm"),
               f("hdr.ipv6.nextHdr", 8, "optional")],
    "ranges": [f("hdr.tcp.srcPort", 16, "range"), f("meta.bucket", 7, "range"),
               f("meta.flag", 1, "ternary")],
    "two_lpm": [f("hdr.ipv4.srcAddr", 32, "lpm"), f("hdr.ipv4.dstAddr", 32, "lpm")],
}


def runtime_table(fields: list[MatchField]):
    m = model()
    m.tables.append(cpmodel.Table("MyIngress.under_test", match_fields=fields,
                                  action_refs=refs("MyIngress.forward", "NoAction"),
                                  default_action=ActionCall("NoAction"), size=1_000_000))
    return RuntimeState(m).table("under_test")


def prefix_mask(width: int, plen: int) -> int:
    return ((1 << plen) - 1) << (width - plen)


class Fields:
    """Random entries and keys for some key fields, their values drawn from a few per field so
    that entries overlap and keys hit them."""

    def __init__(self, rng: random.Random, fields: list[MatchField]) -> None:
        self.rng = rng
        self.fields = fields
        self.pools = [[0, (1 << mf.bitwidth) - 1, 1 << (mf.bitwidth - 1),
                       *(rng.getrandbits(mf.bitwidth) for _ in range(3))] for mf in fields]

    def value(self, i: int) -> int:
        rng = self.rng
        width = self.fields[i].bitwidth
        v = rng.choice(self.pools[i]) if rng.random() < 0.7 else rng.getrandbits(width)
        if rng.random() < 0.3:  # a neighbour of a popular value
            v ^= 1 << rng.randrange(width)
        return v

    def match(self, i: int) -> FieldMatch | None:
        rng = self.rng
        mf = self.fields[i]
        w, kind = mf.bitwidth, mf.match_kind
        if kind != "exact" and rng.random() < {"optional": 0.3, "ternary": 0.15}.get(kind, 0.1):
            return None
        if kind in ("exact", "optional"):
            return FieldMatch(kind, value=self.value(i))
        if kind == "lpm":
            plen = rng.choice([w, w // 2 or 1, rng.randrange(1, w + 1), min(8, w)])
            return FieldMatch(kind, value=self.value(i) & prefix_mask(w, plen), prefix_len=plen)
        if kind == "ternary":
            mask = rng.choice([(1 << w) - 1, prefix_mask(w, (w + 1) // 2), 1 << rng.randrange(w),
                               rng.getrandbits(w) or 1, 0xFF & ((1 << w) - 1)])
            return FieldMatch(kind, value=self.value(i) & mask, mask=mask)
        low = self.value(i) if rng.random() < 0.5 else rng.getrandbits(w)
        low = min(low, (1 << w) - 2) if w > 1 else 0
        high = min(low + rng.choice([0, 1, 5, 300, 1 << (w // 2)]), (1 << w) - 1)
        if low == 0 and high == (1 << w) - 1:  # the full range is spelled None
            high -= 1
        return FieldMatch(kind, low=low, high=high)

    def entry(self, needs_priority: bool) -> Entry:
        keys = tuple(self.match(i) for i in range(len(self.fields)))
        rng = self.rng
        # half of them of few values: many ties
        priority = rng.choice([rng.randrange(1, 6), rng.randrange(1, 1000)]) if needs_priority else 0
        return Entry(keys=keys, priority=priority, action=ActionCall("NoAction"))

    def key(self) -> tuple[int, ...]:
        return tuple(self.value(i) for i in range(len(self.fields)))

    def key_in(self, entry: Entry) -> tuple[int, ...]:
        """A key `entry` matches (others may match it too)."""
        rng = self.rng
        key = []
        for i, fm in enumerate(entry.keys):
            w = self.fields[i].bitwidth
            noise = rng.getrandbits(w)
            if fm is None:
                key.append(self.value(i))
            elif fm.kind in ("exact", "optional"):
                key.append(fm.value)
            elif fm.kind == "lpm":
                key.append(fm.value | (noise & ~prefix_mask(w, fm.prefix_len)))
            elif fm.kind == "ternary":
                key.append(fm.value | (noise & ~fm.mask))
            else:
                key.append(rng.randint(fm.low, fm.high))
        return tuple(key)


def compare_lookups(py, c: tables.CTable, gen: Fields, installed: list[Entry],
                    value_of: dict[int, int], count: int) -> int:
    for i in range(count):
        key = gen.key_in(gen.rng.choice(installed)) if installed and i % 2 else gen.key()
        expected = py.lookup(key)
        want = None if expected is None else (value_of[expected.handle], expected.handle)
        assert c.lookup(key) == want, key
    return count


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_table_lookups_match_the_runtime(shape):
    rng = random.Random(sum(map(ord, shape)))
    py = runtime_table(SHAPES[shape])
    c = tables.CTable(py.match_fields)
    gen = Fields(rng, py.match_fields)
    installed: list[Entry] = []
    deleted: list[Entry] = []
    value_of: dict[int, int] = {}  # entry handle -> the C value, a serial number
    serial = 0
    checked = compare_lookups(py, c, gen, installed, value_of, 200)  # the empty table
    winners = set()
    for step in range(1500):
        op = rng.random()
        if step == 750:  # everything goes; handles restart at 0
            py.clear()
            c.clear()
            deleted += installed
            installed.clear()
            value_of.clear()
        elif op < 0.55 or not installed:
            entry = gen.entry(py.needs_priority)
            if deleted and rng.random() < 0.3:  # the match of an entry deleted before
                old = deleted.pop(rng.randrange(len(deleted)))
                entry = Entry(keys=old.keys, priority=old.priority, action=old.action)
            try:
                py.insert(entry)
            except RuntimeApiError as e:
                assert e.code == "ALREADY_EXISTS", e
                # C refuses the same match and priority too, under an unused handle
                twin = Entry(keys=py.get(entry.keys, entry.priority).keys,
                             priority=entry.priority, handle=0xFFFFF0)
                with pytest.raises(KeyError):
                    c.insert(twin, 0)
                continue
            serial += 1
            c.insert(entry, serial)
            installed.append(entry)
            value_of[entry.handle] = serial
        elif op < 0.8:
            victim = installed.pop(rng.randrange(len(installed)))
            py.delete(victim.keys, victim.priority)
            c.remove(victim.handle)
            del value_of[victim.handle]
            deleted.append(victim)
        elif op < 0.85:  # a new C value for an entry (the mirror's MODIFY)
            serial += 1
            entry = rng.choice(installed)
            c.set_value(entry.handle, serial)
            value_of[entry.handle] = serial
        else:
            checked += compare_lookups(py, c, gen, installed, value_of, 40)
        assert len(c) == len(py)
    for _ in range(1500):
        key = gen.key_in(rng.choice(installed)) if rng.random() < 0.5 else gen.key()
        expected = py.lookup(key)
        got = c.lookup(key)
        assert got == (None if expected is None else (value_of[expected.handle],
                                                      expected.handle)), key
        winners.add(got)
        checked += 1
    assert checked > 3000
    assert len(winners) > 50  # many entries won: ranks and ties were really compared
    with pytest.raises(KeyError):
        c.remove(0xFFFFF0)
    c.close()


def test_table_clear_and_free_leave_nothing():
    fields = SHAPES["acl"]
    py = runtime_table(fields)
    c = tables.CTable(fields)
    gen = Fields(random.Random(5), fields)
    for serial in range(200):
        entry = gen.entry(True)
        try:
            py.insert(entry)
        except RuntimeApiError:
            continue
        c.insert(entry, serial)
    assert len(c) == len(py) > 150
    c.clear()
    assert len(c) == 0
    assert all(c.lookup(gen.key()) is None for _ in range(300))
    c.close()
    c.close()  # once only


# ---- action selector ---------------------------------------------------------------------------

def nhop(i: int) -> ActionCall:
    return ActionCall("MyIngress.set_nhop", (i, i % 512))


def lpm8(first_octet: int) -> tuple[FieldMatch]:
    return (FieldMatch("lpm", value=first_octet << 24, prefix_len=8),)


@pytest.mark.parametrize("mode", ["groups", "oneshot"])
def test_selector_chooses_as_action_profile_select(mode):
    rng = random.Random(17 if mode == "groups" else 18)
    up: set[int] = set()
    m = model()
    m.action_profiles[0].max_group_size = 0  # no limit: groups of up to 24 handles
    state = RuntimeState(m, port_up=lambda port: port in up)
    profile = state.action_profile("ecmp_selector")
    table = state.table("ecmp")
    c = tables.CSelector()
    in_c: set[int] = set()
    next_action = iter(range(10**6))  # every member its own action

    def slots():
        return [(rng.randrange(12), rng.randrange(1, 5), rng.choice([None, None, *range(10)]))
                for _ in range(rng.randrange(0, 7))]

    if mode == "groups":
        for mid in range(12):
            profile.insert_member(mid, nhop(next(next_action)))
        ops = [lambda: profile.insert_group(rng.randrange(6), dedup(slots())),
               lambda: profile.modify_group(rng.randrange(6), dedup(slots())),
               lambda: profile.delete_group(rng.randrange(6))]
    else:
        ops = [lambda: table.insert(Entry(keys=lpm8(rng.randrange(6)), action=OneShot(tuple(
                   OneShotAction(nhop(next(next_action)), w, watch)
                   for _, w, watch in slots()[:4] or [(0, 1, None)])))),
               lambda: table.delete(lpm8(rng.randrange(6)))]

    choices = nones = 0
    for _ in range(400):
        with contextlib.suppress(RuntimeApiError):  # refusals are part of the game
            rng.choice(ops)()
        up = {port for port in range(8) if rng.random() < 0.6}  # ports 8, 9 stay down
        ports = tables.PortStates(up, nports=8)
        if mode == "groups":
            refs_ = {GroupRef(gid): g for gid, g in profile.groups().items()}
        else:
            refs_ = {e.action: profile._groups[e.action.group_id] for e in table.entries()}
        now = {g.handle for g in refs_.values()}
        for handle in in_c - now:
            c.remove_group(handle)
        for g in refs_.values():  # in any order: C sorts them by handle as Group does
            c.set_group(g.handle, rng.sample(g.slots, len(g.slots)))
        in_c = now
        for ref, group in refs_.items():
            for _ in range(8):
                h = rng.choice([rng.getrandbits(32), rng.getrandbits(64), rng.randrange(50)])
                got = c.choose(group.handle, h, ports)
                expected = profile.select(ref, h)
                assert (None if got is None else profile.action_of_handle(got)) == expected
                # and the very handle (weighted copies share their member's action)
                live = [x for x, watch in group.slots if watch is None or watch in up]
                assert got == (live[(h & 0xFFFFFFFF) % len(live)] if live else None)
                choices += 1
                nones += got is None
    assert choices > 3000 and 20 < nones < choices // 2
    with pytest.raises(KeyError):
        c.choose(10**6, 0, tables.PortStates())


def dedup(spec):
    """One slot per member id (duplicates are refused; weights say it)."""
    return list({mid: (mid, w, watch) for mid, w, watch in spec}.values())


# ---- hashes ------------------------------------------------------------------------------------

CHECK_VALUES = {"crc16": 0xBB3D, "crc32": 0xCBF43926, "csum16": 0xF62A, "xor16": 0x3908,
                "identity": 0x3132333435363738}  # over b"123456789" (hashing.py's docstring)


def test_hashes_match_hashing_py():
    c = tables.CHashing()
    assert set(c.algorithms) == set(hashing.ALGORITHMS)
    for name, value in CHECK_VALUES.items():
        assert c.hash(name, b"123456789") == value == hashing.ALGORITHMS[name](b"123456789")
    rng = random.Random(11)
    samples = [bytes(n) for n in range(81)] + [b"\xff" * n for n in range(81)]  # carries
    samples += [rng.randbytes(rng.randrange(81)) for _ in range(1500)]
    for data in samples:
        for name, reference in hashing.ALGORITHMS.items():
            assert c.hash(name, data) == reference(data), (name, data.hex())


def test_pack_fields_matches_hashing_py():
    c = tables.CHashing()
    rng = random.Random(13)
    widths = [0, 1, 3, 7, 8, 9, 12, 16, 31, 32, 33, 48, 56, 57, 63, 64]
    for _ in range(3000):
        fields = []
        for _ in range(rng.randrange(0, 9)):
            w = rng.choice(widths) if rng.random() < 0.6 else rng.randrange(65)
            v = rng.choice([rng.getrandbits(w + 4), (1 << w) - 1, (1 << 64) - 1, 0])
            fields.append((v, w))  # values wider than their width are truncated
        assert c.pack_fields(fields) == hashing.pack_fields(fields), fields
    with pytest.raises(ValueError):
        c.pack_fields([(0, 65)])
