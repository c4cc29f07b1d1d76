"""ECMP routing (`routing.p4`): IPv4 LPM to next-hop groups through an action selector, and the
per-switch hash seed. The controller writes the routes (`controller.intent`)."""

from mechanisms.model import Control, Knob, Mechanism
from mechanisms.paths import include_path

ROUTING = Control("EcmpRouting", "FabricIngress.routing")

LPM_TABLE = ROUTING.name("ipv4_lpm")
LPM_FIELD = "hdr.ipv4.dst_addr"
SELECTOR = ROUTING.name("ecmp_selector")
NEXT_HOP_ACTION = ROUTING.name("set_next_hop")  # (port, dmac)
DROP_ACTION = ROUTING.name("drop")
SEED_TABLE = ROUTING.name("hash_seed")
SEED_ACTION = ROUTING.name("set_hash_seed")  # (seed)

MECHANISM = Mechanism(
    name="routing",
    include=include_path("routing.p4"),
    summary="IPv4 LPM to equal-cost next-hop groups (action selector over the flow hash and "
            "meta.lb_entropy); the seed picks which 16 bits of the 32-bit flow hash a switch uses",
    controls=(ROUTING,),
    tables=(LPM_TABLE, SEED_TABLE),
    actions=(NEXT_HOP_ACTION, DROP_ACTION, SEED_ACTION),
    action_profiles=(SELECTOR,),
    knobs=(
        Knob("routes", LPM_TABLE, NEXT_HOP_ACTION, ("port", "dmac"), (LPM_FIELD,),
             "a /32 per NIC to a group of next hops (members: one per egress port)"),
        Knob("hash_seed", SEED_TABLE, SEED_ACTION, ("seed",),
             doc="seed[3:0] shifts the flow hash, so tiers do not polarise"),
    ),
    needs=("flow",),
)
