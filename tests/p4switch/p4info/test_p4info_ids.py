"""Ids, aliases, @id overrides and the id/name index."""

from __future__ import annotations

import pytest

from p4switch.cpmodel import (
    Action,
    ActionProfile,
    ActionRef,
    Annotation,
    ControlPlaneModel,
    MatchField,
    Param,
    Table,
)
from p4switch.p4info import build_p4info, ids
from p4switch.p4info.index import P4InfoIndex


def test_jenkins_matches_p4c_ids() -> None:
    # Ids from p4c's golden files: NoAction is 0x01xxxxxx = 21257015 everywhere.
    assert 0x01 << 24 | ids.jenkins_one_at_a_time(b"NoAction") & 0xFFFFFF == 21257015
    assert 0x02 << 24 | ids.jenkins_one_at_a_time(b"ingress.bd") & 0xFFFFFF == 48392551


def test_collision_probes_in_name_order() -> None:
    symbols = ids.SymbolIds()
    # Two names forced onto one id with @id-free hashing is hard to find; reserve the hash of
    # "b" with an explicit id instead: "b" must then move to the next value.
    taken = ids.jenkins_one_at_a_time(b"b") & 0xFFFFFF
    symbols.add(ids.ACTION, "a", taken)
    symbols.add(ids.ACTION, "b")
    symbols.assign()
    assert symbols.id(ids.ACTION, "a") == 0x01 << 24 | taken
    assert symbols.id(ids.ACTION, "b") == 0x01 << 24 | (taken + 1) & 0xFFFFFF


def test_explicit_id_wrong_prefix_rejected() -> None:
    symbols = ids.SymbolIds()
    symbols.add(ids.TABLE, "t", 0x01000005)
    with pytest.raises(ids.P4InfoIdError, match="wrong 8-bit prefix"):
        symbols.assign()


def test_duplicate_explicit_id_rejected() -> None:
    symbols = ids.SymbolIds()
    symbols.add(ids.ACTION, "a", 7)
    symbols.add(ids.ACTION, "b", 7)
    with pytest.raises(ids.P4InfoIdError, match="multiple declarations"):
        symbols.assign()


def test_aliases_shortest_unique_suffix_across_kinds() -> None:
    s = ids.SuffixSet(["ingress.on_miss", "egress.on_miss", "c.x.r", "d.y.r", "r2", "e.a"])
    assert s.shortest_unique_suffix("ingress.on_miss") == "ingress.on_miss"
    assert s.shortest_unique_suffix("c.x.r") == "x.r"
    assert s.shortest_unique_suffix("r2") == "r2"
    assert s.shortest_unique_suffix("e.a") == "a"
    # A symbol whose full name is also the suffix of another keeps the full name.
    t = ids.SuffixSet(["a.b", "b"])
    assert t.shortest_unique_suffix("b") == "b"
    assert t.shortest_unique_suffix("a.b") == "a.b"


def _model() -> ControlPlaneModel:
    act = Action(
        "c.set",
        [Annotation("id", "5"), Annotation("brief", '"sets it"'), Annotation("my_anno", "1")],
        params=[Param("x", bitwidth=8, explicit_id=2), Param("y", bitwidth=4)],
        explicit_id=5,
    )
    table = Table(
        "c.t",
        match_fields=[
            MatchField("h.a", bitwidth=8, match_kind="ternary"),
            MatchField("h.s", bitwidth=8, match_kind="selector"),
            MatchField("h.b", bitwidth=8, match_kind="range"),
        ],
        action_refs=[ActionRef("c.set", [Annotation("tableonly"), Annotation("brief", '"x"')],
                               scope="TABLE_ONLY")],
        implementation="c.sel",
        const_entries=[],
        idle_timeout=True,
    )
    profile = ActionProfile(
        "c.sel",
        [
            Annotation("max_group_size", "8"),
            Annotation("selector_size_semantics", '"sum_of_members"'),
            Annotation("max_member_weight", "4"),
            Annotation("keep", ""),
        ],
        table_names=["c.t"], with_selector=True, size=64,
    )
    return ControlPlaneModel("m", tables=[table], actions=[act], action_profiles=[profile])


def test_p4c_rules_for_ids_annotations_and_selectors() -> None:
    info = build_p4info(_model())
    action = info.actions[0]
    assert action.preamble.id == 0x01000005
    assert list(action.preamble.annotations) == ["@my_anno(1)"]
    assert action.preamble.doc.brief == "sets it"
    # p4c's allocator: the position counter also advances past an explicitly numbered field.
    assert [(p.id, p.name) for p in action.params] == [(2, "x"), (3, "y")]
    table = info.tables[0]
    # The selector key is not listed but keeps its position in the id numbering.
    assert [(f.id, f.name) for f in table.match_fields] == [(1, "h.a"), (3, "h.b")]
    assert table.action_refs[0].scope == table.action_refs[0].TABLE_ONLY
    assert list(table.action_refs[0].annotations) == ["@tableonly"]
    assert table.is_const_table and not table.has_initial_entries
    assert table.idle_timeout_behavior == table.NOTIFY_CONTROL
    profile = info.action_profiles[0]
    assert table.implementation_id == profile.preamble.id
    assert list(profile.preamble.annotations) == ["@keep"]
    assert profile.max_group_size == 8
    assert profile.sum_of_members.max_member_weight == 4
    assert list(profile.table_ids) == [table.preamble.id]


def test_index_lookups() -> None:
    index = P4InfoIndex(build_p4info(_model()))
    tid = index.id("tables", "c.t")
    assert index.id("tables", "t") == tid  # by alias
    assert index.name(tid) == "c.t" and index.kind(tid) == "tables"
    assert index.table(tid).preamble.name == "c.t"
    assert index.match_field("c.t", "h.b").id == 3
    assert index.param("set", 2).name == "x"
    with pytest.raises(KeyError, match="no table"):
        index.table(index.id("actions", "c.set"))
    with pytest.raises(KeyError, match="no action named"):
        index.id("actions", "nope")


def test_actions_and_digests_listed_once() -> None:
    from p4switch.cpmodel import Digest, StructField

    digest = Digest("d_t", fields=[StructField("a", 8)])
    model = ControlPlaneModel(
        "m",
        actions=[Action("NoAction"), Action("c.a"), Action("NoAction")],
        digests=[digest, Digest("d_t", fields=[StructField("a", 8)])],
    )
    info = build_p4info(model)
    assert [a.preamble.name for a in info.actions] == ["NoAction", "c.a"]
    assert [d.preamble.name for d in info.digests] == ["d_t"]
    assert [m.name for m in info.type_info.structs["d_t"].members] == ["a"]


def test_translated_new_type_and_typed_param() -> None:
    from p4switch.cpmodel import NewType

    action = Action("c.set", params=[Param("port", bitwidth=32, type_name="PortId_t")])
    model = ControlPlaneModel(
        "m", actions=[action],
        new_types=[NewType("PortId_t", 9, translation_uri="p4.org/psa/v1/PortId_t",
                           sdn_bitwidth=32)],
    )
    info = build_p4info(model)
    assert info.actions[0].params[0].type_name.name == "PortId_t"
    translated = info.type_info.new_types["PortId_t"].translated_type
    assert (translated.uri, translated.sdn_bitwidth) == ("p4.org/psa/v1/PortId_t", 32)
