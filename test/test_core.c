/* test_core.c - the core matrix: every collective x algorithm x dtype x op x
   rank count x element count x in/out of place, over the threads port
   (non-blocking path), a duplex port (send, recv, sendrecv) and the strictly
   rendezvous port (send and recv only), with a tiny scratch (128-byte
   segments, so long vectors cross hundreds of segments) and a big one.

   The v forms get ragged per-rank counts, some blocks empty; alltoallv a
   ragged p x p matrix with empty blocks (symmetric in place).

   Every rank checks its own result against the plain-loop reference of
   test/test_values.h (tv_reduce, fed the inputs below; it knows every
   dtype of COLL_DTYPE_LIST, so a new one needs no code here), checks 64
   guard bytes on both sides of every buffer, checks that an out-of-place
   source is untouched, and compares its return code and (for results that
   every rank holds) a 64-bit hash of its output bytes with rank 0's:
   results must be bit-identical.

   Inputs are chosen so the reference is exact: integers wrap (the reference
   wraps the same way, in the type), float sums and products use small dyadic
   values whose partial results are representable even in bfloat16. One
   extra mode per float type ("frac") uses non-integer values and checks
   against a bound derived from the unit roundoff and p; another (type
   sweeps only, "nan/inf") mixes NaNs and infinities into the exact values:
   a NaN anywhere must come out as a NaN (of any bits, the same on every
   rank), as min and max included.

   The matrix is sampled so it runs in a minute or two on two cores:
     shape sweep  every row, every p, every count, in and out of place; the
                  (dtype, op) and the port configuration rotate
     type sweep   every row x every (dtype, op) at p = 16, 5, 3 and 2 with
                  ragged counts
   COLL_TEST_LEVEL=0 (quick, for sanitizers: p = 16 in two configurations,
   no type sweep at p = 16), 1 (default), 2 (every configuration for every
   shape, type sweeps at every p).
   COLL_TEST_ONLY=ring,allgather/bruck and COLL_TEST_SKIP=... pick rows by
   substrings of "kind/algo" (a partial run, said so in the output);
   COLL_TEST_VERBOSE=1 names each case before it runs.
   COLL_TEST_CHECKS=0 runs the matrix with the call checks off (every
   schedule's own steps; with them on, a small call's dissemination steps
   are the agreement rounds themselves).

   Adding an algorithm is one line in `rows`. An algorithm the library
   answers COLL_ERR_NOSYS for is counted as "not available", never as a
   pass, and listed at the end. */
#define COLL_IMPLEMENTATION
#ifdef TEST_CORE_WINDOWS            /* AUTO's calls over the threads port's windows */
#include "../coll_window.h"
#else
#include "../coll.h"
#endif
#define COLL_THREADS_IMPLEMENTATION
#include "../ports/coll_threads.h"
#include "test_ports.h"
#include "coll_test.h"
#include "test_values.h"
#include "test_clock.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXP   16
#define GUARD  64

/* ---- the table: one row per (collective, algorithm) --------------------- */
typedef struct row { coll_kind kind; coll_algo algo; int group; } row;
static const row rows[] = {
    { COLL_ALLREDUCE,       COLL_ALGO_AUTO, 0 },
    { COLL_ALLREDUCE,       COLL_ALGO_NAIVE, 0 },
    { COLL_ALLREDUCE,       COLL_ALGO_RING, 0 },
    { COLL_ALLREDUCE,       COLL_ALGO_TREE, 0 },
    { COLL_ALLREDUCE,       COLL_ALGO_RECURSIVE_DOUBLING, 0 },
    { COLL_ALLREDUCE,       COLL_ALGO_RABENSEIFNER, 0 },
    { COLL_ALLREDUCE,       COLL_ALGO_PIPELINED_TREE, 0 },
    { COLL_ALLREDUCE,       COLL_ALGO_HIERARCHICAL, 2 },
    { COLL_ALLREDUCE,       COLL_ALGO_HIERARCHICAL, 3 },
    { COLL_REDUCE_SCATTER,  COLL_ALGO_AUTO, 0 },
    { COLL_REDUCE_SCATTER,  COLL_ALGO_RING, 0 },
    { COLL_REDUCE_SCATTER,  COLL_ALGO_PAIRWISE, 0 },
    { COLL_REDUCE_SCATTER,  COLL_ALGO_RECURSIVE_HALVING, 0 },
    { COLL_REDUCE_SCATTERV, COLL_ALGO_AUTO, 0 },
    { COLL_REDUCE_SCATTERV, COLL_ALGO_RING, 0 },
    { COLL_REDUCE_SCATTERV, COLL_ALGO_PAIRWISE, 0 },
    { COLL_REDUCE_SCATTERV, COLL_ALGO_RECURSIVE_HALVING, 0 },
    { COLL_ALLGATHER,       COLL_ALGO_AUTO, 0 },
    { COLL_ALLGATHER,       COLL_ALGO_RING, 0 },
    { COLL_ALLGATHER,       COLL_ALGO_RECURSIVE_DOUBLING, 0 },
    { COLL_ALLGATHER,       COLL_ALGO_BRUCK, 0 },
    { COLL_ALLGATHERV,      COLL_ALGO_AUTO, 0 },
    { COLL_ALLGATHERV,      COLL_ALGO_RING, 0 },
    { COLL_ALLGATHERV,      COLL_ALGO_RECURSIVE_DOUBLING, 0 },
    { COLL_ALLGATHERV,      COLL_ALGO_BRUCK, 0 },
    { COLL_BROADCAST,       COLL_ALGO_AUTO, 0 },
    { COLL_BROADCAST,       COLL_ALGO_BINOMIAL, 0 },
    { COLL_BROADCAST,       COLL_ALGO_SCATTER_ALLGATHER, 0 },
    { COLL_BROADCAST,       COLL_ALGO_PIPELINED_CHAIN, 0 },
    { COLL_REDUCE,          COLL_ALGO_AUTO, 0 },
    { COLL_REDUCE,          COLL_ALGO_BINOMIAL, 0 },
    { COLL_REDUCE,          COLL_ALGO_REDUCE_SCATTER_GATHER, 0 },
    { COLL_REDUCE,          COLL_ALGO_LINEAR, 0 },
    { COLL_GATHER,          COLL_ALGO_AUTO, 0 },
    { COLL_GATHER,          COLL_ALGO_LINEAR, 0 },
    { COLL_GATHER,          COLL_ALGO_BINOMIAL, 0 },
    { COLL_SCATTER,         COLL_ALGO_AUTO, 0 },
    { COLL_SCATTER,         COLL_ALGO_LINEAR, 0 },
    { COLL_SCATTER,         COLL_ALGO_BINOMIAL, 0 },
    { COLL_GATHERV,         COLL_ALGO_AUTO, 0 },
    { COLL_GATHERV,         COLL_ALGO_LINEAR, 0 },
    { COLL_GATHERV,         COLL_ALGO_BINOMIAL, 0 },
    { COLL_SCATTERV,        COLL_ALGO_AUTO, 0 },
    { COLL_SCATTERV,        COLL_ALGO_LINEAR, 0 },
    { COLL_SCATTERV,        COLL_ALGO_BINOMIAL, 0 },
    { COLL_ALLTOALL,        COLL_ALGO_AUTO, 0 },
    { COLL_ALLTOALL,        COLL_ALGO_PAIRWISE, 0 },
    { COLL_ALLTOALL,        COLL_ALGO_BRUCK, 0 },
    { COLL_SCAN,            COLL_ALGO_AUTO, 0 },
    { COLL_SCAN,            COLL_ALGO_LINEAR, 0 },
    { COLL_SCAN,            COLL_ALGO_RECURSIVE_DOUBLING, 0 },
    { COLL_EXSCAN,          COLL_ALGO_AUTO, 0 },
    { COLL_EXSCAN,          COLL_ALGO_LINEAR, 0 },
    { COLL_EXSCAN,          COLL_ALGO_RECURSIVE_DOUBLING, 0 },
    { COLL_BARRIER,         COLL_ALGO_AUTO, 0 },
    { COLL_BARRIER,         COLL_ALGO_DISSEMINATION, 0 },
    /* last, so that the rows above sample the same cases as before them */
    { COLL_ALLTOALLV,       COLL_ALGO_AUTO, 0 },
    { COLL_ALLTOALLV,       COLL_ALGO_PAIRWISE, 0 },
    /* newer algorithms, after the rest for the same reason */
    { COLL_ALLREDUCE,       COLL_ALGO_REVERSED_BRUCK, 0 },
    { COLL_REDUCE_SCATTER,  COLL_ALGO_REVERSED_BRUCK, 0 },
    { COLL_REDUCE_SCATTERV, COLL_ALGO_REVERSED_BRUCK, 0 },
    { COLL_ALLREDUCE,       COLL_ALGO_DOUBLE_TREE, 0 },
    { COLL_BROADCAST,       COLL_ALGO_DOUBLE_TREE, 0 },
    { COLL_REDUCE,          COLL_ALGO_DOUBLE_TREE, 0 },
    /* small calls' dissemination rows (their blocks in the request's room) */
    { COLL_ALLREDUCE,       COLL_ALGO_DISSEMINATION, 0 },
    { COLL_REDUCE_SCATTER,  COLL_ALGO_DISSEMINATION, 0 },
    { COLL_ALLGATHER,       COLL_ALGO_DISSEMINATION, 0 },
    { COLL_BROADCAST,       COLL_ALGO_DISSEMINATION, 0 },
    { COLL_REDUCE,          COLL_ALGO_DISSEMINATION, 0 },
    { COLL_GATHER,          COLL_ALGO_DISSEMINATION, 0 },
    { COLL_SCATTER,         COLL_ALGO_DISSEMINATION, 0 },
    { COLL_ALLTOALL,        COLL_ALGO_DISSEMINATION, 0 },
    /* the negabinary pairings (Swing, Bine trees) */
    { COLL_ALLREDUCE,       COLL_ALGO_SWING, 0 },
    { COLL_BROADCAST,       COLL_ALGO_BINE, 0 },
    { COLL_REDUCE,          COLL_ALGO_BINE, 0 },
    { COLL_REDUCE_SCATTER,  COLL_ALGO_SWING, 0 },
    { COLL_REDUCE_SCATTERV, COLL_ALGO_SWING, 0 },
    { COLL_ALLGATHER,       COLL_ALGO_SWING, 0 },
    { COLL_ALLGATHERV,      COLL_ALGO_SWING, 0 },
};
#define NROWS ((int)(sizeof rows / sizeof rows[0]))

static int reduces(coll_kind k)
{
    return k == COLL_ALLREDUCE || k == COLL_REDUCE_SCATTER ||
           k == COLL_REDUCE_SCATTERV || k == COLL_REDUCE || k == COLL_SCAN || k == COLL_EXSCAN;
}
static int rooted(coll_kind k)
{
    return k == COLL_BROADCAST || k == COLL_REDUCE || k == COLL_GATHER || k == COLL_SCATTER ||
           k == COLL_GATHERV || k == COLL_SCATTERV;
}
static int vform(coll_kind k)
{
    return k == COLL_ALLGATHERV || k == COLL_REDUCE_SCATTERV || k == COLL_GATHERV || k == COLL_SCATTERV;
}
/* Has a distinct in-place layout (broadcast is always in place). */
static int has_inplace(coll_kind k)
{
    return k != COLL_BARRIER && k != COLL_BROADCAST;
}
/* Every rank ends with the same bytes. */
static int same_everywhere(coll_kind k)
{
    return k == COLL_ALLREDUCE || k == COLL_ALLGATHER || k == COLL_ALLGATHERV ||
           k == COLL_BROADCAST;
}

/* ---- user operators ------------------------------------------------------ */
/* triple: a 12-byte struct, commutative (wrapping sum, signed max, xor).
   affine: x -> a*x + b (mod 2^32), 8 bytes; composing in rank order is
           associative but NOT commutative, so only rank-order algorithms
           may run it (the others must say COLL_ERR_NOSYS).
   modsum: a custom function on the built-in uint32 type. */
enum { UOP_TRIPLE, UOP_AFFINE, UOP_MODSUM, NUOP };
typedef struct triple { uint32_t sum; int32_t max; uint32_t xr; } triple;
typedef struct affine { uint32_t a, b; } affine;
#define MODULUS 65521u

static int uop_tag[NUOP];               /* op.user points at its tag */
static unsigned long bad_user_ptr;

static void triple_fn(void *out, const void *a, const void *b, size_t n, void *user)
{
    triple *o = (triple *)out;
    const triple *x = (const triple *)a, *y = (const triple *)b;
    size_t i;
    if (user != &uop_tag[UOP_TRIPLE]) __atomic_add_fetch(&bad_user_ptr, 1, __ATOMIC_RELAXED);
    for (i = 0; i < n; i++) {
        triple t;
        t.sum = x[i].sum + y[i].sum;
        t.max = x[i].max > y[i].max ? x[i].max : y[i].max;
        t.xr = x[i].xr ^ y[i].xr;
        o[i] = t;
    }
}

/* lower ranks' map first, then the higher ranks' */
static affine affine_then(affine lo, affine hi)
{
    affine r;
    r.a = hi.a * lo.a;
    r.b = hi.a * lo.b + hi.b;
    return r;
}

static void affine_fn(void *out, const void *a, const void *b, size_t n, void *user)
{
    affine *o = (affine *)out;
    const affine *x = (const affine *)a, *y = (const affine *)b;
    size_t i;
    if (user != &uop_tag[UOP_AFFINE]) __atomic_add_fetch(&bad_user_ptr, 1, __ATOMIC_RELAXED);
    for (i = 0; i < n; i++) o[i] = affine_then(x[i], y[i]);
}

static void modsum_fn(void *out, const void *a, const void *b, size_t n, void *user)
{
    uint32_t *o = (uint32_t *)out;
    const uint32_t *x = (const uint32_t *)a, *y = (const uint32_t *)b;
    size_t i;
    if (user != &uop_tag[UOP_MODSUM]) __atomic_add_fetch(&bad_user_ptr, 1, __ATOMIC_RELAXED);
    for (i = 0; i < n; i++) o[i] = (x[i] + y[i]) % MODULUS;
}

static coll_user_op user_op(int u)
{
    coll_user_op op;
    memset(&op, 0, sizeof op);
    op.user = &uop_tag[u];
    if (u == UOP_TRIPLE) { op.fn = triple_fn; op.elem_size = sizeof(triple); op.commutative = 1; }
    if (u == UOP_AFFINE) { op.fn = affine_fn; op.elem_size = sizeof(affine); op.commutative = 0; }
    if (u == UOP_MODSUM) { op.fn = modsum_fn; op.elem_size = 0; op.commutative = 1; }
    return op;
}

/* ---- test cases ---------------------------------------------------------- */
typedef struct tcase {
    unsigned char row, inplace, frac;  /* frac: 1 non-integer floats, bounded;
                                          2 NaNs and infinities among exact ones */
    signed char dtype, op, uop;        /* uop: -1 or a user operator         */
    int root;
    size_t count;
} tcase;

static size_t esize_of(const tcase *tc)
{
    if (tc->uop == UOP_TRIPLE) return sizeof(triple);
    if (tc->uop == UOP_AFFINE) return sizeof(affine);
    return coll_dtype_size((coll_dtype)tc->dtype);
}

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33; x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}
static uint64_t hval(int r, size_t e, unsigned salt)
{
    return mix64(((uint64_t)(unsigned)r << 48) ^ ((uint64_t)e * 0x9E3779B97F4A7C15ull) ^
                 ((uint64_t)salt << 40) ^ 0x5bd1e995u);
}

/* Integer input of rank r at element e. avg gets small values (no wrap, so
   the one division means something); every other op full-width hashes. */
static uint64_t ival(const tcase *tc, int r, size_t e)
{
    uint64_t k = (uint64_t)r * 7 + (uint64_t)e * 3;
    if (tc->op == COLL_AVG)
        return tv_info((coll_dtype)tc->dtype)->is_signed ? (uint64_t)0 + (k % 15) - 7 : k % 8;
    return hval(r, e, (unsigned)tc->op);
}

/* Float input of rank r at element e, already rounded to the dtype. Exact
   mode: |partial sums| <= 16 * 3.5 in steps of 0.5 (8 significant bits at
   most), products are +-2^k with |k| <= 4 at any p <= 16. */
static double fval(const tcase *tc, int r, size_t e)
{
    coll_dtype t = (coll_dtype)tc->dtype;
    uint64_t k = (uint64_t)r * 7 + (uint64_t)e * 3;
    static const double pm[4] = { 1, 2, -1, 0.5 };
    double v;
    if (tc->frac == 2) {               /* a NaN or an infinity at 3 inputs in 32 */
        uint64_t s = hval(r, e, 5) % 32;
        if (s == 0) return tv_nan();
        if (s < 3) return s == 1 ? tv_inf() : -tv_inf();
    }
    if (tc->frac == 1) {
        uint64_t j = (uint64_t)r * 37 + (uint64_t)e * 11;
        v = tc->op == COLL_PROD ? 0.875 + (double)(j % 101) / 404.0
                                : (double)(j % 101) / 13.0 - 3.3;
    } else if (tc->op == COLL_SUM || tc->op == COLL_AVG) {
        v = ((double)(k % 15) - 7) * 0.5;
    } else if (tc->op == COLL_PROD) {
        v = pm[((uint64_t)r * 5 + e) % 4];
    } else {
        v = ((double)(int64_t)(hval(r, e, 7) % 2001) - 1000) / 8.0;
    }
    return tv_round(t, v);
}

/* Rank r's element e as tv_reduce reads it (ctx: the case). */
static tv_val input(const void *ctx, int r, size_t e)
{
    const tcase *tc = (const tcase *)ctx;
    coll_dtype t = (coll_dtype)tc->dtype;
    return t_is_float(t) ? tv_of(t, fval(tc, r, e)) : tv_of_bits(t, ival(tc, r, e));
}

/* Element e of rank r's input, as bytes. Copy-only collectives move raw
   hash bytes (any bit pattern must survive). */
static void gen(const tcase *tc, int r, size_t e, unsigned char *out)
{
    coll_dtype t = (coll_dtype)tc->dtype;
    if (!reduces(rows[tc->row].kind)) {
        uint64_t h[2];
        h[0] = hval(r, e, 99); h[1] = hval(r, e, 98);
        memcpy(out, h, esize_of(tc));
        return;
    }
    if (tc->uop == UOP_TRIPLE) {
        triple x; uint64_t h = hval(r, e, 11);
        x.sum = (uint32_t)h; x.max = (int32_t)(uint32_t)(h >> 32); x.xr = (uint32_t)hval(r, e, 12);
        memcpy(out, &x, sizeof x);
    } else if (tc->uop == UOP_AFFINE) {
        affine x; uint64_t h = hval(r, e, 13);
        x.a = (uint32_t)h | 1u; x.b = (uint32_t)(h >> 32);
        memcpy(out, &x, sizeof x);
    } else if (tc->uop == UOP_MODSUM) {
        uint32_t x = (uint32_t)(hval(r, e, 14) % MODULUS);
        memcpy(out, &x, 4);
    } else {
        tv_store(t, out, 0, input(tc, r, e));
    }
}

/* The reduced element e over ranks 0..p-1, folded in rank order with plain
   loops (the user operators here, the built-in ones by tv_reduce). Exact
   cases fill `out`; frac cases set *approx and *tol instead (return 1). */
static int expect(const tcase *tc, int p, size_t e, unsigned char *out, double *approx, double *tol)
{
    coll_dtype t = (coll_dtype)tc->dtype;
    coll_op op = (coll_op)tc->op;
    int r;
    if (tc->uop == UOP_TRIPLE) {
        triple acc, x;
        gen(tc, 0, e, out); memcpy(&acc, out, sizeof acc);
        for (r = 1; r < p; r++) {
            gen(tc, r, e, out); memcpy(&x, out, sizeof x);
            acc.sum += x.sum; if (x.max > acc.max) acc.max = x.max; acc.xr ^= x.xr;
        }
        memcpy(out, &acc, sizeof acc);
    } else if (tc->uop == UOP_AFFINE) {
        affine acc, x;
        gen(tc, 0, e, out); memcpy(&acc, out, sizeof acc);
        for (r = 1; r < p; r++) { gen(tc, r, e, out); memcpy(&x, out, sizeof x); acc = affine_then(acc, x); }
        memcpy(out, &acc, sizeof acc);
    } else if (tc->uop == UOP_MODSUM) {
        uint32_t acc = 0, x;
        for (r = 0; r < p; r++) { gen(tc, r, e, out); memcpy(&x, out, 4); acc = (acc + x) % MODULUS; }
        memcpy(out, &acc, 4);
    } else if (tc->frac == 1) {        /* floats that round: a value and a bound */
        *approx = tv_reduce_approx(t, op, p, e, input, tc, tol);
        return 1;
    } else {                           /* exact: test_values.h's reference */
        tv_store(t, out, 0, tv_reduce(t, op, p, e, input, tc));
    }
    return 0;
}

/* ---- ports under test ------------------------------------------------------ */
enum { PORT_THREADS, PORT_DUPLEX, PORT_RENDEZVOUS, NPORTS };
static const char *const port_name[NPORTS] = { "threads", "duplex", "rendezvous" };

typedef struct cfg { int port; size_t scratch; } cfg;
static const cfg cfgs[] = {
    { PORT_THREADS, 256 }, { PORT_DUPLEX, 256 }, { PORT_RENDEZVOUS, 256 },
    { PORT_THREADS, 1 << 20 }, { PORT_DUPLEX, 1 << 20 }, { PORT_RENDEZVOUS, 1 << 20 },
};
#define NCFG ((int)(sizeof cfgs / sizeof cfgs[0]))

static coll_port make_port(int kind, coll_threads *w, int rank)
{
    coll_port p;
    if (kind == PORT_RENDEZVOUS) return coll_rendezvous_port(w, rank);
    p = coll_threads_port(w, rank);
    if (kind == PORT_DUPLEX) { p.isend = NULL; p.irecv = NULL; p.wait = NULL; }
    return p;
}

/* ---- one world: p ranks running a list of cases in lockstep -------------- */
typedef struct rankmem {
    unsigned char *a, *b, *scratch;
    size_t acap, bcap;
} rankmem;

typedef struct world {
    coll_threads w;
    int cfg;
    const tcase *cases;
    size_t ncases;
    pthread_barrier_t bar;
    /* published before the barrier, read after; [case parity][rank] */
    int rc[2][MAXP];
    uint64_t hash[2][MAXP];
    int stop[2];
    unsigned long arrived;              /* barrier test */
    rankmem mem[MAXP];
} world;

static int verbose;                     /* COLL_TEST_VERBOSE */
static int checks_off;                  /* COLL_TEST_CHECKS=0 */

/* ---- a trimmed build (COLL_KINDS, COLL_ALGOS, COLL_DTYPES, COLL_OPS) --------
   Built with the masks of a firmware profile, the matrix must find exactly
   the rows, dtypes and ops the masks keep: each kept one ran and passed at
   least once, each left-out one answered COLL_ERR_NOSYS every time. */
#ifndef COLL_KINDS
#define PROFILE_KINDS (~0ul)
#else
#define PROFILE_KINDS ((unsigned long)(COLL_KINDS))
#endif
#ifndef COLL_ALGOS
#define PROFILE_ALGOS (~0ul)
#else
#define PROFILE_ALGOS ((unsigned long)(COLL_ALGOS))
#endif
#ifndef COLL_DTYPES
#define PROFILE_DTYPES (~0ul)
#else
#define PROFILE_DTYPES ((unsigned long)(COLL_DTYPES))
#endif
#ifndef COLL_OPS
#define PROFILE_OPS (~0ul)
#else
#define PROFILE_OPS ((unsigned long)(COLL_OPS))
#endif
#define IN_MASK(m, x) (((m) >> (x)) & 1ul)

/* Does the profile compile row i in? */
static int profile_keeps(int i)
{
    if (rows[i].algo == COLL_ALGO_DISSEMINATION && rows[i].kind != COLL_BARRIER && !COLL__ROOMS)
        return 0;                       /* small calls' rows: the call checks and their room */
    return IN_MASK(PROFILE_KINDS, rows[i].kind) &&
           (rows[i].algo == COLL_ALGO_AUTO || IN_MASK(PROFILE_ALGOS, rows[i].algo));
}

/* per-row tallies, written by rank 0 only */
static unsigned long row_ran[NROWS], row_na[NROWS];
/* calls that returned COLL_OK: by row, and (reductions, built-in ops) by
   dtype and by op */
static unsigned long row_ok[NROWS], dtype_ok[COLL_DTYPE_COUNT], op_ok[COLL_OP_COUNT], user_ok;

static void describe(const tcase *tc, int p, const world *W, char *s, size_t n)
{
    const row *R = &rows[tc->row];
    const char *dt = tc->uop == UOP_TRIPLE ? "user:triple" : tc->uop == UOP_AFFINE ? "user:affine" :
                     tc->uop == UOP_MODSUM ? "uint32+user:modsum" : NULL;
    static const char *const opn[] = { "sum", "prod", "min", "max", "avg", "band", "bor", "bxor", "user" };
    char grp[24] = "", dtn[24];
    if (R->group) snprintf(grp, sizeof grp, "/group=%d", R->group);
    snprintf(s, n, "%s/%s%s %s %s%s p=%d count=%zu %s root=%d [%s, scratch %zu]",
             coll_kind_name(R->kind), coll_algo_name(R->algo), grp, dt ? dt : tv_name((coll_dtype)tc->dtype, dtn, sizeof dtn), reduces(R->kind) ? opn[tc->op] : "copy",
             tc->frac == 1 ? "(frac)" : tc->frac ? "(nan/inf)" : "", p, tc->count, tc->inplace ? "in-place" : "out-of-place",
             tc->root, port_name[cfgs[W->cfg].port], cfgs[W->cfg].scratch);
}

static void grow(unsigned char **buf, size_t *cap, size_t need)
{
    if (need <= *cap) return;
    free(*buf);
    *buf = (unsigned char *)malloc(need);
    if (!*buf) { fprintf(stderr, "out of memory\n"); exit(2); }
    *cap = need;
}

static void set_guards(unsigned char *base, size_t bytes)
{
    size_t i;
    for (i = 0; i < GUARD; i++) {
        base[i] = (unsigned char)(0xA7 ^ (i * 13));
        base[GUARD + bytes + i] = (unsigned char)(0x3C ^ (i * 29));
    }
}
static int guards_ok(const unsigned char *base, size_t bytes)
{
    size_t i;
    for (i = 0; i < GUARD; i++)
        if (base[i] != (unsigned char)(0xA7 ^ (i * 13)) ||
            base[GUARD + bytes + i] != (unsigned char)(0x3C ^ (i * 29))) return 0;
    return 1;
}
static void junk(unsigned char *p, size_t bytes, uint64_t seed)
{
    size_t i;
    for (i = 0; i < bytes; i++) p[i] = (unsigned char)(mix64(seed + i / 8) >> (8 * (i % 8)));
}
static uint64_t fnv(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    size_t i;
    for (i = 0; i < n; i++) { h ^= p[i]; h *= 0x100000001b3ull; }
    return h;
}

/* Element-by-element comparison, first difference reported. */
typedef struct verdict { size_t bad, first; double got, want; int approx; } verdict;

static void cmp_exact(verdict *v, const tcase *tc, const unsigned char *got,
                      const unsigned char *want, size_t idx)
{
    if (memcmp(got, want, esize_of(tc)) == 0) return;
    if (t_is_float((coll_dtype)tc->dtype) && tc->uop < 0) {   /* NaN: any NaN */
        double g = tv_load((coll_dtype)tc->dtype, got, 0).f, w = tv_load((coll_dtype)tc->dtype, want, 0).f;
        if (g != g && w != w) return;
    }
    if (!v->bad++) {
        v->first = idx;
        v->approx = 0;
        if (t_is_float((coll_dtype)tc->dtype) && tc->uop < 0) {
            v->got = tv_load((coll_dtype)tc->dtype, got, 0).f;
            v->want = tv_load((coll_dtype)tc->dtype, want, 0).f;
        } else {
            uint64_t g = 0, w = 0;
            memcpy(&g, got, esize_of(tc) < 8 ? esize_of(tc) : 8);
            memcpy(&w, want, esize_of(tc) < 8 ? esize_of(tc) : 8);
            v->got = (double)g; v->want = (double)w;
        }
    }
}

/* reduced element e of the whole vector, compared with `got` */
static void check_reduced(verdict *v, const tcase *tc, int p, size_t e, const unsigned char *got, size_t idx)
{
    unsigned char want[16];
    double approx = 0, tol = 0;
    if (expect(tc, p, e, want, &approx, &tol)) {
        double g = tv_load((coll_dtype)tc->dtype, got, 0).f, d = g - approx;
        if (d < 0) d = -d;
        if (!(d <= tol) && !v->bad++) { v->first = idx; v->got = g; v->want = approx; v->approx = 1; }
    } else {
        cmp_exact(v, tc, got, want, idx);
    }
}

static void check_copied(verdict *v, const tcase *tc, int r, size_t e, const unsigned char *got, size_t idx)
{
    unsigned char want[16];
    gen(tc, r, e, want);
    cmp_exact(v, tc, got, want, idx);
}

/* The collective itself, through the public entry points. */
static int call(coll_comm *c, const tcase *tc, const void *src, void *dst, const size_t *counts)
{
    const row *R = &rows[tc->row];
    coll_dtype t = (coll_dtype)tc->dtype;
    coll_op op = (coll_op)tc->op;
    size_t n = tc->count;
    if (R->group) {
        coll_args a;
        memset(&a, 0, sizeof a);
        a.kind = R->kind; a.algo = R->algo; a.src = src; a.dst = dst; a.count = n;
        a.dtype = t; a.op = op; a.root = tc->root;
        a.group = R->group < c->nranks ? R->group : c->nranks;
        return coll_run(c, &a);
    }
    switch (R->kind) {
    case COLL_ALLREDUCE:       return coll_allreduce(c, src, dst, n, t, op, R->algo);
    case COLL_REDUCE_SCATTER:  return coll_reduce_scatter(c, src, dst, n, t, op, R->algo);
    case COLL_ALLGATHER:       return coll_allgather(c, src, dst, n, t, R->algo);
    case COLL_BROADCAST:       return coll_broadcast(c, dst, n, t, tc->root, R->algo);
    case COLL_REDUCE:          return coll_reduce(c, src, dst, n, t, op, tc->root, R->algo);
    case COLL_GATHER:          return coll_gather(c, src, dst, n, t, tc->root, R->algo);
    case COLL_SCATTER:         return coll_scatter(c, src, dst, n, t, tc->root, R->algo);
    case COLL_GATHERV:         return coll_gatherv(c, src, dst, counts, t, tc->root, R->algo);
    case COLL_SCATTERV:        return coll_scatterv(c, src, dst, counts, t, tc->root, R->algo);
    case COLL_ALLTOALL:        return coll_alltoall(c, src, dst, n, t, R->algo);
    case COLL_BARRIER:         return coll_barrier(c, R->algo);
    case COLL_ALLGATHERV:      return coll_allgatherv(c, src, dst, counts, t, R->algo);
    case COLL_REDUCE_SCATTERV: return coll_reduce_scatterv(c, src, dst, counts, t, op, R->algo);
    case COLL_SCAN:            return coll_scan(c, src, dst, n, t, op, R->algo);
    case COLL_EXSCAN:          return coll_exscan(c, src, dst, n, t, op, R->algo);
    case COLL_ALLTOALLV:       return coll_alltoallv(c, src, dst, counts, t, R->algo);
    default:                   return COLL_ERR_INVAL;
    }
}

/* COLL_TEST_PERSIST=1: every call is a persistent one (coll_prepare once,
   coll_restart per run). It runs first over junk - every byte of both
   buffers but the guards - and then, the real inputs put back, again: the
   second run's result is the one checked, so a request that kept anything
   of its first run's data (a result, a pointer a hook moved) fails. */
static int persist;

static int call_persistent(coll_comm *c, const tcase *tc, const void *src, void *dst, const size_t *counts,
                           unsigned char *A, size_t an, unsigned char *B, size_t bn, uint64_t seed)
{
    const row *R = &rows[tc->row];
    coll_request q;
    coll_args a;
    unsigned char *keep = (unsigned char *)malloc(an + bn + 1);
    int rc, run;
    if (!keep) return COLL_ERR_NOSPC;
    memset(&a, 0, sizeof a);
    a.kind = R->kind; a.algo = R->algo; a.src = src; a.dst = dst; a.count = tc->count;
    a.dtype = (coll_dtype)tc->dtype; a.op = (coll_op)tc->op; a.root = tc->root; a.counts = counts;
    if (R->group) a.group = R->group < c->nranks ? R->group : c->nranks;
    if (R->kind == COLL_BROADCAST) a.src = dst;
    rc = coll_prepare(&q, c, &a);
    if (an) memcpy(keep, A, an);
    if (bn) memcpy(keep + an, B, bn);
    for (run = 0; run < 2 && rc == COLL_OK; run++) {
        if (run == 0 && an) junk(A + GUARD, an - 2 * GUARD, seed ^ 0x5eed);
        if (run == 0 && bn) junk(B + GUARD, bn - 2 * GUARD, seed ^ 0xfeed);
        if (run == 1 && an) memcpy(A, keep, an);
        if (run == 1 && bn) memcpy(B, keep + an, bn);
        rc = coll_restart(&q);
        if (rc == COLL_OK) rc = coll_waitall(&q, 1);
    }
    free(keep);
    return rc;
}

/* Ragged per-rank counts for the v forms: some ranks contribute nothing. */
static size_t vcount(size_t count, int j) { return j % 3 == 1 ? 0 : count + (size_t)((j * 7) % 5); }

/* alltoallv's matrix, entry (i, j): what rank i sends rank j. Ragged with
   empty blocks; in place symmetric (row r = column r, as it must be). */
static size_t a2av_count(size_t count, int inplace, int i, int j)
{
    if (inplace) return (i + j) % 3 == 2 ? 0 : count + (size_t)(((i + j) * 7 + i * j) % 5);
    return (i + 2 * j) % 3 == 1 ? 0 : count + (size_t)((i * 7 + j * 3) % 5);
}

/* Runs case k on rank r; returns its result code; *hash gets the output's
   hash when every rank should hold the same bytes. */
static int run_case(world *W, int r, coll_comm *c, const tcase *tc, size_t k,
                    unsigned long *barriers_done, uint64_t *hash)
{
    const row *R = &rows[tc->row];
    coll_kind kind = R->kind;
    int p = c->nranks, j, rc, expect_rc = COLL_OK, root = tc->root;
    size_t es = esize_of(tc), n = tc->count, counts[MAXP], offs[MAXP], total = 0, i;
    size_t mat[MAXP * MAXP], roff[MAXP * MAXP];   /* alltoallv: the matrix, each block's
                                                    offset in its sender's row */
    size_t in_n = 0, out_n = 0, in_off = 0, out_off = 0, a_n, b_n;
    rankmem *M = &W->mem[r];
    unsigned char *src = NULL, *dst = NULL, *abuf, *bbuf;
    int inplace = tc->inplace, one = 0;      /* one: a single buffer (in place) */
    verdict v;
    char what[200];

    *hash = 0;
    for (j = 0; j < p; j++) {
        counts[j] = vform(kind) ? vcount(n, j) : n;
        offs[j] = total;
        total += counts[j];
    }
    if (kind == COLL_ALLTOALLV) {          /* counts[j] / offs[j]: column r, what rank j sends r */
        int a;
        for (j = 0; j < p; j++) {
            size_t o = 0;
            for (a = 0; a < p; a++) {
                mat[j * p + a] = a2av_count(n, inplace, j, a);
                roff[j * p + a] = o;
                o += mat[j * p + a];
            }
        }
        total = 0;
        for (j = 0; j < p; j++) { counts[j] = mat[j * p + r]; offs[j] = total; total += counts[j]; }
    }
    if (tc->uop >= 0) {
        coll_user_op u = user_op(tc->uop);
        rc = coll_set_user_op(c, &u);
        COLL_CHECK_EQ(rc, COLL_OK);
    }
    if (reduces(kind) && tc->uop < 0 && tc->op >= COLL_BAND && t_is_float((coll_dtype)tc->dtype))
        expect_rc = COLL_ERR_INVAL;

    if (kind == COLL_BARRIER) {
        int it;
        for (it = 0; it < 3; it++) {
            unsigned long now;
            __atomic_add_fetch(&W->arrived, 1, __ATOMIC_SEQ_CST);
            rc = persist ? call_persistent(c, tc, NULL, NULL, NULL, 0, 0, 0, 0, 0)
                         : call(c, tc, NULL, NULL, NULL);
            if (rc != COLL_OK) return rc;
            now = __atomic_load_n(&W->arrived, __ATOMIC_SEQ_CST);
            ++*barriers_done;
            COLL_CHECK_MSG(now >= (unsigned long)p * *barriers_done,
                           "barrier/%s p=%d rank %d left after %lu arrivals, %lu expected",
                           coll_algo_name(R->algo), p, r, now, (unsigned long)p * *barriers_done);
        }
        return COLL_OK;
    }

    /* element counts of the input and output and, in place, where each sits
       in the one buffer */
    switch (kind) {
    case COLL_ALLREDUCE: case COLL_REDUCE: case COLL_SCAN: case COLL_EXSCAN: in_n = out_n = n; break;
    case COLL_BROADCAST: in_n = 0; out_n = n; break;
    case COLL_REDUCE_SCATTER: case COLL_REDUCE_SCATTERV:
        in_n = total; out_n = counts[r]; out_off = offs[r]; break;
    case COLL_ALLGATHER: case COLL_ALLGATHERV:
        in_n = counts[r]; out_n = total; in_off = offs[r]; break;
    case COLL_GATHER: in_n = n; out_n = n * (size_t)p; in_off = (size_t)r * n; break;
    case COLL_SCATTER: in_n = n * (size_t)p; out_n = n; out_off = (size_t)r * n; break;
    case COLL_GATHERV: in_n = counts[r]; out_n = total; in_off = offs[r]; break;
    case COLL_SCATTERV: in_n = total; out_n = counts[r]; out_off = offs[r]; break;
    case COLL_ALLTOALL: in_n = out_n = n * (size_t)p; break;
    case COLL_ALLTOALLV: in_n = roff[r * p + p - 1] + mat[r * p + p - 1]; out_n = total; break;
    default: break;
    }
    one = inplace || kind == COLL_BROADCAST;
    if (one) {
        size_t whole = kind == COLL_ALLREDUCE || kind == COLL_REDUCE || kind == COLL_BROADCAST ||
                       kind == COLL_SCAN || kind == COLL_EXSCAN ? n :
                       in_n > out_n ? in_n : out_n;
        a_n = whole; b_n = 0;
    } else {
        a_n = in_n; b_n = out_n;
    }
    grow(&M->a, &M->acap, a_n * es + 2 * GUARD);
    grow(&M->b, &M->bcap, b_n * es + 2 * GUARD);
    abuf = M->a + GUARD; bbuf = M->b + GUARD;
    set_guards(M->a, a_n * es);
    set_guards(M->b, b_n * es);
    junk(abuf, a_n * es, k * 131 + (size_t)r);
    junk(bbuf, b_n * es, k * 137 + (size_t)r + 7);
    if (one) { src = abuf + in_off * es; dst = abuf + out_off * es; }
    else     { src = abuf; dst = bbuf; }
    if (kind == COLL_BROADCAST) src = dst = abuf;

    /* inputs */
    switch (kind) {
    case COLL_ALLREDUCE: case COLL_REDUCE: case COLL_REDUCE_SCATTER:
    case COLL_REDUCE_SCATTERV: case COLL_ALLTOALL: case COLL_ALLTOALLV: case COLL_SCAN: case COLL_EXSCAN:
        for (i = 0; i < in_n; i++) gen(tc, r, i, src + i * es);
        break;
    case COLL_ALLGATHER: case COLL_ALLGATHERV: case COLL_GATHER: case COLL_GATHERV:
        for (i = 0; i < in_n; i++) gen(tc, r, i, src + i * es);
        break;
    case COLL_SCATTER: case COLL_SCATTERV:
        if (r == root) for (i = 0; i < in_n; i++) gen(tc, r, i, src + i * es);
        break;
    case COLL_BROADCAST:
        if (r == root) for (i = 0; i < n; i++) gen(tc, r, i, dst + i * es);
        break;
    default: break;
    }

    describe(tc, p, W, what, sizeof what);
    if (verbose && r == 0) { printf("  case %zu: %s\n", k, what); fflush(stdout); }
    rc = persist ? call_persistent(c, tc, src, dst, kind == COLL_ALLTOALLV ? mat : counts,
                                   M->a, a_n * es + 2 * GUARD, M->b, b_n * es + 2 * GUARD, k * 139 + (size_t)r)
                 : call(c, tc, src, dst, kind == COLL_ALLTOALLV ? mat : counts);
    if (rc == COLL_ERR_NOSYS && expect_rc == COLL_OK) return rc;   /* not available */
    if (rc == COLL_ERR_NOSYS && !profile_keeps(tc->row)) return rc;   /* compiled out: before any check */
    COLL_CHECK_MSG(rc == expect_rc, "%s, rank %d: returned %d (%s), expected %d",
                   what, r, rc, coll_result_str(rc), expect_rc);
    if (rc != COLL_OK) return rc;

    /* results */
    memset(&v, 0, sizeof v);
    switch (kind) {
    case COLL_ALLREDUCE:
        for (i = 0; i < n; i++) check_reduced(&v, tc, p, i, dst + i * es, i);
        break;
    case COLL_REDUCE:
        if (r == root) for (i = 0; i < n; i++) check_reduced(&v, tc, p, i, dst + i * es, i);
        break;
    case COLL_SCAN:                /* the reduction over ranks 0..r */
        for (i = 0; i < n; i++) check_reduced(&v, tc, r + 1, i, dst + i * es, i);
        break;
    case COLL_EXSCAN:              /* over ranks 0..r-1; rank 0 keeps its own */
        for (i = 0; i < n; i++)
            if (r > 0) check_reduced(&v, tc, r, i, dst + i * es, i);
            else check_reduced(&v, tc, 1, i, dst + i * es, i);
        break;
    case COLL_REDUCE_SCATTER: case COLL_REDUCE_SCATTERV:
        for (i = 0; i < counts[r]; i++) check_reduced(&v, tc, p, offs[r] + i, dst + i * es, i);
        break;
    case COLL_ALLGATHER: case COLL_ALLGATHERV:
        for (j = 0; j < p; j++)
            for (i = 0; i < counts[j]; i++) check_copied(&v, tc, j, i, dst + (offs[j] + i) * es, offs[j] + i);
        break;
    case COLL_BROADCAST:
        for (i = 0; i < n; i++) check_copied(&v, tc, root, i, dst + i * es, i);
        break;
    case COLL_GATHER:
        if (r == root)
            for (j = 0; j < p; j++)
                for (i = 0; i < n; i++) check_copied(&v, tc, j, i, dst + ((size_t)j * n + i) * es, (size_t)j * n + i);
        break;
    case COLL_SCATTER:
        for (i = 0; i < n; i++) check_copied(&v, tc, root, (size_t)r * n + i, dst + i * es, i);
        break;
    case COLL_GATHERV:
        if (r == root)
            for (j = 0; j < p; j++)
                for (i = 0; i < counts[j]; i++) check_copied(&v, tc, j, i, dst + (offs[j] + i) * es, offs[j] + i);
        break;
    case COLL_SCATTERV:
        for (i = 0; i < counts[r]; i++) check_copied(&v, tc, root, offs[r] + i, dst + i * es, i);
        break;
    case COLL_ALLTOALL:
        for (j = 0; j < p; j++)
            for (i = 0; i < n; i++)
                check_copied(&v, tc, j, (size_t)r * n + i, dst + ((size_t)j * n + i) * es, (size_t)j * n + i);
        break;
    case COLL_ALLTOALLV:           /* block j: rank j's row, at block r */
        for (j = 0; j < p; j++)
            for (i = 0; i < counts[j]; i++)
                check_copied(&v, tc, j, roff[j * p + r] + i, dst + (offs[j] + i) * es, offs[j] + i);
        break;
    default: break;
    }
    COLL_CHECK_MSG(v.bad == 0, "%s, rank %d: %zu wrong elements, first [%zu] = %.17g, expected %.17g%s",
                   what, r, v.bad, v.first, v.got, v.want, v.approx ? " (within bound)" : "");
    COLL_CHECK_MSG(guards_ok(M->a, a_n * es) && guards_ok(M->b, b_n * es),
                   "%s, rank %d: bytes written outside the buffers", what, r);
    if (!one && ((kind != COLL_SCATTER && kind != COLL_SCATTERV) || r == root)) {   /* const src stays untouched */
        unsigned char want[16];
        size_t bad = 0;
        for (i = 0; i < in_n; i++) { gen(tc, r, i, want); if (memcmp(want, src + i * es, es)) bad++; }
        COLL_CHECK_MSG(bad == 0, "%s, rank %d: %zu source elements changed", what, r, bad);
    }
    if (same_everywhere(kind)) *hash = fnv(dst, out_n * es);
    return rc;
}

static int rank_main(int r, void *arg)
{
    world *W = (world *)arg;
    int p = W->w.nranks, rc;
    coll_port port = make_port(cfgs[W->cfg].port, &W->w, r);
    coll_comm c;
    size_t k, sb = cfgs[W->cfg].scratch;
    unsigned long barriers = 0;
    rankmem *M = &W->mem[r];

    M->scratch = (unsigned char *)malloc(sb);
    rc = coll_init(&c, r, p, &port, M->scratch, sb);
    COLL_CHECK_EQ(rc, COLL_OK);
    if (checks_off) COLL_CHECK_EQ(coll_set_checks(&c, 0), COLL_OK);
    for (k = 0; k < W->ncases; k++) {
        const tcase *tc = &W->cases[k];
        uint64_t h = 0;
        int par = (int)(k % 2);
        rc = run_case(W, r, &c, tc, k, &barriers, &h);
        W->rc[par][r] = rc;
        W->hash[par][r] = h;
        if (rc == COLL_ERR_TIMEOUT || rc == COLL_ERR_ABORTED || rc == COLL_ERR_MISMATCH ||
            rc == COLL_ERR_IO)
            W->stop[par] = 1;                  /* the world is broken: end it */
        pthread_barrier_wait(&W->bar);
        if (r == 0) {
            if (rc == COLL_ERR_NOSYS) { row_na[tc->row]++; coll_test_unavailable(); }
            else row_ran[tc->row]++;
            if (rc == COLL_OK) {
                row_ok[tc->row]++;
                if (reduces(rows[tc->row].kind) && tc->uop < 0) { dtype_ok[tc->dtype]++; op_ok[tc->op]++; }
                if (reduces(rows[tc->row].kind) && tc->uop >= 0) user_ok++;
            }
        }
        if (r != 0 && W->rc[par][0] != COLL_ERR_NOSYS) {
            char what[200];
            describe(tc, p, W, what, sizeof what);
            COLL_CHECK_MSG(rc == W->rc[par][0], "%s: rank %d returned %d, rank 0 %d",
                           what, r, rc, W->rc[par][0]);
            if (rc == COLL_OK && same_everywhere(rows[tc->row].kind))
                COLL_CHECK_MSG(h == W->hash[par][0], "%s: rank %d's result differs from rank 0's",
                               what, r);
        }
        if (W->stop[par]) break;
    }
    free(M->scratch); M->scratch = NULL;
    return 0;
}

static void check_profile(void)
{
    int i;
    for (i = 0; i < NROWS; i++) {
        int kept = profile_keeps(i);
        COLL_CHECK_MSG(kept ? row_ok[i] > 0 : row_ok[i] == 0, "row %d (kind %d, algo %d): %s, and %lu calls succeeded",
                       i, (int)rows[i].kind, (int)rows[i].algo, kept ? "compiled in" : "left out", row_ok[i]);
    }
    for (i = 0; i < (int)COLL_USER_TYPE; i++)
        COLL_CHECK_MSG(IN_MASK(PROFILE_DTYPES, i) ? dtype_ok[i] > 0 : dtype_ok[i] == 0,
                       "dtype %d: %s, and %lu reductions succeeded", i,
                       IN_MASK(PROFILE_DTYPES, i) ? "compiled in" : "left out", dtype_ok[i]);
    for (i = 0; i < (int)COLL_USER_OP; i++)
        COLL_CHECK_MSG(IN_MASK(PROFILE_OPS, i) ? op_ok[i] > 0 : op_ok[i] == 0,
                       "op %d: %s, and %lu reductions succeeded", i,
                       IN_MASK(PROFILE_OPS, i) ? "compiled in" : "left out", op_ok[i]);
    COLL_CHECK_MSG(IN_MASK(PROFILE_OPS, COLL_USER_OP) ? user_ok > 0 : user_ok == 0,
                   "user operators: %s, and %lu reductions succeeded",
                   IN_MASK(PROFILE_OPS, COLL_USER_OP) ? "compiled in" : "left out", user_ok);
}

/* ---- building the case lists ------------------------------------------------ */
typedef struct combo { signed char dtype, op, uop, frac; } combo;

/* Every (dtype, op) a collective takes, user operators and the non-integer
   float mode included. `talking` leaves out the ones refused up front. */
static int combos_for(coll_kind k, combo *out, int talking)
{
    int n = 0, t, op;
    if (k == COLL_BARRIER) { out[n].dtype = COLL_UINT8; out[n].op = COLL_SUM; out[n].uop = -1; out[n].frac = 0; return 1; }
    for (t = 0; t < COLL_USER_TYPE; t++) {
        if (!reduces(k)) { out[n].dtype = (signed char)t; out[n].op = COLL_SUM; out[n].uop = -1; out[n].frac = 0; n++; continue; }
        for (op = 0; op < COLL_USER_OP; op++) {
            if (talking && op >= COLL_BAND && t_is_float((coll_dtype)t)) continue;
            out[n].dtype = (signed char)t; out[n].op = (signed char)op; out[n].uop = -1; out[n].frac = 0; n++;
        }
        if (t_is_float((coll_dtype)t)) {
            static const signed char fops[3] = { COLL_SUM, COLL_PROD, COLL_AVG };
            for (op = 0; op < 3; op++) {
                out[n].dtype = (signed char)t; out[n].op = fops[op]; out[n].uop = -1; out[n].frac = 1; n++;
            }
        }
    }
    out[n].dtype = COLL_USER_TYPE; out[n].op = reduces(k) ? COLL_USER_OP : COLL_SUM; out[n].uop = UOP_TRIPLE; out[n].frac = 0; n++;
    out[n].dtype = COLL_USER_TYPE; out[n].op = reduces(k) ? COLL_USER_OP : COLL_SUM; out[n].uop = UOP_AFFINE; out[n].frac = 0; n++;
    if (reduces(k)) { out[n].dtype = COLL_UINT32; out[n].op = COLL_USER_OP; out[n].uop = UOP_MODSUM; out[n].frac = 0; n++; }
    return n;
}

/* The NaN and infinity mode: every float dtype with every arithmetic op
   (the type sweeps add these to combos_for's). */
static int special_combos(coll_kind k, combo *out)
{
    int n = 0, t, op;
    if (!reduces(k)) return 0;
    for (t = 0; t < COLL_USER_TYPE; t++)
        for (op = 0; op <= COLL_AVG && t_is_float((coll_dtype)t); op++) {
            out[n].dtype = (signed char)t; out[n].op = (signed char)op; out[n].uop = -1; out[n].frac = 2; n++;
        }
    return n;
}

typedef struct caselist { tcase *v; size_t n, cap; } caselist;

static void add_case(caselist *L, int rowi, const combo *cb, size_t count, int inplace, int root)
{
    tcase tc;
    if (L->n == L->cap) {
        L->cap = L->cap ? 2 * L->cap : 256;
        L->v = (tcase *)realloc(L->v, L->cap * sizeof *L->v);
        if (!L->v) { fprintf(stderr, "out of memory\n"); exit(2); }
    }
    memset(&tc, 0, sizeof tc);
    tc.row = (unsigned char)rowi; tc.dtype = cb->dtype; tc.op = cb->op; tc.uop = cb->uop;
    tc.frac = (unsigned char)cb->frac; tc.count = count; tc.inplace = (unsigned char)inplace;
    tc.root = root;
    L->v[L->n++] = tc;
}

static const int ranks_list[] = { 1, 2, 3, 4, 5, 7, 8, 16 };
#define NRANKS ((int)(sizeof ranks_list / sizeof ranks_list[0]))

/* A type sweep: every row x every combo at p ranks, count elements, one
   configuration. */
typedef struct tsweep { int p; size_t count; int cfg; } tsweep;
static const tsweep tsweeps[] = {
    { 16, 61, 0 },        /* threads, 128-byte segments, 61 = 3*16 + 13 */
    { 5, 523, 2 },        /* rendezvous, 128-byte segments              */
    { 3, 1031, 4 },       /* duplex, one segment per block              */
    { 2, 67, 1 },         /* duplex, 128-byte segments                  */
};

static int level;
static const char *only, *skip;        /* COLL_TEST_ONLY / COLL_TEST_SKIP */

/* "kind/algo" of a row matches a comma-separated list of substrings */
static int row_matches(int rowi, const char *list)
{
    char name[64];
    const char *s = list;
    snprintf(name, sizeof name, "%s/%s", coll_kind_name(rows[rowi].kind), coll_algo_name(rows[rowi].algo));
    while (s && *s) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        char pat[64];
        if (len && len < sizeof pat) {
            memcpy(pat, s, len); pat[len] = 0;
            if (strstr(name, pat)) return 1;
        }
        s = e ? e + 1 : NULL;
    }
    return 0;
}

/* The cases world (cfg, p) runs at this level. */
static void build(caselist *L, int cfgi, int p)
{
    static combo cb[2 * COLL_DTYPE_COUNT * COLL_OP_COUNT];   /* every combo of every dtype */
    size_t counts[7], nc = 0, c0[7];
    int rowi, ci, ip, s, i, j;
    c0[0] = 0; c0[1] = 1; c0[2] = (size_t)p - 1; c0[3] = (size_t)p; c0[4] = (size_t)p + 1;
    c0[5] = 61; c0[6] = 10007;
    for (i = 0; i < 7; i++) {
        for (j = 0; j < (int)nc; j++) if (counts[j] == c0[i]) break;
        if (j == (int)nc) counts[nc++] = c0[i];
    }
    L->n = 0;
    for (rowi = 0; rowi < NROWS; rowi++) {
        coll_kind k = rows[rowi].kind;
        int ncb = combos_for(k, cb, 1);
        if ((only && !row_matches(rowi, only)) || (skip && row_matches(rowi, skip))) continue;
        /* shape sweep: the configuration rotates with the shape (level 2:
           every configuration runs every shape) */
        for (ci = 0; ci < (int)nc; ci++)
            for (ip = 0; ip <= has_inplace(k); ip++) {
                int shape = ci * 2 + ip, which = (shape + rowi + p) % NCFG, root;
                const combo *pick = &cb[(shape * 7 + p * 3 + rowi + cfgi) % ncb];
                if (level < 2 && which != cfgi) continue;
                if (level == 0 && counts[ci] > 1000 && cfgs[cfgi].scratch < 1024) continue;
                if (level == 0 && p == 16 && cfgi != 0 && cfgi != NCFG - 1) continue;
                root = rooted(k) ? (shape % 2 ? p - 1 : (shape * 5 + rowi) % p) : 0;
                add_case(L, rowi, pick, counts[ci], ip, root);
            }
        /* type sweeps */
        for (s = 0; s < (int)(sizeof tsweeps / sizeof tsweeps[0]); s++) {
            const tsweep *T = &tsweeps[s];
            int all = combos_for(k, cb, 0);
            all += special_combos(k, cb + all);
            if (level < 2 ? (T->p != p || T->cfg != cfgi) : (T->cfg != cfgi)) continue;
            if (level == 0 && s == 0) continue;
            for (i = 0; i < all; i++) {
                size_t cnt = level < 2 ? T->count : (size_t)p * 4 + 3;
                add_case(L, rowi, &cb[i], cnt, (i / 2) % 2 && has_inplace(k), rooted(k) ? i % p : 0);
            }
            ncb = combos_for(k, cb, 1);   /* cb was reused */
        }
    }
}

static world W;

#if defined(COLL_NO_CRC) || defined(COLL_NO_MEMOPS)
static int no_send(void *ctx, int peer, const void *buf, size_t n) { (void)ctx; (void)peer; (void)buf; (void)n; return COLL_ERR_IO; }
static int no_recv(void *ctx, int peer, void *buf, size_t n) { (void)ctx; (void)peer; (void)buf; (void)n; return COLL_ERR_IO; }
#ifdef COLL_NO_MEMOPS
static int host_copy(void *ctx, void *d, const void *s, size_t n) { (void)ctx; memcpy(d, s, n); return COLL_OK; }
static int host_reduce(void *ctx, void *o, const void *a, const void *b, size_t n, coll_dtype t, coll_op op)
{ (void)ctx; (void)o; (void)a; (void)b; (void)n; (void)t; (void)op; return COLL_ERR_IO; }
static int host_scale(void *ctx, void *buf, size_t n, coll_dtype t, size_t d)
{ (void)ctx; (void)buf; (void)n; (void)t; (void)d; return COLL_ERR_IO; }
#endif
#endif

int main(void)
{
    const char *lv = getenv("COLL_TEST_LEVEL");
    caselist L = { NULL, 0, 0 };
    double t0 = now_s();
    int cfgi, pi, i, na_rows = 0;
    unsigned long total = 0;

    level = lv ? atoi(lv) : 1;
    verbose = getenv("COLL_TEST_VERBOSE") != NULL;
    checks_off = getenv("COLL_TEST_CHECKS") && !strcmp(getenv("COLL_TEST_CHECKS"), "0");
    if (checks_off) printf("  the call checks off\n");
    persist = getenv("COLL_TEST_PERSIST") != NULL;
    if (persist) printf("  every call persistent: prepared once, run over junk, then over its inputs\n");
    only = getenv("COLL_TEST_ONLY");
    skip = getenv("COLL_TEST_SKIP");
    if (only || skip) printf("  rows: only \"%s\", skipping \"%s\" (a partial run)\n", only ? only : "*", skip ? skip : "");
    /* test_values.h's half encodings, against a few known ones */
    COLL_CHECK_EQ(tv_bits(COLL_FLOAT16, 1.0), 0x3c00);
    COLL_CHECK_EQ(tv_bits(COLL_FLOAT16, -2.5), 0xc100);
    COLL_CHECK_EQ(tv_bits(COLL_FLOAT16, 65504.0), 0x7bff);
    COLL_CHECK_EQ(tv_bits(COLL_FLOAT16, 65520.0), 0x7c00);
    COLL_CHECK_EQ(tv_bits(COLL_FLOAT16, tv_pow2(-24)), 0x0001);
    COLL_CHECK_EQ(tv_bits(COLL_FLOAT16, 1.0 + tv_pow2(-11)), 0x3c00);   /* tie to even */
    COLL_CHECK_EQ(tv_bits(COLL_FLOAT16, 1.0 + 3 * tv_pow2(-11)), 0x3c02);
    COLL_CHECK_EQ(tv_bits(COLL_BFLOAT16, 1.0), 0x3f80);
    COLL_CHECK_EQ(tv_bits(COLL_BFLOAT16, -3.0), 0xc040);
    COLL_CHECK_EQ(tv_bits(COLL_BFLOAT16, 1.0 + tv_pow2(-8)), 0x3f80);
    COLL_CHECK_EQ(tv_bits(COLL_BFLOAT16, 1.0 + 3 * tv_pow2(-8)), 0x3f82);
    COLL_CHECK(tv_value(COLL_FLOAT16, 0x3555) > 0.333 && tv_value(COLL_FLOAT16, 0x3555) < 0.334);
    /* and what it makes of every dtype of COLL_DTYPE_LIST */
    for (i = 0; i < (int)COLL_USER_TYPE; i++) {
        coll_dtype t = (coll_dtype)i;
        const tv_dtype *d = tv_info(t);
        char nm[24];
        tv_name(t, nm, sizeof nm);
        COLL_CHECK_MSG(d->size == coll_dtype_size(t), "%s: %u bytes, coll_dtype_size %zu",
                       nm, (unsigned)d->size, coll_dtype_size(t));
        COLL_CHECK_MSG(tv_layout_known(t), "%s: no bit layout in test_values.h (TV__NARROW_*)", nm);
        if (d->is_float) {   /* 1.0 is the bias, and 2^-mant the last bit */
            uint64_t one = (((uint64_t)1 << (d->ebits - 1)) - 1) << d->mant;
            COLL_CHECK_MSG(tv_bits(t, 1.0) == one && tv_bits(t, 1.0 + tv_pow2(-(int)d->mant)) == one + 1 &&
                           tv_bits(t, -2.0) == (((uint64_t)1 << (8 * d->size - 1)) | (one + ((uint64_t)1 << d->mant))),
                           "%s: 1.0 is 0x%llx, not 0x%llx", nm, (unsigned long long)tv_bits(t, 1.0),
                           (unsigned long long)one);
        } else {             /* the top bit's weight, and -1 everywhere */
            int top = 8 * (int)d->size - 1;
            COLL_CHECK_MSG(tv_value(t, (uint64_t)1 << top) == (d->is_signed ? -tv_pow2(top) : tv_pow2(top)) &&
                           tv_bits(t, -1.0) == (top == 63 ? ~(uint64_t)0 : ((uint64_t)1 << (top + 1)) - 1),
                           "%s: sign or width wrong", nm);
        }
    }

    /* every row of the library's registry is forced somewhere in `rows` */
    {
        size_t e;
        for (e = 0; coll__row_at(e); e++) {
            const coll__entry *en = coll__row_at(e);
            int j, found = 0;
            for (j = 0; j < NROWS && !found; j++)
                found = rows[j].kind == (coll_kind)en->kind && rows[j].algo == (coll_algo)en->algo;
            COLL_CHECK_MSG(found, "registry row %s/%s is not in the test's rows",
                           coll_kind_name((coll_kind)en->kind), coll_algo_name((coll_algo)en->algo));
        }
    }

#ifdef COLL_NO_CRC
    /* the payload CRC left out: asked for, it is refused, and the call
       checks alone are still taken */
    {
        coll_comm c;
        coll_port pt;
        memset(&pt, 0, sizeof pt);
        pt.send = no_send; pt.recv = no_recv;
        COLL_CHECK_EQ(coll_init(&c, 0, 2, &pt, NULL, 0), COLL_OK);
        COLL_CHECK_EQ(coll_set_checks(&c, COLL_CHECK_CALLS | COLL_CHECK_CRC), COLL_ERR_NOSYS);
        COLL_CHECK_EQ(coll_set_checks(&c, COLL_CHECK_CALLS), COLL_OK);
    }
#endif
#ifdef COLL_NO_MEMOPS
    /* caller-supplied memory operations left out: refused, none is kept */
    {
        coll_comm c;
        coll_port pt;
        coll_memops m;
        memset(&pt, 0, sizeof pt);
        memset(&m, 0, sizeof m);
        pt.send = no_send; pt.recv = no_recv;
        m.copy = host_copy; m.reduce = host_reduce; m.scale = host_scale;
        COLL_CHECK_EQ(coll_init(&c, 0, 1, &pt, NULL, 0), COLL_OK);
        COLL_CHECK_EQ(coll_set_memops(&c, &m), COLL_ERR_NOSYS);
        COLL_CHECK_EQ(coll_set_memops(&c, NULL), COLL_OK);
    }
#endif

    for (cfgi = 0; cfgi < NCFG; cfgi++)
        for (pi = 0; pi < NRANKS; pi++) {
            int p = ranks_list[pi];
            double t = now_s();
            build(&L, cfgi, p);
            if (L.n == 0) continue;
            memset(&W.rc, 0, sizeof W.rc); memset(&W.stop, 0, sizeof W.stop);
            W.cfg = cfgi; W.cases = L.v; W.ncases = L.n; W.arrived = 0;
            if (coll_threads_init(&W.w, p, 8000) != COLL_OK) { COLL_CHECK(0); continue; }
            pthread_barrier_init(&W.bar, NULL, (unsigned)p);
            COLL_CHECK_EQ(coll_threads_run(&W.w, rank_main, &W), 0);
            pthread_barrier_destroy(&W.bar);
            coll_threads_destroy(&W.w);
            COLL_CHECK_MSG(!W.stop[0] && !W.stop[1], "%s port, scratch %zu, p=%d: stopped early (transport error)",
                           port_name[cfgs[cfgi].port], cfgs[cfgi].scratch, p);
            total += (unsigned long)L.n;
            printf("  %-10s scratch %7zu  p=%2d  %5zu cases  %6.2f s\n", port_name[cfgs[cfgi].port],
                   cfgs[cfgi].scratch, p, L.n, now_s() - t);
            fflush(stdout);
        }
    for (i = 0; i < MAXP; i++) {
        free(W.mem[i].a); free(W.mem[i].b);
        W.mem[i].a = W.mem[i].b = NULL; W.mem[i].acap = W.mem[i].bcap = 0;
    }
    free(L.v);
    COLL_CHECK_MSG(bad_user_ptr == 0, "user op called with the wrong user pointer %lu times", bad_user_ptr);

    for (i = 0; i < NROWS; i++) {
        if (!row_na[i]) continue;
        if (!row_ran[i]) na_rows++;
        printf("  not available: %s/%s%s: %lu of %lu cases%s\n", coll_kind_name(rows[i].kind),
               coll_algo_name(rows[i].algo), rows[i].group ? " (grouped)" : "", row_na[i],
               row_na[i] + row_ran[i], row_ran[i] ? "" : " (all)");
    }
    printf("  %lu cases, %d rows never available, level %d, %.1f s\n", total, na_rows, level, now_s() - t0);
    check_profile();
    return coll_test_summary("core");
}
