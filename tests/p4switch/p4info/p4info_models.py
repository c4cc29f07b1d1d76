"""Hand-built control-plane models of p4c sample programs whose P4Info is in golden/.

Each model is what the front end must produce for that program (p4c's front end: actions
localized, unused declarations removed), in p4c's order.
"""

from __future__ import annotations

from p4switch.cpmodel import (
    Action,
    ActionCall,
    ActionProfile,
    ActionRef,
    Annotation,
    ControllerHeader,
    ControlPlaneModel,
    Counter,
    Digest,
    MatchField,
    Meter,
    NewType,
    Param,
    Register,
    SerializableEnum,
    StructField,
    Table,
)

NO_ACTION = Action("NoAction", [Annotation("noWarn", '"unused"')])
DEFAULT_ONLY = [Annotation("defaultonly")]


def _noaction_default() -> ActionRef:
    return ActionRef("NoAction", DEFAULT_ONLY, scope="DEFAULT_ONLY")


def _table(name, keys, actions, size=1024, default="NoAction", **kw) -> Table:
    refs = [a if isinstance(a, ActionRef) else ActionRef(a) for a in actions]
    fields = [MatchField(n, bitwidth=w, match_kind=k) for n, w, k in keys]
    return Table(
        name,
        match_fields=fields,
        action_refs=refs,
        default_action=ActionCall(default) if isinstance(default, str) else default,
        size=size,
        **kw,
    )


def _action(name, *params) -> Action:
    return Action(name, params=[Param(n, bitwidth=w) for n, w in params])


def action_profile_bmv2() -> ControlPlaneModel:
    tables = [
        _table("IngressI.indirect", [], ["IngressI.drop", "NoAction"], implementation="ap",
               const_default_action=True),
        _table("IngressI.indirect_ws", [], ["IngressI.drop", "NoAction"],
               implementation="ap_ws", const_default_action=True),
    ]
    return ControlPlaneModel(
        "action_profile-bmv2",
        tables=tables,
        actions=[NO_ACTION, _action("IngressI.drop")],
        action_profiles=[
            ActionProfile("ap", table_names=["IngressI.indirect"], size=128),
            ActionProfile("ap_ws", table_names=["IngressI.indirect_ws"], with_selector=True,
                          size=1024, selector_algorithm="crc16"),
        ],
    )


def issue1520_bmv2() -> ControlPlaneModel:
    return ControlPlaneModel(
        "issue1520-bmv2",
        registers=[Register("MyIngress.h.c1.r", bitwidth=16, size=8),
                   Register("MyIngress.h.c2.r", bitwidth=16, size=8)],
    )


def basic_routing_bmv2() -> ControlPlaneModel:
    vrf = ("meta.ingress_metadata.vrf", 12, "exact")
    nexthop = ("meta.ingress_metadata.nexthop_index", 16, "exact")
    tables = [
        _table("ingress.bd", [("meta.ingress_metadata.bd", 16, "exact")],
               ["ingress.set_vrf", _noaction_default()], size=65536),
        _table("ingress.ipv4_fib", [vrf, ("hdr.ipv4.dstAddr", 32, "exact")],
               ["ingress.on_miss", "ingress.fib_hit_nexthop", _noaction_default()], size=131072),
        _table("ingress.ipv4_fib_lpm", [vrf, ("hdr.ipv4.dstAddr", 32, "lpm")],
               ["ingress.on_miss", "ingress.fib_hit_nexthop", _noaction_default()], size=16384),
        _table("ingress.nexthop", [nexthop],
               ["ingress.on_miss", "ingress.set_egress_details", _noaction_default()],
               size=32768),
        _table("ingress.port_mapping", [("standard_metadata.ingress_port", 9, "exact")],
               ["ingress.set_bd", _noaction_default()], size=32768),
        _table("egress.rewrite_mac", [nexthop],
               ["egress.on_miss", "egress.rewrite_src_dst_mac", _noaction_default()],
               size=32768),
    ]
    actions = [
        NO_ACTION,
        _action("ingress.set_vrf", ("vrf", 12)),
        _action("ingress.on_miss"),
        _action("ingress.fib_hit_nexthop", ("nexthop_index", 16)),
        _action("ingress.set_egress_details", ("egress_spec", 9)),
        _action("ingress.set_bd", ("bd", 16)),
        _action("egress.on_miss"),
        _action("egress.rewrite_src_dst_mac", ("smac", 48), ("dmac", 48)),
    ]
    return ControlPlaneModel("basic_routing-bmv2", tables=tables, actions=actions)


def issue1566_bmv2() -> ControlPlaneModel:
    return ControlPlaneModel(
        "issue1566-bmv2", counters=[Counter("cIngress.E.c1.stats", unit="packets", size=65536)]
    )


def issue364_bmv2() -> ControlPlaneModel:
    table = _table("ingress.t", [], ["ingress.my_action"], default=ActionCall(
        "ingress.my_action", (0,)), const_default_action=True, direct_counter="ingress.c")
    return ControlPlaneModel(
        "issue364-bmv2",
        tables=[table],
        actions=[_action("ingress.my_action", ("a", 9))],
        counters=[Counter("ingress.c", unit="packets", direct_table="ingress.t")],
    )


def issue3329_bmv2() -> ControlPlaneModel:
    header = ControllerHeader(
        "packet_out",
        [Annotation("controller_header", '"packet_out"')],
        fields=[StructField("b.b", 32)],
        type_name="packet_out_header_t",
    )
    return ControlPlaneModel("issue3329-bmv2", controller_headers=[header])


def issue1352_bmv2() -> ControlPlaneModel:
    dst = ("hdr.ipv4.dstAddr", 32)
    tables = [
        _table("MyIngress.forward", [(*dst, "exact")],
               ["MyIngress.set_dmac", "MyIngress.drop", "NoAction"]),
        _table("MyIngress.ipv4_lpm", [(*dst, "lpm")],
               ["MyIngress.set_nhop", "MyIngress.drop", "NoAction"]),
        _table("MyEgress.send_frame", [("standard_metadata.egress_port", 9, "exact")],
               ["MyEgress.rewrite_mac", "NoAction"]),
    ]
    actions = [
        NO_ACTION,
        _action("MyIngress.drop"),
        _action("MyIngress.set_dmac", ("dstAddr", 48)),
        _action("MyIngress.set_nhop", ("dstAddr", 32), ("port", 9)),
        _action("MyIngress.send_digest"),
        _action("MyEgress.rewrite_mac", ("srcAddr", 48)),
    ]
    digest = Digest("test_digest_t", fields=[StructField("in_mac_srcAddr", 48)])
    return ControlPlaneModel("issue1352-bmv2", tables=tables, actions=actions, digests=[digest])


def named_meter_1_bmv2() -> ControlPlaneModel:
    tables = [
        _table("ingress.m_filter", [("meta.meta.meter_tag", 32, "exact")],
               ["ingress._drop", "ingress._nop", "NoAction"], size=16),
        _table("ingress.m_table", [("hdr.ethernet.srcAddr", 48, "exact")],
               ["ingress.m_action_2", "ingress._nop_2", "NoAction"], size=16384,
               direct_meter="namedmeter"),
    ]
    actions = [
        NO_ACTION,
        _action("ingress._drop"),
        _action("ingress._nop"),
        _action("ingress.m_action_2", ("meter_idx", 9)),
        _action("ingress._nop_2"),
    ]
    meter = Meter("namedmeter", unit="packets", direct_table="ingress.m_table")
    return ControlPlaneModel("named_meter_1-bmv2", tables=tables, actions=actions, meters=[meter])


def action_selector_shared_bmv2() -> ControlPlaneModel:
    # Two tables share one selector; the selector key is listed with match kind "selector".
    tables = [
        _table(name, [("meta.hash1", 32, "selector")], ["IngressI.drop", "NoAction"],
               implementation="IngressI.as", const_default_action=True)
        for name in ("IngressI.indirect_ws", "IngressI.indirect_ws_1")
    ]
    profile = ActionProfile("IngressI.as", table_names=["IngressI.indirect_ws_1",
                                                       "IngressI.indirect_ws"],
                            with_selector=True, size=1024, selector_algorithm="identity")
    return ControlPlaneModel("action_selector_shared-bmv2", tables=tables,
                             actions=[NO_ACTION, _action("IngressI.drop")],
                             action_profiles=[profile])


def pkginfo_annotation() -> ControlPlaneModel:
    pkginfo = Annotation("pkginfo", '\n  name = "some_name",\n  organization = "some_org",\n'
                                    '  version = "some_version",\n  contact = "some_contact",\n'
                                    '  url = "some_url"\n')
    platform = Annotation("platform_property", "multicast_group_table_size = 10, "
                          "multicast_group_table_total_replicas = 20, "
                          "multicast_group_table_max_replicas_per_entry = 30")
    return ControlPlaneModel("pkginfo_annotation", package_annotations=[pkginfo, platform])


def register_serenum_bmv2() -> ControlPlaneModel:
    eth_types = SerializableEnum("EthTypes", 16, [
        ("IPv4", 0x0800), ("ARP", 0x0806), ("RARP", 0x8035), ("EtherTalk", 0x809B),
        ("VLAN", 0x8100), ("IPX", 0x8137), ("IPv6", 0x86DD),
    ])
    register = Register("ingress.reg", bitwidth=16, size=1, type_name="EthTypes")
    return ControlPlaneModel("register-serenum-bmv2", registers=[register],
                             serializable_enums=[eth_types])


def issue1739_bmv2() -> ControlPlaneModel:
    # Keys of new types (`type bit<32> IPv4Address_t;`, a new type of a new type); a top-level
    # action (my_drop) used by both tables.
    tables = [
        _table("ingress.ipv4_da_lpm", [("hdr.ipv4.dstAddr", 32, "lpm")],
               ["ingress.set_output", "my_drop"], default="my_drop"),
        _table("ingress.ipv4_sa_filter", [("hdr.ipv4.srcAddr", 32, "ternary")],
               ["my_drop", "NoAction"], const_default_action=True),
    ]
    tables[0].match_fields[0].type_name = "IPv4Address_t"
    tables[1].match_fields[0].type_name = "IPv4Address2_t"
    actions = [_action("my_drop"), NO_ACTION, _action("ingress.set_output", ("out_port", 9))]
    new_types = [NewType("IPv4Address_t", 32), NewType("IPv4Address2_t", 32)]
    return ControlPlaneModel("issue1739-bmv2", tables=tables, actions=actions,
                             new_types=new_types)


def extern_function_only() -> ControlPlaneModel:
    # programs/extern_function_only.p4: nothing but a mark_to_drop() call
    return ControlPlaneModel("extern_function_only", calls_extern_functions=True)


def no_type_info() -> ControlPlaneModel:
    return ControlPlaneModel("no_type_info", actions=[_action("IG.to_port_one")])


MODELS = {
    "extern_function_only": extern_function_only,
    "no_type_info": no_type_info,
    "issue1739-bmv2": issue1739_bmv2,
    "register-serenum-bmv2": register_serenum_bmv2,
    "pkginfo_annotation": pkginfo_annotation,
    "action_selector_shared-bmv2": action_selector_shared_bmv2,
    "action_profile-bmv2": action_profile_bmv2,
    "issue1520-bmv2": issue1520_bmv2,
    "basic_routing-bmv2": basic_routing_bmv2,
    "issue1566-bmv2": issue1566_bmv2,
    "issue364-bmv2": issue364_bmv2,
    "issue3329-bmv2": issue3329_bmv2,
    "issue1352-bmv2": issue1352_bmv2,
    "named_meter_1-bmv2": named_meter_1_bmv2,
}
