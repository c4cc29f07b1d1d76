"""Fabrics for the controller's network tests: every node and interface name starts with `ct`
and management ports are moved to a range of their own, so runs never meet other networks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from controller.pipeline import Pipeline, PipelineError, build_pipeline
from mechanisms import program_path
from tests.ports import FABRICS
from topos import FabricSpec, build_fabric

# The program under test; FABRIC_LAB_TEST_P4 runs the suite against another variant of it.
PROGRAM = Path(os.environ.get("FABRIC_LAB_TEST_P4", program_path("ecmp")))
PREFIX = FABRICS["controller"].prefix


def prefixed(spec: FabricSpec, prefix: str = PREFIX) -> FabricSpec:
    """A copy of `spec` with `prefix` on node, host and interface names and moved mgmt ports."""
    return FABRICS["controller"].apply(spec, prefix)


def ct_fabric(name: str, **scale) -> FabricSpec:
    return prefixed(build_fabric(name, **scale))


def ecmp_pipeline(program: Path = PROGRAM) -> Pipeline:
    """The lab's ECMP program for p4switch; skips (naming the construct) while p4switch reports
    part of it unsupported, fails on any other compile error."""
    try:
        return build_pipeline(program, "p4switch")
    except PipelineError as err:
        if "unsupported:" in str(err) or "compiler is not available" in str(err):
            pytest.skip(str(err))
        raise
