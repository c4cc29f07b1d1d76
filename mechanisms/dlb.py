"""Per-packet spraying (`dlb.p4`): round robin over the live members, blind to load; reorder
tags from `tagging`. No knob of its own."""

from mechanisms.model import Control, Mechanism
from mechanisms.paths import include_path

SPRAYING = Control("PacketSpraying", "FabricIngress.load_balancing")

PACKETS_SENT = SPRAYING.name("packets_sent")

MECHANISM = Mechanism(
    name="dlb",
    include=include_path("dlb.p4"),
    summary="per-packet round-robin spraying over live uplinks (identity-hash selector)",
    controls=(SPRAYING,),
    registers=(PACKETS_SENT,),
    needs=("flow", "tagging", "routing"),
)
