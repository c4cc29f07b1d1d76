/* Packet trimming (Ultra Ethernet, NDP): a data packet that would join an egress queue already
 * holding `depth` packets is not dropped but cut to its headers and `payload_bytes` of payload,
 * marked with the trim DSCP and sent at the trim priority, so its receiver learns of the loss
 * within a round trip and asks for it again, instead of waiting for a timeout.
 *
 * Decision (ingress, after routing): v1model shows queue depths only in egress, so egress keeps
 * the depth each dequeue leaves behind per queue (deq_qdepth, cell = port * 8 + priority, ports
 * 0..63) and ingress adds one for every packet it sends to a queue that trims, so a burst sees
 * its own packets before they leave. A UDP packet longer than what trimming keeps, headed for a
 * queue (port, priority) with a `trim_config` entry whose estimate is at or above `depth`, is
 * trimmed: its
 * DSCP becomes `dscp` (the controller maps that DSCP to `priority` on every switch, so it keeps
 * the priority at every hop) and its priority `priority`. A packet that carries the trim DSCP
 * already is never trimmed twice. Trims are counted per egress port (`trimmed_counter`).
 *
 * Cut (egress, after the telemetry records are pushed): the packet keeps Ethernet, IPv4, the
 * reorder tag and INT records if any, UDP, the BTH if any, and `payload_bytes`; IPv4 total
 * length and UDP length say the cut length (the IPv4 checksum is recomputed as always, the
 * UDP checksum is zeroed, as RoCEv2 allows); truncate() cuts the frame there.
 *
 * No `trim_config` entry: nothing is trimmed and a full queue drops, as without this file. */
#ifndef FABRIC_TRIMMING_P4
#define FABRIC_TRIMMING_P4

const bit<32> TRIM_QUEUES = 512;
const bit<9> TRIM_DROP_PORT = 511;  /* v1model's drop port (mark_to_drop) on both targets */

register<bit<32>>(TRIM_QUEUES) trim_queue_depth;

control PacketTrimming(inout headers_t hdr,
                       inout local_metadata_t meta,
                       inout standard_metadata_t standard_metadata) {
    counter(512, CounterType.packets) trimmed_counter;
    bit<32> trim_depth = 0;
    bit<16> keep_bytes = 0;
    bit<6> trim_dscp = 0;
    bit<3> trim_priority = 0;

    action trim_above(bit<32> depth, bit<16> payload_bytes, bit<6> dscp, bit<3> priority) {
        trim_depth = depth;
        keep_bytes = payload_bytes;
        trim_dscp = dscp;
        trim_priority = priority;
    }
    /* Keyed by the egress port routing chose and the packet's priority (its traffic class:
     * trim the data classes, never the acknowledgements); no entry: that queue never trims. */
    table trim_config {
        key = {
            standard_metadata.egress_spec: exact;
            standard_metadata.priority: exact;
        }
        actions = { trim_above; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    apply {
        if (!hdr.udp.isValid() || standard_metadata.egress_spec == TRIM_DROP_PORT
                || standard_metadata.egress_spec == CPU_PORT) {
            return;
        }
        if (!trim_config.apply().hit) {
            return;
        }
        bit<32> cell = ((bit<32>) standard_metadata.egress_spec[5:0] << 3)
                       | (bit<32>) standard_metadata.priority;
        bit<32> depth;
        trim_queue_depth.read(depth, cell);
        bit<16> kept = 8 + keep_bytes;  /* UDP header and payload kept */
        if (hdr.bth.isValid()) {
            kept = kept + 12;
        }
        if (depth >= trim_depth && hdr.ipv4.dscp != trim_dscp && hdr.udp.length > kept) {
            meta.trim_udp_bytes = kept;
            hdr.ipv4.dscp = trim_dscp;
            standard_metadata.priority = trim_priority;
            trimmed_counter.count((bit<32>) standard_metadata.egress_spec);
            cell = ((bit<32>) standard_metadata.egress_spec[5:0] << 3) | (bit<32>) trim_priority;
            trim_queue_depth.read(depth, cell);
        }
        trim_queue_depth.write(cell, depth + 1);
    }
}

control TrimmedCut(inout headers_t hdr,
                   in local_metadata_t meta,
                   in standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.instance_type != 0 || standard_metadata.egress_port == CPU_PORT) {
            return;
        }
        trim_queue_depth.write(((bit<32>) standard_metadata.egress_port[5:0] << 3)
                               | (bit<32>) standard_metadata.priority,
                               (bit<32>) standard_metadata.deq_qdepth);
        if (meta.trim_udp_bytes == 0 || !hdr.ipv4.isValid() || !hdr.udp.isValid()) {
            return;
        }
        bit<16> l3 = 20;  /* IPv4 without options (the parser accepts no others) */
        if (hdr.dlb_tag.isValid()) {
            l3 = l3 + 8;
        }
        if (hdr.int_shim.isValid()) {
            l3 = l3 + 4 + 24 * (bit<16>) hdr.int_shim.hop_count;
        }
        hdr.udp.length = meta.trim_udp_bytes;
        hdr.udp.checksum = 0;
        hdr.ipv4.total_len = l3 + meta.trim_udp_bytes;
        truncate((bit<32>) (14 + l3 + meta.trim_udp_bytes));
    }
}

#endif
