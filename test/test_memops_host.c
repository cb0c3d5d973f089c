/* test_memops_host.c - with memops set, coll.h never touches a buffer itself

   The contract behind coll_cuda.h: once coll_set_memops is given, every
   byte of the caller's buffers and of scratch is copied, reduced and
   scaled by the memops, and moved by the port - coll.h itself never reads
   or writes them (they may be GPU memory; on the GPU a host access is a
   crash). Here the buffers and scratch live in one arena that is kept
   PROT_NONE except while a memop or a port call runs, so any other access
   faults at once, as it would on a device buffer.

   4 ranks as state machines on one thread (ports/coll_mailbox.h, driven by
   coll_progress), so opening and closing the arena around a call is never
   raced by another thread. Every collective x every algorithm x counts
   1, 37 and 1000, float32 sum; the reducing ones also int32 max and
   float32 avg (the scale memop). Checked: no fault, every rank COLL_OK (or
   every rank COLL_ERR_NOSYS: not offered with memops, e.g. Bruck, which
   rearranges blocks on the host), and the all-reduce, reduce-scatter,
   all-gather and broadcast results against plain loops. */
#define _DEFAULT_SOURCE            /* MAP_ANONYMOUS */
#define _POSIX_C_SOURCE 200809L
#define COLL_IMPLEMENTATION
#include "coll.h"
#define COLL_MAILBOX_IMPLEMENTATION
#include "ports/coll_mailbox.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define P 4
#define MAXN 1000                         /* elements per rank block      */
#define BIG (P * MAXN + 64)               /* elements of src and dst      */
#define SCRATCH 4096                      /* bytes: segments of 2 KiB     */

typedef struct {
    float src[P][BIG], dst[P][BIG];
    unsigned char scratch[P][SCRATCH];
} arena_t;

static arena_t *A;
static size_t arena_bytes;
static int pass, fail, offered_not;

static void open_arena(void)  { mprotect(A, arena_bytes, PROT_READ | PROT_WRITE); }
static void close_arena(void) { mprotect(A, arena_bytes, PROT_NONE); }

static void check(int ok, const char *what, int kind, int algo, size_t n)
{
    if (ok) { pass++; return; }
    fail++;
    printf("FAIL: %s: %s/%s count=%zu\n", what, coll_kind_name((coll_kind)kind),
           coll_algo_name((coll_algo)algo), n);
}

static void on_fault(int sig)
{
    static const char m[] = "FAIL: coll.h touched a buffer outside memops and the port\n";
    (void)sig;
    if (write(1, m, sizeof m - 1) < 0) _exit(2);
    _exit(2);
}

/* ---- memops: the only code that may touch the arena, opened for it ---- */
static int m_copy(void *ctx, void *dst, const void *src, size_t bytes)
{
    (void)ctx;
    open_arena();
    memmove(dst, src, bytes);
    close_arena();
    return COLL_OK;
}

static int m_reduce(void *ctx, void *out, const void *a, const void *b, size_t n,
                    coll_dtype t, coll_op op)
{
    size_t i;
    (void)ctx;
    if (!((t == COLL_FLOAT32 && (op == COLL_SUM || op == COLL_AVG)) || (t == COLL_INT32 && op == COLL_MAX)))
        return COLL_ERR_NOSYS;
    open_arena();
    for (i = 0; i < n; i++) {
        if (t == COLL_FLOAT32) ((float *)out)[i] = ((const float *)a)[i] + ((const float *)b)[i];
        else {
            int32_t x = ((const int32_t *)a)[i], y = ((const int32_t *)b)[i];
            ((int32_t *)out)[i] = x > y ? x : y;
        }
    }
    close_arena();
    return COLL_OK;
}

static int m_scale(void *ctx, void *buf, size_t n, coll_dtype t, size_t d)
{
    size_t i;
    (void)ctx;
    if (t != COLL_FLOAT32 || d == 0) return COLL_ERR_NOSYS;
    open_arena();
    for (i = 0; i < n; i++) ((float *)buf)[i] /= (float)d;
    close_arena();
    return COLL_OK;
}

/* ---- the port: the mailbox's, with the arena open around each call ---- */
static coll_mailbox box;
static coll_port inner[P];

static int g_send(void *ctx, int peer, const void *buf, size_t bytes)
{
    const coll_port *p = (const coll_port *)ctx;
    int rc;
    open_arena(); rc = p->send(p->ctx, peer, buf, bytes); close_arena();
    return rc;
}
static int g_recv(void *ctx, int peer, void *buf, size_t bytes)
{
    const coll_port *p = (const coll_port *)ctx;
    int rc;
    open_arena(); rc = p->recv(p->ctx, peer, buf, bytes); close_arena();
    return rc;
}
static int g_isend(void *ctx, int peer, const void *buf, size_t bytes, int *h)
{
    const coll_port *p = (const coll_port *)ctx;
    int rc;
    open_arena(); rc = p->isend(p->ctx, peer, buf, bytes, h); close_arena();
    return rc;
}
static int g_irecv(void *ctx, int peer, void *buf, size_t bytes, int *h)
{
    const coll_port *p = (const coll_port *)ctx;
    int rc;
    open_arena(); rc = p->irecv(p->ctx, peer, buf, bytes, h); close_arena();
    return rc;
}
static int g_wait(void *ctx, int h, int block)
{
    const coll_port *p = (const coll_port *)ctx;
    int rc;
    open_arena(); rc = p->wait(p->ctx, h, block); close_arena();
    return rc;
}
static void g_abort(void *ctx, int code)
{
    const coll_port *p = (const coll_port *)ctx;
    if (p->abort) p->abort(p->ctx, code);
}

/* ---- one case: every rank started, then progressed round robin ---- */
static float in_val(int r, size_t i) { return (float)((r * 7 + (int)i * 3) % 13) - 6.0f; }

static void run_case(coll_comm *c, int kind, int algo, coll_dtype t, coll_op op, size_t n)
{
    size_t counts[P * P], i;
    coll_request q[P];
    int rc[P], live, r, rounds = 0, nosys = 0, ok = 1;
    open_arena();
    for (r = 0; r < P; r++)
        for (i = 0; i < BIG; i++) {
            if (t == COLL_INT32) ((int32_t *)A->src[r])[i] = (int32_t)in_val(r, i);
            else A->src[r][i] = in_val(r, i);
            A->dst[r][i] = -99.0f;
        }
    close_arena();
    for (i = 0; i < P * P; i++) counts[i] = kind == COLL_ALLTOALLV ? n + i % 3 : n + i;
    for (r = 0; r < P; r++) {
        coll_args a;
        memset(&a, 0, sizeof a);
        a.kind = (coll_kind)kind; a.algo = (coll_algo)algo; a.dtype = t; a.op = op;
        a.count = n; a.root = P - 1; a.group = 2;
        a.src = A->src[r]; a.dst = A->dst[r];
        if (kind == COLL_BROADCAST) a.src = a.dst;
        if (kind == COLL_ALLGATHERV || kind == COLL_GATHERV || kind == COLL_SCATTERV ||
            kind == COLL_REDUCE_SCATTERV || kind == COLL_ALLTOALLV) {
            a.counts = counts; a.count = 0;
        }
        if (kind == COLL_BROADCAST && r == P - 1) {
            open_arena();
            for (i = 0; i < n; i++) A->dst[r][i] = in_val(r, i);
            close_arena();
        }
        rc[r] = coll_start(&q[r], &c[r], &a);
    }
    do {
        live = 0;
        for (r = 0; r < P; r++) {
            if (rc[r] == COLL_OK && !q[r].finished) rc[r] = coll_progress(&q[r]);
            else if (rc[r] == COLL_AGAIN) rc[r] = coll_progress(&q[r]);
            live += rc[r] == COLL_AGAIN;
        }
    } while (live && ++rounds < 1000000);
    for (r = 0; r < P; r++) {
        nosys += rc[r] == COLL_ERR_NOSYS;
        if (rc[r] != COLL_OK) ok = 0;
    }
    if (nosys == P) { offered_not++; return; }                /* not offered */
    check(ok && !live, "every rank finished with COLL_OK", kind, algo, n);
    if (!ok) {
        printf("  rc per rank: %d %d %d %d (%s)\n", rc[0], rc[1], rc[2], rc[3], coll_last_error(&c[0]));
        return;
    }
    /* the results a plain loop gives (float32 sum, avg; int32 max) */
    open_arena();
    for (r = 0; r < P && ok; r++)
        for (i = 0; i < n && ok; i++) {
            double want = 0, got;
            int s;
            switch (kind) {
            case COLL_ALLREDUCE:
                for (s = 0; s < P; s++) {
                    double v = in_val(s, i);
                    want = op == COLL_MAX ? (s == 0 || v > want ? v : want) : want + v;
                }
                if (op == COLL_AVG) want /= P;
                break;
            case COLL_REDUCE_SCATTER:
                if (op != COLL_SUM) continue;
                for (s = 0; s < P; s++) want += in_val(s, (size_t)r * n + i);
                break;
            case COLL_ALLGATHER:
                for (s = 0; s < P && ok; s++) {
                    got = A->dst[r][(size_t)s * n + i];
                    ok = got == in_val(s, i);
                }
                continue;
            case COLL_BROADCAST: want = in_val(P - 1, i); break;
            default: continue;
            }
            got = t == COLL_INT32 ? (double)((int32_t *)A->dst[r])[i] : (double)A->dst[r][i];
            ok = got == (float)want;
        }
    close_arena();
    check(ok, "results against a plain loop", kind, algo, n);
}

int main(void)
{
    static const size_t ns[] = { 1, 37, 1000 };
    static const coll_memops mem = { NULL, m_copy, m_reduce, m_scale };
    static coll_port wrap[P];
    coll_comm c[P];
    long page = sysconf(_SC_PAGESIZE);
    int r, kind, algo;
    size_t k;

    arena_bytes = (sizeof(arena_t) + (size_t)page - 1) / (size_t)page * (size_t)page;
    A = (arena_t *)mmap(NULL, arena_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (A == MAP_FAILED) { printf("FAIL: mmap\nmemops-host: 0 passed, 1 failed\n"); return 1; }
    signal(SIGSEGV, on_fault);
    signal(SIGBUS, on_fault);
    coll_mailbox_init(&box, P);
    for (r = 0; r < P; r++) {
        inner[r] = coll_mailbox_port(&box, r);
        memset(&wrap[r], 0, sizeof wrap[r]);
        wrap[r].ctx = &inner[r];
        wrap[r].send = g_send; wrap[r].recv = g_recv;
        wrap[r].isend = g_isend; wrap[r].irecv = g_irecv; wrap[r].wait = g_wait;
        wrap[r].abort = g_abort;
        if (coll_init(&c[r], r, P, &wrap[r], A->scratch[r], SCRATCH) != COLL_OK ||
            coll_set_memops(&c[r], &mem) != COLL_OK) {
            printf("FAIL: coll_init / coll_set_memops\n");
            return 1;
        }
    }
    close_arena();                       /* from here on only memops and the port open it */

    for (kind = 0; kind < COLL_KIND_COUNT; kind++)
        for (algo = 0; algo < COLL_ALGO_COUNT; algo++)
            for (k = 0; k < sizeof ns / sizeof ns[0]; k++) {
                int reducing = kind == COLL_ALLREDUCE || kind == COLL_REDUCE ||
                               kind == COLL_REDUCE_SCATTER || kind == COLL_REDUCE_SCATTERV ||
                               kind == COLL_SCAN || kind == COLL_EXSCAN;
                run_case(c, kind, algo, COLL_FLOAT32, COLL_SUM, ns[k]);
                if (reducing) {
                    run_case(c, kind, algo, COLL_INT32, COLL_MAX, ns[k]);
                    run_case(c, kind, algo, COLL_FLOAT32, COLL_AVG, ns[k]);
                }
            }
    open_arena();
    check(coll_mailbox_pending(&box) == 0, "no transfer left posted", 0, 0, 0);
    munmap(A, arena_bytes);
    printf("memops-host: %d passed, %d failed, %d not offered (every rank NOSYS)\n", pass, fail, offered_not);
    return fail ? 1 : 0;
}
