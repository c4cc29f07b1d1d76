/* p4c's order of actions and tables: top-level actions first, in the order of the tables that
 * list them (declaration order, not apply order, NoAction added as default where none is
 * given); a directly invoked control's instance comes after every local. */
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> f; bit<8> g; }
struct headers { h_t h; }
struct meta { }

action ga() { }
action gb() { }

parser P(packet_in pkt, out headers hdr, inout meta m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control Sub(inout headers hdr) {
    action sa(bit<8> v) { hdr.h.f = v; }
    table st { key = { hdr.h.f: exact; } actions = { sa; gb; } }
    apply { st.apply(); }
}
control VC(inout headers hdr, inout meta m) { apply { } }
control IG(inout headers hdr, inout meta m, inout standard_metadata_t sm) {
    action a(bit<8> v) { hdr.h.g = v; }
    table t1 { key = { hdr.h.f: exact; } actions = { ga; } }
    table t2 { key = { hdr.h.g: exact; } actions = { gb; a; NoAction; } default_action = a(1); }
    apply {
        Sub.apply(hdr);
        t2.apply();
        t1.apply();
    }
}
control EG(inout headers hdr, inout meta m, inout standard_metadata_t sm) {
    table te { key = { hdr.h.f: exact; } actions = { gb; ga; } }
    apply { te.apply(); }
}
control CC(inout headers hdr, inout meta m) { apply { } }
control DP(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), IG(), EG(), CC(), DP()) main;
