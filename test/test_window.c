/* test_window.c - coll_window.h's collectives over the windows of the
   threads port and of the smp mailbox (cores on shared memory, run here
   as threads, every buffer in the region it was given), against a plain
   loop (test_values.h), on every rank.

   At p = 1, 2, 3, 4 and 7 ranks:
     - all-reduce one-shot, two-shot and AUTO, in place and out of place,
       every dtype with every operator coll.h takes for it (where coll.h's
       own all-reduce refuses a pair, the window call must refuse it with
       the same code), counts 0, 1, 7, 1000 and 9000 (past the one-shot
       limit); every rank's result the same bytes as rank 0's, and the
       bytes past every buffer untouched;
     - reduce-scatter (in place: dst = src + rank*count), all-gather (in
       place: src = dst + rank*count), broadcast and reduce from the first
       and last rank (in place at the root too), all-to-all in place and
       out, barrier; counts 0, 1, 7, 1000;
     - refusals told: a NULL dst on one rank (it: COLL_ERR_INVAL, the
       others COLL_ERR_PEER), counts that differ (COLL_ERR_MISMATCH on
       every rank), and the communicator works after both;
     - a port without windows: every call is coll.h's own, results right;
     - a rank whose record claims less than the call touches: every rank
       refuses (COLL_ERR_CORRUPT) and no dst is written.
     - a rank whose port declines its record (no buffers, no bytes):
       every rank runs coll.h's own call instead, results right.
   Over the smp mailbox also: a rank whose src lies outside the region
   (its record is none to every rank: every rank fails the call).
   Then, threads port, a rank that never calls: every other rank fails within the
   deadline, with a reason.
   Then the shm port (forked by coll_shm_spawn, COLL_SHM_HEAP_BYTES 8 MiB),
   every rank's src and dst from coll_shm_alloc, results and checks
   gathered through a MAP_SHARED page: the whole matrix above at every p;
   one rank's buffers outside the heap (declined: every rank runs coll.h's
   own call, by messages, and computes right; back in the heap, no message
   moves); rank 1's record forged in the segment (an offset past the heap,
   an offset + length that wraps, NULL with bytes, one byte past the end):
   every rank fails (COLL_ERR_IO), no dst or guard byte written, and the
   communicator goes on; a rank that exits, is killed or hangs before a
   sync: the others fail within the 500 ms deadline; three processes
   joined by name (coll_shm_open) with the heap at a different address in
   each. Under TSan too: it watches each forked rank's process on its
   own (the segment's accesses from other processes it cannot see), the
   deaths and the joins by name included.
   COLL_TEST_LEVEL=-1 (TSan) runs a lighter matrix. Ends with "window: N
   passed, M failed". */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE 1                 /* the shm port's Linux calls */
#define COLL_IMPLEMENTATION
#include "coll_window.h"
#define COLL_THREADS_IMPLEMENTATION
#include "ports/coll_threads.h"
#define COLL_SMP_MAILBOX_IMPLEMENTATION
#include "ports/coll_smp_mailbox.h"
#define COLL_SHM_HEAP_BYTES (8u << 20)    /* 2 x BIG a rank at 7 ranks */
#define COLL_SHM_IMPLEMENTATION
#include "ports/coll_shm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <signal.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "test/coll_test.h"
#include "test/test_values.h"

enum { MAXP = 7, MAXN = 9000, GUARD = 64 };
#define ES_MAX 8
#define BIG (MAXP * MAXN * ES_MAX + GUARD)

static coll_threads W;
static int g_p, g_level, g_smp;           /* g_smp: ranks talk over the smp mailbox */
/* every buffer of a window call: one region, the smp mailbox's window */
static struct { unsigned char src[MAXP][BIG], dst[MAXP][BIG]; } g_buf;
/* each rank's src and dst: in g_buf (threads, smp), or from its part of
   the shm segment's heap (coll_shm_alloc, in its own process) */
static unsigned char *g_src[MAXP], *g_dst[MAXP];
static unsigned char g_scratch[MAXP][1 << 14];
#define SMP_SLOTS 8
#define SMP_SLOT 256
static unsigned long long g_block[COLL_SMP_MAILBOX_BYTES(MAXP, SMP_SLOTS, SMP_SLOT) / 8 + 1];
static coll_smp_mailbox g_mb[MAXP];
/* each rank's result, for rank 0's compare: MAP_SHARED, so that forked
   ranks see each other's too */
static unsigned char (*g_out)[MAXN * ES_MAX];

static const coll_op ops[] = { COLL_SUM, COLL_PROD, COLL_MAX, COLL_MIN, COLL_AVG, COLL_BAND, COLL_BOR, COLL_BXOR };
static const char *opname[] = { "sum", "prod", "max", "min", "avg", "band", "bor", "bxor" };

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* guards: GUARD bytes of 0xA5 right after `used` bytes */
static void guard_set(unsigned char *b, size_t used) { memset(b + used, 0xA5, GUARD); }
static int guard_ok(const unsigned char *b, size_t used)
{
    size_t i;
    for (i = 0; i < GUARD; i++) if (b[used + i] != 0xA5) return 0;
    return 1;
}

/* ---- all-reduce: every dtype and operator -------------------------------- */

static void allreduce_case(coll_comm *c, int r, coll_dtype t, int oi, size_t n, int inplace, coll_window_algo algo)
{
    size_t es = coll_dtype_size(t), i;
    unsigned char *s = g_src[r], *d = inplace ? g_src[r] : g_dst[r];
    coll_op op = ops[oi];
    int rc, want_rc, bad = 0;
    char tn[16];
    tv_name(t, tn, sizeof tn);
    for (i = 0; i < n; i++) t_put(t, s, i, t_input(r, i, t, op));
    guard_set(s, n * es); guard_set(g_dst[r], n * es);
    /* coll.h's own answer for the pair decides what the window call owes */
    want_rc = coll_allreduce(c, s, g_dst[r], n ? 1 : 0, t, op, COLL_ALGO_AUTO);
    rc = coll_window_allreduce(c, s, d, n, t, op, algo);
    COLL_CHECK_MSG(rc == want_rc, "p=%d rank %d allreduce %s %s n=%zu %s algo %d: rc %d, coll.h says %d (%s)",
                   g_p, r, tn, opname[oi], n, inplace ? "in place" : "out", (int)algo, rc, want_rc, coll_last_error(c));
    if (rc != COLL_OK || want_rc != COLL_OK) return;
    for (i = 0; i < n; i++)
        if (!t_close(t, op, t_get(t, d, i), t_reduce_ref(t, op, g_p, i))) { bad = 1; break; }
    COLL_CHECK_MSG(!bad, "p=%d rank %d allreduce %s %s n=%zu %s algo %d: element %zu is %g, not %g", g_p, r, tn,
                   opname[oi], n, inplace ? "in place" : "out", (int)algo, i, t_get(t, d, i), t_reduce_ref(t, op, g_p, i));
    COLL_CHECK_MSG(guard_ok(s, n * es) && guard_ok(g_dst[r], n * es), "p=%d rank %d allreduce %s n=%zu: wrote past a buffer",
                   g_p, r, tn, n);
    memcpy(g_out[r], d, n * es);
    rc = coll_window_barrier(c);
    COLL_CHECK_MSG(rc == COLL_OK, "p=%d rank %d barrier: %d", g_p, r, rc);
    COLL_CHECK_MSG(memcmp(g_out[r], g_out[0], n * es) == 0, "p=%d rank %d allreduce %s %s n=%zu algo %d: bytes differ from rank 0's",
                   g_p, r, tn, opname[oi], n, (int)algo);
    rc = coll_window_barrier(c);                  /* rank 0's result read by all */
    COLL_CHECK_MSG(rc == COLL_OK, "p=%d rank %d barrier: %d", g_p, r, rc);
}

static void allreduce_matrix(coll_comm *c, int r)
{
    static const size_t ns[] = { 0, 1, 7, 1000, 9000 };
    int t, oi, ni, ip, a;
    for (t = 0; t < (int)COLL_DTYPE_COUNT; t++) {
        if (t == (int)COLL_USER_TYPE || !coll_dtype_size((coll_dtype)t)) continue;
        for (oi = 0; oi < (int)(sizeof ops / sizeof ops[0]); oi++)
            for (ni = 0; ni < 5; ni++)
                for (ip = 0; ip < 2; ip++)
                    for (a = 0; a < 3; a++) {
                        if (g_level < 0 && (ni != 3 || oi > 1 || (t != COLL_FLOAT32 && t != COLL_INT8))) continue;
                        if (g_level == 0 && ni != 2 && ni != 4 && oi != 0) continue;
                        allreduce_case(c, r, (coll_dtype)t, oi, ns[ni], ip, (coll_window_algo)a);
                    }
    }
}

/* ---- the other collectives ------------------------------------------------- */

static void fill(coll_dtype t, coll_op op, unsigned char *b, int r, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) t_put(t, b, i, t_input(r, i, t, op));
}

static void reduce_scatter_case(coll_comm *c, int r, coll_dtype t, coll_op op, size_t n, int inplace)
{
    size_t es = coll_dtype_size(t), i, p = (size_t)g_p;
    unsigned char *s = g_src[r], *d = inplace ? g_src[r] + (size_t)r * n * es : g_dst[r];
    int rc, bad = 0;
    fill(t, op, s, r, p * n);
    guard_set(s, p * n * es); guard_set(g_dst[r], n * es);
    rc = coll_window_reduce_scatter(c, s, d, n, t, op);
    COLL_CHECK_MSG(rc == COLL_OK, "p=%d rank %d reduce_scatter n=%zu %s: %d (%s)", g_p, r, n, inplace ? "in place" : "out",
                   rc, coll_last_error(c));
    for (i = 0; rc == COLL_OK && i < n; i++)
        if (!t_close(t, op, t_get(t, d, i), t_reduce_ref(t, op, g_p, (size_t)r * n + i))) { bad = 1; break; }
    COLL_CHECK_MSG(!bad, "p=%d rank %d reduce_scatter n=%zu %s: element %zu wrong", g_p, r, n, inplace ? "in place" : "out", i);
    COLL_CHECK_MSG(guard_ok(s, p * n * es) && guard_ok(g_dst[r], n * es), "p=%d rank %d reduce_scatter: wrote past", g_p, r);
}

static void allgather_case(coll_comm *c, int r, coll_dtype t, size_t n, int inplace)
{
    size_t es = coll_dtype_size(t), i, p = (size_t)g_p;
    unsigned char *d = g_dst[r], *s = inplace ? g_dst[r] + (size_t)r * n * es : g_src[r];
    int rc, q, bad = 0;
    memset(d, 0x5A, p * n * es);
    for (i = 0; i < n; i++) t_put(t, s, i, t_input(r, i, t, COLL_SUM));
    guard_set(d, p * n * es); if (!inplace) guard_set(s, n * es);
    rc = coll_window_allgather(c, s, d, n, t);
    COLL_CHECK_MSG(rc == COLL_OK, "p=%d rank %d allgather n=%zu: %d (%s)", g_p, r, n, rc, coll_last_error(c));
    for (q = 0; rc == COLL_OK && q < g_p && !bad; q++)
        for (i = 0; i < n; i++)
            if (t_get(t, d, (size_t)q * n + i) != tv_as_double(t, tv_of(t, t_input(q, i, t, COLL_SUM)))) { bad = 1; break; }
    COLL_CHECK_MSG(!bad, "p=%d rank %d allgather n=%zu %s: block %d wrong", g_p, r, n, inplace ? "in place" : "out", q - 1);
    COLL_CHECK_MSG(guard_ok(d, p * n * es), "p=%d rank %d allgather: wrote past dst", g_p, r);
}

static void broadcast_case(coll_comm *c, int r, coll_dtype t, size_t n, int root)
{
    size_t es = coll_dtype_size(t), i;
    unsigned char *b = g_dst[r];
    int rc, bad = 0;
    for (i = 0; i < n; i++) t_put(t, b, i, r == root ? t_input(root, i, t, COLL_SUM) : 99);
    guard_set(b, n * es);
    rc = coll_window_broadcast(c, b, n, t, root);
    COLL_CHECK_MSG(rc == COLL_OK, "p=%d rank %d broadcast n=%zu root %d: %d (%s)", g_p, r, n, root, rc, coll_last_error(c));
    for (i = 0; rc == COLL_OK && i < n; i++)
        if (t_get(t, b, i) != tv_as_double(t, tv_of(t, t_input(root, i, t, COLL_SUM)))) { bad = 1; break; }
    COLL_CHECK_MSG(!bad && guard_ok(b, n * es), "p=%d rank %d broadcast n=%zu root %d: element %zu wrong or past", g_p, r, n, root, i);
}

static void reduce_case(coll_comm *c, int r, coll_dtype t, coll_op op, size_t n, int root, int inplace)
{
    size_t es = coll_dtype_size(t), i;
    unsigned char *s = g_src[r], *d = inplace && r == root ? g_src[r] : g_dst[r];
    int rc, bad = 0;
    fill(t, op, s, r, n);
    guard_set(s, n * es); guard_set(g_dst[r], n * es);
    if (r != root) memset(g_dst[r], 0x77, n * es);
    rc = coll_window_reduce(c, s, r == root || !inplace ? d : NULL, n, t, op, root);
    COLL_CHECK_MSG(rc == COLL_OK, "p=%d rank %d reduce n=%zu root %d: %d (%s)", g_p, r, n, root, rc, coll_last_error(c));
    for (i = 0; rc == COLL_OK && r == root && i < n; i++)
        if (!t_close(t, op, t_get(t, d, i), t_reduce_ref(t, op, g_p, i))) { bad = 1; break; }
    COLL_CHECK_MSG(!bad, "p=%d rank %d reduce n=%zu root %d %s: element %zu wrong", g_p, r, n, root, inplace ? "in place" : "out", i);
    COLL_CHECK_MSG(guard_ok(s, n * es) && guard_ok(g_dst[r], n * es), "p=%d rank %d reduce: wrote past", g_p, r);
}

static void alltoall_case(coll_comm *c, int r, coll_dtype t, size_t n, int inplace)
{
    size_t es = coll_dtype_size(t), i, p = (size_t)g_p;
    unsigned char *s = g_src[r], *d = inplace ? g_src[r] : g_dst[r];
    int rc, q, bad = 0;
    for (q = 0; q < g_p; q++)                   /* block q of rank r: (5r + 3q + i) % 50 */
        for (i = 0; i < n; i++) t_put(t, s, (size_t)q * n + i, (double)((r * 5 + q * 3 + (int)i) % 50));
    guard_set(s, p * n * es); guard_set(g_dst[r], p * n * es);
    rc = coll_window_alltoall(c, s, d, n, t);
    COLL_CHECK_MSG(rc == COLL_OK, "p=%d rank %d alltoall n=%zu: %d (%s)", g_p, r, n, rc, coll_last_error(c));
    for (q = 0; rc == COLL_OK && q < g_p && !bad; q++)   /* my block q came from rank q's block r */
        for (i = 0; i < n; i++)
            if (t_get(t, d, (size_t)q * n + i) != (double)((q * 5 + r * 3 + (int)i) % 50)) { bad = 1; break; }
    COLL_CHECK_MSG(!bad, "p=%d rank %d alltoall n=%zu %s: block %d wrong", g_p, r, n, inplace ? "in place" : "out", q - 1);
    COLL_CHECK_MSG(guard_ok(s, p * n * es) && guard_ok(g_dst[r], p * n * es), "p=%d rank %d alltoall: wrote past", g_p, r);
}

static void others(coll_comm *c, int r)
{
    static const size_t ns[] = { 0, 1, 7, 1000 };
    static const coll_dtype ts[] = { COLL_UINT8, COLL_FLOAT16, COLL_FLOAT64, COLL_INT32 };
    unsigned ti, ni;
    int ip, rc;
    for (ti = 0; ti < 4; ti++)
        for (ni = 0; ni < 4; ni++)
            for (ip = 0; ip < 2; ip++) {
                coll_dtype t = ts[ti];
                size_t n = ns[ni];
                if (g_level < 0 && (ti != 2 || ni != 3)) continue;
                reduce_scatter_case(c, r, t, ti == 3 ? COLL_MAX : COLL_SUM, n, ip);
                allgather_case(c, r, t, n, ip);
                broadcast_case(c, r, t, n, ip ? g_p - 1 : 0);
                reduce_case(c, r, t, ti == 3 ? COLL_BXOR : COLL_SUM, n, ip ? g_p - 1 : 0, ip);
                reduce_case(c, r, t, COLL_AVG, n, 0, !ip);
                alltoall_case(c, r, t, n, ip);
                rc = coll_window_barrier(c);
                COLL_CHECK_MSG(rc == COLL_OK, "p=%d rank %d barrier: %d", g_p, r, rc);
            }
}

/* ---- refusals told, and the communicator goes on -------------------------- */

static void refusals(coll_comm *c, int r)
{
    float *s = (float *)(void *)g_src[r], *d = (float *)(void *)g_dst[r];
    int rc, i;
    for (i = 0; i < 10; i++) s[i] = (float)(r + i);
    rc = coll_window_allreduce(c, s, r == g_p - 1 ? NULL : d, 10, COLL_FLOAT32, COLL_SUM, COLL_WINDOW_AUTO);
    if (g_p == 1 || r == g_p - 1)
        COLL_CHECK_MSG(rc == COLL_ERR_INVAL, "p=%d rank %d: NULL dst: %d, not INVAL", g_p, r, rc);
    else
        COLL_CHECK_MSG(rc == COLL_ERR_PEER, "p=%d rank %d: another rank's NULL dst: %d, not PEER (%s)", g_p, r, rc,
                       coll_last_error(c));
    rc = coll_window_allreduce(c, s, d, r == 0 ? 10 : 11, COLL_FLOAT32, COLL_SUM, COLL_WINDOW_AUTO);
    if (g_p > 1)
        COLL_CHECK_MSG(rc == COLL_ERR_MISMATCH, "p=%d rank %d: counts that differ: %d, not MISMATCH", g_p, r, rc);
    rc = coll_window_allreduce(c, s, d, 10, COLL_FLOAT32, COLL_SUM, COLL_WINDOW_TWO_SHOT);
    COLL_CHECK_MSG(rc == COLL_OK && d[3] == (float)(g_p * 3 + g_p * (g_p - 1) / 2),
                   "p=%d rank %d: after the refusals: rc %d, d[3] = %g", g_p, r, rc, (double)d[3]);
}

/* ---- a record that lies ------------------------------------------------------ */

/* Rank 1's port posts its record with a src shorter than the call reads:
   every rank must refuse the call (COLL_ERR_CORRUPT), no byte read. */
static coll_port g_inner[MAXP];
static int lying_post(void *ctx, const coll_window_rec *rec)
{
    coll_port *in = (coll_port *)ctx;
    coll_window_rec r = *rec;
    r.src_bytes = r.src_bytes ? r.src_bytes - 1 : 0;
    return in->window_post(in->ctx, &r);
}
static int fwd_sync(void *ctx) { coll_port *in = (coll_port *)ctx; return in->window_sync(in->ctx); }
static const coll_window_rec *fwd_peer(void *ctx, int r) { coll_port *in = (coll_port *)ctx; return in->window_peer(in->ctx, r); }
static int fwd_send(void *ctx, int peer, const void *b, size_t n) { coll_port *in = (coll_port *)ctx; return in->send(in->ctx, peer, b, n); }
static int fwd_recv(void *ctx, int peer, void *b, size_t n) { coll_port *in = (coll_port *)ctx; return in->recv(in->ctx, peer, b, n); }
static int fwd_post(void *ctx, const coll_window_rec *rec) { coll_port *in = (coll_port *)ctx; return in->window_post(in->ctx, rec); }

/* Rank r's threads port with rank 1's window_post replaced by `post`
   (the others' passed on as they are). */
static coll_port rank1_posts(int r, int (*post)(void *, const coll_window_rec *))
{
    coll_port p;
    g_inner[r] = coll_threads_port(&W, r);
    memset(&p, 0, sizeof p);
    p.ctx = &g_inner[r];
    p.send = fwd_send; p.recv = fwd_recv;
    p.window_post = r == 1 ? post : fwd_post;
    p.window_sync = fwd_sync; p.window_peer = fwd_peer;
    return p;
}

static void lying_record(int r)
{
    coll_comm c;
    coll_port p;
    float *s = (float *)(void *)g_src[r], *d = (float *)(void *)g_dst[r];
    int rc, i;
    if (g_p < 2) return;
    p = rank1_posts(r, lying_post);
    rc = coll_init(&c, r, g_p, &p, g_scratch[r], sizeof g_scratch[r]);
    COLL_CHECK_MSG(rc == COLL_OK && coll_window_ok(&c), "p=%d rank %d: init of the lying port: %d", g_p, r, rc);
    for (i = 0; i < 64; i++) { s[i] = 1.0f; d[i] = -7.0f; }
    rc = coll_window_allreduce(&c, s, d, 64, COLL_FLOAT32, COLL_SUM, COLL_WINDOW_AUTO);
    COLL_CHECK_MSG(rc == COLL_ERR_CORRUPT, "p=%d rank %d: a record short of the call: %d, not CORRUPT", g_p, r, rc);
    for (i = 0; i < 64 && d[i] == -7.0f; i++) {}
    COLL_CHECK_MSG(i == 64, "p=%d rank %d: dst written by a refused call", g_p, r);
}

/* Rank 1's port declines its record (no buffers, no bytes, as a port
   that cannot share them does): every rank runs coll.h's own call instead,
   and every result is right - twice in a row, then a window call. */
static int declining_post(void *ctx, const coll_window_rec *rec)
{
    coll_port *in = (coll_port *)ctx;
    coll_window_rec r = *rec;
    r.src = NULL; r.dst = NULL; r.src_bytes = 0; r.dst_bytes = 0;
    return in->window_post(in->ctx, &r);
}

static void declined_record(int r)
{
    coll_comm c;
    coll_port p;
    float *s = (float *)(void *)g_src[r], *d = (float *)(void *)g_dst[r];
    int rc, i, k, bad = 0;
    if (g_p < 2) return;
    p = rank1_posts(r, declining_post);
    rc = coll_init(&c, r, g_p, &p, g_scratch[r], sizeof g_scratch[r]);
    COLL_CHECK_MSG(rc == COLL_OK && coll_window_ok(&c), "p=%d rank %d: init of the declining port: %d", g_p, r, rc);
    for (k = 0; k < 2; k++) {
        for (i = 0; i < 100; i++) { s[i] = (float)(r + i); d[i] = -7.0f; }
        rc = coll_window_allreduce(&c, s, d, 100, COLL_FLOAT32, COLL_SUM, k ? COLL_WINDOW_ONE_SHOT : COLL_WINDOW_TWO_SHOT);
        for (i = 0; rc == COLL_OK && i < 100; i++)
            if (d[i] != (float)(g_p * (g_p - 1) / 2 + g_p * i)) { bad = 1; break; }
        COLL_CHECK_MSG(rc == COLL_OK && !bad, "p=%d rank %d: rank 1 declined: rc %d, element %d (%s)", g_p, r, rc, i,
                       coll_last_error(&c));
    }
    rc = coll_window_barrier(&c);                  /* touches nothing: no decline */
    COLL_CHECK_MSG(rc == COLL_OK, "p=%d rank %d: barrier after the declines: %d", g_p, r, rc);
}

/* ---- a port without windows ------------------------------------------------ */

static void no_windows(int r)
{
    coll_comm c;
    coll_port p = coll_threads_port(&W, r);
    float *s = (float *)(void *)g_src[r], *d = (float *)(void *)g_dst[r];
    int rc, i, bad = 0;
    p.window_post = 0; p.window_sync = 0; p.window_peer = 0;
    rc = coll_init(&c, r, g_p, &p, g_scratch[r], sizeof g_scratch[r]);
    COLL_CHECK_MSG(rc == COLL_OK && !coll_window_ok(&c), "p=%d rank %d: init without windows: %d", g_p, r, rc);
    for (i = 0; i < 100; i++) s[i] = (float)(r * 2 + i);
    rc = coll_window_allreduce(&c, s, d, 100, COLL_FLOAT32, COLL_SUM, COLL_WINDOW_ONE_SHOT);
    for (i = 0; rc == COLL_OK && i < 100; i++)
        if (d[i] != (float)(g_p * (g_p - 1) + g_p * i)) { bad = 1; break; }
    COLL_CHECK_MSG(rc == COLL_OK && !bad, "p=%d rank %d: allreduce without windows: rc %d, element %d", g_p, r, rc, i);
    rc = coll_window_barrier(&c);
    COLL_CHECK_MSG(rc == COLL_OK, "p=%d rank %d: barrier without windows: %d", g_p, r, rc);
}

/* A thread standing in for a core: poll a little, then yield (ranks
   outnumber cores here); the port's own deadline still holds. */
static int smp_idle(void *user, unsigned long polls)
{
    (void)user;
    if (polls > 16) sched_yield();
    return 0;
}

/* Over the smp mailbox: rank 1's src outside the window region makes its
   record none for every rank: every rank fails the call. */
static void outside_region(coll_comm *c, int r)
{
    float outside[16], *d = (float *)(void *)g_dst[r];
    int rc, i;
    if (g_p < 2) return;
    for (i = 0; i < 16; i++) outside[i] = 1.0f;
    rc = coll_window_allreduce(c, r == 1 ? outside : (float *)(void *)g_src[r], d, 16, COLL_FLOAT32, COLL_SUM,
                               COLL_WINDOW_AUTO);
    COLL_CHECK_MSG(rc == COLL_ERR_IO, "p=%d rank %d: rank 1's src outside the region: %d, not IO", g_p, r, rc);
}

static int body(int r, void *arg)
{
    coll_comm c;
    coll_port p;
    int rc;
    (void)arg;
    if (g_smp) {
        rc = coll_smp_mailbox_init(&g_mb[r], g_block, sizeof g_block, r, g_p, SMP_SLOTS, SMP_SLOT);
        if (rc == COLL_OK) rc = coll_smp_mailbox_set_window(&g_mb[r], &g_buf, sizeof g_buf);
        g_mb[r].idle = smp_idle;
        COLL_CHECK_MSG(rc == COLL_OK, "p=%d rank %d: smp mailbox init %d", g_p, r, rc);
        p = coll_smp_mailbox_port(&g_mb[r]);
    } else {
        p = coll_threads_port(&W, r);
    }
    rc = coll_init(&c, r, g_p, &p, g_scratch[r], sizeof g_scratch[r]);
    COLL_CHECK_MSG(rc == COLL_OK && coll_window_ok(&c), "p=%d rank %d: init %d, windows %d", g_p, r, rc, coll_window_ok(&c));
    if (rc != COLL_OK) return 0;
    allreduce_matrix(&c, r);
    others(&c, r);
    refusals(&c, r);
    if (g_smp) { outside_region(&c, r); return 0; }   /* the port is broken after it */
    no_windows(r);
    lying_record(r);
    declined_record(r);
    return 0;
}

/* ---- a rank that never calls ----------------------------------------------- */

static int silent_body(int r, void *arg)
{
    coll_comm c;
    coll_port p = coll_threads_port(&W, r);
    float *s = (float *)(void *)g_src[r];
    double t0;
    int rc;
    (void)arg;
    rc = coll_init(&c, r, 3, &p, g_scratch[r], sizeof g_scratch[r]);
    if (rc != COLL_OK || r == 2) return 0;          /* rank 2 is gone */
    t0 = now_ms();
    rc = coll_window_allreduce(&c, s, s, 100, COLL_FLOAT32, COLL_SUM, COLL_WINDOW_AUTO);
    COLL_CHECK_MSG(rc == COLL_ERR_TIMEOUT || rc == COLL_ERR_ABORTED, "rank %d: a rank that never calls: %d", r, rc);
    COLL_CHECK_MSG(now_ms() - t0 < 2000, "rank %d: failed after %.0f ms (deadline 200)", r, now_ms() - t0);
    COLL_CHECK_MSG(coll_last_error(&c)[0] != 0, "rank %d: no reason given", r);
    rc = coll_window_barrier(&c);
    COLL_CHECK_MSG(rc != COLL_OK, "rank %d: the communicator works after the port failed", r);
    return 0;
}

/* What the forked ranks' checks counted, in memory the parent shares. */
typedef struct shm_counts {
    unsigned long passed, failed;
    unsigned long long heap[3];            /* where each rank by name mapped the heap */
} shm_counts;
static shm_counts *g_counts;

/* ---- the shm port: forked ranks, buffers in the segment's heap -------------- */
static unsigned long g_sends;              /* this process's sends (see counting_*) */

/* A rank's checks go to the parent: what it counted since it was forked. */
static void shm_report(unsigned long p0, unsigned long f0)
{
    __atomic_add_fetch(&g_counts->passed, coll_test_passed - p0, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&g_counts->failed, coll_test_failed - f0, __ATOMIC_SEQ_CST);
}

/* The shm port's sends, counted: a window call moves no message, coll.h's
   own call does. */
static int counting_send(void *ctx, int peer, const void *b, size_t n)
{
    g_sends++;
    return coll_shm_send(ctx, peer, b, n);
}
static int counting_isend(void *ctx, int peer, const void *b, size_t n, int *h)
{
    g_sends++;
    return coll_shm_isend(ctx, peer, b, n, h);
}
static int counting_sendrecv(void *ctx, int to, const void *sb, size_t sn, int from, void *rb, size_t rn)
{
    g_sends++;
    return coll_shm_sendrecv(ctx, to, sb, sn, from, rb, rn);
}

static coll_port counting_port(const coll_port *in)
{
    coll_port p = *in;
    p.send = counting_send; p.isend = counting_isend; p.sendrecv = counting_sendrecv;
    return p;
}

/* One all-reduce of n floats (ones), every rank's src and dst given:
   a window call (no send) or coll.h's own (sends), result p everywhere. */
static void shm_sum(coll_comm *c, int r, float *s, float *d, int n, int want_sends, const char *what)
{
    unsigned long before = g_sends;
    int rc, i, bad = 0;
    for (i = 0; i < n; i++) { s[i] = 1.0f; d[i] = -7.0f; }
    rc = coll_window_allreduce(c, s, d, (size_t)n, COLL_FLOAT32, COLL_SUM, COLL_WINDOW_AUTO);
    for (i = 0; rc == COLL_OK && i < n; i++)
        if (d[i] != (float)g_p) { bad = 1; break; }
    COLL_CHECK_MSG(rc == COLL_OK && !bad, "shm p=%d rank %d %s: rc %d, element %d (%s)", g_p, r, what, rc, i,
                   coll_last_error(c));
    if (g_p > 1)
        COLL_CHECK_MSG((g_sends != before) == want_sends, "shm p=%d rank %d %s: %lu sends, want %s", g_p, r, what,
                       g_sends - before, want_sends ? "some (coll.h's own call)" : "none (windows)");
}

/* Rank `who`'s buffers outside the heap (this process's own memory): its
   record is declined, every rank runs coll.h's own call and every result
   is still right - the whole matrix of the other collectives, and an
   all-reduce of each form; then the heap again: windows. */
static void shm_outside(coll_comm *c, int r, int who)
{
    static unsigned char own_src[BIG], own_dst[BIG];
    unsigned char *hs = g_src[r], *hd = g_dst[r];
    if (r == who) { g_src[r] = own_src; g_dst[r] = own_dst; }
    shm_sum(c, r, (float *)(void *)g_src[r], (float *)(void *)g_dst[r], 80, 1, "buffers outside the heap");
    shm_sum(c, r, (float *)(void *)g_src[r], (float *)(void *)g_dst[r], 8, 0, "a small call's input inline, buffers outside the heap");
    allreduce_case(c, r, COLL_FLOAT32, 0, 1000, 0, COLL_WINDOW_ONE_SHOT);
    allreduce_case(c, r, COLL_INT32, 3, 9000, 1, COLL_WINDOW_TWO_SHOT);
    allreduce_case(c, r, COLL_FLOAT64, 4, 7, 0, COLL_WINDOW_AUTO);
    others(c, r);
    g_src[r] = hs; g_dst[r] = hd;
    shm_sum(c, r, (float *)(void *)g_src[r], (float *)(void *)g_dst[r], 80, 0, "buffers in the heap");
}

/* Rank 1's record forged in the segment after its post (g_forge: how);
   every rank must fail the call (the record is none: COLL_ERR_IO), no
   dst written, no byte outside a buffer - and the communicator goes on. */
static int g_forge;
static int forging_post(void *ctx, const coll_window_rec *rec)
{
    coll_shm *s = (coll_shm *)ctx;
    uint64_t h = (uint64_t)s->heap_bytes;
    int rc = coll_shm__window_post(ctx, rec);
    coll_shm__winrec *e = &coll_shm__went(s, s->rank)->rec[(s->wposts - 1u) & 1u];   /* the slot just posted */
    switch (g_forge) {
    case 0: e->src_off = h + 64; break;                          /* past the heap */
    case 1: e->src_off = h - 8; e->src_bytes = UINT64_MAX - 4; break;   /* off + bytes wraps */
    case 2: e->dst_off = COLL_SHM__NOWHERE; e->dst_bytes = 100; break;  /* NULL with bytes */
    case 3: e->dst_off = UINT64_MAX - 1; e->dst_bytes = 16; break;     /* far past */
    case 4: e->src_off = h; e->src_bytes = 1; break;            /* one byte past the end */
    case 5: e->inl_bytes = sizeof e->inl + 8; break;             /* more input than a record holds */
    default: break;                                               /* (-1) honest */
    }
    return rc;
}

static void shm_forged(const coll_port *port, int r)
{
    coll_comm c;
    coll_port p = *port;
    float *s = (float *)(void *)g_src[r], *d = (float *)(void *)g_dst[r];
    int rc, i;
    if (g_p < 2) return;
    if (r == 1) p.window_post = forging_post;
    rc = coll_init(&c, r, g_p, &p, g_scratch[r], sizeof g_scratch[r]);
    COLL_CHECK_MSG(rc == COLL_OK && coll_window_ok(&c), "shm p=%d rank %d: init of the forging port: %d", g_p, r, rc);
    for (g_forge = 0; g_forge < 6; g_forge++) {
        for (i = 0; i < 64; i++) { s[i] = 1.0f; d[i] = -7.0f; }
        guard_set(g_src[r], 64 * 4); guard_set(g_dst[r], 64 * 4);
        rc = coll_window_allreduce(&c, s, d, 64, COLL_FLOAT32, COLL_SUM, COLL_WINDOW_AUTO);
        COLL_CHECK_MSG(rc == COLL_ERR_IO, "shm p=%d rank %d: rank 1's record forged (%d): %d, not IO", g_p, r, g_forge, rc);
        for (i = 0; i < 64 && d[i] == -7.0f; i++) {}
        COLL_CHECK_MSG(i == 64 && guard_ok(g_src[r], 64 * 4) && guard_ok(g_dst[r], 64 * 4),
                       "shm p=%d rank %d: a forged record's call wrote (%d)", g_p, r, g_forge);
    }
    g_forge = -1;
    rc = coll_window_barrier(&c);
    COLL_CHECK_MSG(rc == COLL_OK, "shm p=%d rank %d: barrier after the forgeries: %d (%s)", g_p, r, rc, coll_last_error(&c));
}

/* A forked rank: its src and dst from its part of the heap, the whole
   matrix over the shm port's windows, refusals, buffers outside the heap,
   forged records. Its counts go to the parent. */
static int shm_body(int r, coll_port *port, void *arg)
{
    unsigned long p0 = coll_test_passed, f0 = coll_test_failed;
    coll_shm *sh = (coll_shm *)port->ctx;
    coll_port p = counting_port(port);
    coll_comm c;
    int rc;
    (void)arg;
    g_src[r] = (unsigned char *)coll_shm_alloc(sh, BIG);
    g_dst[r] = (unsigned char *)coll_shm_alloc(sh, BIG);
    COLL_CHECK_MSG(g_src[r] && g_dst[r] && ((uintptr_t)g_src[r] & 63) == 0 && !coll_shm_alloc(sh, COLL_SHM_HEAP_BYTES / (unsigned)g_p),
                   "shm p=%d rank %d: coll_shm_alloc: %p %p", g_p, r, (void *)g_src[r], (void *)g_dst[r]);
    rc = coll_init(&c, r, g_p, &p, g_scratch[r], sizeof g_scratch[r]);
    COLL_CHECK_MSG(rc == COLL_OK && coll_window_ok(&c), "shm p=%d rank %d: init %d, windows %d", g_p, r, rc, coll_window_ok(&c));
    if (rc == COLL_OK && g_src[r] && g_dst[r]) {
        allreduce_matrix(&c, r);
        others(&c, r);
        refusals(&c, r);
        shm_outside(&c, r, g_p - 1);
        shm_forged(&p, r);
    }
    shm_report(p0, f0);
    return 0;
}

/* The shm port with no heap part at all would offer no windows: the
   default build is checked by test-shm; here the matrix at every p. */
static void shm_matrix(int p)
{
    int failed;
    g_p = p;
    failed = coll_shm_spawn(p, shm_body, NULL, 10000);
    COLL_CHECK_MSG(failed == 0, "shm p=%d: %d ranks failed", p, failed);
    coll_test_passed += g_counts->passed; coll_test_failed += g_counts->failed;
    g_counts->passed = g_counts->failed = 0;
    printf("shm p=%d: %lu passed, %lu failed so far\n", p, coll_test_passed, coll_test_failed);
}

/* ---- shm: a rank that is gone before a sync ------------------------------- */

/* Rank 2 of 3 leaves before the call (g_death: 0 exits, 1 is killed, 2
   sleeps without calling); ranks 0 and 1 must fail the call within the
   deadline (500 ms), not hang. */
static int g_death;
static int death_body(int r, coll_port *port, void *arg)
{
    unsigned long p0 = coll_test_passed, f0 = coll_test_failed;
    coll_shm *sh = (coll_shm *)port->ctx;
    float *v = (float *)coll_shm_alloc(sh, 256 * sizeof(float));
    coll_comm c;
    double t0;
    int rc, i;
    (void)arg;
    rc = coll_init(&c, r, 3, port, g_scratch[r], sizeof g_scratch[r]);
    if (rc == COLL_OK) rc = coll_window_barrier(&c);           /* all there once */
    COLL_CHECK_MSG(rc == COLL_OK && v, "death %d rank %d: init and a first barrier: %d", g_death, r, rc);
    if (r == 2) {
        /* the others must have left the barrier first: a death they see
           inside it aborts the group there (the launcher aborts it) */
        struct timespec lag = { 0, 200000000L };
        nanosleep(&lag, NULL);
        if (g_death == 1) raise(SIGKILL);
        if (g_death == 2) { struct timespec ts = { 3, 0 }; nanosleep(&ts, NULL); }
        shm_report(p0, f0);
        return 0;
    }
    for (i = 0; v && i < 256; i++) v[i] = 1.0f;
    t0 = now_ms();
    rc = coll_window_allreduce(&c, v, v, 256, COLL_FLOAT32, COLL_SUM, COLL_WINDOW_AUTO);
    COLL_CHECK_MSG(rc == COLL_ERR_IO || rc == COLL_ERR_TIMEOUT || rc == COLL_ERR_ABORTED,
                   "death %d rank %d: rank 2 gone: %d", g_death, r, rc);
    COLL_CHECK_MSG(now_ms() - t0 < 2500, "death %d rank %d: failed after %.0f ms (deadline 500)", g_death, r, now_ms() - t0);
    COLL_CHECK_MSG(coll_last_error(&c)[0] != 0, "death %d rank %d: no reason given", g_death, r);
    if (getenv("WIN_VERBOSE")) printf("    death %d rank %d: %d after %.0f ms (%s)\n", g_death, r, rc, now_ms() - t0, coll_last_error(&c));
    shm_report(p0, f0);
    return 0;
}

static void shm_deaths(void)
{
    for (g_death = 0; g_death < 3; g_death++) {
        double t0 = now_ms();
        int failed = coll_shm_spawn(3, death_body, NULL, 500);
        COLL_CHECK_MSG(g_death == 0 ? failed == 0 : failed >= 1, "death %d: %d ranks failed", g_death, failed);
        COLL_CHECK_MSG(now_ms() - t0 < 8000, "death %d: the group took %.0f ms", g_death, now_ms() - t0);
        coll_test_passed += g_counts->passed; coll_test_failed += g_counts->failed;
        g_counts->passed = g_counts->failed = 0;
    }
    printf("shm deaths: %lu passed, %lu failed so far\n", coll_test_passed, coll_test_failed);
}

/* ---- shm by name: every process maps the segment where it may ------------ */

/* Rank r of 3 joins by name (coll_shm_open) after reserving (r + 1) x 64 MiB of
   its own first (64 MiB a rank, more than any hole), so the segment - and the heap - lies at another address
   in each process: the records' offsets are what carries. A window call
   of each kind over heap buffers, checked, with no message sent. */
static void open_rank(const char *name, int r)
{
    coll_shm sh;
    coll_port port, p;
    coll_comm c;
    unsigned long before;
    void *pad = mmap(NULL, (size_t)(r + 1) << 26, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    float *s, *d;
    int rc, i, bad = 0;
    g_p = 3;
    rc = coll_shm_open(&sh, name, r, 3, 5000, &port);
    COLL_CHECK_MSG(rc == COLL_OK, "open rank %d: coll_shm_open %d (%s)", r, rc, sh.why ? sh.why : "");
    if (rc != COLL_OK) return;
    g_counts->heap[r] = (unsigned long long)(uintptr_t)sh.heap;
    p = counting_port(&port);
    s = (float *)coll_shm_alloc(&sh, 3000 * sizeof(float));
    d = (float *)coll_shm_alloc(&sh, 3000 * sizeof(float));
    rc = coll_init(&c, r, 3, &p, g_scratch[r], sizeof g_scratch[r]);
    COLL_CHECK_MSG(rc == COLL_OK && coll_window_ok(&c) && s && d, "open rank %d: init %d", r, rc);
    if (rc != COLL_OK || !s || !d) { coll_shm_close(&sh); return; }
    before = g_sends;
    for (i = 0; i < 1000; i++) s[i] = (float)(r + i);
    rc = coll_window_allreduce(&c, s, d, 1000, COLL_FLOAT32, COLL_SUM, COLL_WINDOW_ONE_SHOT);
    for (i = 0; rc == COLL_OK && i < 1000; i++) if (d[i] != (float)(3 + 3 * i)) bad = 1;
    rc |= coll_window_allreduce(&c, s, s, 1000, COLL_FLOAT32, COLL_MAX, COLL_WINDOW_TWO_SHOT);
    for (i = 0; rc == COLL_OK && i < 1000; i++) if (s[i] != (float)(2 + i)) bad = 1;
    for (i = 0; i < 1000; i++) s[i] = (float)(r * 1000 + i);
    rc |= coll_window_allgather(&c, s, d, 1000, COLL_FLOAT32);
    for (i = 0; rc == COLL_OK && i < 3000; i++) if (d[i] != (float)i) bad = 1;
    rc |= coll_window_broadcast(&c, d, 3000, COLL_FLOAT32, 2);
    rc |= coll_window_reduce(&c, d, r == 1 ? s : NULL, 1000, COLL_FLOAT32, COLL_SUM, 1);
    for (i = 0; rc == COLL_OK && r == 1 && i < 1000; i++) if (s[i] != (float)(3 * i)) bad = 1;
    COLL_CHECK_MSG(rc == COLL_OK && !bad, "open rank %d: window calls by name: rc %d, bad %d (%s)", r, rc, bad,
                   coll_last_error(&c));
    COLL_CHECK_MSG(g_sends == before, "open rank %d: %lu sends, want none", r, g_sends - before);
    rc = coll_window_barrier(&c);
    COLL_CHECK_MSG(rc == COLL_OK, "open rank %d: barrier %d", r, rc);
    coll_shm_close(&sh);
    if (pad != MAP_FAILED) munmap(pad, (size_t)(r + 1) << 26);
}

static void shm_open_test(void)
{
    char name[64];
    pid_t pid[3];
    int r, st, bad = 0;
    snprintf(name, sizeof name, "/coll_test_window_%d", (int)getpid());
    fflush(NULL);
    for (r = 0; r < 3; r++) {
        pid[r] = fork();
        if (pid[r] == 0) {
            unsigned long p0 = coll_test_passed, f0 = coll_test_failed;
            open_rank(name, r);
            shm_report(p0, f0);
            fflush(NULL);
            _exit(0);
        }
    }
    for (r = 0; r < 3; r++)
        if (pid[r] < 0 || waitpid(pid[r], &st, 0) != pid[r] || !WIFEXITED(st) || WEXITSTATUS(st)) bad = 1;
    COLL_CHECK_MSG(!bad, "open: a rank did not exit cleanly");
    COLL_CHECK_MSG(g_counts->heap[0] != g_counts->heap[1] && g_counts->heap[1] != g_counts->heap[2],
                   "open: the heap at one address in every process (%llx %llx %llx): the offsets go untested",
                   g_counts->heap[0], g_counts->heap[1], g_counts->heap[2]);
    coll_test_passed += g_counts->passed; coll_test_failed += g_counts->failed;
    g_counts->passed = g_counts->failed = 0;
    printf("shm by name: %lu passed, %lu failed so far\n", coll_test_passed, coll_test_failed);
}

int main(void)
{
    static const int ps[] = { 1, 2, 3, 4, 7 };
    const char *e = getenv("COLL_TEST_LEVEL");
    unsigned i;
    void *m = mmap(NULL, 128 + MAXP * MAXN * ES_MAX, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) { perror("mmap"); return 2; }
    g_counts = (shm_counts *)m;
    g_out = (unsigned char (*)[MAXN * ES_MAX])(void *)((unsigned char *)m + 128);
    g_level = e ? atoi(e) : 1;
    for (i = 0; i < MAXP; i++) { g_src[i] = g_buf.src[i]; g_dst[i] = g_buf.dst[i]; }
    for (g_smp = 0; g_smp < 2; g_smp++)
        for (i = 0; i < sizeof ps / sizeof ps[0]; i++) {
            g_p = ps[i];
            if (coll_threads_init(&W, g_p, 10000) != COLL_OK) { COLL_CHECK_MSG(0, "threads init p=%d", g_p); continue; }
            if (g_smp && coll_smp_mailbox_format(g_block, sizeof g_block, g_p, SMP_SLOTS, SMP_SLOT) != COLL_OK)
                COLL_CHECK_MSG(0, "smp mailbox format p=%d", g_p);
            coll_threads_run(&W, body, NULL);
            coll_threads_destroy(&W);
            printf("%s p=%d: %lu passed, %lu failed so far\n", g_smp ? "smp mailbox" : "threads", g_p,
                   coll_test_passed, coll_test_failed);
        }
    if (coll_threads_init(&W, 3, 200) == COLL_OK) {
        coll_threads_run(&W, silent_body, NULL);
        coll_threads_destroy(&W);
    }
    g_smp = 0;
    for (i = 0; i < sizeof ps / sizeof ps[0]; i++)
        shm_matrix(ps[i]);
    shm_deaths();
    shm_open_test();
    return coll_test_summary("window");
}
