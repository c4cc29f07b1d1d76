/* The v1model pipeline driver of the C data plane: p4switch/engine.py's Engine, in C, in
 * simple_switch's order: parser -> verify checksum -> ingress -> clone (I2E) -> resubmit ->
 * multicast -> drop -> enqueue; dequeue -> egress -> clone (E2E) -> drop -> compute checksum +
 * deparse -> recirculate (whole) or truncate -> transmit. A digest waits in the engine until the
 * control plane takes it (cdp_engine_digest).
 *
 * The packet replication engine's groups and clone sessions are the engine's: the control
 * plane sets each as its list of (egress port, rid) copies, in the order runtime/pre.py gives
 * them (`replicas`, `clone_targets`). */
#ifndef CDP_ENGINE_H
#define CDP_ENGINE_H

#include <stdint.h>

#include "pipeline.h"

#define CDP_INSTANCE_NORMAL 0
#define CDP_INSTANCE_INGRESS_CLONE 1
#define CDP_INSTANCE_EGRESS_CLONE 2
#define CDP_INSTANCE_RECIRC 4
#define CDP_INSTANCE_REPLICATION 5
#define CDP_INSTANCE_RESUBMIT 6
#define CDP_MAX_RECIRCULATIONS 16
#define CDP_PRE_IDS 65536 /* multicast groups and clone sessions: 16-bit ids */
#define CDP_DIGEST_QUEUE 1024

/* A packet between ingress and egress (engine.py's Queued); one allocation holds it, its
 * headers, metadata, standard metadata and payload. */
struct cdp_item {
    struct cdp_item *next;
    uint32_t egress_port, priority;
    uint32_t length;          /* the packet's length at ingress */
    uint32_t recirculations;
    int64_t truncate;         /* bytes to keep (truncate() in ingress), or -1 */
    void *hdr, *meta, *sm;
    uint8_t *payload;
    uint32_t payload_len;
};

struct cdp_copy {
    uint32_t port, rid;
};

struct cdp_copies {
    uint32_t count;
    struct cdp_copy copies[];
};

struct cdp_engine;

/* CLOCK_MONOTONIC in ns: the engine's clock, and the switch loop's. */
uint64_t cdp_monotonic_ns(void);

/* NULL if out of memory. Its clock: µs since it was made, unless set otherwise. */
struct cdp_engine *cdp_engine_new(const struct cdp_program *program, struct cdp_state *state,
                                  uint32_t priority_queues);
void cdp_engine_free(struct cdp_engine *eng);
void cdp_engine_set_clock(struct cdp_engine *eng, int64_t fixed_now_us);
/* The clock's zero: CLOCK_MONOTONIC's `origin_ns` (the switch's start). */
void cdp_engine_set_origin(struct cdp_engine *eng, uint64_t origin_ns);
uint64_t cdp_engine_internal_errors(const struct cdp_engine *eng);

/* Set (count > 0), or remove (count 0), a multicast group or a clone session; -1 if out of
 * memory or the id is beyond 16 bits. A clone session with no copies still exists: set it
 * with count 0 and exists 1. */
int cdp_engine_set_group(struct cdp_engine *eng, uint32_t group, const struct cdp_copy *copies,
                         uint32_t count);
int cdp_engine_set_session(struct cdp_engine *eng, uint32_t session, int exists,
                           const struct cdp_copy *copies, uint32_t count);

/* The oldest digest the engine has not handed over: its struct's number (the program's), its
 * values into values[max] (returns their count), or -1: none left. The engine keeps the last
 * CDP_DIGEST_QUEUE and counts the ones it had no room for. */
int32_t cdp_engine_digest(struct cdp_engine *eng, uint32_t *number, uint64_t *values,
                          uint32_t max);
uint64_t cdp_engine_digests_lost(const struct cdp_engine *eng);
uint32_t cdp_engine_digests_pending(const struct cdp_engine *eng);

/* Engine.ingress: the packets to enqueue, appended to *tail's list (returns how many). */
uint32_t cdp_engine_ingress(struct cdp_engine *eng, uint32_t port, const uint8_t *frame,
                            uint32_t len, struct cdp_item ***tail);

/* Engine.egress_frame for a dequeued item (which it frees): the frame to transmit on
 * `egress_port` (written to out, its length returned; -1 none), new items appended to
 * *tail's list. -2: out is too small (the packet is dropped and counted). */
int64_t cdp_engine_egress(struct cdp_engine *eng, struct cdp_item *item, uint64_t enq_timestamp,
                          uint64_t enq_qdepth, uint64_t deq_qdepth, uint64_t deq_timedelta,
                          uint8_t *out, uint32_t out_size, uint32_t *egress_port,
                          struct cdp_item ***tail);

void cdp_item_free(struct cdp_item *item);

/* Engine.process: the whole pipeline with zero-time unbounded FIFO queues. Frames go to `out`
 * one after another, their ports and lengths to ports[] and lens[]; returns their number, or
 * -1 when out or max_frames is too small. */
int64_t cdp_engine_process(struct cdp_engine *eng, uint32_t port, const uint8_t *frame,
                           uint32_t len, uint8_t *out, uint64_t out_size, uint32_t *ports,
                           uint32_t *lens, uint32_t max_frames);

#endif
