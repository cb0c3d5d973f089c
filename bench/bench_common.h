/* bench_common.h - what every benchmark program in bench/ shares

   The conventions are those of nccl-tests, so figures compare with theirs:

     bytes    the "size" of the call: the whole vector for allreduce,
              broadcast and reduce; the whole input of reduce_scatter (p
              blocks); the whole output of allgather (p blocks); the whole
              send buffer of alltoall (p blocks). Block-wise collectives round
              the block down to whole float32 elements (at least one), and the
              row reports the bytes actually moved.
     time     per-call time of back-to-back calls on one rank, averaged over
              the ranks; the calls are made in 3 runs and the median run
              is reported (see bench_cell).
     algbw    bytes / time.
     busbw    algbw x a factor that makes the figure comparable with the
              link's bandwidth whatever the collective and p:
              allreduce 2(p-1)/p; reduce_scatter, allgather, alltoall (p-1)/p;
              broadcast, reduce 1.

   The data is float32 holding small integers, so every sum is exact in any
   order of association and the result must equal the plain-loop reference
   bit for bit.

   Plain C99 + POSIX; also compiles as C++ (bench_gloo.cc includes it). */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    BK_ALLREDUCE, BK_REDUCE_SCATTER, BK_ALLGATHER, BK_BROADCAST, BK_REDUCE,
    BK_ALLTOALL, BK_COUNT
};
static const char *const bench_kind_names[BK_COUNT] = {
    "allreduce", "reduce_scatter", "allgather", "broadcast", "reduce", "alltoall"
};

#define BENCH_MAX_SIZES 64
/* Sizes above this are measured for all-reduce only (the full run's
   256 MiB): the other collectives' curves are flat well before it. */
#define BENCH_OTHER_MAX ((size_t)64 << 20)
#define BENCH_ROOT 0                /* root of broadcast and reduce */
#define BENCH_HEADER "impl\tcollective\talgo\tranks\tbytes\ttime_us\talgbw_GBps\tbusbw_GBps\tcheck\n"

static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int bench_kind_by_name(const char *s)
{
    int k;
    for (k = 0; k < BK_COUNT; k++)
        if (strcmp(s, bench_kind_names[k]) == 0) return k;
    return -1;
}

/* nccl-tests' bus bandwidth factor (see the top of this file). */
static inline double bench_busbw_factor(int kind, int p)
{
    switch (kind) {
    case BK_ALLREDUCE: return 2.0 * (p - 1) / p;
    case BK_REDUCE_SCATTER: case BK_ALLGATHER: case BK_ALLTOALL:
        return (double)(p - 1) / p;
    default: return 1.0;
    }
}

static inline int bench_blockwise(int kind)
{
    return kind == BK_REDUCE_SCATTER || kind == BK_ALLGATHER || kind == BK_ALLTOALL;
}

/* Elements per call argument ("count" as the collective takes it): the
   vector for allreduce/broadcast/reduce, one block for the others. */
static inline size_t bench_count(int kind, int p, size_t bytes)
{
    size_t n = bytes / sizeof(float);
    if (bench_blockwise(kind)) n /= (size_t)p;
    return n ? n : 1;
}

/* The size the row reports for a call with that count. */
static inline size_t bench_bytes(int kind, int p, size_t count)
{
    return count * sizeof(float) * (bench_blockwise(kind) ? (size_t)p : 1);
}

/* Elements in the send and receive buffers of one rank. */
static inline size_t bench_src_elems(int kind, int p, size_t count)
{
    return (kind == BK_REDUCE_SCATTER || kind == BK_ALLTOALL) ? count * (size_t)p : count;
}
static inline size_t bench_dst_elems(int kind, int p, size_t count)
{
    return (kind == BK_ALLGATHER || kind == BK_ALLTOALL) ? count * (size_t)p : count;
}

/* Input element i of rank r: a small signed integer that depends on both,
   so a block sent to the wrong place or reduced twice shows. */
static inline float bench_value(int r, size_t i)
{
    return (float)((int)(((size_t)r * 7u + i * 3u) % 31u) - 15);
}

static inline void bench_fill(float *src, size_t n, int rank)
{
    size_t i;
    for (i = 0; i < n; i++) src[i] = bench_value(rank, i);
}

/* A value no correct result holds (results are integers). */
static inline void bench_poison(float *dst, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) dst[i] = 0.5f;
}

/* Checks rank `rank`'s output of one call against a plain loop over the
   ranks' inputs; returns the number of wrong elements. For broadcast the
   buffer is `dst` (the root's input was bench_fill'ed into it). Ranks other
   than the root of reduce have no defined output and pass. */
static inline size_t bench_check(int kind, int p, int rank, size_t count, const float *dst)
{
    size_t i, bad = 0;
    int r;
    switch (kind) {
    case BK_ALLREDUCE: case BK_REDUCE:
        if (kind == BK_REDUCE && rank != BENCH_ROOT) return 0;
        for (i = 0; i < count; i++) {
            float ref = 0;
            for (r = 0; r < p; r++) ref += bench_value(r, i);
            bad += dst[i] != ref;
        }
        break;
    case BK_REDUCE_SCATTER:
        for (i = 0; i < count; i++) {
            float ref = 0;
            for (r = 0; r < p; r++) ref += bench_value(r, (size_t)rank * count + i);
            bad += dst[i] != ref;
        }
        break;
    case BK_ALLGATHER:
        for (r = 0; r < p; r++)
            for (i = 0; i < count; i++)
                bad += dst[(size_t)r * count + i] != bench_value(r, i);
        break;
    case BK_BROADCAST:
        for (i = 0; i < count; i++) bad += dst[i] != bench_value(BENCH_ROOT, i);
        break;
    case BK_ALLTOALL:
        for (r = 0; r < p; r++)
            for (i = 0; i < count; i++)
                bad += dst[(size_t)r * count + i] != bench_value(r, (size_t)rank * count + i);
        break;
    }
    return bad;
}

/* How many timed calls: enough to fill `target` seconds given the cost of
   one call measured in the warm-up, within [lo, hi]. */
static inline int bench_iters(double t_call, double target, int lo, int hi)
{
    double n = t_call > 0 ? target / t_call : hi;
    if (n < lo) n = lo;
    if (n > hi) n = hi;
    return (int)n;
}

#define BENCH_REPS 3

/* Median of n values (n small; sorts in place). */
static inline double bench_median(double *v, int n)
{
    int i, j;
    for (i = 1; i < n; i++) {
        double t = v[i];
        for (j = i - 1; j >= 0 && v[j] > t; j--) v[j + 1] = v[j];
        v[j + 1] = t;
    }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* "8", "64K", "8M", "1G" -> bytes; 0 on a malformed number. */
static inline size_t bench_parse_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s) return 0;
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    }
    return *end ? 0 : (size_t)v;
}

/* Comma-separated sizes, or "quick" (8 B, 64 KiB, 8 MiB), "std" (8 B to
   64 MiB by x4, with 64 KiB and 64 MiB themselves) or "full" (std, then
   256 MiB; for all-reduce only, see BENCH_OTHER_MAX). */
static inline int bench_parse_sizes(const char *s, size_t *out, int max)
{
    int n = 0;
    if (strcmp(s, "quick") == 0) {
        out[0] = 8; out[1] = 64 << 10; out[2] = 8 << 20;
        return 3;
    }
    if (strcmp(s, "full") == 0 || strcmp(s, "std") == 0) {
        size_t b;
        for (b = 8; b <= ((size_t)64 << 20) && n < max - 3; b *= 4) {
            if (b > (64 << 10) && out[n - 1] < (64 << 10)) out[n++] = 64 << 10;
            out[n++] = b;
        }
        if (out[n - 1] != ((size_t)64 << 20)) out[n++] = (size_t)64 << 20;
        if (s[0] == 'f') out[n++] = (size_t)256 << 20;
        return n;
    }
    while (*s && n < max) {
        char tok[32];
        size_t len = strcspn(s, ",");
        if (len == 0 || len >= sizeof tok) return -1;
        memcpy(tok, s, len); tok[len] = 0;
        if ((out[n++] = bench_parse_size(tok)) == 0) return -1;
        s += len + (s[len] == ',');
    }
    return n;
}

/* Comma-separated small integers (rank counts). */
static inline int bench_parse_ints(const char *s, int *out, int max)
{
    int n = 0;
    while (*s && n < max) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || (*end && *end != ',')) return -1;
        out[n++] = (int)v;
        s = end + (*end == ',');
    }
    return n;
}

/* One row of the table. A failed check still reports its time, so a fast
   wrong answer is visible as such. */
static inline void bench_row(const char *impl, const char *coll, const char *algo, int ranks,
                      size_t bytes, double t_call, double busbw_factor, int ok)
{
    double algbw = t_call > 0 ? (double)bytes / t_call / 1e9 : 0;
    printf("%s\t%s\t%s\t%d\t%zu\t%.3f\t%.3f\t%.3f\t%s\n", impl, coll, algo, ranks,
           bytes, t_call * 1e6, algbw, algbw * busbw_factor, ok ? "ok" : "FAIL");
    fflush(stdout);
}


/* ---- one measurement, whatever the implementation ----------------------

   The ranks agree through a control plane that is not the thing measured
   (a process-shared barrier, or MPI itself for the MPI programs). */
typedef struct bench_ctl {
    void *ctx;
    void (*barrier)(void *ctx);
    double (*sum)(void *ctx, double x);      /* every rank gets the sum */
    double (*max)(void *ctx, double x);      /* every rank gets the max */
} bench_ctl;

/* The call under test: 0 or an error code. */
typedef int (*bench_call_fn)(void *cx, int kind, const float *src, float *dst, size_t count);

typedef struct bench_opts {
    double target;          /* seconds of timed calls per row               */
    int lo, hi;             /* bounds on the number of timed calls          */
    int check_only;         /* one call and its check, no timing            */
    int quiet;              /* no rows (rank 0 still gets the outcome)      */
} bench_opts;

/* Result of one cell on every rank. */
typedef struct bench_outcome {
    double t_call;          /* mean over ranks of the per-call time          */
    size_t bytes;
    int ok;                 /* every rank's result matched, both times       */
    int error;              /* a call returned an error: the world is broken */
} bench_outcome;

/* Measures one (collective, size) on this rank; every rank calls it with
   the same arguments. Sequence: a call on a poisoned output, checked on
   every rank (the warm-up, and a first estimate of the cost); for calls
   under 1 ms two more to estimate better; the timed back-to-back runs; the
   output checked again. Rank 0 prints the row.
   src and dst must hold bench_src_elems/bench_dst_elems elements. */
static inline bench_outcome bench_cell(const bench_ctl *ctl, int rank, int p, const char *impl,
                                const char *algo, int kind, size_t bytes,
                                bench_call_fn call, void *cx, float *src, float *dst,
                                const bench_opts *o)
{
    bench_outcome out;
    size_t count = bench_count(kind, p, bytes);
    size_t ns = bench_src_elems(kind, p, count), nd = bench_dst_elems(kind, p, count);
    double t0, est, bad, err;
    int i, iters, rc = 0;

    memset(&out, 0, sizeof out);
    out.bytes = bench_bytes(kind, p, count);
    bench_fill(src, ns, rank);
    bench_poison(dst, nd);
    if (kind == BK_BROADCAST && rank == BENCH_ROOT) bench_fill(dst, nd, rank);

    ctl->barrier(ctl->ctx);
    t0 = bench_now();
    rc = call(cx, kind, src, dst, count);
    est = bench_now() - t0;
    bad = (double)(rc ? 1 : bench_check(kind, p, rank, count, dst));
    err = ctl->max(ctl->ctx, rc ? 1.0 : 0.0);
    if (err > 0) {
        out.error = 1;
        if (rank == 0 && !o->quiet)
            bench_row(impl, bench_kind_names[kind], algo, p, out.bytes, 0, 0, 0);
        return out;
    }
    if (o->check_only) {
        out.ok = ctl->sum(ctl->ctx, bad) == 0;
        return out;
    }

    /* The first call's time (page faults and all) is estimate enough for
       a long call; a short one is timed again over two more. */
    if (ctl->max(ctl->ctx, est) < 1e-3) {
        ctl->barrier(ctl->ctx);
        t0 = bench_now();
        for (i = 0; i < 2 && !rc; i++) rc = call(cx, kind, src, dst, count);
        est = (bench_now() - t0) / 2;
    }
    est = ctl->max(ctl->ctx, est);
    iters = bench_iters(est, o->target, o->lo, o->hi);

    /* The timed calls in BENCH_REPS back-to-back runs, each starting at a
       barrier; the row gets the median run. On a shared machine one run
       may lose the core for a scheduler tick or several; the median keeps
       that out of the figure, the mean within a run keeps nccl-tests'
       meaning. */
    {
        double rep[BENCH_REPS];
        int j, per = iters / BENCH_REPS > 0 ? iters / BENCH_REPS : 1;
        for (j = 0; j < BENCH_REPS; j++) {
            ctl->barrier(ctl->ctx);
            t0 = bench_now();
            for (i = 0; i < per && !rc; i++) rc = call(cx, kind, src, dst, count);
            rep[j] = ctl->sum(ctl->ctx, (bench_now() - t0) / per) / p;
        }
        out.t_call = bench_median(rep, BENCH_REPS);
    }

    if (!rc) bad += (double)bench_check(kind, p, rank, count, dst);
    err = ctl->max(ctl->ctx, rc ? 1.0 : 0.0);
    bad = ctl->sum(ctl->ctx, bad);
    out.error = err > 0;
    out.ok = !out.error && bad == 0;
    if (rank == 0 && !o->quiet)
        bench_row(impl, bench_kind_names[kind], algo, p, out.bytes, out.t_call,
                  bench_busbw_factor(kind, p), out.ok);
    return out;
}

#endif /* BENCH_COMMON_H */
