/* test_shrink.c - one rank of 4-16 dies mid-run over the threads port; the
   survivors name it, shrink and go on.

   Each trial draws a world of P ranks (4..16), a victim, a way to fail and
   a moment: "kill" (the victim's thread exits inside its k-th port call of
   call F, as a crashed process would), "stop" (it blocks there until the
   trial ends, as a stopped one would) or "silence" (it never makes call F).
   Every rank runs all-reduces of a drawn size and algorithm over integer-
   valued floats (exact sums), checked against a plain loop while they
   succeed. Then every survivor must:
     - end one of calls F, F + 1 in an error, within 4 deadlines of the
       port, with a coll_last_error that names the victim ("rank V");
     - coll_comm_shrink: COLL_OK, P - 1 ranks, members = every rank but
       the victim, in order;
     - run an all-reduce and a broadcast on the new communicator, right on
       every survivor against a plain loop.
   Before the trials: the port's answer on whom a wait ended at outlives
   the waiter's renews (a survivor late to its error asks it of a rank
   that already shrank) and the wake-up of every waiter (a rank between
   two waits when the world failed).
   SHRINK_TRIALS (200), SHRINK_SEED (printed) and SHRINK_MS (the port's
   deadline, 100) change the run.
   RUN  make test-shrink */
#include "../ports/coll_threads.h"       /* first: it asks for POSIX.1-2008 */
#define COLL_IMPLEMENTATION
#include "../coll.h"
#define COLL_THREADS_IMPLEMENTATION
#include "../ports/coll_threads.h"
#include "coll_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { PMAX = 16, NMAX = 2048, CALLS = 6, KILL = 0, STOP = 1, SILENCE = 2 };
static const char *const mode_name[] = {"kill", "stop", "silence"};

typedef struct trial {
    int p, victim, mode, fail_call, fail_op;
    size_t count[CALLS];
    coll_algo algo[CALLS];
    unsigned deadline_ms;
} trial;

typedef struct rank_state {
    coll_port inner;           /* the threads port of this rank             */
    int rank, call, ops;       /* the call it is in, its port calls in it   */
} rank_state;

static coll_threads W;
static trial T;
static rank_state R[PMAX];
static coll_comm comm[PMAX], out[PMAX];
static coll_subport sub[PMAX];
static int members[PMAX][2 * PMAX];
static double scratch[PMAX][512], scratch2[PMAX][512];
static float src[PMAX][NMAX], dst[PMAX][NMAX];
static pthread_mutex_t end_m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t end_cv = PTHREAD_COND_INITIALIZER;
static int ended, done, died_call;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void wait_end(void)
{
    pthread_mutex_lock(&end_m);
    while (!ended) pthread_cond_wait(&end_cv, &end_m);
    pthread_mutex_unlock(&end_m);
}

/* The victim's port calls: at op fail_op of call fail_call it dies or
   stops (the thread never returns into coll.h). */
static void maybe_fail(rank_state *s)
{
    if (s->rank != T.victim || T.mode == SILENCE || s->call < T.fail_call) return;
    if (s->ops++ != T.fail_op) return;          /* (counted on into the next calls) */
    __atomic_store_n(&died_call, s->call, __ATOMIC_RELEASE);
    if (T.mode == STOP) wait_end();
    pthread_exit(NULL);
}
static int w_send(void *ctx, int peer, const void *buf, size_t n)
{
    rank_state *s = (rank_state *)ctx;
    maybe_fail(s);
    return s->inner.send(s->inner.ctx, peer, buf, n);
}
static int w_recv(void *ctx, int peer, void *buf, size_t n)
{
    rank_state *s = (rank_state *)ctx;
    maybe_fail(s);
    return s->inner.recv(s->inner.ctx, peer, buf, n);
}
static int w_isend(void *ctx, int peer, const void *buf, size_t n, int *h)
{
    rank_state *s = (rank_state *)ctx;
    maybe_fail(s);
    return s->inner.isend(s->inner.ctx, peer, buf, n, h);
}
static int w_irecv(void *ctx, int peer, void *buf, size_t n, int *h)
{
    rank_state *s = (rank_state *)ctx;
    maybe_fail(s);
    return s->inner.irecv(s->inner.ctx, peer, buf, n, h);
}
static int w_wait(void *ctx, int h, int block)
{
    rank_state *s = (rank_state *)ctx;
    if (block) maybe_fail(s);
    return s->inner.wait(s->inner.ctx, h, block);
}
static void w_abort(void *ctx, int code)
{
    rank_state *s = (rank_state *)ctx;
    s->inner.abort(s->inner.ctx, code);
}
static int w_missing(void *ctx, int peer)
{
    rank_state *s = (rank_state *)ctx;
    return s->inner.missing(s->inner.ctx, peer);
}
static int w_renew(void *ctx, uint32_t e)
{
    rank_state *s = (rank_state *)ctx;
    return s->inner.renew(s->inner.ctx, e);
}

static float value(int r, size_t i, int call) { return (float)((r + 1) * (int)(i % 7 + 1) + call % 5); }

/* Call k: every rank's all-reduce of T.count[k] floats, checked. */
static int one_call(coll_comm *c, int r, int k)
{
    size_t i, n = T.count[k];
    int rc, j;
    for (i = 0; i < n; i++) src[r][i] = value(r, i, k);
    rc = coll_allreduce(c, src[r], dst[r], n, COLL_FLOAT32, COLL_SUM, T.algo[k]);
    if (rc != COLL_OK) return rc;
    for (i = 0; i < n; i++) {
        float want = 0;
        for (j = 0; j < T.p; j++) want += value(j, i, k);
        if (dst[r][i] != want) {
            COLL_CHECK_MSG(0, "rank %d call %d: [%zu] = %g, not %g", r, k, i, (double)dst[r][i], (double)want);
            return COLL_OK;
        }
    }
    return COLL_OK;
}

/* On the shrunk communicator: an all-reduce and a broadcast, checked. */
static void after(coll_comm *o, int r)
{
    int n = coll_size(o), me = coll_rank(o), j, rc;
    size_t i, cnt = T.count[0] + 5;
    if (cnt > NMAX) cnt = NMAX;
    for (i = 0; i < cnt; i++) src[r][i] = value(r, i, 9);
    rc = coll_allreduce(o, src[r], dst[r], cnt, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
    COLL_CHECK_MSG(rc == COLL_OK, "rank %d: all-reduce after shrink: %d (%s)", r, rc, coll_last_error(o));
    if (rc == COLL_OK)
        for (i = 0; i < cnt; i++) {
            float want = 0;
            for (j = 0; j < n; j++) want += value(members[r][j], i, 9);
            if (dst[r][i] != want) {
                COLL_CHECK_MSG(0, "rank %d after shrink: [%zu] = %g, not %g", r, i, (double)dst[r][i], (double)want);
                break;
            }
        }
    for (i = 0; i < 64; i++) dst[r][i] = me == n - 1 ? (float)(i * 3 + 1) : -1.0f;
    rc = coll_broadcast(o, dst[r], 64, COLL_FLOAT32, n - 1, COLL_ALGO_AUTO);
    COLL_CHECK_MSG(rc == COLL_OK, "rank %d: broadcast after shrink: %d (%s)", r, rc, coll_last_error(o));
    for (i = 0; rc == COLL_OK && i < 64; i++)
        if (dst[r][i] != (float)(i * 3 + 1)) {
            COLL_CHECK_MSG(0, "rank %d: broadcast after shrink: [%zu] = %g", r, i, (double)dst[r][i]);
            break;
        }
}

static int rank_main(int r, void *arg)
{
    rank_state *s = &R[r];
    coll_port port;
    coll_comm *c = &comm[r];
    char name[16];
    double t0;
    int k, rc = COLL_OK, j, n;
    (void)arg;
    s->inner = coll_threads_port(&W, r);
    s->rank = r;
    s->call = -1;
    s->ops = 0;
    memset(&port, 0, sizeof port);
    port.ctx = s;
    port.send = w_send; port.recv = w_recv;
    port.isend = w_isend; port.irecv = w_irecv; port.wait = w_wait;
    port.abort = w_abort; port.missing = w_missing; port.renew = w_renew;
    if (coll_init(c, r, T.p, &port, scratch[r], sizeof scratch[r]) != COLL_OK) {
        COLL_CHECK_MSG(0, "rank %d: coll_init", r);
        __atomic_add_fetch(&done, 1, __ATOMIC_ACQ_REL);
        return 1;
    }
    for (k = 0; k < CALLS; k++) {
        if (r == T.victim && T.mode == SILENCE && k == T.fail_call) {
            __atomic_store_n(&died_call, k, __ATOMIC_RELEASE);
            wait_end();
            return 0;
        }
        s->call = k;
        t0 = now_s();
        rc = one_call(c, r, k);
        if (rc != COLL_OK) break;
    }
    if (r == T.victim) {                        /* a call it should have died in ran */
        COLL_CHECK_MSG(0, "victim %d lived through call %d (op %d, %d ops)", r, T.fail_call, T.fail_op, s->ops);
        wait_end();
        return 1;
    }
    COLL_CHECK_MSG(rc != COLL_OK, "rank %d: every call succeeded without rank %d", r, T.victim);
    j = __atomic_load_n(&died_call, __ATOMIC_ACQUIRE);
    COLL_CHECK_MSG(k == j || k == j + 1, "rank %d: failed at call %d, the victim stopped in %d", r, k, j);
    COLL_CHECK_MSG(now_s() - t0 < 4e-3 * T.deadline_ms, "rank %d: the failure took %.3f s", r, now_s() - t0);
    snprintf(name, sizeof name, "rank %d,", T.victim);
    COLL_CHECK_MSG(strstr(coll_last_error(c), name) != NULL, "rank %d: \"%s\" does not name rank %d",
                   r, coll_last_error(c), T.victim);
    rc = coll_comm_shrink(&out[r], &sub[r], c, members[r], scratch2[r], sizeof scratch2[r]);
    COLL_CHECK_MSG(rc == COLL_OK, "rank %d: shrink: %d (%s)", r, rc, coll_last_error(c));
    if (rc != COLL_OK) { __atomic_add_fetch(&done, 1, __ATOMIC_ACQ_REL); return 1; }
    n = coll_size(&out[r]);
    COLL_CHECK_MSG(n == T.p - 1, "rank %d: %d ranks after shrink, not %d", r, n, T.p - 1);
    for (j = 0; j < n && j < T.p - 1; j++)
        COLL_CHECK_MSG(members[r][j] == (j < T.victim ? j : j + 1), "rank %d: member %d is %d", r, j, members[r][j]);
    COLL_CHECK_MSG(coll_rank(&out[r]) == (r < T.victim ? r : r - 1), "rank %d: new rank %d", r, coll_rank(&out[r]));
    if (n == T.p - 1) after(&out[r], r);
    __atomic_add_fetch(&done, 1, __ATOMIC_ACQ_REL);
    return 0;
}

/* The port's word on whom a failure came from outlives a shrink: rank 1
   gives up on rank 2 (which never sends), renews twice as a shrink does
   and gives up once more in between; rank 0, still in epoch 0, must
   still hear "rank 2" from missing(1), and after four more renews of
   rank 1's and a deadline in epoch 4, which take the port's record of
   epoch 0, no more than "rank 1". */
static int late_flag;
static int late_main(int r, void *arg)
{
    coll_port pt = coll_threads_port(&W, r);
    char b[8];
    int e;
    (void)arg;
    if (r == 1) {
        COLL_CHECK_MSG(pt.recv(pt.ctx, 2, b, sizeof b) != COLL_OK, "late: a receive from a rank that never sends");
        COLL_CHECK(pt.renew(pt.ctx, 1) == COLL_OK);
        COLL_CHECK_MSG(pt.recv(pt.ctx, 0, b, sizeof b) != COLL_OK, "late: a receive in epoch 1 from rank 0");
        COLL_CHECK(pt.renew(pt.ctx, 2) == COLL_OK);
        __atomic_store_n(&late_flag, 1, __ATOMIC_RELEASE);
        while (__atomic_load_n(&late_flag, __ATOMIC_ACQUIRE) != 2) sched_yield();
        for (e = 3; e <= 6; e++) {             /* epoch 4's deadline takes epoch 0's slots */
            COLL_CHECK(pt.renew(pt.ctx, (uint32_t)e) == COLL_OK);
            if (e == 4) COLL_CHECK_MSG(pt.recv(pt.ctx, 0, b, sizeof b) != COLL_OK, "late: a receive in epoch 4");
        }
        __atomic_store_n(&late_flag, 3, __ATOMIC_RELEASE);
    } else if (r == 0) {
        while (__atomic_load_n(&late_flag, __ATOMIC_ACQUIRE) != 1) sched_yield();
        e = pt.missing(pt.ctx, 1);
        COLL_CHECK_MSG(e == 2, "late: missing(1) after rank 1's two renews is %d, not 2", e);
        __atomic_store_n(&late_flag, 2, __ATOMIC_RELEASE);
        while (__atomic_load_n(&late_flag, __ATOMIC_ACQUIRE) != 3) sched_yield();
        e = pt.missing(pt.ctx, 1);
        COLL_CHECK_MSG(e == 1, "late: missing(1) after six renews is %d, not 1", e);
    }
    return 0;
}

/* One of the checks above: its own world of p ranks, deadline ms. */
static void world_check(const char *what, int p, unsigned ms, int (*fn)(int, void *))
{
    if (coll_threads_init(&W, p, ms) != COLL_OK) { COLL_CHECK_MSG(0, "%s: coll_threads_init", what); return; }
    COLL_CHECK_MSG(coll_threads_run(&W, fn, NULL) == 0, "%s: a rank failed", what);
    coll_threads_destroy(&W);
}

/* The name outlives the wake-up: rank 1 waits for rank 3 (which never
   sends) and runs out first; rank 2 has just finished a wait and waits
   for nobody; rank 0, waiting for rank 2, is woken by rank 1's failure.
   Its missing(2) must say rank 3 - the end of the chain when the first
   deadline ran out - not rank 2, where the chain ends once rank 2's
   wait is over. */
static int wake_flag;
static int wake_main(int r, void *arg)
{
    coll_port pt = coll_threads_port(&W, r);
    char b[8] = {0};
    int m;
    (void)arg;
    if (r == 1) {
        int h;
        COLL_CHECK(pt.irecv(pt.ctx, 3, b, sizeof b, &h) == COLL_OK);
        COLL_CHECK(pt.wait(pt.ctx, h, 0) == COLL_AGAIN);   /* waiting for rank 3 now */
        __atomic_store_n(&wake_flag, 1, __ATOMIC_RELEASE);
        COLL_CHECK_MSG(pt.wait(pt.ctx, h, 1) == COLL_ERR_TIMEOUT, "wake: rank 1's wait for rank 3");
    } else if (r == 2) {
        COLL_CHECK(pt.send(pt.ctx, 0, b, sizeof b) == COLL_OK);
        while (__atomic_load_n(&wake_flag, __ATOMIC_ACQUIRE) < 2) sched_yield();
    } else if (r == 0) {
        COLL_CHECK(pt.recv(pt.ctx, 2, b, sizeof b) == COLL_OK);
        struct timespec later = {0, 60 * 1000 * 1000};   /* rank 1's deadline first, by far */
        while (__atomic_load_n(&wake_flag, __ATOMIC_ACQUIRE) < 1) sched_yield();
        nanosleep(&later, NULL);
        COLL_CHECK_MSG(pt.recv(pt.ctx, 2, b, sizeof b) != COLL_OK, "wake: rank 0's second receive from rank 2");
        m = pt.missing(pt.ctx, 2);
        COLL_CHECK_MSG(m == 3, "wake: missing(2) after the world failed is %d, not 3", m);
        __atomic_store_n(&wake_flag, 2, __ATOMIC_RELEASE);
    } else {
        while (__atomic_load_n(&wake_flag, __ATOMIC_ACQUIRE) < 2) sched_yield();
    }
    return 0;
}

/* The world's threads, run beside main, which lets the victim go once
   the survivors are back. */
typedef struct runner { int rc; } runner;
static void *run_world(void *arg)
{
    ((runner *)arg)->rc = coll_threads_run(&W, rank_main, NULL);
    return NULL;
}

static unsigned long long rng;
static unsigned draw(unsigned n)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)(rng >> 33) % n;
}

int main(void)
{
    const char *e;
    int trials = 200, t, k;
    unsigned long long seed = (unsigned long long)time(NULL);
    unsigned ms = 100;
    double t0 = now_s(), worst = 0;
    static const coll_algo algos[] = {COLL_ALGO_AUTO, COLL_ALGO_RING, COLL_ALGO_RECURSIVE_DOUBLING,
                                      COLL_ALGO_TREE, COLL_ALGO_RABENSEIFNER};
    if ((e = getenv("SHRINK_TRIALS")) != NULL) trials = atoi(e);
    if ((e = getenv("SHRINK_SEED")) != NULL) seed = strtoull(e, NULL, 0);
    if ((e = getenv("SHRINK_MS")) != NULL) ms = (unsigned)atoi(e);
    printf("shrink (threads): %d trials, SHRINK_SEED=%llu, deadline %u ms\n", trials, seed, ms);
    world_check("late", 3, 50, late_main);
    world_check("wake", 4, 200, wake_main);
    rng = seed;
    for (t = 0; t < trials; t++) {
        pthread_t th;
        runner run = {0};
        double ts = now_s();
        unsigned long before = coll_test_failed;
        memset(&T, 0, sizeof T);
        T.p = 4 + (int)draw(PMAX - 3);
        T.victim = (int)draw((unsigned)T.p);
        T.mode = (int)draw(3);
        T.fail_call = (int)draw(3);
        T.fail_op = (int)draw(12);
        T.deadline_ms = ms;
        for (k = 0; k < CALLS; k++) {
            T.count[k] = 1 + draw(draw(2) ? 64 : NMAX);
            T.algo[k] = algos[draw(sizeof algos / sizeof algos[0])];
        }
        ended = 0;
        done = 0;
        died_call = -1;
        if (coll_threads_init(&W, T.p, ms) != COLL_OK) { COLL_CHECK_MSG(0, "coll_threads_init"); break; }
        pthread_create(&th, NULL, run_world, &run);
        /* the survivors come back (each counts itself done) within 20
           deadlines, or the trial hangs: then the world is aborted */
        while (__atomic_load_n(&done, __ATOMIC_ACQUIRE) < T.p - 1 && now_s() - ts < 20e-3 * ms + 5) {
            struct timespec nap = {0, 2 * 1000 * 1000};
            nanosleep(&nap, NULL);
        }
        COLL_CHECK_MSG(__atomic_load_n(&done, __ATOMIC_ACQUIRE) == T.p - 1, "trial %d: %d of %d survivors came back",
                       t, __atomic_load_n(&done, __ATOMIC_ACQUIRE), T.p - 1);
        if (__atomic_load_n(&done, __ATOMIC_ACQUIRE) < T.p - 1) coll_threads_abort(&W);
        pthread_mutex_lock(&end_m);
        ended = 1;
        pthread_cond_broadcast(&end_cv);
        pthread_mutex_unlock(&end_m);
        pthread_join(th, NULL);
        coll_threads_destroy(&W);
        if (now_s() - ts > worst) worst = now_s() - ts;
        if (coll_test_failed != before)
            printf("  trial %d failed: %d ranks, victim %d, %s at call %d op %d\n", t, T.p, T.victim,
                   mode_name[T.mode], T.fail_call, T.fail_op);
    }
    printf("  %d trials in %.1f s (%.2f s a trial, worst %.2f s)\n", trials, now_s() - t0,
           (now_s() - t0) / (trials ? trials : 1), worst);
    return coll_test_summary("shrink");
}
