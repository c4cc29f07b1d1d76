#!/usr/bin/env python3
"""What compiling the generated pipeline to native code, unchanged, would buy.

The p4switch back end turns a program into Python source (`CompiledProgram.python_source`).
This bench compiles that same source with Cython (no type annotations added, so the semantics
are Python's) and a C compiler, loads it, and runs `bench/engine_pps.py`'s packets through the
pure-Python engine and the compiled one: CPU µs per packet for each, the compile time, and a
check that both produce the same frames bit for bit.

    .venv/bin/pip install cython   # not a project requirement; gcc and python3-dev from Debian
    .venv/bin/python bench/engine_native.py [--program p4src/ecmp.p4] [--packets 20000]
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from engine_pps import frame, measure, populate  # noqa: E402

from mechanisms import program_path  # noqa: E402
from p4switch.compiler import compile_program  # noqa: E402


def build_native(source: str, name: str, workdir: Path):
    """The generated module compiled by Cython and the C compiler, imported."""
    from Cython.Build import cythonize

    module = f"p4native_{name}"
    py = workdir / f"{module}.py"
    py.write_text(source)
    cythonize([str(py)], quiet=True, compiler_directives={"language_level": 3})
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    so = workdir / f"{module}{suffix}"
    subprocess.run([sysconfig.get_config_var("CC").split()[0], "-shared", "-fPIC", "-O2",
                    "-I", sysconfig.get_paths()["include"], str(workdir / f"{module}.c"),
                    "-o", str(so)], check=True)
    spec = importlib.util.spec_from_file_location(module, so)
    assert spec is not None and spec.loader is not None
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--program", type=Path, default=program_path("ecmp"))
    ap.add_argument("--packets", type=int, default=20_000)
    args = ap.parse_args()
    if importlib.util.find_spec("Cython") is None:
        print("engine_native: Cython is not installed (.venv/bin/pip install cython)",
              file=sys.stderr)
        return 1
    if shutil.which(sysconfig.get_config_var("CC").split()[0]) is None:
        print("engine_native: no C compiler", file=sys.stderr)
        return 1
    program = compile_program(args.program)
    python_engine = populate(program)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        native = build_native(program.python_source, args.program.stem, Path(tmp))
        took = time.perf_counter() - start
    program._make = native.make  # the same program, its stages from the compiled module
    native_engine = populate(program)
    print(f"{args.program.name}: Cython + C compiler took {took:.1f} s")
    for size in (64, 1000):
        frames = [frame(size, 49152 + i) for i in range(256)]
        same = all(python_engine.process(1, f) == native_engine.process(1, f) for f in frames)
        us = [1e6 / measure(engine, size, args.packets)[0]
              for engine in (python_engine, native_engine)]
        print(f"{size:5d}-byte frames: Python {us[0]:.1f} µs/packet, compiled {us[1]:.1f} "
              f"µs/packet ({us[0] / us[1]:.2f}x); same output: {'yes' if same else 'NO'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
