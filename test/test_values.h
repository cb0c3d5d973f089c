/* test_values.h - writing and reading elements of every dtype through
   double, for tests whose reference values are small integers (exact in
   every dtype, float16 and bfloat16 included). Independent of coll.h's own
   conversions; no libc, so it runs on bare metal too. Include after coll.h. */
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

#endif /* COLL_TEST_VALUES_H */
