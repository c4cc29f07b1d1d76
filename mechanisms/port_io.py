"""Port I/O (`port_io.p4`): controller packet I/O, per-port packet counters, source MAC rewrite."""

from mechanisms.model import Control, Knob, Mechanism, Telemetry
from mechanisms.paths import include_path

PACKET_OUT = Control("PacketOutHandler", "FabricIngress.packet_out_handler")
INGRESS_COUNTERS = Control("IngressPortCounters", "FabricIngress.port_counters")
EGRESS = Control("EgressPortIo", "FabricEgress.port_io")

RX_PORT_COUNTER = INGRESS_COUNTERS.name("rx_port_counter")  # per ingress port
TX_PORT_COUNTER = EGRESS.name("tx_port_counter")  # per egress port
SOURCE_MAC_TABLE = EGRESS.name("source_mac")
SOURCE_MAC_FIELD = "standard_metadata.egress_port"
SOURCE_MAC_ACTION = EGRESS.name("set_source_mac")  # (mac)

RX_PACKETS = Telemetry("rx_packets", RX_PORT_COUNTER, "counter", "ingress port",
                       "packets received on the port (PFC frames included)")
TX_PACKETS = Telemetry("tx_packets", TX_PORT_COUNTER, "counter", "egress port",
                       "packets sent out of the port (PFC frames included)")

MECHANISM = Mechanism(
    name="port_io",
    include=include_path("port_io.p4"),
    summary="packet-out to the port the controller names, packet-in to the controller, packets "
            "and bytes per port in both directions, the egress port's own source MAC",
    controls=(PACKET_OUT, INGRESS_COUNTERS, EGRESS),
    tables=(SOURCE_MAC_TABLE,),
    actions=(SOURCE_MAC_ACTION,),
    counters=(RX_PORT_COUNTER, TX_PORT_COUNTER),
    knobs=(Knob("source_mac", SOURCE_MAC_TABLE, SOURCE_MAC_ACTION, ("mac",), (SOURCE_MAC_FIELD,),
                "egress port -> the port's own MAC"),),
    telemetry=(RX_PACKETS, TX_PACKETS),
)
