"""Layered pictures of a fabric (matplotlib, Agg): tiers as rows, hosts at the bottom.

Switches are coloured by plane (HPN), else rail (AIPod), else group (BiGraph side, fat-tree pod,
leaf), else role; links take the colour of their upper end. Servers are boxes around their NICs,
which carry their rail's colour when the switches are coloured by rail.
BiGraph is drawn with the upper group's hosts on top and the lower group's at the bottom.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.patches import FancyBboxPatch, Patch

from topos.model import FabricSpec, Switch

Rgb = tuple[float, float, float]
_PALETTE: tuple[Rgb, ...] = plt.get_cmap("tab10").colors  # type: ignore[attr-defined]  # a ListedColormap
_ROLE_COLOURS = {"spine": "#8c8c8c", "core": "#5a5a5a", "superspine": "#5a5a5a",
                 "agg": "#a0a0a0", "leaf": "#6baed6", "edge": "#6baed6"}
_NIC_COLOUR = "#d9d9d9"


def _colour_key(sw: Switch) -> tuple[str, object]:
    if sw.plane is not None:
        return ("plane", sw.plane)
    if sw.rail is not None:
        return ("rail", sw.rail)
    if sw.group is not None:
        return ("group", sw.group)
    return ("role", sw.role)


def _colour(key: tuple[str, object]) -> str | Rgb:
    kind, value = key
    if kind == "role":
        return _ROLE_COLOURS.get(str(value), "#9e9e9e")
    index = value if isinstance(value, int) else ord(str(value)[0]) - ord("A")
    return _PALETTE[index % len(_PALETTE)]


def _label(key: tuple[str, object], spec: FabricSpec) -> str:
    kind, value = key
    if kind == "group" and spec.kind == "bigraph":
        return "upper group" if value == 0 else "lower group"
    if kind == "group" and spec.kind == "fattree":
        return f"pod {value}"
    return f"{kind} {value}"


def _switch_rows(spec: FabricSpec) -> dict[str, int]:
    if spec.kind == "bigraph":
        return {sw.name: 2 if sw.group == 0 else 1 for sw in spec.switches}
    return {sw.name: sw.tier for sw in spec.switches}


def _spread(names: list[str], width: float) -> dict[str, float]:
    if len(names) == 1:
        return {names[0]: width / 2}
    step = width / (len(names) - 1)
    return {name: i * step for i, name in enumerate(names)}


def layout(spec: FabricSpec) -> tuple[dict[str, tuple[float, float]], dict[int, str]]:
    """Positions of every switch and NIC, and a label per row (y)."""
    rows = _switch_rows(spec)
    top = max(rows.values())
    nic_rows: dict[str, int] = {}
    for nic in spec.host_nics():
        attached = {rows[sw] for sw, _ in spec.attachments(nic.name)}
        nic_rows[nic.name] = top + 1 if spec.kind == "bigraph" and attached == {top} else 0
    by_row: dict[int, list[str]] = {}
    order = {sw.name: (sw.group if sw.group is not None else -1, sw.plane or "",
                       sw.rail if sw.rail is not None else -1, i)
             for i, sw in enumerate(spec.switches)}
    tier1 = min(rows.values())
    for sw in spec.switches:
        by_row.setdefault(rows[sw.name], []).append(sw.name)
    by_row[tier1].sort(key=lambda name: order[name])
    for nic in spec.host_nics():
        by_row.setdefault(nic_rows[nic.name], []).append(nic.name)
    width = float(max(len(v) for v in by_row.values()) - 1) or 1.0
    pos: dict[str, tuple[float, float]] = {}
    for y, names in by_row.items():
        for name, x in _spread(names, width).items():
            pos[name] = (x, float(y))
    labels: dict[int, str] = {}
    for y, names in by_row.items():
        if names[0] in rows:
            roles = sorted({spec.switch(n).role for n in names})
            tier = spec.switch(names[0]).tier
            labels[y] = f"tier {tier}\n" + "/".join(roles)
        else:
            labels[y] = "NICs"
    return pos, labels


_GROUP_NAMES = {"hpn7": "segment", "aipod": "group", "fattree": "pod"}


def _draw_groups(ax: plt.Axes, spec: FabricSpec, pos: dict[str, tuple[float, float]]) -> None:
    """A shaded band behind the tier-1 switches of each segment / group / pod."""
    word = _GROUP_NAMES.get(spec.kind)
    if word is None:
        return
    members: dict[int, list[tuple[float, float]]] = {}
    for sw in spec.switches:
        if sw.tier == 1 and sw.group is not None:
            members.setdefault(sw.group, []).append(pos[sw.name])
    for group, points in sorted(members.items()):
        xs = [x for x, _ in points]
        y = points[0][1]
        ax.add_patch(FancyBboxPatch((min(xs) - 0.45, y - 0.22), max(xs) - min(xs) + 0.9, 0.44,
                                    boxstyle="round,pad=0.02", fc="#fff3c4", ec="#c9a227",
                                    lw=0.8, zorder=0.5))
        ax.text((min(xs) + max(xs)) / 2, y - 0.28, f"{word} {group}", ha="center", va="top",
                fontsize=7, color="#8a6d00", zorder=3)


def draw(spec: FabricSpec, path: str | Path) -> Path:
    """Draw `spec` to a PNG at `path`; returns the path."""
    pos, row_labels = layout(spec)
    rows = _switch_rows(spec)
    n_wide = max(x for x, _ in pos.values()) + 1
    n_rows = len(row_labels)
    fig, ax = plt.subplots(figsize=(max(9.0, 0.75 * n_wide + 2), 1.5 * n_rows + 1.6))
    colours = {sw.name: _colour(_colour_key(sw)) for sw in spec.switches}

    for ln in spec.links:
        a, b = ln.a.node, ln.b.node
        upper = a if a in rows and (b not in rows or rows[a] >= rows[b]) else b
        (xa, ya), (xb, yb) = pos[a], pos[b]
        ax.plot([xa, xb], [ya, yb], color=colours[upper], alpha=0.6, lw=1.3, zorder=2.5)

    for sw in spec.switches:
        x, y = pos[sw.name]
        ax.text(x, y, sw.name, ha="center", va="center", fontsize=7, zorder=3,
                bbox={"boxstyle": "round,pad=0.35", "fc": colours[sw.name], "ec": "black",
                      "lw": 0.6})
    rail_coloured = any(_colour_key(sw)[0] == "rail" for sw in spec.switches)
    for host in spec.hosts:
        xs = [pos[nic.name][0] for nic in host.nics]
        y = pos[host.nics[0].name][1]
        ax.add_patch(FancyBboxPatch((min(xs) - 0.42, y - 0.2), max(xs) - min(xs) + 0.84, 0.4,
                                    boxstyle="round,pad=0.02", fc="#f7f7f7", ec="#555555",
                                    lw=0.8, zorder=2))
        label_y = y - 0.28 if y == 0 else y + 0.28
        ax.text(sum(xs) / len(xs), label_y, host.name, ha="center",
                va="top" if y == 0 else "bottom", fontsize=7, color="#333333")
        for nic in host.nics:
            nx_, ny = pos[nic.name]
            fc = (_PALETTE[nic.rail % len(_PALETTE)] if rail_coloured and nic.rail is not None
                  else _NIC_COLOUR)
            ax.text(nx_, ny, nic.name, ha="center", va="center", fontsize=6, zorder=3,
                    bbox={"boxstyle": "square,pad=0.25", "fc": fc, "ec": "black", "lw": 0.5,
                          "alpha": 0.85})

    _draw_groups(ax, spec, pos)
    for y, text in row_labels.items():
        ax.text(-0.9, y, text, ha="right", va="center", fontsize=8, fontweight="bold")
    keys = sorted({_colour_key(sw) for sw in spec.switches}, key=str)
    ax.legend(handles=[Patch(fc=_colour(k), ec="black", label=_label(k, spec)) for k in keys],
              loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
    params = textwrap.fill(", ".join(f"{k}={v}" for k, v in spec.params.items()), width=110)
    ax.set_title(f"{spec.name}: {spec.description}\n{len(spec.switches)} switches, "
                 f"{len(spec.host_nics())} NICs, {len(spec.links)} links\n{params}", fontsize=9)
    ax.set_xlim(-2.6, n_wide + 0.2)
    ax.set_ylim(min(y for _, y in pos.values()) - 0.8, max(y for _, y in pos.values()) + 0.6)
    ax.axis("off")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=130)
    plt.close(fig)
    return out
