/* Lab 1 — ECMP: the flow key and its hash.
 *
 * This is a whole switch program: it runs the lab's pipeline (include/fabric_main.p4, shared and
 * read-only) with your own FlowKey control instead of include/flow.p4. Routing (routing.p4)
 * picks one member of an equal-cost group from meta.flow_hash, so every packet of a flow must get
 * the same hash, and different flows should get hashes that look random.
 *
 * Check:  fabric-lab lab check 1 --program ecmp_lab.p4
 * Run:    sudo fabric-lab up leafspine --program ecmp_lab.p4      (needs ./include, made by
 *         `fabric-lab lab start 1 DIR`) */
#include <core.p4>
#include <v1model.p4>
#include "include/headers.p4"
#include "include/metadata.p4"

/* This file provides what include/flow.p4 would. */
#define FABRIC_FLOW_P4
#define FLOW_TABLE_SIZE 4096

control FlowKey(in headers_t hdr, inout local_metadata_t meta) {
    apply {
        /* TODO 1: copy the L4 ports of a UDP packet (hdr.udp) into meta.l4_src_port and
         *         meta.l4_dst_port. RoCEv2 puts the flow's entropy in the UDP source port. */

        /* TODO 2: hash the 5-tuple into meta.flow_hash with the extern
         *             hash(out O result, HashAlgorithm algo, in T base, in D data, in M max);
         *         algorithm CRC-32, base 0, max 2^32, and the fields in this order:
         *         IPv4 source, IPv4 destination, IPv4 protocol, L4 source port, L4 destination
         *         port. (The order matters for matching the lab's ecmp.p4 bit for bit.) */
        meta.flow_hash = 0;
    }
}

/* Per-flow register index (used by flowlet and DLB, not by ECMP): leave as it is. */
control FlowIndex(inout local_metadata_t meta) {
    apply {
        meta.flow_index = meta.flow_hash & ((bit<32>) FLOW_TABLE_SIZE - 1);
    }
}

#define LB_MODE_ECMP
#include "include/fabric_main.p4"
