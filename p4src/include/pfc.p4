/* PFC pause emulation (IEEE 802.1Qbb).
 *
 * Generation (egress): when a data packet is enqueued on an egress queue deeper than XOFF, the
 * switch pauses the port the packet came from: an egress clone to session PFC_SESSION_BASE + port
 * (the controller points that session at the port) is rewritten into a PFC frame with the
 * packet's priority enabled and the configured pause quanta. While paused it refreshes the pause
 * every `refresh` µs; when a packet from that port leaves the queue at or below XON it sends XON
 * (quanta 0).
 *
 * Reception (ingress): PFC frames never cross the switch. p4switch's traffic manager honours them
 * at the port, as a switch MAC does; the pipeline counts them and, when the controller asks
 * (BMv2's pause agent), hands them to the controller instead of dropping them. */
#ifndef FABRIC_PFC_P4
#define FABRIC_PFC_P4

const bit<48> PFC_DST_MAC = 0x0180C2000001;
const bit<32> PFC_SESSION_BASE = 1000;
const bit<32> INSTANCE_EGRESS_CLONE = 2;

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
    register<bit<1>>(512) upstream_paused;      /* per ingress port */
    register<bit<48>>(512) pause_sent_at;       /* per ingress port, µs */
    counter(512, CounterType.packets) pfc_tx_counter;
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
        hdr.pfc.opcode = MAC_CONTROL_PFC;
        hdr.pfc.class_enable = (bit<16>) 1 << meta.pfc_class;
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
            return;
        }
        if (!hdr.ipv4.isValid() || standard_metadata.instance_type != 0) {
            return;
        }
        if (!pfc_config.apply().hit) {
            return;
        }
        bit<32> upstream = (bit<32>) standard_metadata.ingress_port;
        bit<1> paused;
        bit<48> sent_at;
        upstream_paused.read(paused, upstream);
        pause_sent_at.read(sent_at, upstream);
        bit<48> now = standard_metadata.egress_global_timestamp;
        if (standard_metadata.enq_qdepth >= xoff) {
            if (paused == 0 || now - sent_at >= refresh_us) {
                send_pause(pause_quanta);
                upstream_paused.write(upstream, 1);
                pause_sent_at.write(upstream, now);
            }
        } else if (paused == 1 && standard_metadata.deq_qdepth <= xon) {
            send_pause(0);
            upstream_paused.write(upstream, 0);
        }
    }
}

#endif
