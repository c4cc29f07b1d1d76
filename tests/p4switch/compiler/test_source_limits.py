"""What the front end refuses before it parses, and how: files that are not a program
(unreadable, a FIFO, past the size limit), #if expressions as a C preprocessor computes them,
and the nesting limits, with programs at each limit compiled and run. The command-line cases
are in tests/hostile/cases/p4c.py."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from p4switch.compiler import CompiledProgram, P4CompileError, compile_program, compile_source
from p4switch.engine import EngineConfig
from p4switch.frontend.nesting import MAX_EXPRESSION_NESTING, MAX_STATEMENT_NESTING
from p4switch.frontend.source import MAX_SOURCE_BYTES
from p4switch.runtime import RuntimeState
from tests.hostile.cases.p4c import HEADER, program

REPO = Path(__file__).resolve().parents[3]
FIRST_BODY_LINE = HEADER.count("\n") + 1


def compile_errors(text: str, filename: str = "prog.p4") -> list[str]:
    with pytest.raises(P4CompileError) as info:
        compile_source(text, filename)
    return str(info.value).splitlines()


def compile_command(*args: str, as_user_without_dac: bool = False
                    ) -> subprocess.CompletedProcess:
    """p4switch-compile in a process of its own; `as_user_without_dac`: root without the
    capabilities that let it read any file, so a mode-000 file is unreadable to it too."""
    argv = [sys.executable, "-m", "p4switch.cli.compile", *args]
    if as_user_without_dac and os.geteuid() == 0:
        argv = [shutil.which("setpriv") or "setpriv",
                "--bounding-set=-dac_override,-dac_read_search", *argv]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO)), check=False)


def egress_port(prog: CompiledProgram, a: int) -> int | None:
    """The port the program sends a packet with h.a == `a` to (None: dropped)."""
    engine = prog.new_engine(RuntimeState(prog.model), EngineConfig())
    out = engine.process(1, bytes([a]) + bytes(63))
    return out[0][0] if out else None


# -- files ---------------------------------------------------------------------------------

@pytest.mark.skipif(os.geteuid() == 0 and shutil.which("setpriv") is None,
                    reason="root reads any file; setpriv drops that")
def test_unreadable_program_and_include_are_one_error_naming_the_file(tmp_path: Path) -> None:
    locked = tmp_path / "locked.p4"
    locked.write_text(program(""))
    locked.chmod(0)
    including = tmp_path / "main.p4"
    including.write_text('#include <core.p4>\n#include "locked.p4"\n')
    tmp_path.chmod(0o755)

    direct = compile_command(str(locked), "-o", str(tmp_path / "out"), as_user_without_dac=True)
    assert (direct.returncode, direct.stderr) == (
        1, f"{locked}: error: cannot read: Permission denied\n")
    included = compile_command(str(including), "-o", str(tmp_path / "out"),
                               as_user_without_dac=True)
    assert (included.returncode, included.stderr) == (
        1, f'{including}:2:1: error: #include "locked.p4": {locked}: cannot read: '
           "Permission denied\n")


def test_a_fifo_given_as_the_program_is_refused_without_waiting_for_a_writer(
        tmp_path: Path) -> None:
    fifo = tmp_path / "prog.p4"
    os.mkfifo(fifo)
    with pytest.raises(P4CompileError) as info:
        compile_program(fifo)
    assert str(info.value) == f"{fifo}: error: not a regular file"


def test_the_size_limit_holds_for_the_file_and_for_the_program_with_its_includes(
        tmp_path: Path) -> None:
    big = tmp_path / "big.p4"
    big.write_text("//" + "x" * (MAX_SOURCE_BYTES - 3) + "\n")  # at the limit: read
    with pytest.raises(P4CompileError) as info:
        compile_program(big)
    assert str(info.value) == f"{big}: error: empty program: nothing but white space and comments"
    big.write_text("//" + "x" * (MAX_SOURCE_BYTES - 2) + "\n")  # one byte more
    with pytest.raises(P4CompileError) as info:
        compile_program(big)
    assert str(info.value) == f"{big}: error: larger than 256 KiB, the limit for a source file"
    # each file small, together past the limit: refused at the include that crosses it
    half = tmp_path / "half.p4"
    half.write_text("// " + "x" * (MAX_SOURCE_BYTES // 2) + "\n")
    main = tmp_path / "main.p4"
    main.write_text('#include "half.p4"\n#include "half.p4"\n#include "half.p4"\n')
    with pytest.raises(P4CompileError) as info:
        compile_program(main)
    assert str(info.value) == (f"{half}:1:1: error: the program is larger than 256 KiB with "
                               "its includes and macros expanded")


def test_a_device_config_past_the_limit_or_of_the_wrong_shape_names_its_origin() -> None:
    import json

    def config(**fields) -> bytes:
        doc = {"format": "p4switch-device-config-1", "name": "p", "source": "",
               "line_map": [], **fields}
        return json.dumps(doc).encode()

    for data in (config(line_map=[["f.p4"]]), config(name="../x"), config(source=["x"]),
                 b"[1, 2]"):
        with pytest.raises(P4CompileError) as info:
            CompiledProgram.from_device_config(data, origin="cfg.json")
        assert str(info.value).startswith("cfg.json: error: invalid device config: "), data
    text = "// " + "x" * MAX_SOURCE_BYTES + "\n"
    with pytest.raises(P4CompileError) as info:
        CompiledProgram.from_device_config(config(source=text, line_map=[["f.p4", 1]]))
    assert str(info.value) == ("f.p4: error: the program is larger than 256 KiB after "
                               "preprocessing")


# -- #if -----------------------------------------------------------------------------------

IF_EXPRESSIONS = [
    "-7 / 2 == -3", "-7 % 2 == -1", "7 % -2 == 1", "(1 << 63) < 0", "0x7fffffffffffffff + 1 < 0",
    "1 << 64", "1 << 200", "-1 >> 70", "~0 == -1", "!0 && !!5", "0 || 3 > 2", "2 < 3 < 1",
    "(3 & 5) == 1 && (3 | 5) == 7 && (3 ^ 5) == 6", "0b101 == 5", "010 == 8", "0x10 == 16",
    "defined(A) && A == 3", "defined B || 1", "UNDEFINED == 0", "- -1 == 1",
    "1 < 3 < 2", "!0 == 2", "2 & 1 == 1", "1 | 2 ^ 3 & 4", "1 ? 0 : 2 ? 3 : 4", "10UL == 10",
    "(((((((1)))))))", "-9223372036854775807 - 1 < 0",
]


@pytest.mark.skipif(shutil.which("cpp") is None, reason="no C preprocessor to compare with")
@pytest.mark.parametrize("expr", IF_EXPRESSIONS)
def test_if_expressions_agree_with_the_c_preprocessor(expr: str) -> None:
    source = f"#define A 3\n#if {expr}\nyes\n#else\nno\n#endif\n"
    cpp = subprocess.run(["cpp", "-P"], input=source, capture_output=True, text=True,
                         timeout=30, check=True).stdout.split()
    from p4switch.frontend.diagnostics import Reporter
    from p4switch.frontend.preprocess import preprocess

    reporter = Reporter()
    ours = preprocess(source, "t.p4", reporter=reporter).text.split()
    assert (ours, reporter.diagnostics) == (cpp, [])


@pytest.mark.parametrize("expr", ["1 +", "(1", "1 / 0", "08", "1 $ 2", "9" * 100,
                                  "(" * 100 + "1" + ")" * 100])
def test_an_if_expression_that_is_not_one_is_an_error_at_its_line(expr: str) -> None:
    from p4switch.frontend.diagnostics import Reporter
    from p4switch.frontend.preprocess import preprocess

    reporter = Reporter()
    preprocess(f"\n#if {expr}\n#endif\n", "t.p4", reporter=reporter)
    assert [str(d) for d in reporter.diagnostics] == [
        f"t.p4:2:1: error: cannot evaluate #if expression: {expr[:80]}"]


# -- nesting -------------------------------------------------------------------------------

def nested_ifs(depth: int) -> str:
    return program("if (hdr.h.a == 1) {\n" * depth + "sm.egress_spec = 2;\n" + "}\n" * depth)


def else_ifs(branches: int) -> str:
    return program("if (hdr.h.a == 0) { sm.egress_spec = 3; }\n" + "".join(
        f"else if (hdr.h.a == {i}) {{ sm.egress_spec = {i + 3}; }}\n"
        for i in range(1, branches)))


def nested_blocks(depth: int) -> str:
    return program("{\n" * depth + "sm.egress_spec = 2;\n" + "}\n" * depth)


def sum_of(terms: int) -> str:  # a 1 and terms - 1 zeros: 1
    return program("sm.egress_spec = " + " + ".join(["9w1"] + ["9w0"] * (terms - 1)) + ";\n")


@pytest.mark.parametrize(("make", "size", "sent", "port"), [
    (nested_ifs, MAX_STATEMENT_NESTING, 1, 2),
    (else_ifs, MAX_STATEMENT_NESTING, MAX_STATEMENT_NESTING - 1, MAX_STATEMENT_NESTING + 2),
    (nested_blocks, MAX_STATEMENT_NESTING, 0, 2),
    (sum_of, MAX_EXPRESSION_NESTING + 1, 0, 1),
])
def test_a_program_at_a_nesting_limit_compiles_and_runs(make, size: int, sent: int,
                                                        port: int) -> None:
    prog = compile_source(make(size), "prog.p4")
    assert egress_port(prog, sent) == port


@pytest.mark.parametrize(("make", "size", "where", "what"), [
    (nested_ifs, MAX_STATEMENT_NESTING + 1, f"{FIRST_BODY_LINE + MAX_STATEMENT_NESTING}:1",
     "statements nested more than 64 levels deep"),
    (else_ifs, MAX_STATEMENT_NESTING + 1, f"{FIRST_BODY_LINE + MAX_STATEMENT_NESTING}:6",
     "statements nested more than 64 levels deep"),
    (nested_blocks, 3000, f"{FIRST_BODY_LINE + MAX_STATEMENT_NESTING}:1",
     "statements nested more than 64 levels deep"),
    (sum_of, MAX_EXPRESSION_NESTING + 2, f"{FIRST_BODY_LINE}:18",
     "expression nested more than 64 levels deep"),
])
def test_one_level_past_a_nesting_limit_is_one_error_where_it_is_crossed(
        make, size: int, where: str, what: str) -> None:
    assert compile_errors(make(size)) == [f"prog.p4:{where}: error: {what}"]


def test_deep_nesting_is_refused_in_a_thread_too() -> None:
    """The P4Runtime server compiles in a gRPC thread: the check does not recurse."""
    import threading

    found: list[list[str]] = []
    worker = threading.Thread(target=lambda: found.append(compile_errors(nested_ifs(3000))))
    worker.start()
    worker.join(timeout=300)
    assert found == [[f"prog.p4:{FIRST_BODY_LINE + MAX_STATEMENT_NESTING}:1: error: "
                      "statements nested more than 64 levels deep"]]
