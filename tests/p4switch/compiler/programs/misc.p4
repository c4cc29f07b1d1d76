/* Odds and ends: random, checksums with payload, optional match, @id, struct initializers,
 * actions with inout parameters, assume, @atomic, @hidden. */
#include <core.p4>
#include <v1model.p4>

header op_t {
    bit<8>  op;
    bit<8>  key;
    bit<16> out16;
    bit<8>  out8;
    bit<8>  pad;
}

struct pair_t {
    bit<8> first;
    bit<8> second;
}

struct headers_t {
    op_t op;
}

struct meta_t {
    pair_t pair;
}

parser MiscParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.op);
        transition accept;
    }
}

control MiscVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control MiscIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    @id(0x01000042) action bump(inout bit<8> value, bit<8> by) { value = value + by; }
    @hidden action secret() { hdr.op.out8 = 0xAA; }
    @id(0x0200007F) table opt {
        key = { hdr.op.key: optional; }
        actions = { secret; @tableonly NoAction; }
    }
    table inline_impl {
        key = { hdr.op.key: exact; hdr.op.pad: selector; }
        actions = { secret; }
        @name("inline_sel") implementation = action_selector(HashAlgorithm.crc16, 32w16, 32w8);
    }
    apply {
        sm.egress_spec = 1;
        if (hdr.op.op == 7) {
            inline_impl.apply();
        }
        if (hdr.op.op == 1) {
            bit<16> r;
            random(r, 16w100, 16w102);
            hdr.op.out16 = r;
        } else if (hdr.op.op == 2) {
            meta.pair = { second = 2, first = hdr.op.key };
            pair_t copy = meta.pair;
            bump(copy.first, 10);
            hdr.op.out8 = copy.first;
            hdr.op.out16 = meta.pair.first ++ copy.second;
        } else if (hdr.op.op == 3) {
            @atomic {
                assume(hdr.op.key == 1);
                hdr.op.out8 = 1;
            }
        } else if (hdr.op.op == 4) {
            opt.apply();
        } else if (hdr.op.op == 6) {
            /* sum of the odd numbers below key, stopping at 15 */
            bit<16> sum = 0;
            for (bit<8> i = 0; i < hdr.op.key; i = i + 1) {
                if (i == 15) {
                    break;
                }
                if (i[0:0] == 0) {
                    continue;
                }
                sum = sum + (bit<16>) i;
            }
            hdr.op.out16 = sum;
        }
    }
}

control MiscEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control MiscCompute(inout headers_t hdr, inout meta_t meta) {
    apply {
        /* with op 5 the checksum covers the key byte and the payload */
        update_checksum_with_payload(hdr.op.op == 5, { hdr.op.key, hdr.op.pad },
                                     hdr.op.out16, HashAlgorithm.csum16);
    }
}

control MiscDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.op);
    }
}

V1Switch(MiscParser(), MiscVerify(), MiscIngress(), MiscEgress(), MiscCompute(),
         MiscDeparser()) main;
