/* The flow key (L4 ports) and a 5-tuple hash that indexes per-flow registers. */
#ifndef FABRIC_FLOW_P4
#define FABRIC_FLOW_P4

#ifndef FLOW_TABLE_SIZE
#define FLOW_TABLE_SIZE 4096
#endif

control FlowKey(in headers_t hdr, inout local_metadata_t meta) {
    apply {
        meta.flow_dst = hdr.ipv4.dst_addr;
        if (hdr.udp.isValid()) {
            meta.l4_src_port = hdr.udp.src_port;
            meta.l4_dst_port = hdr.udp.dst_port;
        }
    }
}

/* Needs FlowKey first. */
control FlowIndex(in headers_t hdr, inout local_metadata_t meta) {
    apply {
        hash(meta.flow_index, HashAlgorithm.crc32, 32w0,
             { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol,
               meta.l4_src_port, meta.l4_dst_port },
             (bit<32>) FLOW_TABLE_SIZE);
    }
}

#endif
