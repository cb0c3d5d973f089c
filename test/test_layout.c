/* test_layout.c - coll_layout_convert: every pair of layouts (broadcast,
   partial sum, split on each dimension) of 1- to 3-dimensional tensors with
   even and uneven sizes, on 1 to 4 ranks of the threads port, in three
   element types.

   The reference is built without the code under test: the global tensor G
   is a formula of the element's index; a rank's split slab is found by
   walking every global index and keeping those whose coordinate along the
   split dimension falls in the rank's rows (numpy.array_split: sizes n/p+1
   for the first n%p ranks, n/p after, counted by summing the sizes before
   it). Partial-sum inputs are p tensors that add up to G. After each
   conversion rank 0 checks every rank's output: a broadcast or split output
   against its slab of G, a partial-sum output by adding the ranks' outputs
   up to G (and, for broadcast -> partial, the documented choice: rank 0
   holds G, the others zeros). Every rank must return the same code.
   A conversion answered COLL_ERR_NOSYS (a collective the library does not
   offer yet) is counted apart and never as a pass. */
#define _POSIX_C_SOURCE 200809L
#define COLL_IMPLEMENTATION
#include "coll_layout.h"
#define COLL_THREADS_IMPLEMENTATION
#include "ports/coll_threads.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAXP = 4, MAXD = 3 };

static long pass_n, fail_n, nosys_n;
static char nosys_seen[3][3];

#define CHECK(cond, ...) do {                                                \
        if (cond) pass_n++;                                                   \
        else { fail_n++; printf("FAIL %s:%d: ", __FILE__, __LINE__);          \
               printf(__VA_ARGS__); printf("\n"); }                           \
    } while (0)

/* ---- values ----------------------------------------------------------------- */

static void put(unsigned char *b, size_t i, coll_dtype d, long long v)
{
    if (d == COLL_INT32) { int32_t x = (int32_t)v; memcpy(b + i * 4, &x, 4); }
    else if (d == COLL_FLOAT64) { double x = (double)v; memcpy(b + i * 8, &x, 8); }
    else { uint8_t x = (uint8_t)v; b[i] = x; }
}

static long long get(const unsigned char *b, size_t i, coll_dtype d)
{
    if (d == COLL_INT32) { int32_t x; memcpy(&x, b + i * 4, 4); return x; }
    if (d == COLL_FLOAT64) { double x; memcpy(&x, b + i * 8, 8); return (long long)x; }
    return b[i];
}

static long long G(size_t g) { return (long long)((g * 7 + 3) % 23) - 11; }
/* rank r's share of element g under partial sum; rank 0 takes the rest */
static long long share(int r, int p, size_t g)
{
    long long s = 0;
    int k;
    if (r > 0) return (long long)((g + (size_t)r * 5) % 9) - 4;
    for (k = 1; k < p; k++) s += share(k, p, g);
    return G(g) - s;
}

/* ---- the reference ------------------------------------------------------------ */

typedef struct lay { int kind, dim; } lay;      /* 0 broadcast, 1 partial, 2 split */

static size_t rows_of(size_t n, int p, int r, size_t *start)
{
    size_t s = 0;
    int k;
    for (k = 0; k < r; k++) s += n / (size_t)p + ((size_t)k < n % (size_t)p);
    *start = s;
    return n / (size_t)p + ((size_t)r < n % (size_t)p);
}

static size_t total_of(int nd, const size_t *shape)
{
    size_t t = 1;
    int d;
    for (d = 0; d < nd; d++) t *= shape[d];
    return t;
}

/* What rank r holds in layout l: into out (element values), count back. */
static size_t reference(int nd, const size_t *shape, int p, int r, lay l, long long *out)
{
    size_t total = total_of(nd, shape), g, n = 0, start = 0, rows = 0;
    if (l.kind == 2) rows = rows_of(shape[l.dim], p, r, &start);
    for (g = 0; g < total; g++) {
        if (l.kind == 2) {           /* coordinate of g along the split dimension */
            size_t inner = 1, c;
            int d;
            for (d = nd - 1; d > l.dim; d--) inner *= shape[d];
            c = (g / inner) % shape[l.dim];
            if (c < start || c >= start + rows) continue;
        }
        out[n++] = l.kind == 1 ? share(r, p, g) : G(g);
    }
    return n;
}

/* ---- one world: all cases in lockstep ---------------------------------------- */

typedef struct shape_case { int nd; size_t shape[MAXD]; } shape_case;
static const shape_case SHAPES[] = {
    { 1, { 1 } }, { 1, { 5 } }, { 1, { 8 } }, { 1, { 3 } },
    { 2, { 4, 5 } }, { 2, { 3, 7 } }, { 2, { 1, 6 } }, { 2, { 2, 1 } }, { 2, { 6, 8 } },
    { 3, { 3, 4, 5 } }, { 3, { 2, 3, 7 } }, { 3, { 5, 1, 3 } }, { 3, { 1, 2, 9 } }, { 3, { 4, 4, 4 } },
};
static const coll_dtype DTYPES[] = { COLL_INT32, COLL_FLOAT64, COLL_UINT8 };

static coll_threads world;
static pthread_barrier_t bar;
static int g_p;
/* what each rank produced for the current case */
static unsigned char *outs[MAXP];
static size_t out_n[MAXP];
static int rcs[MAXP];

static coll_sbp to_sbp(lay l)
{
    return l.kind == 0 ? coll_sbp_broadcast() : l.kind == 1 ? coll_sbp_partial_sum()
                       : coll_sbp_split(l.dim);
}

static const char *lay_name(lay l, char *buf)
{
    if (l.kind == 2) sprintf(buf, "S(%d)", l.dim);
    else strcpy(buf, l.kind ? "P" : "B");
    return buf;
}

/* Rank 0, after every rank has converted: judge the case. */
static void judge(const shape_case *sc, coll_dtype dt, lay from, lay to)
{
    int p = g_p, r, all_same = 1, ok = 1;
    size_t total = total_of(sc->nd, sc->shape), i;
    char a[16], b[16], where[160];
    long long *want = (long long *)malloc((total + 1) * sizeof *want);
    sprintf(where, "p=%d shape=%zu", p, sc->shape[0]);
    for (r = 1; r < sc->nd; r++) sprintf(where + strlen(where), "x%zu", sc->shape[r]);
    sprintf(where + strlen(where), " dtype=%d %s->%s", (int)dt, lay_name(from, a), lay_name(to, b));
    for (r = 1; r < p; r++) all_same &= rcs[r] == rcs[0];
    CHECK(all_same, "%s: ranks returned different codes", where);
    if (rcs[0] == COLL_ERR_NOSYS) {
        nosys_n++;
        if (!nosys_seen[from.kind][to.kind]) {
            nosys_seen[from.kind][to.kind] = 1;
            printf("NOT OFFERED (COLL_ERR_NOSYS): %s - a collective it needs is missing\n", where);
        }
        free(want);
        return;
    }
    CHECK(rcs[0] == COLL_OK, "%s: %s (%d)", where, coll_result_str(rcs[0]), rcs[0]);
    if (rcs[0] != COLL_OK) { free(want); return; }
    if (to.kind != 1) {
        for (r = 0; r < p; r++) {
            size_t n = reference(sc->nd, sc->shape, p, r, to, want);
            int same = n == out_n[r];
            for (i = 0; same && i < n; i++) {
                unsigned char e[8];
                put(e, 0, dt, want[i]);
                same = memcmp(e, outs[r] + i * coll_dtype_size(dt), coll_dtype_size(dt)) == 0;
            }
            CHECK(same, "%s: rank %d holds the wrong %s", where, r, to.kind ? "slab" : "tensor");
        }
    } else {
        for (r = 0; r < p; r++) ok &= out_n[r] == total;
        for (i = 0; ok && i < total; i++) {
            long long s = 0;
            unsigned char e[8], got[8];
            for (r = 0; r < p; r++) s += get(outs[r], i, dt);
            put(e, 0, dt, G(i));
            put(got, 0, dt, s);
            ok = memcmp(e, got, coll_dtype_size(dt)) == 0;
        }
        CHECK(ok, "%s: the partial sums do not add up to the tensor", where);
        if (from.kind == 0) {              /* the documented B -> P choice */
            for (r = 0, ok = 1; r < p; r++)
                for (i = 0; i < total; i++) {
                    unsigned char e[8];
                    put(e, 0, dt, r == 0 ? G(i) : 0);
                    ok &= memcmp(e, outs[r] + i * coll_dtype_size(dt), coll_dtype_size(dt)) == 0;
                }
            CHECK(ok, "%s: not rank 0 = tensor, others = 0", where);
        }
    }
    free(want);
}

static int body(int rank, void *arg)
{
    static unsigned char scratch[MAXP][1 << 12];
    coll_port port = coll_threads_port(&world, rank);
    coll_comm c;
    size_t si, di;
    int fi, ti, p = g_p;
    (void)arg;
    coll_init(&c, rank, p, &port, scratch[rank], sizeof scratch[rank]);
    for (si = 0; si < sizeof SHAPES / sizeof *SHAPES; si++)
        for (di = 0; di < sizeof DTYPES / sizeof *DTYPES; di++)
            for (fi = 0; fi < 2 + SHAPES[si].nd; fi++)
                for (ti = 0; ti < 2 + SHAPES[si].nd; ti++) {
                    const shape_case *sc = &SHAPES[si];
                    coll_dtype dt = DTYPES[di];
                    lay from, to;
                    size_t es = coll_dtype_size(dt), total = total_of(sc->nd, sc->shape), i, nin, wb;
                    long long *vals = (long long *)malloc((total + 1) * sizeof *vals);
                    unsigned char *in, *work;
                    from.kind = fi < 2 ? fi : 2; from.dim = fi < 2 ? 0 : fi - 2;
                    to.kind = ti < 2 ? ti : 2; to.dim = ti < 2 ? 0 : ti - 2;
                    nin = reference(sc->nd, sc->shape, p, rank, from, vals);
                    in = (unsigned char *)malloc(nin * es + 1);
                    for (i = 0; i < nin; i++) put(in, i, dt, vals[i]);
                    out_n[rank] = coll_layout_local_shape(rank, p, sc->nd, sc->shape, to_sbp(to), NULL);
                    outs[rank] = (unsigned char *)malloc(out_n[rank] * es + 1);
                    memset(outs[rank], 0x5A, out_n[rank] * es);
                    wb = coll_layout_work_bytes(p, sc->nd, sc->shape, dt, to_sbp(from), to_sbp(to));
                    /* an odd offset: the function must align the workspace itself */
                    work = (unsigned char *)malloc(wb + 1);
                    rcs[rank] = coll_layout_convert(&c, sc->nd, sc->shape, dt, in, to_sbp(from),
                                                    outs[rank], to_sbp(to), wb ? work + 1 : NULL, wb);
                    pthread_barrier_wait(&bar);
                    if (rank == 0) judge(sc, dt, from, to);
                    pthread_barrier_wait(&bar);
                    free(vals); free(in); free(work); free(outs[rank]);
                }
    return 0;
}

/* Refusals that happen before any byte moves, so any one rank can try. */
static void refusals(void)
{
    static coll_threads one;
    static unsigned char scratch[256], work[4096];
    size_t shape[2] = { 6, 5 };
    int32_t a[30], b[30];
    coll_port port;
    coll_comm c;
    size_t wb;
    coll_threads_init(&one, 1, 1000);
    port = coll_threads_port(&one, 0);
    coll_init(&c, 0, 1, &port, scratch, sizeof scratch);
    CHECK(coll_layout_convert(&c, 2, shape, COLL_INT32, a, coll_sbp_split(2), b,
                              coll_sbp_broadcast(), work, sizeof work) == COLL_ERR_INVAL,
          "split on dimension 2 of a 2-d tensor accepted");
    CHECK(coll_layout_convert(&c, 9, shape, COLL_INT32, a, coll_sbp_broadcast(), b,
                              coll_sbp_broadcast(), work, sizeof work) == COLL_ERR_INVAL,
          "9 dimensions accepted");
    CHECK(coll_layout_convert(&c, 2, shape, COLL_INT32, a, coll_sbp_broadcast(), a + 3,
                              coll_sbp_partial_sum(), work, sizeof work) == COLL_ERR_INVAL,
          "overlapping src and dst accepted");
    wb = coll_layout_work_bytes(1, 2, shape, COLL_INT32, coll_sbp_split(1), coll_sbp_broadcast());
    CHECK(wb >= 30 * 4, "S(1)->B of a 6x5 tensor needs staging, work_bytes says %zu", wb);
    CHECK(coll_layout_convert(&c, 2, shape, COLL_INT32, a, coll_sbp_split(1), b,
                              coll_sbp_broadcast(), work, wb - 1) == COLL_ERR_NOSPC,
          "a workspace one byte short accepted");
    CHECK(coll_layout_work_bytes(4, 2, shape, COLL_INT32, coll_sbp_partial_sum(),
                                 coll_sbp_broadcast()) == 0, "P->B should need no workspace");
    {   /* numpy.array_split(range(10), 4) -> sizes 3 3 2 2, starts 0 3 6 8 */
        size_t st[4], n[4];
        int r;
        for (r = 0; r < 4; r++) n[r] = coll_layout_rows(10, 4, r, &st[r]);
        CHECK(n[0] == 3 && n[1] == 3 && n[2] == 2 && n[3] == 2 &&
              st[0] == 0 && st[1] == 3 && st[2] == 6 && st[3] == 8, "array_split(10, 4) rows");
    }
    coll_threads_destroy(&one);
}

int main(void)
{
    int p;
    refusals();
    for (p = 1; p <= MAXP; p++) {
        long before = pass_n, fbefore = fail_n, nbefore = nosys_n;
        g_p = p;
        pthread_barrier_init(&bar, NULL, (unsigned)p);
        coll_threads_init(&world, p, 10000);
        coll_threads_run(&world, body, NULL);
        coll_threads_destroy(&world);
        pthread_barrier_destroy(&bar);
        printf("  %d rank%s: %ld checks ok, %ld wrong, %ld conversions not offered\n", p,
               p > 1 ? "s" : " ", pass_n - before, fail_n - fbefore, nosys_n - nbefore);
    }
    if (nosys_n)
        printf("NOTE: %ld conversions answered COLL_ERR_NOSYS; not counted as passes\n", nosys_n);
    printf("layout: %ld passed, %ld failed\n", pass_n, fail_n);
    return fail_n != 0;
}
