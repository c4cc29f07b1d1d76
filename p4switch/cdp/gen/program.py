"""A compiled program -> its C source (types, parser, deparser), and that source built and
loaded for the tests.

    source = c_source(compile_program("p4src/ecmp.p4"))
    lib = load_program(program)                # NativeUnavailable without a C compiler
    result = lib.parse_deparse(frame, port=3)  # parser, then deparser, nothing between

What the generated C exports:

    int32_t cdp_parse(frame, len, port, instance_type, now_us, hdr, meta, sm, keep_meta,
                      &payload_offset)
        Engine._parse in C: fresh headers (and metadata, unless keep_meta: a resubmitted or
        recirculated packet's preserved fields), standard_metadata's ingress fields,
        the parser, parser_error; returns the parser's status (0 accept, -1 reject, else the
        error's number).
    int64_t cdp_deparse(hdr, out, size)
    int cdp_parse_deparse(frame, len, port, out, out_size, &status, &payload_offset,
                          fields, max_fields)
        cdp_parse, every field of the headers, metadata and standard metadata into `fields`
        (types.dump_slots' order), then cdp_deparse and the payload; returns the frame's
        length, or -1 when `out` or `fields` is too small.
    uint32_t cdp_field_count(void)
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import os
from dataclasses import asdict, dataclass

from p4switch.compile_cache import cache_dir, compiler_digest
from p4switch.compiler import CompiledProgram, field_lists
from p4switch.frontend import ast_decl as D
from p4switch.frontend.check import Checker, ProgramInfo
from p4switch.frontend.diagnostics import Reporter, UnsupportedConstruct
from p4switch.frontend.parse import parse
from p4switch.frontend.preprocess import Preprocessed
from p4switch.frontend.types import Bits, StructType, Varbit
from p4switch.native import NativeUnavailable, make_dir, used

from ..build import load_library
from .context import CContext
from .controls import STAGES, CControlGen, Layout, TableSlot
from .deparser import CDeparserGen
from .emitter import c_ident
from .expr import CExprGen, dot, member
from .externs import CExternGen
from .parser import CParserGen
from .stmt import CStmtGen
from .types import Slot, dump_slots, nbytes

_GEN_FORMAT = "p4switch-cdp-gen-1"
PRELUDE = """\
/* The P4 program {name} in C (p4switch/cdp/gen). */
#include <stdint.h>
#include <string.h>
#include "p4bits.h"
#include "pipeline.h"
"""


class CUnsupported(UnsupportedConstruct):
    """A construct the C back end does not generate (yet); the program keeps the Python
    pipeline. The message names it and where it is."""

    def __str__(self) -> str:
        where = f"{self.pos.file}:{self.pos.line}:{self.pos.col}: " if self.pos else ""
        return f"{where}unsupported in C: {self.what}"


def program_info(program: CompiledProgram) -> ProgramInfo:
    """The checked IR of a compiled program (which keeps only what it runs): its preprocessed
    source through the same front end again."""
    doc = json.loads(program.device_config())
    pre = Preprocessed(doc["source"], [tuple(x) for x in doc["line_map"]])
    reporter = Reporter()
    prog = parse(pre, reporter)
    reporter.check()
    assert prog is not None  # check() raised otherwise
    info = Checker(reporter).check_program(prog)
    reporter.check()
    return info


@dataclass(frozen=True)
class GeneratedC:
    """A program's C source, and what its state's numbers name (None: parser and deparser
    only)."""

    source: str
    layout: Layout | None


def generate(info: ProgramInfo, name: str, controls: bool = False) -> GeneratedC:
    """The C source of a checked program's types, parser and deparser, and with `controls`
    its control stages and the engine's `cdp_program`; CUnsupported names what it cannot
    generate."""
    try:
        return _generate(info, name, controls)
    except UnsupportedConstruct as e:
        raise CUnsupported(e.pos, e.what) from None


def generate_program(program: CompiledProgram) -> GeneratedC:
    """`generate(program_info(program), controls=True)`, kept in the compile cache (`cdp/`) by
    the program and the compiler's sources: a switch loading a program the cache has seen
    does not parse and check it again (a fifth of a second each, for every switch of a
    fabric)."""
    base = cache_dir()
    if base is None:
        return generate(program_info(program), program.name, controls=True)
    digest = hashlib.sha256(f"{_GEN_FORMAT}\0{compiler_digest()}\0".encode())
    digest.update(program.device_config())
    path = base / "cdp" / f"gen-{program.name}-{digest.hexdigest()[:24]}.json"
    try:
        kept = json.loads(path.read_text())
        layout = kept["layout"]
        return GeneratedC(kept["source"], Layout(
            tables={k: TableSlot(**v) for k, v in layout["tables"].items()},
            **{k: v for k, v in layout.items() if k != "tables"}))
    except (OSError, ValueError, KeyError, TypeError):
        pass  # not kept (or unreadable): generated and kept again
    generated = generate(program_info(program), program.name, controls=True)
    assert generated.layout is not None  # generated with its controls
    with contextlib.suppress(OSError, NativeUnavailable):  # unwritable: it only costs time
        make_dir(path.parent)
        partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        partial.write_text(json.dumps({"source": generated.source,
                                       "layout": asdict(generated.layout)}))
        os.replace(partial, path)
    used(path, "gen-*.json")
    return generated


def c_source(program: CompiledProgram, controls: bool = False) -> str:
    """`generate`'s source for a compiled program."""
    return generate(program_info(program), program.name, controls).source


def _generate(info: ProgramInfo, name: str, controls: bool) -> GeneratedC:
    ctx = CContext(info)
    ctx.expr, ctx.stmt, ctx.externs_gen = CExprGen(ctx), CStmtGen(ctx), CExternGen(ctx)
    parser, deparser = info.blocks.get("parser"), info.blocks.get("deparser")
    sm_t = info.types.get("standard_metadata_t")
    if not isinstance(parser, D.ParserDecl) or not isinstance(deparser, D.ControlDecl) or \
            info.headers_type is None or info.meta_type is None or \
            not isinstance(sm_t, StructType):
        raise UnsupportedConstruct(None, "a program that is not a V1Switch with headers, "
                                         "metadata and standard_metadata_t")
    roots = {"hdr": info.headers_type, "meta": info.meta_type, "sm": sm_t}
    ctypes_ = {role: ctx.types.name(t) for role, t in roots.items()}
    CParserGen(ctx).generate(parser, ctypes_["hdr"], ctypes_["meta"], ctypes_["sm"])
    CDeparserGen(ctx).generate(deparser, ctypes_["hdr"])
    slots = [s for role, t in roots.items() for s in dump_slots(t, (role,))]
    _gen_entry_points(ctx, roots, ctypes_, slots)
    layout = None
    if controls:
        layout = Layout()
        gen = CControlGen(ctx, layout)
        ctx.controls, ctx.externs = gen, ctx.externs_gen.handlers()
        for role in STAGES:
            decl = info.blocks.get(role)
            if not isinstance(decl, D.ControlDecl):
                raise UnsupportedConstruct(None, f"V1Switch without a {role} control")
            gen.generate(role, decl, ctypes_)
        ctx.controls, ctx.externs = None, {}
        _gen_program(ctx, roots, ctypes_)
    source = "\n".join([PRELUDE.format(name=name), *ctx.types.decls, ctx.em.source()])
    return GeneratedC(source, layout)


# the standard metadata fields the engine reads and writes (enum cdp_sm_field's order)
SM_FIELDS = ("ingress_port", "egress_spec", "egress_port", "instance_type", "packet_length",
             "enq_timestamp", "enq_qdepth", "deq_timedelta", "deq_qdepth",
             "ingress_global_timestamp", "egress_global_timestamp", "mcast_grp", "egress_rid",
             "priority")


def _gen_program(ctx: CContext, roots: dict[str, StructType], names: dict[str, str]) -> None:
    """The engine's entry points (struct cdp_program): the parse with kept metadata, the field
    lists, standard metadata by field."""
    em = ctx.em
    hdr, meta, sm = names["hdr"], names["meta"], names["sm"]
    sm_fields = {n: t for n, t in roots["sm"].fields}
    with em.function("static int32_t p4_engine_parse(const uint8_t *frame, uint32_t len, "
                     "uint32_t port, uint32_t instance_type, uint64_t now_us, void *hdr, "
                     "void *meta, void *sm, int keep_meta, uint32_t *payload_offset)"):
        em.line("return cdp_parse(frame, len, port, instance_type, now_us, hdr, meta, sm, "
                "keep_meta, payload_offset);")
    with em.function("static void p4_preserve(uint32_t list, const void *meta_, void *fresh_)"):
        em.line(f"const {meta} *meta = meta_;")
        em.line(f"{meta} *fresh = fresh_;")
        em.line("(void)meta; (void)fresh;")
        with em.block("switch (list)"):
            for index, fields in sorted(field_lists(roots["meta"]).items()):
                em.line(f"case {index}:")
                for f in fields:
                    em.line(f"    fresh->{c_ident(f)} = meta->{c_ident(f)};")
                em.line("    break;")
            em.line("default:")
            em.line("    break;")
    with em.function("static uint64_t p4_sm_get(const void *sm_, enum cdp_sm_field field)"):
        em.line(f"const {sm} *sm = sm_;")
        with em.block("switch (field)"):
            for i, f in enumerate(SM_FIELDS):
                if f in sm_fields:
                    em.line(f"case {i}: return (uint64_t)sm->{c_ident(f)};")
            em.line("default: return 0;")
    with em.function("static void p4_sm_set(void *sm_, enum cdp_sm_field field, "
                     "uint64_t value)"):
        em.line(f"{sm} *sm = sm_;")
        with em.block("switch (field)"):
            for i, f in enumerate(SM_FIELDS):
                if f in sm_fields:
                    ctype = ctx.types.local(sm_fields[f])
                    em.line(f"case {i}: sm->{c_ident(f)} = ({ctype})value; break;")
            em.line("default: break;")
    em.line("const struct cdp_program cdp_program_desc = {")
    em.line(f"    sizeof({hdr}), sizeof({meta}), sizeof({sm}),")
    em.line("    p4_engine_parse, p4_verify_checksum, p4_ingress, p4_egress, "
            "p4_compute_checksum,")
    em.line("    (int64_t (*)(const void *, uint8_t *, uint32_t))p4_deparser_v, p4_preserve, "
            "p4_sm_get, p4_sm_set,")
    em.line("};")


def _gen_entry_points(ctx: CContext, roots: dict[str, StructType], names: dict[str, str],
                      slots: list[Slot]) -> None:
    em = ctx.em
    hdr, meta, sm = names["hdr"], names["meta"], names["sm"]
    sm_fields = {n for n, _ in roots["sm"].fields}
    with em.function(f"int32_t cdp_parse(const uint8_t *frame, uint32_t len, uint32_t port, "
                     f"uint32_t instance_type, uint64_t now_us, {hdr} *hdr, {meta} *meta, "
                     f"{sm} *sm, int keep_meta, uint32_t *payload_offset)"):
        em.line("/* as Engine._parse: fresh headers and metadata, the ingress fields of */")
        em.line("/* standard_metadata, the parser; its error (not reject's) in parser_error */")
        em.line("int32_t status;")
        em.line("memset(hdr, 0, sizeof *hdr);")
        em.line("memset(sm, 0, sizeof *sm);")
        em.line("if (!keep_meta)")
        em.line("    memset(meta, 0, sizeof *meta);")
        for field, value in (("ingress_port", "port"), ("instance_type", "instance_type"),
                             ("packet_length", "len"),
                             ("ingress_global_timestamp", "now_us & UINT64_C(0xffffffffffff)")):
            if field in sm_fields:
                em.line(f"sm->{field} = {value};")
        em.line("status = p4_parser(frame, len, hdr, meta, sm, payload_offset);")
        if "parser_error" in sm_fields:
            em.line("if (status > 0)")
            em.line("    sm->parser_error = (uint32_t)status;")
        em.line("return status;")
    with em.function(f"int64_t cdp_deparse(const {hdr} *hdr, uint8_t *out, uint32_t size)"):
        em.line("return p4_deparser(hdr, out, size);")
    with em.function("static int64_t p4_deparser_v(const void *hdr, uint8_t *out, "
                     "uint32_t size)"):
        em.line("return p4_deparser(hdr, out, size);")
    total = sum(s.words for s in slots)
    with em.function(f"static void p4_dump(const {hdr} *hdr, const {meta} *meta, "
                     f"const {sm} *sm, uint64_t *out)"):
        em.line(f"/* {total} words: every field, types.dump_slots' order */")
        em.line("(void)hdr; (void)meta; (void)sm; (void)out;")
        k = 0
        for s in slots:
            em.line(_dump_line(s, k))
            k += s.words
    with em.function("uint32_t cdp_field_count(void)"):
        em.line(f"return {total};")
    with em.function("int cdp_parse_deparse(const uint8_t *frame, uint32_t len, uint32_t port, "
                     "uint8_t *out, uint32_t out_size, int32_t *status, "
                     "uint32_t *payload_offset, uint64_t *fields, uint32_t max_fields)"):
        em.decls += [f"{hdr} hdr;", f"{meta} meta;", f"{sm} sm;", "uint32_t off;", "int64_t n;"]
        em.line(f"if (max_fields < {total})")
        em.line("    return -1;")
        em.line("*status = cdp_parse(frame, len, port, 0, 0, &hdr, &meta, &sm, 0, &off);")
        em.line("*payload_offset = off;")
        em.line("p4_dump(&hdr, &meta, &sm, fields);")
        em.line("n = p4_deparser(&hdr, out, out_size);")
        em.line("if (n < 0 || out_size - (uint64_t)n < len - off)")
        em.line("    return -1;")
        em.line("memcpy(out + n, frame + off, len - off);")
        em.line("return (int)(n + len - off);")


def _dump_line(s: Slot, k: int) -> str:
    """The statement storing slot `s` at out[k]."""
    role, *rest = s.path
    v = f"(*{role})"
    for part in rest:
        if isinstance(part, int):
            v = f"{v}.items[{part}]"
        elif part.startswith("$"):
            v = dot(v, {"$valid": "valid_", "$next_index": "next_index", "$nbits": "nbits"}[part])
        else:
            v = member(v, part)
    t = s.type
    if isinstance(t, Varbit):
        return f"p4_words({dot(v, 'value')}, {nbytes(t.max_width)}, out + {k}, {s.words});"
    if isinstance(t, Bits) and t.width > 64:
        return f"p4_words({v}, {nbytes(t.width)}, out + {k}, {s.words});"
    return f"out[{k}] = (uint64_t){v};"


# ---- loading ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class ParseResult:
    """What cdp_parse_deparse gives for one frame."""

    status: int  # 0 accepted, -1 rejected, else the P4 error's number
    payload_offset: int
    fields: tuple[int, ...]  # types.dump_slots' order: headers, metadata, standard metadata
    frame: bytes  # the deparsed headers, then the payload


class CProgram:
    """A program's generated C, built and loaded."""

    def __init__(self, program: CompiledProgram, info: ProgramInfo | None = None):
        self.info = info if info is not None else program_info(program)
        self.source = generate(self.info, program.name).source
        lib = load_library(f"p4gen_{program.name}", [], self.source)
        u32, u8p = ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint8)
        lib.cdp_parse_deparse.argtypes = [ctypes.c_char_p, u32, u32, u8p, u32,
                                          ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(u32),
                                          ctypes.POINTER(ctypes.c_uint64), u32]
        lib.cdp_parse_deparse.restype = ctypes.c_int
        lib.cdp_field_count.restype = u32
        self._lib = lib
        self.field_count: int = lib.cdp_field_count()
        self._fields = (ctypes.c_uint64 * max(1, self.field_count))()

    def parse_deparse(self, frame: bytes, port: int) -> ParseResult:
        size = 2 * len(frame) + 4096  # no more than the frame: nothing changes the headers
        out = (ctypes.c_uint8 * size)()
        status, offset = ctypes.c_int32(), ctypes.c_uint32()
        n = self._lib.cdp_parse_deparse(frame, len(frame), port, out, size,
                                        ctypes.byref(status), ctypes.byref(offset),
                                        self._fields, len(self._fields))
        if n < 0:
            raise RuntimeError("cdp_parse_deparse: output or field buffer too small")
        return ParseResult(status.value, offset.value, tuple(self._fields[:self.field_count]),
                           ctypes.string_at(out, n))


def load_program(program: CompiledProgram) -> CProgram:
    """The program's C built and loaded (NativeUnavailable without a C compiler,
    CUnsupported for what the C back end does not generate)."""
    return CProgram(program)


__all__ = ["CProgram", "CUnsupported", "ParseResult", "c_source", "generate", "load_program",
           "program_info"]
