"""Switch targets: the programs a switch node can run, and how their argv is built.

Both targets behave like BMv2's `simple_switch_grpc` started with `--no-p4`: they open one port per
`-i PORT@INTF`, listen for P4Runtime on `--grpc-server-addr` and for the runtime CLI on
`--thrift-port`, and get their pipeline later over P4Runtime. The only difference in the argv is
where `--cpu-port` goes: `simple_switch_grpc` takes it as a target option (after `--`), p4switch
before `--`.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from topos.model import Switch


@dataclass(frozen=True)
class Target:
    """A switch program. `command` is the argv prefix; `requires` lists programs that must exist."""

    name: str
    command: tuple[str, ...]
    requires: tuple[str, ...] = ()
    cpu_port_after_separator: bool = False

    def missing(self) -> list[str]:
        """Required programs that cannot be found (empty when the target is usable)."""
        needed = self.requires or self.command[:1]
        return [prog for prog in needed if not _find(prog)]

    def available(self) -> bool:
        return not self.missing()

    def argv(self, switch: Switch, ports: Mapping[int, str], *, pcap_dir: Path | None = None,
             log_console: bool = False, extra: Sequence[str] = ()) -> list[str]:
        """The full command line starting `switch` with `ports` (P4 port -> interface)."""
        program = _find(self.command[0]) or self.command[0]
        argv = [program, *self.command[1:]]
        for port, intf in sorted(ports.items()):
            argv += ["-i", f"{port}@{intf}"]
        argv += ["--device-id", str(switch.device_id), "--thrift-port", str(switch.thrift_port)]
        cpu = ["--cpu-port", str(switch.cpu_port)]
        if not self.cpu_port_after_separator:
            argv += cpu
        if pcap_dir is not None:
            argv += ["--pcap", str(pcap_dir)]
        if log_console:
            argv.append("--log-console")
        argv += [*extra, "--no-p4", "--", "--grpc-server-addr", switch.grpc_addr]
        if self.cpu_port_after_separator:
            argv += cpu
        return argv


def _find(program: str) -> str | None:
    """A program on PATH, or next to the running Python (the project's venv `bin/`)."""
    if "/" in program:
        return program if Path(program).exists() else None
    found = shutil.which(program)
    if found:
        return found
    beside = Path(sys.executable).parent / program
    return str(beside) if beside.exists() else None


P4SWITCH = Target("p4switch", ("p4switch",))
BMV2 = Target("bmv2", ("simple_switch_grpc",), requires=("simple_switch_grpc", "p4c-bm2-ss"),
              cpu_port_after_separator=True)
TARGETS: dict[str, Target] = {t.name: t for t in (P4SWITCH, BMV2)}


def select_target(name: str = "auto") -> Target:
    """`auto` is p4switch, the embedded default target, as everywhere in the lab
    (`controller.pipeline.resolve_target`); BMv2 only when asked for by name."""
    if name == "auto":
        name = P4SWITCH.name
    if name not in TARGETS:
        raise ValueError(f"unknown target {name!r}; choose auto, {', '.join(TARGETS)}")
    target = TARGETS[name]
    if not target.available():
        raise RuntimeError(f"target {name} is not available: {', '.join(target.missing())} "
                           f"not found on PATH")
    return target
