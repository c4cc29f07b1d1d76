"""Every fabric is drawn to a non-trivial PNG."""

from __future__ import annotations

import matplotlib.image as mpimg
import numpy as np

from topos import FABRICS, FabricSpec, build_fabric
from topos.drawing import draw, layout


def test_drawing_is_a_real_picture(any_fabric: FabricSpec, tmp_path) -> None:
    out = draw(any_fabric, tmp_path / f"{any_fabric.name}.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.stat().st_size > 30_000
    pixels = mpimg.imread(out)
    height, width = pixels.shape[:2]
    assert width >= 1000 and height >= 600
    rgb = pixels[..., :3].reshape(-1, 3)
    ink = np.any(rgb < 0.9, axis=1).mean()
    assert 0.02 < ink < 0.6  # drawn on, but not a solid block
    assert len(np.unique((rgb * 255).astype(np.uint8), axis=0)) > 50


def test_layout_places_hosts_below_switch_tiers() -> None:
    for name in FABRICS:
        spec = build_fabric(name)
        pos, labels = layout(spec)
        assert set(pos) == {sw.name for sw in spec.switches} | {n.name for n in spec.host_nics()}
        if name != "bigraph":
            assert {pos[n.name][1] for n in spec.host_nics()} == {0.0}
            for sw in spec.switches:
                assert pos[sw.name][1] == sw.tier
    pos, _ = layout(build_fabric("bigraph"))
    assert pos["h0n0"][1] > pos["up0"][1] > pos["lo0"][1] > pos["h15n0"][1]
