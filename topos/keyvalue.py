"""`key=value` text from the command line turned into values, the one way the lab does it.

Fabric scales (`topos.builders.parse_scale`, where the value's type is guessed) and experiment
parameters (`experiments.framework.resolve_params`, converted to the type of the parameter's
default) both use `parse_value`. It lives here, at the bottom of the layers, so that both may
import it.
"""

from __future__ import annotations

from typing import Any

TRUE_WORDS = ("true", "yes", "on")
FALSE_WORDS = ("false", "no", "off")


class _Guess:
    def __repr__(self) -> str:
        return "GUESS"


GUESS: Any = _Guess()  # `like` for a value of no known type


def parse_value(text: str, like: Any = GUESS) -> Any:
    """`text` as a value.

    With `like` (a default value), of its type: a bool from the true/false words or 1/0, an int
    in any base Python writes (0x10, 0b101, 1_000), a float, a list of such items separated by
    commas for a list or tuple (items like its first; strings if it is empty), and the text
    itself for any other type. A text that is not valid for the type raises ValueError.

    Without: guessed, as for fabric scales: the true/false words -> bool, `none` -> None, then
    a decimal int, then a float, otherwise the text itself. Never raises.
    """
    if like is GUESS:
        return _guess(text)
    lowered = text.lower()
    if isinstance(like, bool):
        if lowered in TRUE_WORDS or lowered == "1":
            return True
        if lowered in FALSE_WORDS or lowered == "0":
            return False
        raise ValueError(f"{text!r} is not a valid bool")
    try:
        if isinstance(like, int):
            return int(text, 0)
        if isinstance(like, float):
            return float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a valid {type(like).__name__}") from None
    if isinstance(like, (list, tuple)):
        item = like[0] if like else ""
        return [parse_value(part, item) for part in text.split(",") if part]
    return text


def _guess(text: str) -> Any:
    lowered = text.lower()
    if lowered in TRUE_WORDS:
        return True
    if lowered in FALSE_WORDS:
        return False
    if lowered == "none":
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


__all__ = ["FALSE_WORDS", "GUESS", "TRUE_WORDS", "parse_value"]
