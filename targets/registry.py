"""The targets by name. `auto` is p4switch, the embedded default target, everywhere in the lab;
BMv2 only when asked for by name."""

from __future__ import annotations

from targets.base import Target, TargetError
from targets.bmv2 import BMV2
from targets.p4switch import P4SWITCH

TARGETS: dict[str, Target] = {t.name: t for t in (P4SWITCH, BMV2)}
DEFAULT = P4SWITCH
NAMES: tuple[str, ...] = tuple(TARGETS)  # every target by name
CHOICES: tuple[str, ...] = ("auto", *NAMES)  # what a `--target` option accepts


def get_target(target: Target | str = "auto") -> Target:
    """The target called `target` (`auto`: the default), or `target` itself when it is one."""
    if isinstance(target, Target):
        return target
    if target == "auto":
        return DEFAULT
    try:
        return TARGETS[target]
    except KeyError:
        raise TargetError(f"unknown target {target!r}; choose {', '.join(CHOICES)}") from None
