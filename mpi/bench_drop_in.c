/* bench_drop_in.c - one MPI program timing each collective plain and
   through the drop-in, side by side in one run

       mpirun -np 4 -x LD_PRELOAD=build/lib/libcoll_mpi_openmpi.so \
              build/mpi/bench_drop_in.ompi [-k allreduce,bcast,allgather] [-s 8:67108864]
                                           [-t ms] [-r rounds] [-m]

   "plain" calls PMPI_Allreduce & co. (the profiling interface, which the
   drop-in does not intercept: the MPI library alone); "drop-in" calls
   MPI_Allreduce & co., which the preloaded library routes where its
   thresholds say (COLL_MPI_MIN=0: always, as the tuning run does). Both
   take the same buffers, in alternating rounds; each row gives the best
   round's mean time per call, the slowest rank's (-m: the median round's;
   the rounds then alternate which road goes first). Without the library
   preloaded both columns are the MPI library.

   Sizes go up by 8x to 256 KiB, then by 4x. They are the call's largest buffer (what the thresholds compare):
   allreduce, bcast, reduce, scan, exscan: the vector; allgather(v), gather(v),
   scatter(v), alltoall(v), reduce_scatter(_block): all ranks' blocks. float32
   with MPI_SUM. Each size's first call of each kind is checked. Rows:
       kind ranks bytes plain_us dropin_us
   The control plane (barriers, the times' maximum) is PMPI. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kinds[] = {
    "allreduce", "bcast", "reduce", "allgather", "allgatherv", "gather", "gatherv", "scatter",
    "scatterv", "alltoall", "alltoallv", "reduce_scatter", "reduce_scatter_block", "scan", "exscan",
    "barrier"
};
#define NKINDS ((int)(sizeof kinds / sizeof kinds[0]))

#define MAXROUNDS 101
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

int main(int argc, char **argv)
{
    int i, k, want[NKINDS], rounds = 3, bad = 0, med = 0;
    double budget = 0.03;
    size_t lo = 8, hi = (size_t)64 << 20, bytes;
    const char *klist = "allreduce,bcast,allgather";
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (i = 1; i < argc; i += 2) {
        if (!strcmp(argv[i], "-m")) { med = 1; i--; continue; }
        if (i + 1 >= argc) break;
        if (!strcmp(argv[i], "-k")) klist = argv[i + 1];
        else if (!strcmp(argv[i], "-s")) sscanf(argv[i + 1], "%zu:%zu", &lo, &hi);
        else if (!strcmp(argv[i], "-t")) budget = atof(argv[i + 1]) / 1000.0;
        else if (!strcmp(argv[i], "-r")) rounds = atoi(argv[i + 1]);
    }
    for (k = 0; k < NKINDS; k++) {
        const char *at = strstr(klist, kinds[k]);
        size_t l = strlen(kinds[k]);
        want[k] = !strcmp(klist, "all");
        while (at && !want[k]) {    /* a whole word of the list */
            if ((at == klist || at[-1] == ',') && (at[l] == 0 || at[l] == ',')) want[k] = 1;
            at = strstr(at + 1, kinds[k]);
        }
    }
    src = (float *)malloc(hi + 64 + (size_t)p * 4);   /* a block of 1 at tiny sizes */
    dst = (float *)malloc(hi + 64 + (size_t)p * 4);
    cnt = (int *)malloc((size_t)p * sizeof(int));
    dsp = (int *)malloc((size_t)p * sizeof(int));
    if (!src || !dst || !cnt || !dsp) MPI_Abort(MPI_COMM_WORLD, 2);
    if (rounds < 1) rounds = 1;
    if (rounds > MAXROUNDS) rounds = MAXROUNDS;
    if (rank == 0) printf("# kind ranks bytes plain_us dropin_us\n");
    for (k = 0; k < NKINDS; k++) {
        if (!want[k]) continue;
        for (bytes = lo; bytes <= hi; bytes *= bytes < ((size_t)256 << 10) ? 8 : 4) {
            int block = k == 0 || k == 1 || k == 2 || k == 13 || k == 14 || k == 15;
            int n = block ? (int)(bytes / 4) : (int)(bytes / 4 / (size_t)p), iters, r, plain;
            double best[2] = { 1e30, 1e30 }, all[2][MAXROUNDS], e, t1;
            size_t nf = block ? (size_t)n : (size_t)n * (size_t)p;   /* floats in the buffers */
            if (n < 1) n = 1, nf = block ? 1 : (size_t)p;
            for (plain = 1; plain >= 0; plain--) {      /* each road's first call checked */
                fill(k, nf);
                call(k, n, plain);
                e = expect0(k);
                if (e >= 0 && dst[0] != (float)e) {
                    fprintf(stderr, "rank %d: %s %zu B %s: first element %g, want %g\n", rank, kinds[k],
                            bytes, plain ? "plain" : "drop-in", dst[0], e);
                    bad++;
                }
            }
            t1 = timed(k, n, 1, 1);             /* how many calls fill the budget */
            iters = t1 > 0 ? (int)(budget / t1) : 1000;
            if (iters < 2) iters = 2;
            if (iters > 2000) iters = 2000;
            PMPI_Bcast(&iters, 1, MPI_INT, 0, MPI_COMM_WORLD);
            for (r = 0; r < rounds; r++)
                for (i = 0; i < 2; i++) {
                    double t;
                    plain = med && r % 2 ? i : !i;      /* -m: drop-in first in odd rounds */
                    t = timed(k, n, plain, iters);
                    all[!plain][r] = t;
                    if (t < best[!plain]) best[!plain] = t;
                }
            if (med)
                for (i = 0; i < 2; i++) {
                    qsort(all[i], (size_t)rounds, sizeof(double), cmp_double);
                    best[i] = rounds % 2 ? all[i][rounds / 2] : (all[i][rounds / 2 - 1] + all[i][rounds / 2]) / 2;
                }
            if (rank == 0) {
                printf("%s %d %zu %.2f %.2f\n", kinds[k], p, block ? (size_t)n * 4 : (size_t)n * 4 * (size_t)p,
                       best[0] * 1e6, best[1] * 1e6);
                fflush(stdout);
            }
            if (k == 15) break;         /* barrier: one size */
        }
    }
    free(src); free(dst); free(cnt); free(dsp);
    MPI_Finalize();
    return bad != 0;
}
