/* bench_coll.h - coll's collectives as bench_common.h calls, and the loop
   over collectives x algorithms x sizes that every coll port shares.
   Include after coll.h and bench_common.h. */
#ifndef BENCH_COLL_H
#define BENCH_COLL_H

#ifndef BENCH_COLL_SCRATCH
/* Scratch per rank, as the README advises (64-256 KiB): segments of half of
   it, 128 KiB, which stay in cache between their arrival and their fold.
   Against 1 MiB (3 runs in turns, AUTO, 6 collectives, 256 KiB-64 MiB,
   2 and 4 ranks): threads 0.89x the time at 2 ranks (16 MiB all-reduce
   0.65x), shm 0.95-0.99x, tcp 0.85-0.86x. The MPI port, whose messages
   cost more each, keeps 1 MiB (bench_mpi.c: 1.03x slower with 256 KiB). */
#define BENCH_COLL_SCRATCH (256u << 10)
#endif

static const coll_kind bench_coll_kinds[BK_COUNT] = {
    COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER, COLL_BROADCAST,
    COLL_REDUCE, COLL_ALLTOALL
};

typedef struct bench_coll_cx {
    coll_comm *c;
    coll_algo algo;
    int ready;                   /* persistent: req is prepared for the call */
    int kind;                    /* that the timed calls make again: its kind, */
    const float *src;            /* buffers and count                          */
    float *dst;
    size_t count;
    coll_request req;
} bench_coll_cx;

/* Persistent calls (bench_coll -P 1): each cell's call is prepared once
   (coll_prepare) and every timed call is coll_restart + coll_waitall. */
static int bench_coll_persist;

/* Calls over windows (bench_coll -W 1, rows impl coll-<port>-win): each
   call is coll_window.h's, where the includer has it (the others never
   set it). */
#ifdef COLL_WINDOW_H
static int bench_coll_window;
#else
enum { bench_coll_window = 0 };
#endif

/* Group size for the hierarchical algorithm: two groups when p allows. */
static inline int bench_coll_group(int p)
{
    return (p >= 4 && p % 2 == 0) ? p / 2 : 0;
}

static inline void bench_coll_args(coll_args *a, int kind, coll_algo algo, const float *src,
                            float *dst, size_t count, int p)
{
    if (!src && !dst) {
        /* Describing only: coll_describe touches no buffer, but checks that
           src and dst do not overlap, so give it two far-apart addresses
           that are never dereferenced. */
        src = (const float *)(uintptr_t)((uintptr_t)1 << 20);
        dst = (float *)(uintptr_t)((uintptr_t)1 << (sizeof(void *) * 8 - 2));
    }
    memset(a, 0, sizeof *a);
    a->kind = bench_coll_kinds[kind];
    a->algo = algo;
    a->src = kind == BK_BROADCAST ? dst : src;
    a->dst = dst;
    a->count = count;
    a->dtype = COLL_FLOAT32;
    a->op = COLL_SUM;
    a->root = BENCH_ROOT;
    a->group = algo == COLL_ALGO_HIERARCHICAL ? bench_coll_group(p) : 0;
}

static inline int bench_coll_call(void *cx, int kind, const float *src, float *dst, size_t count)
{
    bench_coll_cx *b = (bench_coll_cx *)cx;
    coll_comm *c = b->c;
    if (bench_coll_persist) {    /* planned once per cell, not in the timed loop */
        int rc;
        if (!b->ready || kind != b->kind || src != b->src || dst != b->dst || count != b->count) {
            coll_args a;
            bench_coll_args(&a, kind, b->algo, src, dst, count, c->nranks);
            if ((rc = coll_prepare(&b->req, c, &a)) != COLL_OK) return rc;
            b->kind = kind; b->src = src; b->dst = dst; b->count = count;
            b->ready = 1;
        }
        rc = coll_restart(&b->req);
        return rc == COLL_OK ? coll_waitall(&b->req, 1) : rc;
    }
#ifdef COLL_WINDOW_H
    if (bench_coll_window) {
        switch (kind) {
        case BK_ALLREDUCE:      return coll_window_allreduce(c, src, dst, count, COLL_FLOAT32, COLL_SUM, COLL_WINDOW_AUTO);
        case BK_REDUCE_SCATTER: return coll_window_reduce_scatter(c, src, dst, count, COLL_FLOAT32, COLL_SUM);
        case BK_ALLGATHER:      return coll_window_allgather(c, src, dst, count, COLL_FLOAT32);
        case BK_BROADCAST:      return coll_window_broadcast(c, dst, count, COLL_FLOAT32, BENCH_ROOT);
        case BK_REDUCE:         return coll_window_reduce(c, src, dst, count, COLL_FLOAT32, COLL_SUM, BENCH_ROOT);
        case BK_ALLTOALL:       return coll_window_alltoall(c, src, dst, count, COLL_FLOAT32);
        }
        return COLL_ERR_INVAL;
    }
#endif
    if (b->algo == COLL_ALGO_HIERARCHICAL) {    /* needs a group: the general form */
        coll_args a;
        bench_coll_args(&a, kind, b->algo, src, dst, count, c->nranks);
        return coll_run(c, &a);
    }
    switch (kind) {
    case BK_ALLREDUCE:
        return coll_allreduce(c, src, dst, count, COLL_FLOAT32, COLL_SUM, b->algo);
    case BK_REDUCE_SCATTER:
        return coll_reduce_scatter(c, src, dst, count, COLL_FLOAT32, COLL_SUM, b->algo);
    case BK_ALLGATHER:
        return coll_allgather(c, src, dst, count, COLL_FLOAT32, b->algo);
    case BK_BROADCAST:
        return coll_broadcast(c, dst, count, COLL_FLOAT32, BENCH_ROOT, b->algo);
    case BK_REDUCE:
        return coll_reduce(c, src, dst, count, COLL_FLOAT32, COLL_SUM, BENCH_ROOT, b->algo);
    case BK_ALLTOALL:
        return coll_alltoall(c, src, dst, count, COLL_FLOAT32, b->algo);
    }
    return COLL_ERR_INVAL;
}

/* Whether `algo` runs `kind` at this size on this communicator (the
   schedule's first step can be described), without moving a byte. */
static inline int bench_coll_available(const coll_comm *c, int kind, coll_algo algo, size_t count)
{
    coll_args a;
    coll_xfer x;
    bench_coll_args(&a, kind, algo, NULL, NULL, count, c->nranks);
    return coll_describe(c, &a, 0, &x) >= 0 && coll_scratch_bytes(c, &a) <= BENCH_COLL_SCRATCH;
}

static inline coll_algo bench_coll_algo_by_name(const char *s)
{
    int a;
    for (a = 0; a < COLL_ALGO_COUNT; a++) {
        const char *n = coll_algo_name((coll_algo)a);
        if (n && strcmp(n, s) == 0) return (coll_algo)a;
    }
    return strcmp(s, "auto") == 0 ? COLL_ALGO_AUTO : COLL_ALGO_COUNT;
}

/* The algorithms to measure for `kind`: "auto", "all" (AUTO and every
   algorithm the library runs for this collective at this p), or a list of
   names. Returns how many. */
static inline int bench_coll_algos(const coll_comm *c, int kind, const char *spec, coll_algo *out)
{
    int n = 0, a;
    if (strcmp(spec, "all") == 0) {
        out[n++] = COLL_ALGO_AUTO;
        for (a = 1; a < COLL_ALGO_COUNT; a++)
            if (bench_coll_available(c, kind, (coll_algo)a, 1024)) out[n++] = (coll_algo)a;
        return n;
    }
    {
        char buf[512], *tok, *save;
        snprintf(buf, sizeof buf, "%s", spec);
        for (tok = strtok_r(buf, ",", &save); tok && n < COLL_ALGO_COUNT; tok = strtok_r(NULL, ",", &save)) {
            coll_algo x = bench_coll_algo_by_name(tok);
            if (x == COLL_ALGO_COUNT) {
                if (c->rank == 0) fprintf(stderr, "bench: unknown algorithm %s\n", tok);
                continue;
            }
            out[n++] = x;
        }
    }
    return n;
}

static inline const char *bench_coll_algo_label(coll_algo a)
{
    const char *n = a == COLL_ALGO_AUTO ? "auto" : coll_algo_name(a);
    return n ? n : "?";
}

/* Every (collective, algorithm, size) on one communicator. Sizes above
   algo_max are measured for AUTO only. Adds the cells that passed and
   failed to *passed / *failed; returns -1 when a call failed (the
   communicator is then broken and the remaining cells are not run). */
static inline int bench_coll_rows(const bench_ctl *ctl, coll_comm *c, const char *impl,
                           const int *kinds, int nk, const char *algos,
                           const size_t *sizes, int nsizes, size_t algo_max,
                           float *src, float *dst, const bench_opts *o,
                           int *passed, int *failed)
{
    int k, j, i, na, p = c->nranks, told;
    coll_algo list[COLL_ALGO_COUNT];
    for (k = 0; k < nk; k++) {
        int kind = kinds[k];
        na = bench_coll_algos(c, kind, algos, list);
        for (j = 0; j < na; j++) {
            bench_coll_cx cx;
            cx.c = c;
            cx.algo = list[j];
            cx.ready = 0;
            told = 0;
            for (i = 0; i < nsizes; i++) {
                size_t count = bench_count(kind, p, sizes[i]);
                bench_outcome r;
                if (list[j] != COLL_ALGO_AUTO && sizes[i] > algo_max) continue;
                if (kind != BK_ALLREDUCE && sizes[i] > BENCH_OTHER_MAX) continue;
                if (!bench_coll_available(c, kind, list[j], count)) {
                    if (c->rank == 0 && !told++)
                        fprintf(stderr, "bench: %s %s %s p=%d from %zu B: coll.h does not run "
                                "it (coll_describe refuses); rows skipped\n",
                                impl, bench_kind_names[kind], bench_coll_algo_label(list[j]),
                                p, sizes[i]);
                    continue;
                }
                r = bench_cell(ctl, c->rank, p, impl, bench_coll_algo_label(list[j]), kind,
                               sizes[i], bench_coll_call, &cx, src, dst, o);
                if (r.ok) ++*passed;
                else ++*failed;
                if ((!r.ok || r.error) && c->rank == 0 && o->check_only)
                    fprintf(stderr, "bench: FAIL %s %s %s p=%d %zu B%s\n", impl,
                            bench_kind_names[kind], bench_coll_algo_label(list[j]), p,
                            r.bytes, r.error ? " (error returned)" : "");
                if (r.error) {
                    if (c->rank == 0)
                        fprintf(stderr, "bench: %s p=%d: a call failed; the remaining cells of "
                                "this run are skipped\n", impl, p);
                    return -1;
                }
            }
        }
    }
    return 0;
}

#endif /* BENCH_COLL_H */
