"""Error messages: `file:line:col: message`, every error at once, `unsupported:` for what the
compiler does not implement, positions in the original file through #include."""

from __future__ import annotations

import pytest

from p4switch.compiler import P4CompileError, compile_source

PRELUDE = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; }
struct hs_t { h_t h; }
struct m_t { bit<8> x; }
parser P(packet_in pkt, out hs_t hdr, inout m_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout hs_t hdr, inout m_t m) { apply { } }
control E(inout hs_t hdr, inout m_t m, inout standard_metadata_t sm) { apply { } }
control C(inout hs_t hdr, inout m_t m) { apply { } }
control D(packet_out pkt, in hs_t hdr) { apply { pkt.emit(hdr.h); } }
"""  # 12 lines

MAIN = "V1Switch(P(), V(), I(), E(), C(), D()) main;\n"


def program(ingress_body: str, extra: str = "") -> str:
    return (PRELUDE + extra +
            "control I(inout hs_t hdr, inout m_t m, inout standard_metadata_t sm) {\n" +
            ingress_body + "\n}\n" + MAIN)


def errors(text: str, filename: str = "prog.p4", **kw) -> list[str]:
    with pytest.raises(P4CompileError) as info:
        compile_source(text, filename, **kw)
    exc = info.value
    assert str(exc) == "\n".join(str(d) for d in exc.diagnostics)
    return str(exc).splitlines()


def test_syntax_error_position():
    # line 15 of the program, column 15 is the ';'
    assert errors(program("    apply {\n        m.x = ;\n    }")) == [
        "prog.p4:15:15: error: syntax error: unexpected ';'"]


def test_type_errors_are_all_reported():
    body = """    apply {
        m.x = hdr.h.b;
        m.y = 1;
        hdr.h.a = undefined_thing + 1;
        hdr.h.b = hdr.h.a ++ 8w1 ++ 8w1;
        if (hdr.h.a) { }
    }"""
    assert errors(program(body)) == [
        "prog.p4:15:15: error: assignment: cannot convert bit<16> to bit<8>",
        "prog.p4:16:9: error: m_t has no field 'y'",
        "prog.p4:17:19: error: undeclared identifier 'undefined_thing'",
        "prog.p4:18:19: error: assignment: cannot convert bit<24> to bit<16>",
        "prog.p4:19:13: error: if condition must be bool, not bit<8>",
    ]


def test_calls_and_tables_are_checked():
    body = """    action set(bit<8> v) { m.x = v; }
    table t {
        key = { hdr.h.a: fuzzy; }
        actions = { set; nothing; }
        default_action = set(1, 2);
    }
    apply {
        set();
        mark_to_drop(sm, sm);
        hdr.h.frobnicate();
    }"""
    assert errors(program(body)) == [
        "prog.p4:16:17: error: unknown match kind fuzzy",
        "prog.p4:17:26: error: 'nothing' is not an action",
        "prog.p4:18:26: error: default action set: expects 1 argument(s), got 2",
        "prog.p4:21:9: error: action set: missing argument for parameter 'v'",
        "prog.p4:22:9: error: mark_to_drop: no overload takes 2 argument(s)",
        "prog.p4:23:9: error: h_t has no field 'frobnicate'",
    ]


def test_assignment_to_in_parameter_and_constant():
    extra = "const bit<8> LIMIT = 5;\n"
    body = """    action a(in bit<8> v) { v = 1; }
    apply {
        LIMIT = 3;
        a(m.x);
    }"""
    assert errors(program(body, extra)) == [
        "prog.p4:15:29: error: assignment: expression is not assignable",
        "prog.p4:17:9: error: assignment: expression is not assignable",
    ]


def test_unsupported_constructs_are_named():
    extra = ('@p4runtime_translation("p4.org/port", 32) type bit<9> port_t;\n'
             "header vb_t { varbit<32> a; varbit<32> b; }\n")
    assert errors(program("    apply { }", extra)) == [
        "prog.p4:13:1: error: unsupported: @p4runtime_translation",
        "prog.p4:14:1: error: unsupported: more than one varbit field in header vb_t",
    ]


def test_unsupported_code_generation_is_reported_with_position():
    body = """    apply {
        mark_to_drop();
    }"""
    assert errors(program(body)) == ["prog.p4:15:9: error: unsupported: mark_to_drop() without argument"]


def test_a_table_with_two_lpm_keys_is_refused_as_p4c_bm2_ss_refuses_it():
    body = """    action set(bit<9> p) { sm.egress_spec = p; }
    table t { key = { hdr.h.a: lpm; hdr.h.b: lpm; } actions = { set; } }
    apply { t.apply(); }"""
    assert errors(program(body)) == [
        "prog.p4:15:5: error: unsupported: multiple LPM keys in table t (BMv2 matches at most one field "
        "by prefix)"]


def test_positions_inside_included_files(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "bad.p4").write_text("// a comment\n\nconst bit<8> X = 8w1 + true;\n")
    main = tmp_path / "main.p4"
    text = '#include "inc/bad.p4"\n' + program("    apply { }")
    main.write_text(text)
    with pytest.raises(P4CompileError) as info:
        from p4switch.compiler import compile_program
        compile_program(main)
    (diag,) = info.value.diagnostics
    assert (diag.file, diag.line, diag.col) == (str(tmp_path / "inc" / "bad.p4"), 3, 24)
    assert diag.message == "+: operands have different types: bit<8> and bool"


def test_preprocessor_errors():
    assert errors('#include "missing.p4"\n') == ["prog.p4:1:1: error: #include file not found: missing.p4"]
    assert errors("#ifdef NOPE\n#else\n#error not configured\n#endif\n") == [
        "prog.p4:3:1: error: #error not configured"]


def test_defines_and_conditionals_select_code():
    body = """    apply {
#if WIDTH > 8 && defined(EXTRA)
        hdr.h.b = 16w1;
#else
        hdr.h.a = WIDTH;
#endif
    }"""
    prog = compile_source(program(body), "prog.p4", defines={"WIDTH": "8"})
    assert "hdr.h.a = 8" in prog.python_source
    prog = compile_source(program(body), "prog.p4", defines={"WIDTH": "16", "EXTRA": "1"})
    assert "hdr.h.b = 1" in prog.python_source


def select_program(cases: str, key_type: str = "bit<8>") -> str:
    """A parser that selects on (a key of `key_type`, bit<16>); the cases start on line 8."""
    return ("#include <core.p4>\n#include <v1model.p4>\n"
            f"header h_t {{ {key_type} a; bit<16> b; }}\n"
            "struct hs_t { h_t h; }\nstruct m_t { }\n"
            "parser P(packet_in pkt, out hs_t hdr, inout m_t m, inout standard_metadata_t sm) {\n"
            "    state start { pkt.extract(hdr.h); transition select(hdr.h.a, hdr.h.b) {\n"
            + cases + "        default: accept; } }\n}\n"
            "control I(inout hs_t hdr, inout m_t m, inout standard_metadata_t sm) { apply { } }\n"
            + PRELUDE.split("\n", 8)[8] + MAIN)


def test_a_keyset_constant_that_does_not_fit_the_key_is_an_error():
    # p4c wraps 300 to 8w44 (its warning: "value does not fit in 8 bits"): 200 .. 44 is empty
    cases = """        (200 .. 300, 0): accept;
        (0x100 &&& 0xF0, 1): accept;
        (0x10 &&& 0x1F0, 65536): accept;
"""
    assert errors(select_program(cases)) == [
        "prog.p4:8:17: error: keyset: value 300 does not fit in bit<8>",
        "prog.p4:9:10: error: keyset: value 256 does not fit in bit<8>",
        "prog.p4:10:19: error: keyset: value 496 does not fit in bit<8>",
        "prog.p4:10:26: error: keyset: value 65536 does not fit in bit<16>",
    ]
    assert errors(select_program("        (-129 .. 127, 0): accept;\n", "int<8>")) == [
        "prog.p4:8:10: error: keyset: value -129 does not fit in int<8>"]
    # the keys of a table's const entries are keysets too
    body = """    table t { key = { hdr.h.a: exact; } actions = { NoAction; }
              const entries = { 0x1FF : NoAction(); } }
    apply { t.apply(); }"""
    assert errors(program(body)) == ["prog.p4:15:33: error: keyset: value 511 does not fit in bit<8>"]


def test_keyset_constants_that_fit_the_key_compile():
    # a negative int on bit<8> is converted (-1 is 255), as p4c converts it
    cases = """        (0 .. 255, 65535): accept;
        (-1, 0x10 &&& 0xFFFF): accept;
        (8w1 .. 8w2, 16w3): accept;
"""
    prog = compile_source(select_program(cases), "prog.p4")
    assert "== 255" in prog.python_source
    compile_source(select_program("        (-128 .. 127, 0): accept;\n", "int<8>"), "prog.p4")
    # W bits on int<W> are its two's complement (a sign-bit mask), as p4c converts them
    compile_source(select_program("        (0x80 &&& 0x80, 0): accept;\n", "int<8>"), "prog.p4")
