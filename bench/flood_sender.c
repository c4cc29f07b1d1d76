/* A flood sender for bench/switch_pps.py: one frame sent over and over on a packet socket, in
 * batches of BATCH (sendmmsg), for SECONDS, as fast as one core sends. It measures the kernel's
 * own forwarding limit, which the Python flood sender is too slow to reach.
 *
 *     flood_sender IFACE SECONDS FRAME_HEX
 *
 * Prints "<frames the socket took> <frames it refused (ENOBUFS)> <seconds>". Compiled by the
 * bench when a C compiler is present; nothing else in the project needs it. */
#define _GNU_SOURCE /* sendmmsg */
#include <errno.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define BATCH 64
#define MAX_FRAME 9216

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int parse_hex(const char *hex, unsigned char *out, size_t cap)
{
    size_t n = strlen(hex);
    if (n % 2 || n / 2 > cap || n == 0)
        return -1;
    for (size_t i = 0; i < n / 2; i++) {
        unsigned int byte;
        if (sscanf(hex + 2 * i, "%2x", &byte) != 1)
            return -1;
        out[i] = (unsigned char)byte;
    }
    return (int)(n / 2);
}

int main(int argc, char **argv)
{
    static unsigned char frame[MAX_FRAME];
    if (argc != 4) {
        fprintf(stderr, "usage: flood_sender IFACE SECONDS FRAME_HEX\n");
        return 2;
    }
    int len = parse_hex(argv[3], frame, sizeof frame);
    double seconds = atof(argv[2]);
    unsigned int ifindex = if_nametoindex(argv[1]);
    if (len < 14 || seconds <= 0 || ifindex == 0) {
        fprintf(stderr, "flood_sender: bad interface, duration or frame\n");
        return 2;
    }
    int fd = socket(AF_PACKET, SOCK_RAW, 0); /* protocol 0: this socket receives nothing */
    struct sockaddr_ll addr = {.sll_family = AF_PACKET, .sll_ifindex = (int)ifindex};
    if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
        perror("flood_sender: packet socket");
        return 1;
    }
    struct iovec iov = {.iov_base = frame, .iov_len = (size_t)len};
    struct mmsghdr msgs[BATCH];
    memset(msgs, 0, sizeof msgs);
    for (int i = 0; i < BATCH; i++) {
        msgs[i].msg_hdr.msg_iov = &iov;
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    long long sent = 0, refused = 0;
    double start = now(), end = start + seconds, t = start;
    while (t < end) {
        int n = sendmmsg(fd, msgs, BATCH, 0);
        if (n < 0) {
            if (errno != ENOBUFS && errno != EAGAIN) {
                perror("flood_sender: sendmmsg");
                return 1;
            }
            refused++;
        } else {
            sent += n;
        }
        t = now();
    }
    printf("%lld %lld %.6f\n", sent, refused, t - start);
    return 0;
}
