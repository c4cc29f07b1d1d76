"""`fabric-lab traffic ...` as a user runs it: help, usage errors (exit 2), real runs."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from traffic.hosts import PROJECT_ROOT

CLI = [sys.executable, "-m", "fabric_lab.cli", "traffic"]


def cli(*args: str, prefix: list[str] | None = None, timeout: float = 60):
    return subprocess.run([*(prefix or []), *CLI, *args], capture_output=True, text=True,
                          cwd=PROJECT_ROOT, timeout=timeout)


@pytest.mark.parametrize("action", ["send", "recv"])
def test_help(action):
    proc = cli(action, "--help")
    assert proc.returncode == 0
    assert "--iface" in proc.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["send", "--iface", "lo", "--dst", "10.0.0.1", "--rate", "0"], "rate must be > 0"),
    (["send", "--iface", "lo", "--dst", "10.0.0.1", "--rate=-5M"], "rate must be > 0"),
    (["send", "--iface", "lo", "--dst", "10.0.0.1", "--rate", "fast"], "bad rate"),
    (["send", "--iface", "trnope0", "--dst", "10.0.0.1"], "interface 'trnope0' does not exist"),
    (["send", "--iface", "lo", "--dst", "no-such-host.invalid"], "unknown host"),
    (["send", "--iface", "lo", "--dst", "10.0.0.1", "--size", "0"], "size must be > 0"),
    (["recv", "--iface", "trnope0"], "interface 'trnope0' does not exist"),
    (["recv", "--iface", "lo", "--expect", "10.0.0.1:x:5"], "bad --expect"),
])
def test_usage_errors_exit_2_with_a_clear_message(args, message):
    proc = cli(*args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr


@pytest.mark.root
def test_recv_writes_csv_and_json(pair_net, tmp_path):
    a, b = pair_net.hosts["a"], pair_net.hosts["b"]
    size = 100 * 1024
    rx = subprocess.Popen(
        ["ip", "netns", "exec", b.netns, *CLI, "recv", "--iface", b.iface, "--out-dir",
         str(tmp_path), "--expect", f"{a.ip}:100:{size}", "--expect", f"{a.ip}:101:{size}",
         "--duration", "30"],
        cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert rx.stderr.readline().startswith("listening on")  # readiness
        tx = cli("send", "--iface", a.iface, "--dst", b.ip, "--qps", "2", "--rate", "10M",
                 "--size", "100K", "--json", str(tmp_path / "send.json"),
                 prefix=["ip", "netns", "exec", a.netns])
        assert tx.returncode == 0, tx.stderr
        out, err = rx.communicate(timeout=30)
    finally:
        if rx.poll() is None:
            rx.kill()
            rx.wait()
    assert rx.returncode == 0, err
    summary = json.loads((tmp_path / "recv.json").read_text())
    assert summary["bytes"] == 2 * size
    assert {q["qpn"] for q in summary["qps"]} == {100, 101}
    with (tmp_path / "recv.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert sum(int(r["rx_bytes"]) for r in rows) == 2 * size
    assert {r["qpn"] for r in rows} == {"100", "101"}
    sent = json.loads((tmp_path / "send.json").read_text())
    assert sent["payload_bytes"] == 2 * size


@pytest.mark.root
def test_send_rejects_packets_larger_than_the_mtu(pair_net):
    a, b = pair_net.hosts["a"], pair_net.hosts["b"]
    proc = cli("send", "--iface", a.iface, "--dst", b.ip, "--mtu", "1480",
               prefix=["ip", "netns", "exec", a.netns])
    assert proc.returncode == 2
    assert f"exceed the MTU 1500 of {a.iface}" in proc.stderr


def test_the_same_tool_runs_as_python_m_traffic():
    """`python -m traffic` is the tool `fabric-lab traffic`, the Mininet CLI and the experiments
    run: the same actions, its own name in errors, and the paced flows' roles."""
    tool = [sys.executable, "-m", "traffic"]
    listed = subprocess.run([*tool, "--help"], capture_output=True, text=True, cwd=PROJECT_ROOT)
    assert listed.returncode == 0
    assert all(action in listed.stdout for action in ("send", "recv", "paced", "worker"))
    bad = subprocess.run([*tool, "send", "--iface", "lo", "--dst", "10.0.0.1", "--size", "0"],
                         capture_output=True, text=True, cwd=PROJECT_ROOT)
    assert bad.returncode == 2 and "python -m traffic send: error" in bad.stderr
    flow = subprocess.run([*tool, "paced", "send", "--flow", "10.0.0.1:7"], capture_output=True,
                          text=True, cwd=PROJECT_ROOT)
    assert flow.returncode == 2 and "want DST_IP:QPN:SPORT" in flow.stderr


def test_paced_build_keeps_both_c_loops_or_names_what_is_missing():
    """`paced build` (what `make setup` runs): both libraries built and kept where a compiler
    is; exit 1 with the reason for each where none is."""
    proc = cli("paced", "build")
    assert proc.returncode == 0, proc.stderr
    built = [line.rsplit(": ", 1)[1] for line in proc.stdout.splitlines()]
    assert [Path(p).name.split("-")[0] for p in built] == ["paced_send", "paced_recv"]
    assert all(Path(p).is_file() for p in built)
    env = {**os.environ, "CC": "/nonexistent/cc"}
    proc = subprocess.run([*CLI, "paced", "build"], capture_output=True, text=True,
                          cwd=PROJECT_ROOT, timeout=60, env=env)
    assert proc.returncode == 1
    assert proc.stderr.count("cannot be built here: no C compiler") == 2, proc.stderr
