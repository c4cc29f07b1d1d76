"""Random member/group/entry operations keep the selector's bookkeeping consistent: every BMv2
member handle belongs to exactly one member (or one-shot group), a member has as many handles as
its largest weight in any group, and a group selects only its own members' actions."""

import random

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


def nhop(i):
    return ActionCall("MyIngress.set_nhop", (i, i % 512))


def lpm8(first_octet):
    return (FieldMatch("lpm", value=first_octet << 24, prefix_len=8),)


def test_random_operations_keep_invariants():
    rng = random.Random(3)
    state = RuntimeState(model())
    p = state.action_profile("ecmp_selector")
    t = state.table("ecmp")
    codes = set()

    def group_spec():
        return [(m, rng.randrange(1, 4), rng.choice([None, 1]))
                for m in rng.sample(range(12), rng.randrange(0, 4))]

    ops = [
        lambda: p.insert_member(rng.randrange(12), nhop(rng.randrange(100))),
        lambda: p.modify_member(rng.randrange(12), nhop(rng.randrange(100))),
        lambda: p.delete_member(rng.randrange(12)),
        lambda: p.insert_group(rng.randrange(6), group_spec()),
        lambda: p.modify_group(rng.randrange(6), group_spec()),
        lambda: p.delete_group(rng.randrange(6)),
        lambda: t.insert(Entry(keys=lpm8(rng.randrange(4)), action=rng.choice(
            [MemberRef(rng.randrange(12)), GroupRef(rng.randrange(6))]))),
        lambda: t.delete(lpm8(rng.randrange(4))),
        lambda: t.insert(Entry(keys=lpm8(4 + rng.randrange(2)), action=OneShot(tuple(
            OneShotAction(nhop(i), rng.randrange(1, 3)) for i in range(rng.randrange(1, 3)))))),
        lambda: t.delete(lpm8(4 + rng.randrange(2))),
    ]
    for _ in range(4000):
        try:
            rng.choice(ops)()
        except RuntimeApiError as e:
            codes.add(e.code)
        owners: dict[int, object] = {}
        for mid, member in p.members().items():
            weights = [g.members[mid][0] for g in p.groups().values() if mid in g.members]
            assert len(member.handles) == max([1, *weights])
            for h in member.handles:
                assert h not in owners
                owners[h] = mid
                assert p.action_of_handle(h) == member.action
        for group in p.groups().values():
            assert group.handles == sorted(
                h for mid, (w, _) in group.members.items() for h in p.member(mid).handles[:w])
        for entry in t.entries():
            if isinstance(entry.action, (GroupRef, OneShot)):
                gid = entry.action.group_id
                handles = p.group(gid).handles if gid >= 0 else None
                for h in range(4):
                    chosen = p.select(entry.action, h)
                    if handles is not None:
                        assert chosen is None or chosen in [p.action_of_handle(x)
                                                            for x in handles]
                if gid < 0:
                    for x in p._groups[gid].handles:
                        assert x not in owners  # one-shot handles are their own
                        owners[x] = gid
        assert set(owners) == p._handles._used  # nothing leaked, nothing shared
    assert {"NOT_FOUND", "ALREADY_EXISTS", "INVALID_ARGUMENT", "FAILED_PRECONDITION"} <= codes
