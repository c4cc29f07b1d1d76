/* Lab 2 — Flowlet switching. Solution. */
#include <core.p4>
#include <v1model.p4>
#include "include/headers.p4"
#include "include/metadata.p4"
#include "include/flow.p4"

#define FABRIC_FLOWLET_P4

control FlowletSwitching(inout local_metadata_t meta,
                         in standard_metadata_t standard_metadata) {
    register<bit<48>>(FLOW_TABLE_SIZE) flowlet_last_seen;
    register<bit<16>>(FLOW_TABLE_SIZE) flowlet_id;
    bit<48> gap_us = 0;

    action set_flowlet_gap(bit<48> gap) {
        gap_us = gap;
    }
    table flowlet_gap {
        actions = { set_flowlet_gap; }
        default_action = set_flowlet_gap(48w10000);
    }

    apply {
        flowlet_gap.apply();
        bit<48> now = standard_metadata.ingress_global_timestamp;
        bit<48> last;
        bit<16> id;
        flowlet_last_seen.read(last, meta.flow_index);
        flowlet_id.read(id, meta.flow_index);
        if (gap_us < now - last) {
            id = id + 1;
            flowlet_id.write(meta.flow_index, id);
        }
        flowlet_last_seen.write(meta.flow_index, now);
        meta.lb_entropy = id;
        bit<32> mixed;
        hash(mixed, HashAlgorithm.crc32, 32w0, { id }, 64w0x100000000);
        meta.flow_hash = meta.flow_hash ^ mixed;
    }
}

#define LB_MODE_FLOWLET
#include "include/fabric_main.p4"
