"""The switch's current program: compiled program, runtime state and engine, behind one lock.

The data-plane loop holds `lock` per batch of packets; the P4Runtime server and the runtime CLI
hold it per write, so a packet never sees a half-applied update.

Which pipeline runs a program (`--pipeline`):
- `auto` (the default): the C data plane (p4switch/cdp/engine.py; its build takes a second or
  two and is kept in the compile cache) where a C compiler is present, the program is one the
  C back end runs and the switch does not log packets; else native when that build is already
  kept (p4switch-compile --native and `make setup` build it), else Python, never waiting for a
  native build. The reason for each fallback is logged.
- `c`: as `auto`, the fallbacks logged as warnings (the C data plane was asked for).
- `native`: its stages compiled to native code (p4switch/native.py; built now if not yet kept,
  an error if it cannot be built). It has what the C data plane lacks (PFC watchdog, pause
  hold, meters, P4 functions, `for` loops).
- `python`: the generated Python, the reference.

Every write to the runtime's state (P4Runtime, the runtime CLI, a link going up or down)
calls `note_write`, and every P4Runtime read `publish`, so a pipeline that keeps a copy of the
state (the C one) renews it, and hands back what it counted.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

PIPELINES = ("auto", "native", "python", "c")
log = logging.getLogger("p4switch.device")


class ProgramLoadError(Exception):
    """A program given on the command line cannot be loaded; the message says why."""


def load_program(path: str | Path) -> Any:
    """A CompiledProgram from a `.p4` source or a `p4switch-compile` device config file;
    ProgramLoadError (`file:line:col: error: message` lines) when it cannot be loaded."""
    from p4switch.compiler import MAX_DEVICE_CONFIG_BYTES, CompiledProgram, P4CompileError, compile_program
    from p4switch.frontend.source import SourceError, read_source

    path = Path(path)
    try:
        if path.suffix == ".p4":
            return compile_program(path)
        config = read_source(path, MAX_DEVICE_CONFIG_BYTES).encode()
        return CompiledProgram.from_device_config(config, origin=str(path))
    except SourceError as exc:
        raise ProgramLoadError(f"{exc.file}: error: {exc.message}" if exc.line == 0 else
                               f"{exc.file}:{exc.line}:{exc.col}: error: {exc.message}") from exc
    except P4CompileError as exc:
        raise ProgramLoadError(str(exc)) from exc


def refreeze_heap() -> None:
    """Keep the running program's objects out of the cyclic collector's way (its passes stay
    short and do not stall the data plane), after releasing the previous program's: frozen
    objects are never collected, so each install first unfreezes what the last one froze."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


class Device:
    """Program, state and engine currently installed; replaced as a whole by `install`."""

    def __init__(self, *, cpu_port: int | None, drop_port: int, priority_queues: int,
                 port_up: Callable[[int], bool], log: Callable[[str], None] | None = None,
                 pipeline: str = "auto"):
        if pipeline not in PIPELINES:
            raise ValueError(f"pipeline must be one of {', '.join(PIPELINES)}, got {pipeline!r}")
        self.lock = threading.RLock()
        self.pipeline = pipeline
        self.cpu_port = cpu_port
        self.drop_port = drop_port
        self.priority_queues = priority_queues
        self.port_up = port_up
        self.log = log
        self.start = time.monotonic()
        self.program: Any = None
        self.state: Any = None
        self.engine: Any = None
        self.generation = 0  # bumped by every install
        self.writes = 0  # bumped by every write to the state (note_write)
        self._listeners: list[Callable[[], None]] = []
        self._write_listeners: list[Callable[[], None]] = []

    def note_write(self) -> None:
        """The runtime's state is about to be written (under the lock): what the engine
        counted is published first, and the write counted."""
        self.publish()
        self.writes += 1
        for listener in list(self._write_listeners):
            listener()

    def publish(self) -> None:
        """Make what the control plane reads current (under the lock; Engine.publish)."""
        if self.engine is not None:
            self.engine.publish()

    def now_us(self) -> int:
        return int((time.monotonic() - self.start) * 1e6)

    def build(self, program: Any) -> tuple[Any, Any]:
        """A fresh (state, engine) for `program`, not yet installed; ProgramLoadError when
        `--pipeline native` cannot build its native pipeline."""
        from p4switch.engine import EngineConfig
        from p4switch.runtime import RuntimeState

        state = RuntimeState(program.model, port_up=self.port_up)
        config = EngineConfig(drop_port=self.drop_port, cpu_port=self.cpu_port,
                              priority_queues=self.priority_queues, now_us=self.now_us,
                              log=self.log)
        return state, self._engine(program, state, config)

    def _engine(self, program: Any, state: Any, config: Any) -> Any:
        from p4switch import native

        if self.pipeline in ("auto", "c"):
            engine = self._c_engine(program, state, config)
            if engine is not None:
                return engine
        if self.pipeline in ("auto", "c") and not native.kept(program.native_source):
            log.info("program %s: Python pipeline (its native pipeline is not built: "
                     "p4switch-compile --native builds it)", program.name)
        elif self.pipeline != "python":
            try:
                engine = program.new_engine(state, config, native=True)
            except native.NativeUnavailable as exc:
                if self.pipeline == "native":
                    raise ProgramLoadError(f"program {program.name}: --pipeline native: "
                                           f"{exc}") from None
                log.warning("program %s: Python pipeline (native unavailable: %s)",
                            program.name, exc)
            else:
                log.info("program %s: native pipeline", program.name)
                return engine
        else:
            log.info("program %s: Python pipeline (--pipeline python)", program.name)
        return program.new_engine(state, config)

    def _c_engine(self, program: Any, state: Any, config: Any) -> Any:
        """The C data plane's engine, or None (the reason logged) where it cannot run."""
        from p4switch.cdp.engine import CEngine
        from p4switch.cdp.gen.program import CUnsupported
        from p4switch.native import NativeUnavailable

        fallback = log.warning if self.pipeline == "c" else log.info
        if config.log is not None:
            fallback("program %s: not on the C data plane: it does not log packets "
                     "(this switch logs at info level or below)", program.name)
            return None
        try:
            engine = CEngine(program, state, config, lambda: self.writes, self.start)
        except (CUnsupported, NativeUnavailable) as exc:
            fallback("program %s: not on the C data plane: %s", program.name, exc)
            return None
        log.info("program %s: C data plane", program.name)
        return engine

    def install(self, program: Any, state: Any = None, engine: Any = None) -> None:
        """Make `program` the running one (building state and engine unless given)."""
        if state is None or engine is None:
            state, engine = self.build(program)
        with self.lock:
            self.program, self.state, self.engine = program, state, engine
            self.generation += 1
            for listener in list(self._listeners):
                listener()
        refreeze_heap()

    def on_write(self, listener: Callable[[], None]) -> None:
        """Call `listener` (under the lock) whenever the state is about to be written."""
        self._write_listeners.append(listener)

    def on_install(self, listener: Callable[[], None]) -> None:
        """Call `listener` (under the lock) whenever a new program is installed."""
        self._listeners.append(listener)
