"""The lab's own install files: the VM definition parses, the shell scripts pass shellcheck, and a
second `make setup` on a provisioned machine changes nothing."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = [REPO / "scripts" / "provision.sh", REPO / "scripts" / "install_p4lang.sh", REPO / ".ci" / "run"]


@pytest.mark.skipif(shutil.which("ruby") is None, reason="ruby not installed (make setup installs it)")
def test_vagrantfile_is_valid_ruby() -> None:
    done = subprocess.run(["ruby", "-c", str(REPO / "Vagrantfile")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "Syntax OK" in done.stdout


def test_vagrantfile_provisions_with_the_lab_script() -> None:
    text = (REPO / "Vagrantfile").read_text()
    assert "scripts/provision.sh" in text and "scripts/install_p4lang.sh" in text
    assert 'config.vm.box = "bento/ubuntu-24.04"' in text
    assert "vb.cpus = 4" in text and "vb.memory = 8192" in text


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed")
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_shell_scripts_pass_shellcheck(script: Path) -> None:
    done = subprocess.run(["shellcheck", str(script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_second_provisioning_run_changes_nothing() -> None:
    if not (REPO / ".venv" / ".setup-stamp").exists():
        pytest.skip("this checkout was not provisioned with make setup")
    done = subprocess.run(["bash", str(REPO / "scripts" / "provision.sh")], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "installing" not in done.stdout and "creating" not in done.stdout
    assert done.stdout.strip().endswith("ready (" + str(REPO / ".venv") + ")")
