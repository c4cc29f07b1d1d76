"""Control-plane names as p4c writes them, and the ControlPlaneModel built while generating."""

from __future__ import annotations

from .. import cpmodel as cp
from ..frontend import ast as A
from ..frontend import ast_decl as D
from ..frontend.types import BoolType, EnumType, bit_width


def local_name(decl, prefix: str | None) -> str:
    """Fully qualified name of a declaration inside a control instance `prefix`."""
    given = A.annotation_string(decl.annotations, "name")
    if given is not None:
        if given.startswith("."):
            return given[1:]
        return f"{prefix}.{given}" if prefix else given
    return f"{prefix}.{decl.name}" if prefix else decl.name


def key_name(k: D.KeyElement) -> str:
    given = A.annotation_string(k.annotations, "name")
    return given if given is not None else expr_text(k.expr)


def expr_text(e: A.Expr) -> str:
    if isinstance(e, A.Name):
        return ("." if e.top else "") + e.name
    if isinstance(e, A.Member):
        name = e.name
        base_t = e.expr.type
        annos = getattr(base_t, "field_annotations", {}).get(name, [])
        name = A.annotation_string(annos, "name") or name
        if name.startswith("."):  # an absolute @name replaces the path up to here
            return name[1:]
        return f"{expr_text(e.expr)}.{name}"
    if isinstance(e, A.TypeNameExpr):
        return e.name
    if isinstance(e, A.Index):
        return f"{expr_text(e.expr)}[{expr_text(e.index)}]"
    if isinstance(e, A.Slice):
        return f"{expr_text(e.expr)}[{expr_text(e.hi)}:{expr_text(e.lo)}]"
    if isinstance(e, A.Call) and isinstance(e.func, A.Member) and e.func.name == "isValid" \
            and not e.args:
        return f"{expr_text(e.func.expr)}.$valid$"
    if isinstance(e, A.Call):
        return f"{expr_text(e.func)}({', '.join(expr_text(a.expr) for a in e.args if a.expr)})"
    if isinstance(e, A.Const):
        return _literal_text(e)
    if isinstance(e, A.Binary):
        return f"{expr_text(e.left)} {e.op} {expr_text(e.right)}"
    if isinstance(e, A.Unary):
        return f"{e.op}{expr_text(e.expr)}"
    if isinstance(e, A.Cast):
        return f"({getattr(e.type, '__str__', lambda: '?')()}){expr_text(e.expr)}"
    if isinstance(e, A.BoolLit):
        return "true" if e.value else "false"
    return type(e).__name__


def _literal_text(e: A.Const) -> str:
    """A literal as p4c prints it: the source's base, no leading zeros."""
    text = e.text.replace("_", "").lower()
    prefix = ""
    if e.width is not None:
        prefix = f"{e.width}{'s' if e.signed else 'w'}"
        text = text.split("s" if e.signed else "w", 1)[1]
    if text.startswith("0x"):
        return f"{prefix}0x{e.value:x}"
    if text.startswith("0b"):
        return f"{prefix}0b{e.value:b}"
    if text.startswith("0o"):
        return f"{prefix}0o{e.value:o}"
    return f"{prefix}{e.value}"


def param_width(t) -> int:
    if isinstance(t, BoolType):
        return 1
    if isinstance(t, EnumType) and t.width is None:
        return 32
    return bit_width(t)


class ModelBuilder:
    def __init__(self, program: str):
        self.model = cp.ControlPlaneModel(program)
        self._actions: dict[str, cp.Action] = {}
        self.keys: dict[int, tuple] = {}  # id(model object) -> order key

    def action(self, decl: D.ActionDecl, name: str, key: tuple = (),
               in_table: bool = True) -> cp.Action:
        """Add an action once. An action only ever called directly has its (constant)
        arguments folded in by p4c, so it is listed without parameters."""
        params = [cp.Param(A.annotation_string(p.annotations, "name") or p.name,
                           _annos(p.annotations), _id(p.annotations), param_width(p.sym.type))
                  for p in decl.params if not p.direction] if in_table else []
        if key[-1:] == (-1,):  # a top-level action: p4c copies it to the front of the
            key = (*key[:1], -1)  # locals of the stage's control, nested ones inlined
        a = self._actions.get(name)
        if a is None:
            a = cp.Action(name, _annos(decl.annotations), _id(decl.annotations), params)
            self._actions[name] = a
            self.model.actions.append(a)
            self.keys[id(a)] = key
        elif in_table and not a.params:
            a.params = params
        return a

    def add(self, list_name: str, obj, key: tuple = ()) -> None:
        """Add an extern instance to the model's list `list_name` (`ControlPlaneModel.instances`)."""
        self.model.instances(list_name).append(obj)
        self.keys[id(obj)] = key

    def sort(self) -> None:
        """Put every list in p4c's order: by stage, then declaration position (stable)."""
        m = self.model
        m.tables.sort(key=lambda obj: self.keys.get(id(obj), ()))
        self._order_top_level_actions()
        lists: list[list] = [m.actions, m.counters, m.meters, m.registers,
                             *m.extern_lists.values(), m.action_profiles]
        for items in lists:
            items.sort(key=lambda obj: self.keys.get(id(obj), ()))

    def _order_top_level_actions(self) -> None:
        """p4c copies the top-level actions a control uses to the front of its locals in the
        order it meets them: the tables' action lists (in table order), then direct calls."""
        m = self.model
        by_name = {a.name: a for a in m.actions}
        rank: dict[int, int] = {}
        for table in m.tables:
            stage = self.keys.get(id(table), ())[:1]
            for ref in table.action_refs:
                a = by_name.get(ref.name)
                key = self.keys.get(id(a), ()) if a is not None else ()
                if key == (*stage, -1) and id(a) not in rank:
                    rank[id(a)] = len(rank)
        for a in m.actions:
            key = self.keys.get(id(a), ())
            if len(key) == 2 and key[1] == -1:
                self.keys[id(a)] = (*key, rank.get(id(a), len(rank)))


def _annos(annos: list[cp.Annotation]) -> list[cp.Annotation]:
    return [a for a in annos if a.name not in ("name", "id")]


def _id(annos: list[cp.Annotation]) -> int | None:
    a = A.annotation(annos, "id")
    if a is None:
        return None
    try:
        return int(a.body.strip(), 0)
    except ValueError:
        return None


annotations_of = _annos
explicit_id = _id
