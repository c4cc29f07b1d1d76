"""The `p4switch` command line, compatible with BMv2's `simple_switch_grpc`.

    p4switch -i 1@s1-eth1 -i 2@s1-eth2 --device-id 1 [--cpu-port N] [--priority-queues N]
             [--pcap [DIR]] [--log-console] [--log-level LEVEL] [--drop-port N]
             [--thrift-port N] [--runtime-secret-file FILE] [--pipeline auto|native|python|c]
             (PROGRAM | --no-p4) [-- --grpc-server-addr ADDR ...]

As in BMv2, target options (`--grpc-server-addr`, `--cpu-port`, `--drop-port`,
`--priority-queues`) follow a `--`; the last three are also accepted before it. PROGRAM is a `.p4`
file or a device-config bundle written by `p4switch-compile` (`*.p4switch.json`). Unlike BMv2,
the gRPC server binds to loopback unless `--grpc-server-addr` says otherwise (a warning says so
when it does). As in BMv2, `-- --grpc-server-ssl --grpc-server-cert PEM --grpc-server-key PEM`
serves P4Runtime over TLS, and `--grpc-server-cacert PEM --grpc-server-with-client-auth` admits
only clients with a certificate that CA signed. `--runtime-secret-file FILE` (p4switch-only):
every runtime CLI connection must first send `auth <the file's first line>`.

Several switches in one process (p4switch-only): their command lines joined by `::`,

    p4switch -i 1@s1-eth1 ... --thrift-port 9090 --no-p4 -- --grpc-server-addr 127.0.0.1:9559 \
          :: -i 1@s2-eth1 ... --thrift-port 9091 --no-p4 -- --grpc-server-addr 127.0.0.1:9560

each switch with its own interfaces, gRPC address and runtime CLI port; one loop serves all their
data planes (`p4switch.switch.process.run_switches`).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field

from p4switch.switch.access import GrpcTls, OptionsError, grpc_tls, read_secret
from p4switch.switch.device import PIPELINES

LOG_LEVELS = ("trace", "debug", "info", "warn", "error", "off")
DEFAULT_GRPC_ADDR = "127.0.0.1:9559"
DEFAULT_THRIFT_PORT = 9090
MAX_PORT = 511
MAX_PRIORITY_QUEUES = 8  # standard_metadata.priority is 3 bits
GROUP_SEPARATOR = "::"  # between the command lines of a switch group
MAX_DEVICE_ID = (1 << 64) - 1  # P4Runtime's device_id is a uint64


@dataclass
class SwitchOptions:
    interfaces: dict[int, str] = field(default_factory=dict)  # port number -> interface name
    program: str | None = None  # None with --no-p4
    device_id: int = 0
    cpu_port: int | None = None
    drop_port: int = 511
    priority_queues: int = 1
    pcap_dir: str | None = None
    log_console: bool = False
    log_level: str = "info"
    log_file: str | None = None
    thrift_port: int = DEFAULT_THRIFT_PORT
    grpc_addr: str = DEFAULT_GRPC_ADDR
    pfc: bool = True  # p4switch-only: honour received PFC frames in the traffic manager
    pfc_link_mbps: float | None = None  # rate PFC quanta refer to (default: interface speed)
    pipeline: str = "auto"  # p4switch-only: native, python, c or auto (device.py)
    grpc_tls: GrpcTls | None = None  # P4Runtime over TLS
    runtime_secret: bytes | None = None  # the runtime CLI's shared secret



def _interface(text: str) -> tuple[int, str]:
    port, sep, name = text.partition("@")
    if not sep or not name or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected <port>@<interface>, got {text!r}")
    return int(port), name


def _uint(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {text!r}")
    return int(text)


def _add_target_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cpu-port", type=_uint, metavar="N",
                        help="port used for P4Runtime packet-in/packet-out (> 0)")
    parser.add_argument("--drop-port", type=_uint, metavar="N",
                        help="egress_spec value that drops the packet (default 511)")
    parser.add_argument("--priority-queues", type=_uint, metavar="N",
                        help="egress priority queues per port (default 1, at most 8)")


def main_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="p4switch",
        description="Embedded v1model P4 switch, command-line compatible with simple_switch_grpc.",
        epilog="Target options after '--': --grpc-server-addr ADDR (default "
        f"{DEFAULT_GRPC_ADDR}), --grpc-server-ssl, --grpc-server-cert PEM, --grpc-server-key "
        "PEM, --grpc-server-cacert PEM, --grpc-server-with-client-auth, --cpu-port N, "
        "--drop-port N, --priority-queues N.",
    )
    p.add_argument("-i", "--interface", type=_interface, action="append", default=[],
                   metavar="PORT@IFACE", help="attach interface IFACE as port PORT (repeatable)")
    p.add_argument("--pcap", nargs="?", const=".", default=None, metavar="DIR",
                   help="write <iface>_in.pcap / <iface>_out.pcap per port into DIR (default .)")
    p.add_argument("--thrift-port", type=_uint, default=DEFAULT_THRIFT_PORT, metavar="N",
                   help="TCP port of the runtime CLI channel on loopback (default 9090)")
    p.add_argument("--runtime-secret-file", metavar="FILE",
                   help="p4switch-only: runtime CLI clients must first send 'auth SECRET', "
                   "SECRET being this file's first line")
    p.add_argument("--device-id", type=_uint, default=0, metavar="N",
                   help="P4Runtime device id (default 0)")
    p.add_argument("--log-console", action="store_true", help="log to stderr")
    p.add_argument("--log-file", metavar="PATH", help="log to this file")
    p.add_argument("-L", "--log-level", choices=LOG_LEVELS, default=None,
                   help="trace logs every packet through the pipeline (default info)")
    p.add_argument("--no-p4", action="store_true",
                   help="start without a program; wait for SetForwardingPipelineConfig")
    _add_target_options(p)
    pfc = p.add_argument_group("p4switch-only")
    pfc.add_argument("--no-pfc", action="store_true",
                     help="do not pause egress queues on received PFC frames")
    pfc.add_argument("--pfc-link-mbps", type=float, metavar="MBPS",
                     help="link rate PFC pause quanta refer to (default: each interface's "
                     "speed; set it to the emulated rate of shaped links)")
    pfc.add_argument("--pipeline", choices=PIPELINES, default="auto",
                     help="auto (default): the C data plane where a C compiler is present and "
                     "it runs the program, else native when already built (p4switch-compile "
                     "--native), else Python; c: as auto, warning when it falls back; native: "
                     "compiled to native code (has the PFC watchdog and pause hold); python")
    p.add_argument("program", nargs="?", metavar="PROGRAM",
                   help=".p4 source or p4switch-compile device config (*.p4switch.json)")
    return p


def target_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="p4switch ... --", add_help=False)
    p.add_argument("--grpc-server-addr", metavar="ADDR")
    p.add_argument("--grpc-server-ssl", action="store_true")
    p.add_argument("--grpc-server-cert", metavar="PEM")
    p.add_argument("--grpc-server-key", metavar="PEM")
    p.add_argument("--grpc-server-cacert", metavar="PEM")
    p.add_argument("--grpc-server-with-client-auth", action="store_true")
    _add_target_options(p)
    return p


def _fix_pcap(argv: list[str]) -> list[str]:
    """`--pcap` takes an optional directory: only an existing directory is taken as its value."""
    out: list[str] = []
    for i, tok in enumerate(argv):
        out.append(tok)
        if tok == "--pcap":
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            if nxt is None or nxt.startswith("-") or not os.path.isdir(nxt):
                out.append(".")
    return out


def parse_args(argv: list[str]) -> SwitchOptions:
    """Parse argv (without the program name). Raises OptionsError on bad input."""
    main_argv, target_argv = argv, []
    if "--" in argv:
        cut = argv.index("--")
        main_argv, target_argv = argv[:cut], argv[cut + 1:]
    main_ns = _parse(main_parser(), _fix_pcap(main_argv))
    target_ns = _parse(target_parser(), target_argv)

    errors: list[str] = []
    opts = SwitchOptions(device_id=main_ns.device_id, thrift_port=main_ns.thrift_port,
                         log_console=main_ns.log_console, log_file=main_ns.log_file)
    if main_ns.log_level:
        opts.log_level = main_ns.log_level
    opts.pfc = not main_ns.no_pfc
    opts.pipeline = main_ns.pipeline
    if main_ns.pfc_link_mbps is not None:
        if main_ns.pfc_link_mbps <= 0:
            errors.append(f"--pfc-link-mbps must be > 0, got {main_ns.pfc_link_mbps}")
        opts.pfc_link_mbps = main_ns.pfc_link_mbps
    if main_ns.log_console and main_ns.log_file:
        errors.append("--log-console and --log-file are mutually exclusive")

    for name in ("cpu_port", "drop_port", "priority_queues"):
        before, after = getattr(main_ns, name), getattr(target_ns, name)
        if before is not None and after is not None and before != after:
            errors.append(f"--{name.replace('_', '-')} given twice with different values "
                          f"({before} and {after})")
        value = after if after is not None else before
        if value is not None:
            setattr(opts, name, value)
    if target_ns.grpc_server_addr:
        opts.grpc_addr = target_ns.grpc_server_addr
    errors += _check_addr(opts.grpc_addr)
    if opts.device_id > MAX_DEVICE_ID:
        errors.append(f"--device-id must be in 0..{MAX_DEVICE_ID} (64 bits), got {opts.device_id}")
    opts.grpc_tls, tls_errors = grpc_tls(target_ns)
    errors += tls_errors
    if main_ns.runtime_secret_file is not None:
        try:
            opts.runtime_secret = read_secret(main_ns.runtime_secret_file)
        except OptionsError as exc:
            errors.append(f"--runtime-secret-file {exc}")

    if main_ns.no_p4 and main_ns.program:
        errors.append(f"--no-p4 and a program ({main_ns.program}) are mutually exclusive")
    elif not main_ns.no_p4 and not main_ns.program:
        errors.append("no program given: pass a .p4 / .p4switch.json file or --no-p4")
    elif main_ns.program and not os.path.isfile(main_ns.program):
        fault = ("is a directory" if os.path.isdir(main_ns.program) else
                 "is not a regular file" if os.path.exists(main_ns.program) else "does not exist")
        errors.append(f"program file {main_ns.program!r} {fault}")
    opts.program = main_ns.program

    if main_ns.pcap is not None:
        if not os.path.isdir(main_ns.pcap):
            errors.append(f"directory {main_ns.pcap!r} given with --pcap does not exist")
        opts.pcap_dir = main_ns.pcap

    names: dict[str, int] = {}
    for port, name in main_ns.interface:
        if port in opts.interfaces:
            errors.append(f"port {port} given twice ({opts.interfaces[port]} and {name})")
        elif name in names:
            errors.append(f"interface {name} given twice (ports {names[name]} and {port})")
        elif port > MAX_PORT:
            errors.append(f"port {port} of {name} is above {MAX_PORT}")
        else:
            opts.interfaces[port] = name
            names[name] = port
    errors += _check_ports(opts)
    if errors:
        raise OptionsError("\n".join(errors))
    return opts


def split_group(argv: list[str]) -> list[list[str]]:
    """The command lines of a switch group (one, without `::`)."""
    segments: list[list[str]] = [[]]
    for token in argv:
        if token == GROUP_SEPARATOR:
            segments.append([])
        else:
            segments[-1].append(token)
    return segments


def parse_group(argv: list[str]) -> list[SwitchOptions]:
    """Parse one command line, or several joined by `::` (a switch group); every error of every
    switch at once, each named by its place in the group. Raises OptionsError."""
    segments = split_group(argv)
    if len(segments) == 1:
        return [parse_args(argv)]
    group: list[SwitchOptions] = []
    errors: list[str] = []
    for number, segment in enumerate(segments, 1):
        if not segment:
            errors.append(f"switch {number}: empty command line between '{GROUP_SEPARATOR}'")
            continue
        try:
            group.append(parse_args(segment))
        except OptionsError as exc:
            errors += [f"switch {number}: {line}" for line in str(exc).splitlines()]
    if not errors:
        errors = _group_conflicts(group)
    if errors:
        raise OptionsError("\n".join(errors))
    return group


def _group_conflicts(group: list[SwitchOptions]) -> list[str]:
    """What two switches of one process cannot share: an interface, a gRPC address, a runtime
    CLI port."""
    errors = []
    seen: dict[tuple[str, object], int] = {}
    for number, opts in enumerate(group, 1):
        claims: list[tuple[str, object]] = [("interface", name)
                                            for name in opts.interfaces.values()]
        claims += [("--grpc-server-addr", opts.grpc_addr), ("--thrift-port", opts.thrift_port)]
        for claim in claims:
            if claim in seen:
                errors.append(f"switch {number}: {claim[0]} {claim[1]} is also switch "
                              f"{seen[claim]}'s")
            else:
                seen[claim] = number
    return errors


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    ns, rest = parser.parse_known_args(argv)
    if rest:
        where = " after '--'" if parser.prog.endswith("--") else ""
        raise OptionsError(f"unrecognized arguments{where}: {' '.join(rest)}")
    return ns


def _check_addr(addr: str) -> list[str]:
    host, sep, port = addr.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        return [f"--grpc-server-addr must be HOST:PORT, got {addr!r}"]
    return []


def _check_ports(opts: SwitchOptions) -> list[str]:
    errors = []
    if opts.drop_port > MAX_PORT:
        errors.append(f"--drop-port {opts.drop_port} does not fit in 9 bits")
    if opts.drop_port in opts.interfaces:
        errors.append(f"port {opts.drop_port} ({opts.interfaces[opts.drop_port]}) is the drop "
                      "port; choose another --drop-port")
    if opts.cpu_port is not None:
        if opts.cpu_port == 0 or opts.cpu_port > MAX_PORT:
            errors.append(f"--cpu-port must be in 1..{MAX_PORT}, got {opts.cpu_port}")
        elif opts.cpu_port == opts.drop_port:
            errors.append(f"--cpu-port {opts.cpu_port} equals the drop port")
        elif opts.cpu_port in opts.interfaces:
            errors.append(f"--cpu-port {opts.cpu_port} is also interface "
                          f"{opts.interfaces[opts.cpu_port]}")
    if not 1 <= opts.priority_queues <= MAX_PRIORITY_QUEUES:
        errors.append(f"--priority-queues must be in 1..{MAX_PRIORITY_QUEUES}, "
                      f"got {opts.priority_queues}")
    if not 0 < opts.thrift_port < 65536:
        errors.append(f"--thrift-port must be in 1..65535, got {opts.thrift_port}")
    return errors
