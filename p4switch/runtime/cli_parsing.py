"""Argument syntax and output formatting of BMv2's runtime CLI (`tools/runtime_CLI.py`).

Values: decimal, 0x/0b/0o, and for 32-bit fields a.b.c.d, 48-bit aa:bb:cc:dd:ee:ff, 128-bit
IPv6. Match keys: exact `v`, lpm `v/len`, ternary `v&&&mask`, range `lo->hi`. BMv2 masks
values silently to the field width (and LPM/ternary values to their mask); a prefix length of 0,
a mask of 0 or the full range mean "don't care".
"""

from __future__ import annotations

import ipaddress

from p4switch.cpmodel import FieldMatch, MatchField

INT32_MAX = (1 << 31) - 1


class CliError(Exception):
    """Bad input to a CLI command; the message is what the CLI prints."""


def nbytes(width: int) -> int:
    return (width + 7) // 8


def parse_param(text: str, width: int) -> int:
    """A number for a field/parameter of `width` bits, BMv2 CLI style (masked to the width)."""
    value: int | None = None
    if width == 32 and "." in text:
        parts = text.split(".")
        if len(parts) != 4 or not all(p.isdigit() and int(p) < 256 for p in parts):
            raise CliError("Invalid IPv4 address")
        value = int.from_bytes(bytes(int(p) for p in parts), "big")
    elif width == 48 and ":" in text:
        parts = text.split(":")
        try:
            octets = [int(p, 16) for p in parts]
        except ValueError:
            octets = []
        if len(parts) != 6 or len(octets) != 6 or any(not 0 <= o < 256 for o in octets):
            raise CliError("Invalid MAC address")
        value = int.from_bytes(bytes(octets), "big")
    elif width == 128 and ":" in text:
        try:
            value = int(ipaddress.IPv6Address(text))
        except ValueError:
            raise CliError("Invalid IPv6 address") from None
    if value is None:
        try:
            value = int(text, 0)
        except ValueError:
            raise CliError("Invalid input, could not cast to integer, "
                           "try in hex with 0x prefix") from None
        if value < 0:
            raise CliError("Invalid input, negative values are not allowed")
        if value >> (8 * nbytes(width)):
            raise CliError("Parameter is too large")
    return value & ((1 << width) - 1)


def parse_int(text: str, name: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise CliError(f"Bad format for {name}, expected integer") from None


def _param(text: str, width: int) -> int:
    try:
        return parse_param(text, width)
    except CliError as e:
        raise CliError(f"Invalid match key: Error while parsing {text} - {e}") from None


def parse_key(field: MatchField, text: str) -> tuple[FieldMatch | None, str]:
    """One CLI key field -> (FieldMatch or None for don't care, BMv2's debug rendering)."""
    w = field.bitwidth
    full = (1 << w) - 1
    kind = field.match_kind
    if kind == "exact":
        v = _param(text, w)
        return FieldMatch("exact", value=v), "EXACT-" + byte_str(v, w)
    if kind == "lpm":
        prefix, sep, length = text.partition("/")
        if not sep or "/" in length:
            raise CliError(f"Invalid match key: Invalid LPM value {text}, use '/' to separate "
                           "prefix and length")
        v = _param(prefix, w)
        plen = parse_int(length, "prefix length")
        if not 0 <= plen <= w:
            raise CliError(f"Invalid match key: prefix length {plen} out of range 0..{w}")
        shown = f"LPM-{byte_str(v, w)}/{plen}"
        if plen == 0:
            return None, shown
        mask = full ^ ((1 << (w - plen)) - 1)
        return FieldMatch("lpm", value=v & mask, prefix_len=plen), shown
    if kind in ("ternary", "optional"):
        value, sep, mask_text = text.partition("&&&")
        if not sep:
            if kind == "optional":  # convenience: a plain value means an exact match
                v = _param(text, w)
                return FieldMatch("optional", value=v), f"TERNARY-{byte_str(v, w)} &&& " \
                    + byte_str(full, w)
            raise CliError(f"Invalid match key: Invalid ternary value {text}, use '&&&' to "
                           "separate key and mask")
        v = _param(value, w)
        m = _param(mask_text, w)
        shown = f"TERNARY-{byte_str(v, w)} &&& {byte_str(m, w)}"
        if m == 0:
            return None, shown
        if kind == "optional":
            if m != full:
                raise CliError(f"Invalid match key: optional field {field.name} takes a full "
                               "mask or a zero mask")
            return FieldMatch("optional", value=v), shown
        return FieldMatch("ternary", value=v & m, mask=m), shown
    if kind == "range":
        lo_text, sep, hi_text = text.partition("->")
        if not sep:
            raise CliError(f"Invalid match key: Invalid range value {text}, use '->' to "
                           "separate range start and range end")
        lo, hi = _param(lo_text, w), _param(hi_text, w)
        if lo > hi:
            raise CliError(f"Invalid match key: start is less than end in expression {text}")
        shown = f"RANGE-{byte_str(lo, w)} -> {byte_str(hi, w)}"
        if lo == 0 and hi == full:
            return None, shown
        return FieldMatch("range", low=lo, high=hi), shown
    raise CliError(f"unsupported: match kind {kind} of field {field.name}")


def table_match_type(fields: list[MatchField]) -> str:
    """The match type BMv2 gives a whole table (optional fields are ternary in BMv2)."""
    kinds = [f.match_kind for f in fields]
    if "range" in kinds:
        return "range"
    if "ternary" in kinds or "optional" in kinds or kinds.count("lpm") > 1:
        return "ternary"
    if "lpm" in kinds:
        return "lpm"
    return "exact"


def to_p4rt_priority(cli_priority: int) -> int:
    """BMv2 priorities: lower wins; P4Runtime's (kept in the state): higher wins. PI maps
    p4rt = INT32_MAX - bmv2."""
    if not 0 <= cli_priority < INT32_MAX:
        raise CliError(f"Error: priority {cli_priority} out of range 0..{INT32_MAX - 1}")
    return INT32_MAX - cli_priority


def to_cli_priority(priority: int) -> int:
    return INT32_MAX - priority


def byte_str(value: int, width: int) -> str:
    """`printable_byte_str`: 0a:00:00:01."""
    return ":".join(f"{b:02x}" for b in value.to_bytes(nbytes(width), "big"))


def hexstr(value: int, width: int) -> str:
    """`hexstr`: 0a000001."""
    return value.to_bytes(nbytes(width), "big").hex()


def dump_key(field: MatchField, fm: FieldMatch | None) -> tuple[str, str]:
    """(match type, value) as `table_dump` prints a key field."""
    w = field.bitwidth
    full = (1 << w) - 1
    kind = field.match_kind
    if kind == "exact":
        assert fm is not None and fm.value is not None  # an exact field is always given
        return "EXACT", hexstr(fm.value, w)
    if kind == "lpm":
        if fm is None:
            return "LPM", f"{hexstr(0, w)}/0"
        assert fm.value is not None
        return "LPM", f"{hexstr(fm.value, w)}/{fm.prefix_len}"
    if kind in ("ternary", "optional"):
        v, m = 0, 0
        if fm is not None:
            mask = fm.mask if kind == "ternary" else full
            assert fm.value is not None and mask is not None
            v, m = fm.value, mask
        return "TERNARY", f"{hexstr(v, w)} &&& {hexstr(m, w)}"
    lo, hi = 0, full
    if fm is not None:
        assert fm.low is not None and fm.high is not None
        lo, hi = fm.low, fm.high
    return "RANGE", f"{hexstr(lo, w)} -> {hexstr(hi, w)}"


def port_map_str(ports: list[str], description: str = "port") -> tuple[str, list[int]]:
    """`ports_to_port_map_str`: the bitmap string BMv2 prints, and the ports as ints."""
    numbers = []
    for text in ports:
        try:
            n = int(text)
        except ValueError:
            n = -1
        if not 0 <= n < 512:  # BMv2's PRE port maps hold 512 ports
            raise CliError(f"Error: '{text}' is not a valid {description} number")
        numbers.append(n)
    numbers.sort()
    out = ""
    last = 0
    for n in numbers:
        if n == last - 1:
            raise CliError(f"Error: Found duplicate {description} number '{n}'")
        out += "0" * (n - last) + "1"
        last = n + 1
    return out[::-1], numbers
