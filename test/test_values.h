/* test_values.h - writing and reading elements of every dtype through
   double, for tests whose reference values are small integers (exact in
   every dtype, float16 and bfloat16 included), and the one plain-loop
   reference the tests share: t_input (rank r's element i), t_reduce_ref
   (element i folded over ranks 0..p-1) and t_close (the comparison).
   Independent of coll.h's own conversions; no libc, so it runs on bare
   metal too. Include after coll.h. */
#ifndef COLL_TEST_VALUES_H
#define COLL_TEST_VALUES_H

#ifdef __GNUC__
#define COLL_TEST_VALUES__UNUSED __attribute__((unused))
#else
#define COLL_TEST_VALUES__UNUSED
#endif

/* float16 of a small integer |v| <= 2048, built bit by bit: exact, and the
   same code on either byte order because it works on the 16-bit value. */
static COLL_TEST_VALUES__UNUSED uint16_t t_half(double v)
{
    uint16_t sign = 0;
    unsigned m, e = 0;
    if (v < 0) { sign = 0x8000u; v = -v; }
    m = (unsigned)v;
    if (m == 0) return sign;
    while ((m >> e) > 1) e++;                     /* leading bit position */
    return (uint16_t)(sign | ((e + 15u) << 10) | (((m << 10) >> e) & 0x3ffu));
}

/* The value of any float16 (infinity and NaN read as 1e300). */
static COLL_TEST_VALUES__UNUSED double t_half_value(uint16_t h)
{
    int e = (h >> 10) & 31;
    double m = (double)(h & 0x3ffu), v;
    if (e == 31) v = 1e300;
    else if (e == 0) v = m / 16777216.0;                       /* subnormal */
    else {
        v = (1024.0 + m) / 1024.0;
        for (; e > 15; e--) v *= 2.0;
        for (; e < 15; e++) v /= 2.0;
    }
    return (h & 0x8000u) ? -v : v;
}

typedef union { float f; uint32_t u; } t_f32;

static COLL_TEST_VALUES__UNUSED void t_put(coll_dtype t, void *p, size_t i, double v)
{
    t_f32 x;
    switch (t) {
    case COLL_INT8:     ((int8_t *)p)[i] = (int8_t)v; break;
    case COLL_UINT8:    ((uint8_t *)p)[i] = (uint8_t)v; break;
    case COLL_INT32:    ((int32_t *)p)[i] = (int32_t)v; break;
    case COLL_UINT32:   ((uint32_t *)p)[i] = (uint32_t)v; break;
    case COLL_INT64:    ((int64_t *)p)[i] = (int64_t)v; break;
    case COLL_UINT64:   ((uint64_t *)p)[i] = (uint64_t)v; break;
    case COLL_FLOAT16:  ((uint16_t *)p)[i] = t_half(v); break;
    case COLL_BFLOAT16: x.f = (float)v; ((uint16_t *)p)[i] = (uint16_t)(x.u >> 16); break;
    case COLL_FLOAT32:  ((float *)p)[i] = (float)v; break;
    case COLL_FLOAT64:  ((double *)p)[i] = v; break;
    default: break;
    }
}

static COLL_TEST_VALUES__UNUSED double t_get(coll_dtype t, const void *p, size_t i)
{
    t_f32 x;
    switch (t) {
    case COLL_INT8:     return ((const int8_t *)p)[i];
    case COLL_UINT8:    return ((const uint8_t *)p)[i];
    case COLL_INT32:    return ((const int32_t *)p)[i];
    case COLL_UINT32:   return ((const uint32_t *)p)[i];
    case COLL_INT64:    return (double)((const int64_t *)p)[i];
    case COLL_UINT64:   return (double)((const uint64_t *)p)[i];
    case COLL_FLOAT16:  return t_half_value(((const uint16_t *)p)[i]);
    case COLL_BFLOAT16: x.u = (uint32_t)((const uint16_t *)p)[i] << 16; return x.f;
    case COLL_FLOAT32:  return ((const float *)p)[i];
    case COLL_FLOAT64:  return ((const double *)p)[i];
    default: return 0;
    }
}

static COLL_TEST_VALUES__UNUSED int t_is_float(coll_dtype t)
{
    return t == COLL_FLOAT16 || t == COLL_BFLOAT16 || t == COLL_FLOAT32 || t == COLL_FLOAT64;
}

static COLL_TEST_VALUES__UNUSED int t_is_unsigned(coll_dtype t)
{
    return t == COLL_UINT8 || t == COLL_UINT32 || t == COLL_UINT64;
}

/* Rank r's element i: small, mixed signs where the type has them, and
   products of 1s and 2s. Every partial sum and product of up to 16 ranks
   is exact in every dtype, so the order an algorithm folds in cannot
   matter; int8/uint8 results that leave the type wrap, as the type does. */
static COLL_TEST_VALUES__UNUSED double t_input(int r, size_t i, coll_dtype t, coll_op op)
{
    int v;
    if (op == COLL_PROD) return (double)(1 + (r + (int)i) % 2);        /* 1, 2 */
    v = (int)((r * 7u + i * 3u + 1u) % 13u);                           /* 0..12 */
    if (!t_is_unsigned(t) && op != COLL_BAND && op != COLL_BOR && op != COLL_BXOR)
        v -= 6;                                                        /* -6..6 */
    return (double)v;
}

/* An integer result as the element type holds it: two's complement wrap
   of the low bits (the values are small enough for a long long). */
static COLL_TEST_VALUES__UNUSED double t_wrap(coll_dtype t, double v)
{
    long long x = (long long)v;
    switch (t) {
    case COLL_INT8:   return (double)(int8_t)(uint8_t)(unsigned long long)x;
    case COLL_UINT8:  return (double)(uint8_t)(unsigned long long)x;
    case COLL_INT32:  return (double)(int32_t)(uint32_t)(unsigned long long)x;
    case COLL_UINT32: return (double)(uint32_t)(unsigned long long)x;
    default:          return v;
    }
}

/* The reference: element i of t_input folded over ranks 0..p-1 in a plain
   loop, then avg's one division (C's truncation for integers). */
static COLL_TEST_VALUES__UNUSED double t_reduce_ref(coll_dtype t, coll_op op, int p, size_t i)
{
    double acc = t_input(0, i, t, op);
    int r;
    for (r = 1; r < p; r++) {
        double v = t_input(r, i, t, op);
        switch (op) {
        case COLL_SUM: case COLL_AVG: acc += v; break;
        case COLL_PROD: acc *= v; break;
        case COLL_MIN: if (v < acc) acc = v; break;
        case COLL_MAX: if (v > acc) acc = v; break;
        case COLL_BAND: acc = (double)((long)acc & (long)v); break;
        case COLL_BOR:  acc = (double)((long)acc | (long)v); break;
        case COLL_BXOR: acc = (double)((long)acc ^ (long)v); break;
        default: break;
        }
    }
    if (t_is_float(t)) return op == COLL_AVG ? acc / p : acc;
    acc = t_wrap(t, acc);                               /* the sum as the type holds it */
    if (op == COLL_AVG) acc = (double)((long long)acc / p);
    return acc;
}

/* Exact, except avg of floats: one division, rounded once in the dtype. */
static COLL_TEST_VALUES__UNUSED int t_close(coll_dtype t, coll_op op, double got, double want)
{
    double d = got - want, tol = 0;
    if (op == COLL_AVG && t_is_float(t)) {
        double mag = want < 0 ? -want : want;
        tol = t == COLL_FLOAT16 ? mag / 1024 : t == COLL_BFLOAT16 ? mag / 128
            : t == COLL_FLOAT32 ? mag / 8388608.0 : mag / 4.5e15;
    }
    return d <= tol && d >= -tol;
}

#endif /* COLL_TEST_VALUES_H */
