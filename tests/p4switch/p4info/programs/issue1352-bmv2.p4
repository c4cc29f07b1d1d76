// Same control plane as p4c's issue1352-bmv2: three tables and a digest of a struct.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header ipv4_t { bit<32> srcAddr; bit<32> dstAddr; }
struct headers { ethernet_t ethernet; ipv4_t ipv4; }
struct test_digest_t { bit<48> in_mac_srcAddr; }
struct metadata { test_digest_t test_digest; }

parser MyParser(packet_in pkt, out headers hdr, inout metadata meta,
                inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.ethernet); pkt.extract(hdr.ipv4); transition accept; }
}
control NoCheck(inout headers hdr, inout metadata meta) { apply { } }

control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action drop() { mark_to_drop(sm); }
    action set_dmac(bit<48> dstAddr) { hdr.ethernet.dstAddr = dstAddr; }
    table forward {
        key = { hdr.ipv4.dstAddr : exact; }
        actions = { set_dmac; drop; NoAction; }
        default_action = NoAction();
    }
    action set_nhop(bit<32> dstAddr, bit<9> port) {
        hdr.ipv4.dstAddr = dstAddr;
        sm.egress_spec = port;
    }
    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr : lpm; }
        actions = { set_nhop; drop; NoAction; }
        default_action = NoAction();
    }
    action send_digest() {
        meta.test_digest.in_mac_srcAddr = hdr.ethernet.srcAddr;
        digest(1, meta.test_digest);
    }
    apply {
        ipv4_lpm.apply();
        forward.apply();
        send_digest();
    }
}

control MyEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    action rewrite_mac(bit<48> srcAddr) { hdr.ethernet.srcAddr = srcAddr; }
    table send_frame {
        key = { standard_metadata.egress_port : exact; }
        actions = { rewrite_mac; NoAction; }
        default_action = NoAction();
    }
    apply { send_frame.apply(); }
}

control MyDeparser(packet_out pkt, in headers hdr) {
    apply { pkt.emit(hdr.ethernet); pkt.emit(hdr.ipv4); }
}

V1Switch(MyParser(), NoCheck(), MyIngress(), MyEgress(), NoCheck(), MyDeparser()) main;
