"""A switch target: everything that differs between the switch programs the lab runs.

A `Target` knows how to compile a P4 program into the artefacts a P4Runtime pipeline push
carries (`compile`), how to start a switch (`argv`; both targets behave like BMv2's
`simple_switch_grpc --no-p4`: one port per `-i PORT@INTF`, P4Runtime on `--grpc-server-addr`,
the runtime CLI on `--thrift-port`, the pipeline later over P4Runtime), which runtime-CLI client
talks to a running switch (`cli`), the versions of what it runs (`versions`), and what it can
do (`caps`). Code outside this package asks the capabilities, never the target's name.
"""

from __future__ import annotations

import dataclasses
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from targets.programs import find_program
from topos.errors import InputError, MachineError

if TYPE_CHECKING:
    from p4.config.v1 import p4info_pb2

    from targets.runtime_cli import RuntimeCli
    from topos.model import Switch


class TargetError(InputError):
    """An unknown target name."""


class TargetUnavailable(MachineError):
    """The target's programs (its switch, its compiler) are not installed."""


class CompileError(InputError, RuntimeError):
    """The target's compiler rejected the program."""


@dataclass(frozen=True)
class Capabilities:
    """What a target's data plane and P4Runtime server can do, as the lab's code needs to know."""

    # The traffic manager pauses a queue on a received PFC frame. Without it the program punts
    # PFC frames and the controller's pause agent slows the queue (controller/pfc_agent.py).
    can_pause_queues: bool = False
    # The traffic manager reports `queue_stats` (depth, tail drops, pause state) on the runtime
    # CLI. Without it, drops are read from the P4 counters' balance.
    reports_tm_stats: bool = False
    # The switch answers runtime-CLI commands itself (cheap to poll from a view); without it,
    # every client runs a CLI program of its own.
    serves_runtime_cli: bool = False
    # A packet that hits an action-selector group whose members are all deactivated (watch ports
    # down) kills the switch: PI on BMv2 divides by the number of active members.
    group_needs_live_member: bool = False
    # Group reads give every member the watch port of the group's last member (PI f96af95,
    # `DeviceMgrImp::action_profile_group_read`), so read-back watch ports cannot be compared.
    group_reads_lose_watch_ports: bool = False
    # One process serves several switches (`Target.group_argv`), so a fabric's switches can
    # share a few processes (`Target.sharing_processes`).
    serves_several_switches: bool = False


@dataclass(frozen=True)
class Compiled:
    """What the compiler made of a program: the P4Info and the target's device config."""

    p4info: p4info_pb2.P4Info
    device_config: bytes


@dataclass(frozen=True)
class Target(ABC):
    """A switch program. `command` is the argv prefix, `requires` the programs that must exist
    (the switch and its compiler), `switch_options` options of the switch model (priority
    queues, ...) that the target places where its argv wants them."""

    name: str
    command: tuple[str, ...]
    requires: tuple[str, ...]
    caps: Capabilities
    switch_options: tuple[str, ...] = ()
    log_level: str | None = None  # -L/--log-level of both switches (trace: every table hit)
    # a fabric's switches shared among this many processes (None: one process per switch)
    switch_processes: int | None = None
    # where `--cpu-port` and `switch_options` go: after `--` (simple_switch_grpc's target
    # options) or before it
    target_options_after_separator: ClassVar[bool] = False

    # ---- availability --------------------------------------------------------------------
    def missing(self) -> list[str]:
        """Required programs that cannot be found (empty when the target is usable)."""
        return [prog for prog in self.requires if not find_program(prog)]

    def available(self) -> bool:
        return not self.missing()

    def ensure_available(self) -> Target:
        """This target, or TargetUnavailable naming what is missing."""
        missing = self.missing()
        if missing:
            raise TargetUnavailable(f"target {self.name} is not available: "
                                    f"{', '.join(missing)} not found on PATH")
        return self

    # ---- starting a switch ---------------------------------------------------------------
    def argv(self, switch: Switch, ports: Mapping[int, str], *, pcap_dir: Path | None = None,
             log_console: bool = False, extra: Sequence[str] = ()) -> list[str]:
        """The full command line starting `switch` with `ports` (P4 port -> interface)."""
        late = self.target_options_after_separator
        argv = [find_program(self.command[0]) or self.command[0], *self.command[1:]]
        model = list(self.switch_options)
        cpu = ["--cpu-port", str(switch.cpu_port)]
        if not late:
            argv += model
        for port, intf in sorted(ports.items()):
            argv += ["-i", f"{port}@{intf}"]
        argv += ["--device-id", str(switch.device_id), "--thrift-port", str(switch.thrift_port)]
        if not late:
            argv += cpu
        if pcap_dir is not None:  # one token: a separate one would be taken as the program
            argv.append(f"--pcap={pcap_dir}")
        if self.log_level is not None:
            argv += ["--log-level", self.log_level]
        if log_console or self.log_level is not None:  # the log goes to the switch's log file
            argv.append("--log-console")
        argv += [*extra, "--no-p4", "--", "--grpc-server-addr", switch.grpc_addr]
        return [*argv, *cpu, *model] if late else argv

    def forkserver_argv(self) -> list[str] | None:
        """argv of a server that forks this target's switches from a loaded one
        (`topos.mininet.forked`), or None: every switch is a program started on its own."""
        return None

    @abstractmethod
    def with_queues(self, priority_queues: int, pause_link_mbps: float) -> Target:
        """This target with `priority_queues` queues per port; `pause_link_mbps` is the link
        rate PFC pause quanta refer to, for a traffic manager that pauses."""

    def without_queue_pause(self) -> Target:
        """This target with a traffic manager that ignores received PFC frames (unchanged
        where queues cannot pause)."""
        return self

    def with_log_level(self, level: str | None) -> Target:
        return dataclasses.replace(self, log_level=level)

    def with_options(self, *options: str) -> Target:
        return dataclasses.replace(self, switch_options=(*self.switch_options, *options))

    def sharing_processes(self, processes: int | None) -> Target:
        """This target with a fabric's switches served by `processes` processes (None: one each);
        TargetError where one process cannot serve several switches."""
        if processes is not None and not self.caps.serves_several_switches:
            raise TargetError(f"target {self.name} runs one switch per process")
        if processes is not None and processes < 1:
            raise TargetError(f"switch processes must be 1 or more, got {processes}")
        return dataclasses.replace(self, switch_processes=processes)

    def group_argv(self, argvs: Sequence[Sequence[str]]) -> list[str]:
        """One command line starting the switches of `argvs` (each `argv`'s) in one process."""
        raise TargetError(f"target {self.name} runs one switch per process")

    # ---- compiling -----------------------------------------------------------------------
    @abstractmethod
    def compile(self, program: Path, include_dirs: Sequence[str | Path] = ()) -> Compiled:
        """Compile `program`; CompileError with the compiler's message when it fails."""

    # ---- a running switch ----------------------------------------------------------------
    @abstractmethod
    def cli(self, thrift_port: int, timeout: float = 10.0) -> RuntimeCli:
        """A runtime-CLI client for the switch listening on `thrift_port` (connects on the
        first command; close it, or use it as a context manager)."""

    # ---- provenance ----------------------------------------------------------------------
    def versions(self) -> dict[str, str]:
        """The versions of the programs the target runs, as each one's `--version` prints."""
        out = {}
        for program in self.requires:
            path = find_program(program)
            if path is None:
                out[program] = "not installed"
                continue
            try:
                done = subprocess.run([path, "--version"], capture_output=True, text=True,
                                      timeout=10, check=False)
            except (OSError, subprocess.SubprocessError) as err:
                out[program] = f"unknown ({err})"
                continue
            lines = (done.stdout or done.stderr).strip().splitlines()
            out[program] = " ".join(lines[-1].split()) if lines else "unknown"
        return out
