"""The P4 toolchain scripts of the lab VM: install_p4lang.sh falls back to p4switch (and still
succeeds) when p4lang's packages cannot be installed, and build_p4lang.sh builds the pinned
versions with the fast BMv2 configuration. The 40-minute build itself is not run here; its plan
is, with --dry-run."""

from __future__ import annotations

import http.server
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ports import loose_port

REPO = Path(__file__).resolve().parents[2]
INSTALL = REPO / "scripts" / "install_p4lang.sh"
BUILD = REPO / "scripts" / "build_p4lang.sh"
APT_LIST = Path("/etc/apt/sources.list.d/home:p4lang.list")
APT_KEY = Path("/etc/apt/trusted.gpg.d/home_p4lang.gpg")
# A PATH without any BMv2 (which would make install_p4lang.sh stop at "already installed").
PLAIN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PINS = {"BMV2_COMMIT": "9674187f", "PI_COMMIT": "f96af95e", "P4C_COMMIT": "34b86e9b",
        "BMV2_VERSION": "1.15.5", "P4C_VERSION": "1.2.5.16"}

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="install_p4lang.sh runs as root")
needs_tools = pytest.mark.skipif(not (shutil.which("curl") and shutil.which("gpg")),
                                 reason="curl and gpg not installed")


def run_install(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    for tool in ("simple_switch_grpc", "p4c-bm2-ss"):
        found = shutil.which(tool, path=PLAIN_PATH)
        if found:
            pytest.skip(f"{found} is installed system-wide: install_p4lang.sh has nothing to do")
    return subprocess.run(["bash", str(INSTALL), *args], capture_output=True, text=True, timeout=120,
                          env={"PATH": PLAIN_PATH, "HOME": "/root", **env})


@pytest.fixture
def apt_untouched() -> Iterator[None]:
    """The fallbacks below happen before apt is touched: no p4lang repository is left behind."""
    before = (APT_LIST.exists(), APT_KEY.exists())
    yield
    assert (APT_LIST.exists(), APT_KEY.exists()) == before


@pytest.fixture
def repo_server() -> Iterator[tuple[str, Path]]:
    """A package repository on loopback: (its URL, the directory it serves)."""
    root = Path(tempfile.mkdtemp(prefix="fl-p4lang-repo-"))

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, directory=str(root), **kwargs)

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/p4lang", root
    finally:
        server.shutdown()
        server.server_close()
        shutil.rmtree(root, ignore_errors=True)


def expired_key(home: Path) -> str:
    """An armored OpenPGP key that expired on 2020-01-02, like a repository key nobody renewed."""
    env = {**os.environ, "GNUPGHOME": str(home)}
    home.mkdir(mode=0o700)
    try:
        subprocess.run(["gpg", "--batch", "--passphrase", "", "--faked-system-time", "20200101T000000",
                        "--quick-gen-key", "Expired Repository <repo@example.invalid>", "default",
                        "default", "1d"], env=env, check=True, capture_output=True, timeout=120)
        return subprocess.run(["gpg", "--armor", "--export"], env=env, check=True, capture_output=True,
                              text=True, timeout=60).stdout
    finally:  # key generation started an agent for this home: stop it
        subprocess.run(["gpgconf", "--kill", "gpg-agent"], env=env, capture_output=True, timeout=30)


def assert_fell_back(done: subprocess.CompletedProcess[str], reason: str) -> None:
    assert done.returncode == 0, done.stdout + done.stderr
    assert reason in done.stdout, done.stdout
    assert "coming up on p4switch" in done.stdout
    assert "scripts/build_p4lang.sh" in done.stdout  # says how to get BMv2 after all


@needs_root
@needs_tools
def test_unreachable_repository_falls_back_to_p4switch(apt_untouched: None) -> None:
    url = f"http://127.0.0.1:{loose_port()}/nonexistent"
    done = run_install(P4LANG_REPO_URL=url)
    assert_fell_back(done, "could not fetch the repository's signing key")


@needs_root
@needs_tools
def test_expired_repository_key_falls_back_to_p4switch(apt_untouched: None, repo_server: tuple[str, Path],
                                                        tmp_path: Path) -> None:
    url, root = repo_server
    (root / "p4lang").mkdir()
    (root / "p4lang" / "Release.key").write_text(expired_key(tmp_path / "gnupg"))
    done = run_install(P4LANG_REPO_URL=url)
    assert_fell_back(done, "expired on 2020-01-02")


@needs_root
@needs_tools
def test_garbage_key_falls_back_to_p4switch(apt_untouched: None, repo_server: tuple[str, Path]) -> None:
    url, root = repo_server
    (root / "p4lang").mkdir()
    (root / "p4lang" / "Release.key").write_text("<html>moved</html>\n")
    done = run_install(P4LANG_REPO_URL=url)
    assert_fell_back(done, "not a usable OpenPGP key")


@needs_root
def test_unsupported_release_falls_back_without_fetching(apt_untouched: None) -> None:
    release = dict(line.split("=", 1) for line in Path("/etc/os-release").read_text().splitlines()
                   if "=" in line)
    if release.get("ID") == "ubuntu" and release.get("VERSION_ID", "").strip('"') in ("22.04", "24.04"):
        pytest.skip("p4lang publishes packages for this release")
    done = run_install()
    assert_fell_back(done, "p4lang publishes packages for Ubuntu 22.04 and 24.04")
    assert "fetching" not in done.stdout


def test_install_modes() -> None:
    skipped = run_install("--none")
    assert skipped.returncode == 0 and "skipped" in skipped.stdout and "p4switch" in skipped.stdout
    bad = run_install(FABRIC_LAB_P4LANG="bogus")
    assert bad.returncode == 2 and "packages, source or none" in bad.stderr
    assert run_install("--frobnicate").returncode == 2
    usage = run_install("--help")
    assert usage.returncode == 0 and "FABRIC_LAB_P4LANG" in usage.stdout and "#" not in usage.stdout


def test_build_script_parses_and_explains_itself() -> None:
    assert subprocess.run(["bash", "-n", str(BUILD)], capture_output=True).returncode == 0
    done = subprocess.run(["bash", str(BUILD), "--help"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    for text in ("--prefix", "--workdir", "--jobs", "--dry-run", "9674187f", "f96af95e", "34b86e9b",
                 "1.15.5", "1.2.5.16", "--disable-logging-macros", "--disable-elogger", "-O2"):
        assert text in done.stdout, text


def test_build_pins_match_the_tested_versions() -> None:
    text = BUILD.read_text()
    for name, value in PINS.items():
        match = re.search(rf"^{name}=(\S+)$", text, re.MULTILINE)
        assert match and match.group(1).startswith(value), name


def test_build_dry_run_plans_the_pinned_fast_build_and_changes_nothing(tmp_path: Path) -> None:
    prefix, workdir = tmp_path / "prefix", tmp_path / "work"
    done = subprocess.run(["bash", str(BUILD), "--dry-run", "--no-deps", "--prefix", str(prefix),
                           "--workdir", str(workdir), "--jobs", "2"],
                          capture_output=True, text=True, timeout=60)
    plan = done.stdout
    if done.returncode != 0 and "missing build dependencies" in done.stderr:
        # without its build dependencies, --no-deps stops before anything: plan with apt instead
        done = subprocess.run(["bash", str(BUILD), "--dry-run", "--prefix", str(prefix), "--workdir",
                               str(workdir), "--jobs", "2"], capture_output=True, text=True, timeout=60)
        plan = done.stdout
        assert "apt-get install" in plan
    assert done.returncode == 0, done.stdout + done.stderr
    assert not prefix.exists() and not workdir.exists()
    assert "dry run: nothing was changed" in plan
    commands = [line[2:] for line in plan.splitlines() if line.startswith("+ ")]
    fetches = [c for c in commands if " fetch " in c]
    assert [c.split()[-1][:8] for c in fetches] == ["f96af95e", "9674187f", "34b86e9b"]
    pi_configure = next(c for c in commands if "/PI && ./configure" in c)
    assert "--with-proto" in pi_configure and f"--prefix={prefix}" in pi_configure
    bmv2_configure = next(c for c in commands if "/behavioral-model && ./configure" in c)
    for flag in ("--with-pi", "--with-thrift", "--disable-logging-macros", "--disable-elogger",
                 "CXXFLAGS=-O2", f"--prefix={prefix}", f"-Wl,-rpath,{prefix}/lib"):
        assert flag in bmv2_configure, flag
    p4c_configure = next(c for c in commands if c.startswith("cmake -S"))
    assert "-DENABLE_BMV2=ON" in p4c_configure and f"-DCMAKE_INSTALL_PREFIX={prefix}" in p4c_configure
    assert "-DCMAKE_BUILD_TYPE=Release" in p4c_configure
    # PI is installed before BMv2 configures against it, BMv2 before p4c
    order = [commands.index(pi_configure), commands.index(bmv2_configure), commands.index(p4c_configure)]
    assert order == sorted(order)
    assert any(c.endswith("make -j2)") for c in commands)


def test_build_rejects_bad_arguments(tmp_path: Path) -> None:
    for args, message in ((["--prefix", "relative/dir"], "absolute path"),
                          (["--jobs", "zero"], "positive number"),
                          (["--bogus"], "unknown argument")):
        done = subprocess.run(["bash", str(BUILD), "--dry-run", *args], capture_output=True, text=True,
                              timeout=30)
        assert done.returncode != 0 and message in done.stderr, (args, done.stderr)
