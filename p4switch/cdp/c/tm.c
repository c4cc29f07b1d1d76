/* p4switch/switch/tm.py in C; see tm.h. */
#include "tm.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_DEPTH 64

struct cdp_tm {
    int priority_queues;
    uint32_t default_depth;
    double default_rate;
    struct cdp_queue *ports[CDP_TM_PORTS]; /* priority_queues queues each, made on first use */
    /* ports with packets queued, in the order they became busy (tm.py's _busy dict) */
    int busy[CDP_TM_PORTS], nbusy;
    uint8_t is_busy[CDP_TM_PORTS];
    uint64_t pending, priority_drops;
};

struct cdp_tm *cdp_tm_new(int priority_queues)
{
    struct cdp_tm *tm = calloc(1, sizeof *tm);
    if (tm) {
        tm->priority_queues = priority_queues;
        tm->default_depth = DEFAULT_DEPTH;
    }
    return tm;
}

void cdp_tm_free(struct cdp_tm *tm)
{
    if (!tm)
        return;
    for (int p = 0; p < CDP_TM_PORTS; p++) {
        if (!tm->ports[p])
            continue;
        for (int q = 0; q < tm->priority_queues; q++)
            free(tm->ports[p][q].items);
        free(tm->ports[p]);
    }
    free(tm);
}

static struct cdp_queue *port_queues(struct cdp_tm *tm, int port)
{
    if (port < 0 || port >= CDP_TM_PORTS)
        return NULL;
    if (!tm->ports[port]) {
        struct cdp_queue *qs = calloc((size_t)tm->priority_queues, sizeof *qs);
        if (!qs)
            return NULL;
        for (int q = 0; q < tm->priority_queues; q++) {
            qs[q].capacity = tm->default_depth;
            qs[q].rate_pps = tm->default_rate;
            qs[q].last_send_at = -INFINITY;
        }
        tm->ports[port] = qs;
    }
    return tm->ports[port];
}

struct cdp_queue *cdp_tm_queue(struct cdp_tm *tm, int port, int priority)
{
    if (priority < 0 || priority >= tm->priority_queues)
        return NULL;
    struct cdp_queue *qs = port_queues(tm, port);
    return qs ? &qs[priority] : NULL;
}

/* Apply `set` to the queues a (port, priority) selection names, as tm.py's _select: one
 * queue, a port's (priority -1), or every queue of every port made so far (port -1, whatever
 * the priority). -1 for a priority out of range. */
static int each_queue(struct cdp_tm *tm, int port, int priority,
                      void (*set)(struct cdp_queue *, const void *), const void *value)
{
    if (priority >= tm->priority_queues || priority < -1)
        return -1;
    if (port != -1) {
        struct cdp_queue *qs = port_queues(tm, port);
        if (!qs)
            return -1;
        for (int q = 0; q < tm->priority_queues; q++)
            if (priority == -1 || q == priority)
                set(&qs[q], value);
        return 0;
    }
    for (int p = 0; p < CDP_TM_PORTS; p++)
        for (int q = 0; tm->ports[p] && q < tm->priority_queues; q++)
            set(&tm->ports[p][q], value);
    return 0;
}

static void set_depth(struct cdp_queue *q, const void *v) { q->capacity = *(const uint32_t *)v; }
static void set_rate(struct cdp_queue *q, const void *v) { q->rate_pps = *(const double *)v; }

int cdp_tm_set_depth(struct cdp_tm *tm, uint32_t depth, int port, int priority)
{
    if (port == -1)
        tm->default_depth = depth; /* as tm.py: even when the priority is then refused */
    return each_queue(tm, port, priority, set_depth, &depth);
}

int cdp_tm_set_rate(struct cdp_tm *tm, double rate_pps, int port, int priority)
{
    if (rate_pps < 0)
        return -1;
    if (port == -1)
        tm->default_rate = rate_pps;
    return each_queue(tm, port, priority, set_rate, &rate_pps);
}

int cdp_tm_pause(struct cdp_tm *tm, int port, int priority, double seconds, double now)
{
    struct cdp_queue *q = cdp_tm_queue(tm, port, priority);
    if (!q)
        return -1;
    if (seconds > 0)
        q->paused_until = now + seconds;
    else if (q->paused_until > now)
        q->paused_until = now; /* the resume time paces the backlog (dequeue_due) */
    return 0;
}

int cdp_tm_bypass(struct cdp_tm *tm, int port, int priority, double now)
{
    struct cdp_queue *qs = port_queues(tm, port);
    if (!qs || priority < 0 || priority >= tm->priority_queues)
        return 0;
    struct cdp_queue *q = &qs[priority];
    if (q->count || q->rate_pps > 0 || q->capacity == 0 || q->paused_until > now)
        return 0;
    q->enqueued++;
    q->dequeued++;
    return 1;
}

static struct cdp_queued *at(struct cdp_queue *q, uint32_t i)
{
    return &q->items[(q->head + i) % q->room];
}

static int grow(struct cdp_queue *q)
{
    uint32_t room = q->room ? q->room * 2 : 64;
    struct cdp_queued *items = malloc(room * sizeof *items);
    if (!items)
        return -1;
    for (uint32_t i = 0; i < q->count; i++)
        items[i] = *at(q, i);
    free(q->items);
    q->items = items, q->room = room, q->head = 0;
    return 0;
}

int64_t cdp_tm_enqueue(struct cdp_tm *tm, int port, int priority, void *item, double now)
{
    if (priority < 0 || priority >= tm->priority_queues) {
        tm->priority_drops++;
        return -1;
    }
    struct cdp_queue *q = cdp_tm_queue(tm, port, priority);
    if (!q)
        return -1;
    uint32_t depth = q->count;
    if (depth >= q->capacity || (q->count == q->room && grow(q) < 0)) {
        q->dropped++;
        return -1;
    }
    double send_at = now;
    if (q->rate_pps > 0) {
        send_at = fmax(now, q->last_send_at + 1.0 / q->rate_pps);
        q->last_send_at = send_at;
    }
    *at(q, q->count++) = (struct cdp_queued){send_at, now, depth, item};
    q->enqueued++;
    tm->pending++;
    if (!tm->is_busy[port]) {
        tm->is_busy[port] = 1;
        tm->busy[tm->nbusy++] = port;
    }
    return depth;
}

/* Departure times after a pause: from the resume time on, at the queue's rate. */
static void repace(struct cdp_queue *q)
{
    double gap = q->rate_pps > 0 ? 1.0 / q->rate_pps : 0.0;
    double t = q->paused_until;
    for (uint32_t i = 0; i < q->count; i++) {
        struct cdp_queued *e = at(q, i);
        t = fmax(e->send_at, t);
        e->send_at = t;
        t += gap;
    }
    q->last_send_at = fmax(q->last_send_at, t - gap);
}

int cdp_tm_dequeue_due(struct cdp_tm *tm, double now, struct cdp_dequeued *out, int max)
{
    int n = 0, kept = 0;
    for (int b = 0; b < tm->nbusy; b++) {
        int port = tm->busy[b];
        struct cdp_queue *qs = tm->ports[port];
        int popped = 1;
        while (popped && n < max) {
            popped = 0;
            for (int prio = tm->priority_queues - 1; prio >= 0; prio--) {
                struct cdp_queue *q = &qs[prio];
                if (!q->count || q->paused_until > now)
                    continue;
                if (at(q, 0)->send_at < q->paused_until) /* the head waited out a pause */
                    repace(q);
                if (at(q, 0)->send_at <= now) {
                    struct cdp_queued e = *at(q, 0);
                    q->head = (q->head + 1) % q->room;
                    q->count--;
                    q->dequeued++;
                    tm->pending--;
                    out[n++] = (struct cdp_dequeued){port, prio, e.item, e.enq_time,
                                                     e.enq_qdepth, q->count};
                    popped = 1;
                    break;
                }
            }
        }
        int left = 0;
        for (int prio = 0; prio < tm->priority_queues; prio++)
            left |= qs[prio].count != 0;
        if (left)
            tm->busy[kept++] = port;
        else
            tm->is_busy[port] = 0;
    }
    tm->nbusy = kept;
    return n;
}

int cdp_tm_next_due(const struct cdp_tm *tm, double *due)
{
    int found = 0;
    for (int b = 0; b < tm->nbusy; b++) {
        const struct cdp_queue *qs = tm->ports[tm->busy[b]];
        for (int prio = 0; prio < tm->priority_queues; prio++) {
            const struct cdp_queue *q = &qs[prio];
            if (!q->count)
                continue;
            double t = fmax(q->items[q->head].send_at, q->paused_until);
            if (!found || t < *due)
                *due = t, found = 1;
        }
    }
    return found;
}

uint64_t cdp_tm_pending(const struct cdp_tm *tm) { return tm->pending; }
uint64_t cdp_tm_priority_drops(const struct cdp_tm *tm) { return tm->priority_drops; }

void cdp_tm_clear(struct cdp_tm *tm)
{
    for (int b = 0; b < tm->nbusy; b++) {
        struct cdp_queue *qs = tm->ports[tm->busy[b]];
        for (int prio = 0; prio < tm->priority_queues; prio++)
            qs[prio].count = qs[prio].head = 0;
        tm->is_busy[tm->busy[b]] = 0;
    }
    tm->nbusy = 0;
    tm->pending = 0;
}

void cdp_tm_release(struct cdp_tm *tm, void (*release)(void *item))
{
    for (int b = 0; b < tm->nbusy; b++) {
        struct cdp_queue *qs = tm->ports[tm->busy[b]];
        for (int prio = 0; prio < tm->priority_queues; prio++)
            for (uint32_t i = 0; i < qs[prio].count; i++)
                release(qs[prio].items[(qs[prio].head + i) % qs[prio].room].item);
    }
    cdp_tm_clear(tm);
}
