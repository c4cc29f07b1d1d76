/* Lab 2 — Flowlet switching.
 *
 * A flow keeps its path while its packets come closer together than the flowlet gap; after a
 * longer pause the next packet starts a new flowlet, which may take another path. You write the
 * FlowletSwitching control; the rest of the pipeline (include/fabric_main.p4) is the lab's.
 *
 * Check:  fabric-lab lab check 2 --program flowlet_lab.p4
 * Run:    sudo fabric-lab up leafspine --program flowlet_lab.p4 --flowlet-gap-us 20000 */
#include <core.p4>
#include <v1model.p4>
#include "include/headers.p4"
#include "include/metadata.p4"
#include "include/flow.p4"

/* This file provides what include/flowlet.p4 would. */
#define FABRIC_FLOWLET_P4

control FlowletSwitching(inout local_metadata_t meta,
                         in standard_metadata_t standard_metadata) {
    register<bit<48>>(FLOW_TABLE_SIZE) flowlet_last_seen;   /* per flow: last packet, µs */
    register<bit<16>>(FLOW_TABLE_SIZE) flowlet_id;          /* per flow: current flowlet */
    bit<48> gap_us = 0;

    /* The run-time knob: the controller sets the default action (`fabric-lab lb`). Keep the
     * names: the controller and the checker write them. */
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

        /* TODO 1: if more than gap_us passed since this flow's last packet, start a new
         *         flowlet: increment id and store it in flowlet_id. */

        /* TODO 2: remember when this packet was seen (flowlet_last_seen). */

        meta.lb_entropy = id;

        /* TODO 3: routing picks the path from meta.flow_hash (its CRC-16 selector sees
         *         lb_entropy too, but only weakly). Mix the flowlet id into meta.flow_hash:
         *         hash `id` with CRC-32 (base 0, max 2^32) into a bit<32> and XOR it in, so that
         *         each new flowlet draws a fresh path. */
    }
}

#define LB_MODE_FLOWLET
#include "include/fabric_main.p4"
