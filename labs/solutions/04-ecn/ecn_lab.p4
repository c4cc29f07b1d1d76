/* Lab 4 — ECN marking. Solution. */
#include <core.p4>
#include <v1model.p4>
#include "include/headers.p4"
#include "include/metadata.p4"

#define FABRIC_ECN_P4

const bit<2> ECN_NOT_ECT = 0;
const bit<2> ECN_CE = 3;

control EcnMarking(inout headers_t hdr, in standard_metadata_t standard_metadata) {
    counter(512, CounterType.packets) ecn_marked_counter;
    bit<16> mark_threshold = 0;

    action set_mark_threshold(bit<16> threshold) {
        mark_threshold = threshold;
    }
    table ecn_profile {
        key = { standard_metadata.enq_qdepth: range; }
        actions = { set_mark_threshold; NoAction; }
        default_action = NoAction();
        size = 256;
    }

    apply {
        if (hdr.ipv4.isValid() && hdr.ipv4.ecn != ECN_NOT_ECT && hdr.ipv4.ecn != ECN_CE) {
            if (ecn_profile.apply().hit) {
                bit<16> draw;
                random(draw, 16w0, 16w65534);
                if (draw < mark_threshold) {
                    hdr.ipv4.ecn = ECN_CE;
                    ecn_marked_counter.count((bit<32>) standard_metadata.egress_port);
                }
            }
        }
    }
}

#include "include/fabric_main.p4"
