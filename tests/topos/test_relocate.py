"""Relocated fabrics keep their wiring and never share a name or port with the original."""

from __future__ import annotations

from topos import build_fabric
from topos.relocate import prefixed


def test_prefixed_copy_renames_everything_and_moves_ports() -> None:
    spec = build_fabric("fattree")
    moved = prefixed(spec, "zz", 41000, 42000)
    assert [s.name for s in moved.switches] == ["zz" + s.name for s in spec.switches]
    assert [s.grpc_port for s in moved.switches] == list(range(41000, 41000 + len(spec.switches)))
    assert [s.thrift_port for s in moved.switches] == list(range(42000, 42000 + len(spec.switches)))
    assert {n.name for n in moved.host_nics()} == {"zz" + n.name for n in spec.host_nics()}
    for old, new in zip(spec.links, moved.links, strict=True):
        assert new.a.node == "zz" + old.a.node and new.b.node == "zz" + old.b.node
        assert (new.a.port, new.b.port) == (old.a.port, old.b.port)
        assert all(len(end.intf) <= 15 and end.intf.startswith("zz") for end in (new.a, new.b))
    assert {s.name for s in spec.switches}.isdisjoint(s.name for s in moved.switches)
