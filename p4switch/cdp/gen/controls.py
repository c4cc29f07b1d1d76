"""Controls -> C (as backend/program.py, calls.py and tables.py for the Python back end): each
of verify_checksum, ingress, egress and compute_checksum becomes one C function,

    static void p4_<role>(struct cdp_state *st, struct cdp_packet *ctx, void *hdr_,
                          void *meta_, void *sm_);

with its actions and sub-controls inlined where they are called (copy-in/copy-out as P4 says;
a sub-control's headers and structs by reference when no two arguments overlap, as the Python
back end does) and its tables looked up in the state's C tables (c/pipeline.h). `return`
leaves an inlined body through a label after it; `exit` runs the copy-outs of every body it
is in and returns.

The objects of the state are numbered in `Layout`, which the control plane (cdp/pipeline.py)
reads to fill them: tables by their control-plane names, the actions each table may run,
action profiles, registers and counters.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from p4switch.backend.calls import _has_return, _overlaps, _simple_path, inner_sym
from p4switch.backend.env import Env, Frame, Instance
from p4switch.backend.model import local_name
from p4switch.backend.tables import key_width
from p4switch.frontend import ast as A
from p4switch.frontend import ast_decl as D
from p4switch.frontend.diagnostics import UnsupportedConstruct
from p4switch.frontend.symbols import ActionSym, InstanceSym
from p4switch.frontend.types import (
    Bits,
    BlockType,
    BoolType,
    ExternType,
    StackType,
    StructType,
)

from .context import CContext
from .expr import mask
from .parser import bind_params
from .types import nbytes, scalar_ctype, wide

STAGES = ("verify_checksum", "ingress", "egress", "compute_checksum")
MAX_ARGS = 16  # CDP_MAX_ARGS (c/pipeline.h): action data a table entry carries


@dataclass
class TableSlot:
    """A table as the C state holds it: its number, control-plane name, key widths (in key
    order, selector fields left out), the actions its entries may name, and its profile's
    number (-1: none)."""

    index: int
    name: str
    key_widths: list[int]
    actions: list[str]
    profile: int = -1


@dataclass
class Layout:
    """What the generated C numbers, by control-plane name."""

    tables: dict[str, TableSlot] = field(default_factory=dict)
    actions: dict[str, int] = field(default_factory=dict)
    profiles: dict[str, int] = field(default_factory=dict)
    registers: dict[str, int] = field(default_factory=dict)
    counters: dict[str, int] = field(default_factory=dict)
    digests: dict[str, int] = field(default_factory=dict)  # by struct type name

    def action(self, name: str) -> int:
        return self.actions.setdefault(name, len(self.actions))


def _number(names: dict[str, int], name: str) -> int:
    return names.setdefault(name, len(names))


class CControlGen:
    """The control stages, their instances, calls and tables."""

    def __init__(self, ctx: CContext, layout: Layout) -> None:
        self.ctx = ctx
        self.layout = layout
        self.prefixes: dict[int, str] = {}  # control decl -> its instance's prefix (p4c names)
        # digest() calls of ingress: (ctx->digest's value, the struct's number, the C values
        # read as ingress ends)
        self.digest_reads: list[tuple[int, int, list[str]]] = []

    # ---- stages ------------------------------------------------------------------------------
    def generate(self, role: str, decl: D.ControlDecl, ctypes_: dict[str, str]) -> None:
        ctx, em = self.ctx, self.ctx.em
        assert decl.body is not None  # the parser gives a control its apply block
        inst = Instance(decl, decl.name, role)
        env = Env(None, Frame(ret="return;"), inst)
        bind_params(ctx, decl, env)
        self.digest_reads = []
        body = f"p4_{role}_body" if role == "ingress" else f"p4_{role}"
        with em.function(f"static void {body}(struct cdp_state *st, struct cdp_packet *ctx, "
                         "void *hdr_, void *meta_, void *sm_)"):
            em.line(f"/* control {decl.name} */")
            for name in ("hdr", "meta", "sm"):  # sm too: verify_checksum sets checksum_error
                em.decls.append(f"{ctypes_[name]} *{name} = {name}_;")
            em.line("(void)st; (void)ctx; (void)hdr; (void)meta; (void)sm;")
            self.instance_setup(inst, env)
            ctx.stmt.block(decl.body.stmts, env)
        if role == "ingress":
            self._digest_epilogue(ctypes_)

    def _digest_epilogue(self, ctypes_: dict[str, str]) -> None:
        """p4_ingress: the body, then the fields of the last digest() it called, read as
        ingress ends (as BMv2 reads a digest's field list)."""
        em = self.ctx.em
        with em.function("static void p4_ingress(struct cdp_state *st, struct cdp_packet *ctx, "
                         "void *hdr_, void *meta_, void *sm_)"):
            for name in ("hdr", "meta", "sm"):
                em.decls.append(f"{ctypes_[name]} *{name} = {name}_;")
            em.line("(void)hdr; (void)meta; (void)sm;")
            em.line("p4_ingress_body(st, ctx, hdr_, meta_, sm_);")
            with em.block("switch (ctx->digest)"):
                for call, number, values in self.digest_reads:
                    em.line(f"case {call}:")
                    em.line(f"    ctx->digest_number = {number};")
                    for j, v in enumerate(values):
                        em.line(f"    ctx->digest_values[{j}] = (uint64_t){v};")
                    em.line(f"    ctx->digest_count = {len(values)};")
                    em.line("    break;")
                em.line("default:")
                em.line("    break;")

    def instance_setup(self, inst: Instance, env: Env) -> None:
        """A control instance's locals: its variables declared, its extern instances known."""
        self.prefixes[id(inst.decl)] = inst.prefix
        for loc in inst.decl.locals:
            if isinstance(loc, A.VarDecl):
                self.ctx.stmt.stmt(loc, env)

    # ---- names -------------------------------------------------------------------------------
    def action_name(self, sym: ActionSym) -> str:
        owner = sym.owner
        prefix = self.prefixes.get(id(owner)) if owner is not None else None
        return local_name(sym.decl, prefix)

    def instance_name(self, obj: A.Expr, env: Env) -> str:
        """The control-plane name of the extern instance `obj` names."""
        sym = obj.ref
        if not isinstance(sym, InstanceSym):
            raise UnsupportedConstruct(obj.pos, "extern object passed around")
        scope = self.ctx.info.global_scope
        if scope is not None and scope.names.get(sym.name) is sym:
            return local_name(sym.decl, None)
        if env.instance.decl.scope.names.get(sym.name) is sym:
            return local_name(sym.decl, env.instance.prefix)
        raise UnsupportedConstruct(obj.pos, f"extern instance {sym.name} here")

    def register(self, obj: A.Expr, env: Env) -> int:
        return _number(self.layout.registers, self.instance_name(obj, env))

    def counter(self, obj: A.Expr, env: Env) -> int:
        return _number(self.layout.counters, self.instance_name(obj, env))

    # ---- calls -------------------------------------------------------------------------------
    def call_stmt(self, c: A.Call, env: Env) -> None:
        if c.kind == "action":
            self.inline_action(c.func.ref, c.bound, env)
        elif c.kind == "table_apply":
            assert isinstance(c.func, A.Member)  # `t.apply()`
            self.table_apply(c.func.expr.ref.decl, env)
        elif c.kind == "control_apply":
            self.hoist_args(c, env)
            self.inline_control(c, env)
        elif c.kind == "stack_method":
            self.stack_method(c, env)
        else:
            raise UnsupportedConstruct(c.pos, f"a call of kind {c.kind} in C")

    def stack_method(self, c: A.Call, env: Env) -> None:
        """push_front(n) and pop_front(n), as rt.HeaderStack: elements shift, the ones
        shifted in become invalid (their fields kept), next_index moves within the stack."""
        assert isinstance(c.func, A.Member)  # `stack.push_front(n)`
        count = c.args[0].expr
        t = c.func.expr.type
        assert count is not None and isinstance(t, StackType)
        n, size = count.const, t.size
        st = self.ctx.stmt.lvalue(c.func.expr, env)
        em = self.ctx.em
        if c.func.name == "push_front":
            with em.block(f"for (int i = {size - 1}; i >= 0; i--)"):
                em.line(f"if (i >= {n}) {st}.items[i] = {st}.items[i - {n}];")
                em.line(f"else {st}.items[i].valid_ = 0;")
            em.line(f"{st}.next_index = {st}.next_index + {n} < {size} ? "
                    f"{st}.next_index + {n} : {size};")
        elif c.func.name == "pop_front":
            with em.block(f"for (int i = 0; i < {size}; i++)"):
                em.line(f"if (i + {n} < {size}) {st}.items[i] = {st}.items[i + {n}];")
                em.line(f"else {st}.items[i].valid_ = 0;")
            em.line(f"{st}.next_index = {st}.next_index > {n} ? {st}.next_index - {n} : 0;")
        else:
            raise UnsupportedConstruct(c.pos, f"{c.func.name} in C")

    def hoist_args(self, c: A.Call, env: Env) -> None:
        for _, a in getattr(c, "bound", []):
            if a is not None:
                self.ctx.stmt.hoist(a, env)

    def bind_params(self, bound, env: Env, inner: Env, by_ref_ok: bool) -> list[str]:
        """Copy-in: bind the parameters in `inner`; returns the copy-out lines."""
        em = self.ctx.em
        copyouts: list[str] = []
        refs = [a for p, a in bound if a is not None and p.direction in ("inout", "out")]
        for p, a in bound:
            sym = inner_sym(p)
            assert sym is not None  # the checker declared the parameter
            t = sym.type
            aggregate = isinstance(t, (StructType, StackType))
            if a is not None and aggregate and by_ref_ok and p.direction in ("", "in", "inout") \
                    and _simple_path(a) and not _overlaps(a, refs):
                inner.bind(sym, self.ctx.stmt.lvalue(a, env))
                continue
            if wide(t) or (scalar_ctype(t) is None and not aggregate):
                raise UnsupportedConstruct(p.pos, f"a parameter of type {t} in C")
            name = em.declare(self.ctx.types.local(t), p.name, "{0}" if aggregate else "0")
            inner.bind(sym, name)
            if a is None or p.direction == "out":
                em.line(f"memset(&{name}, 0, sizeof {name});" if aggregate else f"{name} = 0;")
            else:
                self.ctx.stmt.assign(p.pos, name, t, a, env)
            if a is not None and p.direction in ("out", "inout"):
                copyouts.extend(self.capture(
                    lambda a=a, name=name: self.ctx.stmt.store(a, name, env)))
        return copyouts

    def capture(self, fn) -> list[str]:
        """The lines fn emits, instead of emitting them."""
        em = self.ctx.em
        saved = em.lines, em.level
        em.lines, em.level = [], 0
        try:
            fn()
            return em.lines
        finally:
            em.lines, em.level = saved

    def run_inlined(self, stmts: list[A.Stmt], inner: Env, copyouts: list[str]) -> None:
        """An inlined body; a `return` in it jumps to its end, before the copy-outs."""
        em = self.ctx.em
        end = em.fresh("end") if _has_return(stmts) else None
        if end is not None:
            inner.frame.ret = f"goto {end};"
        with em.block(""):
            self.ctx.stmt.block(stmts, inner)
        if end is not None:
            em.label(end)
        for line in copyouts:
            em.line(line)

    def inline_action(self, sym: ActionSym, bound, env: Env,
                      data: list[str] | None = None) -> None:
        """An action inlined; `data`: the C values of its action-data parameters when a table
        runs it."""
        frame = Frame(ret="")
        inner = Env(env, frame)
        params = sym.decl.params
        if data is not None:
            for p, value in zip([p for p in params if not p.direction], data, strict=True):
                t = p.sym.type
                ctype = scalar_ctype(t)
                if ctype is None or (isinstance(t, Bits) and t.signed):
                    raise UnsupportedConstruct(p.pos, f"action data of type {t} in C")
                name = self.ctx.em.declare(ctype, p.name)
                w = key_width(t)
                self.ctx.em.line(f"{name} = ({ctype})({value} & {mask(w)});")
                inner.bind(inner_sym(p), name)
        frame.copyouts = self.bind_params(list(bound or []), env, inner, by_ref_ok=False)
        self.run_inlined(sym.decl.body.stmts, inner, frame.copyouts)

    def inline_control(self, c: A.Call, env: Env) -> None:
        assert isinstance(c.func, A.Member)  # `instance.apply(...)`
        isym = c.func.expr.ref
        if not isinstance(isym, InstanceSym) or not isinstance(isym.type, BlockType) \
                or not isinstance(isym.type.decl, D.ControlDecl):
            raise UnsupportedConstruct(c.pos, "applying a control passed as a constructor "
                                              "argument in C")
        decl = isym.type.decl
        assert decl.body is not None
        inst = Instance(decl, local_name(isym.decl, env.instance.prefix))
        frame = Frame(ret="")
        inner = Env(env, frame, inst)
        frame.copyouts = self.bind_params(c.bound, env, inner, by_ref_ok=True)
        self.instance_setup(inst, inner)
        self.run_inlined(decl.body.stmts, inner, frame.copyouts)

    # ---- tables ------------------------------------------------------------------------------
    def table_slot(self, decl: D.TableDecl, env: Env) -> TableSlot:
        name = local_name(decl, env.instance.prefix)
        slot = self.layout.tables.get(name)
        if slot is None:
            keys = [k for k in decl.keys or [] if k.match_kind != "selector"]
            actions = [self.action_name(r.sym) for r in table_actions(self.ctx, decl)]
            slot = TableSlot(len(self.layout.tables), name, [key_width(k.expr.type) for k in keys],
                             actions)
            for a in actions:
                self.layout.action(a)
            impl = decl.props.get("implementation")
            if impl is not None:
                if isinstance(impl.value, A.Construct):
                    raise UnsupportedConstruct(impl.pos, "an action profile declared in its "
                                                         "table's property, in C")
                slot.profile = _number(self.layout.profiles,
                                       self.instance_name(impl.value, env))
            for prop in ("meters",):
                if decl.props.get(prop) is not None:
                    raise UnsupportedConstruct(decl.props[prop].pos, "direct meters in C")
            self.layout.tables[name] = slot
        return slot

    def table_apply(self, decl: D.TableDecl, env: Env) -> tuple[str, str]:
        """A table applied; returns the C locals of its hit flag and the number of the action
        it ran (-1: none)."""
        ctx, em = self.ctx, self.ctx.em
        slot = self.table_slot(decl, env)
        keys = [k for k in decl.keys or [] if k.match_kind != "selector"]
        for k in decl.keys or []:
            ctx.stmt.hoist(k.expr, env)
        hit = em.declare("int", "hit")
        act = em.declare("int32_t", "act", "-1")
        e = em.declare("const struct cdp_entry *", "e", "NULL")
        em.line(f"/* table {slot.name} */")
        if keys:
            size = sum(nbytes(w) for w in slot.key_widths)
            key = em.fresh("key")
            em.decls.append(f"uint8_t {key}[{size}];")
            off = 0
            for k, w in zip(keys, slot.key_widths, strict=True):
                self._key_field(k.expr, w, f"{key} + {off}", env)
                off += nbytes(w)
            v = em.declare("uint64_t", "v")
            em.line(f"{hit} = cdp_table_lookup(st->tables[{slot.index}], {key}, &{v}, NULL);")
            with em.block(f"if ({hit})"):
                if decl.props.get("counters") is not None:  # its direct counter counts hits
                    em.line(f"struct cdp_entry *entry = (struct cdp_entry *)(uintptr_t){v};")
                    em.line("entry->packets += 1;")
                    em.line("entry->bytes += ctx->length;")
                em.line(f"{e} = (const struct cdp_entry *)(uintptr_t){v};")
            with em.block("else"):
                em.line(f"{e} = st->defaults[{slot.index}];")
        else:  # a keyless table always runs its default action
            em.line(f"{hit} = 0;")
            em.line(f"{e} = st->defaults[{slot.index}];")
        if slot.profile >= 0:
            h = "0"
            selectors = [k.expr for k in decl.keys or [] if k.match_kind == "selector"]
            if selectors:
                h = ctx.externs_gen.selector_hash(slot, selector_algorithm(decl), selectors,
                                                  env)
            with em.block(f"if ({e} != NULL && {e}->ref != CDP_REF_ACTION)"):
                em.line(f"{e} = cdp_profile_select(st->profiles[{slot.profile}], {e}, {h}, st);")
        em.line(f"{act} = {e} != NULL ? {e}->action : -1;")
        self._dispatch(decl, slot, env, e, act)
        em.line(f"(void){hit};")
        return hit, act

    def _key_field(self, e: A.Expr, width: int, at: str, env: Env) -> None:
        em = self.ctx.em
        if wide(e.type):
            em.line(f"memcpy({at}, {self.ctx.stmt.lvalue(e, env)}, {nbytes(width)});")
            return
        v = self.ctx.stmt.value(e, env)
        if isinstance(e.type, BoolType):
            v = f"(uint64_t)({v} != 0)"
        elif isinstance(e.type, Bits) and e.type.signed:
            v = f"((uint64_t){v} & {mask(width)})"
        em.line(f"p4_store_be({at}, {nbytes(width)}, (uint64_t){v});")

    def _dispatch(self, decl: D.TableDecl, slot: TableSlot, env: Env, e: str, act: str) -> None:
        em = self.ctx.em
        with em.block(f"switch ({act})"):
            for r in table_actions(self.ctx, decl):
                number = self.layout.action(self.action_name(r.sym))
                n_data = len([p for p in r.sym.decl.params if not p.direction])
                if n_data > MAX_ARGS:
                    raise UnsupportedConstruct(r.sym.decl.pos, f"an action with more than "
                                                               f"{MAX_ARGS} data parameters, in C")
                em.line(f"case {number}: /* {self.action_name(r.sym)} */")
                with em.block(""):
                    data = [f"{e}->args[{i}]" for i in range(n_data)]
                    if n_data > 0:
                        em.line(f"if ({e}->nargs < {n_data}) break;")
                    self.inline_action(r.sym, getattr(r, "bound", []), env, data)
                    em.line("break;")
            em.line("default:")
            em.line("    break;")


def table_actions(ctx: CContext, decl: D.TableDecl) -> list[D.ActionRefDecl]:
    """The actions a table may run: its list, and NoAction when it has no default action and
    does not list NoAction (as backend/tables.py adds it)."""
    refs = list(decl.actions)
    if decl.props.get("default_action") is None and not any(r.name == "NoAction" for r in refs):
        scope = ctx.info.global_scope
        noaction = scope.lookup("NoAction") if scope is not None else None
        if isinstance(noaction, ActionSym):
            r = D.ActionRefDecl(decl.pos, "NoAction", None, [])
            r.sym = noaction
            refs.append(r)
    return refs


def selector_algorithm(decl: D.TableDecl) -> str:
    """The hash algorithm of the action selector a table's `implementation` names."""
    impl = decl.props["implementation"].value
    sym = impl.ref
    if not isinstance(sym, InstanceSym) or not isinstance(sym.type, ExternType) or \
            sym.type.decl.name != "action_selector":
        raise UnsupportedConstruct(impl.pos, "selector keys without an action_selector, in C")
    algo = sym.ctor_args[0]
    return algo.type.members[algo.const]
