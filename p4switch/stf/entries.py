"""STF `add` / `setdefault` statements -> runtime table entries, as BMv2's STF runner does it.

bmv2stf.py turns each statement into a simple_switch_CLI `table_add`; the rules followed here
are the ones that produces:
- tables and actions are found by exact name, else by a unique name suffix;
- key fields by exact name, `name$` / `name.$valid$` forms, else by `.name` suffix (last match);
  `x$0` means `x[0]`;
- a key field left out is 0 for exact, don't care for lpm and ternary (`0/0`, `0&&&0`);
- ternary values are written with `*` nibbles/bits (`0x0a**`): the mask has all bits of the
  written digits set but those of `*`; decimal ternary values are rejected;
- an lpm value without `/len` has a prefix of all its written digits (`0x0a01****` = /16);
- the STF priority (larger wins) is used by tables with ternary, optional or range keys only;
- values wider than the field are cut to the field's width (BMv2 keeps the low bits), values
  wider than its bytes are rejected.

Three kinds of failure, as they turn out with BMv2: `EntryError`, the runner itself fails (the
test is invalid); `Rejected`, simple_switch_CLI rejects the command, which is skipped and the
test goes on; `Unsupported`, BMv2 would accept what p4switch cannot represent.
"""

from __future__ import annotations

import re

from p4switch import cpmodel
from p4switch.names import suffix_match
from p4switch.stf import syntax as s


class EntryError(Exception):
    """A statement BMv2's STF runner could not turn into a CLI command (the test is invalid)."""


class Rejected(Exception):
    """A command simple_switch_CLI would reject (and the test would go on without it)."""


class Unsupported(Exception):
    """A command BMv2 would accept but p4switch cannot represent."""


def find_table(model: cpmodel.ControlPlaneModel, name: str) -> cpmodel.Table:
    return find_by_name([t.name for t in model.tables], name, "table", model.table)


def find_action(model: cpmodel.ControlPlaneModel, table: cpmodel.Table, name: str):
    names = [ref.name for ref in table.action_refs]
    return find_by_name(names, name, f"action of table {table.name}", model.action)


def find_by_name(names: list[str], name: str, what: str, get):
    if name in names:
        return get(name)
    candidates = [n for n in names if n.endswith(name)]
    if len(candidates) > 1:
        raise EntryError(f"{what} name {name!r} is ambiguous: {', '.join(candidates)}")
    if not candidates:
        raise EntryError(f"no {what} named {name!r}")
    return get(candidates[0])


def key_fields(table: cpmodel.Table) -> list[cpmodel.MatchField]:
    return [f for f in table.match_fields if f.match_kind != "selector"]


def needs_priority(table: cpmodel.Table) -> bool:
    return any(f.match_kind in ("ternary", "range", "optional") for f in key_fields(table))


def build_key(table: cpmodel.Table, matches: list[s.KeyMatch]) -> tuple:
    fields = key_fields(table)
    for f in fields:
        if f.match_kind == "range":
            raise EntryError(f"table {table.name}: key {f.name} is a range match, which "
                             "BMv2's STF runner cannot program")
    keys: dict[str, cpmodel.FieldMatch | None] = {
        f.name: cpmodel.FieldMatch("exact", value=0) if f.match_kind == "exact" else None
        for f in fields
    }
    by_name = {f.name: f for f in fields}
    for m in matches:
        f = by_name[_key_field_name(table, list(by_name), m.field)]
        keys[f.name] = _field_match(f, m)
    return tuple(keys[f.name] for f in fields)


def _key_field_name(table: cpmodel.Table, names: list[str], key: str) -> str:
    m = re.match(r"(.*)\$([0-9]+)(.*)", key)
    if m:
        key = f"{m.group(1)}[{m.group(2)}]{m.group(3)}"
    for candidate in (key, key + "$", key + ".$valid$"):
        if candidate in names:
            return candidate
    if key.endswith(".valid") and key[:-5] + "$valid$" in names:
        return key[:-5] + "$valid$"
    found = None
    for name in names:
        if suffix_match(name, key) or suffix_match(name, key + "$") or \
                (key == "valid" and name.endswith(".$valid$")):
            found = name  # the last matching field wins, as in bmv2stf
    if found is None and key == "valid" and "$valid$" in names:
        found = "$valid$"
    if found is None:
        raise EntryError(f"table {table.name} has no key field {key!r} "
                         f"(fields: {', '.join(names) or 'none'})")
    return found


def _field_match(f: cpmodel.MatchField, m: s.KeyMatch) -> cpmodel.FieldMatch | None:
    width_mask = (1 << f.bitwidth) - 1
    what = f"key field {f.name}"
    if f.match_kind in ("ternary", "optional"):
        if m.prefix_len is not None:
            raise EntryError(f"{what}: '/' is not allowed in a ternary value")
        value, mask = _ternary(m.value, what)
        if (value | mask) >> (8 * ((f.bitwidth + 7) // 8)):
            raise Rejected(f"{what}: {m.value} is too large for {f.bitwidth} bits")
        value &= width_mask
        mask &= width_mask
        if mask == 0:
            return None
        if f.match_kind == "optional":
            if mask != width_mask:
                raise Unsupported(f"{what}: optional match with a partial mask {mask:#x} "
                                  "(BMv2 treats optional keys as ternary)")
            return cpmodel.FieldMatch("optional", value=value)
        return cpmodel.FieldMatch("ternary", value=value & mask, mask=mask)
    if f.match_kind == "lpm":
        if m.prefix_len is not None:
            value = parse_int(m.value, what, f.bitwidth)
            plen = parse_int(m.prefix_len, what + " prefix length")
        else:
            value, plen = _lpm_from_digits(m.value, what)
        if plen > f.bitwidth:
            raise Rejected(f"{what}: prefix length {plen} > bitwidth {f.bitwidth}")
        if plen == 0:
            return None
        prefix_mask = width_mask ^ ((1 << (f.bitwidth - plen)) - 1)
        return cpmodel.FieldMatch("lpm", value=value & prefix_mask, prefix_len=plen)
    if m.prefix_len is not None:
        raise Rejected(f"{what}: '/' is only allowed in lpm values")
    return cpmodel.FieldMatch("exact", value=parse_int(m.value, what, f.bitwidth) & width_mask)


def parse_int(text: str, what: str, width: int | None = None) -> int:
    """A number as simple_switch_CLI reads it: decimal, 0x, 0b or 0o; no '*'; it must fit in
    the bytes of a `width`-bit value."""
    try:
        value = int(text, 10) if re.fullmatch(r"[0-9]+", text) else int(text, 0)
    except ValueError:
        raise Rejected(f"{what}: invalid number {text!r}") from None
    if width is not None and value >> (8 * ((width + 7) // 8)):
        raise Rejected(f"{what}: {text} is too large for {width} bits")
    return value


_BASES = {"0x": (16, 4), "0b": (2, 1), "0o": (8, 3)}


def _digits(text: str, what: str, kind: str) -> tuple[str, int, int]:
    prefix = text[:2].lower()
    if prefix not in _BASES:
        raise EntryError(f"{what}: decimal value {text} not supported for {kind} keys "
                         "(write it in hex or binary)")
    base, bits = _BASES[prefix]
    return text[2:], base, bits


def _ternary(text: str, what: str) -> tuple[int, int]:
    digits, base, bits = _digits(text, what, "ternary")
    full = base - 1
    value = mask = 0
    for d in digits:
        value <<= bits
        mask <<= bits
        if d != "*":
            value |= int(d, base)
            mask |= full
    return value, mask


def _lpm_from_digits(text: str, what: str) -> tuple[int, int]:
    if text[:2].lower() not in _BASES:
        raise Rejected(f"{what}: lpm value {text} without '/length' must be hex or binary")
    digits, base, bits = _digits(text, what, "lpm")
    value = int(digits.replace("*", "0"), base)
    return value, (len(digits) - digits.count("*")) * bits


def action_call(model: cpmodel.ControlPlaneModel, table: cpmodel.Table,
                spec: s.ActionSpec) -> cpmodel.ActionCall:
    action = find_action(model, table, spec.name)
    params = {p.name: p for p in action.params}
    values: dict[str, int] = {}
    for name, text in spec.args:
        if name not in params:
            raise EntryError(f"action {action.name} has no parameter {name!r}")
        width = params[name].bitwidth
        values[name] = parse_int(text, f"parameter {name}", width) & ((1 << width) - 1)
    missing = [p.name for p in action.params if p.name not in values]
    if missing:
        raise EntryError(f"action {action.name}: missing parameter(s) {', '.join(missing)}")
    return cpmodel.ActionCall(action.name, tuple(values[p.name] for p in action.params))
