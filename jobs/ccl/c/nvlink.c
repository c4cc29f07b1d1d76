/* NVLink between the GPUs of one server: the receiver reads the data straight from the
 * sender's arena (shared memory each maps of the other, as NVLink peers access each other's
 * memory), once, into its op (or into staging when its op is not ready yet); a unix stream
 * per pair of GPUs carries only descriptors and completions.
 *
 * Time is modelled at `nvlink_bps` per GPU and direction: a sender describes its messages in
 * pieces of NVLINK_FRAME bytes no faster than its rate (round robin over its NVLink
 * connections, each piece once the last is out), and a receiver takes a piece of L bytes L at
 * the rate after the later of when it left the sender and when the receiver's previous piece
 * had arrived, so two GPUs sending to one share its rate and nothing arrives early. A send is done when the receiver has all of it
 * (its completion comes back on the stream): only then may the sender's buffer change. Nothing
 * here touches a fabric link. */
#include "engine.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { FRAME_PIECE = 1, FRAME_DONE = 2 };

struct frame {
    uint32_t type, qpn, rkey, sop; /* rkey: the receiver's op; sop: the sender's */
    uint64_t va;                   /* run id << 32 | iteration */
    uint64_t off, len, msg_len;    /* the piece within its message */
    uint64_t src;                  /* where the piece is in the sender's arena */
    double sent;                   /* when the sender put it on the link (CLOCK_MONOTONIC) */
};

void nvlink_write(struct ccl_engine *e, int peer)
{
    struct nvlink_peer *s = &e->nvl[peer];
    size_t done = 0;
    while (done < s->out_len) {
        ssize_t n = write(s->fd, s->out + done, s->out_len - done);
        if (n <= 0) {
            if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                ccl_fail(e, "the NVLink stream to rank %d failed: %s", peer, strerror(errno));
            break;
        }
        done += (size_t)n;
    }
    memmove(s->out, s->out + done, s->out_len - done);
    s->out_len -= done;
}

static void put(struct ccl_engine *e, int peer, const struct frame *f)
{
    struct nvlink_peer *s = &e->nvl[peer];
    if (s->out_len + sizeof *f > s->out_cap) {
        size_t cap = (s->out_len + sizeof *f) * 2;
        uint8_t *grown = realloc(s->out, cap);
        if (!grown) {
            ccl_fail(e, "out of memory for an NVLink frame");
            return;
        }
        s->out = grown, s->out_cap = cap;
    }
    memcpy(s->out + s->out_len, f, sizeof *f);
    s->out_len += sizeof *f;
    nvlink_write(e, peer);
}

void nvlink_post(struct ccl_engine *e, struct conn *c, struct txmsg *m)
{
    (void)e, (void)c;
    m->sent = 0;
    m->npkts = 0;
    m->done = false;
}

void nvlink_received(struct ccl_engine *e, struct conn *c)
{
    struct frame f = {.type = FRAME_DONE, .qpn = c->qpn, .sop = c->cur_sop, .va = c->cur_va};
    put(e, c->peer, &f);
}

void nvlink_pump(struct ccl_engine *e, double now, double *wake)
{
    double rate = e->cfg.nvlink_bps;  /* no bucket: a piece leaves once the last one is out */
    e->nvl_tokens = fmin(0.0, e->nvl_tokens + (now - e->nvl_refill_t) * rate / 8);
    e->nvl_refill_t = now;
    for (;;) {
        struct conn *c = NULL;
        struct txmsg *m = NULL;
        for (uint32_t k = 0; k < e->nconns && !c; k++) {
            struct conn *t = e->conns[(e->nvl_rr + k) % e->nconns];
            if (t->dir != CCL_TX || t->transport != CCL_NVLINK)
                continue;
            for (uint32_t j = 0; j < t->msg_count && !m; j++) {  /* the first not described */
                struct txmsg *x = &t->msgs[(t->msg_head + j) % t->msg_cap];
                if (x->sent < x->len || (x->len == 0 && !x->npkts))
                    m = x;
            }
            if (m) {
                c = t;
                e->nvl_rr = (e->nvl_rr + k + 1) % e->nconns;
            }
        }
        if (!c)
            return;
        if (e->nvl_tokens < 0) {
            *wake = fmin(*wake, now + -e->nvl_tokens * 8 / rate);
            return;
        }
        uint64_t len = m->len - m->sent < NVLINK_FRAME ? m->len - m->sent : NVLINK_FRAME;
        struct frame f = {.type = FRAME_PIECE, .qpn = c->qpn, .rkey = m->rkey, .sop = m->op,
                          .va = m->va, .off = m->sent, .len = len, .msg_len = m->len,
                          .src = m->src + m->sent, .sent = now};
        put(e, c->peer, &f);
        e->nvl_tokens -= (double)len;
        e->totals.nvlink_tx_bytes += len;
        m->sent += len;
        m->npkts++;  /* pieces described */
    }
}

/* The receiver has all of a message: the send is done (in whatever order they finish). */
static void done(struct ccl_engine *e, struct conn *c, const struct frame *f)
{
    for (uint32_t j = 0; j < c->msg_count; j++) {
        struct txmsg *m = &c->msgs[(c->msg_head + j) % c->msg_cap];
        if (m->op == f->sop && m->va == f->va && !m->done) {
            m->done = true;
            ccl_send_done(e, m->op, m->iter);
            break;
        }
    }
    while (c->msg_count && c->msgs[c->msg_head].done) {
        c->msg_head = (c->msg_head + 1) % c->msg_cap;
        c->msg_count--;
    }
    ccl_credits(e, c);  /* a slot is free */
}

/* The frame at the head of a stream's input, if it is whole. */
static const struct frame *head(const struct nvlink_peer *s)
{
    if (s->in_len - s->in_at < sizeof(struct frame))
        return NULL;
    return (const struct frame *)(s->in + s->in_at);
}

bool nvlink_wants_input(const struct ccl_engine *e, int peer)
{
    return head(&e->nvl[peer]) == NULL;  /* a whole frame waits: the stream keeps the rest */
}

void nvlink_read(struct ccl_engine *e, int peer)
{
    struct nvlink_peer *s = &e->nvl[peer];
    if (head(s) || !s->readable)
        return;
    if (s->in_at) {  /* keep the partial frame at the start */
        memmove(s->in, s->in + s->in_at, s->in_len - s->in_at);
        s->in_len -= s->in_at;
        s->in_at = 0;
    }
    if (!s->in) {
        s->in_cap = 64 * sizeof(struct frame);
        s->in = malloc(s->in_cap);
        if (!s->in) {
            ccl_fail(e, "out of memory reading NVLink");
            return;
        }
    }
    size_t room = s->in_cap - s->in_len;
    ssize_t n = read(s->fd, s->in + s->in_len, room);
    if (n == 0)
        ccl_fail(e, "the NVLink stream to rank %d closed", peer);
    else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        ccl_fail(e, "the NVLink stream to rank %d failed: %s", peer, strerror(errno));
    if (n > 0)
        s->in_len += (size_t)n;
    if (n <= 0 || (size_t)n < room)
        s->readable = false;  /* drained: wait for poll */
}

/* A piece: read from the sender's arena where its descriptor says. */
static void piece(struct ccl_engine *e, struct conn *c, const struct frame *f)
{
    struct plan *p = e->active;
    uint32_t run_id = (uint32_t)(f->va >> 32);
    const uint8_t *src = NULL;
    if (p && (e->state == CCL_RUNNING || e->state == CCL_ARMED) && run_id == e->run.run_id &&
        p->peer_arena[c->peer] &&
        f->src <= p->peer_len[c->peer] && f->len <= p->peer_len[c->peer] - f->src)
        src = p->peer_arena[c->peer] + f->src;
    if (!src) {  /* every rank is armed before any starts: a mapping is missing */
        ccl_fail(e, "an NVLink piece from rank %u that this rank cannot read (run %u)",
                 c->peer, run_id);
        return;
    }
    e->totals.nvlink_rx_bytes += f->len;
    if (f->off == 0) {
        ccl_message_begin(e, c, f->va, f->rkey, f->msg_len);
        c->cur_sop = f->sop;
        c->cur_va = f->va;
    }
    ccl_message_data(e, c, src, f->len);
    if (f->off + f->len == f->msg_len)
        ccl_message_end(e, c);
}

void nvlink_deliver(struct ccl_engine *e, double now, double *wake)
{
    uint32_t n = e->cfg.nranks;
    for (bool took = true; took;) {
        took = false;
        for (uint32_t k = 0; k < n; k++) {
            int r = (int)((e->nvl_rx_rr + k) % n);
            struct nvlink_peer *s = &e->nvl[r];
            if (s->fd < 0)
                continue;
            const struct frame *h = head(s);
            if (!h)
                nvlink_read(e, r), h = head(s);
            if (!h)
                continue;
            if (h->type == FRAME_PIECE) {  /* it arrives L at the rate after it left, in turn */
                if (e->nvl_rx_due_peer >= 0 && e->nvl_rx_due_peer != r)
                    continue;  /* another GPU's piece is on this GPU's NVLink */
                if (e->nvl_rx_due_peer < 0) {
                    e->nvl_rx_due = fmax(h->sent, e->nvl_rx_clock) + h->len * 8.0 / e->cfg.nvlink_bps;
                    e->nvl_rx_due_peer = r;
                }
                if (now < e->nvl_rx_due) {
                    *wake = fmin(*wake, e->nvl_rx_due);
                    continue;
                }
            }
            struct frame f = *h;
            s->in_at += sizeof f;
            if (f.type == FRAME_PIECE) {
                e->nvl_rx_clock = e->nvl_rx_due;
                e->nvl_rx_due_peer = -1;
            }
            struct conn *c = ccl_conn_by_qpn(e, f.qpn);
            if (!c || c->transport != CCL_NVLINK) {
                e->totals.bad_frames++;
            } else if (f.type == FRAME_DONE && c->dir == CCL_TX) {
                done(e, c, &f);
            } else if (f.type == FRAME_PIECE && c->dir == CCL_RX) {
                piece(e, c, &f);
            } else {
                e->totals.bad_frames++;
            }
            e->nvl_rx_rr = (uint32_t)(r + 1) % n;
            took = true;
        }
    }
}
