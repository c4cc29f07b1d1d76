"""The flow key (`flow.p4`): L4 ports, the 5-tuple hash and the index of per-flow registers.
No control-plane names; the load-balancing mechanisms index their registers with it."""

from mechanisms.model import Control, Mechanism
from mechanisms.paths import include_path

FLOW_TABLE_SIZE = 4096  # FLOW_TABLE_SIZE: cells of every per-flow register

MECHANISM = Mechanism(
    name="flow",
    include=include_path("flow.p4"),
    summary="5-tuple CRC-32 flow hash and the per-flow register index (hash mod FLOW_TABLE_SIZE)",
    controls=(Control("FlowKey", "FabricIngress.flow_key"),
              Control("FlowIndex", "FabricIngress.flow_index")),
)
