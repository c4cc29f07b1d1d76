"""A simple_switch_CLI command interpreter over the runtime state.

`CliInterpreter(state, tm_hooks).execute(line)` runs one command with BMv2's syntax
(`tools/runtime_CLI.py`, `targets/simple_switch/sswitch_CLI.py`) and returns what BMv2's CLI
prints. Bad input never raises: the result is the error message (after whatever BMv2 prints
before the failing call, e.g. "Adding entry to ..."), and `failed` is set. Names are P4Info names or any
unique dot-suffix of them (`ipv4_lpm` for `MyIngress.ipv4_lpm`).

Queue commands (`set_queue_depth`, `set_queue_rate`) and `get_time_elapsed` go to `tm_hooks`,
an object the switch provides with `set_queue_depth(depth, port=None, prio=None)`,
`set_queue_rate(rate_pps, port=None, prio=None)` and `time_elapsed_us()`.
"""

from __future__ import annotations

from typing import Any

from p4switch import externs  # (its modules import this package's)
from p4switch.runtime.cli_parsing import CliError, parse_int, port_map_str
from p4switch.runtime.cli_profiles import ProfileCommands
from p4switch.runtime.errors import RuntimeApiError
from p4switch.runtime.state import RuntimeState

# Commands that only read the runtime's state (a pipeline keeping a copy of it, the C data
# plane's, need not renew it after them); every other command may write it.
READS = frozenset({
    "act_prof_dump", "act_prof_dump_group", "act_prof_dump_member", "counter_read",
    "get_time_elapsed", "help", "mc_dump", "meter_get_rates", "mirroring_get", "register_read",
    "show_actions", "show_tables", "table_dump", "table_dump_entry", "table_dump_entry_from_key",
    "table_info", "table_num_entries", "table_show_actions",
})

# BMv2 CLI commands this interpreter knows but does not implement, and why
UNSUPPORTED = {
    "table_indirect_set_default": "default members of indirect tables",
    "table_indirect_set_default_with_group": "default groups of indirect tables",
    "table_indirect_reset_default": "default entries of indirect tables",
    "table_set_timeout": "entry timeouts (idle timeout)",
    "mc_set_lag_membership": "LAG in the packet replication engine",
    "load_new_config_file": "loading a BMv2 JSON config",
    "swap_configs": "swapping configs",
    "write_config_to_file": "BMv2 JSON configs",
    "serialize_state": "state serialization",
    "set_crc16_parameters": "crc16_custom parameters",
    "set_crc32_parameters": "crc32_custom parameters",
    "set_toeplitz_hash_key": "the toeplitz hash",
    "pvs_add": "parser value sets", "pvs_remove": "parser value sets",
    "pvs_get": "parser value sets", "pvs_clear": "parser value sets",
    "show_pvs": "parser value sets",
}

MC_CODES = {"NOT_FOUND": "INVALID_L1_HANDLE", "INVALID_ARGUMENT": "ERROR"}


class CliInterpreter(ProfileCommands):
    def __init__(self, state: RuntimeState, tm_hooks: Any = None) -> None:
        self.state = state
        self.tm_hooks = tm_hooks
        self.out: list[str] = []
        self.failed = False  # whether the last execute() reported an error

    # ---- driver ------------------------------------------------------------------------------

    def commands(self) -> list[str]:
        return sorted(n[3:] for n in dir(self) if n.startswith("do_"))

    def execute(self, line: str) -> str:
        """Run one command line; returns its output (errors included), without a final
        newline."""
        self.out = []
        self.failed = False
        words = line.split()
        if not words or words[0].startswith("#"):
            return ""
        handler = getattr(self, "do_" + words[0], None)
        if handler is None:
            self.failed = True
            if words[0] in UNSUPPORTED:
                return f"Error: unsupported: {words[0]} ({UNSUPPORTED[words[0]]})"
            return f"*** Unknown syntax: {line.strip()}"
        try:
            handler(words[1:])
        except CliError as e:
            self.failed = True
            self.out.append(str(e))
        except RuntimeApiError as e:
            self.failed = True
            self.out.append(f"Error: {e}")
        except Exception as e:  # a defect, but the interpreter must keep serving
            self.failed = True
            self.out.append(f"Error: internal error in {words[0]}: {type(e).__name__}: {e}")
        return "\n".join(self.out)

    # ---- multicast ---------------------------------------------------------------------------

    def _mc(self, op) -> Any:
        try:
            return op()
        except RuntimeApiError as e:
            code = "INVALID_MGRP_HANDLE" if "group" in e.message else MC_CODES.get(e.code, "ERROR")
            raise CliError(f"Invalid PRE operation ({code})") from None

    def _ports(self, args: list[str]) -> tuple[str, list[int]]:
        ports = args
        if "|" in args:
            i = args.index("|")
            ports, lags = args[:i], args[i + 1:]
            if lags:
                raise CliError("Error: unsupported: LAG membership in multicast nodes")
        return port_map_str(ports)

    def do_mc_mgrp_create(self, args: list[str]) -> None:
        self.exactly(args, 1)
        mgrp = parse_int(args[0], "multicast group id")
        self.p("Creating multicast group", mgrp)
        self._mc(lambda: self.state.pre.mc_mgrp_create(mgrp))

    def do_mc_mgrp_destroy(self, args: list[str]) -> None:
        self.exactly(args, 1)
        mgrp = parse_int(args[0], "multicast group id")
        self.p("Destroying multicast group", mgrp)
        self._mc(lambda: self.state.pre.mc_mgrp_destroy(mgrp))

    def do_mc_node_create(self, args: list[str]) -> None:
        self.at_least(args, 1)
        rid = parse_int(args[0], "rid")
        port_map, ports = self._ports(args[1:])
        self.p("Creating node with rid", rid, ", port map", port_map, "and lag map", "")
        handle = self._mc(lambda: self.state.pre.mc_node_create(rid, ports))
        self.p("node was created with handle", handle)

    def do_mc_node_update(self, args: list[str]) -> None:
        self.at_least(args, 2)
        handle = parse_int(args[0], "node handle")
        port_map, ports = self._ports(args[1:])
        self.p("Updating node", handle, "with port map", port_map, "and lag map", "")
        self._mc(lambda: self.state.pre.mc_node_update(handle, ports))

    def do_mc_node_associate(self, args: list[str]) -> None:
        self.exactly(args, 2)
        mgrp = parse_int(args[0], "multicast group id")
        handle = parse_int(args[1], "node handle")
        self.p("Associating node", handle, "to multicast group", mgrp)
        self._mc(lambda: self.state.pre.mc_node_associate(mgrp, handle))

    def do_mc_node_dissociate(self, args: list[str]) -> None:
        self.exactly(args, 2)
        mgrp = parse_int(args[0], "multicast group id")
        handle = parse_int(args[1], "node handle")
        self.p("Dissociating node", handle, "from multicast group", mgrp)
        self._mc(lambda: self.state.pre.mc_node_dissociate(mgrp, handle))

    def do_mc_node_destroy(self, args: list[str]) -> None:
        self.exactly(args, 1)
        handle = parse_int(args[0], "node handle")
        self.p("Destroying node", handle)
        self._mc(lambda: self.state.pre.mc_node_destroy(handle))

    def do_mc_dump(self, args: list[str]) -> None:
        pre = self.state.pre
        nodes = pre.nodes()
        self.p("==========")
        self.p("MC ENTRIES")
        for mgid, handles in pre.mgrps().items():
            self.p("**********")
            self.p(f"mgrp({mgid})")
            for h in handles:
                ports = ", ".join(str(p) for p in sorted(nodes[h].ports))
                self.p(f"  -> (L1h={h}, rid={nodes[h].rid}) -> (ports=[{ports}], lags=[])")
        self.p("==========")
        self.p("LAGS")
        self.p("==========")

    # ---- mirroring ---------------------------------------------------------------------------

    def do_mirroring_add(self, args: list[str]) -> None:
        self.exactly(args, 2)
        self.state.pre.mirroring_add(parse_int(args[0], "mirror_id"),
                                     parse_int(args[1], "egress_port"))

    def do_mirroring_add_mc(self, args: list[str]) -> None:
        self.exactly(args, 2)
        self.state.pre.mirroring_add_mc(parse_int(args[0], "mirror_id"),
                                        parse_int(args[1], "mgrp"))

    def do_mirroring_delete(self, args: list[str]) -> None:
        self.exactly(args, 1)
        try:
            self.state.pre.mirroring_delete(parse_int(args[0], "mirror_id"))
        except RuntimeApiError:
            raise CliError("Invalid mirroring operation (SESSION_NOT_FOUND)") from None

    def do_mirroring_get(self, args: list[str]) -> None:
        self.exactly(args, 1)
        session = self.state.pre.clone_session(parse_int(args[0], "mirror_id"))
        if session is None:
            raise CliError("Invalid mirroring operation (SESSION_NOT_FOUND)")
        self.p(f"MirroringSessionConfig(port={session.egress_port}, mgid={session.mc_group})")

    # ---- traffic manager and device ----------------------------------------------------------

    def _tm(self, method: str):
        fn = getattr(self.tm_hooks, method, None)
        if fn is None:
            raise CliError(f"Error: {method} needs the switch's traffic manager, "
                           "which is not available here")
        return fn

    def _queue(self, args: list[str], what: str, method: str) -> None:
        self.at_least(args, 1)
        if len(args) > 3:
            raise CliError(f"Error: Wrong number of args, expected at most 3 but got {len(args)}")
        value = parse_int(args[0], what)
        port = parse_int(args[1], "egress_port") if len(args) > 1 else None
        prio = parse_int(args[2], "priority") if len(args) > 2 else None
        self._tm(method)(value, port=port, prio=prio)

    def do_set_queue_depth(self, args: list[str]) -> None:
        self._queue(args, "nb_pkts", "set_queue_depth")

    def do_set_queue_rate(self, args: list[str]) -> None:
        self._queue(args, "rate_pps", "set_queue_rate")

    def do_get_time_elapsed(self, args: list[str]) -> None:
        self.p(self._tm("time_elapsed_us")())

    def do_reset_state(self, args: list[str]) -> None:
        self.exactly(args, 0)
        self.state.reset()

    def do_help(self, args: list[str]) -> None:
        self.p("Documented commands:")
        self.p(" ".join(self.commands()))


# the stateful externs' commands (counter_read, meter_set_rates, ...), from their modules
for _name, _command in externs.CLI_COMMANDS.items():
    setattr(CliInterpreter, "do_" + _name, _command)
