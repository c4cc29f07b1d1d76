/* The switch's data-plane loop in C: p4switch/switch/dataplane.py's loop, for a switch whose
 * program runs on the C data plane. One thread: epoll over the ports' sockets; a received
 * frame (a PFC frame pauses its queues first, as PfcReceiver) goes through the engine's
 * ingress into the traffic manager, or straight to egress when its queue is empty, unlimited
 * and not paused; due queues go through egress; each port's frames leave in one burst per pass.
 *
 * The loop hands control back (cdp_switch_run returns) when one of the descriptors it watches
 * for Python is readable (the wake-up pipe, the link monitor), when the control plane changed
 * the state (cdp_switch_note_change, from any thread), or when frames for the CPU port or
 * digests wait (cdp_switch_cpu_frame, cdp_engine_digest). Python then does its part under the device lock and calls it again.
 * Not here: per-packet trace, pcap capture, the PFC watchdog and pause hold, a group of
 * switches in one process (the Python loop serves those). */
#ifndef CDP_SWITCH_H
#define CDP_SWITCH_H

#include <stdint.h>

#include "engine.h"
#include "ports.h"
#include "tm.h"

#define CDP_CPU_FRAMES 64 /* frames for the CPU port that wait for Python */

struct cdp_switch_stats {
    uint64_t tm_drops, tx_unknown_port, pfc_frames, cpu_dropped, passes;
};

struct cdp_switch;

/* `ports[0..nports)` as RawPort set them up (C serves their rings until freed); `start` is the
 * device's start on CLOCK_MONOTONIC (seconds), from which enq_timestamp counts; `pfc`: honour
 * received PFC frames, quanta at link_bps[port] bits/s. NULL if out of memory. */
struct cdp_switch *cdp_switch_new(struct cdp_engine *eng, struct cdp_tm *tm,
                                  struct cdp_port *ports, int nports, int cpu_port, double start,
                                  int pfc, const double *link_bps, uint32_t priority_queues);
void cdp_switch_free(struct cdp_switch *sw);
/* The engine the loop runs (NULL: none; cdp_switch_run must not be called then). */
void cdp_switch_set_engine(struct cdp_switch *sw, struct cdp_engine *eng);
/* A descriptor whose readiness hands control back; -errno on failure. */
int cdp_switch_watch(struct cdp_switch *sw, int fd);
void cdp_switch_note_change(struct cdp_switch *sw);
/* Serve until control goes back: 0, or -errno. */
int cdp_switch_run(struct cdp_switch *sw);
/* A frame as if received on `port` (packet-out), outside cdp_switch_run; ports flushed. */
void cdp_switch_inject(struct cdp_switch *sw, uint32_t port, const uint8_t *frame, uint32_t len);
/* The oldest frame for the CPU port into out[size]: its length, or -1 (none; or too long:
 * dropped and counted). */
int64_t cdp_switch_cpu_frame(struct cdp_switch *sw, uint8_t *out, uint32_t size);
/* Every queued packet freed (a program installed). */
void cdp_switch_clear_queues(struct cdp_switch *sw);
void cdp_switch_stats(const struct cdp_switch *sw, struct cdp_switch_stats *out);

#endif
