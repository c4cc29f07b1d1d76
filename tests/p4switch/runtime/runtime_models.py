"""Small control-plane models for the runtime tests, written as p4c would describe them."""

from __future__ import annotations

from p4switch.cpmodel import (
    Action,
    ActionCall,
    ActionProfile,
    ActionRef,
    ConstEntry,
    ControlPlaneModel,
    Counter,
    Digest,
    FieldMatch,
    MatchField,
    Meter,
    Param,
    Register,
    StructField,
    Table,
)

ACTIONS = [
    Action("NoAction"),
    Action("MyIngress.drop"),
    Action("MyIngress.forward", params=[Param("port", bitwidth=9)]),
    Action("MyIngress.set_nhop", params=[Param("dmac", bitwidth=48), Param("port", bitwidth=9)]),
    Action("MyIngress.only_default"),
    Action("MyIngress.only_table", params=[Param("x", bitwidth=8)]),
    Action("MyEgress.drop"),  # makes "drop" ambiguous program-wide (not in any table)
]


def refs(*names: str, scopes: dict[str, str] | None = None) -> list[ActionRef]:
    scopes = scopes or {}
    return [ActionRef(n, scope=scopes.get(n, "TABLE_AND_DEFAULT")) for n in names]


def model() -> ControlPlaneModel:
    fwd = refs("MyIngress.forward", "MyIngress.drop", "NoAction")
    tables = [
        Table("MyIngress.dmac", match_fields=[MatchField("hdr.ethernet.dstAddr", bitwidth=48)],
              action_refs=fwd, default_action=ActionCall("MyIngress.drop"), size=4),
        Table("MyIngress.ipv4_lpm",
              match_fields=[MatchField("hdr.ipv4.dstAddr", bitwidth=32, match_kind="lpm")],
              action_refs=fwd, default_action=ActionCall("MyIngress.drop"),
              direct_counter="MyIngress.lpm_counter"),
        Table("MyIngress.vrf_lpm",
              match_fields=[MatchField("meta.vrf", bitwidth=8),
                            MatchField("hdr.ipv4.dstAddr", bitwidth=32, match_kind="lpm")],
              action_refs=fwd, default_action=ActionCall("NoAction")),
        Table("MyIngress.acl",
              match_fields=[MatchField("hdr.ipv4.srcAddr", bitwidth=32, match_kind="ternary"),
                            MatchField("hdr.ipv4.protocol", bitwidth=8, match_kind="optional"),
                            MatchField("hdr.tcp.dstPort", bitwidth=16, match_kind="range")],
              action_refs=fwd, default_action=ActionCall("NoAction"),
              direct_meter="MyIngress.acl_meter"),
        Table("MyIngress.scoped",
              match_fields=[MatchField("hdr.ethernet.etherType", bitwidth=16)],
              action_refs=refs("MyIngress.only_default", "MyIngress.only_table", "NoAction",
                               scopes={"MyIngress.only_default": "DEFAULT_ONLY",
                                       "MyIngress.only_table": "TABLE_ONLY"}),
              default_action=ActionCall("NoAction")),
        Table("MyIngress.fixed",
              match_fields=[MatchField("hdr.ethernet.etherType", bitwidth=16)],
              action_refs=fwd, default_action=ActionCall("MyIngress.drop"),
              const_default_action=True,
              const_entries=[ConstEntry([FieldMatch("exact", value=0x800)],
                                        ActionCall("MyIngress.forward", (1,)))]),
        Table("MyIngress.fixed_ternary",
              match_fields=[MatchField("hdr.ethernet.etherType", bitwidth=16,
                                       match_kind="ternary")],
              action_refs=fwd, default_action=ActionCall("NoAction"),
              const_entries=[
                  ConstEntry([FieldMatch("ternary", value=0x800, mask=0xFFFF)],
                             ActionCall("MyIngress.forward", (1,))),
                  ConstEntry([FieldMatch("ternary", value=0x800, mask=0xFF00)],
                             ActionCall("MyIngress.forward", (2,))),
              ]),
        Table("MyIngress.ecmp",
              match_fields=[MatchField("hdr.ipv4.dstAddr", bitwidth=32, match_kind="lpm")],
              selector_fields=[MatchField("hdr.ipv4.srcAddr", bitwidth=32, match_kind="selector")],
              action_refs=refs("MyIngress.set_nhop", "MyIngress.drop"),
              implementation="MyIngress.ecmp_selector"),
        Table("MyIngress.indirect",
              match_fields=[MatchField("hdr.ethernet.etherType", bitwidth=16)],
              action_refs=refs("MyIngress.forward", "MyIngress.drop"),
              implementation="MyIngress.profile"),
    ]
    return ControlPlaneModel(
        program="test",
        tables=tables,
        actions=list(ACTIONS),
        action_profiles=[
            ActionProfile("MyIngress.ecmp_selector", table_names=["MyIngress.ecmp"],
                          with_selector=True, size=64, max_group_size=8,
                          selector_algorithm="crc16"),
            ActionProfile("MyIngress.profile", table_names=["MyIngress.indirect"], size=16),
        ],
        counters=[Counter("MyIngress.port_counter", size=4),
                  Counter("MyIngress.lpm_counter", direct_table="MyIngress.ipv4_lpm")],
        meters=[Meter("MyIngress.port_meter", unit="packets", size=4),
                Meter("MyIngress.acl_meter", unit="bytes", direct_table="MyIngress.acl")],
        registers=[Register("MyIngress.flow_reg", bitwidth=16, size=8),
                   Register("MyIngress.signed_reg", bitwidth=8, size=2, signed=True)],
        digests=[Digest("mac_learn_digest_t", fields=[StructField("srcAddr", 48),
                                                      StructField("port", 9)])],
    )
