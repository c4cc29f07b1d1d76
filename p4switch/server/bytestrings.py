"""P4Runtime byte strings <-> integers, with PI's rules.

Incoming strings shorter than the field are zero-padded; longer ones are accepted only if the
extra leading bits are zero; a value that does not fit the bit width is INVALID_ARGUMENT.
Outgoing strings are canonical: leading zero bytes stripped, at least one byte.
"""

from __future__ import annotations

from p4switch.runtime.errors import RuntimeApiError


def to_int(data: bytes, bitwidth: int, what: str) -> int:
    value = int.from_bytes(data, "big")
    if value >> bitwidth:
        raise RuntimeApiError("INVALID_ARGUMENT",
                              f"Bytestring provided does not fit within {bitwidth} bits ({what})")
    return value


def to_bytes(value: int) -> bytes:
    """Canonical byte string of a non-negative integer."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")
