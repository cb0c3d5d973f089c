/* test_errors.c - what goes wrong, and how it is reported.

   1. Every class of invalid argument returns its code before a byte moves:
      the communicator runs over a tripwire port that counts every call (and
      fails it), and each refused call must leave the count at zero.
   2. A lost peer (one rank never calls) gives COLL_ERR_TIMEOUT on the
      others, not before the deadline and not long after it; so does a rank
      whose port fails, while the failing rank gets its port's own code back.
   3. coll_threads_abort wakes every waiting rank with COLL_ERR_ABORTED.
   4. Ranks that disagree (sizes) get an error, never a hang or a result.
   5. The threads port's own contract: handles, polling, bad peers.
   6. coll_result_str gives a distinct message for every code. */
#define COLL_IMPLEMENTATION
#include "../coll.h"
#define COLL_THREADS_IMPLEMENTATION
#include "../ports/coll_threads.h"
#include "test_ports.h"
#include "coll_test.h"
#include "test_clock.h"

#include <stdint.h>
#include <stdio.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#define P 4

/* ---- 1. invalid arguments --------------------------------------------------- */
static int trip_calls;
static int trip_send(void *ctx, int peer, const void *buf, size_t bytes)
{ (void)ctx; (void)peer; (void)buf; (void)bytes; trip_calls++; return COLL_ERR_IO; }
static int trip_recv(void *ctx, int peer, void *buf, size_t bytes)
{ (void)ctx; (void)peer; (void)buf; (void)bytes; trip_calls++; return COLL_ERR_IO; }

static void nop_fn(void *out, const void *a, const void *b, size_t n, void *user)
{ (void)out; (void)a; (void)b; (void)n; (void)user; }

/* rc must be `want` (or, where the library may say either, `alt`) and the
   port must not have been touched. */
#define REFUSED2(call, want, alt)                                                \
    do {                                                                         \
        int rc_ = (call);                                                        \
        COLL_CHECK_MSG(rc_ == (want) || rc_ == (alt), "%s: %d (%s), expected %d", \
                       #call, rc_, coll_result_str(rc_), want);                  \
        COLL_CHECK_MSG(trip_calls == 0, "%s: the port was called", #call);        \
        trip_calls = 0;                                                          \
    } while (0)
#define REFUSED(call, want) REFUSED2(call, want, want)

static float fa[P * 64], fb[P * 64];
static double scratch[128];

/* memops that never run: only their presence is tested */
static int host_copy(void *ctx, void *dst, const void *src, size_t bytes)
{
    (void)ctx; (void)dst; (void)src; (void)bytes;
    return COLL_ERR_IO;
}
static int host_reduce(void *ctx, void *out, const void *a, const void *b, size_t n,
                       coll_dtype t, coll_op op)
{
    (void)ctx; (void)out; (void)a; (void)b; (void)n; (void)t; (void)op;
    return COLL_ERR_IO;
}
static int host_scale(void *ctx, void *buf, size_t n, coll_dtype t, size_t d)
{
    (void)ctx; (void)buf; (void)n; (void)t; (void)d;
    return COLL_ERR_IO;
}

static void invalid_arguments(void)
{
    coll_port port, bad;
    coll_comm c, zero, tiny, none;
    coll_user_op uop;
    coll_args a;
    coll_request q;
    coll_xfer x;
    size_t counts[P] = { 4, 4, 4, 4 }, huge_counts[P];
    const size_t big = (size_t)-1;
    float *f = fa, *g = fb;
    int t, op;

    memset(&port, 0, sizeof port);
    port.send = trip_send;
    port.recv = trip_recv;

    /* coll_init */
    REFUSED(coll_init(NULL, 0, P, &port, scratch, sizeof scratch), COLL_ERR_INVAL);
    REFUSED(coll_init(&c, 0, P, NULL, scratch, sizeof scratch), COLL_ERR_INVAL);
    REFUSED(coll_init(&c, -1, P, &port, scratch, sizeof scratch), COLL_ERR_INVAL);
    REFUSED(coll_init(&c, P, P, &port, scratch, sizeof scratch), COLL_ERR_INVAL);
    REFUSED(coll_init(&c, 0, 0, &port, scratch, sizeof scratch), COLL_ERR_INVAL);
    REFUSED(coll_init(&c, 0, -3, &port, scratch, sizeof scratch), COLL_ERR_INVAL);
    REFUSED(coll_init(&c, 0, P, &port, NULL, 64), COLL_ERR_INVAL);
    bad = port; bad.send = NULL;
    REFUSED(coll_init(&c, 0, P, &bad, scratch, sizeof scratch), COLL_ERR_INVAL);
    bad = port; bad.recv = NULL;
    REFUSED(coll_init(&c, 0, P, &bad, scratch, sizeof scratch), COLL_ERR_INVAL);

    REFUSED(coll_init(&c, 0, P, &port, scratch, sizeof scratch), COLL_OK);
    REFUSED(coll_init(&none, 0, P, &port, NULL, 0), COLL_OK);
    REFUSED(coll_init(&tiny, 0, P, &port, scratch, 6), COLL_OK);    /* 3-byte segments */
    memset(&zero, 0, sizeof zero);                                  /* never initialised */
    /* with the call checks off a refusal is local and moves nothing (with
       them on it takes part in the agreement round: test_checks.c) */
    REFUSED(coll_set_checks(&c, 0), COLL_OK);
    REFUSED(coll_set_checks(&none, 0), COLL_OK);
    REFUSED(coll_set_checks(&tiny, 0), COLL_OK);
    REFUSED(coll_set_checks(&c, 1u << 7), COLL_ERR_INVAL);
    REFUSED(coll_set_checks(&zero, 0), COLL_ERR_INVAL);
    /* the CRC reads buffers on the host: not with memops, in either order */
    {
        static const coll_memops mops = { NULL, host_copy, host_reduce, host_scale };
        coll_comm m;
        REFUSED(coll_init(&m, 0, P, &port, scratch, sizeof scratch), COLL_OK);
        REFUSED(coll_set_memops(&m, &mops), COLL_OK);
        REFUSED(coll_set_checks(&m, COLL_CHECK_CALLS | COLL_CHECK_CRC), COLL_ERR_NOSYS);
        REFUSED(coll_set_checks(&m, COLL_CHECK_CALLS), COLL_OK);
        REFUSED(coll_set_memops(&m, NULL), COLL_OK);
        REFUSED(coll_set_checks(&m, COLL_CHECK_CALLS | COLL_CHECK_CRC), COLL_OK);
        REFUSED(coll_set_memops(&m, &mops), COLL_ERR_NOSYS);
    }

    /* NULL or uninitialised communicator */
    REFUSED(coll_allreduce(NULL, f, g, 4, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_allreduce(&zero, f, g, 4, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_broadcast(NULL, f, 4, COLL_FLOAT32, 0, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_barrier(NULL, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_barrier(&zero, COLL_ALGO_AUTO), COLL_ERR_INVAL);

    /* NULL buffers with count > 0, every collective */
    REFUSED(coll_allreduce(&c, NULL, g, 4, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_allreduce(&c, f, NULL, 4, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_reduce_scatter(&c, NULL, g, 4, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_reduce_scatter(&c, f, NULL, 4, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_allgather(&c, NULL, g, 4, COLL_FLOAT32, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_allgather(&c, f, NULL, 4, COLL_FLOAT32, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_broadcast(&c, NULL, 4, COLL_FLOAT32, 0, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_reduce(&c, NULL, g, 4, COLL_FLOAT32, COLL_SUM, 0, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_reduce(&c, f, NULL, 4, COLL_FLOAT32, COLL_SUM, 0, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_gather(&c, NULL, g, 4, COLL_FLOAT32, 0, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_gather(&c, f, NULL, 4, COLL_FLOAT32, 0, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_scatter(&c, NULL, g, 4, COLL_FLOAT32, 0, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_scatter(&c, f, NULL, 4, COLL_FLOAT32, 0, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_alltoall(&c, NULL, g, 4, COLL_FLOAT32, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_alltoall(&c, f, NULL, 4, COLL_FLOAT32, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_allgatherv(&c, NULL, g, counts, COLL_FLOAT32, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_allgatherv(&c, f, NULL, counts, COLL_FLOAT32, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_reduce_scatterv(&c, NULL, g, counts, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_reduce_scatterv(&c, f, NULL, counts, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    /* the v forms need their counts */
    REFUSED(coll_allgatherv(&c, f, g, NULL, COLL_FLOAT32, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_reduce_scatterv(&c, f, g, NULL, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_INVAL);

    /* bad dtype, bad op */
    REFUSED(coll_allreduce(&c, f, g, 4, (coll_dtype)COLL_DTYPE_COUNT, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_allreduce(&c, f, g, 4, (coll_dtype)-1, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_allgather(&c, f, g, 4, (coll_dtype)99, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_allreduce(&c, f, g, 4, COLL_FLOAT32, (coll_op)COLL_OP_COUNT, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_allreduce(&c, f, g, 4, COLL_FLOAT32, (coll_op)-1, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_reduce(&c, f, g, 4, COLL_INT32, (coll_op)42, 0, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    /* bitwise ops on every float type, every reducing collective */
    for (t = COLL_FLOAT16; t <= COLL_FLOAT64; t++)
        for (op = COLL_BAND; op <= COLL_BXOR; op++) {
            REFUSED(coll_allreduce(&c, f, g, 4, (coll_dtype)t, (coll_op)op, COLL_ALGO_AUTO), COLL_ERR_INVAL);
            REFUSED(coll_allreduce(&c, f, g, 4, (coll_dtype)t, (coll_op)op, COLL_ALGO_RING), COLL_ERR_INVAL);
            REFUSED(coll_reduce_scatter(&c, f, g, 4, (coll_dtype)t, (coll_op)op, COLL_ALGO_AUTO), COLL_ERR_INVAL);
            REFUSED(coll_reduce(&c, f, g, 4, (coll_dtype)t, (coll_op)op, 0, COLL_ALGO_AUTO), COLL_ERR_INVAL);
            REFUSED(coll_reduce_scatterv(&c, f, g, counts, (coll_dtype)t, (coll_op)op, COLL_ALGO_AUTO), COLL_ERR_INVAL);
        }
    /* COLL_USER_OP / COLL_USER_TYPE without coll_set_user_op */
    REFUSED(coll_allreduce(&c, f, g, 4, COLL_INT32, COLL_USER_OP, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_allreduce(&c, f, g, 4, COLL_USER_TYPE, COLL_USER_OP, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_allgather(&c, f, g, 4, COLL_USER_TYPE, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    /* a user type with a built-in op */
    memset(&uop, 0, sizeof uop);
    REFUSED(coll_set_user_op(&c, &uop), COLL_ERR_INVAL);           /* no function */
    REFUSED(coll_set_user_op(&c, NULL), COLL_ERR_INVAL);
    REFUSED(coll_set_user_op(&zero, &uop), COLL_ERR_INVAL);
    uop.fn = nop_fn; uop.elem_size = 8; uop.commutative = 1;
    REFUSED(coll_set_user_op(&c, &uop), COLL_OK);
    REFUSED(coll_allreduce(&c, f, g, 4, COLL_USER_TYPE, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_INVAL);

    /* root out of range */
    REFUSED(coll_broadcast(&c, f, 4, COLL_FLOAT32, -1, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_broadcast(&c, f, 4, COLL_FLOAT32, P, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_reduce(&c, f, g, 4, COLL_FLOAT32, COLL_SUM, P, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_reduce(&c, f, g, 4, COLL_FLOAT32, COLL_SUM, -1, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_gather(&c, f, g, 4, COLL_FLOAT32, P, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_scatter(&c, f, g, 4, COLL_FLOAT32, 1000, COLL_ALGO_AUTO), COLL_ERR_INVAL);

    /* sizes that overflow size_t: count * size, count * size * nranks, the
       sum of the v counts */
    REFUSED(coll_allreduce(&c, f, g, big / 4 + 1, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_broadcast(&c, f, big / 2, COLL_FLOAT64, 0, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_reduce_scatter(&c, f, g, big / (4 * P) + 1, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_allgather(&c, f, g, big / (8 * P) + 1, COLL_INT64, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_alltoall(&c, f, g, big / (8 * P) + 1, COLL_UINT64, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_gather(&c, f, g, big / (4 * P) + 1, COLL_INT32, 0, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    huge_counts[0] = big / 4; huge_counts[1] = big / 4; huge_counts[2] = 2; huge_counts[3] = 0; /* 2^65 bytes */
    REFUSED(coll_allgatherv(&c, f, g, huge_counts, COLL_FLOAT32, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_reduce_scatterv(&c, f, g, huge_counts, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    /* a total that fits size_t but not the address space after the buffer */
    huge_counts[0] = big / 8; huge_counts[1] = big / 8; huge_counts[2] = 1; huge_counts[3] = 0;
    REFUSED(coll_allgatherv(&c, f, g, huge_counts, COLL_FLOAT32, COLL_ALGO_AUTO), COLL_ERR_INVAL);

    /* src and dst overlapping other than in the documented in-place layout */
    REFUSED(coll_allreduce(&c, f, f + 1, 8, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_allreduce(&c, f + 3, f, 8, COLL_FLOAT32, COLL_SUM, COLL_ALGO_RING), COLL_ERR_INVAL);
    REFUSED(coll_reduce(&c, f, f + 2, 8, COLL_FLOAT32, COLL_SUM, 0, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_reduce_scatter(&c, f, f + 3, 8, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_reduce_scatter(&c, f, f + 8, 8, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_INVAL); /* rank 1's block */
    REFUSED(coll_allgather(&c, f + 5, f, 8, COLL_FLOAT32, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_alltoall(&c, f + 1, f, 4, COLL_FLOAT32, COLL_ALGO_AUTO), COLL_ERR_INVAL);   /* src == dst is in place; this is not */
    REFUSED(coll_alltoall(&c, f, f + 2, 4, COLL_FLOAT32, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_gather(&c, f + 1, f, 4, COLL_FLOAT32, 0, COLL_ALGO_AUTO), COLL_ERR_INVAL);
    REFUSED(coll_scatter(&c, f, f + 1, 4, COLL_FLOAT32, 0, COLL_ALGO_AUTO), COLL_ERR_INVAL);

    /* an algorithm that is not one of this collective's, or no algorithm */
    REFUSED2(coll_allreduce(&c, f, g, 4, COLL_FLOAT32, COLL_SUM, COLL_ALGO_BRUCK), COLL_ERR_NOSYS, COLL_ERR_INVAL);
    REFUSED2(coll_broadcast(&c, f, 4, COLL_FLOAT32, 0, COLL_ALGO_RING), COLL_ERR_NOSYS, COLL_ERR_INVAL);
    REFUSED2(coll_reduce(&c, f, g, 4, COLL_FLOAT32, COLL_SUM, 0, COLL_ALGO_PAIRWISE), COLL_ERR_NOSYS, COLL_ERR_INVAL);
    REFUSED2(coll_barrier(&c, COLL_ALGO_RING), COLL_ERR_NOSYS, COLL_ERR_INVAL);
    REFUSED2(coll_alltoall(&c, f, g, 4, COLL_FLOAT32, COLL_ALGO_TREE), COLL_ERR_NOSYS, COLL_ERR_INVAL);
    REFUSED(coll_allreduce(&c, f, g, 4, COLL_FLOAT32, COLL_SUM, (coll_algo)COLL_ALGO_COUNT), COLL_ERR_INVAL);
    REFUSED(coll_allreduce(&c, f, g, 4, COLL_FLOAT32, COLL_SUM, (coll_algo)-1), COLL_ERR_INVAL);
    memset(&a, 0, sizeof a);
    a.kind = (coll_kind)COLL_KIND_COUNT; a.src = f; a.dst = g; a.count = 4; a.dtype = COLL_FLOAT32;
    REFUSED(coll_run(&c, &a), COLL_ERR_INVAL);
    a.kind = (coll_kind)-1;
    REFUSED(coll_run(&c, &a), COLL_ERR_INVAL);
    REFUSED(coll_run(&c, NULL), COLL_ERR_INVAL);
    a.kind = COLL_ALLREDUCE;
    REFUSED(coll_start(NULL, &c, &a), COLL_ERR_INVAL);
    REFUSED(coll_start(&q, &c, NULL), COLL_ERR_INVAL);
    REFUSED(coll_progress(NULL), COLL_ERR_INVAL);
    REFUSED(coll_describe(&c, &a, -1, &x), COLL_ERR_INVAL);
    REFUSED(coll_describe(&c, &a, 0, NULL), COLL_ERR_INVAL);

    /* scratch: none at all, or smaller than one element per segment half */
    REFUSED(coll_allreduce(&none, f, g, 4, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_NOSPC);
    REFUSED(coll_allreduce(&none, f, g, 4, COLL_FLOAT32, COLL_SUM, COLL_ALGO_RING), COLL_ERR_NOSPC);
    REFUSED(coll_reduce(&none, f, g, 4, COLL_INT8, COLL_MAX, 0, COLL_ALGO_AUTO), COLL_ERR_NOSPC);
    REFUSED(coll_reduce_scatter(&none, f, g, 4, COLL_INT32, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_NOSPC);
    REFUSED(coll_allreduce(&tiny, f, g, 4, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO), COLL_ERR_NOSPC);
    REFUSED(coll_allreduce(&tiny, f, g, 4, COLL_FLOAT64, COLL_SUM, COLL_ALGO_TREE), COLL_ERR_NOSPC);
    COLL_CHECK(coll_scratch_bytes(&none, &a) > 0);
    COLL_CHECK(coll_scratch_bytes(&c, &a) <= sizeof scratch);
    a.dtype = COLL_FLOAT64;
    COLL_CHECK(coll_scratch_bytes(&c, &a) >= 2 * sizeof(double));
    (void)g;
}

/* ---- 2. and 3. lost peers, failing ports, abort ------------------------------ */
#define TIMEOUT_MS 300
static coll_threads W;

typedef struct scenario {
    int kind;              /* 0 allreduce ring, 1 allreduce tree, 2 broadcast, 3 allgather, 4 barrier */
    int rendezvous;        /* port without the non-blocking calls */
    int absent;            /* this rank never calls (-1: none) */
    int failing;           /* this rank's port fails its 2nd send with -77 */
    int aborter;           /* this rank aborts the world after 100 ms */
    int mismatch;          /* rank 0 passes a different count */
    int rc[P];
    double t0, elapsed[P];
} scenario;

#define PORT_ERR (-77)

static int scenario_rank(int r, void *arg)
{
    scenario *S = (scenario *)arg;
    coll_port port = S->rendezvous ? coll_rendezvous_port(&W, r) : coll_threads_port(&W, r);
    coll_failing fl;
    coll_comm c;
    static double scr[P][64];
    double buf[P * 100];
    size_t n = S->mismatch && r == 0 ? 99 : 100;
    int rc, i;

    if (r == S->absent) return 0;
    if (r == S->aborter) {
        struct timespec ts = { 0, 100 * 1000000L };
        nanosleep(&ts, NULL);
        coll_threads_abort(&W);
        return 0;
    }
    if (r == S->failing) {
        port = coll_failing_port(&fl, &port, 2, PORT_ERR);
        port.abort = NULL;              /* a port without the hook: peers must not hang */
    }
    rc = coll_init(&c, r, P, &port, scr[r], sizeof scr[r]);
    if (rc != COLL_OK) return rc;
    for (i = 0; i < P * 100; i++) buf[i] = i + r;
    switch (S->kind) {
    case 0: rc = coll_allreduce(&c, buf, buf, n, COLL_FLOAT64, COLL_SUM, COLL_ALGO_RING); break;
    case 1: rc = coll_allreduce(&c, buf, buf, n, COLL_FLOAT64, COLL_SUM, COLL_ALGO_TREE); break;
    case 2: rc = coll_broadcast(&c, buf, n, COLL_FLOAT64, 0, COLL_ALGO_AUTO); break;
    case 3: rc = coll_allgather(&c, buf + r * n, buf, n, COLL_FLOAT64, COLL_ALGO_AUTO); break;
    default: rc = coll_barrier(&c, COLL_ALGO_AUTO); break;
    }
    S->rc[r] = rc;
    S->elapsed[r] = now_s() - S->t0;
    return 0;
}

static void run_scenario(scenario *S, unsigned timeout_ms)
{
    int i;
    for (i = 0; i < P; i++) { S->rc[i] = 1; S->elapsed[i] = 0; }
    coll_threads_init(&W, P, timeout_ms);
    S->t0 = now_s();
    coll_threads_run(&W, scenario_rank, S);
    coll_threads_destroy(&W);
}

static const char *const kind_name[] = { "allreduce/ring", "allreduce/tree", "broadcast", "allgather", "barrier" };

static void failures(void)
{
    int kind, rdv, r;
    /* a lost peer: everyone else times out, after the deadline but soon */
    for (kind = 0; kind < 5; kind++)
        for (rdv = 0; rdv < 2; rdv++) {
            scenario S;
            memset(&S, 0, sizeof S);
            S.kind = kind; S.rendezvous = rdv; S.absent = kind == 2 ? 0 : 2; S.failing = -1;
            S.aborter = -1;
            run_scenario(&S, TIMEOUT_MS);
            for (r = 0; r < P; r++) {
                if (r == S.absent) continue;
                COLL_CHECK_MSG(S.rc[r] == COLL_ERR_TIMEOUT, "%s%s, rank %d absent: rank %d returned %d (%s)",
                               kind_name[kind], rdv ? " (rendezvous)" : "", S.absent, r, S.rc[r],
                               coll_result_str(S.rc[r]));
                COLL_CHECK_MSG(S.elapsed[r] >= TIMEOUT_MS * 1e-3 && S.elapsed[r] < TIMEOUT_MS * 1e-3 + 2.0,
                               "%s, lost peer: rank %d gave up after %.3f s (deadline %.3f s)",
                               kind_name[kind], r, S.elapsed[r], TIMEOUT_MS * 1e-3);
            }
        }
    /* a port error comes back unchanged on its rank; the others do not hang */
    for (kind = 0; kind < 4; kind++) {
        scenario S;
        memset(&S, 0, sizeof S);
        S.kind = kind; S.absent = -1; S.failing = 0; S.aborter = -1;
        run_scenario(&S, TIMEOUT_MS);
        COLL_CHECK_MSG(S.rc[0] == PORT_ERR, "%s: the failing port's rank returned %d, not the port's %d",
                       kind_name[kind], S.rc[0], PORT_ERR);
        for (r = 1; r < P; r++) {
            COLL_CHECK_MSG(S.rc[r] == COLL_OK || S.rc[r] == COLL_ERR_TIMEOUT,
                           "%s: with rank 0's port failing, rank %d returned %d", kind_name[kind], r, S.rc[r]);
            COLL_CHECK_MSG(S.elapsed[r] < TIMEOUT_MS * 1e-3 + 2.0, "%s: rank %d waited %.3f s",
                           kind_name[kind], r, S.elapsed[r]);
        }
    }
    /* abort: every waiting rank returns at once, well before the deadline */
    for (kind = 0; kind < 5; kind++)
        for (rdv = 0; rdv < 2; rdv++) {
            scenario S;
            memset(&S, 0, sizeof S);
            S.kind = kind; S.rendezvous = rdv; S.absent = -1; S.failing = -1; S.aborter = kind == 2 ? 0 : 3;
            run_scenario(&S, 20000);
            for (r = 0; r < P; r++) {
                if (r == S.aborter) continue;
                COLL_CHECK_MSG(S.rc[r] == COLL_ERR_ABORTED, "%s%s, aborted: rank %d returned %d (%s)",
                               kind_name[kind], rdv ? " (rendezvous)" : "", r, S.rc[r],
                               coll_result_str(S.rc[r]));
                COLL_CHECK_MSG(S.elapsed[r] < 5.0, "%s, aborted: rank %d took %.3f s",
                               kind_name[kind], r, S.elapsed[r]);
            }
        }
    /* ranks that disagree on the count: an error everywhere, no result, no hang */
    for (kind = 0; kind < 4; kind++)
        for (rdv = 0; rdv < 2; rdv++) {
            scenario S;
            int mism = 0;
            memset(&S, 0, sizeof S);
            S.kind = kind; S.rendezvous = rdv; S.absent = -1; S.failing = -1; S.aborter = -1;
            S.mismatch = 1;
            run_scenario(&S, TIMEOUT_MS);
            for (r = 0; r < P; r++) {
                if (S.rc[r] == COLL_ERR_MISMATCH) mism++;
                COLL_CHECK_MSG(S.rc[r] == COLL_ERR_MISMATCH || S.rc[r] == COLL_ERR_TIMEOUT,
                               "%s%s, counts disagree: rank %d returned %d (%s)", kind_name[kind],
                               rdv ? " (rendezvous)" : "", r, S.rc[r], coll_result_str(S.rc[r]));
            }
            COLL_CHECK_MSG(mism > 0, "%s, counts disagree: no rank saw a mismatch", kind_name[kind]);
        }
}

/* ---- 5. the threads port's own contract --------------------------------------- */
static int eager_go;                 /* rank 0 -> rank 1: "post your receives now" */

static int port_rank(int r, void *arg)
{
    coll_port p = coll_threads_port(&W, r);
    int h[COLL_THREADS_MAX_OPS + 1], i, rc, n = 0;
    char a[16] = "0123456789abcde", b[16];
    (void)arg;
    if (r == 0) {
        /* a receive nobody has sent to yet polls as pending */
        rc = p.irecv(p.ctx, 1, b, 8, &h[0]);
        COLL_CHECK_EQ(rc, COLL_OK);
        COLL_CHECK_EQ(p.wait(p.ctx, h[0], 0), COLL_AGAIN);
        rc = p.send(p.ctx, 1, a, 4);                 /* tell rank 1 to send */
        COLL_CHECK_EQ(rc, COLL_OK);
        COLL_CHECK_EQ(p.wait(p.ctx, h[0], 1), COLL_OK);
        COLL_CHECK(memcmp(b, "ABCDEFGH", 8) == 0);
        COLL_CHECK_EQ(p.wait(p.ctx, h[0], 1), COLL_ERR_INVAL);   /* handle already finished */
        COLL_CHECK_EQ(p.wait(p.ctx, -1, 1), COLL_ERR_INVAL);
        COLL_CHECK_EQ(p.wait(p.ctx, COLL_THREADS_MAX_OPS, 1), COLL_ERR_INVAL);
        COLL_CHECK_EQ(p.send(p.ctx, 2, a, 4), COLL_ERR_INVAL);   /* no rank 2 */
        COLL_CHECK_EQ(p.send(p.ctx, -1, a, 4), COLL_ERR_INVAL);
        /* the pool of handles runs out gracefully */
        for (i = 0; i <= COLL_THREADS_MAX_OPS; i++) {
            rc = p.isend(p.ctx, 1, a, 1, &h[i]);
            if (rc != COLL_OK) break;
            n++;
        }
        COLL_CHECK_EQ(n, COLL_THREADS_MAX_OPS);
        COLL_CHECK_EQ(rc, COLL_AGAIN);
        COLL_CHECK(n >= 4);
        for (i = 0; i < n; i++) COLL_CHECK_EQ(p.wait(p.ctx, h[i], 1), COLL_OK);
        /* a size mismatch is reported on both ends */
        COLL_CHECK_EQ(p.send(p.ctx, 1, a, 8), COLL_ERR_MISMATCH);
        /* sendrecv with oneself */
        rc = p.sendrecv(p.ctx, 0, a, 16, 0, b, 16);
        COLL_CHECK_EQ(rc, COLL_OK);
        COLL_CHECK(memcmp(a, b, 16) == 0);
        /* small isends are eager: finished before rank 1 posts anything
           (it waits for eager_go); a size disagreement on one is the
           receiver's to report */
        COLL_CHECK_EQ(p.isend(p.ctx, 1, "EAGER-01", 8, &h[0]), COLL_OK);
        COLL_CHECK_EQ(p.wait(p.ctx, h[0], 0), COLL_OK);
        COLL_CHECK_EQ(p.wait(p.ctx, h[0], 0), COLL_ERR_INVAL);   /* handle already finished */
        COLL_CHECK_EQ(p.isend(p.ctx, 1, a, 4, &h[1]), COLL_OK);
        COLL_CHECK_EQ(p.wait(p.ctx, h[1], 1), COLL_OK);
        __atomic_store_n(&eager_go, 1, __ATOMIC_RELEASE);
        /* the eager slots come back: a full pool of handles again */
        COLL_CHECK_EQ(p.recv(p.ctx, 1, b, 1), COLL_OK);
        for (n = 0, i = 0; i <= COLL_THREADS_MAX_OPS; i++) {
            rc = p.irecv(p.ctx, 1, b, 1, &h[i]);
            if (rc != COLL_OK) break;
            n++;
        }
        COLL_CHECK_EQ(n, COLL_THREADS_MAX_OPS);
        COLL_CHECK_EQ(rc, COLL_AGAIN);
        for (i = 0; i < n; i++) COLL_CHECK_EQ(p.wait(p.ctx, h[i], 1), COLL_OK);
    } else {
        COLL_CHECK_EQ(p.recv(p.ctx, 0, b, 4), COLL_OK);
        COLL_CHECK_EQ(p.send(p.ctx, 0, "ABCDEFGH", 8), COLL_OK);
        for (i = 0; i < COLL_THREADS_MAX_OPS; i++) {
            COLL_CHECK_EQ(p.recv(p.ctx, 0, b, 1), COLL_OK);
            COLL_CHECK_EQ(b[0], '0');
        }
        COLL_CHECK_EQ(p.recv(p.ctx, 0, b, 16), COLL_ERR_MISMATCH);
        while (!__atomic_load_n(&eager_go, __ATOMIC_ACQUIRE)) sched_yield();
        COLL_CHECK_EQ(p.recv(p.ctx, 0, b, 8), COLL_OK);
        COLL_CHECK(memcmp(b, "EAGER-01", 8) == 0);
        COLL_CHECK_EQ(p.recv(p.ctx, 0, b, 8), COLL_ERR_MISMATCH);
        COLL_CHECK_EQ(p.send(p.ctx, 0, a, 1), COLL_OK);
        /* rank 0 posts every handle as a receive from us */
        for (i = 0; i < COLL_THREADS_MAX_OPS; i++) COLL_CHECK_EQ(p.send(p.ctx, 0, a, 1), COLL_OK);
    }
    return 0;
}

static void threads_port(void)
{
    static coll_threads big;
    COLL_CHECK_EQ(coll_threads_init(&big, 0, 0), COLL_ERR_INVAL);
    COLL_CHECK_EQ(coll_threads_init(&big, COLL_THREADS_MAX_RANKS + 1, 0), COLL_ERR_INVAL);
    COLL_CHECK_EQ(coll_threads_init(&big, COLL_THREADS_MAX_RANKS, 0), COLL_OK);
    COLL_CHECK(coll_threads_port(&big, COLL_THREADS_MAX_RANKS).send == NULL);
    coll_threads_destroy(&big);
    coll_threads_init(&W, 2, 5000);
    eager_go = 0;
    COLL_CHECK_EQ(coll_threads_run(&W, port_rank, NULL), 0);
    coll_threads_destroy(&W);
}

/* Without scratch the copy-only collectives still run (unsegmented). */
static int noscratch_rank(int r, void *arg)
{
    coll_port p = coll_threads_port(&W, r);
    coll_comm c;
    int32_t v[3 * 5], i, bad = 0;
    (void)arg;
    COLL_CHECK_EQ(coll_init(&c, r, 3, &p, NULL, 0), COLL_OK);
    for (i = 0; i < 5; i++) v[r * 5 + i] = r * 100 + i;
    COLL_CHECK_EQ(coll_allgather(&c, v + r * 5, v, 5, COLL_INT32, COLL_ALGO_AUTO), COLL_OK);
    for (i = 0; i < 15; i++) bad += v[i] != (i / 5) * 100 + i % 5;
    COLL_CHECK_EQ(bad, 0);
    for (i = 0; i < 5; i++) v[i] = r == 1 ? 100 + i : -1;
    COLL_CHECK_EQ(coll_broadcast(&c, v, 5, COLL_INT32, 1, COLL_ALGO_AUTO), COLL_OK);
    for (i = 0, bad = 0; i < 5; i++) bad += v[i] != 100 + i;
    COLL_CHECK_EQ(bad, 0);
    COLL_CHECK_EQ(coll_barrier(&c, COLL_ALGO_AUTO), COLL_OK);
    return 0;
}

/* ---- 6. messages ------------------------------------------------------------ */
static void messages(void)
{
    static const int codes[] = { COLL_OK, COLL_AGAIN, COLL_ERR_IO, COLL_ERR_INVAL, COLL_ERR_NOSPC,
                                 COLL_ERR_NOSYS, COLL_ERR_MISMATCH, COLL_ERR_TIMEOUT, COLL_ERR_ABORTED };
    const int n = (int)(sizeof codes / sizeof codes[0]);
    int i, j;
    for (i = 0; i < n; i++) {
        const char *s = coll_result_str(codes[i]);
        COLL_CHECK_MSG(s != NULL && s[0] != 0, "coll_result_str(%d) is empty", codes[i]);
        for (j = 0; j < i; j++)
            COLL_CHECK_MSG(s && coll_result_str(codes[j]) && strcmp(s, coll_result_str(codes[j])) != 0,
                           "codes %d and %d share the message \"%s\"", codes[i], codes[j], s ? s : "");
    }
    COLL_CHECK(coll_result_str(-77) != NULL);
    COLL_CHECK(coll_result_str(12345) != NULL);
    COLL_CHECK(coll_algo_name((coll_algo)COLL_ALGO_COUNT) != NULL);
    COLL_CHECK(coll_kind_name((coll_kind)-1) != NULL);
}

int main(void)
{
    invalid_arguments();
    messages();
    threads_port();
    coll_threads_init(&W, 3, 5000);
    COLL_CHECK_EQ(coll_threads_run(&W, noscratch_rank, NULL), 0);
    coll_threads_destroy(&W);
    failures();
    return coll_test_summary("errors");
}
