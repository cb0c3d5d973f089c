/* test_portable.c - the tests that run everywhere coll.h does: on this
   machine, on 32-bit and big-endian Linux under qemu-user, and as firmware
   on a Cortex-M3 and an RV32 core under QEMU (`make qemu`).

   Everywhere the same shape: P ranks live in one program on one core, each
   a coll_request, advanced round robin with coll_progress over the mailbox
   port (ports/coll_mailbox.h). No threads, no heap, no libc beyond
   what the harness prints with; every buffer is static.

   Each check compares against a plain loop over the ranks' inputs, on every
   rank; reductions of floats must also leave all ranks bit-identical.
   Inputs are small integers, so every dtype (float16 and bfloat16 too)
   holds every partial sum exactly and the reference needs no tolerance,
   except for avg's division. */
#define COLL_IMPLEMENTATION
#include "coll.h"
#define COLL_MAILBOX_IMPLEMENTATION
#include "ports/coll_mailbox.h"
#define COLL_TEST_SINGLE_THREAD         /* checks run on the main thread only */
#include "test/coll_test.h"
#include "test/test_values.h"
#ifdef PORTABLE_THREADS                 /* hosted builds: ranks as threads too */
#define COLL_THREADS_IMPLEMENTATION
#include "ports/coll_threads.h"
#endif

#define P_MAX 5                 /* ranks                                      */
#define N_MAX 300               /* elements per rank (per block for the        */
                                /* block-wise collectives)                     */
#define E_MAX 8                 /* bytes per element, largest dtype            */
#define GUARD 32                /* bytes checked untouched after each output   */
#define BUF_BYTES (P_MAX * N_MAX * E_MAX + GUARD)
#define GUARD_BYTE 0x5a

/* 8-byte aligned, so any dtype may live at the start. */
typedef union { unsigned char b[BUF_BYTES]; uint64_t align_; double d_; } t_buf;

static coll_mailbox world;
static coll_comm comm[P_MAX];
static coll_request req[P_MAX];
static coll_args args[P_MAX];
static t_buf src[P_MAX], dst[P_MAX];
static union { unsigned char b[1024]; uint64_t align_; } scratch_mem[P_MAX];   /* 8-byte aligned */
#define scratch(r) scratch_mem[r].b
static unsigned t_checks = COLL_CHECK_CALLS;   /* the call checks of every t_world */
static size_t counts[P_MAX];

/* ---- bytes, without libc ------------------------------------------------- */
static void t_fill(void *p, int v, size_t n)
{
    unsigned char *d = (unsigned char *)p;
    while (n--) *d++ = (unsigned char)v;
}

static int t_same(const void *a, const void *b, size_t n)
{
    const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
    for (; n; n--) if (*x++ != *y++) return 0;
    return 1;
}

static int t_untouched(const void *p, size_t n)
{
    const unsigned char *x = (const unsigned char *)p;
    for (; n; n--) if (*x++ != GUARD_BYTE) return 0;
    return 1;
}

/* ---- values of every dtype, and the reference: test/test_values.h ------- */

/* ---- driving P ranks ------------------------------------------------------ */

static void t_world(int p, size_t scratch_bytes)
{
    int r;
    coll_port port;
    coll_mailbox_init(&world, p);
    for (r = 0; r < p; r++) {
        port = coll_mailbox_port(&world, r);
        coll_init(&comm[r], r, p, &port, scratch_bytes ? scratch(r) : 0, scratch_bytes);
        coll_set_checks(&comm[r], t_checks);
    }
}

/* Starts args[0..p-1] and progresses every rank in turn until none answers
   COLL_AGAIN. rc[r] gets each rank's result; returns 0, or -1 if the ranks
   stopped making progress (a deadlock the port would otherwise hang in). */
static int t_run(int p, int *rc)
{
    int r, live, rounds = 0;
    for (r = 0; r < p; r++) {
        rc[r] = coll_start(&req[r], &comm[r], &args[r]);
        if (rc[r] == COLL_OK) rc[r] = COLL_AGAIN;
    }
    do {
        live = 0;
        for (r = 0; r < p; r++) {
            if (rc[r] != COLL_AGAIN) continue;
            rc[r] = coll_progress(&req[r]);
            live += rc[r] == COLL_AGAIN;
        }
    } while (live && ++rounds < 200000);
    return live ? -1 : 0;
}

/* 1 if every rank finished with COLL_OK; a NOSYS on all ranks counts as
   "not offered" (0, no check), anything else fails a check. */
static int t_all_ok(int p, const char *what)
{
    int rc[P_MAX], r, nosys = 0, ok = 1;
    int stuck = t_run(p, rc);
    for (r = 0; r < p; r++) {
        nosys += rc[r] == COLL_ERR_NOSYS;
        if (rc[r] != COLL_OK) ok = 0;
    }
    if (nosys == p) { coll_test_unavailable(); return 0; }
    COLL_CHECK_MSG(!stuck && ok, "%s: %d ranks %s (rank 0: %s)", what, p,
          stuck ? "stopped making progress" : "failed", coll_result_str(rc[0]));
    COLL_CHECK_MSG(coll_mailbox_pending(&world) == 0, "%s: transfers left posted", what);
    return !stuck && ok;
}

static void t_args(int r, coll_kind k, coll_algo a, const void *s, void *d, size_t n,
                   coll_dtype t, coll_op op, int root)
{
    coll_args *x = &args[r];
    t_fill(x, 0, sizeof *x);
    x->kind = k; x->algo = a; x->src = s; x->dst = d; x->count = n;
    x->dtype = t; x->op = op; x->root = root;
    if (k == COLL_ALLGATHERV || k == COLL_REDUCE_SCATTERV) x->counts = counts;
}

/* ---- reductions: allreduce, reduce, reduce_scatter(v) ------------------------ */

/* allreduce of p ranks x n elements; in place or not; then: every rank holds
   the reference, floats bit-identical across ranks, the guard untouched. */
static void t_allreduce(coll_algo algo, int p, size_t n, coll_dtype t, coll_op op,
                        int inplace, size_t scratch_bytes)
{
    size_t es = coll_dtype_size(t), i;
    int r;
    t_world(p, scratch_bytes);
    for (r = 0; r < p; r++) {
        unsigned char *in = inplace ? dst[r].b : src[r].b;
        t_fill(dst[r].b, GUARD_BYTE, sizeof dst[r].b);
        for (i = 0; i < n; i++) t_put(t, in, i, t_input(r, i, t, op));
        t_args(r, COLL_ALLREDUCE, algo, in, dst[r].b, n, t, op, 0);
    }
    if (!t_all_ok(p, "allreduce")) return;
    for (r = 0; r < p; r++) {
        size_t bad = n;
        for (i = 0; i < n && bad == n; i++)
            if (!t_close(t, op, t_get(t, dst[r].b, i), t_reduce_ref(t, op, p, i))) bad = i;
        COLL_CHECK_MSG(bad == n, "allreduce/%s p=%d n=%zu dtype %d op %d %s: rank %d element %zu is %g, want %g",
              coll_algo_name(algo), p, n, (int)t, (int)op, inplace ? "in place" : "",
              r, bad, bad < n ? t_get(t, dst[r].b, bad) : 0.0,
              bad < n ? t_reduce_ref(t, op, p, bad) : 0.0);
        COLL_CHECK_MSG(t_untouched(dst[r].b + n * es, GUARD),
              "allreduce/%s p=%d n=%zu: rank %d wrote past its buffer", coll_algo_name(algo), p, n, r);
        if (r > 0)
            COLL_CHECK_MSG(t_same(dst[r].b, dst[0].b, n * es),
                  "allreduce/%s p=%d n=%zu dtype %d: rank %d differs from rank 0",
                  coll_algo_name(algo), p, n, (int)t, r);
    }
}

static void t_reduce(coll_algo algo, int p, size_t n, coll_dtype t, coll_op op, int root)
{
    size_t es = coll_dtype_size(t), i, bad = n;
    int r;
    t_world(p, sizeof scratch_mem[0].b);
    for (r = 0; r < p; r++) {
        t_fill(dst[r].b, GUARD_BYTE, sizeof dst[r].b);
        for (i = 0; i < n; i++) t_put(t, src[r].b, i, t_input(r, i, t, op));
        t_args(r, COLL_REDUCE, algo, src[r].b, dst[r].b, n, t, op, root);
    }
    if (!t_all_ok(p, "reduce")) return;
    for (i = 0; i < n && bad == n; i++)
        if (!t_close(t, op, t_get(t, dst[root].b, i), t_reduce_ref(t, op, p, i))) bad = i;
    COLL_CHECK_MSG(bad == n, "reduce/%s p=%d n=%zu root %d: element %zu wrong",
          coll_algo_name(algo), p, n, root, bad);
    for (r = 0; r < p; r++)
        COLL_CHECK_MSG(t_untouched(dst[r].b + n * es, GUARD), "reduce: rank %d wrote past its buffer", r);
}

/* reduce_scatter: rank r's src is p blocks of n; it keeps the reduction of
   block r. The "v" form gives rank r counts[r] elements instead. */
static void t_reduce_scatter(coll_algo algo, int p, size_t n, int vform)
{
    const coll_dtype t = COLL_INT32;
    const coll_op op = COLL_SUM;
    size_t total = 0, off[P_MAX], i;
    int r;
    for (r = 0; r < p; r++) {
        counts[r] = vform ? (n + (size_t)r * 3) % (N_MAX / 2) : n;
        off[r] = total;
        total += counts[r];
    }
    t_world(p, sizeof scratch_mem[0].b);
    for (r = 0; r < p; r++) {
        t_fill(dst[r].b, GUARD_BYTE, sizeof dst[r].b);
        for (i = 0; i < total; i++) t_put(t, src[r].b, i, t_input(r, i, t, op));
        t_args(r, vform ? COLL_REDUCE_SCATTERV : COLL_REDUCE_SCATTER, algo,
               src[r].b, dst[r].b, n, t, op, 0);
    }
    if (!t_all_ok(p, vform ? "reduce_scatterv" : "reduce_scatter")) return;
    for (r = 0; r < p; r++) {
        size_t bad = counts[r];
        for (i = 0; i < counts[r] && bad == counts[r]; i++)
            if (t_get(t, dst[r].b, i) != t_reduce_ref(t, op, p, off[r] + i)) bad = i;
        COLL_CHECK_MSG(bad == counts[r], "reduce_scatter%s/%s p=%d n=%zu: rank %d element %zu wrong",
              vform ? "v" : "", coll_algo_name(algo), p, n, r, bad);
        COLL_CHECK_MSG(t_untouched(dst[r].b + counts[r] * 4, GUARD),
              "reduce_scatter: rank %d wrote past its block", r);
    }
}

/* ---- data movement: allgather(v), broadcast, gather, scatter, alltoall ------ */

/* A value that says where it came from: rank r's element i. */
static uint32_t t_tag(int r, size_t i) { return (uint32_t)(r * 100000 + (int)i + 1); }

static void t_allgather(coll_algo algo, int p, size_t n, int vform)
{
    size_t total = 0, off[P_MAX], i;
    int r, q;
    for (r = 0; r < p; r++) {
        counts[r] = vform ? (n * (size_t)(r + 1)) % (N_MAX / 2) : n;
        off[r] = total;
        total += counts[r];
    }
    t_world(p, sizeof scratch_mem[0].b);
    for (r = 0; r < p; r++) {
        t_fill(dst[r].b, GUARD_BYTE, sizeof dst[r].b);
        for (i = 0; i < counts[r]; i++) ((uint32_t *)src[r].b)[i] = t_tag(r, i);
        t_args(r, vform ? COLL_ALLGATHERV : COLL_ALLGATHER, algo, src[r].b, dst[r].b, n,
               COLL_UINT32, COLL_SUM, 0);
    }
    if (!t_all_ok(p, vform ? "allgatherv" : "allgather")) return;
    for (r = 0; r < p; r++) {
        int good = 1;
        for (q = 0; q < p; q++)
            for (i = 0; i < counts[q]; i++)
                good &= ((uint32_t *)dst[r].b)[off[q] + i] == t_tag(q, i);
        COLL_CHECK_MSG(good, "allgather%s/%s p=%d n=%zu: rank %d holds a wrong block",
              vform ? "v" : "", coll_algo_name(algo), p, n, r);
        COLL_CHECK_MSG(t_untouched(dst[r].b + total * 4, GUARD), "allgather: rank %d wrote past", r);
    }
}

static void t_broadcast(coll_algo algo, int p, size_t n, int root)
{
    size_t i;
    int r, good;
    t_world(p, sizeof scratch_mem[0].b);
    for (r = 0; r < p; r++) {
        t_fill(dst[r].b, GUARD_BYTE, sizeof dst[r].b);
        if (r == root)
            for (i = 0; i < n; i++) ((uint32_t *)dst[r].b)[i] = t_tag(root, i);
        t_args(r, COLL_BROADCAST, algo, dst[r].b, dst[r].b, n, COLL_UINT32, COLL_SUM, root);
    }
    if (!t_all_ok(p, "broadcast")) return;
    for (r = 0; r < p; r++) {
        good = 1;
        for (i = 0; i < n; i++) good &= ((uint32_t *)dst[r].b)[i] == t_tag(root, i);
        COLL_CHECK_MSG(good && t_untouched(dst[r].b + n * 4, GUARD),
              "broadcast/%s p=%d n=%zu root %d: rank %d wrong", coll_algo_name(algo), p, n, root, r);
    }
}

/* gather then scatter back: root collects rank q's block at q*n, then sends
   block q of a fresh array to rank q. */
static void t_gather_scatter(coll_algo algo, int p, size_t n, int root)
{
    size_t i;
    int r, q, good = 1;
    t_world(p, sizeof scratch_mem[0].b);
    for (r = 0; r < p; r++) {
        t_fill(dst[r].b, GUARD_BYTE, sizeof dst[r].b);
        for (i = 0; i < n; i++) ((uint32_t *)src[r].b)[i] = t_tag(r, i);
        t_args(r, COLL_GATHER, algo, src[r].b, dst[r].b, n, COLL_UINT32, COLL_SUM, root);
    }
    if (t_all_ok(p, "gather")) {
        for (q = 0; q < p; q++)
            for (i = 0; i < n; i++) good &= ((uint32_t *)dst[root].b)[(size_t)q * n + i] == t_tag(q, i);
        COLL_CHECK_MSG(good && t_untouched(dst[root].b + (size_t)p * n * 4, GUARD),
              "gather/%s p=%d n=%zu root %d: wrong", coll_algo_name(algo), p, n, root);
    }
    t_world(p, sizeof scratch_mem[0].b);
    for (r = 0; r < p; r++) {
        t_fill(dst[r].b, GUARD_BYTE, sizeof dst[r].b);
        if (r == root)
            for (q = 0; q < p; q++)
                for (i = 0; i < n; i++) ((uint32_t *)src[r].b)[(size_t)q * n + i] = t_tag(q + 50, i);
        t_args(r, COLL_SCATTER, algo, src[r].b, dst[r].b, n, COLL_UINT32, COLL_SUM, root);
    }
    if (!t_all_ok(p, "scatter")) return;
    for (r = 0; r < p; r++) {
        good = 1;
        for (i = 0; i < n; i++) good &= ((uint32_t *)dst[r].b)[i] == t_tag(r + 50, i);
        COLL_CHECK_MSG(good && t_untouched(dst[r].b + n * 4, GUARD),
              "scatter/%s p=%d n=%zu root %d: rank %d wrong", coll_algo_name(algo), p, n, root, r);
    }
}

static void t_alltoall(coll_algo algo, int p, size_t n)
{
    size_t i;
    int r, q, good;
    t_world(p, sizeof scratch_mem[0].b);
    for (r = 0; r < p; r++) {
        t_fill(dst[r].b, GUARD_BYTE, sizeof dst[r].b);
        /* block q of rank r's src is for rank q: tag it (r -> q) */
        for (q = 0; q < p; q++)
            for (i = 0; i < n; i++) ((uint32_t *)src[r].b)[(size_t)q * n + i] = t_tag(r * 10 + q, i);
        t_args(r, COLL_ALLTOALL, algo, src[r].b, dst[r].b, n, COLL_UINT32, COLL_SUM, 0);
    }
    if (!t_all_ok(p, "alltoall")) return;
    for (r = 0; r < p; r++) {
        good = 1;
        for (q = 0; q < p; q++)
            for (i = 0; i < n; i++) good &= ((uint32_t *)dst[r].b)[(size_t)q * n + i] == t_tag(q * 10 + r, i);
        COLL_CHECK_MSG(good && t_untouched(dst[r].b + (size_t)p * n * 4, GUARD),
              "alltoall/%s p=%d n=%zu: rank %d wrong", coll_algo_name(algo), p, n, r);
    }
}

/* alltoallv: rank r sends mat[r*p + q] elements to rank q, a ragged matrix
   with empty blocks (in place a symmetric one: row r = column r). */
static void t_alltoallv(coll_algo algo, int p, size_t n, int inplace)
{
    static size_t mat[P_MAX * P_MAX];
    size_t i, o, in_n;
    int r, q, good;
    for (r = 0; r < p; r++)
        for (q = 0; q < p; q++)
            mat[r * p + q] = inplace ? ((r + q) % 3 == 2 ? 0 : n + (size_t)(((r + q) * 7 + r * q) % 5))
                                     : ((r + 2 * q) % 3 == 1 ? 0 : n + (size_t)((r * 7 + q * 3) % 5));
    t_world(p, sizeof scratch_mem[0].b);
    for (r = 0; r < p; r++) {
        unsigned char *s = inplace ? dst[r].b : src[r].b;
        t_fill(dst[r].b, GUARD_BYTE, sizeof dst[r].b);
        t_fill(src[r].b, GUARD_BYTE, sizeof src[r].b);
        for (q = 0, o = 0; q < p; q++)   /* block q of rank r's row: tagged (r -> q) */
            for (i = 0; i < mat[r * p + q]; i++, o++) ((uint32_t *)s)[o] = t_tag(r * 10 + q, i);
        t_args(r, COLL_ALLTOALLV, algo, s, dst[r].b, 0, COLL_UINT32, COLL_SUM, 0);
        args[r].counts = mat;
    }
    if (!t_all_ok(p, "alltoallv")) return;
    for (r = 0; r < p; r++) {
        good = 1;
        for (q = 0, o = 0; q < p; q++)   /* block q of rank r's column: from q */
            for (i = 0; i < mat[q * p + r]; i++, o++) good &= ((uint32_t *)dst[r].b)[o] == t_tag(q * 10 + r, i);
        good &= t_untouched(dst[r].b + o * 4, GUARD);
        for (q = 0, in_n = 0; q < p && !inplace; q++)   /* out of place: the input as it was */
            for (i = 0; i < mat[r * p + q]; i++, in_n++) good &= ((uint32_t *)src[r].b)[in_n] == t_tag(r * 10 + q, i);
        good &= inplace || t_untouched(src[r].b + in_n * 4, GUARD);
        COLL_CHECK_MSG(good, "alltoallv/%s p=%d n=%zu%s: rank %d wrong", coll_algo_name(algo), p, n,
                       inplace ? " in place" : "", r);
    }
}

/* A barrier holds every rank until all have arrived: while rank 0 has not
   started, no other rank may finish. */
static void t_barrier(coll_algo algo, int p)
{
    int rc[P_MAX], r, early = 0, rounds, live;
    t_world(p, 0);
    for (r = 0; r < p; r++) t_args(r, COLL_BARRIER, algo, 0, 0, 0, COLL_UINT8, COLL_SUM, 0);
    for (r = 1; r < p; r++) {
        rc[r] = coll_start(&req[r], &comm[r], &args[r]);
        if (rc[r] == COLL_ERR_NOSYS) { coll_test_unavailable(); return; }
        if (rc[r] == COLL_OK) rc[r] = COLL_AGAIN;
    }
    for (rounds = 0; rounds < 50; rounds++)              /* rank 0 still away */
        for (r = 1; r < p; r++)
            if (rc[r] == COLL_AGAIN) {
                rc[r] = coll_progress(&req[r]);
                early += rc[r] != COLL_AGAIN;
            }
    COLL_CHECK_MSG(early == 0, "barrier/%s p=%d: %d ranks left before rank 0 arrived",
          coll_algo_name(algo), p, early);
    rc[0] = coll_start(&req[0], &comm[0], &args[0]);
    if (rc[0] == COLL_OK) rc[0] = COLL_AGAIN;
    rounds = 0;
    do {
        live = 0;
        for (r = 0; r < p; r++)
            if (rc[r] == COLL_AGAIN) { rc[r] = coll_progress(&req[r]); live += rc[r] == COLL_AGAIN; }
    } while (live && ++rounds < 10000);
    for (r = 0; r < p; r++)
        COLL_CHECK_MSG(rc[r] == COLL_OK, "barrier/%s p=%d: rank %d ended with %s",
              coll_algo_name(algo), p, r, coll_result_str(rc[r]));
}

/* ---- what the bytes on the wire must add up to ------------------------------ */

/* Ring, tree and naive all-reduce each move every element 2(p-1) times in
   total (ring: p-1 hops reducing, p-1 copying; tree and naive: p-1 messages
   up, p-1 down), whatever the split of a ragged count. */
static void t_traffic(coll_algo algo, int p, size_t n)
{
    unsigned long long total = 0;
    int r;
    t_checks = 0;                      /* count the schedule's own bytes */
    t_allreduce(algo, p, n, COLL_INT32, COLL_SUM, 0, sizeof scratch_mem[0].b);
    t_checks = COLL_CHECK_CALLS;
    for (r = 0; r < p; r++) total += world.bytes_sent[r];
    COLL_CHECK_MSG(total == 2ull * (unsigned long long)(p - 1) * n * 4,
          "allreduce/%s p=%d n=%zu: %llu bytes sent in all, want %llu",
          coll_algo_name(algo), p, n, total, 2ull * (unsigned long long)(p - 1) * n * 4);
}

/* ---- layouts that depend on byte order ---------------------------------------- */

/* The 16-bit floats are reduced as values, not as bytes: four ranks adding
   1.0 give 4.0, whose bit patterns are fixed by IEEE 754 and bfloat16 and
   must come out the same on little- and big-endian machines. */
static void t_half_bits(void)
{
    static const struct { coll_dtype t; uint16_t one, four; } cases[] = {
        { COLL_FLOAT16, 0x3c00u, 0x4400u }, { COLL_BFLOAT16, 0x3f80u, 0x4080u } };
    size_t c;
    int r;
    for (c = 0; c < 2; c++) {
        t_world(4, sizeof scratch_mem[0].b);
        for (r = 0; r < 4; r++) {
            ((uint16_t *)dst[r].b)[0] = cases[c].one;
            ((uint16_t *)dst[r].b)[1] = (uint16_t)(cases[c].one | 0x8000u);   /* -1 */
            t_args(r, COLL_ALLREDUCE, COLL_ALGO_RING, dst[r].b, dst[r].b, 2, cases[c].t, COLL_SUM, 0);
        }
        if (!t_all_ok(4, "allreduce of halves")) continue;
        for (r = 0; r < 4; r++)
            COLL_CHECK_MSG(((uint16_t *)dst[r].b)[0] == cases[c].four &&
                  ((uint16_t *)dst[r].b)[1] == (uint16_t)(cases[c].four | 0x8000u),
                  "dtype %d: 4 x 1.0 gave 0x%04x, want 0x%04x (rank %d)",
                  (int)cases[c].t, (unsigned)((uint16_t *)dst[r].b)[0], (unsigned)cases[c].four, r);
    }
}

/* Floats that round: every rank must still hold the same bits (each element
   is reduced along one chain and then copied), close to the reference. */
static void t_bitwise_identical(coll_algo algo, int p)
{
    const size_t n = 97;
    size_t i;
    int r;
    t_world(p, 256);
    for (r = 0; r < p; r++) {
        for (i = 0; i < n; i++) ((float *)src[r].b)[i] = 0.1f * (float)(r + 1) + 1e-3f * (float)i;
        t_args(r, COLL_ALLREDUCE, algo, src[r].b, dst[r].b, n, COLL_FLOAT32, COLL_SUM, 0);
    }
    if (!t_all_ok(p, "allreduce of fractions")) return;
    for (r = 0; r < p; r++) {
        int close = 1;
        for (i = 0; i < n; i++) {
            double want = 0, d;
            int q;
            for (q = 0; q < p; q++) want += (double)(0.1f * (float)(q + 1) + 1e-3f * (float)i);
            d = (double)((float *)dst[r].b)[i] - want;
            close &= d < 1e-5 && d > -1e-5;
        }
        COLL_CHECK_MSG(close, "allreduce/%s p=%d float32 fractions: rank %d far from the reference",
              coll_algo_name(algo), p, r);
        if (r > 0)
            COLL_CHECK_MSG(t_same(dst[r].b, dst[0].b, n * 4),
                  "allreduce/%s p=%d float32 fractions: rank %d not bit-identical to rank 0",
                  coll_algo_name(algo), p, r);
    }
}

/* ---- errors ----------------------------------------------------------------- */

/* Bad arguments come back as COLL_ERR_INVAL from every rank, before any
   payload moves; a reduction without scratch as COLL_ERR_NOSPC. */
static void t_errors(void)
{
    static const struct { coll_kind k; coll_dtype t; coll_op op; int root; int want; } bad[] = {
        { COLL_BROADCAST, COLL_INT32, COLL_SUM, 4, COLL_ERR_INVAL },      /* root == p */
        { COLL_REDUCE, COLL_INT32, COLL_SUM, -1, COLL_ERR_INVAL },        /* root < 0  */
        { COLL_ALLREDUCE, COLL_FLOAT32, COLL_BXOR, 0, COLL_ERR_INVAL },   /* bits of a float */
        { COLL_ALLREDUCE, COLL_DTYPE_COUNT, COLL_SUM, 0, COLL_ERR_INVAL },
        { COLL_ALLREDUCE, COLL_INT32, COLL_OP_COUNT, 0, COLL_ERR_INVAL },
        { COLL_KIND_COUNT, COLL_INT32, COLL_SUM, 0, COLL_ERR_INVAL } };
    size_t c;
    int r, rc[P_MAX];
    for (c = 0; c < sizeof bad / sizeof bad[0]; c++) {
        int all = 1;
        t_world(4, sizeof scratch_mem[0].b);
        for (r = 0; r < 4; r++)
            t_args(r, bad[c].k, COLL_ALGO_AUTO, src[r].b, dst[r].b, 8, bad[c].t, bad[c].op, bad[c].root);
        t_run(4, rc);
        /* with the call checks every rank learns of the refusal in the
           agreement round: its lg 4 = 2 frames, and no payload */
        for (r = 0; r < 4; r++) all &= rc[r] == bad[c].want && world.msgs_sent[r] == 2;
        COLL_CHECK_MSG(all && coll_mailbox_pending(&world) == 0,
              "bad argument set %zu: rank 0 says %s, want %s, with nothing sent",
              c, coll_result_str(rc[0]), coll_result_str(bad[c].want));
    }
    /* No scratch: reductions cannot run, copies still can. */
    t_world(4, 0);
    for (r = 0; r < 4; r++)
        t_args(r, COLL_ALLREDUCE, COLL_ALGO_RING, src[r].b, dst[r].b, 8, COLL_INT32, COLL_SUM, 0);
    t_run(4, rc);
    COLL_CHECK_MSG(rc[0] == COLL_ERR_NOSPC && rc[3] == COLL_ERR_NOSPC,
          "allreduce without scratch: %s, want %s", coll_result_str(rc[0]),
          coll_result_str(COLL_ERR_NOSPC));
    t_world(4, 0);
    for (r = 0; r < 4; r++) {
        ((uint32_t *)src[r].b)[0] = t_tag(r, 0);
        t_args(r, COLL_ALLGATHER, COLL_ALGO_AUTO, src[r].b, dst[r].b, 1, COLL_UINT32, COLL_SUM, 0);
    }
    if (t_all_ok(4, "allgather without scratch"))
        COLL_CHECK_MSG(((uint32_t *)dst[2].b)[3] == t_tag(3, 0), "allgather without scratch: wrong data");
}

/* "Unused fields are ignored": counts and group set on a collective that has
   no use for them change nothing. */
static void t_unused_fields(void)
{
    size_t i;
    int r, good = 1;
    t_world(4, sizeof scratch_mem[0].b);
    for (r = 0; r < 4; r++) {
        counts[r] = 0;                                    /* would mean "no data" */
        for (i = 0; i < 20; i++) ((int32_t *)src[r].b)[i] = (int32_t)(r + (int)i);
        t_args(r, COLL_ALLREDUCE, COLL_ALGO_RING, src[r].b, dst[r].b, 20, COLL_INT32, COLL_SUM, 0);
        args[r].counts = counts;
        args[r].group = 3;
    }
    if (!t_all_ok(4, "allreduce with unused fields set")) return;
    for (r = 0; r < 4; r++)
        for (i = 0; i < 20; i++) good &= ((int32_t *)dst[r].b)[i] == (int32_t)(6 + 4 * (int)i);
    COLL_CHECK_MSG(good, "allreduce with counts and group set: the unused fields changed the result");
}

/* The blocking calls on one core: with nobody else to run, the port's wait
   gives up and its code must come back unchanged. With an idle hook that
   advances the other ranks, the blocking call on rank 0 completes. */
static int idle_calls;
static void t_idle(void *user)
{
    int r, *rc = (int *)user;
    idle_calls++;
    for (r = 1; r < world.nranks; r++)
        if (rc[r] == COLL_AGAIN) rc[r] = coll_progress(&req[r]);
}

static void t_blocking(void)
{
    int rc[P_MAX], r, ok;
    size_t i;
    t_world(1, sizeof scratch_mem[0].b);                  /* one rank: no messages */
    for (i = 0; i < 10; i++) ((int32_t *)src[0].b)[i] = (int32_t)i - 3;
    rc[0] = coll_allreduce(&comm[0], src[0].b, dst[0].b, 10, COLL_INT32, COLL_SUM, COLL_ALGO_AUTO);
    COLL_CHECK_MSG(rc[0] == COLL_OK && t_same(src[0].b, dst[0].b, 40), "allreduce on 1 rank: %s",
          coll_result_str(rc[0]));

    t_world(4, sizeof scratch_mem[0].b);                  /* nobody else can run */
    rc[0] = coll_allreduce(&comm[0], src[0].b, dst[0].b, 10, COLL_INT32, COLL_SUM, COLL_ALGO_RING);
    COLL_CHECK_MSG(rc[0] == COLL_ERR_TIMEOUT, "blocking allreduce alone on one core: %s, want the port's %s",
          coll_result_str(rc[0]), coll_result_str(COLL_ERR_TIMEOUT));

    t_world(4, sizeof scratch_mem[0].b);                  /* others run while rank 0 waits */
    world.idle = t_idle;
    world.user = rc;
    idle_calls = 0;
    for (r = 0; r < 4; r++) {
        for (i = 0; i < 50; i++) ((int32_t *)src[r].b)[i] = (int32_t)(r * 50 + (int)i);
        t_args(r, COLL_ALLREDUCE, COLL_ALGO_RING, src[r].b, dst[r].b, 50, COLL_INT32, COLL_SUM, 0);
        if (r > 0) {
            rc[r] = coll_start(&req[r], &comm[r], &args[r]);
            if (rc[r] == COLL_OK) rc[r] = COLL_AGAIN;
        }
    }
    rc[0] = coll_allreduce(&comm[0], src[0].b, dst[0].b, 50, COLL_INT32, COLL_SUM, COLL_ALGO_RING);
    for (r = 1; r < 4 && rc[0] == COLL_OK; r++)    /* finish whoever is left */
        while (rc[r] == COLL_AGAIN) rc[r] = coll_progress(&req[r]);
    ok = 1;
    for (r = 0; r < 4; r++) {
        ok &= rc[r] == COLL_OK;
        for (i = 0; i < 50; i++)
            ok &= ((int32_t *)dst[r].b)[i] == (int32_t)(4 * (int)i + 50 * (0 + 1 + 2 + 3));
    }
    COLL_CHECK_MSG(ok && idle_calls > 0, "blocking allreduce on rank 0 driven by the idle hook: %s",
          coll_result_str(rc[0]));
    world.idle = 0;
}

/* ---- the blocking calls on real threads (hosted builds) ---------------------- */
#ifdef PORTABLE_THREADS
/* Each rank thread runs the blocking collectives and notes, per case, its
   result code and whether its output matched; the main thread checks the
   notes afterwards (the harness's counters are not shared between threads). */
enum { TH_CASES = 8, TH_N = 1000 };
static coll_threads th_world;
static int th_rc[P_MAX][TH_CASES], th_good[P_MAX][TH_CASES];
static const char *const th_names[TH_CASES] = { "allreduce/ring", "allreduce/tree",
    "allreduce/naive", "allreduce/auto", "reduce_scatter", "allgather", "broadcast", "barrier" };

static int th_body(int rank, void *arg)
{
    static const coll_algo algos[4] = { COLL_ALGO_RING, COLL_ALGO_TREE, COLL_ALGO_NAIVE, COLL_ALGO_AUTO };
    int p = *(const int *)arg, k, q;
    size_t i;
    coll_port port = coll_threads_port(&th_world, rank);
    coll_comm *c = &comm[rank];
    int64_t *in = (int64_t *)src[rank].b, *out = (int64_t *)dst[rank].b;
    coll_init(c, rank, p, &port, scratch(rank), sizeof scratch_mem[rank].b);
    for (k = 0; k < 4; k++) {                 /* int64 sums, 1000 elements */
        for (i = 0; i < TH_N; i++) in[i] = (int64_t)rank * 1000003 - (int64_t)i;
        th_rc[rank][k] = coll_allreduce(c, in, out, TH_N, COLL_INT64, COLL_SUM, algos[k]);
        th_good[rank][k] = 1;
        for (i = 0; i < TH_N; i++)
            th_good[rank][k] &= out[i] == (int64_t)p * (p - 1) / 2 * 1000003 - (int64_t)p * (int64_t)i;
    }
    for (i = 0; i < (size_t)p * 100; i++) in[i] = (int64_t)(rank + 1) * (int64_t)i;
    th_rc[rank][4] = coll_reduce_scatter(c, in, out, 100, COLL_INT64, COLL_SUM, COLL_ALGO_AUTO);
    th_good[rank][4] = 1;
    for (i = 0; i < 100; i++)
        th_good[rank][4] &= out[i] == (int64_t)p * (p + 1) / 2 * (int64_t)((size_t)rank * 100 + i);
    for (i = 0; i < 100; i++) in[i] = rank * 1000 + (int64_t)i;
    th_rc[rank][5] = coll_allgather(c, in, out, 100, COLL_INT64, COLL_ALGO_AUTO);
    th_good[rank][5] = 1;
    for (q = 0; q < p; q++)
        for (i = 0; i < 100; i++) th_good[rank][5] &= out[(size_t)q * 100 + i] == q * 1000 + (int64_t)i;
    for (i = 0; i < TH_N; i++) out[i] = rank == p - 1 ? 7 * (int64_t)i : -1;
    th_rc[rank][6] = coll_broadcast(c, out, TH_N, COLL_INT64, p - 1, COLL_ALGO_AUTO);
    th_good[rank][6] = 1;
    for (i = 0; i < TH_N; i++) th_good[rank][6] &= out[i] == 7 * (int64_t)i;
    th_rc[rank][7] = coll_barrier(c, COLL_ALGO_AUTO);
    th_good[rank][7] = 1;
    return 0;
}

static void t_threads(int p)
{
    int r, k;
    coll_threads_init(&th_world, p, 5000);
    for (r = 0; r < p; r++)
        for (k = 0; k < TH_CASES; k++) { th_rc[r][k] = 99; th_good[r][k] = 0; }
    coll_threads_run(&th_world, th_body, &p);
    coll_threads_destroy(&th_world);
    for (k = 0; k < TH_CASES; k++)
        for (r = 0; r < p; r++)
            COLL_CHECK_MSG(th_rc[r][k] == COLL_OK && th_good[r][k],
                           "threads, %d ranks, %s: rank %d %s", p, th_names[k], r,
                           th_rc[r][k] ? coll_result_str(th_rc[r][k]) : "wrong result");
}
#endif

/* ---------------------------------------------------------------------------- */

int main(void)
{
    static const coll_dtype dtypes[] = { COLL_INT8, COLL_UINT8, COLL_INT32, COLL_UINT32,
        COLL_INT64, COLL_UINT64, COLL_FLOAT16, COLL_BFLOAT16, COLL_FLOAT32, COLL_FLOAT64 };
    static const coll_algo reducing[] = { COLL_ALGO_RING, COLL_ALGO_TREE, COLL_ALGO_NAIVE,
        COLL_ALGO_RECURSIVE_DOUBLING, COLL_ALGO_RABENSEIFNER, COLL_ALGO_AUTO };
    static const coll_algo moving[] = { COLL_ALGO_AUTO, COLL_ALGO_RING, COLL_ALGO_BINOMIAL,
        COLL_ALGO_NAIVE, COLL_ALGO_LINEAR, COLL_ALGO_RECURSIVE_DOUBLING, COLL_ALGO_BRUCK,
        COLL_ALGO_PAIRWISE, COLL_ALGO_PIPELINED_CHAIN, COLL_ALGO_SCATTER_ALLGATHER };
    static const size_t ns[] = { 0, 1, 5, 67, 300 };
    size_t a, d, k, o;
    int p, root;

    /* 4 ranks, the machine this suite was made for: every dtype with sum,
       every op with int32/uint8/float32/float16, ragged counts, in and out
       of place, with scratch cut into 64-byte segments and with more. */
    for (a = 0; a < sizeof reducing / sizeof reducing[0]; a++)
        for (d = 0; d < sizeof dtypes / sizeof dtypes[0]; d++)
            for (k = 0; k < sizeof ns / sizeof ns[0]; k++)
                t_allreduce(reducing[a], 4, ns[k], dtypes[d], COLL_SUM, (int)(k & 1),
                            k & 2 ? 128 : sizeof scratch_mem[0].b);
    for (a = 0; a < 3; a++)
        for (o = COLL_PROD; o <= COLL_BXOR; o++) {
            t_allreduce(reducing[a], 4, 67, COLL_INT32, (coll_op)o, 0, 128);
            t_allreduce(reducing[a], 4, 23, COLL_UINT8, (coll_op)o, 1, 256);
            if (o < COLL_BAND) {
                t_allreduce(reducing[a], 4, 67, COLL_FLOAT32, (coll_op)o, 1, 128);
                t_allreduce(reducing[a], 4, 9, COLL_FLOAT16, (coll_op)o, 0, 1024);
            }
        }
    /* Other rank counts, including 1 and the non-powers of two. */
    for (p = 1; p <= P_MAX; p++)
        for (a = 0; a < sizeof reducing / sizeof reducing[0]; a++) {
            t_allreduce(reducing[a], p, 37, COLL_FLOAT64, COLL_SUM, 0, 128);
            t_allreduce(reducing[a], p, 300, COLL_INT64, COLL_MAX, 1, 1024);
            t_bitwise_identical(reducing[a], p);
        }
    for (p = 2; p <= P_MAX; p++)
        for (a = 0; a < 3; a++) t_traffic(reducing[a], p, 67);

    for (p = 1; p <= P_MAX; p++)
        for (root = 0; root < p; root++)
            for (a = 0; a < sizeof moving / sizeof moving[0]; a++) {
                t_reduce(moving[a], p, 45, COLL_FLOAT32, COLL_SUM, root);
                t_broadcast(moving[a], p, 61, root);
                t_gather_scatter(moving[a], p, 13, root);
            }
    for (p = 1; p <= P_MAX; p++)
        for (a = 0; a < sizeof moving / sizeof moving[0]; a++) {
            t_reduce_scatter(moving[a], p, 29, 0);
            t_reduce_scatter(moving[a], p, 29, 1);
            t_allgather(moving[a], p, 31, 0);
            t_allgather(moving[a], p, 31, 1);
            t_alltoall(moving[a], p, 11);
            t_alltoallv(moving[a], p, 11, 0);
            t_alltoallv(moving[a], p, 11, 1);
        }
    for (p = 2; p <= P_MAX; p++) t_barrier(COLL_ALGO_AUTO, p);

    t_half_bits();
    t_errors();
    t_unused_fields();
    t_blocking();
#ifdef PORTABLE_THREADS
    for (p = 1; p <= P_MAX; p++) t_threads(p);
#endif

#ifdef PORTABLE_STACK_USED
    /* Firmware builds: the deepest the stack went, port and harness included. */
    COLL_TEST_PRINTF("portable: stack high-water mark %lu bytes\n",
                     (unsigned long)PORTABLE_STACK_USED());
#endif
    return coll_test_summary("portable");
}
