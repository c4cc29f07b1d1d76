/* The receive loop of `python -m traffic paced recv` (traffic/paced_recv.py), in C: the same
 * per-flow records as FlowRecord.arrive there (packets, bytes, lost PSNs, silences, bytes per
 * bin), kept here and read by Python for its reports, and datagrams read many per system call
 * (recvmmsg) without an interpreter's work for each.
 *
 * rx_new(t0, bin_s, gap_s, max_holes, header): an empty record (header: where the BTH fields
 * sit, from traffic.wire.BTH_HDR). rx_arrive: one datagram's arrival, as FlowRecord.arrive.
 * rx_run: read the socket until a report is due or stop_fd becomes readable. rx_flow, rx_bins
 * and rx_gaps read one flow's record; rx_free ends it. */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define BATCH 64       /* datagrams per recvmmsg */
#define HEAD_BYTES 64  /* what is copied of each: the BTH and the stamp (its length is not cut) */

struct field { uint32_t at, size, shift, pad; uint64_t mask; }; /* traffic.wire.FieldAt */

struct header {
    struct field opcode, dqpn, psn;
    uint64_t opcode_value; /* what a datagram of ours carries (UC RDMA WRITE ONLY) */
    uint32_t min_len;      /* BTH, stamp and ICRC */
};

struct gap { double before, after; int64_t lost; };
struct hole { int64_t first, end, gap; }; /* PSNs [first, end) skipped; their silence, -1: none */

struct flow {
    uint32_t src, qpn; /* src: IPv4 address, network order */
    int64_t packets, bytes, lost, next_psn;
    double first_t, last_t;
    struct gap *gaps;
    size_t n_gaps, cap_gaps;
    struct hole *holes; /* in PSN order, disjoint */
    size_t n_holes, cap_holes;
    int64_t bin0; /* the bin index of bins[0] */
    int64_t *bins;
    size_t n_bins, cap_bins;
};

struct receiver {
    double t0, bin_s, gap_s;
    int64_t max_holes;
    struct header h;
    struct flow *flows; /* in the order of their first arrival */
    size_t n_flows, cap_flows, last;
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    struct sockaddr_in from[BATCH];
    uint8_t head[BATCH][HEAD_BYTES];
    uint8_t control[BATCH][CMSG_SPACE(sizeof(struct timespec))];
};

/* What Python reads of one flow. */
struct flow_view {
    uint32_t src, qpn;
    int64_t packets, bytes, lost;
    double first_t, last_t;
    int64_t n_gaps, bin0;
};

static int grow(void **items, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return 0;
    size_t cap2 = *cap ? *cap : 8;
    while (cap2 < need)
        cap2 *= 2;
    void *p = realloc(*items, cap2 * size);
    if (!p)
        return -ENOMEM;
    *items = p;
    *cap = cap2;
    return 0;
}

static double realtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t read_field(const uint8_t *data, const struct field *f)
{
    uint64_t raw = 0;
    for (uint32_t k = 0; k < f->size; k++)
        raw = raw << 8 | data[f->at + k];
    return (raw & f->mask) >> f->shift;
}

struct receiver *rx_new(double t0, double bin_s, double gap_s, int64_t max_holes,
                        const struct header *h)
{
    if (h->min_len > HEAD_BYTES) /* a datagram's fields must lie in what is copied of it */
        return NULL;
    struct receiver *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->t0 = t0;
    r->bin_s = bin_s;
    r->gap_s = gap_s;
    r->max_holes = max_holes;
    r->h = *h;
    for (int i = 0; i < BATCH; i++) {
        r->iov[i] = (struct iovec){r->head[i], HEAD_BYTES};
        r->msgs[i].msg_hdr = (struct msghdr){
            .msg_name = &r->from[i], .msg_iov = &r->iov[i], .msg_iovlen = 1};
    }
    return r;
}

void rx_free(struct receiver *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n_flows; i++) {
        free(r->flows[i].gaps);
        free(r->flows[i].holes);
        free(r->flows[i].bins);
    }
    free(r->flows);
    free(r);
}

static struct flow *flow_of(struct receiver *r, uint32_t src, uint32_t qpn)
{
    if (r->last < r->n_flows && r->flows[r->last].src == src && r->flows[r->last].qpn == qpn)
        return &r->flows[r->last];
    for (size_t i = 0; i < r->n_flows; i++)
        if (r->flows[i].src == src && r->flows[i].qpn == qpn)
            return &r->flows[r->last = i];
    if (grow((void **)&r->flows, &r->cap_flows, r->n_flows + 1, sizeof *r->flows))
        return NULL;
    struct flow *f = &r->flows[r->last = r->n_flows++];
    memset(f, 0, sizeof *f);
    f->src = src;
    f->qpn = qpn;
    return f;
}

/* Bytes into the bin of index `index`, the flow's bins growing either way. */
static int add_to_bin(struct flow *f, int64_t index, int64_t bytes)
{
    if (!f->n_bins) {
        if (grow((void **)&f->bins, &f->cap_bins, 1, sizeof *f->bins))
            return -ENOMEM;
        f->bin0 = index;
        f->bins[0] = 0;
        f->n_bins = 1;
    } else if (index < f->bin0) { /* an earlier stamp than any before */
        size_t more = (size_t)(f->bin0 - index);
        if (grow((void **)&f->bins, &f->cap_bins, f->n_bins + more, sizeof *f->bins))
            return -ENOMEM;
        memmove(f->bins + more, f->bins, f->n_bins * sizeof *f->bins);
        memset(f->bins, 0, more * sizeof *f->bins);
        f->n_bins += more;
        f->bin0 = index;
    } else if (index >= f->bin0 + (int64_t)f->n_bins) {
        size_t need = (size_t)(index - f->bin0) + 1;
        if (grow((void **)&f->bins, &f->cap_bins, need, sizeof *f->bins))
            return -ENOMEM;
        memset(f->bins + f->n_bins, 0, (need - f->n_bins) * sizeof *f->bins);
        f->n_bins = need;
    }
    f->bins[index - f->bin0] += bytes;
    return 0;
}

/* A late PSN: if a hole holds it, it is filled (the hole splits) and its silence counted one
 * packet less lost. 1 if it filled a hole. */
static int fill_hole(struct flow *f, int64_t psn, int64_t *gap)
{
    size_t lo = 0, hi = f->n_holes; /* the last hole with first <= psn */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (f->holes[mid].first <= psn)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo || psn >= f->holes[lo - 1].end)
        return 0;
    struct hole *h = &f->holes[lo - 1];
    *gap = h->gap;
    if (h->first == psn) {
        h->first++;
    } else if (h->end == psn + 1) {
        h->end--;
    } else { /* split in two */
        struct hole rest = {psn + 1, h->end, h->gap};
        h->end = psn;
        if (grow((void **)&f->holes, &f->cap_holes, f->n_holes + 1, sizeof *f->holes))
            return -ENOMEM;
        memmove(f->holes + lo + 1, f->holes + lo, (f->n_holes - lo) * sizeof *f->holes);
        f->holes[lo] = rest;
        f->n_holes++;
        return 1;
    }
    if (f->holes[lo - 1].first == f->holes[lo - 1].end) {
        memmove(f->holes + lo - 1, f->holes + lo, (f->n_holes - lo) * sizeof *f->holes);
        f->n_holes--;
    }
    return 1;
}

/* One datagram of `size` bytes with PSN `psn` from (src, qpn), arrived at `now` (epoch s):
 * FlowRecord.arrive. 0, or -ENOMEM. */
int rx_arrive(struct receiver *r, uint32_t src, uint32_t qpn, int64_t psn, int64_t size,
              double now)
{
    struct flow *f = flow_of(r, src, qpn);
    if (!f)
        return -ENOMEM;
    int64_t skipped = psn > f->next_psn ? psn - f->next_psn : 0;
    if (f->packets && (now - f->last_t > r->gap_s || skipped)) {
        if (grow((void **)&f->gaps, &f->cap_gaps, f->n_gaps + 1, sizeof *f->gaps))
            return -ENOMEM;
        f->gaps[f->n_gaps++] = (struct gap){f->last_t, now, skipped};
    }
    if (!f->packets)
        f->first_t = now;
    if (psn >= f->next_psn) {
        if (skipped) {
            f->lost += skipped;
            if (skipped <= r->max_holes) {
                if (grow((void **)&f->holes, &f->cap_holes, f->n_holes + 1, sizeof *f->holes))
                    return -ENOMEM;
                int64_t gap = f->packets ? (int64_t)f->n_gaps - 1 : -1;
                f->holes[f->n_holes++] = (struct hole){f->next_psn, psn, gap};
            }
        }
        f->next_psn = psn + 1;
    } else {
        int64_t gap;
        int filled = fill_hole(f, psn, &gap);
        if (filled < 0)
            return filled;
        if (filled) {
            f->lost--;
            if (gap >= 0)
                f->gaps[gap].lost--;
        }
    }
    f->packets++;
    f->bytes += size;
    f->last_t = now;
    return add_to_bin(f, (int64_t)((now - r->t0) / r->bin_s), size);
}

/* Every datagram waiting on fd, through rx_arrive; the number read, or -errno. */
static int drain(struct receiver *r, int fd, int stamped)
{
    int total = 0;
    for (;;) {
        for (int i = 0; i < BATCH; i++) {
            struct msghdr *m = &r->msgs[i].msg_hdr;
            m->msg_namelen = sizeof r->from[i];
            m->msg_control = stamped ? r->control[i] : NULL;
            m->msg_controllen = stamped ? sizeof r->control[i] : 0;
        }
        int n = recvmmsg(fd, r->msgs, BATCH, MSG_DONTWAIT | MSG_TRUNC, NULL);
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? total : -errno;
        for (int i = 0; i < n; i++) {
            uint32_t len = r->msgs[i].msg_len; /* the whole datagram's (MSG_TRUNC) */
            const uint8_t *data = r->head[i];
            if (len < r->h.min_len || read_field(data, &r->h.opcode) != r->h.opcode_value)
                continue;
            double now = -1;
            struct msghdr *m = &r->msgs[i].msg_hdr;
            for (struct cmsghdr *c = stamped ? CMSG_FIRSTHDR(m) : NULL; c; c = CMSG_NXTHDR(m, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS &&
                    c->cmsg_len >= CMSG_LEN(sizeof(struct timespec))) {
                    struct timespec ts;
                    memcpy(&ts, CMSG_DATA(c), sizeof ts);
                    now = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
                    break;
                }
            if (now < 0) /* not stamped: the time it is read */
                now = realtime();
            int err = rx_arrive(r, r->from[i].sin_addr.s_addr,
                                (uint32_t)read_field(data, &r->h.dqpn),
                                (int64_t)read_field(data, &r->h.psn), len, now);
            if (err)
                return err;
        }
        total += n;
        if (n < BATCH)
            return total;
    }
}

/* Read fd until the clock has passed report_at (epoch s) when a read begins, or stop_fd is
 * readable, as the Python loop does: wait up to poll_s for a datagram, read all there are,
 * and, where the kernel stamps arrivals, wait read_every_s before reading again so that they
 * gather. 0: a report is due (*read_at: the time taken before that read, so every datagram
 * stamped before it was read); 1: stop_fd is readable; -errno on an error. */
int rx_run(struct receiver *r, int fd, int stop_fd, int stamped, double report_at,
           double poll_s, double read_every_s, double *read_at)
{
    for (;;) {
        struct pollfd p[2] = {{.fd = fd, .events = POLLIN}, {.fd = stop_fd, .events = POLLIN}};
        struct timespec wait = {(time_t)poll_s, (long)((poll_s - (time_t)poll_s) * 1e9)};
        if (ppoll(p, 2, &wait, NULL) < 0 && errno != EINTR)
            return -errno;
        if (p[1].revents)
            return 1;
        double now = realtime();
        int readable = p[0].revents != 0;
        if (readable) {
            int err = drain(r, fd, stamped);
            if (err < 0)
                return err;
        }
        if (now >= report_at) {
            *read_at = now;
            return 0;
        }
        if (readable && stamped) {
            struct pollfd s = {.fd = stop_fd, .events = POLLIN};
            struct timespec gather = {0, (long)(read_every_s * 1e9)};
            if (ppoll(&s, 1, &gather, NULL) > 0)
                return 1;
        }
    }
}

size_t rx_count(const struct receiver *r) { return r->n_flows; }

void rx_flow(const struct receiver *r, size_t i, struct flow_view *out)
{
    const struct flow *f = &r->flows[i];
    *out = (struct flow_view){f->src, f->qpn, f->packets, f->bytes, f->lost, f->first_t,
                              f->last_t, (int64_t)f->n_gaps, f->bin0};
}

/* Bytes of bins [start, end) of flow i into out (0 where none arrived). */
void rx_bins(const struct receiver *r, size_t i, int64_t start, int64_t end, int64_t *out)
{
    const struct flow *f = &r->flows[i];
    for (int64_t k = start; k < end; k++) {
        int64_t at = k - f->bin0;
        out[k - start] = at >= 0 && at < (int64_t)f->n_bins ? f->bins[at] : 0;
    }
}

/* Silences [first, first + n) of flow i into out. */
void rx_gaps(const struct receiver *r, size_t i, size_t first, size_t n, struct gap *out)
{
    memcpy(out, r->flows[i].gaps + first, n * sizeof *out);
}
