"""The fabric drawing as data for the page: the positions and colours of `fabric-lab show`.

Positions come from `topos.drawing.layout` (tiers as rows, NICs at the bottom), colours from
the same plane / rail / group rules; the page draws them as SVG.
"""

from __future__ import annotations

from matplotlib.colors import to_hex

from topos import drawing
from topos.mininet.failures import link_name
from topos.model import FabricSpec


def fabric_json(spec: FabricSpec) -> dict:
    """Switches, NICs, servers and links with positions (x, y: row, 0 = NICs)."""
    pos, row_labels = drawing.layout(spec)
    switches = [{"name": sw.name, "x": pos[sw.name][0], "y": pos[sw.name][1], "tier": sw.tier,
                 "role": sw.role, "colour": to_hex(drawing._colour(drawing._colour_key(sw)))}
                for sw in spec.switches]
    nics = [{"name": nic.name, "x": pos[nic.name][0], "y": pos[nic.name][1], "host": host.name}
            for host in spec.hosts for nic in host.nics]
    hosts = [{"name": host.name, "nics": [nic.name for nic in host.nics]} for host in spec.hosts]
    links = [{"name": link_name(ln), "a": ln.a.node, "b": ln.b.node, "a_port": ln.a.port,
              "b_port": ln.b.port, "rate_mbps": ln.rate_mbps,
              "fabric": spec.is_switch(ln.a.node) and spec.is_switch(ln.b.node)}
             for ln in spec.links]
    return {"name": spec.name, "description": spec.description, "switches": switches,
            "nics": nics, "hosts": hosts, "links": links,
            "rows": {str(y): text for y, text in row_labels.items()}}
