"""The control-plane model of p4src's routing and port I/O tables, for tests that need a P4Info
without compiling the program (the P4Info is generated as p4c would from it)."""

from __future__ import annotations

from p4switch import cpmodel as m
from p4switch.p4info import build_p4info


def routing_p4info():
    actions = [
        m.Action("NoAction"),
        m.Action("FabricIngress.routing.drop"),
        m.Action("FabricIngress.routing.set_next_hop",
                 params=[m.Param("port", bitwidth=9), m.Param("dmac", bitwidth=48)]),
        m.Action("FabricIngress.routing.set_hash_seed", params=[m.Param("seed", bitwidth=16)]),
        m.Action("FabricEgress.port_io.set_source_mac", params=[m.Param("mac", bitwidth=48)]),
    ]
    lpm = m.Table(
        "FabricIngress.routing.ipv4_lpm",
        match_fields=[m.MatchField("hdr.ipv4.dst_addr", bitwidth=32, match_kind="lpm")],
        action_refs=[m.ActionRef("FabricIngress.routing.set_next_hop"),
                     m.ActionRef("FabricIngress.routing.drop")],
        default_action=m.ActionCall("FabricIngress.routing.drop"),
        implementation="FabricIngress.routing.ipv4_lpm_selector",
        selector_fields=[m.MatchField("meta.hash_seed", bitwidth=16, match_kind="selector")])
    seed = m.Table("FabricIngress.routing.hash_seed",
                   action_refs=[m.ActionRef("FabricIngress.routing.set_hash_seed")],
                   default_action=m.ActionCall("FabricIngress.routing.set_hash_seed", (0,)))
    smac = m.Table(
        "FabricEgress.port_io.source_mac",
        match_fields=[m.MatchField("standard_metadata.egress_port", bitwidth=9)],
        action_refs=[m.ActionRef("FabricEgress.port_io.set_source_mac"), m.ActionRef("NoAction")],
        default_action=m.ActionCall("NoAction"), size=512)
    model = m.ControlPlaneModel(
        program="ecmp", tables=[lpm, seed, smac], actions=actions,
        action_profiles=[m.ActionProfile("FabricIngress.routing.ipv4_lpm_selector",
                                         table_names=[lpm.name], with_selector=True,
                                         selector_algorithm="crc16")],
        counters=[m.Counter("FabricIngress.port_counters.rx_port_counter", size=512),
                  m.Counter("FabricEgress.port_io.tx_port_counter", size=512)])
    return build_p4info(model)
