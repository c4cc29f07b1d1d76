"""Action profiles and selectors: members, weighted groups, watch ports, one-shot, errors."""

import pytest
from runtime_models import model

from p4switch.runtime import (
    ActionCall,
    Entry,
    FieldMatch,
    GroupRef,
    MemberRef,
    OneShot,
    OneShotAction,
    RuntimeApiError,
    RuntimeState,
)
from p4switch.runtime.hashing import crc16, pack_fields


def nhop(port):
    return ActionCall("MyIngress.set_nhop", (0x0A0000000000 + port, port))


def lpm(v, plen):
    return FieldMatch("lpm", value=v, prefix_len=plen)


@pytest.fixture
def down():
    return set()


@pytest.fixture
def st(down):
    return RuntimeState(model(), port_up=lambda port: port not in down)


def choices(profile, ref, n):
    return [profile.select(ref, h).args[1] for h in range(n)]


def test_weighted_group_member_order(st):
    p = st.action_profile("ecmp_selector")
    for mid in (1, 2, 3):
        p.insert_member(mid, nhop(mid))
    p.insert_group(10, [(1, 1, None), (2, 2, None), (3, 1, None)])
    # handles: m1=0, m2=1, m3=2, copy of m2=3 -> sorted slots [m1, m2, m3, m2]
    assert choices(p, GroupRef(10), 8) == [1, 2, 3, 2, 1, 2, 3, 2]
    assert p.member(2).handles == [1, 3]
    p.insert_group(11, [(3, 3, None)])
    assert p.member(3).handles == [2, 4, 5]
    assert choices(p, GroupRef(11), 3) == [3, 3, 3]
    p.delete_group(10)
    assert p.member(2).handles == [1]  # the copy is freed once no group needs it
    p.insert_member(4, nhop(4))
    assert p.member(4).handles == [3]  # smallest free handle, as BMv2 allocates
    assert p.select(MemberRef(4), 12345) == nhop(4)


def test_hash_truncated_to_32_bits(st):
    p = st.action_profile("ecmp_selector")
    for mid in (1, 2, 3):
        p.insert_member(mid, nhop(mid))
    p.insert_group(1, [(1, 1, None), (2, 1, None), (3, 1, None)])
    # (1 << 32) + 1 truncates to 1 -> second member; untruncated it would pick member 3
    assert p.select(GroupRef(1), (1 << 32) + 1) == nhop(2)


def test_modify_group_weights_and_members(st):
    p = st.action_profile("ecmp_selector")
    for mid in (1, 2):
        p.insert_member(mid, nhop(mid))
    p.insert_group(5, [(1, 1, None)])
    assert choices(p, GroupRef(5), 2) == [1, 1]
    p.modify_group(5, [(1, 1, None), (2, 3, None)])
    assert choices(p, GroupRef(5), 4) == [1, 2, 2, 2]
    p.modify_group(5, [(2, 1, None)])
    assert choices(p, GroupRef(5), 2) == [2, 2]
    assert p.member(2).handles == [1]
    p.modify_member(2, nhop(7))
    assert p.select(GroupRef(5), 0) == nhop(7)


def test_watch_port_down_member_skipped(st, down):
    p = st.action_profile("ecmp_selector")
    for mid in (1, 2, 3):
        p.insert_member(mid, nhop(mid))
    p.insert_group(1, [(1, 1, 11), (2, 1, 12), (3, 1, 13)])
    assert choices(p, GroupRef(1), 3) == [1, 2, 3]
    down.add(12)
    assert choices(p, GroupRef(1), 4) == [1, 3, 1, 3]
    down.update({11, 13})
    assert p.select(GroupRef(1), 0) is None  # no live member: no action
    down.clear()
    assert choices(p, GroupRef(1), 3) == [1, 2, 3]


def test_selector_hash_uses_profile_algorithm(st):
    p = st.action_profile("ecmp_selector")
    fields = [(0x0A000001, 32), (0x0A000002, 32), (6, 8), (1234, 16), (80, 16)]
    assert p.selector_hash(fields) == crc16(pack_fields(fields))
    with pytest.raises(ValueError, match="no selector"):
        st.action_profile("profile").selector_hash(fields)


def test_indirect_table_entries(st):
    t = st.table("ecmp")
    p = st.action_profile("ecmp_selector")
    p.insert_member(1, nhop(1))
    p.insert_member(2, nhop(2))
    p.insert_group(7, [(1, 1, None), (2, 1, None)])
    t.insert(Entry(keys=(lpm(0x0A000000, 8),), action=GroupRef(7)))
    t.insert(Entry(keys=(lpm(0x0B000000, 8),), action=MemberRef(2)))
    hit = t.lookup((0x0A010203,))
    assert p.select(hit.action, 1) == nhop(2)
    assert p.select(t.lookup((0x0B000001,)).action, 0) == nhop(2)
    # referenced members/groups cannot go away
    for op in (lambda: p.delete_member(2), lambda: p.delete_group(7)):
        with pytest.raises(RuntimeApiError) as e:
            op()
        assert e.value.code == "FAILED_PRECONDITION"
    t.delete((lpm(0x0B000000, 8),))
    t.delete((lpm(0x0A000000, 8),))
    p.delete_group(7)
    p.delete_member(2)
    # unknown member/group in an entry
    for ref in (MemberRef(9), GroupRef(9)):
        with pytest.raises(RuntimeApiError) as e:
            t.insert(Entry(keys=(lpm(0x0C000000, 8),), action=ref))
        assert e.value.code == "INVALID_ARGUMENT"
    # like BMv2, no entry may point to an empty group (but a group may become empty later)
    p.insert_group(8, [])
    with pytest.raises(RuntimeApiError) as e:
        t.insert(Entry(keys=(lpm(0x0C000000, 8),), action=GroupRef(8)))
    assert e.value.code == "UNKNOWN" and "EMPTY_GRP" in str(e.value)
    p.modify_group(8, [(1, 1, None)])
    t.insert(Entry(keys=(lpm(0x0C000000, 8),), action=GroupRef(8)))
    p.modify_group(8, [])
    assert p.select(t.lookup((0x0C000001,)).action, 3) is None  # runs no action
    # direct action on an indirect table, indirect action on a direct table, defaults
    with pytest.raises(RuntimeApiError) as e:
        t.insert(Entry(keys=(lpm(0x0C000000, 8),), action=nhop(1)))
    assert e.value.code == "INVALID_ARGUMENT"
    with pytest.raises(RuntimeApiError) as e:
        st.table("dmac").insert(Entry(keys=(FieldMatch("exact", value=1),), action=MemberRef(1)))
    assert e.value.code == "INVALID_ARGUMENT"
    with pytest.raises(RuntimeApiError) as e:
        t.set_default(nhop(1))
    assert e.value.code == "INVALID_ARGUMENT"


def test_member_and_group_errors(st):
    p = st.action_profile("ecmp_selector")
    p.insert_member(1, nhop(1))

    def err(op):
        with pytest.raises(RuntimeApiError) as e:
            op()
        return e.value.code

    assert err(lambda: p.insert_member(1, nhop(1))) == "ALREADY_EXISTS"
    assert err(lambda: p.modify_member(9, nhop(1))) == "NOT_FOUND"
    assert err(lambda: p.delete_member(9)) == "NOT_FOUND"
    assert err(lambda: p.insert_member(2, ActionCall("MyIngress.forward", (1,)))) \
        == "INVALID_ARGUMENT"  # not an action of the profile's tables
    assert err(lambda: p.insert_member(2, ActionCall("MyIngress.set_nhop", (1,)))) \
        == "INVALID_ARGUMENT"
    assert err(lambda: p.insert_group(1, [(1, 0, None)])) == "INVALID_ARGUMENT"
    assert err(lambda: p.insert_group(1, [(1, 1, None), (1, 2, None)])) == "INVALID_ARGUMENT"
    assert err(lambda: p.insert_group(1, [(9, 1, None)])) == "NOT_FOUND"
    assert err(lambda: p.insert_group(1, [(1, 9, None)])) == "RESOURCE_EXHAUSTED"  # max 8
    assert err(lambda: p.insert_group(1, [(1, 3, None)], max_size=2)) == "RESOURCE_EXHAUSTED"
    assert err(lambda: p.insert_group(1, [], max_size=9)) == "INVALID_ARGUMENT"
    assert err(lambda: p.insert_group(1, [], max_size=-1)) == "INVALID_ARGUMENT"
    p.insert_group(1, [(1, 1, None)], max_size=4)
    assert err(lambda: p.insert_group(1, [])) == "ALREADY_EXISTS"
    assert err(lambda: p.modify_group(1, [], max_size=5)) == "INVALID_ARGUMENT"
    assert err(lambda: p.modify_group(2, [])) == "NOT_FOUND"
    assert err(lambda: p.delete_group(2)) == "NOT_FOUND"
    plain = st.action_profile("profile")
    assert err(lambda: plain.insert_group(1, [])) == "INVALID_ARGUMENT"  # no selector


def test_oneshot_hidden_group(st, down):
    t = st.table("ecmp")
    p = st.action_profile("ecmp_selector")
    shot = OneShot((OneShotAction(nhop(1)), OneShotAction(nhop(2), weight=2, watch_port=22)))
    t.insert(Entry(keys=(lpm(0x0A000000, 8),), action=shot))
    ref = t.lookup((0x0A000001,)).action
    assert ref.group_id is not None and p.groups() == {}
    assert choices(p, ref, 3) == [1, 2, 2]
    down.add(22)
    assert choices(p, ref, 2) == [1, 1]
    # mixing programming modes
    with pytest.raises(RuntimeApiError) as e:
        p.insert_member(1, nhop(1))
    assert e.value.code == "INVALID_ARGUMENT" and "mix" in str(e.value)
    # modify replaces the hidden group; delete frees it
    t.modify(Entry(keys=(lpm(0x0A000000, 8),), action=OneShot((OneShotAction(nhop(3)),))))
    assert p.select(t.lookup((0x0A000001,)).action, 5) == nhop(3)
    t.delete((lpm(0x0A000000, 8),))
    p.insert_member(1, nhop(1))  # empty again: manual mode is allowed now
    assert p.member(1).handles == [0]
    with pytest.raises(RuntimeApiError) as e:
        t.insert(Entry(keys=(lpm(0x0B000000, 8),), action=shot))
    assert e.value.code == "INVALID_ARGUMENT"


def test_oneshot_errors(st):
    t = st.table("ecmp")

    def err(shot):
        with pytest.raises(RuntimeApiError) as e:
            t.insert(Entry(keys=(lpm(0x0A000000, 8),), action=shot))
        return e.value.code

    assert err(OneShot(())) == "UNIMPLEMENTED"
    assert err(OneShot((OneShotAction(nhop(1), weight=0),))) == "INVALID_ARGUMENT"
    assert err(OneShot((OneShotAction(nhop(1), weight=9),))) == "RESOURCE_EXHAUSTED"
    assert err(OneShot((OneShotAction(ActionCall("MyIngress.forward", (1,))),))) \
        == "INVALID_ARGUMENT"
    assert len(t) == 0


def test_action_profile_without_selector(st):
    t = st.table("indirect")
    p = st.action_profile("profile")
    p.insert_member(3, ActionCall("MyIngress.forward", (3,)))
    t.insert(Entry(keys=(FieldMatch("exact", value=0x800),), action=MemberRef(3)))
    assert p.select(t.lookup((0x800,)).action, 0) == ActionCall("MyIngress.forward", (3,))
    assert list(p.members()) == [3]
    st.reset()
    assert p.members() == {} and len(t) == 0
