// Shared boilerplate of the P4Info test programs: one 16-bit header, empty checksum controls.
#include <core.p4>
#include <v1model.p4>

header h16_t { bit<16> x; }
struct headers { h16_t h; }
struct metadata { bit<32> hash1; }

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control NoCheck(inout headers hdr, inout metadata meta) { apply { } }
control NoEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply { }
}
control Out(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
