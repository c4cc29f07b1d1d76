/* Extern functions only, called from checksum controls, actions without parameters and
 * control bodies (empty `type_info`); `verify` in the parser and `static_assert` (folded away)
 * alone would not create it. */
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> f; bit<16> csum; }
struct headers { h_t h; }
struct meta { bit<8> x; }

parser P(packet_in pkt, out headers hdr, inout meta m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        verify(hdr.h.f != 255, error.ParserInvalidArgument);
        transition accept;
    }
}
control VC(inout headers hdr, inout meta m) {
    apply { verify_checksum(hdr.h.isValid(), { hdr.h.f }, hdr.h.csum, HashAlgorithm.csum16); }
}
control IG(inout headers hdr, inout meta m, inout standard_metadata_t sm) {
    action spread() { hash(m.x, HashAlgorithm.crc16, 8w0, { hdr.h.f }, 8w16); }
    apply {
        static_assert(true);
        spread();
        random(sm.egress_spec, 9w1, 9w4);
    }
}
control EG(inout headers hdr, inout meta m, inout standard_metadata_t sm) {
    apply { log_msg("egress {}", { hdr.h.f }); }
}
control CC(inout headers hdr, inout meta m) {
    apply { update_checksum(hdr.h.isValid(), { hdr.h.f }, hdr.h.csum, HashAlgorithm.csum16); }
}
control DP(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), IG(), EG(), CC(), DP()) main;
