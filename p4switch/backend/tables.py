"""Tables: control-plane model entries and the generated apply code (a generator over the shared
`GenContext`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import cpmodel as cp
from ..frontend import ast as A
from ..frontend import ast_decl as D
from ..frontend.diagnostics import UnsupportedConstruct
from ..frontend.symbols import ActionSym
from ..frontend.types import BoolType, ErrorType, bit_width
from .env import Env
from .model import annotations_of, explicit_id, key_name, local_name

if TYPE_CHECKING:
    from .context import GenContext


class TableInfo:
    def __init__(self, name: str, var: str, model: cp.Table):
        self.name = name
        self.var = var
        self.model = model
        self.profile_var: str | None = None
        self.selector = False
        self.meter_decl = None  # the direct_meter instance's Instantiation


class TableGen:
    """Tables: model entries and apply code."""

    def __init__(self, ctx: GenContext) -> None:
        self.ctx = ctx

    def bind_table(self, decl: D.TableDecl, env: Env) -> TableInfo:
        inst = env.instance
        key = (inst.prefix, id(decl))
        info = self.ctx.table_infos.get(key)
        if info is not None:
            return info
        name = local_name(decl, inst.prefix)
        var = self.ctx.program.closure(f"_tables[{name!r}]", "T")
        m = cp.Table(name, annotations_of(decl.annotations), explicit_id(decl.annotations))
        if sum(k.match_kind == "lpm" for k in decl.keys or []) > 1:  # as p4c-bm2-ss refuses it
            raise UnsupportedConstruct(decl.pos, f"multiple LPM keys in table {decl.name} "
                                                 "(BMv2 matches at most one field by prefix)")
        for k in decl.keys or []:
            t = k.expr.type
            self.ctx.program._note_enums(t)
            mf = cp.MatchField(key_name(k), annotations_of(k.annotations),
                               explicit_id(k.annotations),
                               key_width(t), k.match_kind)
            (m.selector_fields if k.match_kind == "selector" else m.match_fields).append(mf)
        refs = list(decl.actions)
        default = decl.props.get("default_action")
        if default is None and not any(r.name == "NoAction" for r in refs):
            noaction = self.ctx.global_scope.lookup("NoAction")
            if isinstance(noaction, ActionSym):
                r = D.ActionRefDecl(decl.pos, "NoAction", None,
                                    [cp.Annotation("defaultonly")])
                r.sym = noaction
                refs.append(r)
        decl.all_actions = refs
        for r in refs:
            sym = r.sym
            aname = self.ctx.call.action_name(sym)
            self.ctx.model.action(sym.decl, aname, inst.position(sym.decl))
            for p in sym.decl.params:
                if not p.direction:
                    self.ctx.program._note_enums(p.sym.type)
            scope = ("TABLE_ONLY" if A.annotation(r.annotations, "tableonly") else
                     "DEFAULT_ONLY" if A.annotation(r.annotations, "defaultonly") else
                     "TABLE_AND_DEFAULT")
            m.action_refs.append(cp.ActionRef(aname, list(r.annotations), None, scope))
        if default is not None:
            call = default.value
            assert isinstance(call, A.Call)  # the checker made it one
            m.default_action = cp.ActionCall(
                self.ctx.call.action_name(call.func.ref),
                tuple(_const_int(a.expr) for a in call.args))
            m.const_default_action = default.const
        else:
            m.default_action = cp.ActionCall("NoAction")
        size = decl.props.get("size")
        if size is not None:
            m.size = size.value.const
        impl = decl.props.get("implementation")
        info = TableInfo(name, var, m)
        if impl is not None:
            isym = impl.value.ref
            pname = self.ctx.program.instance_name(isym, inst.prefix, _inline_key(impl, inst, decl))
            m.implementation = pname
            self.ctx.profile_tables.setdefault(pname, []).append(name)
            info.profile_var = self.ctx.program.closure(f"_profiles[{pname!r}]", "P")
            info.selector = isym.type.decl.name == "action_selector"
        if decl.props.get("counters") is not None:
            isym = decl.props["counters"].value.ref
            m.direct_counter = self.ctx.program.instance_name(
                isym, inst.prefix, _inline_key(decl.props["counters"], inst, decl))
            self.ctx.direct_owner[id(isym)] = name
        if decl.props.get("meters") is not None:
            isym = decl.props["meters"].value.ref
            m.direct_meter = self.ctx.program.instance_name(
                isym, inst.prefix, _inline_key(decl.props["meters"], inst, decl))
            self.ctx.direct_owner[id(isym)] = name
            info.meter_decl = isym
        if decl.entries is not None:
            m.const_entries = [self.const_entry(decl, e) for e in decl.entries]
            _apply_priorities(decl.entries, m.const_entries)
        idle = decl.props.get("support_timeout")
        m.idle_timeout = bool(idle is not None and idle.value.const)
        self.ctx.model.add("tables", m, inst.position(decl))
        self.ctx.table_infos[key] = info
        return info

    def const_entry(self, decl: D.TableDecl, e: D.EntryDecl) -> cp.ConstEntry:
        keys = [k for k in decl.keys or [] if k.match_kind != "selector"]
        fms: list[cp.FieldMatch | None] = []
        for k, ks in zip(keys, e.keyset, strict=False):
            w = key_width(k.expr.type)
            fms.append(_field_match(k.match_kind, ks, w))
        ref = next(r for r in decl.all_actions if r.name == e.action)
        call = cp.ActionCall(self.ctx.call.action_name(ref.sym), tuple(_const_int(a.expr) for a in e.args))
        return cp.ConstEntry(fms, call)

    # ---- apply ---------------------------------------------------------------------------
    def table_apply(self, decl: D.TableDecl, env: Env) -> tuple[str, str]:
        """Emit a table apply; returns the names of the hit flag and the action-name local."""
        info = self.bind_table(decl, env)
        em = self.ctx.em
        hit, entry, act, name = em.fresh("hit"), em.fresh("e"), em.fresh("a"), em.fresh("n")
        keys = [k for k in decl.keys or [] if k.match_kind != "selector"]
        for k in decl.keys or []:
            self.ctx.stmt.hoist(k.expr, env)
        color = em.fresh("color") if info.meter_decl is not None else None
        # BMv2 has no default action for a table with an action profile or selector: p4c-bm2-ss
        # drops `default_action` ("Target does not support default_action ... due to action
        # profiles") and MatchTableIndirect::lookup returns its empty default entry on a miss.
        miss = "None" if info.profile_var else f"{info.var}.default_entry.action"
        if not keys:  # a keyless table always runs its default action
            em.line(f"{hit} = False")
            em.line(f"{act} = {miss}")
            if color:
                em.line(f"{color} = None")
            self._dispatch(decl, info, env, hit, act, name, color)
            return hit, name
        vals = [self._key_value(k.expr, env) for k in keys]
        em.line(f"{entry} = {info.var}.lookup(({''.join(v + ', ' for v in vals)}))")
        em.line(f"if {entry} is None:")
        with em.indent():
            em.line(f"{hit} = False")
            em.line(f"{act} = {miss}")
            if color:
                em.line(f"{color} = None")
        em.line("else:")
        with em.indent():
            em.line(f"{hit} = True")
            em.line(f"{act} = {entry}.action")
            if info.model.direct_counter:
                c = em.fresh("dc")
                em.line(f"{c} = {entry}.direct_counter")
                em.line(f"{c}[0] += 1")
                em.line(f"{c}[1] += ctx.length")
            if color:
                em.line(f"{color} = {entry}.meter.execute(ctx.length, _now()) "
                        f"if {entry}.meter is not None else 0")
        self._dispatch(decl, info, env, hit, act, name, color)
        return hit, name

    def _dispatch(self, decl: D.TableDecl, info: TableInfo, env: Env, hit: str, act: str,
                  name: str, color: str | None) -> None:
        """Resolve an action profile reference, then run the chosen action."""
        em = self.ctx.em
        if info.profile_var:
            em.line(f"if {act} is not None and {act}.__class__ is not _ActionCall:")
            with em.indent():
                h = "0"
                if info.selector:
                    h = self._selector_hash(decl, info, env)
                em.line(f"{act} = {info.profile_var}.select({act}, {h})")
            em.line(f"{name} = {act}.action if {act} is not None else None")
        else:
            em.line(f"{name} = {act}.action")
        em.line("if _LOG is not None:")
        with em.indent():
            label = repr(f"table {info.name}: ")
            em.line(f"_LOG({label} + ('hit' if {hit} else 'miss') + ', action ' + str({name}))")
        first = True
        for r in decl.all_actions:
            aname = self.ctx.call.action_name(r.sym)
            em.line(f"{'if' if first else 'elif'} {name} == {aname!r}:")
            first = False
            with em.indent():
                if color:
                    self.ctx.meter_colors[id(info.meter_decl)] = color
                self.ctx.call.inline_action(r.sym, getattr(r, "bound", []), env,
                                   data_args=f"{act}.args")

    def _key_value(self, e: A.Expr, env: Env) -> str:
        v = self.ctx.expr.ex(e, env)
        return f"int({v})" if isinstance(e.type, BoolType) else v

    def _selector_hash(self, decl: D.TableDecl, info: TableInfo, env: Env) -> str:
        fields = [k.expr for k in decl.keys or [] if k.match_kind == "selector"]
        # ActionProfile.selector_hash inlined: the algorithm over the packed key fields
        algo = self.ctx.program.closure(f"{info.profile_var}._hash", "Ph")
        return f"({algo}({self.ctx.extern.packed_list(fields, env)}) & 0xffffffff)"


def _inline_key(prop: D.TableProp, inst, table: D.TableDecl) -> tuple | None:
    """An extern instantiated in a table property is ordered where the table is."""
    return inst.position(table) if isinstance(prop.value, A.Construct) else None


def _apply_priorities(decls: list[D.EntryDecl], entries: list[cp.ConstEntry]) -> None:
    """`@priority(n)` on const entries (p4c + BMv2: the smallest n wins; an entry without one
    has its 1-based position) -> P4Runtime priorities, where the largest wins."""
    given = [A.annotation(d.annotations, "priority") for d in decls]
    if not any(given):
        return
    bmv2 = [int(g.body) if g is not None else i + 1 for i, g in enumerate(given)]
    top = max(bmv2) + 1
    for entry, p in zip(entries, bmv2, strict=True):
        entry.priority = top - p


def _const_int(e: A.Expr | None) -> int:
    if e is None or e.const is None:
        raise UnsupportedConstruct(e.pos if e else None, "non-constant action argument")
    return int(e.const) & ((1 << 64) - 1) if isinstance(e.const, bool) else int(e.const)


def key_width(t) -> int:
    """Bits of a key field: bool 1, error 32 (BMv2's error codes), else the type's width."""
    if isinstance(t, BoolType):
        return 1
    if isinstance(t, ErrorType):
        return 32
    return bit_width(t)


def _field_match(kind: str, ks: A.Expr, w: int) -> cp.FieldMatch | None:
    full = (1 << w) - 1
    if isinstance(ks, A.Default):
        return None
    if isinstance(ks, A.Mask):
        value, mask = int(ks.value.const) & full, int(ks.mask.const) & full
        if kind == "lpm":
            plen = bin(mask).count("1")
            return cp.FieldMatch("lpm", value=value & mask, prefix_len=plen) if plen else None
        if kind == "ternary":
            return cp.FieldMatch("ternary", value=value & mask, mask=mask) if mask else None
        raise UnsupportedConstruct(ks.pos, f"mask keyset on a {kind} key")
    if isinstance(ks, A.Range):
        if kind != "range":
            raise UnsupportedConstruct(ks.pos, f"range keyset on a {kind} key")
        return cp.FieldMatch("range", low=int(ks.lo.const), high=int(ks.hi.const))
    value = int(ks.const) & full
    if kind in ("exact", "optional"):
        return cp.FieldMatch(kind, value=value)
    if kind == "lpm":
        return cp.FieldMatch("lpm", value=value, prefix_len=w)
    if kind == "ternary":
        return cp.FieldMatch("ternary", value=value, mask=full)
    if kind == "range":
        return cp.FieldMatch("range", low=value, high=value)
    raise UnsupportedConstruct(ks.pos, f"{kind} key in const entries")

