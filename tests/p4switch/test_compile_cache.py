"""The on-disk cache of compiled programs: real compiles, real cache files.

A cached program is the compiled one byte for byte; an entry that is missing, truncated,
tampered with or foreign is rebuilt, never used.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from p4switch.compile_cache import CACHE_ENV, CompileCache, cache_dir
from p4switch.compiler import CompiledProgram, compile_program

REPO = Path(__file__).resolve().parents[2]
PROGRAM = REPO / "p4src" / "ecmp.p4"
OTHER = REPO / "p4src" / "flowlet.p4"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(directory))
    return directory


def entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.p4c-cache")) if directory.exists() else []


def uncached(path: Path, monkeypatch: pytest.MonkeyPatch) -> CompiledProgram:
    with monkeypatch.context() as m:
        m.setenv(CACHE_ENV, "")
        return compile_program(path)


def same(a: CompiledProgram, b: CompiledProgram) -> None:
    assert a.python_source == b.python_source
    assert a.model == b.model
    assert a._field_lists == b._field_lists
    assert a.device_config() == b.device_config()


def test_a_compile_writes_one_entry_and_the_next_loads_it(cache: Path,
                                                          monkeypatch: pytest.MonkeyPatch):
    fresh = uncached(PROGRAM, monkeypatch)
    assert entries(cache) == []
    first = compile_program(PROGRAM)
    [entry] = entries(cache)
    os.utime(entry, (1, 1))
    second = compile_program(PROGRAM)
    assert entries(cache) == [entry]
    assert entry.stat().st_mtime > 1  # the second compile was a hit
    same(first, fresh)
    same(second, fresh)


def test_the_device_config_loads_what_the_compile_stored(cache: Path,
                                                         monkeypatch: pytest.MonkeyPatch):
    compiled = compile_program(PROGRAM)
    [entry] = entries(cache)
    os.utime(entry, (1, 1))
    loaded = CompiledProgram.from_device_config(compiled.device_config())
    assert entries(cache) == [entry] and entry.stat().st_mtime > 1
    same(loaded, uncached(PROGRAM, monkeypatch))


def test_programs_and_device_configs_get_entries_of_their_own(cache: Path):
    compile_program(PROGRAM)
    compile_program(OTHER)
    assert len(entries(cache)) == 2
    key = CompileCache(cache).key(compile_program(PROGRAM).device_config())
    assert CompileCache(cache).path(key) in entries(cache)


def _corrupt_payload(data: bytes) -> bytes:
    head, _, payload = data.partition(b"\n")
    flipped = bytes([payload[len(payload) // 2] ^ 0xFF])
    return head + b"\n" + payload[:len(payload) // 2] + flipped + payload[len(payload) // 2 + 1:]


def _foreign_pickle(data: bytes) -> bytes:
    """A well-formed entry whose payload unpickles something other than model data."""
    import hashlib
    import json

    head, _, _ = data.partition(b"\n")
    payload = pickle.dumps((os.system, "true"))
    header = json.loads(head)
    header["sha256"] = hashlib.sha256(payload).hexdigest()
    return json.dumps(header).encode() + b"\n" + payload


@pytest.mark.parametrize("damage", [
    lambda data: data[: len(data) // 3],           # truncated
    _corrupt_payload,                              # one byte changed
    lambda data: b"not json\n" + data,             # garbage header
    lambda data: b"",                              # empty
    _foreign_pickle,                               # checks out, but not model data
], ids=["truncated", "flipped-byte", "bad-header", "empty", "foreign-pickle"])
def test_a_damaged_entry_is_rebuilt(cache: Path, monkeypatch: pytest.MonkeyPatch, damage):
    compile_program(PROGRAM)
    [entry] = entries(cache)
    good = entry.read_bytes()
    entry.write_bytes(damage(good))
    key = entry.name.split(".")[0]
    assert CompileCache(cache).load(key) is None
    rebuilt = compile_program(PROGRAM)
    same(rebuilt, uncached(PROGRAM, monkeypatch))
    assert entry.read_bytes() == good
    assert CompileCache(cache).load(key) is not None


def test_a_cached_source_that_does_not_load_is_rebuilt(cache: Path,
                                                       monkeypatch: pytest.MonkeyPatch):
    compiled = compile_program(PROGRAM)
    [entry] = entries(cache)
    key = entry.name.split(".")[0]
    store = CompileCache(cache)
    store.store(key, "this is not python", compiled.native_source, compiled.model,
                compiled._field_lists)
    rebuilt = compile_program(PROGRAM)
    same(rebuilt, uncached(PROGRAM, monkeypatch))
    loaded = store.load(key)
    assert loaded is not None and loaded[0] == compiled.python_source


def test_an_empty_setting_turns_the_cache_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv(CACHE_ENV, "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() is None
    compile_program(PROGRAM)
    assert list(tmp_path.iterdir()) == []


def test_the_default_place_follows_xdg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv(CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "p4switch"
    compile_program(PROGRAM)
    assert len(entries(tmp_path / "p4switch")) == 1
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "p4switch"


def test_an_unwritable_cache_only_costs_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache directory should be")
    monkeypatch.setenv(CACHE_ENV, str(blocker / "cache"))
    same(compile_program(PROGRAM), uncached(PROGRAM, monkeypatch))


def test_only_the_most_recently_used_entries_are_kept(cache: Path):
    store = CompileCache(cache, max_entries=2)
    compiled = compile_program(PROGRAM)
    [first] = entries(cache)
    for n in range(3):
        store.store(f"{n:064x}", compiled.python_source, compiled.native_source, compiled.model,
                    compiled._field_lists)
    assert len(entries(cache)) == 2 and first not in entries(cache)


def test_concurrent_compiles_share_one_entry(cache: Path, monkeypatch: pytest.MonkeyPatch):
    code = ("import sys; from p4switch.compiler import compile_program; "
            "sys.stdout.write(compile_program(sys.argv[1]).python_source)")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    procs = [subprocess.Popen([sys.executable, "-c", code, str(PROGRAM)], cwd=REPO, env=env,
                              stdout=subprocess.PIPE, text=True) for _ in range(4)]
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    fresh = uncached(PROGRAM, monkeypatch).python_source
    assert outputs == [fresh] * 4
    assert len(entries(cache)) == 1
    assert [p.name for p in cache.iterdir() if p.name.startswith(".tmp-")] == []


def test_switch_processes_import_no_pkg_resources():
    """google.rpc without pkg_resources (`p4switch.server`), with the same package path."""
    code = ("import sys, google.rpc, p4switch.server; "
            "print('pkg_resources' in sys.modules, list(google.rpc.__path__))")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, text=True,
                          capture_output=True, check=True)
    code_first = "import p4switch.server, google.rpc, sys; print(list(google.rpc.__path__))"
    ours = subprocess.run([sys.executable, "-c", code_first], cwd=REPO, env=env, text=True,
                          capture_output=True, check=True)
    loaded, path = done.stdout.split(" ", 1)
    assert loaded == "True"  # google.rpc imported first: pkg_resources was used
    assert ours.stdout.strip() == path.strip()
    bare = subprocess.run([sys.executable, "-c", "import sys, p4switch.server; "
                           "print('pkg_resources' in sys.modules)"], cwd=REPO, env=env,
                          text=True, capture_output=True, check=True)
    assert bare.stdout.strip() == "False"


@pytest.mark.parametrize("program", sorted((REPO / "p4src").glob("*.p4")), ids=lambda p: p.name)
def test_every_lab_program_is_the_same_from_the_cache(program: Path, cache: Path,
                                                      monkeypatch: pytest.MonkeyPatch):
    stored = compile_program(program)
    loaded = CompiledProgram.from_device_config(stored.device_config())
    fresh = uncached(program, monkeypatch)
    same(stored, fresh)
    same(loaded, fresh)
    assert len(entries(cache)) == 1
