"""`fabric-lab train JOB --web` on a small HPN 7.0 (Mininet, p4switch): one iteration of a
data-parallel job, and at each of the training loop's events the job section the page reads
over HTTP (/api/state) shows it: the collective in flight and its step, the bytes each rank
has received (all of them by the last step), the finished iteration's times, the end."""

from __future__ import annotations

import http.client
import json
import time
from pathlib import Path

import pytest

import fabric_lab.web as web
from fabric_lab.cli import main
from jobs.progress import CollectiveDone, CollectiveStarted, IterationDone, JobDone, StepDone
from tests.ports import FABRICS, loose_port
from topos import build_fabric

pytestmark = [pytest.mark.mininet, pytest.mark.root, pytest.mark.slow]
ISOLATION = FABRICS["web-train"]
PREFIX = ISOLATION.prefix
JOB = """name: tiny-dp
servers: 2
gpus_per_server: 2
parallelism: {data: 4}
compute_s: 0.5
gradient_bytes: 64M
buckets: 1
overlap: true
iterations: 3
"""


def job_state(port: int, token: str) -> dict | None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", "/api/state", headers={"Authorization": f"token {token}"})
        response = conn.getresponse()
        assert response.status == 200
        return json.loads(response.read())["job"]
    finally:
        conn.close()


def test_train_web_shows_the_running_job(tmp_path: Path, monkeypatch, capsys):
    pytest.importorskip("p4switch.compiler", reason="the p4switch compiler is not in the tree")
    spec = ISOLATION.apply(build_fabric("hpn7", segments=1, aggs_per_plane=1))
    fabric = tmp_path / "fabric.json"
    fabric.write_text(spec.to_json())
    job_file = tmp_path / "tiny.yaml"
    job_file.write_text(JOB)
    port = loose_port()
    seen: list[tuple[object, dict]] = []  # (event, the job section the page got after it)
    servers: list[web.WebServer] = []  # the view `train --web` started (for its token)
    serve = web.serve

    def serve_and_keep(*args, **kwargs) -> web.WebServer:
        servers.append(serve(*args, **kwargs))
        return servers[-1]

    class Watched(web.JobView):
        """The CLI's JobView; after each event, what the server serves once it shows it."""

        def __call__(self, event):
            super().__call__(event)
            want = {CollectiveStarted: lambda j: j["collective"] and j["collective"]["in_flight"]
                    and j["collective"]["step"] == 0 and j["iteration"] == event.iteration,
                    StepDone: lambda j: j["collective"]["step"] == event.index + 1,
                    CollectiveDone: lambda j: not j["collective"]["in_flight"],
                    IterationDone: lambda j: j["done"] == event.iteration + 1,
                    JobDone: lambda j: j["status"] == "finished"}.get(type(event))
            if want is None:
                return
            deadline = time.monotonic() + 5
            token = servers[0].token
            job = job_state(port, token)
            while not (job and want(job)) and time.monotonic() < deadline:
                time.sleep(0.05)  # the server reuses a snapshot for up to 0.2 s
                job = job_state(port, token)
            seen.append((event, job))

    monkeypatch.setattr(web, "JobView", Watched)
    monkeypatch.setattr(web, "serve", serve_and_keep)
    code = main(["train", str(job_file), "--fabric", str(fabric), "--target", "p4switch",
                 "--iterations", "1", "--time-scale", "0.1", "-F", "json",
                 "--web", "--web-port", str(port)])
    out, err = capsys.readouterr()
    assert code == 0, err[-3000:]
    assert f"web view: http://127.0.0.1:{port}/?token={servers[0].token}" in err
    record = json.loads(out)
    nics = [r["nic"] for r in record["ranks_detail"]]

    kinds = [type(e).__name__ for e, _ in seen]
    steps = sum(k == "StepDone" for k in kinds)
    assert kinds == ["CollectiveStarted"] + ["StepDone"] * steps + ["CollectiveDone",
                                                                     "IterationDone", "JobDone"]
    (start, job), *stepped = seen[:1 + steps]
    assert job["name"] == "tiny-dp" and job["status"] == "running" and job["iterations"] == 1
    c = job["collective"]
    assert (c["purpose"], c["kind"], c["algorithm"]) == (start.purpose, "all_reduce",
                                                        "hierarchical")
    assert c["steps"] == steps == len(start.phases) and c["phase"] == start.phases[0]
    assert [r["nic"] for r in job["ranks"]] == nics
    assert [r["bytes_total"] for r in job["ranks"]] == list(start.rank_bytes)
    delivered = [0] * len(nics)
    for event, job in stepped:
        delivered = [a + b for a, b in zip(delivered, event.rank_bytes, strict=True)]
        assert job["collective"]["step"] == event.index + 1
        assert [r["bytes"] for r in job["ranks"]] == delivered
    last_ranks = stepped[-1][1]["ranks"]
    assert all(r["bytes"] == r["bytes_total"] > 0 for r in last_ranks)  # everything arrived
    assert all(r["steps"] == r["steps_total"] > 0 for r in last_ranks)
    collective_done = seen[1 + steps][1]["collective"]
    (measured,) = record["collectives"]
    assert collective_done["complete"] is True and collective_done["wrong"] == 0
    # the panel shows busbw in GB/s to 3 decimals (fabric_lab/web/job.py)
    assert collective_done["busbw_gbs"] == pytest.approx(measured["busbw_gbs"], abs=5e-4 + 1e-9)
    last = seen[2 + steps][1]["last"]
    (it,) = record["iterations"]
    assert last["total_s"] == pytest.approx(it["iteration_s"], abs=1e-5)
    assert last["total_s"] == pytest.approx(last["compute_s"] + last["exposed_s"], abs=1e-5)
    assert last["slowest_nic"] == it["slowest_nic"] in nics
    assert seen[-1][1]["done"] == 1
