"""Public entry point of the p4switch compiler.

    program = compile_program("p4src/ecmp.p4")
    program.model                        # ControlPlaneModel, names as p4c writes them
    engine = program.new_engine(RuntimeState(program.model), EngineConfig())
    engine.process(port, frame_bytes)    # -> [(egress port, bytes), ...]

source -> preprocess -> parse (LALR grammar) -> typed IR (checker) -> Python module (backend),
exec'd once per program; the per-packet path never touches the syntax tree. The back end also
writes the same module as Cython source: `new_engine(..., native=True)` runs the program
compiled to native code (p4switch/native.py), with the same results.

What the back end makes of a preprocessed program (its Python and Cython sources,
control-plane model and field lists) is kept in an on-disk cache (`compile_cache.CompileCache`), keyed by the device
config and the compiler's own sources: the switches of a fabric load the program their
controller compiled instead of compiling it again. A missing, unreadable or corrupt entry is rebuilt.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .compile_cache import CompileCache
from .cpmodel import ControlPlaneModel
from .engine import Engine, EngineConfig
from .frontend.diagnostics import Diagnostic, P4CompileError, Pos, Reporter
from .frontend.preprocess import Preprocessed, preprocess
from .frontend.source import MAX_SOURCE_BYTES, SourceError, read_source

if TYPE_CHECKING:
    from .frontend.check import ProgramInfo
    from .frontend.types import StructType

__all__ = ["CompiledProgram", "Diagnostic", "P4CompileError",
           "compile_program", "compile_source"]

_CONFIG_FORMAT = "p4switch-device-config-1"
# the source (at most MAX_SOURCE_BYTES, JSON-escaped) and its line map ("file", line) per line
MAX_DEVICE_CONFIG_BYTES = 16 * MAX_SOURCE_BYTES


class CompiledProgram:
    def __init__(self, name: str, pre: Preprocessed, source: str, native_source: str,
                 model: ControlPlaneModel, field_lists: dict[int, list[str]]):
        self.name = name
        self.model = model
        self.python_source = source
        self.native_source = native_source
        self._pre = pre
        namespace: dict = {}
        exec(compile(source, f"<p4switch:{name}>", "exec"), namespace)
        self._make = namespace["make"]
        self._field_lists = field_lists

    def device_config(self) -> bytes:
        """The self-contained bundle p4switch-compile writes and SetForwardingPipelineConfig
        carries: the preprocessed source, its line map and the program name."""
        return _device_config(self.name, self._pre)

    @classmethod
    def from_device_config(cls, data: bytes, origin: str = "<device config>"
                           ) -> CompiledProgram:
        """The program a device config carries; P4CompileError, naming `origin` (where the
        config came from), when it is not one."""
        try:
            if len(data) > MAX_DEVICE_CONFIG_BYTES:
                raise ValueError(f"larger than {MAX_DEVICE_CONFIG_BYTES >> 20} MiB")
            doc = json.loads(bytes(data).decode())
            if not isinstance(doc, dict) or doc.get("format") != _CONFIG_FORMAT:
                raise ValueError("not a p4switch device config")
            source, name, line_map = doc["source"], doc["name"], doc["line_map"]
            if not (isinstance(source, str) and isinstance(name, str) and name.isidentifier()
                    and isinstance(line_map, list)
                    and all(isinstance(x, list) and len(x) == 2 and isinstance(x[0], str)
                            and type(x[1]) is int for x in line_map)):
                raise ValueError("a field of the wrong type")
            pre = Preprocessed(source, [(file, line) for file, line in line_map])
        except (ValueError, KeyError, TypeError, RecursionError) as e:
            raise P4CompileError([Diagnostic(origin, 0, 0,
                                             f"invalid device config: {e}")]) from None
        return _compile_preprocessed(pre, name)

    def new_engine(self, state, config: EngineConfig | None = None, *,
                   native: bool = False) -> Engine:
        """An engine running this program on `state`; `native`: its stages compiled to
        native code (built once and cached; raises `native.NativeUnavailable` when it
        cannot be built here)."""
        config = config or EngineConfig()
        make = self._make
        if native:
            from .native import native_module

            make = native_module(self.native_source, self.name).make
        engine = Engine(make(state, config), state, config, self._field_lists)
        engine.pipeline = "native" if native else "python"
        return engine


def compile_program(path: str | Path, include_dirs: Sequence[str | Path] = (),
                    defines: Mapping[str, str] | None = None) -> CompiledProgram:
    """P4CompileError for any fault of the program, its file (missing, a directory,
    unreadable, past `MAX_SOURCE_BYTES`, not UTF-8 text) included."""
    try:
        text = read_source(path)
    except SourceError as e:
        raise P4CompileError([Diagnostic(e.file, e.line, e.col, e.message)]) from None
    return compile_source(text, str(path), include_dirs, defines)


def compile_source(text: str, filename: str = "<string>",
                   include_dirs: Sequence[str | Path] = (),
                   defines: Mapping[str, str] | None = None) -> CompiledProgram:
    reporter = Reporter()
    pre = preprocess(text, filename, include_dirs, defines, reporter)
    reporter.check()
    return _compile_preprocessed(pre, Path(filename).stem, reporter)


def _device_config(name: str, pre: Preprocessed) -> bytes:
    return json.dumps({"format": _CONFIG_FORMAT, "name": name, "source": pre.text,
                       "line_map": pre.line_map}, separators=(",", ":")).encode()


def _compile_preprocessed(pre: Preprocessed, name: str,
                          reporter: Reporter | None = None) -> CompiledProgram:
    """The program from the cache when it holds it (and still loads), else compiled and
    cached; both give the same Python source and model."""
    cache = CompileCache.from_env()
    key = cache.key(_device_config(name, pre)) if cache is not None else ""
    if cache is not None:
        hit = cache.load(key)
        if hit is not None:
            try:
                return CompiledProgram(name, pre, *hit)
            except Exception:  # a cached source that does not load is rebuilt, not trusted
                cache.discard(key)
    compiled = _compile(pre, name, reporter or Reporter())
    program = CompiledProgram(name, pre, *compiled)
    if cache is not None:
        cache.store(key, *compiled)
    return program


def _compile(pre: Preprocessed, name: str, reporter: Reporter
             ) -> tuple[str, str, ControlPlaneModel, dict[int, list[str]]]:
    """Parse, check and generate: (Python source, Cython source, control-plane model,
    field lists)."""
    from .backend.program import generate
    from .frontend.check import Checker
    from .frontend.parse import parse

    try:
        prog = parse(pre, reporter)
        reporter.check()
        assert prog is not None  # check() raised otherwise
        info = Checker(reporter).check_program(prog)
    except P4CompileError:
        raise
    except Exception as e:  # a front-end bug must still come out as a diagnostic
        reporter.error(Pos(pre.main_file, 0, 0),
                       f"internal compiler error: {type(e).__name__}: {e}")
    reporter.check()
    result = generate(info, name, reporter)
    reporter.check()
    source, native_source, model = result
    return source, native_source, model, _field_lists(info)


def _field_lists(info: ProgramInfo) -> dict[int, list[str]]:
    """@field_list(i, ...) on user metadata fields -> {i: [python attribute names]}."""
    from .backend.emitter import py_ident

    return {index: [py_ident(f) for f in fields]
            for index, fields in field_lists(info.meta_type).items()}


def field_lists(meta: StructType | None) -> dict[int, list[str]]:
    """@field_list(i, ...) on the fields of the user metadata -> {i: [field names]}."""
    lists: dict[int, list[str]] = {}
    if meta is None:
        return lists
    for fname, annos in meta.field_annotations.items():
        for a in annos:
            if a.name != "field_list":
                continue
            for part in a.body.split(","):
                try:
                    lists.setdefault(int(part.strip(), 0), []).append(fname)
                except ValueError:
                    continue
    return lists
