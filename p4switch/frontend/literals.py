"""P4 literals and operator names."""

from __future__ import annotations

BINOPS = {"OR": "||", "AND": "&&", "EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GE": ">=",
           "BOR": "|", "XOR": "^", "BAND": "&", "SHL": "<<", "PLUS": "+", "MINUS": "-",
           "CONCAT": "++", "SATADD": "|+|", "SATSUB": "|-|", "STAR": "*", "SLASH": "/",
           "PERCENT": "%"}


def parse_int(text: str) -> tuple[int, int | None, bool]:
    """A P4 integer literal -> (value, width or None, signed)."""
    width, signed = None, False
    t = text.replace("_", "")
    for sep in ("w", "s"):
        if sep in t and t[0].isdigit() and not t.lower().startswith("0x"):
            w, t = t.split(sep, 1)
            width, signed = int(w), sep == "s"
            break
    low = t.lower()
    if low.startswith("0x"):
        v = int(low[2:], 16)
    elif low.startswith("0b"):
        v = int(low[2:], 2)
    elif low.startswith("0o"):
        v = int(low[2:], 8)
    elif low.startswith("0d"):
        v = int(low[2:], 10)
    else:
        v = int(low, 10)
    return v, width, signed


