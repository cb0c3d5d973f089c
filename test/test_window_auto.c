/* test_window_auto.c - coll.h's own blocking calls over windows: the direct
   layer coll_window.h installs (>>win-auto), over the threads port with a
   counting wrapper that tells which road each call took.

   At p = 1, 2, 3, 4 and 7, on every rank, against a plain loop:
     - the seven kinds with a window form (all-reduce in and out of place,
       reduce-scatter, all-gather, broadcast, reduce, all-to-all, barrier)
       called as coll_allreduce(..., COLL_ALGO_AUTO) and the like, counts
       0, 1, 1001 (not a multiple of p) and either side of
       COLL_WINDOW_DIRECT_MIN: right results; window syncs and no message
       where the larger buffer has COLL_WINDOW_DIRECT_MIN bytes or more,
       else messages and no sync (the barrier, no bytes, always so);
     - a forced algorithm (ring), coll_window_auto(c, 0), a rule of
       coll_add_rule's for the kind, a kind without a window form (gather)
       and a sub-communicator: right results by messages, no sync;
     - rank 1's record declined: every rank falls back to messages, right;
     - rank 1 with no scratch, in place (over windows it would have to
       stage through scratch): it declines, every rank agrees and runs
       coll.h's call; coll.h's verdict, the same on every rank.
   All of it twice: the wrapper without and with the threads port's
   window_inline; with it, a call whose inputs ride in the records
   (COLL_WINDOW_INLINE bytes) goes over windows in exactly one sync,
   whatever COLL_WINDOW_DIRECT_MIN says.
   Ends with "window-auto: N passed, M failed". */
#define _POSIX_C_SOURCE 200809L
#define COLL_IMPLEMENTATION
#include "coll_window.h"
#define COLL_THREADS_IMPLEMENTATION
#include "ports/coll_threads.h"

#include <stdio.h>
#include <string.h>

#include "test/coll_test.h"

#define MAXN_LIT 1001
enum { MAXP = 7, MAXN = MAXN_LIT };

static coll_threads W;
static int g_p;
static coll_port g_inner[MAXP];
static unsigned long g_syncs[MAXP], g_msgs[MAXP];
static int g_decline[MAXP];                 /* this rank's port declines its record (set by the rank) */
static float g_src[MAXP][MAXP * MAXN], g_dst[MAXP][MAXP * MAXN];
static unsigned char g_scratch[MAXP][4096];
static int g_rc[MAXP];
static int g_inline;       /* the wrapper passes the threads port's window_inline on */

/* the wrapper: counts window syncs and messages, rank 1 may decline */
static int w_send(void *ctx, int peer, const void *b, size_t n)
{
    coll_port *in = (coll_port *)ctx;
    g_msgs[in - g_inner]++;
    return in->send(in->ctx, peer, b, n);
}
static int w_recv(void *ctx, int peer, void *b, size_t n)
{
    coll_port *in = (coll_port *)ctx;
    g_msgs[in - g_inner]++;
    return in->recv(in->ctx, peer, b, n);
}
static int w_post(void *ctx, const coll_window_rec *rec)
{
    coll_port *in = (coll_port *)ctx;
    coll_window_rec r = *rec;
    if (g_decline[in - g_inner]) { r.src = NULL; r.dst = NULL; r.src_bytes = 0; r.dst_bytes = 0; }
    return in->window_post(in->ctx, &r);
}
static int w_sync(void *ctx)
{
    coll_port *in = (coll_port *)ctx;
    g_syncs[in - g_inner]++;
    return in->window_sync(in->ctx);
}
static const coll_window_rec *w_peer(void *ctx, int r)
{
    coll_port *in = (coll_port *)ctx;
    return in->window_peer(in->ctx, r);
}

static coll_port wrapped(int r)
{
    coll_port p;
    g_inner[r] = coll_threads_port(&W, r);
    memset(&p, 0, sizeof p);
    p.ctx = &g_inner[r];
    p.send = w_send; p.recv = w_recv;
    p.window_post = w_post; p.window_sync = w_sync; p.window_peer = w_peer;
    p.window_inline = g_inline && g_inner[r].window_inline;
    return p;
}

static float input(int r, size_t i) { return (float)(r + 1) + (float)(i % 13); }

/* The call and its plain-loop check, on rank r. Returns 1 if right. */
static int run_kind(coll_comm *c, coll_kind k, int r, size_t n, int inplace, coll_algo algo)
{
    int p = g_p, root = p - 1, q, ok = 1, rc;
    size_t i, j;
    float *s = g_src[r], *d = inplace ? g_src[r] : g_dst[r];
    size_t nin = (k == COLL_ALLTOALL || k == COLL_REDUCE_SCATTER) ? n * (size_t)p : n;
    for (i = 0; i < nin; i++) s[i] = k == COLL_ALLTOALL ? input(r, i) * 3.0f + (float)(i / n) : input(r, i);
    for (i = 0; i < (size_t)p * MAXN; i++) if (!inplace) d[i] = -1.0f;
    switch (k) {
    case COLL_ALLREDUCE:      rc = coll_allreduce(c, s, d, n, COLL_FLOAT32, COLL_SUM, algo); break;
    case COLL_REDUCE_SCATTER: rc = coll_reduce_scatter(c, s, d, n, COLL_FLOAT32, COLL_SUM, algo); break;
    case COLL_ALLGATHER:      rc = coll_allgather(c, s, d, n, COLL_FLOAT32, algo); break;
    case COLL_BROADCAST:      d = s; rc = coll_broadcast(c, s, n, COLL_FLOAT32, root, algo); break;
    case COLL_REDUCE:         rc = coll_reduce(c, s, d, n, COLL_FLOAT32, COLL_SUM, root, algo); break;
    case COLL_ALLTOALL:       rc = coll_alltoall(c, s, d, n, COLL_FLOAT32, algo); break;
    case COLL_GATHER:         rc = coll_gather(c, s, d, n, COLL_FLOAT32, root, algo); break;
    default:                  rc = coll_barrier(c, algo); break;
    }
    if (rc != COLL_OK) {
        COLL_CHECK_MSG(0, "p=%d rank %d %s n=%zu: %d (%s)", p, r, coll_kind_name(k), n, rc, coll_last_error(c));
        return 0;
    }
    for (i = 0; i < n && ok; i++) {
        float want = 0;
        switch (k) {
        case COLL_ALLREDUCE:
            for (q = 0; q < p; q++) want += input(q, i);
            ok = d[i] == want; break;
        case COLL_REDUCE_SCATTER:
            for (q = 0; q < p; q++) want += input(q, (size_t)r * n + i);
            ok = d[i] == want; break;
        case COLL_BROADCAST:
            ok = d[i] == input(root, i); break;
        case COLL_REDUCE:
            for (q = 0; q < p; q++) want += input(q, i);
            ok = r != root || d[i] == want; break;
        case COLL_ALLGATHER:
        case COLL_GATHER:
            for (q = 0; q < p && ok; q++) ok = (k == COLL_GATHER && r != root) || d[(size_t)q * n + i] == input(q, i);
            break;
        case COLL_ALLTOALL:
            for (j = 0; j < (size_t)p && ok; j++)
                ok = d[j * n + i] == input((int)j, (size_t)r * n + i) * 3.0f + (float)r;
            break;
        default: break;
        }
    }
    COLL_CHECK_MSG(ok, "p=%d rank %d %s n=%zu %s: element %zu wrong", p, r, coll_kind_name(k), n,
                   inplace ? "in place" : "out", i - 1);
    return ok;
}

/* Runs one call; says whether it went over windows (syncs, no message) or
   by messages (no sync; messages where p > 1). */
static void expect_road(coll_comm *c, coll_kind k, int r, size_t n, int inplace, coll_algo algo, int windows,
                        const char *what)
{
    unsigned long s0 = g_syncs[r], m0 = g_msgs[r];
    run_kind(c, k, r, n, inplace, algo);
    if (windows) {
        COLL_CHECK_MSG(g_syncs[r] > s0 && g_msgs[r] == m0 && (windows == 1 || g_syncs[r] - s0 == 1),
                       "p=%d rank %d %s %s n=%zu: %lu syncs, %lu messages, not windows%s",
                       g_p, r, what, coll_kind_name(k), n, g_syncs[r] - s0, g_msgs[r] - m0,
                       windows == 1 ? "" : " in one sync (inline)");
    } else {
        COLL_CHECK_MSG(g_syncs[r] == s0 && (g_p == 1 || k == COLL_BARRIER || n == 0 || g_msgs[r] > m0),
                       "p=%d rank %d %s %s n=%zu: %lu syncs, %lu messages, not messages",
                       g_p, r, what, coll_kind_name(k), n, g_syncs[r] - s0, g_msgs[r] - m0);
    }
}

static void barrier(coll_comm *c) { (void)coll_window_barrier(c); }

/* Whether the direct layer takes kind k of n floats: 2 inline (every
   input in COLL_WINDOW_INLINE bytes, on a port that carries it: one
   sync), else 1 where its larger buffer has COLL_WINDOW_DIRECT_MIN bytes. */
static int windowed(coll_kind k, size_t n)
{
    size_t b = k == COLL_BARRIER ? 0 : n * sizeof(float), in = b;
    if (k == COLL_ALLGATHER || k == COLL_REDUCE_SCATTER || k == COLL_ALLTOALL) b *= (size_t)g_p;
    if (k == COLL_REDUCE_SCATTER || k == COLL_ALLTOALL) in = b;
    if (g_inline && in <= COLL_WINDOW_INLINE) return 2;
    return b + 1 > COLL_WINDOW_DIRECT_MIN;   /* (b >= it, for a MIN of 0 as well) */
}

/* floats either side of the direct layer's least call, and one call the
   layer takes with room to stage in place */
#define EDGE_N (COLL_WINDOW_DIRECT_MIN / sizeof(float))
#define BIG_N (EDGE_N > 64 ? EDGE_N : 64)
#if COLL_WINDOW_DIRECT_MIN / 4 + 1 > MAXN_LIT || COLL_WINDOW_DIRECT_MIN % 4
#error "test_window_auto.c: COLL_WINDOW_DIRECT_MIN a multiple of 4, at most 4 x 1000"
#endif

static int body(int r, void *arg)
{
    static const coll_kind kinds[] = { COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER, COLL_BROADCAST,
                                       COLL_REDUCE, COLL_ALLTOALL, COLL_BARRIER };
    static const size_t ns[] = { 0, 1, MAXN, EDGE_N ? EDGE_N - 1 : 0, EDGE_N };
    coll_comm c, sub, bare;
    coll_subport sp;
    coll_port port = wrapped(r);
    int members[2 * MAXP], rc;
    unsigned k, i;
    (void)arg;
    rc = coll_init(&c, r, g_p, &port, g_scratch[r], sizeof g_scratch[r]);
    COLL_CHECK_MSG(rc == COLL_OK && c.direct != NULL, "p=%d rank %d: init %d, layer %s", g_p, r, rc,
                   c.direct ? "installed" : "missing");
    for (k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (i = 0; i < sizeof ns / sizeof ns[0]; i++)
            expect_road(&c, kinds[k], r, ns[i], 0, COLL_ALGO_AUTO, windowed(kinds[k], ns[i]), "AUTO");
    for (i = 0; i < sizeof ns / sizeof ns[0]; i++)
        expect_road(&c, COLL_ALLREDUCE, r, ns[i], 1, COLL_ALGO_AUTO, windowed(COLL_ALLREDUCE, ns[i]), "AUTO");
    expect_road(&c, COLL_ALLREDUCE, r, MAXN, 0, COLL_ALGO_RING, 0, "forced ring");
    expect_road(&c, COLL_GATHER, r, MAXN, 0, COLL_ALGO_AUTO, 0, "no window form");
    COLL_CHECK(coll_window_auto(&c, 0) == COLL_OK && c.direct == NULL);
    expect_road(&c, COLL_ALLREDUCE, r, MAXN, 0, COLL_ALGO_AUTO, 0, "layer off");
    COLL_CHECK(coll_window_auto(&c, 1) == COLL_OK);
    expect_road(&c, COLL_ALLREDUCE, r, MAXN, 0, COLL_ALGO_AUTO, 1, "layer on again");
    COLL_CHECK(coll_window_auto(NULL, 1) == COLL_ERR_INVAL);
    rc = coll_add_rule(&c, COLL_ALLREDUCE, 0, (size_t)-1, COLL_ALGO_RING);
    COLL_CHECK_MSG(rc == COLL_OK, "p=%d rank %d: add_rule %d", g_p, r, rc);
    expect_road(&c, COLL_ALLREDUCE, r, MAXN, 0, COLL_ALGO_AUTO, 0, "a rule for the kind");
    expect_road(&c, COLL_BROADCAST, r, MAXN, 0, COLL_ALGO_AUTO, 1, "a rule for another kind");
    /* a sub-communicator's port passes no windows on */
    rc = coll_comm_split(&sub, &sp, &c, 0, g_p - r, members, g_scratch[r] + 2048, 2048);
    COLL_CHECK_MSG(rc == COLL_OK, "p=%d rank %d: split %d", g_p, r, rc);
    if (rc == COLL_OK && g_p > 1) {
        unsigned long s0 = g_syncs[r];
        float v = (float)(r + 1), sum = 0;
        int q;
        for (q = 0; q < g_p; q++) sum += (float)(q + 1);
        rc = coll_allreduce(&sub, &v, &v, 1, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
        COLL_CHECK_MSG(rc == COLL_OK && v == sum && g_syncs[r] == s0, "p=%d rank %d sub: rc %d, %g not %g, %lu syncs",
                       g_p, r, rc, (double)v, (double)sum, g_syncs[r] - s0);
    }
    /* rank 1's record declined: every rank's call by messages, right */
    g_decline[r] = r == 1;
    if (g_p > 1) {
        unsigned long m0 = g_msgs[r];
        run_kind(&c, COLL_BROADCAST, r, MAXN, 0, COLL_ALGO_AUTO);
        COLL_CHECK_MSG(g_msgs[r] > m0, "p=%d rank %d: a declined record, yet no message", g_p, r);
    }
    g_decline[r] = 0;
    /* rank 1 without scratch, in place: it declines, all run coll.h's call */
    rc = coll_init(&bare, r, g_p, &port, r == 1 ? NULL : g_scratch[r], r == 1 ? 0 : sizeof g_scratch[r]);
    COLL_CHECK_MSG(rc == COLL_OK, "p=%d rank %d: init of bare %d", g_p, r, rc);
    if (rc == COLL_OK) {
        int q, same = 1;
        float *s = g_src[r];
        for (i = 0; i < BIG_N; i++) s[i] = input(r, i);
        g_rc[r] = coll_allreduce(&bare, s, s, BIG_N, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
        COLL_CHECK_MSG(g_rc[r] != COLL_ERR_TIMEOUT, "p=%d rank %d: no scratch on rank 1: timed out", g_p, r);
        barrier(&c);
        for (q = 0; q < g_p; q++) same &= (g_rc[q] == COLL_OK) == (g_rc[0] == COLL_OK);
        COLL_CHECK_MSG(same, "p=%d rank %d: no scratch on rank 1: ranks disagree (rank 0 %d, this %d)", g_p, r,
                       g_rc[0], g_rc[r]);
        if (g_rc[r] == COLL_OK) {
            float want;
            for (i = 0; i < BIG_N; i++) {
                want = 0;
                for (q = 0; q < g_p; q++) want += input(q, i);
                if (s[i] != want) break;
            }
            COLL_CHECK_MSG(i == BIG_N, "p=%d rank %d: no scratch on rank 1: element %u wrong", g_p, r, i);
        }
    }
    return 0;
}

int main(void)
{
    static const int ps[] = { 1, 2, 3, 4, 7 };
    unsigned i;
    for (g_inline = 0; g_inline < 2; g_inline++)
        for (i = 0; i < sizeof ps / sizeof ps[0]; i++) {
            g_p = ps[i];
            memset(g_syncs, 0, sizeof g_syncs);
            memset(g_msgs, 0, sizeof g_msgs);
            if (coll_threads_init(&W, g_p, 10000) != COLL_OK) { COLL_CHECK_MSG(0, "threads init p=%d", g_p); continue; }
            coll_threads_run(&W, body, NULL);
            coll_threads_destroy(&W);
            printf("p=%d%s: %lu passed, %lu failed so far\n", g_p, g_inline ? " inline" : "", coll_test_passed,
                   coll_test_failed);
        }
    return coll_test_summary("window-auto");
}
