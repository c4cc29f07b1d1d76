/* Header layouts the generated parser and deparser move with `struct` (backend/layout.py):
 * sub-byte, signed and bool fields sharing bytes, fields of 24, 40, 48 and 64 bits, one of
 * 128 bits, in a 45-byte header. The first copy is rewritten field by field, the second is
 * emitted as it came. */
#include <core.p4>
#include <v1model.p4>

header odd_t {
    bool     flag;
    bit<3>   three;
    int<4>   s4;
    bit<48>  mac;
    bit<24>  qp;
    bit<7>   seven;
    int<9>   s9;
    bit<128> wide;
    bit<16>  port;
    bit<5>   five;
    bit<11>  eleven;
    bit<64>  u64;
    bit<40>  forty;
}

struct headers_t {
    odd_t first;
    odd_t second;
}

struct meta_t { }

parser OddParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.first);
        pkt.extract(hdr.second);
        transition accept;
    }
}

control OddVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control OddIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.first.flag = !hdr.first.flag;
        hdr.first.three = hdr.first.three + 1;
        hdr.first.s4 = hdr.first.s4 - 3;
        hdr.first.mac = hdr.first.mac ^ 0x010203040506;
        hdr.first.qp = hdr.first.qp + 7;
        hdr.first.seven = hdr.first.seven + 100;
        hdr.first.s9 = -hdr.first.s9;
        hdr.first.wide = hdr.first.wide + 1;
        hdr.first.five = hdr.first.five + hdr.first.eleven[4:0];
        hdr.first.eleven = hdr.first.eleven ^ 0x555;
        hdr.first.u64 = hdr.first.u64 + 0x100000001;
        hdr.first.forty = hdr.first.forty - 1;
    }
}

control OddEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control OddCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control OddDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.first);
        pkt.emit(hdr.second);
    }
}

V1Switch(OddParser(), OddVerify(), OddIngress(), OddEgress(), OddCompute(),
         OddDeparser()) main;
