/* hash(): every algorithm over the 9 bytes "123456789", bit packing and invalid headers. */
#include <core.p4>
#include <v1model.p4>

header data_t {
    bit<72> digits;     /* "123456789" */
    bit<4>  hi;         /* two nibbles: packed MSB first into one byte */
    bit<4>  lo;
    bit<8>  mode;       /* which hash the test wants */
}

header opt_t {
    bit<8> value;
}

header result_t {
    bit<64> h;
}

struct headers_t {
    data_t   data;
    opt_t    opt;
    result_t result;
}

struct meta_t { }

parser HashParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.data);
        transition select(hdr.data.mode) {
            0x80 &&& 0x80: parse_opt;
            default: parse_result;
        }
    }
    state parse_opt {
        pkt.extract(hdr.opt);
        transition parse_result;
    }
    state parse_result {
        pkt.extract(hdr.result);
        transition accept;
    }
}

control HashVerify(inout headers_t hdr, inout meta_t meta) { apply { } }

control HashIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        bit<8> mode = hdr.data.mode & 0x7F;
        if (mode == 0) {
            hash(hdr.result.h, HashAlgorithm.crc16, 64w0, { hdr.data.digits }, 64w0x10000000000);
        } else if (mode == 1) {
            hash(hdr.result.h, HashAlgorithm.crc32, 64w0, { hdr.data.digits }, 64w0x10000000000);
        } else if (mode == 2) {
            hash(hdr.result.h, HashAlgorithm.csum16, 64w0, { hdr.data.digits }, 64w0x10000000000);
        } else if (mode == 3) {
            hash(hdr.result.h, HashAlgorithm.xor16, 64w0, { hdr.data.digits }, 64w0x10000000000);
        } else if (mode == 4) {
            hash(hdr.result.h, HashAlgorithm.identity, 64w0, { hdr.data.digits },
                 64w0xFFFFFFFFFFFFFFFF);
        } else if (mode == 5) {
            /* base + (H mod max) */
            hash(hdr.result.h, HashAlgorithm.crc16, 64w1000, { hdr.data.digits }, 64w7);
        } else if (mode == 6) {
            /* max 0 is treated as 1 */
            hash(hdr.result.h, HashAlgorithm.crc16, 64w5, { hdr.data.digits }, 64w0);
        } else if (mode == 7) {
            /* 4-bit fields are packed bit by bit: hi ++ lo is one byte */
            hash(hdr.result.h, HashAlgorithm.identity, 64w0, { hdr.data.hi, hdr.data.lo },
                 64w0xFFFFFFFFFFFFFFFF);
        } else if (mode == 8) {
            /* the optional header's field counts only when the header is valid */
            hash(hdr.result.h, HashAlgorithm.crc32, 64w0, { hdr.opt.value, hdr.data.digits },
                 64w0x10000000000);
        } else if (mode == 10) {
            /* runs of fields of one header are packed together */
            hash(hdr.result.h, HashAlgorithm.crc32, 64w0,
                 { hdr.opt.value, hdr.data.hi, hdr.data.lo, hdr.data.mode, hdr.opt.value },
                 64w0x10000000000);
        } else if (mode == 9) {
            /* an output narrower than the result keeps the low bits */
            bit<8> narrow;
            hash(narrow, HashAlgorithm.crc32, 32w0, { hdr.data.digits }, 64w0x100000000);
            hdr.result.h = (bit<64>) narrow;
        }
    }
}

control HashEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control HashCompute(inout headers_t hdr, inout meta_t meta) { apply { } }

control HashDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.data);
        pkt.emit(hdr.opt);
        pkt.emit(hdr.result);
    }
}

V1Switch(HashParser(), HashVerify(), HashIngress(), HashEgress(), HashCompute(),
         HashDeparser()) main;
