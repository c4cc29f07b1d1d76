/* PACKET_MMAP rings and the epoll loop of the C data plane (Documentation/networking/
 * packet_mmap.rst); the Python twin is p4switch/switch/rings.py. */
#include "ports.h"

#include <errno.h>
#include <linux/if_packet.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define TX_DATA_AT (TPACKET2_HDRLEN - sizeof(struct sockaddr_ll))
#define MIN_FRAME 14
#define BATCH 64

static inline struct tpacket2_hdr *slot(const struct cdp_port *p, uint8_t *ring, uint32_t index)
{
    return (struct tpacket2_hdr *)(ring + (size_t)index * p->slot);
}

static inline uint32_t status_of(struct tpacket2_hdr *h)
{
    return atomic_load_explicit((_Atomic uint32_t *)&h->tp_status, memory_order_acquire);
}

static inline void set_status(struct tpacket2_hdr *h, uint32_t status)
{
    atomic_store_explicit((_Atomic uint32_t *)&h->tp_status, status, memory_order_release);
}

/* Put an 802.1Q tag back after the MAC addresses of the `len`-byte frame in `buf`. */
static int with_tag(uint8_t *buf, int len, uint32_t size, const struct tpacket2_hdr *h)
{
    if (len < 12 || (uint32_t)len + 4 > size)
        return len;
    uint16_t tpid = (h->tp_status & TP_STATUS_VLAN_TPID_VALID) ? h->tp_vlan_tpid : 0x8100;
    memmove(buf + 16, buf + 12, (size_t)len - 12);
    buf[12] = tpid >> 8, buf[13] = tpid & 0xff;
    buf[14] = h->tp_vlan_tci >> 8, buf[15] = h->tp_vlan_tci & 0xff;
    return len + 4;
}

int cdp_port_receive(struct cdp_port *p, uint8_t *buf, uint32_t size)
{
    struct tpacket2_hdr *h = slot(p, p->rx, p->rx_head);
    uint32_t status = status_of(h);
    if (!(status & TP_STATUS_USER))
        return 0;
    struct sockaddr_ll *ll = (struct sockaddr_ll *)((uint8_t *)h + TPACKET_ALIGN(sizeof *h));
    int len = -1;
    if (status & TP_STATUS_COPY) { /* larger than a slot: the whole frame is on the socket */
        ssize_t got = recv(p->fd, buf, size, MSG_DONTWAIT);
        len = got > 0 ? (int)got : -1;
    } else if (h->tp_snaplen == h->tp_len && h->tp_snaplen <= size) {
        memcpy(buf, (uint8_t *)h + h->tp_mac, h->tp_snaplen);
        len = (int)h->tp_snaplen;
    }
    if (len < 0)
        p->truncated++;
    else if (ll->sll_pkttype == PACKET_OUTGOING)
        len = -1;
    else if (status & TP_STATUS_VLAN_VALID)
        len = with_tag(buf, len, size, h);
    set_status(h, TP_STATUS_KERNEL);
    p->rx_head = p->rx_head + 1 < p->rx_slots ? p->rx_head + 1 : 0;
    if (len > 0) {
        p->rx_packets++;
        p->rx_bytes += (uint64_t)len;
    }
    return len;
}

int cdp_port_queue(struct cdp_port *p, const uint8_t *frame, uint32_t len)
{
    struct tpacket2_hdr *h = slot(p, p->tx, p->tx_head);
    if (status_of(h) != TP_STATUS_AVAILABLE)
        return 0;
    memcpy((uint8_t *)h + TX_DATA_AT, frame, len);
    h->tp_len = h->tp_snaplen = len;
    set_status(h, TP_STATUS_SEND_REQUEST);
    p->tx_head = p->tx_head + 1 < p->tx_slots ? p->tx_head + 1 : 0;
    p->tx_pending++;
    return 1;
}

/* The first queued frame the kernel has not taken, and how many are left from it on. */
static uint32_t unsent(struct cdp_port *p, uint32_t *first)
{
    for (uint32_t back = p->tx_pending; back > 0; back--) {
        uint32_t index = (p->tx_head + p->tx_slots - back) % p->tx_slots;
        if (status_of(slot(p, p->tx, index)) == TP_STATUS_SEND_REQUEST) {
            *first = index;
            return back;
        }
    }
    *first = p->tx_head;
    return 0;
}

static void refuse(struct cdp_port *p, struct tpacket2_hdr *h)
{
    p->tx_errors++;
    p->tx_packets--;
    p->tx_bytes -= h->tp_len;
}

void cdp_port_flush(struct cdp_port *p)
{
    int retried = 0;
    while (p->tx_pending) {
        if (send(p->fd, NULL, 0, MSG_DONTWAIT) >= 0) {
            p->tx_pending = 0;
            break;
        }
        uint32_t first, left;
        if (errno == ENOBUFS) { /* that frame is lost; the ones after it still go out */
            left = unsent(p, &first);
            p->tx_pending = left;
            if (left) {
                struct tpacket2_hdr *h = slot(p, p->tx, first);
                refuse(p, h);
                h->tp_len = h->tp_snaplen = 0; /* the kernel skips it (PACKET_LOSS) */
            }
            continue;
        }
        if (!retried) { /* the error may be a stale one (down and up again) */
            retried = 1;
            continue;
        }
        left = unsent(p, &first); /* the interface refused them all: take them back */
        for (uint32_t k = 0; k < left; k++) {
            struct tpacket2_hdr *h = slot(p, p->tx, (first + k) % p->tx_slots);
            if (h->tp_len)
                refuse(p, h);
            set_status(h, TP_STATUS_KERNEL);
        }
        p->tx_head = first;
        p->tx_pending = 0;
    }
}

int cdp_port_send(struct cdp_port *p, const uint8_t *frame, uint32_t len)
{
    int queued = 0;
    if (len >= MIN_FRAME && len <= p->tx_max_len) {
        queued = cdp_port_queue(p, frame, len);
        if (!queued) { /* its slot is busy: hand the ring to the kernel, then try again */
            cdp_port_flush(p);
            queued = cdp_port_queue(p, frame, len);
        }
    }
    if (!queued) {
        cdp_port_flush(p); /* what is queued goes first */
        if (send(p->direct_fd, frame, len, 0) < 0) {
            p->tx_errors++;
            return 0;
        }
    }
    p->tx_packets++;
    p->tx_bytes += len;
    return 1;
}

int cdp_forward_loop(struct cdp_port *ports, int n, const int *out_index, int stop_fd)
{
    uint8_t *buf = malloc(CDP_MAX_FRAME);
    if (!buf)
        return -ENOMEM;
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0) {
        free(buf);
        return -errno;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = (uint32_t)n};
    if (epoll_ctl(ep, EPOLL_CTL_ADD, stop_fd, &ev) < 0)
        goto fail;
    for (int i = 0; i < n; i++) {
        ev.data.u32 = (uint32_t)i;
        if (epoll_ctl(ep, EPOLL_CTL_ADD, ports[i].fd, &ev) < 0)
            goto fail;
    }
    struct epoll_event ready[16];
    for (;;) {
        int k = epoll_wait(ep, ready, 16, -1);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            goto fail;
        }
        for (int e = 0; e < k; e++) {
            uint32_t i = ready[e].data.u32;
            if (i == (uint32_t)n) {
                close(ep);
                free(buf);
                return 0;
            }
            struct cdp_port *in = &ports[i];
            int out = out_index[i];
            int taken = 0;
            for (; taken < BATCH; taken++) {
                int len = cdp_port_receive(in, buf, CDP_MAX_FRAME);
                if (len == 0)
                    break;
                if (len > 0 && out >= 0)
                    cdp_port_send(&ports[out], buf, (uint32_t)len);
            }
            if (!taken) { /* woken for an error (the link went down): clear it, or we spin */
                int err;
                socklen_t size = sizeof err;
                getsockopt(in->fd, SOL_SOCKET, SO_ERROR, &err, &size);
            }
        }
        for (int i = 0; i < n; i++)
            if (ports[i].tx_pending)
                cdp_port_flush(&ports[i]);
    }
fail:;
    int err = errno;
    close(ep);
    free(buf);
    return -err;
}
