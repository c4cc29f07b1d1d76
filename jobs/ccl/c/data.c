/* Datatypes, reductions, and the data a run is checked with.
 *
 * Every rank fills its input with values of (seed, rank, element index), chosen so that any
 * order of reduction gives the same bits: for sum and avg small integers (all partial sums are
 * exact in the type), for prod signed powers of two (exact products), for min, max and the
 * collectives that only move data any value of the type. The check then compares the output
 * bit for bit with what the collective promises, computed here from the same values with the
 * same kernels (nccl-tests' verifiable data has the same property; these values are simpler).
 * Half and bfloat16 are computed in float and rounded to nearest even, as GPUs do. */
#include "engine.h"

#include <math.h>
#include <string.h>

size_t dtype_size(uint32_t dtype)
{
    static const size_t size[CCL_NTYPES] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
    return dtype < CCL_NTYPES ? size[dtype] : 0;
}

/* ---- half and bfloat16 ------------------------------------------------------------------ */
static float half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000 | (mant << 13);
    } else if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else {  /* subnormal: normalise */
            int e = -1;
            do {
                e++;
                mant <<= 1;
            } while (!(mant & 0x400));
            bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((mant & 0x3ff) << 13);
        }
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static uint16_t float_to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000;
    int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
    uint32_t mant = x & 0x7fffff;
    if (((x >> 23) & 0xff) == 0xff)  /* inf, nan */
        return (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
    if (exp >= 0x1f)
        return (uint16_t)(sign | 0x7c00);
    if (exp <= 0) {  /* subnormal or zero */
        if (exp < -10)
            return (uint16_t)sign;
        mant |= 0x800000;
        uint32_t shift = (uint32_t)(14 - exp);
        uint32_t half = mant >> shift, rest = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
        if (rest > mid || (rest == mid && (half & 1)))
            half++;
        return (uint16_t)(sign | half);
    }
    uint32_t half = ((uint32_t)exp << 10) | (mant >> 13), rest = mant & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (half & 1)))
        half++;  /* may carry into the exponent, up to inf: correct */
    return (uint16_t)(sign | half);
}

static float bf16_to_float(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static uint16_t float_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000)
        return (uint16_t)((x >> 16) | 0x40);  /* quiet nan */
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

/* ---- kernels ----------------------------------------------------------------------------- */
#define OP_SUM(a, b) ((a) + (b))
#define OP_PROD(a, b) ((a) * (b))
#define OP_MAX(a, b) ((a) > (b) ? (a) : (b))
#define OP_MIN(a, b) ((a) < (b) ? (a) : (b))

/* Element types that may sit anywhere (a packet's payload need not be aligned). */
typedef int8_t i8u;
typedef uint8_t u8u;
typedef int32_t i32u __attribute__((aligned(1), may_alias));
typedef uint32_t u32u __attribute__((aligned(1), may_alias));
typedef int64_t i64u __attribute__((aligned(1), may_alias));
typedef uint64_t u64u __attribute__((aligned(1), may_alias));
typedef float f32u __attribute__((aligned(1), may_alias));
typedef double f64u __attribute__((aligned(1), may_alias));

/* dst[i] = a[i] OP b[i]; integers wrap (computed unsigned); dst may be a. */
#define KERNEL(T, CALC, OP)                                                                \
    {                                                                                     \
        const T *x = (const T *)a, *y = (const T *)b;                                     \
        T *z = (T *)dst;                                                                  \
        for (uint64_t i = 0; i < n; i++)                                                  \
            z[i] = (T)OP((CALC)x[i], (CALC)y[i]);                                         \
    }

#define KERNELS(T, CALC)                                                                  \
    switch (op) {                                                                         \
    case CCL_SUM: case CCL_AVG: KERNEL(T, CALC, OP_SUM) break;                            \
    case CCL_PROD: KERNEL(T, CALC, OP_PROD) break;                                        \
    case CCL_MAX: KERNEL(T, T, OP_MAX) break;                                             \
    case CCL_MIN: KERNEL(T, T, OP_MIN) break;                                             \
    default: memcpy(dst, b, n * sizeof(T)); break;                                        \
    }

#define NARROW(TO_F, FROM_F, OP)                                                          \
    for (uint64_t i = 0; i < n; i++) {                                                    \
        uint16_t x, y, z;                                                                 \
        memcpy(&x, a + 2 * i, 2);                                                         \
        memcpy(&y, b + 2 * i, 2);                                                         \
        z = FROM_F(OP(TO_F(x), TO_F(y)));                                                 \
        memcpy(dst + 2 * i, &z, 2);                                                       \
    }

#define NARROWS(TO_F, FROM_F)                                                             \
    switch (op) {                                                                         \
    case CCL_SUM: case CCL_AVG: NARROW(TO_F, FROM_F, OP_SUM) break;                       \
    case CCL_PROD: NARROW(TO_F, FROM_F, OP_PROD) break;                                   \
    case CCL_MAX: NARROW(TO_F, FROM_F, OP_MAX) break;                                     \
    case CCL_MIN: NARROW(TO_F, FROM_F, OP_MIN) break;                                     \
    default: memcpy(dst, b, n * 2); break;                                                \
    }

__attribute__((optimize("O3")))  /* the loops above vectorize */
void data_reduce(uint32_t dtype, uint32_t op, uint8_t *dst, const uint8_t *a, const uint8_t *b,
                 uint64_t bytes)
{
    uint64_t n = bytes / dtype_size(dtype);
    switch (dtype) {
    case CCL_INT8: KERNELS(i8u, uint8_t) break;
    case CCL_UINT8: KERNELS(u8u, uint8_t) break;
    case CCL_INT32: KERNELS(i32u, uint32_t) break;
    case CCL_UINT32: KERNELS(u32u, uint32_t) break;
    case CCL_INT64: KERNELS(i64u, uint64_t) break;
    case CCL_UINT64: KERNELS(u64u, uint64_t) break;
    case CCL_FLOAT: KERNELS(f32u, float) break;
    case CCL_DOUBLE: KERNELS(f64u, double) break;
    case CCL_HALF: NARROWS(half_to_float, float_to_half) break;
    case CCL_BFLOAT16: NARROWS(bf16_to_float, float_to_bf16) break;
    default: break;
    }
}

/* avg: the sum divided by the number of ranks, once, where the sum is complete (integers
 * truncate, as nccl-tests' integral average). */
#define DIVIDE(T, CALC)                                                                   \
    for (uint64_t i = 0; i < n; i++) {                                                    \
        T x;                                                                              \
        memcpy(&x, dst + i * sizeof(T), sizeof(T));                                       \
        x = (T)((CALC)x / (CALC)nranks);                                                  \
        memcpy(dst + i * sizeof(T), &x, sizeof(T));                                       \
    }
#define DIVIDE_NARROW(TO_F, FROM_F)                                                       \
    for (uint64_t i = 0; i < n; i++) {                                                    \
        uint16_t x;                                                                       \
        memcpy(&x, dst + 2 * i, 2);                                                       \
        x = FROM_F(TO_F(x) / (float)nranks);                                              \
        memcpy(dst + 2 * i, &x, 2);                                                       \
    }

void data_postop(uint32_t dtype, uint32_t op, uint8_t *dst, uint64_t bytes, uint32_t nranks)
{
    if (op != CCL_AVG || nranks == 0)
        return;
    uint64_t n = bytes / dtype_size(dtype);
    switch (dtype) {
    case CCL_INT8: DIVIDE(int8_t, int64_t) break;
    case CCL_UINT8: DIVIDE(uint8_t, uint64_t) break;
    case CCL_INT32: DIVIDE(int32_t, int64_t) break;
    case CCL_UINT32: DIVIDE(uint32_t, uint64_t) break;
    case CCL_INT64: DIVIDE(int64_t, int64_t) break;
    case CCL_UINT64: DIVIDE(uint64_t, uint64_t) break;
    case CCL_FLOAT: DIVIDE(float, float) break;
    case CCL_DOUBLE: DIVIDE(double, double) break;
    case CCL_HALF: DIVIDE_NARROW(half_to_float, float_to_half) break;
    case CCL_BFLOAT16: DIVIDE_NARROW(bf16_to_float, float_to_bf16) break;
    default: break;
    }
}

/* ---- the values --------------------------------------------------------------------------- */
static uint64_t mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9u;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

static uint64_t hash_of(uint64_t seed, uint64_t rank, uint64_t index)
{
    return mix(mix(seed + 0x9e3779b97f4a7c15u * (rank + 1)) ^ (index * 0xd6e8feb86659fd93u));
}

static void store_float(uint32_t dtype, uint8_t *at, double v)
{
    float f = (float)v;
    uint16_t h;
    switch (dtype) {
    case CCL_FLOAT: memcpy(at, &f, 4); break;
    case CCL_DOUBLE: memcpy(at, &v, 8); break;
    case CCL_HALF: h = float_to_half(f); memcpy(at, &h, 2); break;
    default: h = float_to_bf16(f); memcpy(at, &h, 2); break;
    }
}

/* Integers exact in the type: mantissa bits + 1, and the largest exponent a product may use. */
static void float_range(uint32_t dtype, int *digits, int *max_exp)
{
    switch (dtype) {
    case CCL_FLOAT: *digits = 24, *max_exp = 126; break;
    case CCL_DOUBLE: *digits = 53, *max_exp = 1022; break;
    case CCL_HALF: *digits = 11, *max_exp = 14; break;
    default: *digits = 8, *max_exp = 126; break;
    }
}

/* Element `index` of `rank`'s input. */
static void value(uint32_t dtype, uint32_t op, uint32_t nranks, uint32_t rank, uint64_t seed,
                  uint64_t index, uint8_t *at)
{
    uint64_t h = hash_of(seed, rank, index);
    if (dtype != CCL_FLOAT && dtype != CCL_DOUBLE && dtype != CCL_HALF && dtype != CCL_BFLOAT16) {
        memcpy(at, &h, dtype_size(dtype));  /* any bits: integers wrap exactly */
        return;
    }
    int digits, max_exp;
    float_range(dtype, &digits, &max_exp);
    if (op == CCL_SUM || op == CCL_AVG) {
        int64_t v = (int64_t)1 << (digits < 31 ? digits : 30);
        v /= nranks ? nranks : 1;  /* every partial sum stays within the exact integers */
        if (v < 1)
            v = 1;
        store_float(dtype, at, (double)((int64_t)(h % (uint64_t)(2 * v + 1)) - v));
    } else if (op == CCL_PROD) {
        int e = max_exp / (int)(nranks ? nranks : 1);
        e = e > 2 ? 2 : e;  /* the product of every rank's stays in range */
        int exp = (int)(h % (uint64_t)(2 * e + 1)) - e;
        store_float(dtype, at, ldexp((h >> 40) & 1 ? -1.0 : 1.0, exp));
    } else {
        store_float(dtype, at, ((double)(h % 4001) - 2000.0) / 8.0);
    }
}

void data_fill(const struct plan *p, uint32_t rank, uint64_t seed)
{
    const struct ccl_plan *d = &p->desc;
    uint32_t nranks = d->group;
    size_t size = dtype_size(d->dtype);
    memset(p->arena + d->out, 0, d->out_count * size);
    for (uint64_t i = 0; i < d->in_count; i++)
        value(d->dtype, d->redop, nranks, rank, seed, i, p->arena + d->in + i * size);
}

#define BLOCK 1024

static bool same(uint32_t dtype, const uint8_t *a, const uint8_t *b)
{
    size_t size = dtype_size(dtype);
    if (memcmp(a, b, size) == 0)
        return true;
    if (dtype == CCL_FLOAT) {
        float x, y;
        memcpy(&x, a, 4), memcpy(&y, b, 4);
        return x == y;  /* +0 and -0 */
    }
    if (dtype == CCL_DOUBLE) {
        double x, y;
        memcpy(&x, a, 8), memcpy(&y, b, 8);
        return x == y;
    }
    if (dtype == CCL_HALF || dtype == CCL_BFLOAT16) {
        uint16_t x, y;
        memcpy(&x, a, 2), memcpy(&y, b, 2);
        return ((x | y) & 0x7fff) == 0;
    }
    return false;
}

uint64_t data_check(const struct plan *p, uint64_t seed)
{
    const struct ccl_plan *d = &p->desc;
    uint32_t nranks = d->group;
    size_t size = dtype_size(d->dtype);
    uint8_t want[BLOCK * 8], one[BLOCK * 8];
    uint64_t wrong = 0;
    for (uint32_t x = 0; x < d->nexpect; x++) {
        const struct ccl_expect *ex = &p->expect[x];
        const uint32_t *who = p->contrib + ex->contrib_at;
        for (uint64_t base = 0; base < ex->count; base += BLOCK) {
            uint64_t n = ex->count - base < BLOCK ? ex->count - base : BLOCK;
            for (uint64_t i = 0; i < n; i++)
                value(d->dtype, d->redop, nranks, who[0], seed, ex->src + base + i,
                      want + i * size);
            for (uint32_t k = 1; ex->reduce && k < ex->ncontrib; k++) {
                for (uint64_t i = 0; i < n; i++)
                    value(d->dtype, d->redop, nranks, who[k], seed, ex->src + base + i,
                          one + i * size);
                data_reduce(d->dtype, d->redop, want, want, one, n * size);
            }
            if (ex->reduce)
                data_postop(d->dtype, d->redop, want, n * size, nranks);
            const uint8_t *got = p->arena + d->out + (ex->out + base) * size;
            for (uint64_t i = 0; i < n; i++)
                wrong += !same(d->dtype, got + i * size, want + i * size);
        }
    }
    return wrong;
}
