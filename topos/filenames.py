"""A name from a fabric (the fabric's, a switch's) as one component of a file's path.

Names reach paths (run-state files, switch logs, sockets, `show`'s pictures) before or without
the name check of fabric JSON; whatever they hold, `file_part` keeps the file where it belongs:
every character but ASCII letters, digits, `_`, `-`, `~` and a `.` that does not lead is
percent-encoded
(`../x` is `%2E.%2Fx`), so two names never give one file, and a name of the lab's usual
character set is its own file name.

This module imports nothing of the project, so any layer can import it.
"""

from __future__ import annotations

import hashlib
from urllib.parse import quote

MAX_PART = 120  # of NAME_MAX's 255 bytes: room for what callers add (pid, suffix)


def file_part(name: str) -> str:
    """`name` as one path component: no `/`, never `.` or `..`, nothing hidden, bounded."""
    part = quote(name, safe="_-.")
    if not part:
        return "%"  # never the encoding of a name: quote() encodes "%" itself
    if part.startswith("."):
        part = "%2E" + part[1:]
    if len(part) > MAX_PART:  # a long name: its start and a digest of all of it
        part = f"{part[:MAX_PART - 17]}-{hashlib.sha256(name.encode()).hexdigest()[:16]}"
    return part
