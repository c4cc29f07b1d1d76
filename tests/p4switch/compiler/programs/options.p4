/* varbit (IPv4 options) and header_union (one of two L4 headers). */
#include <core.p4>
#include <v1model.p4>
#include "include/std_headers.p4"

header ipv4_opts_t {
    bit<4>       version;
    bit<4>       ihl;
    bit<8>       diffserv;
    bit<16>      totalLen;
    bit<16>      identification;
    bit<3>       flags;
    bit<13>      fragOffset;
    bit<8>       ttl;
    bit<8>       protocol;
    bit<16>      hdrChecksum;
    bit<32>      srcAddr;
    bit<32>      dstAddr;
    varbit<320>  options;
}

header icmp_t {
    bit<8>  type_;
    bit<8>  code;
    bit<16> checksum;
}

header_union l4_t {
    udp_t  udp;
    icmp_t icmp;
}

struct headers_t {
    ethernet_t  ethernet;
    ipv4_opts_t ipv4;
    l4_t        l4;
}

struct meta_t { }

parser OptParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.ipv4, (bit<32>) (((bit<16>) pkt.lookahead<bit<8>>()[3:0] - 5) * 32));
        transition select(hdr.ipv4.protocol) {
            17: parse_udp;
            1: parse_icmp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.l4.udp);
        transition accept;
    }
    state parse_icmp {
        pkt.extract(hdr.l4.icmp);
        transition accept;
    }
}

control OptVerify(inout headers_t hdr, inout meta_t meta) {
    apply {
        verify_checksum(true,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.options },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control OptIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.checksum_error == 1) {
            mark_to_drop(sm);
            return;
        }
        sm.egress_spec = 1;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        if (hdr.l4.icmp.isValid()) {
            /* replace the ICMP header by a UDP one: making a member valid invalidates
             * the other */
            hdr.l4.udp.setValid();
            hdr.l4.udp.srcPort = 7;
            hdr.l4.udp.dstPort = 7;
            hdr.ipv4.protocol = 17;
        }
        if (hdr.l4.isValid()) {
            hdr.ethernet.etherType = 0x88B5;
        }
    }
}

control OptEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control OptCompute(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(true,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr, hdr.ipv4.options },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control OptDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.l4);
    }
}

V1Switch(OptParser(), OptVerify(), OptIngress(), OptEgress(), OptCompute(),
         OptDeparser()) main;
