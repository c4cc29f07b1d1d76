"""The code generator: typed IR -> one Python module with a `make(state, config)` factory.

`make` binds tables and externs of a RuntimeState to closure variables once, then returns the
pipeline stage functions (parser, verify_checksum, ingress, egress, compute_checksum, deparser)
and the factories of the header/metadata structs. Everything else happens in engine.py.

The module comes in two forms that differ only in their struct classes (structs.py): Python,
the reference, and Cython source for the native pipeline (p4switch/native.py). The stages'
text is the same in both; their parameters are annotated with the struct classes, which Cython
reads as types.
"""

from __future__ import annotations

from .. import cpmodel as cp
from ..externs import EXTERNS
from ..frontend import ast as A
from ..frontend import ast_decl as D
from ..frontend.check import ProgramInfo
from ..frontend.diagnostics import Reporter, UnsupportedConstruct
from ..frontend.symbols import InstanceSym
from ..frontend.types import BlockType, EnumType, ExternType, StructType, bit_width
from .calls import CallGen
from .context import GenContext
from .emitter import Emitter
from .env import Env, Frame, Instance
from .expr import ExprGen, literal
from .externs import ExternGen
from .listed import ListedGen
from .model import ModelBuilder, explicit_id, local_name
from .parser import ParserGen
from .stmt import StmtGen
from .structs import class_name, gen_struct_classes
from .tables import TableGen

PRELUDE = """\
from p4switch.backend.rt import (HeaderStack, ParserError as _ParserError,
    AssertFailed as _AssertFailed, signed as _signed, shl as _shl, shl_signed as _shl_signed,
    div as _div, mod as _mod, rand as _rand, format_log as _format_log,
    csum16 as _csum16, pack_int as _pack_int)
from p4switch.runtime.hashing import ALGORITHMS as _ALGORITHMS
from struct import Struct as _Struct
from p4switch.cpmodel import ActionCall as _ActionCall
"""
NATIVE_PRELUDE = "# cython: language_level=3, binding=False, auto_pickle=False\n" + PRELUDE

class ProgramGen:
    """The program's stages, functions, control and extern instances, and its model."""

    def __init__(self, ctx: GenContext) -> None:
        self.ctx = ctx

    # ---- helpers the other generators use ----------------------------------------------
    def closure(self, expr: str, hint: str) -> str:
        var = self.ctx.bindings.get(expr)
        if var is None:
            var = f"_{hint}{len(self.ctx.bindings)}"
            self.ctx.bindings[expr] = var
        return var

    def error_code(self, name: str) -> int:
        return self.ctx.info.errors.index(name)

    def fq_name(self, decl, owner) -> str:
        prefix = self.ctx.prefixes.get(id(owner)) if owner is not None else None
        return local_name(decl, prefix)

    def function_name(self, decl: D.FunctionDecl) -> str:
        self.ctx.listed.note_function_call(decl)
        name = self.ctx.functions.get(id(decl))
        if name is None:
            name = f"_fn_{decl.name}_{len(self.ctx.functions)}"
            self.ctx.functions[id(decl)] = name
            self.ctx.pending_functions.append((decl, name))
        return name

    def sub_instance(self, isym: InstanceSym, env: Env) -> Instance:
        outer = env.instance
        path = outer.position(isym.decl)
        if path[-1] == -1:  # a direct invocation: p4c appends its instance to the locals
            path = (*path[:-1], len(getattr(outer.decl, "locals", [])))
        assert isinstance(isym.type, BlockType)  # a sub-control or sub-parser
        inst = Instance(isym.type.decl, local_name(isym.decl, outer.prefix), "", path)
        self.ctx.instance_paths[inst.prefix] = inst
        return inst

    def instance_setup(self, inst: Instance, env: Env) -> None:
        """Bind a control instance's constructor parameters and locals in env."""
        decl = inst.decl
        self.ctx.prefixes[id(decl)] = inst.prefix
        for loc in decl.locals:
            if isinstance(loc, A.VarDecl):
                self.ctx.stmt.stmt(loc, env)
        self.ctx.listed.declare_externs(decl, inst.prefix)  # p4c lists them, used or not

    def global_instance(self, sym: InstanceSym) -> str | None:
        """An extern instantiated at the top level (shared by all controls), named as is."""
        if self.ctx.global_scope.names.get(sym.name) is not sym:
            return None
        return self.extern_instance(sym, None)

    def instance_name(self, sym: InstanceSym, prefix: str | None,
                      key: tuple | None = None) -> str:
        """Register an extern instance a table refers to; returns its control-plane name."""
        if self.ctx.global_scope.names.get(sym.name) is sym:
            prefix = None
        self.extern_instance(sym, prefix, key)
        return local_name(sym.decl, prefix)

    def extern_instance(self, sym: InstanceSym, prefix: str | None,
                        key: tuple | None = None) -> str | None:
        """Model entry and closure variable of an extern instance (None for direct ones);
        `key` orders it in the model (default: where it is declared)."""
        loc = sym.decl
        owner = self.ctx.instance_paths.get(prefix) if prefix is not None else None
        if key is None:
            key = owner.position(loc) if owner is not None else (-1,)
        name = local_name(loc, prefix)
        assert isinstance(sym.type, ExternType)
        kind = sym.type.decl.name
        known = self.ctx.instances.setdefault(name, {})
        if "var" in known:
            return known["var"]
        args = [a.const for a in sym.ctor_args]
        annos = [a for a in loc.annotations if a.name not in ("name", "id")]
        eid = explicit_id(loc.annotations)
        var = None
        if kind in EXTERNS:
            var = EXTERNS[kind].declare(self.ctx, sym, name, annos, eid, args, key)
        elif kind in ("action_profile", "action_selector"):
            sel = kind == "action_selector"
            size = args[1] if sel else args[0]
            prof = cp.ActionProfile(name, annos, eid, [], sel, size)
            if sel:
                algo_t = sym.ctor_args[0].type
                prof.selector_algorithm = algo_t.members[args[0]]
                prof.selector_output_width = args[2]
            self.ctx.model.add("action_profiles", prof, key)
        else:
            raise UnsupportedConstruct(loc.pos, f"extern {kind}")
        known["var"] = var
        known["sym"] = sym
        return var

    # ---- stages --------------------------------------------------------------------------
    def gen_stage(self, role: str, decl, ctor_args: list) -> None:
        em = self.ctx.em
        is_parser = isinstance(decl, D.ParserDecl)
        stage = ("parser", "verify_checksum", "ingress", "egress", "compute_checksum",
                 "deparser").index(role)
        inst = Instance(decl, decl.name, role, (stage,))  # p4c names top-level blocks by type
        self.ctx.instance_paths[inst.prefix] = inst
        env = Env(None, Frame(ret="return"), inst)
        py_params = self._bind_block_params(decl, env)
        for p, v in zip(decl.ctor_params, ctor_args, strict=False):
            env.bind(p.sym, literal(v.const) if getattr(v, "const", None) is not None else "None")
        sm = self.ctx.info.types.get("standard_metadata_t")
        sm_param = f"_sm: {class_name(sm)}" if isinstance(sm, StructType) else "_sm"
        if is_parser:
            em.line(f"def {role}(ctx, _data, {', '.join(py_params)}, {sm_param}):")
            with em.indent():
                em.line("_off = 0")
                em.line("_n = len(_data)")
                em.line("try:")
                with em.indent():
                    self.ctx.prefixes[id(decl)] = inst.prefix
                    self.ctx.listed.declare_externs(decl, inst.prefix)
                    self.ctx.in_parser = True
                    try:
                        self.ctx.parser.gen_parser_states(decl, env, "return _off")
                    finally:
                        self.ctx.in_parser = False
                em.line("except _ParserError:")
                with em.indent():
                    em.line("ctx.parser_offset = _off")
                    em.line("raise")
        else:
            em.line(f"def {role}(ctx, {', '.join(py_params)}, {sm_param}):")
            with em.indent():
                self.instance_setup(inst, env)
                self.ctx.stmt.block(decl.body.stmts, env)
        em.line("")

    def _bind_block_params(self, decl, env: Env) -> list[str]:
        """The block's Python parameters after `ctx` (and `_data`), but `_sm`; headers and
        metadata annotated with their struct classes."""
        names = []
        params = []
        for p in decl.params:
            t = p.sym.type
            if isinstance(t, ExternType) and t.decl.name == "packet_in":
                env.bind(p.sym, "_data")
            elif isinstance(t, ExternType) and t.decl.name == "packet_out":
                env.bind(p.sym, "_out")
                names.append("_out")
                params.append("_out")
            elif isinstance(t, StructType) and t.name == "standard_metadata_t":
                env.bind(p.sym, "_sm")
            else:
                py = ["hdr", "meta"][min(len([n for n in names if n != "_out"]), 1)]
                env.bind(p.sym, py)
                names.append(py)
                params.append(f"{py}: {class_name(t)}" if isinstance(t, StructType) else py)
        return params

    def gen_functions(self) -> None:
        em = self.ctx.em
        while self.ctx.pending_functions:
            decl, name = self.ctx.pending_functions.pop()
            env = Env(None, Frame(ret="return"), Instance(decl, ""))
            params = []
            outs = []
            for p in decl.proto.params:
                v = em.fresh(p.name)
                env.bind(p.sym, v)
                params.append(v)
                if p.direction in ("out", "inout"):
                    outs.append(v)
            em.line(f"def {name}(ctx, _sm, {', '.join(params)}):")
            self.ctx.current_function = id(decl)
            with em.indent():
                if outs:
                    rv = em.fresh("ret")
                    em.line(f"{rv} = None")
                    env.frame.ret = "break"
                    env.frame.ret_var = rv
                    em.line("while True:")
                    with em.indent():
                        self.ctx.stmt.block(decl.body.stmts, env)
                        em.line("break")
                    em.line(f"return ({rv}, {''.join(o + ', ' for o in outs)})")
                else:
                    self.ctx.stmt.block(decl.body.stmts, env)
            self.ctx.current_function = None
            em.line("")

    def _note_enums(self, t) -> None:
        """Remember the serializable enums used inside a type (P4Info's type_info)."""
        if isinstance(t, EnumType) and t.width is not None:
            self.ctx.enums_used[t.name] = t
        elif isinstance(t, StructType):
            for _, ft in t.fields:
                self._note_enums(ft)

    def finish_model(self) -> cp.ControlPlaneModel:
        m = self.ctx.model.model
        m.package_annotations = list(self.ctx.info.main_annotations)
        m.calls_extern_functions = self.ctx.listed.controls_call_extern_functions()
        for c in m.counters:
            for info in self.ctx.table_infos.values():
                if info.model.direct_counter == c.name:
                    c.direct_table = info.name
        for mt in m.meters:
            for info in self.ctx.table_infos.values():
                if info.model.direct_meter == mt.name:
                    mt.direct_table = info.name
        for p in m.action_profiles:
            p.table_names = self.ctx.profile_tables.get(p.name, [])
        m.unattached_direct = self.ctx.listed.unattached_direct(m)
        for name, t in self.ctx.digest_types.items():
            try:
                fields = [cp.StructField(n, bit_width(ft)) for n, ft in t.fields]
            except TypeError as e:
                raise UnsupportedConstruct(None, f"digest {name}: {e}") from None
            m.digests.append(cp.Digest(name, fields=fields))
        for t in self.ctx.info.structs:
            ch = A.annotation_string(t.annotations, "controller_header")
            if ch is not None:
                m.controller_headers.append(cp.ControllerHeader(
                    ch, list(t.annotations), None,
                    [cp.StructField(n, w) for n, w in _flat_fields("", t)], t.name))
        for t in [*self.ctx.digest_types.values(),
                  *(t for t in self.ctx.info.structs if A.annotation(t.annotations,
                                                                  "controller_header"))]:
            self._note_enums(t)
        enums = []
        for enum in self.ctx.enums_used.values():
            assert enum.width is not None  # only serializable enums are noted
            enums.append(cp.SerializableEnum(enum.name, enum.width,
                                             [(n, enum.values[n]) for n in enum.members]))
        m.serializable_enums = enums
        return m


def _flat_fields(prefix: str, t: StructType) -> list[tuple[str, int]]:
    """Bit fields with dotted names for nested structs (`b.b`), as p4c lists them."""
    out: list[tuple[str, int]] = []
    for n, ft in t.fields:
        if isinstance(ft, StructType):
            out.extend(_flat_fields(f"{prefix}{n}.", ft))
        else:
            out.append((prefix + n, bit_width(ft)))
    return out


def new_context(info: ProgramInfo, program: str, reporter: Reporter) -> GenContext:
    """A context with its generators."""
    ctx = GenContext(info, reporter, ModelBuilder(program))
    ctx.expr, ctx.stmt, ctx.call = ExprGen(ctx), StmtGen(ctx), CallGen(ctx)
    ctx.table, ctx.extern, ctx.parser = TableGen(ctx), ExternGen(ctx), ParserGen(ctx)
    ctx.listed, ctx.program = ListedGen(ctx), ProgramGen(ctx)
    return ctx


def generate(info: ProgramInfo, program: str, reporter: Reporter):
    """Returns (Python source, Cython source, ControlPlaneModel), or None after reporting
    the errors."""
    ctx = new_context(info, program, reporter)
    gen = ctx.program
    body = Emitter()
    try:
        ctx.em = body
        body.level = 1
        ctx.listed.declare_global_externs()
        for role in ("parser", "verify_checksum", "ingress", "egress", "compute_checksum",
                     "deparser"):
            decl = info.blocks.get(role)
            if decl is None:
                raise UnsupportedConstruct(None, f"V1Switch without a {role}")
            gen.gen_stage(role, decl, info.block_args.get(role, []))
        gen.gen_functions()
        model = gen.finish_model()
        ctx.model.sort()
    except UnsupportedConstruct as e:
        reporter.unsupported(e.pos, e.what)
        return None
    except Exception as e:  # a bug here must still come out as a diagnostic
        reporter.error(None, f"internal compiler error: {type(e).__name__}: {e}")
        return None
    make = Emitter()
    _gen_make(make, ctx, body)
    sources = []
    for prelude, native in ((PRELUDE, False), (NATIVE_PRELUDE, True)):
        out = Emitter()
        for line in prelude.splitlines():
            out.line(line)
        gen_struct_classes(out, info.structs, native)
        out.lines.extend(make.lines)
        sources.append(out.source())
    return sources[0], sources[1], model


def _gen_make(out: Emitter, ctx: GenContext, body: Emitter) -> None:
    """`make(_state, _config)`: the closure bindings, the stages in `body`, and the dict of
    stages and struct factories it returns."""
    info = ctx.info
    out.line("def make(_state, _config):")
    with out.indent():
        out.line("_tables = _state.tables")
        out.line("_profiles = _state.action_profiles")
        out.line("_counters = _state.counters")
        out.line("_meters = _state.meters")
        out.line("_registers = _state.registers")
        out.line("_DROP = _config.drop_port")
        out.line("_LOG = _config.log")
        out.line("_now = _config.now_us")
        for expr, var in ctx.bindings.items():
            out.line(f"{var} = {expr}")
    out.lines.extend(body.lines)
    with out.indent():
        h, m = info.headers_type, info.meta_type
        sm = info.types.get("standard_metadata_t")
        assert isinstance(sm, StructType)  # v1model.p4 declares it
        out.line("return {")
        for role in ("parser", "verify_checksum", "ingress", "egress", "compute_checksum",
                     "deparser"):
            out.line(f"    {role!r}: {role},")
        out.line(f"    'new_headers': {class_name(h) if h else 'None'},")
        out.line(f"    'new_meta': {class_name(m) if m else 'None'},")
        out.line(f"    'new_sm': {class_name(sm)},")
        out.line(f"    'errors': {tuple(info.errors)!r},")
        out.line("}")

