/* Lab 3 — Per-packet DLB with reorder tags. Solution. */
#include <core.p4>
#include <v1model.p4>
#include "include/headers.p4"
#include "include/metadata.p4"
#include "include/flow.p4"

#define FABRIC_DLB_P4
#define FABRIC_TAGGING_P4
#define ROUTING_SELECTOR_ALGO HashAlgorithm.identity
#define ROUTING_SELECTOR_KEYS meta.lb_entropy: selector;

const bit<8> DLB_TAGGED_BY_HOST = 1;
const bit<8> DLB_TAGGED_BY_SWITCH = 2;

control PacketSpraying(inout local_metadata_t meta) {
    register<bit<16>>(FLOW_TABLE_SIZE) packets_sent;

    apply {
        bit<16> count;
        packets_sent.read(count, meta.flow_index);
        packets_sent.write(meta.flow_index, count + 1);
        meta.lb_entropy = count;
    }
}

control ReorderTagging(inout headers_t hdr,
                       in local_metadata_t meta,
                       in standard_metadata_t standard_metadata) {
    register<bit<32>>(FLOW_TABLE_SIZE) next_seq;

    action tag_from_host_port() {
        bit<32> seq;
        next_seq.read(seq, meta.flow_index);
        next_seq.write(meta.flow_index, seq + 1);
        hdr.dlb_tag.setValid();
        hdr.dlb_tag.next_proto = hdr.ipv4.protocol;
        hdr.dlb_tag.flags = DLB_TAGGED_BY_SWITCH;
        hdr.dlb_tag.flow_id = meta.flow_index[15:0];
        hdr.dlb_tag.seq = seq;
        hdr.ipv4.protocol = IP_PROTO_DLB_TAG;
        hdr.ipv4.total_len = hdr.ipv4.total_len + 8;
    }
    table host_ports {
        key = { standard_metadata.ingress_port: exact; }
        actions = { tag_from_host_port; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    apply {
        if (hdr.bth.isValid() && !hdr.dlb_tag.isValid()) {
            host_ports.apply();
        }
    }
}

#define LB_MODE_DLB
#include "include/fabric_main.p4"
