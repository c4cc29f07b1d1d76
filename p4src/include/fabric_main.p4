/* The lab's switch pipeline. The including program picks the load-balancing mode:
 *   LB_MODE_ECMP     5-tuple hash over equal-cost next hops (default)
 *   LB_MODE_FLOWLET  flowlet switching: a new flowlet after an idle gap may take another path
 *   LB_MODE_DLB      per-packet round-robin spraying over live uplinks, blind to load; reorder
 *                    tags added at the first switch unless the host tagged
 *   LB_MODE_QDLB     queue-aware per-packet DLB: the less loaded (queue depth) of two live
 *                    members per packet; reorder tags as in LB_MODE_DLB
 * Every mode pushes in-band telemetry records (int.p4) onto packets that ask for them, and trims
 * (trimming.p4) where the controller asks for it. */
#include <core.p4>
#include <v1model.p4>

#include "headers.p4"
#include "metadata.p4"
#include "parser.p4"
#include "flow.p4"
#include "port_io.p4"
#include "ecn.p4"
#include "pfc.p4"
#include "telemetry.p4"
#include "int.p4"
#include "trimming.p4"
#ifdef LB_MODE_DLB
#include "dlb.p4"
#endif
#ifdef LB_MODE_QDLB
#include "qdlb.p4"
#endif
#ifdef LB_MODE_FLOWLET
#include "flowlet.p4"
#endif
#include "routing.p4"

control FabricIngress(inout headers_t hdr,
                      inout local_metadata_t meta,
                      inout standard_metadata_t standard_metadata) {
    PacketOutHandler() packet_out_handler;
    IngressPortCounters() port_counters;
    PfcReception() pfc_reception;
    TrafficClass() traffic_class;
    FlowKey() flow_key;
#ifdef LB_MODE_DLB
    FlowIndex() flow_index;
    ReorderTagging() reorder_tagging;
    PacketSpraying() load_balancing;
#endif
#ifdef LB_MODE_QDLB
    FlowIndex() flow_index;
    ReorderTagging() reorder_tagging;
    QueueAwareDlb() load_balancing;
    QueueAwareDlbLearn() load_learning;
#endif
#ifdef LB_MODE_FLOWLET
    FlowIndex() flow_index;
    FlowletSwitching() load_balancing;
#endif
    EcmpRouting() routing;
    PacketTrimming() trimming;

    apply {
        packet_out_handler.apply(hdr, standard_metadata);
        port_counters.apply(standard_metadata);
        traffic_class.apply(hdr, standard_metadata);
        if (hdr.ipv4.isValid()) {
            flow_key.apply(hdr, meta);
#ifdef LB_MODE_DLB
            flow_index.apply(meta);
            reorder_tagging.apply(hdr, meta, standard_metadata);
            load_balancing.apply(meta);
#endif
#ifdef LB_MODE_QDLB
            flow_index.apply(meta);
            reorder_tagging.apply(hdr, meta, standard_metadata);
            load_balancing.apply(hdr, meta);
#endif
#ifdef LB_MODE_FLOWLET
            flow_index.apply(meta);
            load_balancing.apply(meta, standard_metadata);
#endif
        }
        routing.apply(hdr, meta, standard_metadata);
#ifdef LB_MODE_QDLB
        if (hdr.ipv4.isValid()) {
            load_learning.apply(meta, standard_metadata);
        }
#endif
        trimming.apply(hdr, meta, standard_metadata);
        pfc_reception.apply(hdr, meta, standard_metadata);
    }
}

control FabricEgress(inout headers_t hdr,
                     inout local_metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    EcnMarking() ecn;
    PfcGeneration() pfc;
    EgressPortIo() port_io;
    QueueTelemetry() telemetry;
    InbandTelemetry() int_telemetry;
    TrimmedCut() trimmed_cut;
#ifdef LB_MODE_QDLB
    DlbPortLoad() dlb_port_load;
#endif

    apply {
        pfc.apply(hdr, meta, standard_metadata);
        ecn.apply(hdr, standard_metadata);
        port_io.apply(hdr, standard_metadata);
        telemetry.apply(standard_metadata);
        int_telemetry.apply(hdr, standard_metadata);
        trimmed_cut.apply(hdr, meta, standard_metadata);
#ifdef LB_MODE_QDLB
        dlb_port_load.apply(standard_metadata);
#endif
    }
}

V1Switch(FabricParser(),
         FabricVerifyChecksum(),
         FabricIngress(),
         FabricEgress(),
         FabricComputeChecksum(),
         FabricDeparser()) main;
