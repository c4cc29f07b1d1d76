"""The knobs `controller.lb` writes exist in each program's P4Info (p4switch, and BMv2 when
p4c is installed), and the fabric model gives the ports DLB tags on."""

from __future__ import annotations

import shutil

import pytest

from controller.lb import (
    MODES,
    NAMES,
    LbError,
    check_gap,
    host_facing_ports,
    mode_of,
    program_path,
)
from controller.pipeline import build_pipeline
from controller.schema import Schema
from topos import build_fabric


def knobs(schema: Schema, mode: str) -> None:
    if mode == "flowlet":
        assert schema.param(NAMES.gap_action, NAMES.gap_param).bitwidth == 48
        assert schema.table(NAMES.gap_table)
    if mode in ("dlb", "qdlb"):
        assert schema.match_field(NAMES.tag_table, NAMES.tag_field).bitwidth == 9
        assert schema.action(NAMES.tag_action)
    if mode == "qdlb":
        assert schema.param(NAMES.dlb_action, NAMES.dlb_param).bitwidth == 1
        assert schema.table(NAMES.dlb_table)


@pytest.mark.parametrize("mode", MODES)
def test_each_program_has_its_knobs_and_is_recognised(mode):
    pytest.importorskip("p4switch.compiler", reason="the p4switch compiler is not in the tree")
    schema = Schema(build_pipeline(program_path(mode), "p4switch").p4info)
    assert mode_of(schema) == mode
    knobs(schema, mode)


@pytest.mark.bmv2
@pytest.mark.parametrize("mode", MODES)
def test_each_program_compiles_for_bmv2_with_the_same_knobs(mode):
    if shutil.which("p4c-bm2-ss") is None:
        pytest.skip("p4c-bm2-ss is not installed")
    schema = Schema(build_pipeline(program_path(mode), "bmv2").p4info)
    assert mode_of(schema) == mode
    knobs(schema, mode)


def test_host_facing_ports_are_the_switch_ends_of_nic_links():
    spec = build_fabric("leafspine", leaves=2, spines=2, hosts_per_leaf=2)
    ports = host_facing_ports(spec)
    assert ports["spine0"] == [] and ports["spine1"] == []
    for leaf in ("leaf0", "leaf1"):
        nics = [n for n in spec.neighbours(leaf) if not spec.is_switch(n)]
        assert ports[leaf] == sorted(spec.port_to(leaf, nic) for nic in nics)
        assert len(ports[leaf]) == 2
    hpn = build_fabric("hpn7")  # dual-homed NICs: both ToRs tag
    tagged = {sw for sw, p in host_facing_ports(hpn).items() if p}
    assert tagged == {sw.name for sw in hpn.switches if sw.tier == 1}


def test_bad_modes_and_gaps_are_refused():
    with pytest.raises(LbError, match="unknown load-balancing mode 'rr'"):
        program_path("rr")
    for bad in (0, -5, 1 << 48, 1.5, True):
        with pytest.raises(LbError, match="flowlet gap must be"):
            check_gap(bad)
    assert check_gap(20_000) == 20_000


def test_lb_command_finds_the_fabric_that_fabric_lab_up_hands_over(tmp_path, monkeypatch):
    import argparse

    from fabric_lab.commands.lb import _fabric

    spec = build_fabric("leafspine", leaves=2, spines=2, hosts_per_leaf=1)
    args = argparse.Namespace(fabric=None, scale=[])
    model = tmp_path / "fabric.json"
    model.write_text(spec.to_json())
    monkeypatch.setenv("FABRIC_LAB_FABRIC", str(model))  # what `fabric-lab up --run` sets
    assert _fabric(args) == spec
    monkeypatch.setenv("FABRIC_LAB_FABRIC", spec.to_json())
    assert _fabric(args) == spec
    monkeypatch.delenv("FABRIC_LAB_FABRIC")
    with pytest.raises(ValueError, match="no fabric: give --fabric"):
        _fabric(args)
