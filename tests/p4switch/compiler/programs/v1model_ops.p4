/* v1model packet operations: drop, multicast, clone, resubmit, recirculate, digest, truncate
 * (alone and with copies: BMv2 keeps the smallest length asked, for the packet itself only),
 * priority. A command header says what to do; egress records what it saw. */
#include <core.p4>
#include <v1model.p4>

header cmd_t {
    bit<8>  op;
    bit<8>  arg;
    bit<8>  instance;   /* egress: standard_metadata.instance_type */
    bit<8>  port;       /* egress: egress_port */
    bit<8>  rid;        /* egress: egress_rid */
    bit<8>  kept;       /* egress: meta.kept (a field-list field) */
    bit<8>  lost;       /* egress: meta.lost (not in any field list) */
    bit<8>  passes;     /* ingress passes seen by this packet */
}

struct headers_t {
    cmd_t cmd;
}

struct meta_t {
    @field_list(1)
    bit<8> kept;
    bit<8> lost;
}

struct learn_t {
    bit<8> arg;
    bit<9> port;
}

parser OpsParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.cmd);
        transition accept;
    }
}

control OpsVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control OpsIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.cmd.passes = hdr.cmd.passes + 1;
        sm.egress_spec = 1;
        if (hdr.cmd.op == 1) {
            sm.egress_spec = (bit<9>) hdr.cmd.arg;
        } else if (hdr.cmd.op == 2) {
            mark_to_drop(sm);
        } else if (hdr.cmd.op == 3) {
            sm.mcast_grp = (bit<16>) hdr.cmd.arg;
        } else if (hdr.cmd.op == 4) {
            meta.kept = 0x5A;
            meta.lost = 0x77;
            clone_preserving_field_list(CloneType.I2E, (bit<32>) hdr.cmd.arg, 1);
        } else if (hdr.cmd.op == 5) {
            if (sm.instance_type == 0) {
                meta.kept = 7;
                meta.lost = 9;
                resubmit_preserving_field_list(1);
            } else {
                sm.egress_spec = 2;
            }
        } else if (hdr.cmd.op == 6) {
            if (sm.instance_type == 4) {
                sm.egress_spec = 3;
            }
        } else if (hdr.cmd.op == 7) {
            digest<learn_t>(1, { hdr.cmd.arg, sm.ingress_port });
        } else if (hdr.cmd.op == 8) {
            truncate(5);
        } else if (hdr.cmd.op == 9) {
            sm.priority = 3;
        } else if (hdr.cmd.op == 12) {
            digest<learn_t>(1, { hdr.cmd.arg, sm.ingress_port });
            digest<learn_t>(1, { hdr.cmd.passes, sm.ingress_port });
        } else if (hdr.cmd.op == 13) {
            truncate(6);
            truncate(12);
        } else if (hdr.cmd.op == 14) {
            truncate(12);
        } else if (hdr.cmd.op == 15) {
            truncate(6);
            sm.mcast_grp = (bit<16>) hdr.cmd.arg;
        } else if (hdr.cmd.op == 16) {
            if (sm.instance_type == 0) {
                truncate(6);
            } else {
                sm.egress_spec = 3;
            }
        } else if (hdr.cmd.op == 17) {
            truncate(6);
            clone(CloneType.I2E, (bit<32>) hdr.cmd.arg);
        }
    }
}

control OpsEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.cmd.instance = sm.instance_type[7:0];
        hdr.cmd.port = sm.egress_port[7:0];
        hdr.cmd.rid = sm.egress_rid[7:0];
        hdr.cmd.kept = meta.kept;
        hdr.cmd.lost = meta.lost;
        if (hdr.cmd.op == 6 && hdr.cmd.passes == 1) {
            meta.kept = 3;
            recirculate_preserving_field_list(1);
        } else if (hdr.cmd.op == 10 && sm.instance_type == 0) {
            clone(CloneType.E2E, (bit<32>) hdr.cmd.arg);
        } else if (hdr.cmd.op == 11) {
            mark_to_drop(sm);
        } else if (hdr.cmd.op == 14) {
            truncate(20);
        } else if (hdr.cmd.op == 16 && hdr.cmd.passes == 1) {
            recirculate_preserving_field_list(1);
        } else if (hdr.cmd.op == 18 && sm.instance_type == 0) {
            truncate(6);
            clone(CloneType.E2E, (bit<32>) hdr.cmd.arg);
        }
    }
}

control OpsCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control OpsDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.cmd);
    }
}

V1Switch(OpsParser(), OpsVerify(), OpsIngress(), OpsEgress(), OpsCompute(),
         OpsDeparser()) main;
