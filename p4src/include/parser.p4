/* Parser, checksum controls and deparser shared by every AI Fabric Lab program.
 * Programs define `struct local_metadata_t` before including this file. */
#ifndef FABRIC_PARSER_P4
#define FABRIC_PARSER_P4

#include "headers.p4"

parser FabricParser(packet_in packet,
                    out headers_t hdr,
                    inout local_metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    state start {
        transition select(standard_metadata.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out {
        packet.extract(hdr.packet_out);
        transition parse_ethernet;
    }
    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_MAC_CONTROL: parse_mac_control;
            default: accept;
        }
    }
    state parse_mac_control {
        transition select(packet.lookahead<bit<16>>()) {
            MAC_CONTROL_PFC: parse_pfc;
            default: accept;
        }
    }
    state parse_pfc {
        packet.extract(hdr.pfc);
        transition accept;
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        verify(hdr.ipv4.ihl == 5, error.HeaderTooShort);
        transition select(hdr.ipv4.protocol) {
            IP_PROTO_UDP: parse_udp;
            IP_PROTO_DLB_TAG: parse_dlb_tag;
            IP_PROTO_INT: parse_int_shim;
            default: accept;
        }
    }
    state parse_dlb_tag {
        packet.extract(hdr.dlb_tag);
        transition select(hdr.dlb_tag.next_proto) {
            IP_PROTO_UDP: parse_udp;
            IP_PROTO_INT: parse_int_shim;
            default: accept;
        }
    }
    /* INT: the records a shim announces, at most INT_MAX_HOPS (more: left unparsed). */
    state parse_int_shim {
        packet.extract(hdr.int_shim);
        meta.int_hops_left = hdr.int_shim.hop_count;
        transition select(hdr.int_shim.hop_count) {
            0: parse_int_next;
            1: parse_int_hop;
            2: parse_int_hop;
            3: parse_int_hop;
            4: parse_int_hop;
            5: parse_int_hop;
            default: accept;
        }
    }
    state parse_int_hop {
        packet.extract(hdr.int_hops.next);
        meta.int_hops_left = meta.int_hops_left - 1;
        transition select(meta.int_hops_left) {
            0: parse_int_next;
            default: parse_int_hop;
        }
    }
    state parse_int_next {
        transition select(hdr.int_shim.next_proto) {
            IP_PROTO_UDP: parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            UDP_PORT_ROCEV2: parse_bth;
            default: accept;
        }
    }
    state parse_bth {
        packet.extract(hdr.bth);
        transition accept;
    }
}

control FabricVerifyChecksum(inout headers_t hdr, inout local_metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control FabricComputeChecksum(inout headers_t hdr, inout local_metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control FabricDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.pfc);
        packet.emit(hdr.pfc_pad);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.dlb_tag);
        packet.emit(hdr.int_shim);
        packet.emit(hdr.int_hops);
        packet.emit(hdr.udp);
        packet.emit(hdr.bth);
    }
}

#endif
