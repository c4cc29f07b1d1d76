"""The native pipeline (p4switch/native.py): the lab's programs compiled to native code compute
what their Python pipeline computes, frame for frame and counter for counter; builds are kept
and shared; a missing toolchain or a failed build is named, never a crash."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from experiments.framework.engine_switch import EngineSwitch, load_program
from p4switch import native
from p4switch.compile_cache import CACHE_ENV
from tests.differential.packets import FLOWS, cases, roce

REPO = Path(__file__).resolve().parents[2]
UPLINKS = [2, 3, 4]
KNOBS: dict[str, dict] = {"ecmp": {}, "flowlet": {"flowlet_gap_us": 1000},
                          "dlb": {"host_ports": [1]}, "qdlb": {"host_ports": [1]}}


def state_of(sw: EngineSwitch) -> dict[str, list]:
    """Every counter's and register's cells."""
    out: dict[str, list] = {}
    for name, counter in sw.state.counters.items():
        out[name] = [counter.read(i) for i in range(counter.size)]
    for name, register in sw.state.registers.items():
        out[name] = list(register._cells)
    return out


@pytest.mark.parametrize("program", KNOBS)
def test_lab_program_native_matches_python(program: str) -> None:
    """The differential corpus (RoCEv2 with and without reorder tags, PFC, TTL edges, bad
    checksums, truncated and foreign frames), then RoCEv2 leaving queues of every depth (ECN
    marking, telemetry), through both pipelines of one program with the same entries."""
    compiled = load_program(program)
    switches = [EngineSwitch(compiled, UPLINKS, seed=5, native=pipeline == "native",
                             **KNOBS[program]) for pipeline in ("python", "native")]
    assert [sw.engine.pipeline for sw in switches] == ["python", "native"]
    sent = 0
    for case in cases():
        for frame in case.frames:
            outs = []
            for sw in switches:
                sw.now_us += 700  # the same clock on both: flowlets and pauses age alike
                outs.append(sw.engine.process(case.port, frame))
            assert outs[0] == outs[1], f"{program}.p4, {case.name}: frame {sent} differs"
            sent += 1
    for depth in range(0, 400, 7):
        frame = roce(FLOWS[depth % len(FLOWS)], psn=depth)
        outs = []
        for sw in switches:
            sw.now_us += 300
            queued = sw.engine.ingress(1, frame)
            outs.append([sw.engine.egress(q, enq_timestamp=sw.now_us, enq_qdepth=depth,
                                          deq_qdepth=depth // 2, deq_timedelta=depth * 11)
                         for q in queued])
        assert outs[0] == outs[1], f"{program}.p4: RoCEv2 at queue depth {depth} differs"
    assert sent > 50
    assert state_of(switches[0]) == state_of(switches[1])
    assert any(any(cells) for cells in state_of(switches[1]).values())


def test_the_build_is_kept_and_shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One build per source: a second engine, or another process, loads the kept module."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv(native.CFLAGS_ENV, "-O0")
    compiled = load_program("ecmp")
    assert not native.kept(compiled.native_source)
    module = native.native_module(compiled.native_source, "ecmp")
    assert native.kept(compiled.native_source)
    [built] = (tmp_path / "cache" / "native").glob("_p4native_*.so")
    assert native.native_module(compiled.native_source, "ecmp") is module
    before = built.stat().st_mtime_ns
    code = ("import sys; from p4switch import native; "
            "m = native.native_module(sys.stdin.read(), 'ecmp'); print(m.__file__)")
    done = subprocess.run([sys.executable, "-c", code], input=compiled.native_source,
                          capture_output=True, text=True, timeout=120, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(built)
    assert built.stat().st_mtime_ns >= before  # loaded (and marked used), not rebuilt
    assert len(list((tmp_path / "cache" / "native").glob("_p4native_*.so"))) == 1


def test_a_kept_build_that_does_not_load_is_rebuilt(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv(native.CFLAGS_ENV, "-O0 -DP4SWITCH_TEST_CORRUPT")  # a key of its own
    source = load_program("ecmp").native_source
    key = native.build_key(source)
    directory = tmp_path / "cache" / "native"
    directory.mkdir(parents=True)
    broken = directory / f"_p4native_{key[:24]}{native.ext_suffix()}"
    broken.write_bytes(b"\x7fELF truncated")
    module = native.native_module(source, "ecmp")
    assert Path(module.__file__) == broken
    assert broken.stat().st_size > 100_000


def test_without_a_c_compiler_the_reason_is_named(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv("CC", "/nonexistent/cc")
    compiled = load_program("ecmp")
    with pytest.raises(native.NativeUnavailable, match="no C compiler .*/nonexistent/cc"):
        compiled.new_engine(EngineSwitch(compiled, UPLINKS).state, native=True)
    assert not native.kept(compiled.native_source)


def test_without_cython_the_reason_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "Cython", None)  # import Cython -> ImportError
    with pytest.raises(native.NativeUnavailable, match="Cython is not installed"):
        native.toolchain()


def test_a_failed_build_says_where(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    with pytest.raises(native.NativeUnavailable,
                       match=r"(?s)Cython on broken failed \(exit \d+\):\n.*_p4native_\w+\.pyx:1:"):
        native.native_module("def make(:\n", "broken")
    assert not list((tmp_path / "cache" / "native").glob("_p4native_*.so"))
