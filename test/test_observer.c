/* test_observer.c - the observer: each call's turn and end and each
   message, told as they happen (coll_set_observer).

   Over the threads port at 3, 4 and 7 ranks, call checks off and on, for
   all-reduce (ring, recursive doubling, tree, Swing), broadcast (binomial),
   all-gather (ring) and all-to-all (pairwise), every rank's events are
   checked against what the schedule says, counted independently through
   coll_describe:
     - CALL first, with the call's number, collective and algorithm; END
       last, result COLL_OK; nothing outside them but for nothing;
     - every POST completed by one DONE of the same direction, peer and
       handle, result COLL_OK, none left open;
     - per schedule step k (event step k + 1): the sends go to
       describe(k).send_to and their bytes add up to its send_bytes, the
       receives likewise; checks off: no message before step 1; checks
       on: the call check's messages in step 0, and steps 1.. as off;
   and the results are right. Then: fn NULL stops the events, and the
   port is the one before (a call still runs right); a blocking-only port
   (send/recv alone) tells each message with handle -1.
   RUN  make test-observer */
#include "../ports/coll_threads.h"       /* first: it asks for POSIX.1-2008 */
#define COLL_IMPLEMENTATION
#include "../coll.h"
#define COLL_THREADS_IMPLEMENTATION
#include "../ports/coll_threads.h"
#include "coll_test.h"

#include <stdio.h>
#include <string.h>

enum { PMAX = 7, N = 1000, EMAX = 4096, SMAX = 64 };

typedef struct log {
    coll_event e[EMAX];
    int n;
} log_t;

static log_t L[PMAX];
static coll_threads W;
static double scratch[PMAX][2048];
static float src[PMAX][N * PMAX], dst[PMAX][N * PMAX];
static int P, checks, blocking_only;

static void observe(void *ctx, const coll_event *e)
{
    log_t *l = (log_t *)ctx;
    if (l->n < EMAX) l->e[l->n] = *e;
    l->n++;
}

static int bsend(void *ctx, int peer, const void *b, size_t n)
{
    coll_port *p = (coll_port *)ctx;
    return p->send(p->ctx, peer, b, n);
}
static int brecv(void *ctx, int peer, void *b, size_t n)
{
    coll_port *p = (coll_port *)ctx;
    return p->recv(p->ctx, peer, b, n);
}

/* The events of one call on rank r, against its schedule. */
static void check_call(coll_comm *c, int r, const coll_args *a, uint32_t seq)
{
    const log_t *l = &L[r];
    size_t sbytes[SMAX], rbytes[SMAX];
    int open_s = 0, open_r = 0, i, k, steps = 0, pre = 0;
    coll_xfer x;
    memset(sbytes, 0, sizeof sbytes);
    memset(rbytes, 0, sizeof rbytes);
    COLL_CHECK_MSG(l->n >= 2 && l->n <= EMAX, "rank %d: %d events", r, l->n);
    if (l->n < 2 || l->n > EMAX) return;
    COLL_CHECK_MSG(l->e[0].what == COLL_EV_CALL && l->e[0].seq == seq && l->e[0].kind == a->kind,
                   "rank %d: first event %d seq %u kind %d", r, l->e[0].what, l->e[0].seq, (int)l->e[0].kind);
    COLL_CHECK_MSG(l->e[l->n - 1].what == COLL_EV_END && l->e[l->n - 1].result == COLL_OK,
                   "rank %d: last event %d result %d", r, l->e[l->n - 1].what, l->e[l->n - 1].result);
    for (i = 1; i < l->n - 1; i++) {
        const coll_event *e = &l->e[i];
        COLL_CHECK_MSG(e->seq == seq, "rank %d event %d: seq %u", r, i, e->seq);
        COLL_CHECK_MSG(e->what == COLL_EV_POST || e->what == COLL_EV_DONE, "rank %d event %d: what %d", r, i, e->what);
        COLL_CHECK_MSG(e->step >= 0 && e->step < SMAX, "rank %d event %d: step %d", r, i, e->step);
        if (e->step < 0 || e->step >= SMAX) continue;
        if (e->what == COLL_EV_POST) {
            int j, done = 0;
            (e->send ? &open_s : &open_r)[0]++;
            if (e->step == 0) pre++;
            else if (e->send) sbytes[e->step] += e->bytes;
            else rbytes[e->step] += e->bytes;
            if (e->step > steps) steps = e->step;
            if (e->step > 0) {
                COLL_CHECK_MSG(coll_describe(c, a, e->step - 1, &x) == 1, "rank %d: no step %d", r, e->step - 1);
                COLL_CHECK_MSG(e->peer == (e->send ? x.send_to : x.recv_from), "rank %d step %d: %s peer %d, not %d",
                               r, e->step, e->send ? "send" : "recv", e->peer, e->send ? x.send_to : x.recv_from);
            }
            for (j = i + 1; j < l->n - 1 && !done; j++) {   /* its DONE */
                const coll_event *d = &l->e[j];
                if (d->what == COLL_EV_DONE && d->send == e->send && d->peer == e->peer && d->handle == e->handle)
                    done = 1 + (d->result == COLL_OK);
            }
            COLL_CHECK_MSG(done == 2, "rank %d event %d: POST without a good DONE (%d)", r, i, done);
            if (blocking_only) COLL_CHECK_MSG(e->handle == -1, "rank %d: handle %d on a blocking port", r, e->handle);
        } else {
            (e->send ? &open_s : &open_r)[0]--;
        }
    }
    COLL_CHECK_MSG(open_s == 0 && open_r == 0, "rank %d: %d sends, %d receives left open", r, open_s, open_r);
    COLL_CHECK_MSG(checks ? pre > 0 : pre == 0, "rank %d: %d messages before the schedule, checks %d", r, pre, checks);
    for (k = 0; coll_describe(c, a, k, &x) == 1 && k + 1 < SMAX; k++) {
        COLL_CHECK_MSG(sbytes[k + 1] == x.send_bytes, "rank %d step %d: sent %zu bytes, schedule %zu", r, k + 1,
                       sbytes[k + 1], x.send_bytes);
        COLL_CHECK_MSG(rbytes[k + 1] == x.recv_bytes, "rank %d step %d: received %zu bytes, schedule %zu", r, k + 1,
                       rbytes[k + 1], x.recv_bytes);
    }
    COLL_CHECK_MSG(steps <= k, "rank %d: messages in step %d of %d", r, steps, k);
}

static int rank_main(int r, void *arg)
{
    static const struct { coll_kind kind; coll_algo algo; } calls[] = {
        {COLL_ALLREDUCE, COLL_ALGO_RING}, {COLL_ALLREDUCE, COLL_ALGO_RECURSIVE_DOUBLING},
        {COLL_ALLREDUCE, COLL_ALGO_TREE}, {COLL_ALLREDUCE, COLL_ALGO_SWING},
        {COLL_BROADCAST, COLL_ALGO_BINOMIAL}, {COLL_ALLGATHER, COLL_ALGO_RING},
        {COLL_ALLTOALL, COLL_ALGO_PAIRWISE},
    };
    coll_port tp = coll_threads_port(&W, r), port;
    coll_comm c;
    coll_args a;
    int k, j, rc;
    size_t i;
    (void)arg;
    port = tp;
    if (blocking_only) {
        memset(&port, 0, sizeof port);
        port.ctx = &tp; port.send = bsend; port.recv = brecv;
    }
    rc = coll_init(&c, r, P, &port, scratch[r], sizeof scratch[r]);
    if (rc != COLL_OK) { COLL_CHECK_MSG(0, "coll_init %d", rc); return 1; }
    coll_set_checks(&c, checks ? COLL_CHECK_CALLS : 0);
    COLL_CHECK_EQ(coll_set_observer(&c, observe, &L[r]), COLL_OK);
    for (k = 0; k < (int)(sizeof calls / sizeof calls[0]); k++) {
        memset(&a, 0, sizeof a);
        a.kind = calls[k].kind; a.algo = calls[k].algo;
        a.count = N; a.dtype = COLL_FLOAT32; a.op = COLL_SUM; a.root = P - 1;
        for (i = 0; i < (size_t)N * P; i++) src[r][i] = (float)(r + 1 + (int)(i % 5));
        a.src = a.kind == COLL_BROADCAST ? (void *)dst[r] : (void *)src[r];
        a.dst = dst[r];
        if (a.kind == COLL_BROADCAST)
            for (i = 0; i < N; i++) dst[r][i] = r == P - 1 ? (float)(i % 9) : -1.0f;
        L[r].n = 0;
        rc = coll_run(&c, &a);
        COLL_CHECK_MSG(rc == COLL_OK, "rank %d call %d: %d", r, k, rc);
        for (i = 0; rc == COLL_OK && i < N; i++) {
            float want = 0;
            if (a.kind == COLL_ALLREDUCE)
                for (j = 0; j < P; j++) want += (float)(j + 1 + (int)(i % 5));
            else if (a.kind == COLL_BROADCAST) want = (float)(i % 9);
            else if (a.kind == COLL_ALLGATHER) want = (float)(1 + (int)(i % 5));     /* block 0: rank 0's */
            else want = (float)(1 + (int)((r * N + i) % 5));                         /* block 0 from rank 0 */
            if (dst[r][i] != want) { COLL_CHECK_MSG(0, "rank %d call %d: [%zu] = %g, not %g", r, k, i, (double)dst[r][i], (double)want); break; }
        }
        check_call(&c, r, &a, (uint32_t)(k + 1));
    }
    /* off: no more events, and the port is the one before */
    COLL_CHECK_EQ(coll_set_observer(&c, NULL, NULL), COLL_OK);
    COLL_CHECK(c.port.send == port.send && c.port.ctx == port.ctx);
    L[r].n = 0;
    rc = coll_allreduce(&c, src[r], dst[r], 10, COLL_FLOAT32, COLL_SUM, COLL_ALGO_RING);
    COLL_CHECK_EQ(rc, COLL_OK);
    COLL_CHECK_MSG(L[r].n == 0, "rank %d: %d events after off", r, L[r].n);
    COLL_CHECK_EQ(coll_set_observer(NULL, observe, NULL), COLL_ERR_INVAL);
    return 0;
}

int main(void)
{
    static const int ps[] = {3, 4, 7};
    int i;
    for (blocking_only = 0; blocking_only < 2; blocking_only++)
        for (checks = 0; checks < 2; checks++)
            for (i = 0; i < 3; i++) {
                P = ps[i];
                if (coll_threads_init(&W, P, 5000) != COLL_OK) return 1;
                COLL_CHECK_EQ(coll_threads_run(&W, rank_main, NULL), 0);
                coll_threads_destroy(&W);
            }
    return coll_test_summary("observer");
}
