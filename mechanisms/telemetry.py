"""Queue telemetry (`telemetry.p4`): per egress queue, read over the runtime CLI on both targets
(P4Runtime cannot read registers on BMv2 or p4switch). Cell = (port & 63) * 8 + priority."""

from mechanisms.model import Control, Mechanism, Telemetry
from mechanisms.paths import include_path

QUEUES = Control("QueueTelemetry", "FabricEgress.telemetry")

DEPTH_MAX = QUEUES.name("queue_depth_max")
DEPTH_LAST = QUEUES.name("queue_depth_last")
DELAY_MAX = QUEUES.name("queue_delay_max")
CELLS = 512


def queue_cell(port: int, priority: int) -> int:
    """The register cell of an egress queue."""
    return (port & 63) << 3 | priority


QUEUE = "queue: (port & 63) * 8 + priority"
DEPTH_MAX_ITEM = Telemetry("depth_max", DEPTH_MAX, "register", QUEUE,
                           "deepest enqueue (packets) since the reader last zeroed it",
                           reset_after_read=True)
DEPTH_LAST_ITEM = Telemetry("depth_last", DEPTH_LAST, "register", QUEUE,
                            "the depth the last departing packet left behind (packets)")
DELAY_MAX_ITEM = Telemetry("delay_max_us", DELAY_MAX, "register", QUEUE,
                           "longest queueing delay (µs) since the reader last zeroed it",
                           reset_after_read=True)

MECHANISM = Mechanism(
    name="telemetry",
    include=include_path("telemetry.p4"),
    summary="per egress queue: deepest enqueue, last depth and longest delay, in registers",
    controls=(QUEUES,),
    registers=(DEPTH_MAX, DEPTH_LAST, DELAY_MAX),
    telemetry=(DEPTH_MAX_ITEM, DEPTH_LAST_ITEM, DELAY_MAX_ITEM),
)
