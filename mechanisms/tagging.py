"""Reorder tags (`tagging.p4`): the first switch tags RoCEv2 packets from host-facing ports with
a per-flow sequence number, unless the host tagged them; the receiver restores order."""

from mechanisms.model import Control, Knob, Mechanism
from mechanisms.paths import include_path

TAGGING = Control("ReorderTagging", "FabricIngress.reorder_tagging")

HOST_PORTS_TABLE = TAGGING.name("host_ports")
HOST_PORT_FIELD = "standard_metadata.ingress_port"
TAG_ACTION = TAGGING.name("tag_from_host_port")
NEXT_SEQ = TAGGING.name("next_seq")

MECHANISM = Mechanism(
    name="tagging",
    include=include_path("tagging.p4"),
    summary="reorder tags (flow id, sequence) added at the first switch on host-facing ports",
    controls=(TAGGING,),
    tables=(HOST_PORTS_TABLE,),
    actions=(TAG_ACTION,),
    registers=(NEXT_SEQ,),
    knobs=(Knob("host_ports", HOST_PORTS_TABLE, TAG_ACTION, (), (HOST_PORT_FIELD,),
                "the host-facing ports, where switches tag"),),
    needs=("flow",),
)
