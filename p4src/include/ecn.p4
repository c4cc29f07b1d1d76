/* RED-style ECN marking on the egress queue depth (packets, at enqueue). The controller installs
 * the marking profile as range entries over enq_qdepth: below kmin nothing, between kmin and kmax a
 * probability rising linearly to pmax, from kmax on every packet (threshold 65535). A single
 * marking threshold is the special case kmin = kmax. Only ECN-capable packets are marked; marks
 * are counted per egress port (`ecn_marked_counter`). */
#ifndef FABRIC_ECN_P4
#define FABRIC_ECN_P4

const bit<2> ECN_NOT_ECT = 0;
const bit<2> ECN_CE = 3;

control EcnMarking(inout headers_t hdr, in standard_metadata_t standard_metadata) {
    counter(512, CounterType.packets) ecn_marked_counter;
    bit<16> mark_threshold = 0;   /* marks when a draw from [0, 65534] is below it */

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

#endif
