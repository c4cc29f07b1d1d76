"""`fabric-lab report` embeds only regular files inside a run: a PNG or params.json that is a
symbolic link (to /etc/passwd, or to another run's file) or not a file at all is refused, each
named, and nothing is written; under sudo, a file the invoking user cannot read is refused too,
and the page is theirs. The page replaces what its name held (a link there is replaced, never
written through)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.framework.report import MAX_LISTED, ReportError, build_report
from tests.users import unused_id

REPO = Path(__file__).resolve().parents[2]
PNG = bytes.fromhex("89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
                    "0000000d4944415478da63f8ffff3f0005fe02fea7d6a4e90000000049454e44ae426082")


def make_run(results: Path, name: str = "20250101-000000") -> Path:
    run = results / "exp" / name
    run.mkdir(parents=True)
    (run / "params.json").write_text(json.dumps({"experiment": "exp", "params": {"n": 1},
                                                 "status": "complete"}))
    (run / "good.png").write_bytes(PNG)
    return run


def test_a_png_linked_to_etc_passwd_is_refused_and_nothing_written(tmp_path: Path) -> None:
    run = make_run(tmp_path / "results")
    (run / "plot.png").symlink_to("/etc/passwd")
    out = tmp_path / "report.html"
    with pytest.raises(ReportError) as refused:
        build_report(tmp_path / "results", out)
    assert str(refused.value) == (f"{run / 'plot.png'}: a symbolic link; the report embeds only "
                                  "regular files inside the run")
    assert refused.value.exit_status == 2 and not out.exists()
    done = subprocess.run([sys.executable, "-m", "fabric_lab.cli", "report", "--results",
                           str(tmp_path / "results"), "--out", str(out)], cwd=REPO,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"fabric-lab report: {refused.value}\n"
    assert not out.exists()
    (run / "plot.png").unlink()
    (run / "plot.png").write_bytes(PNG)  # the file itself: embedded
    page, plots = build_report(tmp_path / "results", out)
    text = page.read_text()
    assert plots == 2 and text.count(base64.b64encode(PNG).decode()) == 2
    assert "root:" not in text


def test_every_file_that_is_no_file_of_the_run_is_named(tmp_path: Path) -> None:
    results = tmp_path / "results"
    first = make_run(results)
    second = make_run(results, "20250102-000000")
    (second / "borrowed.png").symlink_to(first / "good.png")  # inside the results, still a link
    (second / "dir.png").mkdir()
    os.mkfifo(second / "fifo.png")
    third = results / "exp" / "20250103-000000"
    third.mkdir()
    (third / "params.json").symlink_to(first / "params.json")
    with pytest.raises(ReportError) as refused:
        build_report(results, tmp_path / "report.html")
    assert str(refused.value).splitlines() == [
        f"{third / 'params.json'}: a symbolic link; the report embeds only regular files inside the run",
        f"{second / 'borrowed.png'}: a symbolic link; the report embeds only regular files inside the run",
        f"{second / 'dir.png'}: not a regular file",
        f"{second / 'fifo.png'}: not a regular file"]
    for i in range(MAX_LISTED + 3):
        (first / f"link{i:02}.png").symlink_to(first / "good.png")
    with pytest.raises(ReportError) as many:
        build_report(results, tmp_path / "report.html")
    lines = str(many.value).splitlines()
    assert len(lines) == MAX_LISTED + 1  # 4 + MAX_LISTED + 3 refused: MAX_LISTED named
    assert lines[-1] == "... and 7 more"


def test_the_page_replaces_a_link_in_its_place_and_never_writes_through_it(tmp_path: Path) -> None:
    make_run(tmp_path / "results")
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me\n")
    out = tmp_path / "report.html"
    out.symlink_to(precious)
    page, plots = build_report(tmp_path / "results", out)
    assert plots == 1 and not out.is_symlink() and "<title>AI Fabric Lab results" in out.read_text()
    assert precious.read_text() == "keep me\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".partial")] == []
    with pytest.raises(ReportError, match=f"^{tmp_path / 'results'}: Is a directory$"):
        build_report(tmp_path / "results", tmp_path / "results")


@pytest.mark.skipif(os.geteuid() != 0, reason="files of another user need root")
def test_under_sudo_a_file_the_user_cannot_read_is_refused_and_the_page_is_theirs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = unused_id(61300)
    results = tmp_path / "results"
    run = make_run(results)
    for path in [tmp_path, results, results / "exp", run, *run.iterdir()]:
        os.chown(path, user, user)
    tmp_path.chmod(0o755)
    secret = run / "secret.png"
    secret.write_bytes(PNG)  # root's, 0600: what the user could not open
    secret.chmod(0o600)
    monkeypatch.setenv("SUDO_UID", str(user))
    monkeypatch.setenv("SUDO_GID", str(user))
    out = tmp_path / "report.html"
    with pytest.raises(ReportError) as refused:
        build_report(results, out)
    assert str(refused.value) == (f"{secret}: uid {user} (who ran sudo) cannot read it; the page "
                                  "would show it to them")
    assert not out.exists()
    secret.chmod(0o644)  # readable by anyone: the user could open it
    run.chmod(0o700)
    os.chown(run, 0, 0)  # ... but not the run it is in
    with pytest.raises(ReportError, match=f"^{run}: a directory uid {user} \\(who ran sudo\\) "
                                          "cannot read$"):
        build_report(results, out)
    os.chown(run, user, user)
    page, plots = build_report(results, out)
    info = page.stat()
    assert plots == 2 and (info.st_uid, info.st_gid) == (user, user) and info.st_mode & 0o777 == 0o644
