/* Program of the P4Runtime conformance tests: an exact table without direct resources, a
 * ternary table with a direct counter, a table without a key, one whose default action is
 * const, and controller packet I/O that loops a packet-out back to the controller. */
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

struct headers_t {
    packet_out_h packet_out;
    packet_in_h  packet_in;
    ethernet_h   ethernet;
}

struct metadata_t {
    bit<8> tag;
}

parser ConfParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
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
        transition accept;
    }
}

control ConfVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control ConfIngress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    direct_counter(CounterType.packets_and_bytes) acl_counter;

    action drop() {
        mark_to_drop(standard_metadata);
    }
    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }
    action allow() {
        acl_counter.count();
    }
    action deny() {
        acl_counter.count();
        mark_to_drop(standard_metadata);
    }
    action set_tag(bit<8> tag) {
        meta.tag = tag;
    }

    table fwd {
        key = { standard_metadata.ingress_port: exact; }
        actions = { forward; drop; }
        default_action = drop();
        size = 64;
    }
    table acl {
        key = { hdr.ethernet.ether_type: ternary; }
        actions = { allow; deny; }
        default_action = allow();
        counters = acl_counter;
        size = 64;
    }
    table tag {
        actions = { set_tag; NoAction; }
        default_action = NoAction();
    }
    table fixed {
        key = { hdr.ethernet.dst_addr: exact; }
        actions = { forward; drop; }
        const default_action = drop();
        size = 16;
    }

    apply {
        if (hdr.packet_out.isValid()) {
            /* a packet-out comes back to the controller as a packet-in from the CPU port */
            standard_metadata.egress_spec = CPU_PORT;
            hdr.packet_out.setInvalid();
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = standard_metadata.ingress_port;
            hdr.packet_in._pad = 0;
            return;
        }
        fwd.apply();
        acl.apply();
        tag.apply();
        fixed.apply();
    }
}

control ConfEgress(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    apply { }
}

control ConfComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control ConfDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
    }
}

V1Switch(ConfParser(), ConfVerifyChecksum(), ConfIngress(), ConfEgress(), ConfComputeChecksum(),
         ConfDeparser()) main;
