"""Results belong to the user who ran `sudo fabric-lab ...` (SUDO_UID/SUDO_GID), so that the
README's next line, `fabric-lab report` without sudo, can write. A throwaway uid stands in for
the user; the commands run as real processes, the report as that uid."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from experiments.framework.report import build_report
from experiments.framework.results import allocate, give_to_invoking_user, invoking_user
from tests.users import unused_id

REPO = Path(__file__).resolve().parents[2]
FABRIC_LAB = REPO / ".venv" / "bin" / "fabric-lab"

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="handing files to another user needs root")


@pytest.fixture
def user() -> int:
    return unused_id()


def owners(root: Path) -> dict[str, tuple[int, int]]:
    found = {".": (root.lstat().st_uid, root.lstat().st_gid)}
    for path in root.rglob("*"):
        info = path.lstat()
        found[str(path.relative_to(root))] = (info.st_uid, info.st_gid)
    return found


def test_only_root_under_sudo_hands_over(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, user: int) -> None:
    monkeypatch.delenv("SUDO_UID", raising=False)
    assert invoking_user() is None
    monkeypatch.setenv("SUDO_UID", "0")
    assert invoking_user() is None  # root who ran sudo: nothing to hand over
    monkeypatch.setenv("SUDO_UID", str(user))
    monkeypatch.setenv("SUDO_GID", str(user + 1))
    assert invoking_user() == (user, user + 1)
    target = tmp_path / "f"
    target.write_text("x")
    link = tmp_path / "link-to-etc"
    link.symlink_to("/etc/hostname")
    give_to_invoking_user(tmp_path, tree=True)
    assert target.stat().st_uid == user and target.stat().st_gid == user + 1
    assert link.lstat().st_uid == user
    assert Path("/etc/hostname").stat().st_uid == 0  # a link is changed, never what it points to


def test_result_dirs_files_and_report_belong_to_the_sudo_user(monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path, user: int) -> None:
    monkeypatch.setenv("SUDO_UID", str(user))
    monkeypatch.setenv("SUDO_GID", str(user))
    base = tmp_path / "results"
    run = allocate("exp", base=base)
    run.write_params("exp", {"n": 1})
    run.write_csv("data.csv", [{"a": 1}], ["a"])
    with run.append_csv("rows.csv", ["a"]) as rows:  # appended as measured
        rows.append({"a": 1})
    (run.path / "logs").mkdir()
    (run.path / "logs" / "switch.log").write_text("written by another process\n")
    run.update_params(status="complete")
    explicit = allocate("exp", out=tmp_path / "elsewhere" / "deep" / "run").path
    page, _ = build_report(base, tmp_path / "pages" / "report.html")
    for root in (base, explicit, tmp_path / "elsewhere", page.parent):
        assert set(owners(root).values()) == {(user, user)}, owners(root)
    assert (tmp_path.stat().st_uid, tmp_path.stat().st_gid) == (0, 0)  # what existed stays as it was


@pytest.mark.usefixtures("checkout_open_to_others")
def test_sudo_run_then_user_report(shared_dir: Path, user: int) -> None:
    """`sudo fabric-lab run ecmp-hashing --quick`, then `fabric-lab report` as the user."""
    results = shared_dir / "results"
    env = {"PATH": f"{FABRIC_LAB.parent}:/usr/bin:/bin", "HOME": str(shared_dir),
           "MPLCONFIGDIR": str(shared_dir / "mpl"), "SUDO_UID": str(user), "SUDO_GID": str(user),
           "SUDO_USER": "student"}
    done = subprocess.run([str(FABRIC_LAB), "run", "ecmp-hashing", "--quick", "--out",
                           str(results / "ecmp-hashing" / "run1")], cwd=shared_dir, env=env,
                          capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    made = owners(results)
    assert any(name.endswith(".png") for name in made) and any(name.endswith(".csv") for name in made)
    assert {name for name, owner in made.items() if owner != (user, user)} == set()
    report = subprocess.run(["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups",
                             str(FABRIC_LAB), "report"], cwd=shared_dir,
                            env={**env, "SUDO_UID": "", "SUDO_GID": ""},
                            capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    page = results / "report.html"
    assert page.stat().st_uid == user and "ecmp-hashing" in page.read_text()
