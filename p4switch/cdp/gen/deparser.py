"""The deparser as one C function:

    static int64_t p4_deparser(const <headers> *hdr, uint8_t *out, uint32_t size);

writes the valid headers in the order the program emits them (a struct or union: its headers
in declaration order; a stack: its elements) and returns the bytes written, or -1 when they
do not fit in `size`.
"""

from __future__ import annotations

from p4switch.backend.env import Env, Frame, Instance
from p4switch.frontend import ast as A
from p4switch.frontend import ast_decl as D
from p4switch.frontend.diagnostics import UnsupportedConstruct
from p4switch.frontend.types import P4Type, StackType, StructType

from .context import CContext
from .expr import dot, member
from .headers import emit_lines, varbit_emit_lines, varbit_size
from .parser import bind_params

SIGNATURE = "static int64_t p4_deparser(const {hdr} *hdr, uint8_t *out, uint32_t size)"


class CDeparserGen:
    """The deparser function and packet_out.emit."""

    def __init__(self, ctx: CContext) -> None:
        self.ctx = ctx

    def generate(self, decl: D.ControlDecl, hdr: str) -> None:
        ctx = self.ctx
        assert decl.body is not None  # the parser gives a control its apply block
        env = Env(None, Frame(), Instance(decl, decl.name, "deparser"))
        bind_params(ctx, decl, env)
        local_vars = [loc for loc in decl.locals if isinstance(loc, A.VarDecl)]
        for loc in decl.locals:
            if not isinstance(loc, A.VarDecl):
                raise UnsupportedConstruct(loc.pos, f"{type(loc).__name__} in a deparser (C)")
        ctx.externs = {"packet_out.emit": self._emit}
        em = ctx.em
        with em.function(SIGNATURE.format(hdr=hdr)):
            em.line(f"/* deparser {decl.name} */")
            for var in local_vars:
                ctx.stmt.stmt(var, env)
            ctx.stmt.block(decl.body.stmts, env)
            em.line("return pos;")
            em.decls.insert(0, "uint32_t pos = 0;")
        ctx.externs = {}

    def _emit(self, c: A.Call, env: Env) -> str:
        (h,) = (a for _, a in c.bound)
        assert h is not None  # emit takes its header
        self.emit_value(h.type, self.ctx.expr.ex(h, env), h)
        return ""

    def emit_value(self, t: P4Type, v: str, e: A.Expr) -> None:
        """Emit the headers in value `v` of type t."""
        em = self.ctx.em
        if isinstance(t, StackType):  # every element, valid or not, as the Python stack emits
            i = em.fresh("i")
            with em.block(f"for (uint32_t {i} = 0; {i} < {t.size}; {i}++)"):
                self.emit_value(t.elem, f"{v}.items[{i}]", e)
            return
        if not isinstance(t, StructType):
            raise UnsupportedConstruct(e.pos, f"emit of {t} in C")
        if t.kind != "header":
            for n, ft in t.fields:
                if isinstance(ft, (StructType, StackType)):
                    self.emit_value(ft, member(v, n), e)
            return
        if t.varbit is not None:
            size, lines = varbit_size(t, "(*h)"), varbit_emit_lines(t, "(*h)", "p")
        else:
            size, lines = str(t.width // 8), emit_lines(t, "(*h)", "p")
        with em.block(f"if ({dot(v, 'valid_')})"):
            em.line(f"const {self.ctx.types.name(t)} *h = &{v};")
            em.line("uint8_t *p = out + pos;")
            em.line(f"if (size - pos < {size})")
            em.line("    return -1;")
            for line in lines:
                em.line(line)
            em.line(f"pos += {size};")
