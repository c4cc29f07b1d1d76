"""Names from a fabric JSON are text on the page, whatever they hold: a fabric, switch, host, NIC
or interface named like markup is served escaped (the raw page) and drawn as text (headless
Chromium: no element, no script, no navigation comes of it), and the JSON the page reads gives
the names back exactly. The name check of fabric JSON refuses such names before a fabric starts;
the page must not depend on it."""

from __future__ import annotations

import html
import http.client
import json

import pytest

from fabric_lab.web import Sources, fabric_json
from fabric_lab.web.server import WebServer
from tests.ports import loose_port
from tests.web.browser import launch, open_view
from tests.web.conftest import CHROMIUM
from topos import build_fabric
from topos.model import FabricSpec

FABRIC = '<meta http-equiv="refresh" content="0;url=http://attacker.example/">'
NAMES = {  # the leaf-spine's names -> hostile ones
    "leaf0": "<img src=x onerror=alert(1)>",
    "leaf1": "</script><script>alert(2)</script>",
    "spine0": "\"><svg onload=alert(3)>",
    "h0n0": "'-alert(4)-'",
    "h1n0": "${alert(5)}&amp;<b>",
    "srv0": "<iframe src=//attacker.example>",
    "srv1": "<!--",
}


def hostile_spec() -> FabricSpec:
    """A leaf-spine fabric JSON with every name replaced: fabric, nodes, interfaces."""
    data = build_fabric("leafspine", leaves=2, spines=1, hosts_per_leaf=1).to_dict()
    data["name"] = FABRIC
    data["description"] = "<script>alert(6)</script>"
    for sw in data["switches"]:
        sw["name"] = NAMES[sw["name"]]
    for host in data["hosts"]:
        host["name"] = NAMES[host["name"]]
        for nic in host["nics"]:
            nic["name"] = NAMES[nic["name"]]
    for link in data["links"]:
        for end in (link["a"], link["b"]):
            old = end["node"]
            end["node"] = NAMES[old]
            end["intf"] = end["intf"].replace(old, "<i>x</i>;>#")
    return FabricSpec.from_dict(json.loads(json.dumps(data)))


@pytest.fixture(scope="module")
def server():
    spec = hostile_spec()
    from fabric_lab.web import serve

    srv = serve(spec, None, target="p4switch", sources=Sources(status=lambda: "<b>status</b>"),
                port=loose_port())
    yield srv
    srv.stop()


def get(server: WebServer, path: str) -> tuple[int, str, str]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        conn.request("GET", path, headers={"Authorization": f"token {server.token}"})
        response = conn.getresponse()
        return response.status, response.getheader("Content-Type", ""), response.read().decode()
    finally:
        conn.close()


def test_the_page_holds_the_fabric_name_escaped(server):
    status, kind, page = get(server, "/")
    assert status == 200 and kind.startswith("text/html")
    assert FABRIC not in page and "http-equiv" not in page.replace(html.escape(FABRIC), "")
    assert page.count(html.escape(FABRIC)) == 2  # the title and the heading
    assert "<meta" not in page.replace(html.escape(FABRIC), "").split("<title>")[1]


def test_the_drawing_gives_the_names_back_exactly_as_json(server):
    status, kind, body = get(server, "/api/fabric")
    assert status == 200 and kind.startswith("application/json")
    fabric = json.loads(body)
    assert fabric == fabric_json(hostile_spec())
    assert fabric["name"] == FABRIC
    assert {s["name"] for s in fabric["switches"]} == {NAMES["leaf0"], NAMES["leaf1"], NAMES["spine0"]}
    assert {n["name"] for n in fabric["nics"]} == {NAMES["h0n0"], NAMES["h1n0"]}
    assert {h["name"] for h in fabric["hosts"]} == {NAMES["srv0"], NAMES["srv1"]}


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (make setup installs it)")
def test_chromium_draws_every_name_as_text_and_runs_nothing_of_them(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            dialogs: list[str] = []
            page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
            requests: list[str] = []
            page.on("request", lambda request: requests.append(request.url))
            open_view(page, server.url)
            title = page.title()
            heading = page.locator("#fabric-name").inner_text()
            switches = page.locator("#fabric [data-switch] text").all_text_contents()
            nics = page.locator("#fabric [data-nic] text").all_text_contents()
            options = page.locator("#link-select option").all_text_contents()
            status = page.locator("#status").inner_text()
            found = {tag: page.locator(tag).count()
                     for tag in ("meta[http-equiv]", "img", "iframe", "b", "i")}
            scripts = page.locator("script").count()
            drawings = page.locator("svg").count()
            address = page.url
        finally:
            browser.close()
    assert title == f"AI Fabric Lab: {FABRIC} live" and heading == FABRIC
    assert sorted(switches) == sorted([NAMES["leaf0"], NAMES["leaf1"], NAMES["spine0"]])
    assert sorted(nics) == sorted([NAMES["h0n0"], NAMES["h1n0"]])
    assert sorted(options) == sorted(f"{NAMES[leaf]}~{NAMES['spine0']}" for leaf in ("leaf0", "leaf1"))
    assert status == "<b>status</b>"
    assert found == dict.fromkeys(found, 0), found
    assert scripts == 2 and drawings == 1  # the chart library and app.js; the fabric
    assert dialogs == [] and address == server.base_url
    assert all(url.startswith(server.base_url) for url in requests), requests
