/* RoCEv2 frames as traffic/frames.py builds them (the layouts traffic/wire.py derives from
 * the scapy layers): Ether / IPv4 (the data DSCP, ECT(0), DF) / UDP 4791 (source port: the
 * connection's entropy, checksum 0) / BTH / RETH on WRITE FIRST and ONLY, AETH on ACK /
 * payload / ICRC. A received frame may carry the DLB reorder tag (IPv4 protocol 253) and the
 * INT shim (254) between IPv4 and UDP; the ICRC covers the packet without them.
 *
 * ICRC (IBA annex A17): CRC-32 over 8 bytes of 0xff, the IPv4 header with TOS, TTL and checksum
 * all ones, the UDP header with its checksum all ones, the BTH with its FECN/BECN byte all
 * ones, and the rest; least significant byte first. */
#include "engine.h"

#include <string.h>

#define ETH_LEN 14
#define IP_LEN 20
#define UDP_LEN 8
#define BTH_LEN 12
#define RETH_LEN 16
#define AETH_LEN 4
#define ICRC_LEN 4
#define ROCE_PORT 4791
#define TAG_PROTO 253
#define TAG_LEN 8
#define INT_PROTO 254
#define INT_SHIM_LEN 4
#define INT_HOP_LEN 24
#define PFC_TYPE 0x8808
#define PFC_OPCODE 0x0101
#define OP_ACK 0x11

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void make_table(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
}

/* Eight bytes a step with tables (any CPU). `crc` is the register, not inverted. */
static uint32_t crc_tables(uint32_t crc, const uint8_t *p, size_t n)
{
    while (n && ((uintptr_t)p & 7)) {
        crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
        n--;
    }
    while (n >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
        lo ^= crc;
        crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
              table[4][lo >> 24] ^ table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
              table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__)
#include <immintrin.h>

/* Carry-less multiplication folding (Gopal et al., "Fast CRC Computation for Generic
 * Polynomials Using PCLMULQDQ Instruction", Intel 2009), with the bit-reflected constants of
 * the IEEE polynomial: x^(k) mod P for the fold distances, then a Barrett reduction.
 * n >= 64 and a multiple of 16; `crc` is the register, not inverted. */
__attribute__((target("pclmul,sse4.1")))
static uint32_t crc_folded(uint32_t crc, const uint8_t *p, size_t n)
{
    const __m128i k1k2 = _mm_set_epi64x(0x01c6e41596, 0x0154442bd4);
    const __m128i k3k4 = _mm_set_epi64x(0x00ccaa009e, 0x01751997d0);
    const __m128i k5 = _mm_set_epi64x(0, 0x0163cd6124);
    const __m128i barrett = _mm_set_epi64x(0x01f7011641, 0x01db710641);
    const __m128i low32 = _mm_setr_epi32(~0, 0, ~0, 0);
    __m128i x1 = _mm_loadu_si128((const __m128i *)(p + 0));
    __m128i x2 = _mm_loadu_si128((const __m128i *)(p + 16));
    __m128i x3 = _mm_loadu_si128((const __m128i *)(p + 32));
    __m128i x4 = _mm_loadu_si128((const __m128i *)(p + 48));
    x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)crc));
    p += 64, n -= 64;
    for (; n >= 64; p += 64, n -= 64) {  /* four lanes, 64 bytes a round */
        __m128i *lanes[4] = {&x1, &x2, &x3, &x4};
        for (int k = 0; k < 4; k++) {
            __m128i lo = _mm_clmulepi64_si128(*lanes[k], k1k2, 0x00);
            __m128i hi = _mm_clmulepi64_si128(*lanes[k], k1k2, 0x11);
            *lanes[k] = _mm_xor_si128(_mm_xor_si128(lo, hi),
                                      _mm_loadu_si128((const __m128i *)(p + 16 * k)));
        }
    }
    __m128i next[3] = {x2, x3, x4};
    for (int k = 0; k < 3; k++)  /* the four lanes into one */
        x1 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x1, k3k4, 0x00),
                                         _mm_clmulepi64_si128(x1, k3k4, 0x11)), next[k]);
    for (; n >= 16; p += 16, n -= 16)
        x1 = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x1, k3k4, 0x00),
                                         _mm_clmulepi64_si128(x1, k3k4, 0x11)),
                           _mm_loadu_si128((const __m128i *)p));
    /* 128 bits to 64, to 32 */
    x2 = _mm_clmulepi64_si128(x1, k3k4, 0x10);
    x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), x2);
    x2 = _mm_srli_si128(x1, 4);
    x1 = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x1, low32), k5, 0x00), x2);
    x2 = _mm_clmulepi64_si128(_mm_and_si128(x1, low32), barrett, 0x10);
    x2 = _mm_clmulepi64_si128(_mm_and_si128(x2, low32), barrett, 0x00);
    x1 = _mm_xor_si128(x1, x2);
    return (uint32_t)_mm_extract_epi32(x1, 1);
}

static bool folding(void)
{
    static int has = -1;
    if (has < 0)
        has = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
    return has;
}
#endif

/* zlib's crc32: the same polynomial and conditioning. */
uint32_t crc32_ieee(uint32_t crc, const uint8_t *p, size_t n)
{
    pthread_once(&table_once, make_table);
    crc = ~crc;
#if defined(__x86_64__)
    if (n >= 64 && folding()) {
        size_t whole = n & ~(size_t)15;
        crc = crc_folded(crc, p, whole);
        p += whole, n -= whole;
    }
#endif
    return ~crc_tables(crc, p, n);
}

static void put16(uint8_t *at, uint32_t v) { at[0] = (uint8_t)(v >> 8), at[1] = (uint8_t)v; }
static void put24(uint8_t *at, uint32_t v)
{
    at[0] = (uint8_t)(v >> 16), at[1] = (uint8_t)(v >> 8), at[2] = (uint8_t)v;
}
static void put32(uint8_t *at, uint32_t v) { put16(at, v >> 16), put16(at + 2, v); }
static uint32_t get16(const uint8_t *at) { return (uint32_t)at[0] << 8 | at[1]; }
static uint32_t get24(const uint8_t *at) { return (uint32_t)at[0] << 16 | get16(at + 1); }
static uint32_t get32(const uint8_t *at) { return get16(at) << 16 | get16(at + 2); }

static uint32_t ip_checksum(const uint8_t *ip)
{
    uint32_t sum = 0;
    for (int i = 0; i < IP_LEN; i += 2)
        sum += get16(ip + i);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return ~sum & 0xffff;
}

/* The ICRC of a RoCE packet whose IPv4 header (as if untagged) is `ip`, UDP header `udp`, and
 * BTH on are `bth`..`end` (the ICRC's own four bytes excluded). */
static uint32_t icrc(const uint8_t *ip, const uint8_t *udp, const uint8_t *bth, const uint8_t *end)
{
    uint8_t head[8 + IP_LEN + UDP_LEN + 8];
    memset(head, 0xff, 8);
    memcpy(head + 8, ip, IP_LEN);
    head[8 + 1] = 0xff, head[8 + 8] = 0xff, head[8 + 10] = 0xff, head[8 + 11] = 0xff;
    memcpy(head + 8 + IP_LEN, udp, UDP_LEN);
    head[8 + IP_LEN + 6] = 0xff, head[8 + IP_LEN + 7] = 0xff;
    memcpy(head + 8 + IP_LEN + UDP_LEN, bth, 8);
    head[8 + IP_LEN + UDP_LEN + 4] = 0xff;
    uint32_t crc = crc32_ieee(0, head, sizeof head);
    return crc32_ieee(crc, bth + 8, (size_t)(end - (bth + 8)));
}

/* Ether / IPv4 / UDP / BTH for a packet of `l4_len` bytes after the IPv4 header; returns
 * where the BTH starts. */
static uint8_t *headers(uint8_t *f, const struct ccl_engine *e, const struct conn *c,
                        uint32_t port, uint32_t l4_len, uint8_t opcode, uint32_t psn, bool ackreq)
{
    const struct ccl_peer *peer = &e->peers[c->peer];
    memcpy(f, peer->mac, 6);
    memcpy(f + 6, e->ports[port].cfg.mac, 6);
    put16(f + 12, 0x0800);
    uint8_t *ip = f + ETH_LEN;
    ip[0] = 0x45;
    ip[1] = (uint8_t)(e->cfg.dscp << 2 | 2); /* ECT(0) */
    put16(ip + 2, IP_LEN + l4_len);
    put16(ip + 4, 0);
    put16(ip + 6, 0x4000); /* DF */
    ip[8] = 64;
    ip[9] = 17;
    put16(ip + 10, 0);
    memcpy(ip + 12, &e->cfg.ip, 4);
    memcpy(ip + 16, &peer->ip, 4);
    put16(ip + 10, ip_checksum(ip));
    uint8_t *udp = ip + IP_LEN;
    put16(udp, c->sport);
    put16(udp + 2, ROCE_PORT);
    put16(udp + 4, l4_len);
    put16(udp + 6, 0);
    uint8_t *bth = udp + UDP_LEN;
    bth[0] = opcode;
    bth[1] = 0;
    put16(bth + 2, 0xffff);
    bth[4] = 0;
    put24(bth + 5, c->qpn);
    bth[8] = ackreq ? 0x80 : 0;
    put24(bth + 9, psn & 0xffffff);
    return bth;
}

static uint32_t finish(uint8_t *f, uint8_t *end)
{
    uint8_t *ip = f + ETH_LEN;
    uint32_t crc = icrc(ip, ip + IP_LEN, ip + IP_LEN + UDP_LEN, end);
    end[0] = (uint8_t)crc, end[1] = (uint8_t)(crc >> 8), end[2] = (uint8_t)(crc >> 16),
    end[3] = (uint8_t)(crc >> 24);
    return (uint32_t)(end + ICRC_LEN - f);
}

uint32_t wire_data(uint8_t *f, const struct ccl_engine *e, const struct conn *c, uint8_t opcode,
                   uint32_t psn, bool ackreq, const struct txmsg *m, const uint8_t *payload,
                   uint32_t len)
{
    bool reth = opcode == 0x06 || opcode == 0x0a;
    uint32_t l4 = UDP_LEN + BTH_LEN + (reth ? RETH_LEN : 0) + len + ICRC_LEN;
    uint8_t *at = headers(f, e, c, c->port, l4, opcode, psn, ackreq) + BTH_LEN;
    if (reth) {
        put32(at, (uint32_t)(m->va >> 32));
        put32(at + 4, (uint32_t)m->va);
        put32(at + 8, m->rkey);
        put32(at + 12, (uint32_t)m->len);
        at += RETH_LEN;
    }
    memcpy(at, payload, len);
    return finish(f, at + len);
}

uint32_t wire_ack(uint8_t *f, const struct ccl_engine *e, const struct conn *c, uint8_t syndrome,
                  uint32_t psn, uint32_t msn)
{
    uint32_t l4 = UDP_LEN + BTH_LEN + AETH_LEN + ICRC_LEN;
    uint8_t *at = headers(f, e, c, c->rx_port, l4, OP_ACK, psn, false) + BTH_LEN;
    at[0] = syndrome;
    put24(at + 1, msn & 0xffffff);
    return finish(f, at + AETH_LEN);
}

int wire_parse(const uint8_t *f, uint32_t len, struct roce *out, uint16_t *pause_quanta,
               uint32_t prio)
{
    if (len < ETH_LEN + 4)
        return WIRE_NOT_OURS;
    uint32_t type = get16(f + 12);
    if (type == PFC_TYPE) {
        if (len < ETH_LEN + 20 || get16(f + ETH_LEN) != PFC_OPCODE ||
            !(get16(f + ETH_LEN + 2) & (1u << prio)))
            return WIRE_NOT_OURS;
        *pause_quanta = (uint16_t)get16(f + ETH_LEN + 4 + 2 * prio);
        return WIRE_PAUSE;
    }
    if (type != 0x0800 || len < ETH_LEN + IP_LEN || f[ETH_LEN] != 0x45)
        return WIRE_NOT_OURS;
    const uint8_t *ip = f + ETH_LEN;
    uint32_t ip_len = get16(ip + 2);
    if (ip_len > len - ETH_LEN)
        return WIRE_NOT_OURS;
    const uint8_t *l4 = ip + IP_LEN, *ip_end = ip + ip_len;
    uint32_t proto = ip[9], shims = 0;
    if (proto == TAG_PROTO && l4 + TAG_LEN <= ip_end) {
        proto = l4[0];
        l4 += TAG_LEN, shims += TAG_LEN;
    }
    if (proto == INT_PROTO && l4 + INT_SHIM_LEN <= ip_end) {
        uint32_t shim = INT_SHIM_LEN + INT_HOP_LEN * l4[3];
        proto = l4[0];
        l4 += shim, shims += shim;
    }
    if (proto != 17 || l4 + UDP_LEN + BTH_LEN + ICRC_LEN > ip_end || get16(l4 + 2) != ROCE_PORT)
        return WIRE_NOT_OURS;
    const uint8_t *bth = l4 + UDP_LEN;
    uint8_t plain[IP_LEN];
    memcpy(plain, ip, IP_LEN);
    plain[9] = 17;
    put16(plain + 2, ip_len - shims);
    uint32_t crc = icrc(plain, l4, bth, ip_end - ICRC_LEN);
    const uint8_t *c = ip_end - ICRC_LEN;
    if (crc != ((uint32_t)c[0] | (uint32_t)c[1] << 8 | (uint32_t)c[2] << 16 | (uint32_t)c[3] << 24))
        return WIRE_BAD_ICRC;
    memcpy(&out->src_ip, ip + 12, 4);
    out->ecn = ip[1] & 3;
    out->opcode = bth[0];
    out->qpn = get24(bth + 5);
    out->ackreq = bth[8] >> 7;
    out->psn = get24(bth + 9);
    const uint8_t *at = bth + BTH_LEN;
    if (out->opcode == 0x06 || out->opcode == 0x0a) {
        if (at + RETH_LEN > c)
            return WIRE_NOT_OURS;
        out->va = (uint64_t)get32(at) << 32 | get32(at + 4);
        out->rkey = get32(at + 8);
        out->dlen = get32(at + 12);
        at += RETH_LEN;
    } else if (out->opcode == OP_ACK) {
        if (at + AETH_LEN > c)
            return WIRE_NOT_OURS;
        out->syndrome = at[0];
        out->msn = get24(at + 1);
        at += AETH_LEN;
    }
    out->payload = at;
    out->payload_len = (uint32_t)(c - at);
    return WIRE_ROCE;
}
