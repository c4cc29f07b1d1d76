"""Parsers: a state machine over the packet bytes (a generator over the shared `GenContext`).

Locals: `_data` (the packet), `_off` (byte offset of the next unparsed byte), `_n` (length).
Parser errors raise `_ParserError(code)`; the engine records `parser_error` and, as BMv2 does,
sends the packet on to ingress with the headers extracted so far.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..frontend import ast as A
from ..frontend import ast_decl as D
from ..frontend.diagnostics import UnsupportedConstruct
from ..frontend.symbols import InstanceSym
from ..frontend.types import Bits, BlockType, BoolType, StackType, StructType, Varbit, bit_width
from .emitter import py_ident
from .env import Env
from .structs import extract_lines, zero_value

if TYPE_CHECKING:
    from .context import GenContext


class _Machine:
    """A parser's states: ids for the dispatch loop, and the states whose code is inlined
    at their single incoming transition instead (no trip through the loop)."""

    def __init__(self, decl: D.ParserDecl, var: str, accept: str):
        self.var = var
        self.accept = accept
        self.states = {st.name: st for st in decl.states}
        self.ids = {st.name: i for i, st in enumerate(decl.states)}
        preds: dict[str, int] = {}
        for st in decl.states:
            targets = [st.next] if isinstance(st.next, str) else [c.state for c in st.next.cases]
            for t in targets:
                preds[t] = preds.get(t, 0) + 1
        self.inlined = {name for name, n in preds.items()
                        if n == 1 and name in self.states and name != "start"}


def extracted_header(target: A.Expr, vbits: A.Expr | None) -> StructType:
    """The header type `extract(target[, vbits])` fills; UnsupportedConstruct for anything
    else, or for a size given to a header without a varbit field (or missing for one)."""
    t = target.type
    if not isinstance(t, StructType) or t.kind != "header":
        raise UnsupportedConstruct(target.pos, f"extract into {t}")
    if (vbits is None) != (t.varbit is None):
        raise UnsupportedConstruct(target.pos, "extract of a header with a varbit field needs its "
                                               "size, and only such headers take one")
    return t


class ParserGen:
    """Parser state machines."""

    def __init__(self, ctx: GenContext) -> None:
        self.ctx = ctx

    def gen_parser_states(self, decl: D.ParserDecl, env: Env, accept: str) -> None:
        """Emit the state machine; `accept` is the statement that leaves it on accept."""
        em = self.ctx.em
        for loc in decl.locals:
            if isinstance(loc, A.VarDecl):
                self.ctx.stmt.stmt(loc, env)
        m = _Machine(decl, em.fresh("state"), accept)
        em.line(f"{m.var} = {m.ids['start']}")
        em.line("while True:")
        with em.indent():
            for st in decl.states:
                if st.name in m.inlined:
                    continue
                em.line(f"if {m.var} == {m.ids[st.name]}:")
                with em.indent():
                    self._state_body(st, m, env)

    def _state_body(self, st: D.ParserState, m: _Machine, env: Env) -> None:
        inner = Env(env)
        self.ctx.stmt.block(st.stmts, inner)
        self._transition(st.next, m, inner)

    def _goto(self, target: str, m: _Machine, env: Env) -> None:
        if target == "accept":
            self.ctx.em.line(m.accept)
        elif target == "reject":
            self.ctx.em.line("raise _ParserError(-1)")
        elif target in m.inlined:  # the only way into that state: its code goes here
            self._state_body(m.states[target], m, env)
        else:
            self.ctx.em.line(f"{m.var} = {m.ids[target]}")
            self.ctx.em.line("continue")

    def _transition(self, nxt, m: _Machine, env: Env) -> None:
        em = self.ctx.em
        if isinstance(nxt, str):
            self._goto(nxt, m, env)
            return
        keys = []
        for e in nxt.exprs:
            k = em.fresh("k")
            v = self.ctx.expr.ex(e, env)
            em.line(f"{k} = {'int(' + v + ')' if isinstance(e.type, BoolType) else v}")
            keys.append((k, e.type))
        first = True
        has_default = False
        for case in nxt.cases:
            conds = []
            for (k, t), ks in zip(keys, case.keyset if len(case.keyset) == len(keys)
                                  else case.keyset * len(keys), strict=False):
                c = self._keyset_cond(k, t, ks)
                if c is not None:
                    conds.append(c)
            cond = " and ".join(conds) if conds else "True"
            if cond == "True":
                em.line("else:" if not first else "if True:")
                has_default = True
            else:
                em.line(f"{'if' if first else 'elif'} {cond}:")
            first = False
            with em.indent():
                self._goto(case.state, m, env)
            if has_default:
                break
        if not has_default:
            if first:
                em.line(f"raise _ParserError({self.ctx.program.error_code('NoMatch')})")
            else:
                em.line("else:")
                with em.indent():
                    em.line(f"raise _ParserError({self.ctx.program.error_code('NoMatch')})")

    def _keyset_cond(self, k: str, t, ks: A.Expr) -> str | None:
        full = (1 << bit_width(t)) - 1 if isinstance(t, Bits) else None

        def val(e):
            v = e.const
            if isinstance(v, bool):
                v = int(v)
            return v & full if full is not None else v

        if isinstance(ks, A.Default):
            return None
        if isinstance(ks, A.Mask):
            m = val(ks.mask)
            if full is not None and m & full == 0:
                return None
            km = f"({k} & {full})" if isinstance(t, Bits) and t.signed else k
            return f"({km} & {hex(m)}) == {hex(val(ks.value) & m)}"
        if isinstance(ks, A.Range):
            return f"{ks.lo.const} <= {k} <= {ks.hi.const}"
        v = ks.const
        return f"{k} == {int(v) if isinstance(v, bool) else v}"

    # ---- packet_in methods -----------------------------------------------------------------
    def parser_extract(self, target: A.Expr, env: Env, vbits: A.Expr | None = None) -> None:
        em = self.ctx.em
        t = extracted_header(target, vbits)
        nbytes: str | int
        if vbits is not None:
            nbytes = em.fresh("nbytes")
            nbits = em.fresh("vbits")
            em.line(f"{nbits} = {self.ctx.expr.ex(vbits, env)}")
            em.line(f"if {nbits} % 8:")
            with em.indent():
                em.line(f"raise _ParserError({self.ctx.program.error_code('ParserInvalidArgument')})")
            em.line(f"{nbytes} = {t.fixed_width // 8} + ({nbits} >> 3)")
        else:
            nbytes = t.width // 8
        too_short = self.ctx.program.error_code("PacketTooShort")
        nxt = _next_member(target)
        if nxt is not None:  # extract into stack.next (or a union member of it)
            st = self.ctx.em.fresh("stack")
            em.line(f"{st} = {self.ctx.expr.ex(nxt.expr, env)}")
            em.line(f"if {st}.next_index >= {nxt.expr.type.size}:")
            with em.indent():
                em.line(f"raise _ParserError({self.ctx.program.error_code('StackOutOfBounds')})")
            self.ctx.pre[id(nxt)] = f"{st}.items[{st}.next_index]"
        h = em.fresh("h")
        em.line(f"{h} = {self.ctx.expr.ex(target, env)}")
        em.line(f"if _off + {nbytes} > _n:")
        with em.indent():
            em.line(f"raise _ParserError({too_short})")
        if vbits is not None:
            assert t.varbit is not None  # checked above
            varbit = t.field_type(t.varbit)
            assert isinstance(varbit, Varbit)
            em.line(f"if {nbytes} > {(t.fixed_width + varbit.max_width) // 8}:")
            with em.indent():
                em.line(f"raise _ParserError({self.ctx.program.error_code('HeaderTooShort')})")
            em.line(f"{h}._extract(_data, _off, {nbits})")
        else:  # the header's _extract, inline
            for line in extract_lines(t, h, "_data", "_off", "_xv", "_xs"):
                em.line(line)
        em.line(f"_off += {nbytes}")
        self.ctx.call.invalidate_union_siblings(target, env)
        if nxt is not None:
            del self.ctx.pre[id(nxt)]
            em.line(f"{st}.next_index += 1")

    def parser_lookahead(self, c: A.Call, env: Env) -> str:
        t = c.type
        try:
            width = bit_width(t)
        except TypeError:
            raise UnsupportedConstruct(c.pos, f"lookahead of {t}") from None
        if not isinstance(t, (StructType, StackType, Bits, BoolType)) or (
                isinstance(t, StructType) and t.kind == "header_union"):
            raise UnsupportedConstruct(c.pos, f"lookahead of {t}")
        nbytes = (width + 7) // 8
        pad = nbytes * 8 - width
        em = self.ctx.em
        em.line(f"if _off + {nbytes} > _n:")
        with em.indent():
            em.line(f"raise _ParserError({self.ctx.program.error_code('PacketTooShort')})")
        raw = f"int.from_bytes(_data[_off:_off + {nbytes}], 'big')"
        if pad:
            raw = f"({raw} >> {pad})"
        if isinstance(t, (StructType, StackType)):
            v, bits = em.fresh("la"), em.fresh("bits")
            em.line(f"{bits} = {raw}")
            em.line(f"{v} = {zero_value(t)}")
            self._fill_from_bits(v, t, bits, width)
            return v
        if isinstance(t, BoolType):
            return f"bool({raw})"
        if t.signed:
            return f"_signed({raw}, {width})"
        return raw

    def _fill_from_bits(self, target: str, t, bits: str, end: int) -> int:
        """Assign the fields of target (a header, struct or stack value) from the bits of
        `bits` ending at bit `end` (exclusive, counted from the LSB); returns the new end.
        Headers come out valid, as a lookahead makes them."""
        em = self.ctx.em
        if isinstance(t, StackType):
            for i in range(t.size):
                end = self._fill_from_bits(f"{target}.items[{i}]", t.elem, bits, end)
            return end
        if isinstance(t, StructType):
            for name, ft in t.fields:
                end = self._fill_from_bits(f"{target}.{py_ident(name)}", ft, bits, end)
            if t.kind == "header":
                em.line(f"{target}._valid = True")
            return end
        w = bit_width(t)
        end -= w
        raw = f"(({bits} >> {end}) & {hex((1 << w) - 1)})"
        if isinstance(t, BoolType):
            raw = f"bool({raw})"
        elif isinstance(t, Bits) and t.signed:
            raw = f"_signed({raw}, {w})"
        em.line(f"{target} = {raw}")
        return end

    def parser_advance(self, amount: A.Expr, env: Env) -> None:
        em = self.ctx.em
        v = em.fresh("adv")
        em.line(f"{v} = {self.ctx.expr.ex(amount, env)}")
        em.line(f"if {v} % 8:")  # BMv2 advances by whole bytes only
        with em.indent():
            em.line(f"raise _ParserError({self.ctx.program.error_code('ParserInvalidArgument')})")
        nbytes = f"({v} >> 3)"
        em.line(f"if _off + {nbytes} > _n:")
        with em.indent():
            em.line(f"raise _ParserError({self.ctx.program.error_code('PacketTooShort')})")
        em.line(f"_off += {nbytes}")

    def inline_subparser(self, c: A.Call, env: Env) -> None:
        assert isinstance(c.func, A.Member)  # `p.apply(...)`
        isym = c.func.expr.ref
        if not isinstance(isym, InstanceSym) or not isinstance(isym.type, BlockType) \
                or not isinstance(isym.type.decl, D.ParserDecl):
            raise UnsupportedConstruct(c.pos, "applying a parser passed as a constructor argument")
        decl = isym.type.decl
        inst = self.ctx.program.sub_instance(isym, env)
        if not _redundant(decl):  # p4c drops the call (and the instance) of a redundant parser
            self.ctx.listed.declare_externs(decl, inst.prefix)
        inner = Env(env, None, inst)
        copyouts = self.ctx.call.bind_params(c.bound, env, inner, by_ref_ok=True)
        done = self.ctx.em.fresh("sub_done")
        self.ctx.em.line(f"{done} = False")
        self.gen_parser_states(decl, inner, "break")
        for line in copyouts:
            self.ctx.em.line(line)


def _redundant(decl: D.ParserDecl) -> bool:
    """A parser whose start state does nothing but accept (p4c's RemoveRedundantParsers)."""
    start = next((s for s in decl.states if s.name == "start"), None)
    return start is not None and not start.stmts and start.next == "accept"


def _next_member(e: A.Expr) -> A.Member | None:
    """The `stack.next` an lvalue goes through, if any."""
    while isinstance(e, (A.Member, A.Index)):
        if isinstance(e, A.Member) and isinstance(e.ref, tuple) and e.ref[1] == "next":
            return e
        e = e.expr
    return None

