"""The web view of a running fabric in headless Chromium: a link failed from the page shows as
failed and the controller's reroute appears; a link degraded from the page is found and isolated
by the probes; the load-balancing mode switches from the page. HPN 7.0 on p4switch, with the
controller's reconvergence loop and probes running and flows crossing the fabric."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from experiments.framework.failover_lab import FailoverLab
from fabric_lab.web import Sources, serve
from tests.ports import FABRICS
from tests.web.browser import launch, open_view, wait_until
from tests.web.conftest import CHROMIUM
from topos import build_fabric
from topos.mininet.failures import link_states

pytestmark = [pytest.mark.mininet, pytest.mark.root, pytest.mark.slow,
              pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed")]
ISOLATION = FABRICS["web-fabric"]
PREFIX = ISOLATION.prefix


def link_class(page, name: str) -> str:
    return page.locator(f'#fabric line.link[data-link="{name}"]').get_attribute("class") or ""


def events_text(page) -> str:
    return page.locator("#events").inner_text()


def act(page, link: str, button: str) -> str:
    page.select_option("#link-select", link)
    before = page.locator("#action-result").text_content()
    page.click(button)
    wait_until(lambda: page.locator("#action-result").text_content() not in (before, "…"), 30,
               f"an answer to {button}")
    return page.locator("#action-result").text_content()


def test_fail_degrade_and_switch_mode_from_the_page(tmp_path: Path):
    from playwright.sync_api import sync_playwright

    pytest.importorskip("p4switch.compiler", reason="the p4switch compiler is not in the tree")
    spec = ISOLATION.apply(build_fabric("hpn7"))
    with FailoverLab(spec, target="p4switch", log_dir=tmp_path / "logs") as lab:
        flows = lab.plan_flows(lab.default_pairs(), per_pair=2)
        sources = Sources(events=lambda: list(lab.rc.events),
                          isolated=lambda: set(lab.prober.isolated), status=lambda: "test")
        server = serve(spec, lab.ctl, target="p4switch", sources=sources, port=0)
        try:
            with lab.start_flows(flows, pps=200) as _run, sync_playwright() as playwright:
                browser = launch(playwright)
                try:
                    page = browser.new_page(viewport={"width": 1400, "height": 1050})
                    open_view(page, server.url)
                    _check_page(page, spec, lab, tmp_path)
                finally:
                    browser.close()
        finally:
            server.stop()


def _check_page(page, spec, lab, tmp_path: Path) -> None:
    fabric_links = [ln for ln in spec.links if spec.is_switch(ln.a.node) and spec.is_switch(ln.b.node)]
    assert page.locator("#fabric [data-switch]").count() == len(spec.switches)
    assert page.locator("#fabric line.link").count() == len(spec.links)
    names = [f"{ln.a.node}~{ln.b.node}" for ln in spec.links]
    wait_until(lambda: all("up" in link_class(page, n).split() for n in names), 10,
               "every link drawn up")
    # flows run: some fabric links carry them (drawn wider than an idle link)
    wait_until(lambda: any(float(page.locator(f'#fabric line.link[data-link="{n}"]')
                                 .get_attribute("stroke-width")) > 1.6 for n in names), 10,
               "a link drawn busy")

    # fail a segment-0 ToR's uplink from the page: the same as the CLI's `link_fail`
    target = next(ln for ln in fabric_links if ln.a.node.startswith(f"{PREFIX}ta-s0"))
    name = f"{target.a.node}~{target.b.node}"
    assert act(page, name, "#btn-fail") == f"{name} down"
    assert "down" in dict((n, s) for n, _i, s in link_states(spec))[name]
    wait_until(lambda: "down" in link_class(page, name).split(), 5, f"{name} drawn failed")
    assert page.locator(f'#fabric [data-cross="{name}"]').get_attribute("visibility") == "visible"
    wait_until(lambda: re.search(rf"{re.escape(name)} down: rerouted in \d+ ms", events_text(page)), 10,
               "the controller's reroute event on the page")
    page.screenshot(path=str(tmp_path / "failed.png"), full_page=True)
    assert act(page, name, "#btn-restore") == f"{name} up"
    wait_until(lambda: "up" in link_class(page, name).split(), 5, f"{name} drawn up again")
    wait_until(lambda: re.search(rf"{re.escape(name)} up: rerouted in \d+ ms", events_text(page)), 10,
               "the controller's restore event on the page")

    # silently degrade the busiest link: the probes (and the flows on it) find it lossy and
    # the controller isolates it
    other = lab.busiest_link(fabric_links)
    other_name = f"{other.a.node}~{other.b.node}"
    page.fill("#drop-percent", "60")
    assert act(page, other_name, "#btn-degrade") == f"{other_name} drops 60% silently"
    wait_until(lambda: f"probes isolated {other_name}" in events_text(page), 15,
               "the probes isolating the degraded link")
    wait_until(lambda: "isolated" in link_class(page, other_name).split(), 5, "drawn isolated")
    page.fill("#drop-percent", "0")
    assert act(page, other_name, "#btn-degrade") == f"{other_name} drops nothing"
    wait_until(lambda: f"probes give {other_name} back" in events_text(page), 15,
               "the probes giving the link back")

    # switch the load-balancing mode from the page: the same as the CLI's `lb flowlet`
    page.select_option("#lb-mode", "flowlet")
    before = page.locator("#action-result").text_content()
    page.click("#btn-lb")
    wait_until(lambda: page.locator("#action-result").text_content() not in (before, "…"), 120,
               "an answer to the mode switch")
    assert "flowlet" in page.locator("#action-result").text_content()
    assert not page.locator("#action-result").get_attribute("class").count("error")
    wait_until(lambda: "flowlet mode" in page.locator("#meta").text_content(), 5, "mode shown")
