/* test_tcp.c - the TCP port (ports/coll_tcp.h) with ranks as real processes.

   Each world (2, 3, 4 and 7 ranks) is a set of fork()ed processes meeting on
   127.0.0.1 at a port the kernel just handed out. Every rank checks its own
   results against a plain-loop reference and reports its counts through a
   pipe; the parent adds them up. What is tested:
     - the port alone: ping-pong between every pair (1 B to 3 MiB, larger
       than the socket buffers), a full-duplex ring exchange of 4 MiB per
       rank through sendrecv (blocking sends would deadlock there), several
       isend/irecv in flight to one peer completing in posting order;
     - the rendezvous: by environment variables, a rank that never comes
       (COLL_ERR_TIMEOUT), ranks that disagree on WORLD_SIZE, a bad
       environment (COLL_ERR_INVAL);
     - the port checker (test/check_port.h), a short run at 3 ranks: every
       collective and algorithm, ragged counts, in and out of place,
       guards, the error cases;
     - the collectives over it: allreduce, reduce_scatter, allgather,
       broadcast, reduce with several algorithms, dtypes, ops, ragged counts,
       in-place and out-of-place, guard bytes after every output;
     - failures: a rank SIGKILLed in the middle of an all-reduce, and a rank
       stopped (SIGSTOP) in the middle of one: every other rank returns an
       error within the deadline; a lone blocking recv from a silent peer
       and a lone send to a peer that does not read give COLL_ERR_TIMEOUT
       at a deadline lowered after init (the links' SO_RCVTIMEO/SNDTIMEO).
   Every world shares one job token (COLL_TCP_TOKEN, made here unless the
   environment has one); strangers and hostile peers are test_tcp_auth.c's.
   `test_tcp --env` instead runs the collective checks as one rank of a job
   described by MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, COLL_TCP_TOKEN (test/tcp_netns.sh
   starts it on separate network namespaces) and prints "result P F N";
   `test_tcp --env-loop` all-reduces until the network fails under it.
*/
#define _POSIX_C_SOURCE 200809L
#define COLL_IMPLEMENTATION
#include "coll.h"
#define COLL_TCP_IMPLEMENTATION
#include "ports/coll_tcp.h"

#include <arpa/inet.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "test/check_port.h"
#include "test/test_clock.h"

/* ---- counting ------------------------------------------------------------ */

typedef struct counts { long pass, fail, nosys; } counts;
static counts K;
static int g_rank = -1, g_world;
static const char *g_only;          /* run only the worlds whose name has this */

/* One write per message, so the lines of ranks failing together do not
   interleave. */
static void report(int line, const char *fmt, ...)
{
    char msg[400];
    int n = snprintf(msg, sizeof msg, "rank %d: test_tcp.c:%d: ", g_rank, line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof msg - (size_t)n - 1, fmt, ap);
    va_end(ap);
    strcat(msg, "\n");
    fputs(msg, stderr);
}

#define CHECK(cond, ...) do {                                               \
        if (cond) K.pass++;                                                  \
        else { K.fail++; report(__LINE__, __VA_ARGS__); }                    \
    } while (0)

static unsigned char pattern(int from, int to, size_t i, int salt)
{
    return (unsigned char)(from * 37 + to * 11 + (int)(i % 251) + salt * 5 + (int)(i >> 9));
}

/* ---- the port alone ------------------------------------------------------- */

static void port_pingpong(coll_tcp *t)
{
    static const size_t sizes[] = { 1, 1000, 3u << 20 };
    size_t si, i;
    int a, b;
    for (si = 0; si < sizeof sizes / sizeof *sizes; si++) {
        size_t n = sizes[si];
        unsigned char *buf = (unsigned char *)malloc(n);
        for (a = 0; a < t->nranks; a++)
            for (b = a + 1; b < t->nranks; b++) {
                int rc, ok = 1;
                if (t->rank == a) {
                    for (i = 0; i < n; i++) buf[i] = pattern(a, b, i, 0);
                    rc = coll_tcp_send(t, b, buf, n);
                    CHECK(rc == 0, "send %d->%d of %zu: %d", a, b, n, rc);
                    rc = coll_tcp_recv(t, b, buf, n);
                    CHECK(rc == 0, "recv %d<-%d of %zu: %d", a, b, n, rc);
                    for (i = 0; i < n; i++) ok &= buf[i] == pattern(b, a, i, 0);
                    CHECK(ok, "pong %d<-%d of %zu bytes differs", a, b, n);
                } else if (t->rank == b) {
                    rc = coll_tcp_recv(t, a, buf, n);
                    CHECK(rc == 0, "recv %d<-%d of %zu: %d", b, a, n, rc);
                    for (i = 0; i < n; i++) ok &= buf[i] == pattern(a, b, i, 0);
                    CHECK(ok, "ping %d<-%d of %zu bytes differs", b, a, n);
                    for (i = 0; i < n; i++) buf[i] = pattern(b, a, i, 0);
                    rc = coll_tcp_send(t, a, buf, n);
                    CHECK(rc == 0, "send %d->%d of %zu: %d", b, a, n, rc);
                }
            }
        free(buf);
    }
}

/* Everyone sends 4 MiB right and receives 4 MiB from the left at once. With
   send-then-recv every rank would block in send once the socket buffers
   fill; sendrecv must keep draining while it sends. */
static void port_ring_exchange(coll_tcp *t)
{
    size_t n = 4u << 20, i;
    int right = (t->rank + 1) % t->nranks, left = (t->rank + t->nranks - 1) % t->nranks, rc, ok = 1;
    unsigned char *s = (unsigned char *)malloc(n), *r = (unsigned char *)malloc(n);
    for (i = 0; i < n; i++) s[i] = pattern(t->rank, right, i, 1);
    memset(r, 0, n);
    rc = coll_tcp_sendrecv(t, right, s, n, left, r, n);
    CHECK(rc == 0, "ring sendrecv: %d", rc);
    for (i = 0; i < n; i++) ok &= r[i] == pattern(left, t->rank, i, 1);
    CHECK(ok, "ring sendrecv data from %d differs", left);
    /* and the same with one peer on both sides (a pairwise exchange) */
    if (t->nranks % 2 == 0) {
        int peer = t->rank ^ 1;
        for (i = 0; i < n; i++) s[i] = pattern(t->rank, peer, i, 2);
        rc = coll_tcp_sendrecv(t, peer, s, n, peer, r, n);
        CHECK(rc == 0, "pair sendrecv: %d", rc);
        ok = 1;
        for (i = 0; i < n; i++) ok &= r[i] == pattern(peer, t->rank, i, 2);
        CHECK(ok, "pair sendrecv data from %d differs", peer);
    }
    free(s); free(r);
}

/* Four isends of different sizes to the right, four irecvs from the left,
   waited for in reverse order: the data must land in posting order. */
static void port_nonblocking(coll_tcp *t)
{
    enum { M = 4 };
    static const size_t sizes[M] = { 3, 70000, 1, 1u << 20 };
    unsigned char *s[M], *r[M];
    int hs[M], hr[M], m, rc, ok;
    int right = (t->rank + 1) % t->nranks, left = (t->rank + t->nranks - 1) % t->nranks;
    size_t i;
    for (m = 0; m < M; m++) {
        s[m] = (unsigned char *)malloc(sizes[m]);
        r[m] = (unsigned char *)calloc(sizes[m], 1);
        for (i = 0; i < sizes[m]; i++) s[m][i] = pattern(t->rank, right, i, 10 + m);
    }
    for (m = 0; m < M; m++) {
        rc = coll_tcp_irecv(t, left, r[m], sizes[m], &hr[m]);
        CHECK(rc == 0, "irecv %d: %d", m, rc);
        rc = coll_tcp_isend(t, right, s[m], sizes[m], &hs[m]);
        CHECK(rc == 0, "isend %d: %d", m, rc);
    }
    for (m = M - 1; m >= 0; m--) {
        rc = coll_tcp_wait(t, hr[m], 1);
        CHECK(rc == 0, "wait irecv %d: %d", m, rc);
    }
    for (m = M - 1; m >= 0; m--) {
        rc = coll_tcp_wait(t, hs[m], 1);
        CHECK(rc == 0, "wait isend %d: %d", m, rc);
    }
    for (m = 0; m < M; m++) {
        ok = 1;
        for (i = 0; i < sizes[m]; i++) ok &= r[m][i] == pattern(left, t->rank, i, 10 + m);
        CHECK(ok, "message %d from %d landed out of order or damaged", m, left);
        free(s[m]); free(r[m]);
    }
    /* a handle that was never handed out */
    CHECK(coll_tcp_wait(t, COLL_TCP_MAX_REQUESTS - 1, 0) == COLL_ERR_INVAL, "stale handle accepted");
    CHECK(coll_tcp_send(t, t->rank, s, 1) == COLL_ERR_INVAL, "send to self accepted");
}

/* ---- collectives ---------------------------------------------------------- */

/* Inputs are small integers, so float sums are exact and every rank can
   compute the reference with a plain loop. */
static long long input(int rank, size_t i, int salt)
{
    return (long long)((rank * 7 + (long long)i * 13 + salt * 3) % 11) - 5;
}

static void put(void *buf, size_t i, coll_dtype d, long long v)
{
    switch (d) {
    case COLL_INT8:    ((int8_t *)buf)[i] = (int8_t)v; break;
    case COLL_UINT8:   ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case COLL_INT32:   ((int32_t *)buf)[i] = (int32_t)v; break;
    case COLL_UINT32:  ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case COLL_INT64:   ((int64_t *)buf)[i] = (int64_t)v; break;
    case COLL_UINT64:  ((uint64_t *)buf)[i] = (uint64_t)v; break;
    case COLL_FLOAT32: ((float *)buf)[i] = (float)v; break;
    case COLL_FLOAT64: ((double *)buf)[i] = (double)v; break;
    default: break;
    }
}

/* The reference: fold the inputs of ranks 0..p-1 with `op` in the element
   type itself (so uint8 wraps as the library's uint8 does), then compare
   bitwise with what the library produced. */
static int same_as_reduced(const void *got, size_t gi, coll_dtype d, coll_op op,
                           int p, size_t i, int salt)
{
    int r;
#define FOLD(T) do {                                                          \
        T acc = (T)input(0, i, salt);                                         \
        for (r = 1; r < p; r++) {                                             \
            T x = (T)input(r, i, salt);                                       \
            acc = op == COLL_SUM ? (T)(acc + x) : op == COLL_PROD ? (T)(acc * x) \
                : op == COLL_MIN ? (x < acc ? x : acc) : (x > acc ? x : acc);   \
        }                                                                     \
        return memcmp(&acc, (const T *)got + gi, sizeof acc) == 0;            \
    } while (0)
    switch (d) {
    case COLL_INT8:    FOLD(int8_t);
    case COLL_UINT8:   FOLD(uint8_t);
    case COLL_INT32:   FOLD(int32_t);
    case COLL_UINT32:  FOLD(uint32_t);
    case COLL_INT64:   FOLD(int64_t);
    case COLL_UINT64:  FOLD(uint64_t);
    case COLL_FLOAT32: FOLD(float);
    case COLL_FLOAT64: FOLD(double);
    default: return 0;
    }
#undef FOLD
}

static int same_as_input(const void *got, size_t gi, coll_dtype d, int rank, size_t i, int salt)
{
    unsigned char want[8];
    size_t es = coll_dtype_size(d);
    put(want, 0, d, input(rank, i, salt));
    return memcmp(want, (const unsigned char *)got + gi * es, es) == 0;
}

enum { GUARD = 64 };
static unsigned char *alloc_guarded(size_t bytes)
{
    unsigned char *p = (unsigned char *)malloc(bytes + GUARD);
    memset(p + bytes, 0xA5, GUARD);
    return p;
}
static int guard_intact(const unsigned char *p, size_t bytes)
{
    size_t i;
    for (i = 0; i < GUARD; i++) if (p[bytes + i] != 0xA5) return 0;
    return 1;
}

/* A result code: NOSYS means the library does not offer this algorithm for
   this call - counted apart, never as a pass. Returns 1 to go on checking. */
static int ran(int rc, const char *what, coll_algo algo, size_t count)
{
    if (rc == COLL_ERR_NOSYS) {
        /* say once per collective and algorithm which ones were not offered */
        static char seen[COLL_KIND_COUNT][COLL_ALGO_COUNT];
        static const char *const names[] = { "allreduce", "reduce_scatter", "allgather", "broadcast", "reduce", "barrier" };
        int w;
        for (w = 0; w < 6 && strcmp(names[w], what) != 0; w++) continue;
        if (g_rank == 0 && w < 6 && !seen[w][algo]) {
            seen[w][algo] = 1;
            printf("    (not offered: %s %s, rank count %d)\n", what, coll_algo_name(algo), g_world);
        }
        K.nosys++;
        return 0;
    }
    CHECK(rc == COLL_OK, "%s %s count %zu: %s (%d)", what, coll_algo_name(algo), count,
          coll_result_str(rc), rc);
    return rc == COLL_OK;
}

typedef struct dtop { coll_dtype d; coll_op op; } dtop;
static const dtop DTOPS[] = {
    { COLL_INT32, COLL_SUM }, { COLL_FLOAT32, COLL_SUM }, { COLL_UINT8, COLL_SUM },
    { COLL_INT64, COLL_MAX }, { COLL_FLOAT64, COLL_MIN }, { COLL_INT8, COLL_PROD },
};
#define NDTOPS (sizeof DTOPS / sizeof *DTOPS)
static const size_t COUNTS[] = { 1, 7, 1003, 50021 };
#define NCOUNTS (sizeof COUNTS / sizeof *COUNTS)

/* Large counts only with the first two dtype/op pairs: enough to cross many
   segments without making the run long. */
#define FOR_CASES(di, ci)                                                     \
    for (di = 0; di < NDTOPS; di++)                                           \
        for (ci = 0; ci < NCOUNTS; ci++)                                      \
            if (COUNTS[ci] < 10000 || di < 2)

static void coll_allreduce_cases(coll_comm *c)
{
    static const coll_algo algos[] = { COLL_ALGO_AUTO, COLL_ALGO_NAIVE, COLL_ALGO_RING,
        COLL_ALGO_TREE, COLL_ALGO_RECURSIVE_DOUBLING, COLL_ALGO_RABENSEIFNER };
    size_t ai, di, ci, i;
    int p = c->nranks, me = c->rank;
    for (ai = 0; ai < sizeof algos / sizeof *algos; ai++) FOR_CASES(di, ci) {
        coll_dtype d = DTOPS[di].d;
        size_t n = COUNTS[ci], es = coll_dtype_size(d);
        int salt = (int)(ai * 100 + di * 10 + ci), inplace = (int)((ai + ci) & 1), ok = 1;
        unsigned char *src = alloc_guarded(n * es), *dst = inplace ? src : alloc_guarded(n * es);
        for (i = 0; i < n; i++) put(src, i, d, input(me, i, salt));
        if (ran(coll_allreduce(c, src, dst, n, d, DTOPS[di].op, algos[ai]), "allreduce", algos[ai], n)) {
            for (i = 0; i < n; i++) ok &= same_as_reduced(dst, i, d, DTOPS[di].op, p, i, salt);
            CHECK(ok, "allreduce %s dtype %d op %d count %zu%s: wrong result",
                  coll_algo_name(algos[ai]), (int)d, (int)DTOPS[di].op, n, inplace ? " in place" : "");
            CHECK(guard_intact(dst, n * es), "allreduce %s count %zu wrote past the end",
                  coll_algo_name(algos[ai]), n);
        }
        if (!inplace) free(dst);
        free(src);
    }
}

static void coll_reduce_scatter_cases(coll_comm *c)
{
    static const coll_algo algos[] = { COLL_ALGO_AUTO, COLL_ALGO_RING,
        COLL_ALGO_RECURSIVE_HALVING, COLL_ALGO_PAIRWISE };
    size_t ai, di, ci, i;
    int p = c->nranks, me = c->rank;
    for (ai = 0; ai < sizeof algos / sizeof *algos; ai++) FOR_CASES(di, ci) {
        coll_dtype d = DTOPS[di].d;
        size_t n = COUNTS[ci] / 3 + 1, es = coll_dtype_size(d);   /* per rank */
        int salt = (int)(ai * 100 + di * 10 + ci), inplace = (int)((ai + ci) & 1), ok = 1;
        unsigned char *src = alloc_guarded((size_t)p * n * es);
        unsigned char *dst = inplace ? src + (size_t)me * n * es : alloc_guarded(n * es);
        for (i = 0; i < (size_t)p * n; i++) put(src, i, d, input(me, i, salt));
        if (ran(coll_reduce_scatter(c, src, dst, n, d, DTOPS[di].op, algos[ai]),
                "reduce_scatter", algos[ai], n)) {
            for (i = 0; i < n; i++)
                ok &= same_as_reduced(dst, i, d, DTOPS[di].op, p, (size_t)me * n + i, salt);
            CHECK(ok, "reduce_scatter %s dtype %d count %zu%s: wrong block",
                  coll_algo_name(algos[ai]), (int)d, n, inplace ? " in place" : "");
            CHECK(guard_intact(inplace ? src : dst, inplace ? (size_t)p * n * es : n * es),
                  "reduce_scatter %s count %zu wrote past the end", coll_algo_name(algos[ai]), n);
        }
        if (!inplace) free(dst);
        free(src);
    }
}

static void coll_allgather_cases(coll_comm *c)
{
    static const coll_algo algos[] = { COLL_ALGO_AUTO, COLL_ALGO_RING,
        COLL_ALGO_RECURSIVE_DOUBLING, COLL_ALGO_BRUCK };
    size_t ai, di, ci, i;
    int p = c->nranks, me = c->rank, r;
    for (ai = 0; ai < sizeof algos / sizeof *algos; ai++) FOR_CASES(di, ci) {
        coll_dtype d = DTOPS[di].d;
        size_t n = COUNTS[ci] / 3 + 1, es = coll_dtype_size(d);
        int salt = (int)(ai * 100 + di * 10 + ci), inplace = (int)((ai + ci) & 1), ok = 1;
        unsigned char *dst = alloc_guarded((size_t)p * n * es);
        unsigned char *src = inplace ? dst + (size_t)me * n * es : (unsigned char *)malloc(n * es);
        for (i = 0; i < n; i++) put(src, i, d, input(me, i, salt));
        if (ran(coll_allgather(c, src, dst, n, d, algos[ai]), "allgather", algos[ai], n)) {
            for (r = 0; r < p; r++)
                for (i = 0; i < n; i++) ok &= same_as_input(dst, (size_t)r * n + i, d, r, i, salt);
            CHECK(ok, "allgather %s dtype %d count %zu%s: wrong blocks",
                  coll_algo_name(algos[ai]), (int)d, n, inplace ? " in place" : "");
            CHECK(guard_intact(dst, (size_t)p * n * es), "allgather %s count %zu wrote past the end",
                  coll_algo_name(algos[ai]), n);
        }
        if (!inplace) free(src);
        free(dst);
    }
}

static void coll_broadcast_cases(coll_comm *c)
{
    static const coll_algo algos[] = { COLL_ALGO_AUTO, COLL_ALGO_BINOMIAL,
        COLL_ALGO_SCATTER_ALLGATHER, COLL_ALGO_PIPELINED_CHAIN };
    size_t ai, di, ci, i;
    int p = c->nranks, me = c->rank, k;
    for (ai = 0; ai < sizeof algos / sizeof *algos; ai++) for (k = 0; k < 2; k++) FOR_CASES(di, ci) {
        coll_dtype d = DTOPS[di].d;
        int root = k ? p - 1 : 0, salt = (int)(ai * 100 + di * 10 + ci + k), ok = 1;
        size_t n = COUNTS[ci], es = coll_dtype_size(d);
        unsigned char *buf = alloc_guarded(n * es);
        for (i = 0; i < n; i++) put(buf, i, d, me == root ? input(root, i, salt) : 99);
        if (ran(coll_broadcast(c, buf, n, d, root, algos[ai]), "broadcast", algos[ai], n)) {
            for (i = 0; i < n; i++) ok &= same_as_input(buf, i, d, root, i, salt);
            CHECK(ok, "broadcast %s root %d dtype %d count %zu: wrong data",
                  coll_algo_name(algos[ai]), root, (int)d, n);
            CHECK(guard_intact(buf, n * es), "broadcast %s wrote past the end", coll_algo_name(algos[ai]));
        }
        free(buf);
    }
}

static void coll_reduce_cases(coll_comm *c)
{
    static const coll_algo algos[] = { COLL_ALGO_AUTO, COLL_ALGO_BINOMIAL,
        COLL_ALGO_REDUCE_SCATTER_GATHER };
    size_t ai, di, ci, i;
    int p = c->nranks, me = c->rank, k;
    for (ai = 0; ai < sizeof algos / sizeof *algos; ai++) for (k = 0; k < 2; k++) FOR_CASES(di, ci) {
        coll_dtype d = DTOPS[di].d;
        int root = k ? p - 1 : 0, salt = (int)(ai * 100 + di * 10 + ci + k), ok = 1;
        size_t n = COUNTS[ci], es = coll_dtype_size(d);
        unsigned char *src = (unsigned char *)malloc(n * es), *dst = alloc_guarded(n * es);
        for (i = 0; i < n; i++) put(src, i, d, input(me, i, salt));
        if (ran(coll_reduce(c, src, dst, n, d, DTOPS[di].op, root, algos[ai]), "reduce", algos[ai], n)) {
            if (me == root) {
                for (i = 0; i < n; i++) ok &= same_as_reduced(dst, i, d, DTOPS[di].op, p, i, salt);
                CHECK(ok, "reduce %s root %d dtype %d count %zu: wrong result",
                      coll_algo_name(algos[ai]), root, (int)d, n);
            }
            CHECK(guard_intact(dst, n * es), "reduce %s wrote past the end", coll_algo_name(algos[ai]));
        }
        free(src); free(dst);
    }
}

static void collectives(coll_tcp *t, size_t scratch_bytes)
{
    coll_comm c;
    coll_port port = coll_tcp_port(t);
    void *scratch = malloc(scratch_bytes);
    int rc = coll_init(&c, t->rank, t->nranks, &port, scratch, scratch_bytes);
    CHECK(rc == COLL_OK, "coll_init: %d", rc);
    if (rc == COLL_OK) {
        coll_allreduce_cases(&c);
        coll_reduce_scatter_cases(&c);
        coll_allgather_cases(&c);
        coll_broadcast_cases(&c);
        coll_reduce_cases(&c);
        ran(coll_barrier(&c, COLL_ALGO_AUTO), "barrier", COLL_ALGO_AUTO, 0);
    }
    free(scratch);
}

/* ---- the port checker: this process is one rank ------------------------------ */

typedef struct tcp_rank { int rank; coll_port port; } tcp_rank;

static int tcp_launch(void *user, int nranks, coll_port_check_body body, void *arg)
{
    tcp_rank *me = (tcp_rank *)user;
    (void)nranks;
    return body(me->rank, &me->port, arg) != 0;
}

/* The quick sweep with a largest count of 1003: a short run. Its counts
   join this rank's. */
static void port_checker(coll_tcp *t)
{
    static coll_port_check ck;
    tcp_rank me;
    size_t bytes = coll_port_check_arena_bytes(t->nranks, 1003) / (size_t)t->nranks;
    void *arena = malloc(bytes);
    me.rank = t->rank;
    me.port = coll_tcp_port(t);
    memset(&ck, 0, sizeof ck);
    ck.name = "tcp checker"; ck.nranks = t->nranks;
    ck.launch = tcp_launch; ck.launch_user = &me;
    ck.arena = arena; ck.arena_bytes = bytes; ck.private_arena = 1;
    ck.big = 1003; ck.now = now_s;
    CHECK(arena != NULL, "no memory for the checker");
    if (arena) coll_port_check_run(&ck);
    K.pass += (long)coll_test_passed;
    K.fail += (long)coll_test_failed;
    K.nosys += (long)coll_test_na;
    coll_test_passed = coll_test_failed = coll_test_na = 0;
    free(arena);
}

/* ---- failures ------------------------------------------------------------- */

/* A port that passes everything to TCP but, on the rank chosen to fail,
   kills or stops its own process at its `after`-th send. */
typedef struct dying { coll_tcp *t; int after, sends, sig; } dying;

static void maybe_die(dying *d)
{
    if (d->sig && ++d->sends == d->after) raise(d->sig);
}
static int dying_send(void *ctx, int peer, const void *buf, size_t n)
{
    dying *d = (dying *)ctx;
    maybe_die(d);
    return coll_tcp_send(d->t, peer, buf, n);
}
static int dying_recv(void *ctx, int peer, void *buf, size_t n)
{
    return coll_tcp_recv(((dying *)ctx)->t, peer, buf, n);
}
static int dying_sendrecv(void *ctx, int to, const void *s, size_t sn, int from, void *r, size_t rn)
{
    dying *d = (dying *)ctx;
    maybe_die(d);
    return coll_tcp_sendrecv(d->t, to, s, sn, from, r, rn);
}

static void fail_mid_allreduce(coll_tcp *t, int victim, int sig)
{
    enum { N = 1 << 18 };
    dying d;
    coll_port port;
    coll_comm c;
    static unsigned char scratch[1 << 16];
    int32_t *buf = (int32_t *)calloc(N, sizeof *buf);
    long long t0, ms;
    int rc = 0, round;
    memset(&port, 0, sizeof port);
    d.t = t; d.after = 3; d.sends = 0; d.sig = t->rank == victim ? sig : 0;
    port.ctx = &d; port.send = dying_send; port.recv = dying_recv; port.sendrecv = dying_sendrecv;
    coll_init(&c, t->rank, t->nranks, &port, scratch, sizeof scratch);
    t0 = coll_tcp__now_ms();
    for (round = 0; round < 5 && rc == 0; round++)
        rc = coll_allreduce(&c, buf, buf, N, COLL_INT32, COLL_SUM, COLL_ALGO_RING);
    ms = coll_tcp__now_ms() - t0;
    CHECK(rc != COLL_OK, "peer %d %s, yet allreduce returned OK", victim,
          sig == SIGKILL ? "killed" : "stopped");
    CHECK(rc == COLL_ERR_IO || rc == COLL_ERR_TIMEOUT, "failed with %d, not IO/TIMEOUT", rc);
    CHECK(ms <= (long long)t->timeout_ms + 1500, "took %lld ms to notice (deadline %u ms)",
          ms, t->timeout_ms);
    /* The first failure sticks: the next call fails at once. */
    CHECK(coll_tcp_send(t, (t->rank + 1) % t->nranks, buf, 4) != COLL_OK, "port still usable");
    free(buf);
}

/* A wait with nothing else pending blocks inside one recv or send, bounded
   by the link's SO_RCVTIMEO/SO_SNDTIMEO; coll_tcp_set_timeout after init
   must reach those too. Rank `waiter` lowers its deadline to 400 ms and
   waits alone on a peer that stays silent (recv) or does not read (a send
   bigger than both socket buffers): COLL_ERR_TIMEOUT in about that time,
   not init's 5 s, and the port stays broken. The other rank sees the
   links shut down: an error, not a hang. */
static void lone_wait_deadline(coll_tcp *t, int is_send)
{
    enum { BIG = 64 << 20 };
    int waiter = is_send ? 1 : 0, other = 1 - waiter, rc;
    unsigned char *buf = (unsigned char *)calloc(BIG, 1);
    long long t0, ms;
    if (!buf) { CHECK(0, "out of memory"); return; }
    if (t->rank == waiter) {
        coll_tcp_set_timeout(t, 400);
        t0 = coll_tcp__now_ms();
        rc = is_send ? coll_tcp_send(t, other, buf, BIG) : coll_tcp_recv(t, other, buf, 4);
        ms = coll_tcp__now_ms() - t0;
        CHECK(rc == COLL_ERR_TIMEOUT, "lone %s on a %s peer: %d, not TIMEOUT",
              is_send ? "send" : "recv", is_send ? "non-reading" : "silent", rc);
        CHECK(ms >= 300 && ms <= 2000, "lone %s gave up after %lld ms (deadline 400)",
              is_send ? "send" : "recv", ms);
        CHECK(coll_tcp_send(t, other, buf, 4) != COLL_OK, "port still usable after a timeout");
    } else {
        struct timespec ts = { 2, 0 };
        nanosleep(&ts, NULL);                        /* past the waiter's deadline */
        coll_tcp_set_timeout(t, 3000);
        t0 = coll_tcp__now_ms();
        rc = coll_tcp_recv(t, waiter, buf, is_send ? BIG : 4);
        ms = coll_tcp__now_ms() - t0;
        CHECK(rc != COLL_OK, "recv from a peer that gave up returned OK");
        CHECK(ms <= 2000, "noticing a peer that gave up took %lld ms", ms);
    }
    free(buf);
}

/* ---- worlds of processes -------------------------------------------------- */

typedef enum scenario {
    S_PORT, S_COLL, S_CHECK, S_KILL, S_STOP, S_ENV, S_LATE, S_WORLD_MISMATCH, S_BAD_ENV,
    S_LONE_RECV, S_LONE_SEND
} scenario;

static void rank_main(scenario s, int rank, int world, int port)
{
    static coll_tcp t;
    char num[16];
    int rc;
    g_rank = rank;
    g_world = world;
    switch (s) {
    case S_ENV:
        setenv("MASTER_ADDR", "127.0.0.1", 1);
        snprintf(num, sizeof num, "%d", port); setenv("MASTER_PORT", num, 1);
        snprintf(num, sizeof num, "%d", world); setenv("WORLD_SIZE", num, 1);
        snprintf(num, sizeof num, "%d", rank); setenv("RANK", num, 1);
        setenv("LOCAL_RANK", num, 1);
        rc = coll_tcp_init_env(&t, 5000);
        CHECK(rc == COLL_OK && t.rank == rank && t.nranks == world && t.local_rank == rank,
              "init from the environment: %d", rc);
        if (rc == 0) port_ring_exchange(&t);
        break;
    case S_BAD_ENV:
        setenv("MASTER_ADDR", "127.0.0.1", 1);
        setenv("MASTER_PORT", "70000", 1);            /* out of range */
        setenv("WORLD_SIZE", "2", 1); setenv("RANK", "0", 1);
        CHECK(coll_tcp_init_env(&t, 200) == COLL_ERR_INVAL, "MASTER_PORT=70000 accepted");
        setenv("MASTER_PORT", "29500", 1); setenv("RANK", "2", 1);   /* RANK >= WORLD_SIZE */
        CHECK(coll_tcp_init_env(&t, 200) == COLL_ERR_INVAL, "RANK=2 of 2 accepted");
        unsetenv("WORLD_SIZE");
        CHECK(coll_tcp_init_env(&t, 200) == COLL_ERR_INVAL, "missing WORLD_SIZE accepted");
        CHECK(coll_tcp_init(&t, "127.0.0.1", port, 0, 1, 200) == COLL_OK && t.nranks == 1,
              "a world of one needs no network");
        setenv("WORLD_SIZE", "2", 1); setenv("RANK", "0", 1);
        unsetenv("COLL_TCP_TOKEN"); unsetenv("COLL_TCP_INSECURE");
        CHECK(coll_tcp_init_env(&t, 200) == COLL_ERR_INVAL, "no COLL_TCP_TOKEN accepted");
        break;
    case S_LATE:                                      /* the last rank never comes */
        if (rank == world - 1) break;
        {
            long long t0 = coll_tcp__now_ms(), ms;
            rc = coll_tcp_init(&t, "127.0.0.1", port, rank, world, 700);
            ms = coll_tcp__now_ms() - t0;
            /* The master times out; the others may see its goodbye (EOF)
               first, a moment before their own deadline. */
            if (rank == 0) CHECK(rc == COLL_ERR_TIMEOUT, "init without rank %d: %d, not TIMEOUT", world - 1, rc);
            else CHECK(rc == COLL_ERR_TIMEOUT || rc == COLL_ERR_IO, "init without rank %d: %d", world - 1, rc);
            CHECK(ms >= 600 && ms <= 2500, "init gave up after %lld ms (deadline 700)", ms);
        }
        break;
    case S_WORLD_MISMATCH:                            /* rank 1 thinks the world is bigger */
        rc = coll_tcp_init(&t, "127.0.0.1", port, rank, rank == 1 ? world + 1 : world, 3000);
        if (rank == 0) CHECK(rc == COLL_ERR_MISMATCH, "master accepted WORLD_SIZE %d: %d", world + 1, rc);
        else CHECK(rc != COLL_OK, "init with a disagreeing WORLD_SIZE succeeded");
        break;
    default:
        rc = coll_tcp_init(&t, "127.0.0.1", port, rank, world, 5000);
        CHECK(rc == COLL_OK, "init: %s (%d)", coll_result_str(rc), rc);
        if (rc) break;
        if (s == S_PORT) {
            port_pingpong(&t);
            port_ring_exchange(&t);
            port_nonblocking(&t);
        } else if (s == S_CHECK) {
            port_checker(&t);
        } else if (s == S_LONE_RECV || s == S_LONE_SEND) {
            lone_wait_deadline(&t, s == S_LONE_SEND);
        } else if (s == S_COLL) {
            collectives(&t, 1u << 20);               /* few segments */
            collectives(&t, 4096);                   /* many segments */
        } else {
            coll_tcp_set_timeout(&t, 1000);
            fail_mid_allreduce(&t, world / 2, s == S_KILL ? SIGKILL : SIGSTOP);
        }
        break;
    }
    coll_tcp_close(&t);
}

/* Runs `world` ranks of scenario `s` as processes; returns when all are
   done. The rank chosen to fail is expected to die (SIGKILL) or to stop
   (SIGSTOP; it is killed once the others are done). */
static void run_world(scenario s, int world, const char *what)
{
    pid_t pid[COLL_TCP_MAX_RANKS];
    int fds[COLL_TCP_MAX_RANKS], r, i, port = coll_tcp_free_port(), victim = world / 2;
    counts sum = { 0, 0, 0 };
    long long t0 = coll_tcp__now_ms();
    if (g_only && !strstr(what, g_only)) return;
    fflush(stdout);
    for (r = 0; r < world; r++) {
        int pfd[2];
        if (pipe(pfd) < 0) { perror("pipe"); exit(2); }
        pid[r] = fork();
        if (pid[r] == 0) {
            close(pfd[0]);
            memset(&K, 0, sizeof K);                 /* counts of this rank only */
            alarm(60);                               /* a backstop, never expected */
            rank_main(s, r, world, port);
            fflush(stdout);
            if (write(pfd[1], &K, sizeof K) != (ssize_t)sizeof K) _exit(3);
            _exit(0);
        }
        close(pfd[1]);
        fds[r] = pfd[0];
    }
    /* The healthy ranks first: a stopped rank keeps its pipe open, so its
       end is only collected once the others have finished. */
    for (i = 0; i < world; i++) {
        int r = (victim + 1 + i) % world;
        counts k;
        int status = 0, failing = (s == S_KILL || s == S_STOP) && r == victim;
        ssize_t got;
        if (failing && s == S_STOP) kill(pid[r], SIGKILL);
        got = read(fds[r], &k, sizeof k);            /* EOF when the rank died */
        close(fds[r]);
        waitpid(pid[r], &status, 0);
        if (failing) {
            int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
            if (sig == SIGKILL) sum.pass++;
            else { sum.fail++; fprintf(stderr, "rank %d was to die, status %d\n", r, status); }
        } else if (got == (ssize_t)sizeof k && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
            sum.pass += k.pass; sum.fail += k.fail; sum.nosys += k.nosys;
        } else {
            sum.fail++;
            fprintf(stderr, "%s: rank %d of %d ended badly (status %d)\n", what, r, world, status);
        }
    }
    printf("  %-34s world %d: %ld checks ok, %ld wrong, %ld not offered (NOSYS), %.1f s\n",
           what, world, sum.pass, sum.fail, sum.nosys, (double)(coll_tcp__now_ms() - t0) / 1000);
    K.pass += sum.pass; K.fail += sum.fail; K.nosys += sum.nosys;
}

/* One rank of an externally launched job (test/tcp_netns.sh). */
static int env_main(void)
{
    static coll_tcp t;
    int rc = coll_tcp_init_env(&t, 20000);
    g_rank = t.rank;
    g_world = t.nranks;
    CHECK(rc == COLL_OK, "init from the environment: %s (%d)", coll_result_str(rc), rc);
    if (rc == COLL_OK) {
        port_pingpong(&t);
        port_ring_exchange(&t);
        collectives(&t, 1u << 16);
    }
    coll_tcp_close(&t);
    printf("result %ld %ld %ld\n", K.pass, K.fail, K.nosys);
    return K.fail != 0;
}

/* One rank of a job whose network will fail under it (test/tcp_netns.sh):
   all-reduce until a call fails, then say "loop RC MS" - the code and how
   long that last call took. */
static int env_loop_main(void)
{
    enum { N = 1 << 16 };
    static coll_tcp t;
    static unsigned char scratch[1 << 16];
    static int32_t buf[N];
    coll_comm c;
    coll_port port;
    long long t0 = 0, start;
    int rc = coll_tcp_init_env(&t, 20000);
    if (rc) { printf("init failed: %d\n", rc); return 1; }
    coll_tcp_set_timeout(&t, 1500);
    port = coll_tcp_port(&t);
    coll_init(&c, t.rank, t.nranks, &port, scratch, sizeof scratch);
    printf("looping\n");
    fflush(stdout);
    start = coll_tcp__now_ms();
    while (rc == COLL_OK && coll_tcp__now_ms() - start < 30000) {
        t0 = coll_tcp__now_ms();
        rc = coll_allreduce(&c, buf, buf, N, COLL_INT32, COLL_SUM, COLL_ALGO_RING);
    }
    printf("loop %d %lld\n", rc, coll_tcp__now_ms() - t0);
    coll_tcp_close(&t);
    return 0;
}

/* The job token every rank of these worlds inherits (the hostile cases
   are in test_tcp_auth.c). */
static void set_job_token(void)
{
    unsigned char b[16];
    char hex[2 * sizeof b + 1];
    size_t i;
    if (getenv("COLL_TCP_TOKEN")) return;
    if (coll_tcp__nonce(b)) { perror("test_tcp: /dev/urandom"); exit(2); }
    for (i = 0; i < sizeof b; i++) snprintf(hex + 2 * i, 3, "%02x", b[i]);
    setenv("COLL_TCP_TOKEN", hex, 1);
}

int main(int argc, char **argv)
{
    static const int worlds[] = { 2, 3, 4, 7 };
    counts total;
    size_t w;
    if (argc > 1 && strcmp(argv[1], "--env") == 0) return env_main();
    if (argc > 1 && strcmp(argv[1], "--env-loop") == 0) return env_loop_main();
    if (argc > 1) g_only = argv[1];
    signal(SIGPIPE, SIG_IGN);
    set_job_token();
    printf("TCP port, ranks as processes on 127.0.0.1:\n");
    run_world(S_BAD_ENV, 1, "bad environment");
    run_world(S_ENV, 3, "rendezvous from environment");
    run_world(S_LATE, 3, "a rank never comes");
    run_world(S_WORLD_MISMATCH, 3, "ranks disagree on WORLD_SIZE");
    for (w = 0; w < sizeof worlds / sizeof *worlds; w++)
        run_world(S_PORT, worlds[w], "port: ping-pong, sendrecv, isend");
    for (w = 0; w < sizeof worlds / sizeof *worlds; w++)
        run_world(S_COLL, worlds[w], "collectives");
    run_world(S_CHECK, 3, "the port checker (short)");
    run_world(S_KILL, 4, "a rank SIGKILLed mid-allreduce");
    run_world(S_STOP, 4, "a rank stopped mid-allreduce");
    run_world(S_LONE_RECV, 2, "lone recv, silent peer, deadline");
    run_world(S_LONE_SEND, 2, "lone send, peer not reading");
    total = K;
    if (total.nosys)
        printf("NOTE: %ld collective calls answered COLL_ERR_NOSYS (algorithm not offered); "
               "not counted as passes\n", total.nosys);
    printf("tcp: %ld passed, %ld failed\n", total.pass, total.fail);
    return total.fail != 0;
}
