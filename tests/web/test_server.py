"""The web view's server without a running fabric: what it serves, where it listens, whom it
obeys, and the page in headless Chromium (every switch, NIC and link drawn; one chart per NIC)."""

from __future__ import annotations

import http.client
import json
import socket
from pathlib import Path

import pytest
import tomllib

from fabric_lab.web import Sources, fabric_json, serve
from fabric_lab.web.server import STATIC, TOKEN_HEADER
from tests.web.browser import launch, open_view
from tests.web.conftest import CHROMIUM, ROOT
from topos import build_fabric, drawing


@pytest.fixture(scope="module")
def spec():
    return build_fabric("hpn7")


@pytest.fixture(scope="module")
def server(spec):
    srv = serve(spec, None, target="p4switch", sources=Sources(status=lambda: "no fabric"), port=0)
    yield srv
    srv.stop()


def request(server, method: str, path: str, body: bytes | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        conn.putrequest(method, path, skip_host=True)
        hdrs = {"Host": f"127.0.0.1:{server.port}", **(headers or {})}
        for key, value in hdrs.items():
            conn.putheader(key, value)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def post(server, body: dict, **headers: str) -> tuple[int, bytes]:
    base = {"Origin": f"http://127.0.0.1:{server.port}", TOKEN_HEADER: server.token,
            "Content-Type": "application/json"}
    base.update({k.replace("_", "-"): v for k, v in headers.items()})
    return request(server, "POST", "/api/action", json.dumps(body).encode(),
                   {k: v for k, v in base.items() if v is not None})


def test_listens_on_loopback_only(server):
    addresses = server._runner.addresses
    assert addresses and all(addr[0] == "127.0.0.1" for addr in addresses)
    assert server.url == f"http://127.0.0.1:{server.port}/"
    with socket.create_connection(("127.0.0.1", server.port), timeout=2):
        pass


def test_the_page_carries_a_token_and_the_drawing_is_the_layout_of_show(server, spec):
    status, page = request(server, "GET", "/")
    assert status == 200 and f'content="{server.token}"'.encode() in page
    status, body = request(server, "GET", "/api/fabric")
    fabric = json.loads(body)
    pos, _rows = drawing.layout(spec)
    assert {s["name"] for s in fabric["switches"]} == {s.name for s in spec.switches}
    assert {n["name"] for n in fabric["nics"]} == {n.name for n in spec.host_nics()}
    assert len(fabric["links"]) == len(spec.links)
    for node in fabric["switches"] + fabric["nics"]:
        assert (node["x"], node["y"]) == pos[node["name"]]
    assert fabric == fabric_json(spec)


def test_requests_naming_another_host_are_refused(server):
    for path in ("/", "/api/state", "/api/stream"):
        status, body = request(server, "GET", path, headers={"Host": "attacker.example"})
        assert status == 403 and b"Host" in body
    status, _ = request(server, "GET", "/api/state", headers={"Host": f"localhost:{server.port}"})
    assert status == 200


def test_commands_need_the_page_origin_its_token_and_json(server):
    good = {"action": "fail", "link": "no-such-link"}
    assert post(server, good, Origin=None)[0] == 403  # no Origin: not from a browser page
    assert post(server, good, Origin="http://attacker.example")[0] == 403
    assert post(server, good, Origin=f"http://127.0.0.1:{server.port + 1}")[0] == 403
    assert post(server, good, X_Fabric_Lab_Token=None)[0] == 403
    assert post(server, good, X_Fabric_Lab_Token="guess")[0] == 403
    assert post(server, good, Content_Type="application/x-www-form-urlencoded")[0] == 415
    status, body = post(server, good)  # accepted, and refused by the fabric model
    assert status == 400 and "no-such-link" in json.loads(body)["message"]
    status, body = post(server, {"action": "explode"})
    assert status == 400 and "unknown action" in json.loads(body)["message"]
    status, body = post(server, {"action": "lb", "mode": "ecmp"})
    assert status == 400 and "no controller" in json.loads(body)["message"]
    status, _ = request(server, "GET", "/api/state", headers={"Origin": "http://attacker.example"})
    assert status == 403


def test_the_state_stream_sends_events(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        conn.request("GET", "/api/stream")
        response = conn.getresponse()
        assert response.status == 200
        assert response.getheader("Content-Type") == "text/event-stream"
        event = b""
        while not event.endswith(b"\n\n") and len(event) < 1 << 20:
            event += response.read(1)  # chunked: http.client decodes it
        assert event.startswith(b"data: ")
        state = json.loads(event[6:])
    finally:
        conn.close()
    assert state["status"] == "no fabric" and len(state["links"]) == 32


def test_the_chart_library_is_vendored_with_its_licence_and_packaged():
    vendor = STATIC / "vendor" / "uplot"
    assert "MIT License" in (vendor / "LICENSE").read_text()
    assert (vendor / "uPlot.iife.min.js").stat().st_size > 40_000
    assert "1.6.32" in (vendor / "VERSION").read_text()
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    patterns = data["fabric_lab.web"]
    for path in STATIC.rglob("*"):
        if path.is_file():
            rel = path.relative_to(STATIC.parent)
            assert any(rel.match(p) for p in patterns), f"{rel} is not package data"
    assert "/static/vendor/uplot/uPlot.iife.min.js" in (STATIC / "index.html").read_text()


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (make setup installs it)")
def test_the_page_draws_every_switch_nic_and_link_in_chromium(server, spec, tmp_path: Path):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            open_view(page, server.url)
            switches = page.locator("#fabric [data-switch]").count()
            nics = page.locator("#fabric [data-nic]").count()
            links = page.locator("#fabric line.link").count()
            charts = page.locator("#flows-chart canvas").count()
            options = page.locator("#link-select option").count()
            status = page.locator("#status").text_content()
            page.screenshot(path=str(tmp_path / "page.png"))
        finally:
            browser.close()
    assert switches == len(spec.switches) and nics == len(spec.host_nics())
    assert links == len(spec.links)
    assert options == sum(spec.is_switch(ln.a.node) and spec.is_switch(ln.b.node) for ln in spec.links)
    assert charts == len(spec.host_nics())  # traffic delivered to each NIC, one chart each
    assert status == "no fabric"
    assert (tmp_path / "page.png").stat().st_size > 20_000
