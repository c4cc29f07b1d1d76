/* Headers shared by every AI Fabric Lab program. */
#ifndef FABRIC_HEADERS_P4
#define FABRIC_HEADERS_P4

const bit<16> ETHERTYPE_IPV4        = 0x0800;
const bit<16> ETHERTYPE_MAC_CONTROL = 0x8808;
const bit<16> MAC_CONTROL_PFC       = 0x0101;
const bit<8>  IP_PROTO_UDP          = 17;
const bit<8>  IP_PROTO_DLB_TAG      = 253;   /* RFC 3692 experimental: reorder tag shim */
const bit<8>  IP_PROTO_INT          = 254;   /* RFC 3692 experimental: in-band telemetry shim */
const bit<16> UDP_PORT_ROCEV2       = 4791;
const bit<9>  CPU_PORT              = 510;

typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;
typedef bit<9>  port_t;

header ethernet_h {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

/* IEEE 802.1Qbb priority-based flow control (MAC control opcode 0x0101). */
header pfc_h {
    bit<16> opcode;
    bit<16> class_enable;
    bit<16> pause_time_0;
    bit<16> pause_time_1;
    bit<16> pause_time_2;
    bit<16> pause_time_3;
    bit<16> pause_time_4;
    bit<16> pause_time_5;
    bit<16> pause_time_6;
    bit<16> pause_time_7;
}

/* Zero padding that brings a PFC frame to the 60-byte Ethernet minimum (14 + 20 + 26). */
header pfc_pad_h {
    bit<208> zeros;
}

header ipv4_h {
    bit<4>      version;
    bit<4>      ihl;
    bit<6>      dscp;
    bit<2>      ecn;
    bit<16>     total_len;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     frag_offset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

/* DLB reorder tag: 8-byte shim between IPv4 and UDP, IPv4 protocol 253. */
header dlb_tag_h {
    bit<8>  next_proto;   /* the original IPv4 protocol (17) */
    bit<8>  flags;        /* bit 0: tagged by a host, bit 1: tagged by a switch */
    bit<16> flow_id;
    bit<32> seq;          /* per-flow sequence number */
}

/* In-band telemetry (int.p4): a 4-byte shim after IPv4 (or after the reorder tag), IPv4
 * protocol 254, then hop_count records of 24 bytes, the newest first. A sender asks for
 * telemetry by sending the shim with hop_count 0. */
#define INT_MAX_HOPS 5

header int_shim_h {
    bit<8>  next_proto;   /* the protocol after the records (17) */
    bit<8>  flags;        /* bit 0: a switch found no room for its record */
    bit<8>  max_hops;     /* records the sender allows (the switches also stop at INT_MAX_HOPS) */
    bit<8>  hop_count;    /* records that follow */
}

header int_hop_h {
    bit<16> switch_id;    /* set by the controller */
    bit<16> ingress_port;
    bit<16> egress_port;
    bit<16> qdepth;       /* packets left in the egress queue as this one left (deq_qdepth) */
    bit<48> egress_ts;    /* µs since the switch started, at dequeue */
    bit<16> hop_latency;  /* µs this packet queued (deq_timedelta), saturating */
    bit<32> tx_bytes;     /* bytes sent on the egress port so far, modulo 2^32 */
    bit<32> link_mbps;    /* the egress link's rate, Mb/s (0: not configured) */
}

header udp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

/* InfiniBand Base Transport Header, as carried by RoCEv2. */
header bth_h {
    bit<8>  opcode;
    bit<1>  solicited;
    bit<1>  migreq;
    bit<2>  pad_count;
    bit<4>  version;
    bit<16> pkey;
    bit<1>  fecn;
    bit<1>  becn;
    bit<6>  resv6;
    bit<24> dest_qp;
    bit<1>  ack_req;
    bit<7>  resv7;
    bit<24> psn;
}

@controller_header("packet_in")
header packet_in_h {
    port_t  ingress_port;
    bit<7>  _pad;
}

@controller_header("packet_out")
header packet_out_h {
    port_t  egress_port;
    bit<7>  _pad;
}

struct headers_t {
    packet_out_h packet_out;
    packet_in_h  packet_in;
    ethernet_h   ethernet;
    pfc_h        pfc;
    pfc_pad_h    pfc_pad;
    ipv4_h       ipv4;
    dlb_tag_h    dlb_tag;
    int_shim_h   int_shim;
    int_hop_h[INT_MAX_HOPS] int_hops;
    udp_h        udp;
    bth_h        bth;
}

#endif
