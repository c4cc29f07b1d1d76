"""How deeply a program may nest, checked on the parse tree before any pass recurses into it.

The passes after the parser (syntax tree, type checks, code generation) recurse once per
level, and the generated Python may hold at most 100 levels of indentation and 200 of
parentheses. So a program may nest at most
- `MAX_STATEMENT_NESTING` (64) statements: `if` (an `else if` is one level deeper, as in
  the generated code), `switch`, `for` and blocks inside blocks;
- `MAX_EXPRESSION_NESTING` (64) operators, calls, casts and indexes in one expression
  (`a + b + c` is two levels: `(a + b) + c`);
- `MAX_TREE_DEPTH` (250) levels of its parse tree in all (types, initializers, ...).
A program past one of them gets one error at the construct that crosses it.
"""

from __future__ import annotations

from lark import Token, Tree

MAX_STATEMENT_NESTING = 64
MAX_EXPRESSION_NESTING = 64
MAX_TREE_DEPTH = 250

_STATEMENTS = frozenset({"if_stmt", "switch_stmt", "for_stmt"})
_BLOCKS = frozenset({"block", "parser_block"})
_EXPRESSIONS = frozenset({"binop", "gt", "shr", "cond", "unop", "cast", "index", "slice",
                          "call", "call_targs", "list_expr", "struct_init", "construct"})


def too_deep(tree: Tree) -> tuple[Tree | Token, str] | None:
    """The first node (in source order) that nests past a limit, and what it passes."""
    # (node, statements, expressions, depth, parent rule); iterative: nothing here recurses
    stack: list[tuple[Tree, int, int, int, str]] = [(tree, 0, 0, 1, "")]
    while stack:
        node, statements, expressions, depth, parent = stack.pop()
        rule = str(node.data)
        if rule in _STATEMENTS or (rule in _BLOCKS and parent in _BLOCKS):
            statements += 1
        if rule in _EXPRESSIONS:
            expressions += 1
        if statements > MAX_STATEMENT_NESTING:
            return node, f"statements nested more than {MAX_STATEMENT_NESTING} levels deep"
        if expressions > MAX_EXPRESSION_NESTING:
            return node, f"expression nested more than {MAX_EXPRESSION_NESTING} levels deep"
        if depth > MAX_TREE_DEPTH:
            return node, f"program nested more than {MAX_TREE_DEPTH} levels deep"
        for child in reversed(node.children):
            if isinstance(child, Tree):
                stack.append((child, statements, expressions, depth + 1, rule))
    return None


def position(node: Tree | Token) -> tuple[int, int]:
    """(line, column) of `node` in the parsed text, (0, 0) when it has none."""
    while isinstance(node, Tree) and node.meta.empty:
        children = [c for c in node.children if isinstance(c, (Tree, Token))]
        if not children:
            return 0, 0
        node = children[0]
    if isinstance(node, Token):
        return node.line or 0, node.column or 0
    return node.meta.line, node.meta.column
