// Same control plane as p4c's issue364-bmv2: a keyless table with a direct counter and a
// const default action with an argument.
#include "common_v1.p4"

control ingress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets) c;
    action my_action(bit<9> a) { sm.egress_spec = a; }
    table t {
        actions = { my_action; }
        counters = c;
        const default_action = my_action(0);
    }
    apply { t.apply(); }
}

V1Switch(P(), NoCheck(), ingress(), NoEgress(), NoCheck(), Out()) main;
