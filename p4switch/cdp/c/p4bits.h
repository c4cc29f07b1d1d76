/* What the generated C of a P4 program (p4switch/cdp/gen) calls: bit<W>/int<W> arithmetic with
 * P4's semantics, and big-endian access to a packet's bits.
 *
 * Values: bit<W> (W <= 64) is a uint64_t below 2^W, int<W> an int64_t sign-extended from bit
 * W-1; wider fields are big-endian byte arrays, the value in the low bits (right-aligned).
 * Bits are numbered from the first byte's most significant bit, as on the wire. */
#ifndef CDP_P4BITS_H
#define CDP_P4BITS_H

#include <stdint.h>
#include <string.h>

#define P4_MASK(w) ((w) >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << (w)) - 1)

/* ---- arithmetic ---------------------------------------------------------------------------- */

/* The low `w` bits of v as int<w> (1 <= w <= 64). */
static inline int64_t p4_sext(uint64_t v, unsigned w)
{
    uint64_t sign = UINT64_C(1) << (w - 1);
    return (int64_t)(((v & P4_MASK(w)) ^ sign) - sign);
}

/* a << b in bit<w>: 0 once b >= w. */
static inline uint64_t p4_shl(uint64_t a, uint64_t b, unsigned w)
{
    return b < w ? (a << b) & P4_MASK(w) : 0;
}

static inline int64_t p4_shl_s(int64_t a, uint64_t b, unsigned w)
{
    return b < w ? p4_sext((uint64_t)a << b, w) : 0;
}

static inline uint64_t p4_shr(uint64_t a, uint64_t b)
{
    return b < 64 ? a >> b : 0;
}

/* Arithmetic shift: the sign fills in (-1 or 0 once b >= w). */
static inline int64_t p4_shr_s(int64_t a, uint64_t b)
{
    return a >> (b < 63 ? b : 63);
}

/* |+| and |-| on bit<w> (max = 2^w - 1). */
static inline uint64_t p4_sat_add(uint64_t a, uint64_t b, uint64_t max)
{
    uint64_t s = a + b;
    return s < a || s > max ? max : s;
}

static inline uint64_t p4_sat_sub(uint64_t a, uint64_t b)
{
    return a > b ? a - b : 0;
}

/* |+| and |-| on int<w>. */
static inline int64_t p4_clamp_s(int64_t v, unsigned w)
{
    int64_t max = (int64_t)(P4_MASK(w - 1)), min = -max - 1;
    return v > max ? max : v < min ? min : v;
}

static inline int64_t p4_sat_add_s(int64_t a, int64_t b, unsigned w)
{
    int64_t s;
    if (__builtin_add_overflow(a, b, &s))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return p4_clamp_s(s, w);
}

static inline int64_t p4_sat_sub_s(int64_t a, int64_t b, unsigned w)
{
    int64_t s;
    if (__builtin_sub_overflow(a, b, &s))
        return b < 0 ? INT64_MAX : INT64_MIN;
    return p4_clamp_s(s, w);
}

/* Division and modulo by zero give 0, as p4switch's Python pipeline has it. */
static inline uint64_t p4_div(uint64_t a, uint64_t b) { return b ? a / b : 0; }
static inline uint64_t p4_mod(uint64_t a, uint64_t b) { return b ? a % b : 0; }

/* Index `i` of a header stack of `size` in the parser: out of range sets *bad (the parser
 * stops with StackOutOfBounds after the expression) and reads element 0 meanwhile. */
static inline uint32_t p4_checked(int64_t i, uint32_t size, int *bad)
{
    if (i >= 0 && i < (int64_t)size)
        return (uint32_t)i;
    *bad = 1;
    return 0;
}

/* ---- packet bytes ------------------------------------------------------------------------- */

/* n (1..8) bytes at p as a big-endian number. */
static inline uint64_t p4_load_be(const uint8_t *p, unsigned n)
{
    uint16_t v16;
    uint32_t v32;
    uint64_t v64;
    switch (n) {
    case 1: return p[0];
    case 2: memcpy(&v16, p, 2); return __builtin_bswap16(v16);
    case 4: memcpy(&v32, p, 4); return __builtin_bswap32(v32);
    case 8: memcpy(&v64, p, 8); return __builtin_bswap64(v64);
    default:
        v64 = 0;
        for (unsigned i = 0; i < n; i++)
            v64 = v64 << 8 | p[i];
        return v64;
    }
}

static inline void p4_store_be(uint8_t *p, unsigned n, uint64_t v)
{
    uint16_t v16;
    uint32_t v32;
    switch (n) {
    case 1: p[0] = (uint8_t)v; return;
    case 2: v16 = __builtin_bswap16((uint16_t)v); memcpy(p, &v16, 2); return;
    case 4: v32 = __builtin_bswap32((uint32_t)v); memcpy(p, &v32, 4); return;
    case 8: v = __builtin_bswap64(v); memcpy(p, &v, 8); return;
    default:
        for (unsigned i = n; i-- > 0; v >>= 8)
            p[i] = (uint8_t)v;
    }
}

static inline unsigned p4_bit(const uint8_t *p, uint64_t bit)
{
    return (p[bit >> 3] >> (7 - (bit & 7))) & 1;
}

/* w (0..64) bits of p from bit `at`. */
static inline uint64_t p4_get_bits(const uint8_t *p, uint64_t at, unsigned w)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < w; i++)
        v = v << 1 | p4_bit(p, at + i);
    return v;
}

/* Store the w (0..64) low bits of v at bit `at` of p; the other bits of p are kept. */
static inline void p4_put_bits(uint8_t *p, uint64_t at, unsigned w, uint64_t v)
{
    for (unsigned i = 0; i < w; i++) {
        uint64_t b = at + i;
        uint8_t m = (uint8_t)(0x80 >> (b & 7));
        if ((v >> (w - 1 - i)) & 1)
            p[b >> 3] |= m;
        else
            p[b >> 3] &= (uint8_t)~m;
    }
}

/* w bits of p from bit `at` into the right-aligned big-endian array dst[size]. */
static inline void p4_get_wide(const uint8_t *p, uint64_t at, uint64_t w, uint8_t *dst,
                               uint32_t size)
{
    uint64_t first = (uint64_t)size * 8 - w;  /* dst's bit of the value's first bit */
    memset(dst, 0, size);
    if ((at & 7) == 0 && (w & 7) == 0) {
        memcpy(dst + (first >> 3), p + (at >> 3), w >> 3);
        return;
    }
    for (uint64_t i = 0; i < w; i++)
        if (p4_bit(p, at + i))
            dst[(first + i) >> 3] |= (uint8_t)(0x80 >> ((first + i) & 7));
}

/* The w low bits of the right-aligned big-endian array src[size] to bit `at` of p. */
static inline void p4_put_wide(uint8_t *p, uint64_t at, uint64_t w, const uint8_t *src,
                               uint32_t size)
{
    uint64_t first = (uint64_t)size * 8 - w;
    if ((at & 7) == 0 && (w & 7) == 0) {
        memcpy(p + (at >> 3), src + (first >> 3), w >> 3);
        return;
    }
    for (uint64_t i = 0; i < w; i++) {
        uint64_t b = at + i;
        uint8_t m = (uint8_t)(0x80 >> (b & 7));
        if (p4_bit(src, first + i))
            p[b >> 3] |= m;
        else
            p[b >> 3] &= (uint8_t)~m;
    }
}

/* A right-aligned big-endian array as n 64-bit words, the most significant first. */
static inline void p4_words(const uint8_t *src, uint32_t size, uint64_t *out, unsigned n)
{
    for (unsigned k = 0; k < n; k++)
        out[k] = 0;
    for (uint32_t i = 0; i < size; i++) {
        uint32_t from_end = size - 1 - i;  /* byte's position from the least significant */
        unsigned word = n - 1 - from_end / 8;
        if (from_end / 8 < n)
            out[word] |= (uint64_t)src[i] << (8 * (from_end % 8));
    }
}

#endif
