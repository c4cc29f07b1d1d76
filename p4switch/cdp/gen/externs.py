"""The v1model externs of the control stages -> C (as backend/externs.py and the modules of
p4switch/externs for the Python back end), each computing what the Python pipeline computes:

    mark_to_drop, hash, verify/update_checksum(_with_payload), register.read/write,
    counter.count, direct_counter.count (the table counts), random, clone,
    clone_preserving_field_list, resubmit/recirculate_preserving_field_list, truncate,
    assert, assume, log_msg, static_assert

`log_msg` emits nothing: the C data plane runs only while the switch logs nothing (a switch
that traces packets serves its ports from the Python loop). Meters, direct meters and digests
are UnsupportedConstruct here: such a program keeps the Python pipeline.

Field lists (a hash's or checksum's data, a selector's keys) are packed as BMv2 packs them:
the bits of every field of a valid header (and of every field outside headers) in order,
zero-padded to a whole byte (c/hashing.h, cdp_pack_fields).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from p4switch.backend.env import Env
from p4switch.backend.externs import _field_path, field_leaves
from p4switch.frontend import ast as A
from p4switch.frontend.diagnostics import UnsupportedConstruct
from p4switch.frontend.symbols import InstanceSym
from p4switch.frontend.types import (
    Bits,
    BoolType,
    EnumType,
    ErrorType,
    ExternType,
    StackType,
    StructType,
    bit_width,
)
from p4switch.runtime.hashing import ALGORITHMS

from .context import ExternCall
from .expr import dot, mask
from .types import nbytes, scalar_ctype, wide

if TYPE_CHECKING:
    from .context import CContext
    from .controls import TableSlot

# (C value, width in bits <= 64, C validity guard or None)
Field = tuple[str, int, str | None]
_PAYLOAD_MAX = 65536  # the largest payload a checksum with payload reads


class CExternGen:
    """The externs of the control stages."""

    def __init__(self, ctx: CContext) -> None:
        self.ctx = ctx

    def handlers(self) -> dict[str, ExternCall]:
        """The control stages' `externs`, by "extern.method" or function name."""
        out: dict[str, ExternCall] = {
            "register.read": self._register_read, "register.write": self._register_write,
            "counter.count": self._counter_count, "direct_counter.count": lambda c, env: "",
        }
        for name in ("mark_to_drop", "hash", "digest", "verify_checksum", "update_checksum",
                     "verify_checksum_with_payload", "update_checksum_with_payload", "random",
                     "clone", "clone_preserving_field_list", "resubmit_preserving_field_list",
                     "recirculate_preserving_field_list", "truncate", "assert", "assume",
                     "log_msg", "static_assert"):
            out[name] = getattr(self, f"_f_{name}")
        return out

    @staticmethod
    def args(c: A.Call) -> list[A.Expr]:
        out = []
        for p, a in c.bound:
            if a is None:
                raise UnsupportedConstruct(c.pos, f"{p.name} left out, in C")
            out.append(a)
        return out

    def _ex(self, e: A.Expr, env: Env) -> str:
        return self.ctx.stmt.value(e, env)

    # ---- field lists -------------------------------------------------------------------------
    def flatten(self, data: A.Expr, env: Env, out: list[Field]) -> None:
        """(value, width, guard) for every bit field of a data argument (field_leaves, as the
        Python back end packs them); a field wider than 64 bits as its bytes."""
        for e, header in field_leaves(data):
            guard = dot(self.ctx.stmt.lvalue(header, env), "valid_") if header is not None \
                else None
            self._leaf(e, env, out, guard)

    def _leaf(self, e: A.Expr, env: Env, out: list[Field], guard: str | None) -> None:
        t = e.type
        if wide(t):
            assert isinstance(t, Bits)
            array, n = self.ctx.stmt.lvalue(e, env), nbytes(t.width)
            out.append((f"{array}[0]", t.width - 8 * (n - 1), guard))
            out.extend((f"{array}[{i}]", 8, guard) for i in range(1, n))
            return
        if isinstance(t, ErrorType) or (isinstance(t, EnumType) and t.width is None):
            w = 32  # BMv2 holds enums and errors as 32-bit values
        elif isinstance(t, (Bits, BoolType, EnumType)):
            w = bit_width(t)
        else:
            raise UnsupportedConstruct(e.pos, f"a {t} in a field list, in C")
        v = self._ex(e, env)
        if isinstance(t, BoolType):
            v = f"(uint64_t)({v} != 0)"
        elif isinstance(t, Bits) and t.signed:
            v = f"((uint64_t){v} & {mask(w)})"
        out.append((v, w, guard))

    def packed(self, exprs: list[A.Expr], env: Env) -> tuple[str, str]:
        """Pack the fields of `exprs` into a new local buffer: (buffer, its length's local)."""
        fields: list[Field] = []
        for e in exprs:
            self.flatten(e, env, fields)
        em = self.ctx.em
        n = max(1, len(fields))
        values, widths, count = em.fresh("pv"), em.fresh("pw"), em.fresh("pn")
        buf, length = em.fresh("pbuf"), em.declare("size_t", "plen")
        em.decls += [f"uint64_t {values}[{n}];", f"uint8_t {widths}[{n}];", f"size_t {count};",
                     f"uint8_t {buf}[{(sum(w for _, w, _ in fields) + 7) // 8 or 1}];"]
        em.line(f"{count} = 0;")
        for v, w, g in fields:
            store = f"{values}[{count}] = (uint64_t){v}; {widths}[{count}++] = {w};"
            em.line(f"if ({g}) {{ {store} }}" if g is not None else store)
        em.line(f"{length} = cdp_pack_fields({buf}, {values}, {widths}, {count});")
        return buf, length

    def algorithm(self, e: A.Expr) -> str:
        t = e.type
        if not isinstance(t, EnumType) or e.const is None:
            raise UnsupportedConstruct(e.pos, "non-constant hash algorithm")
        return algorithm_function(t.members[e.const], e)

    def selector_hash(self, slot: TableSlot, algorithm: str, keys: list[A.Expr],
                      env: Env) -> str:
        """The action selector's hash of the table's selector keys (ActionProfile.selector_hash)."""
        fn = algorithm_function(algorithm, keys[0])
        buf, length = self.packed(keys, env)
        h = self.ctx.em.declare("uint64_t", "sh")
        self.ctx.em.line(f"{h} = (uint64_t){fn}({buf}, {length}) & UINT64_C(0xffffffff);"
                         f"  /* {slot.name}'s selector */")
        return h

    # ---- functions ---------------------------------------------------------------------------
    def _f_mark_to_drop(self, c: A.Call, env: Env) -> str:
        (sm,) = self.args(c)
        base = self.ctx.stmt.lvalue(sm, env)
        self.ctx.em.line(f"{dot(base, 'egress_spec')} = st->drop_port;")
        self.ctx.em.line(f"{dot(base, 'mcast_grp')} = 0;")
        return ""

    def _f_hash(self, c: A.Call, env: Env) -> str:
        out, algo, base, data, mx = self.args(c)
        fn = self.algorithm(algo)
        em = self.ctx.em
        b = em.declare("uint64_t", "hb")
        em.line(f"{b} = (uint64_t){self._ex(base, env)};")
        m = mx.const
        md = None
        if m is None:
            md = em.declare("uint64_t", "hm")
            em.line(f"{md} = (uint64_t){self._ex(mx, env)};")
        buf, length = self.packed([data], env)
        h = f"(uint64_t){fn}({buf}, {length})"
        if m is not None:
            value = b if m == 1 else f"{b} + {h} % UINT64_C({m or 1})"
        else:
            value = f"{b} + {h} % ({md} ? {md} : 1)"
        self.ctx.stmt.store(out, f"(({value}) & {mask(bit_width(out.type))})", env)
        return ""

    def _checksum(self, c: A.Call, env: Env, verify: bool, payload: bool) -> str:
        cond, data, cksum, algo = self.args(c)
        fn = self.algorithm(algo)
        em = self.ctx.em
        with em.block(f"if ({self._ex(cond, env)})"):
            buf, length = self.packed([data], env)
            if payload:
                whole = em.fresh("cbuf")
                em.decls.append(f"static uint8_t {whole}[{_PAYLOAD_MAX + 4096}];")
                em.line(f"if ({length} + ctx->payload_len > sizeof {whole}) "
                        "{ ctx->assert_failed = 1; return; }")
                em.line(f"memcpy({whole}, {buf}, {length});")
                em.line(f"memcpy({whole} + {length}, ctx->payload, ctx->payload_len);")
                value = f"(uint64_t){fn}({whole}, {length} + ctx->payload_len)"
            else:
                value = f"(uint64_t){fn}({buf}, {length})"
            value = f"({value} & {mask(bit_width(cksum.type))})"
            if verify:
                with em.block(f"if ({value} != (uint64_t){self._ex(cksum, env)})"):
                    em.line("sm->checksum_error = 1;")
            else:
                self.ctx.stmt.store(cksum, value, env)
        return ""

    def _f_verify_checksum(self, c: A.Call, env: Env) -> str:
        return self._checksum(c, env, True, False)

    def _f_verify_checksum_with_payload(self, c: A.Call, env: Env) -> str:
        return self._checksum(c, env, True, True)

    def _f_update_checksum(self, c: A.Call, env: Env) -> str:
        return self._checksum(c, env, False, False)

    def _f_update_checksum_with_payload(self, c: A.Call, env: Env) -> str:
        return self._checksum(c, env, False, True)

    def _f_digest(self, c: A.Call, env: Env) -> str:
        """digest(receiver, data) in ingress: as backend/externs.py, the values data computes
        are taken now (into ctx->digest_pinned), its fields read as ingress ends
        (CControlGen's epilogue); only the last call counts."""
        _, data = self.args(c)
        t = data.type
        controls = self.ctx.controls
        assert controls is not None  # digests are sent from controls
        if not isinstance(t, StructType) or t.name.startswith("{"):
            raise UnsupportedConstruct(data.pos, "digest of a value that is not a named struct")
        parts = data.items if isinstance(data, A.ListExpr) else (
            [v for _, v in data.fields] if isinstance(data, A.StructInit) else [])
        em = self.ctx.em
        pinned = 0
        for part in parts:
            if _field_path(part):
                continue
            if scalar_ctype(part.type) is None:
                raise UnsupportedConstruct(part.pos, f"a computed {part.type} in a digest, in C")
            slot = f"ctx->digest_pinned[{pinned}]"
            em.line(f"{slot} = (uint64_t){self._ex(part, env)};")
            self.ctx.pre[id(part)] = f"(({scalar_ctype(part.type)}){slot})"
            pinned += 1
        fields: list[Field] = []
        self.flatten(data, env, fields)
        for part in parts:
            self.ctx.pre.pop(id(part), None)
        if len(fields) > CDP_DIGEST_FIELDS or _has_wide(t):
            raise UnsupportedConstruct(data.pos, "a digest of more than "
                                                 f"{CDP_DIGEST_FIELDS} fields or of fields "
                                                 "wider than 64 bits, in C")
        values = [v for v, _, _ in fields]
        local = next((v for v in values if _LOCAL.search(v)), None)
        if local is not None:
            raise UnsupportedConstruct(data.pos, "a digest of a sub-control's copied "
                                                 "parameter, in C")
        number = controls.layout.digests.setdefault(t.name, len(controls.layout.digests))
        call = len(controls.digest_reads) + 1
        controls.digest_reads.append((call, number, values))
        em.line(f"ctx->digest = {call};  /* digest {t.name} ({number}) */")
        return ""

    def _f_random(self, c: A.Call, env: Env) -> str:
        out, lo, hi = self.args(c)
        em = self.ctx.em
        lv, hv = em.declare("uint64_t", "lo"), em.declare("uint64_t", "hi")
        em.line(f"{lv} = (uint64_t){self._ex(lo, env)};")
        em.line(f"{hv} = (uint64_t){self._ex(hi, env)};")
        with em.block(f"if ({lv} <= {hv})"):
            self.ctx.stmt.store(out, f"cdp_random(st, {lv}, {hv})", env)
        return ""

    def _clone(self, session: str, field_list: str) -> None:
        em = self.ctx.em
        em.line("ctx->has_clone = 1;")
        em.line(f"ctx->clone_session = (int64_t){session};")
        em.line(f"ctx->clone_list = {field_list};")

    def _f_clone(self, c: A.Call, env: Env) -> str:
        _, session = self.args(c)
        self._clone(self._ex(session, env), "-1")
        return ""

    def _f_clone_preserving_field_list(self, c: A.Call, env: Env) -> str:
        _, session, index = self.args(c)
        self._clone(self._ex(session, env), f"(int64_t){self._ex(index, env)}")
        return ""

    def _f_resubmit_preserving_field_list(self, c: A.Call, env: Env) -> str:
        self.ctx.em.line(f"ctx->resubmit = (int64_t){self._ex(self.args(c)[0], env)};")
        return ""

    def _f_recirculate_preserving_field_list(self, c: A.Call, env: Env) -> str:
        self.ctx.em.line(f"ctx->recirculate = (int64_t){self._ex(self.args(c)[0], env)};")
        return ""

    def _f_truncate(self, c: A.Call, env: Env) -> str:
        self.ctx.em.line(f"cdp_truncate(ctx, (int64_t){self._ex(self.args(c)[0], env)});")
        return ""

    def _f_assert(self, c: A.Call, env: Env) -> str:
        with self.ctx.em.block(f"if (!({self._ex(self.args(c)[0], env)}))"):
            self.ctx.em.line(f"ctx->assert_failed = 1;  /* {c.pos} */")
            self.ctx.em.line("return;")
        return ""

    _f_assume = _f_assert

    def _f_log_msg(self, c: A.Call, env: Env) -> str:
        return ""  # see the module's docstring

    def _f_static_assert(self, c: A.Call, env: Env) -> str:
        return "1"

    # ---- registers and counters ----------------------------------------------------------------
    def _instance(self, c: A.Call) -> tuple[A.Expr, InstanceSym]:
        f = c.func
        assert isinstance(f, A.Member)  # `obj.method(...)`
        sym = f.expr.ref
        if not isinstance(sym, InstanceSym):
            raise UnsupportedConstruct(c.pos, "extern object passed around")
        return f.expr, sym

    def _register(self, c: A.Call, env: Env) -> tuple[str, int, Bits]:
        obj, sym = self._instance(c)
        controls = self.ctx.controls
        assert controls is not None  # registers live in controls
        assert isinstance(sym.type, ExternType)  # a register instance
        t = sym.type.targs.get("T")
        if isinstance(t, EnumType) and t.width is not None:
            t = Bits(t.width)
        if not isinstance(t, Bits) or wide(t):
            raise UnsupportedConstruct(c.pos, f"a register of {t} in C")
        return f"st->registers[{controls.register(obj, env)}]", sym.ctor_args[0].const, t

    def _register_read(self, c: A.Call, env: Env) -> str:
        out, index = self.args(c)
        cells, size, t = self._register(c, env)
        em = self.ctx.em
        at = em.declare("uint64_t", "ri")
        em.line(f"{at} = (uint64_t){self._ex(index, env)};")
        with em.block(f"if ({at} < {size})"):
            value = f"{cells}[{at}]"
            if getattr(out.type, "signed", False) and t.signed:
                value = f"p4_sext({value}, {t.width})"
            self.ctx.stmt.store(out, value, env)
        return ""

    def _register_write(self, c: A.Call, env: Env) -> str:
        index, value = self.args(c)
        cells, size, t = self._register(c, env)
        em = self.ctx.em
        at, v = em.declare("uint64_t", "ri"), em.declare("uint64_t", "rw")
        em.line(f"{at} = (uint64_t){self._ex(index, env)};")
        em.line(f"{v} = (uint64_t){self._ex(value, env)};")
        with em.block(f"if ({at} < {size})"):
            em.line(f"{cells}[{at}] = {v} & {mask(t.width)};")
        return ""

    def _counter_count(self, c: A.Call, env: Env) -> str:
        obj, sym = self._instance(c)
        controls = self.ctx.controls
        assert controls is not None
        (index,) = self.args(c)
        size = sym.ctor_args[0].const
        em = self.ctx.em
        at = em.declare("uint64_t", "ci")
        em.line(f"{at} = (uint64_t){self._ex(index, env)};")
        with em.block(f"if ({at} < {size})"):
            k = controls.counter(obj, env)
            em.line(f"st->counters[{2 * k}][{at}] += 1;")
            em.line(f"st->counters[{2 * k + 1}][{at}] += ctx->length;")
        return ""


_LOCAL = re.compile(r"\b[A-Za-z_]\w*_\d+\b")  # a C local of the stage (CEmitter.fresh)
CDP_DIGEST_FIELDS = 32  # c/pipeline.h


def _has_wide(t: object) -> bool:
    """A field wider than 64 bits anywhere in a value of type t."""
    if isinstance(t, StructType):
        return any(_has_wide(ft) for _, ft in t.fields)
    if isinstance(t, StackType):
        return _has_wide(t.elem)
    return wide(t)


def algorithm_function(name: str, where: A.Expr) -> str:
    """The C function of a hash algorithm of runtime/hashing.py (c/hashing.h)."""
    if name not in ALGORITHMS:
        raise UnsupportedConstruct(where.pos, f"hash algorithm {name}")
    return f"cdp_{name}"


__all__ = ["CExternGen", "Field", "algorithm_function"]
