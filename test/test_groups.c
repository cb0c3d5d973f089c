/* test_groups.c - alltoallv, sub-communicators and several requests in
   flight, over the threads port and the strictly rendezvous port.

   1. alltoallv: p = 1..16, ragged count matrices with zero blocks (and
      all-zero rows), 1-, 2-, 4- and 8-byte elements, AUTO and pairwise, out
      of place and in place (symmetric rows), small and large scratch, call
      checks on and off; every rank's dst against a plain loop, and the
      bytes past the result untouched. Refusals reach every rank: in place
      with row r != column r, a matrix that differs on one rank, Bruck.
   2. Sub-communicators: rows and columns of a grid by coll_comm_split (the
      columns ordered by a reversed key), pairs split from the rows
      (nested), an explicit member list, a rank with color < 0; collectives
      on all of them and on the parent interleaved, each checked against a
      plain loop; a sub's call never passes for the parent's; a rank that
      cannot take part in a split makes every rank refuse it; bad member
      lists are refused.
   3. Requests in flight: several started on one communicator (and on a
      sub) and progressed in a different order on every rank, or driven by
      coll_waitall; every result checked. A blocking call while a request is
      unfinished is refused, and the request still completes.
   4. Two splits over the same members used in crossed orders on different
      ranks: COLL_ERR_MISMATCH on every rank, never the other's data. */
#define COLL_IMPLEMENTATION
#define COLL_THREADS_IMPLEMENTATION
#include "../ports/coll_threads.h"
#include "test_ports.h"
#include "coll_test.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#define MAXP 16
#define MAXE 4096                 /* bytes of src or dst per rank */

static coll_threads W;
static int rendezvous;            /* 1: send/recv only, synchronous */
static unsigned long long scratch_of[MAXP][8192];   /* 64 KiB per rank, 8-aligned */

static coll_port port_of(int r)
{
    return rendezvous ? coll_rendezvous_port(&W, r) : coll_threads_port(&W, r);
}

typedef struct job {
    int p;
    int (*body)(struct job *j, int r, coll_comm *c);
    size_t scratch;
    unsigned checks;
    /* alltoallv */
    size_t m[MAXP * MAXP];
    coll_dtype t;
    coll_algo algo;
    int inplace, variant;
    int rc[MAXP];
} job;

static int run_rank(int r, void *arg)
{
    job *j = (job *)arg;
    coll_comm c;
    coll_port pt = port_of(r);
    int rc = coll_init(&c, r, j->p, &pt, scratch_of[r], j->scratch);
    COLL_CHECK_EQ(rc, COLL_OK);
    if (rc != COLL_OK) return 0;
    coll_set_checks(&c, j->checks);
    j->rc[r] = j->body(j, r, &c);
    return 0;
}

static void run(job *j)
{
    int rc = coll_threads_init(&W, j->p, 20000);
    COLL_CHECK_EQ(rc, COLL_OK);
    if (rc != COLL_OK) return;
    coll_threads_run(&W, run_rank, j);
    coll_threads_destroy(&W);
}

/* ---- 1. alltoallv --------------------------------------------------------- */

/* Byte b of element i of the block rank `from` sends rank `to`. */
static unsigned char a2av_byte(int from, int to, size_t i, size_t b)
{
    return (unsigned char)(from * 31 + to * 7 + (int)i * 3 + (int)b * 101 + 1);
}

static size_t row_sum(const job *j, int r)
{
    size_t s = 0;
    int k;
    for (k = 0; k < j->p; k++) s += j->m[(size_t)r * (size_t)j->p + (size_t)k];
    return s;
}
static size_t col_sum(const job *j, int r)
{
    size_t s = 0;
    int k;
    for (k = 0; k < j->p; k++) s += j->m[(size_t)k * (size_t)j->p + (size_t)r];
    return s;
}

static int a2av_body(job *j, int r, coll_comm *c)
{
    static unsigned char src[MAXP][MAXE], dst[MAXP][MAXE + 64];
    size_t es = coll_dtype_size(j->t), o = 0, i, b, in_n = row_sum(j, r), out_n = col_sum(j, r);
    int k, p = j->p, rc, bad = 0;
    const size_t *m = j->m;
    static size_t other[MAXP * MAXP];
    if (j->variant == 1 && r == p - 1) {        /* this rank's matrix differs in one entry */
        memcpy(other, j->m, sizeof other);
        other[0] += 1;
        m = other;
    }
    for (k = 0; k < p; k++)
        for (i = 0; i < j->m[(size_t)r * (size_t)p + (size_t)k]; i++, o++)
            for (b = 0; b < es; b++) src[r][o * es + b] = a2av_byte(r, k, i, b);
    memset(dst[r], 0xA5, sizeof dst[r]);
    if (j->inplace) {
        memcpy(dst[r], src[r], in_n * es);
        rc = coll_alltoallv(c, dst[r], dst[r], m, j->t, j->algo);
    } else {
        rc = coll_alltoallv(c, src[r], dst[r], m, j->t, j->algo);
    }
    if (rc != COLL_OK) return rc;
    o = 0;
    for (k = 0; k < p && !bad; k++)
        for (i = 0; i < j->m[(size_t)k * (size_t)p + (size_t)r] && !bad; i++, o++)
            for (b = 0; b < es; b++)
                if (dst[r][o * es + b] != a2av_byte(k, r, i, b)) { bad = 1; break; }
    COLL_CHECK_MSG(!bad, "alltoallv p=%d rank %d: block from %d element %lu wrong", p, r, k - 1,
                   (unsigned long)(i ? i - 1 : 0));
    for (i = out_n * es; i < out_n * es + 64 && !j->inplace; i++)
        if (dst[r][i] != 0xA5) { bad = 2; break; }
    COLL_CHECK_MSG(bad != 2, "alltoallv p=%d rank %d: wrote past its %lu result elements", p, r,
                   (unsigned long)out_n);
    return rc;
}

static void fill_matrix(job *j, int shape)
{
    int a, b, p = j->p;
    for (a = 0; a < p; a++)
        for (b = 0; b < p; b++) {
            size_t v;
            switch (shape) {
            case 0: v = (size_t)((a * 7 + b * 3) % 5) * 3; break;      /* ragged, zeros */
            case 1: v = (size_t)((a + b) % 4) * 5 + (a == b); break;    /* symmetric     */
            case 2: v = a == 1 ? 0 : (size_t)(b % 3) * 4; break;        /* rank 1 sends nothing */
            default: v = 0; break;                                      /* all empty     */
            }
            j->m[(size_t)a * (size_t)p + (size_t)b] = v;
        }
}

static void test_alltoallv(void)
{
    static const int ps[] = { 1, 2, 3, 5, 7, 8, 16 };
    static const coll_dtype ts[] = { COLL_UINT8, COLL_FLOAT16, COLL_INT32, COLL_FLOAT64 };
    static job j;
    size_t pi, ti;
    int shape, ip, algo, sc, r;
    for (pi = 0; pi < sizeof ps / sizeof ps[0]; pi++)
        for (shape = 0; shape < 4; shape++)
            for (ip = 0; ip < 2; ip++)
                for (ti = 0; ti < 4; ti++)
                    for (algo = 0; algo < 2; algo++)
                        for (sc = 0; sc < 2; sc++) {
                            if (ip && shape != 1 && shape != 3) continue;   /* in place: symmetric */
                            if (ps[pi] == 16 && (ti % 2 || sc)) continue;    /* keep it short */
                            memset(&j, 0, sizeof j);
                            j.p = ps[pi]; j.body = a2av_body; j.t = ts[ti];
                            j.algo = algo ? COLL_ALGO_PAIRWISE : COLL_ALGO_AUTO;
                            j.inplace = ip; j.scratch = sc ? 256 : sizeof scratch_of[0];
                            j.checks = (ti + (size_t)shape) % 2 ? 0 : COLL_CHECK_CALLS;
                            fill_matrix(&j, shape);
                            run(&j);
                            for (r = 0; r < j.p; r++)
                                COLL_CHECK_MSG(j.rc[r] == COLL_OK, "alltoallv p=%d shape %d inplace %d: rank %d rc %d",
                                               j.p, shape, ip, r, j.rc[r]);
                        }
    /* refusals reach every rank (checks on) */
    memset(&j, 0, sizeof j);
    j.p = 5; j.body = a2av_body; j.t = COLL_INT32; j.algo = COLL_ALGO_AUTO; j.inplace = 1;
    j.scratch = sizeof scratch_of[0]; j.checks = COLL_CHECK_CALLS;
    fill_matrix(&j, 0);                                         /* not symmetric */
    run(&j);
    for (r = 0; r < j.p; r++) {
        size_t k;
        int sym = 1;
        for (k = 0; k < 5; k++) sym &= j.m[(size_t)r * 5 + k] == j.m[k * 5 + (size_t)r];
        COLL_CHECK_MSG(j.rc[r] == (sym ? COLL_ERR_PEER : COLL_ERR_INVAL) || (!sym && j.rc[r] == COLL_ERR_INVAL),
                       "alltoallv in place, row != column: rank %d rc %d", r, j.rc[r]);
        COLL_CHECK(j.rc[r] == COLL_ERR_INVAL || j.rc[r] == COLL_ERR_PEER);
    }
    j.inplace = 0; j.variant = 1;                               /* one rank's matrix differs */
    run(&j);
    for (r = 0; r < j.p; r++) COLL_CHECK_EQ(j.rc[r], COLL_ERR_MISMATCH);
    j.variant = 0; j.algo = COLL_ALGO_BRUCK;                    /* no Bruck for alltoallv */
    run(&j);
    for (r = 0; r < j.p; r++) COLL_CHECK_EQ(j.rc[r], COLL_ERR_NOSYS);
}

/* ---- 2. sub-communicators -------------------------------------------------- */

/* Sum over the members of (parent rank + 1) * (i + 1), and the members
   themselves in sub-rank order, checked on this rank. */
static void check_group(coll_comm *g, const int *want, int n, const char *what, int r)
{
    int32_t x[7], y[7], ids[64], me = r;
    int i, k, rc, sr = coll_rank(g);
    COLL_CHECK_MSG(coll_size(g) == n, "%s: rank %d sees size %d, wants %d", what, r, coll_size(g), n);
    COLL_CHECK_MSG(sr >= 0 && sr < n && want[sr] == r, "%s: rank %d has sub rank %d", what, r, sr);
    for (i = 0; i < 7; i++) x[i] = (r + 1) * (i + 1);
    rc = coll_allreduce(g, x, y, 7, COLL_INT32, COLL_SUM, COLL_ALGO_AUTO);
    COLL_CHECK_MSG(rc == COLL_OK, "%s: rank %d allreduce rc %d", what, r, rc);
    for (i = 0; i < 7 && rc == COLL_OK; i++) {
        int32_t s = 0;
        for (k = 0; k < n; k++) s += (want[k] + 1) * (i + 1);
        COLL_CHECK_MSG(y[i] == s, "%s: rank %d allreduce[%d] %d wants %d", what, r, i, (int)y[i], (int)s);
    }
    rc = coll_allgather(g, &me, ids, 1, COLL_INT32, COLL_ALGO_RING);
    COLL_CHECK_MSG(rc == COLL_OK, "%s: rank %d allgather rc %d", what, r, rc);
    for (k = 0; k < n && rc == COLL_OK; k++)
        COLL_CHECK_MSG(ids[k] == want[k], "%s: rank %d sees member %d = %d, wants %d", what, r, k,
                       (int)ids[k], want[k]);
}

static int groups_body(job *j, int r, coll_comm *c)
{
    int p = j->p, q = p / 2;                                /* a 2 x q grid */
    coll_comm row, col, pair, odd, none;
    coll_subport srow, scol, spair, sodd, snone;
    static unsigned long long sscr[MAXP][5][512];
    static int mrow[MAXP][2 * MAXP], mcol[MAXP][2 * MAXP], mpair[MAXP][2 * MAXP], mnone[MAXP][2 * MAXP];
    static int modd[MAXP][MAXP];
    int want[MAXP], n, i, it, rc;
    rc = coll_comm_split(&row, &srow, c, r / q, r, mrow[r], sscr[r][0], sizeof sscr[r][0]);
    COLL_CHECK_MSG(rc == COLL_OK, "split rows: rank %d rc %d", r, rc);
    rc |= coll_comm_split(&col, &scol, c, r % q, -r, mcol[r], sscr[r][1], sizeof sscr[r][1]);
    COLL_CHECK_MSG(rc == COLL_OK, "split columns: rank %d rc %d", r, rc);
    if (rc != COLL_OK) return rc;
    rc = coll_comm_split(&pair, &spair, &row, coll_rank(&row) / 2, 0, mpair[r], sscr[r][2], sizeof sscr[r][2]);
    COLL_CHECK_MSG(rc == COLL_OK, "split pairs of a row: rank %d rc %d", r, rc);
    rc = coll_comm_split(&none, &snone, c, r == 0 ? -1 : 0, 0, mnone[r], sscr[r][4], sizeof sscr[r][4]);
    COLL_CHECK_MSG(rc == COLL_OK && (r != 0 || coll_size(&none) == -1), "color < 0: rank %d rc %d", r, rc);
    n = 0;                                                  /* odd ranks, highest first */
    for (i = p - 1; i >= 0; i--) if (i % 2) modd[r][n++] = i;
    if (r % 2) {
        rc = coll_comm_sub(&odd, &sodd, c, modd[r], n, sscr[r][3], sizeof sscr[r][3]);
        COLL_CHECK_MSG(rc == COLL_OK, "sub of odd ranks: rank %d rc %d", r, rc);
    } else {
        COLL_CHECK_EQ(coll_comm_sub(&odd, &sodd, c, modd[r], n, sscr[r][3], sizeof sscr[r][3]), COLL_ERR_INVAL);
    }
    for (it = 0; it < 3; it++) {                            /* interleaved, rows at their own pace */
        for (i = 0; i < q; i++) want[i] = (r / q) * q + i;
        check_group(&row, want, q, "row", r);
        for (i = 0; i < 2; i++) want[i] = (1 - i) * q + r % q;   /* key -r: higher rank first */
        check_group(&col, want, 2, "column", r);
        {
            int rr = coll_rank(&row), base = (r / q) * q + rr / 2 * 2, np = rr / 2 * 2 + 1 < q ? 2 : 1;
            for (i = 0; i < np; i++) want[i] = base + i;
            check_group(&pair, want, np, "pair of a row", r);
        }
        if (r % 2) check_group(&odd, modd[r], n, "odd ranks", r);
        if (r != 0) {
            for (i = 1; i < p; i++) want[i - 1] = i;
            check_group(&none, want, p - 1, "all but rank 0", r);
        }
        for (i = 0; i < p; i++) want[i] = i;
        check_group(c, want, p, "parent", r);
    }
    /* a rank that cannot take part makes every rank refuse the split */
    rc = coll_comm_split(r == 1 ? NULL : &row, &srow, c, 0, 0, mrow[r], sscr[r][0], sizeof sscr[r][0]);
    COLL_CHECK_MSG(rc == (r == 1 ? COLL_ERR_INVAL : COLL_ERR_PEER), "split refused: rank %d rc %d", r, rc);
    /* member lists that are not lists of the parent's ranks */
    {
        int dupl[3] = { 0, r, r }, out[2] = { r, p }, neg[2] = { -1, r };
        COLL_CHECK_EQ(coll_comm_sub(&odd, &sodd, c, dupl, 3, sscr[r][3], sizeof sscr[r][3]), COLL_ERR_INVAL);
        COLL_CHECK_EQ(coll_comm_sub(&odd, &sodd, c, out, 2, sscr[r][3], sizeof sscr[r][3]), COLL_ERR_INVAL);
        COLL_CHECK_EQ(coll_comm_sub(&odd, &sodd, c, neg, 2, sscr[r][3], sizeof sscr[r][3]), COLL_ERR_INVAL);
        COLL_CHECK_EQ(coll_comm_sub(&odd, &sodd, c, modd[r], 0, sscr[r][3], sizeof sscr[r][3]), COLL_ERR_INVAL);
    }
    /* last, as it leaves the parent out of step: a sub's call never passes
       for its parent's (rank 0 calls on a sub of all ranks, a dup; the
       others on the parent) */
    {
        coll_comm dup;
        coll_subport sdup;
        static int all[MAXP][MAXP];
        int32_t x = r, y = 0;
        for (i = 0; i < p; i++) all[r][i] = i;
        rc = coll_comm_sub(&dup, &sdup, c, all[r], p, sscr[r][3], sizeof sscr[r][3]);
        COLL_CHECK_EQ(rc, COLL_OK);
        rc = coll_allreduce(r == 0 ? &dup : c, &x, &y, 1, COLL_INT32, COLL_SUM, COLL_ALGO_AUTO);
        if (j->checks) COLL_CHECK_MSG(rc == COLL_ERR_MISMATCH, "dup vs parent: rank %d rc %d", r, rc);
        /* the two now count their calls differently on rank 0 and the
           rest: every later call on either is refused on every rank */
        rc = coll_allreduce(&dup, &x, &y, 1, COLL_INT32, COLL_SUM, COLL_ALGO_AUTO);
        if (j->checks) COLL_CHECK_MSG(rc == COLL_ERR_MISMATCH, "dup after: rank %d rc %d", r, rc);
        rc = coll_comm_sub(&dup, &sdup, c, all[r], p, sscr[r][3], sizeof sscr[r][3]);   /* a fresh one */
        COLL_CHECK_EQ(rc, COLL_OK);
        rc = coll_allreduce(&dup, &x, &y, 1, COLL_INT32, COLL_SUM, COLL_ALGO_AUTO);
        COLL_CHECK_MSG(rc == COLL_OK && y == p * (p - 1) / 2, "fresh dup: rank %d rc %d sum %d", r, rc, (int)y);
    }
    return COLL_OK;
}

static void test_groups(void)
{
    static job j;
    int ps[] = { 8, 6, 4 }, k;
    for (k = 0; k < 3; k++) {
        memset(&j, 0, sizeof j);
        j.p = ps[k]; j.body = groups_body; j.scratch = 4096; j.checks = COLL_CHECK_CALLS;
        run(&j);
    }
}

/* ---- 3. requests in flight ------------------------------------------------- */

#define NQ 4
static int inflight_body(job *j, int r, coll_comm *c)
{
    int p = j->p, it, k, i, rc[NQ + 1], left;
    coll_request q[NQ + 1];
    coll_args a[NQ + 1];
    int32_t x[NQ][40], y[NQ][40 * MAXP];
    static size_t mm[MAXP][MAXP * MAXP];
    size_t *m = mm[r];
    coll_comm half;
    coll_subport shalf;
    static int mh[MAXP][2 * MAXP];
    static unsigned long long hscr[MAXP][512];
    int32_t hx[5], hy[5];
    for (i = 0; i < p * p; i++) m[i] = (size_t)(i % 3);
    rc[0] = coll_comm_split(&half, &shalf, c, r % 2, r, mh[r], hscr[r], sizeof hscr[r]);
    COLL_CHECK_EQ(rc[0], COLL_OK);
    for (it = 0; it < 12; it++) {
        int wait_all = it % 3 == 2;
        for (k = 0; k < NQ; k++) {
            for (i = 0; i < 40; i++) x[k][i] = (k + 1) * 1000 + r * 10 + i;
            memset(&a[k], 0, sizeof a[k]);
            a[k].src = x[k]; a[k].dst = y[k]; a[k].dtype = COLL_INT32; a[k].op = COLL_MAX;
            switch (k) {
            case 0: a[k].kind = COLL_ALLREDUCE; a[k].algo = COLL_ALGO_RING; a[k].count = 40; break;
            case 1: a[k].kind = COLL_ALLREDUCE; a[k].algo = COLL_ALGO_RECURSIVE_DOUBLING; a[k].count = 40; break;
            case 2: a[k].kind = COLL_ALLGATHER; a[k].algo = COLL_ALGO_AUTO; a[k].count = 3; break;
            default: a[k].kind = COLL_ALLTOALLV; a[k].algo = COLL_ALGO_AUTO; a[k].counts = m; break;
            }
            COLL_CHECK_EQ(coll_start(&q[k], c, &a[k]), COLL_OK);
            rc[k] = COLL_AGAIN;
        }
        /* and one on a sub, started after them */
        for (i = 0; i < 5; i++) hx[i] = r + i;
        memset(&a[NQ], 0, sizeof a[NQ]);
        a[NQ].kind = COLL_ALLREDUCE; a[NQ].src = hx; a[NQ].dst = hy; a[NQ].count = 5;
        a[NQ].dtype = COLL_INT32; a[NQ].op = COLL_SUM;
        COLL_CHECK_EQ(coll_start(&q[NQ], &half, &a[NQ]), COLL_OK);
        rc[NQ] = COLL_AGAIN;
        if (it == 0) {      /* a blocking call now would mix with them: refused */
            int32_t z = 0;
            COLL_CHECK_EQ(coll_allreduce(c, &z, &z, 1, COLL_INT32, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_INVAL);
            COLL_CHECK_EQ(coll_allreduce(&half, &z, &z, 1, COLL_INT32, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_INVAL);
        }
        if (wait_all) {
            /* the list in reverse: coll_waitall takes them in their order */
            coll_request rq[NQ + 1];
            for (k = 0; k <= NQ; k++) rq[k] = q[NQ - k];
            COLL_CHECK_EQ(coll_waitall(rq, NQ + 1), COLL_OK);
            for (k = 0; k <= NQ; k++) rc[k] = coll_progress(&rq[NQ - k]);
        } else {
            /* progressed in an order of this rank's own */
            do {
                left = 0;
                for (i = 0; i <= NQ; i++) {
                    k = (r % 2 ? NQ - i + r + it : i + r + it) % (NQ + 1);
                    if (rc[k] == COLL_AGAIN) rc[k] = coll_progress(&q[k]);
                    left += rc[k] == COLL_AGAIN;
                }
            } while (left);
        }
        for (k = 0; k <= NQ; k++) COLL_CHECK_MSG(rc[k] == COLL_OK, "in flight: rank %d request %d rc %d", r, k, rc[k]);
        for (i = 0; i < 40; i++) {
            COLL_CHECK_EQ(y[0][i], 1000 + (p - 1) * 10 + i);
            COLL_CHECK_EQ(y[1][i], 2000 + (p - 1) * 10 + i);
        }
        for (k = 0; k < p; k++)
            for (i = 0; i < 3; i++) COLL_CHECK_EQ(y[2][k * 3 + i], 3000 + k * 10 + i);
        {
            size_t o = 0, e, in_off;
            int from, t;
            for (from = 0; from < p; from++) {
                in_off = 0;                              /* where `from`'s block for r starts in its src */
                for (t = 0; t < r; t++) in_off += m[(size_t)from * (size_t)p + (size_t)t];
                for (e = 0; e < m[(size_t)from * (size_t)p + (size_t)r]; e++, o++)
                    COLL_CHECK_EQ(y[3][o], 4000 + from * 10 + (int)(in_off + e));
            }
        }
        for (i = 0; i < 5; i++) {
            int32_t s = 0;
            for (k = r % 2; k < p; k += 2) s += k + i;
            COLL_CHECK_EQ(hy[i], s);
        }
    }
    /* the turn order left clean: blocking calls work again */
    {
        int32_t z = 1, s = 0;
        COLL_CHECK_EQ(coll_allreduce(c, &z, &s, 1, COLL_INT32, COLL_SUM, COLL_ALGO_AUTO), COLL_OK);
        COLL_CHECK_EQ(s, p);
    }
    return COLL_OK;
}

static void test_inflight(void)
{
    static job j;
    int ps[] = { 2, 3, 4, 7 }, k, chk, k0 = getenv("TG_P") ? 3 : 0;
    for (k = k0; k < 4; k++)
        for (chk = 0; chk < 2; chk++) {
            memset(&j, 0, sizeof j);
            j.p = ps[k]; j.body = inflight_body; j.scratch = 1024;
            j.checks = chk ? COLL_CHECK_CALLS | COLL_CHECK_CRC : 0;
            run(&j);
        }
}

/* A request that fails breaks the transport for every request behind it,
   on the communicator and on its subs: they end with COLL_ERR_BROKEN when
   their turn comes, instead of reading what the failed one left behind. */
static coll_failing fail_of[MAXP];

static int broken_body(job *j, int r, coll_comm *c)
{
    coll_comm top, half;
    coll_subport shalf;
    coll_port fp;
    coll_request q[3];
    coll_args a[3];
    static int mh[MAXP][2 * MAXP];
    static unsigned long long hscr[MAXP][512];
    int32_t x[3][64], y[3][64];
    int k, i, rc[3];
    coll_port inner = port_of(r);
    (void)c;
    fp = coll_failing_port(&fail_of[r], &inner, r == 0 ? 3 : 0, COLL_ERR_IO);   /* rank 0's third send fails */
    COLL_CHECK_EQ(coll_init(&top, r, j->p, &fp, scratch_of[r], 1024), COLL_OK);
    coll_set_checks(&top, j->checks);
    COLL_CHECK_EQ(coll_comm_sub(&half, &shalf, &top, (mh[r][0] = 0, mh[r][1] = 1, mh[r]), 2,
                                hscr[r], sizeof hscr[r]), r < 2 ? COLL_OK : COLL_ERR_INVAL);
    for (k = 0; k < 3; k++) {
        for (i = 0; i < 64; i++) x[k][i] = r + i;
        memset(&a[k], 0, sizeof a[k]);
        a[k].kind = COLL_ALLREDUCE; a[k].algo = COLL_ALGO_RING; a[k].src = x[k]; a[k].dst = y[k];
        a[k].count = 64; a[k].dtype = COLL_INT32; a[k].op = COLL_SUM;
        rc[k] = k == 2 && r >= 2 ? COLL_ERR_BROKEN : coll_start(&q[k], k == 2 ? &half : &top, &a[k]);
        if (!(k == 2 && r >= 2)) COLL_CHECK_EQ(rc[k], COLL_OK);
    }
    rc[0] = coll_waitall(q, r >= 2 ? 2 : 3);
    COLL_CHECK_MSG(rc[0] < 0 && rc[0] != COLL_ERR_BROKEN, "broken: rank %d first request rc %d", r, rc[0]);
    COLL_CHECK_MSG(coll_progress(&q[1]) == COLL_ERR_BROKEN, "broken: rank %d second request rc %d", r, coll_progress(&q[1]));
    if (r < 2) COLL_CHECK_MSG(coll_progress(&q[2]) == COLL_ERR_BROKEN, "broken: rank %d request on the sub rc %d", r, coll_progress(&q[2]));
    COLL_CHECK_EQ(coll_allreduce(&top, x[0], y[0], 4, COLL_INT32, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_BROKEN);
    if (r < 2) COLL_CHECK_EQ(coll_allreduce(&half, x[0], y[0], 4, COLL_INT32, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_BROKEN);
    return COLL_OK;
}

static void test_broken(void)
{
    static job j;
    int chk;
    for (chk = 0; chk < 2; chk++) {
        memset(&j, 0, sizeof j);
        j.p = 3; j.body = broken_body; j.scratch = 1024; j.checks = chk ? COLL_CHECK_CALLS : 0;
        run(&j);
    }
}

/* ---- 4. sibling subs over the same members ---------------------------------- */
/* Two splits of the parent with one color (two duplicates of it), used in
   one order on every rank, then crossed: rank 0 calls on A then B, rank 1
   on B then A. Each split signs the parent call that made it into its
   calls, so crossed calls get COLL_ERR_MISMATCH on every rank instead of
   each matching the other's (COLL_OK with the other communicator's data,
   before). A small call (it rides in the check round) and one that runs a
   schedule; results against a plain loop. */
enum { SIB_P = 4, SIB_N = 3, SIB_BIG = 1024 };
static int sib_crossed, sib_big;
static int32_t sib_x[SIB_P][2][SIB_BIG], sib_y[SIB_P][2][SIB_BIG];

static int32_t sib_val(int comm, int r, int i) { return (int32_t)(comm * 1000000 + r * 1000 + i); }

static int siblings_body(int r, void *arg)
{
    static int members[SIB_P][2][2 * SIB_P];
    coll_comm c, sub[2];
    coll_subport sp[2];
    coll_port pt = port_of(r);
    size_t n = sib_big ? SIB_BIG : SIB_N, i;
    int rc[2], k, q, first = sib_crossed ? r % 2 : 0;     /* crossed: odd ranks start with B */
    unsigned char *s = (unsigned char *)scratch_of[r];
    (void)arg;
    COLL_CHECK_EQ(coll_init(&c, r, SIB_P, &pt, s, 16384), COLL_OK);
    for (k = 0; k < 2; k++)
        COLL_CHECK_EQ(coll_comm_split(&sub[k], &sp[k], &c, 0, r, members[r][k], s + 16384 * (k + 1), 16384), COLL_OK);
    for (k = 0; k < 2; k++)
        for (i = 0; i < n; i++) { sib_x[r][k][i] = sib_val(k, r, (int)i); sib_y[r][k][i] = -1; }
    for (q = 0; q < 2; q++) {
        k = q ^ first;
        rc[k] = coll_allreduce(&sub[k], sib_x[r][k], sib_y[r][k], n, COLL_INT32, COLL_SUM, COLL_ALGO_AUTO);
    }
    for (k = 0; k < 2; k++) {
        int bad = 0;
        for (i = 0; i < n; i++) {
            int32_t want = 0;
            for (q = 0; q < SIB_P; q++) want += sib_val(k, q, (int)i);
            bad += sib_y[r][k][i] != want;
        }
        if (sib_crossed)
            COLL_CHECK_MSG(rc[k] == COLL_ERR_MISMATCH, "crossed siblings, %zu ints: rank %d, sub %c: rc %d, %d wrong",
                           n, r, "AB"[k], rc[k], bad);
        else
            COLL_CHECK_MSG(rc[k] == COLL_OK && bad == 0, "siblings, %zu ints: rank %d, sub %c: rc %d, %d wrong",
                           n, r, "AB"[k], rc[k], bad);
    }
    return 0;
}

static void test_siblings(void)
{
    for (sib_big = 0; sib_big < 2; sib_big++)
        for (sib_crossed = 0; sib_crossed < 2; sib_crossed++) {
            COLL_CHECK_EQ(coll_threads_init(&W, SIB_P, 10000), COLL_OK);
            coll_threads_run(&W, siblings_body, NULL);
            coll_threads_destroy(&W);
        }
}


int main(int argc, char **argv)
{
    if (argc > 1) { rendezvous = argv[1][0] == 'r'; test_inflight(); return coll_test_summary("in flight only"); }
    for (rendezvous = 0; rendezvous < 2; rendezvous++) {
        test_alltoallv();
        printf("alltoallv%s: %lu passed, %lu failed\n", rendezvous ? " (rendezvous)" : "", coll_test_passed, coll_test_failed);
        fflush(stdout);
        test_groups();
        printf("groups%s: %lu passed, %lu failed\n", rendezvous ? " (rendezvous)" : "", coll_test_passed, coll_test_failed);
        fflush(stdout);
        test_siblings();
        test_inflight();
        test_broken();
        printf("in flight%s: %lu passed, %lu failed\n", rendezvous ? " (rendezvous)" : "", coll_test_passed, coll_test_failed);
        fflush(stdout);
    }
    return coll_test_summary("groups");
}
