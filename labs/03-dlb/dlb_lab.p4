/* Lab 3 — Per-packet dynamic load balancing (DLB) with reorder tags.
 *
 * Spraying: every packet of a flow takes the next member of its equal-cost set in turn. Routing
 * here selects the member with the identity hash over meta.lb_entropy, so member = entropy mod n
 * (members whose watch port is down drop out).
 * Tagging: the first switch (a packet arriving on a host-facing port, listed by the controller in
 * the host_ports table) inserts the reorder tag with a per-flow sequence number; the receiving
 * host restores the order from it and removes it.
 *
 * Check:  fabric-lab lab check 3 --program dlb_lab.p4
 * Run:    sudo fabric-lab up leafspine --program dlb_lab.p4 */
#include <core.p4>
#include <v1model.p4>
#include "include/headers.p4"
#include "include/metadata.p4"
#include "include/flow.p4"

/* This file provides what include/dlb.p4 and include/tagging.p4 would. */
#define FABRIC_DLB_P4
#define FABRIC_TAGGING_P4
#define ROUTING_SELECTOR_ALGO HashAlgorithm.identity
#define ROUTING_SELECTOR_KEYS meta.lb_entropy: selector;

const bit<8> DLB_TAGGED_BY_HOST = 1;
const bit<8> DLB_TAGGED_BY_SWITCH = 2;

control PacketSpraying(inout local_metadata_t meta) {
    register<bit<16>>(FLOW_TABLE_SIZE) packets_sent;   /* per flow */

    apply {
        bit<16> count;
        packets_sent.read(count, meta.flow_index);
        /* TODO 1: count this packet (packets_sent for this flow one up) ... */

        /* TODO 2: ... and let the count choose the member: meta.lb_entropy. */
        meta.lb_entropy = 0;
    }
}

control ReorderTagging(inout headers_t hdr,
                       in local_metadata_t meta,
                       in standard_metadata_t standard_metadata) {
    register<bit<32>>(FLOW_TABLE_SIZE) next_seq;   /* per flow: the next sequence number */

    action tag_from_host_port() {
        /* TODO 3: take this flow's next sequence number from next_seq (and advance it), then
         *         insert the tag (hdr.dlb_tag, include/headers.p4) between IPv4 and UDP:
         *           - make hdr.dlb_tag valid;
         *           - next_proto = the IPv4 protocol it displaces; flags = DLB_TAGGED_BY_SWITCH;
         *           - flow_id = the low 16 bits of meta.flow_index; seq = the sequence number;
         *           - IPv4 protocol = IP_PROTO_DLB_TAG, and the IPv4 total length grows by the
         *             tag's 8 bytes (the checksum is recomputed at the end of the pipeline). */
    }
    /* The controller lists the host-facing ports; keep the names. */
    table host_ports {
        key = { standard_metadata.ingress_port: exact; }
        actions = { tag_from_host_port; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    apply {
        /* TODO 4: only RoCEv2 packets (a valid BTH) that are not tagged yet get a tag. */
        host_ports.apply();
    }
}

#define LB_MODE_DLB
#include "include/fabric_main.p4"
