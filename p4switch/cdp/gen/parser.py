"""The parser as one C function: a label per state, `goto` for transitions.

    static int32_t p4_parser(const uint8_t *data, uint32_t n, <headers> *hdr, <meta> *meta,
                             p4_s_standard_metadata_t *sm, uint32_t *offset);

returns 0 on accept, -1 on reject, else the number of the P4 error that stopped it, and sets
*offset to where it stopped (the payload starts there), exactly where the Python parser
(p4switch/backend/parser.py) returns or raises: the same checks in the same order, headers
extracted only once their bytes are known to be there.
"""

from __future__ import annotations

from p4switch.backend.env import Env, Frame, Instance
from p4switch.backend.parser import _next_member, extracted_header
from p4switch.frontend import ast as A
from p4switch.frontend import ast_decl as D
from p4switch.frontend.diagnostics import UnsupportedConstruct
from p4switch.frontend.types import Bits, BoolType, EnumType, ErrorType, ExternType, StructType, Varbit, bit_width

from .context import CContext
from .emitter import c_ident
from .headers import extract_lines, varbit_extract_lines
from .types import wide

SIGNATURE = ("static int32_t p4_parser(const uint8_t *data, uint32_t n, {hdr} *hdr, {meta} *meta, "
             "{sm} *sm, uint32_t *offset)")


def bind_params(ctx: CContext, decl: D.ParserDecl | D.ControlDecl, env: Env) -> dict[str, str]:
    """Bind a stage's parameters as the Python back end does (packet_in/out, then the headers,
    then the metadata, standard_metadata by its type) to C pointers; returns which C
    parameter has which struct type ("hdr", "meta", "sm")."""
    names = iter(("hdr", "meta"))
    types: dict[str, str] = {}
    for p in decl.params:
        t = p.sym.type
        if isinstance(t, ExternType) and t.decl.name in ("packet_in", "packet_out"):
            continue
        if isinstance(t, StructType) and t.name == "standard_metadata_t":
            name = "sm"
        else:
            name = next(names, "")
            if not name or not isinstance(t, StructType):
                raise UnsupportedConstruct(p.pos, f"parameter {p.name} of {decl.name} in C")
        env.bind(p.sym, f"(*{name})")
        types[name] = ctx.types.name(t)
    return types


class CParserGen:
    """The parser function and its packet_in methods."""

    def __init__(self, ctx: CContext) -> None:
        self.ctx = ctx
        self.labels: dict[str, str] = {}  # state -> label
        self.used: set[str] = set()  # labels some goto jumps to

    def generate(self, decl: D.ParserDecl, hdr: str, meta: str, sm: str) -> None:
        ctx = self.ctx
        self.used = set()
        env = Env(None, Frame(), Instance(decl, decl.name, "parser"))
        bind_params(ctx, decl, env)
        for loc in decl.locals:
            if isinstance(loc, D.Instantiation):
                raise UnsupportedConstruct(loc.pos, f"instance {loc.name} in a parser (C)")
        ctx.externs = {"packet_in.extract": self._extract, "packet_in.advance": self._advance,
                       "packet_in.lookahead": self._lookahead, "verify": self._verify}
        ctx.in_parser, ctx.fail = True, self._fail
        states = {st.name: st for st in decl.states}
        reachable = _reachable(states)
        self.labels = {name: f"st_{c_ident(name)}" for name in reachable}
        em = ctx.em
        with em.function(SIGNATURE.format(hdr=hdr, meta=meta, sm=sm)):
            em.line(f"/* parser {decl.name} */")
            em.line("(void)hdr; (void)meta; (void)sm;")
            for loc in decl.locals:
                if isinstance(loc, A.VarDecl):
                    ctx.stmt.stmt(loc, env)
            for name in reachable:  # start first, then in declaration order
                st = states[name]
                em.label(self.labels[name])
                em.line(f"/* state {name} */")
                inner = Env(env)
                ctx.stmt.block(st.stmts, inner)
                self._transition(st.next, inner)
            em.label("p_accept")
            em.line("*offset = off;")
            em.line("return 0;")
            em.label("p_fail")
            em.line("*offset = off;")
            em.line("return err;")
            unused = {f"{label}:;" for label in [*self.labels.values(), "p_accept", "p_fail"]
                      if label not in self.used}
            em.lines[:] = [line for line in em.lines if line not in unused]
            em.decls[:0] = ["uint32_t off = 0;", "int32_t err = 0;"]
            if ctx.checked:
                em.decls.append("int bad_index = 0;  /* set by p4_checked */")
        ctx.in_parser, ctx.fail, ctx.externs = False, None, {}

    def _fail(self, code: str) -> str:
        self.used.add("p_fail")
        return f"{{ err = {code}; goto p_fail; }}"

    def _fail_named(self, name: str) -> str:
        return self.ctx.fail_with(self.ctx.error_code(name), name)

    # ---- transitions ---------------------------------------------------------------------
    def _goto(self, target: str) -> None:
        em = self.ctx.em
        if target == "reject":
            em.line(self._fail("-1") + "  /* reject */")
            return
        label = "p_accept" if target == "accept" else self.labels[target]
        self.used.add(label)
        em.line(f"goto {label};")

    def _transition(self, nxt: str | D.SelectExpr, env: Env) -> None:
        ctx, em = self.ctx, self.ctx.em
        if isinstance(nxt, str):
            self._goto(nxt)
            return
        keys = []
        for e in nxt.exprs:
            t = e.type
            if not isinstance(t, (Bits, BoolType, EnumType, ErrorType)) or wide(t):
                raise UnsupportedConstruct(e.pos, f"select on {t} in C")
            k = em.declare("int64_t" if _signed_key(t) else "uint64_t", "k")
            em.line(f"{k} = {ctx.stmt.value(e, env)};")
            keys.append((k, t))
        for case in nxt.cases:
            keysets = case.keyset if len(case.keyset) == len(keys) else case.keyset * len(keys)
            conds = [c for (k, t), ks in zip(keys, keysets, strict=False)
                     if (c := _keyset_cond(k, t, ks)) is not None]
            if not conds:  # the default: the cases after it never match
                self._goto(case.state)
                return
            em.line(f"if ({' && '.join(conds)})")
            em.level += 1
            self._goto(case.state)
            em.level -= 1
        em.line(self._fail_named("NoMatch"))

    # ---- packet_in ---------------------------------------------------------------------------
    def _extract(self, c: A.Call, env: Env) -> str:
        ctx, em = self.ctx, self.ctx.em
        args = [a for _, a in c.bound]
        target = args[0]
        vbits = args[1] if len(args) == 2 else None
        if target is None:  # extract into `_`: parsed, then dropped
            t = c.type_env.get("T")
            if not isinstance(t, StructType):
                raise UnsupportedConstruct(c.pos, f"extract of {t} into _ in C")
            target = A.Name(c.pos, "_")
            target.type = t
            ctx.pre[id(target)] = em.declare(ctx.types.name(t), "discard", "{0}")
        t = extracted_header(target, vbits)
        nbits = ""
        if vbits is not None:
            nbits = em.declare("uint64_t", "vbits")
            em.line(f"{nbits} = {ctx.stmt.value(vbits, env)};")
            em.line(f"if ({nbits} % 8) {self._fail_named('ParserInvalidArgument')}")
            size = f"({t.fixed_width // 8} + ({nbits} >> 3))"
        else:
            size = str(t.width // 8)
        nxt = _next_member(target)
        stack = ""
        if nxt is not None:  # into stack.next (or a union member of it)
            stack = ctx.expr.ex(nxt.expr, env)
            em.line(f"if ({stack}.next_index >= {nxt.expr.type.size}) "
                    f"{self._fail_named('StackOutOfBounds')}")
            ctx.pre[id(nxt)] = f"{stack}.items[{stack}.next_index]"
        try:
            h = ctx.stmt.lvalue(target, env)
        finally:
            if nxt is not None:
                del ctx.pre[id(nxt)]
        em.line(f"if ((uint64_t)(n - off) < {size}) {self._fail_named('PacketTooShort')}")
        with em.block(""):
            em.line(f"{ctx.types.name(t)} *h = &{h};")
            em.line("const uint8_t *p = data + off;")
            if vbits is not None:
                assert t.varbit is not None  # checked above
                varbit = t.field_type(t.varbit)
                assert isinstance(varbit, Varbit)
                em.line(f"if ({size} > {(t.fixed_width + varbit.max_width) // 8}) "
                        f"{self._fail_named('HeaderTooShort')}")
                lines = varbit_extract_lines(t, "(*h)", "p", nbits)
            else:
                lines = extract_lines(t, "(*h)", "p")
            for line in lines:
                em.line(line)
        em.line(f"off += {size};" if size.isdigit() else f"off += (uint32_t){size};")
        ctx.stmt.invalidate_siblings(target, env)
        if nxt is not None:
            em.line(f"{stack}.next_index++;")
        return ""

    def _lookahead(self, c: A.Call, env: Env) -> str:
        t = c.type
        if not isinstance(t, (Bits, BoolType)) or wide(t):
            raise UnsupportedConstruct(c.pos, f"lookahead of {t} in C")
        width = bit_width(t)
        if width == 0:
            raise UnsupportedConstruct(c.pos, f"lookahead of {t} in C")
        nbytes = (width + 7) // 8
        pad = nbytes * 8 - width
        self.ctx.em.line(f"if (n - off < {nbytes}) {self._fail_named('PacketTooShort')}")
        raw = f"p4_load_be(data + off, {nbytes})"
        if pad:
            raw = f"({raw} >> {pad})"
        if isinstance(t, BoolType):
            return f"({raw} != 0)"
        return f"p4_sext({raw}, {width})" if t.signed else raw

    def _advance(self, c: A.Call, env: Env) -> str:
        em = self.ctx.em
        amount = c.bound[0][1]
        assert amount is not None  # advance takes its size
        v = em.declare("uint64_t", "adv")
        em.line(f"{v} = {self.ctx.stmt.value(amount, env)};")
        em.line(f"if ({v} % 8) {self._fail_named('ParserInvalidArgument')}")  # whole bytes only
        em.line(f"if ((uint64_t)(n - off) < ({v} >> 3)) {self._fail_named('PacketTooShort')}")
        em.line(f"off += (uint32_t)({v} >> 3);")
        return ""

    def _verify(self, c: A.Call, env: Env) -> str:
        cond, error = (a for _, a in c.bound)
        assert cond is not None and error is not None  # verify(bool, error)
        check = self.ctx.stmt.value(cond, env)
        if isinstance(error.const, int):
            fail = self.ctx.fail_with(error.const, self.ctx.info.errors[error.const])
        else:
            fail = self._fail(f"(int32_t){self.ctx.expr.ex(error, env)}")
        self.ctx.em.line(f"if (!{check}) {fail}")
        return ""


def _reachable(states: dict[str, D.ParserState]) -> list[str]:
    """The states reachable from start: start first, the others in declaration order."""
    seen, todo = {"start"}, ["start"]
    if "start" not in states:
        raise UnsupportedConstruct(None, "a parser without a start state")
    while todo:
        st = states[todo.pop()]
        targets = [st.next] if isinstance(st.next, str) else [c.state for c in st.next.cases]
        for name in targets:
            if name not in seen and name in states:
                seen.add(name)
                todo.append(name)
    return ["start", *(n for n in states if n in seen and n != "start")]


def _keyset_cond(k: str, t, ks: A.Expr) -> str | None:
    """The C condition of one keyset on key `k` of type t (None: it matches anything), as
    the Python parser compares: masks and values within the key's width, ranges as given."""
    full = (1 << bit_width(t)) - 1 if isinstance(t, Bits) else None
    signed = _signed_key(t)
    if isinstance(t, (Bits, EnumType)) and t.width is not None:  # the key's values
        w = bit_width(t)
        lo_key, hi_key = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if signed else (0, (1 << w) - 1)
    else:
        lo_key, hi_key = 0, (1 << 64) - 1

    def const(e: A.Expr) -> int:
        v = e.const
        if v is None:
            raise UnsupportedConstruct(e.pos, "a select case that is not a constant in C")
        return int(v)

    if isinstance(ks, A.Default):
        return None
    if isinstance(ks, A.Mask):
        m = const(ks.mask) & full if full is not None else const(ks.mask)
        if full is not None and m == 0:
            return None
        v = const(ks.value) & full if full is not None else const(ks.value)
        if not 0 <= m < 1 << 64 or v < 0:
            raise UnsupportedConstruct(ks.pos, f"the mask {m:#x} in C (beyond 64 bits)")
        return f"((uint64_t){k} & {_int(m)}) == {_int(v & m)}"
    if isinstance(ks, A.Range):  # as written: bounds outside the key's type clamp
        lo, hi = max(const(ks.lo), lo_key), min(const(ks.hi), hi_key)
        if lo > hi:
            return "0"
        conds = ([f"{k} >= {_int(lo, signed)}"] if lo > lo_key else []) + \
                ([f"{k} <= {_int(hi, signed)}"] if hi < hi_key else [])
        return " && ".join(conds) if conds else "1"
    v = const(ks)
    return f"{k} == {_int(v, signed)}" if lo_key <= v <= hi_key else "0"


def _signed_key(t) -> bool:
    return isinstance(t, Bits) and t.signed


def _int(v: int, signed: bool = False) -> str:
    """An integer literal of the key's C type (int64_t or uint64_t), so C compares values."""
    if signed:
        return "INT64_MIN" if v == -(1 << 63) else f"INT64_C({v})"
    return f"UINT64_C({hex(v) if v > 9 else v})"
