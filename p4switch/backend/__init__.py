"""Code generation: the typed IR of a P4 program -> one Python module, exec'd once.

program.py  stages, functions and instances (ProgramGen), `generate()` and the module's `make()`
context.py  GenContext: the state the generators share, and the generators themselves
structs.py  header/struct classes (extract, emit, copy)
expr.py     expressions; stmt.py statements and evaluation order; calls.py inlining
tables.py   table apply and the table part of the control-plane model (model.py: names)
externs.py  v1model/core externs; parser.py parser state machines
rt.py       small helpers the generated code calls per packet
"""
