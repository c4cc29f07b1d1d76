/* Reorder tags for per-packet load balancing: the first switch (packet arriving from a
 * host-facing port) inserts the tag with a per-flow sequence number, unless the sending host
 * already tagged the packet (a NIC marking it reorderable); the receiving host restores order
 * from it and removes it. */
#ifndef FABRIC_TAGGING_P4
#define FABRIC_TAGGING_P4

#include "flow.p4"

const bit<8> DLB_TAGGED_BY_HOST = 1;
const bit<8> DLB_TAGGED_BY_SWITCH = 2;

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
    /* The controller lists the host-facing ports; only RoCEv2 packets are tagged. */
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

#endif
