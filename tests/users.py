"""Users the tests hand files to: ids no account on this machine has."""

from __future__ import annotations

import pwd


def unused_id(start: int = 61234) -> int:
    """The first user id from `start` that no account has."""
    uid = start
    while True:
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
        uid += 1
