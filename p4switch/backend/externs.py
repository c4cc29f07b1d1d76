"""v1model and core extern calls (a mixin of the code generator)."""

from __future__ import annotations

from ..frontend import ast as A
from ..frontend.symbols import InstanceSym
from ..frontend.types import (
    BoolType,
    EnumType,
    ErrorType,
    StackType,
    StructType,
    Varbit,
    bit_width,
)
from ..runtime.hashing import ALGORITHMS
from .env import Env
from .expr import Unsupported
from .structs import class_name


def _field_path(e: A.Expr) -> bool:
    """A reference to a header/metadata field (BMv2 field lists refer to those)."""
    while isinstance(e, (A.Member, A.Index)):
        if isinstance(e, A.Index) and e.index.const is None:
            return False
        e = e.expr
    return isinstance(e, A.Name)


def _merge_runs(items: list) -> list:
    """Join consecutive (value, width, guard) fields with the same guard into one value."""
    runs: list = []
    for v, w, g in items:
        if runs and runs[-1][2] == g and isinstance(w, int) and isinstance(runs[-1][1], int):
            pv, pw, _ = runs[-1]
            runs[-1] = (f"(({pv}) << {w}) | {v}", pw + w, g)
        else:
            runs.append((v, w, g))
    return runs


class ExternGen:
    # ---- field lists ---------------------------------------------------------------------
    def _flatten(self, e: A.Expr, env: Env, out: list, guard: str | None = None) -> None:
        """(value expr, width, validity guard) for every bit field in a data argument."""
        t = e.type
        if isinstance(e, A.ListExpr):
            for item in e.items:
                self._flatten(item, env, out, guard)
            return
        if isinstance(e, A.StructInit):
            for _, item in e.fields:
                self._flatten(item, env, out, guard)
            return
        if isinstance(t, StructType):
            base = self.ex(e, env)
            g = f"{base}._valid" if t.kind == "header" else guard
            for fname, ft in t.fields:
                sub = A.Member(e.pos, e, fname)
                sub.type = ft
                self._flatten(sub, env, out, g)
            return
        if isinstance(t, StackType):
            for i in range(t.size):
                idx = A.Const(e.pos, i)
                idx.const, idx.type = i, None
                sub = A.Index(e.pos, e, idx)
                sub.type = t.elem
                self._flatten(sub, env, out, guard)
            return
        if isinstance(e, A.Member) and isinstance(e.expr.type, StructType) and \
                e.expr.type.kind == "header" and guard is None:
            guard = f"{self.ex(e.expr, env)}._valid"
        v = self.ex(e, env)
        if isinstance(t, Varbit):  # (value, width) at run time
            tmp = self.em.fresh("vb")
            self.em.line(f"{tmp} = {v}")
            out.append((f"{tmp}[0]", f"{tmp}[1]", guard))
            return
        # BMv2 holds enums and errors as 32-bit values
        w = 32 if isinstance(t, ErrorType) or (isinstance(t, EnumType) and t.width is None) \
            else bit_width(t)
        if isinstance(t, BoolType):
            v = f"int({v})"
        elif getattr(t, "signed", False):
            v = f"({v} & {hex((1 << w) - 1)})"
        out.append((v, w, guard))

    def field_list_pairs(self, exprs: list[A.Expr], env: Env) -> str:
        """A Python expression: list of (value, width), invalid headers' fields left out."""
        items: list = []
        for e in exprs:
            self._flatten(e, env, items)
        runs = _merge_runs(items)
        if all(g is None for _, _, g in runs):
            return "(" + "".join(f"({v}, {w}), " for v, w, _ in runs) + ")"
        lst = self.em.fresh("fl")
        self.em.line(f"{lst} = []")
        for v, w, g in runs:
            if g is None:
                self.em.line(f"{lst}.append(({v}, {w}))")
            else:
                self.em.line(f"if {g}: {lst}.append(({v}, {w}))")
        return lst

    def packed_bytes(self, data: A.Expr, env: Env) -> str:
        """A Python expression for the bytes BMv2 feeds a calculation with `data`."""
        items: list = []
        self._flatten(data, env, items)
        guards = {g for _, _, g in items}
        static = all(isinstance(w, int) for _, w, _ in items)
        if items and len(guards) == 1 and static:
            total = sum(w for _, w, _ in items)
            pad = -total % 8
            shift = total + pad
            parts = []
            for v, w, _ in items:
                shift -= w
                parts.append(f"({v} << {shift})" if shift else v)
            packed = f"({' | '.join(parts)}).to_bytes({(total + pad) // 8}, 'big')"
            (guard,) = guards
            return packed if guard is None else f"({packed} if {guard} else b'')"
        # fields of headers that may be invalid: accumulate the bits, then pad to bytes
        acc, nbits = self.em.fresh("acc"), self.em.fresh("nbits")
        self.em.line(f"{acc} = {nbits} = 0")
        for v, w, g in _merge_runs(items):
            prefix = f"if {g}: " if g is not None else ""
            self.em.line(f"{prefix}{acc}, {nbits} = ({acc} << {w}) | {v}, {nbits} + {w}")
        return f"_pack_int({acc}, {nbits})"

    # ---- calls ---------------------------------------------------------------------------
    def extern_call(self, c: A.Call, env: Env, statement: bool) -> str:
        if c.kind == "extern_method":
            obj = c.func.expr
            tname = obj.type.decl.name
            handler = getattr(self, f"_m_{tname}_{c.func.name}", None)
            if handler is None:
                raise Unsupported(c.pos, f"{tname}.{c.func.name}")
            return handler(c, obj, env) or ""
        name = c.func.name
        handler = getattr(self, f"_f_{name}", None)
        if handler is None:
            raise Unsupported(c.pos, f"extern {name}")
        if name != "static_assert":  # p4c folds static_assert away
            self.note_extern_function_call()
        return handler(c, env) or ""

    def _args(self, c: A.Call) -> list[A.Expr | None]:
        return [a for _, a in c.bound]

    def _algo(self, e: A.Expr) -> str:
        t = e.type
        if not isinstance(t, EnumType) or e.const is None:
            raise Unsupported(e.pos, "non-constant hash algorithm")
        name = t.members[e.const]
        if name not in ALGORITHMS:
            raise Unsupported(e.pos, f"hash algorithm {name}")
        if name == "csum16":
            return "_csum16"  # bit-exact with the runtime's, computed in C
        return self.closure(f"_ALGORITHMS[{name!r}]", "H_" + name)

    def _f_mark_to_drop(self, c, env):
        args = self._args(c)
        if not args:
            raise Unsupported(c.pos, "mark_to_drop() without argument")
        sm = self.ex(args[0], env)
        self.em.line(f"{sm}.egress_spec = _DROP")
        self.em.line(f"{sm}.mcast_grp = 0")

    def _f_verify(self, c, env):
        cond, err = self._args(c)
        self.em.line(f"if not {self.ex(cond, env)}:")
        with self.em.indent():
            self.em.line(f"raise _ParserError({self.ex(err, env)})")

    def _f_hash(self, c, env):
        out, algo, base, data, mx = self._args(c)
        fn = self._algo(algo)
        h = f"{fn}({self.packed_bytes(data, env)})"
        m = mx.const
        b = self.ex(base, env)
        if m is not None:
            value = f"{b} + {h} % {m or 1}" if m != 1 else b
        else:
            value = f"{b} + {h} % ({self.ex(mx, env)} or 1)"
        self.assign(out, f"(({value}) & {hex((1 << bit_width(out.type)) - 1)})", env)

    def _checksum(self, c, env, verify: bool, payload: bool):
        cond, data, cksum, algo = self._args(c)
        fn = self._algo(algo)
        packed = self.packed_bytes(data, env)
        if payload:
            packed = f"{packed} + ctx.payload"
        mask = hex((1 << bit_width(cksum.type)) - 1)
        self.em.line(f"if {self.ex(cond, env)}:")
        with self.em.indent():
            if verify:
                self.em.line(f"if ({fn}({packed}) & {mask}) != {self.ex(cksum, env)}:")
                with self.em.indent():
                    self.em.line("_sm.checksum_error = 1")
            else:
                self.assign(cksum, f"({fn}({packed}) & {mask})", env)

    def _f_verify_checksum(self, c, env):
        self._checksum(c, env, True, False)

    def _f_verify_checksum_with_payload(self, c, env):
        self._checksum(c, env, True, True)

    def _f_update_checksum(self, c, env):
        self._checksum(c, env, False, False)

    def _f_update_checksum_with_payload(self, c, env):
        self._checksum(c, env, False, True)

    def _f_clone(self, c, env):
        _, session = self._args(c)
        self.em.line(f"ctx.clone = ({self.ex(session, env)}, -1)")

    def _f_clone_preserving_field_list(self, c, env):
        _, session, index = self._args(c)
        self.em.line(f"ctx.clone = ({self.ex(session, env)}, {self.ex(index, env)})")

    def _f_resubmit_preserving_field_list(self, c, env):
        self.em.line(f"ctx.resubmit = {self.ex(self._args(c)[0], env)}")

    def _f_recirculate_preserving_field_list(self, c, env):
        self.em.line(f"ctx.recirculate = {self.ex(self._args(c)[0], env)}")

    def _f_truncate(self, c, env):
        self.em.line(f"ctx.truncate = {self.ex(self._args(c)[0], env)}")

    def _f_digest(self, c, env):
        _, data = self._args(c)
        t = data.type
        if not isinstance(t, StructType) or t.name.startswith("{"):
            raise Unsupported(data.pos, "digest of a value that is not a named struct")
        self.digest_types[t.name] = t
        # BMv2 reads the digest's field list when ingress ends (and keeps only the last
        # digest() call): fields are read then; computed values are taken now
        parts = data.items if isinstance(data, A.ListExpr) else (
            [v for _, v in data.fields] if isinstance(data, A.StructInit) else [])
        for part in parts:
            if not _field_path(part):
                self.pin(part, env)
        items: list = []
        self._flatten(data, env, items)
        vals = "".join(f"{v}, " for v, _, _ in items)
        self.em.line(f"ctx.digest = ({t.name!r}, lambda: ({vals}))")

    def _f_random(self, c, env):
        out, lo, hi = self._args(c)
        a, b = self.ex(lo, env), self.ex(hi, env)
        lv, hv = self.em.fresh("lo"), self.em.fresh("hi")
        self.em.line(f"{lv}, {hv} = {a}, {b}")
        self.em.line(f"if {lv} <= {hv}:")
        with self.em.indent():
            self.assign(out, f"_rand({lv}, {hv})", env)

    def _f_assert(self, c, env):
        self.em.line(f"if not {self.ex(self._args(c)[0], env)}:")
        with self.em.indent():
            self.em.line(f"raise _AssertFailed({str(c.pos)!r})")

    _f_assume = _f_assert

    def _f_log_msg(self, c, env):
        args = self._args(c)
        msg = self.ex(args[0], env)
        if len(args) > 1:
            items: list = []
            self._flatten(args[1], env, items)
            vals = "(" + "".join(f"{v}, " for v, _, _ in items) + ")"
        else:
            vals = "()"
        self.em.line(f"if _LOG is not None: _LOG(_format_log({msg}, {vals}))")

    def _f_static_assert(self, c, env):
        return "True"

    # ---- extern objects ------------------------------------------------------------------
    def _inst(self, obj: A.Expr, env: Env) -> str:
        sym = obj.ref
        if not isinstance(sym, InstanceSym):
            raise Unsupported(obj.pos, "extern object passed around")
        v = self.global_instance(sym)
        if v is None and env.instance is not None and \
                env.instance.decl.scope.names.get(sym.name) is sym:
            v = self.extern_instance(sym, env.instance.prefix)
        if v is None:
            raise Unsupported(obj.pos, f"extern instance {sym.name} here")
        return v

    def _m_counter_count(self, c, obj, env):
        self.em.line(f"{self._inst(obj, env)}.count({self.ex(self._args(c)[0], env)}, "
                     f"ctx.length)")

    def _m_direct_counter_count(self, c, obj, env):
        return ""

    def _m_meter_execute_meter(self, c, obj, env):
        index, out = self._args(c)
        self.assign(out, f"{self._inst(obj, env)}.execute({self.ex(index, env)}, ctx.length, "
                         "_now())", env)

    def _m_direct_meter_read(self, c, obj, env):
        (out,) = self._args(c)
        color = self.meter_colors.get(id(obj.ref))
        if color is None:
            raise Unsupported(c.pos, "direct_meter.read outside an action of its table")
        self.em.line(f"if {color} is not None:")
        with self.em.indent():
            self.assign(out, color, env)

    def _m_register_read(self, c, obj, env):
        out, index = self._args(c)
        r = self._inst(obj, env)
        v = self.em.fresh("rv")
        signed = getattr(out.type, "signed", False)
        self.em.line(f"{v} = {r}.{'read_signed' if signed else 'read'}({self.ex(index, env)})")
        self.em.line(f"if {v} is not None:")
        with self.em.indent():
            self.assign(out, v, env)

    def _m_register_write(self, c, obj, env):
        index, value = self._args(c)
        self.em.line(f"{self._inst(obj, env)}.write({self.ex(index, env)}, "
                     f"{self.ex(value, env)})")

    def _m_packet_in_extract(self, c, obj, env):
        args = self._args(c)
        if len(args) == 2:
            self.parser_extract(args[0], env, args[1])
            return
        if args[0] is None:  # extract into `_`: parse and discard
            t = c.type_env.get("T")
            tmp = A.Name(c.pos, "_")
            tmp.type = t
            self.pre[id(tmp)] = self.em.fresh("discard")
            self.em.line(f"{self.pre[id(tmp)]} = {class_name(t)}()")
            self.parser_extract(tmp, env)
            return
        self.parser_extract(args[0], env)

    def _m_packet_in_lookahead(self, c, obj, env):
        return self.parser_lookahead(c, env)

    def _m_packet_in_advance(self, c, obj, env):
        self.parser_advance(self._args(c)[0], env)

    def _m_packet_out_emit(self, c, obj, env):
        (h,) = self._args(c)
        self.em.line(f"{self.ex(h, env)}._emit(_out)")

