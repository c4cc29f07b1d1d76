"""Lookups against a brute-force reference: the best matching entry is the one with the highest
priority (then the lowest handle) for priority tables, the longest prefix for LPM tables."""

import random

from runtime_models import model

from p4switch.runtime import ActionCall, Entry, FieldMatch, RuntimeState


def matches(fm, value, width):
    if fm is None:
        return True
    if fm.kind in ("exact", "optional"):
        return value == fm.value
    if fm.kind == "lpm":
        shift = width - fm.prefix_len
        return value >> shift == fm.value >> shift
    if fm.kind == "ternary":
        return value & fm.mask == fm.value
    return fm.low <= value <= fm.high


def reference(table, key, entries):
    widths = [f.bitwidth for f in table.match_fields]
    hits = [e for e in entries
            if all(matches(fm, v, w) for fm, v, w in zip(e.keys, key, widths, strict=True))]
    if not hits:
        return None
    if table.needs_priority:
        return min(hits, key=lambda e: (-e.priority, e.handle & 0xFFFFFF))
    return max(hits, key=lambda e: sum(fm.prefix_len for fm in e.keys
                                       if fm is not None and fm.kind == "lpm"))


def random_acl_entry(rng):
    src = None
    if rng.random() < 0.95:
        mask = rng.choice([0xFF000000, 0xFFFF0000, 0xF0F0F0F0, 0xFFFFFFFF, 0x1])
        src = FieldMatch("ternary", value=rng.choice([0x0A000000, 0x0A0A0A0A, 0xFFFFFFFF,
                                                      rng.getrandbits(32)]) & mask, mask=mask)
    proto = FieldMatch("optional", value=rng.choice([6, 17])) if rng.random() < 0.7 else None
    port = None
    if rng.random() < 0.6:
        lo = rng.randrange(0, 200)
        port = FieldMatch("range", low=lo, high=lo + rng.randrange(0, 100))
    return (src, proto, port)


def test_priority_table_matches_reference():
    rng = random.Random(7)
    state = RuntimeState(model())
    t = state.table("acl")
    t.model.size = 10_000
    installed = []
    for i in range(600):
        keys = random_acl_entry(rng)
        entry = Entry(keys=keys, priority=rng.randrange(1, 40), action=ActionCall(
            "MyIngress.forward", (i % 512,)))
        try:
            t.insert(entry)
            installed.append(entry)
        except Exception as e:  # duplicates of key+priority are expected now and then
            assert getattr(e, "code", None) == "ALREADY_EXISTS"
        if i % 5 == 4 and installed:  # delete some, so handles get reused
            victim = installed.pop(rng.randrange(len(installed)))
            t.delete(victim.keys, victim.priority)
    def key_in(entry):  # a key the entry matches (others may match it too)
        src, proto, port = entry.keys
        s = rng.getrandbits(32)
        if src is not None:
            s = (s & ~src.mask) | src.value
        p = proto.value if proto is not None else rng.choice([6, 17, 1])
        d = rng.randrange(port.low, port.high + 1) if port is not None else rng.randrange(320)
        return (s, p, d)

    winners = set()
    snapshot = t.entries()
    for i in range(1500):
        if i % 2:
            key = key_in(rng.choice(installed))
        else:
            key = (rng.choice([0x0A000000, 0x0A0A0A0A, 0xFFFFFFFF, rng.getrandbits(32)]),
                   rng.choice([6, 17, 1]), rng.randrange(0, 320))
        got = t.lookup(key)
        assert got is reference(t, key, snapshot), key
        winners.add(id(got))
    assert len(winners) > 25  # many different entries won: priorities were really compared


def test_lpm_tables_match_reference():
    rng = random.Random(3)
    state = RuntimeState(model())
    for name in ("ipv4_lpm", "vrf_lpm"):
        t = state.table(name)
        t.model.size = 10_000
        for _ in range(800):
            plen = rng.choice([1, 4, 8, 12, 16, 24, 31, 32])
            value = rng.choice([0x0A000000, 0xC0A80000, rng.getrandbits(32)])
            value &= ((1 << plen) - 1) << (32 - plen)
            keys = (FieldMatch("lpm", value=value, prefix_len=plen),)
            if name == "vrf_lpm":
                keys = (FieldMatch("exact", value=rng.randrange(3)), *keys)
            try:
                t.insert(Entry(keys=keys, action=ActionCall("MyIngress.drop")))
            except Exception as e:
                assert getattr(e, "code", None) == "ALREADY_EXISTS"
        snapshot = t.entries()
        for _ in range(1500):
            addr = rng.choice([0x0A000000, 0x0A010203, 0xC0A80101, rng.getrandbits(32)])
            key = (addr,) if name == "ipv4_lpm" else (rng.randrange(4), addr)
            assert t.lookup(key) is reference(t, key, snapshot), (name, key)
