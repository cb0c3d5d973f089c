/* bench_cuda.cu - how fast coll_cuda.h's kernels and the CUDA port are

   1. Reduce-kernel bandwidth, out = a + b per dtype, counting the bytes the
      kernel must move (two reads and one write per element), next to
      cudaMemcpy device-to-device measured in the same run (one read and
      one write per byte). The copy is the ceiling: a reduce that matches
      its GB/s is memory-bound, as it should be. float32 is also measured
      with all three pointers misaligned alike (head/packs/tail path) and
      misaligned differently (scalar path).
   2. All-reduce over ports/coll_cuda_port.h, 2, 4 and 8 ranks on GPU 0,
      in place, in the nccl-tests convention:
        algbw = bytes / time,  busbw = algbw * 2(p-1)/p
      where time is host wall clock from a barrier to the last rank's
      stream being idle, averaged over back-to-back calls: the port's
      host-side hand-offs are part of the cost. "auto+tune" is AUTO on a
      communicator that coll_tune measured first (its clock drains the
      rank's stream), and the picks of both AUTOs are printed per size.

   RUN  make bench-cuda            (--quick: smaller sizes, fewer calls)
   Without a GPU it prints "NO GPU: CUDA benchmark NOT RUN" and exits 77.
*/
#include "coll.h"
#include "coll_cuda.h"
#include "ports/coll_cuda_port.h"

#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
    fprintf(stderr, "FATAL: %s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
    exit(1); } } while (0)

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const char *dt_name(coll_dtype t)
{
    static const char *n[] = { "int8", "uint8", "int32", "uint32", "int64", "uint64",
                               "float16", "bfloat16", "float32", "float64" };
    return n[t];
}

/* ---- 1. kernels ---------------------------------------------------------- */

/* Seconds per call of the reduce (or, with dtype < 0, of the copy). */
static double time_op(cudaStream_t st, coll_cuda_ctx *ctx, int dtype, void *o, const void *a,
                      const void *b, size_t bytes, int iters)
{
    cudaEvent_t e0, e1;
    float ms;
    int i, rc = 0;
    size_t n = dtype < 0 ? 0 : bytes / coll_dtype_size((coll_dtype)dtype);
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (i = -2; i < iters; i++) {                 /* two warm-up calls */
        if (i == 0) CK(cudaEventRecord(e0, st));
        if (dtype < 0) CK(cudaMemcpyAsync(o, a, bytes, cudaMemcpyDeviceToDevice, st));
        else rc |= coll_cuda_reduce(ctx, o, a, b, n, (coll_dtype)dtype, COLL_SUM);
    }
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms, e0, e1));
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
    if (rc) { fprintf(stderr, "FATAL: coll_cuda_reduce: %s\n", coll_cuda_result_str(rc)); exit(1); }
    return (double)ms * 1e-3 / iters;
}

static void bench_kernels(size_t bytes, int iters)
{
    cudaStream_t st;
    coll_cuda_ctx ctx;
    unsigned char *a, *b, *o;
    double tc, t;
    int dt;

    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    coll_cuda_ctx_init(&ctx, -1, (struct CUstream_st *)st);
    CK(cudaMalloc((void **)&a, bytes + 64));
    CK(cudaMalloc((void **)&b, bytes + 64));
    CK(cudaMalloc((void **)&o, bytes + 64));
    CK(cudaMemset(a, 0, bytes + 64));      /* zeros: a valid value of every type */
    CK(cudaMemset(b, 0, bytes + 64));
    CK(cudaDeviceSynchronize());

    tc = time_op(st, &ctx, -1, o, a, NULL, bytes, iters);
    printf("\n# reduce kernels, %zu MiB per array, %d calls each\n", bytes >> 20, iters);
    printf("# %-22s %12s %14s %14s\n", "what", "time_us", "GB/s_counted", "vs_memcpy");
    printf("  %-22s %12.1f %14.1f %14s\n", "cudaMemcpy D2D (r+w)", tc * 1e6, 2.0 * (double)bytes / tc / 1e9, "1.00");
    for (dt = 0; dt < 10; dt++) {
        t = time_op(st, &ctx, dt, o, a, b, bytes, iters);
        printf("  %-22s %12.1f %14.1f %14.2f\n", dt_name((coll_dtype)dt), t * 1e6,
               3.0 * (double)bytes / t / 1e9, (3.0 * (double)bytes / t) / (2.0 * (double)bytes / tc));
    }
    t = time_op(st, &ctx, COLL_FLOAT32, o + 4, a + 4, b + 4, bytes, iters);
    printf("  %-22s %12.1f %14.1f %14.2f\n", "float32 all +4 bytes", t * 1e6,
           3.0 * (double)bytes / t / 1e9, (3.0 * (double)bytes / t) / (2.0 * (double)bytes / tc));
    t = time_op(st, &ctx, COLL_FLOAT32, o + 8, a + 4, b, bytes, iters);
    printf("  %-22s %12.1f %14.1f %14.2f\n", "float32 mixed (scalar)", t * 1e6,
           3.0 * (double)bytes / t / 1e9, (3.0 * (double)bytes / t) / (2.0 * (double)bytes / tc));
    fflush(stdout);
    CK(cudaFree(a)); CK(cudaFree(b)); CK(cudaFree(o));
    CK(cudaStreamDestroy(st));
}

/* ---- 2. all-reduce over the port ----------------------------------------- */

#define SCRATCH_BYTES (8u << 20)

typedef struct bench_world {
    coll_cuda_port port;
    int n;
    pthread_barrier_t bar;
    size_t max_bytes;
    const size_t *sizes;
    int nsizes;
    const coll_algo *algos;
    int nalgos;
    int quick;
    int iters;                 /* calls in the timed loop, set by rank 0 */
    coll_algo pick[8][2];      /* [size]: AUTO's choice, untuned and tuned  */
    double *secs;              /* [size][algo], filled by rank 0; < 0: not offered */
} bench_world;

/* On a failed call: where every ordered pair of ranks stands in the port,
   so that a hang reads from the output. */
static void dump_port(const coll_cuda_port *w)
{
    static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    int s, d, k;
    pthread_mutex_lock(&m);
    fprintf(stderr, "# port: failed=%d\n", w->failed);
    for (s = 0; s < w->nranks; s++)
        for (d = 0; d < w->nranks; d++) {
            if (!w->next_send[s][d] && !w->next_recv[s][d]) continue;
            fprintf(stderr, "#   %d->%d sent %llu received %llu:", s, d,
                    w->next_send[s][d], w->next_recv[s][d]);
            for (k = 0; k < COLL_CUDA_PORT_DEPTH; k++) {
                const coll_cuda_port__slot *q = &w->slot[s][d][k];
                fprintf(stderr, " [seq %llu posted %d%d released %d%d state %d bytes %zu/%zu]",
                        q->seq, q->posted[0], q->posted[1], q->released[0], q->released[1],
                        q->state, q->bytes[0], q->bytes[1]);
            }
            fprintf(stderr, "\n");
        }
    pthread_mutex_unlock(&m);
}

/* coll_tune's clock: the rank's stream drained first, so a timed span
   holds the copies and kernels it enqueued, not just their launches. */
static double stream_now(void *st)
{
    CK(cudaStreamSynchronize((cudaStream_t)st));
    return now_s();
}

static void call_failed(bench_world *B, int rank, size_t bytes, coll_algo algo, int it, int rc)
{
    fprintf(stderr, "FATAL: rank %d: allreduce of %zu bytes, %s, call %d: %s\n", rank, bytes,
            coll_algo_name(algo), it, coll_cuda_result_str(rc));
    dump_port(&B->port);
    exit(1);
}

static int bench_rank(int rank, void *arg)
{
    bench_world *B = (bench_world *)arg;
    cudaStream_t st;
    coll_cuda_ctx ctx;
    coll_memops mem;
    coll_port port;
    coll_comm c;
    void *buf, *scratch, *scratch_t;
    coll_comm ct;              /* the same ranks, tuned by coll_tune: AUTO+tune */
    int si, ai, it, iters, rc;

    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    CK(cudaMalloc(&buf, B->max_bytes));
    CK(cudaMalloc(&scratch, SCRATCH_BYTES));
    CK(cudaMalloc(&scratch_t, SCRATCH_BYTES));
    CK(cudaMemset(buf, 0, B->max_bytes));
    CK(cudaDeviceSynchronize());
    coll_cuda_ctx_init(&ctx, -1, (struct CUstream_st *)st);
    mem = coll_cuda_memops(&ctx);
    port = coll_cuda_port_port(&B->port, rank, (struct CUstream_st *)st);
    if ((rc = coll_init(&c, rank, B->n, &port, scratch, SCRATCH_BYTES)) != COLL_OK ||
        (rc = coll_set_memops(&c, &mem)) != COLL_OK)
        call_failed(B, rank, 0, COLL_ALGO_AUTO, -2, rc);
    if ((rc = coll_init(&ct, rank, B->n, &port, scratch_t, SCRATCH_BYTES)) != COLL_OK ||
        (rc = coll_set_memops(&ct, &mem)) != COLL_OK ||
        (rc = coll_tune(&ct, stream_now, st)) != COLL_OK)
        call_failed(B, rank, 0, COLL_ALGO_AUTO, -3, rc);
    if (rank == 0)
        for (si = 0; si < B->nsizes; si++) {
            coll_args a;
            memset(&a, 0, sizeof a);
            a.kind = COLL_ALLREDUCE; a.dtype = COLL_FLOAT32; a.op = COLL_SUM;
            a.count = B->sizes[si] / 4; a.src = buf; a.dst = buf;
            B->pick[si][0] = coll_choose(&c, &a);
            B->pick[si][1] = coll_choose(&ct, &a);
        }

    for (si = 0; si < B->nsizes; si++)
        for (ai = 0; ai < B->nalgos; ai++) {
            size_t count = B->sizes[si] / 4;
            coll_comm *cc = ai == B->nalgos - 1 ? &ct : &c;   /* the last row: tuned */
            double t0 = 0, t1;
            /* one timed call to size the loop at about 0.1 s (0.02 quick) */
            pthread_barrier_wait(&B->bar);
            t0 = now_s();
            rc = coll_allreduce(cc, buf, buf, count, COLL_FLOAT32, COLL_SUM, B->algos[ai]);
            CK(cudaStreamSynchronize(st));
            pthread_barrier_wait(&B->bar);
            t1 = now_s() - t0;
            if (rc == COLL_ERR_NOSYS) { if (rank == 0) B->secs[si * B->nalgos + ai] = -1; continue; }
            if (rc != COLL_OK) call_failed(B, rank, B->sizes[si], B->algos[ai], -1, rc);
            /* rank 0 sizes the loop for everyone: ranks that each timed
               themselves would run different numbers of calls and hang */
            if (rank == 0) {
                iters = (int)((B->quick ? 0.02 : 0.1) / (t1 > 1e-6 ? t1 : 1e-6));
                B->iters = iters < 3 ? 3 : iters > 1000 ? 1000 : iters;
            }
            pthread_barrier_wait(&B->bar);
            iters = B->iters;
            t0 = now_s();
            for (it = 0; it < iters; it++)
                if ((rc = coll_allreduce(cc, buf, buf, count, COLL_FLOAT32, COLL_SUM, B->algos[ai])) != COLL_OK)
                    call_failed(B, rank, B->sizes[si], B->algos[ai], it, rc);
            CK(cudaStreamSynchronize(st));
            pthread_barrier_wait(&B->bar);
            if (rank == 0) B->secs[si * B->nalgos + ai] = (now_s() - t0) / iters;
        }
    CK(cudaFree(buf));
    CK(cudaFree(scratch));
    CK(cudaFree(scratch_t));
    CK(cudaStreamDestroy(st));
    return 0;
}

static void bench_allreduce(int n, int quick)
{
    static const size_t full[] = { 4u << 10, 64u << 10, 1u << 20, 16u << 20, 256u << 20 };
    static const size_t small[] = { 4u << 10, 256u << 10, 16u << 20 };
    static const coll_algo algos[] = { COLL_ALGO_AUTO, COLL_ALGO_RING, COLL_ALGO_TREE,
                                       COLL_ALGO_RABENSEIFNER, COLL_ALGO_NAIVE,
                                       COLL_ALGO_AUTO };     /* on the tuned comm */
    bench_world *B = (bench_world *)calloc(1, sizeof *B);
    int si, ai, rc;

    B->n = n;
    B->quick = quick;
    B->sizes = quick ? small : full;
    B->nsizes = quick ? 3 : 5;
    B->max_bytes = B->sizes[B->nsizes - 1];
    B->algos = algos;
    B->nalgos = (int)(sizeof algos / sizeof algos[0]);
    B->secs = (double *)calloc((size_t)(B->nsizes * B->nalgos), sizeof(double));
    pthread_barrier_init(&B->bar, NULL, (unsigned)n);
    rc = coll_cuda_port_init(&B->port, n, NULL, 15000);
    if (rc != COLL_OK) { fprintf(stderr, "FATAL: port init: %s\n", coll_cuda_result_str(rc)); exit(1); }
    coll_cuda_port_run(&B->port, bench_rank, B);
    coll_cuda_port_close(&B->port);

    printf("\n# all-reduce float32 sum in place, %d ranks on GPU 0 (CUDA port)\n", n);
    printf("# %12s %-14s %12s %12s %12s\n", "bytes", "algorithm", "time_us", "algbw_GB/s", "busbw_GB/s");
    for (si = 0; si < B->nsizes; si++)
        for (ai = 0; ai < B->nalgos; ai++) {
            double t = B->secs[si * B->nalgos + ai], bw;
            if (t < 0) continue;          /* not offered by coll.h */
            bw = (double)B->sizes[si] / t / 1e9;
            printf("  %12zu %-14s %12.1f %12.2f %12.2f\n", B->sizes[si],
                   ai == B->nalgos - 1 ? "auto+tune" : coll_algo_name(algos[ai]),
                   t * 1e6, bw, bw * 2.0 * (n - 1) / n);
        }
    printf("# AUTO picks (default constants / after coll_tune):");
    for (si = 0; si < B->nsizes; si++)
        printf(" %zu %s/%s", B->sizes[si], coll_algo_name(B->pick[si][0]), coll_algo_name(B->pick[si][1]));
    printf("\n");
    fflush(stdout);
    pthread_barrier_destroy(&B->bar);
    free(B->secs);
    free(B);
}

int main(int argc, char **argv)
{
    int ndev = 0, quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    cudaError_t e = cudaGetDeviceCount(&ndev);
    cudaDeviceProp p;

    if (e != cudaSuccess || ndev == 0) {
        printf("\n##################################################\n"
               "##  NO GPU: CUDA benchmark NOT RUN              ##\n"
               "##################################################\n"
               "cudaGetDeviceCount: %s\n\n", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
        fprintf(stderr, "NO GPU: CUDA benchmark NOT RUN\n");
        return 77;
    }
    CK(cudaSetDevice(0));
    CK(cudaGetDeviceProperties(&p, 0));
    printf("# GPU 0: %s, sm_%d%d, %d SMs, %.0f GiB\n", p.name, p.major, p.minor,
           p.multiProcessorCount, (double)p.totalGlobalMem / (1u << 30));
    bench_kernels(quick ? (32u << 20) : (256u << 20), quick ? 5 : 20);
    bench_allreduce(2, quick);
    bench_allreduce(4, quick);
    bench_allreduce(8, quick);
    return 0;
}
