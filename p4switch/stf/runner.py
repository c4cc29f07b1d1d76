"""Runs an STF test against the embedded switch, the way p4c's BMv2 STF runner runs it.

Statements run in order on a fresh `RuntimeState`: table writes go to the runtime state,
simple_switch_CLI commands to the runtime's CLI interpreter, packets through
`Engine.process()`. Outputs are then compared per port (`p4switch.stf.compare`).

Outcomes: PASS; WRONG (an output differs, is missing or extra, a counter check fails, or the
engine failed on a packet); UNSUPPORTED (the compiler or the runner does not support something
the test needs); INVALID (the program or the test is wrong, e.g. a name that does not exist).
A command simple_switch_CLI would reject (duplicate entry, unparsable number) is skipped with a
warning and the test goes on, as it does under BMv2.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from p4switch.runtime.errors import RuntimeApiError
from p4switch.stf import compare
from p4switch.stf import entries as ent
from p4switch.stf import syntax as s
from p4switch.stf.parser import StfSyntaxError, parse_stf_file

if TYPE_CHECKING:
    from p4switch.runtime.cli_commands import CliInterpreter
    from p4switch.runtime.entries import Entry


class Outcome(str, Enum):
    PASS = "PASS"
    WRONG = "WRONG"
    UNSUPPORTED = "UNSUPPORTED"
    INVALID = "INVALID"


@dataclass
class StfResult:
    outcome: Outcome
    messages: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # commands skipped as BMv2 rejects them

    @property
    def reason(self) -> str:
        """One line saying why (empty for PASS)."""
        return self.messages[0].splitlines()[0] if self.messages else ""


class _Stop(Exception):
    def __init__(self, outcome: Outcome, message: str) -> None:
        super().__init__(message)
        self.outcome = outcome
        self.message = message


def run_stf_files(
    program_path: str | Path,
    stf_path: str | Path,
    include_dirs: Sequence[str | Path] = (),
    defines: Mapping[str, str] | None = None,
    log: Callable[[str], None] | None = None,
) -> StfResult:
    """Compile the program, parse the test, run it."""
    from p4switch.compiler import P4CompileError, compile_program

    try:
        statements = parse_stf_file(stf_path)
    except StfSyntaxError as exc:
        return StfResult(Outcome.INVALID, exc.errors)
    try:
        program = compile_program(program_path, include_dirs, dict(defines or {}))
    except P4CompileError as exc:
        return compile_failure(exc)
    return run_statements(program, statements, log)


def compile_failure(exc) -> StfResult:
    """UNSUPPORTED when any diagnostic is an `unsupported:` one, else INVALID."""
    diagnostics = [str(d) for d in getattr(exc, "diagnostics", [])] or str(exc).splitlines()
    unsupported = [d for d in diagnostics if "unsupported:" in d]
    if unsupported:
        return StfResult(Outcome.UNSUPPORTED, unsupported + [d for d in diagnostics
                                                             if d not in unsupported])
    return StfResult(Outcome.INVALID, diagnostics or ["compilation failed"])


def run_statements(program, statements: list[s.Statement],
                   log: Callable[[str], None] | None = None,
                   pipeline: str = "python") -> StfResult:
    """Run parsed statements against a compiled program (a `CompiledProgram`) on one of its
    pipelines: "python", "native" (p4switch/native.py) or "c" (p4switch/cdp/pipeline.py).
    Either of the last two raises NativeUnavailable when it cannot be built; a program the C
    back end does not run is UNSUPPORTED on "c"."""
    from p4switch.cdp.gen.program import CUnsupported

    try:
        run = _Run(program, log, pipeline)
    except CUnsupported as exc:
        return StfResult(Outcome.UNSUPPORTED, [str(exc)])
    try:
        for stmt in statements:
            try:
                run.execute(stmt)
            except ent.Rejected as exc:
                # simple_switch_CLI prints an error and bmv2stf goes on without the command.
                run.warnings.append(f"line {stmt.line}: skipped, BMv2 rejects it: {exc}")
    except _Stop as stop:
        return StfResult(stop.outcome, [f"line {stmt.line}: {stop.message}"], run.warnings)
    problems = run.counter_failures + compare.compare_outputs(run.ports, run.expects, run.outputs)
    if problems:
        return StfResult(Outcome.WRONG, problems, run.warnings)
    return StfResult(Outcome.PASS, [], run.warnings)


class _Run:
    def __init__(self, program, log: Callable[[str], None] | None, pipeline: str) -> None:
        from p4switch.engine import EngineConfig
        from p4switch.runtime import RuntimeState

        self.model = program.model
        self.state = RuntimeState(program.model)
        start = time.monotonic()
        config = EngineConfig(now_us=lambda: int((time.monotonic() - start) * 1e6), log=log)
        if pipeline == "c":
            from p4switch.cdp.pipeline import CPipeline

            self.engine: Any = CPipeline(program, self.state, config)
        else:
            self.engine = program.new_engine(self.state, config, native=pipeline == "native")
        self.log = log or (lambda line: None)
        self._cli: CliInterpreter | None = None
        self.ports: set[int] = set()
        self.expects: dict[int, list[s.Expect]] = {}
        self.outputs: dict[int, list[bytes]] = {}
        self.entries_by_id: dict[str, tuple[str, Entry]] = {}
        self.counter_failures: list[str] = []
        self.warnings: list[str] = []

    def execute(self, stmt: s.Statement) -> None:
        handler = getattr(self, "_" + type(stmt).__name__.lower())
        handler(stmt)

    def _packet(self, stmt: s.Packet) -> None:
        self.ports.add(stmt.port)
        try:
            out = self.engine.process(stmt.port, stmt.data)
        except Exception as exc:  # the engine must never raise on a packet
            text = f"{type(exc).__name__}: {exc}"
            if isinstance(exc, NotImplementedError) or str(exc).startswith("unsupported"):
                raise _Stop(Outcome.UNSUPPORTED, f"engine: {text}") from exc
            raise _Stop(Outcome.WRONG, f"engine raised on the packet: {text}") from exc
        for port, data in out:
            self.outputs.setdefault(port, []).append(bytes(data))

    def _expect(self, stmt: s.Expect) -> None:
        self.ports.add(stmt.port)
        self.expects.setdefault(stmt.port, []).append(stmt)

    def _add(self, stmt: s.Add) -> None:
        table, entry = self._entry(stmt)
        try:
            self.state.tables[table.name].insert(entry)
        except RuntimeApiError as exc:  # duplicate, table full, ...: the CLI rejects it too
            raise ent.Rejected(f"add to {table.name}: {_api_error(exc)}") from exc
        if stmt.entry_id is not None:
            self.entries_by_id[stmt.entry_id] = (table.name, entry)

    def _entry(self, stmt: s.Add):
        from p4switch.runtime.entries import Entry

        try:
            table = ent.find_table(self.model, stmt.table)
            if table.implementation is not None:
                raise ent.Rejected(f"table {table.name} has an action profile: table_add "
                                   "cannot program it")
            keys = ent.build_key(table, stmt.matches)
            action = ent.action_call(self.model, table, stmt.action)
        except ent.EntryError as exc:
            raise _Stop(Outcome.INVALID, str(exc)) from exc
        except ent.Unsupported as exc:
            raise _Stop(Outcome.UNSUPPORTED, str(exc)) from exc
        priority = 0
        if ent.needs_priority(table):
            if stmt.priority is None:
                raise _Stop(Outcome.INVALID, f"add to {table.name}: the table needs a priority")
            priority = stmt.priority + 1  # STF: larger wins, 0 allowed; P4Runtime: > 0
        return table, Entry(keys=keys, priority=priority, action=action)

    def _setdefault(self, stmt: s.SetDefault) -> None:
        try:
            table = ent.find_table(self.model, stmt.table)
            action = ent.action_call(self.model, table, stmt.action)
        except ent.EntryError as exc:
            raise _Stop(Outcome.INVALID, str(exc)) from exc
        try:
            self.state.tables[table.name].set_default(action)
        except RuntimeApiError as exc:
            raise ent.Rejected(f"setdefault {table.name}: {_api_error(exc)}") from exc

    def _remove(self, stmt: s.Remove) -> None:
        for table in self.model.tables:
            if not table.is_const:
                self.state.tables[table.name].clear()
        self.entries_by_id.clear()

    def _checkcounter(self, stmt: s.CheckCounter) -> None:
        packets, nbytes = self._counter_value(stmt)
        if stmt.count_type is None:
            return  # no condition: BMv2's runner only reads the counter
        actual = packets if stmt.count_type == "packets" else nbytes
        ok = {"==": actual == stmt.value, "!=": actual != stmt.value, "<": actual < stmt.value,
              "<=": actual <= stmt.value, ">": actual > stmt.value,
              ">=": actual >= stmt.value}[stmt.op]
        if not ok:
            self.counter_failures.append(
                f"line {stmt.line}: check_counter {stmt.counter}({stmt.index}): "
                f"{stmt.count_type} is {actual}, expected {stmt.op} {stmt.value}")

    def _counter_value(self, stmt: s.CheckCounter) -> tuple[int, int]:
        if stmt.index in self.entries_by_id:
            _, entry = self.entries_by_id[stmt.index]
            packets, nbytes = entry.direct_counter
            return packets, nbytes
        names = [c.name for c in self.model.counters if c.direct_table is None]
        try:
            name = ent.find_by_name(names, stmt.counter, "counter", lambda n: n)
            index = ent.parse_int(stmt.index, "counter index")
        except ent.EntryError as exc:
            raise _Stop(Outcome.INVALID, str(exc)) from exc
        return self.state.counters[name].read(index)

    def _wait(self, stmt: s.Wait) -> None:
        """Packets are processed synchronously: nothing to wait for."""

    def _nopacket(self, stmt: s.NoPacket) -> None:
        """Ports without expectations are already required to stay silent."""

    def _clicommand(self, stmt: s.CliCommand) -> None:
        if self._cli is None:
            try:
                from p4switch.runtime.cli_commands import CliInterpreter
            except ImportError as exc:
                raise _Stop(Outcome.UNSUPPORTED,
                            f"{stmt.command}: the simple_switch_CLI interpreter is not "
                            "available") from exc
            self._cli = CliInterpreter(self.state)
        output = self._cli.execute(stmt.text())
        self.log(f"{stmt.text()}\n{output}".rstrip())
        if getattr(self._cli, "failed", False):
            first = output.splitlines()[0] if output else "failed"
            if first.startswith("Error: unsupported:"):
                raise _Stop(Outcome.UNSUPPORTED, f"{stmt.command}: {first[7:]}")
            # As with simple_switch_CLI under bmv2stf, a failing command does not stop the test.
            raise ent.Rejected(f"{stmt.text()}: {first}")


def _api_error(exc: Exception) -> str:
    code = getattr(exc, "code", None)
    return f"{code}: {exc}" if code else f"{type(exc).__name__}: {exc}"
