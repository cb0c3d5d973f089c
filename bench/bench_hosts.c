/* bench_hosts.c - collectives across emulated hosts: one rank of a job that
   bench/bench_hosts.sh starts in network namespaces.

   bench_hosts VARIANT...   over ports/coll_hosts.h, torchrun environment;
                            VARIANT: ring (flat COLL_ALGO_RING; broadcast,
                            which has no ring, COLL_ALGO_PIPELINED_CHAIN, the
                            chain along the ring), auto (flat AUTO), hier
                            (coll_hier_*, its default road)
   bench_hosts_mpi          the same loops over MPI_Allreduce, MPI_Bcast,
                            MPI_Allgather and MPI_Reduce_scatter_block (built
                            with mpicc -DBENCH_HOSTS_MPI)
   bench_hosts_gloo         the same loops over Gloo on its TCP transport
                            (this file as C++17 with -DBENCH_HOSTS_GLOO,
                            -lgloo), every algorithm Gloo has for each:
                            all-reduce AllreduceRing ("gloo_ring": the whole
                            vector round the ring), AllreduceRingChunked
                            ("gloo_chunked"), AllreduceHalvingDoubling
                            ("gloo_hd"); broadcast BroadcastOneToAll
                            ("gloo_onetoall") and gloo::broadcast
                            ("gloo_bcast"); all-gather AllgatherRing
                            ("gloo_ring") and gloo::allgather ("gloo_ag");
                            reduce-scatter ReduceScatterHalvingDoubling
                            ("gloo_hd"). Env RANK, WORLD_SIZE,
                            BENCH_HOSTS_ADDR (this rank's address) and
                            BENCH_HOSTS_STORE (a directory every rank sees:
                            the FileStore rendezvous). Each (collective, size,
                            algorithm) has its own connections (Gloo sizes a
                            socket's buffers from its first message); each
                            warm-up call's result is checked on every
                            rank: a wrong one is not timed (row "wrong").

   Collectives: allreduce (float32 sum, in place), broadcast (root 0),
   allgather and reduce_scatter (float32 sum; out of place), in that order,
   or those named in BENCH_HOSTS_COLLS (comma-separated). BYTES is the whole
   vector, as nccl-tests counts it: the all-reduce and broadcast buffer, the
   all-gather output, the reduce-scatter input (p blocks, at least one
   float32 a rank: 16 B at the 8 B size with 4 ranks). Sizes 8 B, 4 KiB,
   64 KiB, 1 MiB, 8 MiB, 64 MiB (those up to BENCH_HOSTS_MAX bytes, if set).
   For each size and variant: one warm-up call, then 7 runs (below 64 KiB)
   or 3 of k calls (k: as many as fit ~4 MiB of payload, 1..200: 1 from
   8 MiB on), each run started after a barrier; a run's time is the
   slowest rank's (an all-reduce of MAX), and rank 0 prints the median, the
   range and the machine's idle CPU share over the runs (cpu_idle) as
   "row KIND BYTES VARIANT US_PER_CALL MIN MAX IDLE". */
#if defined(BENCH_HOSTS_GLOO)
#include <gloo/allgather.h>
#include <gloo/allgather_ring.h>
#include <gloo/allreduce_halving_doubling.h>
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/broadcast.h>
#include <gloo/broadcast_one_to_all.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <chrono>
#include <functional>
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

enum { REPS_MAX = 7 };
#define MAX_BYTES ((size_t)64 << 20)

static const size_t sizes[] = { 8, 4096, 65536, (size_t)1 << 20, (size_t)8 << 20, MAX_BYTES };
#define NSIZES (sizeof sizes / sizeof *sizes)

enum { K_ALLREDUCE, K_BROADCAST, K_ALLGATHER, K_REDUCE_SCATTER, NKINDS };
static const char *const kind_names[NKINDS] = { "allreduce", "broadcast", "allgather", "reduce_scatter" };

static float *a, *b;
static int rank, nranks;

/* Runs per figure: 7 below 64 KiB, where one run is a few ms and the
   figures move most from run to run, else 3. */
static int reps_for(size_t bytes)
{
    return bytes < 65536 ? REPS_MAX : 3;
}

/* The share of the machine's CPU time that was idle since the mark
   (/proc/stat's first line: idle + iowait over all of it), and a new mark;
   -1 where it cannot be read, or where the runs were too short to tell
   (under 40 ticks of all CPUs together: /proc/stat counts 10 ms ticks).
   Namespaces share it: it is the whole machine, the ranks of both hosts,
   the kernel's veth and tbf work beside them. */
static double cpu_idle(unsigned long long mark[2])
{
    unsigned long long v[8] = { 0 }, all = 0, idle;
    double share = -1;
    int i, n;
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return -1;
    n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
               &v[7]);
    fclose(f);
    if (n < 5) return -1;
    for (i = 0; i < 8; i++) all += v[i];
    idle = v[3] + v[4];
    if (all >= mark[0] + 40) share = (double)(idle - mark[1]) / (double)(all - mark[0]);
    mark[0] = all;
    mark[1] = idle;
    return share;
}

/* "row KIND BYTES VARIANT MEDIAN MIN MAX IDLE" (us; IDLE: the CPUs' idle
   share over the runs, -1 unknown) from the n runs' times t (in us x
   scale), which it sorts. */
static void print_row(const char *kind, size_t bytes, const char *variant, double *t, int n, double scale,
                      double idle)
{
    double x;
    int i, j;
    for (i = 0; i < n; i++)
        for (j = i + 1; j < n; j++)
            if (t[j] < t[i]) { x = t[i]; t[i] = t[j]; t[j] = x; }
    printf("row %s %zu %s %.1f %.1f %.1f %.3f\n", kind, bytes, variant, t[n / 2] * scale, t[0] * scale,
           t[n - 1] * scale, idle);
    fflush(stdout);
}

static int iters_for(size_t bytes)
{
    size_t k = ((size_t)4 << 20) / bytes;
    return k < 1 ? 1 : k > 200 ? 200 : (int)k;
}

/* The collectives to run (BENCH_HOSTS_COLLS, default all) and the largest
   size (BENCH_HOSTS_MAX). */
static int kind_on[NKINDS];
static size_t max_bytes = MAX_BYTES;

static int parse_env(void)
{
    const char *s = getenv("BENCH_HOSTS_COLLS"), *m = getenv("BENCH_HOSTS_MAX");
    int k, any = 0;
    for (k = 0; k < NKINDS; k++) {
        if (s && *s) {
            const char *p = s;
            size_t len = strlen(kind_names[k]);
            kind_on[k] = 0;
            while (p && *p) {
                if (strncmp(p, kind_names[k], len) == 0 && (p[len] == ',' || p[len] == 0)) kind_on[k] = 1;
                p = strchr(p, ',');
                if (p) p++;
            }
        } else
            kind_on[k] = 1;
        any |= kind_on[k];
    }
    if (m && *m) max_bytes = (size_t)strtoull(m, NULL, 10);
    if (!any || max_bytes < 8 || max_bytes > MAX_BYTES) {
        fprintf(stderr, "bench_hosts: BENCH_HOSTS_COLLS (allreduce,broadcast,allgather,reduce_scatter) or BENCH_HOSTS_MAX (8..%zu) is wrong\n",
                MAX_BYTES);
        return 2;
    }
    return 0;
}

/* Elements a rank holds for a call of kind at bytes: the whole vector for
   all-reduce and broadcast, one block (at least 1) for the blockwise two. */
static size_t count_for(int kind, size_t bytes)
{
    size_t n = bytes / 4, c;
    if (kind == K_ALLREDUCE || kind == K_BROADCAST) return n;
    c = n / (size_t)nranks;
    return c < 1 ? 1 : c;
}

static size_t bytes_for(int kind, size_t bytes)
{
    size_t c = count_for(kind, bytes);
    return kind == K_ALLREDUCE || kind == K_BROADCAST ? c * 4 : c * 4 * (size_t)nranks;
}

#if defined(BENCH_HOSTS_GLOO)
static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static const char *const gloo_variants[NKINDS][3] = {
    { "gloo_ring", "gloo_chunked", "gloo_hd" },
    { "gloo_onetoall", "gloo_bcast", 0 },
    { "gloo_ring", "gloo_ag", 0 },
    { "gloo_hd", 0, 0 },
};

/* One call of kind by variant v on ctx, c elements a rank (see count_for). */
static std::function<void()> make_op(int kind, int v, const std::shared_ptr<gloo::Context> &ctx, size_t c)
{
    std::vector<float *> ptrs(1, a);
    int n = (int)c;
    switch (kind) {
    case K_ALLREDUCE: {
        std::shared_ptr<gloo::Algorithm> alg;
        if (v == 0) alg.reset(new gloo::AllreduceRing<float>(ctx, ptrs, n));
        else if (v == 1) alg.reset(new gloo::AllreduceRingChunked<float>(ctx, ptrs, n));
        else alg.reset(new gloo::AllreduceHalvingDoubling<float>(ctx, ptrs, n));
        return [alg] { alg->run(); };
    }
    case K_BROADCAST: {
        if (v == 0) {
            std::shared_ptr<gloo::Algorithm> alg(new gloo::BroadcastOneToAll<float>(ctx, ptrs, c, 0));
            return [alg] { alg->run(); };
        }
        auto o = std::make_shared<gloo::BroadcastOptions>(ctx);
        if (rank == 0) o->setInput(a, c);
        o->setOutput(a, c);
        o->setRoot(0);
        return [o] { gloo::broadcast(*o); };
    }
    case K_ALLGATHER: {
        if (v == 0) {
            std::vector<const float *> in(1, a);
            std::shared_ptr<gloo::Algorithm> alg(new gloo::AllgatherRing<float>(ctx, in, b, n));
            return [alg] { alg->run(); };
        }
        auto o = std::make_shared<gloo::AllgatherOptions>(ctx);
        o->setInput(a, c);
        o->setOutput(b, c * (size_t)nranks);
        return [o] { gloo::allgather(*o); };
    }
    default: {
        std::vector<int> recv((size_t)nranks, n);
        std::shared_ptr<gloo::Algorithm> alg(
            new gloo::ReduceScatterHalvingDoubling<float>(ctx, ptrs, n * nranks, recv));
        return [alg] { alg->run(); };
    }
    }
}

/* Fill for the warm-up call, then the number of wrong elements after it. */
static void fill(int kind, size_t c)
{
    size_t i, len = kind == K_REDUCE_SCATTER ? c * (size_t)nranks : c;
    for (i = 0; i < len; i++) a[i] = kind == K_BROADCAST ? (rank == 0 ? 7.0f : 0.0f) : (float)(rank + 1);
    if (kind == K_ALLGATHER) memset(b, 0, c * (size_t)nranks * 4);
}

static size_t wrong(int kind, size_t c)
{
    size_t i, bad = 0;
    float sum = (float)(nranks * (nranks + 1) / 2);
    switch (kind) {
    case K_ALLREDUCE: for (i = 0; i < c; i++) bad += a[i] != sum; break;
    case K_BROADCAST: for (i = 0; i < c; i++) bad += a[i] != 7.0f; break;
    case K_ALLGATHER:
        for (i = 0; i < c * (size_t)nranks; i++) bad += b[i] != (float)(i / c + 1);
        break;
    default:   /* halving-doubling leaves every rank's block at the front */
        for (i = 0; i < c; i++) bad += a[i] != sum;
    }
    return bad;
}

int main(void)
{
    const char *addr = getenv("BENCH_HOSTS_ADDR"), *dir = getenv("BENCH_HOSTS_STORE");
    const char *rs = getenv("RANK"), *ws = getenv("WORLD_SIZE");
    if (parse_env()) return 2;
    if (!addr || !dir || !rs || !ws || atoi(ws) < 1 || atoi(rs) < 0 || atoi(rs) >= atoi(ws)) {
        fprintf(stderr, "bench_hosts_gloo: needs RANK < WORLD_SIZE, BENCH_HOSTS_ADDR and BENCH_HOSTS_STORE\n");
        return 2;
    }
    rank = atoi(rs); nranks = atoi(ws);
    a = (float *)calloc(MAX_BYTES / 4 + (size_t)nranks, 4);
    b = (float *)calloc(MAX_BYTES / 4 + (size_t)nranks, 4);
    if (!a || !b) return 1;
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
        for (int kind = 0; kind < NKINDS; kind++) {
            if (!kind_on[kind]) continue;
            for (size_t si = 0; si < NSIZES && sizes[si] <= max_bytes; si++) {
                size_t c = count_for(kind, sizes[si]), bytes = bytes_for(kind, sizes[si]);
                for (int v = 0; v < 3 && gloo_variants[kind][v]; v++) {
                    const char *name = gloo_variants[kind][v];
                    std::string prefix = std::string(kind_names[kind]) + "-" + name + "-" + std::to_string(bytes);
                    gloo::rendezvous::PrefixStore ps(prefix, fs);
                    auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, nranks);
                    ctx->setTimeout(std::chrono::seconds(600));
                    ctx->connectFullMesh(ps, dev);
                    std::function<void()> op = make_op(kind, v, ctx, c);
                    int k = iters_for(bytes);
                    double t[REPS_MAX];
                    size_t bad;
                    fill(kind, c);
                    op();
                    bad = wrong(kind, c);
                    for (int q = 0; q < nranks; q++) tv[q] = q == rank ? (double)bad : 0;
                    tsum.run();                     /* every rank learns every count */
                    double allbad = 0;
                    for (int q = 0; q < nranks; q++) allbad += tv[q];
                    if (allbad > 0) {               /* not timed: a row "wrong" */
                        if (bad)
                            fprintf(stderr, "bench_hosts_gloo: rank %d: %s %s %zu B: %zu of %zu elements wrong\n",
                                    rank, kind_names[kind], name, bytes, bad,
                                    kind == K_ALLGATHER ? c * (size_t)nranks : c);
                        if (rank == 0) {
                            printf("row %s %zu %s wrong\n", kind_names[kind], bytes, name);
                            fflush(stdout);
                        }
                        op = nullptr;
                        ctx->closeConnections();
                        continue;
                    }
                    memset(a, 0, bytes);
                    unsigned long long mark[2] = { 0, 0 };
                    cpu_idle(mark);
                    for (int r = 0; r < reps_for(bytes); r++) {
                        bar.run();
                        double t0 = now_us();
                        for (int i = 0; i < k; i++) op();
                        double dt = (now_us() - t0) / k, mx = 0;
                        for (int q = 0; q < nranks; q++) tv[q] = q == rank ? dt : 0;
                        tsum.run();
                        for (int q = 0; q < nranks; q++) if (tv[q] > mx) mx = tv[q];
                        t[r] = mx;
                    }
                    if (rank == 0) {
                        print_row(kind_names[kind], bytes, name, t, reps_for(bytes), 1, cpu_idle(mark));
                    }
                    op = nullptr;
                    ctx->closeConnections();
                }
            }
        }
    } catch (const std::exception &e) {
        fprintf(stderr, "bench_hosts_gloo: rank %d: %s\n", rank, e.what());
        return 1;
    }
    free(a);
    free(b);
    return 0;
}
#elif defined(BENCH_HOSTS_MPI)
static void mpi_call(int kind, int c)
{
    switch (kind) {
    case K_ALLREDUCE: MPI_Allreduce(MPI_IN_PLACE, a, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
    case K_BROADCAST: MPI_Bcast(a, c, MPI_FLOAT, 0, MPI_COMM_WORLD); break;
    case K_ALLGATHER: MPI_Allgather(a, c, MPI_FLOAT, b, c, MPI_FLOAT, MPI_COMM_WORLD); break;
    default: MPI_Reduce_scatter_block(a, b, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv)
{
    size_t si;
    int kind;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (parse_env()) MPI_Abort(MPI_COMM_WORLD, 2);
    a = (float *)calloc(MAX_BYTES / 4 + (size_t)nranks, 4);
    b = (float *)calloc(MAX_BYTES / 4 + (size_t)nranks, 4);
    if (!a || !b) MPI_Abort(MPI_COMM_WORLD, 1);
    for (kind = 0; kind < NKINDS; kind++) {
        if (!kind_on[kind]) continue;
        for (si = 0; si < NSIZES && sizes[si] <= max_bytes; si++) {
            size_t bytes = bytes_for(kind, sizes[si]);
            int c = (int)count_for(kind, sizes[si]), k = iters_for(bytes), r, i;
            double t[REPS_MAX];
            unsigned long long mark[2] = { 0, 0 };
            mpi_call(kind, c);
            cpu_idle(mark);
            for (r = 0; r < reps_for(bytes); r++) {
                double t0, dt;
                MPI_Barrier(MPI_COMM_WORLD);
                t0 = MPI_Wtime();
                for (i = 0; i < k; i++) mpi_call(kind, c);
                dt = (MPI_Wtime() - t0) / k;
                MPI_Allreduce(&dt, &t[r], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            }
            if (rank == 0) {
                print_row(kind_names[kind], bytes, "mpi", t, reps_for(bytes), 1e6, cpu_idle(mark));
            }
        }
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

/* One call: v "hier" through coll_hier_*, else flat (ring: COLL_ALGO_RING,
   for broadcast COLL_ALGO_PIPELINED_CHAIN; auto: AUTO). */
static int run(int kind, const char *v, size_t c)
{
    int hier = strcmp(v, "hier") == 0, ring = strcmp(v, "ring") == 0;
    coll_algo al = ring ? COLL_ALGO_RING : COLL_ALGO_AUTO;
    switch (kind) {
    case K_ALLREDUCE:
        return hier ? coll_hier_allreduce(&HI, a, a, c, COLL_FLOAT32, COLL_SUM)
                    : coll_allreduce(&C, a, a, c, COLL_FLOAT32, COLL_SUM, al);
    case K_BROADCAST:
        return hier ? coll_hier_broadcast(&HI, a, c, COLL_FLOAT32, 0)
                    : coll_broadcast(&C, a, c, COLL_FLOAT32, 0, ring ? COLL_ALGO_PIPELINED_CHAIN : al);
    case K_ALLGATHER:
        return hier ? coll_hier_allgather(&HI, a, b, c, COLL_FLOAT32)
                    : coll_allgather(&C, a, b, c, COLL_FLOAT32, al);
    default:
        return hier ? coll_hier_reduce_scatter(&HI, a, b, c, COLL_FLOAT32, COLL_SUM)
                    : coll_reduce_scatter(&C, a, b, c, COLL_FLOAT32, COLL_SUM, al);
    }
}

int main(int argc, char **argv)
{
    coll_port port;
    size_t si, work_bytes;
    void *work;
    int v, kind, rc;
    if (parse_env()) return 2;
    rc = coll_hosts_init_env(&H, 60000);
    if (rc) { fprintf(stderr, "bench_hosts: init: %d %s\n", rc, H.why); return 1; }
    rank = H.rank; nranks = H.nranks;
    port = coll_hosts_port(&H);
    /* coll_hier's staging: reduce-scatter needs the most, (p + H) blocks at
       most (coll_hier_work_bytes), p + p blocks of the largest size here */
    work_bytes = 2 * (MAX_BYTES / (size_t)nranks / 4 + 1) * 4 * (size_t)nranks;
    a = (float *)calloc(MAX_BYTES / 4 + (size_t)nranks, 4);
    b = (float *)calloc(MAX_BYTES / 4 + (size_t)nranks, 4);
    work = malloc(work_bytes);
    if (!a || !b || !work || coll_init(&C, rank, nranks, &port, scratch, sizeof scratch) ||
        coll_hier_init(&HI, &C, coll_hosts_host(&H), sub_scratch, sizeof sub_scratch, work, work_bytes)) {
        fprintf(stderr, "bench_hosts: setup failed\n");
        return 1;
    }
    if (rank == 0)
        printf("hosts %d, ranks per host %d\n", coll_hosts_nhosts(&H), coll_hosts_local_size(&H));
    for (kind = 0; kind < NKINDS && !rc; kind++) {
        if (!kind_on[kind]) continue;
        for (si = 0; si < NSIZES && sizes[si] <= max_bytes && !rc; si++) {
            size_t c = count_for(kind, sizes[si]), bytes = bytes_for(kind, sizes[si]);
            for (v = 1; v < argc && !rc; v++) {
                int k = iters_for(bytes), r, i;
                double t[REPS_MAX];
                unsigned long long mark[2] = { 0, 0 };
                if (kind == K_REDUCE_SCATTER && strcmp(argv[v], "hier") == 0 &&
                    coll_hier_work_bytes(&HI, COLL_REDUCE_SCATTER, c, COLL_FLOAT32) > work_bytes) {
                    fprintf(stderr, "bench_hosts: coll_hier reduce-scatter wants more work than %zu B\n", work_bytes);
                    rc = COLL_ERR_NOSPC;
                    break;
                }
                if ((rc = run(kind, argv[v], c)) != 0) break;
                cpu_idle(mark);
                for (r = 0; r < reps_for(bytes) && !rc; r++) {
                    double t0, dt;
                    coll_barrier(&C, COLL_ALGO_AUTO);
                    t0 = now_us();
                    for (i = 0; i < k && !rc; i++) rc = run(kind, argv[v], c);
                    dt = (now_us() - t0) / k;
                    if (!rc) rc = coll_allreduce(&C, &dt, &t[r], 1, COLL_FLOAT64, COLL_MAX, COLL_ALGO_AUTO);
                }
                if (rc) break;
                if (rank == 0) {
                    print_row(kind_names[kind], bytes, argv[v], t, reps_for(bytes), 1, cpu_idle(mark));
                }
            }
        }
    }
    if (rc) fprintf(stderr, "bench_hosts: rank %d: %s (%d)\n", rank, coll_result_str(rc), rc);
    coll_hosts_close(&H);
    free(work);
    return rc != 0;
}
#endif
