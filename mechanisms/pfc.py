"""PFC (`pfc.p4`): traffic classes, pause generation at dequeue, propagation while paused, and
reception, plus the IEEE 802.1Qbb constants the lab's PFC code shares (frames, quanta).

Knobs: `dscp_priority` (DSCP -> priority: queue and PFC class), `pfc_config` (XOFF/XON in
packets, quanta, refresh per egress port and lossless priority), `pfc_propagation` (arrivals for
a paused queue that pause its upstream), `pfc_link` (µs per quantum x 1024 per port),
`pfc_rx_mode` (punt received frames to the controller, or drop them), and the clone sessions
`SESSION_BASE + p -> p` that carry pause frames out of port p."""

from mechanisms.model import Control, Knob, Mechanism, Telemetry
from mechanisms.paths import include_path

# ---- IEEE 802.1Qbb: one home for the lab (p4switch keeps the target's own copy) ---------------
PFC_DST_MAC = "01:80:c2:00:00:01"
ETHERTYPE_MAC_CONTROL = 0x8808
PFC_OPCODE = 0x0101  # class-based flow control
QUANTUM_BITS = 512  # one pause quantum: 512 bit times at the link rate
MAX_QUANTA = 0xFFFF
PRIORITIES = 8

# ---- the program's own constants (pfc.p4) -----------------------------------------------------
SESSION_BASE = 1000  # PFC_SESSION_BASE: clone session SESSION_BASE + p sends out of port p
ROCE_CLASSES = {26: 3, 48: 6}  # DSCP -> priority: RoCE data on 3, CNPs/ACKs on 6


def pause_seconds(quanta: int, link_bps: float) -> float:
    """How long `quanta` pause a priority on a link of `link_bps`."""
    if link_bps <= 0:
        raise ValueError(f"link rate must be > 0 b/s, got {link_bps}")
    return quanta * QUANTUM_BITS / link_bps


def quantum_us_q10(link_bps: float) -> int:
    """µs per quantum x 1024 (the `pfc_link` parameter) on a link of `link_bps`."""
    return round(pause_seconds(1, link_bps) * 1e6 * 1024)


CLASSES = Control("TrafficClass", "FabricIngress.traffic_class")
RECEPTION = Control("PfcReception", "FabricIngress.pfc_reception")
GENERATION = Control("PfcGeneration", "FabricEgress.pfc")

CLASS_TABLE = CLASSES.name("dscp_priority")
CLASS_ACTION = CLASSES.name("set_priority")  # (prio)
CONFIG_TABLE = GENERATION.name("pfc_config")
CONFIG_ACTION = GENERATION.name("enable_pfc")  # (xoff_packets, xon_packets, quanta, refresh)
PROPAGATION_TABLE = RECEPTION.name("pfc_propagation")
PROPAGATION_ACTION = RECEPTION.name("propagate_pfc")  # (xoff_packets, quanta, refresh)
LINK_TABLE = RECEPTION.name("pfc_link")
LINK_ACTION = RECEPTION.name("set_quantum")  # (us_q10)
RX_MODE_TABLE = RECEPTION.name("pfc_rx_mode")
PUNT_ACTION = RECEPTION.name("punt_pfc_frames")
NOTE_PAUSE_ACTION = RECEPTION.name("note_pause")
SEND_PAUSE_ACTION = GENERATION.name("send_pause")
BUILD_FRAME_ACTION = GENERATION.name("build_pfc_frame")

RX_COUNTER = RECEPTION.name("pfc_rx_counter")  # frames received per ingress port
TX_COUNTER = GENERATION.name("pfc_tx_counter")  # frames sent per egress port
XOFF_COUNTER = GENERATION.name("pfc_xoff_counter")  # pauses (quanta > 0) sent per egress port

PAIR_CONGESTED = GENERATION.name("pair_congested")
CONGESTED_PAIRS = GENERATION.name("congested_pairs")
GENERATION_SENT_AT = GENERATION.name("pause_sent_at")
PAUSED_UNTIL = RECEPTION.name("paused_until")
PAUSED_ARRIVALS = RECEPTION.name("paused_arrivals")
RECEPTION_SENT_AT = RECEPTION.name("pause_sent_at")
RELAY_TO = RECEPTION.name("relay_to")
STATE_REGISTERS = (PAIR_CONGESTED, CONGESTED_PAIRS, GENERATION_SENT_AT, PAUSED_UNTIL,
                   PAUSED_ARRIVALS, RECEPTION_SENT_AT, RELAY_TO)  # zeroed between trials

PFC_TX = Telemetry("pfc_tx", TX_COUNTER, "counter", "egress port", "PFC frames sent out of the port")
PFC_XOFF_TX = Telemetry("pfc_xoff_tx", XOFF_COUNTER, "counter", "egress port",
                        "pauses (quanta > 0) sent out of the port")
PFC_RX = Telemetry("pfc_rx", RX_COUNTER, "counter", "ingress port",
                   "PFC frames received on the port")

EGRESS_QUEUE = ("standard_metadata.egress_port", "standard_metadata.priority")
MECHANISM = Mechanism(
    name="pfc",
    include=include_path("pfc.p4"),
    summary="DSCP -> priority; PFC pause generation at XOFF/XON per (upstream, egress) pair, "
            "propagation while a queue is paused, counting (and punting) received frames",
    controls=(CLASSES, RECEPTION, GENERATION),
    tables=(CLASS_TABLE, CONFIG_TABLE, PROPAGATION_TABLE, LINK_TABLE, RX_MODE_TABLE),
    actions=(CLASS_ACTION, CONFIG_ACTION, PROPAGATION_ACTION, LINK_ACTION, PUNT_ACTION,
             NOTE_PAUSE_ACTION, SEND_PAUSE_ACTION, BUILD_FRAME_ACTION),
    counters=(RX_COUNTER, TX_COUNTER, XOFF_COUNTER),
    registers=STATE_REGISTERS,
    knobs=(
        Knob("dscp_priority", CLASS_TABLE, CLASS_ACTION, ("prio",), ("hdr.ipv4.dscp",),
             "DSCP -> priority (egress queue and PFC class)"),
        Knob("xoff_xon", CONFIG_TABLE, CONFIG_ACTION,
             ("xoff_packets", "xon_packets", "quanta", "refresh"), EGRESS_QUEUE,
             "PFC XOFF/XON (packets), pause quanta and refresh (µs) per lossless queue"),
        Knob("propagation", PROPAGATION_TABLE, PROPAGATION_ACTION,
             ("xoff_packets", "quanta", "refresh"),
             ("standard_metadata.egress_spec", "standard_metadata.priority"),
             "arrivals for a paused queue that pause its upstream"),
        Knob("quantum", LINK_TABLE, LINK_ACTION, ("us_q10",), ("standard_metadata.ingress_port",),
             "µs per quantum x 1024 on each port"),
        Knob("punt_frames", RX_MODE_TABLE, PUNT_ACTION,
             doc="hand received PFC frames to the controller (BMv2's pause agent)"),
    ),
    telemetry=(PFC_TX, PFC_XOFF_TX, PFC_RX),
)
