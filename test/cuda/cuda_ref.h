/* cuda_ref.h - the host reference of the CUDA tests: each dtype's
   arithmetic as coll.h defines it, written independently of coll.h (floats
   are decoded and rounded by scaling and nearbyint, not by bit tricks).
   Static functions, included by test_cuda.cu and test_kernels_host.cu. */
#ifndef COLL_CUDA_REF_H
#define COLL_CUDA_REF_H
#include "coll.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

/* xorshift64*: reproducible inputs */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static inline uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12; rng_state ^= rng_state << 25; rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}
static inline uint64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static inline const char *dt_name(coll_dtype t)
{
    static const char *n[] = { "int8", "uint8", "int32", "uint32", "int64", "uint64",
                               "float16", "bfloat16", "float32", "float64" };
    return (int)t < 10 ? n[t] : "?";
}
static inline const char *op_name(coll_op o)
{
    static const char *n[] = { "sum", "prod", "min", "max", "avg", "band", "bor", "bxor" };
    return (int)o < 8 ? n[o] : "?";
}
static inline size_t dt_size(coll_dtype t)
{
    switch (t) {
    case COLL_INT8: case COLL_UINT8: return 1;
    case COLL_FLOAT16: case COLL_BFLOAT16: return 2;
    case COLL_INT32: case COLL_UINT32: case COLL_FLOAT32: return 4;
    default: return 8;
    }
}
static inline int dt_is_int(coll_dtype t) { return t <= COLL_UINT64; }
static inline int dt_signed(coll_dtype t) { return t == COLL_INT8 || t == COLL_INT32 || t == COLL_INT64; }
static inline int dt_nops(coll_dtype t) { return dt_is_int(t) ? 8 : 5; }

/* A binary float with m fraction bits and `eb` exponent bits: decode, and
   round a double to nearest-even (by scaling and nearbyint, not by bit
   tricks, so it shares no code with the library). */
static inline double fmt_decode(uint32_t bits, int m, int eb)
{
    int bias = (1 << (eb - 1)) - 1;
    uint32_t e = (bits >> m) & ((1u << eb) - 1), f = bits & ((1u << m) - 1);
    double s = (bits >> (m + eb)) & 1 ? -1.0 : 1.0;
    if (e == (1u << eb) - 1) return f ? NAN : s * INFINITY;
    if (e == 0) return s * ldexp((double)f, 1 - bias - m);
    return s * ldexp((double)(f | (1u << m)), (int)e - bias - m);
}
static inline uint32_t fmt_round(double x, int m, int eb)
{
    int bias = (1 << (eb - 1)) - 1, emin = 1 - bias, emax = bias, e;
    uint32_t sign = signbit(x) ? 1u << (m + eb) : 0, einf = ((1u << eb) - 1) << m;
    double a = fabs(x), r;
    if (isnan(x)) return sign | einf | (1u << (m - 1));
    if (a == 0) return sign;
    if (isinf(a)) return sign | einf;
    (void)frexp(a, &e);
    e -= 1;                                  /* a in [2^e, 2^(e+1)) */
    if (e < emin) e = emin;                  /* subnormal: fixed quantum */
    r = nearbyint(ldexp(a, m - e));          /* round to nearest even */
    if (r >= ldexp(1.0, m + 1)) { r /= 2; e++; }
    if (e > emax) return sign | einf;
    if (r < ldexp(1.0, m)) return sign | (uint32_t)r;   /* subnormal or zero */
    return sign | ((uint32_t)(e + bias) << m) | ((uint32_t)r - (1u << m));
}
static inline float h2f(uint16_t h) { return (float)fmt_decode(h, 10, 5); }
static inline float b2f(uint16_t b) { return (float)fmt_decode(b, 7, 8); }
static inline uint16_t f2h(double x) { return (uint16_t)fmt_round(x, 10, 5); }
static inline uint16_t f2b(double x) { return (uint16_t)fmt_round(x, 7, 8); }

/* Element i of a typed array, as raw bits (integers zero-extended). */
static inline uint64_t get_bits(coll_dtype t, const void *p, size_t i)
{
    switch (dt_size(t)) {
    case 1: return ((const uint8_t *)p)[i];
    case 2: return ((const uint16_t *)p)[i];
    case 4: return ((const uint32_t *)p)[i];
    default: return ((const uint64_t *)p)[i];
    }
}
static inline void put_bits(coll_dtype t, void *p, size_t i, uint64_t v)
{
    switch (dt_size(t)) {
    case 1: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case 2: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case 4: ((uint32_t *)p)[i] = (uint32_t)v; break;
    default: ((uint64_t *)p)[i] = v; break;
    }
}
static inline uint64_t width_mask(coll_dtype t)
{
    return dt_size(t) == 8 ? ~0ull : (1ull << (8 * dt_size(t))) - 1;
}
static inline int64_t as_signed(coll_dtype t, uint64_t bits)
{
    int w = 8 * (int)dt_size(t);
    if (w == 64) return (int64_t)bits;
    return (bits >> (w - 1)) & 1 ? (int64_t)(bits | ~width_mask(t)) : (int64_t)bits;
}
/* float-type bits -> value; value -> bits (rounded in the type) */
static inline double fget(coll_dtype t, uint64_t bits)
{
    float f; double d; uint32_t u32 = (uint32_t)bits;
    switch (t) {
    case COLL_FLOAT16: return h2f((uint16_t)bits);
    case COLL_BFLOAT16: return b2f((uint16_t)bits);
    case COLL_FLOAT32: memcpy(&f, &u32, 4); return f;
    default: memcpy(&d, &bits, 8); return d;
    }
}
static inline uint64_t fput(coll_dtype t, double v)
{
    float f; uint32_t u; uint64_t b;
    switch (t) {
    case COLL_FLOAT16: return f2h(v);
    case COLL_BFLOAT16: return f2b(v);
    case COLL_FLOAT32: f = (float)v; memcpy(&u, &f, 4); return u;
    default: memcpy(&b, &v, 8); return b;
    }
}

/* One step of a reduction, as the host defines it: wrap-around integers,
   min = b < a ? b : a, 16-bit floats computed in float and rounded back.
   avg reduces as sum. */
static inline uint64_t ref_op(coll_dtype t, coll_op op, uint64_t a, uint64_t b)
{
    if (dt_is_int(t)) {
        uint64_t m = width_mask(t);
        int s = dt_signed(t);
        int lt = s ? as_signed(t, b) < as_signed(t, a) : b < a;   /* b < a */
        int gt = s ? as_signed(t, b) > as_signed(t, a) : b > a;   /* b > a */
        switch (op) {
        case COLL_SUM: case COLL_AVG: return (a + b) & m;
        case COLL_PROD: return (a * b) & m;
        case COLL_MIN: return lt ? b : a;
        case COLL_MAX: return gt ? b : a;
        case COLL_BAND: return a & b;
        case COLL_BOR: return a | b;
        default: return a ^ b;
        }
    }
    if (t == COLL_FLOAT64) {
        double x = fget(t, a), y = fget(t, b);
        switch (op) {
        case COLL_SUM: case COLL_AVG: return fput(t, x + y);
        case COLL_PROD: return fput(t, x * y);
        case COLL_MIN: return y < x ? b : a;
        default: return y > x ? b : a;
        }
    } else {
        float x = (float)fget(t, a), y = (float)fget(t, b), r;
        switch (op) {
        case COLL_SUM: case COLL_AVG: r = x + y; break;
        case COLL_PROD: r = x * y; break;
        case COLL_MIN: return y < x ? b : a;
        default: return y > x ? b : a;
        }
        return fput(t, (double)r);
    }
}

/* avg's division: integers truncate, floats divide in float (double). */
static inline uint64_t ref_div(coll_dtype t, uint64_t x, size_t d)
{
    if (dt_is_int(t)) {
        if (dt_signed(t)) return (uint64_t)(as_signed(t, x) / (int64_t)d) & width_mask(t);
        return x / d;
    }
    if (t == COLL_FLOAT64) return fput(t, fget(t, x) / (double)d);
    return fput(t, (double)((float)fget(t, x) / (float)d));
}

/* Random finite values: integers any bits; floats sign * [1,2) * 2^e. */
static inline uint64_t rand_elem(coll_dtype t)
{
    uint64_t r = rnd();
    double v;
    int e, lo = -12, hi = 12;
    if (dt_is_int(t)) return r & width_mask(t);
    if (t == COLL_FLOAT16) lo = -20;         /* reach the subnormals */
    e = lo + (int)(r % (uint64_t)(hi - lo + 1));
    v = ldexp(1.0 + (double)((r >> 20) & 0xfffff) / 1048576.0, e);
    if ((r >> 50) & 1) v = -v;
    if (t == COLL_FLOAT64) v += ldexp((double)((r >> 8) & 0xfff), e - 40);  /* use the low bits */
    return fput(t, v);
}

#endif
