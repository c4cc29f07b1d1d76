// Small forwarding program for the STF runner's tests: an exact L2 table, a ternary ACL with
// priorities, an indexed counter and a register written by the CLI, and multicast.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

struct headers_t { ethernet_t ethernet; }
struct meta_t { bit<8> unused; }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition accept;
    }
}

control NoVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control IngressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    counter(8, CounterType.packets_and_bytes) port_in;
    register<bit<16>>(4) tag;

    action drop() { mark_to_drop(sm); }
    action forward(bit<9> port) { sm.egress_spec = port; }
    action flood(bit<16> group) { sm.mcast_grp = group; }
    action set_type(bit<16> t) { hdr.ethernet.etherType = t; }

    table l2 {
        key = { hdr.ethernet.dstAddr : exact; }
        actions = { forward; flood; drop; }
        default_action = drop();
    }
    table acl {
        key = { hdr.ethernet.srcAddr : ternary; }
        actions = { set_type; NoAction; }
        default_action = NoAction();
    }
    apply {
        port_in.count((bit<32>) sm.ingress_port);
        l2.apply();
        acl.apply();
        if (hdr.ethernet.etherType == 0xffff) {
            bit<16> t;
            tag.read(t, 1);
            hdr.ethernet.etherType = t;
        }
    }
}

control EgressImpl(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control NoCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.ethernet); }
}

V1Switch(ParserImpl(), NoVerify(), IngressImpl(), EgressImpl(), NoCompute(), DeparserImpl()) main;
