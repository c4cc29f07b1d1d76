/* Test program of the p4switch process tests: port forwarding, an action selector with
 * watch-port failover, a ternary ACL, multicast, MAC learning digests, controller packet I/O,
 * counters, and a probe header that records the traffic manager's queue fields. */
#include <core.p4>
#include <v1model.p4>

#define CPU_PORT 510

@controller_header("packet_in")
header packet_in_h {
    bit<9> ingress_port;
    bit<7> _pad;
}

@controller_header("packet_out")
header packet_out_h {
    bit<9> egress_port;
    bit<7> _pad;
}

header ethernet_h {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

/* ether_type 0x88b5: the egress pipeline fills in the queueing metadata */
header probe_h {
    bit<32> seq;
    bit<32> enq_qdepth;
    bit<32> deq_qdepth;
    bit<32> deq_timedelta;
}

struct headers_t {
    packet_out_h packet_out;
    packet_in_h  packet_in;
    ethernet_h   ethernet;
    probe_h      probe;
}

struct learn_t {
    bit<48> src_addr;
    bit<9>  ingress_port;
}

struct metadata_t {
    bit<1> unused;
}

parser TestParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        transition select(standard_metadata.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x88b5: parse_probe;
            default: accept;
        }
    }
    state parse_probe {
        pkt.extract(hdr.probe);
        transition accept;
    }
}

control TestVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control TestIngress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    counter(512, CounterType.packets_and_bytes) rx_port_counter;
    register<bit<32>>(16) scratch;
    direct_counter(CounterType.packets_and_bytes) fwd_counter;
    action_selector(HashAlgorithm.crc16, 32w64, 32w10) lb_selector;

    action drop() {
        mark_to_drop(standard_metadata);
    }
    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }
    action to_cpu() {
        standard_metadata.egress_spec = CPU_PORT;
    }
    action learn() {
        digest<learn_t>(1, {hdr.ethernet.src_addr, standard_metadata.ingress_port});
    }

    table fwd {
        key = { standard_metadata.ingress_port: exact; }
        actions = { forward; to_cpu; drop; }
        default_action = drop();
        counters = fwd_counter;
        size = 64;
    }

    table lb {
        key = {
            hdr.ethernet.dst_addr: exact;
            hdr.ethernet.src_addr: selector;
            hdr.ethernet.ether_type: selector;
        }
        actions = { forward; drop; }
        implementation = lb_selector;
        size = 64;
    }

    table acl {
        key = {
            hdr.ethernet.dst_addr: ternary;
            hdr.ethernet.ether_type: range;
        }
        actions = { drop; NoAction; }
        default_action = NoAction();
        size = 16;
    }

    table smac {
        key = { hdr.ethernet.src_addr: exact; }
        actions = { learn; NoAction; }
        default_action = learn();
        size = 64;
    }

    table guard {
        key = { hdr.ethernet.ether_type: exact; }
        actions = { drop; NoAction; }
        const default_action = NoAction();
        size = 16;
    }

    apply {
        if (hdr.packet_out.isValid()) {
            standard_metadata.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            exit;
        }
        rx_port_counter.count((bit<32>) standard_metadata.ingress_port);
        scratch.write(0, (bit<32>) standard_metadata.ingress_port);
        smac.apply();
        if (hdr.ethernet.dst_addr == 48w0xffffffffffff) {
            standard_metadata.mcast_grp = 1;
        } else if (!lb.apply().hit) {
            fwd.apply();
        }
        acl.apply();
        guard.apply();
    }
}

control TestEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = standard_metadata.ingress_port;
        }
        if (hdr.probe.isValid()) {
            log_msg("probe {} leaves on port {}", {hdr.probe.seq, standard_metadata.egress_port});
            hdr.probe.enq_qdepth = (bit<32>) standard_metadata.enq_qdepth;
            hdr.probe.deq_qdepth = (bit<32>) standard_metadata.deq_qdepth;
            hdr.probe.deq_timedelta = standard_metadata.deq_timedelta;
        }
    }
}

control TestComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control TestDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.probe);
    }
}

V1Switch(TestParser(), TestVerifyChecksum(), TestIngress(), TestEgress(),
         TestComputeChecksum(), TestDeparser()) main;
