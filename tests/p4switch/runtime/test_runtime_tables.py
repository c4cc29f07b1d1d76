"""Tables: matching per kind, priorities, defaults, and every PI validation error."""

import pytest

from p4switch.runtime import ActionCall, Entry, FieldMatch, RuntimeApiError

FWD = "MyIngress.forward"


def ex(v):
    return FieldMatch("exact", value=v)


def lpm(v, plen):
    return FieldMatch("lpm", value=v, prefix_len=plen)


def tern(v, m):
    return FieldMatch("ternary", value=v, mask=m)


def rng(lo, hi):
    return FieldMatch("range", low=lo, high=hi)


def opt(v):
    return FieldMatch("optional", value=v)


def fwd(port):
    return ActionCall(FWD, (port,))


def ip(s):
    a, b, c, d = (int(x) for x in s.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def code(excinfo):
    return excinfo.value.code


# ---- exact ------------------------------------------------------------------------------------

def test_exact_hit_miss_and_default(state):
    t = state.table("dmac")
    t.insert(Entry(keys=(ex(0x0A0000000001),), action=fwd(1)))
    t.insert(Entry(keys=(ex(0x0A0000000002),), action=fwd(2)))
    assert t.lookup((0x0A0000000001,)).action == fwd(1)
    assert t.lookup((0x0A0000000002,)).action == fwd(2)
    assert t.lookup((0x0A0000000003,)) is None
    assert t.default_entry.action == ActionCall("MyIngress.drop")


def test_exact_errors(state):
    t = state.table("MyIngress.dmac")
    t.insert(Entry(keys=(ex(1),), action=fwd(1)))
    with pytest.raises(RuntimeApiError) as e:
        t.insert(Entry(keys=(ex(1),), action=fwd(2)))
    assert code(e) == "ALREADY_EXISTS"
    with pytest.raises(RuntimeApiError) as e:
        t.insert(Entry(keys=(None,), action=fwd(2)))
    assert code(e) == "INVALID_ARGUMENT" and "missing exact" in str(e.value)
    with pytest.raises(RuntimeApiError) as e:
        t.insert(Entry(keys=(ex(1 << 48),), action=fwd(2)))
    assert code(e) == "INVALID_ARGUMENT" and "does not fit in 48 bits" in str(e.value)
    with pytest.raises(RuntimeApiError) as e:
        t.insert(Entry(keys=(lpm(1, 48),), action=fwd(2)))
    assert code(e) == "INVALID_ARGUMENT" and "invalid match type" in str(e.value)
    with pytest.raises(RuntimeApiError) as e:
        t.insert(Entry(keys=(ex(2), ex(3)), action=fwd(2)))
    assert code(e) == "INVALID_ARGUMENT" and "too many fields" in str(e.value)
    with pytest.raises(RuntimeApiError) as e:
        t.insert(Entry(keys=(ex(2),), priority=5, action=fwd(2)))
    assert code(e) == "INVALID_ARGUMENT" and "non-zero priority" in str(e.value)
    with pytest.raises(RuntimeApiError) as e:
        t.modify(Entry(keys=(ex(9),), action=fwd(2)))
    assert code(e) == "NOT_FOUND"
    with pytest.raises(RuntimeApiError) as e:
        t.delete((ex(9),))
    assert code(e) == "NOT_FOUND"


def test_action_errors(state):
    t = state.table("dmac")
    cases = [
        (ActionCall("MyIngress.nope"), "unknown action"),
        (ActionCall("MyIngress.set_nhop", (1, 2)), "not an action of table"),
        (ActionCall(FWD, ()), "takes 1 parameter"),
        (ActionCall(FWD, (1, 2)), "takes 1 parameter"),
        (ActionCall(FWD, (512,)), "does not fit in 9 bits"),
        (None, "action must be set"),
    ]
    for action, message in cases:
        with pytest.raises(RuntimeApiError) as e:
            t.insert(Entry(keys=(ex(1),), action=action))
        assert code(e) == "INVALID_ARGUMENT" and message in str(e.value), action
    assert len(t) == 0


def test_table_full(state):
    t = state.table("dmac")  # size 4
    for i in range(4):
        t.insert(Entry(keys=(ex(i),), action=fwd(i)))
    with pytest.raises(RuntimeApiError) as e:
        t.insert(Entry(keys=(ex(9),), action=fwd(1)))
    assert code(e) == "RESOURCE_EXHAUSTED"
    t.delete((ex(0),))
    t.insert(Entry(keys=(ex(9),), action=fwd(1)))
    assert len(t) == 4


def test_modify_delete_get_and_entries_order(state):
    t = state.table("dmac")
    for i in range(3):
        t.insert(Entry(keys=(ex(i),), action=fwd(i)))
    t.modify(Entry(keys=(ex(1),), action=ActionCall("MyIngress.drop")))
    assert t.get((ex(1),)).action == ActionCall("MyIngress.drop")
    assert t.lookup((1,)).action == ActionCall("MyIngress.drop")
    t.delete((ex(0),))
    assert t.lookup((0,)) is None
    t.insert(Entry(keys=(ex(7),), action=fwd(7)))  # reuses handle 0, with a new version
    assert [e.keys[0].value for e in t.entries()] == [7, 1, 2]
    assert t.get((ex(7),)).handle == (1 << 24) | 0
    t.clear()
    assert t.entries() == [] and t.lookup((1,)) is None
    t.insert(Entry(keys=(ex(5),), action=fwd(5)))
    assert t.get((ex(5),)).handle == 0  # handles restart after a clear, as in BMv2


def test_direct_counter_kept_on_modify(state):
    t = state.table("ipv4_lpm")
    t.insert(Entry(keys=(lpm(ip("10.0.0.0"), 8),), action=fwd(1)))
    entry = t.lookup((ip("10.1.2.3"),))
    entry.direct_counter[0] += 1
    entry.direct_counter[1] += 100
    t.modify(Entry(keys=(lpm(ip("10.0.0.0"), 8),), action=fwd(2)))
    assert t.get((lpm(ip("10.0.0.0"), 8),)).direct_counter == [1, 100]


# ---- lpm --------------------------------------------------------------------------------------

def test_lpm_longest_prefix_wins(state):
    t = state.table("ipv4_lpm")
    t.insert(Entry(keys=(lpm(ip("10.0.0.0"), 8),), action=fwd(1)))
    t.insert(Entry(keys=(lpm(ip("10.1.0.0"), 16),), action=fwd(2)))
    t.insert(Entry(keys=(lpm(ip("10.1.2.3"), 32),), action=fwd(3)))
    t.insert(Entry(keys=(None,), action=fwd(4)))  # 0.0.0.0/0
    assert t.lookup((ip("10.1.2.3"),)).action == fwd(3)
    assert t.lookup((ip("10.1.2.4"),)).action == fwd(2)
    assert t.lookup((ip("10.2.0.1"),)).action == fwd(1)
    assert t.lookup((ip("11.0.0.1"),)).action == fwd(4)
    t.delete((lpm(ip("10.1.0.0"), 16),))
    assert t.lookup((ip("10.1.2.4"),)).action == fwd(1)
    t.delete((None,))
    assert t.lookup((ip("11.0.0.1"),)) is None


def test_lpm_errors(state):
    t = state.table("ipv4_lpm")
    cases = [
        (lpm(ip("10.0.0.0"), 0), "prefix length of 0"),
        (lpm(ip("10.0.0.0"), 33), "prefix length 33 > bitwidth 32"),
        (lpm(ip("10.0.0.0"), -1), "cannot be < 0"),
        (lpm(ip("10.0.0.1"), 24), "bits past the prefix length must be zero"),
    ]
    for key, message in cases:
        with pytest.raises(RuntimeApiError) as e:
            t.insert(Entry(keys=(key,), action=fwd(1)))
        assert code(e) == "INVALID_ARGUMENT" and message in str(e.value)


def test_lpm_with_exact_field(state):
    t = state.table("vrf_lpm")
    t.insert(Entry(keys=(ex(1), lpm(ip("10.0.0.0"), 8)), action=fwd(1)))
    t.insert(Entry(keys=(ex(2), lpm(ip("10.0.0.0"), 16)), action=fwd(2)))
    t.insert(Entry(keys=(ex(2), lpm(ip("10.0.0.0"), 8)), action=fwd(3)))
    assert t.lookup((1, ip("10.0.1.1"))).action == fwd(1)
    assert t.lookup((2, ip("10.0.1.1"))).action == fwd(2)
    assert t.lookup((2, ip("10.1.1.1"))).action == fwd(3)
    assert t.lookup((3, ip("10.0.1.1"))) is None


# ---- ternary / range / optional ---------------------------------------------------------------

def test_ternary_priority_order(state):
    t = state.table("acl")
    t.insert(Entry(keys=(tern(ip("10.0.0.0"), 0xFF000000), None, None), priority=10,
                   action=fwd(1)))
    t.insert(Entry(keys=(tern(ip("10.1.0.0"), 0xFFFF0000), None, None), priority=5,
                   action=fwd(2)))
    t.insert(Entry(keys=(tern(ip("10.1.0.0"), 0xFFFF0000), None, None), priority=20,
                   action=fwd(3)))
    # same key, two priorities: both are entries; the higher priority wins
    assert t.lookup((ip("10.1.2.3"), 6, 80)).action == fwd(3)
    t.delete((tern(ip("10.1.0.0"), 0xFFFF0000), None, None), 20)
    # 10/8 at priority 10 now beats the more specific 10.1/16 at priority 5
    assert t.lookup((ip("10.1.2.3"), 6, 80)).action == fwd(1)
    assert t.lookup((ip("11.1.2.3"), 6, 80)) is None


def test_equal_priority_lowest_handle_wins(state):
    t = state.table("acl")
    t.insert(Entry(keys=(tern(0, 0x80000000), None, None), priority=7, action=fwd(1)))
    t.insert(Entry(keys=(tern(0, 0x40000000), None, None), priority=7, action=fwd(2)))
    assert t.lookup((0, 0, 0)).action == fwd(1)
    t.delete((tern(0, 0x80000000), None, None), 7)
    t.insert(Entry(keys=(tern(0, 0x20000000), None, None), priority=7, action=fwd(3)))
    # the new entry took handle 0, below the remaining entry's handle 1
    assert t.lookup((0, 0, 0)).action == fwd(3)


def test_range_bounds_and_optional(state):
    t = state.table("acl")
    t.insert(Entry(keys=(None, opt(6), rng(80, 90)), priority=1, action=fwd(1)))
    t.insert(Entry(keys=(None, None, rng(85, 85)), priority=2, action=fwd(2)))
    assert t.lookup((0, 6, 79)) is None
    assert t.lookup((0, 6, 80)).action == fwd(1)
    assert t.lookup((0, 6, 90)).action == fwd(1)
    assert t.lookup((0, 6, 91)) is None
    assert t.lookup((0, 17, 80)) is None  # optional protocol 6 does not match 17
    assert t.lookup((0, 17, 85)).action == fwd(2)
    assert t.lookup((0, 6, 85)).action == fwd(2)
    assert t.lookup((0, 6, 84)).action == fwd(1)


def test_priority_table_errors(state):
    t = state.table("acl")
    cases = [
        ((tern(1, 0), None, None), 1, "0 mask"),
        ((tern(3, 1), None, None), 1, "value & mask must equal value"),
        ((None, None, rng(0, 0xFFFF)), 1, "full range"),
        ((None, None, rng(9, 8)), 1, "low must be <= high"),
        ((None, opt(256), None), 1, "does not fit in 8 bits"),
        ((None, opt(6), None), 0, "zero priority"),
    ]
    for keys, prio, message in cases:
        with pytest.raises(RuntimeApiError) as e:
            t.insert(Entry(keys=keys, priority=prio, action=fwd(1)))
        assert code(e) == "INVALID_ARGUMENT" and message in str(e.value), message


def test_all_dont_care_entry(state):
    t = state.table("acl")
    t.insert(Entry(keys=(None, None, None), priority=1, action=fwd(9)))
    assert t.lookup((1, 2, 3)).action == fwd(9)


# ---- defaults, scopes, const ------------------------------------------------------------------

def test_default_entry(state):
    t = state.table("dmac")
    t.set_default(fwd(5))
    assert t.default_entry.action == fwd(5)
    t.reset_default()
    assert t.default_entry.action == ActionCall("MyIngress.drop")
    with pytest.raises(RuntimeApiError) as e:
        t.set_default(ActionCall(FWD, ()))
    assert code(e) == "INVALID_ARGUMENT"


def test_action_scopes(state):
    t = state.table("scoped")
    with pytest.raises(RuntimeApiError) as e:
        t.insert(Entry(keys=(ex(1),), action=ActionCall("MyIngress.only_default")))
    assert code(e) == "PERMISSION_DENIED" and "@defaultonly" in str(e.value)
    with pytest.raises(RuntimeApiError) as e:
        t.set_default(ActionCall("MyIngress.only_table", (1,)))
    assert code(e) == "PERMISSION_DENIED" and "@tableonly" in str(e.value)
    t.insert(Entry(keys=(ex(1),), action=ActionCall("MyIngress.only_table", (3,))))
    t.set_default(ActionCall("MyIngress.only_default"))
    assert t.lookup((1,)).action == ActionCall("MyIngress.only_table", (3,))


def test_const_table_and_const_default(state):
    t = state.table("fixed")
    assert t.lookup((0x800,)).action == fwd(1)
    assert t.entries()[0].is_const
    for op in (lambda: t.insert(Entry(keys=(ex(0x806),), action=fwd(2))),
               lambda: t.modify(Entry(keys=(ex(0x800),), action=fwd(2))),
               lambda: t.delete((ex(0x800),)),
               lambda: t.set_default(fwd(3)),
               lambda: t.reset_default()):
        with pytest.raises(RuntimeApiError) as e:
            op()
        assert code(e) == "PERMISSION_DENIED"
    assert t.lookup((0x800,)).action == fwd(1)


def test_const_ternary_entries_first_listed_wins(state):
    t = state.table("fixed_ternary")
    assert t.lookup((0x800,)).action == fwd(1)
    assert t.lookup((0x8FF,)).action == fwd(2)
    assert t.lookup((0x900,)) is None


def test_reset_restores_initial_state(state):
    t = state.table("dmac")
    t.insert(Entry(keys=(ex(1),), action=fwd(1)))
    t.set_default(fwd(3))
    state.reset()
    assert len(t) == 0 and t.lookup((1,)) is None
    assert t.default_entry.action == ActionCall("MyIngress.drop")
    assert state.table("fixed").lookup((0x800,)).action == fwd(1)
    t.insert(Entry(keys=(ex(1),), action=fwd(1)))
    assert t.get((ex(1),)).handle == 0


def test_names_and_aliases(state):
    assert state.table("ipv4_lpm") is state.table("MyIngress.ipv4_lpm")
    with pytest.raises(KeyError, match="no table named 'nope'"):
        state.table("nope")


def test_const_entries_spell_dont_care_as_full_range_or_zero_mask():
    from runtime_models import model

    from p4switch.cpmodel import ConstEntry, MatchField, Table
    from p4switch.runtime import RuntimeState

    m = model()
    m.tables.append(Table(
        "MyIngress.classify",
        match_fields=[MatchField("hdr.tcp.dstPort", bitwidth=16, match_kind="range"),
                      MatchField("hdr.ipv4.srcAddr", bitwidth=32, match_kind="ternary")],
        action_refs=m.table("MyIngress.acl").action_refs, size=1,
        const_entries=[
            ConstEntry([rng(80, 80), tern(0, 0)], fwd(1)),
            ConstEntry([rng(0, 0xFFFF), tern(0, 0)], fwd(2)),  # catch-all, listed last
        ]))
    t = RuntimeState(m).table("classify")
    assert len(t) == 2  # const entries are not limited by the size
    assert t.lookup((80, 5)).action == fwd(1)
    assert t.lookup((81, 5)).action == fwd(2)
    assert t.entries()[1].keys == (None, None)
