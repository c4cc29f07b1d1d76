"""The web view's server without a running fabric: what it serves, where it listens, whom it
obeys (the token of its URL, its own Host and Origin), and the page in headless Chromium (every
switch, NIC and link drawn; one chart per NIC; the cookie the token leaves)."""

from __future__ import annotations

import http.client
import json
import socket
from pathlib import Path

import pytest
import tomllib

from fabric_lab.web import Sources, fabric_json, serve
from fabric_lab.web.server import STATIC
from tests.ports import loose_port
from tests.web.browser import launch, open_view, wait_until
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


def exchange(server, method: str, path: str, body: bytes | None = None,
             headers: dict[str, str] | None = None) -> http.client.HTTPResponse:
    """One request, headers as given (no token unless they or `path` carry it); the response
    read."""
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
        response.body = response.read()  # type: ignore[attr-defined]
        return response
    finally:
        conn.close()


def request(server, method: str, path: str, body: bytes | None = None,
            headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """A request with the token in `Authorization` (as a script sends it)."""
    response = exchange(server, method, path, body,
                        {"Authorization": f"token {server.token}", **(headers or {})})
    return response.status, response.body  # type: ignore[attr-defined]


def post(server, body: dict, **headers: str | None) -> tuple[int, bytes]:
    """The page's command request; a header given as None is left out."""
    base: dict[str, str | None] = {"Origin": f"http://127.0.0.1:{server.port}",
                                   "Authorization": f"token {server.token}",
                                   "Content-Type": "application/json"}
    base.update({k.replace("_", "-"): v for k, v in headers.items()})
    answer = exchange(server, "POST", "/api/action", json.dumps(body).encode(),
                      {k: v for k, v in base.items() if v is not None})
    return answer.status, answer.body  # type: ignore[attr-defined]


def test_listens_on_loopback_only(server):
    addresses = server._runner.addresses
    assert addresses and all(addr[0] == "127.0.0.1" for addr in addresses)
    assert server.url == f"http://127.0.0.1:{server.port}/?token={server.token}"
    assert server.announcement() == f"web view: {server.url} (this machine only)"
    with socket.create_connection(("127.0.0.1", server.port), timeout=2):
        pass


def test_the_drawing_is_the_layout_of_show(server, spec):
    status, page = request(server, "GET", "/")
    assert status == 200 and b"AI Fabric Lab: hpn7 live" in page
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


PATHS = ["/", "/static/app.js", "/static/style.css", "/static/vendor/uplot/uPlot.iife.min.js",
         "/api/fabric", "/api/state", "/api/stream"]


def test_without_the_token_nothing_is_served_pages_and_static_files_included(server):
    assert len(server.token) >= 40  # 32 random bytes
    wrong = server.token[:-1] + ("A" if server.token[-1] != "A" else "B")
    for path in PATHS:
        for how in ({}, {"Authorization": f"token {wrong}"}, {"Authorization": server.token},
                    {"Cookie": f"{server.cookie}={wrong}"},
                    {"Cookie": f"fabric-lab-token-{server.port + 1}={server.token}"}):
            answer = exchange(server, "GET", path, headers=how)
            assert answer.status == 401, (path, how)
            assert server.token.encode() not in answer.body and answer.getheader("Set-Cookie") is None
        assert exchange(server, "GET", f"{path}?token={wrong}").status == 401
        assert exchange(server, "HEAD", path).status == 401
    answer = exchange(server, "GET", "/")
    assert b"?token=" in answer.body  # says what to open
    assert post(server, {"action": "fail", "link": "x"}, Authorization=None)[0] == 401


def test_the_token_opens_every_path_and_no_page_holds_it(server):
    for path in PATHS[:-1]:  # the stream never ends: test_the_state_stream_sends_events
        by_query = exchange(server, "GET", f"{path}?token={server.token}")
        by_header = exchange(server, "GET", path, headers={"Authorization": f"token {server.token}"})
        by_cookie = exchange(server, "GET", path, headers={"Cookie": f"{server.cookie}={server.token}"})
        for answer in (by_query, by_header, by_cookie):
            assert answer.status == 200, path
            assert server.token.encode() not in answer.body, path
        assert by_query.body == by_header.body == by_cookie.body or path == "/api/state"
    for page in (exchange(server, "GET", f"/?token={server.token}"), exchange(server, "GET", "/")):
        assert page.getheader("Content-Security-Policy").startswith("default-src 'self';")
        assert page.getheader("Referrer-Policy") == "no-referrer"


def test_the_url_s_token_leaves_an_http_only_same_site_strict_cookie(server):
    answer = exchange(server, "GET", f"/?token={server.token}")
    cookie = answer.getheader("Set-Cookie")
    name, _, rest = cookie.partition("=")
    value, *attributes = [part.strip() for part in rest.split(";")]
    assert name == f"fabric-lab-token-{server.port}" and value == server.token
    assert {a.lower() for a in attributes} >= {"httponly", "samesite=strict", "path=/"}
    for how in ({"Authorization": f"token {server.token}"},
                {"Cookie": f"{server.cookie}={server.token}"}):
        assert exchange(server, "GET", "/", headers=how).getheader("Set-Cookie") is None


def test_commands_need_the_page_origin_its_token_and_json(server):
    good = {"action": "fail", "link": "no-such-link"}
    assert post(server, good, Origin=None)[0] == 403  # no Origin: not from a browser page
    assert post(server, good, Origin="http://attacker.example")[0] == 403
    assert post(server, good, Origin=f"http://127.0.0.1:{server.port + 1}")[0] == 403
    assert post(server, good, Authorization=None)[0] == 401
    assert post(server, good, Authorization="token guess")[0] == 401
    assert post(server, good, Content_Type="application/x-www-form-urlencoded")[0] == 415
    status, body = post(server, good)  # accepted, and refused by the fabric model
    assert status == 400 and "no-such-link" in json.loads(body)["message"]
    status, body = post(server, {"action": "explode"})
    assert status == 400 and "unknown action" in json.loads(body)["message"]
    status, body = post(server, {"action": "lb", "mode": "ecmp"})
    assert status == 400 and "no controller" in json.loads(body)["message"]
    status, _ = request(server, "GET", "/api/state", headers={"Origin": "http://attacker.example"})
    assert status == 403
    status, body = post(server, good, Authorization=None,  # the page's way: its cookie
                        Cookie=f"{server.cookie}={server.token}")
    assert status == 400 and "no-such-link" in json.loads(body)["message"]


def test_the_state_stream_sends_events(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        conn.request("GET", f"/api/stream?token={server.token}")
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
            address = page.url  # the token gone from the address bar
            cookies = page.context.cookies()
            page.click("#btn-lb")  # a command from the page: its cookie, its origin
            wait_until(lambda: page.locator("#action-result").inner_text() not in ("", "…"), 10,
                       "the answer to the command")
            answer = page.locator("#action-result").inner_text()
            stranger = browser.new_page()  # another browser context: no cookie, no token
            refused = stranger.goto(server.base_url)
            refused_text = stranger.locator("body").inner_text()
        finally:
            browser.close()
    assert address == server.base_url
    assert [(c["name"], c["value"], c["httpOnly"], c["sameSite"]) for c in cookies] == \
        [(server.cookie, server.token, True, "Strict")]
    assert "no controller" in answer
    assert refused.status == 401 and "?token=" in refused_text
    assert switches == len(spec.switches) and nics == len(spec.host_nics())
    assert links == len(spec.links)
    assert options == sum(spec.is_switch(ln.a.node) and spec.is_switch(ln.b.node) for ln in spec.links)
    assert charts == len(spec.host_nics())  # traffic delivered to each NIC, one chart each
    assert status == "no fabric"
    assert (tmp_path / "page.png").stat().st_size > 20_000


def test_a_taken_port_is_one_line_of_the_machine_s_class(server, spec):
    from fabric_lab.web import WebViewError
    from topos.errors import MachineError

    with pytest.raises(WebViewError) as taken:
        serve(spec, None, target="p4switch", sources=Sources(), port=server.port)
    assert isinstance(taken.value, MachineError) and taken.value.exit_status == 3
    assert str(taken.value) == (f"the web view cannot listen on 127.0.0.1:{server.port}: "
                                "Address already in use")


def test_beyond_loopback_it_warns_and_still_wants_the_token(spec):
    port = loose_port()
    wide = serve(spec, None, target="p4switch", sources=Sources(), port=port, host="0.0.0.0")
    try:
        line, warning = wide.announcement().splitlines()
        assert line == f"web view: http://127.0.0.1:{port}/?token={wide.token}"
        assert warning.startswith("warning: the web view listens on every address of this "
                                  "machine, beyond this machine")
        assert "token" in warning
        named = {"Host": f"fabric-lab-box.example:{port}"}  # any name reaches a wildcard address
        assert exchange(wide, "GET", "/api/fabric", headers=named).status == 401
        answer = exchange(wide, "GET", "/api/fabric",
                          headers={**named, "Authorization": f"token {wide.token}"})
        assert answer.status == 200
        status, _ = post(wide, {"action": "explode"}, Host=named["Host"],
                         Origin=f"http://127.0.0.1:{port}")  # another origin than the page's
        assert status == 403
    finally:
        wide.stop()
