"""Lark parse tree -> syntax tree (`ast`), with positions mapped to the original files."""

from __future__ import annotations

from lark import Token, v_args

from ..cpmodel import Annotation
from . import ast as A
from . import ast_decl as D
from .build_code import CodeBuilder
from .diagnostics import Pos, Reporter
from .literals import parse_int
from .preprocess import Preprocessed


def parse_annotation(tok: Token) -> Annotation:
    text = str(tok)[1:]
    if "(" in text:
        name, body = text.split("(", 1)
        return Annotation(name.strip(), body[: body.rfind(")")].strip())
    return Annotation(text.strip())


def _is_tok(x, *types: str) -> bool:
    return isinstance(x, Token) and x.type in types


@v_args(meta=True)
class Builder(CodeBuilder):
    def __init__(self, pre: Preprocessed, reporter: Reporter):
        super().__init__()
        self.pre = pre
        self.reporter = reporter

    def _pos(self, meta) -> Pos:
        if isinstance(meta, Token):
            return self.pre.pos(meta.line or 0, meta.column or 0)
        if getattr(meta, "empty", True):
            return self.pre.pos(0, 0)
        return self.pre.pos(meta.line, meta.column)

    @staticmethod
    def _strip(children):
        return [c for c in children if not (isinstance(c, Token) and c.type not in (
            "IDENTIFIER", "TYPE_IDENTIFIER", "NUMBER", "STRING", "CONST"))]

    # -- basics
    def start(self, meta, ch):
        return D.Program(self._pos(meta), [c for c in ch if isinstance(c, A.Node)],
                         self.pre.main_file)

    def annotations(self, meta, ch):
        return [parse_annotation(t) for t in ch]

    def name(self, meta, ch):
        return str(ch[0])

    # -- types
    def type_ref(self, meta, ch):
        return ch[0]

    def bool_type(self, meta, ch):
        return A.BaseTypeRef(self._pos(meta), "bool")

    def error_type(self, meta, ch):
        return A.BaseTypeRef(self._pos(meta), "error")

    def string_type(self, meta, ch):
        return A.BaseTypeRef(self._pos(meta), "string")

    def int_type(self, meta, ch):
        return A.BaseTypeRef(self._pos(meta), "int")

    def bit1_type(self, meta, ch):
        return A.BaseTypeRef(self._pos(meta), "bit", 1)

    def bit_type(self, meta, ch):
        return A.BaseTypeRef(self._pos(meta), "bit", parse_int(ch[-1])[0])

    def sint_type(self, meta, ch):
        return A.BaseTypeRef(self._pos(meta), "sint", parse_int(ch[-1])[0])

    def varbit_type(self, meta, ch):
        return A.BaseTypeRef(self._pos(meta), "varbit", parse_int(ch[-1])[0])

    def bit_expr_type(self, meta, ch):
        return A.BaseTypeRef(self._pos(meta), "bit", ch[-1])

    def named_type(self, meta, ch):
        return A.NamedTypeRef(self._pos(meta), str(ch[0]))

    def specialized_type(self, meta, ch):
        return A.NamedTypeRef(self._pos(meta), str(ch[0]), ch[-1])

    def stack_type(self, meta, ch):
        return A.StackTypeRef(self._pos(meta), ch[0], ch[1])

    def tuple_type(self, meta, ch):
        return A.TupleTypeRef(self._pos(meta), ch[-1])

    def type_args(self, meta, ch):
        return list(ch)

    def dontcare_type(self, meta, ch):
        return A.DontCareTypeRef(self._pos(meta))

    def void_type(self, meta, ch):
        return A.VoidTypeRef(self._pos(meta))

    def type_or_void(self, meta, ch):
        return ch[0]

    def type_params(self, meta, ch):
        return [str(c) for c in ch if _is_tok(c, "TYPE_IDENTIFIER")]

    # -- declarations
    def const_decl(self, meta, ch):
        annos, _, tref, name, value = ch
        return A.ConstDecl(self._pos(meta), tref, name, value, annos or [])

    def _struct(self, meta, ch, kind):
        annos, _, name, _tparams, *fields = ch
        return D.StructLikeDecl(self._pos(meta), str(name), annos or [], kind, fields)

    def header_decl(self, meta, ch):
        return self._struct(meta, ch, "header")

    def struct_decl(self, meta, ch):
        return self._struct(meta, ch, "struct")

    def union_decl(self, meta, ch):
        return self._struct(meta, ch, "header_union")

    def struct_field(self, meta, ch):
        annos, tref, name = ch
        return D.FieldDecl(self._pos(meta), name, tref, annos or [])

    def enum_decl(self, meta, ch):
        annos, _, w, name, *members = ch
        members = [m for m in members if m is not None]
        width, signed = w if w is not None else (None, False)
        return D.EnumDecl(self._pos(meta), str(name), annos or [], width, members, signed)

    def enum_width(self, meta, ch):
        return parse_int(ch[-1])[0], False

    def enum_width_signed(self, meta, ch):
        return parse_int(ch[-1])[0], True

    def enum_member(self, meta, ch):
        _annos, name, value = ch
        return (name, value, self._pos(meta))

    def typedef_decl(self, meta, ch):
        annos, _, tref, name = ch
        return D.TypedefDecl(self._pos(meta), name, annos or [], tref)

    def newtype_decl(self, meta, ch):
        annos, _, tref, name = ch
        return D.TypedefDecl(self._pos(meta), name, annos or [], tref, newtype=True)

    def error_decl(self, meta, ch):
        return D.ErrorDecl(self._pos(meta), "error", [], [c for c in ch[1:] if isinstance(c, str)
                                                          and not isinstance(c, Token)])

    def match_kind_decl(self, meta, ch):
        return D.MatchKindDecl(self._pos(meta), "match_kind", [],
                               [c for c in ch[1:] if isinstance(c, str) and not isinstance(c, Token)])

    def extern_obj(self, meta, ch):
        annos, _, name, tparams, *methods = ch
        decl = D.ExternObjDecl(self._pos(meta), str(name), annos or [], tparams or [])
        for m in methods:
            if isinstance(m, D.FunctionProto):
                decl.methods.append(m)
            else:
                decl.ctors.append(m)
        return decl

    def method_decl(self, meta, ch):
        annos, proto = ch
        proto.annotations = annos or []
        return proto

    def ctor_decl(self, meta, ch):
        return ch[-1]

    def extern_func(self, meta, ch):
        annos, _, proto = ch
        proto.annotations = annos or []
        return D.ExternFuncDecl(proto.pos, proto.name, proto.annotations, proto)

    def function_proto(self, meta, ch):
        ret, name, tparams, params = ch
        return D.FunctionProto(self._pos(meta), name, [], ret, tparams or [], params)

    def function_decl(self, meta, ch):
        annos, proto, body = ch
        return D.FunctionDecl(proto.pos, proto.name, annos or [], proto, body)

    def package_decl(self, meta, ch):
        annos, _, name, tparams, params = ch
        return D.BlockTypeDecl(self._pos(meta), str(name), annos or [], "package", tparams or [],
                               params)

    def instantiation(self, meta, ch):
        annos, tref, args, name, *init = ch
        if any(i is not None for i in init):
            self.reporter.unsupported(self._pos(meta), "extern object initializer block")
        return D.Instantiation(self._pos(meta), name, annos or [], tref, args)

    def params(self, meta, ch):
        return [c for c in ch if c is not None]

    def param(self, meta, ch):
        annos, direction, tref, name, default = ch
        return D.Param(self._pos(meta), name, tref, direction or "", annos or [], default)

    def direction(self, meta, ch):
        return str(ch[0])

    # -- parsers
    def parser_type(self, meta, ch):
        annos, _, name, tparams, params = ch
        return D.BlockTypeDecl(self._pos(meta), str(name), annos or [], "parser", tparams or [],
                               params)

    def ctor_params(self, meta, ch):
        return ch[0]

    def parser_decl(self, meta, ch):
        annos, _, name, tparams, params, ctor, *rest = ch
        states = [r for r in rest if isinstance(r, D.ParserState)]
        local = [r for r in rest if not isinstance(r, D.ParserState)]
        return D.ParserDecl(self._pos(meta), str(name), annos or [], tparams or [], params,
                            ctor or [], local, states)

    def value_set_decl(self, meta, ch):
        self.reporter.unsupported(self._pos(meta), "value_set")
        return A.Empty(self._pos(meta))

    def parser_state(self, meta, ch):
        annos, _, name, *stmts, nxt = ch
        if nxt is None:  # no transition statement: transition reject
            nxt = "reject"
        return D.ParserState(self._pos(meta), name, annos or [], stmts, nxt)

    def parser_block(self, meta, ch):
        return A.Block(self._pos(meta), list(ch[1:]))

    def transition_direct(self, meta, ch):
        return ch[-1]

    def transition_select(self, meta, ch):
        return ch[-1]

    def select_expr(self, meta, ch):
        return D.SelectExpr(self._pos(meta), ch[1], list(ch[2:]))

    def select_case(self, meta, ch):
        return D.SelectCase(self._pos(meta), ch[0], ch[1])

    def keyset(self, meta, ch):
        return [ch[0]]

    def tuple_keyset(self, meta, ch):
        return list(ch)

    def simple_keyset(self, meta, ch):
        return ch[0]

    def mask_keyset(self, meta, ch):
        return A.Mask(self._pos(meta), ch[0], ch[2])

    def range_keyset(self, meta, ch):
        return A.Range(self._pos(meta), ch[0], ch[2])

    def default_keyset(self, meta, ch):
        return A.Default(self._pos(meta))

    # -- controls
    def control_type(self, meta, ch):
        annos, _, name, tparams, params = ch
        return D.BlockTypeDecl(self._pos(meta), str(name), annos or [], "control", tparams or [],
                               params)

    def control_decl(self, meta, ch):
        annos, _, name, tparams, params, ctor, *rest = ch
        body = rest[-1]
        local = [r for r in rest[:-1] if isinstance(r, A.Node)]
        return D.ControlDecl(self._pos(meta), str(name), annos or [], tparams or [], params,
                             ctor or [], local, body)

    def action_decl(self, meta, ch):
        annos, _, name, params, body = ch
        return D.ActionDecl(self._pos(meta), name, annos or [], params, body)

    def table_decl(self, meta, ch):
        annos, _, name, *props = ch
        t = D.TableDecl(self._pos(meta), name, annos or [])
        for kind, value in props:
            if kind == "key":
                t.keys = value
            elif kind == "actions":
                t.actions = value
            elif kind == "entries":
                t.entries, t.entries_const = value
            else:
                if value.name in t.props:
                    self.reporter.error(value.pos, f"duplicate table property {value.name}")
                t.props[value.name] = value
        return t

    def key_prop(self, meta, ch):
        return ("key", list(ch[1:]))

    def key_elem(self, meta, ch):
        expr, kind, annos = ch
        return D.KeyElement(self._pos(meta), expr, kind, annos or [])

    def actions_prop(self, meta, ch):
        return ("actions", list(ch[1:]))

    def action_ref(self, meta, ch):
        annos, name, args = ch
        return D.ActionRefDecl(self._pos(meta), name, args, annos or [])

    def entries_prop(self, meta, ch):
        _annos, const, _kw, *entries = ch
        return ("entries", (list(entries), const is not None))

    def entry(self, meta, ch):
        annos, keyset, name, args, annos2 = ch
        return D.EntryDecl(self._pos(meta), keyset, name, args or [], (annos or []) + (annos2 or []))

    def other_prop(self, meta, ch):
        annos, const, name, value = ch
        return ("prop", D.TableProp(self._pos(meta), str(name), value, const is not None,
                                    annos or []))
