/* The lab's routing and port I/O with the toy mechanism (toy.p4) in ingress; compiled with
 * p4src/include on the include path. */
#include <core.p4>
#include <v1model.p4>

#include "headers.p4"
#include "metadata.p4"
#include "parser.p4"
#include "flow.p4"
#include "port_io.p4"
#include "routing.p4"
#include "toy.p4"

control FabricIngress(inout headers_t hdr,
                      inout local_metadata_t meta,
                      inout standard_metadata_t standard_metadata) {
    PacketOutHandler() packet_out_handler;
    IngressPortCounters() port_counters;
    FlowKey() flow_key;
    ToyWatch() toy;
    EcmpRouting() routing;

    apply {
        packet_out_handler.apply(hdr, standard_metadata);
        port_counters.apply(standard_metadata);
        if (hdr.ipv4.isValid()) {
            flow_key.apply(hdr, meta);
        }
        toy.apply(hdr, standard_metadata);
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
