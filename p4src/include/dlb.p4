/* Per-packet spraying (round-robin DLB) with reorder tags (tagging.p4).
 * Spraying: every packet of a flow takes the next live uplink of its equal-cost set in turn (a
 * per-flow packet counter feeds an identity-hash selector, so member = count mod n; watch-port
 * members drop out when their port goes down). Blind to load: see qdlb.p4 for the queue-aware
 * mode. */
#ifndef FABRIC_DLB_P4
#define FABRIC_DLB_P4

#define ROUTING_SELECTOR_ALGO HashAlgorithm.identity
#define ROUTING_SELECTOR_KEYS meta.lb_entropy: selector;

#include "flow.p4"
#include "tagging.p4"

control PacketSpraying(inout local_metadata_t meta) {
    register<bit<16>>(FLOW_TABLE_SIZE) packets_sent;

    apply {
        bit<16> count;
        packets_sent.read(count, meta.flow_index);
        packets_sent.write(meta.flow_index, count + 1);
        meta.lb_entropy = count;
    }
}

#endif
