"""Type checking of statements, parser states and tables (a mixin of the Checker)."""

from __future__ import annotations

from ..cpmodel import Annotation
from . import ast as A
from . import ast_decl as D
from .check_expr import Unknown
from .check_types import CheckerParts
from .symbols import ActionSym, InstanceSym, Scope, StateSym, VarSym
from .types import (
    ActionRunType,
    Bits,
    BoolType,
    EnumType,
    ErrorType,
    ExternType,
    IntLit,
    P4Type,
    TableType,
    VoidType,
)

_OPASSIGN = {"+=": "+", "-=": "-", "*=": "*", "&=": "&", "|=": "|", "^=": "^", "<<=": "<<",
             "|+|=": "|+|", "|-|=": "|-|"}


class StmtChecker(CheckerParts):
    def check_body(self, body: A.Block, scope: Scope, ret_type: P4Type, where: str) -> None:
        self._ret = getattr(self, "_ret", [])
        self._ret.append((ret_type, where))
        for s in body.stmts:
            self.stmt(s, scope)
        self._ret.pop()

    def stmt(self, s: A.Stmt, scope: Scope) -> None:
        getattr(self, "_s_" + type(s).__name__)(s, scope)

    def _s_Empty(self, s, scope) -> None:
        pass

    def _s_Block(self, s: A.Block, scope: Scope) -> None:
        inner = Scope(scope)
        for x in s.stmts:
            self.stmt(x, inner)

    def _s_VarDecl(self, s: A.VarDecl, scope: Scope) -> None:
        t = self.resolve_type(s.tref)
        if s.init is not None:
            self.expr(s.init, scope)
            self.convert(s.init, t, f"variable {s.name}: ")
        if isinstance(t, (ExternType,)):
            self.err(s.pos, f"variable {s.name}: cannot hold {t}")
        s.sym = VarSym(s.name, t, s)
        self.declare(scope, s.name, s.sym, s.pos)

    def _s_ConstDecl(self, s: A.ConstDecl, scope: Scope) -> None:
        self._d_ConstDecl(s, scope)

    def _s_Assign(self, s: A.Assign, scope: Scope) -> None:
        lt = self.expr(s.lhs, scope)
        if s.op != "=":
            op = _OPASSIGN[s.op]
            s.rhs = A.Binary(s.rhs.pos, op, s.lhs, s.rhs)
            s.op = "="
            s.compound = True  # the target is evaluated once
            self.expr(s.rhs, scope)
            self.convert(s.rhs, lt, "assignment: ")
        else:
            self.expr(s.rhs, scope)
            self.convert(s.rhs, lt, "assignment: ")
        self.check_lvalue(s.lhs, "assignment")

    def _s_CallStmt(self, s: A.CallStmt, scope: Scope) -> None:
        self.expr(s.call, scope)
        where = self._ret[-1][1] if getattr(self, "_ret", None) else ""
        if s.call.kind == "table_apply" and where in ("action", "function"):
            self.err(s.pos, f"tables cannot be applied inside an {where}")

    def _s_For(self, s: A.For, scope: Scope) -> None:
        inner = Scope(scope)
        for init in s.init:
            self.stmt(init, inner)
        if s.cond is not None:
            t = self.expr(s.cond, inner)
            if not isinstance(t, (BoolType, Unknown)):
                self.err(s.cond.pos, f"for condition must be bool, not {t}")
        for upd in s.update:
            self.stmt(upd, inner)
        self._loops = getattr(self, "_loops", 0) + 1
        try:
            self.stmt(s.body, Scope(inner))
        finally:
            self._loops -= 1

    def _s_Break(self, s: A.Break, scope: Scope) -> None:
        if not getattr(self, "_loops", 0):
            self.err(s.pos, "break outside a loop")

    def _s_Continue(self, s: A.Continue, scope: Scope) -> None:
        if not getattr(self, "_loops", 0):
            self.err(s.pos, "continue outside a loop")

    def _s_If(self, s: A.If, scope: Scope) -> None:
        t = self.expr(s.cond, scope)
        if not isinstance(t, (BoolType, Unknown)):
            self.err(s.cond.pos, f"if condition must be bool, not {t}")
        self.stmt(s.then, Scope(scope))
        if s.other is not None:
            self.stmt(s.other, Scope(scope))

    def _s_Exit(self, s: A.Exit, scope: Scope) -> None:
        where = self._ret[-1][1] if self._ret else "parser"
        if where in ("parser", "function"):
            self.err(s.pos, f"exit is not allowed in a {where}")

    def _s_Return(self, s: A.Return, scope: Scope) -> None:
        if not self._ret:
            self.err(s.pos, "return outside a control, action or function")
            return
        rt, where = self._ret[-1]
        if s.expr is None:
            if not isinstance(rt, VoidType):
                self.err(s.pos, f"this {where} must return a {rt}")
            return
        self.expr(s.expr, scope)
        if isinstance(rt, VoidType):
            self.err(s.pos, f"a {where} without a return type cannot return a value")
        else:
            self.convert(s.expr, rt, "return value: ")

    def _s_Switch(self, s: A.Switch, scope: Scope) -> None:
        t = self.expr(s.expr, scope)
        seen = set()
        if isinstance(t, ActionRunType):
            names = {ref.name for ref in t.table.actions}
            for c in s.cases:
                if c.label is None:
                    continue
                if not isinstance(c.label, A.Name) or c.label.name not in names:
                    self.err(c.label.pos, f"switch label is not an action of table "
                                          f"{t.table.name}")
                    continue
                sym = scope.lookup(c.label.name)
                c.label.ref = sym
                if c.label.name in seen:
                    self.err(c.label.pos, f"duplicate switch label {c.label.name}")
                seen.add(c.label.name)
        elif isinstance(t, (Bits, EnumType, ErrorType)):
            for c in s.cases:
                if c.label is None:
                    continue
                self.expr(c.label, scope)
                self.convert(c.label, t, "switch label: ")
                if c.label.const is None:
                    self.err(c.label.pos, "switch label must be a compile-time constant")
        elif not isinstance(t, Unknown):
            self.err(s.expr.pos, f"cannot switch on a value of type {t}")
        for i, c in enumerate(s.cases):
            if c.label is None and i != len(s.cases) - 1:
                self.err(c.pos, "default must be the last switch case")
            if c.body is not None:
                self.stmt(c.body, Scope(scope))

    # ---- parser states -------------------------------------------------------------------
    def check_state(self, st: D.ParserState, scope: Scope) -> None:
        self._ret = getattr(self, "_ret", [])
        self._ret.append((VoidType(), "parser"))
        inner = Scope(scope)
        for s in st.stmts:
            self.stmt(s, inner)
        nxt = st.next
        if isinstance(nxt, str):
            self._check_state_name(nxt, scope, st.pos)
        else:
            types = [self.expr(e, inner) for e in nxt.exprs]
            for c in nxt.cases:
                self._check_state_name(c.state, scope, c.pos)
                self.check_keyset(c.keyset, nxt.exprs, types, inner, c.pos)
        self._ret.pop()

    def _check_state_name(self, name: str, scope: Scope, pos) -> None:
        if not isinstance(scope.lookup(name), StateSym):
            self.err(pos, f"no parser state named '{name}'")

    def check_keyset(self, keyset: list[A.Expr], exprs: list, types: list, scope: Scope,
                     pos) -> None:
        if len(keyset) == 1 and isinstance(keyset[0], A.Default):
            return
        if len(keyset) == 1 and len(types) > 1 and isinstance(keyset[0], A.ListExpr):
            keyset[:] = keyset[0].items
        if len(keyset) != len(types):
            self.err(pos, f"keyset has {len(keyset)} element(s), the select has {len(types)}")
            return
        for k, t in zip(keyset, types, strict=False):
            parts = []
            if isinstance(k, A.Default):
                continue
            if isinstance(k, A.Mask):
                parts = [k.value, k.mask]
            elif isinstance(k, A.Range):
                parts = [k.lo, k.hi]
            else:
                parts = [k]
            for i, p in enumerate(parts):
                self.expr(p, scope)
                target = t
                if isinstance(k, A.Mask) and i == 1 and isinstance(t, EnumType) and \
                        t.width is not None:
                    target = Bits(t.width)  # the mask of an enum key is a plain number
                if not (isinstance(t, BoolType) and isinstance(p.type, BoolType)):
                    self._check_keyset_fits(p, target)
                    self.convert(p, target, "keyset: ")
                if p.const is None and not isinstance(p.type, Unknown):
                    self.err(p.pos, "unsupported: non-constant keyset expression")
            k.type = t

    def _check_keyset_fits(self, p: A.Expr, target: P4Type) -> None:
        """An `int` keyset constant that does not fit the key's W bits is an error where p4c
        wraps it with a warning ("value does not fit"), e.g. `200 .. 300` on bit<8> becomes
        the empty 200 .. 44. Fitting means -2**(W-1) <= v < 2**W: a negative one on bit<W>
        is converted, and one of W bits on int<W> (a sign-bit mask, 0x80 on int<8>) is its
        two's complement, as p4c converts them."""
        v = p.const
        if not (isinstance(target, Bits) and isinstance(p.type, IntLit) and isinstance(v, int)):
            return
        w = target.width
        if not (-(1 << max(w - 1, 0)) <= v < 1 << w):
            self.err(p.pos, f"keyset: value {v} does not fit in {target}")

    # ---- tables --------------------------------------------------------------------------
    def table_type(self, t: D.TableDecl) -> P4Type:
        return TableType(t)

    def check_table(self, t: D.TableDecl, scope: Scope) -> None:
        key_types = []
        for k in t.keys or []:
            kt = self.expr(k.expr, scope)
            key_types.append(kt)
            if k.match_kind not in self.info.match_kinds:
                self.err(k.pos, f"unknown match kind {k.match_kind}")
            if isinstance(kt, BoolType):
                continue
            if not isinstance(kt, (Bits, EnumType, ErrorType, Unknown)):
                self.err(k.expr.pos, f"cannot match on a value of type {kt}")
            elif isinstance(kt, EnumType) and kt.width is None:
                self.err(k.expr.pos, "unsupported: matching on a non-serializable enum")
        for ref in t.actions:
            sym = scope.lookup(ref.name)
            if not isinstance(sym, ActionSym):
                self.err(ref.pos, f"'{ref.name}' is not an action")
                continue
            ref.sym = sym
            ref.bound = self._bind_action_ref(ref, sym, scope)
        names = {r.name: r for r in t.actions}
        for name, prop in t.props.items():
            if name == "default_action":
                self._default_action(t, prop, names, scope)
            elif name == "size":
                self.expr(prop.value, scope)
                if not isinstance(prop.value.const, int) or prop.value.const < 0:
                    self.err(prop.value.pos, "table size must be a non-negative constant")
            elif name in ("implementation", "counters", "meters"):
                v = prop.value
                if isinstance(v, A.Construct):
                    self._inline_instance(prop, scope)
                    continue
                self.expr(v, scope)
                if not isinstance(v.ref, InstanceSym) and not isinstance(v.type, Unknown):
                    self.err(v.pos, f"{name} must name an extern instance")
            elif name in ("support_timeout", "idle_timeout"):
                self.expr(prop.value, scope)
            elif name == "largest_priority_wins" or name == "priority_delta":
                self.err(prop.pos, f"unsupported: table property {name}")
            else:
                self.err(prop.pos, f"unsupported: table property {name}")
        if t.entries is not None:
            kexprs = [k.expr for k in t.keys or []]
            for e in t.entries:
                self.check_keyset(e.keyset, kexprs, key_types, scope, e.pos)
                entry_ref = names.get(e.action)
                if entry_ref is None:
                    self.err(e.pos, f"entry action {e.action} is not in the table's actions")
                    continue
                self._action_args(entry_ref, e.args, scope, e.pos, "entry")
            if not t.entries_const:
                self.err(t.pos, "unsupported: non-const entries")
            for e in t.entries:
                prio = A.annotation(e.annotations, "priority")
                if prio is not None and not prio.body.strip().isdigit():
                    self.err(e.pos, "@priority needs a non-negative integer")

    def _bind_action_ref(self, ref: D.ActionRefDecl, sym: ActionSym, scope: Scope) -> list:
        """`actions = { a(x) }`: x binds a's first (directional) parameters."""
        args = ref.args or []
        params = sym.decl.params
        if len(args) > len(params):
            self.err(ref.pos, f"action {ref.name} takes {len(params)} argument(s)")
            return []
        bound: list[tuple[D.Param, A.Expr | None]] = []
        for p, a in zip(params, args, strict=False):
            if not p.direction:
                self.err(a.pos, f"action {ref.name}: '{p.name}' is set by the control plane")
                continue
            if a.expr is None:
                bound.append((p, None))
                continue
            self.expr(a.expr, scope)
            self.convert(a.expr, self.resolve_type(p.tref), f"action {ref.name}: ")
            if p.direction in ("out", "inout"):
                self.check_lvalue(a.expr, f"action {ref.name}: argument '{p.name}'")
            bound.append((p, a.expr))
        for p in params[len(args):]:
            if p.direction:
                self.err(ref.pos, f"action {ref.name}: parameter '{p.name}' needs an argument")
        return bound

    def _inline_instance(self, prop: D.TableProp, scope: Scope) -> None:
        """`@name("ap") implementation = action_profile(128);`: p4c makes it an instance named
        exactly as the annotation says (not prefixed by the control)."""
        v = prop.value
        assert isinstance(v, A.Construct)  # the caller checked
        given = A.annotation_string(prop.annotations, "name")
        if given is None:
            self.err(v.pos, f"unsupported: {prop.name} instantiated in the table without @name")
            return
        t = self.expr(v, scope)
        if not isinstance(t, ExternType):
            return
        name = given.lstrip(".")
        annos = [Annotation("name", f'".{name}"')] + [
            a for a in prop.annotations if a.name != "name"]
        inst = D.Instantiation(v.pos, name, annos, v.tref, v.args)
        v.ref = InstanceSym(name, t, inst, [a.expr for a in v.args if a.expr is not None])

    def _default_action(self, t: D.TableDecl, prop: D.TableProp, names: dict,
                        scope: Scope) -> None:
        v = prop.value
        if isinstance(v, A.Name):
            v = A.Call(v.pos, v, [])
            prop.value = v
        if not isinstance(v, A.Call) or not isinstance(v.func, A.Name):
            self.err(prop.value.pos, "default_action must be an action call")
            return
        ref = names.get(v.func.name)
        if ref is None:
            self.err(v.pos, f"default action {v.func.name} is not in the table's actions")
            return
        v.func.ref = getattr(ref, "sym", None)
        if any(a.name == "tableonly" for a in ref.annotations):
            self.err(v.pos, f"default action {v.func.name} is @tableonly")
        self._action_args(ref, v.args, scope, v.pos, "default action")

    def _action_args(self, ref: D.ActionRefDecl, args: list[A.Arg], scope: Scope, pos,
                     what: str) -> None:
        sym = getattr(ref, "sym", None)
        if sym is None:
            return
        params = [p for p in sym.decl.params if not p.direction]
        if len(args) == len(sym.decl.params) and len(args) != len(params):
            # the directional arguments repeat the actions list's; keep the action data
            for p, a in zip(sym.decl.params, args, strict=False):
                if p.direction and a.expr is not None:
                    self.expr(a.expr, scope)
            args[:] = [a for p, a in zip(sym.decl.params, args, strict=False) if not p.direction]
        if len(args) != len(params):
            self.err(pos, f"{what} {ref.name}: expects {len(params)} argument(s), "
                          f"got {len(args)}")
            return
        for p, a in zip(params, args, strict=False):
            if a.expr is None:
                self.err(a.pos, f"{what} {ref.name}: '_' is not allowed here")
                continue
            self.expr(a.expr, scope)
            self.convert(a.expr, self.resolve_type(p.tref), f"{what} {ref.name}: ")
            if a.expr.const is None and not isinstance(a.expr.type, Unknown):
                self.err(a.pos, f"{what} {ref.name}: argument must be a compile-time constant")

