/* The pacing loop of `python -m traffic paced send` (traffic/paced.py), in C: the same
 * schedule, the same datagrams (their bytes come from Python; this fills in each one's PSN and
 * send time), without an interpreter's work between two datagrams.
 *
 * Flow i sends templates[i] (len bytes) to dsts[i] through fds[i] every 1/pps s, the flows
 * offset by 1/(pps n); the PSN (psn_bytes bytes) at psn_at and the send time
 * (CLOCK_REALTIME ns, 8 bytes) at stamp_at are written big-endian before each send. A flow that falls behind
 * catches up by at most 2 ms. It stops after duration_s (0: never) or when stop_fd becomes
 * readable (looked at in every wait, and every STOP_CHECK_EVERY datagrams sent without one);
 * sent[i] and errors[i] count each flow's datagrams and refused sends. */
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#define STOP_CHECK_EVERY 64 /* datagrams sent back to back between two looks at stop_fd */

static double monotonic(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void put_be(uint8_t *at, uint64_t value, int bytes)
{
    for (int k = bytes - 1; k >= 0; k--, value >>= 8)
        at[k] = value & 0xff;
}

/* Wait up to `seconds` for stop_fd; 1 if it is readable. */
static int stopped(int stop_fd, double seconds)
{
    struct pollfd p = {.fd = stop_fd, .events = POLLIN};
    struct timespec ts = {0, 0};
    if (seconds > 0) {
        ts.tv_sec = (time_t)seconds;
        ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
    }
    return ppoll(&p, 1, &ts, NULL) > 0;
}

int paced_send(int n, const int *fds, const struct sockaddr_in *dsts, uint8_t **templates,
               uint32_t len, uint32_t psn_at, uint32_t psn_bytes, uint32_t stamp_at, double pps,
               double duration_s,
               int stop_fd, uint64_t *sent, uint64_t *errors)
{
    double *due = malloc((size_t)n * sizeof *due);
    if (!due)
        return -ENOMEM;
    double interval = 1.0 / pps;
    double start = monotonic();
    double end = duration_s > 0 ? start + duration_s : INFINITY;
    int unchecked = 0;
    for (int i = 0; i < n; i++)
        due[i] = start + i * interval / n;
    for (;;) {
        int i = 0;
        for (int k = 1; k < n; k++)
            if (due[k] < due[i])
                i = k;
        double now = monotonic();
        if (due[i] > now) {
            if (now >= end)
                break;
            if (stopped(stop_fd, fmin(due[i], end) - now))
                break;
            unchecked = 0;
            continue;
        }
        if (++unchecked >= STOP_CHECK_EVERY) { /* behind schedule: no wait has looked */
            unchecked = 0;
            if (stopped(stop_fd, 0))
                break;
        }
        put_be(templates[i] + psn_at, sent[i], (int)psn_bytes);
        put_be(templates[i] + stamp_at, realtime_ns(), 8);
        if (sendto(fds[i], templates[i], len, 0, (const struct sockaddr *)&dsts[i],
                   sizeof dsts[i]) < 0)
            errors[i]++; /* no route for a moment (every port of the NIC down): lost */
        sent[i]++;
        due[i] = fmax(due[i] + interval, now - 0.002);
    }
    free(due);
    return 0;
}
