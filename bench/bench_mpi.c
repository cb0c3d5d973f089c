/* bench_mpi.c - the MPI library's own collectives, measured like coll's

   Run under mpirun, one process per rank:
       mpirun -np 4 build/bench/bench_mpi_ompi -i ompi -s quick
   Rows: impl (-i) x collective (-c) x size (-s). The MPI calls are
   MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Allgather, MPI_Bcast,
   MPI_Reduce and MPI_Alltoall on float32 with MPI_SUM, out of place.

   Built with -DBENCH_COLL_MPI the same program also measures coll over
   ports/coll_mpi.h in the same job (impl "coll-mpi", every algorithm or
   AUTO, -a), so both sets of rows see the same placement and the same
   mpirun. The control plane (barriers, the mean of the times, the checks)
   is MPI itself, outside the timed loop. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include "bench_common.h"

#ifdef BENCH_COLL_MPI
#define COLL_IMPLEMENTATION
#include "../coll.h"
#define COLL_MPI_IMPLEMENTATION
#include "../ports/coll_mpi.h"
#ifndef BENCH_COLL_SCRATCH
#define BENCH_COLL_SCRATCH (1u << 20)   /* the MPI port's best: see bench_coll.h */
#endif
#include "bench_coll.h"
#endif

static void ctl_barrier(void *ctx) { (void)ctx; MPI_Barrier(MPI_COMM_WORLD); }
static double ctl_sum(void *ctx, double x)
{
    double y;
    (void)ctx;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return y;
}
static double ctl_max(void *ctx, double x)
{
    double y;
    (void)ctx;
    MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return y;
}

static int mpi_call(void *cx, int kind, const float *src, float *dst, size_t count)
{
    int n = (int)count;
    (void)cx;
    switch (kind) {
    case BK_ALLREDUCE:
        return MPI_Allreduce(src, dst, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    case BK_REDUCE_SCATTER:
        return MPI_Reduce_scatter_block(src, dst, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    case BK_ALLGATHER:
        return MPI_Allgather(src, n, MPI_FLOAT, dst, n, MPI_FLOAT, MPI_COMM_WORLD);
    case BK_BROADCAST:
        return MPI_Bcast(dst, n, MPI_FLOAT, BENCH_ROOT, MPI_COMM_WORLD);
    case BK_REDUCE:
        return MPI_Reduce(src, dst, n, MPI_FLOAT, MPI_SUM, BENCH_ROOT, MPI_COMM_WORLD);
    case BK_ALLTOALL:
        return MPI_Alltoall(src, n, MPI_FLOAT, dst, n, MPI_FLOAT, MPI_COMM_WORLD);
    }
    return -1;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: mpirun -np P bench_mpi [-i impl] [-c coll,...] [-s sizes] [-T ms]\n"
            "                [-m] [-a auto|all|algo,...] [-x] [-k]\n"
            "  -i  name in the impl column (ompi, mpich)\n"
            "  -c  collectives (default: all six)\n"
            "  -s  quick | std | full | comma list with K/M suffixes (default std)\n"
            "  -T  milliseconds of timed calls per row (default 20)\n"
            "  -m  skip the MPI library's own collectives\n"
            "  -a  coll algorithms for coll-mpi rows (default auto)\n"
            "  -A  the largest size for algorithms other than AUTO (default 64M)\n"
            "  -x  skip coll-mpi rows      -k  check only, no timing\n");
}

int main(int argc, char **argv)
{
    const char *impl = "mpi", *colls = NULL, *sizes_s = "std", *algos = "auto";
    size_t sizes[BENCH_MAX_SIZES], maxb = 0, elems, algo_max = (size_t)64 << 20;
    int nsizes, rank, p, i, k, kinds[BK_COUNT], nk = 0, skip_mpi = 0, skip_coll = 0;
    bench_opts o = {0.02, 3, 1000, 0, 0};
    bench_ctl ctl = {NULL, ctl_barrier, ctl_sum, ctl_max};
    float *src, *dst;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    for (i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "-m")) { skip_mpi = 1; continue; }
        if (!strcmp(argv[i], "-x")) { skip_coll = 1; continue; }
        if (!strcmp(argv[i], "-k")) { o.check_only = 1; continue; }
        if (!v) { if (rank == 0) usage(); MPI_Abort(MPI_COMM_WORLD, 2); }
        if (!strcmp(argv[i], "-i")) impl = v;
        else if (!strcmp(argv[i], "-c")) colls = v;
        else if (!strcmp(argv[i], "-s")) sizes_s = v;
        else if (!strcmp(argv[i], "-T")) o.target = atof(v) / 1e3;
        else if (!strcmp(argv[i], "-a")) algos = v;
        else if (!strcmp(argv[i], "-A")) algo_max = bench_parse_size(v);
        else { if (rank == 0) usage(); MPI_Abort(MPI_COMM_WORLD, 2); }
        i++;
    }
    nsizes = bench_parse_sizes(sizes_s, sizes, BENCH_MAX_SIZES);
    if (nsizes <= 0) { if (rank == 0) usage(); MPI_Abort(MPI_COMM_WORLD, 2); }
    if (colls) {
        char buf[256], *tok, *save;
        snprintf(buf, sizeof buf, "%s", colls);
        for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
            if ((k = bench_kind_by_name(tok)) >= 0) kinds[nk++] = k;
            else { if (rank == 0) fprintf(stderr, "bench_mpi: unknown collective %s\n", tok);
                   MPI_Abort(MPI_COMM_WORLD, 2); }
    } else {
        for (k = 0; k < BK_COUNT; k++) kinds[nk++] = k;
    }
    for (i = 0; i < nsizes; i++) if (sizes[i] > maxb) maxb = sizes[i];
    elems = maxb / sizeof(float) + 2 * (size_t)p;
    src = (float *)malloc(elems * sizeof(float));
    dst = (float *)malloc(elems * sizeof(float));
    if (!src || !dst) { fprintf(stderr, "bench_mpi: out of memory\n"); MPI_Abort(MPI_COMM_WORLD, 1); }

    if (!skip_mpi)
        for (k = 0; k < nk; k++)
            for (i = 0; i < nsizes; i++)
                if (kinds[k] == BK_ALLREDUCE || sizes[i] <= BENCH_OTHER_MAX)
                    bench_cell(&ctl, rank, p, impl, "default", kinds[k], sizes[i],
                               mpi_call, NULL, src, dst, &o);

    if (!skip_coll) {
#ifdef BENCH_COLL_MPI
        static unsigned char scratch[BENCH_COLL_SCRATCH];
        static coll_mpi mp;
        coll_port port;
        coll_comm c;
        int passed = 0, failed = 0, r2, p2;
        int rc = coll_mpi_port_init(&mp, MPI_COMM_WORLD, &port, &r2, &p2);
        if (rc == 0) rc = coll_init(&c, r2, p2, &port, scratch, sizeof scratch);
        if (ctl_max(NULL, rc ? 1.0 : 0.0) > 0) {
            if (rank == 0) fprintf(stderr, "bench_mpi: coll-mpi set-up failed\n");
        } else {
            bench_coll_rows(&ctl, &c, "coll-mpi", kinds, nk, algos, sizes, nsizes,
                            algo_max, src, dst, &o, &passed, &failed);
            coll_mpi_port_free(&mp);
        }
#else
        (void)algos; (void)algo_max;
        if (rank == 0)
            fprintf(stderr, "bench_mpi: built without ports/coll_mpi.h: no coll-mpi rows\n");
#endif
    }
    free(src);
    free(dst);
    MPI_Finalize();
    return 0;
}
