/* A serializable enum over int<8> with a negative member: a field holding its bits (0xFD for
 * NEG = -3) equals the member in select and ==, casts to and from int<8> keep the value, and a
 * member assigned to a field is emitted as its bits. */
#include <core.p4>
#include <v1model.p4>

enum int<8> E { NEG = -3, POS = 5 }
header h_t { E e; bit<8> seen; int<8> as_int; E set; E from_int; }
struct headers_t { h_t h; }
struct meta_t { }

parser EnumParser(packet_in pkt, out headers_t hdr, inout meta_t m,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.e) { E.NEG: neg; default: accept; }
    }
    state neg { hdr.h.seen = 0x11; transition accept; }
}
control EnumVerify(inout headers_t hdr, inout meta_t m) { apply { } }
control EnumIngress(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        if (hdr.h.e == E.NEG) { hdr.h.seen = hdr.h.seen | 0x20; }
        if (hdr.h.e == E.POS) { hdr.h.seen = hdr.h.seen | 0x40; }
        hdr.h.as_int = (int<8>) hdr.h.e;
        hdr.h.set = E.NEG;
        hdr.h.from_int = (E) (int<8>) -3;
    }
}
control EnumEgress(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    apply { }
}
control EnumCompute(inout headers_t hdr, inout meta_t m) { apply { } }
control EnumDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(EnumParser(), EnumVerify(), EnumIngress(), EnumEgress(), EnumCompute(),
         EnumDeparser()) main;
