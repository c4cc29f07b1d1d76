"""Job files: validation (every error at once, naming file and key) and what an iteration moves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jobs.workload import WorkloadError, load, parse_size, validate

EXAMPLES = Path(__file__).resolve().parents[2] / "jobs" / "examples"

GOOD = {"name": "j", "servers": 4, "gpus_per_server": 2, "parallelism": {"data": 8},
        "compute_s": 1.0, "gradient_bytes": "64M", "buckets": 4, "overlap": True}


@pytest.mark.parametrize("path", sorted(EXAMPLES.iterdir()), ids=lambda p: p.name)
def test_examples_load(path: Path) -> None:
    job = load(path)
    assert job.ranks == job.parallelism.data * job.parallelism.tensor * job.parallelism.pipeline
    assert job.collectives()


def test_every_error_at_once_with_file_and_key(tmp_path: Path) -> None:
    bad = {"name": "", "servers": 5, "gpus_per_server": 4,
           "parallelism": {"data": 4, "tensor": 3, "expert": 3, "sequence": 2},
           "compute_s": -1, "gradient_bytes": "lots", "overlap": 1.5, "colour": "red"}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(WorkloadError) as caught:
        load(path)
    errors = caught.value.errors
    keys = [e.split(":")[0] for e in errors]
    for key in ("name", "colour", "parallelism.sequence", "compute_s", "gradient_bytes",
                "overlap", "parallelism", "parallelism.tensor", "parallelism.expert",
                "tensor_bytes", "expert_bytes"):
        assert key in keys, (key, errors)
    assert str(path) in str(caught.value)
    assert "20 ranks" in next(e for e in errors if e.startswith("parallelism:"))


def test_missing_keys_and_yaml_syntax(tmp_path: Path) -> None:
    with pytest.raises(WorkloadError) as caught:
        validate({"parallelism": {}}, "x.yaml")
    assert sorted(e.split(":")[0] for e in caught.value.errors) == [
        "compute_s", "gpus_per_server", "gradient_bytes", "name", "servers"]
    path = tmp_path / "broken.yaml"
    path.write_text("name: [unclosed\n")
    with pytest.raises(WorkloadError, match="not valid yaml"):
        load(path)


def test_sizes() -> None:
    assert parse_size("64K") == 65536
    assert parse_size("1.5M") == 3 << 19
    assert parse_size(100) == 100
    with pytest.raises(ValueError):
        parse_size("-3")


def test_groups_follow_megatron_layout() -> None:
    job = validate({**GOOD, "parallelism": {"data": 2, "tensor": 2, "pipeline": 2},
                    "tensor_bytes": "1M", "pipeline_bytes": "1M", "buckets": 2}, "j")
    assert job.groups("tensor") == ((0, 1), (2, 3), (4, 5), (6, 7))
    assert job.groups("data") == ((0, 2), (1, 3), (4, 6), (5, 7))
    assert job.groups("pipeline") == ((0, 4), (1, 5), (2, 6), (3, 7))
    # every group of every kind covers each rank exactly once
    for kind in ("tensor", "data", "pipeline", "expert"):
        assert sorted(r for g in job.groups(kind) for r in g) == list(range(8))
    # gradients are split over tensor x pipeline ranks, then into buckets
    assert job.bucket_bytes() == (64 << 20) // (2 * 2 * 2)


def test_overlap_releases_buckets_through_the_backward_pass() -> None:
    spread = validate(GOOD, "j").collectives()
    at_end = validate({**GOOD, "overlap": False}, "j").collectives()
    assert [c.release for c in at_end] == [1.0] * 4
    releases = [c.release for c in spread]
    assert releases == sorted(releases) and releases[-1] == 1.0
    assert releases[0] == pytest.approx(1 - (2 / 3) * (3 / 4))
    assert all(c.overlappable and c.kind == "all_reduce" for c in spread)
