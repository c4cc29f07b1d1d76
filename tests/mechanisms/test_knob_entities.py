"""`controller.knobs` turns a mechanism's knob setting into P4Runtime entities, by the P4Info's
match kinds, and refuses settings that do not fit the knob, naming it."""

from __future__ import annotations

from functools import cache

import pytest

from controller.knobs import KnobError, knob_default, knob_entry, knob_state
from controller.pipeline import build_pipeline
from controller.schema import Schema
from mechanisms import ecn, flowlet, pfc, program_path


@cache
def schema(name: str) -> Schema:
    return Schema(build_pipeline(program_path(name), "p4switch").p4info)


def test_entries_take_the_match_kind_from_the_p4info() -> None:
    s = schema("ecmp")
    entry = knob_entry(s, ecn.MECHANISM.knob("ecn_threshold"), [(5, 300)], {"threshold": 7},
                       priority=1).table_entry
    assert entry.table_id == s.table(ecn.PROFILE_TABLE).preamble.id and entry.priority == 1
    (field,) = entry.match
    assert (field.range.low, field.range.high) == (b"\x05", b"\x01\x2c")
    assert entry.action.action.action_id == s.action(ecn.MARK_ACTION).preamble.id
    assert [(p.param_id, p.value) for p in entry.action.action.params] == [(1, b"\x07")]
    queue = knob_entry(s, pfc.MECHANISM.knob("xoff_xon"), [2, 3],
                       {"refresh": 9, "quanta": 8, "xon_packets": 4, "xoff_packets": 10})
    assert [m.exact.value for m in queue.table_entry.match] == [b"\x02", b"\x03"]
    params = s.action(pfc.CONFIG_ACTION).params  # written in the action's order
    assert [p.param_id for p in queue.table_entry.action.action.params] == [p.id for p in params]


def test_defaults_and_state() -> None:
    s = schema("flowlet")
    gap = flowlet.MECHANISM.knob("flowlet_gap")
    entity = knob_default(s, gap, {"gap": 20_000})
    assert entity.table_entry.is_default_action
    state = knob_state(s, gap, default={"gap": 20_000})
    table_id = s.table(flowlet.GAP_TABLE).preamble.id
    action_id = s.action(flowlet.GAP_ACTION).preamble.id
    assert state.defaults == {table_id: ("action", action_id, ((1, b"\x4e\x20"),))}
    assert not state.entries


def test_settings_that_do_not_fit_are_refused() -> None:
    s = schema("flowlet")
    gap = flowlet.MECHANISM.knob("flowlet_gap")
    with pytest.raises(KnobError, match=r"knob flowlet_gap takes parameters \(gap\), got \(gab\)"):
        knob_default(s, gap, {"gab": 1})
    with pytest.raises(KnobError, match="sets the default action of .*flowlet_gap: no entries"):
        knob_entry(s, gap, [], {"gap": 1})
    with pytest.raises(KnobError, match="sets a default action: give its parameters"):
        knob_state(s, gap)
    threshold = ecn.MECHANISM.knob("ecn_threshold")
    with pytest.raises(KnobError, match=r"matches on \(standard_metadata.enq_qdepth\), got 2"):
        knob_entry(s, threshold, [1, 2], {"threshold": 1})
    with pytest.raises(KnobError, match="range field standard_metadata.enq_qdepth cannot take 5"):
        knob_entry(s, threshold, [5], {"threshold": 1})
    with pytest.raises(ValueError, match="threshold 70000 does not fit in 16 bits"):
        knob_entry(s, threshold, [(1, 2)], {"threshold": 70_000})
