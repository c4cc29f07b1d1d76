/* Lab 1 — ECMP: the flow key and its hash. Solution. */
#include <core.p4>
#include <v1model.p4>
#include "include/headers.p4"
#include "include/metadata.p4"

#define FABRIC_FLOW_P4
#define FLOW_TABLE_SIZE 4096

control FlowKey(in headers_t hdr, inout local_metadata_t meta) {
    apply {
        if (hdr.udp.isValid()) {
            meta.l4_src_port = hdr.udp.src_port;
            meta.l4_dst_port = hdr.udp.dst_port;
        }
        hash(meta.flow_hash, HashAlgorithm.crc32, 32w0,
             { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol,
               meta.l4_src_port, meta.l4_dst_port },
             64w0x100000000);
    }
}

control FlowIndex(inout local_metadata_t meta) {
    apply {
        meta.flow_index = meta.flow_hash & ((bit<32>) FLOW_TABLE_SIZE - 1);
    }
}

#define LB_MODE_ECMP
#include "include/fabric_main.p4"
