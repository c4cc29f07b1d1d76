/* In-band network telemetry: every switch pushes one record onto the packets that ask for it,
 * for the egress link they leave on (what HPCC's senders need: the link's rate, the bytes sent
 * on it so far, the queue it left behind, when it left).
 *
 * Asking: the sender inserts the INT shim (headers.p4, IPv4 protocol 254, after the reorder tag
 * if there is one) with hop_count 0 and max_hops > 0. Each switch, at egress, pushes its record
 * in front of the others (so the newest comes first), adds 24 to the IPv4 length and counts the
 * hop; when max_hops or INT_MAX_HOPS records are there it only sets flag bit 0 (no room). The
 * receiving host strips the shim and the records.
 *
 * Knobs: `int_switch` (default action: this switch's id; 0 until the controller sets it) and
 * `int_link` (egress port -> link rate in Mb/s; no entry: 0).
 * tx_bytes: per egress port, the bytes (as received) of every packet sent there since the
 * switch started, modulo 2^32, the record's packet included; PFC frames and packets to the
 * controller are not counted. */
#ifndef FABRIC_INT_P4
#define FABRIC_INT_P4

const bit<8> INT_FLAG_NO_ROOM = 1;
const bit<16> INT_HOP_BYTES = 24;

control InbandTelemetry(inout headers_t hdr, in standard_metadata_t standard_metadata) {
    register<bit<32>>(512) tx_bytes;
    bit<16> switch_id = 0;
    bit<32> link_mbps = 0;

    action set_switch_id(bit<16> id) {
        switch_id = id;
    }
    table int_switch {
        actions = { set_switch_id; }
        default_action = set_switch_id(0);
    }

    action set_link_rate(bit<32> mbps) {
        link_mbps = mbps;
    }
    table int_link {
        key = { standard_metadata.egress_port: exact; }
        actions = { set_link_rate; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    apply {
        if (standard_metadata.instance_type != 0 || standard_metadata.egress_port == CPU_PORT) {
            return;
        }
        bit<32> port = (bit<32>) standard_metadata.egress_port;
        bit<32> sent;
        tx_bytes.read(sent, port);
        sent = sent + standard_metadata.packet_length;
        tx_bytes.write(port, sent);
        if (!hdr.int_shim.isValid() || !hdr.ipv4.isValid()) {
            return;
        }
        if (hdr.int_shim.hop_count >= hdr.int_shim.max_hops
                || hdr.int_shim.hop_count >= INT_MAX_HOPS) {
            hdr.int_shim.flags = hdr.int_shim.flags | INT_FLAG_NO_ROOM;
            return;
        }
        int_switch.apply();
        int_link.apply();
        hdr.int_hops.push_front(1);
        hdr.int_hops[0].setValid();
        hdr.int_hops[0].switch_id = switch_id;
        hdr.int_hops[0].ingress_port = (bit<16>) standard_metadata.ingress_port;
        hdr.int_hops[0].egress_port = (bit<16>) standard_metadata.egress_port;
        bit<16> depth = 0xFFFF;
        if (standard_metadata.deq_qdepth < 0xFFFF) {
            depth = (bit<16>) standard_metadata.deq_qdepth;
        }
        hdr.int_hops[0].qdepth = depth;
        hdr.int_hops[0].egress_ts = standard_metadata.egress_global_timestamp;
        bit<16> latency = 0xFFFF;
        if (standard_metadata.deq_timedelta < 0xFFFF) {
            latency = (bit<16>) standard_metadata.deq_timedelta;
        }
        hdr.int_hops[0].hop_latency = latency;
        hdr.int_hops[0].tx_bytes = sent;
        hdr.int_hops[0].link_mbps = link_mbps;
        hdr.int_shim.hop_count = hdr.int_shim.hop_count + 1;
        hdr.ipv4.total_len = hdr.ipv4.total_len + INT_HOP_BYTES;
    }
}

#endif
