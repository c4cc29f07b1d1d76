"""The on-disk cache of compiled programs: what the back end makes of a device config (the
generated Python and Cython sources, the control-plane model and the field lists), so the switches of a
fabric load the program their controller compiled instead of compiling it again."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import json
import os
import pickle
import sys
import tempfile
from pathlib import Path

from . import cpmodel
from .cpmodel import ControlPlaneModel

CACHE_ENV = "P4SWITCH_CACHE_DIR"
_CACHE_FORMAT = "p4switch-compile-cache-2"
_CACHE_SUFFIX = ".p4c-cache"
_NOT_COMPILER = ("switch", "server", "cli", "stf")  # p4switch folders the compiler does not use
# Python source, Cython source, model, field lists
Cached = tuple[str, str, ControlPlaneModel, dict[int, list[str]]]


def cache_dir() -> Path | None:
    """$P4SWITCH_CACHE_DIR (set but empty: no cache), else $XDG_CACHE_HOME/p4switch, else
    ~/.cache/p4switch."""
    if CACHE_ENV in os.environ:
        return Path(os.environ[CACHE_ENV]) if os.environ[CACHE_ENV] else None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "p4switch")


@functools.cache
def compiler_digest() -> str:
    """sha256 of the compiler's sources (this package's Python, grammar and P4 include files,
    without the switch, server, CLI and STF folders)."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if (path.suffix in (".py", ".lark", ".p4") and "__pycache__" not in rel.parts
                and rel.parts[0] not in _NOT_COMPILER):
            digest.update(rel.as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


class _ModelUnpickler(pickle.Unpickler):
    """Unpickles control-plane model classes and plain data, nothing else."""

    def find_class(self, module: str, name: str) -> type:
        cls = getattr(cpmodel, name, None) if module == cpmodel.__name__ else None
        if not isinstance(cls, type) or cls.__module__ != cpmodel.__name__:
            raise pickle.UnpicklingError(f"{module}.{name} is not a control-plane model class")
        return cls


class CompileCache:
    """Compiled programs in `directory`, one file per key: a JSON header line (format, key,
    sha256 of the rest) and the pickled (source, Cython source, model, field lists). Written to a temporary
    file and renamed into place, so concurrent writers and readers never see half an entry;
    the `max_entries` least recently used are kept."""

    def __init__(self, directory: Path, max_entries: int = 64):
        self.directory = Path(directory)
        self.max_entries = max_entries

    @classmethod
    def from_env(cls) -> CompileCache | None:
        directory = cache_dir()
        return None if directory is None else cls(directory)

    def key(self, device_config: bytes) -> str:
        digest = hashlib.sha256(f"{_CACHE_FORMAT}\0{compiler_digest()}\0"
                                f"{sys.implementation.cache_tag}\0".encode())
        digest.update(device_config)
        return digest.hexdigest()

    def path(self, key: str) -> Path:
        return self.directory / f"{key}{_CACHE_SUFFIX}"

    def load(self, key: str) -> Cached | None:
        """The entry under `key`, or None when there is none or it does not check out."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        try:
            head, _, payload = data.partition(b"\n")
            header = json.loads(head)
            if (header.get("format") != _CACHE_FORMAT or header.get("key") != key
                    or header.get("sha256") != hashlib.sha256(payload).hexdigest()):
                return None
            source, native_source, model, field_lists = \
                _ModelUnpickler(io.BytesIO(payload)).load()
        except Exception:  # unreadable, truncated, foreign: a miss
            return None
        if not (isinstance(source, str) and isinstance(native_source, str)
                and isinstance(model, ControlPlaneModel) and isinstance(field_lists, dict)):
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # recently used
        return source, native_source, model, field_lists

    def store(self, key: str, source: str, native_source: str, model: ControlPlaneModel,
              field_lists: dict[int, list[str]]) -> None:
        """Write the entry (best effort: a cache that cannot be written is only slower)."""
        payload = pickle.dumps((source, native_source, model, field_lists),
                               protocol=pickle.HIGHEST_PROTOCOL)
        header = json.dumps({"format": _CACHE_FORMAT, "key": key,
                             "sha256": hashlib.sha256(payload).hexdigest()}).encode()
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=self.directory)
        except OSError:
            return
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(header + b"\n" + payload)
            os.chmod(tmp, 0o644)
            os.replace(tmp, self.path(key))
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            return
        self._prune()

    def discard(self, key: str) -> None:
        with contextlib.suppress(OSError):
            self.path(key).unlink()

    def _prune(self) -> None:
        entries = []
        for path in self.directory.glob(f"*{_CACHE_SUFFIX}"):
            with contextlib.suppress(OSError):
                entries.append((path.stat().st_mtime, path))
        entries.sort(reverse=True)
        for _, path in entries[self.max_entries:]:
            with contextlib.suppress(OSError):
                path.unlink()
