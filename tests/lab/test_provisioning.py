"""The lab's own install files: the VM definition parses, the shell scripts pass shellcheck, and a
second `make setup` on a provisioned machine changes nothing."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = [REPO / "scripts" / name for name in
           ("provision.sh", "install_p4lang.sh", "build_p4lang.sh", "apt_wait.sh")] + [REPO / ".ci" / "run"]


@pytest.mark.skipif(shutil.which("ruby") is None, reason="ruby not installed (make setup installs it)")
def test_vagrantfile_is_valid_ruby() -> None:
    done = subprocess.run(["ruby", "-c", str(REPO / "Vagrantfile")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "Syntax OK" in done.stdout


def test_vagrantfile_provisions_with_the_lab_script() -> None:
    text = (REPO / "Vagrantfile").read_text()
    assert "scripts/provision.sh" in text and "scripts/install_p4lang.sh" in text
    # the lab first: the VM is usable whatever happens to the P4 toolchain
    assert text.index("bash scripts/provision.sh") < text.index("bash scripts/install_p4lang.sh")
    assert '"FABRIC_LAB_P4LANG"' in text
    assert 'config.vm.box = "bento/ubuntu-24.04"' in text
    assert "vb.cpus = 4" in text and "vb.memory = 8192" in text


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed")
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_shell_scripts_pass_shellcheck(script: Path) -> None:
    # -x: also check what the scripts source (scripts/apt_wait.sh), from any directory
    done = subprocess.run(["shellcheck", "-x", str(script)], capture_output=True, text=True, cwd="/")
    assert done.returncode == 0, done.stdout + done.stderr


def test_second_provisioning_run_changes_nothing() -> None:
    if not (REPO / ".venv" / ".setup-stamp").exists():
        pytest.skip("this checkout was not provisioned with make setup")
    done = subprocess.run(["bash", str(REPO / "scripts" / "provision.sh")], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "installing" not in done.stdout and "creating" not in done.stdout
    assert done.stdout.strip().endswith("ready (" + str(REPO / ".venv") + ")")


@pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")
def test_make_test_bmv2_says_when_there_is_no_bmv2() -> None:
    if not (REPO / ".venv" / ".setup-stamp").exists():
        pytest.skip("this checkout was not provisioned with make setup")
    done = subprocess.run(["make", "-s", "test-bmv2", "P4LANG_ENV=/nonexistent/env.sh"], cwd=REPO,
                          capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/tmp"})
    assert done.returncode != 0
    assert "test-bmv2: BMv2 not found: simple_switch_grpc p4c-bm2-ss not on PATH" in done.stderr
    assert "passed" not in done.stdout


P4LANG_ENV = REPO.parent / "shared" / "p4lang" / "env.sh"


@pytest.mark.skipif(not P4LANG_ENV.exists(), reason="no BMv2 build beside the checkout")
def test_make_test_bmv2_takes_bmv2_from_beside_the_checkout() -> None:
    done = subprocess.run(["make", "-s", "test-bmv2", f"PYTEST={REPO / '.venv/bin/pytest'} --collect-only"],
                          cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/tmp"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    assert f"BMv2 and p4c from {P4LANG_ENV.parent}/" in done.stdout
    assert "simple_switch_grpc 1.15.5-9674187f" in done.stdout
    # only the bmv2-marked tests: some collected, the rest deselected
    assert re.search(r"\b[1-9]\d*/\d+ tests collected \([1-9]\d* deselected\)", done.stdout), done.stdout[-500:]
