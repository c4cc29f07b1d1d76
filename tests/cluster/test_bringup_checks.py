"""A cluster bring-up refuses a misconfigured server in one line naming the cause: a tunnel sshd
does not permit, too few sessions (MaxSessions), a clock that is off, another checkout; and the
frame-each-way check of links between servers sees a link that carries nothing.

The second server is an sshd on 127.0.0.2 with one setting changed. Its clock and checkout are
this machine's, so those two are made to differ by a `date` and a `git` earlier on the PATH
its sessions get (sshd's SetEnv)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.cluster.conftest import leftovers, taps
from tests.cluster.sshd import available, second_server
from tests.cluster.test_cluster_fabric import cl_fabric, fabric_lab, write
from topos.mininet.cluster_checks import CrossLink, LinkEnd, check_links
from topos.mininet.cluster_servers import ClusterError, LocalServer

pytestmark = [pytest.mark.mininet, pytest.mark.root]


def fake_bin(tmp_path: Path, **scripts: str) -> str:
    """A directory of shell scripts named after the keywords; the PATH that puts it first."""
    d = tmp_path / "fakebin"
    d.mkdir()
    for name, body in scripts.items():
        (d / name).write_text(f"#!/bin/sh\n{body}\n")
        (d / name).chmod(0o755)
    return f"PATH={d}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def up_fails(tmp_path: Path, settings: dict[str, str], timeout: float = 120) -> str:
    """`fabric-lab up` of a 2x2 leaf-spine over this machine and a second server with
    `settings`: it must fail, leaving nothing behind; returns its error line."""
    reason = available()
    if reason:
        pytest.skip(reason)
    spec = cl_fabric("leafspine", leaves=2, spines=2, hosts_per_leaf=1)
    before = taps()
    with second_server(tmp_path / "sshd", settings=settings) as server:
        done = fabric_lab(["up", str(write(spec, tmp_path)), "--target", "p4switch",
                           "--pingall"], tmp_path, server, timeout=timeout)
        assert leftovers(spec, server, tmp_path / "run", before) == []
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    errors = [line for line in out.splitlines() if line.startswith("fabric-lab up: ")]
    assert len(errors) == 1, out  # one line, and no traceback
    assert "Traceback" not in out, out
    assert "pingall" not in out
    return errors[0]


def test_a_tunnel_sshd_does_not_permit(tmp_path) -> None:
    line = up_fails(tmp_path, {"PermitTunnel": "no"})
    assert "sshd on 127.0.0.2 lacks `PermitTunnel yes`" in line


def test_too_few_sessions(tmp_path) -> None:
    line = up_fails(tmp_path, {"MaxSessions": "2"})
    assert "sshd on 127.0.0.2 refuses sessions" in line and "`MaxSessions 200`" in line


def test_a_clock_that_is_off(tmp_path) -> None:
    path = fake_bin(tmp_path, date='exec /usr/bin/date -d "@$(($(/usr/bin/date +%s) + 30))" "$@"')
    line = up_fails(tmp_path, {"SetEnv": path})
    assert re.search(r"the clock of 127\.0\.0\.2 is (29|30)\.\d s ahead of this machine's: "
                     r"synchronise both", line), line


def test_another_checkout(tmp_path) -> None:
    path = fake_bin(tmp_path, git="echo 0123456789abcdef0123456789abcdef01234567")
    line = up_fails(tmp_path, {"SetEnv": path})
    assert "127.0.0.2 runs a different checkout" in line and "at commit 0123456789ab there" in line


@pytest.fixture
def veth_pairs():
    """Two veth pairs: (a0, a1) and (b0, b1)."""
    tag = os.getpid() % 100000
    pairs = [(f"clpa{tag}", f"clqa{tag}"), (f"clpb{tag}", f"clqb{tag}")]
    try:
        for x, y in pairs:
            subprocess.run(["ip", "link", "add", x, "type", "veth", "peer", "name", y],
                           check=True)
        yield pairs
    finally:
        for x, _ in pairs:
            subprocess.run(["ip", "link", "del", x], capture_output=True, check=False)


def test_the_link_check_sends_a_frame_each_way(veth_pairs) -> None:
    (a0, a1), (b0, _) = veth_pairs
    here = LocalServer()
    check_links([CrossLink(LinkEnd(here, None, a0), LinkEnd(here, None, a1), "ssh")],
                timeout=2.0)  # a veth pair carries frames both ways
    # a "link" between ends of two different pairs carries nothing, and the check says so
    with pytest.raises(ClusterError) as err:
        check_links([CrossLink(LinkEnd(here, None, a0), LinkEnd(here, None, b0), "gre")],
                    timeout=1.0)
    assert str(err.value).startswith(f"the gre tunnel {a0}@localhost -> {b0}@localhost carries "
                                     "no frames: GRE (IP protocol 47) must pass")
