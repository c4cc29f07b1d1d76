"""Annotations as p4c copies them into P4Info: which are kept, how `doc` and `pkg_info` are
filled from them."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from p4.config.v1 import p4info_pb2

from p4switch import cpmodel

# Annotations p4c never copies into P4Info (`@brief`/`@description` become `doc`).
DROPPED = {"name", "id", "brief", "description"}
# Action profile annotations p4c turns into fields instead.
PROFILE_ONLY = {"max_group_size", "selector_size_semantics", "max_member_weight"}


def string_literal(body: str) -> str:
    """The text of a string-literal annotation body (`"x"` -> `x`)."""
    body = body.strip()
    if len(body) >= 2 and body[0] == body[-1] == '"':
        return body[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return body


def add_annotations(
    message,
    annotations: Iterable[cpmodel.Annotation],
    skip: Callable[[str], bool] = lambda name: False,
) -> None:
    """Copy the annotations p4c keeps into `message.annotations`, @brief/@description into its
    `doc` (where it has one)."""
    brief = description = None
    for annotation in annotations:
        if annotation.name == "brief":
            brief = string_literal(annotation.body)
        elif annotation.name == "description":
            description = string_literal(annotation.body)
        if annotation.name in DROPPED or skip(annotation.name):
            continue
        message.annotations.append(str(annotation))
    if "doc" not in message.DESCRIPTOR.fields_by_name:
        return  # e.g. an action reference: p4c drops @brief/@description there
    if brief is not None:
        message.doc.brief = brief
    if description is not None:
        message.doc.description = description


_PKGINFO_KEYS = ("name", "version", "organization", "contact", "url", "arch")
_PLATFORM_KEYS = (
    "multicast_group_table_size",
    "multicast_group_table_total_replicas",
    "multicast_group_table_max_replicas_per_entry",
)
_KV = re.compile(r'\s*([A-Za-z_]\w*)\s*=\s*("(?:[^"\\]|\\.)*"|[^,]+?)\s*(?:,|$)')


def _key_values(body: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in _KV.finditer(body)}


def package_info(pkg: p4info_pb2.PkgInfo, annotations: list[cpmodel.Annotation]) -> None:
    """`pkg_info` as p4c fills it from the annotations of `main`."""
    info = next((a for a in annotations if a.name == "pkginfo"), None)
    fields = _key_values(info.body) if info else {}
    for key in _PKGINFO_KEYS:
        if key in fields and key != "arch":
            setattr(pkg, key, string_literal(fields[key]))
    pkg.arch = string_literal(fields["arch"]) if "arch" in fields else "v1model"
    platform = next((a for a in annotations if a.name == "platform_property"), None)
    for key, value in (_key_values(platform.body) if platform else {}).items():
        if key in _PLATFORM_KEYS:
            setattr(pkg.platform_properties, key, int(value, 0))
    add_annotations(pkg, annotations, lambda n: n in ("pkginfo", "platform_property"))
