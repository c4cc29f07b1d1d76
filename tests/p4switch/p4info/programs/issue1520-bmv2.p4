// Same control plane as p4c's issue1520-bmv2: registers inside nested control instances.
#include "common_v1.p4"

control C(inout headers hdr, inout metadata meta)(bool b) {
    register<bit<16>>(8) r;
    apply { r.read(hdr.h.x, 0); }
}

control H(inout headers hdr, inout metadata meta) {
    C(true) c1;
    C(false) c2;
    apply {
        c1.apply(hdr, meta);
        c2.apply(hdr, meta);
    }
}

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    H() h;
    apply { h.apply(hdr, meta); }
}

V1Switch(P(), NoCheck(), MyIngress(), NoEgress(), NoCheck(), Out()) main;
