"""What the lab tests that run commands as another user share: a directory every user can enter,
and a skip when that user cannot reach this checkout at all."""

from __future__ import annotations

import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory every user can enter (pytest's tmp_path is private to root)."""
    path = Path(tempfile.mkdtemp(prefix="fl-shared-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def closed_ancestor(path: Path) -> Path | None:
    """The first directory on the way to `path` that users other than its owner cannot enter."""
    for directory in [path, *path.parents]:
        if not directory.stat().st_mode & stat.S_IXOTH:
            return directory
    return None


@pytest.fixture
def checkout_open_to_others() -> None:
    """Skip, saying what to change, when another user cannot enter the checkout (a clone in a
    home directory of mode 0700 or 0750): a test that runs its commands as that user cannot
    pass there, and `make setup` says the same (scripts/provision.sh, note_reach)."""
    closed = closed_ancestor(REPO)
    if closed is not None:
        pytest.skip(f"{closed} is mode {stat.S_IMODE(closed.stat().st_mode):o}: other users cannot "
                    f"run this checkout's commands (chmod o+x {closed}, or clone where others can "
                    f"enter)")
