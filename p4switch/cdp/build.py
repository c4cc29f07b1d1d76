"""C sources of the data plane -> a shared library, built once per content and compiler and
kept in the compile cache (`cdp/`), loaded with ctypes.

    lib = load_library("tables", [C_DIR / "tables.c", C_DIR / "hashing.c"])

Where no C compiler is present, `NativeUnavailable` says so and the caller keeps the Python
data plane.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shlex
import tempfile
from collections.abc import Sequence
from pathlib import Path

from p4switch.compile_cache import cache_dir
from p4switch.native import (
    CFLAGS_ENV,
    NativeUnavailable,
    c_compiler,
    locked,
    make_dir,
    run_tool,
    used,
)

C_DIR = Path(__file__).resolve().parent / "c"
_FORMAT = "p4switch-cdp-1"
_CFLAGS = ("-O2", "-fPIC", "-shared", "-std=c11", "-D_GNU_SOURCE", "-Wall", "-DNDEBUG")
_LIBS = ("-lm",)
_loaded: dict[Path, ctypes.CDLL] = {}


def build_key(sources: Sequence[Path], generated: str) -> str:
    """The library's identity: the compiler, its flags, every source and the headers of C_DIR."""
    digest = hashlib.sha256()
    for part in (_FORMAT, " ".join(c_compiler()), " ".join(_flags()), generated):
        digest.update(part.encode() + b"\0")
    for path in [*sources, *sorted(C_DIR.glob("*.h"))]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _flags() -> list[str]:
    return [*_CFLAGS, *shlex.split(os.environ.get(CFLAGS_ENV, ""))]


def shared_library(name: str, sources: Sequence[Path], generated: str = "") -> Path:
    """The path of the library of `sources` (and `generated`, C source text compiled with
    them), built unless a build is kept; NativeUnavailable if it cannot be built."""
    key = build_key(sources, generated)
    base = cache_dir()
    directory = base / "cdp" if base is not None else Path(tempfile.mkdtemp(prefix="p4cdp-"))
    path = directory / f"{name}-{key[:24]}.so"
    make_dir(directory)
    with locked(directory / f".{path.stem}.lock"):  # one build for concurrent switches
        if not path.exists():
            _build(name, sources, generated, path)
    used(path, "*.so")
    return path


def load_library(name: str, sources: Sequence[Path], generated: str = "") -> ctypes.CDLL:
    """`shared_library`, loaded (once per process)."""
    path = shared_library(name, sources, generated)
    lib = _loaded.get(path)
    if lib is None:
        try:
            lib = ctypes.CDLL(str(path))
        except OSError as e:  # a kept build that does not load: built again
            path.unlink(missing_ok=True)
            raise NativeUnavailable(f"{path} does not load: {e}") from None
        _loaded[path] = lib
    return lib


def _build(name: str, sources: Sequence[Path], generated: str, target: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="p4cdp-build-") as tmp:
        files = [str(s) for s in sources]
        if generated:
            gen = Path(tmp) / f"{name}_generated.c"
            gen.write_text(generated)
            files.append(str(gen))
        partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        run_tool([*c_compiler(), *_flags(), "-I", str(C_DIR), *files, *_LIBS, "-o",
                  str(partial)],
                 f"the C compiler on {name}")
        os.replace(partial, target)
