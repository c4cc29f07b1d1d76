/* The switch's data-plane loop in C (switch.h): each step is dataplane.py's, in its order. */
#include "switch.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define BATCH 64           /* frames taken from one port per wake-up */
#define MAX_ROUNDS 64      /* dequeue passes per wake-up (bounds recirculation loops) */
#define FRAME_ROOM (65536 + 16384)

struct cdp_switch {
    struct cdp_engine *eng;
    struct cdp_tm *tm;
    struct cdp_port *ports;
    int nports;
    int16_t index[CDP_TM_PORTS]; /* port number -> ports[] index, -1: none */
    int cpu_port;
    double start;
    int pfc;
    double link_bps[CDP_TM_PORTS];
    uint32_t priority_queues;
    int ep;
    volatile int changed;
    uint8_t *rx, *frame;
    uint8_t *cpu[CDP_CPU_FRAMES]; /* a ring: cpu_count frames from cpu_first */
    uint32_t cpu_len[CDP_CPU_FRAMES], cpu_first, cpu_count;
    struct cdp_switch_stats stats;
};

static double monotonic(void)
{
    return (double)cdp_monotonic_ns() * 1e-9;
}

struct cdp_switch *cdp_switch_new(struct cdp_engine *eng, struct cdp_tm *tm,
                                  struct cdp_port *ports, int nports, int cpu_port, double start,
                                  int pfc, const double *link_bps, uint32_t priority_queues)
{
    struct cdp_switch *sw = calloc(1, sizeof *sw);
    if (sw == NULL)
        return NULL;
    sw->eng = eng;
    sw->tm = tm;
    sw->ports = ports;
    sw->nports = nports;
    sw->cpu_port = cpu_port;
    sw->start = start;
    sw->pfc = pfc;
    sw->priority_queues = priority_queues;
    memcpy(sw->link_bps, link_bps, sizeof sw->link_bps);
    for (int p = 0; p < CDP_TM_PORTS; p++)
        sw->index[p] = -1;
    sw->ep = epoll_create1(EPOLL_CLOEXEC);
    sw->rx = malloc(CDP_MAX_FRAME);
    sw->frame = malloc(FRAME_ROOM);
    if (sw->ep < 0 || sw->rx == NULL || sw->frame == NULL)
        goto fail;
    for (int i = 0; i < nports; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        if (ports[i].number < 0 || ports[i].number >= CDP_TM_PORTS ||
            epoll_ctl(sw->ep, EPOLL_CTL_ADD, ports[i].fd, &ev) < 0)
            goto fail;
        sw->index[ports[i].number] = (int16_t)i;
    }
    return sw;
fail:
    cdp_switch_free(sw);
    return NULL;
}

void cdp_switch_free(struct cdp_switch *sw)
{
    if (sw == NULL)
        return;
    if (sw->ep >= 0)
        close(sw->ep);
    while (sw->cpu_count) {
        free(sw->cpu[sw->cpu_first]);
        sw->cpu_first = (sw->cpu_first + 1) % CDP_CPU_FRAMES;
        sw->cpu_count--;
    }
    free(sw->rx);
    free(sw->frame);
    free(sw);
}

void cdp_switch_set_engine(struct cdp_switch *sw, struct cdp_engine *eng)
{
    sw->eng = eng;
}

int cdp_switch_watch(struct cdp_switch *sw, int fd)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = UINT32_MAX};
    return epoll_ctl(sw->ep, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

void cdp_switch_note_change(struct cdp_switch *sw)
{
    __atomic_store_n(&sw->changed, 1, __ATOMIC_RELEASE);
}

void cdp_switch_stats(const struct cdp_switch *sw, struct cdp_switch_stats *out)
{
    *out = sw->stats;
}

/* ---- one packet --------------------------------------------------------------------------- */

static void transmit(struct cdp_switch *sw, uint32_t port, const uint8_t *frame, uint32_t len)
{
    int i = port < CDP_TM_PORTS ? sw->index[port] : -1;
    uint8_t *copy;
    if (i >= 0) {
        cdp_port_send(&sw->ports[i], frame, len);
        return;
    }
    if ((int)port != sw->cpu_port) {
        sw->stats.tx_unknown_port++;
        return;
    }
    if (sw->cpu_count == CDP_CPU_FRAMES || (copy = malloc(len ? len : 1)) == NULL) {
        sw->stats.cpu_dropped++;
        return;
    }
    memcpy(copy, frame, len);
    sw->cpu[(sw->cpu_first + sw->cpu_count) % CDP_CPU_FRAMES] = copy;
    sw->cpu_len[(sw->cpu_first + sw->cpu_count) % CDP_CPU_FRAMES] = len;
    sw->cpu_count++;
}

static void enqueue_all(struct cdp_switch *sw, struct cdp_item *items, double now)
{
    while (items != NULL) {
        struct cdp_item *item = items;
        items = item->next;
        item->next = NULL;
        if (cdp_tm_enqueue(sw->tm, (int)item->egress_port, (int)item->priority, item, now) < 0) {
            sw->stats.tm_drops++;
            cdp_item_free(item);
        }
    }
}

/* Dataplane._egress: egress for one dequeued packet; what it sends back goes to the queues. */
static void egress(struct cdp_switch *sw, struct cdp_item *item, double enq_time,
                   uint32_t enq_qdepth, uint32_t deq_qdepth, double now)
{
    struct cdp_item *more = NULL, **tail = &more;
    uint32_t port;
    int64_t n = cdp_engine_egress(sw->eng, item,
                                  (uint64_t)((enq_time - sw->start) * 1e6) & 0xFFFFFFFFu,
                                  enq_qdepth, deq_qdepth, (uint64_t)((now - enq_time) * 1e6),
                                  sw->frame, FRAME_ROOM, &port, &tail);
    if (n >= 0)
        transmit(sw, port, sw->frame, (uint32_t)n);
    if (more != NULL)
        enqueue_all(sw, more, now);
}

/* PfcReceiver.handle (without the watchdog: every pause is honoured). */
static void receive_pfc(struct cdp_switch *sw, uint32_t port, const uint8_t *f, uint32_t len)
{
    static const uint8_t dst[6] = {0x01, 0x80, 0xc2, 0x00, 0x00, 0x01};
    double bps, now;
    unsigned enabled;
    if (len < 34 || memcmp(f + 12, "\x88\x08\x01\x01", 4) != 0 || memcmp(f, dst, 6) != 0)
        return;
    sw->stats.pfc_frames++;
    enabled = (unsigned)f[16] << 8 | f[17];
    bps = port < CDP_TM_PORTS ? sw->link_bps[port] : 10e9;
    now = monotonic();
    for (uint32_t prio = 0; prio < 8 && prio < sw->priority_queues; prio++) {
        unsigned quanta = (unsigned)f[18 + 2 * prio] << 8 | f[19 + 2 * prio];
        if (enabled >> prio & 1)
            cdp_tm_pause(sw->tm, (int)port, (int)prio, quanta * 512 / bps, now);
    }
}

/* Dataplane._ingress */
static void ingress(struct cdp_switch *sw, uint32_t port, const uint8_t *data, uint32_t len)
{
    struct cdp_item *items = NULL, **tail = &items;
    double now;
    if (sw->pfc && len >= 14 && data[12] == 0x88 && data[13] == 0x08)
        receive_pfc(sw, port, data, len);
    if (!cdp_engine_ingress(sw->eng, port, data, len, &tail))
        return;
    now = monotonic();
    while (items != NULL) {
        struct cdp_item *item = items;
        items = item->next;
        item->next = NULL;
        if (cdp_tm_bypass(sw->tm, (int)item->egress_port, (int)item->priority, now))
            egress(sw, item, now, 0, 0, now);
        else if (cdp_tm_enqueue(sw->tm, (int)item->egress_port, (int)item->priority, item,
                                now) < 0) {
            sw->stats.tm_drops++;
            cdp_item_free(item);
        }
    }
}

/* Dataplane._service_queues */
static void service_queues(struct cdp_switch *sw)
{
    struct cdp_dequeued out[BATCH];
    for (int round = 0; round < MAX_ROUNDS; round++) {
        double now = monotonic();
        int n = cdp_tm_dequeue_due(sw->tm, now, out, BATCH);
        if (n <= 0)
            return;
        for (int i = 0; i < n; i++)
            egress(sw, out[i].item, out[i].enq_time, out[i].enq_qdepth, out[i].deq_qdepth, now);
    }
}

static void flush(struct cdp_switch *sw)
{
    for (int i = 0; i < sw->nports; i++)
        if (sw->ports[i].tx_pending)
            cdp_port_flush(&sw->ports[i]);
}

/* ---- the loop ----------------------------------------------------------------------------- */

static void receive(struct cdp_switch *sw, struct cdp_port *p)
{
    int taken = 0;
    for (; taken < BATCH; taken++) {
        int len;
        /* A state change noted (a P4Runtime write, under way or done) goes to C before any
         * further frame: one sent after the write returned must see it. The rest waits in
         * the ring until the loop is back from copying it. */
        if (__atomic_load_n(&sw->changed, __ATOMIC_ACQUIRE))
            return;
        len = cdp_port_receive(p, sw->rx, CDP_MAX_FRAME);
        if (len == 0)
            break;
        if (len > 0)
            ingress(sw, (uint32_t)p->number, sw->rx, (uint32_t)len);
    }
    if (!taken) { /* woken for an error (the link went down): clear it, or we spin */
        int err;
        socklen_t size = sizeof err;
        getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &size);
    }
}

int cdp_switch_run(struct cdp_switch *sw)
{
    struct epoll_event ready[32];
    if (sw->eng == NULL)
        return -EINVAL;
    for (;;) {
        int timeout = -1, k, back = 0;
        double due;
        if (__atomic_load_n(&sw->changed, __ATOMIC_ACQUIRE)) {
            __atomic_store_n(&sw->changed, 0, __ATOMIC_RELEASE);
            return 0;
        }
        if (sw->cpu_count || cdp_engine_digests_pending(sw->eng))
            return 0;
        if (cdp_tm_next_due(sw->tm, &due)) {
            double wait = due - monotonic();
            timeout = wait <= 0 ? 0 : (int)ceil(wait * 1000);
        }
        k = epoll_wait(sw->ep, ready, 32, timeout);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        sw->stats.passes++;
        for (int e = 0; e < k; e++) {
            if (ready[e].data.u32 == UINT32_MAX)
                back = 1;
            else
                receive(sw, &sw->ports[ready[e].data.u32]);
        }
        if (cdp_tm_pending(sw->tm))
            service_queues(sw);
        flush(sw);
        if (back)
            return 0;
    }
}

void cdp_switch_inject(struct cdp_switch *sw, uint32_t port, const uint8_t *frame, uint32_t len)
{
    ingress(sw, port, frame, len);
    if (cdp_tm_pending(sw->tm))
        service_queues(sw);
    flush(sw);
}

int64_t cdp_switch_cpu_frame(struct cdp_switch *sw, uint8_t *out, uint32_t size)
{
    uint8_t *frame;
    uint32_t len;
    if (!sw->cpu_count)
        return -1;
    frame = sw->cpu[sw->cpu_first];
    len = sw->cpu_len[sw->cpu_first];
    sw->cpu_first = (sw->cpu_first + 1) % CDP_CPU_FRAMES;
    sw->cpu_count--;
    if (len > size) {
        sw->stats.cpu_dropped++;
        free(frame);
        return -1;
    }
    memcpy(out, frame, len);
    free(frame);
    return len;
}

static void release_item(void *item)
{
    cdp_item_free(item);
}

void cdp_switch_clear_queues(struct cdp_switch *sw)
{
    cdp_tm_release(sw->tm, release_item);
}
