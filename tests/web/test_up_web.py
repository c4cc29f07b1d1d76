"""`fabric-lab up FABRIC --web` as a user runs it: the page is served while the Mininet CLI
runs, a link failed at the CLI shows as down with the controller's reroute, and a command from
the page (with the token of the URL it printed) restores it; without the token nothing is served."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.ports import FABRICS
from tests.web.browser import wait_until
from topos import build_fabric
from topos.mininet.failures import find_link, link_name

pytestmark = [pytest.mark.mininet, pytest.mark.root, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
ISOLATION = FABRICS["web-up"]
PREFIX = ISOLATION.prefix


def _get(url: str, token: str, path: str) -> bytes:
    with urllib.request.urlopen(f"{url.rstrip('/')}{path}?token={token}", timeout=5) as response:
        return response.read()


def _post(url: str, token: str, body: dict) -> dict:
    request = urllib.request.Request(
        url.rstrip("/") + "/api/action", data=json.dumps(body).encode(), method="POST",
        headers={"Origin": url.rstrip("/"), "Authorization": f"token {token}",
                 "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def test_up_serves_the_web_view_while_the_cli_runs(tmp_path):
    pytest.importorskip("p4switch.compiler", reason="the p4switch compiler is not in the tree")
    spec = ISOLATION.apply(build_fabric("leafspine", leaves=2, spines=2, hosts_per_leaf=1))
    path = tmp_path / "wuleafspine.json"
    path.write_text(spec.to_json())
    env = {**os.environ, "FABRIC_LAB_RUN_DIR": str(tmp_path / "run"), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "fabric_lab.cli", "up", str(path), "--target",
                             "p4switch", "--web", "--web-port", "0"], cwd=ROOT, env=env,
                            text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    seen: list[str] = []
    try:
        url = token = None
        for line in proc.stdout:
            seen.append(line)
            found = re.search(r"web view: (http://127\.0\.0\.1:\d+/)\?token=(\S+)", line)
            if found:
                url, token = found.groups()
                break
        assert url and token, "".join(seen)
        with pytest.raises(urllib.error.HTTPError) as refused:  # no token, no page
            urllib.request.urlopen(url, timeout=5)
        assert refused.value.code == 401
        page = _get(url, token, "/").decode()
        assert token not in page and "fabric-lab-token" not in page
        assert len(json.loads(_get(url, token, "/api/fabric"))["links"]) == len(spec.links)
        link = link_name(find_link(spec, f"{PREFIX}leaf0", f"{PREFIX}spine1"))

        def state() -> dict:
            return json.loads(_get(url, token, "/api/state"))

        def link_state() -> str:  # none before the view's first sample
            return state()["links"].get(link, {}).get("state", "")

        proc.stdin.write(f"link_fail {PREFIX}leaf0 {PREFIX}spine1\n")
        proc.stdin.flush()
        wait_until(lambda: link_state() == "down", 10, f"{link} down")
        wait_until(lambda: any(e["link"] == link and not e["up"] and e["reroute_ms"] is not None
                               for e in state()["events"]), 10, "the reroute event")
        answer = _post(url, token, {"action": "restore", "link": link})
        assert answer == {"ok": True, "message": f"{link} up"}
        wait_until(lambda: link_state() == "up", 10, f"{link} up again")
        wait_until(lambda: any(e["link"] == link and e["up"] and e["reroute_ms"] is not None
                               for e in state()["events"]), 10, "the restore event")
        src, dst = spec.host_nics()[0].name, spec.host_nics()[-1].name  # the INT panel's trace
        traced = _post(url, token, {"action": "int", "src": src, "dst": dst})
        assert traced["ok"], traced
        def traced_flow() -> dict | None:  # the page's state is up to 0.2 s old (a cache)
            return (state()["int"] or {}).get("flow")

        wait_until(lambda: traced_flow() is not None, 5, "the trace in the page's state")
        hops = traced_flow()["hops"]
        assert [h["switch"] for h in hops][0::2] == [f"{PREFIX}leaf0", f"{PREFIX}leaf1"]
        assert hops[-1]["link"] == link_name(find_link(spec, f"{PREFIX}leaf1", dst))
        proc.stdin.write("exit\n")
        proc.stdin.flush()
        rest, _ = proc.communicate(timeout=60)
        seen.append(rest)
    finally:
        if proc.poll() is None:
            proc.terminate()  # `up` takes the fabric down on SIGTERM
            proc.wait(60)
    assert proc.returncode == 0, "".join(seen)
    with pytest.raises(OSError):  # the view went with the fabric
        _get(url, token, "/api/state")
