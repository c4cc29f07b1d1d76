/* Externs a program declares but never uses. p4c lists every counter, meter and register
 * (top level, parser, controls, nested controls) and gives the unused direct counter and meter
 * ids without listing them; they still count for aliases (EG.t is "EG.t", not "t"). An unused
 * extern whose type is named through a typedef is removed by p4c's front end (never listed). */
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> f; bit<8> g; }
struct headers { h_t h; }
struct meta { bit<8> x; }

register<bit<16>>(4) top_reg;
counter(6, CounterType.packets) top_ctr;
typedef register<bit<8>> Reg8;

parser P(packet_in pkt, out headers hdr, inout meta m, inout standard_metadata_t sm) {
    register<bit<8>>(2) parser_reg;
    state start { pkt.extract(hdr.h); transition accept; }
}

control Sub(inout headers hdr) {
    register<bit<8>>(2) sub_reg;
    meter(3, MeterType.bytes) sub_mtr;
    apply { hdr.h.g = 1; }
}

control VC(inout headers hdr, inout meta m) { apply { } }

control IG(inout headers hdr, inout meta m, inout standard_metadata_t sm) {
    register<bit<32>>(16) unused_reg;
    counter(8, CounterType.packets) unused_ctr;
    meter(4, MeterType.bytes) unused_mtr;
    direct_counter(CounterType.packets) t;
    direct_meter<bit<8>>(MeterType.packets) unused_dm;
    counter(2, CounterType.packets_and_bytes) used_ctr;
    register<int<4>>(1) used_reg;
    Reg8(4) typedef_reg;
    Sub() sub;
    apply {
        used_ctr.count(1);
        used_reg.write(0, 4s1);
        sub.apply(hdr);
    }
}

control EG(inout headers hdr, inout meta m, inout standard_metadata_t sm) {
    counter(5, CounterType.bytes) eg_ctr;
    direct_counter(CounterType.bytes) t_ctr;
    action set_g(bit<8> g) { hdr.h.g = g; }
    table t {
        key = { hdr.h.f: exact; }
        actions = { set_g; NoAction; }
        counters = t_ctr;
    }
    apply { t.apply(); }
}

control CC(inout headers hdr, inout meta m) { apply { } }
control DP(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), IG(), EG(), CC(), DP()) main;
