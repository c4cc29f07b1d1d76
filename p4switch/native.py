"""The native pipeline: a program's Cython source (backend/program.py) compiled to an extension
module with Cython and the C compiler, built once per source and toolchain and kept beside the
compile cache, so the switches of a fabric build a program once and load it in milliseconds.

    make = native_module(program.native_source, program.name).make

The native module runs the same stage code as the Python one, with the header and metadata
structs as extension types: the same results, bit for bit (the tests compare both), in less
CPU time. Where Cython, a C compiler or the Python headers are missing, `NativeUnavailable`
says which, and the caller runs the Python module.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from types import ModuleType

from .compile_cache import cache_dir

_FORMAT = "p4switch-native-1"
_CFLAGS = ("-O2", "-fPIC", "-shared", "-fno-strict-aliasing", "-DNDEBUG", "-w")
CFLAGS_ENV = "P4SWITCH_NATIVE_CFLAGS"  # appended to the C compiler's flags (e.g. -O0: quick builds)
BUILD_TIMEOUT_S = 600
MAX_KEPT = 64  # built modules kept, the least recently used removed first
_loaded: dict[str, ModuleType] = {}


class NativeUnavailable(Exception):
    """The native pipeline cannot be built or loaded here; the message says why."""


def c_compiler() -> list[str]:
    """The C compiler's argv ($CC, else the one this Python was built with), or
    NativeUnavailable."""
    cc = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    if not cc or shutil.which(cc[0]) is None:
        raise NativeUnavailable(f"no C compiler ({cc[0] if cc else 'CC'} not found; "
                                "apt-get install gcc)")
    return cc


def toolchain() -> tuple[str, list[str]]:
    """(Cython's version, the C compiler's argv), or NativeUnavailable naming what is missing."""
    try:
        import Cython
    except ImportError:
        raise NativeUnavailable("Cython is not installed (pip install cython; "
                                "make setup installs it)") from None
    cc = c_compiler()
    include = Path(sysconfig.get_paths()["include"])
    if not (include / "Python.h").exists():
        raise NativeUnavailable(f"the Python headers are missing ({include}/Python.h; "
                                "apt-get install python3-dev)")
    return Cython.__version__, cc


def build_key(source: str) -> str:
    """The module's identity: its source, Cython's version, the compiler and this Python."""
    version, cc = toolchain()
    digest = hashlib.sha256()
    for part in (_FORMAT, version, " ".join(cc), " ".join(cflags()),
                 sysconfig.get_config_var("EXT_SUFFIX") or "", sys.version, source):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()


def cflags() -> list[str]:
    return [*_CFLAGS, *shlex.split(os.environ.get(CFLAGS_ENV, ""))]


def native_dir() -> Path | None:
    """Where built modules are kept: `native/` in the compile cache (None: no cache)."""
    base = cache_dir()
    return None if base is None else base / "native"


def ext_suffix() -> str:
    return sysconfig.get_config_var("EXT_SUFFIX") or ".so"


def native_module(source: str, name: str = "program") -> ModuleType:
    """The extension module of `source`, built unless a build is already kept (a kept build
    that does not load is built again); raises NativeUnavailable when it cannot be built."""
    key = build_key(source)
    module = _loaded.get(key)
    if module is not None:
        return module
    modname = f"_p4native_{key[:24]}"
    directory = native_dir()
    if directory is None:  # no cache: build in a temporary directory, load, forget
        with tempfile.TemporaryDirectory(prefix="p4native-") as tmp:
            path = Path(tmp) / f"{modname}{ext_suffix()}"
            _build(source, name, path)
            module = _load(modname, path)
    else:
        path = directory / f"{modname}{ext_suffix()}"
        make_dir(directory)
        with locked(directory / f".{modname}.lock"):  # one build for concurrent switches
            if path.exists():
                try:
                    module = _load(modname, path)
                except NativeUnavailable:
                    path.unlink(missing_ok=True)  # truncated or foreign: built again
            if module is None:
                _build(source, name, path)
                module = _load(modname, path)
        used(path, f"_p4native_*{ext_suffix()}")
    _loaded[key] = module
    return module


@contextlib.contextmanager
def locked(path: Path):
    """An exclusive flock on `path` (created if missing) while the block runs."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _build(source: str, name: str, target: Path) -> None:
    """Cython source -> C -> `target` (written under a temporary name, then renamed)."""
    _, cc = toolchain()
    include = sysconfig.get_paths()["include"]
    with tempfile.TemporaryDirectory(prefix="p4native-build-") as tmp:
        pyx = Path(tmp) / f"{target.name.split('.')[0]}.pyx"
        pyx.write_text(source)
        c_file = pyx.with_suffix(".c")
        run_tool([sys.executable, "-m", "cython", "-3", "-o", str(c_file), str(pyx)],
             f"Cython on {name}")
        partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        run_tool([*cc, *cflags(), "-I", include, str(c_file), "-o", str(partial)],
             f"the C compiler on {name}")
        os.replace(partial, target)


def kept(source: str) -> bool:
    """Whether the module of `source` is built and kept (loading it then takes no build)."""
    try:
        key = build_key(source)
    except NativeUnavailable:
        return False
    directory = native_dir()
    return key in _loaded or (directory is not None
                              and (directory / f"_p4native_{key[:24]}{ext_suffix()}").exists())


def make_dir(directory: Path) -> None:
    """`directory` and its parents, created if missing; NativeUnavailable if they cannot be."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise NativeUnavailable(f"cannot create {directory}: {e.strerror}") from None


def used(path: Path, pattern: str) -> None:
    """Mark the build at `path` recently used, and prune its directory's builds (`pattern`)."""
    with contextlib.suppress(OSError):
        os.utime(path)
    prune(path.parent, pattern)


def prune(directory: Path, pattern: str) -> None:
    """Keep the MAX_KEPT most recently used builds matching `pattern` in `directory`, with
    their lock files (a loaded one stays mapped if removed)."""
    kept_modules = []
    for path in directory.glob(pattern):
        with contextlib.suppress(OSError):
            kept_modules.append((path.stat().st_mtime, path))
    kept_modules.sort(reverse=True)
    for _, path in kept_modules[MAX_KEPT:]:
        with contextlib.suppress(OSError):
            path.unlink()
        with contextlib.suppress(OSError):
            path.with_name(f".{path.name.split('.')[0]}.lock").unlink()


def run_tool(argv: list[str], what: str) -> None:
    """Run a build tool; NativeUnavailable with the tail of its output if it fails."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
                              check=False)
    except subprocess.TimeoutExpired:
        raise NativeUnavailable(f"{what} took more than {BUILD_TIMEOUT_S} s") from None
    except OSError as e:
        raise NativeUnavailable(f"{what}: {e}") from None
    if proc.returncode != 0:
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-12:])
        raise NativeUnavailable(f"{what} failed (exit {proc.returncode}):\n{tail}")


def _load(modname: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(modname, path)
    if spec is None or spec.loader is None:
        raise NativeUnavailable(f"{path}: not an extension module")
    try:
        module = importlib.util.module_from_spec(spec)  # dlopen, for an extension module
        spec.loader.exec_module(module)
    except Exception as e:  # a kept build that does not load (truncated, foreign)
        raise NativeUnavailable(f"{path} does not load: {type(e).__name__}: {e}") from None
    return module
