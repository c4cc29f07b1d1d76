"""After `make setup` the README's commands run as written from a new shell: as root through sudo
(which resets PATH to its secure_path) and as a plain user. Provisioning links the venv's commands
into a directory on that PATH; these tests point it at a directory of their own."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".venv"
COMMANDS = ("fabric-lab", "p4switch", "p4switch-compile", "p4switch-stf", "p4switch-cli")

pytestmark = [
    pytest.mark.skipif(not (VENV / ".setup-stamp").exists(), reason="checkout not provisioned (make setup)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="links into a system directory: root"),
]


def provision(launcher_dir: Path, *, user: str | None = None) -> subprocess.CompletedProcess[str]:
    argv = ["bash", str(REPO / "scripts" / "provision.sh")]
    if user is not None:
        argv = ["setpriv", f"--reuid={user}", f"--regid={pwd.getpwnam(user).pw_gid}", "--clear-groups", *argv]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/tmp",
                               "FABRIC_LAB_LAUNCHER_DIR": str(launcher_dir)})


def test_root_setup_links_the_commands_once(shared_dir: Path) -> None:
    bin_dir = shared_dir / "bin"
    first = provision(bin_dir)
    assert first.returncode == 0, first.stderr
    assert f"linked {' '.join(COMMANDS)} into {bin_dir}" in first.stdout
    for name in COMMANDS:
        assert (bin_dir / name).resolve() == (VENV / "bin" / name).resolve()
    second = provision(bin_dir)
    assert second.returncode == 0 and "linked" not in second.stdout, second.stdout
    # a new shell with nothing but the system's PATH (as sudo gives), anywhere: the README's lines
    work = shared_dir / "elsewhere"
    work.mkdir()
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(work), "MPLCONFIGDIR": str(work / "mpl")}
    listing = subprocess.run(["fabric-lab", "run", "--list"], cwd=work, env=env, capture_output=True,
                             text=True, timeout=120)
    assert listing.returncode == 0, listing.stderr
    assert "ecmp-hashing" in listing.stdout
    compile_help = subprocess.run(["p4switch-compile", "--help"], cwd=work, env=env, capture_output=True,
                                  text=True, timeout=120)
    assert compile_help.returncode == 0, compile_help.stderr


def test_a_foreign_file_is_left_alone(shared_dir: Path) -> None:
    bin_dir = shared_dir / "bin"
    bin_dir.mkdir()
    (bin_dir / "p4switch").write_text("#!/bin/sh\necho someone else's\n")
    done = provision(bin_dir)
    assert done.returncode == 0, done.stderr
    assert "exists and is not a link; leaving it" in done.stderr
    assert (bin_dir / "p4switch").read_text().startswith("#!/bin/sh")
    assert (bin_dir / "fabric-lab").is_symlink()


@pytest.mark.usefixtures("checkout_open_to_others")
def test_user_setup_explains_how_to_get_the_commands_on_path(shared_dir: Path) -> None:
    bin_dir = shared_dir / "bin"
    done = provision(bin_dir, user="nobody")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sudo make setup" in done.stdout and str(bin_dir) in done.stdout
    assert not bin_dir.exists()


@pytest.mark.skipif(shutil.which("sudo") is None, reason="sudo not installed")
def test_sudo_finds_the_commands_where_setup_puts_them() -> None:
    """The default link directory is on sudo's PATH here, and a root `make setup` put them there."""
    secure = subprocess.run(["sudo", "-n", "printenv", "PATH"], capture_output=True, text=True,
                            timeout=30, env={"PATH": "/usr/bin:/bin"})
    assert secure.returncode == 0, secure.stderr
    assert "/usr/local/bin" in secure.stdout.strip().split(":")
    link = Path("/usr/local/bin/fabric-lab")
    if not link.is_symlink() or link.resolve() != (VENV / "bin" / "fabric-lab").resolve():
        pytest.skip("this checkout was provisioned without root: its commands are not linked")
    done = subprocess.run(["sudo", "-n", "fabric-lab", "run", "--list"], capture_output=True, text=True,
                          timeout=120, cwd="/", env={"PATH": "/usr/bin:/bin", "HOME": "/root"})
    assert done.returncode == 0, done.stderr
    assert "ecmp-hashing" in done.stdout
