"""Real switch processes and the compile cache: a pipeline push loads the program the controller
compiled (cache hit), compiles and stores it when the cache is cold, and works either way."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sw_proc import SwitchProcess

from controller.p4rt import P4RuntimeClient
from controller.pipeline import build_pipeline
from p4switch.compile_cache import CACHE_ENV

REPO = Path(__file__).resolve().parents[3]
PROGRAM = REPO / "p4src" / "ecmp.p4"


def push_and_read_back(addr: str, pipeline) -> None:
    with P4RuntimeClient(addr, 0) as client:
        client.set_pipeline(pipeline.p4info, pipeline.device_config, pipeline.cookie)
        assert client.pipeline_cookie() == pipeline.cookie
        assert client.pipeline().p4_device_config == pipeline.device_config


def test_the_switch_loads_the_program_the_controller_compiled(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(cache))
    pipeline = build_pipeline(PROGRAM, "p4switch")  # compiles here and fills the cache
    [entry] = cache.iterdir()
    os.utime(entry, (1, 1))
    with SwitchProcess(["--no-p4"]) as sw:
        push_and_read_back(sw.addr, pipeline)
        assert sw.alive(), sw.stderr()
    # no second compile (beside it, cdp/ keeps the C data plane's build of the program)
    assert list(cache.glob("*.p4c-cache")) == [entry]
    assert entry.stat().st_mtime > 1  # the switch used it


def test_a_cold_cache_is_filled_by_the_switch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(CACHE_ENV, "")
    pipeline = build_pipeline(PROGRAM, "p4switch")  # compiled without the cache
    cache = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(cache))
    with SwitchProcess(["--no-p4"]) as sw:
        push_and_read_back(sw.addr, pipeline)
        assert sw.alive(), sw.stderr()
    assert len(list(cache.glob("*.p4c-cache"))) == 1


def test_a_corrupt_entry_does_not_reach_the_switch(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(cache))
    pipeline = build_pipeline(PROGRAM, "p4switch")
    [entry] = cache.iterdir()
    good = entry.read_bytes()
    entry.write_bytes(good[: len(good) // 2])
    with SwitchProcess(["--no-p4"]) as sw:
        push_and_read_back(sw.addr, pipeline)
        assert sw.alive(), sw.stderr()
    assert entry.read_bytes() == good
