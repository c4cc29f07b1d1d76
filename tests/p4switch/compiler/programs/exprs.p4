/* Expression semantics: every result lands in a header field the test reads back. */
#include <core.p4>
#include <v1model.p4>

header in_t {
    bit<8> a;
    bit<8> b;
    int<8> s;
    int<8> t;
    bit<8> n;   /* a shift amount */
}

header out_t {
    bit<8>  add;
    bit<8>  sub;
    bit<8>  mul;
    bit<8>  sat_add;
    bit<8>  sat_sub;
    bit<8>  shl;
    bit<8>  shr;
    bit<8>  shl_wide;   /* a << 8 == 0 */
    bit<8>  and_or_xor;
    bit<8>  not_a;
    bit<8>  neg_a;
    bit<16> concat;
    bit<4>  slice_hi;
    bit<4>  pad;
    bit<8>  slice_set;
    bit<8>  max_ab;
    bit<8>  flags;      /* comparison results, one bit each */
    int<8>  s_add;
    int<8>  s_sat_add;
    int<8>  s_sat_sub;
    int<8>  s_shr;
    bit<16> s_widened;  /* (bit<16>)(int<16>) s: sign extension */
    bit<8>  s_as_bits;
    bit<8>  lits;       /* constant arithmetic with width-annotated literals */
    bit<8>  enum_val;
    bit<8>  from_bool;
    bit<8>  div_mod;
}

enum bit<8> Color { RED = 3, GREEN = 5 }

const bit<8> K = 8w250 + 8w10;      /* wraps to 4 */
const int   BIG = 1 << 40;

struct headers_t {
    in_t  i;
    out_t o;
}

struct meta_t { }

parser ExprParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.i);
        pkt.extract(hdr.o);
        transition accept;
    }
}

control ExprVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control ExprIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        bit<8> a = hdr.i.a;
        bit<8> b = hdr.i.b;
        hdr.o.add = a + b;
        hdr.o.sub = a - b;
        hdr.o.mul = a * b;
        hdr.o.sat_add = a |+| b;
        hdr.o.sat_sub = a |-| b;
        hdr.o.shl = a << hdr.i.n;
        hdr.o.shr = a >> hdr.i.n;
        hdr.o.shl_wide = a << 8;
        hdr.o.and_or_xor = (a & 0xF0) | (b & 0x0F) ^ 8w0x01;
        hdr.o.not_a = ~a;
        hdr.o.neg_a = -a;
        hdr.o.concat = a ++ b;
        hdr.o.slice_hi = a[7:4];
        hdr.o.slice_set = a;
        hdr.o.slice_set[3:0] = b[7:4];
        hdr.o.max_ab = a > b ? a : b;
        hdr.o.flags = ((bit<1>) (a == b)) ++ 7w0
                    | (bit<8>) ((bit<1>) (a != b)) << 6
                    | (bit<8>) ((bit<1>) (a < b)) << 5
                    | (bit<8>) ((bit<1>) (a >= b)) << 4
                    | (bit<8>) ((bit<1>) (hdr.i.s < hdr.i.t)) << 3
                    | (bit<8>) ((bit<1>) (a > b && b != 0)) << 2
                    | (bit<8>) ((bit<1>) (a == 0 || b == 0)) << 1
                    | (bit<8>) ((bit<1>) !(a <= b));
        hdr.o.s_add = hdr.i.s + hdr.i.t;
        hdr.o.s_sat_add = hdr.i.s |+| hdr.i.t;
        hdr.o.s_sat_sub = hdr.i.s |-| hdr.i.t;
        hdr.o.s_shr = hdr.i.s >> 2;
        hdr.o.s_widened = (bit<16>) ((int<16>) hdr.i.s);
        hdr.o.s_as_bits = (bit<8>) hdr.i.s;
        hdr.o.lits = K + (4w3 ++ 4w1) + (bit<8>) (BIG >> 38);
        hdr.o.enum_val = (bit<8>) Color.GREEN + (bit<8>) Color.RED;
        hdr.o.from_bool = (bit<8>) (bit<1>) (a == a) + 1;
        hdr.o.div_mod = (a / 8w16)[3:0] ++ (a % 8w16)[3:0];
    }
}

control ExprEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control ExprCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control ExprDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.i);
        pkt.emit(hdr.o);
    }
}

V1Switch(ExprParser(), ExprVerify(), ExprIngress(), ExprEgress(), ExprCompute(),
         ExprDeparser()) main;
