/* test_window_inline.c - coll_window.h's inline form (>>win-inline): a
   small call's input rides in the records, and the call is a post and one
   sync. Over the threads port with a wrapper that counts each rank's posts
   and syncs (and can make rank 1's port lie).

   At p = 1, 2, 3, 4 and 7, on every rank, against a plain loop:
     - the seven kinds with a window form (reduce and broadcast from the
       first and the last rank), in place and out, float32 sum (all-reduce
       also int32 max and float64 avg), counts 0, 1, the largest whose
       input fits COLL_WINDOW_INLINE bytes (exactly one post and one sync)
       and one more (two syncs or more); the bytes past every dst untouched;
     - 300 calls back to back, new inputs each, a count that changes from
       call to call, every fifth one too large to be inline, each rank
       napping a pseudo-random while before some: every result right (a
       rank that ran ahead never posts over a record still being read);
     - refusals: a NULL dst on one rank (it COLL_ERR_INVAL, the others
       COLL_ERR_PEER); counts that differ across the inline limit (one rank
       inline, the others not, both ways round: COLL_ERR_MISMATCH on every
       rank); and the next call right on every rank (the syncs still meet);
     - rank 1's port carrying one byte less of its input than the call
       needs: COLL_ERR_CORRUPT on every rank, no dst written, the next call
       right;
     - a port that does not offer window_inline: the same small calls take
       two syncs, right.
   Plain, ASan+UBSan, TSan. Ends with "window-inline: N passed, M failed". */
#define _POSIX_C_SOURCE 200809L
#define COLL_IMPLEMENTATION
#include "coll_window.h"
#define COLL_THREADS_IMPLEMENTATION
#include "ports/coll_threads.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "test/coll_test.h"

enum { MAXP = 7, MAXE = 1024, GUARD = 16 };
#define FIT(k, p, es) (COLL_WINDOW_INLINE / ((es) * ((k) == COLL_REDUCE_SCATTER || (k) == COLL_ALLTOALL ? (size_t)(p) : 1u)))

static coll_threads W;
static int g_p, g_lie, g_inline_on = 1;     /* g_lie: rank 1's port lies */
static coll_port g_inner[MAXP];
static unsigned long g_posts[MAXP], g_syncs[MAXP];
static double g_src[MAXP][MAXE], g_dst[MAXP][MAXE];   /* (double: room and alignment for every dtype) */
static unsigned char g_scratch[MAXP][4096];

/* ---- the wrapper: counts posts and syncs; rank g_lie's record lies ---- */
static int w_send(void *ctx, int peer, const void *b, size_t n) { coll_port *in = (coll_port *)ctx; return in->send(in->ctx, peer, b, n); }
static int w_recv(void *ctx, int peer, void *b, size_t n) { coll_port *in = (coll_port *)ctx; return in->recv(in->ctx, peer, b, n); }
static int w_post(void *ctx, const coll_window_rec *rec)
{
    coll_port *in = (coll_port *)ctx;
    coll_window_rec r = *rec;
    g_posts[in - g_inner]++;
    if (in - g_inner == 1 && g_lie && r.inl_bytes)   /* (rank 1 alone reads g_lie) */ r.inl_bytes--;
    return in->window_post(in->ctx, &r);
}
static int w_sync(void *ctx) { coll_port *in = (coll_port *)ctx; g_syncs[in - g_inner]++; return in->window_sync(in->ctx); }
static const coll_window_rec *w_peer(void *ctx, int r) { coll_port *in = (coll_port *)ctx; return in->window_peer(in->ctx, r); }

static coll_port wrapped(int r)
{
    coll_port p;
    g_inner[r] = coll_threads_port(&W, r);
    memset(&p, 0, sizeof p);
    p.ctx = &g_inner[r];
    p.send = w_send; p.recv = w_recv;
    p.window_post = w_post; p.window_sync = w_sync; p.window_peer = w_peer;
    p.window_inline = g_inline_on && g_inner[r].window_inline;
    return p;
}

/* ---- one call and its plain-loop check --------------------------------- */
typedef struct call {
    coll_kind k;
    coll_dtype t;
    coll_op op;
    size_t n;
    int root, inplace, salt;
} call;

/* Rank r's input element i in call salt: small integers, exact in every dtype. */
static double input(int r, size_t i, int salt) { return (double)((r * 7 + (int)(i % 101) * 3 + salt * 5) % 17 - 8); }

static size_t es_of(coll_dtype t) { return coll_dtype_size(t); }
static void put(coll_dtype t, void *b, size_t i, double v)
{
    if (t == COLL_FLOAT32) ((float *)b)[i] = (float)v;
    else if (t == COLL_INT32) ((int32_t *)b)[i] = (int32_t)v;
    else ((double *)b)[i] = v;
}
static double get(coll_dtype t, const void *b, size_t i)
{
    if (t == COLL_FLOAT32) return ((const float *)b)[i];
    if (t == COLL_INT32) return ((const int32_t *)b)[i];
    return ((const double *)b)[i];
}

/* The reduction of element i over every rank's input. */
static double fold_all(const call *x, size_t i)
{
    double v = input(0, i, x->salt);
    int q;
    for (q = 1; q < g_p; q++) {
        double y = input(q, i, x->salt);
        v = x->op == COLL_MAX ? (y > v ? y : v) : v + y;
    }
    return x->op == COLL_AVG ? v / g_p : v;
}

/* Elements of src rank r fills, of dst it must end with. */
static size_t in_len(const call *x, int r)
{
    if (x->k == COLL_REDUCE_SCATTER || x->k == COLL_ALLTOALL) return x->n * (size_t)g_p;
    if (x->k == COLL_BROADCAST) return r == x->root ? x->n : 0;
    return x->k == COLL_BARRIER ? 0 : x->n;
}
static size_t out_len(const call *x, int r)
{
    if (x->k == COLL_ALLGATHER || x->k == COLL_ALLTOALL) return x->n * (size_t)g_p;
    if (x->k == COLL_REDUCE) return r == x->root ? x->n : 0;
    return x->k == COLL_BARRIER ? 0 : x->n;
}

/* What element i of rank r's dst must be. */
static double want(const call *x, int r, size_t i)
{
    size_t n = x->n;
    switch (x->k) {
    case COLL_REDUCE_SCATTER: return fold_all(x, (size_t)r * n + i);
    case COLL_ALLGATHER:      return input((int)(i / n), i % n, x->salt);
    case COLL_BROADCAST:      return input(x->root, i, x->salt);
    case COLL_ALLTOALL:       return input((int)(i / n), (size_t)r * n + i % n, x->salt);
    default:                  return fold_all(x, i);
    }
}

/* Runs call x on rank r: its rc; *src, *dst where it put them. */
static int run(coll_comm *c, const call *x, int r, int null_dst)
{
    size_t es = es_of(x->t), i, n = x->n;
    unsigned char *s = (unsigned char *)g_src[r], *d = (unsigned char *)g_dst[r];
    size_t nin = in_len(x, r);
    memset(d, 0xA5, sizeof g_dst[r]);
    if (x->inplace) {
        if (x->k == COLL_ALLGATHER) s = d + (size_t)r * n * es;
        else if (x->k == COLL_REDUCE_SCATTER) d = s + (size_t)r * n * es;
        else if (x->k != COLL_REDUCE || r == x->root) d = s;
    }
    if (x->k == COLL_BROADCAST) s = d = (unsigned char *)g_dst[r];
    for (i = 0; i < nin; i++) put(x->t, s, i, input(r, i, x->salt));
    if (null_dst) d = NULL;
    switch (x->k) {
    case COLL_ALLREDUCE:      return coll_window_allreduce(c, s, d, n, x->t, x->op, COLL_WINDOW_AUTO);
    case COLL_REDUCE_SCATTER: return coll_window_reduce_scatter(c, s, d, n, x->t, x->op);
    case COLL_ALLGATHER:      return coll_window_allgather(c, s, d, n, x->t);
    case COLL_BROADCAST:      return coll_window_broadcast(c, d, n, x->t, x->root);
    case COLL_REDUCE:         return coll_window_reduce(c, s, d, n, x->t, x->op, x->root);
    case COLL_ALLTOALL:       return coll_window_alltoall(c, s, d, n, x->t);
    default:                  return coll_window_barrier(c);
    }
}

/* Where rank r's result of x lies (run's choice of dst). */
static const unsigned char *result(const call *x, int r)
{
    unsigned char *s = (unsigned char *)g_src[r], *d = (unsigned char *)g_dst[r];
    if (x->k == COLL_BROADCAST) return d;
    if (!x->inplace) return d;
    if (x->k == COLL_ALLGATHER) return d;
    if (x->k == COLL_REDUCE_SCATTER) return s + (size_t)r * x->n * es_of(x->t);
    return x->k != COLL_REDUCE || r == x->root ? s : d;
}

static const char *what(const call *x, int r)
{
    static char b[MAXP][96];
    char *o = b[r];
    snprintf(o, 96, "p=%d %s n=%zu %s root %d salt %d", g_p, coll_kind_name(x->k), x->n,
             x->inplace ? "in place" : "out", x->root, x->salt);
    return o;
}

/* avg divides once, as the plain loop does, but may round apart by an ulp. */
static int same(const call *x, double a, double b)
{
    double d = a > b ? a - b : b - a;
    return x->op == COLL_AVG ? d <= 1e-12 * (b < 0 ? -b : b) + 1e-300 : a == b;
}

/* Runs x on rank r and checks its result and its bytes past the result
   (out of place; in place the buffer is the caller's whole src). */
static int check(coll_comm *c, const call *x, int r)
{
    int rc = run(c, x, r, 0), ok = 1;
    size_t i, m = out_len(x, r), es = es_of(x->t);
    const unsigned char *o = result(x, r);
    COLL_CHECK_MSG(rc == COLL_OK, "rank %d %s: %d (%s)", r, what(x, r), rc, coll_last_error(c));
    if (rc != COLL_OK) return 0;
    for (i = 0; i < m && ok; i++) ok = same(x, get(x->t, o, i), want(x, r, i));
    COLL_CHECK_MSG(ok, "rank %d %s: element %zu is %g, not %g", r, what(x, r), i - 1,
                   get(x->t, o, i - 1), want(x, r, i - 1));
    if (!x->inplace && o == (const unsigned char *)g_dst[r]) {
        for (i = m * es; i < m * es + GUARD && ok; i++) ok = o[i] == 0xA5;
        COLL_CHECK_MSG(ok, "rank %d %s: byte %zu past dst written", r, what(x, r), i - 1);
    }
    return ok;
}

/* Runs x and says whether it took exactly one post and one sync (inline). */
static int one_sync(coll_comm *c, const call *x, int r)
{
    unsigned long p0 = g_posts[r], s0 = g_syncs[r];
    check(c, x, r);
    return g_posts[r] - p0 == 1 && g_syncs[r] - s0 == 1;
}

/* ---- the parts ---------------------------------------------------------- */
static const coll_kind kinds[] = { COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER, COLL_BROADCAST,
                                   COLL_REDUCE, COLL_ALLTOALL, COLL_BARRIER };

static void edges(coll_comm *c, int r, int salt)
{
    static const coll_dtype ts[] = { COLL_FLOAT32, COLL_INT32, COLL_FLOAT64 };
    static const coll_op ops[] = { COLL_SUM, COLL_MAX, COLL_AVG };
    unsigned k, e, ip, tt;
    for (k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (tt = 0; tt < (kinds[k] == COLL_ALLREDUCE ? 3u : 1u); tt++)
            for (ip = 0; ip < 2; ip++)
                for (e = 0; e < 4; e++) {
                    call x;
                    size_t fit = FIT(kinds[k], g_p, es_of(ts[tt]));
                    int inl, expect;
                    x.k = kinds[k]; x.t = ts[tt]; x.op = ops[tt]; x.inplace = (int)ip;
                    x.n = e == 0 ? 0 : e == 1 ? 1 : e == 2 ? fit : fit + 1;
                    x.root = (int)(e + ip) % 2 ? g_p - 1 : 0;
                    x.salt = salt++;
                    if (x.k == COLL_BARRIER) x.n = 0;
                    expect = g_inline_on && x.n <= fit;
                    inl = one_sync(c, &x, r);
                    COLL_CHECK_MSG(inl == expect, "rank %d %s: %s", r, what(&x, r),
                                   expect ? "not one post and one sync" : "one sync, not inline");
                }
}

/* A pseudo-random nap before some calls: ranks run ahead of each other. */
static void nap(int r, int i)
{
    unsigned h = (unsigned)(r * 2654435761u) ^ (unsigned)(i * 40503u);
    h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    if (h % 4 == 0) {
        struct timespec t = { 0, (long)(h % 20000) };
        nanosleep(&t, 0);
    }
}

static void back_to_back(coll_comm *c, int r)
{
    int i;
    for (i = 0; i < 300; i++) {
        call x;
        x.k = kinds[i % 6]; x.t = COLL_FLOAT32; x.op = COLL_SUM; x.inplace = i / 6 % 2;
        x.n = (size_t)(i % 7) + 1;
        if (x.n > FIT(x.k, g_p, 4)) x.n = FIT(x.k, g_p, 4);
        if (i % 5 == 4) { x.k = COLL_ALLREDUCE; x.n = FIT(COLL_ALLREDUCE, g_p, 4) + 3; }
        x.root = i % g_p;
        x.salt = 1000 + i;
        nap(r, i);
        if (!check(c, &x, r)) break;
    }
}

/* Each rank's rc for one call where ranks differ. */
static void refusals(coll_comm *c, int r, int salt)
{
    call x;
    int rc;
    if (g_p < 2) return;
    x.k = COLL_ALLREDUCE; x.t = COLL_FLOAT32; x.op = COLL_SUM; x.inplace = 0; x.root = 0; x.n = 5; x.salt = salt;
    rc = run(c, &x, r, r == 1);
    COLL_CHECK_MSG(rc == (r == 1 ? COLL_ERR_INVAL : COLL_ERR_PEER), "p=%d rank %d NULL dst on rank 1: %d", g_p, r, rc);
    check(c, &x, r);
    x.n = r == 0 ? 1 : FIT(COLL_ALLREDUCE, g_p, 4) + 10;   /* rank 0 inline, the others not */
    rc = run(c, &x, r, 0);
    COLL_CHECK_MSG(rc == COLL_ERR_MISMATCH, "p=%d rank %d counts across the limit: %d", g_p, r, rc);
    x.n = 3; check(c, &x, r);
    x.n = r == 0 ? FIT(COLL_ALLREDUCE, g_p, 4) + 10 : 2;   /* the other way round */
    rc = run(c, &x, r, 0);
    COLL_CHECK_MSG(rc == COLL_ERR_MISMATCH, "p=%d rank %d counts across the limit: %d", g_p, r, rc);
    x.n = 4; check(c, &x, r);
}

static int body(int r, void *arg)
{
    coll_comm c;
    coll_port port = wrapped(r);
    int rc;
    (void)arg;
    rc = coll_init(&c, r, g_p, &port, g_scratch[r], sizeof g_scratch[r]);
    COLL_CHECK_MSG(rc == COLL_OK, "p=%d rank %d: init %d", g_p, r, rc);
    if (rc != COLL_OK) return 0;
    edges(&c, r, 0);
    if (g_inline_on) {
        back_to_back(&c, r);
        refusals(&c, r, 500);
    }
    return 0;
}

/* Rank 1's port carries one byte less of its input than its record says. */
static int lying_body(int r, void *arg)
{
    coll_comm c;
    coll_port port = wrapped(r);
    call x;
    int rc, ok = 1;
    size_t i;
    (void)arg;
    if (coll_init(&c, r, g_p, &port, g_scratch[r], sizeof g_scratch[r]) != COLL_OK) return 0;
    x.k = COLL_ALLREDUCE; x.t = COLL_FLOAT32; x.op = COLL_SUM; x.inplace = 0; x.root = 0; x.n = 6; x.salt = 7;
    rc = run(&c, &x, r, 0);
    for (i = 0; i < sizeof g_dst[r]; i++) ok &= ((unsigned char *)g_dst[r])[i] == 0xA5;
    COLL_CHECK_MSG(rc == COLL_ERR_CORRUPT && ok, "p=%d rank %d lying record: %d, dst %s", g_p, r, rc,
                   ok ? "untouched" : "written");
    if (r == 1) g_lie = 0;                   /* (rank 1 alone writes it, as it reads it) */
    check(&c, &x, r);
    return 0;
}

int main(void)
{
    static const int ps[] = { 1, 2, 3, 4, 7 };
    unsigned i;
    for (g_inline_on = 1; g_inline_on >= 0; g_inline_on--)
        for (i = 0; i < sizeof ps / sizeof ps[0]; i++) {
            g_p = ps[i];
            if (coll_threads_init(&W, g_p, 10000) != COLL_OK) { COLL_CHECK_MSG(0, "threads init p=%d", g_p); continue; }
            coll_threads_run(&W, body, NULL);
            coll_threads_destroy(&W);
            printf("%s p=%d: %lu passed, %lu failed so far\n", g_inline_on ? "inline" : "no window_inline", g_p,
                   coll_test_passed, coll_test_failed);
        }
    g_inline_on = 1;
    for (i = 1; i < sizeof ps / sizeof ps[0]; i++) {
        g_p = ps[i];
        g_lie = 1;
        if (coll_threads_init(&W, g_p, 10000) != COLL_OK) { COLL_CHECK_MSG(0, "threads init p=%d", g_p); continue; }
        coll_threads_run(&W, lying_body, NULL);
        coll_threads_destroy(&W);
    }
    printf("lying record: %lu passed, %lu failed so far\n", coll_test_passed, coll_test_failed);
    return coll_test_summary("window-inline");
}
