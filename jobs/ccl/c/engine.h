/* What the engine's parts share: connections, ports, plans and the engine itself. */
#ifndef CCL_ENGINE_H
#define CCL_ENGINE_H

#include "ccl.h"

#include <pthread.h>
#include <stdbool.h>

#define MAX_FRAME 9216      /* the largest frame a port sends or receives */
#define RX_BATCH 32         /* frames per recvmmsg */
#define NVLINK_FRAME (64 * 1024) /* payload bytes per NVLink frame */
#define FRAME_SLACK 128     /* a fabric frame's headers, at most, beyond its payload */

/* A message posted on a TX connection, until its receiver acknowledged all of it. */
struct txmsg {
    const uint8_t *data;    /* in the arena */
    uint64_t len, va;       /* va: run id << 32 | iteration (RETH) */
    uint64_t first_psn;     /* fabric: its PSNs are [first_psn, first_psn + npkts) */
    uint64_t sent;          /* NVLink: bytes described to the receiver */
    uint64_t src;           /* NVLink: its arena offset (the receiver reads it there) */
    uint32_t npkts, rkey;   /* rkey: the receiver's op */
    uint32_t op, iter;      /* this rank's send op */
    bool done;              /* NVLink: the receiver has it (it may finish out of order) */
};

/* A message that arrived before its op could use it (or is arriving so). */
struct staged {
    struct staged *next;
    uint32_t run_id, iter, op;
    uint64_t len, got;      /* bytes expected, arrived */
    uint8_t data[];
};

struct conn {
    uint32_t qpn;
    uint16_t peer;
    uint8_t dir, transport, port;
    uint16_t sport;
    /* TX */
    struct txmsg *msgs;     /* ring of posted, unacknowledged messages */
    uint32_t msg_head, msg_count, msg_cap;
    uint64_t una, next, posted_end, sent_max; /* PSNs, unwrapped */
    double progress_t;
    uint32_t retries;
    bool failed;
    uint64_t posted;        /* messages ever posted */
    uint64_t remote_used;   /* messages its receiver has used (from ACKs), unwrapped */
    uint32_t fifo_pos;      /* active run: next send op of its FIFO to post */
    uint32_t plan_conn;     /* active run: its index in the plan's conns */
    /* RX */
    uint64_t epsn, naked;
    bool ack_due;
    uint8_t rx_port;        /* where its data last arrived: ACKs leave there */
    uint64_t used;          /* messages used (applied to their op), sent back as credits */
    uint64_t used_acked;    /* `used` the last ACK carried */
    bool direct;            /* the message being received goes straight to its op */
    uint32_t cur_op, cur_iter, cur_sop; /* cur_sop: NVLink, the sender's op */
    uint64_t cur_va;
    uint64_t cur_len, cur_got;
    struct staged *cur_staged;
    struct staged *staged;  /* arrived (or arriving) ahead of their op */
    struct conn *hash_next;
};

struct port {
    struct ccl_port cfg;
    double tokens, refill_t, paused_until, blocked_until;
    bool waiting;           /* its bucket ran dry: it sends again with a whole batch */
    uint32_t rr;            /* round robin over its TX connections */
    struct conn **tx;       /* the TX connections leaving on it */
    uint32_t ntx, cap_tx;
};

enum op_state { OP_WAITING, OP_READY, OP_POSTED, OP_DONE };

struct plan {
    struct ccl_plan desc;   /* arrays owned (copied at load) */
    struct ccl_conn *conns;
    struct ccl_op *ops;
    uint32_t *succ, *fifo, *contrib;
    struct ccl_expect *expect;
    uint8_t *arena;         /* the caller's */
    const uint8_t **peer_arena; /* per rank: its arena of this plan, mapped (NVLink peers) */
    uint64_t *peer_len;
    struct conn **bound;    /* per plan conn: the engine's connection */
    uint32_t *pending;      /* per op: deps not done yet */
    uint8_t *state;         /* per op: op_state */
    bool loaded;
};

struct nvlink_peer {        /* the stream to one GPU of this server */
    int fd;
    uint8_t *out;           /* bytes not yet written */
    size_t out_len, out_cap;
    uint8_t *in;            /* bytes read: in[in_at..in_len) not taken yet */
    size_t in_at, in_len, in_cap;
    bool readable;          /* poll said so, and no read came back empty since */
};

struct ccl_engine {
    struct ccl_config cfg;
    struct ccl_peer *peers;
    struct port ports[CCL_MAX_PORTS];
    struct conn **table;    /* by qpn (open hash, chained) */
    uint32_t table_size;
    struct conn **conns;    /* all of them, creation order */
    uint32_t nconns, cap_conns;
    struct plan *plans;
    uint32_t nplans;
    struct nvlink_peer *nvl;/* per rank (fd -1: not on this server) */
    double nvl_tokens, nvl_refill_t, nvl_rx_clock;
    double nvl_rx_due;      /* when the piece at nvl_rx_due_peer's head has arrived */
    int nvl_rx_due_peer;    /* -1: no piece on the way in */
    uint32_t nvl_rr, nvl_rx_rr;
    /* the run */
    int state;              /* ccl_state */
    struct ccl_run run;
    struct plan *active;
    uint32_t iter;          /* the iteration in progress */
    uint32_t done_ops;      /* of it */
    bool started;
    uint64_t start_ns;
    double deadline;
    uint64_t *iter_end, *records;
    uint32_t *ready;        /* ops made ready, not handled yet */
    uint32_t nready, cap_ready;
    struct busy { double due; uint32_t op; } *busy; /* compute ops running, when each ends */
    uint32_t nbusy, cap_busy;
    struct ccl_result result;
    struct ccl_stats totals, at_start;
    /* the thread and its commands */
    pthread_t thread;
    bool thread_started, quit;
    pthread_mutex_t lock;
    int wake[2];            /* Python -> engine */
    int event[2];           /* engine -> Python */
    bool go;
    uint64_t go_ns;
    uint8_t rxbuf[RX_BATCH][MAX_FRAME];
    uint8_t txbuf[MAX_FRAME];
};

/* engine.c: what the transports tell the engine */
double ccl_now(void);
uint64_t ccl_realtime_ns(void);
void ccl_fail(struct ccl_engine *e, const char *fmt, ...);
void ccl_send_done(struct ccl_engine *e, uint32_t op, uint32_t iter);
void ccl_message_begin(struct ccl_engine *e, struct conn *c, uint64_t va, uint32_t rkey,
                       uint64_t len);
void ccl_message_data(struct ccl_engine *e, struct conn *c, const uint8_t *data, uint64_t len);
void ccl_message_end(struct ccl_engine *e, struct conn *c);
void ccl_credits(struct ccl_engine *e, struct conn *c);
struct conn *ccl_conn_by_qpn(struct ccl_engine *e, uint32_t qpn);

/* fabric.c: the NIC's ports and go-back-N connections over them */
double fabric_bucket(double rate_bps, uint32_t mtu); /* a port's token bucket (bytes) */
void fabric_receive(struct ccl_engine *e, struct port *p);
void fabric_pump(struct ccl_engine *e, struct port *p, double now, double *wake);
void fabric_timers(struct ccl_engine *e, double now, double *wake);
void fabric_post(struct ccl_engine *e, struct conn *c, struct txmsg *m);
void fabric_acks(struct ccl_engine *e);
void fabric_ack_now(struct ccl_engine *e, struct conn *c);

/* nvlink.c: the streams to the other GPUs of this server, at the modelled NVLink rate */
void nvlink_read(struct ccl_engine *e, int peer);
void nvlink_write(struct ccl_engine *e, int peer);
void nvlink_pump(struct ccl_engine *e, double now, double *wake);
void nvlink_deliver(struct ccl_engine *e, double now, double *wake);
void nvlink_post(struct ccl_engine *e, struct conn *c, struct txmsg *m);
bool nvlink_wants_input(const struct ccl_engine *e, int peer);
void nvlink_received(struct ccl_engine *e, struct conn *c);

/* wire.c: RoCEv2 frames */
struct roce {               /* what a received frame says */
    uint32_t src_ip;
    uint8_t opcode, ackreq, ecn;
    uint32_t qpn, psn;      /* psn: 24 bits */
    uint64_t va;            /* RETH */
    uint32_t rkey, dlen;
    uint8_t syndrome;       /* AETH */
    uint32_t msn;
    const uint8_t *payload;
    uint32_t payload_len;
};
enum { WIRE_NOT_OURS = 0, WIRE_ROCE = 1, WIRE_PAUSE = 2, WIRE_BAD_ICRC = 3 };
int wire_parse(const uint8_t *frame, uint32_t len, struct roce *out, uint16_t *pause_quanta,
               uint32_t prio);
uint32_t wire_data(uint8_t *frame, const struct ccl_engine *e, const struct conn *c,
                   uint8_t opcode, uint32_t psn, bool ackreq, const struct txmsg *m,
                   const uint8_t *payload, uint32_t len);
uint32_t wire_ack(uint8_t *frame, const struct ccl_engine *e, const struct conn *c,
                  uint8_t syndrome, uint32_t psn, uint32_t msn);
uint32_t crc32_ieee(uint32_t crc, const uint8_t *p, size_t n);

/* data.c: datatypes, reductions and nccl-tests-style data */
size_t dtype_size(uint32_t dtype);
void data_reduce(uint32_t dtype, uint32_t op, uint8_t *dst, const uint8_t *a, const uint8_t *b,
                 uint64_t bytes);
void data_postop(uint32_t dtype, uint32_t op, uint8_t *dst, uint64_t bytes, uint32_t nranks);
void data_fill(const struct plan *p, uint32_t rank, uint64_t seed);
uint64_t data_check(const struct plan *p, uint64_t seed);

#endif
