/* PFC pause emulation (IEEE 802.1Qbb) and the traffic classes it works on.
 *
 * Traffic class (ingress): `dscp_priority` maps the IPv4 DSCP to standard_metadata.priority, the
 * egress queue (with --priority-queues) and the PFC class of the packet. No entry: priority 0.
 *
 * Generation (egress): a real switch accounts the buffer each ingress port uses; here the state
 * is kept per (upstream port, congested egress port) pair. When a data packet from upstream
 * port U leaves egress queue E having been enqueued at depth >= XOFF, the pair (U, E) becomes
 * congested and U is paused: an egress clone to session PFC_SESSION_BASE + U (the controller
 * points that session at port U) is rewritten into a PFC frame with the packet's class enabled
 * and the configured quanta. While any pair of U is congested the pause is refreshed every
 * `refresh` µs by U's packets. When a packet of U leaves E at or below XON, the pair clears, and
 * once no pair of U is congested an XON (quanta 0) goes out. The decision is taken at dequeue,
 * the only place v1model exposes the queue depth: XOFF must leave room for what arrives while
 * the packet that crossed it waits in the queue (see controller/congestion.py).
 * Pair state covers ports 0..63 (the lab's switches have fewer).
 *
 * Reception (ingress): PFC frames never cross the switch. p4switch's traffic manager honours them
 * at the port, as a switch MAC does; the pipeline counts them and, when the controller asks
 * (BMv2's pause agent), hands them to the controller instead of dropping them. */
#ifndef FABRIC_PFC_P4
#define FABRIC_PFC_P4

const bit<48> PFC_DST_MAC = 0x0180C2000001;
const bit<32> PFC_SESSION_BASE = 1000;
const bit<32> INSTANCE_EGRESS_CLONE = 2;
const bit<32> PFC_PAIRS = 4096;   /* 64 upstream ports x 64 egress ports */

control TrafficClass(in headers_t hdr, inout standard_metadata_t standard_metadata) {
    action set_priority(bit<3> prio) {
        standard_metadata.priority = prio;
    }
    table dscp_priority {
        key = { hdr.ipv4.dscp: exact; }
        actions = { set_priority; NoAction; }
        default_action = NoAction();
        size = 64;
    }
    apply {
        if (hdr.ipv4.isValid()) {
            dscp_priority.apply();
        }
    }
}

control PfcReception(in headers_t hdr, inout standard_metadata_t standard_metadata) {
    counter(512, CounterType.packets) pfc_rx_counter;

    action punt_pfc_frames() {
        standard_metadata.egress_spec = CPU_PORT;
    }
    table pfc_rx_mode {
        actions = { punt_pfc_frames; NoAction; }
        default_action = NoAction();
    }

    apply {
        if (hdr.pfc.isValid()) {
            pfc_rx_counter.count((bit<32>) standard_metadata.ingress_port);
            mark_to_drop(standard_metadata);
            pfc_rx_mode.apply();
            exit;
        }
    }
}

control PfcGeneration(inout headers_t hdr,
                      inout local_metadata_t meta,
                      inout standard_metadata_t standard_metadata) {
    register<bit<1>>(PFC_PAIRS) pair_congested;   /* (upstream, egress) over XOFF */
    register<bit<16>>(512) congested_pairs;       /* per upstream port: pairs over XOFF */
    register<bit<48>>(512) pause_sent_at;         /* per upstream port, µs */
    counter(512, CounterType.packets) pfc_tx_counter;    /* per port the frame leaves on */
    counter(512, CounterType.packets) pfc_xoff_counter;  /* pauses (quanta > 0) per port */
    bit<19> xoff = 0;
    bit<19> xon = 0;
    bit<16> pause_quanta = 0;
    bit<48> refresh_us = 0;

    action enable_pfc(bit<19> xoff_packets, bit<19> xon_packets, bit<16> quanta, bit<48> refresh) {
        xoff = xoff_packets;
        xon = xon_packets;
        pause_quanta = quanta;
        refresh_us = refresh;
    }
    /* Keyed by the congested egress port; no entry: PFC off for that port. */
    table pfc_config {
        key = { standard_metadata.egress_port: exact; }
        actions = { enable_pfc; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    action send_pause(bit<16> quanta) {
        meta.pfc_frame = 1;
        meta.pfc_quanta = quanta;
        meta.pfc_class = standard_metadata.priority;
        clone_preserving_field_list(CloneType.E2E,
            PFC_SESSION_BASE + (bit<32>) standard_metadata.ingress_port, 1);
    }

    action build_pfc_frame() {
        hdr.ethernet.dst_addr = PFC_DST_MAC;
        hdr.ethernet.ether_type = ETHERTYPE_MAC_CONTROL;
        hdr.ipv4.setInvalid();
        hdr.dlb_tag.setInvalid();
        hdr.udp.setInvalid();
        hdr.bth.setInvalid();
        hdr.pfc.setValid();
        hdr.pfc_pad.setValid();
        hdr.pfc_pad.zeros = 0;
        hdr.pfc.opcode = MAC_CONTROL_PFC;
        hdr.pfc.class_enable = (bit<16>) 1 << meta.pfc_class;
        hdr.pfc.pause_time_0 = 0;
        hdr.pfc.pause_time_1 = 0;
        hdr.pfc.pause_time_2 = 0;
        hdr.pfc.pause_time_3 = 0;
        hdr.pfc.pause_time_4 = 0;
        hdr.pfc.pause_time_5 = 0;
        hdr.pfc.pause_time_6 = 0;
        hdr.pfc.pause_time_7 = 0;
        truncate(60);
    }

    apply {
        if (standard_metadata.instance_type == INSTANCE_EGRESS_CLONE && meta.pfc_frame == 1) {
            build_pfc_frame();
            if (meta.pfc_class == 0) { hdr.pfc.pause_time_0 = meta.pfc_quanta; }
            else if (meta.pfc_class == 1) { hdr.pfc.pause_time_1 = meta.pfc_quanta; }
            else if (meta.pfc_class == 2) { hdr.pfc.pause_time_2 = meta.pfc_quanta; }
            else if (meta.pfc_class == 3) { hdr.pfc.pause_time_3 = meta.pfc_quanta; }
            else if (meta.pfc_class == 4) { hdr.pfc.pause_time_4 = meta.pfc_quanta; }
            else if (meta.pfc_class == 5) { hdr.pfc.pause_time_5 = meta.pfc_quanta; }
            else if (meta.pfc_class == 6) { hdr.pfc.pause_time_6 = meta.pfc_quanta; }
            else { hdr.pfc.pause_time_7 = meta.pfc_quanta; }
            pfc_tx_counter.count((bit<32>) standard_metadata.egress_port);
            if (meta.pfc_quanta != 0) {
                pfc_xoff_counter.count((bit<32>) standard_metadata.egress_port);
            }
            return;
        }
        if (!hdr.ipv4.isValid() || standard_metadata.instance_type != 0) {
            return;
        }
        if (!pfc_config.apply().hit) {
            return;
        }
        bit<32> upstream = (bit<32>) standard_metadata.ingress_port;
        bit<32> pair = ((bit<32>) standard_metadata.ingress_port[5:0] << 6)
                       | (bit<32>) standard_metadata.egress_port[5:0];
        bit<1> congested;
        bit<16> pairs;
        bit<48> sent_at;
        pair_congested.read(congested, pair);
        congested_pairs.read(pairs, upstream);
        pause_sent_at.read(sent_at, upstream);
        bit<48> now = standard_metadata.egress_global_timestamp;
        if (standard_metadata.enq_qdepth >= xoff) {
            if (congested == 0) {
                pair_congested.write(pair, 1);
                congested_pairs.write(upstream, pairs + 1);
            }
            if (congested == 0 || now - sent_at >= refresh_us) {
                send_pause(pause_quanta);
                pause_sent_at.write(upstream, now);
            }
        } else if (congested == 1 && standard_metadata.deq_qdepth <= xon) {
            pair_congested.write(pair, 0);
            congested_pairs.write(upstream, pairs - 1);
            if (pairs == 1) {
                send_pause(0);
            }
        }
    }
}

#endif
