/* test_identity.c - a message is taken only by the call it belongs to.

   Three ways a rank could take another call's bytes for its own and return
   COLL_OK with wrong data, each checked against a plain loop on every rank:
     1. two communicators over one port (coll_init twice on the same
        threads port, both ranks alike): called in crossed order on
        different ranks, and driven by coll_progress in crossed order; on
        the threads port and on the synchronous (rendezvous) one. Every
        call must return COLL_OK with the right sums or an error - and
        crossed calls must not pass: the port's attach numbers the
        communicators, and the number enters every call's signature;
     2. a replaying link (COLL_CHECK_CRC): rank 0's messages of a call
        after its first agreement frame are replaced by the same messages
        of the previous call, CRCs and closing frame included. Rank 1 must
        not return COLL_OK: the CRC is seeded with the call's signature
        and the closing frames' signatures are compared;
     3. coll_scratch_bytes: every collective x algorithm x dtype, run with
        exactly the scratch it asks for, never answers COLL_ERR_NOSPC, and
        AUTO all-reduces with it are right.
   RUN  make test-identity */
#define COLL_IMPLEMENTATION
#include "../coll.h"
#define COLL_THREADS_IMPLEMENTATION
#include "../ports/coll_threads.h"
#include "coll_test.h"
#include "test_ports.h"

#include <stdint.h>
#include <string.h>

enum { MAXP = 4, N = 37 };

/* ---- 1. two communicators over one port ------------------------------------ */
typedef struct twocomm {
    coll_threads w;
    int p, rendezvous, progress;          /* progress: coll_start + coll_progress */
    int rc[MAXP][2];
    int wrong[MAXP][2];                   /* COLL_OK with another call's data   */
} twocomm;

static double scr[MAXP][2][128];
static int32_t src2[MAXP][2][N], dst2[MAXP][2][N];

/* Rank r's contribution to communicator k: distinct per communicator. */
static int32_t val(int k, int r, int i) { return (int32_t)(1000 * (k + 1) + 10 * r + i); }

static int twocomm_rank(int r, void *arg)
{
    twocomm *T = (twocomm *)arg;
    coll_port port = T->rendezvous ? coll_rendezvous_port(&T->w, r) : coll_threads_port(&T->w, r);
    coll_comm c[2];
    int k, j, i, order[2];
    for (k = 0; k < 2; k++) {
        if (coll_init(&c[k], r, T->p, &port, scr[r][k], sizeof scr[r][k]) != COLL_OK) return -1;
        for (i = 0; i < N; i++) { src2[r][k][i] = val(k, r, i); dst2[r][k][i] = -1; }
    }
    order[0] = r % 2; order[1] = 1 - r % 2;      /* odd ranks: B before A */
    if (T->progress) {                          /* both started, driven in crossed order */
        coll_request q[2];
        coll_args a;
        for (k = 0; k < 2; k++) {
            memset(&a, 0, sizeof a);
            a.kind = COLL_ALLREDUCE; a.algo = COLL_ALGO_AUTO; a.src = src2[r][k]; a.dst = dst2[r][k];
            a.count = N; a.dtype = COLL_INT32; a.op = COLL_SUM;
            T->rc[r][k] = coll_start(&q[k], &c[k], &a);
        }
        for (j = 0; j < 2; j++) {
            k = order[j];
            if (T->rc[r][k] != COLL_OK) continue;
            while ((T->rc[r][k] = coll_progress(&q[k])) == COLL_AGAIN) { }
        }
    } else {
        for (j = 0; j < 2; j++) {
            k = order[j];
            T->rc[r][k] = coll_allreduce(&c[k], src2[r][k], dst2[r][k], N, COLL_INT32, COLL_SUM, COLL_ALGO_AUTO);
        }
    }
    for (k = 0; k < 2; k++) {
        T->wrong[r][k] = 0;
        if (T->rc[r][k] != COLL_OK) continue;
        for (i = 0; i < N; i++) {
            int32_t want = 0;
            int s;
            for (s = 0; s < T->p; s++) want += val(k, s, i);
            if (dst2[r][k][i] != want) T->wrong[r][k] = 1;
        }
    }
    return 0;
}

static void two_communicators(void)
{
    static twocomm T;
    int p, rv, pr, r, k;
    for (p = 2; p <= MAXP; p += 2)
        for (rv = 0; rv < 2; rv++)
            for (pr = 0; pr < 2 - rv; pr++) {        /* progress needs the non-blocking port */
                int errors = 0;
                memset(&T, 0, sizeof T);
                T.p = p; T.rendezvous = rv; T.progress = pr;
                coll_threads_init(&T.w, p, 3000);
                COLL_CHECK_EQ(coll_threads_run(&T.w, twocomm_rank, &T), 0);
                coll_threads_destroy(&T.w);
                for (r = 0; r < p; r++)
                    for (k = 0; k < 2; k++) {
                        COLL_CHECK_MSG(!T.wrong[r][k], "%d ranks%s%s: rank %d comm %d: COLL_OK with another communicator's sums",
                                       p, rv ? " (rendezvous)" : "", pr ? " (progress)" : "", r, k);
                        if (T.rc[r][k] != COLL_OK) errors++;
                    }
                /* crossed calls cannot both pass on every rank */
                COLL_CHECK_MSG(errors > 0, "%d ranks%s%s: crossed calls all returned COLL_OK",
                               p, rv ? " (rendezvous)" : "", pr ? " (progress)" : "");
            }
}

/* ---- 2. a replaying link ----------------------------------------------------- */
enum { MSGS = 32, MSGB = 512 };
typedef struct replay {
    coll_port inner;
    int on;                               /* replay this call's messages        */
    int n;                                /* messages sent in this call so far  */
    size_t len[2][MSGS];                  /* [0]: the previous call, [1]: this  */
    unsigned char msg[2][MSGS][MSGB];
} replay;

static int replay_send(void *ctx, int peer, const void *buf, size_t bytes)
{
    replay *R = (replay *)ctx;
    int i = R->n++;
    if (i < MSGS && bytes <= MSGB) {
        memcpy(R->msg[1][i], buf, bytes);
        R->len[1][i] = bytes;
        if (R->on && i > 0 && R->len[0][i] == bytes)        /* the previous call's, as it was */
            return R->inner.send(R->inner.ctx, peer, R->msg[0][i], bytes);
    }
    return R->inner.send(R->inner.ctx, peer, buf, bytes);
}
static int replay_recv(void *ctx, int peer, void *buf, size_t bytes)
{
    replay *R = (replay *)ctx;
    return R->inner.recv(R->inner.ctx, peer, buf, bytes);
}
static int replay_attach(void *ctx)
{
    replay *R = (replay *)ctx;
    return R->inner.attach(R->inner.ctx);
}
/* The call is over: its messages become the ones to replay. */
static void replay_next(replay *R, int on)
{
    memcpy(R->msg[0], R->msg[1], sizeof R->msg[0]);
    memcpy(R->len[0], R->len[1], sizeof R->len[0]);
    memset(R->len[1], 0, sizeof R->len[1]);
    R->n = 0;
    R->on = on;
}

typedef struct replay_world {
    coll_threads w;
    replay R;
    int trials;
    int stale_ok;                         /* rank 1: COLL_OK with the old sums  */
    int caught;                           /* rank 1: an error for the replay    */
} replay_world;

static int32_t rsrc[2][N], rdst[2][N];

static int replay_rank(int r, void *arg)
{
    replay_world *W = (replay_world *)arg;
    coll_port port = coll_rendezvous_port(&W->w, r);
    coll_comm c;
    int t, call, i, rc;
    if (r == 0) {                          /* rank 0's sends pass the relay */
        W->R.inner = port;
        memset(&port, 0, sizeof port);
        port.ctx = &W->R; port.send = replay_send; port.recv = replay_recv; port.attach = replay_attach;
    }
    for (t = 0; t < W->trials; t++) {
        if (coll_init(&c, r, 2, &port, scr[r][0], sizeof scr[r][0]) != COLL_OK) return -1;
        coll_set_checks(&c, COLL_CHECK_CALLS | COLL_CHECK_CRC);
        for (call = 0; call < 2; call++) {
            for (i = 0; i < N; i++) { rsrc[r][i] = (int32_t)(100 * t + 10 * call + r + i); rdst[r][i] = -1; }
            if (r == 0) replay_next(&W->R, call == 1);
            rc = coll_allreduce(&c, rsrc[r], rdst[r], N, COLL_INT32, COLL_SUM, COLL_ALGO_RING);
            if (r != 1 || call != 1) continue;
            if (rc != COLL_OK) { W->caught++; continue; }
            for (i = 0; i < N; i++)
                if (rdst[r][i] != (int32_t)(2 * (100 * t + 10 * call + i) + 1)) { W->stale_ok++; break; }
        }
    }
    return 0;
}

static void replayed_messages(void)
{
    static replay_world W;
    memset(&W, 0, sizeof W);
    W.trials = 20;
    coll_threads_init(&W.w, 2, 3000);
    COLL_CHECK_EQ(coll_threads_run(&W.w, replay_rank, &W), 0);
    coll_threads_destroy(&W.w);
    COLL_CHECK_MSG(W.stale_ok == 0, "replayed messages: rank 1 returned COLL_OK with stale sums in %d of %d calls",
                   W.stale_ok, W.trials);
    COLL_CHECK_MSG(W.caught == W.trials, "replayed messages: rank 1 returned an error in %d of %d calls",
                   W.caught, W.trials);
}

/* ---- 3. exactly the scratch coll_scratch_bytes asks for ---------------------- */
typedef struct scratch_world {
    coll_threads w;
    int p;
    int nospc[MAXP], ran[MAXP], wrong[MAXP], big[MAXP];
} scratch_world;

static uint64_t sbuf[MAXP][64];            /* 512 B: more than any call here asks */
static uint64_t ssrc[MAXP][N * MAXP], sdst[MAXP][N * MAXP];
static size_t scounts[MAXP * MAXP];

static int scratch_rank(int r, void *arg)
{
    scratch_world *W = (scratch_world *)arg;
    coll_port port = coll_threads_port(&W->w, r);
    coll_comm probe, c;
    coll_args a;
    int k, al, t, i;
    size_t need;
    if (coll_init(&probe, r, W->p, &port, NULL, 0) != COLL_OK) return -1;
    for (k = 0; k < COLL_KIND_COUNT; k++)
        for (al = 0; al < COLL_ALGO_COUNT; al++)
            for (t = 0; t < COLL_DTYPE_COUNT; t++) {
                int rc;
                if (coll_dtype_size((coll_dtype)t) == 0) continue;     /* COLL_USER_TYPE */
                memset(&a, 0, sizeof a);
                a.kind = (coll_kind)k; a.algo = (coll_algo)al; a.dtype = (coll_dtype)t; a.op = COLL_MAX;
                a.count = 3; a.counts = scounts; a.src = ssrc[r]; a.dst = sdst[r]; a.group = 2;
                need = coll_scratch_bytes(&probe, &a);
                if (need > sizeof sbuf[r]) { W->big[r]++; continue; }
                if (coll_init(&c, r, W->p, &port, need ? sbuf[r] : NULL, need) != COLL_OK) return -1;
                if (al == COLL_ALGO_AUTO && k == COLL_ALLREDUCE)
                    for (i = 0; i < N * MAXP; i++) { ssrc[r][i] = (uint64_t)(r + 1) * 0x0101010101010101ull; sdst[r][i] = 0; }
                rc = coll_run(&c, &a);
                if (rc == COLL_ERR_NOSPC) W->nospc[r]++;
                if (rc == COLL_OK) W->ran[r]++;
                if (al == COLL_ALGO_AUTO && k == COLL_ALLREDUCE) {   /* every byte of the max: p */
                    size_t es = coll_dtype_size((coll_dtype)t), b;
                    const unsigned char *d = (const unsigned char *)sdst[r];
                    int bad = rc != COLL_OK;
                    for (b = 0; b < 3 * es; b++) bad |= d[b] != (unsigned char)W->p;
                    if (bad) W->wrong[r]++;
                }
            }
    return 0;
}

static void exact_scratch(void)
{
    static scratch_world W;
    int p, r, i;
    for (i = 0; i < MAXP * MAXP; i++) scounts[i] = (size_t)(1 + i % 3);
    for (p = 2; p <= MAXP; p++) {
        memset(&W, 0, sizeof W);
        W.p = p;
        coll_threads_init(&W.w, p, 3000);
        COLL_CHECK_EQ(coll_threads_run(&W.w, scratch_rank, &W), 0);
        coll_threads_destroy(&W.w);
        for (r = 0; r < p; r++) {
            COLL_CHECK_MSG(W.nospc[r] == 0, "%d ranks, rank %d: %d calls refused COLL_ERR_NOSPC with coll_scratch_bytes of scratch",
                           p, r, W.nospc[r]);
            COLL_CHECK_MSG(W.big[r] == 0, "%d ranks, rank %d: %d calls asked for more scratch than the test has",
                           p, r, W.big[r]);
            COLL_CHECK_MSG(W.wrong[r] == 0, "%d ranks, rank %d: %d AUTO all-reduces (max) wrong", p, r, W.wrong[r]);
            COLL_CHECK_MSG(W.ran[r] > 100, "%d ranks, rank %d: only %d calls ran", p, r, W.ran[r]);
        }
    }
}

int main(void)
{
    two_communicators();
    replayed_messages();
    exact_scratch();
    return coll_test_summary("identity");
}
