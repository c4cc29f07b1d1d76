"""The artefacts a P4Runtime pipeline push carries: P4Info and target-specific device config,
compiled by the target (`targets.Target.compile`: p4switch's embedded compiler, or p4c-bm2-ss
for BMv2).

The cookie identifies the artefacts (a hash of both), so a re-run can tell that a switch already
runs this exact pipeline and leave its state alone.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from p4.config.v1 import p4info_pb2

from targets import CompileError, Target, TargetError, get_target
from topos.errors import InputError


class PipelineError(InputError, RuntimeError):
    """The program could not be turned into pipeline artefacts for the target: it is missing,
    unreadable, not text, or the target's compiler rejects it."""


@dataclass
class Pipeline:
    program: Path
    target: Target
    p4info: p4info_pb2.P4Info
    device_config: bytes

    @property
    def cookie(self) -> int:
        digest = hashlib.sha256(self.p4info.SerializeToString(deterministic=True)
                                + self.device_config).digest()
        return int.from_bytes(digest[:8], "big") >> 1  # fits int64 readers too


def build_pipeline(program: str | Path, target: Target | str, *,
                   include_dirs: list[str | Path] | None = None) -> Pipeline:
    """Compile `program` for `target` (a Target or its name: p4switch, bmv2, auto)."""
    path = Path(program)
    if not path.is_file():
        raise PipelineError(f"P4 program {path} does not exist"
                            + (" as a file" if path.exists() else ""))
    try:
        path.read_bytes().decode("utf-8")
    except OSError as err:
        raise PipelineError(f"P4 program {path} cannot be read: {err.strerror or err}") from None
    except UnicodeDecodeError:
        raise PipelineError(f"P4 program {path} is not a text file") from None
    try:
        resolved = get_target(target)
        compiled = resolved.compile(path, include_dirs or [])
    except (TargetError, CompileError) as err:
        raise PipelineError(str(err)) from None
    return Pipeline(path, resolved, compiled.p4info, compiled.device_config)
