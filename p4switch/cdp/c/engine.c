/* The v1model pipeline driver of the C data plane (engine.h); each step is engine.py's, in
 * the same order, so both give the same packets. */
#include "engine.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FRAME_ROOM (65536 + 16384) /* the largest frame a deparser may write */

struct cdp_engine {
    const struct cdp_program *prog;
    struct cdp_state *st;
    uint32_t queues;
    int64_t fixed_now;
    uint64_t start_ns;
    uint64_t internal_errors;
    struct cdp_copies *groups[CDP_PRE_IDS];
    struct cdp_copies *sessions[CDP_PRE_IDS];
    struct digest {
        uint32_t number, count;
        uint64_t values[CDP_DIGEST_FIELDS];
    } digests[CDP_DIGEST_QUEUE]; /* a ring: `pending` from `first` on */
    uint32_t first, pending;
    uint64_t digests_lost;
    uint8_t *frame;   /* FRAME_ROOM bytes: a deparsed frame */
    void *scratch;    /* headers, metadata and standard metadata of a pass */
};

uint64_t cdp_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t now_us(const struct cdp_engine *eng)
{
    if (eng->fixed_now >= 0)
        return (uint64_t)eng->fixed_now;
    return (cdp_monotonic_ns() - eng->start_ns) / 1000;
}

static size_t align8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

struct cdp_engine *cdp_engine_new(const struct cdp_program *program, struct cdp_state *state,
                                  uint32_t priority_queues)
{
    struct cdp_engine *eng = calloc(1, sizeof *eng);
    if (eng == NULL)
        return NULL;
    eng->prog = program;
    eng->st = state;
    eng->queues = priority_queues;
    eng->fixed_now = -1;
    eng->start_ns = cdp_monotonic_ns();
    eng->frame = malloc(FRAME_ROOM);
    eng->scratch = malloc(align8(program->hdr_size) + align8(program->meta_size) +
                          align8(program->sm_size));
    if (eng->frame == NULL || eng->scratch == NULL) {
        cdp_engine_free(eng);
        return NULL;
    }
    return eng;
}

void cdp_engine_free(struct cdp_engine *eng)
{
    if (eng == NULL)
        return;
    for (uint32_t i = 0; i < CDP_PRE_IDS; i++) {
        free(eng->groups[i]);
        free(eng->sessions[i]);
    }
    free(eng->frame);
    free(eng->scratch);
    free(eng);
}

void cdp_engine_set_clock(struct cdp_engine *eng, int64_t fixed_now_us)
{
    eng->fixed_now = fixed_now_us;
}

void cdp_engine_set_origin(struct cdp_engine *eng, uint64_t origin_ns)
{
    eng->start_ns = origin_ns;
}

uint64_t cdp_engine_internal_errors(const struct cdp_engine *eng)
{
    return eng->internal_errors;
}

static int set_copies(struct cdp_copies **slot, int exists, const struct cdp_copy *copies,
                      uint32_t count)
{
    struct cdp_copies *c = NULL;
    if (exists) {
        c = malloc(sizeof *c + (size_t)count * sizeof c->copies[0]);
        if (c == NULL)
            return -1;
        c->count = count;
        if (count)
            memcpy(c->copies, copies, (size_t)count * sizeof c->copies[0]);
    }
    free(*slot);
    *slot = c;
    return 0;
}

int cdp_engine_set_group(struct cdp_engine *eng, uint32_t group, const struct cdp_copy *copies,
                         uint32_t count)
{
    if (group >= CDP_PRE_IDS)
        return -1;
    return set_copies(&eng->groups[group], count > 0, copies, count);
}

int cdp_engine_set_session(struct cdp_engine *eng, uint32_t session, int exists,
                           const struct cdp_copy *copies, uint32_t count)
{
    if (session >= CDP_PRE_IDS)
        return -1;
    return set_copies(&eng->sessions[session], exists, copies, count);
}

void cdp_item_free(struct cdp_item *item)
{
    free(item);
}

/* ---- items ------------------------------------------------------------------------------ */

/* A new item: copies of hdr, meta and sm, and the payload. */
static struct cdp_item *item_new(const struct cdp_engine *eng, uint32_t port, uint32_t priority,
                                 const void *hdr, const void *meta, const void *sm,
                                 const uint8_t *payload, uint32_t payload_len, uint32_t length,
                                 int64_t truncate, uint32_t recirculations)
{
    const struct cdp_program *p = eng->prog;
    size_t h = align8(p->hdr_size), m = align8(p->meta_size), s = align8(p->sm_size);
    struct cdp_item *item = malloc(align8(sizeof *item) + h + m + s + payload_len);
    uint8_t *at;
    if (item == NULL)
        return NULL;
    at = (uint8_t *)item + align8(sizeof *item);
    item->next = NULL;
    item->egress_port = port;
    item->priority = priority;
    item->length = length;
    item->recirculations = recirculations;
    item->truncate = truncate;
    item->hdr = memcpy(at, hdr, p->hdr_size);
    item->meta = memcpy(at + h, meta, p->meta_size);
    item->sm = memcpy(at + h + m, sm, p->sm_size);
    item->payload = at + h + m + s;
    item->payload_len = payload_len;
    if (payload_len)
        memcpy(item->payload, payload, payload_len);
    return item;
}

struct list {
    struct cdp_item ***tail;
    uint32_t count;
};

static void append(struct list *l, struct cdp_item *item)
{
    **l->tail = item;
    *l->tail = &item->next;
    l->count++;
}

/* Engine._enqueue: the packet for queue (port, sm's priority), or none past the queues. */
static void enqueue(struct cdp_engine *eng, struct list *out, uint32_t port, const void *hdr,
                    const void *meta, const void *sm, const uint8_t *payload,
                    uint32_t payload_len, uint32_t length, int64_t truncate, uint32_t depth)
{
    uint64_t prio = eng->prog->sm_get(sm, CDP_SM_PRIORITY);
    struct cdp_item *item;
    if (prio >= eng->queues)
        return;
    item = item_new(eng, port, (uint32_t)prio, hdr, meta, sm, payload, payload_len, length,
                    truncate, depth);
    if (item == NULL) {
        eng->internal_errors++;
        return;
    }
    append(out, item);
}

/* Engine._replicate: a copy per (port, rid), each with its own standard metadata; copies start
 * whole (BMv2's Packet::clone_*), a truncate() before them cuts none. */
static void replicate(struct cdp_engine *eng, struct list *out, const void *hdr,
                      const void *meta, void *sm, const uint8_t *payload, uint32_t payload_len,
                      uint32_t length, const struct cdp_copies *copies, uint32_t depth)
{
    if (copies == NULL)
        return;
    for (uint32_t i = 0; i < copies->count; i++) {
        eng->prog->sm_set(sm, CDP_SM_EGRESS_RID, copies->copies[i].rid);
        enqueue(eng, out, copies->copies[i].port, hdr, meta, sm, payload, payload_len, length,
                -1, depth);
    }
}

/* Engine._preserved: fresh metadata with field list `list`'s fields of meta. */
static void preserved(const struct cdp_engine *eng, int64_t list, const void *meta,
                      void *fresh)
{
    memset(fresh, 0, eng->prog->meta_size);
    if (list >= 0)
        eng->prog->preserve((uint32_t)list, meta, fresh);
}

/* ---- digests ------------------------------------------------------------------------------ */

static void push_digest(struct cdp_engine *eng, const struct cdp_packet *ctx)
{
    struct digest *d;
    if (eng->pending == CDP_DIGEST_QUEUE) {
        eng->digests_lost++;
        return;
    }
    d = &eng->digests[(eng->first + eng->pending++) % CDP_DIGEST_QUEUE];
    d->number = ctx->digest_number;
    d->count = ctx->digest_count;
    memcpy(d->values, ctx->digest_values, sizeof d->values);
}

int32_t cdp_engine_digest(struct cdp_engine *eng, uint32_t *number, uint64_t *values,
                          uint32_t max)
{
    const struct digest *d;
    if (eng->pending == 0)
        return -1;
    d = &eng->digests[eng->first];
    eng->first = (eng->first + 1) % CDP_DIGEST_QUEUE;
    eng->pending--;
    *number = d->number;
    memcpy(values, d->values, (size_t)(d->count < max ? d->count : max) * sizeof values[0]);
    return (int32_t)d->count;
}

uint32_t cdp_engine_digests_pending(const struct cdp_engine *eng)
{
    return eng->pending;
}

uint64_t cdp_engine_digests_lost(const struct cdp_engine *eng)
{
    return eng->digests_lost;
}

/* ---- ingress ------------------------------------------------------------------------------ */

struct pass {
    void *hdr, *meta, *sm;
};

static int pass_new(const struct cdp_engine *eng, struct pass *p)
{
    const struct cdp_program *prog = eng->prog;
    size_t h = align8(prog->hdr_size), m = align8(prog->meta_size);
    uint8_t *block = malloc(h + m + align8(prog->sm_size));
    if (block == NULL)
        return -1;
    p->hdr = block;
    p->meta = block + h;
    p->sm = block + h + m;
    return 0;
}

static void run_ingress(struct cdp_engine *eng, struct list *out, uint32_t port,
                        const uint8_t *data, uint32_t len, uint32_t instance,
                        const void *kept_meta, uint32_t depth);

/* Engine._ingress_clone: the original packet parsed again, the field list's metadata. */
static void ingress_clone(struct cdp_engine *eng, struct list *out,
                          const struct cdp_packet *ctx, const uint8_t *data, uint32_t len,
                          uint32_t port, const void *meta)
{
    const struct cdp_program *prog = eng->prog;
    const struct cdp_copies *targets = eng->sessions[(uint64_t)ctx->clone_session & 0xFFFF];
    struct pass c;
    uint32_t off = 0;
    void *kept;
    if (targets == NULL || targets->count == 0)
        return;
    if (pass_new(eng, &c) < 0) {
        eng->internal_errors++;
        return;
    }
    prog->parse(data, len, port, CDP_INSTANCE_INGRESS_CLONE, now_us(eng), c.hdr, c.meta, c.sm,
                0, &off);
    kept = eng->scratch;
    preserved(eng, ctx->clone_list, meta, kept);
    memset(c.sm, 0, prog->sm_size);
    prog->sm_set(c.sm, CDP_SM_INSTANCE_TYPE, CDP_INSTANCE_INGRESS_CLONE);
    replicate(eng, out, c.hdr, kept, c.sm, data + off, len - off, len, targets, 0);
    free(c.hdr);
}

static void run_ingress(struct cdp_engine *eng, struct list *out, uint32_t port,
                        const uint8_t *data, uint32_t len, uint32_t instance,
                        const void *kept_meta, uint32_t depth)
{
    const struct cdp_program *prog = eng->prog;
    struct cdp_packet ctx = {0};
    struct pass p;
    uint32_t off = 0;
    uint64_t spec, grp;
    if (pass_new(eng, &p) < 0) {
        eng->internal_errors++;
        return;
    }
    if (kept_meta != NULL)
        memcpy(p.meta, kept_meta, prog->meta_size);
    ctx.length = len;
    ctx.clone_list = ctx.resubmit = ctx.recirculate = ctx.truncate = -1;
    prog->parse(data, len, port, instance, now_us(eng), p.hdr, p.meta, p.sm, kept_meta != NULL,
                &off);
    ctx.payload = data + off;
    ctx.payload_len = len - off;
    prog->verify_checksum(eng->st, &ctx, p.hdr, p.meta, p.sm);
    if (!ctx.assert_failed)
        prog->ingress(eng->st, &ctx, p.hdr, p.meta, p.sm);
    if (ctx.assert_failed)
        goto done;
    if (ctx.has_clone)
        ingress_clone(eng, out, &ctx, data, len, port, p.meta);
    if (ctx.digest)
        push_digest(eng, &ctx);
    if (ctx.resubmit >= 0) {
        void *kept;
        if (depth >= CDP_MAX_RECIRCULATIONS)
            goto done;
        kept = malloc(prog->meta_size ? prog->meta_size : 1);
        if (kept == NULL) {
            eng->internal_errors++;
            goto done;
        }
        preserved(eng, ctx.resubmit, p.meta, kept);
        run_ingress(eng, out, 0, data, len, CDP_INSTANCE_RESUBMIT, kept, depth + 1);
        free(kept);
        goto done;
    }
    grp = prog->sm_get(p.sm, CDP_SM_MCAST_GRP);
    if (grp) {
        prog->sm_set(p.sm, CDP_SM_INSTANCE_TYPE, CDP_INSTANCE_REPLICATION);
        replicate(eng, out, p.hdr, p.meta, p.sm, ctx.payload, ctx.payload_len, len,
                  grp < CDP_PRE_IDS ? eng->groups[grp] : NULL, depth);
        goto done;
    }
    spec = prog->sm_get(p.sm, CDP_SM_EGRESS_SPEC);
    if (spec != eng->st->drop_port) {
        prog->sm_set(p.sm, CDP_SM_INSTANCE_TYPE, CDP_INSTANCE_NORMAL);
        enqueue(eng, out, (uint32_t)spec, p.hdr, p.meta, p.sm, ctx.payload, ctx.payload_len, len,
                ctx.truncate, depth);
    }
done:
    free(p.hdr);
}

uint32_t cdp_engine_ingress(struct cdp_engine *eng, uint32_t port, const uint8_t *frame,
                            uint32_t len, struct cdp_item ***tail)
{
    struct list out = {tail, 0};
    run_ingress(eng, &out, port, frame, len, CDP_INSTANCE_NORMAL, NULL, 0);
    return out.count;
}

/* ---- egress ------------------------------------------------------------------------------- */

/* Engine._egress_clone: the item's headers and the field list's metadata after egress. */
static void egress_clone(struct cdp_engine *eng, struct list *out, const struct cdp_packet *ctx,
                         const struct cdp_item *item)
{
    const struct cdp_program *prog = eng->prog;
    const struct cdp_copies *targets = eng->sessions[(uint64_t)ctx->clone_session & 0xFFFF];
    struct pass c;
    if (targets == NULL || targets->count == 0)
        return;
    if (pass_new(eng, &c) < 0) {
        eng->internal_errors++;
        return;
    }
    preserved(eng, ctx->clone_list, item->meta, c.meta);
    memset(c.sm, 0, prog->sm_size);
    prog->sm_set(c.sm, CDP_SM_INSTANCE_TYPE, CDP_INSTANCE_EGRESS_CLONE);
    replicate(eng, out, item->hdr, c.meta, c.sm, item->payload, item->payload_len, item->length,
              targets, 0);
    free(c.hdr);
}

int64_t cdp_engine_egress(struct cdp_engine *eng, struct cdp_item *item, uint64_t enq_timestamp,
                          uint64_t enq_qdepth, uint64_t deq_qdepth, uint64_t deq_timedelta,
                          uint8_t *out, uint32_t out_size, uint32_t *egress_port,
                          struct cdp_item ***tail)
{
    const struct cdp_program *prog = eng->prog;
    struct list fresh = {tail, 0};
    struct cdp_packet ctx = {0};
    void *sm = item->sm;
    int64_t n, result = -1;
    uint64_t len;
    *egress_port = item->egress_port;
    prog->sm_set(sm, CDP_SM_EGRESS_PORT, item->egress_port);
    prog->sm_set(sm, CDP_SM_ENQ_TIMESTAMP, enq_timestamp & 0xFFFFFFFFu);
    prog->sm_set(sm, CDP_SM_ENQ_QDEPTH, enq_qdepth & 0x7FFFF);
    prog->sm_set(sm, CDP_SM_DEQ_QDEPTH, deq_qdepth & 0x7FFFF);
    prog->sm_set(sm, CDP_SM_DEQ_TIMEDELTA, deq_timedelta & 0xFFFFFFFFu);
    prog->sm_set(sm, CDP_SM_EGRESS_GLOBAL_TIMESTAMP, now_us(eng) & UINT64_C(0xFFFFFFFFFFFF));
    prog->sm_set(sm, CDP_SM_EGRESS_SPEC, (eng->st->drop_port + 1) & 0x1FF);
    prog->sm_set(sm, CDP_SM_PACKET_LENGTH, item->length);
    ctx.length = item->length;
    ctx.payload = item->payload;
    ctx.payload_len = item->payload_len;
    ctx.clone_list = ctx.resubmit = ctx.recirculate = -1;
    ctx.truncate = item->truncate; /* egress's truncate() can only cut further */
    prog->egress(eng->st, &ctx, item->hdr, item->meta, sm);
    if (ctx.assert_failed)
        goto done;
    if (ctx.has_clone)
        egress_clone(eng, &fresh, &ctx, item);
    if (prog->sm_get(sm, CDP_SM_EGRESS_SPEC) == eng->st->drop_port)
        goto done;
    prog->compute_checksum(eng->st, &ctx, item->hdr, item->meta, sm);
    if (ctx.assert_failed)
        goto done;
    n = prog->deparse(item->hdr, out, out_size);
    if (n < 0 || (uint64_t)out_size - (uint64_t)n < item->payload_len) {
        eng->internal_errors++;
        result = -2;
        goto done;
    }
    memcpy(out + n, item->payload, item->payload_len);
    len = (uint64_t)n + item->payload_len;
    if (ctx.recirculate >= 0) { /* the copy fed back is whole, as BMv2's */
        void *kept;
        if (item->recirculations >= CDP_MAX_RECIRCULATIONS)
            goto done;
        kept = malloc(prog->meta_size ? prog->meta_size : 1);
        if (kept == NULL) {
            eng->internal_errors++;
            goto done;
        }
        preserved(eng, ctx.recirculate, item->meta, kept);
        run_ingress(eng, &fresh, 0, out, (uint32_t)len, CDP_INSTANCE_RECIRC, kept,
                    item->recirculations + 1);
        free(kept);
        goto done;
    }
    if (ctx.truncate >= 0 && (uint64_t)ctx.truncate < len)
        len = (uint64_t)ctx.truncate;
    result = (int64_t)len;
done:
    cdp_item_free(item);
    return result;
}

/* ---- the whole pipeline ------------------------------------------------------------------- */

int64_t cdp_engine_process(struct cdp_engine *eng, uint32_t port, const uint8_t *frame,
                           uint32_t len, uint8_t *out, uint64_t out_size, uint32_t *ports,
                           uint32_t *lens, uint32_t max_frames)
{
    struct cdp_item *head = NULL, **tail = &head;
    uint64_t used = 0;
    int64_t frames = 0;
    cdp_engine_ingress(eng, port, frame, len, &tail);
    while (head != NULL) {
        struct cdp_item *item = head;
        uint32_t egress_port;
        int64_t n;
        head = item->next;
        if (head == NULL)
            tail = &head;
        n = cdp_engine_egress(eng, item, 0, 0, 0, 0, eng->frame, FRAME_ROOM, &egress_port,
                              &tail);
        if (n < 0)
            continue;
        if (frames >= max_frames || out_size - used < (uint64_t)n) {
            frames = -1;
            break;
        }
        memcpy(out + used, eng->frame, (size_t)n);
        used += (uint64_t)n;
        ports[frames] = egress_port;
        lens[frames] = (uint32_t)n;
        frames++;
    }
    while (head != NULL) {
        struct cdp_item *item = head;
        head = item->next;
        cdp_item_free(item);
    }
    return frames;
}
