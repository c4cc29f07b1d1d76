"""In-band network telemetry (`int.p4`): every switch pushes a 24-byte record (switch id, ports,
egress queue depth and time, bytes sent on the egress port, its link rate) onto packets that
carry the INT shim; the receiving host strips the records (`traffic.headers.IntShim`)."""

from mechanisms.model import Control, Knob, Mechanism, Telemetry
from mechanisms.paths import include_path

INT = Control("InbandTelemetry", "FabricEgress.int_telemetry")

SWITCH_TABLE = INT.name("int_switch")
SWITCH_ACTION = INT.name("set_switch_id")
SWITCH_PARAM = "id"
LINK_TABLE = INT.name("int_link")
LINK_ACTION = INT.name("set_link_rate")
LINK_FIELD = "standard_metadata.egress_port"
LINK_PARAM = "mbps"
TX_BYTES = INT.name("tx_bytes")

IP_PROTO = 254  # = headers.p4's IP_PROTO_INT (RFC 3692 experimental)
MAX_HOPS = 5  # = headers.p4's INT_MAX_HOPS: records a packet can carry
HOP_BYTES = 24  # one record
SHIM_BYTES = 4
FLAG_NO_ROOM = 0x01  # a switch found no room for its record
SWITCH_ID_MAX = 0xFFFF
LINK_MBPS_MAX = 0xFFFFFFFF

TX_BYTES_ITEM = Telemetry("int_tx_bytes", TX_BYTES, "register", "port",
                          "bytes sent on the port (as received), modulo 2^32")

MECHANISM = Mechanism(
    name="int",
    include=include_path("int.p4"),
    summary="in-band telemetry: a per-hop record (switch, ports, queue, time, tx bytes, rate) "
            "pushed onto packets that ask for it",
    controls=(INT,),
    tables=(SWITCH_TABLE, LINK_TABLE),
    actions=(SWITCH_ACTION, LINK_ACTION),
    registers=(TX_BYTES,),
    knobs=(
        Knob("int_switch_id", SWITCH_TABLE, SWITCH_ACTION, (SWITCH_PARAM,), (),
             "the switch id its records carry (1..65535; 0 = not set)"),
        Knob("int_link_rate", LINK_TABLE, LINK_ACTION, (LINK_PARAM,), (LINK_FIELD,),
             "egress port -> the link's rate in Mb/s, as its records carry it"),
    ),
    telemetry=(TX_BYTES_ITEM,),
)
