"""`diagnose` on a real fabric (Mininet, p4switch, ecmp.p4), one bring-up, one fault at a time:
healthy (nothing named), the demo's silent stage (a ToR uplink dropping 30% of its frames, as
`fabric-lab demo` fails it), a rate-degraded ToR port (as the straggler experiment slows it;
diagnosed from the web view's button, whose INT panel then shows a real flow's hops into that
port and marks the link, in the JSON state and on the page in headless Chromium), a data queue
held by PFC pauses from a NIC."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request

import pytest

from controller.diagnose.probes import ProbePlan
from controller.diagnose.run import Diagnosis, diagnose
from controller.queues import run_commands
from experiments.framework.session import FabricSession
from fabric_lab.web import IntPanel, Sources, WebServer, serve
from mechanisms import program_path
from targets import get_target
from tests.ports import FABRICS
from tests.web.browser import launch, open_view, wait_until
from tests.web.conftest import CHROMIUM
from topos import build_fabric
from topos.mininet.failures import find_link, link_name, set_silent_drop

pytestmark = [pytest.mark.mininet, pytest.mark.root, pytest.mark.slow, pytest.mark.timeout(300)]
ISOLATION = FABRICS["diagnose"]
PREFIX = ISOLATION.prefix
PAUSE_LOOP = """
import sys, time
from traffic.pfc import send_pause
from tests.ports import FABRICS
while True:
    send_pause(sys.argv[1], {3: 65535})
    print("paused", flush=True)
    time.sleep(0.5)
"""


def _run(session: FabricSession) -> Diagnosis:
    spec = session.spec
    hosts = {nic.name: session.host(nic.name) for nic in spec.host_nics()}
    return diagnose(spec, hosts, session.target, plan=ProbePlan.between(spec))


def _ends(d: Diagnosis, rank: int = 0) -> tuple[str, str]:
    return d.findings[rank].ends()


def _web(session: FabricSession) -> WebServer:
    """The web view with its INT panel, probing from the session's hosts."""
    spec = session.spec
    hosts = {nic.name: session.host(nic.name) for nic in spec.host_nics()}
    return serve(spec, session.ctl, target=session.target, sources=Sources(),
                 inband=IntPanel(spec, session.target, lambda: hosts))


def _state(server: WebServer) -> dict:
    with urllib.request.urlopen(server.url_for("api/state"), timeout=10) as response:
        return json.loads(response.read())


def _page(server: WebServer, hops: int) -> dict | None:
    """What headless Chromium shows of the INT panel (None without Chromium)."""
    if CHROMIUM is None:
        return None
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            open_view(page, server.url)
            rows = page.locator("#int-hops tbody tr")
            wait_until(lambda: rows.count() == hops, 10, "the traced hops on the page")
            return {"rows": [rows.nth(i).locator("td").all_inner_texts() for i in range(hops)],
                    "marked": [page.locator("#fabric .link.named").nth(i).get_attribute("data-link")
                               for i in range(page.locator("#fabric .link.named").count())],
                    "diagnosis": page.locator("#int-diagnosis").inner_text()}
        finally:
            browser.close()


def _post(server: WebServer, body: dict) -> str:
    """A button of the page: the request as the page sends it (origin, token, JSON)."""
    request = urllib.request.Request(
        server.url_for("api/action"), data=json.dumps(body).encode(), method="POST",
        headers={"Origin": server.base_url.rstrip("/"), "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        answer = json.loads(response.read())
    assert answer["ok"], answer
    return answer["message"]


def test_diagnose_names_the_bad_link(tmp_path) -> None:
    pytest.importorskip("p4switch.compiler", reason="the p4switch compiler is not in the tree")
    spec = ISOLATION.apply(build_fabric("leafspine", leaves=2, spines=2, hosts_per_leaf=2))
    leaf0, leaf1, spine0 = (f"{PREFIX}{n}" for n in ("leaf0", "leaf1", "spine0"))
    uplink = find_link(spec, leaf0, spine0)
    victim = spec.host_nics()[-1].name  # behind leaf1
    (tor, port), = spec.attachments(victim)
    pauser = spec.host_nics()[0].name  # behind leaf0
    (pause_tor, pause_port), = spec.attachments(pauser)
    target = get_target("p4switch").with_queues(8, 10.0)  # PFC classes: the data class is 3
    with FabricSession(spec, program=program_path("ecmp"), target=target,
                       log_dir=tmp_path) as session:
        healthy = _run(session)
        print(healthy.table())
        # every flow's path is known (a software switch starved of CPU may drop a frame now and
        # then: the probes see that too, and stay below what names a link)
        assert healthy.result is not None and healthy.probes_sent > 0
        assert {p.flow for p in healthy.result.arrived()} == {p.flow for p in healthy.result.probes}
        assert healthy.findings == [], healthy.table()

        set_silent_drop(spec, uplink, 0.3)  # the demo's silent stage
        try:
            silent = _run(session)
        finally:
            set_silent_drop(spec, uplink, 0.0)
        print(silent.table())
        assert silent.named is not None and silent.named.symptom == "drops"
        assert set(_ends(silent)) == {leaf0, spine0}
        assert silent.named.evidence["lost"] >= 5

        thrift = spec.switch(tor).thrift_port
        run_commands("p4switch", thrift, [f"set_queue_depth 128 {port}",
                                          f"set_queue_rate 100 {port}"])  # as straggler slows it
        try:
            server = _web(session)  # the page's buttons: Diagnose, then Trace flow
            try:
                slow = _post(server, {"action": "diagnose"})
                traced = _post(server, {"action": "int", "src": pauser, "dst": victim})
                section = _state(server)["int"]
                page = _page(server, len(section["flow"]["hops"]))
            finally:
                server.stop()
        finally:
            run_commands("p4switch", thrift, [f"set_queue_rate 0 {port}"])
        print(slow, traced, json.dumps(section, indent=1), sep="\n")
        named = section["diagnosis"]["named"]
        assert named["symptom"] == "slow" and named["src"] == f"{tor}:{port}"
        assert named["link_name"] == link_name(find_link(spec, tor, victim))
        assert named["evidence"]["served_mbps"] < 0.5 * named["evidence"]["link_mbps"]
        flow = section["flow"]
        assert (flow["src"], flow["dst"]) == (pauser, victim) and flow["arrived"] > 0
        hops = flow["hops"]
        assert [h["switch"] for h in hops][0::len(hops) - 1] == [pause_tor, tor]
        assert hops[0]["ingress_port"] == pause_port and hops[-1]["egress_port"] == port
        assert hops[-1]["link"] == named["link_name"] and hops[-1]["link_mbps"] == 10
        assert hops[-1]["qdepth_max"] > 0 and hops[-1]["hop_latency_max_us"] > 0  # queued there,
        assert all(h["qdepth_max"] < hops[-1]["qdepth_max"] for h in hops[:-1])  # the most there
        if page is not None:  # the page draws it: the hops, the named link marked
            assert page["marked"] == [named["link_name"]] and page["rows"][-1][1] == tor
            assert page["rows"][-1][3] == str(port) and named["link"] in page["diagnosis"]

        host = session.host(pauser)  # the NIC keeps pausing its ToR's data queue towards it
        pauses = host.popen([sys.executable, "-c", PAUSE_LOOP, host.iface],
                            stdout=subprocess.PIPE, text=True)
        try:
            assert pauses.stdout is not None and pauses.stdout.readline() == "paused\n"
            paused = _run(session)
        finally:
            pauses.terminate()
            pauses.wait(10)
        print(paused.table())
        assert paused.named is not None and paused.named.symptom == "paused"
        assert paused.named.src == f"{pause_tor}:{pause_port}"
        assert paused.named.evidence["pfc_frames_rx"] > 0
