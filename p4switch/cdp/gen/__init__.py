"""The C back end: a checked P4 program -> C source for the C data plane (../README.md).

types.py    the program's types as C structs (and the order tests read their fields in)
headers.py  a header's bytes <-> its struct, by backend/layout.py's units
expr.py     expressions with P4's bit<W>/int<W> semantics; stmt.py statements
parser.py   the parser state machine; deparser.py the deparser
program.py  the whole source, its entry points, and loading it (c_source, load_program)

The Python pipeline (p4switch/backend) stays the reference: what this back end generates
computes exactly what it does, and what it cannot generate is refused (CUnsupported).
"""

from .program import CProgram, CUnsupported, ParseResult, c_source, generate, load_program, program_info

__all__ = ["CProgram", "CUnsupported", "ParseResult", "c_source", "generate", "load_program",
           "program_info"]
