/* Parser features: header stacks, lookahead, advance, select over tuples with masks and
 * ranges, verify, and parser errors reaching ingress as BMv2 delivers them. */
#include <core.p4>
#include <v1model.p4>

header tag_t {
    bit<8> kind;
    bit<7> value;
    bit<1> bos;     /* bottom of stack */
}

header report_t {
    bit<8>  error_code;   /* written by ingress from standard_metadata.parser_error */
    bit<8>  tags;         /* tags.lastIndex + 1 */
    bit<8>  peeked;       /* lookahead of the byte after the tags */
    bit<8>  last_value;
    bit<8>  branch;       /* which select branch was taken */
}

header body_t {
    bit<16> word;
}

struct headers_t {
    report_t report;
    tag_t[3] tags;
    body_t   body;
}

struct meta_t {
    bit<8> peeked;
    bit<8> branch;
}

parser TagParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.report);
        transition parse_tag;
    }
    state parse_tag {
        pkt.extract(hdr.tags.next);
        verify(hdr.tags.last.kind != 0xEE, error.HeaderTooShort);
        transition select(hdr.tags.last.bos) {
            0: parse_tag;
            1: after_tags;
        }
    }
    state after_tags {
        meta.peeked = pkt.lookahead<bit<8>>();
        transition select(meta.peeked, hdr.tags[0].kind) {
            (0xFF, _): skip_one;
            (0xA0 &&& 0xF0, _): branch_mask;
            (0x10 .. 0x1F, 2): branch_range;
            (_, 7): reject;
            (0x00, _): accept;
            (0x01, _): parse_body;
        }
    }
    state skip_one {
        pkt.advance(8);
        meta.branch = 1;
        transition parse_body;
    }
    state branch_mask {
        meta.branch = 2;
        transition parse_body;
    }
    state branch_range {
        meta.branch = 3;
        transition parse_body;
    }
    state parse_body {
        pkt.extract(hdr.body);
        transition accept;
    }
}

control TagVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control TagIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.NoError) {
            hdr.report.error_code = 0;
        } else if (sm.parser_error == error.PacketTooShort) {
            hdr.report.error_code = 1;
        } else if (sm.parser_error == error.NoMatch) {
            hdr.report.error_code = 2;
        } else if (sm.parser_error == error.StackOutOfBounds) {
            hdr.report.error_code = 3;
        } else if (sm.parser_error == error.HeaderTooShort) {
            hdr.report.error_code = 4;
        } else {
            hdr.report.error_code = 0xFF;
        }
        hdr.report.tags = (bit<8>) (hdr.tags.lastIndex + 1);
        hdr.report.peeked = meta.peeked;
        hdr.report.branch = meta.branch;
        if (hdr.tags[0].isValid()) {
            hdr.report.last_value = (bit<8>) hdr.tags.last.value;
        }
        if (hdr.body.isValid() && hdr.body.word == 0x5050) {
            hdr.tags.push_front(1);
            hdr.tags[0].setValid();
            hdr.tags[0].kind = 0x99;
            hdr.tags[0].bos = 0;
        }
        if (hdr.body.isValid() && hdr.body.word == 0x6060) {
            hdr.tags.pop_front(1);
        }
    }
}

control TagEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control TagCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control TagDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.report);
        pkt.emit(hdr.tags);
        pkt.emit(hdr.body);
    }
}

V1Switch(TagParser(), TagVerify(), TagIngress(), TagEgress(), TagCompute(),
         TagDeparser()) main;
