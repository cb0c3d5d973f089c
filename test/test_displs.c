/* test_displs.c - what an MPI program passes per call: the v forms with
   displacements (coll_args.displs), blocks in reversed order with gaps
   between them, and a user operator per call (coll_args.user_op).

   For allgatherv, gatherv, scatterv and alltoallv, at 1, 2, 3, 4 and 7
   ranks, in and out of place where the collective allows it, AUTO and
   the block-wise algorithm forced: every rank's buffer is compared with a
   plain loop, element by element, and every gap element must keep its
   fill value. An algorithm that moves several blocks in one message must
   be refused with COLL_ERR_NOSYS on every rank; reduce_scatterv takes no
   displs (COLL_ERR_INVAL), nor alltoallv in place (COLL_ERR_NOSYS).
   User operators per call: a non-commutative one (x -> 3x + y, folded in
   rank order) and a commutative one alternating on one communicator, the
   communicator's own when args.user_op is NULL, each against a plain
   left fold over the ranks; a ring (not rank-ordered) with the
   non-commutative one is refused on every rank.
   RUN  make test-displs */
#define COLL_IMPLEMENTATION
#include "../coll.h"
#define COLL_THREADS_IMPLEMENTATION
#include "../ports/coll_threads.h"
#include "coll_test.h"

#include <stdint.h>
#include <string.h>

enum { MAXP = 7, GAP = 3, BIG = 4096 };
static const int32_t FILL = -777;

typedef struct world {
    coll_threads w;
    int p;
} world;

static double scratch[MAXP][64];
static int32_t src[MAXP][BIG], dst[MAXP][BIG];
static size_t counts_of[MAXP][MAXP * MAXP];  /* each rank its own copy */
static size_t displs[MAXP][2 * MAXP];      /* each rank its own copy */

/* Rank i's block holds i + 1 elements (alltoallv: (i + j) % 3 + 1 from i to
   j); blocks lie in reversed rank order, GAP elements apart. */
static size_t count_of(int i, int j) { return (size_t)((i + j) % 3 + 1); }
static void layout(int p, const size_t *cnt, size_t *d)
{
    size_t at = GAP;
    int i;
    for (i = p - 1; i >= 0; i--) { d[i] = at; at += cnt[i] + GAP; }
}
static int32_t value(int from, int to, size_t k) { return (int32_t)(1000 * from + 10 * to + (int32_t)k); }

static void fill(int32_t *b) { int i; for (i = 0; i < BIG; i++) b[i] = FILL; }

/* Every element of b: the expected value where a block lies, FILL elsewhere. */
static int agrees(const int32_t *b, const int32_t *want)
{
    int i;
    for (i = 0; i < BIG; i++) if (b[i] != want[i]) return 0;
    return 1;
}

static int body(int r, void *arg)
{
    world *W = (world *)arg;
    int p = W->p, i, j, k, al, inplace;
    coll_port port = coll_threads_port(&W->w, r);
    coll_comm c;
    coll_args a;
    static int32_t want[MAXP][BIG];
    size_t vc[MAXP], rd[MAXP], sc[MAXP], *counts = counts_of[r];
    if (coll_init(&c, r, p, &port, scratch[r], sizeof scratch[r]) != COLL_OK) return -1;
    for (i = 0; i < p; i++) vc[i] = (size_t)i + 1;
    /* ---- allgatherv: ring or AUTO; out of place and in place */
    for (al = 0; al < 2; al++)
        for (inplace = 0; inplace < 2; inplace++) {
            layout(p, vc, displs[r]);
            fill(src[r]); fill(dst[r]); fill(want[r]);
            for (i = 0; i < p; i++)
                for (k = 0; k < (int)vc[i]; k++) want[r][displs[r][i] + (size_t)k] = value(i, 0, (size_t)k);
            for (k = 0; k < (int)vc[r]; k++) {
                src[r][k] = value(r, 0, (size_t)k);
                if (inplace) dst[r][displs[r][r] + (size_t)k] = value(r, 0, (size_t)k);
            }
            memset(&a, 0, sizeof a);
            a.kind = COLL_ALLGATHERV; a.algo = al ? COLL_ALGO_RING : COLL_ALGO_AUTO;
            a.src = inplace ? (void *)(dst[r] + displs[r][r]) : (void *)src[r]; a.dst = dst[r];
            a.counts = vc; a.displs = displs[r]; a.dtype = COLL_INT32;
            COLL_CHECK_EQ(coll_run(&c, &a), COLL_OK);
            COLL_CHECK_MSG(agrees(dst[r], want[r]), "allgatherv %d ranks, rank %d, algo %d, in place %d", p, r, al, inplace);
        }
    /* ---- gatherv and scatterv: linear or AUTO, every root */
    for (j = 0; j < p; j++)
        for (al = 0; al < 2; al++) {
            layout(p, vc, displs[r]);
            fill(src[r]); fill(dst[r]); fill(want[r]);
            for (k = 0; k < (int)vc[r]; k++) src[r][k] = value(r, j, (size_t)k);
            if (r == j)
                for (i = 0; i < p; i++)
                    for (k = 0; k < (int)vc[i]; k++) want[r][displs[r][i] + (size_t)k] = value(i, j, (size_t)k);
            memset(&a, 0, sizeof a);
            a.kind = COLL_GATHERV; a.algo = al ? COLL_ALGO_LINEAR : COLL_ALGO_AUTO; a.root = j;
            a.src = src[r]; a.dst = r == j ? dst[r] : NULL; a.counts = vc; a.displs = displs[r]; a.dtype = COLL_INT32;
            COLL_CHECK_EQ(coll_run(&c, &a), COLL_OK);
            if (r == j) COLL_CHECK_MSG(agrees(dst[r], want[r]), "gatherv %d ranks, root %d, algo %d", p, j, al);
            /* scatterv: the root's src laid out by displs, each rank's block lands at dst[0..] */
            fill(src[r]); fill(dst[r]); fill(want[r]);
            if (r == j)
                for (i = 0; i < p; i++)
                    for (k = 0; k < (int)vc[i]; k++) src[r][displs[r][i] + (size_t)k] = value(j, i, (size_t)k);
            for (k = 0; k < (int)vc[r]; k++) want[r][k] = value(j, r, (size_t)k);
            a.kind = COLL_SCATTERV; a.src = r == j ? src[r] : NULL; a.dst = dst[r];
            COLL_CHECK_EQ(coll_run(&c, &a), COLL_OK);
            COLL_CHECK_MSG(agrees(dst[r], want[r]), "scatterv %d ranks, root %d, algo %d, rank %d", p, j, al, r);
        }
    /* ---- alltoallv: pairwise or AUTO, out of place */
    for (i = 0; i < p; i++)
        for (j = 0; j < p; j++) counts[(size_t)i * (size_t)p + (size_t)j] = count_of(i, j);
    for (al = 0; al < 2; al++) {
        for (j = 0; j < p; j++) { sc[j] = counts[(size_t)r * (size_t)p + (size_t)j]; rd[j] = counts[(size_t)j * (size_t)p + (size_t)r]; }
        layout(p, sc, displs[r]);
        layout(p, rd, displs[r] + p);
        fill(src[r]); fill(dst[r]); fill(want[r]);
        for (j = 0; j < p; j++) {
            for (k = 0; k < (int)sc[j]; k++) src[r][displs[r][j] + (size_t)k] = value(r, j, (size_t)k);
            for (k = 0; k < (int)rd[j]; k++) want[r][displs[r][p + j] + (size_t)k] = value(j, r, (size_t)k);
        }
        memset(&a, 0, sizeof a);
        a.kind = COLL_ALLTOALLV; a.algo = al ? COLL_ALGO_PAIRWISE : COLL_ALGO_AUTO;
        a.src = src[r]; a.dst = dst[r]; a.counts = counts; a.displs = displs[r]; a.dtype = COLL_INT32;
        COLL_CHECK_EQ(coll_run(&c, &a), COLL_OK);
        COLL_CHECK_MSG(agrees(dst[r], want[r]), "alltoallv %d ranks, rank %d, algo %d", p, r, al);
    }
    /* ---- refused alike on every rank (p > 1: one rank has no other algorithm to refuse) */
    if (p > 1) {
        layout(p, vc, displs[r]);
        memset(&a, 0, sizeof a);
        a.kind = COLL_ALLGATHERV; a.algo = COLL_ALGO_RECURSIVE_DOUBLING;
        a.src = src[r]; a.dst = dst[r]; a.counts = vc; a.displs = displs[r]; a.dtype = COLL_INT32;
        COLL_CHECK_EQ(coll_run(&c, &a), COLL_ERR_NOSYS);
        a.kind = COLL_GATHERV; a.algo = COLL_ALGO_BINOMIAL;
        COLL_CHECK_EQ(coll_run(&c, &a), COLL_ERR_NOSYS);
        a.kind = COLL_REDUCE_SCATTERV; a.algo = COLL_ALGO_AUTO; a.op = COLL_SUM;
        COLL_CHECK_EQ(coll_run(&c, &a), COLL_ERR_INVAL);
        layout(p, sc, displs[r]); layout(p, rd, displs[r] + p);
        a.kind = COLL_ALLTOALLV; a.src = dst[r]; a.counts = counts;
        for (i = 0; i < p; i++)                  /* symmetric, as in place asks */
            for (j = 0; j < p; j++) counts[(size_t)i * (size_t)p + (size_t)j] = 1;
        COLL_CHECK_EQ(coll_run(&c, &a), COLL_ERR_NOSYS);
    }
    return 0;
}

/* ---- a user operator per call ---------------------------------------------- */
static void lin_fn(void *out, const void *a, const void *b, size_t n, void *u)   /* a = lower ranks */
{
    uint32_t *o = (uint32_t *)out;
    const uint32_t *x = (const uint32_t *)a, *y = (const uint32_t *)b;
    size_t i;
    (void)u;
    for (i = 0; i < n; i++) o[i] = 3u * x[i] + y[i];
}
static uint32_t absv(uint32_t v) { int32_t s = (int32_t)v; return (uint32_t)(s < 0 ? -s : s); }
static void absmax_fn(void *out, const void *a, const void *b, size_t n, void *u)
{
    uint32_t *o = (uint32_t *)out;
    const uint32_t *x = (const uint32_t *)a, *y = (const uint32_t *)b;
    size_t i;
    (void)u;
    for (i = 0; i < n; i++) o[i] = absv(x[i]) >= absv(y[i]) ? x[i] : y[i];
}
static uint32_t uin(int r, int i) { return (uint32_t)((r % 2 ? -1 : 1) * (7 * (r + 1) + i)); }

static int op_body(int r, void *arg)
{
    world *W = (world *)arg;
    int p = W->p, i, s, round;
    coll_port port = coll_threads_port(&W->w, r);
    coll_comm c;
    coll_args a;
    coll_user_op lin, absmax;
    uint32_t in[17], out[17];
    memset(&lin, 0, sizeof lin); lin.fn = lin_fn; lin.commutative = 0;
    memset(&absmax, 0, sizeof absmax); absmax.fn = absmax_fn; absmax.commutative = 1;
    if (coll_init(&c, r, p, &port, scratch[r], sizeof scratch[r]) != COLL_OK) return -1;
    coll_set_user_op(&c, &absmax);                 /* the communicator's: absmax */
    for (round = 0; round < 3; round++) {          /* lin (per call), absmax (per call), the comm's */
        const coll_user_op *u = round == 0 ? &lin : round == 1 ? &absmax : NULL;
        for (i = 0; i < 17; i++) { in[i] = uin(r, i); out[i] = 0; }
        memset(&a, 0, sizeof a);
        a.kind = COLL_ALLREDUCE; a.algo = round == 0 ? COLL_ALGO_NAIVE : COLL_ALGO_AUTO;
        a.src = in; a.dst = out; a.count = 17; a.dtype = COLL_UINT32; a.op = COLL_USER_OP; a.user_op = u;
        COLL_CHECK_EQ(coll_run(&c, &a), COLL_OK);
        for (i = 0; i < 17; i++) {
            uint32_t want = uin(0, i);
            for (s = 1; s < p; s++) {
                uint32_t x = uin(s, i);
                want = round == 0 ? 3u * want + x : (absv(want) >= absv(x) ? want : x);
            }
            COLL_CHECK_MSG(out[i] == want, "user op per call, round %d, %d ranks, rank %d, [%d]: %u, want %u",
                           round, p, r, i, out[i], want);
        }
    }
    if (p > 2) {                                   /* a ring reorders operands: refused alike */
        memset(&a, 0, sizeof a);
        a.kind = COLL_ALLREDUCE; a.algo = COLL_ALGO_RING; a.src = in; a.dst = out; a.count = 17;
        a.dtype = COLL_UINT32; a.op = COLL_USER_OP; a.user_op = &lin;
        COLL_CHECK_EQ(coll_run(&c, &a), COLL_ERR_NOSYS);
    }
    return 0;
}

int main(void)
{
    static world W;
    static const int ps[] = {1, 2, 3, 4, 7};
    size_t t;
    for (t = 0; t < sizeof ps / sizeof ps[0]; t++) {
        memset(&W, 0, sizeof W);
        W.p = ps[t];
        coll_threads_init(&W.w, W.p, 5000);
        COLL_CHECK_EQ(coll_threads_run(&W.w, body, &W), 0);
        coll_threads_destroy(&W.w);
        coll_threads_init(&W.w, W.p, 5000);
        COLL_CHECK_EQ(coll_threads_run(&W.w, op_body, &W), 0);
        coll_threads_destroy(&W.w);
    }
    return coll_test_summary("displs");
}
