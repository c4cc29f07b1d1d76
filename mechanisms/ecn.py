"""ECN marking (`ecn.p4`): RED over the egress queue depth at enqueue, as range entries."""

from mechanisms.model import Control, Knob, Mechanism, Telemetry
from mechanisms.paths import include_path

ECN = Control("EcnMarking", "FabricEgress.ecn")

PROFILE_TABLE = ECN.name("ecn_profile")
DEPTH_FIELD = "standard_metadata.enq_qdepth"  # range match, packets
MARK_ACTION = ECN.name("set_mark_threshold")  # (threshold): marks when a draw < threshold
MARKED_COUNTER = ECN.name("ecn_marked_counter")  # per egress port
TABLE_SIZE = 256
MAX_DEPTH = (1 << 19) - 1  # enq_qdepth is 19 bits
ALWAYS = 0xFFFF  # a threshold above every draw (draws are 0..65534)

ECN_MARKED = Telemetry("ecn_marked", MARKED_COUNTER, "counter", "egress port",
                       "packets marked CE on the port")

MECHANISM = Mechanism(
    name="ecn",
    include=include_path("ecn.p4"),
    summary="RED-style ECN marking of ECN-capable packets by egress queue depth (kmin, kmax, pmax)",
    controls=(ECN,),
    tables=(PROFILE_TABLE,),
    actions=(MARK_ACTION,),
    counters=(MARKED_COUNTER,),
    knobs=(Knob("ecn_threshold", PROFILE_TABLE, MARK_ACTION, ("threshold",), (DEPTH_FIELD,),
                "range entries over enq_qdepth: marking probability x 65535 per depth"),),
    telemetry=(ECN_MARKED,),
)
