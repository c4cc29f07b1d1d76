"""What produced a result: versions, git revision, machine, and the switch target's own versions.
Stored in every params.json."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import shutil
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
    cwd = repo or Path(__file__).resolve().parent.parent
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



_TARGET_PROGRAMS = {"bmv2": ("simple_switch_grpc", "p4c-bm2-ss")}


def target_versions(target: str) -> dict[str, str]:
    """The versions of the programs a resolved target runs on: for bmv2 what
    `simple_switch_grpc --version` and `p4c-bm2-ss --version` print; p4switch is the lab's own
    package (in `versions`)."""
    if target == "p4switch":
        return {"p4switch": _version("ai-fabric-lab")}
    out = {}
    for program in _TARGET_PROGRAMS.get(target, ()):
        path = shutil.which(program)
        if path is None:
            out[program] = "not installed"
            continue
        try:
            done = subprocess.run([path, "--version"], capture_output=True, text=True,
                                  timeout=10, check=False)
        except (OSError, subprocess.SubprocessError) as err:
            out[program] = f"unknown ({err})"
            continue
        lines = (done.stdout or done.stderr).strip().splitlines()
        out[program] = " ".join(lines[-1].split()) if lines else "unknown"
    return out
