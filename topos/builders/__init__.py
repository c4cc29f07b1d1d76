"""Fabric builders, one module per design, and the registry `FABRICS` of them by name."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable
from typing import Any

from topos.builders.aipod import aipod, aipod_size
from topos.builders.bigraph import bigraph, bigraph_size
from topos.builders.clos import fattree, fattree_size, leafspine, leafspine_size
from topos.builders.hpn7 import hpn7, hpn7_size
from topos.errors import InputError
from topos.keyvalue import parse_value
from topos.model import FabricSpec
from topos.size import FabricSize
from topos.validation import FabricError
from topos.values import DELAY_MS, QUEUE_PKTS, RATE_MBPS, Number

FabricBuilderFn = Callable[..., FabricSpec]

FABRICS: dict[str, FabricBuilderFn] = {
    "hpn7": hpn7,
    "aipod": aipod,
    "bigraph": bigraph,
    "leafspine": leafspine,
    "fattree": fattree,
}
# what each fabric would need, from its scale parameters alone (before building)
SIZES: dict[str, Callable[..., FabricSize]] = {
    "hpn7": hpn7_size,
    "aipod": aipod_size,
    "bigraph": bigraph_size,
    "leafspine": leafspine_size,
    "fattree": fattree_size,
}
# the link properties a builder takes; None leaves the property unshaped
LINK_PARAMETERS: dict[str, Number] = {"rate_mbps": RATE_MBPS, "uplink_rate_mbps": RATE_MBPS,
                                      "delay_ms": DELAY_MS, "queue_pkts": QUEUE_PKTS}


def fabric_parameters(name: str) -> dict[str, Any]:
    """Scale parameters of a builder and their defaults."""
    builder = _builder(name)
    return {p.name: p.default for p in inspect.signature(builder).parameters.values()}


def build_fabric(name: str, **params: Any) -> FabricSpec:
    """Build fabric `name` with keyword scale parameters, checked first (`checked_scale`)."""
    return _builder(name)(**checked_scale(name, params))


def checked_scale(name: str, params: dict[str, Any], sized: bool = True) -> dict[str, Any]:
    """`params` for fabric `name` with every value's type and range checked, then (`sized`)
    the size it would have against the limits of `topos.size`, all before building;
    FabricError listing every fault. Bools may be given as 0/1."""
    known = fabric_parameters(name)
    hints = typing.get_type_hints(_builder(name))
    problems = [f"no parameter {key!r} (it takes: {', '.join(known)})"
                for key in sorted(set(params) - set(known))]
    out = dict(params)
    for key, value in params.items():
        if key not in known:
            continue
        fault = None
        if key in LINK_PARAMETERS:
            fault = None if value is None else LINK_PARAMETERS[key].problem(value)
        elif hints[key] is bool:
            if value in (0, 1) and not isinstance(value, float):
                out[key] = bool(value)
            else:
                fault = f"must be true or false, not {value!r}"
        else:
            least = 0 if known[key] == 0 else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                fault = f"must be an integer >= {least}, not {value!r}"
        if fault:
            problems.append(f"{key} {fault}")
    if sized and not problems:
        size = SIZES[name](**{**known, **out})
        scale = " ".join(f"{k}={v}" for k, v in params.items())
        problems = [f"{scale or 'the default scale'} {fault}" for fault in size.problems()]
    if problems:
        raise FabricError(name, problems, f"fabric {name}")
    return out


def parse_scale(items: list[str]) -> dict[str, Any]:
    """Parse `key=value` strings (command line) into scale parameters.

    Values: true/false -> bool, none -> None, integers, floats, otherwise the string.
    """
    params: dict[str, Any] = {}
    bad = [item for item in items if "=" not in item or not item.split("=", 1)[0]]
    if bad:
        raise InputError(f"scale parameters must look like key=value: {', '.join(bad)}")
    for item in items:
        key, text = item.split("=", 1)
        params[key.strip().replace("-", "_")] = parse_value(text.strip())
    return params


def _builder(name: str) -> FabricBuilderFn:
    try:
        return FABRICS[name]
    except KeyError:
        raise InputError(f"unknown fabric {name!r}; choose one of: "
                         f"{', '.join(FABRICS)}") from None


__all__ = ["FABRICS", "LINK_PARAMETERS", "SIZES", "aipod", "bigraph", "build_fabric",
           "checked_scale", "fabric_parameters", "fattree", "hpn7", "leafspine", "parse_scale"]
