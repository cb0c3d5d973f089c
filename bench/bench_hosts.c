/* bench_hosts.c - all-reduce across emulated hosts: one rank of a job that
   bench/bench_hosts.sh starts in network namespaces.

   bench_hosts VARIANT...   over ports/coll_hosts.h, torchrun environment;
                            VARIANT: ring (flat COLL_ALGO_RING), auto (flat
                            AUTO), hier (coll_hier_allreduce)
   bench_hosts_mpi          the same loop over MPI_Allreduce (built with
                            mpicc -DBENCH_HOSTS_MPI)

   Sizes 8 B .. 16 MiB of float32, x8 apart, and 64 MiB. For each size and variant:
   one warm-up call, then 3 runs of k calls (k: as many as fit ~4 MiB of
   payload, 1..200), each run started after a barrier; a run's time is the
   slowest rank's (an all-reduce of MAX), and rank 0 prints the median of
   the 3 as "row BYTES VARIANT US_PER_CALL". */
#ifdef BENCH_HOSTS_MPI
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#else
#define COLL_IMPLEMENTATION
#define COLL_HOSTS_IMPLEMENTATION
#include "ports/coll_hosts.h"
#include "coll_hier.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#endif

enum { REPS = 3 };
#define MAX_BYTES ((size_t)64 << 20)

/* 8 B .. 16 MiB x8 apart, then 64 MiB */
static const size_t sizes[] = { 8, 64, 512, 4096, 32768, 262144, 2097152, 16777216, MAX_BYTES };
#define NSIZES (sizeof sizes / sizeof *sizes)

static float *a;
static int rank, nranks;

static double median3(double *t)
{
    double x;
    int i, j;
    for (i = 0; i < REPS; i++)
        for (j = i + 1; j < REPS; j++)
            if (t[j] < t[i]) { x = t[i]; t[i] = t[j]; t[j] = x; }
    return t[REPS / 2];
}

static int iters_for(size_t bytes)
{
    size_t k = ((size_t)4 << 20) / bytes;
    return k < 1 ? 1 : k > 200 ? 200 : (int)k;
}

#ifdef BENCH_HOSTS_MPI
int main(int argc, char **argv)
{
    size_t bytes, si;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    a = (float *)calloc(MAX_BYTES / 4, 4);
    if (!a) MPI_Abort(MPI_COMM_WORLD, 1);
    for (si = 0; si < NSIZES && (bytes = sizes[si]) != 0; si++) {
        int n = (int)(bytes / 4), k = iters_for(bytes), r, i;
        double t[REPS];
        MPI_Allreduce(MPI_IN_PLACE, a, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        for (r = 0; r < REPS; r++) {
            double t0, dt;
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            for (i = 0; i < k; i++)
                MPI_Allreduce(MPI_IN_PLACE, a, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            dt = (MPI_Wtime() - t0) / k;
            MPI_Allreduce(&dt, &t[r], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        }
        if (rank == 0) { printf("row %zu mpi %.1f\n", bytes, median3(t) * 1e6); fflush(stdout); }
    }
    MPI_Finalize();
    return 0;
}
#else
static coll_hosts H;
static coll_comm C;
static coll_hier HI;
static unsigned char scratch[1 << 17], sub_scratch[1 << 17];

/* Microsecond clock: the port's is in ms, too coarse for small calls. */
static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int run(const char *v, size_t n)
{
    if (strcmp(v, "hier") == 0) return coll_hier_allreduce(&HI, a, a, n, COLL_FLOAT32, COLL_SUM);
    return coll_allreduce(&C, a, a, n, COLL_FLOAT32, COLL_SUM,
                          strcmp(v, "ring") == 0 ? COLL_ALGO_RING : COLL_ALGO_AUTO);
}

int main(int argc, char **argv)
{
    coll_port port;
    size_t bytes, si;
    int v, rc = coll_hosts_init_env(&H, 60000);
    if (rc) { fprintf(stderr, "bench_hosts: init: %d %s\n", rc, H.why); return 1; }
    rank = H.rank; nranks = H.nranks;
    port = coll_hosts_port(&H);
    a = (float *)calloc(MAX_BYTES / 4, 4);
    if (!a || coll_init(&C, rank, nranks, &port, scratch, sizeof scratch) ||
        coll_hier_init(&HI, &C, coll_hosts_host(&H), sub_scratch, sizeof sub_scratch, NULL, 0)) {
        fprintf(stderr, "bench_hosts: setup failed\n");
        return 1;
    }
    if (rank == 0)
        printf("hosts %d, ranks per host %d\n", coll_hosts_nhosts(&H), coll_hosts_local_size(&H));
    for (si = 0; si < NSIZES && (bytes = sizes[si]) != 0; si++)
        for (v = 1; v < argc; v++) {
            size_t n = bytes / 4;
            int k = iters_for(bytes), r, i;
            double t[REPS];
            if ((rc = run(argv[v], n)) != 0) break;
            for (r = 0; r < REPS && !rc; r++) {
                double t0, dt;
                coll_barrier(&C, COLL_ALGO_AUTO);
                t0 = now_us();
                for (i = 0; i < k && !rc; i++) rc = run(argv[v], n);
                dt = (now_us() - t0) / k;
                if (!rc) rc = coll_allreduce(&C, &dt, &t[r], 1, COLL_FLOAT64, COLL_MAX, COLL_ALGO_AUTO);
            }
            if (rc) break;
            if (rank == 0) {
                printf("row %zu %s %.1f\n", bytes, argv[v], median3(t));
                fflush(stdout);
            }
        }
    if (rc) fprintf(stderr, "bench_hosts: rank %d: %s (%d)\n", rank, coll_result_str(rc), rc);
    coll_hosts_close(&H);
    return rc != 0;
}
#endif
