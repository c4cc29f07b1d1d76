"""What produced a result: versions, git revision, machine, and the switch target's own versions.
Stored in every params.json."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import time
from pathlib import Path
from typing import Any

_PACKAGES = ("ai-fabric-lab", "scapy", "p4runtime", "protobuf", "grpcio", "networkx", "matplotlib")


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def git_revision(repo: Path | None = None) -> str:
    """`<sha>` of the checkout, with `-dirty` when it has uncommitted changes; `unknown` outside git."""
    cwd = repo or Path(__file__).resolve().parents[2]
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True,
                             text=True, check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd,
                               capture_output=True, text=True, check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{sha}-dirty" if dirty else sha


def provenance() -> dict[str, Any]:
    return {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "git_revision": git_revision(),
        "versions": {"python": platform.python_version(), "kernel": platform.release(),
                     **{name: _version(name) for name in _PACKAGES}},
        "machine": {"cpus": len(os.sched_getaffinity(0)), "platform": platform.platform()},
    }
