/* The engine of one rank: plans, runs and the thread that serves the NIC and NVLink.
 *
 * A run activates the plan's ops for an iteration: an op whose dependencies are done is ready.
 * A ready send is posted on its connection when every send before it in the connection's
 * order is posted and the receiver has a free slot (credits); it is done when the receiver
 * has all of it. A ready receive takes its message: straight into its buffers as packets
 * arrive, or, if the message came first, from where it waited (staged). A copy runs at once.
 * When every op of the iteration is done the next iteration starts: only the launch is
 * synchronised (`ccl_go`), never a step. The thread keeps answering the network between runs
 * (a NIC acknowledges whatever arrives), so a peer that finished last never waits on it. */
#include "engine.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define TABLE_SIZE 4096
#define IDLE_WAKE_S 0.5
/* While a port sends in batches (fabric.c), arriving frames wait for its next batch (at most
 * about a millisecond): one wake-up serves both, as a NIC's interrupt moderation does under
 * load; otherwise a frame wakes the engine at once, so a small message is never held. */

double ccl_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t ccl_realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void signal_event(struct ccl_engine *e)
{
    uint8_t b = 1;
    if (write(e->event[1], &b, 1) < 0 && errno != EAGAIN) {
        /* Python reads ccl_state() anyway */
    }
}

static void finish(struct ccl_engine *e, int status);

void ccl_fail(struct ccl_engine *e, const char *fmt, ...)
{
    if (e->result.error[0])
        return;  /* the first error says it */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->result.error, sizeof e->result.error, fmt, ap);
    va_end(ap);
    if (e->state == CCL_RUNNING || e->state == CCL_ARMED)
        finish(e, CCL_FAILED);
}

/* ---- connections --------------------------------------------------------------------------- */
struct conn *ccl_conn_by_qpn(struct ccl_engine *e, uint32_t qpn)
{
    for (struct conn *c = e->table[qpn % e->table_size]; c; c = c->hash_next)
        if (c->qpn == qpn)
            return c;
    return NULL;
}

static struct conn *conn_for(struct ccl_engine *e, const struct ccl_conn *d, char *err,
                             size_t errlen)
{
    struct conn *c = ccl_conn_by_qpn(e, d->qpn);
    if (c) {
        if (c->dir != d->dir || c->peer != d->peer || c->transport != d->transport ||
            (d->dir == CCL_TX && (c->port != d->port || c->sport != d->sport))) {
            snprintf(err, errlen, "connection QPN %u is used with two meanings", d->qpn);
            return NULL;
        }
        return c;
    }
    if (d->peer >= e->cfg.nranks || d->peer == e->cfg.rank || d->dir > CCL_RX ||
        d->transport > CCL_NVLINK || (d->transport == CCL_FABRIC && d->port >= e->cfg.nports) ||
        (d->transport == CCL_NVLINK && e->nvl[d->peer].fd < 0)) {
        snprintf(err, errlen, "connection QPN %u: bad peer %u, direction, transport or port "
                 "(%s to it)", d->qpn, d->peer,
                 d->transport == CCL_NVLINK ? "no NVLink stream" : "fabric");
        return NULL;
    }
    c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    *c = (struct conn){.qpn = d->qpn, .peer = d->peer, .dir = d->dir,
                       .transport = d->transport, .port = d->port, .sport = d->sport,
                       .rx_port = d->port, .plan_conn = UINT32_MAX};
    c->msg_cap = e->cfg.credits + 1;
    c->msgs = calloc(c->msg_cap, sizeof *c->msgs);
    if (e->nconns == e->cap_conns) {
        uint32_t cap = e->cap_conns ? 2 * e->cap_conns : 64;
        struct conn **grown = realloc(e->conns, cap * sizeof *grown);
        if (!grown || !c->msgs) {
            free(c->msgs), free(c);
            snprintf(err, errlen, "out of memory");
            return NULL;
        }
        e->conns = grown, e->cap_conns = cap;
    }
    if (c->dir == CCL_TX && c->transport == CCL_FABRIC) {
        struct port *p = &e->ports[c->port];
        if (p->ntx == p->cap_tx) {
            uint32_t cap = p->cap_tx ? 2 * p->cap_tx : 16;
            struct conn **grown = realloc(p->tx, cap * sizeof *grown);
            if (!grown) {
                free(c->msgs), free(c);
                snprintf(err, errlen, "out of memory");
                return NULL;
            }
            p->tx = grown, p->cap_tx = cap;
        }
        p->tx[p->ntx++] = c;
    }
    e->conns[e->nconns++] = c;
    c->hash_next = e->table[c->qpn % e->table_size];
    e->table[c->qpn % e->table_size] = c;
    return c;
}

/* ---- plans --------------------------------------------------------------------------------- */
static void plan_free(struct plan *p)
{
    free(p->conns), free(p->ops), free(p->succ), free(p->fifo), free(p->contrib);
    free(p->expect), free(p->bound), free(p->pending), free(p->state);
    free(p->peer_arena), free(p->peer_len);
    memset(p, 0, sizeof *p);  /* the arena is the caller's */
}

static void *copy(const void *src, size_t n, size_t size, bool *ok)
{
    if (!n)
        return calloc(1, 1);
    void *out = malloc(n * size);
    if (!out || !src)
        *ok = false;
    else
        memcpy(out, src, n * size);
    return out;
}

static bool region_ok(const struct plan *p, uint64_t off, uint64_t len)
{
    return off <= p->desc.arena && len <= p->desc.arena - off;
}

/* Every index in range, every region in the arena, every send in its connection's order. */
static bool plan_check(const struct plan *p, const struct ccl_config *cfg, char *err, size_t n)
{
    const struct ccl_plan *d = &p->desc;
    size_t size = dtype_size(d->dtype);
    if (!size || (d->redop > CCL_AVG && d->redop != CCL_NOP) || d->group == 0) {
        snprintf(err, n, "bad datatype %u, reduction %u or group size %u", d->dtype, d->redop,
                 d->group);
        return false;
    }
    if (!region_ok(p, d->in, d->in_count * size) || !region_ok(p, d->out, d->out_count * size)) {
        snprintf(err, n, "input or output outside the arena");
        return false;
    }
    uint64_t deps = 0;
    for (uint32_t i = 0; i < d->nops; i++) {
        const struct ccl_op *op = &p->ops[i];
        const struct ccl_conn *c = op->conn < d->nconns ? &p->conns[op->conn] : NULL;
        bool ok = op->kind >= CCL_SEND && op->kind <= CCL_COMPUTE &&
                  op->succ_at <= d->nsucc && op->nsucc <= d->nsucc - op->succ_at &&
                  (op->kind == CCL_COMPUTE || op->len % size == 0);
        if (op->kind == CCL_SEND)
            ok = ok && c && c->dir == CCL_TX && region_ok(p, op->src, op->len);
        if (op->kind == CCL_RECV)
            ok = ok && c && c->dir == CCL_RX && region_ok(p, op->dst, op->len) &&
                 (!(op->flags & CCL_REDUCE) || region_ok(p, op->src, op->len));
        if (op->kind == CCL_COPY)
            ok = ok && region_ok(p, op->src, op->len) && region_ok(p, op->dst, op->len);
        if (!ok) {
            snprintf(err, n, "op %u: bad kind, connection, region or successors", i);
            return false;
        }
        deps += op->ndeps;
    }
    uint64_t succs = 0;
    for (uint32_t i = 0; i < d->nops; i++)
        for (uint32_t k = 0; k < p->ops[i].nsucc; k++) {
            if (p->succ[p->ops[i].succ_at + k] >= d->nops) {
                snprintf(err, n, "op %u: a successor out of range", i);
                return false;
            }
            succs++;
        }
    if (succs != deps) {
        snprintf(err, n, "%llu dependencies but %llu successor links",
                 (unsigned long long)deps, (unsigned long long)succs);
        return false;
    }
    for (uint32_t k = 0; k < d->nconns; k++) {
        const struct ccl_conn *c = &p->conns[k];
        if (c->fifo_at > d->nfifo || c->nfifo > d->nfifo - c->fifo_at) {
            snprintf(err, n, "connection %u: its order is out of range", k);
            return false;
        }
        for (uint32_t j = 0; j < c->nfifo; j++) {
            uint32_t op = p->fifo[c->fifo_at + j];
            if (op >= d->nops || p->ops[op].kind != CCL_SEND || p->ops[op].conn != k) {
                snprintf(err, n, "connection %u: its order names op %u, not one of its sends",
                         k, op);
                return false;
            }
        }
    }
    for (uint32_t x = 0; x < d->nexpect; x++) {
        const struct ccl_expect *ex = &p->expect[x];
        bool ok = ex->out <= d->out_count && ex->count <= d->out_count - ex->out &&
                  ex->ncontrib >= 1 && ex->contrib_at <= d->ncontrib &&
                  ex->ncontrib <= d->ncontrib - ex->contrib_at;
        for (uint32_t k = 0; ok && k < ex->ncontrib; k++)
            ok = p->contrib[ex->contrib_at + k] < cfg->nranks;
        if (!ok) {
            snprintf(err, n, "expectation %u out of range", x);
            return false;
        }
    }
    return true;
}

static int load(struct ccl_engine *e, const struct ccl_plan *d, char *err, size_t errlen)
{
    uint32_t id = 0;
    while (id < e->nplans && e->plans[id].loaded)
        id++;
    if (id == e->nplans) {
        struct plan *grown = realloc(e->plans, (e->nplans + 1) * sizeof *grown);
        if (!grown) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        e->plans = grown;  /* loads happen only while idle: no run points into it */
        memset(&e->plans[e->nplans++], 0, sizeof *grown);
    }
    struct plan *p = &e->plans[id];
    bool ok = true;
    p->desc = *d;
    p->conns = copy(d->conns, d->nconns, sizeof *p->conns, &ok);
    p->ops = copy(d->ops, d->nops, sizeof *p->ops, &ok);
    p->succ = copy(d->succ, d->nsucc, sizeof *p->succ, &ok);
    p->fifo = copy(d->fifo, d->nfifo, sizeof *p->fifo, &ok);
    p->expect = copy(d->expect, d->nexpect, sizeof *p->expect, &ok);
    p->contrib = copy(d->contrib, d->ncontrib, sizeof *p->contrib, &ok);
    p->arena = d->arena_at;
    p->bound = calloc(d->nconns + 1, sizeof *p->bound);
    p->pending = calloc(d->nops + 1, sizeof *p->pending);
    p->state = calloc(d->nops + 1, 1);
    p->peer_arena = calloc(e->cfg.nranks, sizeof *p->peer_arena);
    p->peer_len = calloc(e->cfg.nranks, sizeof *p->peer_len);
    if (!ok || !p->bound || !p->pending || !p->state || !p->peer_arena || !p->peer_len) {
        plan_free(p);
        snprintf(err, errlen, "out of memory for a plan");
        return -1;
    }
    if (!p->arena && d->arena) {
        plan_free(p);
        snprintf(err, errlen, "a plan of %llu bytes without its arena",
                 (unsigned long long)d->arena);
        return -1;
    }
    if (!plan_check(p, &e->cfg, err, errlen)) {
        plan_free(p);
        return -1;
    }
    for (uint32_t k = 0; k < d->nconns; k++)
        if (!(p->bound[k] = conn_for(e, &p->conns[k], err, errlen))) {
            plan_free(p);
            return -1;
        }
    p->loaded = true;
    return (int)id;
}

/* ---- ops ----------------------------------------------------------------------------------- */
static void push_ready(struct ccl_engine *e, uint32_t op)
{
    if (e->nready == e->cap_ready) {
        uint32_t cap = e->cap_ready ? 2 * e->cap_ready : 256;
        uint32_t *grown = realloc(e->ready, cap * sizeof *grown);
        if (!grown) {
            ccl_fail(e, "out of memory");
            return;
        }
        e->ready = grown, e->cap_ready = cap;
    }
    e->ready[e->nready++] = op;
}

static void record(struct ccl_engine *e, uint32_t op, int which)
{
    if (e->records && (e->run.flags & CCL_RECORD))
        e->records[((uint64_t)e->iter * e->active->desc.nops + op) * 2 + which] =
            ccl_realtime_ns();
}

static void op_done(struct ccl_engine *e, uint32_t op)
{
    struct plan *p = e->active;
    p->state[op] = OP_DONE;
    record(e, op, 1);
    e->done_ops++;
    const struct ccl_op *o = &p->ops[op];
    for (uint32_t k = 0; k < o->nsucc; k++) {
        uint32_t s = p->succ[o->succ_at + k];
        if (--p->pending[s] == 0)
            push_ready(e, s);
    }
}

/* Post the connection's sends, in its order, while they are ready and its receiver has room. */
static void try_post(struct ccl_engine *e, struct conn *c)
{
    struct plan *p = e->active;
    if (!p || c->plan_conn == UINT32_MAX)
        return;
    const struct ccl_conn *d = &p->conns[c->plan_conn];
    while (c->fifo_pos < d->nfifo) {
        uint32_t op = p->fifo[d->fifo_at + c->fifo_pos];
        if (p->state[op] != OP_READY)
            return;
        bool full = c->msg_count + 1 >= c->msg_cap ||  /* NVLink: at most `credits` undone */
                    (c->transport == CCL_FABRIC && c->posted >= c->remote_used + e->cfg.credits);
        if (full) {
            e->totals.credit_waits++;
            return;
        }
        const struct ccl_op *o = &p->ops[op];
        struct txmsg *m = &c->msgs[(c->msg_head + c->msg_count) % c->msg_cap];
        *m = (struct txmsg){.data = p->arena + o->src, .len = o->len, .src = o->src,
                            .va = (uint64_t)e->run.run_id << 32 | e->iter, .rkey = o->match,
                            .op = op, .iter = e->iter};
        if (c->transport == CCL_FABRIC)
            fabric_post(e, c, m);
        else
            nvlink_post(e, c, m);
        c->msg_count++;
        c->posted++;
        c->fifo_pos++;
        p->state[op] = OP_POSTED;
        record(e, op, 0);
    }
}

void ccl_credits(struct ccl_engine *e, struct conn *c)
{
    try_post(e, c);
}

void ccl_send_done(struct ccl_engine *e, uint32_t op, uint32_t iter)
{
    if (e->state != CCL_RUNNING || !e->active || iter != e->iter || op >= e->active->desc.nops)
        return;  /* a run that ended early */
    op_done(e, op);
}

static void apply(struct ccl_engine *e, const struct ccl_op *o, uint64_t off, const uint8_t *data,
                  uint64_t len)
{
    struct plan *p = e->active;
    uint8_t *dst = p->arena + o->dst + off;
    if (o->flags & CCL_REDUCE)
        data_reduce(p->desc.dtype, p->desc.redop, dst, p->arena + o->src + off, data, len);
    else
        memmove(dst, data, len);
}

static void used(struct ccl_engine *e, struct conn *c)
{
    (void)e;
    c->used++;  /* fabric credits ride on the next ACK (fabric_acks) */
}

static void received(struct ccl_engine *e, struct conn *c, uint32_t op)
{
    const struct ccl_op *o = &e->active->ops[op];
    if (o->flags & CCL_POSTOP)
        data_postop(e->active->desc.dtype, e->active->desc.redop, e->active->arena + o->dst,
                    o->len, e->active->desc.group);
    used(e, c);
    op_done(e, op);
}

/* Whether `op` of the running iteration may take a message of `len` bytes from `c` now. */
static bool takes(struct ccl_engine *e, struct conn *c, uint32_t run_id, uint32_t iter,
                  uint32_t op, uint64_t len)
{
    struct plan *p = e->active;
    return e->state == CCL_RUNNING && p && run_id == e->run.run_id && iter == e->iter &&
           op < p->desc.nops && p->state[op] == OP_READY && p->ops[op].kind == CCL_RECV &&
           p->bound[p->ops[op].conn] == c && p->ops[op].len == len;
}

static void take_staged(struct ccl_engine *e, struct conn *c, struct staged *s)
{
    struct staged **at = &c->staged;
    while (*at && *at != s)
        at = &(*at)->next;
    if (*at)
        *at = s->next;
    uint32_t op = s->op;
    e->active->state[op] = OP_POSTED;
    apply(e, &e->active->ops[op], 0, s->data, s->len);
    free(s);
    received(e, c, op);
}

static void ready(struct ccl_engine *e, uint32_t op)
{
    struct plan *p = e->active;
    const struct ccl_op *o = &p->ops[op];
    p->state[op] = OP_READY;
    if (o->kind == CCL_SEND) {
        try_post(e, p->bound[o->conn]);
    } else if (o->kind == CCL_COPY) {
        record(e, op, 0);
        memmove(p->arena + o->dst, p->arena + o->src, o->len);
        op_done(e, op);
    } else if (o->kind == CCL_COMPUTE) {
        record(e, op, 0);
        if (o->len == 0) {  /* a marker: what it waits for is done */
            op_done(e, op);
            return;
        }
        if (e->nbusy == e->cap_busy) {
            uint32_t cap = e->cap_busy ? 2 * e->cap_busy : 16;
            struct busy *grown = realloc(e->busy, cap * sizeof *grown);
            if (!grown) {
                ccl_fail(e, "out of memory");
                return;
            }
            e->busy = grown, e->cap_busy = cap;
        }
        e->busy[e->nbusy++] = (struct busy){ccl_now() + (double)o->len * 1e-9, op};
    } else {
        record(e, op, 0);
        struct conn *c = p->bound[o->conn];
        for (struct staged *s = c->staged; s; s = s->next)
            if (s->run_id == e->run.run_id && s->iter == e->iter && s->op == op) {
                if (s->got == s->len && takes(e, c, s->run_id, s->iter, op, s->len))
                    take_staged(e, c, s);
                return;  /* still arriving: taken at its end */
            }
    }
}

/* ---- messages arriving --------------------------------------------------------------------- */
void ccl_message_begin(struct ccl_engine *e, struct conn *c, uint64_t va, uint32_t rkey,
                       uint64_t len)
{
    uint32_t run_id = (uint32_t)(va >> 32), iter = (uint32_t)va;
    c->cur_got = 0;
    c->cur_len = len;
    if (e->state == CCL_RUNNING && run_id == e->run.run_id && rkey < e->active->desc.nops &&
        e->active->ops[rkey].len != len)
        ccl_fail(e, "rank %u sent %llu bytes for op %u, which takes %llu", c->peer,
                 (unsigned long long)len, rkey, (unsigned long long)e->active->ops[rkey].len);
    if (takes(e, c, run_id, iter, rkey, len)) {
        c->direct = true;
        c->cur_op = rkey;
        c->cur_iter = iter;
        e->active->state[rkey] = OP_POSTED;
        return;
    }
    c->direct = false;
    struct staged *s = malloc(sizeof *s + len);
    if (!s) {
        ccl_fail(e, "out of memory staging a message of %llu bytes", (unsigned long long)len);
        c->cur_staged = NULL;
        return;
    }
    *s = (struct staged){.run_id = run_id, .iter = iter, .op = rkey, .len = len};
    struct staged **tail = &c->staged;
    while (*tail)
        tail = &(*tail)->next;
    *tail = s;
    c->cur_staged = s;
    e->totals.staged++;
}

void ccl_message_data(struct ccl_engine *e, struct conn *c, const uint8_t *data, uint64_t len)
{
    if (len > c->cur_len - c->cur_got) {
        ccl_fail(e, "a message from rank %u is longer than it said (%llu bytes)", c->peer,
                 (unsigned long long)c->cur_len);
        len = c->cur_len - c->cur_got;
    }
    if (c->direct && e->state == CCL_RUNNING)
        apply(e, &e->active->ops[c->cur_op], c->cur_got, data, len);
    else if (!c->direct && c->cur_staged)
        memcpy(c->cur_staged->data + c->cur_got, data, len);
    c->cur_got += len;
    if (!c->direct && c->cur_staged)
        c->cur_staged->got = c->cur_got;
}

void ccl_message_end(struct ccl_engine *e, struct conn *c)
{
    if (c->cur_got != c->cur_len)
        ccl_fail(e, "a message from rank %u ended after %llu of its %llu bytes", c->peer,
                 (unsigned long long)c->cur_got, (unsigned long long)c->cur_len);
    if (c->transport == CCL_NVLINK)
        nvlink_received(e, c);  /* it is read (into its op or staging): the send is done */
    if (c->direct) {
        c->direct = false;
        if (e->state == CCL_RUNNING && c->cur_iter == e->iter)
            received(e, c, c->cur_op);
        return;
    }
    struct staged *s = c->cur_staged;
    c->cur_staged = NULL;
    if (s && e->state == CCL_RUNNING && s->run_id == e->run.run_id && s->iter == e->iter &&
        s->op < e->active->desc.nops && e->active->state[s->op] == OP_READY &&
        takes(e, c, s->run_id, s->iter, s->op, s->len))
        take_staged(e, c, s);
}

/* ---- runs ---------------------------------------------------------------------------------- */
static void activate(struct ccl_engine *e)
{
    struct plan *p = e->active;
    e->done_ops = 0;
    for (uint32_t k = 0; k < p->desc.nconns; k++) {
        p->bound[k]->plan_conn = k;
        p->bound[k]->fifo_pos = 0;
    }
    for (uint32_t i = 0; i < p->desc.nops; i++) {
        p->pending[i] = p->ops[i].ndeps;
        p->state[i] = OP_WAITING;
    }
    for (uint32_t i = 0; i < p->desc.nops; i++)
        if (p->ops[i].ndeps == 0)
            push_ready(e, i);
}

static void stats_delta(struct ccl_stats *out, const struct ccl_stats *now,
                        const struct ccl_stats *then)
{
    const uint64_t *a = (const uint64_t *)now, *b = (const uint64_t *)then;
    uint64_t *o = (uint64_t *)out;
    for (size_t i = 0; i < sizeof *out / sizeof(uint64_t); i++)
        o[i] = a[i] - b[i];
}

static void finish(struct ccl_engine *e, int status)
{
    struct plan *p = e->active;
    e->result.status = status;
    e->result.iterations = e->iter;
    e->result.start_ns = e->start_ns;
    e->result.end_ns = ccl_realtime_ns();
    e->result.pending = p && status != CCL_DONE ? p->desc.nops - e->done_ops : 0;
    if (status == CCL_DONE && p && (e->run.flags & CCL_CHECK))
        e->result.wrong = data_check(p, e->run.seed);
    stats_delta(&e->result.stats, &e->totals, &e->at_start);
    if (p)
        for (uint32_t k = 0; k < p->desc.nconns; k++)
            p->bound[k]->plan_conn = UINT32_MAX;
    e->state = CCL_FINISHED;
    e->go = false;
    e->started = false;
    e->nready = 0;
    e->nbusy = 0;
    signal_event(e);
}

/* Compute ops whose time is up are done; `wake` is brought to the next one's end. */
static void compute_timers(struct ccl_engine *e, double now, double *wake)
{
    for (uint32_t k = 0; k < e->nbusy && e->state == CCL_RUNNING;) {
        if (e->busy[k].due <= now) {
            uint32_t op = e->busy[k].op;
            e->busy[k] = e->busy[--e->nbusy];
            op_done(e, op);
        } else {
            *wake = fmin(*wake, e->busy[k].due);
            k++;
        }
    }
}

/* Handle ready ops until none are left; start the next iteration when one ends. */
static void advance(struct ccl_engine *e)
{
    while (e->state == CCL_RUNNING) {
        while (e->nready && e->state == CCL_RUNNING)
            ready(e, e->ready[--e->nready]);
        if (e->state != CCL_RUNNING || e->done_ops < e->active->desc.nops)
            return;
        if (e->iter_end)
            e->iter_end[e->iter] = ccl_realtime_ns();
        if (++e->iter == e->run.iterations) {
            finish(e, CCL_DONE);
            return;
        }
        activate(e);
    }
}

/* Messages of earlier runs nobody will use (a run that ended early): dropped, their slots
 * given back to their senders. */
static void drop_stale(struct ccl_engine *e)
{
    for (uint32_t i = 0; i < e->nconns; i++) {
        struct conn *c = e->conns[i];
        for (struct staged **at = &c->staged; *at;) {
            struct staged *s = *at;
            if ((int32_t)(s->run_id - e->run.run_id) < 0 && s->got == s->len &&
                s != c->cur_staged) {
                *at = s->next;
                free(s);
                used(e, c);
            } else {
                at = &s->next;
            }
        }
    }
}

static void start_run(struct ccl_engine *e)
{
    drop_stale(e);
    e->started = true;
    e->state = CCL_RUNNING;
    e->iter = 0;
    e->deadline = ccl_now() + e->run.timeout_s;
    e->at_start = e->totals;
    if (e->run.iterations == 0 || e->active->desc.nops == 0) {
        e->iter = e->run.iterations;
        for (uint32_t i = 0; e->iter_end && i < e->run.iterations; i++)
            e->iter_end[i] = ccl_realtime_ns();
        finish(e, CCL_DONE);
        return;
    }
    activate(e);
    advance(e);
}

/* ---- the thread ---------------------------------------------------------------------------- */
static void serve(struct ccl_engine *e, const struct pollfd *fds, int nfds)
{
    int at = 2;
    for (uint32_t k = 0; k < e->cfg.nports; k++, at++)
        if (fds[at].revents)
            fabric_receive(e, &e->ports[k]);
    for (uint32_t r = 0; r < e->cfg.nranks && at < nfds; r++) {
        if (e->nvl[r].fd < 0)
            continue;
        if (fds[at].revents & (POLLIN | POLLHUP | POLLERR)) {
            e->nvl[r].readable = true;
            nvlink_read(e, (int)r);
        }
        if (fds[at].revents & POLLOUT)
            nvlink_write(e, (int)r);
        at++;
    }
}

static void *thread_main(void *arg)
{
    struct ccl_engine *e = arg;
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);  /* wake within 1 us of a pacing deadline */
    struct pollfd *fds = calloc(2 + e->cfg.nports + e->cfg.nranks, sizeof *fds);
    if (!fds)
        return NULL;
    while (!e->quit) {
        double now = ccl_now(), wake = now + IDLE_WAKE_S;
        pthread_mutex_lock(&e->lock);
        if (e->state == CCL_ARMED && e->go && !e->started) {
            uint64_t t = ccl_realtime_ns();
            if (t >= e->go_ns)
                start_run(e);
            else
                wake = fmin(wake, now + (double)(e->go_ns - t) * 1e-9);
        }
        nvlink_deliver(e, now, &wake);
        compute_timers(e, now, &wake);
        advance(e);
        fabric_timers(e, now, &wake);
        for (uint32_t k = 0; k < e->cfg.nports; k++)
            fabric_pump(e, &e->ports[k], now, &wake);
        nvlink_pump(e, now, &wake);
        advance(e);
        fabric_acks(e);
        if (e->state == CCL_RUNNING && now > e->deadline)
            finish(e, CCL_TIMEOUT);
        if (e->state == CCL_RUNNING)
            wake = fmin(wake, e->deadline);
        for (uint32_t k = 0; k < e->nbusy; k++)  /* compute ops the advances above started */
            wake = fmin(wake, e->busy[k].due);
        bool throttled = false;  /* as the pumps left the ports */
        for (uint32_t k = 0; k < e->cfg.nports; k++)
            throttled |= e->ports[k].waiting;
        int nfds = 0;
        fds[nfds++] = (struct pollfd){.fd = e->wake[0], .events = POLLIN};
        fds[nfds++] = (struct pollfd){.fd = e->cfg.stop_fd, .events = POLLIN};
        for (uint32_t k = 0; k < e->cfg.nports; k++)  /* throttled: read at the next batch */
            fds[nfds++] = (struct pollfd){.fd = throttled ? -1 : e->ports[k].cfg.fd,
                                          .events = POLLIN};
        for (uint32_t r = 0; r < e->cfg.nranks; r++)
            if (e->nvl[r].fd >= 0)
                fds[nfds++] = (struct pollfd){
                    .fd = e->nvl[r].fd,
                    .events = (short)((nvlink_wants_input(e, (int)r) ? POLLIN : 0) |
                                      (e->nvl[r].out_len ? POLLOUT : 0))};
        pthread_mutex_unlock(&e->lock);
        double left = fmax(0.0, wake - ccl_now());
        struct timespec ts = {(time_t)left, (long)((left - floor(left)) * 1e9)};
        int n = ppoll(fds, (nfds_t)nfds, &ts, NULL);
        if (n < 0 && errno != EINTR)
            break;
        e->totals.wakeups++;
        if (fds[0].revents) {
            uint8_t buf[64];
            while (read(e->wake[0], buf, sizeof buf) > 0) {
            }
        }
        if (fds[1].revents)
            e->quit = true;
        if (throttled)  /* a batch is due: read what arrived meanwhile */
            for (uint32_t k = 0; k < e->cfg.nports; k++)
                fds[2 + k].revents = POLLIN;
        pthread_mutex_lock(&e->lock);
        serve(e, fds, nfds);
        advance(e);
        pthread_mutex_unlock(&e->lock);
    }
    pthread_mutex_lock(&e->lock);
    if (e->state == CCL_RUNNING || e->state == CCL_ARMED)
        finish(e, CCL_STOPPED);
    pthread_mutex_unlock(&e->lock);
    free(fds);
    return NULL;
}

/* ---- the API ------------------------------------------------------------------------------- */
int ccl_abi(void) { return CCL_ABI; }

double ccl_send_allowance(int32_t transport, double rate_bps, uint32_t mtu)
{
    if (transport == CCL_NVLINK)
        return NVLINK_FRAME; /* a sender's first piece; a receiver takes none early */
    return fabric_bucket(rate_bps, mtu) + mtu + FRAME_SLACK;
}

static bool nonblocking(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

struct ccl_engine *ccl_new(const struct ccl_config *cfg, const struct ccl_peer *peers,
                           char *err, size_t errlen)
{
    if (cfg->nranks == 0 || cfg->rank >= cfg->nranks || cfg->nports == 0 ||
        cfg->nports > CCL_MAX_PORTS || cfg->mtu == 0 || cfg->mtu + 128 > MAX_FRAME ||
        cfg->credits == 0 || cfg->ack_every == 0 || !(cfg->rto_s > 0) ||
        !(cfg->nvlink_bps > 0) || cfg->prio > 7) {
        snprintf(err, errlen, "bad engine configuration (ranks, ports, MTU, credits, timers)");
        return NULL;
    }
    for (uint32_t k = 0; k < cfg->nports; k++)
        if (!(cfg->ports[k].rate_bps > 0) || cfg->ports[k].fd < 0 || cfg->ports[k].tx_fd < 0) {
            snprintf(err, errlen, "port %u: no socket or no rate", k);
            return NULL;
        }
    struct ccl_engine *e = calloc(1, sizeof *e);
    if (!e) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    e->cfg = *cfg;
    e->peers = malloc(cfg->nranks * sizeof *e->peers);
    e->nvl = calloc(cfg->nranks, sizeof *e->nvl);
    e->table_size = TABLE_SIZE;
    e->table = calloc(TABLE_SIZE, sizeof *e->table);
    if (!e->peers || !e->nvl || !e->table || pipe(e->wake) || pipe(e->event)) {
        snprintf(err, errlen, "out of memory or descriptors");
        free(e->peers), free(e->nvl), free(e->table), free(e);
        return NULL;
    }
    memcpy(e->peers, peers, cfg->nranks * sizeof *e->peers);
    nonblocking(e->wake[0]), nonblocking(e->wake[1]), nonblocking(e->event[0]);
    nonblocking(e->event[1]);
    double now = ccl_now();
    for (uint32_t k = 0; k < cfg->nports; k++) {
        struct port *p = &e->ports[k];
        p->cfg = cfg->ports[k];
        p->refill_t = now;
        p->tokens = 0;
    }
    for (uint32_t r = 0; r < cfg->nranks; r++) {
        e->nvl[r].fd = peers[r].nvlink_fd;
        if (e->nvl[r].fd >= 0)
            nonblocking(e->nvl[r].fd);
    }
    e->nvl_refill_t = now;
    e->nvl_rx_due_peer = -1;
    pthread_mutex_init(&e->lock, NULL);
    return e;
}

int ccl_start(struct ccl_engine *e)
{
    if (e->thread_started)
        return 0;
    if (pthread_create(&e->thread, NULL, thread_main, e))
        return -1;
    e->thread_started = true;
    return 0;
}

static void wake(struct ccl_engine *e)
{
    uint8_t b = 1;
    if (write(e->wake[1], &b, 1) < 0 && errno != EAGAIN) {
        /* the thread wakes at its next deadline anyway */
    }
}

int ccl_load(struct ccl_engine *e, const struct ccl_plan *plan, char *err, size_t errlen)
{
    pthread_mutex_lock(&e->lock);
    int id = e->state == CCL_IDLE ? load(e, plan, err, errlen) : -1;
    if (id < 0 && e->state != CCL_IDLE)
        snprintf(err, errlen, "a run is in progress");
    pthread_mutex_unlock(&e->lock);
    return id;
}

int ccl_unload(struct ccl_engine *e, uint32_t plan)
{
    pthread_mutex_lock(&e->lock);
    int rc = -1;
    if (plan < e->nplans && e->plans[plan].loaded && e->state == CCL_IDLE) {
        plan_free(&e->plans[plan]);
        rc = 0;
    }
    pthread_mutex_unlock(&e->lock);
    return rc;
}

int ccl_arm(struct ccl_engine *e, const struct ccl_run *run, uint64_t *iter_end,
            uint64_t *records)
{
    pthread_mutex_lock(&e->lock);
    int rc = -1;
    if (e->state == CCL_IDLE && run->plan < e->nplans && e->plans[run->plan].loaded &&
        run->timeout_s > 0) {
        e->run = *run;
        e->active = &e->plans[run->plan];
        e->iter_end = iter_end;
        e->records = records;
        memset(&e->result, 0, sizeof e->result);
        if (run->flags & CCL_INIT)
            data_fill(e->active, e->cfg.rank, run->seed);
        e->state = CCL_ARMED;
        e->go = false;
        e->started = false;
        rc = 0;
        signal_event(e);
    }
    pthread_mutex_unlock(&e->lock);
    return rc;
}

int ccl_go(struct ccl_engine *e, uint64_t start_ns)
{
    pthread_mutex_lock(&e->lock);
    int rc = -1;
    if (e->state == CCL_ARMED && !e->go) {
        e->go_ns = start_ns;
        e->start_ns = start_ns;
        e->go = true;
        rc = 0;
    }
    pthread_mutex_unlock(&e->lock);
    wake(e);
    return rc;
}

int ccl_event_fd(struct ccl_engine *e) { return e->event[0]; }

int ccl_state(struct ccl_engine *e)
{
    pthread_mutex_lock(&e->lock);
    int s = e->state;
    pthread_mutex_unlock(&e->lock);
    return s;
}

int ccl_result(struct ccl_engine *e, struct ccl_result *out)
{
    pthread_mutex_lock(&e->lock);
    int rc = -1;
    if (e->state == CCL_FINISHED) {
        *out = e->result;
        e->state = CCL_IDLE;
        e->active = NULL;
        e->iter_end = e->records = NULL;
        rc = 0;
    }
    pthread_mutex_unlock(&e->lock);
    return rc;
}

int ccl_attach(struct ccl_engine *e, uint32_t plan, uint32_t peer, const uint8_t *arena,
               uint64_t len)
{
    pthread_mutex_lock(&e->lock);
    int rc = -1;
    if (plan < e->nplans && e->plans[plan].loaded && peer < e->cfg.nranks &&
        e->state == CCL_IDLE) {
        e->plans[plan].peer_arena[peer] = arena;
        e->plans[plan].peer_len[peer] = len;
        rc = 0;
    }
    pthread_mutex_unlock(&e->lock);
    return rc;
}

void ccl_totals(struct ccl_engine *e, struct ccl_stats *out)
{
    pthread_mutex_lock(&e->lock);
    *out = e->totals;
    pthread_mutex_unlock(&e->lock);
}

void ccl_free(struct ccl_engine *e)
{
    if (!e)
        return;
    if (e->thread_started) {
        e->quit = true;
        wake(e);
        pthread_join(e->thread, NULL);
    }
    for (uint32_t i = 0; i < e->nplans; i++)
        if (e->plans[i].loaded)
            plan_free(&e->plans[i]);
    for (uint32_t i = 0; i < e->nconns; i++) {
        struct conn *c = e->conns[i];
        while (c->staged) {
            struct staged *s = c->staged;
            c->staged = s->next;
            free(s);
        }
        free(c->msgs), free(c);
    }
    for (uint32_t k = 0; k < CCL_MAX_PORTS; k++)
        free(e->ports[k].tx);
    for (uint32_t r = 0; r < e->cfg.nranks; r++)
        free(e->nvl[r].out), free(e->nvl[r].in);
    free(e->plans), free(e->conns), free(e->table), free(e->peers), free(e->nvl), free(e->ready), free(e->busy);
    close(e->wake[0]), close(e->wake[1]), close(e->event[0]), close(e->event[1]);
    pthread_mutex_destroy(&e->lock);
    free(e);
}

/* ---- layouts, for the Python mirrors ------------------------------------------------------- */
#define F(s, f) offsetof(struct s, f)
#define LAYOUT(s, ...) sizeof(struct s), __VA_ARGS__, UINT64_MAX

size_t ccl_layout(uint64_t *out, size_t cap)
{
    const uint64_t all[] = {
        LAYOUT(ccl_port, F(ccl_port, fd), F(ccl_port, tx_fd), F(ccl_port, rate_bps),
               F(ccl_port, mac)),
        LAYOUT(ccl_peer, F(ccl_peer, ip), F(ccl_peer, nvlink_fd), F(ccl_peer, mac)),
        LAYOUT(ccl_config, F(ccl_config, rank), F(ccl_config, nranks), F(ccl_config, nports),
               F(ccl_config, mtu), F(ccl_config, ip), F(ccl_config, credits),
               F(ccl_config, ack_every), F(ccl_config, max_retries), F(ccl_config, rto_s),
               F(ccl_config, nvlink_bps), F(ccl_config, dscp), F(ccl_config, prio),
               F(ccl_config, stop_fd), F(ccl_config, ports)),
        LAYOUT(ccl_conn, F(ccl_conn, qpn), F(ccl_conn, peer), F(ccl_conn, dir),
               F(ccl_conn, transport), F(ccl_conn, port), F(ccl_conn, sport),
               F(ccl_conn, fifo_at), F(ccl_conn, nfifo)),
        LAYOUT(ccl_op, F(ccl_op, kind), F(ccl_op, flags), F(ccl_op, conn), F(ccl_op, step),
               F(ccl_op, src), F(ccl_op, dst), F(ccl_op, len), F(ccl_op, match),
               F(ccl_op, ndeps), F(ccl_op, succ_at), F(ccl_op, nsucc)),
        LAYOUT(ccl_expect, F(ccl_expect, out), F(ccl_expect, count), F(ccl_expect, src),
               F(ccl_expect, contrib_at), F(ccl_expect, ncontrib), F(ccl_expect, reduce)),
        LAYOUT(ccl_plan, F(ccl_plan, nops), F(ccl_plan, nconns), F(ccl_plan, nsucc),
               F(ccl_plan, nfifo), F(ccl_plan, nexpect), F(ccl_plan, ncontrib),
               F(ccl_plan, dtype), F(ccl_plan, redop), F(ccl_plan, group),
               F(ccl_plan, arena_at), F(ccl_plan, arena),
               F(ccl_plan, in), F(ccl_plan, in_count), F(ccl_plan, out), F(ccl_plan, out_count),
               F(ccl_plan, conns), F(ccl_plan, ops), F(ccl_plan, succ), F(ccl_plan, fifo),
               F(ccl_plan, expect), F(ccl_plan, contrib)),
        LAYOUT(ccl_run, F(ccl_run, plan), F(ccl_run, iterations), F(ccl_run, run_id),
               F(ccl_run, flags), F(ccl_run, seed), F(ccl_run, timeout_s)),
        LAYOUT(ccl_stats, F(ccl_stats, tx_packets), F(ccl_stats, port_tx_bytes),
               F(ccl_stats, port_rx_bytes)),
        LAYOUT(ccl_result, F(ccl_result, status), F(ccl_result, iterations),
               F(ccl_result, start_ns), F(ccl_result, end_ns), F(ccl_result, wrong),
               F(ccl_result, pending), F(ccl_result, stats), F(ccl_result, error)),
    };
    size_t n = sizeof all / sizeof all[0];
    if (out)
        memcpy(out, all, (n < cap ? n : cap) * sizeof *out);
    return n;
}
