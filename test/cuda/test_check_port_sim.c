/* test_check_port_sim.c - the CUDA port under the public port checker and
   through its lifecycle, on the CPU

   ports/coll_cuda_port.h linked against sim_cudart.c (streams run late, in a
   random interleaving), as in test_port_sim.c, but driven by the checker
   every other port meets (test/check_port.h): every collective and
   algorithm coll.h offers, the sizes, the dtypes and operators, guard
   bytes, inputs left alone, the error cases. The memops enqueue host
   functions on the rank's stream - each dtype's arithmetic from cuda_ref.h,
   standing in for coll_cuda.h's kernels - and the checker synchronises the
   rank's stream after each call (its memops / sync hooks), so a result is
   right only if the port orders each copy by its events. Every rank's slice
   of the checker's arena counts as device memory of the rank's simulated
   GPU (sim_register), so ranks on two GPUs copy peer to peer.

     - the checker at 1, 2, 3, 4, 5 and 8 ranks (1 or 2 simulated GPUs) with
       the port's optional members, at 4 ranks with every dtype and
       operator, and at 3 ranks stripped to send/recv;
     - its negative control: with the event waits switched off
       (sim_skip_waits) the checker must report failures;
     - the lifecycle every port shares: coll_cuda_port_init, _port, a
       barrier and an all-reduce on device buffers, _abort (the next call
       fails, promptly), _close; the port's abort hook (a waiting peer
       hears it at once); the older names _rank and _destroy.

   Ends with "cuda-check-port: N passed, N failed". */
#define _POSIX_C_SOURCE 200809L
#define COLL_IMPLEMENTATION
#include "coll.h"
#define COLL_CUDA_PORT_IMPLEMENTATION
#include "ports/coll_cuda_port.h"
#include "test/check_port.h"
#include "cuda_ref.h"
#include "sim_memops.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXR 8

static unsigned char arena[12u << 20] __attribute__((aligned(16)));

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- memops (sim_memops.h): cuda_ref.h's arithmetic, in stream order ---- */

static void CUDART_CB run_reduce(void *p)
{
    sim_job *j = (sim_job *)p;
    size_t i;
    for (i = 0; i < j->n; i++)
        put_bits(j->t, j->out, i, ref_op(j->t, j->op, get_bits(j->t, j->a, i), get_bits(j->t, j->b, i)));
    free(j);
}

static void CUDART_CB run_scale(void *p)
{
    sim_job *j = (sim_job *)p;
    size_t i;
    for (i = 0; i < j->n; i++) put_bits(j->t, j->out, i, ref_div(j->t, get_bits(j->t, j->out, i), j->d));
    free(j);
}

/* ---- the launcher: ranks as threads of coll_cuda_port_run ------------------ */

typedef struct launch {
    coll_cuda_port w;
    int dev[MAXR];
    int strip;                       /* send and recv only                   */
    cudaStream_t st[MAXR];
    coll_memops mem[MAXR];
    coll_port_check_body body;
    void *arg;
} launch;

static int launch_rank(int rank, void *user)
{
    launch *l = (launch *)user;
    coll_port port;
    int rc;
    if (cudaStreamCreateWithFlags(&l->st[rank], cudaStreamNonBlocking) != cudaSuccess) return -1;
    l->mem[rank].ctx = l->st[rank];
    l->mem[rank].copy = m_copy;
    l->mem[rank].reduce = m_reduce;
    l->mem[rank].scale = m_scale;
    port = coll_cuda_port_port(&l->w, rank, l->st[rank]);
    if (l->strip) {
        port.sendrecv = NULL;
        port.isend = NULL; port.irecv = NULL; port.wait = NULL;
        port.abort = NULL;
    }
    rc = l->body(rank, &port, l->arg);
    cudaStreamSynchronize(l->st[rank]);
    cudaStreamDestroy(l->st[rank]);
    return rc;
}

static int launch_run(void *user, int nranks, coll_port_check_body body, void *arg)
{
    launch *l = (launch *)user;
    size_t share = sizeof arena / (size_t)nranks;
    int r, rc;
    for (r = 0; r < nranks; r++)             /* the checker's slice of rank r */
        if (sim_register(arena + share * (size_t)r, share, l->dev[r]) != 0) return nranks;
    rc = coll_cuda_port_init(&l->w, nranks, l->dev, 5000);
    if (rc == COLL_OK) {
        l->body = body;
        l->arg = arg;
        rc = coll_cuda_port_run(&l->w, launch_rank, l);
        coll_cuda_port_close(&l->w);
    } else rc = nranks;
    cudaDeviceSynchronize();
    for (r = 0; r < nranks; r++) sim_unregister(arena + share * (size_t)r);
    return rc;
}

static const coll_memops *launch_memops(void *user, int rank)
{
    return &((launch *)user)->mem[rank];
}

static int launch_sync(void *user, int rank)
{
    return COLL_CUDA_ERR(cudaStreamSynchronize(((launch *)user)->st[rank]));
}

static unsigned long check(launch *l, coll_port_check *ck, int nranks, int gpus, int strip,
                           int full, int quiet, const char *name)
{
    unsigned long before = coll_test_passed, failed;
    double t0 = now_s();
    int r;
    memset(ck, 0, sizeof *ck);
    for (r = 0; r < nranks; r++) l->dev[r] = r * gpus / nranks;
    l->strip = strip;
    ck->name = name; ck->nranks = nranks; ck->quiet = quiet;
    ck->launch = launch_run; ck->launch_user = l;
    ck->arena = arena; ck->arena_bytes = sizeof arena;
    ck->full = full;
    ck->now = now_s;
    ck->memops = launch_memops; ck->sync = launch_sync; ck->mem_ctx = l;
    failed = coll_port_check_run(ck);
    if (!quiet)
        printf("  %s, %d rank%s on %d simulated GPU%s%s: %lu checks passed, %lu failed, "
               "%lu not available (%.2f s)\n", name, nranks, nranks > 1 ? "s" : "", gpus,
               gpus > 1 ? "s" : "", full ? ", every dtype and op" : "",
               coll_test_passed - before, ck->tally->failed,
               ck->tally->unavailable, now_s() - t0);
    return failed;
}

/* ---- the lifecycle: init, port, use, abort, close ---------------------------- */

typedef struct life {
    coll_cuda_port w;
    int old_names;                   /* coll_cuda_port_rank instead of _port */
    int mode;                        /* 0 use, 1 after abort, 2 the port's hook */
    int rc[MAXR], ok[MAXR], hook[MAXR];
    double secs[MAXR];
} life;

#define LIFE_N 64

static int life_rank(int rank, void *arg)
{
    life *L = (life *)arg;
    int n = L->w.nranks, i;
    cudaStream_t st;
    coll_memops mem;
    coll_port port;
    coll_comm c;
    float *x, *y;
    char *scratch;
    double t0;

    cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    cudaMalloc((void **)&x, LIFE_N * sizeof(float));
    cudaMalloc((void **)&y, LIFE_N * sizeof(float));
    cudaMalloc((void **)&scratch, 1024);
    mem.ctx = st; mem.copy = m_copy; mem.reduce = m_reduce; mem.scale = m_scale;
    port = L->old_names ? coll_cuda_port_rank(&L->w, rank, st) : coll_cuda_port_port(&L->w, rank, st);
    L->hook[rank] = port.abort != NULL;
    t0 = now_s();
    if (L->mode == 2) {                /* rank 1 fails: its hook tells rank 0 */
        if (rank == 0) L->rc[0] = port.recv(port.ctx, 1, x, 16);
        else {
            struct timespec d = { 0, 50000000L };
            nanosleep(&d, NULL);
            port.abort(port.ctx, COLL_ERR_IO);
            L->rc[1] = port.send(port.ctx, 0, x, 16);
        }
    } else {
        for (i = 0; i < LIFE_N; i++) { x[i] = (float)(rank + 1) * (float)(i + 1); y[i] = -1; }
        L->rc[rank] = coll_init(&c, rank, n, &port, scratch, 1024);
        if (L->rc[rank] == COLL_OK) L->rc[rank] = coll_set_memops(&c, &mem);
        if (L->rc[rank] == COLL_OK) L->rc[rank] = coll_barrier(&c, COLL_ALGO_AUTO);
        if (L->rc[rank] == COLL_OK)
            L->rc[rank] = coll_allreduce(&c, x, y, LIFE_N, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
    }
    L->secs[rank] = now_s() - t0;
    L->ok[rank] = cudaStreamSynchronize(st) == cudaSuccess;
    if (L->mode == 0)
        for (i = 0; i < LIFE_N; i++)
            if (y[i] != (float)(n * (n + 1) / 2) * (float)(i + 1)) L->ok[rank] = 0;
    cudaStreamDestroy(st);
    cudaFree(x); cudaFree(y); cudaFree(scratch);
    return 0;
}

static void lifecycle(void)
{
    static life L;
    static const int dev[3] = { 0, 1, 1 };
    int r, old;
    for (old = 0; old <= 1; old++) {
        memset(&L, 0, sizeof L);
        L.old_names = old;
        COLL_CHECK_EQ(coll_cuda_port_init(&L.w, 3, dev, 5000), COLL_OK);
        coll_cuda_port_run(&L.w, life_rank, &L);             /* init, port, use */
        for (r = 0; r < 3; r++)
            COLL_CHECK_MSG(L.rc[r] == COLL_OK && L.ok[r] && L.hook[r],
                           "lifecycle%s rank %d: rc %d, result %s, abort hook %s",
                           old ? " (older names)" : "", r, L.rc[r], L.ok[r] ? "right" : "WRONG",
                           L.hook[r] ? "set" : "NULL");
        coll_cuda_port_abort(&L.w);                             /* abort */
        L.mode = 1;
        coll_cuda_port_run(&L.w, life_rank, &L);
        for (r = 0; r < 3; r++)
            COLL_CHECK_MSG(L.rc[r] < 0 && L.secs[r] < 1.0,
                           "lifecycle rank %d after abort: %d (%s) after %.3f s", r, L.rc[r],
                           coll_result_str(L.rc[r]), L.secs[r]);
        if (old) coll_cuda_port_destroy(&L.w); else coll_cuda_port_close(&L.w);   /* close */
        COLL_CHECK_EQ(L.w.nranks, 0);
    }
    /* the coll_port's abort hook: one rank's failure reaches a waiting peer */
    memset(&L, 0, sizeof L);
    L.mode = 2;
    COLL_CHECK_EQ(coll_cuda_port_init(&L.w, 2, dev + 1, 5000), COLL_OK);
    coll_cuda_port_run(&L.w, life_rank, &L);
    COLL_CHECK_MSG(L.rc[0] == COLL_ERR_ABORTED && L.secs[0] < 1.0,
                   "a waiting rank after its peer's abort hook: %d after %.3f s", L.rc[0], L.secs[0]);
    COLL_CHECK_EQ(L.rc[1], COLL_ERR_ABORTED);
    coll_cuda_port_close(&L.w);
    printf("  lifecycle: init, port, barrier and all-reduce, abort, close; the abort hook\n");
}

int main(void)
{
    static launch l;
    static coll_port_check ck;
    static const int np[] = { 1, 2, 3, 4, 5, 8 };
    unsigned long caught = 0;
    size_t i;
    int tries;

    setvbuf(stdout, NULL, _IOLBF, 0);
    sim_ndev = 2;
    sim_seed(11);
    for (i = 0; i < sizeof np / sizeof np[0]; i++)
        check(&l, &ck, np[i], np[i] % 2 ? 1 : 2, 0, 0, 0, "cuda port");
    check(&l, &ck, 4, 2, 0, 1, 0, "cuda port");
    check(&l, &ck, 3, 2, 1, 0, 0, "cuda port (send/recv only)");
    COLL_CHECK_MSG(sim_peer_copies > 0, "ranks on different GPUs used no peer copies");
    COLL_CHECK_MSG(sim_deadlocks == 0, "%lu stream synchronisations found nothing runnable",
                   sim_deadlocks);

    {   /* negative control: without the event waits the checker must fail */
        unsigned long passed = coll_test_passed, failed = coll_test_failed, na = coll_test_na;
        sim_skip_waits = 1;
        for (tries = 0; tries < 3 && caught == 0; tries++) {   /* interleavings are random */
            sim_seed(100 + (uint64_t)tries);
            caught = check(&l, &ck, 4, 2, 0, 0, 1, "no waits");
        }
        sim_skip_waits = 0;
        coll_test_passed = passed; coll_test_failed = failed; coll_test_na = na;
        COLL_CHECK_MSG(caught > 0, "with cudaStreamWaitEvent switched off the checker saw nothing wrong");
        printf("  negative control: with cudaStreamWaitEvent switched off, %lu failures reported\n",
               caught);
    }

    lifecycle();
    return coll_test_summary("cuda-check-port");
}
