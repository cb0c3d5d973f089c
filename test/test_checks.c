/* test_checks.c - the first promise: the right answer on every rank, or an
   error on every rank that can see it.

   1. Ranks that disagree on any field of the call (op, dtype, count, root,
      algorithm, scratch size, collective, call order, check flags, all-to-all
      in place) all get COLL_ERR_MISMATCH, promptly: the port's deadline is
      30 s and the test wants every answer within 5 s. Over the threads
      port and over the strictly rendezvous port (no sendrecv, synchronous
      send).
   2. A rank that refuses its arguments (NULL as a non-root's result of a
      forced binomial reduce, a bad dtype) makes every other rank return
      COLL_ERR_PEER at once, and the next collective on the same
      communicator is right. With AUTO, NULL there is MPI's habit and works.
   3. Non-root ranks of linear/AUTO gather and scatter may pass NULL or a
      small buffer for the big one they never touch.
   4. NaN, -0 and +0 under min, max and sum: every all-reduce algorithm
      leaves the same bits on every rank, and min/max propagate NaN.
   5. A port that damages messages (one bit flipped, or the stream shifted
      by one byte): with COLL_CHECK_CRC every rank returns an error; a
      damaged check frame or tail of a small call: an error where it is
      seen, COLL_OK only with the right data, within 5 s on a synchronous
      port.
   6. After a transport error the communicator stays broken (COLL_ERR_BROKEN)
      until coll_init; after a disagreement it stays usable.
   7. A port that answers COLL_AGAIN forever or a positive code: the
      blocking call ends with an error instead of spinning.
   8. Core inputs that used to crash: layout split dims, a zero rank count,
      describe with huge counts and steps, misaligned scratch.
   9. A port whose irecv_fold misbehaves (a piece skipped, folded twice,
      half folded, out of order, off an element boundary): an error on the
      rank that sees it, and no rank returns COLL_OK with wrong data.
   10. Small calls at 2-16 ranks just below, at and above the eager block:
      right on every rank, the eager ones in the check round's frames and
      tails alone; one rank across the boundary: COLL_ERR_MISMATCH
      everywhere. */
#define COLL_AGAIN_LIMIT 100000ul
#define COLL_IMPLEMENTATION
#include "../coll_layout.h"
#define COLL_THREADS_IMPLEMENTATION
#include "../ports/coll_threads.h"
#include "test_ports.h"
#include "coll_test.h"
#include "test_clock.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define P 4
#define N 64

/* ---- a world of P thread ranks, each running `body` ----------------------- */
typedef struct world {
    coll_threads w;
    int rendezvous;                       /* 1: send/recv only, synchronous */
    unsigned checks;
    int (*body)(struct world *W, int r, coll_comm *c);
    int rc[P];
    double secs[P];
    int variant;                          /* which field disagrees          */
    int odd_scratch;                      /* rank 3 passes less scratch     */
} world;

static double scr[P][256];                /* 2 KiB of scratch per rank      */
static float fsrc[P][N * P], fdst[P][N * P];

static int world_rank(int r, void *arg)
{
    world *W = (world *)arg;
    coll_comm c;
    coll_port port = W->rendezvous ? coll_rendezvous_port(&W->w, r) : coll_threads_port(&W->w, r);
    size_t sb = sizeof scr[r];
    double t0;
    if (W->body == NULL) return 0;
    /* variant 5: rank 3 passes another scratch size (its segments differ) */
    if (W->odd_scratch && r == 3) sb = 1024;
    if (coll_init(&c, r, P, &port, scr[r], sb) != COLL_OK) return -1;
    coll_set_checks(&c, W->checks);
    t0 = now_s();
    W->rc[r] = W->body(W, r, &c);
    W->secs[r] = now_s() - t0;
    return 0;
}

static void world_run(world *W, unsigned timeout_ms)
{
    int r;
    coll_threads_init(&W->w, P, timeout_ms);
    for (r = 0; r < P; r++) { W->rc[r] = 12345; W->secs[r] = 0; }
    coll_threads_run(&W->w, world_rank, W);
    coll_threads_destroy(&W->w);
}

static void fill(int r)
{
    int i;
    for (i = 0; i < N * P; i++) { fsrc[r][i] = (float)(r + 1) + (float)i; fdst[r][i] = -1; }
}

/* ---- 1. disagreeing ranks --------------------------------------------------- */
static const char *const variant_name[] = {
    "op", "dtype", "count", "root", "algorithm", "scratch size", "collective",
    "call order", "check flags", "group", "small count", "small vs large count",
    "small root", "small AUTO vs forced", "all-to-all in place on one rank"
};
enum { NVARIANTS = 15 };

static int disagree_body(world *W, int r, coll_comm *c)
{
    int odd = r == 3;                     /* rank 3 differs from the others */
    fill(r);
    switch (W->variant) {
    case 0: return coll_allreduce(c, fsrc[r], fdst[r], N, COLL_FLOAT32, odd ? COLL_MAX : COLL_SUM, COLL_ALGO_AUTO);
    case 1: return coll_allreduce(c, fsrc[r], fdst[r], N, odd ? COLL_INT32 : COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
    case 2: return coll_allreduce(c, fsrc[r], fdst[r], odd ? N - 1 : N, COLL_FLOAT32, COLL_SUM, COLL_ALGO_RING);
    case 3: return coll_broadcast(c, fdst[r], N, COLL_FLOAT32, odd ? 1 : 0, COLL_ALGO_AUTO);
    case 4: return coll_allreduce(c, fsrc[r], fdst[r], N, COLL_FLOAT32, COLL_SUM,
                                  odd ? COLL_ALGO_TREE : COLL_ALGO_RING);
    case 5: return coll_allreduce(c, fsrc[r], fdst[r], N * P, COLL_FLOAT32, COLL_SUM, COLL_ALGO_RING);
    case 6: return odd ? coll_allgather(c, fsrc[r], fdst[r], N / P, COLL_FLOAT32, COLL_ALGO_RING)
                       : coll_alltoall(c, fsrc[r], fdst[r], N / P, COLL_FLOAT32, COLL_ALGO_PAIRWISE);
    case 7: {                             /* rank 3 calls the two in the other order */
        int rc, rc2;
        if (!odd) rc = coll_allreduce(c, fsrc[r], fdst[r], 8, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
        else rc = coll_broadcast(c, fdst[r], 8, COLL_FLOAT32, 0, COLL_ALGO_AUTO);
        if (!odd) rc2 = coll_broadcast(c, fdst[r], 8, COLL_FLOAT32, 0, COLL_ALGO_AUTO);
        else rc2 = coll_allreduce(c, fsrc[r], fdst[r], 8, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
        return rc == rc2 ? rc : 777;
    }
    case 8:
        if (odd) coll_set_checks(c, COLL_CHECK_CALLS | COLL_CHECK_CRC);
        return coll_allreduce(c, fsrc[r], fdst[r], N, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
    case 10: return coll_allreduce(c, fsrc[r], fdst[r], odd ? 3 : 2, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
    case 11: return coll_allreduce(c, fsrc[r], fdst[r], odd ? N : 2, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
    case 12: return coll_broadcast(c, fdst[r], 2, COLL_FLOAT32, odd ? 2 : 1, COLL_ALGO_AUTO);
    case 13: return coll_allreduce(c, fsrc[r], fdst[r], 2, COLL_FLOAT32, COLL_SUM,
                                   odd ? COLL_ALGO_RING : COLL_ALGO_AUTO);
    case 14:                              /* in place: pairwise swaps instead of shifts */
        return coll_alltoall(c, fsrc[r], odd ? fsrc[r] : fdst[r], N / P, COLL_FLOAT32, COLL_ALGO_PAIRWISE);
    case 9: {
        coll_args a;
        memset(&a, 0, sizeof a);
        a.kind = COLL_ALLREDUCE; a.algo = COLL_ALGO_HIERARCHICAL; a.src = fsrc[r]; a.dst = fdst[r];
        a.count = N; a.dtype = COLL_FLOAT32; a.op = COLL_SUM; a.group = odd ? 4 : 2;
        return coll_run(c, &a);
    }
    }
    return -999;
}

static void disagreeing_ranks(void)
{
    int v, r, rv;
    for (rv = 0; rv < 2; rv++)
        for (v = 0; v < NVARIANTS; v++) {
            world W;
            memset(&W, 0, sizeof W);
            W.body = disagree_body; W.variant = v; W.rendezvous = rv; W.checks = COLL_CHECK_CALLS;
            W.odd_scratch = v == 5;
            world_run(&W, 30000);
            for (r = 0; r < P; r++) {
                COLL_CHECK_MSG(W.rc[r] == COLL_ERR_MISMATCH, "%s disagree (%s port): rank %d returned %d (%s)",
                               variant_name[v], rv ? "rendezvous" : "threads", r, W.rc[r], coll_result_str(W.rc[r]));
                COLL_CHECK_MSG(W.secs[r] < 5.0, "%s disagree: rank %d took %.1f s (deadline-bound?)",
                               variant_name[v], r, W.secs[r]);
            }
        }
}

/* ---- 2. a refusal on one rank, then another collective --------------------- */
static int refusal_body(world *W, int r, coll_comm *c)
{
    float one = 1, sum = -1, hundred[P][2];
    float *out = W->variant == 0 ? (r == 0 ? &sum : NULL) : &sum;   /* MPI habit */
    coll_dtype t = W->variant == 1 && r == 2 ? (coll_dtype)77 : COLL_FLOAT32;
    int rc, rc2, i;
    float mine[2];
    rc = coll_reduce(c, &one, out, 1, t, COLL_SUM, 0, COLL_ALGO_BINOMIAL);
    if (r == 0) printf("  refusal variant %d: rank 0 got %d (%s): %s\n", W->variant, rc,
                       coll_result_str(rc), coll_last_error(c));
    /* then a gather on the same communicator must be right everywhere */
    mine[0] = 100.0f * (float)r; mine[1] = 100.0f * (float)r + 1;
    memset(hundred, 0, sizeof hundred);
    rc2 = coll_gather(c, mine, r == 0 ? &hundred[0][0] : NULL, 2, COLL_FLOAT32, 0, COLL_ALGO_AUTO);
    if (rc2 != COLL_OK) return 1000 + rc2;
    if (r == 0)
        for (i = 0; i < P; i++)
            if (hundred[i][0] != 100.0f * (float)i || hundred[i][1] != 100.0f * (float)i + 1) return 2000;
    return rc;
}

/* The MPI habit with AUTO: non-roots pass NULL as the result of reduce;
   small calls ride in the check round, larger ones switch to linear
   reduce on every rank. Either way the root gets the sum. */
static float big_in[P][1000], big_out[1000];
static int nullreduce_body(world *W, int r, coll_comm *c)
{
    size_t n = W->variant ? 1000 : 3, i;
    for (i = 0; i < n; i++) big_in[r][i] = (float)(r + 1) * (float)(i % 7);
    if (r == 0) for (i = 0; i < n; i++) big_out[i] = -1;
    if (coll_reduce(c, big_in[r], r == 0 ? big_out : NULL, n, COLL_FLOAT32, COLL_SUM, 0, COLL_ALGO_AUTO) != COLL_OK)
        return 1;
    if (r == 0) for (i = 0; i < n; i++) if (big_out[i] != 10.0f * (float)(i % 7)) return 2;
    return COLL_OK;
}

static void null_reduce_auto(void)
{
    int v, r;
    for (v = 0; v < 2; v++) {
        world W;
        memset(&W, 0, sizeof W);
        W.body = nullreduce_body; W.variant = v; W.checks = COLL_CHECK_CALLS;
        world_run(&W, 30000);
        for (r = 0; r < P; r++)
            COLL_CHECK_MSG(W.rc[r] == COLL_OK, "reduce with NULL non-root dst (%s): rank %d returned %d",
                           v ? "1000 elements" : "3 elements", r, W.rc[r]);
    }
}

static void partial_refusal(void)
{
    int v, r;
    for (v = 0; v < 2; v++) {
        world W;
        memset(&W, 0, sizeof W);
        W.body = refusal_body; W.variant = v; W.checks = COLL_CHECK_CALLS;
        world_run(&W, 30000);
        for (r = 0; r < P; r++) {
            int refuser = v == 0 ? r != 0 : r == 2;
            int want = refuser ? COLL_ERR_INVAL : COLL_ERR_PEER;
            COLL_CHECK_MSG(W.rc[r] == want, "refusal %d: rank %d returned %d (%s), wanted %d",
                           v, r, W.rc[r], coll_result_str(W.rc[r]), want);
            COLL_CHECK_MSG(W.secs[r] < 5.0, "refusal %d: rank %d took %.1f s", v, r, W.secs[r]);
        }
    }
}

/* ---- 3. non-root buffers of linear gather/scatter --------------------------- */
static int nonroot_body(world *W, int r, coll_comm *c)
{
    float big[P * 4], mine[4], tiny[1];
    int i, rc;
    (void)W;
    for (i = 0; i < P * 4; i++) big[i] = (float)(i * 3 + 1);
    for (i = 0; i < 4; i++) mine[i] = -1;
    /* scatter in place at the root; the others pass NULL or a tiny buffer */
    rc = coll_scatter(c, r == 1 ? big : (r % 2 ? NULL : tiny), r == 1 ? big + 4 : mine, 4,
                      COLL_FLOAT32, 1, COLL_ALGO_AUTO);
    if (rc != COLL_OK) return rc;
    for (i = 0; i < 4 && r != 1; i++) if (mine[i] != (float)((r * 4 + i) * 3 + 1)) return 3000 + i;
    for (i = 0; i < 4; i++) mine[i] = (float)(10 * r + i);
    rc = coll_gather(c, mine, r == 2 ? big : (r % 2 ? NULL : tiny), 4, COLL_FLOAT32, 2, COLL_ALGO_LINEAR);
    if (rc != COLL_OK) return rc;
    for (i = 0; i < P * 4 && r == 2; i++) if (big[i] != (float)(10 * (i / 4) + i % 4)) return 4000 + i;
    return COLL_OK;
}

static void nonroot_buffers(void)
{
    world W;
    int r;
    memset(&W, 0, sizeof W);
    W.body = nonroot_body; W.checks = COLL_CHECK_CALLS;
    world_run(&W, 30000);
    for (r = 0; r < P; r++)
        COLL_CHECK_MSG(W.rc[r] == COLL_OK, "non-root buffers: rank %d returned %d", r, W.rc[r]);
}

/* ---- 4. NaN and signed zeros ------------------------------------------------ */
static const coll_algo allreduce_algos[] = {
    COLL_ALGO_NAIVE, COLL_ALGO_RING, COLL_ALGO_TREE, COLL_ALGO_RECURSIVE_DOUBLING,
    COLL_ALGO_RABENSEIFNER, COLL_ALGO_HIERARCHICAL, COLL_ALGO_PIPELINED_TREE, COLL_ALGO_AUTO
};
#define NALGOS (int)(sizeof allreduce_algos / sizeof allreduce_algos[0])
static const coll_op nan_ops[] = { COLL_MIN, COLL_MAX, COLL_SUM };
#define NE 37
static float nan_out[8][NE];
static double nan_out64[8][NE];
static float nan_small[8][4];

/* element i of rank r: NaNs with rank-dependent payloads, +0 and -0 */
static float nan_in(int r, int i)
{
    union { float f; uint32_t u; } v;
    switch (i % 6) {
    case 0: v.u = 0x7fc00000u | (uint32_t)(r + 1); return v.f;        /* quiet NaN, payload r+1 */
    case 1: return r % 2 ? -0.0f : 0.0f;
    case 2: return r == 1 ? NAN : (float)r;
    case 3: return r % 2 ? 0.0f : -0.0f;
    case 4: v.u = (r % 2 ? 0xffc00000u : 0x7fc00000u) | (uint32_t)(i + r); return v.f;
    default: return (float)(i - 3 * r);
    }
}

static int nan_body(world *W, int r, coll_comm *c)
{
    coll_args a;
    float in[NE];
    double in64[NE];
    int i, rc;
    for (i = 0; i < NE; i++) { in[i] = nan_in(r, i); in64[i] = (double)in[i]; }
    memset(&a, 0, sizeof a);
    a.kind = COLL_ALLREDUCE; a.algo = allreduce_algos[W->variant / 3]; a.op = nan_ops[W->variant % 3];
    a.group = 2; a.count = NE;
    a.src = in; a.dst = nan_out[r]; a.dtype = COLL_FLOAT32;
    if (a.algo == COLL_ALGO_AUTO) a.algo = COLL_ALGO_AUTO;
    rc = coll_run(c, &a);
    if (rc != COLL_OK) return rc;
    a.src = in64; a.dst = nan_out64[r]; a.dtype = COLL_FLOAT64;
    rc = coll_run(c, &a);
    if (rc != COLL_OK) return rc;
    /* a small call (AUTO: it rides in the check round) */
    a.count = 4; a.src = in; a.dst = nan_small[r]; a.dtype = COLL_FLOAT32;
    return coll_run(c, &a);
}

static void nan_agreement(void)
{
    int v, r, i, rv;
    for (rv = 0; rv < 2; rv++)
        for (v = 0; v < NALGOS * 3; v++) {
            world W;
            coll_algo algo = allreduce_algos[v / 3];
            coll_op op = nan_ops[v % 3];
            memset(&W, 0, sizeof W);
            W.body = nan_body; W.variant = v; W.rendezvous = rv; W.checks = COLL_CHECK_CALLS;
            memset(nan_out, 0, sizeof nan_out);
            world_run(&W, 30000);
            for (r = 0; r < P; r++)
                COLL_CHECK_MSG(W.rc[r] == COLL_OK, "nan %s op %d: rank %d returned %d",
                               coll_algo_name(algo), (int)op, r, W.rc[r]);
            for (r = 1; r < P; r++) {
                COLL_CHECK_MSG(memcmp(nan_out[r], nan_out[0], sizeof nan_out[0]) == 0,
                               "nan %s op %d: rank %d's float bits differ from rank 0's", coll_algo_name(algo), (int)op, r);
                COLL_CHECK_MSG(memcmp(nan_out64[r], nan_out64[0], sizeof nan_out64[0]) == 0,
                               "nan %s op %d: rank %d's double bits differ from rank 0's", coll_algo_name(algo), (int)op, r);
                COLL_CHECK_MSG(memcmp(nan_small[r], nan_small[0], sizeof nan_small[0]) == 0,
                               "nan %s op %d (4 elements): rank %d's bits differ from rank 0's", coll_algo_name(algo), (int)op, r);
            }
            for (i = 0; i < NE; i++) {
                int any_nan = 0;
                for (r = 0; r < P; r++) any_nan |= isnan(nan_in(r, i)) != 0;
                COLL_CHECK_MSG((isnan(nan_out[0][i]) != 0) == any_nan && (isnan(nan_out64[0][i]) != 0) == any_nan &&
                               (i >= 4 || (isnan(nan_small[0][i]) != 0) == any_nan),
                               "nan %s op %d: element %d NaN-ness %d, inputs %d", coll_algo_name(algo),
                               (int)op, i, !!isnan(nan_out[0][i]), any_nan);
            }
        }
}

/* ---- 5. a port that damages messages ---------------------------------------- */
/* Wraps the threads port (send/recv only). Sends are copied; the damage
   hits the `at`-th message of at least 16 bytes that rank 1 sends: one bit
   flipped, or the bytes shifted by one as when a stream gains a byte. */
typedef struct damage {
    coll_port inner;
    int rank, sent, at, mode;             /* 0: bit flip, 1: shift, 2: flip a frame */
    unsigned char buf[1 << 16];
} damage;
static damage dmg[P];

static int damage_send(void *ctx, int peer, const void *buf, size_t bytes)
{
    damage *d = (damage *)ctx;
    const unsigned char *b = (const unsigned char *)buf;
    int frame = b[0] == 'c' && b[3] <= 2 && bytes <= 24 + 16 * COLL_EAGER_BYTES;   /* a check frame (mode 2: those) */
    if (d->rank == 1 && bytes >= 16 && bytes <= sizeof d->buf && frame == (d->mode == 2) &&
        d->sent++ == d->at) {
        memcpy(d->buf, buf, bytes);
        if (d->mode != 1) d->buf[bytes / 2] ^= 0x10;
        else { memmove(d->buf + 1, d->buf, bytes - 1); d->buf[0] = 0x5a; }
        return d->inner.send(d->inner.ctx, peer, d->buf, bytes);
    }
    return d->inner.send(d->inner.ctx, peer, buf, bytes);
}

typedef struct damage_world { coll_threads w; int mode, at, crc, small, np, rc[P], wrong[P]; } damage_world;

static int damage_rank(int r, void *arg)
{
    damage_world *D = (damage_world *)arg;
    coll_comm c;
    coll_port port;
    float in[N], out[N];
    int i, n;
    dmg[r].inner = coll_rendezvous_port(&D->w, r);      /* send/recv only */
    dmg[r].rank = r; dmg[r].sent = 0; dmg[r].at = D->at; dmg[r].mode = D->mode;
    port = coll_forward_port(&dmg[r]);
    port.send = damage_send;
    coll_init(&c, r, D->np, &port, scr[r], sizeof scr[r]);
    coll_set_checks(&c, COLL_CHECK_CALLS | (D->crc ? COLL_CHECK_CRC : 0));
    for (i = 0; i < N; i++) in[i] = (float)(i + r);
    for (i = 0; i < N; i++) out[i] = -1;
    n = D->small == 1 ? 2 : D->small == 2 ? 60 : N;   /* 60 floats at 2 ranks: a frame and its tail */
    D->rc[r] = coll_allreduce(&c, in, out, (size_t)n, COLL_FLOAT32, COLL_SUM,
                              D->small ? COLL_ALGO_AUTO : COLL_ALGO_RING);
    D->wrong[r] = 0;
    for (i = 0; i < n; i++) D->wrong[r] += out[i] != (float)(D->np * i + D->np * (D->np - 1) / 2);
    return 0;
}


static void damaged_messages(void)
{
    int mode, at, r;
    static const char *const mode_name[] = { "bit flip", "shifted stream", "frame bit flip",
                                             "small call's frame bit flip", "small call's tail bit flip",
                                             "frame bit flip before a tail" };
    static const int damage_mode[] = { 0, 1, 2, 2, 0, 2 }, small[] = { 0, 0, 0, 1, 2, 2 };
    for (mode = 0; mode < 6; mode++)
        for (at = 0; at < (mode >= 4 ? 1 : 3); at++) {   /* 2 ranks: one frame and tail */
            damage_world D;
            int silent = 0, errors = 0;
            double t0 = now_s();
            memset(&D, 0, sizeof D);
            D.mode = damage_mode[mode]; D.at = at; D.crc = 1; D.small = small[mode];
            D.np = small[mode] == 2 ? 2 : P;
            coll_threads_init(&D.w, D.np, 10000);
            coll_threads_run(&D.w, damage_rank, &D);
            coll_threads_destroy(&D.w);
            /* damaged payload: an error on every rank (the closing round
               tells them all). A damaged frame: an error wherever it is
               seen, and COLL_OK only with the right data (a frame of the
               closing round can reach its receiver after the others have
               returned their - right - answers). */
            for (r = 0; r < D.np; r++) {
                if (mode < 2)
                    COLL_CHECK_MSG(D.rc[r] != COLL_OK, "%s at message %d: rank %d returned COLL_OK (%d wrong elements)",
                                   mode_name[mode], at, r, D.wrong[r]);
                silent += D.rc[r] == COLL_OK && D.wrong[r];
                errors += D.rc[r] != COLL_OK;
            }
            COLL_CHECK_MSG(silent == 0, "%s at message %d: %d ranks with COLL_OK and wrong data", mode_name[mode], at, silent);
            COLL_CHECK_MSG(errors > 0, "%s at message %d: nobody saw it", mode_name[mode], at);
            COLL_CHECK_MSG(now_s() - t0 < 5.0, "%s at message %d: %.1f s (a rank waited out its deadline)",
                           mode_name[mode], at, now_s() - t0);
        }
    /* without the CRC the same bit flip goes unseen: the reason it exists */
    {
        damage_world D;
        int wrong = 0;
        memset(&D, 0, sizeof D);
        D.mode = 0; D.at = 0; D.crc = 0; D.np = P;
        coll_threads_init(&D.w, P, 10000);
        coll_threads_run(&D.w, damage_rank, &D);
        coll_threads_destroy(&D.w);
        for (r = 0; r < P; r++) wrong += D.rc[r] == COLL_OK && D.wrong[r];
        printf("  without COLL_CHECK_CRC one flipped bit left %d ranks with COLL_OK and wrong data\n", wrong);
    }
}

/* ---- 6. broken stays broken ------------------------------------------------- */
static int fail_after;
static int failing_send(void *ctx, int peer, const void *buf, size_t bytes)
{
    (void)ctx; (void)peer; (void)buf; (void)bytes;
    return fail_after-- > 0 ? COLL_OK : -1234;
}
static int ok_recv(void *ctx, int peer, void *buf, size_t bytes)
{ (void)ctx; (void)peer; memset(buf, 0, bytes); return COLL_OK; }

static void broken_stays_broken(void)
{
    coll_comm c;
    coll_port port;
    float x[4] = { 1, 2, 3, 4 }, y[4];
    memset(&port, 0, sizeof port);
    port.send = failing_send; port.recv = ok_recv;
    COLL_CHECK_EQ(coll_init(&c, 0, 2, &port, scr[0], sizeof scr[0]), COLL_OK);
    fail_after = 0;
    COLL_CHECK_EQ(coll_allreduce(&c, x, y, 4, COLL_FLOAT32, COLL_SUM, COLL_ALGO_RING), -1234);
    printf("  after a port error: %s\n", coll_last_error(&c));
    fail_after = 1000;
    COLL_CHECK_EQ(coll_allreduce(&c, x, y, 4, COLL_FLOAT32, COLL_SUM, COLL_ALGO_RING), COLL_ERR_BROKEN);
    COLL_CHECK_EQ(coll_barrier(&c, COLL_ALGO_AUTO), COLL_ERR_BROKEN);
    COLL_CHECK_EQ(coll_init(&c, 0, 2, &port, scr[0], sizeof scr[0]), COLL_OK);
    coll_set_checks(&c, 0);               /* this fake peer sends no frames */
    COLL_CHECK_EQ(coll_barrier(&c, COLL_ALGO_AUTO), COLL_OK);
}

/* a disagreement leaves the communicator usable: the next call is right */
static int then_ok_body(world *W, int r, coll_comm *c)
{
    int rc = coll_allreduce(c, fsrc[r], fdst[r], r == 0 ? 3 : 4, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
    float one = 1, sum = 0;
    (void)W;
    if (rc != COLL_ERR_MISMATCH) return 100 + rc;
    rc = coll_allreduce(c, &one, &sum, 1, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
    return rc != COLL_OK ? rc : sum == (float)P ? COLL_OK : 999;
}

static void usable_after_mismatch(void)
{
    world W;
    int r;
    memset(&W, 0, sizeof W);
    W.body = then_ok_body; W.checks = COLL_CHECK_CALLS;
    world_run(&W, 30000);
    for (r = 0; r < P; r++) COLL_CHECK_MSG(W.rc[r] == COLL_OK, "after mismatch: rank %d: %d", r, W.rc[r]);
}

/* ---- 7. ports that never finish or answer nonsense -------------------------- */
static int again_isend(void *ctx, int peer, const void *buf, size_t bytes, int *h)
{ (void)ctx; (void)peer; (void)buf; (void)bytes; *h = 0; return COLL_AGAIN; }
static int again_irecv(void *ctx, int peer, void *buf, size_t bytes, int *h)
{ (void)ctx; (void)peer; (void)buf; (void)bytes; *h = 0; return COLL_AGAIN; }
static int again_wait(void *ctx, int h, int block) { (void)ctx; (void)h; (void)block; return COLL_AGAIN; }
static int seven_send(void *ctx, int peer, const void *buf, size_t bytes)
{ (void)ctx; (void)peer; (void)buf; (void)bytes; return 7; }

static void odd_ports(void)
{
    coll_comm c;
    coll_port port;
    float x[4] = { 1, 2, 3, 4 }, y[4];
    memset(&port, 0, sizeof port);
    port.send = seven_send; port.recv = ok_recv;
    port.isend = again_isend; port.irecv = again_irecv; port.wait = again_wait;
    COLL_CHECK_EQ(coll_init(&c, 0, 2, &port, scr[0], sizeof scr[0]), COLL_OK);
    COLL_CHECK_EQ(coll_allreduce(&c, x, y, 4, COLL_FLOAT32, COLL_SUM, COLL_ALGO_RING), COLL_ERR_TIMEOUT);
    port.isend = NULL; port.irecv = NULL; port.wait = NULL;
    COLL_CHECK_EQ(coll_init(&c, 0, 2, &port, scr[0], sizeof scr[0]), COLL_OK);
    COLL_CHECK_EQ(coll_allreduce(&c, x, y, 4, COLL_FLOAT32, COLL_SUM, COLL_ALGO_RING), COLL_ERR_IO);
}

/* ---- 8. inputs that used to crash ------------------------------------------- */
static int nop_send(void *ctx, int peer, const void *buf, size_t bytes)
{ (void)ctx; (void)peer; (void)buf; (void)bytes; return COLL_OK; }

static void core_inputs(void)
{
    size_t shape[2] = { 8, 8 }, start = 99;
    coll_comm c;
    coll_port port;
    coll_args a;
    coll_xfer x;
    unsigned char two[16];
    double al[4];
    int rc;
    COLL_CHECK_EQ(coll_layout_work_bytes(4, 2, shape, COLL_FLOAT32, coll_sbp_split(9), coll_sbp_broadcast()), 0);
    COLL_CHECK_EQ(coll_layout_work_bytes(4, 2, shape, COLL_FLOAT32, coll_sbp_broadcast(), coll_sbp_split(-1)), 0);
    COLL_CHECK_EQ(coll_layout_rows(10, 0, 0, &start), 0);
    COLL_CHECK_EQ(start, 0);
    COLL_CHECK_EQ(coll_layout_rows(10, 3, 5, NULL), 0);
    COLL_CHECK_EQ(coll_layout_local_shape(0, 2, 2, NULL, coll_sbp_split(0), NULL), 0);
    memset(&port, 0, sizeof port);
    port.send = nop_send; port.recv = ok_recv;
    /* 1 rank, pipelined tree, count SIZE_MAX, 2 bytes of scratch */
    COLL_CHECK_EQ(coll_init(&c, 0, 1, &port, two, 2), COLL_OK);
    memset(&a, 0, sizeof a);
    a.kind = COLL_ALLREDUCE; a.algo = COLL_ALGO_PIPELINED_TREE; a.dtype = COLL_UINT8; a.op = COLL_SUM;
    a.count = (size_t)-1;
    rc = coll_describe(&c, &a, 0, &x);
    COLL_CHECK_MSG(rc < 0 || rc == 0, "describe huge pipelined tree: %d", rc);
    COLL_CHECK_EQ(coll_init(&c, 0, 3, &port, al, sizeof al), COLL_OK);
    a.count = 1000000; a.algo = COLL_ALGO_PIPELINED_TREE;
    rc = coll_describe(&c, &a, 1 << 30, &x);
    COLL_CHECK_MSG(rc == 0 || rc < 0, "describe far step: %d", rc);
    a.kind = COLL_BARRIER; a.algo = COLL_ALGO_DISSEMINATION;
    COLL_CHECK_EQ(coll_describe(&c, &a, 40, &x), 0);
    COLL_CHECK_EQ(coll_describe(&c, &a, 0x7fffffff, &x), 0);
    a.kind = COLL_ALLGATHER; a.algo = COLL_ALGO_BRUCK; a.count = 2;
    COLL_CHECK_EQ(coll_describe(&c, &a, 100, &x), 0);
    a.kind = COLL_ALLTOALL;
    COLL_CHECK_EQ(coll_describe(&c, &a, 100, &x), 0);
    a.kind = COLL_GATHER; a.algo = COLL_ALGO_BINOMIAL;
    COLL_CHECK_EQ(coll_describe(&c, &a, 1000, &x), 0);
    /* scratch not aligned for 8-byte elements */
    COLL_CHECK_EQ(coll_init(&c, 0, 2, &port, two + 1, 8), COLL_ERR_INVAL);
    COLL_CHECK_EQ(coll_init(&c, 0, 2, &port, (unsigned char *)al + 4, 16), COLL_ERR_INVAL);
    /* tiny scratch keeps both halves aligned (segments of a multiple of 8) */
    COLL_CHECK_EQ(coll_init(&c, 0, 2, &port, al, 20), COLL_OK);
    COLL_CHECK_EQ(c.segment % 8, 0);
    /* a forced algorithm that packs through scratch says so in coll_scratch_bytes */
    COLL_CHECK_EQ(coll_init(&c, 0, 4, &port, NULL, 0), COLL_OK);
    memset(&a, 0, sizeof a);
    a.kind = COLL_ALLTOALL; a.algo = COLL_ALGO_BRUCK; a.count = 4; a.dtype = COLL_FLOAT32;
    COLL_CHECK(coll_scratch_bytes(&c, &a) > 0);
    /* the reason is kept */
    coll_set_checks(&c, 0);
    COLL_CHECK_EQ(coll_allreduce(&c, NULL, al, 2, COLL_FLOAT64, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    COLL_CHECK_MSG(strstr(coll_last_error(&c), "src") != NULL, "reason: '%s'", coll_last_error(&c));
    COLL_CHECK_EQ(coll_allreduce(&c, al, al, 2, (coll_dtype)99, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    COLL_CHECK_MSG(strstr(coll_last_error(&c), "dtype") != NULL, "reason: '%s'", coll_last_error(&c));
}


/* ---- 9. a port whose zero-copy fold misbehaves ------------------------------- */
/* Wraps the threads port with its irecv_fold; the fold coll.h hands over
   is called through bad_fold, which on rank 1's `at`-th folding receive
   damages the pieces: mode 0 skips the first piece, 1 folds it twice, 2
   folds only its first half, 3 folds its second half before its first, 4
   moves it one byte up. Every other receive passes through unchanged. */
typedef struct fold_call { coll_fold_fn fold; void *arg; int mode; } fold_call;
typedef struct bad_folder {
    coll_port inner;
    int rank, posted, at, mode;
    fold_call calls[16];                  /* a ring: at most 4 in flight     */
} bad_folder;
static bad_folder bfold[P];

static void bad_fold(void *arg, void *piece, const void *in, size_t n)
{
    fold_call *fc = (fold_call *)arg;
    unsigned char *p = (unsigned char *)piece;
    const unsigned char *i = (const unsigned char *)in;
    size_t h = n / 8 * 4;                 /* half, whole floats */
    int mode = fc->mode;
    fc->mode = -1;                        /* damage the first piece only */
    switch (mode) {
    case 0: return;
    case 1: fc->fold(fc->arg, p, i, n); fc->fold(fc->arg, p, i, n); return;
    case 2: fc->fold(fc->arg, p, i, h ? h : n); return;
    case 3: if (h) { fc->fold(fc->arg, p + h, i + h, n - h); fc->fold(fc->arg, p, i, h); return; } break;
    case 4: fc->fold(fc->arg, p + 1, i, n - 1); return;
    default: break;
    }
    fc->fold(fc->arg, p, i, n);
}
/* irecv_fold through bad_fold, with a record of the fold coll.h passed */
static int bf_irecv_fold(void *ctx, int peer, void *buf, size_t bytes, coll_fold_fn fold, void *arg, int *h)
{
    bad_folder *b = (bad_folder *)ctx;
    fold_call *fc = &b->calls[b->posted % 16];
    int rc;
    fc->fold = fold; fc->arg = arg;
    fc->mode = b->rank == 1 && b->posted == b->at ? b->mode : -1;
    rc = b->inner.irecv_fold(b->inner.ctx, peer, buf, bytes, bad_fold, fc, h);
    if (rc == COLL_OK) b->posted++;
    return rc;
}

#define FN 4096                           /* floats: fast-box pieces and whole messages */
typedef struct fold_world { coll_threads w; int mode, at, n, posted[P], rc[P], wrong[P]; } fold_world;
static float fold_in[P][FN], fold_out[P][FN];
static double fold_scr[P][2048];          /* 8 KiB segments: a 4 KiB block is one message */

static int fold_rank(int r, void *arg)
{
    fold_world *F = (fold_world *)arg;
    coll_comm c;
    coll_port port;
    int i;
    bfold[r].inner = coll_threads_port(&F->w, r);
    bfold[r].rank = r; bfold[r].posted = 0; bfold[r].at = F->at; bfold[r].mode = F->mode;
    port = coll_forward_port(&bfold[r]);
    port.irecv_fold = bf_irecv_fold;
    coll_init(&c, r, P, &port, fold_scr[r], sizeof fold_scr[r]);
    for (i = 0; i < F->n; i++) { fold_in[r][i] = (float)(i + r); fold_out[r][i] = -1; }
    F->rc[r] = coll_allreduce(&c, fold_in[r], fold_out[r], (size_t)F->n, COLL_FLOAT32, COLL_SUM, COLL_ALGO_RING);
    F->wrong[r] = 0;
    for (i = 0; i < F->n; i++) F->wrong[r] += fold_out[r][i] != (float)(4 * i + 6);
    F->posted[r] = bfold[r].posted;
    return 0;
}

static void misbehaving_folds(void)
{
    static const char *const mode_name[] = { "piece skipped", "piece folded twice", "half a piece",
                                             "halves out of order", "piece one byte off" };
    /* blocks of 64 B (one fast-box piece), 1 KiB (16 pieces), 4 KiB (one) */
    static const int sizes[] = { 64, 1024, FN };
    int mode, at, z, r;
    for (z = 0; z < 3; z++)
        for (mode = 0; mode < 5; mode++)
            for (at = 0; at < 2; at++) {
                fold_world F;
                int silent = 0, errors = 0, folds = 0;
                memset(&F, 0, sizeof F);
                F.mode = mode; F.at = at; F.n = sizes[z];
                coll_threads_init(&F.w, P, 10000);
                coll_threads_run(&F.w, fold_rank, &F);
                coll_threads_destroy(&F.w);
                for (r = 0; r < P; r++) {
                    silent += F.rc[r] == COLL_OK && F.wrong[r];
                    errors += F.rc[r] != COLL_OK;
                    folds += F.posted[r];
                }
                COLL_CHECK_MSG(F.posted[1] > at, "%d floats: rank 1 posted %d folding receives, the test wants %d",
                               F.n, F.posted[1], at + 1);
                COLL_CHECK_MSG(silent == 0, "%s (%d floats, receive %d): %d ranks with COLL_OK and wrong data",
                               mode_name[mode], F.n, at, silent);
                COLL_CHECK_MSG(F.rc[1] != COLL_OK, "%s (%d floats, receive %d): rank 1 returned %d",
                               mode_name[mode], F.n, at, F.rc[1]);
                COLL_CHECK_MSG(errors > 0 && folds > 0, "%s: nobody saw it", mode_name[mode]);
            }
    /* the same port without damage: right answers, every fold counted */
    {
        fold_world F;
        memset(&F, 0, sizeof F);
        F.mode = -1; F.at = 0; F.n = FN;
        coll_threads_init(&F.w, P, 10000);
        coll_threads_run(&F.w, fold_rank, &F);
        coll_threads_destroy(&F.w);
        for (r = 0; r < P; r++)
            COLL_CHECK_MSG(F.rc[r] == COLL_OK && F.wrong[r] == 0 && F.posted[r] > 0,
                           "undamaged folds: rank %d rc %d, %d wrong, %d folds", r, F.rc[r], F.wrong[r], F.posted[r]);
    }
}

/* ---- 10. where small calls stop riding in the check round ------------------ */
/* At every rank count, all-reduces just below, at and just above the eager
   block (16 x COLL_EAGER_BYTES / p, rounded down to 8) against a plain loop
   on every rank. The eager ones send exactly the check round's messages:
   lg p frames of 24 + m x COLL_EAGER_BYTES bytes (m blocks in round k),
   and behind each a tail of the blocks' rest, m x (b - COLL_EAGER_BYTES)
   bytes, when a rank's contribution is larger than COLL_EAGER_BYTES: b the
   least of block / 4, block / 2 and block that holds it (between, 40 bytes
   and a quarter or a half of the block and a few bytes more); the others
   send something else. Ranks split across the boundary (one rank
   one element more) answer COLL_ERR_MISMATCH everywhere. */
enum { EP = 16, EN = 80 };
typedef struct eager_world {
    coll_threads w;
    int p, count[EP], rc[EP], wrong[EP];
    uint64_t msgs[EP], bytes[EP];
} eager_world;
static double eager_scr[EP][128];
static float eager_in[EP][EN], eager_out[EP][EN];

static int eager_rank(int r, void *arg)
{
    eager_world *E = (eager_world *)arg;
    coll_port inner = coll_threads_port(&E->w, r), port;
    coll_counting k;
    coll_comm c;
    int i, j, n = E->count[r];
    coll_counting_init(&k, &inner);
    port = coll_counting_port(&k);
    if (coll_init(&c, r, E->p, &port, eager_scr[r], sizeof eager_scr[r]) != COLL_OK) { E->rc[r] = -999; return 0; }
    for (i = 0; i < EN; i++) { eager_in[r][i] = (float)(r * 3 + i % 5); eager_out[r][i] = -1; }
    E->rc[r] = coll_allreduce(&c, eager_in[r], eager_out[r], (size_t)n, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
    E->msgs[r] = k.msgs;
    E->bytes[r] = k.bytes_sent;
    E->wrong[r] = 0;
    for (i = 0; i < n; i++) {
        float want = 0;
        for (j = 0; j < E->p; j++) want += (float)(j * 3 + i % 5);
        E->wrong[r] += eager_out[r][i] != want;
    }
    for (i = n; i < EN; i++) E->wrong[r] += eager_out[r][i] != -1;   /* nothing past the count */
    return 0;
}

static void eager_run(eager_world *E)
{
    coll_threads_init(&E->w, E->p, 10000);
    coll_threads_run(&E->w, eager_rank, E);
    coll_threads_destroy(&E->w);
}

static void eager_boundary(void)
{
    static const int ps[] = { 2, 3, 4, 5, 7, 8, 9, 16 };
    size_t z;
    for (z = 0; z < sizeof ps / sizeof ps[0]; z++) {
        int p = ps[z], lg, d, r;
        int cap = 16 * COLL_EAGER_BYTES / p & ~7, inl = (COLL_EAGER_BYTES < cap ? COLL_EAGER_BYTES : cap) & ~7;
        for (lg = 0; (1 << lg) < p; lg++) {}
        for (d = -2; d <= 4; d++) {      /* 2 floats (no tail), around the block, between */
            eager_world E;
            int n = d == -2 ? 2 : d == 2 ? 10 : d == 3 ? cap / 16 + 1 : d == 4 ? cap / 8 + 1 : cap / 4 + d;
            int blk = (n * 4 + 7) / 8 * 8, eager = n * 4 <= cap, tails = blk > inl, k;
            int b = blk <= cap / 4 ? cap / 4 : blk <= cap / 2 ? cap / 2 : cap;   /* the tail's blocks */
            uint64_t msgs = 0, bytes = 0;     /* what an eager call of n floats sends */
            if (n < 1 || n > EN) continue;
            for (k = 0; k < lg; k++) {
                int m = (1 << k) < p - (1 << k) ? (1 << k) : p - (1 << k);
                msgs += 1 + tails;
                bytes += (uint64_t)(24 + m * inl + (tails ? m * (b - inl) : 0));
            }
            memset(&E, 0, sizeof E);
            E.p = p;
            for (r = 0; r < p; r++) E.count[r] = n;
            eager_run(&E);
            for (r = 0; r < p; r++) {
                COLL_CHECK_MSG(E.rc[r] == COLL_OK && E.wrong[r] == 0, "p=%d, %d floats: rank %d rc %d, %d wrong",
                               p, n, r, E.rc[r], E.wrong[r]);
                COLL_CHECK_MSG(eager == (E.msgs[r] == msgs && E.bytes[r] == bytes),
                               "p=%d, %d floats (%s): rank %d sent %d messages, %d bytes; eager: %d, %d",
                               p, n, eager ? "eager" : "not eager", r, (int)E.msgs[r], (int)E.bytes[r],
                               (int)msgs, (int)bytes);
            }
        }
        if (cap / 4 >= 1 && cap / 4 < EN) {      /* one rank just across the boundary */
            eager_world E;
            memset(&E, 0, sizeof E);
            E.p = p;
            for (r = 0; r < p; r++) E.count[r] = cap / 4 + (r == p / 2);
            eager_run(&E);
            for (r = 0; r < p; r++)
                COLL_CHECK_MSG(E.rc[r] == COLL_ERR_MISMATCH, "p=%d, rank %d across the eager boundary: rank %d rc %d",
                               p, p / 2, r, E.rc[r]);
        }
    }
}

int main(void)
{
    double t0 = now_s();
    disagreeing_ranks();
    partial_refusal();
    null_reduce_auto();
    nonroot_buffers();
    nan_agreement();
    damaged_messages();
    broken_stays_broken();
    usable_after_mismatch();
    odd_ports();
    core_inputs();
    misbehaving_folds();
    eager_boundary();
    printf("  %.1f s\n", now_s() - t0);
    return coll_test_summary("checks");
}
