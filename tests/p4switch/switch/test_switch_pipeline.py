"""`p4switch --pipeline`: a switch runs its program natively, or as Python, and says which; a
native pipeline that cannot be built is a named error where it was asked for and a logged
fallback where it was not."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2 as pb
from sw_frames import eth, mac
from sw_netenv import drain, raw_socket, recv_frames
from sw_p4rt import PROGRAMS, Client, compile_program, load_p4info
from sw_proc import REPO, SwitchProcess

from p4switch.compile_cache import CACHE_ENV
from p4switch.native import CFLAGS_ENV
from p4switch.p4info.index import P4InfoIndex

pytestmark = pytest.mark.root
PROGRAM = PROGRAMS / "switch_test.p4"


@pytest.fixture
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty compile cache for the switches of the test (quick -O0 native builds)."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.setenv(CFLAGS_ENV, "-O0")
    return tmp_path / "cache"


def push(sw: SwitchProcess, outdir: Path) -> tuple[Client, P4InfoIndex]:
    p4info_path, config_path = compile_program(PROGRAM, outdir)
    p4info = load_p4info(p4info_path)
    client = Client(sw.addr, election=10)
    assert client.next("arbitration").status.code == code_pb2.OK
    client.set_pipeline(p4info, config_path.read_bytes())
    return client, P4InfoIndex(p4info)


def forward_1_to_2(client: Client, index: P4InfoIndex) -> None:
    te = pb.TableEntry(table_id=index.id("tables", "TestIngress.fwd"))
    te.match.add(field_id=1).exact.value = bytes([1])
    te.action.action.action_id = index.id("actions", "TestIngress.forward")
    te.action.action.params.add(param_id=1, value=(2).to_bytes(2, "big"))
    client.write(pb.Update(type=pb.Update.INSERT, entity=pb.Entity(table_entry=te)))


def test_native_pipeline_is_built_and_forwards(net, tmp_path: Path, fresh_cache: Path) -> None:
    hosts = [net.host(f"h{i}") for i in (1, 2)]
    ifs = [net.link(h, "eth0", i + 1) for i, h in enumerate(hosts)]
    socks = [raw_socket(h, "eth0") for h in hosts]
    args = [a for i, name in enumerate(ifs) for a in ("-i", f"{i + 1}@{name}")]
    with SwitchProcess([*args, "--pipeline", "native", "--no-p4"], log=True) as sw:
        client, index = push(sw, tmp_path)
        forward_1_to_2(client, index)
        drain(socks[1])
        frames = [eth(mac(2), mac(1), 0x0800, bytes([n]) * 40) for n in range(5)]
        for frame in frames:
            socks[0].send(frame)
        assert recv_frames(socks[1], 5.0, count=len(frames)) == frames
        client.close()
        assert "program switch_test: native pipeline" in sw.stderr()
    assert len(list((fresh_cache / "native").glob("_p4native_*.so"))) == 1
    for s in socks:
        s.close()


@pytest.mark.parametrize("pipeline", ["auto", "c"])
def test_c_data_plane_forwards_and_counts(net, tmp_path: Path, fresh_cache: Path,
                                          pipeline: str) -> None:
    """`--pipeline auto` (the default) and `c`: the program runs on the C data plane, with the
    entries P4Runtime writes, its direct counter read back over P4Runtime
    (test_switch_p4runtime.py runs the rest of P4Runtime on it), and SIGTERM stops it while its
    loop runs in C; a switch that logs packets keeps a Python pipeline and says why."""
    hosts = [net.host(f"h{i}") for i in (1, 2)]
    ifs = [net.link(h, "eth0", i + 1) for i, h in enumerate(hosts)]
    socks = [raw_socket(h, "eth0") for h in hosts]
    args = [a for i, name in enumerate(ifs) for a in ("-i", f"{i + 1}@{name}")]
    with SwitchProcess([*args, "--pipeline", pipeline, "--no-p4"]) as sw:
        client, index = push(sw, tmp_path)
        assert sw.command("show_pipeline") == "c"
        forward_1_to_2(client, index)
        drain(socks[1])
        frames = [eth(mac(2), mac(1), 0x0800, bytes([n]) * 40) for n in range(5)]
        for frame in frames:
            socks[0].send(frame)
        assert recv_frames(socks[1], 5.0, count=len(frames)) == frames
        dc = pb.DirectCounterEntry()
        dc.table_entry.table_id = index.id("tables", "TestIngress.fwd")
        dc.table_entry.match.add(field_id=1).exact.value = bytes([1])
        (entity,) = client.read(pb.Entity(direct_counter_entry=dc))
        counted = entity.direct_counter_entry.data
        assert (counted.packet_count, counted.byte_count) == (5, sum(map(len, frames)))
        client.close()
        # SIGTERM ends it (status 0), not the SIGKILL after 5 s: the signal wakes the C loop
        assert sw.stop() == 0
    with SwitchProcess([*args, "--pipeline", pipeline, "--no-p4"], log=True) as sw:
        client, _ = push(sw, tmp_path)
        assert sw.command("show_pipeline") in ("native", "python")
        client.close()
        assert "program switch_test: not on the C data plane: it does not log packets" \
            in sw.stderr()
    for s in socks:
        s.close()


def test_compile_c_builds_what_a_c_switch_loads(net, tmp_path: Path, fresh_cache: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """`p4switch-compile --c` (what `make setup` runs) leaves the first switch to load the
    program nothing to build; without a C compiler it says why, with status 3."""
    built = subprocess.run([sys.executable, "-m", "p4switch.cli.compile", str(PROGRAM), "--c"],
                           cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert built.returncode == 0, built.stderr
    kept = sorted(p.name for p in (fresh_cache / "cdp").glob("*.so"))
    assert len(kept) == 5, kept  # the program's, the loop's, the ports', tables' and TM's
    hosts = [net.host(f"h{i}") for i in (1, 2)]
    ifs = [net.link(h, "eth0", i + 1) for i, h in enumerate(hosts)]
    args = [a for i, name in enumerate(ifs) for a in ("-i", f"{i + 1}@{name}")]
    with SwitchProcess([*args, "--no-p4"]) as sw:  # --pipeline auto
        client, _ = push(sw, tmp_path)
        assert sw.command("show_pipeline") == "c"
        client.close()
    assert sorted(p.name for p in (fresh_cache / "cdp").glob("*.so")) == kept
    monkeypatch.setenv("CC", "/nonexistent/cc")
    refused = subprocess.run([sys.executable, "-m", "p4switch.cli.compile", str(PROGRAM),
                              "--c"], cwd=REPO, capture_output=True, text=True, timeout=120,
                             check=False)
    assert refused.returncode == 3
    assert "switch_test.p4: no C data plane: no C compiler" in refused.stderr, refused.stderr


def test_auto_runs_python_until_the_native_pipeline_is_built(tmp_path: Path,
                                                             fresh_cache: Path) -> None:
    """Where the C data plane does not run the program (here: the switch logs packets)."""
    with SwitchProcess(["--no-p4"], log=True) as sw:  # --pipeline auto
        client, _ = push(sw, tmp_path)
        client.close()
        assert "program switch_test: Python pipeline (its native pipeline is not built: " \
            "p4switch-compile --native builds it)" in sw.stderr()
    assert not (fresh_cache / "native").exists()  # auto never waits for a build
    built = subprocess.run([sys.executable, "-m", "p4switch.cli.compile", str(PROGRAM),
                            "--native"], cwd=REPO, capture_output=True, text=True, timeout=300,
                           check=False)
    assert built.returncode == 0, built.stderr
    with SwitchProcess(["--no-p4"], log=True) as sw:
        client, _ = push(sw, tmp_path)
        client.close()
        assert "program switch_test: native pipeline" in sw.stderr()


def test_without_a_compiler_native_is_refused_and_auto_falls_back(
        tmp_path: Path, fresh_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", "/nonexistent/cc")
    started = subprocess.run([sys.executable, "-m", "p4switch.cli.switch", "--pipeline",
                              "native", str(PROGRAM)], cwd=REPO, capture_output=True,
                             text=True, timeout=60, check=False)
    assert started.returncode != 0
    assert "program switch_test: --pipeline native: no C compiler (/nonexistent/cc not found" \
        in started.stderr, started.stderr
    with SwitchProcess(["--pipeline", "native", "--no-p4"]) as sw:
        with pytest.raises(grpc.RpcError) as err:
            push(sw, tmp_path)
        assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "no C compiler" in (err.value.details() or "")
        assert sw.alive()
    compiled = subprocess.run([sys.executable, "-m", "p4switch.cli.compile", str(PROGRAM),
                               "--native"], cwd=REPO, capture_output=True, text=True,
                              timeout=120, check=False)
    assert compiled.returncode == 3  # this machine cannot build the native pipeline
    assert "no native pipeline: no C compiler" in compiled.stderr
    with SwitchProcess(["--pipeline", "python", "--no-p4"], log=True) as sw:
        client, _ = push(sw, tmp_path)
        client.close()
        assert "program switch_test: Python pipeline (--pipeline python)" in sw.stderr()
    with SwitchProcess(["--no-p4"], log=True) as sw:  # auto: neither C nor native
        client, _ = push(sw, tmp_path)
        client.close()
        assert sw.command("show_pipeline") == "python"
        assert "--pipeline auto: the data-plane loop runs in Python: no C compiler" \
            in sw.stderr()
