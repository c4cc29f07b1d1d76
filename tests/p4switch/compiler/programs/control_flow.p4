/* Control flow and stateful externs: sub-controls, switch on action_run, hit/miss, exit,
 * return, functions, const entries, registers, meters, selectors, log_msg, assert. */
#include <core.p4>
#include <v1model.p4>

header req_t {
    bit<8>  op;
    bit<8>  key;
    bit<16> value;
}

header resp_t {
    bit<8>  a;
    bit<8>  b;
    bit<8>  c;
    bit<8>  d;
    bit<32> r;
}

header extra_t {
    bit<16> x;
    bit<16> y;
}

struct headers_t {
    req_t   req;
    resp_t  resp;
    extra_t extra;
}

struct meta_t {
    bit<8> scratch;
}

parser CfParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.req);
        pkt.extract(hdr.resp);
        transition accept;
    }
}

control CfVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

bit<8> clamp_add(in bit<8> x, in bit<8> y, out bool saturated) {
    saturated = (x |+| y) == 255;
    return x |+| y;
}

/* Instantiated at the top level: one register shared by every control. */
register<bit<32>>(2) shared;

/* Applied twice under different names: two independent tables and registers. */
control Classifier(in bit<8> k, inout bit<8> result) {
    register<bit<8>>(4) last_key;
    action set_result(bit<8> v) { result = v; }
    action give_up() { result = 0xEE; exit; }
    table classify {
        key = { k: ternary; }
        actions = { set_result; give_up; @defaultonly NoAction; }
        const entries = {
            0x10 &&& 0xF0: set_result(1);
            0x1F: set_result(2);
            0xFF: give_up();
            _: set_result(3);
        }
        const default_action = NoAction();
    }
    apply {
        last_key.write(0, k);
        classify.apply();
    }
}

/* `in` arguments are copies: writes through an aliasing inout parameter do not show. */
control Aliasing(inout resp_t r, in resp_t orig) {
    apply {
        r.a = 0x55;
        r.b = orig.a;
    }
}

control CfIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Classifier() first;
    Aliasing() aliasing;
    @name("second_classifier") Classifier() second;
    register<bit<32>>(8) store;
    meter(4, MeterType.packets) limiter;
    direct_meter<bit<8>>(MeterType.packets) dmeter;

    action hit_one(bit<8> v) { hdr.resp.a = v; dmeter.read(hdr.resp.d); }
    action hit_two() { hdr.resp.a = 0x22; }
    table exact_tbl {
        key = { hdr.req.key: exact; }
        actions = { hit_one; hit_two; NoAction; }
        default_action = hit_one(0x77);
        meters = dmeter;
    }

    action pick(bit<8> member) { hdr.resp.b = member; }
    action_selector(HashAlgorithm.crc16, 32w64, 32w16) sel;
    table ecmp {
        key = { hdr.req.key: exact; hdr.req.value: selector; }
        actions = { pick; }
        implementation = sel;
    }

    table ranges {
        key = { hdr.req.value: range; }
        actions = { pick; NoAction; }
        const entries = {
            0 .. 99: pick(1);
            50 .. 200: pick(2);
        }
    }

    apply {
        sm.egress_spec = 2;
        if (hdr.req.op == 1) {
            switch (exact_tbl.apply().action_run) {
                hit_one: { hdr.resp.c = 1; }
                hit_two: { hdr.resp.c = 2; }
                default: { hdr.resp.c = 3; }
            }
        } else if (hdr.req.op == 2) {
            if (exact_tbl.apply().hit) { hdr.resp.c = 0x48; } else { hdr.resp.c = 0x4D; }
        } else if (hdr.req.op == 3) {
            first.apply(hdr.req.key, hdr.resp.a);
            second.apply(hdr.req.key + 1, hdr.resp.b);
            hdr.resp.c = 0xCC;   /* not reached when a classifier exits */
        } else if (hdr.req.op == 4) {
            bool sat;
            hdr.resp.a = clamp_add(hdr.req.key, hdr.req.value[7:0], sat);
            hdr.resp.b = sat ? 8w1 : 8w0;
        } else if (hdr.req.op == 5) {
            bit<32> old;
            store.read(old, (bit<32>) hdr.req.key);
            store.write((bit<32>) hdr.req.key, old + (bit<32>) hdr.req.value);
            store.read(hdr.resp.r, (bit<32>) hdr.req.key);
            hdr.resp.r = hdr.resp.r;
        } else if (hdr.req.op == 6) {
            bit<2> color;
            limiter.execute_meter((bit<32>) hdr.req.key, color);
            hdr.resp.a = (bit<8>) color;
        } else if (hdr.req.op == 7) {
            ecmp.apply();
        } else if (hdr.req.op == 8) {
            ranges.apply();
        } else if (hdr.req.op == 9) {
            hdr.extra.setValid();
            hdr.extra.y = hdr.req.value;
            log_msg("key={} value={}", { hdr.req.key, hdr.req.value });
        } else if (hdr.req.op == 10) {
            assert(hdr.req.key != 0);
            hdr.resp.a = 1;
        } else if (hdr.req.op == 12) {
            shared.write(1, (bit<32>) hdr.req.value);
            shared.read(hdr.resp.r, 1);
        } else if (hdr.req.op == 13) {
            hdr.resp.a = 0x11;
            aliasing.apply(hdr.resp, hdr.resp);
        } else if (hdr.req.op == 11) {
            if (hdr.req.key == 1) {
                return;
            }
            hdr.resp.a = 0x11;
        }
    }
}

control CfEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control CfCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control CfDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.req);
        pkt.emit(hdr.resp);
        pkt.emit(hdr.extra);
    }
}

V1Switch(CfParser(), CfVerify(), CfIngress(), CfEgress(), CfCompute(), CfDeparser()) main;
