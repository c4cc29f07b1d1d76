"""The STF runner and the p4switch-stf / p4switch-compile commands over a real program."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

pytest.importorskip("p4switch.compiler", reason="the P4 compiler is not in the tree yet")

from p4switch.stf.parser import parse_stf  # noqa: E402
from p4switch.stf.runner import Outcome, run_statements, run_stf_files  # noqa: E402

PROGRAMS = Path(__file__).parent / "programs"
FWD = PROGRAMS / "stf_fwd.p4"
REPO = Path(__file__).resolve().parents[3]


def command(module: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=120)


@pytest.fixture(scope="module")
def fwd():
    from p4switch.compiler import compile_program

    return compile_program(FWD)


def test_passing_test(fwd) -> None:
    statements = parse_stf((PROGRAMS / "stf_fwd_pass.stf").read_text())
    result = run_statements(fwd, statements)
    assert (result.outcome, result.messages) == (Outcome.PASS, [])


def test_wrong_output_is_reported_with_positions(fwd) -> None:
    result = run_statements(fwd, parse_stf((PROGRAMS / "stf_fwd_wrong.stf").read_text()))
    assert result.outcome is Outcome.WRONG
    assert result.messages[0].splitlines() == [
        "port 2 packet 0: differs at byte 12 (hex digit 25): expected 8, got 0",
        "  expected 0000000000020000000000010800CAFE  (line 4)",
        "  got      0000000000020000000000010000CAFE",
        "           " + " " * 25 + "^",
    ]


@pytest.mark.parametrize(
    ("stf", "outcome", "reason"),
    [
        # Port 2 is never mentioned: what goes out there is not checked (as with BMv2's runner).
        ("add l2 dstAddr:0x02 forward(port:2)\npacket 1 000000000002 000000000001 0000\n",
         Outcome.PASS, ""),
        # Port 1 is mentioned and has no expectation: it must stay silent.
        ("add l2 dstAddr:0x02 forward(port:1)\npacket 1 000000000002 000000000001 0000\n",
         Outcome.WRONG, "port 1: expected 0 packet(s), got 1"),
        ("packet 1 000000000002 000000000001 0000\nexpect 3\n",
         Outcome.WRONG, "port 3: expected 1 packet(s), got 0"),
        ("add l2 dstAddr:0x02 forward(port:2)\npacket 1 000000000002 000000000001 0000\n"
         "expect 2\n", Outcome.PASS, ""),
        ("add nosuch dstAddr:0x02 forward(port:2)\n", Outcome.INVALID,
         "line 1: no table named 'nosuch'"),
        ("add acl srcAddr:0x02 set_type(t:1)\n", Outcome.INVALID,
         "line 1: add to IngressImpl.acl: the table needs a priority"),
        ("setdefault l2 forward(port:7)\npacket 1 000000000002 000000000001 0000\nexpect 7\n",
         Outcome.PASS, ""),
        ("check_counter port_in(1) packets == 1\npacket 1 000000000002 000000000001 0000\n"
         "check_counter port_in(1) packets == 1\ncheck_counter port_in(1) bytes == 14\n"
         "check_counter port_in(1) bytes > 14\n",
         Outcome.WRONG, "line 1: check_counter port_in(1): packets is 0, expected == 1"),
    ],
)
def test_outcomes(fwd, stf: str, outcome: Outcome, reason: str) -> None:
    result = run_statements(fwd, parse_stf(stf))
    assert result.outcome is outcome, result.messages
    assert result.reason.startswith(reason), result.messages


def test_commands_bmv2_rejects_are_skipped_with_a_warning(fwd) -> None:
    stf = "\n".join([
        "add l2 dstAddr:0x02 forward(port:2)",
        "add l2 dstAddr:0x02 drop()",  # duplicate: ignored, the first entry stays
        "add l2 dstAddr:0x1000000000000 drop()",  # more than 6 bytes
        "add l2 dstAddr:0x03 forward(port:0x1*)",  # not a number
        "packet 2 000000000002 000000000001 0000",
        "expect 2 000000000002 000000000001 0000",
    ])
    result = run_statements(fwd, parse_stf(stf))
    assert result.outcome is Outcome.PASS, result.messages
    assert [w.split(":")[0] for w in result.warnings] == ["line 2", "line 3", "line 4"]
    assert "ALREADY_EXISTS" in result.warnings[0]
    assert "0x1000000000000 is too large for 48 bits" in result.warnings[1]
    assert "invalid number '0x1*'" in result.warnings[2]


def test_compile_and_syntax_failures(tmp_path: Path) -> None:
    bad = tmp_path / "bad.p4"
    bad.write_text("control c() { apply { x = ; } }\n")
    result = run_stf_files(bad, PROGRAMS / "stf_fwd_pass.stf")
    assert result.outcome is Outcome.INVALID
    assert result.messages[0].startswith(f"{bad}:1:")
    stf = tmp_path / "bad.stf"
    stf.write_text("packet 1 0\nexpect x\n")
    result = run_stf_files(FWD, stf)
    assert result.outcome is Outcome.INVALID
    assert result.messages == [f"{stf}:1:10: error: packet: odd number of hex digits (1)",
                               f"{stf}:2:7: error: expect: expected a port number"]


def test_p4switch_stf_exit_codes() -> None:
    ok = command("p4switch.cli.stf", str(FWD), str(PROGRAMS / "stf_fwd_pass.stf"))
    assert (ok.returncode, ok.stdout) == (0, "PASS\n"), ok.stderr
    wrong = command("p4switch.cli.stf", str(FWD), str(PROGRAMS / "stf_fwd_wrong.stf"))
    assert (wrong.returncode, wrong.stdout) == (1, "WRONG\n")
    assert "port 2 packet 0: differs at byte 12" in wrong.stderr
    invalid = command("p4switch.cli.stf", str(FWD), str(PROGRAMS / "stf_fwd_invalid.stf"))
    assert (invalid.returncode, invalid.stdout) == (2, "INVALID\n")
    assert "no table named 'no_such_table'" in invalid.stderr
    unsupported = command("p4switch.cli.stf", str(PROGRAMS / "stf_user_extern.p4"),
                          str(PROGRAMS / "stf_fwd_invalid.stf"))
    assert (unsupported.returncode, unsupported.stdout) == (2, "UNSUPPORTED\n")
    assert "stf_user_extern.p4:16:13: error: unsupported: extern frobnicate" \
        in unsupported.stderr
    missing = command("p4switch.cli.stf", str(FWD), "/nonexistent.stf")
    assert missing.returncode == 2 and "/nonexistent.stf: error: no such file" in missing.stderr


def test_p4switch_compile_writes_p4info_and_device_config(tmp_path: Path) -> None:
    from p4switch.compiler import CompiledProgram

    out = tmp_path / "out"
    done = command("p4switch.cli.compile", str(FWD), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["stf_fwd.p4info.txtpb",
                                                     "stf_fwd.p4switch.json"]
    text = (out / "stf_fwd.p4info.txtpb").read_text()
    assert text.startswith("# proto-file: p4/config/v1/p4info.proto\n")
    info = text_format.Parse(text, p4info_pb2.P4Info())
    assert [t.preamble.name for t in info.tables] == ["IngressImpl.l2", "IngressImpl.acl"]
    assert [(c.preamble.name, c.size) for c in info.counters] == [("IngressImpl.port_in", 8)]
    assert info.registers[0].type_spec.bitstring.bit.bitwidth == 16
    program = CompiledProgram.from_device_config((out / "stf_fwd.p4switch.json").read_bytes())
    assert program.model.table("IngressImpl.l2").match_fields[0].name == "hdr.ethernet.dstAddr"


def test_p4switch_compile_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.p4"
    bad.write_text("#include <v1model.p4>\ncontrol c() { apply { x = ; } }\n")
    done = command("p4switch.cli.compile", str(bad), "-o", str(tmp_path / "o"))
    assert done.returncode == 1
    assert done.stderr.startswith(f"{bad}:2:")
    assert not (tmp_path / "o").exists()
    usage = command("p4switch.cli.compile", str(bad))
    assert usage.returncode == 2 and "-o" in usage.stderr
    dup_id = tmp_path / "dup_id.p4"
    dup_id.write_text(FWD.read_text().replace("    table l2 {", "    @id(7) table l2 {")
                      .replace("    table acl {", "    @id(7) table acl {"))
    done = command("p4switch.cli.compile", str(dup_id), "-o", str(tmp_path / "o"))
    assert done.returncode == 1
    assert "@id 7 is assigned to multiple declarations" in done.stderr
    bad_define = command("p4switch.cli.compile", str(bad), "-o", "x", "-D", "1X=2")
    assert bad_define.returncode == 2 and "'1X' is not a macro name" in bad_define.stderr


def test_cli_pass_through_errors_are_warnings(fwd) -> None:
    stf = "\n".join([
        "register_write IngressImpl.tag 1 7",
        "register_write IngressImpl.nosuch 1 7",
        "mc_node_associate 5 99",
    ])
    result = run_statements(fwd, parse_stf(stf))
    assert result.outcome is Outcome.PASS
    assert [w.split(":")[0] for w in result.warnings] == ["line 2", "line 3"]
    assert result.warnings[0].startswith("line 2: skipped, BMv2 rejects it: register_write "
                                         "IngressImpl.nosuch 1 7: ")


def test_p4switch_compile_include_dirs_and_defines(tmp_path: Path) -> None:
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "sizes.p4").write_text("#ifndef L2_SIZE\n#define L2_SIZE 16\n#endif\n")
    program = tmp_path / "sized.p4"
    program.write_text(
        FWD.read_text()
        .replace("#include <v1model.p4>", '#include <v1model.p4>\n#include "sizes.p4"')
        .replace("default_action = drop();", "default_action = drop();\n        size = L2_SIZE;")
    )

    def l2_size(*args: str) -> int:
        out = tmp_path / "out"
        done = command("p4switch.cli.compile", str(program), "-I", str(inc), *args, "-o", str(out))
        assert done.returncode == 0, done.stderr
        info = text_format.Parse((out / "sized.p4info.txtpb").read_text(), p4info_pb2.P4Info())
        return next(t.size for t in info.tables if t.preamble.name == "IngressImpl.l2")

    assert l2_size() == 16
    assert l2_size("-D", "L2_SIZE=4096") == 4096
    missing = command("p4switch.cli.compile", str(program), "-o", str(tmp_path / "o"))
    assert missing.returncode == 1 and "sizes.p4" in missing.stderr
