/* p4switch/runtime/hashing.py in C; see hashing.h. */
#include "hashing.h"

/* The reflected CRCs go four bits at a time: entry n is n run through four shift steps of the
 * reflected polynomial (CRC-16/ARC: 0xA001, CRC-32: 0xEDB88320). */
static const uint16_t crc16_nibble[16] = {
    0x0000, 0xCC01, 0xD801, 0x1400, 0xF001, 0x3C00, 0x2800, 0xE401,
    0xA001, 0x6C00, 0x7800, 0xB401, 0x5000, 0x9C01, 0x8801, 0x4400,
};
static const uint32_t crc32_nibble[16] = {
    0x00000000, 0x1DB71064, 0x3B6E20C8, 0x26D930AC, 0x76DC4190, 0x6B6B51F4, 0x4DB26158, 0x5005713C,
    0xEDB88320, 0xF00F9344, 0xD6D6A3E8, 0xCB61B38C, 0x9B64C2B0, 0x86D3D2D4, 0xA00AE278, 0xBDBDF21C,
};

uint16_t cdp_crc16(const uint8_t *data, size_t len)
{
    uint16_t crc = 0; /* init 0, no final xor */
    for (size_t i = 0; i < len; i++) {
        crc ^= data[i];
        crc = (crc >> 4) ^ crc16_nibble[crc & 0xF];
        crc = (crc >> 4) ^ crc16_nibble[crc & 0xF];
    }
    return crc;
}

uint32_t cdp_crc32(const uint8_t *data, size_t len)
{
    uint32_t crc = 0xFFFFFFFF; /* init and final xor all ones */
    for (size_t i = 0; i < len; i++) {
        crc ^= data[i];
        crc = (crc >> 4) ^ crc32_nibble[crc & 0xF];
        crc = (crc >> 4) ^ crc32_nibble[crc & 0xF];
    }
    return ~crc;
}

/* The i-th big-endian 16-bit word; an odd last byte is the high byte of a word. */
static uint16_t word16(const uint8_t *data, size_t len, size_t i)
{
    return (uint16_t)(data[i] << 8 | (i + 1 < len ? data[i + 1] : 0));
}

uint16_t cdp_csum16(const uint8_t *data, size_t len)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < len; i += 2)
        sum += word16(data, len, i);
    while (sum >> 16)
        sum = (sum & 0xFFFF) + (sum >> 16);
    return (uint16_t)~sum;
}

uint16_t cdp_xor16(const uint8_t *data, size_t len)
{
    uint16_t x = 0;
    for (size_t i = 0; i < len; i += 2)
        x ^= word16(data, len, i);
    return x;
}

uint64_t cdp_identity(const uint8_t *data, size_t len)
{
    uint64_t v = 0;
    for (size_t i = 0; i < len && i < 8; i++)
        v = v << 8 | data[i];
    return v;
}

/* Bits on their way into whole bytes: `n` (< 8) bits wait in the low bits of `acc`. */
struct bit_writer {
    uint8_t *out;
    size_t pos;
    uint64_t acc;
    unsigned n;
};

static void put_bits(struct bit_writer *w, uint64_t value, unsigned width) /* width <= 56 */
{
    w->acc = w->acc << width | value;
    w->n += width;
    while (w->n >= 8) {
        w->n -= 8;
        w->out[w->pos++] = (uint8_t)(w->acc >> w->n);
    }
    w->acc &= (1u << w->n) - 1;
}

size_t cdp_pack_fields(uint8_t *out, const uint64_t *values, const uint8_t *widths, size_t count)
{
    struct bit_writer w = {out, 0, 0, 0};
    for (size_t i = 0; i < count; i++) {
        unsigned width = widths[i];
        uint64_t v = width >= 64 ? values[i] : values[i] & ((UINT64_C(1) << width) - 1);
        if (width > 32) { /* in two parts, so that the accumulator never overflows */
            put_bits(&w, v >> 32, width - 32);
            width = 32;
        }
        put_bits(&w, v & 0xFFFFFFFF, width);
    }
    if (w.n)
        w.out[w.pos++] = (uint8_t)(w.acc << (8 - w.n));
    return w.pos;
}
