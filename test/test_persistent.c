/* test_persistent.c - a call planned once and run many times.

   coll_prepare plans a call (algorithm, plan, scratch, the call check's
   signature) and coll_restart runs it; each run reads its buffers as they
   are then. Checked on every rank against a plain loop, on the threads port
   (coll_restart + coll_progress, the non-blocking path) and the rendezvous
   port (coll_restart + coll_waitall, send and recv only), p = 1, 2, 3, 4, 7:
     1. runs with new inputs each time: all-reduce (AUTO small and large,
        ring, in place), broadcast from the last rank, all-gather - each run
        right, and a plain call between two runs too;
     2. the checks still on: rank 0 runs a prepared all-reduce of 5 elements
        where the others run theirs of 6 - COLL_ERR_MISMATCH on every rank,
        and the next matching runs are right; two prepared requests run in
        crossed order on odd and even ranks (6 and 7 elements) give
        COLL_ERR_MISMATCH, never COLL_OK (requests of one shape match by
        order, as calls do: the order is the caller's to keep);
     3. a rank that refuses at prepare (a float dtype with a bitwise op)
        tells the others: its runs return COLL_ERR_INVAL, every other
        rank's COLL_ERR_PEER, with the checks on;
     4. misuse: coll_restart of a request never prepared, of one still
        running, and after coll_set_checks changed the checks - each
        COLL_ERR_INVAL;
     5. the same blocking call again (coll_run reuses the last call's
        plan): all-reduce out of place (at p = 1 the hook that works in
        place moves the source: each call must start from the caller's),
        hierarchical, and reduce where the non-roots pass no dst every other
        call (linear reduce, chosen after the agreement, then AUTO's pick
        again on the root whose call never changed), new inputs each call,
        right every time - also across coll_set_checks and coll_set_tuning;
     6. a v form whose counts or displs the caller changes under a prepared
        request (all-gatherv): the run is an error, never memory outside
        the buffers (guards after each buffer stay untouched): on every
        rank when all change, and with the checks on, when one rank alone
        changes them, COLL_ERR_INVAL there and COLL_ERR_PEER on the others;
        prepared again with the new counts, the call is right;
     7. coll_start (and coll_prepare) of a request still running: an
        immediate COLL_ERR_INVAL, and the running one still completes.
   RUN  make test-persistent */
#define COLL_IMPLEMENTATION
#include "../coll.h"
#define COLL_THREADS_IMPLEMENTATION
#include "../ports/coll_threads.h"
#include "coll_test.h"
#include "test_ports.h"

#include <stdint.h>
#include <string.h>

enum { MAXP = 7, BIG = 3001, RUNS = 4 };

typedef struct world {
    coll_threads w;
    int p, rendezvous;
} world;

static double scratch[MAXP][512];
static int32_t sbuf[MAXP][BIG * MAXP], dbuf[MAXP][BIG * MAXP];
static int32_t sbuf2[MAXP][8], dbuf2[MAXP][8];

/* Rank r's element i in run k: different every run. */
static int32_t val(int k, int r, int i) { return (int32_t)(100000 * (k + 1) + 1000 * r + i); }

/* One run of a prepared request to its end, as the port allows. */
static int run(coll_request *q, int progress)
{
    int rc = coll_restart(q);
    if (rc != COLL_OK) return rc;
    if (!progress) return coll_waitall(q, 1);
    while ((rc = coll_progress(q)) == COLL_AGAIN) { }
    return rc;
}

static void args(coll_args *a, coll_kind k, const void *src, void *dst, size_t n, coll_op op, int root, coll_algo algo)
{
    memset(a, 0, sizeof *a);
    a->kind = k; a->src = src; a->dst = dst; a->count = n; a->dtype = COLL_INT32;
    a->op = op; a->root = root; a->algo = algo;
}

/* ---- 1. new inputs every run ------------------------------------------------ */
static void check_allreduce(const world *W, int r, int k, const int32_t *dst, size_t n, const char *what)
{
    size_t i, bad = 0;
    int s;
    for (i = 0; i < n; i++) {
        int32_t want = 0;
        for (s = 0; s < W->p; s++) want += val(k, s, (int)i);
        bad += dst[i] != want;
    }
    COLL_CHECK_MSG(bad == 0, "%s p=%d%s rank %d run %d: %zu wrong", what, W->p, W->rendezvous ? " rendezvous" : "", r, k, bad);
}

static void runs(const world *W, coll_comm *c, int r)
{
    static const struct { const char *what; size_t n; coll_algo algo; int inplace; } ar[] = {
        {"allreduce auto 8 B", 2, COLL_ALGO_AUTO, 0}, {"allreduce auto", BIG, COLL_ALGO_AUTO, 0},
        {"allreduce ring", BIG, COLL_ALGO_RING, 0}, {"allreduce auto in place", 37, COLL_ALGO_AUTO, 1},
    };
    int progress = !W->rendezvous, p = W->p, k, rc;
    size_t t, i, n;
    coll_request q;
    coll_args a;
    for (t = 0; t < sizeof ar / sizeof ar[0]; t++) {
        n = ar[t].n;
        args(&a, COLL_ALLREDUCE, sbuf[r], ar[t].inplace ? sbuf[r] : dbuf[r], n, COLL_SUM, 0, ar[t].algo);
        rc = coll_prepare(&q, c, &a);
        COLL_CHECK_MSG(rc == COLL_OK, "%s: prepare %d (%s)", ar[t].what, rc, coll_last_error(c));
        for (k = 0; k < RUNS && rc == COLL_OK; k++) {
            for (i = 0; i < n; i++) { sbuf[r][i] = val(k, r, (int)i); dbuf[r][i] = -1; }
            rc = run(&q, progress);
            COLL_CHECK_MSG(rc == COLL_OK, "%s p=%d rank %d run %d: %d (%s)", ar[t].what, p, r, k, rc, coll_last_error(c));
            if (rc == COLL_OK) check_allreduce(W, r, k, ar[t].inplace ? sbuf[r] : dbuf[r], n, ar[t].what);
            if (k == 1 && rc == COLL_OK) {      /* a plain call between two runs */
                for (i = 0; i < 8; i++) sbuf2[r][i] = val(k, r, (int)i);
                rc = coll_allreduce(c, sbuf2[r], dbuf2[r], 8, COLL_INT32, COLL_SUM, COLL_ALGO_AUTO);
                COLL_CHECK_EQ(rc, COLL_OK);
                check_allreduce(W, r, k, dbuf2[r], 8, "plain call between runs");
            }
        }
    }
    /* broadcast from the last rank, and all-gather */
    n = 513;
    args(&a, COLL_BROADCAST, dbuf[r], dbuf[r], n, COLL_SUM, p - 1, COLL_ALGO_AUTO);
    rc = coll_prepare(&q, c, &a);
    COLL_CHECK_EQ(rc, COLL_OK);
    for (k = 0; k < RUNS && rc == COLL_OK; k++) {
        size_t bad = 0;
        for (i = 0; i < n; i++) dbuf[r][i] = r == p - 1 ? val(k, r, (int)i) : -1;
        rc = run(&q, progress);
        COLL_CHECK_EQ(rc, COLL_OK);
        for (i = 0; i < n; i++) bad += dbuf[r][i] != val(k, p - 1, (int)i);
        COLL_CHECK_MSG(bad == 0, "broadcast p=%d rank %d run %d: %zu wrong", p, r, k, bad);
    }
    n = 11;
    args(&a, COLL_ALLGATHER, sbuf[r], dbuf[r], n, COLL_SUM, 0, COLL_ALGO_AUTO);
    rc = coll_prepare(&q, c, &a);
    COLL_CHECK_EQ(rc, COLL_OK);
    for (k = 0; k < RUNS && rc == COLL_OK; k++) {
        size_t bad = 0;
        int s;
        for (i = 0; i < n; i++) sbuf[r][i] = val(k, r, (int)i);
        rc = run(&q, progress);
        COLL_CHECK_EQ(rc, COLL_OK);
        for (s = 0; s < p; s++)
            for (i = 0; i < n; i++) bad += dbuf[r][(size_t)s * n + i] != val(k, s, (int)i);
        COLL_CHECK_MSG(bad == 0, "allgather p=%d rank %d run %d: %zu wrong", p, r, k, bad);
    }
}

/* ---- 2. the checks still on ------------------------------------------------- */
static void checks_on(const world *W, coll_comm *c, int r)
{
    int progress = !W->rendezvous, p = W->p, k, rc, j;
    coll_request q, qa, qb;
    coll_args a;
    size_t i;
    if (p < 2) return;
    /* rank 0's request is of 5 elements, the others' of 6 */
    args(&a, COLL_ALLREDUCE, sbuf[r], dbuf[r], r == 0 ? 5 : 6, COLL_SUM, 0, COLL_ALGO_AUTO);
    rc = coll_prepare(&q, c, &a);
    COLL_CHECK_EQ(rc, COLL_OK);
    rc = run(&q, progress);
    COLL_CHECK_MSG(rc == COLL_ERR_MISMATCH, "p=%d rank %d: mismatched runs gave %d, not COLL_ERR_MISMATCH", p, r, rc);
    /* the communicator is still usable: a matching prepared request */
    args(&a, COLL_ALLREDUCE, sbuf[r], dbuf[r], 6, COLL_SUM, 0, COLL_ALGO_AUTO);
    rc = coll_prepare(&q, c, &a);
    for (k = 0; k < 2 && rc == COLL_OK; k++) {
        for (i = 0; i < 6; i++) sbuf[r][i] = val(k, r, (int)i);
        rc = run(&q, progress);
        COLL_CHECK_EQ(rc, COLL_OK);
        if (rc == COLL_OK) check_allreduce(W, r, k, dbuf[r], 6, "after a mismatch");
    }
    /* two requests, 6 and 7 elements, run in crossed order */
    args(&a, COLL_ALLREDUCE, sbuf[r], dbuf[r], 6, COLL_SUM, 0, COLL_ALGO_AUTO);
    rc = coll_prepare(&qa, c, &a);
    args(&a, COLL_ALLREDUCE, sbuf2[r], dbuf2[r], 7, COLL_SUM, 0, COLL_ALGO_AUTO);
    if (rc == COLL_OK) rc = coll_prepare(&qb, c, &a);
    COLL_CHECK_EQ(rc, COLL_OK);
    if (rc != COLL_OK) return;
    for (j = 0; j < 2; j++) {
        coll_request *x = (j == 0) == (r % 2 == 0) ? &qa : &qb;
        rc = run(x, progress);
        COLL_CHECK_MSG(rc == COLL_ERR_MISMATCH, "p=%d rank %d: crossed runs gave %d, not COLL_ERR_MISMATCH", p, r, rc);
    }
}

/* ---- 3. a refusal at prepare reaches every rank ------------------------------ */
static void refusal(const world *W, coll_comm *c, int r)
{
    coll_request q;
    coll_args a;
    int rc, k, want;
    if (W->p < 2) return;
    args(&a, COLL_ALLREDUCE, sbuf[r], dbuf[r], 4, COLL_SUM, 0, COLL_ALGO_AUTO);
    if (r == W->p - 1) { a.dtype = COLL_FLOAT32; a.op = COLL_BAND; }   /* no bitwise and on floats */
    rc = coll_prepare(&q, c, &a);
    COLL_CHECK_MSG(rc == COLL_OK, "rank %d: prepare of a refused call returned %d at once (the run tells)", r, rc);
    want = r == W->p - 1 ? COLL_ERR_INVAL : COLL_ERR_PEER;
    for (k = 0; k < 2 && rc == COLL_OK; k++) {
        int got = run(&q, !W->rendezvous);
        COLL_CHECK_MSG(got == want, "p=%d rank %d run %d: refusal gave %d, expected %d", W->p, r, k, got, want);
    }
}

/* ---- 4. misuse -------------------------------------------------------------- */
static void misuse(const world *W, coll_comm *c, int r)
{
    coll_request q;
    coll_args a;
    int rc;
    memset(&q, 0, sizeof q);
    COLL_CHECK_EQ(coll_restart(&q), COLL_ERR_INVAL);           /* never prepared */
    q.c = c;
    COLL_CHECK_EQ(coll_restart(&q), COLL_ERR_INVAL);
    args(&a, COLL_ALLREDUCE, sbuf[r], dbuf[r], 4, COLL_SUM, 0, COLL_ALGO_AUTO);
    rc = coll_prepare(&q, c, &a);
    COLL_CHECK_EQ(rc, COLL_OK);
    if (W->p == 1) {             /* one rank: a run ends at once, never "running" */
        COLL_CHECK_EQ(run(&q, 0), COLL_OK);
    } else if (!W->rendezvous) { /* running: started, not yet driven */
        rc = coll_restart(&q);
        COLL_CHECK_EQ(rc, COLL_OK);
        COLL_CHECK_EQ(coll_restart(&q), COLL_ERR_INVAL);
        while ((rc = coll_progress(&q)) == COLL_AGAIN) { }
        COLL_CHECK_EQ(rc, COLL_OK);
    }
    /* checks changed since prepare (every rank alike) */
    COLL_CHECK_EQ(coll_set_checks(c, COLL_CHECK_CALLS | COLL_CHECK_CRC), COLL_OK);
    COLL_CHECK_EQ(coll_restart(&q), COLL_ERR_INVAL);
    COLL_CHECK_EQ(coll_set_checks(c, COLL_CHECK_CALLS), COLL_OK);
    COLL_CHECK_EQ(run(&q, !W->rendezvous), COLL_OK);           /* the same again: fine */
}

/* ---- 5. the same blocking call again ---------------------------------------- */
static void same_call(const world *W, coll_comm *c, int r)
{
    coll_tuning tu = { 2e-6, 6.3e-11, 6.3e-13 };
    coll_args h;
    int p = W->p, k, rc;
    size_t i, n = 40;
    for (k = 0; k < RUNS; k++) {
        for (i = 0; i < n; i++) { sbuf[r][i] = val(k, r, (int)i); dbuf[r][i] = -1; }
        if (k == 2) COLL_CHECK_EQ(coll_set_checks(c, COLL_CHECK_CALLS | COLL_CHECK_CRC), COLL_OK);
        if (k == 3) COLL_CHECK_EQ(coll_set_tuning(c, &tu), COLL_OK);
        rc = coll_allreduce(c, sbuf[r], dbuf[r], n, COLL_INT32, COLL_SUM, COLL_ALGO_AUTO);
        COLL_CHECK_EQ(rc, COLL_OK);
        if (rc == COLL_OK) check_allreduce(W, r, k, dbuf[r], n, "the same all-reduce again");
        for (i = 0; i < n; i++) { sbuf[r][i] = val(k, r, (int)i); dbuf[r][i] = -1; }
        args(&h, COLL_ALLREDUCE, sbuf[r], dbuf[r], n, COLL_SUM, 0, COLL_ALGO_HIERARCHICAL);
        h.group = p < 2 ? p : 2;                        /* groups of two ranks */
        rc = coll_run(c, &h);
        COLL_CHECK_EQ(rc, COLL_OK);
        if (rc == COLL_OK) check_allreduce(W, r, k, dbuf[r], n, "the same hierarchical all-reduce again");
    }
    COLL_CHECK_EQ(coll_set_checks(c, COLL_CHECK_CALLS), COLL_OK);
    for (k = 0; k < 2 * RUNS; k++) {   /* reduce to rank 0: the root's call is the same
                                          every time, the non-roots pass no dst every
                                          other time (linear reduce, then AUTO's again) */
        for (i = 0; i < n; i++) { sbuf[r][i] = val(k, r, (int)i); dbuf[r][i] = -1; }
        rc = coll_reduce(c, sbuf[r], r == 0 || k % 2 ? dbuf[r] : NULL, n, COLL_INT32, COLL_SUM, 0, COLL_ALGO_AUTO);
        COLL_CHECK_MSG(rc == COLL_OK, "p=%d rank %d: reduce, call %d: %d (%s)", p, r, k, rc, coll_last_error(c));
        if (rc == COLL_OK && r == 0) check_allreduce(W, r, k, dbuf[r], n, "the same reduce again (NULL dst every other time)");
    }
}

/* ---- 6. counts changed under a prepared v form ------------------------------- */
enum { VN = 2, VBIG = 9, GUARD = 64 };
static int32_t vsrc[MAXP][VBIG + GUARD], vdst[MAXP][VBIG * MAXP + GUARD];
static size_t vcounts[MAXP][MAXP], vdispls[MAXP][MAXP];

static void vfill(int r, int p, size_t n)
{
    size_t i;
    for (i = 0; i < VBIG + GUARD; i++) vsrc[r][i] = i < n ? val(6, r, (int)i) : 0x5a5a5a5a;
    for (i = 0; i < (size_t)VBIG * MAXP + GUARD; i++) vdst[r][i] = 0x5a5a5a5a;
    for (i = 0; i < (size_t)p; i++) { vcounts[r][i] = n; vdispls[r][i] = i * n; }
}
/* dst holds every rank's n elements, and nothing past p x n was written */
static void vcheck(int r, int p, size_t n, int want_data, const char *what)
{
    size_t i, bad = 0, spoilt = 0;
    int s;
    for (s = 0; want_data && s < p; s++)
        for (i = 0; i < n; i++) bad += vdst[r][(size_t)s * n + i] != val(6, s, (int)i);
    for (i = want_data ? (size_t)p * n : 0; i < (size_t)VBIG * MAXP + GUARD; i++) spoilt += vdst[r][i] != 0x5a5a5a5a;
    COLL_CHECK_MSG(bad == 0 && spoilt == 0, "%s p=%d rank %d: %zu wrong, %zu written outside", what, p, r, bad, spoilt);
}
static void counts_changed(const world *W, coll_comm *c, int r)
{
    int progress = !W->rendezvous, p = W->p, rc, one;
    unsigned checks = COLL_CHECK_CALLS;
    coll_request q;
    coll_args a;
    for (one = 0; one < 2; one++) {      /* every rank changes its counts; rank 0 alone */
        if (one && p < 2) break;
        vfill(r, p, VN);
        args(&a, COLL_ALLGATHERV, vsrc[r], vdst[r], 0, COLL_SUM, 0, COLL_ALGO_AUTO);
        a.counts = vcounts[r];
        rc = coll_prepare(&q, c, &a);
        COLL_CHECK_EQ(rc, COLL_OK);
        if (rc != COLL_OK) return;
        COLL_CHECK_EQ(run(&q, progress), COLL_OK);
        vcheck(r, p, VN, 1, "v form as prepared");
        vfill(r, p, VN);
        if (!one || r == 0) { size_t i; for (i = 0; i < (size_t)p; i++) vcounts[r][i] = VBIG; }
        rc = run(&q, progress);
        if (!one) COLL_CHECK_MSG(rc == COLL_ERR_INVAL, "p=%d rank %d: counts changed on every rank: %d, not COLL_ERR_INVAL", p, r, rc);
        else COLL_CHECK_MSG(rc == (r == 0 ? COLL_ERR_INVAL : COLL_ERR_PEER),
                            "p=%d rank %d: counts changed on rank 0 alone: %d", p, r, rc);
        if (r == 0 || !one) COLL_CHECK_MSG(strstr(coll_last_error(c), "counts") != NULL,
                                           "p=%d rank %d: the reason names the counts: %s", p, r, coll_last_error(c));
        vcheck(r, p, VN, 0, "counts changed under a prepared request");
        /* prepared again with the new counts: right */
        vfill(r, p, VBIG);
        rc = coll_prepare(&q, c, &a);
        COLL_CHECK_EQ(rc, COLL_OK);
        if (rc == COLL_OK) COLL_CHECK_EQ(run(&q, progress), COLL_OK);
        vcheck(r, p, VBIG, 1, "prepared again with the new counts");
        if (!one) {                      /* displs moved (checks on and off) */
            int m;
            for (m = 0; m < 2; m++) {
                COLL_CHECK_EQ(coll_set_checks(c, m ? checks : 0), COLL_OK);
                vfill(r, p, VN);
                a.displs = vdispls[r];
                rc = coll_prepare(&q, c, &a);
                COLL_CHECK_EQ(rc, COLL_OK);
                if (rc != COLL_OK) break;
                COLL_CHECK_EQ(run(&q, progress), COLL_OK);
                vcheck(r, p, VN, 1, "v form with displs as prepared");
                vfill(r, p, VN);
                vdispls[r][p - 1] = (size_t)VBIG * MAXP;     /* far past dst */
                COLL_CHECK_EQ(run(&q, progress), COLL_ERR_INVAL);
                vcheck(r, p, VN, 0, "displs changed under a prepared request");
                a.displs = NULL;
            }
            COLL_CHECK_EQ(coll_set_checks(c, checks), COLL_OK);
        }
    }
}

/* ---- 7. coll_start of a request still running ----------------------------------- */
static void start_running(const world *W, coll_comm *c, int r)
{
    coll_request q;
    coll_args a;
    int rc, k;
    if (W->p < 2 || W->rendezvous) return;    /* one rank ends at once; rendezvous: no progress */
    for (k = 0; k < 2; k++) {
        size_t i;
        for (i = 0; i < 6; i++) sbuf[r][i] = val(k, r, (int)i);
        args(&a, COLL_ALLREDUCE, sbuf[r], dbuf[r], 6, COLL_SUM, 0, COLL_ALGO_AUTO);
        rc = coll_start(&q, c, &a);
        COLL_CHECK_EQ(rc, COLL_OK);
        if (rc != COLL_OK) return;
        rc = k ? coll_prepare(&q, c, &a) : coll_start(&q, c, &a);     /* still running */
        COLL_CHECK_MSG(rc == COLL_ERR_INVAL, "p=%d rank %d: %s of a running request gave %d, not COLL_ERR_INVAL",
                       W->p, r, k ? "coll_prepare" : "coll_start", rc);
        while ((rc = coll_progress(&q)) == COLL_AGAIN) { }
        COLL_CHECK_MSG(rc == COLL_OK, "p=%d rank %d: the running request after the refused start: %d (%s)",
                       W->p, r, rc, coll_last_error(c));
        if (rc == COLL_OK) check_allreduce(W, r, k, dbuf[r], 6, "the request a second start left running");
    }
}

static int rank_main(int r, void *arg)
{
    world *W = (world *)arg;
    coll_port port = W->rendezvous ? coll_rendezvous_port(&W->w, r) : coll_threads_port(&W->w, r);
    coll_comm c;
    unsigned checks[3] = {0, COLL_CHECK_CALLS, COLL_CHECK_CALLS | COLL_CHECK_CRC};
    int m;
    if (coll_init(&c, r, W->p, &port, scratch[r], sizeof scratch[r]) != COLL_OK) return -1;
    for (m = 0; m < 3; m++) {               /* every check setting */
        COLL_CHECK_EQ(coll_set_checks(&c, checks[m]), COLL_OK);
        runs(W, &c, r);
    }
    COLL_CHECK_EQ(coll_set_checks(&c, COLL_CHECK_CALLS), COLL_OK);
    checks_on(W, &c, r);
    refusal(W, &c, r);
    misuse(W, &c, r);
    same_call(W, &c, r);
    counts_changed(W, &c, r);
    start_running(W, &c, r);
    return 0;
}

int main(void)
{
    static const int ps[] = {1, 2, 3, 4, 7};
    static world W;
    size_t i;
    int rv;
    for (i = 0; i < sizeof ps / sizeof ps[0]; i++)
        for (rv = 0; rv < 2; rv++) {
            memset(&W, 0, sizeof W);
            W.p = ps[i]; W.rendezvous = rv;
            coll_threads_init(&W.w, W.p, 5000);
            COLL_CHECK_MSG(coll_threads_run(&W.w, rank_main, &W) == 0, "p=%d%s: a rank failed to start",
                           W.p, rv ? " rendezvous" : "");
            coll_threads_destroy(&W.w);
        }
    return coll_test_summary("persistent");
}
