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

#include "bench_calls.h"

#define MAXROUNDS 101

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
