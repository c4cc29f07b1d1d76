"""Reading a source file (a P4 program, an include, an STF test): every way a path can fail to
be one, missing, a directory, unreadable, too large, binary, as one `SourceError` naming it.

The size is checked before anything is read: the front end's parse takes about 700 bytes of
memory per byte of source, so `MAX_SOURCE_BYTES` (256 KiB, five times the lab's largest
program with v1model.p4 included) bounds a compile to about 200 MB and half a minute. The
preprocessor holds the whole program (every include, every macro expanded) to the same limit.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_SOURCE_BYTES = 256 * 1024


class SourceError(Exception):
    """A file that cannot be used as source; `line` 0 when the fault is the whole file."""

    def __init__(self, file: str, line: int, col: int, message: str) -> None:
        super().__init__(f"{file}: {message}" if line == 0 else f"{file}:{line}:{col}: {message}")
        self.file = file
        self.line = line
        self.col = col
        self.message = message


def read_source(path: str | Path, limit: int = MAX_SOURCE_BYTES) -> str:
    """The UTF-8 text of `path`, at most `limit` bytes; SourceError otherwise."""
    name = str(path)
    try:
        # O_NONBLOCK: a FIFO given as the program must not hang the open
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise SourceError(name, 0, 0, "no such file") from None
    except IsADirectoryError:
        raise SourceError(name, 0, 0, "is a directory, not a file") from None
    except OSError as exc:
        raise SourceError(name, 0, 0, f"cannot read: {exc.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise SourceError(name, 0, 0, "is a directory, not a file")
        if not stat.S_ISREG(mode):
            raise SourceError(name, 0, 0, "not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise SourceError(name, 0, 0, f"cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise SourceError(name, 0, 0, f"larger than {limit // 1024} KiB, the limit for a "
                                      "source file")
    return decode_source(data, name)


def decode_source(data: bytes, name: str) -> str:
    """`data` as text; SourceError at the first NUL byte or invalid UTF-8 sequence."""
    nul = data.find(b"\0")
    if nul >= 0:
        line, col = _line_col(data, nul)
        raise SourceError(name, line, col, "NUL byte: a binary file, not source text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = _line_col(data, exc.start)
        raise SourceError(name, line, col, f"byte 0x{data[exc.start]:02x} is not UTF-8: "
                                           "a binary file, not source text") from None


def _line_col(data: bytes, offset: int) -> tuple[int, int]:
    line_start = data.rfind(b"\n", 0, offset) + 1
    return data.count(b"\n", 0, offset) + 1, offset - line_start + 1
