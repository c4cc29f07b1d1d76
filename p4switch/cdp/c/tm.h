/* The traffic manager of the C data plane: p4switch/switch/tm.py's queues, in C.
 *
 * FIFO per (egress port, priority), tail drop at a capacity, a rate limit in packets/s
 * (send_at = max(now, previous send_at + 1/rate)), strict priority within a port, pauses
 * (a paused queue keeps taking packets; after the pause its backlog leaves at its rate from
 * the resume time). Not here yet: the PFC watchdog and held_depth (the switch serves its ports
 * from the Python loop while those are on). Items are the caller's pointers. Times are
 * seconds (CLOCK_MONOTONIC), as in tm.py; the arithmetic is the same, in the same order, so
 * both give the same doubles. */
#ifndef CDP_TM_H
#define CDP_TM_H

#include <stdint.h>

#define CDP_TM_PORTS 512 /* v1model's 9-bit ports */

struct cdp_queued {
    double send_at, enq_time;
    uint32_t enq_qdepth;
    void *item;
};

struct cdp_queue {
    uint32_t capacity;
    double rate_pps;
    struct cdp_queued *items; /* a ring of `room` entries: `count` from `head` on */
    uint32_t head, count, room;
    double last_send_at, paused_until;
    uint64_t enqueued, dropped, dequeued;
};

/* What cdp_tm_dequeue_due returns per packet, as tm.py's Dequeued tuple. */
struct cdp_dequeued {
    int port, priority;
    void *item;
    double enq_time;
    uint32_t enq_qdepth, deq_qdepth;
};

struct cdp_tm;

struct cdp_tm *cdp_tm_new(int priority_queues);
void cdp_tm_free(struct cdp_tm *tm);
/* Capacity (packets) / rate (packets/s, 0 unlimited) of one queue, all of a port's
 * (priority -1) or all queues and the default for new ports (port -1). -1: out of range. */
int cdp_tm_set_depth(struct cdp_tm *tm, uint32_t depth, int port, int priority);
int cdp_tm_set_rate(struct cdp_tm *tm, double rate_pps, int port, int priority);
/* Stop serving a queue for `seconds` (0 resumes at once); -1: out of range. */
int cdp_tm_pause(struct cdp_tm *tm, int port, int priority, double seconds, double now);
/* 1 if a packet for this queue leaves at once (counted enqueued and dequeued), else 0. */
int cdp_tm_bypass(struct cdp_tm *tm, int port, int priority, double now);
/* Queue an item: its enq_qdepth, or -1 if it was dropped. */
int64_t cdp_tm_enqueue(struct cdp_tm *tm, int port, int priority, void *item, double now);
/* Pop up to `max` packets due at `now`, each port by strict priority; how many. */
int cdp_tm_dequeue_due(struct cdp_tm *tm, double now, struct cdp_dequeued *out, int max);
/* When the next packet becomes due; 0 if nothing is queued. */
int cdp_tm_next_due(const struct cdp_tm *tm, double *due);
uint64_t cdp_tm_pending(const struct cdp_tm *tm);
uint64_t cdp_tm_priority_drops(const struct cdp_tm *tm);
/* A queue (created with the defaults if its port had none); NULL: out of range. */
struct cdp_queue *cdp_tm_queue(struct cdp_tm *tm, int port, int priority);
void cdp_tm_clear(struct cdp_tm *tm);
/* cdp_tm_clear, `release` called on every queued item first. */
void cdp_tm_release(struct cdp_tm *tm, void (*release)(void *item));

#endif
