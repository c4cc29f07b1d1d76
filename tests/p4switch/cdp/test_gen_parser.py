"""The C parser and deparser generated for a program (p4switch/cdp/gen) against the Python
pipeline, frame by frame: the same parser status (accept, reject, the error), the same payload
offset, every header's validity and fields, the metadata and standard metadata, and the same
bytes from the deparser run right after the parser.

The Python side is the real pipeline: `Engine._parse` then the generated deparser stage (its
parser stage is wrapped only to see the status it raises). Frames: the lab's own (RoCEv2, the
DLB tag, the INT shim and records, PFC, packet-out on the CPU port) built with scapy, every
truncation of each, mutated and random bytes, with fixed seeds; for the test programs, frames
built for their parsers plus random bytes; and a program of expressions that holds the C
arithmetic to the Python one on edge values."""

from __future__ import annotations

import random
import struct
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest
from scapy.layers.inet import ICMP, IP, TCP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Ether

from p4switch.backend.emitter import py_ident
from p4switch.backend.rt import PacketContext, ParserError
from p4switch.cdp.gen import CProgram, CUnsupported, c_source
from p4switch.cdp.gen.types import dump_slots
from p4switch.compiler import CompiledProgram, compile_program, compile_source
from p4switch.engine import EngineConfig
from p4switch.frontend.types import Bits, P4Type, StackType, StructType, Varbit
from p4switch.native import NativeUnavailable
from p4switch.runtime import RuntimeState
from traffic.headers import BTH, IntHop, IntShim, ReorderTag

ROOT = Path(__file__).resolve().parents[3]
PROGRAMS = ROOT / "tests" / "p4switch" / "compiler" / "programs"
TEST_PROGRAMS = sorted(p.name for p in PROGRAMS.glob("*.p4"))
UNSUPPORTED: dict[str, str] = {}  # test program -> what the C back end refuses in it
M64 = (1 << 64) - 1
Frames = list[tuple[int, bytes]]  # (ingress port, frame)

ERRORS = {"NoError": 0, "PacketTooShort": 1, "NoMatch": 2, "StackOutOfBounds": 3,
          "HeaderTooShort": 4, "ParserInvalidArgument": 6}


# ---- the two pipelines -------------------------------------------------------------------------
class _Status:
    """The program's parser stage, remembering the status it ends with (0, or the code it
    raises: -1 for reject); everything else as it was."""

    def __init__(self, parser: Callable) -> None:
        self.parser = parser
        self.status = 0

    def __call__(self, ctx, data, hdr, meta, sm):
        self.status = 0
        try:
            return self.parser(ctx, data, hdr, meta, sm)
        except ParserError as e:
            self.status = e.code
            raise


def words(value, t: P4Type) -> list[int]:
    """A Python pipeline value as the C dump has it (types.dump_slots' order)."""
    if isinstance(t, StructType):
        out = [int(value._valid)] if t.kind == "header" else []
        for n, ft in t.fields:
            out += words(getattr(value, py_ident(n)), ft)
        return out
    if isinstance(t, StackType):
        return [w for item in value.items for w in words(item, t.elem)] + [value.next_index]
    if isinstance(t, Varbit):
        v, nbits = value
        return [nbits, *_split(v, t.max_width)]
    if isinstance(t, Bits) and t.width > 64:
        return _split(value, t.width)
    return [int(value) & M64]


def _split(v: int, width: int) -> list[int]:
    n = max(1, (width + 63) // 64)
    return [(v >> (64 * (n - 1 - i))) & M64 for i in range(n)]


class Pair:
    """A program on the Python pipeline and in C."""

    def __init__(self, program: CompiledProgram) -> None:
        try:
            self.c = CProgram(program)
        except NativeUnavailable as e:
            pytest.skip(f"the C data plane cannot be built here: {e}")
        self.engine = program.new_engine(RuntimeState(program.model),
                                         EngineConfig(now_us=lambda: 0))
        self.status = _Status(self.engine._parser)
        self.engine._parser = self.status
        info = self.c.info
        sm = info.types["standard_metadata_t"]
        assert info.headers_type and info.meta_type and isinstance(sm, StructType)
        self.types = (info.headers_type, info.meta_type, sm)
        self.names = [".".join(map(str, s.path)) for t, role in zip(self.types, ("hdr", "meta", "sm"),
                                                                      strict=True)
                      for s in dump_slots(t, (role,)) for _ in range(s.words)]
        assert len(self.names) == self.c.field_count
        self.statuses: Counter[int] = Counter()
        self.frames = 0

    def python(self, port: int, frame: bytes) -> tuple[int, int, tuple[int, ...], bytes]:
        ctx = PacketContext(len(frame))
        hdr, meta, sm = self.engine._parse(ctx, frame, port, 0)
        fields = [w for v, t in zip((hdr, meta, sm), self.types, strict=True) for w in words(v, t)]
        out = bytearray()
        self.engine._deparser(ctx, out, hdr, sm)
        return (self.status.status, len(frame) - len(ctx.payload), tuple(fields),
                bytes(out) + ctx.payload)

    def check(self, frames: Iterable[tuple[int, bytes]]) -> None:
        for port, frame in frames:
            want = self.python(port, frame)
            r = self.c.parse_deparse(frame, port)
            got = (r.status, r.payload_offset, r.fields, r.frame)
            if got != want:
                pytest.fail(self._explain(port, frame, got, want))
            self.statuses[r.status] += 1
            self.frames += 1

    def _explain(self, port: int, frame: bytes, got: tuple, want: tuple) -> str:
        lines = [f"port {port}, frame {frame.hex()}: C differs from Python"]
        for what, g, w in zip(("status", "payload offset"), got, want, strict=False):
            if g != w:
                lines.append(f"  {what}: C {g}, Python {w}")
        lines += [f"  {name}: C {g:#x}, Python {w:#x}"
                  for name, g, w in zip(self.names, got[2], want[2], strict=True) if g != w]
        if got[3] != want[3]:
            lines.append(f"  deparsed: C {got[3].hex()}\n            Python {want[3].hex()}")
        return "\n".join(lines)


def with_truncations(frames: Frames) -> Frames:
    """Each frame, and every prefix of it."""
    return list(dict.fromkeys((port, f[:n]) for port, f in frames for n in range(len(f) + 1)))


def mutations(frames: Frames, rng: random.Random, count: int, ports: tuple[int, ...]) -> Frames:
    """Frames with a few bytes changed near the front, on a random port."""
    out = []
    for _ in range(count):
        _, f = rng.choice(frames)
        b = bytearray(f)
        for _ in range(rng.randint(1, 3)):
            if b:
                b[rng.randrange(min(len(b), 80))] = rng.randrange(256)
        out.append((rng.choice(ports), bytes(b)))
    return out


def random_frames(rng: random.Random, count: int, max_len: int, ports: tuple[int, ...]) -> Frames:
    return [(rng.choice(ports), rng.randbytes(rng.randint(0, max_len))) for _ in range(count)]


# ---- the lab's programs ----------------------------------------------------------------------
MACS = {"dst": "02:00:00:00:00:01", "src": "02:00:00:00:00:02"}
IPS = {"src": "10.0.1.1", "dst": "10.0.2.7"}


def roce(sport: int = 49152, payload: bytes = bytes(16)):
    return UDP(sport=sport, dport=4791) / BTH(opcode=4, dqpn=0x123456, psn=0xABCDEF) / payload


def hops(n: int) -> list:
    return [IntHop(switch_id=i + 1, ingress_port=i, egress_port=i + 2, qdepth=7 * i,
                   egress_ts=0x123456789A + i, hop_latency=i, tx_bytes=0xDEADBEEF,
                   link_mbps=10_000) for i in range(n)]


def pfc(opcode: int = 0x0101, quanta: tuple[int, ...] = (0, 0, 0, 100, 0, 0, 0xFFFF, 0)) -> bytes:
    enabled = sum(1 << c for c, q in enumerate(quanta) if q)
    frame = bytes.fromhex("0180c2000001 020000000009") + struct.pack(
        "!HHH8H", 0x8808, opcode, enabled, *quanta)
    return frame + bytes(60 - len(frame))


def lab_frames() -> Frames:
    eth = Ether(**MACS)
    base = [
        eth / IP(**IPS) / roce(),
        eth / IP(**IPS, ttl=1) / roce(50000, b"x" * 40),
        eth / IP(**IPS) / UDP(sport=1, dport=53) / b"dns",
        eth / IP(**IPS) / TCP(sport=1, dport=80),
        eth / IP(**IPS, ihl=6, options=b"\x01\x01\x01\x00") / roce(),  # verify: ihl != 5
        eth / IP(**IPS, frag=5, flags=1) / roce(),
        eth / IP(**IPS) / ReorderTag(flow_id=7, seq=0x01020304) / roce(),
        eth / IP(**IPS) / ReorderTag(next_proto=6) / TCP(),
        eth / IP(**IPS) / ReorderTag(next_proto=254) / IntShim(hops=hops(2)) / roce(),
        *(eth / IP(**IPS) / IntShim(hops=hops(n)) / roce() for n in range(6)),
        eth / IP(**IPS) / IntShim(next_proto=6, hops=hops(1)) / TCP(),
        eth / IP(**IPS) / IntShim(hop_count=6, hops=hops(6)) / roce(),  # beyond 5: accepted as is
        eth / IP(**IPS) / IntShim(hop_count=3, hops=hops(1)) / roce(),  # records missing
        Ether(**MACS, type=0x0806) / ARP(),
        Ether(**MACS) / IPv6() / UDP(),
    ]
    frames = [bytes(p) for p in base] + [pfc(), pfc(quanta=(1,) * 8), pfc(opcode=0x0001)]
    out: Frames = []
    for f in frames:
        out += [(1, f), (510, f), (510, (2 << 7).to_bytes(2, "big") + f)]  # 510: packet-out
    return out


@pytest.fixture(scope="module", params=["ecmp", "dlb", "flowlet", "qdlb"])
def lab(request) -> Pair:
    return Pair(compile_program(ROOT / "p4src" / f"{request.param}.p4"))


def test_lab_program(lab: Pair) -> None:
    rng = random.Random(4791)
    base = lab_frames()
    lab.check(with_truncations(base))
    lab.check(mutations(base, rng, 1500, (0, 1, 510)))
    lab.check(random_frames(rng, 300, 120, (1, 510)))
    assert lab.frames >= 6000
    for name in ("NoError", "PacketTooShort", "HeaderTooShort"):
        assert lab.statuses[ERRORS[name]] >= 10, lab.statuses
    assert lab.statuses[ERRORS["NoError"]] >= 1000  # whole headers, not only errors


# ---- the compiler's test programs -------------------------------------------------------------
def tags_frame(rng: random.Random) -> bytes:
    """parsing.p4: report, tags (kind, value, bottom of stack), a peeked byte, a body."""
    n = rng.choice([1, 1, 2, 3, 4])
    tags = b""
    for i in range(n):
        kind = rng.choice([2, 7, 0xEE, 0x10, rng.randrange(256)])
        bos = int(i == n - 1) if rng.random() < 0.9 else rng.randrange(2)
        tags += bytes([kind, rng.randrange(128) << 1 | bos])
    peek = rng.choice([0xFF, 0xA5, 0x15, 0x00, 0x01, 0x30, rng.randrange(256)])
    return rng.randbytes(5) + tags + bytes([peek]) + rng.randbytes(rng.choice([0, 1, 2, 3]))


def program_frames(name: str, rng: random.Random) -> Frames:
    """Frames for a test program's parser (their truncations come on top)."""
    eth = Ether(**MACS)
    if name == "parsing.p4":
        return [(1, tags_frame(rng)) for _ in range(250)]
    if name in ("l3.p4", "options.p4"):
        l4 = [UDP(sport=5, dport=6) / b"udp", ICMP() / b"ping", TCP()]
        opts = [b"", b"\x01" * 4, b"\x07\x07\x04" + bytes(5), b"\x01" * 40]
        frames = [eth / IP(**IPS, options=o) / x for o in opts for x in l4]
        frames += [Ether(**MACS, type=0x0806) / ARP()]
        out = [(1, bytes(f)) for f in frames]
        for ihl in range(5):  # below 5: options of a negative (wrapped) size
            b = bytearray(bytes(eth / IP(**IPS) / l4[0] / bytes(60)))
            b[14] = 0x40 | ihl
            out.append((1, bytes(b)))
        return out
    return []


@pytest.mark.parametrize("name", TEST_PROGRAMS)
def test_compiler_test_program(name: str) -> None:
    program = compile_program(PROGRAMS / name)
    if name in UNSUPPORTED:
        with pytest.raises(CUnsupported, match=UNSUPPORTED[name]):
            c_source(program)
        return
    pair = Pair(program)
    rng = random.Random(name)
    frames = program_frames(name, rng)
    pair.check(with_truncations(frames))
    pair.check(random_frames(rng, 600, 120, (0, 1, 510)))
    pair.check([(1, bytes(n)) for n in range(120)] + [(1, b"\xff" * n) for n in range(120)])
    assert pair.frames >= 700
    assert pair.statuses[0] >= 50 and pair.statuses[ERRORS["PacketTooShort"]] >= 20
    if name == "parsing.p4":  # every way this parser can end
        for code in (-1, *ERRORS.values()):
            if code != ERRORS["ParserInvalidArgument"]:
                assert pair.statuses[code] >= 5, pair.statuses
    if name == "options.p4":  # ihl 4: (4 - 5) * 32 bits of options, wrapped in bit<16>
        ihl4 = bytearray(bytes(Ether(**MACS) / IP(**IPS) / UDP() / bytes(8300)))
        ihl4[14] = 0x44
        pair.check([(1, bytes(ihl4))])
        assert pair.statuses[ERRORS["HeaderTooShort"]] == 1, pair.statuses


# ---- expressions ------------------------------------------------------------------------------
EXPRESSIONS = """
#include <core.p4>
#include <v1model.p4>

header in_t {
    bit<8> a; bit<8> b; int<8> s; int<8> t; bit<16> w; bit<64> x; bit<64> y;
    int<64> p; int<64> q; bit<8> n; bit<1> f; bit<7> pad;
}
header out_t { bit<8> v; }
struct headers_t { in_t i; out_t o; out_t c; in_t copy; }

struct meta_t {
    bit<8> add; bit<8> sub; bit<8> mul; bit<8> sat_add; bit<8> sat_sub; bit<8> shl; bit<8> shr;
    bit<8> shl_c; bit<8> shr_c; bit<8> band; bit<8> bor; bit<8> bxor; bit<8> bnot; bit<8> neg;
    bit<8> div; bit<8> mod; bit<8> inc;
    int<8> sadd; int<8> ssub; int<8> smul; int<8> ssat_add; int<8> ssat_sub; int<8> sshl;
    int<8> sshr; int<8> sshl_c; int<8> sshr_c; int<8> snot; int<8> sneg; int<8> sand;
    int<8> sor; int<8> sxor; int<8> sdec;
    bit<64> xadd; bit<64> xsub; bit<64> xmul; bit<64> xsat_add; bit<64> xsat_sub;
    bit<64> xshl; bit<64> xshr; bit<64> xshr_c; bit<64> xnot; bit<64> xneg; bit<64> xdiv;
    bit<64> xmod;
    int<64> padd; int<64> psub; int<64> pmul; int<64> psat_add; int<64> psat_sub;
    int<64> pshl; int<64> pshr; int<64> pshr_c; int<64> pneg;
    bit<16> c1; bit<4> c2; int<16> c3; bit<8> c4; int<8> c5; bit<64> c6; int<4> c7;
    bool c8; bit<1> c9; bit<64> c10;
    bool lt; bool sle; bool plt; bool xeq; bool ne; bool ge; bool logic;
    bit<4> sl1; bit<3> sl2; bit<32> sl3; bit<8> sl4; bit<8> sl_set; int<8> ssl_set;
    bit<16> cat; int<16> scat; bit<12> cat2; bit<8> tern; bit<1> b1;
    int<12> la; bool la_bool; bit<8> branch;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.i);
        bit<8> a = hdr.i.a; bit<8> b = hdr.i.b; int<8> s = hdr.i.s; int<8> t = hdr.i.t;
        bit<64> x = hdr.i.x; bit<64> y = hdr.i.y; int<64> p = hdr.i.p; int<64> q = hdr.i.q;
        bit<8> n = hdr.i.n;
        m.add = a + b; m.sub = a - b; m.mul = a * b; m.sat_add = a |+| b; m.sat_sub = a |-| b;
        m.shl = a << n; m.shr = a >> n; m.shl_c = a << 3; m.shr_c = a >> 9;
        m.band = a & b; m.bor = a | b; m.bxor = a ^ b; m.bnot = ~a; m.neg = -a;
        m.div = a / b; m.mod = a % b; m.inc = a + 255;
        m.sadd = s + t; m.ssub = s - t; m.smul = s * t; m.ssat_add = s |+| t;
        m.ssat_sub = s |-| t; m.sshl = s << n; m.sshr = s >> n; m.sshl_c = s << 7;
        m.sshr_c = s >> 9; m.snot = ~s; m.sneg = -s; m.sand = s & t; m.sor = s | t;
        m.sxor = s ^ t; m.sdec = s - 1;
        m.xadd = x + y; m.xsub = x - y; m.xmul = x * y; m.xsat_add = x |+| y;
        m.xsat_sub = x |-| y; m.xshl = x << n; m.xshr = x >> n; m.xshr_c = x >> 70;
        m.xnot = ~x; m.xneg = -x; m.xdiv = x / y; m.xmod = x % y;
        m.padd = p + q; m.psub = p - q; m.pmul = p * q; m.psat_add = p |+| q;
        m.psat_sub = p |-| q; m.pshl = p << n; m.pshr = p >> n; m.pshr_c = p >> 70;
        m.pneg = -p;
        m.c1 = (bit<16>) a; m.c2 = (bit<4>) hdr.i.w; m.c3 = (int<16>) s; m.c4 = (bit<8>) s;
        m.c5 = (int<8>) a; m.c6 = (bit<64>) p; m.c7 = (int<4>) t; m.c8 = (bool) hdr.i.f;
        m.c9 = (bit<1>) (a > b); m.c10 = (bit<64>) (int<64>) s;
        m.lt = a < b; m.sle = s <= t; m.plt = p < q; m.xeq = x == y; m.ne = a != b;
        m.ge = x >= y; m.logic = (a > b && s < t) || !(hdr.i.f == 1);
        m.sl1 = a[7:4]; m.sl2 = s[5:3]; m.sl3 = x[63:32]; m.sl4 = p[7:0];
        m.sl_set = a; m.sl_set[3:0] = b[7:4]; m.ssl_set = s; m.ssl_set[7:6] = a[1:0];
        m.cat = a ++ b; m.scat = s ++ t; m.cat2 = hdr.i.f ++ hdr.i.pad ++ a[3:0];
        m.tern = a > b ? a : b; m.b1 = hdr.i.f + 1;
        in_t local;
        local = hdr.i;
        local.a = local.a + 1;
        hdr.copy = local;
        if (a > b) {
            hdr.c.setValid();
            hdr.c.v = a;
        } else if (s < 0) {
            hdr.c.setInvalid();
        } else {
            hdr.c.setValid();
            hdr.c.v[3:0] = 4w9;
        }
        m.la = pkt.lookahead<int<12>>();
        m.la_bool = pkt.lookahead<bool>();
        transition select(s, a, hdr.i.f == 1) {
            (-5 .. 5, _, _): small;
            (_, 0x0F &&& 0x0F, _): masked;
            (-128, _, _): lowest;
            (0x80 &&& 0x80, _, true): negative;
            (_, 200 .. 255, _): high;
            default: accept;
        }
    }
    state small { m.branch = 1; transition accept; }
    state masked { m.branch = 2; transition accept; }
    state lowest { m.branch = 3; transition accept; }
    state negative { m.branch = 4; transition opt; }
    state high { m.branch = 5; transition opt; }
    state opt { pkt.extract<out_t>(_); pkt.extract(hdr.o); transition accept; }
}

control V(inout headers_t hdr, inout meta_t m) { apply { } }
control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.i); pkt.emit(hdr.o); pkt.emit(hdr.copy); pkt.emit(hdr.c); }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""

EDGES = {8: [0, 1, 2, 0x7F, 0x80, 0x81, 0xFE, 0xFF], 16: [0, 1, 0x7FFF, 0x8000, 0xFFFF],
         64: [0, 1, 2, 3, 63, 64, (1 << 63) - 1, 1 << 63, (1 << 63) + 1, M64 - 1, M64,
              0xDEADBEEF, 1 << 32]}


def expression_frame(rng: random.Random) -> bytes:
    """in_t with fields mostly at their edges, then two bytes to look ahead at."""
    def v(width: int) -> int:
        return rng.choice(EDGES[width]) if rng.random() < 0.6 else rng.getrandbits(width)
    n = rng.choice([0, 1, 3, 7, 8, 9, 15, 16, 63, 64, 65, 200, 255, rng.randrange(256)])
    head = struct.pack("!4BH4QBB", v(8), v(8), v(8), v(8), v(16), v(64), v(64), v(64), v(64),
                       n, rng.randrange(256))
    return head + rng.randbytes(rng.choice([0, 1, 2, 3]))


def test_expressions() -> None:
    """Every operator the C expression generator has, on bit<8>, int<8>, bit<64>, int<64>,
    at their edges, against the Python pipeline's results (and select on a signed key with
    ranges and masks)."""
    pair = Pair(compile_source(EXPRESSIONS, "expressions.p4"))
    rng = random.Random(64)
    pair.check((1, expression_frame(rng)) for _ in range(3000))
    pair.check(with_truncations([(1, expression_frame(rng)) for _ in range(3)]))
    assert pair.frames >= 3000 and pair.statuses[0] >= 1200  # the rest: no bytes to look at
    branches = Counter(r.fields[pair.names.index("meta.branch")] for r in (
        pair.c.parse_deparse(expression_frame(rng), 1) for _ in range(500)))
    assert set(branches) == {0, 1, 2, 3, 4, 5}, branches


# ---- what the C back end refuses --------------------------------------------------------------
REFUSED = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<120> wide; }
struct headers_t { h_t h; h_t[2] s; }
struct meta_t { bit<8> i; }
PARSER
control V(inout headers_t hdr, inout meta_t m) { apply { } }
control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control C(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""
PARSERS = {
    "a sub-parser": ("instance sub", """
        parser Sub(packet_in pkt, out headers_t hdr) {
            state start { pkt.extract(hdr.h); transition accept; } }
        parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
            Sub() sub;
            state start { sub.apply(pkt, hdr); transition accept; } }"""),
    "lookahead of a header": ("lookahead of h_t", """
        parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
            state start { hdr.h = pkt.lookahead<h_t>(); transition accept; } }"""),
    "select on a wide field": ("select on bit<120>", """
        parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
            state start { pkt.extract(hdr.h);
                transition select(hdr.h.wide) { 1: accept; default: reject; } } }"""),
    "a run-time stack index": ("run-time index", """
        parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
            state start { pkt.extract(hdr.s[0]); m.i = hdr.s[m.i].a; transition accept; } }"""),
}


@pytest.mark.parametrize("construct", sorted(PARSERS))
def test_refused_with_its_position(construct: str) -> None:
    what, parser = PARSERS[construct]
    program = compile_source(REFUSED.replace("PARSER", parser), "refused.p4")
    with pytest.raises(CUnsupported, match=what) as e:
        c_source(program)
    assert str(e.value).startswith("refused.p4:"), str(e.value)
    assert "unsupported in C" in str(e.value)
