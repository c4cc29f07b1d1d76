"""The web view's job panel (`fabric-lab train --web`) without a running fabric: the "job"
section of the streamed state follows a training job's events (`jobs.progress`) for a real
hierarchical all-reduce schedule on HPN 7.0's GPUs; the page shows the panel only while a job
runs (headless Chromium)."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Callable, Iterator

import pytest

from fabric_lab.web import JobView, Sources, serve
from jobs.ccl.collectives import build
from jobs.gpus import cluster_from_fabric
from jobs.progress import (
    CollectiveDone,
    IterationDone,
    JobDone,
    JobStarted,
    StepDone,
    collective_started,
)
from tests.web.browser import launch, open_view, wait_until
from tests.web.conftest import CHROMIUM
from topos import build_fabric


@pytest.fixture(scope="module")
def spec():
    return build_fabric("hpn7")


@pytest.fixture()
def served(spec):
    view = JobView()
    srv = serve(spec, None, target="p4switch",
                sources=Sources(status=lambda: "no fabric", job=view.state), port=0)
    yield srv, view
    srv.stop()


def stream(server) -> Iterator[dict]:
    """The states the page gets from /api/stream, one per server-sent event."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        conn.request("GET", "/api/stream", headers={"Authorization": f"token {server.token}"})
        response = conn.getresponse()
        assert response.status == 200
        while True:
            event = b""
            while not event.endswith(b"\n\n"):
                event += response.read(1)
            assert event.startswith(b"data: ")
            yield json.loads(event[6:])
    finally:
        conn.close()


def next_job(states: Iterator[dict], check: Callable[[dict], bool], timeout: float = 5.0) -> dict:
    """The job section of the first streamed state that passes `check`."""
    deadline = time.monotonic() + timeout
    job = None
    while time.monotonic() < deadline:
        job = next(states)["job"]
        if job is not None and check(job):
            return job
    raise AssertionError(f"no streamed job state passed the check (last: {job!r})")


def test_the_job_section_follows_the_training_loop(served, spec):
    server, view = served
    gpus = cluster_from_fabric(spec).gpus()
    nics = tuple(g.nic for g in gpus)
    sched = build("all_reduce", "hierarchical", gpus, 64 * 1024)
    steps = len(sched.steps)
    assert steps >= 3 and len(nics) == 8
    states = stream(server)
    assert next(states)["job"] is None  # no job: no panel

    view(JobStarted("llama13b-dp", 2, nics))
    job = next_job(states, lambda j: j["status"] == "warming up")
    assert job["name"] == "llama13b-dp" and job["iterations"] == 2 and job["done"] == 0
    assert [r["nic"] for r in job["ranks"]] == list(nics) and job["collective"] is None

    started = collective_started(0, "dp-bucket-0", "all_reduce", "hierarchical", 26 << 20, sched)
    view(started)
    job = next_job(states, lambda j: j["collective"] is not None)
    c = job["collective"]
    assert (c["purpose"], c["kind"], c["algorithm"]) == ("dp-bucket-0", "all_reduce",
                                                        "hierarchical")
    assert (c["step"], c["steps"], c["in_flight"]) == (0, steps, True)
    assert c["phase"] == sched.steps[0].phase and c["bytes"] == 26 << 20
    into = [sum(f.bytes for s in sched.steps for f in s.flows if f.dst == r) for r in range(8)]
    assert [r["bytes_total"] for r in job["ranks"]] == into and all(into)
    assert all(r["bytes"] == 0 and r["steps"] == 0 for r in job["ranks"])

    # the first two steps arrive as the runner reports them: what each rank received
    delivered = [0] * 8
    for k in range(2):
        got = [sum(f.bytes for f in sched.steps[k].flows if f.dst == r) for r in range(8)]
        ends = [0.001 * (r + 1) if got[r] else 0.0 for r in range(8)]
        view(StepDone(0, "dp-bucket-0", k, sched.steps[k].phase, 0.01, True, tuple(got),
                      tuple(ends)))
        delivered = [a + b for a, b in zip(delivered, got, strict=True)]
        job = next_job(states, lambda j, k=k: j["collective"]["step"] == k + 1)
        assert job["collective"]["phase"] == sched.steps[k + 1].phase
        assert [r["bytes"] for r in job["ranks"]] == delivered
        assert [r["last_end_s"] for r in job["ranks"]] == ends
    done_steps = [sum(1 for s in sched.steps[:2] if any(f.dst == r for f in s.flows))
                  for r in range(8)]
    assert [r["steps"] for r in job["ranks"]] == done_steps

    view(CollectiveDone(0, "dp-bucket-0", 0.125, 180.5, True, 0))
    job = next_job(states, lambda j: not j["collective"]["in_flight"])
    assert job["collective"]["time_s"] == 0.125 and job["collective"]["busbw_gbs"] == 180.5
    assert job["last"] is None and job["iteration"] == 0

    rank_s = tuple(2.5 + 0.01 * r for r in range(8))
    view(IterationDone(0, 2.6, 2.0, 0.6, 7, nics[7], rank_s))
    job = next_job(states, lambda j: j["last"] is not None)
    assert job["done"] == 1 and job["last"]["total_s"] == 2.6
    assert job["last"]["exposed_s"] == 0.6 and job["last"]["compute_s"] == 2.0
    assert (job["last"]["slowest_rank"], job["last"]["slowest_nic"]) == (7, nics[7])
    assert job["last"]["slowest_s"] == 2.57 and job["last"]["fastest_s"] == 2.5

    view(collective_started(1, "dp-bucket-0", "all_reduce", "hierarchical", 26 << 20, sched))
    job = next_job(states, lambda j: j["iteration"] == 1)
    assert job["collective"]["step"] == 0 and all(r["bytes"] == 0 for r in job["ranks"])
    assert job["last"]["iteration"] == 0  # the last finished iteration stays shown

    view(JobDone("llama13b-dp", 2))
    job = next_job(states, lambda j: j["status"] == "finished")
    assert job["done"] == 2


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (make setup installs it)")
def test_the_page_shows_the_job_panel_only_while_a_job_runs(served, spec):
    from playwright.sync_api import sync_playwright

    server, view = served
    gpus = cluster_from_fabric(spec).gpus()
    sched = build("all_reduce", "ring", gpus, 64 * 1024)
    with sync_playwright() as playwright:
        browser = launch(playwright)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            open_view(page, server.url)
            hidden_before = page.locator("#job-panel").is_hidden()
            view(JobStarted("ring-job", 3, tuple(g.nic for g in gpus)))
            view(collective_started(0, "dp-bucket-0", "all_reduce", "ring", 1 << 20, sched))
            got = tuple(sum(f.bytes for f in sched.steps[0].flows if f.dst == r) for r in range(8))
            view(StepDone(0, "dp-bucket-0", 0, sched.steps[0].phase, 0.01, True, got, (0.002,) * 8))
            wait_until(lambda: "step 2 of" in page.locator("#job-collective").inner_text(), 10,
                       "the collective in flight on the page")
            collective = page.locator("#job-collective").inner_text()
            iteration = page.locator("#job-iteration").inner_text()
            rows = page.locator("#job-ranks tbody tr").count()
            first = page.locator("#job-ranks tbody tr").first.inner_text()
            error = page.locator("body").get_attribute("data-error")
        finally:
            browser.close()
    assert hidden_before and error is None
    assert f"step 2 of {len(sched.steps)}" in collective and "ring" in collective
    assert "iteration 1 of 3" in iteration and rows == 8
    assert gpus[0].nic in first and "1 / " in first


def test_train_refuses_a_web_port_out_of_range_before_anything_starts(tmp_path, capsys):
    from fabric_lab.cli import main

    job = tmp_path / "job.yaml"
    job.write_text("name: j\nservers: 2\ngpus_per_server: 2\nparallelism: {data: 4}\n"
                   "compute_s: 1\ngradient_bytes: 1M\n")
    with pytest.raises(SystemExit) as exited:  # argparse's usage error
        main(["train", str(job), "--web", "--web-port", "70000"])
    assert exited.value.code == 2
    assert "argument --web-port: must be >= 0 and <= 65535, not 70000" in capsys.readouterr().err
