"""Queue-aware DLB (`qdlb.p4`): per packet the less loaded of two live members (round robin and
the flow's last choice) by egress queue depth; reorder tags from `tagging`."""

from mechanisms.model import Control, Knob, Mechanism
from mechanisms.paths import include_path

QDLB = Control("QueueAwareDlb", "FabricIngress.load_balancing")
LEARN = Control("QueueAwareDlbLearn", "FabricIngress.load_learning")
PORT_LOAD = Control("DlbPortLoad", "FabricEgress.dlb_port_load")

PARAMS_TABLE = QDLB.name("dlb_params")
PARAMS_ACTION = QDLB.name("set_dlb_params")
AWARE_PARAM = "aware"
PACKETS_SENT = QDLB.name("packets_sent")
LAST_CHOICE = QDLB.name("last_choice")
PORT_DEPTH = "dlb_port_depth"  # global (ingress and egress share it): packets queued per port
MEMBER_PORT = "dlb_member_port"  # global: learnt member port + 1 per (destination slot, entropy)

MECHANISM = Mechanism(
    name="qdlb",
    include=include_path("qdlb.p4"),
    summary="power-of-two choices per packet by egress queue depth; learns member ports itself",
    controls=(QDLB, LEARN, PORT_LOAD),
    tables=(PARAMS_TABLE,),
    actions=(PARAMS_ACTION,),
    registers=(PACKETS_SENT, LAST_CHOICE, PORT_DEPTH, MEMBER_PORT),
    knobs=(Knob("queue_aware", PARAMS_TABLE, PARAMS_ACTION, (AWARE_PARAM,),
                doc="1: compare queue depths (default); 0: pure round robin"),),
    needs=("flow", "tagging", "routing"),
)
