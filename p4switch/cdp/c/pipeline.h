/* What a program's generated controls (p4switch/cdp/gen) and the engine (engine.c) share: the
 * switch's state as the controls read it, one pipeline pass's context, and the program's
 * entry points as the engine calls them.
 *
 * The state's objects are numbered by the generator (gen.program.Layout names each number):
 * tables, their default entries, action profiles, registers and counters. The control plane
 * (cdp/pipeline.py) owns their memory and fills it from the runtime's tables and externs. */
#ifndef CDP_PIPELINE_H
#define CDP_PIPELINE_H

#include <stdint.h>

#include "hashing.h"
#include "selector.h"
#include "tables.h"

#define CDP_MAX_ARGS 16
#define CDP_DIGEST_FIELDS 32 /* the most fields a digest's data may have */

enum cdp_ref { CDP_REF_ACTION = 0, CDP_REF_MEMBER = 1, CDP_REF_GROUP = 2 };

/* What a table lookup's value points to: an action with its data (a table entry, a default
 * action, an action profile member), or for a table with an action profile the member or
 * group the entry refers to. `packets` and `bytes` are the entry's direct counter. */
struct cdp_entry {
    int32_t action; /* the program's number of the action; -1: none */
    uint32_t ref;   /* enum cdp_ref */
    uint32_t group; /* CDP_REF_GROUP: the group's handle in the profile's selector */
    uint32_t nargs;
    const struct cdp_entry *member; /* CDP_REF_MEMBER: the member's action */
    uint64_t packets, bytes;
    uint64_t args[CDP_MAX_ARGS];
};

/* An action profile: its members by handle (a table with a 4-byte exact key whose value is
 * the member's struct cdp_entry *) and, for an action selector, its groups. */
struct cdp_profile {
    struct cdp_table *members;
    struct cdp_selector *selector;
};

struct cdp_state {
    struct cdp_table **tables;
    struct cdp_entry **defaults; /* a table's default action (NULL: none runs on a miss) */
    struct cdp_profile **profiles;
    uint64_t **registers;        /* each register's cells, one word each */
    uint64_t **counters;         /* counter k: its packets at 2k, its bytes at 2k + 1 */
    const uint64_t *ports_up;    /* the selector's port-up bitmap */
    uint32_t nports;
    uint32_t drop_port;
    uint64_t rng;                /* random()'s state (xorshift64*, never 0) */
};

/* One pass through verify_checksum, ingress or egress, compute_checksum (rt.PacketContext). */
struct cdp_packet {
    uint32_t length;        /* the packet's length as received */
    uint32_t payload_len;   /* the bytes after the parsed headers */
    const uint8_t *payload;
    int64_t clone_session, clone_list; /* has_clone: clone(session, field list or -1) */
    int64_t resubmit, recirculate;     /* field list, or -1 */
    int64_t truncate;                  /* bytes to keep (the least asked), or -1 */
    uint8_t has_clone, assert_failed;
    /* digest(): which call ran last (0: none); the values computed at the call; as ingress
     * ends, its struct's number (the program's) and every field's value (digest_count) */
    uint32_t digest, digest_number, digest_count;
    uint64_t digest_pinned[CDP_DIGEST_FIELDS];
    uint64_t digest_values[CDP_DIGEST_FIELDS];
};

/* The standard metadata fields the engine reads and writes. */
enum cdp_sm_field {
    CDP_SM_INGRESS_PORT, CDP_SM_EGRESS_SPEC, CDP_SM_EGRESS_PORT, CDP_SM_INSTANCE_TYPE,
    CDP_SM_PACKET_LENGTH, CDP_SM_ENQ_TIMESTAMP, CDP_SM_ENQ_QDEPTH, CDP_SM_DEQ_TIMEDELTA,
    CDP_SM_DEQ_QDEPTH, CDP_SM_INGRESS_GLOBAL_TIMESTAMP, CDP_SM_EGRESS_GLOBAL_TIMESTAMP,
    CDP_SM_MCAST_GRP, CDP_SM_EGRESS_RID, CDP_SM_PRIORITY, CDP_SM_FIELDS
};

typedef void cdp_stage_fn(struct cdp_state *st, struct cdp_packet *ctx, void *hdr, void *meta,
                          void *sm);

/* A program as the engine runs it (the generated `cdp_program`). */
struct cdp_program {
    uint32_t hdr_size, meta_size, sm_size;
    /* Engine._parse: fresh headers and standard metadata (fresh metadata too unless
     * keep_meta), the parser; the parser's status (0 accept, -1 reject, else an error). */
    int32_t (*parse)(const uint8_t *frame, uint32_t len, uint32_t port, uint32_t instance_type,
                     uint64_t now_us, void *hdr, void *meta, void *sm, int keep_meta,
                     uint32_t *payload_offset);
    cdp_stage_fn *verify_checksum, *ingress, *egress, *compute_checksum;
    int64_t (*deparse)(const void *hdr, uint8_t *out, uint32_t size);
    /* fresh <- the fields of meta in field list `list` (Engine._preserved) */
    void (*preserve)(uint32_t list, const void *meta, void *fresh);
    uint64_t (*sm_get)(const void *sm, enum cdp_sm_field field);
    void (*sm_set)(void *sm, enum cdp_sm_field field, uint64_t value);
};

/* The action of an action profile's member, or of the member a group chooses for `hash` among
 * its live members (NULL: none is live, or no such group). */
static inline const struct cdp_entry *cdp_profile_select(const struct cdp_profile *p,
                                                         const struct cdp_entry *e,
                                                         uint64_t hash,
                                                         const struct cdp_state *st)
{
    uint64_t value;
    int64_t handle;
    uint8_t key[4];
    if (e->ref == CDP_REF_MEMBER)
        return e->member;
    handle = cdp_selector_choose(p->selector, e->group, hash, st->ports_up, st->nports);
    if (handle < 0)
        return NULL;
    for (int i = 0; i < 4; i++)
        key[i] = (uint8_t)((uint64_t)handle >> (8 * (3 - i)));
    if (!cdp_table_lookup(p->members, key, &value, NULL))
        return NULL;
    return (const struct cdp_entry *)(uintptr_t)value;
}

/* random(lo, hi) of the controls: uniform in [lo, hi] (lo <= hi). */
static inline uint64_t cdp_random(struct cdp_state *st, uint64_t lo, uint64_t hi)
{
    uint64_t x = st->rng, span = hi - lo + 1;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    st->rng = x;
    x *= UINT64_C(0x2545F4914F6CDD1D);
    return span ? lo + x % span : x;
}

/* truncate(length) of the controls: BMv2's Packet::truncate keeps the smallest length asked. */
static inline void cdp_truncate(struct cdp_packet *ctx, int64_t length)
{
    if (ctx->truncate < 0 || length < ctx->truncate)
        ctx->truncate = length;
}

#endif
