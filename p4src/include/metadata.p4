/* Per-packet metadata shared by every AI Fabric Lab program. */
#ifndef FABRIC_METADATA_P4
#define FABRIC_METADATA_P4

#include "headers.p4"

struct local_metadata_t {
    bit<16>     l4_src_port;
    bit<16>     l4_dst_port;
    bit<32>     flow_hash;    /* CRC-32 of the 5-tuple */
    bit<16>     hash_seed;    /* per-switch seed, set by the controller */
    bit<16>     ecmp_key;     /* the flow hash as this switch sees it (seeded), hashed by ECMP */
    bit<16>     lb_entropy;   /* load-balancing entropy: 0 (ECMP), flowlet id, or per-packet count */
    bit<32>     flow_index;   /* hash of the 5-tuple, indexes per-flow registers */
    bit<32>     dlb_cell;     /* queue-aware DLB: (destination slot, entropy) it learns a port for */
    bit<8>      int_hops_left; /* parser: INT records still to extract */
    bit<16>     trim_udp_bytes; /* trimming: the UDP length the cut keeps (0: not trimmed) */
    /* Carried into the egress clone that becomes a PFC frame (field list 1). */
    @field_list(1) bit<1>  pfc_frame;
    @field_list(1) bit<16> pfc_quanta;
    @field_list(1) bit<3>  pfc_class;
}

#endif
