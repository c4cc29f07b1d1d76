"""P4Info, interchangeable with p4c's: generation from the control-plane model (`build`), p4c's
id assignment (`ids`), annotations and package info (`annotations`), the lookup index the
P4Runtime server uses (`index`) and a field-by-field comparison (`compare`).

`build_p4info`, `p4info_text` and `P4InfoIndex` are loaded on first use, so that `ids` (which the
extern modules use) does not bring protobuf into processes that never build a P4Info."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from p4switch.p4info.build import build_p4info, p4info_text
    from p4switch.p4info.index import P4InfoIndex

__all__ = ["P4InfoIndex", "build_p4info", "p4info_text"]

_LAZY = {"build_p4info": "build", "p4info_text": "build", "P4InfoIndex": "index"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"p4switch.p4info.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
