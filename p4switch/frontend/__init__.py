"""The p4switch front end: preprocess -> parse (LALR grammar, p4.lark) -> typed IR (checker).

source.py      reading a source file: missing, unreadable, binary, too large -> one error
preprocess.py  C preprocessor with a line map back into the original files (pp_expr.py: #if)
nesting.py     the nesting limits, checked on the parse tree before any pass recurses
lexer.py       type-name feedback for the lexer, `>>` splitting in type arguments
parse.py       the LALR parser; build.py / build_code.py turn its tree into ast_decl.py / ast.py nodes
check*.py      the type checker: types.py, symbols.py, consteval.py; errors via diagnostics.py
"""
