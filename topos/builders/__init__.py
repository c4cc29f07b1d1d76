"""Fabric builders, one module per design, and the registry `FABRICS` of them by name."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from topos.builders.aipod import aipod
from topos.builders.bigraph import bigraph
from topos.builders.clos import fattree, leafspine
from topos.builders.hpn7 import hpn7
from topos.keyvalue import parse_value
from topos.model import FabricSpec

FabricBuilderFn = Callable[..., FabricSpec]

FABRICS: dict[str, FabricBuilderFn] = {
    "hpn7": hpn7,
    "aipod": aipod,
    "bigraph": bigraph,
    "leafspine": leafspine,
    "fattree": fattree,
}


def fabric_parameters(name: str) -> dict[str, Any]:
    """Scale parameters of a builder and their defaults."""
    builder = _builder(name)
    return {p.name: p.default for p in inspect.signature(builder).parameters.values()}


def build_fabric(name: str, **params: Any) -> FabricSpec:
    """Build fabric `name` with keyword scale parameters; unknown names are reported clearly."""
    builder = _builder(name)
    known = fabric_parameters(name)
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise ValueError(f"{name} has no parameter(s) {', '.join(unknown)}; "
                         f"it takes: {', '.join(known)}")
    return builder(**params)


def parse_scale(items: list[str]) -> dict[str, Any]:
    """Parse `key=value` strings (command line) into scale parameters.

    Values: true/false -> bool, none -> None, integers, floats, otherwise the string.
    """
    params: dict[str, Any] = {}
    bad = [item for item in items if "=" not in item or not item.split("=", 1)[0]]
    if bad:
        raise ValueError(f"scale parameters must look like key=value: {', '.join(bad)}")
    for item in items:
        key, text = item.split("=", 1)
        params[key.strip().replace("-", "_")] = parse_value(text.strip())
    return params


def _builder(name: str) -> FabricBuilderFn:
    try:
        return FABRICS[name]
    except KeyError:
        raise ValueError(f"unknown fabric {name!r}; choose one of: "
                         f"{', '.join(FABRICS)}") from None


__all__ = ["FABRICS", "aipod", "bigraph", "build_fabric", "fabric_parameters", "fattree",
           "hpn7", "leafspine", "parse_scale"]
