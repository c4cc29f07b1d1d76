/* The collective engine of one rank: what Python hands it (jobs/ccl/native.py mirrors every
 * struct here field by field and checks the layouts against ccl_layout() at load).
 *
 * A rank is one GPU beside one NIC (one network namespace). Its engine owns the NIC's ports
 * (AF_PACKET sockets), the NVLink streams to the other GPUs of its server (unix sockets) and,
 * per plan, one arena holding its input, output and scratch buffers. A plan is the rank's part
 * of one collective as a dataflow: ops (send, receive, local copy) over connections, each op
 * waiting for the ops it depends on; a job's iteration is one plan too, several collectives'
 * ops beside compute ops (a stretch of the GPU's time, which the collectives wait for or not). A run executes a plan `iterations` times back to back, as
 * a stream runs kernels: iteration i+1 starts when this rank finished iteration i. The arenas
 * are the caller's shared memory: the GPUs of one server map each other's (ccl_attach), and
 * NVLink moves data straight from the sender's arena into the receiver's. */
#ifndef CCL_H
#define CCL_H

#include <stddef.h>
#include <stdint.h>

#define CCL_ABI 1
#define CCL_MAX_PORTS 4

enum ccl_op_kind { CCL_SEND = 1, CCL_RECV = 2, CCL_COPY = 3,
                   CCL_COMPUTE = 4 };  /* COMPUTE: the GPU busy `len` ns (no data, no conn) */
enum ccl_op_flag { CCL_REDUCE = 1, CCL_POSTOP = 2 }; /* RECV: combine with src; then divide (avg) */
enum ccl_dir { CCL_TX = 0, CCL_RX = 1 };
enum ccl_transport { CCL_FABRIC = 0, CCL_NVLINK = 1 };
/* nccl-tests' datatype and reduction numbers (ncclDataType_t, ncclRedOp_t) */
enum ccl_dtype {
    CCL_INT8, CCL_UINT8, CCL_INT32, CCL_UINT32, CCL_INT64, CCL_UINT64,
    CCL_HALF, CCL_FLOAT, CCL_DOUBLE, CCL_BFLOAT16, CCL_NTYPES
};
enum ccl_redop { CCL_SUM, CCL_PROD, CCL_MAX, CCL_MIN, CCL_AVG, CCL_NOP = 255 };
enum ccl_run_flag { CCL_INIT = 1, CCL_CHECK = 2, CCL_RECORD = 4 };
enum ccl_status { CCL_DONE = 0, CCL_TIMEOUT = 1, CCL_STOPPED = 2, CCL_FAILED = 3 };
enum ccl_state { CCL_IDLE = 0, CCL_ARMED = 1, CCL_RUNNING = 2, CCL_FINISHED = 3 };

struct ccl_port {           /* one port of the NIC */
    int32_t fd;             /* AF_PACKET socket bound to it, receiving (its filter attached) */
    int32_t tx_fd;          /* AF_PACKET socket bound to it, sending (PACKET_VNET_HDR) */
    double rate_bps;        /* its link's rate: the port sends at most this */
    uint8_t mac[6];
    uint8_t pad[2];
};

struct ccl_peer {           /* one rank as this one sees it */
    uint32_t ip;            /* network order */
    int32_t nvlink_fd;      /* connected unix stream to it (same server), else -1 */
    uint8_t mac[6];
    uint8_t pad[2];
};

struct ccl_config {
    uint32_t rank, nranks, nports;
    uint32_t mtu;           /* RoCE payload bytes per packet */
    uint32_t ip;            /* this NIC's address, network order */
    uint32_t credits;       /* messages a connection may carry that its receiver has not used */
    uint32_t ack_every;     /* data packets between two ACK requests */
    uint32_t max_retries;   /* retransmission timeouts in a row before a connection fails */
    double rto_s;           /* go-back-N retransmission timeout (doubled per expiry) */
    double nvlink_bps;      /* NVLink rate per GPU and direction */
    uint32_t dscp;          /* of the data packets (ECN-capable) */
    uint32_t prio;          /* the PFC priority a pause must name to stop them */
    int32_t stop_fd;        /* readable: the engine stops */
    uint32_t pad;
    struct ccl_port ports[CCL_MAX_PORTS];
};

struct ccl_conn {           /* one direction of one channel to one peer */
    uint32_t qpn;           /* names it on the wire (both ends compute the same) */
    uint16_t peer;
    uint8_t dir;            /* CCL_TX: this rank sends on it; CCL_RX: it receives */
    uint8_t transport;      /* CCL_FABRIC or CCL_NVLINK */
    uint8_t port;           /* fabric TX: the port it leaves on */
    uint8_t pad;
    uint16_t sport;         /* fabric TX: UDP source port, its ECMP entropy */
    uint32_t fifo_at, nfifo;/* TX: its send ops in plan.fifo[fifo_at..], the order they cross */
};

struct ccl_op {
    uint8_t kind, flags;
    uint16_t conn;          /* index into plan.conns: SEND a TX conn, RECV an RX conn */
    uint32_t step;          /* the schedule's step (for records) */
    uint64_t src;           /* arena byte offset read: SEND, COPY; RECV with CCL_REDUCE */
    uint64_t dst;           /* arena byte offset written: RECV, COPY */
    uint64_t len;           /* bytes */
    uint32_t match;         /* SEND: the receiving rank's op index */
    uint32_t ndeps;         /* ops of the same iteration it waits for */
    uint32_t succ_at, nsucc;/* ops that wait for it: plan.succ[succ_at..] */
};

struct ccl_expect {         /* what a range of the output must hold (elements) */
    uint64_t out, count;    /* output elements [out, out + count) */
    uint64_t src;           /* ... are input elements [src, src + count) of the contributors */
    uint32_t contrib_at, ncontrib; /* contributors: plan.contrib[contrib_at..] */
    uint32_t reduce;        /* 1: reduced over them (then divided for avg); 0: one copied */
    uint32_t pad;
};

struct ccl_plan {
    uint32_t nops, nconns, nsucc, nfifo, nexpect, ncontrib;
    uint32_t dtype, redop;
    uint32_t group;         /* ranks of the communicator: avg divides by it */
    uint32_t pad;
    uint8_t *arena_at;      /* the arena, the caller's (shared memory the server's GPUs map) */
    uint64_t arena;         /* its bytes: input, output and scratch */
    uint64_t in, in_count;  /* byte offset and elements of this rank's input */
    uint64_t out, out_count;/* ... of its output */
    const struct ccl_conn *conns;
    const struct ccl_op *ops;
    const uint32_t *succ, *fifo;
    const struct ccl_expect *expect;
    const uint32_t *contrib;
};

struct ccl_run {
    uint32_t plan, iterations;
    uint32_t run_id;        /* the same on every rank, new for every run */
    uint32_t flags;         /* CCL_INIT: fill the input first; CCL_CHECK: count wrong output
                               elements after; CCL_RECORD: per-op times in `records` */
    uint64_t seed;          /* of the input data */
    double timeout_s;       /* from the start; then the run ends CCL_TIMEOUT */
};

struct ccl_stats {
    uint64_t tx_packets, tx_bytes, rx_packets, rx_bytes;  /* fabric data packets, frame bytes */
    uint64_t acks_sent, acks_received;
    uint64_t retransmits;   /* data packets sent again */
    uint64_t naks_sent, naks_received, timeouts;
    uint64_t icrc_errors, seq_errors, duplicates, ecn_marked, bad_frames;
    uint64_t pfc_frames, paused_ns;
    uint64_t tx_busy;       /* sends the port's queue refused (sent again later) */
    uint64_t credit_waits;  /* messages that waited for their receiver to free a slot */
    uint64_t staged;        /* messages that arrived before their op could use them */
    uint64_t nvlink_tx_bytes, nvlink_rx_bytes;
    uint64_t wakeups;       /* of the engine's thread */
    uint64_t port_tx_bytes[CCL_MAX_PORTS], port_rx_bytes[CCL_MAX_PORTS];
};

struct ccl_result {
    int32_t status;         /* ccl_status */
    uint32_t iterations;    /* completed */
    uint64_t start_ns, end_ns; /* CLOCK_REALTIME: the run's start, its last op done */
    uint64_t wrong;         /* CCL_CHECK: output elements that differ from the expected */
    uint64_t pending;       /* ops not done when it ended */
    struct ccl_stats stats; /* this run's */
    char error[200];
};

/* Layout of every struct above, for the Python mirrors: (struct, field) offsets, sizes. */
size_t ccl_layout(uint64_t *out, size_t cap);
int ccl_abi(void);
/* The bytes a port (CCL_FABRIC, of `rate_bps`, sending frames of `mtu`) or a GPU's NVLink
 * (CCL_NVLINK) may send beyond rate x t in any time t: the batch it may send ahead of its rate
 * and the frame it may start on its last token. The alpha-beta bound counts them as free. */
double ccl_send_allowance(int32_t transport, double rate_bps, uint32_t mtu);

struct ccl_engine;
struct ccl_engine *ccl_new(const struct ccl_config *cfg, const struct ccl_peer *peers,
                           char *err, size_t errlen);
int ccl_start(struct ccl_engine *e);                  /* its thread */
int ccl_load(struct ccl_engine *e, const struct ccl_plan *plan, char *err, size_t errlen);
int ccl_unload(struct ccl_engine *e, uint32_t plan);
/* Arm a run (input filled if asked), then start it at `start_ns` (CLOCK_REALTIME). The event
 * fd becomes readable when the state changes (ccl_state()): ARMED, then FINISHED. iter_end:
 * `iterations` end times; records (CCL_RECORD): per iteration and op, (post, done) times. */
int ccl_arm(struct ccl_engine *e, const struct ccl_run *run, uint64_t *iter_end,
            uint64_t *records);
int ccl_go(struct ccl_engine *e, uint64_t start_ns);
int ccl_event_fd(struct ccl_engine *e);
int ccl_state(struct ccl_engine *e);
int ccl_result(struct ccl_engine *e, struct ccl_result *out); /* FINISHED -> IDLE */
int ccl_attach(struct ccl_engine *e, uint32_t plan, uint32_t peer, const uint8_t *arena,
               uint64_t len);               /* a same-server peer's arena of the same plan */
void ccl_totals(struct ccl_engine *e, struct ccl_stats *out);
void ccl_free(struct ccl_engine *e);                 /* stops the thread first */

#endif
