/* ECMP baseline: IPv4 longest-prefix match to equal-cost next-hop groups (action selector over
 * the 5-tuple), TTL decrement, IPv4 checksum update, per-port counters, controller packet I/O. */
#include <core.p4>
#include <v1model.p4>

#include "include/headers.p4"
#include "include/metadata.p4"
#include "include/parser.p4"
#include "include/port_io.p4"
#include "include/routing.p4"

control FabricIngress(inout headers_t hdr,
                      inout local_metadata_t meta,
                      inout standard_metadata_t standard_metadata) {
    PacketOutHandler() packet_out_handler;
    IngressPortCounters() port_counters;
    EcmpRouting() routing;

    apply {
        packet_out_handler.apply(hdr, standard_metadata);
        port_counters.apply(standard_metadata);
        routing.apply(hdr, meta, standard_metadata);
    }
}

control FabricEgress(inout headers_t hdr,
                     inout local_metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    EgressPortIo() port_io;

    apply {
        port_io.apply(hdr, standard_metadata);
    }
}

V1Switch(FabricParser(),
         FabricVerifyChecksum(),
         FabricIngress(),
         FabricEgress(),
         FabricComputeChecksum(),
         FabricDeparser()) main;
