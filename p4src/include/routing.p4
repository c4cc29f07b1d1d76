/* ECMP routing: IPv4 LPM to next-hop groups through an action selector.
 * The selector hashes the switch's view of the 5-tuple hash (the UDP source port carries the RoCEv2
 * flow entropy) and meta.lb_entropy, which a load-balancing control may set before routing
 * (flowlet switching puts the flowlet id there).
 * Seeding: CRCs are linear, so XOR-ing or prepending a seed only permutes the buckets of a
 * power-of-two group and two tiers stay polarised. The seed instead selects which 16 bits of the
 * 32-bit flow hash this switch uses (seed[3:0] is a shift), as switch ASICs select hash bits. */
#ifndef FABRIC_ROUTING_P4
#define FABRIC_ROUTING_P4

/* A program may replace the selector's hash (per-packet spraying uses identity over a counter). */
#ifndef ROUTING_SELECTOR_ALGO
#define ROUTING_SELECTOR_ALGO HashAlgorithm.crc16
#endif
#ifndef ROUTING_SELECTOR_KEYS
#define ROUTING_SELECTOR_KEYS meta.ecmp_key: selector; meta.lb_entropy: selector;
#endif

control EcmpRouting(inout headers_t hdr,
                    inout local_metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    action drop() {
        mark_to_drop(standard_metadata);
    }
    action set_next_hop(port_t port, mac_addr_t dmac) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.dst_addr = dmac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    action set_hash_seed(bit<16> seed) {
        meta.hash_seed = seed;
    }

    action_selector(ROUTING_SELECTOR_ALGO, 32w1024, 32w16) ecmp_selector;

    table hash_seed {
        actions = { set_hash_seed; }
        default_action = set_hash_seed(0);
    }

    table ipv4_lpm {
        key = {
            hdr.ipv4.dst_addr: lpm;
            ROUTING_SELECTOR_KEYS
        }
        actions = { set_next_hop; drop; }
        implementation = ecmp_selector;
        default_action = drop();
        size = 1024;
    }

    apply {
        if (!hdr.ipv4.isValid() || hdr.ipv4.ttl <= 1) {
            drop();
            return;
        }
        hash_seed.apply();
        meta.ecmp_key = (bit<16>) (meta.flow_hash >> meta.hash_seed[3:0]) ^ meta.hash_seed;
        ipv4_lpm.apply();
    }
}

#endif
