/* A switch port's PACKET_MMAP rings (TPACKET_V2), as p4switch/switch/rings.py lays them out:
 * the receive ring first, then the transmit ring, `slot` bytes per slot. */
#ifndef CDP_PORTS_H
#define CDP_PORTS_H

#include <stdint.h>

#define CDP_MAX_FRAME 65536

struct cdp_port {
    int number;               /* the switch's port number */
    int fd;                   /* the AF_PACKET socket the rings belong to */
    int direct_fd;            /* a socket on the same interface for what the ring cannot take */
    uint8_t *rx;              /* receive ring (NULL: none) */
    uint32_t rx_slots, rx_head;
    uint8_t *tx;              /* transmit ring (NULL: none) */
    uint32_t tx_slots, tx_head, tx_pending, tx_max_len;
    uint64_t rx_packets, rx_bytes, tx_packets, tx_bytes, tx_errors, truncated;
    uint32_t slot;            /* bytes per slot of either ring (rings.slot_size) */
};

/* The next received frame, copied into `buf` (802.1Q tag put back); its length, 0 if the
 * ring is empty, -1 for a slot that held no usable frame (skipped: call again). */
int cdp_port_receive(struct cdp_port *port, uint8_t *buf, uint32_t size);

/* Queue a frame on the transmit ring; 0 if its slot is still the kernel's (flush, retry). */
int cdp_port_queue(struct cdp_port *port, const uint8_t *frame, uint32_t len);

/* Transmit a frame as RawPort.send does: queued on the ring until the next flush; when its
 * slot is busy after a flush, or the frame does not fit a slot, sent at once through
 * direct_fd after what is queued. 0 (and a tx error counted) if the kernel refuses it. */
int cdp_port_send(struct cdp_port *port, const uint8_t *frame, uint32_t len);

/* Hand every queued frame to the kernel; the frames it refused are counted as tx errors. */
void cdp_port_flush(struct cdp_port *port);

/* Serve ports[0..n) until `stop_fd` is readable: every frame received on a port is sent on
 * port out_index[i] of the same array (-1: dropped). Returns 0, or -errno. */
int cdp_forward_loop(struct cdp_port *ports, int n, const int *out_index, int stop_fd);

#endif
