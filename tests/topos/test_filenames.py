"""A fabric's or switch's name as a file name: whatever it holds, the file stays in its
directory (a run-state file of a fabric named `../x` included), two names never share one, and
the lab's usual names are their own file names."""

from __future__ import annotations

import os
from pathlib import Path

from topos.filenames import MAX_PART, file_part
from topos.mininet.runstate import RunState, load_all

HOSTILE = ["../../etc/passwd", "..", ".", "", ".hidden", "a/b", "a\\b", "a\x00b", "<meta x>",
           "name;rm -rf ~", "%2E", "%", "é", "x" * 300, "x" * 299 + "y", "/", "~"]


def test_usual_names_are_their_own_file_names():
    for name in ("hpn7", "wu-leaf0", "seg0.tor1", "leafspine_k4", "fattree-4"):
        assert file_part(name) == name


def test_any_name_is_one_safe_distinct_component(tmp_path: Path):
    parts = [file_part(name) for name in HOSTILE]
    assert len(set(parts)) == len(parts)  # distinct names, distinct files
    for name, part in zip(HOSTILE, parts, strict=True):
        assert part and "/" not in part and "\x00" not in part and not part.startswith("."), name
        assert len(part) <= MAX_PART, name
        made = tmp_path / part
        made.write_text(name)  # a file the OS takes, right where it was meant to go
        assert made.resolve().parent == tmp_path.resolve()
    assert sorted(os.listdir(tmp_path)) == sorted(parts)


def test_a_run_state_file_stays_in_the_run_directory_whatever_the_fabric_name(tmp_path: Path):
    runs = tmp_path / "run"
    state = RunState.create("../../escaped", ["x-eth0"], directory=runs)
    try:
        assert state.path is not None and state.path.parent == runs
        assert list(tmp_path.iterdir()) == [runs]
        (loaded,) = load_all(runs)
        assert loaded.fabric == "../../escaped" and loaded.interfaces == ["x-eth0"]
    finally:
        state.remove()
