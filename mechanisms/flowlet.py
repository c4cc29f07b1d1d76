"""Flowlet switching (`flowlet.p4`): a new flowlet after an idle gap may take another path."""

from mechanisms.model import Control, Knob, Mechanism
from mechanisms.paths import include_path

FLOWLETS = Control("FlowletSwitching", "FabricIngress.load_balancing")

GAP_TABLE = FLOWLETS.name("flowlet_gap")
GAP_ACTION = FLOWLETS.name("set_flowlet_gap")
GAP_PARAM = "gap"
DEFAULT_GAP_US = 10_000  # the program's own default (10 ms, for 10 Mb/s links)
LAST_SEEN = FLOWLETS.name("flowlet_last_seen")
FLOWLET_ID = FLOWLETS.name("flowlet_id")

MECHANISM = Mechanism(
    name="flowlet",
    include=include_path("flowlet.p4"),
    summary="per-flow flowlet id, bumped after an idle gap, mixed into the ECMP hash",
    controls=(FLOWLETS,),
    tables=(GAP_TABLE,),
    actions=(GAP_ACTION,),
    registers=(LAST_SEEN, FLOWLET_ID),
    knobs=(Knob("flowlet_gap", GAP_TABLE, GAP_ACTION, (GAP_PARAM,),
                doc=f"idle gap (µs) that starts a new flowlet; default {DEFAULT_GAP_US}"),),
    needs=("flow", "routing"),
)
