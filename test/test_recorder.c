/* test_recorder.c - the flight recorder and a failure's figures.

   Over the threads port at 4 ranks, checks on and off:
     1. a ring of 4 entries over 6 calls (all-reduce ring, broadcast,
        barrier, all-gather, all-reduce AUTO, reduce): the ring holds calls
        3..6, each with the collective, the algorithm that ran, the bytes,
        result COLL_OK, the steps its schedule has (coll_describe counts
        them independently), peer -1, start < end by a clock that counts
        its readings; coll_dump writes them as 4 lines, oldest first, each
        naming its call number and collective, and stops at a writer's
        nonzero answer;
     2. a rank that never calls (rank 2 of 4, a 300 ms deadline): every
        other rank's all-reduce fails within the deadline, never COLL_OK;
        every survivor names rank 2 in coll_last_error ("rank 2, call N,
        step S"): rank 3, which receives from rank 2 first, directly (and
        in its entry: peer 2), the others through the chain of waits the
        port reports ("..., via rank Q"); every survivor's entry holds the
        failure;
     3. off: coll_set_recorder(c, NULL, ...) records nothing more; bad
        arguments are COLL_ERR_INVAL;
     4. revoke: rank 0 revokes while ranks 1-3 wait in an all-reduce (a
        5 s deadline): theirs end in an error within 2 s, rank 0's next
        call is COLL_ERR_BROKEN and says "revoked", and a request started
        on rank 1 before the revoke fails too.
   RUN  make test-recorder */
#include "../ports/coll_threads.h"       /* first: it asks for POSIX.1-2008 */
#define COLL_IMPLEMENTATION
#include "../coll.h"
#define COLL_THREADS_IMPLEMENTATION
#include "../ports/coll_threads.h"
#include "coll_test.h"
#include "test_clock.h"

#include <stdio.h>
#include <string.h>

enum { P = 4, RING = 4, N = 300, SILENT = 2 };

typedef struct world { coll_threads w; unsigned checks; int silent; } world;
static double scratch[P][1024];
static float src[P][N * P], dst[P][N * P];
static coll_record rec[P][RING];
static uint64_t clk[P];
static uint64_t tick(void *ctx) { return ++*(uint64_t *)ctx; }

typedef struct sink { char text[4096]; size_t n; int lines, stop_after; } sink;
static int sink_write(void *ctx, const char *t, size_t n)
{
    sink *k = (sink *)ctx;
    if (k->stop_after && k->lines == k->stop_after) return 7;
    if (k->n + n < sizeof k->text) { memcpy(k->text + k->n, t, n); k->n += n; k->text[k->n] = 0; }
    k->lines++;
    return 0;
}

/* the steps of a call's schedule, counted through coll_describe */
static int steps_of(coll_comm *c, const coll_args *a)
{
    coll_xfer x;
    int s = 0;
    while (coll_describe(c, a, s, &x) == 1) s++;
    return s;
}

static void six_calls(const world *W, coll_comm *c, int r)
{
    static const size_t cnt[P] = {3, 1, 4, 1};
    coll_args a[6];
    int k, rc;
    memset(a, 0, sizeof a);
    a[0].kind = COLL_ALLREDUCE; a[0].algo = COLL_ALGO_RING; a[0].count = N;
    a[1].kind = COLL_BROADCAST; a[1].algo = COLL_ALGO_BINOMIAL; a[1].count = 17; a[1].root = 1;
    a[2].kind = COLL_BARRIER;
    a[3].kind = COLL_ALLGATHERV; a[3].counts = cnt;
    a[4].kind = COLL_ALLREDUCE; a[4].algo = COLL_ALGO_AUTO; a[4].count = 5;
    a[5].kind = COLL_REDUCE; a[5].algo = COLL_ALGO_BINOMIAL; a[5].count = 40; a[5].root = 3;
    for (k = 0; k < 6; k++) {
        a[k].src = a[k].kind == COLL_BROADCAST ? (void *)dst[r] : (void *)src[r];
        a[k].dst = dst[r];
        a[k].dtype = COLL_FLOAT32; a[k].op = COLL_SUM;
        rc = coll_run(c, &a[k]);
        COLL_CHECK_MSG(rc == COLL_OK, "checks %u rank %d call %d: %d (%s)", W->checks, r, k, rc, coll_last_error(c));
    }
    for (k = 2; k < 6; k++) {             /* calls 3..6 are in the ring */
        const coll_record *e = &rec[r][k % RING];
        coll_args d = a[k];
        size_t es = a[k].kind == COLL_BARRIER ? 0 : 4, bytes;
        int want_steps;
        d.algo = coll_choose(c, &a[k]);
        want_steps = steps_of(c, &d);
        bytes = a[k].kind == COLL_ALLGATHERV ? 9 * es : a[k].count * es;
        COLL_CHECK_MSG(e->seq == (uint32_t)(k + 1) && e->kind == a[k].kind && e->algo == d.algo &&
                       e->bytes == bytes && e->result == COLL_OK && e->peer == -1 && e->start < e->end &&
                       (e->step == want_steps || (W->checks && e->step == 0 &&
                                                  (a[k].kind == COLL_BARRIER || a[k].count * es <= 32 ||
                                                   a[k].kind == COLL_ALLGATHERV))),
                       "checks %u rank %d entry of call %d: seq %u kind %d algo %d bytes %zu result %d peer %d "
                       "step %d (schedule %d) start %llu end %llu", W->checks, r, k + 1, (unsigned)e->seq,
                       (int)e->kind, (int)e->algo, e->bytes, e->result, e->peer, e->step, want_steps,
                       (unsigned long long)e->start, (unsigned long long)e->end);
        if (k > 2) COLL_CHECK(e->start > rec[r][(k - 1) % RING].end);
    }
    {
        sink k;
        char want[32];
        int i;
        memset(&k, 0, sizeof k);
        COLL_CHECK_EQ(coll_dump(c, sink_write, &k), COLL_OK);
        COLL_CHECK_EQ(k.lines, RING);
        for (i = 3; i <= 6; i++) {        /* oldest first */
            const char *at;
            snprintf(want, sizeof want, "call %d %s ", i, coll_kind_name(a[i - 1].kind));
            at = strstr(k.text, want);
            COLL_CHECK_MSG(at != NULL && (i == 3 || at > strstr(k.text, "call 3 ")), "dump lacks '%s' in order:\n%s", want, k.text);
        }
        COLL_CHECK(strstr(k.text, "result 0 ok\n") != NULL);
        memset(&k, 0, sizeof k);
        k.stop_after = 2;
        COLL_CHECK_EQ(coll_dump(c, sink_write, &k), 7);
        COLL_CHECK_EQ(k.lines, 2);
    }
}

static int rank_main(int r, void *arg)
{
    world *W = (world *)arg;
    coll_port port = coll_threads_port(&W->w, r);
    coll_comm c;
    int rc, i;
    for (i = 0; i < N * P; i++) src[r][i] = (float)(r + i % 7);
    if (coll_init(&c, r, P, &port, scratch[r], sizeof scratch[r]) != COLL_OK) return -1;
    COLL_CHECK_EQ(coll_set_checks(&c, W->checks), COLL_OK);
    clk[r] = 0;
    COLL_CHECK_EQ(coll_set_recorder(&c, rec[r], 0, tick, &clk[r]), COLL_ERR_INVAL);
    COLL_CHECK_EQ(coll_set_recorder(&c, rec[r], RING, tick, &clk[r]), COLL_OK);
    if (!W->silent) {
        six_calls(W, &c, r);
        COLL_CHECK_EQ(coll_set_recorder(&c, NULL, 0, NULL, NULL), COLL_OK);
        rc = coll_allreduce(&c, src[r], dst[r], 8, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
        COLL_CHECK_EQ(rc, COLL_OK);
        COLL_CHECK(rec[r][6 % RING].seq == 3);          /* off: nothing written */
        return 0;
    }
    if (W->silent == 2) {                 /* 4. revoke */
        double t0 = now_s(), dt;
        if (r == 0) {
            while (now_s() - t0 < 0.2) { }   /* the others are waiting by now */
            COLL_CHECK_EQ(coll_comm_revoke(&c), COLL_OK);
            rc = coll_allreduce(&c, src[r], dst[r], 8, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
            COLL_CHECK_MSG(rc == COLL_ERR_BROKEN && strstr(coll_last_error(&c), "revoked") != NULL,
                           "rank 0 after its revoke: %d (%s)", rc, coll_last_error(&c));
            return 0;
        }
        rc = coll_allreduce(&c, src[r], dst[r], N, COLL_FLOAT32, COLL_SUM, COLL_ALGO_RING);
        dt = now_s() - t0;
        COLL_CHECK_MSG(rc < 0 && dt < 2.0, "rank %d: revoked by rank 0: %d after %.2f s", r, rc, dt);
        rc = coll_allreduce(&c, src[r], dst[r], 8, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
        COLL_CHECK_MSG(rc < 0, "rank %d: the call after a revoke gave %d", r, rc);
        return 0;
    }
    /* 2. rank SILENT never calls */
    if (r == SILENT) return 0;
    {
        double t0 = now_s(), dt;
        const coll_record *e = &rec[r][0];
        char want[32];
        rc = coll_allreduce(&c, src[r], dst[r], N, COLL_FLOAT32, COLL_SUM, COLL_ALGO_RING);
        dt = now_s() - t0;
        COLL_CHECK_MSG(rc < 0, "checks %u rank %d: a world with a silent rank gave %d", W->checks, r, rc);
        COLL_CHECK_MSG(dt < 3.0, "checks %u rank %d: the failure took %.2f s (deadline 0.3 s)", W->checks, r, dt);
        COLL_CHECK_MSG(e->seq == 1 && e->result == rc, "rank %d: entry seq %u result %d", r, (unsigned)e->seq, e->result);
        printf("  rank %d never calls, checks %u: rank %d says %s: %s (%.2f s)\n", SILENT, W->checks, r,
               coll_result_str(rc), coll_last_error(&c), dt);
        snprintf(want, sizeof want, "rank %d, call 1, step ", SILENT);
        COLL_CHECK_MSG(strstr(coll_last_error(&c), want) != NULL, "checks %u rank %d: '%s' does not name rank %d",
                       W->checks, r, coll_last_error(&c), SILENT);
        if (r == (SILENT + 1) % P)          /* it waits for rank 2 itself */
            COLL_CHECK_MSG(e->peer == SILENT && !strstr(coll_last_error(&c), "via"),
                           "checks %u rank %d: peer %d, '%s'", W->checks, r, e->peer, coll_last_error(&c));
        else if (e->peer != SILENT)         /* it waited for a rank that waited for rank 2 */
            COLL_CHECK_MSG(strstr(coll_last_error(&c), "via rank ") != NULL, "checks %u rank %d: peer %d, '%s'",
                           W->checks, r, e->peer, coll_last_error(&c));
    }
    return 0;
}

int main(void)
{
    static world W;
    unsigned checks[2] = {0, COLL_CHECK_CALLS};
    int m, s;
    for (s = 0; s < 3; s++)
        for (m = 0; m < 2; m++) {
            memset(&W, 0, sizeof W);
            memset(rec, 0, sizeof rec);
            W.checks = checks[m]; W.silent = s;
            coll_threads_init(&W.w, P, s == 1 ? 300 : 5000);
            COLL_CHECK(coll_threads_run(&W.w, rank_main, &W) == 0);
            coll_threads_destroy(&W.w);
        }
    return coll_test_summary("recorder");
}
