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

typedef struct {
    int rounds, med;                /* -r rounds; -m: the median round, not the best */
    double budget;                  /* -t: seconds of calls a road's round takes     */
    size_t lo, hi;                  /* -s lo:hi bytes                                */
    const char *klist;              /* -k kinds                                      */
} options;

/* the options over their defaults; rounds held to 1..MAXROUNDS */
static void parse(int argc, char **argv, options *o)
{
    int i;
    for (i = 1; i < argc; i += 2) {
        if (!strcmp(argv[i], "-m")) { o->med = 1; i--; continue; }
        if (i + 1 >= argc) break;
        if (!strcmp(argv[i], "-k")) o->klist = argv[i + 1];
        else if (!strcmp(argv[i], "-s")) sscanf(argv[i + 1], "%zu:%zu", &o->lo, &o->hi);
        else if (!strcmp(argv[i], "-t")) o->budget = atof(argv[i + 1]) / 1000.0;
        else if (!strcmp(argv[i], "-r")) o->rounds = atoi(argv[i + 1]);
    }
    if (o->rounds < 1) o->rounds = 1;
    if (o->rounds > MAXROUNDS) o->rounds = MAXROUNDS;
}

/* One size of kind k: each road's first call checked, then rounds of
   timed calls on both roads, each road's best round (-m: the median
   round; the rounds then alternate which road goes first); rank 0 prints
   the row. Returns how many first results were wrong. */
static int bench_size(int k, size_t bytes, const options *o)
{
    static const char *const road[2] = { "drop-in", "plain" };
    int block = k == 0 || k == 1 || k == 2 || k == 13 || k == 14 || k == 15;
    int n = block ? (int)(bytes / 4) : (int)(bytes / 4 / (size_t)p), iters, r, i, plain, bad;
    double best[2] = { 1e30, 1e30 }, all[2][MAXROUNDS];
    size_t nf = block ? (size_t)n : (size_t)n * (size_t)p;   /* floats in the buffers */
    if (n < 1) n = 1, nf = block ? 1 : (size_t)p;
    bad = first_calls_wrong(k, n, nf, bytes, "", road);
    iters = calls_for(k, n, o->budget, 2, 2000);
    for (r = 0; r < o->rounds; r++)
        for (i = 0; i < 2; i++) {
            double t;
            plain = o->med && r % 2 ? i : !i;   /* -m: drop-in first in odd rounds */
            t = timed(k, n, plain, iters);
            all[!plain][r] = t;
            if (t < best[!plain]) best[!plain] = t;
        }
    if (o->med)
        for (i = 0; i < 2; i++) best[i] = median(all[i], o->rounds);
    if (rank == 0) {
        printf("%s %d %zu %.2f %.2f\n", kinds[k], p, block ? (size_t)n * 4 : (size_t)n * 4 * (size_t)p,
               best[0] * 1e6, best[1] * 1e6);
        fflush(stdout);
    }
    return bad;
}

int main(int argc, char **argv)
{
    options o = { 3, 0, 0.03, 8, (size_t)64 << 20, "allreduce,bcast,allgather" };
    int k, want[NKINDS], bad = 0;
    size_t bytes;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    parse(argc, argv, &o);
    pick_kinds(o.klist, want);
    alloc_buffers(o.hi);
    if (rank == 0) printf("# kind ranks bytes plain_us dropin_us\n");
    for (k = 0; k < NKINDS; k++) {
        if (!want[k]) continue;
        for (bytes = o.lo; bytes <= o.hi; bytes *= bytes < ((size_t)256 << 10) ? 8 : 4) {
            bad += bench_size(k, bytes, &o);
            if (k == 15) break;         /* barrier: one size */
        }
    }
    free(src); free(dst); free(cnt); free(dsp);
    MPI_Finalize();
    return bad != 0;
}
