"""`p4switch-compile PROGRAM.p4 [-I DIR] [-D NAME[=VALUE]] (-o OUTDIR | --native | --c)`.

Writes OUTDIR/<name>.p4info.txtpb (as p4c's `--p4runtime-files`) and OUTDIR/<name>.p4switch.json
(the device config that SetForwardingPipelineConfig carries). `--c` also builds what a switch
running the program on the C data plane loads (p4switch/cdp), `--native` the program's native
pipeline (p4switch/native.py); both are kept in the compile cache, where every switch started
with `--pipeline auto` (the default) finds them, and the first switch to load the program then
builds nothing.

Errors go to stderr as p4c prints them, `file:line:col: error: message`, every one found, or
`file: error: message` for a fault of a whole file (missing, a directory, unreadable, binary,
past the 256 KiB a source may have). Exit status (`EXIT_*`):
  0  compiled
  1  the program has errors, its files and their includes too (as p4c, which exits 1)
  2  bad usage (arguments, as argparse), or OUTDIR cannot be written
  3  this machine cannot build the native pipeline or the C data plane (the reason on stderr)
  4  a defect in p4switch (the traceback on stderr)
"""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

from p4switch.p4info import build_p4info, p4info_text
from p4switch.p4info.ids import P4InfoIdError

EXIT_PROGRAM_ERRORS = 1
EXIT_USAGE = 2
EXIT_MACHINE = 3
EXIT_DEFECT = 4


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="p4switch-compile",
        description="Compile a v1model P4 program for p4switch: P4Info and device config.",
    )
    parser.add_argument("program", type=Path, help="the .p4 file")
    parser.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                        help="add DIR to the #include search path (repeatable)")
    parser.add_argument("-D", dest="defines", action="append", default=[], metavar="NAME[=VALUE]",
                        help="define a preprocessor macro (repeatable)")
    parser.add_argument("-o", "--outdir", type=Path, metavar="OUTDIR",
                        help="directory for <name>.p4info.txtpb and <name>.p4switch.json")
    parser.add_argument("--native", action="store_true",
                        help="build and keep the native pipeline (needs Cython and a C compiler)")
    parser.add_argument("--c", dest="c_data_plane", action="store_true",
                        help="build and keep the program's C data plane (needs a C compiler)")
    return parser


def parse_defines(items: list[str]) -> dict[str, str]:
    defines: dict[str, str] = {}
    for item in items:
        name, _, value = item.partition("=")
        if not name.isidentifier():
            raise ValueError(f"-D {item}: {name!r} is not a macro name")
        defines[name] = value if "=" in item else "1"
    return defines


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        defines = parse_defines(args.defines)
    except ValueError as exc:
        parser.error(str(exc))
    if args.outdir is None and not (args.native or args.c_data_plane):
        parser.error("give -o OUTDIR, --native, --c, or several")

    from p4switch.compiler import P4CompileError, compile_program

    try:
        program = compile_program(args.program, args.include_dirs, defines)
        text = p4info_text(build_p4info(program.model))
    except P4CompileError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_PROGRAM_ERRORS
    except P4InfoIdError as exc:  # a bad @id
        print(f"{args.program}: error: {exc}", file=sys.stderr)
        return EXIT_PROGRAM_ERRORS
    except Exception:
        traceback.print_exc()
        print(f"p4switch-compile: {args.program}: a defect in p4switch (the traceback above)",
              file=sys.stderr)
        return EXIT_DEFECT
    if args.native:
        from p4switch.native import NativeUnavailable, native_module

        try:
            native_module(program.native_source, program.name)
        except NativeUnavailable as exc:
            print(f"p4switch-compile: {args.program}: no native pipeline: {exc}",
                  file=sys.stderr)
            return EXIT_MACHINE
    if args.c_data_plane:
        from p4switch.cdp.gen.program import CUnsupported
        from p4switch.cdp.switch import build_for
        from p4switch.native import NativeUnavailable

        try:
            build_for(program)
        except (CUnsupported, NativeUnavailable) as exc:
            print(f"p4switch-compile: {args.program}: no C data plane: {exc}", file=sys.stderr)
            return EXIT_MACHINE
    if args.outdir is None:
        return 0
    try:
        args.outdir.mkdir(parents=True, exist_ok=True)
        (args.outdir / f"{program.name}.p4info.txtpb").write_text(text)
        (args.outdir / f"{program.name}.p4switch.json").write_bytes(program.device_config())
    except OSError as exc:
        print(f"p4switch-compile: cannot write to {exc.filename or args.outdir}: {exc.strerror}",
              file=sys.stderr)
        return EXIT_USAGE
    return 0


if __name__ == "__main__":
    sys.exit(main())
