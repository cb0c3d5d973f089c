/* bench_hosts.c - all-reduce across emulated hosts: one rank of a job that
   bench/bench_hosts.sh starts in network namespaces.

   bench_hosts VARIANT...   over ports/coll_hosts.h, torchrun environment;
                            VARIANT: ring (flat COLL_ALGO_RING), auto (flat
                            AUTO), hier (coll_hier_allreduce)
   bench_hosts_mpi          the same loop over MPI_Allreduce (built with
                            mpicc -DBENCH_HOSTS_MPI)
   bench_hosts_gloo [ring|chunked|hd]...   the same loop over Gloo's
                            AllreduceRing (row variant "gloo": the whole
                            vector round the ring), AllreduceRingChunked
                            ("gloochunked") and AllreduceHalvingDoubling
                            ("gloohd") on its TCP transport (this file as
                            C++17 with -DBENCH_HOSTS_GLOO, -lgloo); env RANK,
                            WORLD_SIZE, BENCH_HOSTS_ADDR (this rank's address)
                            and BENCH_HOSTS_STORE (a directory every rank
                            sees: the FileStore rendezvous). Each (size,
                            algorithm) has its own connections (Gloo sizes a
                            socket's buffers from its first message); the
                            warm-up call is checked (every element p(p+1)/2).

   Sizes 8 B .. 16 MiB of float32, x8 apart, and 64 MiB. For each size and variant:
   one warm-up call, then 3 runs of k calls (k: as many as fit ~4 MiB of
   payload, 1..200), each run started after a barrier; a run's time is the
   slowest rank's (an all-reduce of MAX), and rank 0 prints the median of
   the 3 as "row BYTES VARIANT US_PER_CALL". */
#if defined(BENCH_HOSTS_GLOO)
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <chrono>
#include <memory>
#include <string>
#include <vector>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#elif defined(BENCH_HOSTS_MPI)
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

#if defined(BENCH_HOSTS_GLOO)
static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static std::unique_ptr<gloo::Algorithm> make_algo(const std::string &v, const std::shared_ptr<gloo::Context> &ctx,
                                                  float *buf, int count)
{
    std::vector<float *> ptrs(1, buf);
    if (v == "hd") return std::unique_ptr<gloo::Algorithm>(new gloo::AllreduceHalvingDoubling<float>(ctx, ptrs, count));
    if (v == "chunked") return std::unique_ptr<gloo::Algorithm>(new gloo::AllreduceRingChunked<float>(ctx, ptrs, count));
    return std::unique_ptr<gloo::Algorithm>(new gloo::AllreduceRing<float>(ctx, ptrs, count));
}

int main(int argc, char **argv)
{
    const char *addr = getenv("BENCH_HOSTS_ADDR"), *dir = getenv("BENCH_HOSTS_STORE");
    const char *rs = getenv("RANK"), *ws = getenv("WORLD_SIZE");
    std::vector<std::string> vs;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "ring") && strcmp(argv[i], "chunked") && strcmp(argv[i], "hd")) {
            fprintf(stderr, "bench_hosts_gloo: unknown variant %s (ring, chunked, hd)\n", argv[i]);
            return 2;
        }
        vs.push_back(argv[i]);
    }
    if (vs.empty()) { vs.push_back("ring"); vs.push_back("chunked"); vs.push_back("hd"); }
    if (!addr || !dir || !rs || !ws || atoi(ws) < 1 || atoi(rs) < 0 || atoi(rs) >= atoi(ws)) {
        fprintf(stderr, "bench_hosts_gloo: needs RANK < WORLD_SIZE, BENCH_HOSTS_ADDR and BENCH_HOSTS_STORE\n");
        return 2;
    }
    rank = atoi(rs); nranks = atoi(ws);
    a = (float *)calloc(MAX_BYTES / 4, 4);
    if (!a) return 1;
    try {
        gloo::transport::tcp::attr at(addr);
        auto dev = gloo::transport::tcp::CreateDevice(at);
        gloo::rendezvous::FileStore fs(dir);
        gloo::rendezvous::PrefixStore cps("ctl", fs);
        auto cctx = std::make_shared<gloo::rendezvous::Context>(rank, nranks);
        cctx->setTimeout(std::chrono::seconds(120));
        cctx->connectFullMesh(cps, dev);
        std::vector<double> tv(nranks);
        std::vector<double *> tp(1, tv.data());
        gloo::AllreduceRing<double> tsum(cctx, tp, nranks);   /* one slot a rank: the max */
        gloo::BarrierAllToAll bar(cctx);
        for (size_t si = 0; si < NSIZES; si++) {
            size_t bytes = sizes[si], n = bytes / 4;
            for (const std::string &v : vs) {
                std::string prefix = v + "-" + std::to_string(bytes);
                gloo::rendezvous::PrefixStore ps(prefix, fs);
                auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, nranks);
                ctx->setTimeout(std::chrono::seconds(600));
                ctx->connectFullMesh(ps, dev);
                auto alg = make_algo(v, ctx, a, (int)n);
                int k = iters_for(bytes);
                double t[REPS];
                size_t bad = 0;
                float want = (float)(nranks * (nranks + 1) / 2);
                for (size_t i = 0; i < n; i++) a[i] = (float)(rank + 1);
                alg->run();
                for (size_t i = 0; i < n; i++) bad += a[i] != want;
                if (bad) {
                    fprintf(stderr, "bench_hosts_gloo: rank %d: %s %zu B: %zu of %zu elements wrong\n", rank,
                            v.c_str(), bytes, bad, n);
                    return 1;
                }
                memset(a, 0, bytes);
                for (int r = 0; r < REPS; r++) {
                    bar.run();
                    double t0 = now_us();
                    for (int i = 0; i < k; i++) alg->run();
                    double dt = (now_us() - t0) / k, mx = 0;
                    for (int q = 0; q < nranks; q++) tv[q] = q == rank ? dt : 0;
                    tsum.run();
                    for (int q = 0; q < nranks; q++) if (tv[q] > mx) mx = tv[q];
                    t[r] = mx;
                }
                if (rank == 0) {
                    printf("row %zu %s %.1f\n", bytes, v == "hd" ? "gloohd" : v == "chunked" ? "gloochunked" : "gloo", median3(t));
                    fflush(stdout);
                }
                alg.reset();
                ctx->closeConnections();
            }
        }
    } catch (const std::exception &e) {
        fprintf(stderr, "bench_hosts_gloo: rank %d: %s\n", rank, e.what());
        return 1;
    }
    free(a);
    return 0;
}
#elif defined(BENCH_HOSTS_MPI)
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
