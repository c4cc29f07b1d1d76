/* PFC pause emulation (IEEE 802.1Qbb) and the traffic classes it works on.
 *
 * Traffic class (ingress): `dscp_priority` maps the IPv4 DSCP to standard_metadata.priority, the
 * egress queue (with --priority-queues) and the PFC class of the packet. No entry: priority 0.
 *
 * Generation at dequeue (egress): v1model shows the queue depth only in egress. State is kept per
 * (upstream port, congested egress port) pair. When a data packet from upstream port U leaves
 * egress queue E having been enqueued at depth >= XOFF, the pair (U, E) becomes congested and U
 * is paused: an egress clone to session PFC_SESSION_BASE + U (the controller points that session
 * at port U) is rewritten into a PFC frame with the packet's class enabled and the configured
 * quanta. While any pair of U is congested the pause is refreshed every `refresh` µs by U's
 * packets. When a packet of U leaves E at or below XON the pair clears, and once no pair of U is
 * congested an XON (quanta 0) goes out. XOFF must leave room for what arrives while the packet
 * that crossed it waits in the queue. Pair state covers ports 0..63 and is shared by the
 * lossless priorities (`pfc_config` is keyed by port and priority).
 *
 * Propagation while paused (ingress): a paused queue dequeues nothing, so the rule above cannot
 * fire for it. Ingress knows which queues are paused from the PFC frames it receives (pause
 * time = quanta x `quantum` from `pfc_link`, per port); a data packet arriving for a paused
 * queue counts, and once `xoff_paused` packets arrived since the queue stopped, the packet's
 * upstream port is paused from an ingress clone (refreshed every `refresh` µs) and remembered:
 * every further pause the downstream sends for that queue is relayed to it, so the upstream stays
 * paused as long as the queue does (the relay covers the highest class a frame enables). Those
 * pauses get no XON of their own: when the queue moves again the dequeue rule takes over.
 *
 * Reception (ingress): PFC frames never cross the switch. p4switch's traffic manager honours them
 * at the port, as a switch MAC does; the pipeline counts them and, when the controller asks
 * (BMv2's pause agent), hands them to the controller instead of dropping them. */
#ifndef FABRIC_PFC_P4
#define FABRIC_PFC_P4

const bit<48> PFC_DST_MAC = 0x0180C2000001;
const bit<32> PFC_SESSION_BASE = 1000;
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

/* Applied at the end of ingress (after routing has chosen the egress port). */
control PfcReception(inout headers_t hdr,
                     inout local_metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    counter(512, CounterType.packets) pfc_rx_counter;
    register<bit<48>>(512) paused_until;      /* per queue (port * 8 + class), µs */
    register<bit<32>>(512) paused_arrivals;   /* per queue: data packets since it stopped */
    register<bit<48>>(512) pause_sent_at;     /* per upstream port, µs */
    register<bit<16>>(512) relay_to;          /* per queue: upstream port + 1 it paused, or 0 */
    bit<48> quantum_q10 = 0;                  /* µs per quantum x 1024 */
    bit<32> xoff_paused = 0;
    bit<16> pause_quanta = 0;
    bit<48> refresh_us = 0;

    action punt_pfc_frames() {
        standard_metadata.egress_spec = CPU_PORT;
    }
    table pfc_rx_mode {
        actions = { punt_pfc_frames; NoAction; }
        default_action = NoAction();
    }

    action set_quantum(bit<48> us_q10) {
        quantum_q10 = us_q10;
    }
    /* The pause time one quantum stands for on each port (512 bit times at its rate). */
    table pfc_link {
        key = { standard_metadata.ingress_port: exact; }
        actions = { set_quantum; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    action propagate_pfc(bit<32> xoff_packets, bit<16> quanta, bit<48> refresh) {
        xoff_paused = xoff_packets;
        pause_quanta = quanta;
        refresh_us = refresh;
    }
    /* Keyed by the egress port the packet is headed for and its priority (PFC is enabled per
     * priority: the lossless classes); no entry: no propagation. */
    table pfc_propagation {
        key = {
            standard_metadata.egress_spec: exact;
            standard_metadata.priority: exact;
        }
        actions = { propagate_pfc; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    action note_pause(bit<32> queue, bit<16> quanta) {
        paused_until.write(queue, standard_metadata.ingress_global_timestamp
                                  + (((bit<48>) quanta * quantum_q10) >> 10));
    }

    apply {
        if (hdr.pfc.isValid()) {
            pfc_rx_counter.count((bit<32>) standard_metadata.ingress_port);
            if (pfc_link.apply().hit) {
                bit<32> base = (bit<32>) standard_metadata.ingress_port[5:0] << 3;
                bit<16> on = hdr.pfc.class_enable;
                if (on[0:0] == 1) { note_pause(base, hdr.pfc.pause_time_0); }
                if (on[1:1] == 1) { note_pause(base + 1, hdr.pfc.pause_time_1); }
                if (on[2:2] == 1) { note_pause(base + 2, hdr.pfc.pause_time_2); }
                if (on[3:3] == 1) { note_pause(base + 3, hdr.pfc.pause_time_3); }
                if (on[4:4] == 1) { note_pause(base + 4, hdr.pfc.pause_time_4); }
                if (on[5:5] == 1) { note_pause(base + 5, hdr.pfc.pause_time_5); }
                if (on[6:6] == 1) { note_pause(base + 6, hdr.pfc.pause_time_6); }
                if (on[7:7] == 1) { note_pause(base + 7, hdr.pfc.pause_time_7); }
                bit<3> cls = 0;
                bit<16> quanta = hdr.pfc.pause_time_0;
                if (on[7:7] == 1) { cls = 7; quanta = hdr.pfc.pause_time_7; }
                else if (on[6:6] == 1) { cls = 6; quanta = hdr.pfc.pause_time_6; }
                else if (on[5:5] == 1) { cls = 5; quanta = hdr.pfc.pause_time_5; }
                else if (on[4:4] == 1) { cls = 4; quanta = hdr.pfc.pause_time_4; }
                else if (on[3:3] == 1) { cls = 3; quanta = hdr.pfc.pause_time_3; }
                else if (on[2:2] == 1) { cls = 2; quanta = hdr.pfc.pause_time_2; }
                else if (on[1:1] == 1) { cls = 1; quanta = hdr.pfc.pause_time_1; }
                bit<16> relay;
                relay_to.read(relay, base + (bit<32>) cls);
                if (relay != 0 && quanta != 0) {
                    meta.pfc_frame = 1;
                    meta.pfc_quanta = quanta;
                    meta.pfc_class = cls;
                    clone_preserving_field_list(CloneType.I2E,
                        PFC_SESSION_BASE + (bit<32>) (relay - 1), 1);
                }
            }
            mark_to_drop(standard_metadata);
            pfc_rx_mode.apply();
            exit;
        }
        if (!hdr.ipv4.isValid() || !pfc_propagation.apply().hit) {
            return;
        }
        bit<32> queue = ((bit<32>) standard_metadata.egress_spec[5:0] << 3)
                        | (bit<32>) standard_metadata.priority;
        bit<48> now = standard_metadata.ingress_global_timestamp;
        bit<48> until;
        paused_until.read(until, queue);
        if (now >= until) {
            paused_arrivals.write(queue, 0);
            relay_to.write(queue, 0);
            return;
        }
        bit<32> arrived;
        paused_arrivals.read(arrived, queue);
        arrived = arrived + 1;
        paused_arrivals.write(queue, arrived);
        bit<32> upstream = (bit<32>) standard_metadata.ingress_port;
        bit<48> sent_at;
        pause_sent_at.read(sent_at, upstream);
        if (arrived == xoff_paused || (arrived > xoff_paused && now - sent_at >= refresh_us)) {
            meta.pfc_frame = 1;
            meta.pfc_quanta = pause_quanta;
            meta.pfc_class = standard_metadata.priority;
            clone_preserving_field_list(CloneType.I2E, PFC_SESSION_BASE + upstream, 1);
            pause_sent_at.write(upstream, now);
            relay_to.write(queue, (bit<16>) standard_metadata.ingress_port + 1);
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
    /* Keyed by the congested egress port and the packet's priority (the lossless classes);
     * no entry: PFC off for that queue. */
    table pfc_config {
        key = {
            standard_metadata.egress_port: exact;
            standard_metadata.priority: exact;
        }
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
        if (standard_metadata.instance_type != 0 && meta.pfc_frame == 1) {
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
        meta.pfc_frame = 0;  /* an original whose ingress cloned a pause */
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
