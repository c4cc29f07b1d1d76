// Same control plane as p4c's action_selector_shared-bmv2: one selector, two tables.
#include "common_v1.p4"

control IngressI(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action drop() { mark_to_drop(sm); }
    action_selector(HashAlgorithm.identity, 32w1024, 32w10) as;
    table indirect_ws {
        key = { meta.hash1 : selector; }
        actions = { drop; NoAction; }
        const default_action = NoAction();
        implementation = as;
    }
    table indirect_ws_1 {
        key = { meta.hash1 : selector; }
        actions = { drop; NoAction; }
        const default_action = NoAction();
        implementation = as;
    }
    apply {
        indirect_ws.apply();
        indirect_ws_1.apply();
    }
}

V1Switch(P(), NoCheck(), IngressI(), NoEgress(), NoCheck(), Out()) main;
