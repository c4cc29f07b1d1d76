/* The NIC's ports and the go-back-N connections over them (traffic/gbn.py's state machines,
 * here per connection: one direction of one channel to one peer).
 *
 * Sender: a posted message takes the next PSNs; the port sends its connections' packets round
 * robin at most at its link rate (a token bucket: the NIC's wire; the link's own shaper is the
 * authority, a refused send waits a frame's time). It asks for an ACK on every message's last
 * packet and every `ack_every` packets, goes back to the PSN a NAK names, and to the oldest
 * unacknowledged one when no ACK progress came for the retransmission timeout (doubled per
 * expiry; after `max_retries` the connection fails). A message is done when all of it is
 * acknowledged. Each ACK also says how many messages the receiver has used (AETH's MSN field,
 * as IB ACKs carry end-to-end credits): a sender posts a message only while fewer than
 * `credits` of its messages wait unused there.
 *
 * Receiver: the expected PSN is accepted and delivered; a duplicate is answered with an ACK; a
 * packet ahead of it is dropped and answered with one NAK per expected PSN (a NIC without
 * reordering: ECMP keeps a connection's packets in order). ACKs are coalesced per batch of
 * frames read. A PFC pause naming the data priority stops the port's data for its time. */
#include "engine.h"

#include <errno.h>
#include <math.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#define OP_FIRST 0x06
#define OP_MIDDLE 0x07
#define OP_LAST 0x08
#define OP_ONLY 0x0a
#define OP_ACK 0x11
#define SYNDROME_NAK 0x60
/* A port sends at most its rate, in batches of BATCH_S of its rate (one frame, if that is more):
 * it sends a batch back to back on what it will earn meanwhile (the link's own shaper spreads
 * the frames), then waits until the batch is paid for. A wake-up per frame would cost the
 * machine more than the frame at 100 Mb/s and up. Tokens never exceed one frame, as a NIC's
 * wire saves nothing up while it idles: a port is never ahead of its rate by more than a batch
 * and a frame (ccl_send_allowance), and never behind it while it has something to send. */
#define BATCH_S 0.001

/* The unwrapped value nearest `near` whose low 24 bits are `psn` (-1: one before 0). */
static int64_t unwrap(uint32_t psn, uint64_t near)
{
    int64_t delta = (int64_t)(((uint64_t)psn - near + 0x800000) & 0xffffff) - 0x800000;
    return (int64_t)near + delta;
}

double fabric_bucket(double rate_bps, uint32_t mtu)
{
    double b = rate_bps / 8 * BATCH_S, frame = mtu + (double)FRAME_SLACK;
    return b > frame ? b : frame;
}

/* A virtio_net_hdr whose hdr_len covers the whole frame: the kernel then builds it as one
 * linear buffer, which the port (scatter-gather off) need not copy again to send it. */
struct vnet_header {
    uint8_t flags, gso_type;
    uint16_t hdr_len, gso_size, csum_start, csum_offset;
};

static bool send_frame(struct ccl_engine *e, struct port *p, const uint8_t *f, uint32_t len,
                       double now)
{
    struct vnet_header vh = {.hdr_len = (uint16_t)len};
    struct iovec iov[2] = {{&vh, sizeof vh}, {(void *)f, len}};
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};
    if (sendmsg(p->cfg.tx_fd, &msg, MSG_DONTWAIT) < 0) {
        if (errno == ENOBUFS || errno == EAGAIN || errno == EWOULDBLOCK) {
            e->totals.tx_busy++;
            p->blocked_until = now + len * 8.0 / p->cfg.rate_bps;
            return false;
        }
        /* the link is down (carrier lost): the frame is lost, go-back-N sends it again */
    }
    p->tokens -= len;
    e->totals.port_tx_bytes[p - e->ports] += len;
    return true;
}

/* ---- sender -------------------------------------------------------------------------------- */
void fabric_post(struct ccl_engine *e, struct conn *c, struct txmsg *m)
{
    uint32_t mtu = e->cfg.mtu;
    m->npkts = m->len ? (uint32_t)((m->len + mtu - 1) / mtu) : 1;
    m->first_psn = c->posted_end;
    c->posted_end += m->npkts;
}

static struct txmsg *message_of(struct conn *c, uint64_t psn)
{
    for (uint32_t k = 0; k < c->msg_count; k++) {
        struct txmsg *m = &c->msgs[(c->msg_head + k) % c->msg_cap];
        if (psn >= m->first_psn && psn < m->first_psn + m->npkts)
            return m;
    }
    return NULL;
}

/* Messages wholly acknowledged are done. */
static void pop_acked(struct ccl_engine *e, struct conn *c)
{
    while (c->msg_count) {
        struct txmsg m = c->msgs[c->msg_head];
        if (m.first_psn + m.npkts > c->una)
            break;
        c->msg_head = (c->msg_head + 1) % c->msg_cap;
        c->msg_count--;
        ccl_send_done(e, m.op, m.iter);
    }
}

static bool send_next(struct ccl_engine *e, struct port *p, struct conn *c, double now)
{
    struct txmsg *m = message_of(c, c->next);
    if (!m) {  /* cannot happen: next < posted_end lies in a posted message */
        ccl_fail(e, "connection %u: PSN %llu is in no posted message", c->qpn,
                 (unsigned long long)c->next);
        c->failed = true;
        return false;
    }
    uint32_t k = (uint32_t)(c->next - m->first_psn), mtu = e->cfg.mtu;
    uint64_t off = (uint64_t)k * mtu;
    uint32_t len = m->len - off < mtu ? (uint32_t)(m->len - off) : mtu;
    uint8_t op = m->npkts == 1 ? OP_ONLY : k == 0 ? OP_FIRST : k + 1 == m->npkts ? OP_LAST
                                                                                 : OP_MIDDLE;
    bool last = k + 1 == m->npkts;
    bool ackreq = last || (c->next + 1) % e->cfg.ack_every == 0;
    uint32_t n = wire_data(e->txbuf, e, c, op, (uint32_t)c->next, ackreq, m, m->data + off, len);
    if (!send_frame(e, p, e->txbuf, n, now))
        return false;
    if (c->una >= c->sent_max)
        c->progress_t = now;  /* the timer starts with the first outstanding packet */
    if (c->next < c->sent_max)
        e->totals.retransmits++;
    else
        c->sent_max = c->next + 1;
    c->next++;
    e->totals.tx_packets++;
    e->totals.tx_bytes += n;
    return true;
}

void fabric_pump(struct ccl_engine *e, struct port *p, double now, double *wake)
{
    if (now < p->paused_until || now < p->blocked_until) {
        double until = fmax(p->paused_until, p->blocked_until);
        for (uint32_t k = 0; k < p->ntx; k++)
            if (p->tx[k]->next < p->tx[k]->posted_end) {
                *wake = fmin(*wake, until);
                break;
            }
        return;
    }
    double frame = e->cfg.mtu + (double)FRAME_SLACK;
    double batch = fabric_bucket(p->cfg.rate_bps, e->cfg.mtu);
    p->tokens = fmin(frame, p->tokens + (now - p->refill_t) * p->cfg.rate_bps / 8);
    p->refill_t = now;
    if (p->waiting && p->tokens < 0) {
        bool pending = false;
        for (uint32_t k = 0; k < p->ntx && !pending; k++)
            pending = p->tx[k]->next < p->tx[k]->posted_end && !p->tx[k]->failed;
        if (pending) {  /* the last batch is not paid for yet */
            *wake = fmin(*wake, now - p->tokens * 8 / p->cfg.rate_bps);
            return;
        }
    }
    p->waiting = false;
    for (;;) {
        struct conn *c = NULL;
        for (uint32_t k = 0; k < p->ntx && !c; k++) {
            struct conn *t = p->tx[(p->rr + k) % p->ntx];
            if (t->next < t->posted_end && !t->failed) {
                c = t;
                p->rr = (p->rr + k + 1) % p->ntx;
            }
        }
        if (!c)
            return;
        if (p->tokens < frame - batch) {  /* a batch ahead: wait until it is paid for */
            p->waiting = true;
            *wake = fmin(*wake, now - p->tokens * 8 / p->cfg.rate_bps);
            return;
        }
        if (!send_next(e, p, c, now)) {
            *wake = fmin(*wake, p->blocked_until);
            return;
        }
    }
}

void fabric_timers(struct ccl_engine *e, double now, double *wake)
{
    for (uint32_t i = 0; i < e->nconns; i++) {
        struct conn *c = e->conns[i];
        if (c->dir != CCL_TX || c->transport != CCL_FABRIC || c->failed || c->una >= c->sent_max)
            continue;
        double due = c->progress_t + e->cfg.rto_s * (double)(1u << (c->retries < 16 ? c->retries : 16));
        if (now < due) {
            *wake = fmin(*wake, due);
            continue;
        }
        e->totals.timeouts++;
        if (++c->retries > e->cfg.max_retries) {
            c->failed = true;
            ccl_fail(e, "the connection to rank %u (QPN %u) gave up after %u timeouts in a row",
                     c->peer, c->qpn, e->cfg.max_retries);
            continue;
        }
        c->progress_t = now;
        c->next = c->una;
    }
}

static void on_ack(struct ccl_engine *e, struct conn *c, const struct roce *r, double now)
{
    int64_t psn = unwrap(r->psn, c->una);
    e->totals.acks_received++;
    if ((r->syndrome & 0xe0) == SYNDROME_NAK) {
        e->totals.naks_received++;
        if (psn >= (int64_t)c->una && psn <= (int64_t)c->sent_max) {
            if (psn > (int64_t)c->una) {  /* everything before the PSN it names has arrived */
                c->una = (uint64_t)psn;
                c->retries = 0;
            }
            c->progress_t = now;
            c->next = (uint64_t)psn;  /* back to it, or on to it after a timeout went back */
        }
    } else if (r->syndrome == 0) {
        int64_t acked = psn + 1;
        if (acked > (int64_t)c->una && acked <= (int64_t)c->sent_max) {
            c->una = (uint64_t)acked;
            c->retries = 0;
            c->progress_t = now;
            if (c->next < c->una)
                c->next = c->una;
        }
    }
    int64_t used = unwrap(r->msn, c->remote_used);
    bool credits = used > (int64_t)c->remote_used;
    if (credits)
        c->remote_used = (uint64_t)used;
    pop_acked(e, c);
    if (credits)
        ccl_credits(e, c);
}

/* ---- receiver ------------------------------------------------------------------------------ */
static void send_ack(struct ccl_engine *e, struct conn *c, uint8_t syndrome, uint64_t psn)
{
    struct port *p = &e->ports[c->rx_port];
    uint32_t n = wire_ack(e->txbuf, e, c, syndrome, (uint32_t)psn, (uint32_t)c->used);
    send_frame(e, p, e->txbuf, n, ccl_now());
    if (syndrome == SYNDROME_NAK)
        e->totals.naks_sent++;
    else
        e->totals.acks_sent++;
}

static void on_data(struct ccl_engine *e, struct conn *c, const struct roce *r, uint8_t port)
{
    c->rx_port = port;
    int64_t psn = unwrap(r->psn, c->epsn);
    if (psn < (int64_t)c->epsn) {
        e->totals.duplicates++;
        c->ack_due = true;
        return;
    }
    if (psn > (int64_t)c->epsn) {
        e->totals.seq_errors++;
        if (c->naked != c->epsn + 1) {  /* one NAK per expected PSN */
            c->naked = c->epsn + 1;
            send_ack(e, c, SYNDROME_NAK, c->epsn);
        }
        return;
    }
    c->epsn++;
    e->totals.rx_packets++;
    if (r->ecn == 3)
        e->totals.ecn_marked++;
    if (r->opcode == OP_FIRST || r->opcode == OP_ONLY)
        ccl_message_begin(e, c, r->va, r->rkey, r->dlen);
    ccl_message_data(e, c, r->payload, r->payload_len);
    if (r->opcode == OP_LAST || r->opcode == OP_ONLY)
        ccl_message_end(e, c);
    if (r->ackreq)
        c->ack_due = true;
}

void fabric_ack_now(struct ccl_engine *e, struct conn *c)
{
    send_ack(e, c, 0, c->epsn - 1);
    c->ack_due = false;
    c->used_acked = c->used;
}

void fabric_acks(struct ccl_engine *e)
{
    for (uint32_t i = 0; i < e->nconns; i++) {
        struct conn *c = e->conns[i];
        if (c->dir == CCL_RX && c->transport == CCL_FABRIC &&
            (c->ack_due || c->used != c->used_acked))
            fabric_ack_now(e, c);
    }
}

void fabric_receive(struct ccl_engine *e, struct port *p)
{
    struct mmsghdr msgs[RX_BATCH];
    struct iovec iov[RX_BATCH];
    uint8_t index = (uint8_t)(p - e->ports);
    for (int rounds = 0; rounds < 8; rounds++) {
        for (int i = 0; i < RX_BATCH; i++) {
            iov[i].iov_base = e->rxbuf[i];
            iov[i].iov_len = MAX_FRAME;
            memset(&msgs[i].msg_hdr, 0, sizeof msgs[i].msg_hdr);
            msgs[i].msg_hdr.msg_iov = &iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        int got = recvmmsg(p->cfg.fd, msgs, RX_BATCH, MSG_DONTWAIT, NULL);
        if (got <= 0)
            return;
        double now = ccl_now();
        for (int i = 0; i < got; i++) {
            struct roce r;
            uint16_t quanta = 0;
            uint32_t len = msgs[i].msg_len;
            e->totals.port_rx_bytes[index] += len;
            int kind = wire_parse(e->rxbuf[i], len, &r, &quanta, e->cfg.prio);
            if (kind == WIRE_PAUSE) {
                e->totals.pfc_frames++;
                double t = quanta * 512.0 / p->cfg.rate_bps;
                if (p->paused_until > now)
                    e->totals.paused_ns -= (uint64_t)((p->paused_until - now) * 1e9);
                p->paused_until = now + t;
                e->totals.paused_ns += (uint64_t)(t * 1e9);
                continue;
            }
            if (kind == WIRE_BAD_ICRC) {
                e->totals.icrc_errors++;
                continue;
            }
            if (kind != WIRE_ROCE)
                continue;
            struct conn *c = ccl_conn_by_qpn(e, r.qpn);
            if (!c || c->transport != CCL_FABRIC || r.src_ip != e->peers[c->peer].ip) {
                e->totals.bad_frames++;
                continue;
            }
            if (r.opcode == OP_ACK && c->dir == CCL_TX)
                on_ack(e, c, &r, now);
            else if (r.opcode >= OP_FIRST && r.opcode <= OP_ONLY && c->dir == CCL_RX) {
                e->totals.rx_bytes += len;
                on_data(e, c, &r, index);
            }
        }
        fabric_acks(e);
        if (got < RX_BATCH)
            return;
    }
}
