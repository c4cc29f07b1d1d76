"""Packet trimming (`trimming.p4`): a data packet that would join a queue at or above a depth
is cut to its headers and a few payload bytes, re-marked with the trim DSCP and sent at the
trim priority, so its receiver can ask for it again at once (Ultra Ethernet, NDP)."""

from mechanisms.model import Control, Knob, Mechanism, Telemetry
from mechanisms.paths import include_path

DECISION = Control("PacketTrimming", "FabricIngress.trimming")
CUT = Control("TrimmedCut", "FabricEgress.trimmed_cut")

CONFIG_TABLE = DECISION.name("trim_config")
TRIM_ACTION = DECISION.name("trim_above")  # (depth, payload_bytes, dscp, priority)
TRIMMED_COUNTER = DECISION.name("trimmed_counter")  # per egress port
QUEUE_DEPTH = "trim_queue_depth"  # global: the queue estimate, cell = port * 8 + priority

TRIM_DSCP = 46  # SONiC's default trim DSCP is configurable; the lab's: EF, unused by RoCE here
TRIM_PRIORITY = 7  # the highest queue: a trimmed header overtakes the data queued before it
TRIMMED = Telemetry("trimmed", TRIMMED_COUNTER, "counter", "egress port",
                    "packets trimmed on the port")

MECHANISM = Mechanism(
    name="trimming",
    include=include_path("trimming.p4"),
    summary="packet trimming: cut to headers instead of dropping, sent at high priority",
    controls=(DECISION, CUT),
    tables=(CONFIG_TABLE,),
    actions=(TRIM_ACTION,),
    counters=(TRIMMED_COUNTER,),
    registers=(QUEUE_DEPTH,),
    knobs=(Knob("trim", CONFIG_TABLE, TRIM_ACTION, ("depth", "payload_bytes", "dscp", "priority"),
                ("standard_metadata.egress_spec", "standard_metadata.priority"),
                "per egress queue: trim at this depth (packets), keeping payload_bytes"),),
    telemetry=(TRIMMED,),
)
