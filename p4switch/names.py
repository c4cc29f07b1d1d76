"""Names as the control plane writes them: fully qualified (`MyIngress.ipv4_lpm`) or by a
dot-suffix (`ipv4_lpm`), as BMv2's runtime CLI and p4runtime-shell accept them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar

__all__ = ["by_name", "suffix_match", "suffix_matches"]

T = TypeVar("T")


def suffix_match(full: str, name: str) -> bool:
    """`full` is `name`, or ends in `.name` (`MyIngress.ipv4_lpm` for `ipv4_lpm`)."""
    return full == name or full.endswith("." + name)


def suffix_matches(names: Iterable[str], name: str) -> list[str]:
    """The names `name` stands for (see `suffix_match`), in their order."""
    return [full for full in names if suffix_match(full, name)]


def by_name(items: Mapping[str, T], name: str, kind: str) -> T:
    """The item named exactly `name`, else the only one whose name ends in `.name`.

    KeyError("no <kind> named ...") when none does, KeyError("<kind> name ... is ambiguous: ...")
    naming them when several do."""
    if name in items:
        return items[name]
    matches = suffix_matches(items, name)
    if len(matches) == 1:
        return items[matches[0]]
    if matches:
        raise KeyError(f"{kind} name {name!r} is ambiguous: " + ", ".join(sorted(matches)))
    raise KeyError(f"no {kind} named {name!r}")
