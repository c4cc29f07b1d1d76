"""The P4 program's mechanisms, described to the rest of the lab: one module per include of
`p4src/include/` (its controls, tables, actions, counters, registers as the P4Info names them,
the knobs the controller sets and the telemetry the experiments and the web view read), listed
in `registry.MECHANISMS`; the top-level programs (`p4src/*.p4`) in `registry.PROGRAMS`. Plain
data, importing nothing of the lab but the errors' base (`topos.errors`), so every layer may use
it.

    from mechanisms import P4SRC, port_io, program_path
    port_io.TX_PORT_COUNTER                  # "FabricEgress.port_io.tx_port_counter"
    program_path("flowlet")                  # p4src/flowlet.p4
    PROGRAMS["qdlb"].has("tagging")          # True
    telemetry_items()["ecn_marked"].p4_name  # "FabricEgress.ecn.ecn_marked_counter"

Adding a mechanism: its include in `p4src/include/`, a module here with `MECHANISM =
Mechanism(...)`, its entry in `registry.MECHANISMS` (and the programs that include it), its
controller part in `controller/`, its test (CONTRIBUTING.md walks through it).
"""

from mechanisms import (
    dlb,
    ecn,
    flow,
    flowlet,
    pfc,
    port_io,
    qdlb,
    routing,
    tagging,
    telemetry,
    trimming,
)
from mechanisms.model import Control, Knob, Mechanism, MechanismError, Program, Telemetry
from mechanisms.paths import P4_INCLUDE, P4SRC, include_path, program_path
from mechanisms.registry import (
    LB_MODES,
    MECHANISMS,
    PROGRAMS,
    mechanism,
    p4_name,
    program,
    telemetry_items,
)

__all__ = ["LB_MODES", "MECHANISMS", "P4SRC", "P4_INCLUDE", "PROGRAMS", "Control", "Knob",
           "Mechanism", "MechanismError", "Program", "Telemetry", "dlb", "ecn", "flow", "flowlet",
           "include_path", "mechanism", "p4_name", "pfc", "port_io", "program", "program_path",
           "qdlb", "routing", "tagging", "telemetry", "telemetry_items", "trimming"]
