/* demo.c - coll in one minute: 4 ranks as threads in this process.

   1. The four primitives of the MindSpore page, with its inputs and the
      output rank 0 prints there: AllReduce, AllGather, ReduceScatter,
      Broadcast.
   2. Every all-reduce algorithm on the same ragged vector, each checked
      against a plain loop on every rank, with the traffic it caused
      (bytes sent and rounds, measured by a counting port).

   Exits non-zero if any result is wrong.   Build and run:  make demo */
#define COLL_IMPLEMENTATION
#include "../coll.h"
#define COLL_THREADS_IMPLEMENTATION
#include "../ports/coll_threads.h"
#include "../test/test_ports.h"
#include <stdio.h>
#include <string.h>

#define P 4
#define N 1003                     /* not a multiple of P, on purpose */

static coll_threads world;
static coll_counting counters[P];
static unsigned char scratch[P][8192];
static int wrong;

/* A 4x1 array, the way numpy prints it. */
static void print_column(const char *label, const float *v, int n)
{
    int i;
    for (i = 0; i < n; i++)
        printf("  %-14s %s[%g.]%s\n", i ? "" : label, i ? " " : "[", (double)v[i], i == n - 1 ? "]" : "");
}

static int expect(int ok, int rank, const char *what)
{
    if (!ok) { printf("  WRONG on rank %d: %s\n", rank, what); wrong = 1; }
    return ok;
}

/* ---- 1. the MindSpore primitives ------------------------------------------ */
static int primitives(int rank, void *arg)
{
    coll_comm c;
    coll_port port = coll_threads_port(&world, rank);
    float x = (float)rank, gathered[P], column[P] = { 0, 1, 2, 3 }, part = -1;
    int32_t b = rank == 0 ? 0 : -1;
    int rc, i;
    (void)arg;
    coll_init(&c, rank, P, &port, scratch[rank], sizeof scratch[rank]);

    rc = coll_allreduce(&c, &x, &x, 1, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
    expect(rc == COLL_OK && x == 6.0f, rank, "AllReduce(SUM) of 0..3 is 6");
    if (rank == 0) printf("  %-14s [[%g.]]\n", "AllReduce", (double)x);

    x = (float)rank;
    rc = coll_allgather(&c, &x, gathered, 1, COLL_FLOAT32, COLL_ALGO_AUTO);
    for (i = 0; i < P; i++) expect(rc == COLL_OK && gathered[i] == (float)i, rank, "AllGather");
    if (rank == 0) print_column("AllGather", gathered, P);

    rc = coll_reduce_scatter(&c, column, &part, 1, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
    expect(rc == COLL_OK && part == 4.0f * (float)rank, rank, "ReduceScatter gives 4*rank");
    if (rank == 0) printf("  %-14s [[%g.]]\n", "ReduceScatter", (double)part);

    rc = coll_broadcast(&c, &b, 1, COLL_INT32, 0, COLL_ALGO_AUTO);
    expect(rc == COLL_OK && b == 0, rank, "Broadcast from rank 0");
    if (rank == 0) printf("  %-14s [[%d]]\n", "Broadcast", (int)b);
    return 0;
}

/* ---- 2. every all-reduce algorithm ----------------------------------------- */
static coll_algo current;
static float inputs[P][N], outputs[P][N];

static int one_allreduce(int rank, void *arg)
{
    coll_comm c;
    coll_port inner = coll_threads_port(&world, rank), port;
    coll_args a;
    int rc, i, r;
    (void)arg;
    coll_counting_init(&counters[rank], &inner);
    port = coll_counting_port(&counters[rank]);
    coll_init(&c, rank, P, &port, scratch[rank], sizeof scratch[rank]);
    for (i = 0; i < N; i++) inputs[rank][i] = (float)((rank * 31 + i * 7) % 17);
    memset(&a, 0, sizeof a);
    a.kind = COLL_ALLREDUCE; a.algo = current; a.src = inputs[rank]; a.dst = outputs[rank];
    a.count = N; a.dtype = COLL_FLOAT32; a.op = COLL_SUM; a.group = 2;
    rc = coll_run(&c, &a);
    if (!expect(rc == COLL_OK, rank, coll_result_str(rc))) return 0;
    for (i = 0; i < N; i++) {
        float want = 0;
        for (r = 0; r < P; r++) want += (float)((r * 31 + i * 7) % 17);
        if (!expect(outputs[rank][i] == want, rank, "sum differs from the plain loop")) break;
    }
    return 0;
}

int main(void)
{
    static const coll_algo algos[] = { COLL_ALGO_RING, COLL_ALGO_NAIVE, COLL_ALGO_TREE,
        COLL_ALGO_RECURSIVE_DOUBLING, COLL_ALGO_RABENSEIFNER, COLL_ALGO_HIERARCHICAL,
        COLL_ALGO_PIPELINED_TREE, COLL_ALGO_AUTO };
    size_t k;
    int r;
    printf("coll demo: %d ranks as threads\n\n", P);
    printf("MindSpore primitives, as rank 0 prints them:\n");
    coll_threads_init(&world, P, 0);
    coll_threads_run(&world, primitives, 0);
    coll_threads_destroy(&world);

    printf("\nall-reduce of %d floats (%d bytes), every algorithm, checked on every rank:\n", N, N * 4);
    printf("  %-20s %14s %10s %12s\n", "algorithm", "max bytes sent", "max rounds", "vs ring");
    for (k = 0; k < sizeof algos / sizeof algos[0]; k++) {
        uint64_t bytes = 0, rounds = 0;
        static uint64_t ring_bytes;
        current = algos[k];
        coll_threads_init(&world, P, 0);
        coll_threads_run(&world, one_allreduce, 0);
        coll_threads_destroy(&world);
        for (r = 0; r < P; r++) {
            if (counters[r].bytes_sent > bytes) bytes = counters[r].bytes_sent;
            if (counters[r].rounds > rounds) rounds = counters[r].rounds;
        }
        if (current == COLL_ALGO_RING) ring_bytes = bytes;
        printf("  %-20s %14llu %10llu %11.2fx\n", coll_algo_name(current),
               (unsigned long long)bytes, (unsigned long long)rounds,
               ring_bytes ? (double)bytes / (double)ring_bytes : 1.0);
    }
    printf("\n(segments of %u bytes; hierarchical uses groups of 2; auto picks by the α-β-γ model)\n",
           (unsigned)(sizeof scratch[0] / 2));
    printf(wrong ? "\ndemo: WRONG RESULTS\n" : "\ndemo: all results correct\n");
    return wrong;
}
