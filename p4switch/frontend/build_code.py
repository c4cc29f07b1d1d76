"""Lark parse tree -> syntax tree: statements and expressions (a mixin of the Builder)."""

from __future__ import annotations

from lark import Token, Transformer, v_args

from . import ast as A
from .literals import BINOPS, parse_int


@v_args(meta=True)
class CodeBuilder(Transformer):
    # -- statements
    def block(self, meta, ch):
        return A.Block(self._pos(meta), list(ch[1:]))

    def var_decl(self, meta, ch):
        annos, tref, name, init = ch
        return A.VarDecl(self._pos(meta), tref, name, init, annos or [])

    def assignment(self, meta, ch):
        lhs, op, rhs = ch
        return A.Assign(self._pos(meta), lhs, rhs, str(op))

    def call_stmt(self, meta, ch):
        func, _lt, targs, args = ch[0], ch[1], ch[2], ch[-1]
        return A.CallStmt(self._pos(meta), A.Call(self._pos(meta), func, args, targs or []))

    def direct_apply(self, meta, ch):
        """`Type.apply(...)`: applies an implicit instance of a parser or control type."""
        pos = self._pos(meta)
        func = A.Member(pos, A.TypeNameExpr(pos, str(ch[0])), "apply")
        return A.CallStmt(pos, A.Call(pos, func, ch[-1]))

    def lv_name(self, meta, ch):
        return A.Name(self._pos(meta), str(ch[0]))

    def lv_member(self, meta, ch):
        return A.Member(self._pos(meta), ch[0], ch[1])

    def lv_index(self, meta, ch):
        return A.Index(self._pos(meta), ch[0], ch[1])

    def lv_slice(self, meta, ch):
        return A.Slice(self._pos(meta), ch[0], ch[1], ch[2])

    def if_stmt(self, meta, ch):
        items = [c for c in ch if not isinstance(c, Token)]
        other = next((x for x in items[2:] if x is not None), None)
        return A.If(self._pos(meta), items[0], items[1], other)

    def for_stmt(self, meta, ch):
        _, init, cond, update, body = ch
        return A.For(self._pos(meta), init, cond, update, body)

    def for_inits(self, meta, ch):
        return [c for c in ch if c is not None]

    for_updates = for_inits

    def for_var(self, meta, ch):
        annos, tref, name, init = ch
        return A.VarDecl(self._pos(meta), tref, name, init, annos or [])

    def for_assign(self, meta, ch):
        lhs, op, rhs = ch
        return A.Assign(self._pos(meta), lhs, rhs, str(op))

    def for_call(self, meta, ch):
        pos = self._pos(meta)
        return A.CallStmt(pos, A.Call(pos, ch[0], ch[-1]))

    def break_stmt(self, meta, ch):
        return A.Break(self._pos(meta))

    def continue_stmt(self, meta, ch):
        return A.Continue(self._pos(meta))

    def exit_stmt(self, meta, ch):
        return A.Exit(self._pos(meta))

    def return_stmt(self, meta, ch):
        return A.Return(self._pos(meta), ch[1])

    def empty_stmt(self, meta, ch):
        return A.Empty(self._pos(meta))

    def switch_stmt(self, meta, ch):
        return A.Switch(self._pos(meta), ch[1], list(ch[2:]))

    def switch_case(self, meta, ch):
        return A.SwitchCase(self._pos(meta), ch[0], ch[1])

    def switch_label(self, meta, ch):
        return ch[0]

    def default_label(self, meta, ch):
        return None

    # -- expressions
    def expr_list(self, meta, ch):
        return [c for c in ch if c is not None]

    def args(self, meta, ch):
        return [c for c in ch if c is not None]

    def arg(self, meta, ch):
        return A.Arg(self._pos(meta), ch[0])

    def dontcare_arg(self, meta, ch):
        return A.Arg(self._pos(meta), None)

    def named_arg(self, meta, ch):
        return A.Arg(self._pos(meta), ch[1], ch[0])

    def cond(self, meta, ch):
        return A.Cond(self._pos(meta), ch[0], ch[1], ch[2])

    def binop(self, meta, ch):
        left, op, right = ch
        return A.Binary(self._pos(meta), BINOPS[op.type], left, right)

    def gt(self, meta, ch):
        return A.Binary(self._pos(meta), ">", ch[0], ch[-1])

    def shr(self, meta, ch):
        return A.Binary(self._pos(meta), ">>", ch[0], ch[-1])

    def unop(self, meta, ch):
        return A.Unary(self._pos(meta), str(ch[0]), ch[1])

    def cast(self, meta, ch):
        return A.Cast(self._pos(meta), ch[0], ch[1])

    def member(self, meta, ch):
        return A.Member(self._pos(meta), ch[0], ch[1])

    def index(self, meta, ch):
        return A.Index(self._pos(meta), ch[0], ch[1])

    def slice(self, meta, ch):
        return A.Slice(self._pos(meta), ch[0], ch[1], ch[2])

    def call(self, meta, ch):
        return A.Call(self._pos(meta), ch[0], ch[1])

    def call_targs(self, meta, ch):
        return A.Call(self._pos(meta), ch[0], ch[-1], ch[2])

    def number(self, meta, ch):
        v, w, s = parse_int(str(ch[0]))
        return A.Const(self._pos(meta), v, w, s, str(ch[0]))

    def true(self, meta, ch):
        return A.BoolLit(self._pos(meta), True)

    def false(self, meta, ch):
        return A.BoolLit(self._pos(meta), False)

    def string(self, meta, ch):
        return A.StringLit(self._pos(meta), str(ch[0])[1:-1])

    def ident(self, meta, ch):
        return A.Name(self._pos(meta), str(ch[0]))

    def ident_top(self, meta, ch):
        return A.Name(self._pos(meta), str(ch[0]), top=True)

    def type_member(self, meta, ch):
        pos = self._pos(meta)
        return A.Member(pos, A.TypeNameExpr(pos, str(ch[0])), ch[1])

    def error_member(self, meta, ch):
        pos = self._pos(meta)
        return A.Member(pos, A.TypeNameExpr(pos, "error"), ch[1])

    def construct(self, meta, ch):
        tref = ch[0] if isinstance(ch[0], A.TypeRef) else A.NamedTypeRef(self._pos(meta), str(ch[0]))
        return A.Construct(self._pos(meta), tref, ch[-1])

    def list_expr(self, meta, ch):
        return A.ListExpr(self._pos(meta), ch[0])

    def struct_init(self, meta, ch):
        return A.StructInit(self._pos(meta), [c for c in ch if c is not None])

    def kv_pair(self, meta, ch):
        return (ch[0], ch[1])
