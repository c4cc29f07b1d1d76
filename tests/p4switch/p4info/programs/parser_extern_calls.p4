/* Extern functions called only from the parser (directly or through a function): p4c looks for
 * extern function calls in controls only, so there is no `type_info`. */
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> f; }
struct headers { h_t h; }
struct meta { }

void say(in bit<8> v) { log_msg("f={}", { v }); }

parser P(packet_in pkt, out headers hdr, inout meta m, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        log_msg("parsed");
        say(hdr.h.f);
        transition accept;
    }
}
control VC(inout headers hdr, inout meta m) { apply { } }
control IG(inout headers hdr, inout meta m, inout standard_metadata_t sm) {
    apply { sm.egress_spec = 1; }
}
control EG(inout headers hdr, inout meta m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout meta m) { apply { } }
control DP(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), IG(), EG(), CC(), DP()) main;
