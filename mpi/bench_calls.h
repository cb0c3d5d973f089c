/* bench_calls.h - the MPI calls mpi/bench_drop_in.c and mpi/coll_mpi_tune.c
   time: each routed collective by number (kinds[]), float32 MPI_SUM on n
   floats per block, through MPI_ (the drop-in when preloaded) or PMPI_
   (the MPI library alone), the inputs that make its first result known,
   and the slowest rank's mean time; and the steps both programs take
   around them (the kind list, the buffers, the first calls' check, how
   many calls fill a time). For those two programs only: the state is
   the including file's (p, rank, the buffers). */
#ifndef COLL_MPI_BENCH_CALLS_H
#define COLL_MPI_BENCH_CALLS_H
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kinds[] = {
    "allreduce", "bcast", "reduce", "allgather", "allgatherv", "gather", "gatherv", "scatter",
    "scatterv", "alltoall", "alltoallv", "reduce_scatter", "reduce_scatter_block", "scan", "exscan",
    "barrier"
};
#define NKINDS ((int)(sizeof kinds / sizeof kinds[0]))

static int p, rank;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static float *src, *dst;
static int *cnt, *dsp;

/* one call of kind k on n floats per block; plain: PMPI, else MPI */
static void call(int k, int n, int plain)
{
    int i, total = n * p;
    for (i = 0; i < p; i++) { cnt[i] = n; dsp[i] = i * n; }
#define C(f, ...) (plain ? P##f(__VA_ARGS__) : f(__VA_ARGS__))
    switch (k) {
    case 0: C(MPI_Allreduce, src, dst, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case 1: C(MPI_Bcast, dst, n, MPI_FLOAT, 0, MPI_COMM_WORLD); break;
    case 2: C(MPI_Reduce, src, dst, n, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD); break;
    case 3: C(MPI_Allgather, src, n, MPI_FLOAT, dst, n, MPI_FLOAT, MPI_COMM_WORLD); break;
    case 4: C(MPI_Allgatherv, src, n, MPI_FLOAT, dst, cnt, dsp, MPI_FLOAT, MPI_COMM_WORLD); break;
    case 5: C(MPI_Gather, src, n, MPI_FLOAT, dst, n, MPI_FLOAT, 0, MPI_COMM_WORLD); break;
    case 6: C(MPI_Gatherv, src, n, MPI_FLOAT, dst, cnt, dsp, MPI_FLOAT, 0, MPI_COMM_WORLD); break;
    case 7: C(MPI_Scatter, src, n, MPI_FLOAT, dst, n, MPI_FLOAT, 0, MPI_COMM_WORLD); break;
    case 8: C(MPI_Scatterv, src, cnt, dsp, MPI_FLOAT, dst, n, MPI_FLOAT, 0, MPI_COMM_WORLD); break;
    case 9: C(MPI_Alltoall, src, n, MPI_FLOAT, dst, n, MPI_FLOAT, MPI_COMM_WORLD); break;
    case 10: C(MPI_Alltoallv, src, cnt, dsp, MPI_FLOAT, dst, cnt, dsp, MPI_FLOAT, MPI_COMM_WORLD); break;
    case 11: C(MPI_Reduce_scatter, src, dst, cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case 12: C(MPI_Reduce_scatter_block, src, dst, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case 13: C(MPI_Scan, src, dst, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case 14: C(MPI_Exscan, src, dst, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    default: C(MPI_Barrier, MPI_COMM_WORLD); break;
    }
#undef C
    (void)total;
}

/* the first element a call leaves in dst, on this rank (-1: not checked) */
static double expect0(int k)
{
    double s = p * (p + 1) / 2.0;
    switch (k) {
    case 0: case 12: case 11: return s;
    case 1: return 7;
    case 2: return rank == 0 ? s : -1;
    case 3: case 4: case 9: case 10: return 1;        /* rank 0's first value */
    case 5: case 6: return rank == 0 ? 1 : -1;
    case 7: case 8: return 1 + rank;                   /* the root's block r */
    case 13: return (rank + 1) * (rank + 2) / 2.0;
    case 14: return rank ? rank * (rank + 1) / 2.0 : -1;
    default: return -1;
    }
}

static void fill(int k, size_t nf)
{
    size_t i;
    for (i = 0; i < nf; i++) { src[i] = (float)(1 + rank); dst[i] = k == 1 && rank == 0 ? 7.0f : -3.0f; }
    if (rank == 0 && (k == 7 || k == 8))                /* scatter: block r holds r + 1 */
        for (i = 0; i < nf; i++) src[i] = (float)(1 + i / (nf / (size_t)p));
}

/* the mean seconds per call of `iters` calls, slowest rank */
static double timed(int k, int n, int plain, int iters)
{
    double t0, t, tmax;
    int i;
    PMPI_Barrier(MPI_COMM_WORLD);
    t0 = PMPI_Wtime();
    for (i = 0; i < iters; i++) call(k, n, plain);
    t = (PMPI_Wtime() - t0) / iters;
    PMPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return tmax;
}

/* the median of v[0..n) (sorts v) */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* want[k]: kind k is a whole word of the comma-separated list, or the list is "all" */
static void pick_kinds(const char *klist, int want[NKINDS])
{
    int k;
    for (k = 0; k < NKINDS; k++) {
        const char *at = strstr(klist, kinds[k]);
        size_t l = strlen(kinds[k]);
        want[k] = !strcmp(klist, "all");
        while (at && !want[k]) {
            if ((at == klist || at[-1] == ',') && (at[l] == 0 || at[l] == ',')) want[k] = 1;
            at = strstr(at + 1, kinds[k]);
        }
    }
}

/* the buffers for calls of up to hi bytes (a block of 1 at tiny sizes)
   and the v-forms' counts; the job aborts without them */
static void alloc_buffers(size_t hi)
{
    src = (float *)malloc(hi + 64 + (size_t)p * 4);
    dst = (float *)malloc(hi + 64 + (size_t)p * 4);
    cnt = (int *)malloc((size_t)p * sizeof(int));
    dsp = (int *)malloc((size_t)p * sizeof(int));
    if (!src || !dst || !cnt || !dsp) MPI_Abort(MPI_COMM_WORLD, 2);
}

/* Each road's first call of kind k at this size checked, plain first
   (nf floats filled); a wrong first element said on stderr, the line
   starting with who and naming the road road[plain]. Returns how many
   were wrong. */
static int first_calls_wrong(int k, int n, size_t nf, size_t bytes, const char *who, const char *const road[2])
{
    int plain, bad = 0;
    double e;
    for (plain = 1; plain >= 0; plain--) {
        fill(k, nf);
        call(k, n, plain);
        e = expect0(k);
        if (e >= 0 && dst[0] != (float)e) {
            fprintf(stderr, "%srank %d: %s %zu B %s: first element %g, want %g\n", who, rank, kinds[k],
                    bytes, road[plain], dst[0], e);
            bad++;
        }
    }
    return bad;
}

/* how many calls of kind k fill budget seconds, from one timed plain call,
   held to [least, most]; rank 0's figure, on every rank */
static int calls_for(int k, int n, double budget, int least, int most)
{
    double t1 = timed(k, n, 1, 1);
    int iters = t1 > 0 ? (int)(budget / t1) : 1000;
    if (iters < least) iters = least;
    if (iters > most) iters = most;
    PMPI_Bcast(&iters, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return iters;
}

#endif
