"""Careless and hostile inputs to p4switch's front ends: p4switch-compile, p4switch-stf and the
program p4switch loads. Each answer is p4c's `file:line:col: error: message` (or `file: error:
message` for a whole file), never a traceback or an internal error."""

from tests.hostile.inputs import Case

HEADER = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct hs_t { h_t h; }
struct m_t { bit<8> x; }
parser P(packet_in pkt, out hs_t hdr, inout m_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout hs_t hdr, inout m_t m) { apply { } }
control E(inout hs_t hdr, inout m_t m, inout standard_metadata_t sm) { apply { } }
control C(inout hs_t hdr, inout m_t m) { apply { } }
control D(packet_out pkt, in hs_t hdr) { apply { pkt.emit(hdr.h); } }
control I(inout hs_t hdr, inout m_t m, inout standard_metadata_t sm) {
    apply {
"""  # 14 lines
FOOTER = """    }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def program(body: str) -> str:
    """A complete program whose ingress applies `body` (its first line is line 15)."""
    return HEADER + body + FOOTER


NESTED_IFS = program("if (hdr.h.a == 1) {\n" * 3000 + "m.x = 1;\n" + "}\n" * 3000)
ELSE_IFS = program("if (hdr.h.a == 0) { m.x = 0; }\n"
                   + "".join(f"else if (hdr.h.a == {i % 256}) {{ m.x = 1; }}\n"
                             for i in range(1, 3000)))
LONG_SUM = program("m.x = " + " + ".join(["hdr.h.a"] * 3000) + ";\n")
NESTED_BLOCKS = program("{\n" * 3000 + "m.x = 1;\n" + "}\n" * 3000)
BINARY = b"\x7fELF\x02\x01\x01\x00\x00\x00" + bytes(range(256)) * 4
NOT_UTF8 = b"header h_t { bit<8> a; }\n// caf\xe9\n"
SIX_MB = "// padding\n" * ((6 << 20) // 11)
MACRO_BOMB = ("#define A0 x\n" + "".join(f"#define A{i} A{i - 1} A{i - 1}\n" for i in range(1, 40))
              + "A39\n")
STF = "packet 0 00112233\nexpect 1 00112233\n"

COMPILE = ["p4switch-compile", "-o", "{dir}/out"]
STF_RUN = ["p4switch-stf"]

CASES: list[Case] = [
    # files that are not a program
    Case("p4c-compile-missing-file", [*COMPILE, "{dir}/nope.p4"],
         must_say="nope.p4: error: no such file"),
    Case("p4c-compile-directory", [*COMPILE, "{dir}/sub"], files={"sub/x.p4": ""},
         must_say="sub: error: is a directory"),
    Case("p4c-compile-dev-zero", [*COMPILE, "/dev/zero"],
         must_say="/dev/zero: error: not a regular file"),
    Case("p4c-compile-empty-file", [*COMPILE, "{dir}/empty.p4"], files={"empty.p4": ""},
         must_say="empty.p4: error: empty program"),
    Case("p4c-compile-only-comments", [*COMPILE, "{dir}/c.p4"],
         files={"c.p4": "// nothing\n/* here */\n"}, must_say="c.p4: error: empty program"),
    Case("p4c-compile-unterminated-comment", [*COMPILE, "{dir}/u.p4"],
         files={"u.p4": "#include <v1model.p4>\n/* never closed\n"},
         must_say="u.p4:2:1: error: unterminated comment"),
    Case("p4c-compile-binary-file", [*COMPILE, "{dir}/b.p4"], files={"b.p4": BINARY},
         must_say="b.p4:1:8: error: NUL byte"),
    Case("p4c-compile-not-utf8", [*COMPILE, "{dir}/l.p4"], files={"l.p4": NOT_UTF8},
         must_say="l.p4:2:7: error: byte 0xe9 is not UTF-8"),
    Case("p4c-compile-6mb-program", [*COMPILE, "{dir}/big.p4"], files={"big.p4": SIX_MB},
         must_say="big.p4: error: larger than 256 KiB", timeout_s=20),
    # includes
    Case("p4c-compile-missing-include", [*COMPILE, "{dir}/i.p4"],
         files={"i.p4": '#include <core.p4>\n#include "nope.p4"\n'},
         must_say="i.p4:2:1: error: #include file not found: nope.p4"),
    Case("p4c-compile-include-directory", [*COMPILE, "{dir}/i.p4"],
         files={"i.p4": '#include "sub"\n', "sub/x.p4": ""},
         must_say="sub: is a directory"),
    Case("p4c-compile-include-binary", [*COMPILE, "{dir}/i.p4"],
         files={"i.p4": '#include "b.bin"\n', "b.bin": BINARY},
         must_say="b.bin:1:8: error: NUL byte"),
    Case("p4c-compile-include-itself", [*COMPILE, "{dir}/i.p4"],
         files={"i.p4": '#include "i.p4"\n#include "i.p4"\n'},
         must_say="i.p4:1:1: error: #include nested more than 50 levels"),
    Case("p4c-compile-include-6mb", [*COMPILE, "{dir}/i.p4"],
         files={"i.p4": '#include "big.p4"\n', "big.p4": SIX_MB},
         must_say="big.p4: larger than 256 KiB", timeout_s=20),
    # the preprocessor
    Case("p4c-compile-macro-bomb", [*COMPILE, "{dir}/m.p4"], files={"m.p4": MACRO_BOMB},
         must_say="m.p4:41:1: error: the program is larger than 256 KiB", timeout_s=30),
    Case("p4c-compile-if-shift", [*COMPILE, "{dir}/s.p4"],
         files={"s.p4": "#if 1 << 99999999999\n#else\n#error shifted out\n#endif\n"},
         must_say="s.p4:3:1: error: #error shifted out", timeout_s=20),
    Case("p4c-compile-if-long-number", [*COMPILE, "{dir}/n.p4"],
         files={"n.p4": "#if " + "9" * 10000 + "\n#endif\n"},
         must_say="n.p4:1:1: error: cannot evaluate #if expression"),
    Case("p4c-compile-if-nesting", [*COMPILE, "{dir}/n.p4"],
         files={"n.p4": "#ifdef X\n" * 5000 + "#endif\n" * 5000},
         must_say="n.p4:257:1: error: #ifdef nested more than 256 levels"),
    Case("p4c-compile-macro-chain", [*COMPILE, "{dir}/m.p4"],
         files={"m.p4": "".join(f"#define M{i} M{i + 1}\n" for i in range(3000)) + "M0\n"},
         must_say="m.p4:3001:1: error: macro expansion nested too deeply"),
    # nesting the passes after the parser cannot follow
    Case("p4c-compile-3000-nested-ifs", [*COMPILE, "{dir}/p.p4"], files={"p.p4": NESTED_IFS},
         must_say="p.p4:79:1: error: statements nested more than 64 levels deep"),
    Case("p4c-compile-3000-else-ifs", [*COMPILE, "{dir}/p.p4"], files={"p.p4": ELSE_IFS},
         must_say="p.p4:79:6: error: statements nested more than 64 levels deep"),
    Case("p4c-compile-3000-nested-blocks", [*COMPILE, "{dir}/p.p4"],
         files={"p.p4": NESTED_BLOCKS},
         must_say="p.p4:79:1: error: statements nested more than 64 levels deep"),
    Case("p4c-compile-3000-term-sum", [*COMPILE, "{dir}/p.p4"], files={"p.p4": LONG_SUM},
         must_say="p.p4:15:7: error: expression nested more than 64 levels deep"),
    # arguments
    Case("p4c-compile-bad-define", ["p4switch-compile", "-D", "1x=2", "-o", "{dir}/o",
                                    "{dir}/p.p4"], files={"p.p4": program("")},
         must_say="-D 1x=2"),
    Case("p4c-compile-outdir-is-a-file", ["p4switch-compile", "-o", "{dir}/taken",
                                          "{dir}/p.p4"],
         files={"p.p4": program(""), "taken": "x"}, must_say="taken"),
    # p4switch-stf
    Case("p4c-stf-missing-test", [*STF_RUN, "{dir}/p.p4", "{dir}/nope.stf"],
         files={"p.p4": program("")}, must_say="nope.stf: error: no such file"),
    Case("p4c-stf-test-is-a-directory", [*STF_RUN, "{dir}/p.p4", "{dir}/sub"],
         files={"p.p4": program(""), "sub/t.stf": STF}, must_say="sub: error: is a directory"),
    Case("p4c-stf-binary-test", [*STF_RUN, "{dir}/p.p4", "{dir}/t.stf"],
         files={"p.p4": program(""), "t.stf": BINARY}, must_say="t.stf:1:8: error: NUL byte"),
    Case("p4c-stf-not-utf8-test", [*STF_RUN, "{dir}/p.p4", "{dir}/t.stf"],
         files={"p.p4": program(""), "t.stf": b"packet 0 00\n# caf\xe9\n"},
         must_say="t.stf:2:6: error: byte 0xe9 is not UTF-8"),
    Case("p4c-stf-malformed-line", [*STF_RUN, "{dir}/p.p4", "{dir}/t.stf"],
         files={"p.p4": program(""), "t.stf": "packet 0 00\nexpect one 00\n"},
         must_say="t.stf:2:7: error: expect: expected a port number"),
    Case("p4c-stf-not-an-stf", [*STF_RUN, "{dir}/p.p4", "{dir}/p.p4"],
         files={"p.p4": program("")}, must_say="p.p4:3:12: error: unexpected character"),
    Case("p4c-stf-missing-program", [*STF_RUN, "{dir}/nope.p4", "{dir}/t.stf"],
         files={"t.stf": STF}, must_say="nope.p4: error: no such file"),
    Case("p4c-stf-binary-program", [*STF_RUN, "{dir}/b.p4", "{dir}/t.stf"],
         files={"b.p4": BINARY, "t.stf": STF}, must_say="b.p4:1:8: error: NUL byte"),
    Case("p4c-stf-3000-nested-ifs", [*STF_RUN, "{dir}/p.p4", "{dir}/t.stf"],
         files={"p.p4": NESTED_IFS, "t.stf": STF},
         must_say="p.p4:79:1: error: statements nested more than 64 levels deep"),
    # the program p4switch loads (it fails before opening a port)
    Case("p4c-switch-binary-program", ["p4switch", "{dir}/b.p4"], files={"b.p4": BINARY},
         must_say="b.p4:1:8: error: NUL byte"),
    Case("p4c-switch-empty-program", ["p4switch", "{dir}/e.p4"], files={"e.p4": ""},
         must_say="e.p4: error: empty program"),
    Case("p4c-switch-program-is-a-directory", ["p4switch", "{dir}/sub"],
         files={"sub/x.p4": ""}, must_say="is a directory"),
    Case("p4c-switch-binary-device-config", ["p4switch", "{dir}/c.json"],
         files={"c.json": BINARY}, must_say="c.json:1:8: error: NUL byte"),
    Case("p4c-switch-bad-device-config", ["p4switch", "{dir}/c.json"],
         files={"c.json": '{"format": "p4switch-device-config-1", "name": "x", '
                          '"source": 5, "line_map": []}'},
         must_say="c.json: error: invalid device config"),
]
