/* test_values.h - the tests' own view of every dtype and the one plain-loop
   reference they share. Include after coll.h; no libc, so it runs on bare
   metal too, and independent of coll.h's conversions and kernels.

   What a test knows of a dtype comes from coll.h's COLL_DTYPE_LIST alone
   (a dtype added there needs nothing here, unless it is a float stored as
   the bits of an integer type with a layout not yet in TV__NARROW_*):
     size         sizeof the storage type
     float        the class column (FLOAT)
     signed       the storage type is signed (floats: always)
     bits         a float stored as an integer bit pattern (the halves)
     mant, ebits  fraction and exponent bits: TV__NARROW_<short name> for
                  bit-pattern floats, the IEEE 754 interchange format of the
                  type's size for C floating types
     cmant        fraction bits of the type it computes in (the compute
                  column), whose rounding a bit-pattern float adds
   and avg divides in the column's avg type, as coll.h documents.

   Two levels:
     tv_*   elements as tv_val (integers as 64-bit patterns, sign-extended;
            floats as double): tv_load/tv_store (any pointer alignment,
            either byte order; floats rounded to nearest even by our own
            encoder), tv_round, tv_bits/tv_value (a float's encoding),
            tv_fold (one step of an operator, rank order: a holds the lower
            ranks; integers wrap, float min/max propagate NaN the way
            coll.h's kernels do), tv_avg (avg's one division), tv_reduce
            (element i folded over ranks 0..p-1 from any input function)
            and tv_reduce_approx (floats that round: the value and a bound).
     t_*    small integers through double, for tests whose inputs are
            exact in every dtype: t_put/t_get, t_input (rank r's element
            i), t_reduce_ref (its reduction), t_close (the comparison). */
#ifndef COLL_TEST_VALUES_H
#define COLL_TEST_VALUES_H

#ifdef __GNUC__
#define COLL_TEST_VALUES__UNUSED __attribute__((unused))
#else
#define COLL_TEST_VALUES__UNUSED
#endif

/* ---- the dtypes, from COLL_DTYPE_LIST ------------------------------------- */
typedef struct tv_dtype {
    const char *name;                   /* the enum's name: "BFLOAT16"          */
    unsigned char size, is_float, is_signed, bits, mant, ebits, cmant;
} tv_dtype;

/* Layouts of the floats stored as integer bit patterns, by the list's short
   name: "~, fraction bits, exponent bits". A probe picks them out; a short
   name without one gives 0, 0 (tv_layout_known says so). */
#define TV__NARROW_f16  ~, 10, 5
#define TV__NARROW_bf16 ~, 7, 8
#define TV__ARG2(a, b, ...) b
#define TV__ARG3(a, b, c, ...) c
#define TV__PICK2(...) TV__ARG2(__VA_ARGS__)
#define TV__PICK3(...) TV__ARG3(__VA_ARGS__)
#define TV__IEEE_MANT(S)  ((S) == 2 ? 10 : (S) == 4 ? 23 : (S) == 8 ? 52 : (S) == 16 ? 112 : 0)
#define TV__IEEE_EBITS(S) ((S) == 2 ? 5 : (S) == 4 ? 8 : (S) == 8 ? 11 : (S) == 16 ? 15 : 0)
#define TV__FLOAT_INT   0
#define TV__FLOAT_FLOAT 1
#define TV__BITS(T) ((T)0.5 == (T)0)             /* an integer type holds it */
#define TV__ROW(E, N, T, C, IN, OUT, U, W, CL)                                    \
    { #E, (unsigned char)sizeof(T), TV__FLOAT_##CL,                              \
      (unsigned char)(TV__FLOAT_##CL || (T)-1 < (T)1),                           \
      (unsigned char)(TV__FLOAT_##CL && TV__BITS(T)),                            \
      (unsigned char)(!TV__FLOAT_##CL ? 0 : TV__BITS(T) ? TV__PICK2(TV__NARROW_##N, 0, 0, 0) \
                                      : TV__IEEE_MANT(sizeof(T))),               \
      (unsigned char)(!TV__FLOAT_##CL ? 0 : TV__BITS(T) ? TV__PICK3(TV__NARROW_##N, 0, 0, 0) \
                                      : TV__IEEE_EBITS(sizeof(T))),              \
      (unsigned char)(TV__FLOAT_##CL ? TV__IEEE_MANT(sizeof(C)) : 0) },
static COLL_TEST_VALUES__UNUSED const tv_dtype tv_dtypes[] = { COLL_DTYPE_LIST(TV__ROW) };

static COLL_TEST_VALUES__UNUSED const tv_dtype *tv_info(coll_dtype t)
{
    static const tv_dtype none = { "USER", 0, 0, 0, 0, 0, 0, 0 };
    return (unsigned)t < sizeof tv_dtypes / sizeof tv_dtypes[0] ? &tv_dtypes[t] : &none;
}

/* The name in lower case ("bfloat16") into s; returns s. */
static COLL_TEST_VALUES__UNUSED char *tv_name(coll_dtype t, char *s, size_t n)
{
    const char *x = tv_info(t)->name;
    size_t i;
    for (i = 0; n && i + 1 < n && x[i]; i++)
        s[i] = (char)(x[i] >= 'A' && x[i] <= 'Z' ? x[i] - 'A' + 'a' : x[i]);
    if (n) s[i] = 0;
    return s;
}

/* A float dtype whose bit layout we know (every other dtype: 1). */
static COLL_TEST_VALUES__UNUSED int tv_layout_known(coll_dtype t)
{
    const tv_dtype *d = tv_info(t);
    return !d->is_float || (d->mant && d->ebits && 1 + d->mant + d->ebits == 8 * d->size);
}

typedef struct tv_val { uint64_t i; double f; } tv_val;

/* ---- our own binary floating-point formats -------------------------------- */
static COLL_TEST_VALUES__UNUSED double tv_pow2(int e)
{
    double r = 1, b = e < 0 ? 0.5 : 2;          /* square and multiply: exact */
    unsigned k = e < 0 ? 0u - (unsigned)e : (unsigned)e;
    for (; k; k >>= 1, b *= b) if (k & 1) r *= b;
    return r;
}

/* a = m * 2^e with 1 <= m < 2, for finite a > 0 */
static COLL_TEST_VALUES__UNUSED double tv__split(double a, int *e)
{
    *e = 0;
    while (a >= 65536.0) { a /= 65536.0; *e += 16; }
    while (a < 1.0 / 65536) { a *= 65536.0; *e -= 16; }
    while (a >= 2) { a /= 2; ++*e; }
    while (a < 1) { a *= 2; --*e; }
    return a;
}

static COLL_TEST_VALUES__UNUSED double tv_nan(void)
{
    volatile double z = 0;
    return z / z;
}
static COLL_TEST_VALUES__UNUSED double tv_inf(void)
{
    volatile double h = 1e308;
    return h * 10;
}

/* x (finite) rounded to nearest even with `mant` fraction bits and normal
   exponents down to 2 - 2^(ebits-1): subnormals keep the smallest quantum.
   *inf: the result overflowed. */
static COLL_TEST_VALUES__UNUSED double tv__round_fmt(double x, int mant, int ebits, int *inf)
{
    int emax = (1 << (ebits - 1)) - 1, emin = 1 - emax, e = 0;
    double a = x < 0 ? -x : x, q, y, f, d;
    *inf = 0;
    if (a == 0) return x;
    tv__split(a, &e);
    if (e < emin) e = emin;                 /* subnormal: the quantum stops shrinking */
    q = tv_pow2(e - mant);
    y = a / q;                              /* exact: q is a power of two */
    f = (double)(uint64_t)y;
    d = y - f;
    if (d > 0.5 || (d == 0.5 && ((uint64_t)f & 1u))) f += 1;
    a = f * q;
    if (a >= tv_pow2(emax + 1)) *inf = 1;
    return x < 0 ? -a : a;
}

/* The encoding of x, rounded to nearest even; NaN is the quiet NaN. */
static COLL_TEST_VALUES__UNUSED uint64_t tv_fmt_bits(double x, int mant, int ebits)
{
    uint64_t sign = (uint64_t)(x < 0 || (x == 0 && 1 / x < 0)) << (mant + ebits);
    uint64_t emask = ((uint64_t)1 << ebits) - 1, fmask = ((uint64_t)1 << mant) - 1;
    int inf, emax = (1 << (ebits - 1)) - 1, emin = 1 - emax, e = 0;
    double r, a, m;
    if (x != x) return (emask << mant) | ((uint64_t)1 << (mant - 1));
    if (x - x != 0) return sign | (emask << mant);                        /* +-inf */
    r = tv__round_fmt(x, mant, ebits, &inf);
    a = r < 0 ? -r : r;
    if (inf) return sign | (emask << mant);
    if (a == 0) return sign;
    if (a < tv_pow2(emin)) return sign | (uint64_t)(a / tv_pow2(emin - mant));   /* subnormal */
    m = tv__split(a, &e);
    return sign | ((uint64_t)(e + emax) << mant) | ((uint64_t)((m - 1) * tv_pow2(mant)) & fmask);
}

static COLL_TEST_VALUES__UNUSED double tv_fmt_value(uint64_t b, int mant, int ebits)
{
    int emax = (1 << (ebits - 1)) - 1;
    int e = (int)((b >> mant) & (((uint64_t)1 << ebits) - 1));
    double m = (double)(b & (((uint64_t)1 << mant) - 1)), v;
    if (e == (1 << ebits) - 1) v = m != 0 ? tv_nan() : tv_inf();
    else if (e == 0) v = m * tv_pow2(1 - emax - mant);
    else v = (1 + m * tv_pow2(-mant)) * tv_pow2(e - emax);
    return (b >> (mant + ebits)) & 1 ? -v : v;
}

/* ---- elements in memory ---------------------------------------------------- */
static COLL_TEST_VALUES__UNUSED void tv__copy(void *dst, const void *src, size_t n)
{
    unsigned char *d = (unsigned char *)dst;
    const unsigned char *s = (const unsigned char *)src;
    while (n--) *d++ = *s++;
}

static COLL_TEST_VALUES__UNUSED int tv__little(void)
{
    uint16_t one = 1;
    return *(const unsigned char *)&one == 1;
}

/* The low `size` bytes of an integer pattern, in this machine's order. */
static COLL_TEST_VALUES__UNUSED uint64_t tv__get_bits(const void *p, unsigned size)
{
    const unsigned char *b = (const unsigned char *)p;
    uint64_t v = 0;
    unsigned k, le = (unsigned)tv__little();
    for (k = 0; k < size && k < 8; k++) v |= (uint64_t)b[le ? k : size - 1 - k] << (8 * k);
    return v;
}
static COLL_TEST_VALUES__UNUSED void tv__put_bits(void *p, unsigned size, uint64_t v)
{
    unsigned char *b = (unsigned char *)p;
    unsigned k, le = (unsigned)tv__little();
    for (k = 0; k < size; k++) b[le ? k : size - 1 - k] = (unsigned char)(k < 8 ? v >> (8 * k) : 0);
}

/* int64 of a 64-bit two's complement pattern, without implementation-
   defined conversions */
static COLL_TEST_VALUES__UNUSED int64_t tv__s64(uint64_t v)
{
    return v >> 63 ? -(int64_t)(~v) - 1 : (int64_t)v;
}

/* An integer as the type holds it: the low bits, sign-extended if signed. */
static COLL_TEST_VALUES__UNUSED uint64_t tv__norm(const tv_dtype *d, uint64_t v)
{
    unsigned bits = 8u * d->size;
    if (bits >= 64) return v;
    v &= ((uint64_t)1 << bits) - 1;
    if (d->is_signed && (v >> (bits - 1))) v |= ~(((uint64_t)1 << bits) - 1);
    return v;
}

/* The C floating types through themselves (any alignment). */
static COLL_TEST_VALUES__UNUSED double tv__native_get(coll_dtype t, const void *p)
{
#define TV__GET(E, N, T, C, IN, OUT, U, W, CL) \
    case COLL_##E: { T x; tv__copy(&x, p, sizeof x); return (double)x; }
    switch (t) {
    COLL_DTYPE_LIST(TV__GET)
    default: return 0;
    }
#undef TV__GET
}
static COLL_TEST_VALUES__UNUSED void tv__native_put(coll_dtype t, void *p, double v)
{
#define TV__PUT(E, N, T, C, IN, OUT, U, W, CL) \
    case COLL_##E: { T x = (T)v; tv__copy(p, &x, sizeof x); } break;
    switch (t) {
    COLL_DTYPE_LIST(TV__PUT)
    default: break;
    }
#undef TV__PUT
}

/* x rounded to dtype t (integers: unchanged). */
static COLL_TEST_VALUES__UNUSED double tv_round(coll_dtype t, double x)
{
    const tv_dtype *d = tv_info(t);
    unsigned char b[16];
    if (!d->is_float) return x;
    if (d->bits) return tv_fmt_value(tv_fmt_bits(x, d->mant, d->ebits), d->mant, d->ebits);
    tv__native_put(t, b, x);
    return tv__native_get(t, b);
}

/* A value of dtype t from a double: integers truncate and wrap. */
static COLL_TEST_VALUES__UNUSED tv_val tv_of(coll_dtype t, double v)
{
    tv_val x;
    x.f = 0; x.i = 0;
    if (tv_info(t)->is_float) x.f = v;
    else x.i = tv__norm(tv_info(t), v < 0 ? (uint64_t)0 - (uint64_t)-v : (uint64_t)v);
    return x;
}
static COLL_TEST_VALUES__UNUSED tv_val tv_of_bits(coll_dtype t, uint64_t v)
{
    tv_val x;
    x.f = 0; x.i = tv__norm(tv_info(t), v);
    return x;
}
static COLL_TEST_VALUES__UNUSED double tv_as_double(coll_dtype t, tv_val v)
{
    const tv_dtype *d = tv_info(t);
    return d->is_float ? v.f : d->is_signed ? (double)tv__s64(v.i) : (double)v.i;
}

/* Element i of an array of dtype t. */
static COLL_TEST_VALUES__UNUSED tv_val tv_load(coll_dtype t, const void *p, size_t i)
{
    const tv_dtype *d = tv_info(t);
    const unsigned char *b = (const unsigned char *)p + i * d->size;
    tv_val x;
    x.i = 0; x.f = 0;
    if (!d->is_float) x.i = tv__norm(d, tv__get_bits(b, d->size));
    else if (d->bits) x.f = tv_fmt_value(tv__get_bits(b, d->size), d->mant, d->ebits);
    else x.f = tv__native_get(t, b);
    return x;
}
static COLL_TEST_VALUES__UNUSED void tv_store(coll_dtype t, void *p, size_t i, tv_val v)
{
    const tv_dtype *d = tv_info(t);
    unsigned char *b = (unsigned char *)p + i * d->size;
    if (!d->is_float) tv__put_bits(b, d->size, v.i);
    else if (d->bits) tv__put_bits(b, d->size, tv_fmt_bits(v.f, d->mant, d->ebits));
    else tv__native_put(t, b, v.f);
}

/* The stored pattern of x in dtype t, and back (floats rounded). */
static COLL_TEST_VALUES__UNUSED uint64_t tv_bits(coll_dtype t, double x)
{
    unsigned char b[16];
    tv_store(t, b, 0, tv_of(t, x));
    return tv__get_bits(b, tv_info(t)->size);
}
static COLL_TEST_VALUES__UNUSED double tv_value(coll_dtype t, uint64_t bits)
{
    unsigned char b[16];
    tv__put_bits(b, tv_info(t)->size, bits);
    return tv_as_double(t, tv_load(t, b, 0));
}

/* ---- the operators --------------------------------------------------------- */
/* One step, a (the lower ranks) (+) b. Integers wrap in the type; floats
   fold in double (exact for exact inputs: round once with tv_store);
   float min and max take b when it is smaller (larger) or NaN, so NaN
   propagates and, among NaNs, the higher rank's wins, as in coll.h. */
static COLL_TEST_VALUES__UNUSED tv_val tv_fold(coll_dtype t, coll_op op, tv_val a, tv_val b)
{
    const tv_dtype *d = tv_info(t);
    tv_val r = a;
    if (d->is_float) {
        switch (op) {
        case COLL_SUM: case COLL_AVG: r.f = a.f + b.f; break;
        case COLL_PROD: r.f = a.f * b.f; break;
        case COLL_MIN: r.f = b.f < a.f || b.f != b.f ? b.f : a.f; break;
        case COLL_MAX: r.f = b.f > a.f || b.f != b.f ? b.f : a.f; break;
        default: break;
        }
        return r;
    }
    switch (op) {
    case COLL_SUM: case COLL_AVG: r.i = a.i + b.i; break;
    case COLL_PROD: r.i = a.i * b.i; break;
    case COLL_MIN:
        r.i = (d->is_signed ? tv__s64(b.i) < tv__s64(a.i) : b.i < a.i) ? b.i : a.i; break;
    case COLL_MAX:
        r.i = (d->is_signed ? tv__s64(b.i) > tv__s64(a.i) : b.i > a.i) ? b.i : a.i; break;
    case COLL_BAND: r.i = a.i & b.i; break;
    case COLL_BOR: r.i = a.i | b.i; break;
    case COLL_BXOR: r.i = a.i ^ b.i; break;
    default: break;
    }
    r.i = tv__norm(d, r.i);
    return r;
}

/* avg's one division of the sum by p, in the type the list gives for it
   (integers truncate toward zero); floats: of the sum as stored, the
   quotient rounded to the dtype. */
static COLL_TEST_VALUES__UNUSED tv_val tv_avg(coll_dtype t, tv_val sum, int p)
{
    tv_val v = sum;
    if (tv_info(t)->is_float) v.f = tv_round(t, sum.f);
#define TV__DIV(E, N, T, C, IN, OUT, U, W, CL) case COLL_##E:                   \
    if (TV__FLOAT_##CL) v.f = (double)((W)v.f / (W)p);                           \
    else v.i = (uint64_t)((W)tv__s64(v.i) / (W)p);                               \
    break;
    switch (t) {
    COLL_DTYPE_LIST(TV__DIV)
    default: break;
    }
#undef TV__DIV
    if (tv_info(t)->is_float) v.f = tv_round(t, v.f);
    else v.i = tv__norm(tv_info(t), v.i);
    return v;
}

/* Rank r's element i, for tv_reduce. */
typedef tv_val (*tv_input_fn)(const void *ctx, int r, size_t i);

/* The reference: element i of the inputs folded over ranks 0..p-1 in rank
   order with a plain loop, then avg's division. Exact whenever the inputs
   make every partial result exact (floats: store it to round once). */
static COLL_TEST_VALUES__UNUSED tv_val tv_reduce(coll_dtype t, coll_op op, int p, size_t i,
                                                 tv_input_fn in, const void *ctx)
{
    tv_val acc = in(ctx, 0, i);
    int r;
    for (r = 1; r < p; r++) acc = tv_fold(t, op, acc, in(ctx, r, i));
    return op == COLL_AVG ? tv_avg(t, acc, p) : acc;
}

/* The unit roundoff of a float dtype's arithmetic: its own, plus the
   compute type's for the bit-pattern floats (they round twice). */
static COLL_TEST_VALUES__UNUSED double tv_unit_roundoff(coll_dtype t)
{
    const tv_dtype *d = tv_info(t);
    double u = tv_pow2(-(int)d->mant - 1);
    if (d->bits) u += tv_pow2(-(int)d->cmant - 1);
    return u;
}

/* Floats that round (sum, prod, avg, any p): the reduction folded in double
   and, in *tol, a first-order bound on how far any fold order in the dtype
   may land from it. */
static COLL_TEST_VALUES__UNUSED double tv_reduce_approx(coll_dtype t, coll_op op, int p, size_t i,
                                                       tv_input_fn in, const void *ctx, double *tol)
{
    double acc = in(ctx, 0, i).f, mag = acc < 0 ? -acc : acc, u = tv_unit_roundoff(t);
    int r;
    for (r = 1; r < p; r++) {
        double x = in(ctx, r, i).f;
        acc = tv_fold(t, op, tv_of(t, acc), tv_of(t, x)).f;
        mag += x < 0 ? -x : x;
    }
    if (op == COLL_PROD) *tol = 1.01 * (p - 1) * u * (acc < 0 ? -acc : acc);
    else *tol = 1.01 * (p - 1) * u * mag;
    if (op == COLL_AVG) {
        acc /= p;
        *tol = *tol / p + u * ((acc < 0 ? -acc : acc) + *tol);
    }
    return acc;
}

/* ---- small integers through double ----------------------------------------- */
static COLL_TEST_VALUES__UNUSED void t_put(coll_dtype t, void *p, size_t i, double v)
{
    tv_store(t, p, i, tv_of(t, v));
}

/* Element i as a double. */
static COLL_TEST_VALUES__UNUSED double t_get(coll_dtype t, const void *p, size_t i)
{
    return tv_as_double(t, tv_load(t, p, i));
}

static COLL_TEST_VALUES__UNUSED int t_is_float(coll_dtype t)
{
    return tv_info(t)->is_float;
}

static COLL_TEST_VALUES__UNUSED int t_is_unsigned(coll_dtype t)
{
    return tv_info(t)->size && !tv_info(t)->is_signed;
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

/* t_input as tv_reduce reads it; ctx points at the (dtype, op). */
typedef struct t__input_ctx { coll_dtype t; coll_op op; } t__input_ctx;
static COLL_TEST_VALUES__UNUSED tv_val t__input_val(const void *ctx, int r, size_t i)
{
    const t__input_ctx *c = (const t__input_ctx *)ctx;
    return tv_of(c->t, t_input(r, i, c->t, c->op));
}

/* The reference: element i of t_input folded over ranks 0..p-1 (tv_reduce). */
static COLL_TEST_VALUES__UNUSED double t_reduce_ref(coll_dtype t, coll_op op, int p, size_t i)
{
    t__input_ctx c;
    c.t = t; c.op = op;
    return tv_as_double(t, tv_reduce(t, op, p, i, t__input_val, &c));
}

/* Exact, except avg of floats: one division, rounded once in the dtype. */
static COLL_TEST_VALUES__UNUSED int t_close(coll_dtype t, coll_op op, double got, double want)
{
    double d = got - want, tol = 0;
    if (op == COLL_AVG && t_is_float(t))
        tol = (want < 0 ? -want : want) * tv_pow2(-(int)tv_info(t)->mant);
    return d <= tol && d >= -tol;
}

#endif /* COLL_TEST_VALUES_H */
