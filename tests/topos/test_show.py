"""`fabric-lab show`: the summary table, the picture and the model written where asked."""

from __future__ import annotations

import pytest

from fabric_lab.cli import main as fabric_lab
from topos import FABRICS, FabricSpec, build_fabric


@pytest.mark.parametrize("fabric", sorted(FABRICS))
def test_show_writes_picture_for_every_fabric(fabric: str, tmp_path, capsys) -> None:
    assert fabric_lab(["show", fabric, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    png = tmp_path / f"{fabric}.png"
    assert png.stat().st_size > 30_000 and f"wrote {png}" in out
    spec = build_fabric(fabric)
    assert f"{len(spec.switches)} switches, {len(spec.host_nics())} NICs" in out
    assert f"paths from {spec.host_nics()[0].name}" in out


def test_show_summary_numbers_and_json(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert fabric_lab(["show", "hpn7", "--scale", "servers_per_segment=4", "--json"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split() for line in out.splitlines()
            if line[:1].isdigit() and "Mb/s" not in line}
    assert rows["1"][1:4] == ["tor", "8", "32"] and rows["1"][-1] == "2.00:1"
    assert rows["2"][1:3] == ["agg", "4"]
    assert "3 NIC(s) like h1n0 (10.0.1.1): 1 switch, 2 equal-cost path(s)" in out
    assert (tmp_path / "hpn7.png").exists()
    spec = FabricSpec.from_json((tmp_path / "hpn7.json").read_text())
    assert spec == build_fabric("hpn7", servers_per_segment=4)


def test_show_rejects_bad_scale(tmp_path, capsys) -> None:
    assert fabric_lab(["show", "aipod", "--scale", "segments=2", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "fabric aipod: no parameter 'segments' (it takes: rails" in err
    assert not (tmp_path / "aipod.png").exists()
