/* test_port_sim.c - the CUDA port's protocol and stream ordering, on the CPU

   ports/coll_cuda_port.h linked against sim_cudart.c instead of the CUDA
   runtime: streams run late and in a random interleaving, so every result
   here is right only if the port's events order each copy after the work it
   depends on and before the work that depends on it. The memops enqueue
   host functions on the rank's stream (cudaLaunchHostFunc), standing in for
   coll_cuda.h's kernels, so coll.h's reduce after recv is ordered exactly
   as on a GPU.

   Checked: every collective x algorithm over 2, 3, 4, 5 and 8 ranks (one or
   two simulated GPUs), small segments so the port's slot ring wraps many
   times; in place; avg/min/max/prod; hierarchical groups; the resumable
   (polling) path; isend/irecv/wait directly, with a full slot ring
   answering COLL_AGAIN; size mismatch, timeout, abort; and a negative
   control - the same collectives with the event waits switched off must
   go wrong, or the test would prove nothing. */
#define _POSIX_C_SOURCE 200809L
#define COLL_IMPLEMENTATION
#include "coll.h"
#define COLL_CUDA_PORT_IMPLEMENTATION
#include "ports/coll_cuda_port.h"
#include "sim_memops.h"
#include "a2av.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int g_pass, g_fail;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

static void check(int ok, const char *what)
{
    pthread_mutex_lock(&g_lock);
    if (ok) g_pass++;
    else { g_fail++; printf("FAIL: %s\n", what); fflush(stdout); }
    pthread_mutex_unlock(&g_lock);
}

/* ---- memops (sim_memops.h): host loops, run in stream order like kernels --- */

static void CUDART_CB run_reduce(void *p)
{
    sim_job *j = (sim_job *)p;
    size_t i;
    if (j->t == COLL_FLOAT32) {
        float *o = (float *)j->out;
        const float *a = (const float *)j->a, *b = (const float *)j->b;
        for (i = 0; i < j->n; i++)
            switch (j->op) {
            case COLL_PROD: o[i] = a[i] * b[i]; break;
            case COLL_MIN: o[i] = b[i] < a[i] ? b[i] : a[i]; break;
            case COLL_MAX: o[i] = b[i] > a[i] ? b[i] : a[i]; break;
            default: o[i] = a[i] + b[i]; break;
            }
    } else {
        int32_t *o = (int32_t *)j->out;
        const int32_t *a = (const int32_t *)j->a, *b = (const int32_t *)j->b;
        for (i = 0; i < j->n; i++)
            switch (j->op) {
            case COLL_PROD: o[i] = (int32_t)((uint32_t)a[i] * (uint32_t)b[i]); break;
            case COLL_MIN: o[i] = b[i] < a[i] ? b[i] : a[i]; break;
            case COLL_MAX: o[i] = b[i] > a[i] ? b[i] : a[i]; break;
            default: o[i] = (int32_t)((uint32_t)a[i] + (uint32_t)b[i]); break;
            }
    }
    free(j);
}

static void CUDART_CB run_scale(void *p)
{
    sim_job *j = (sim_job *)p;
    size_t i;
    if (j->t == COLL_FLOAT32) for (i = 0; i < j->n; i++) ((float *)j->out)[i] /= (float)j->d;
    else for (i = 0; i < j->n; i++) ((int32_t *)j->out)[i] /= (int32_t)j->d;
    free(j);
}

/* ---- cases ----------------------------------------------------------------- */

#define MAXR 8
#define SCRATCH 1024            /* 512-byte segments: many per message */

typedef struct tcase {
    coll_kind kind;
    coll_algo algo;
    coll_dtype dt;
    coll_op op;
    size_t count;
    int root, inplace, group, resumable;
} tcase;

/* Small integers: every fold is exact in float32, in any order. */
static int32_t gen(const tcase *c, int q, size_t i)
{
    uint32_t h = (uint32_t)(q * 2654435761u) ^ (uint32_t)(i * 40503u) ^ (uint32_t)(c->op * 977u);
    h ^= h >> 13; h *= 0x5bd1e995u; h ^= h >> 15;
    if (c->op == COLL_PROD) return (int32_t)(h % 3) - 1 == 0 ? 2 : (int32_t)(h % 3) - 1;
    if (c->op == COLL_MIN || c->op == COLL_MAX) return (int32_t)(h % 201) - 100;
    return (int32_t)(h % 17) - 8;
}

static void put(const tcase *c, void *p, size_t i, int32_t v)
{
    if (c->dt == COLL_FLOAT32) ((float *)p)[i] = (float)v; else ((int32_t *)p)[i] = v;
}
static int same(const tcase *c, const void *p, size_t i, double want)
{
    return c->dt == COLL_FLOAT32 ? ((const float *)p)[i] == (float)want
                                 : ((const int32_t *)p)[i] == (int32_t)want;
}

static double fold(const tcase *c, int n, size_t i)
{
    double acc = gen(c, 0, i);
    int q;
    for (q = 1; q < n; q++) {
        double x = gen(c, q, i);
        switch (c->op) {
        case COLL_PROD: acc *= x; break;
        case COLL_MIN: acc = x < acc ? x : acc; break;
        case COLL_MAX: acc = x > acc ? x : acc; break;
        default: acc += x; break;
        }
    }
    if (c->op == COLL_AVG)
        return c->dt == COLL_FLOAT32 ? (double)((float)acc / (float)n) : (double)((int32_t)acc / n);
    return acc;
}

static void vcounts(const tcase *c, int n, size_t *cnt, size_t *off)
{
    size_t o = 0;
    int q;
    for (q = 0; q < n; q++) { cnt[q] = q == 1 ? 0 : c->count + (size_t)q * 3; off[q] = o; o += cnt[q]; }
}

static double a2av_want(const tcase *c, int n, int r, const size_t *m, size_t j)
{
    int from;
    size_t at = a2av_source(m, n, r, j, &from);
    return gen(c, from, at);
}

typedef struct world {
    coll_cuda_port port;
    pthread_barrier_t bar;
    int n;
    const tcase *cases;
    int ncases;
    int *rc, *ok;              /* [case * MAXR + rank] */
} world;

static int rank_main(int rank, void *arg)
{
    world *W = (world *)arg;
    int n = W->n, ci;
    size_t big = 8 * 1024 * MAXR + 64, j;
    cudaStream_t st;
    coll_memops mem;
    coll_port port;
    coll_comm comm;
    char *src, *dst, *scratch;

    cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    cudaMalloc((void **)&src, big * 4);
    cudaMalloc((void **)&dst, big * 4);
    cudaMalloc((void **)&scratch, SCRATCH);
    mem.ctx = st; mem.copy = m_copy; mem.reduce = m_reduce; mem.scale = m_scale;
    port = coll_cuda_port_port(&W->port, rank, st);
    coll_init(&comm, rank, n, &port, scratch, SCRATCH);
    coll_set_memops(&comm, &mem);

    for (ci = 0; ci < W->ncases; ci++) {
        const tcase *c = &W->cases[ci];
        size_t cnt[MAXR], off[MAXR], mat[MAXR * MAXR], in_n = 0, out_n = 0;
        coll_args a;
        char *in = src, *out = dst;
        int rc, good = 1, want_out = 1;

        memset(&a, 0, sizeof a);
        a.kind = c->kind; a.algo = c->algo; a.dtype = c->dt; a.op = c->op;
        a.count = c->count; a.root = c->root; a.group = c->group;
        vcounts(c, n, cnt, off);
        a2av_matrix(c->count, n, mat);
        switch (c->kind) {
        case COLL_ALLREDUCE: in_n = out_n = c->count; break;
        case COLL_REDUCE: in_n = out_n = c->count; want_out = rank == c->root; break;
        case COLL_BROADCAST: out_n = c->count; break;
        case COLL_REDUCE_SCATTER: in_n = c->count * n; out_n = c->count; break;
        case COLL_ALLGATHER: in_n = c->count; out_n = c->count * n; break;
        case COLL_GATHER: in_n = c->count; out_n = c->count * n; want_out = rank == c->root; break;
        case COLL_SCATTER: in_n = rank == c->root ? c->count * n : 0; out_n = c->count; break;
        case COLL_ALLTOALL: in_n = out_n = c->count * n; break;
        case COLL_ALLGATHERV: a.counts = cnt; a.count = 0; in_n = cnt[rank]; out_n = off[n - 1] + cnt[n - 1]; break;
        case COLL_GATHERV: a.counts = cnt; a.count = 0; in_n = cnt[rank]; out_n = off[n - 1] + cnt[n - 1];
            want_out = rank == c->root; break;
        case COLL_SCATTERV: a.counts = cnt; a.count = 0; in_n = rank == c->root ? off[n - 1] + cnt[n - 1] : 0;
            out_n = cnt[rank]; break;
        case COLL_SCAN: case COLL_EXSCAN: in_n = out_n = c->count; break;
        case COLL_REDUCE_SCATTERV: a.counts = cnt; a.count = 0; in_n = off[n - 1] + cnt[n - 1]; out_n = cnt[rank]; break;
        case COLL_ALLTOALLV: a.counts = mat; a.count = 0;
            for (j = 0; j < (size_t)n; j++) { in_n += mat[rank * n + j]; out_n += mat[j * n + rank]; }
            break;
        default: want_out = 0; break;
        }
        memset(src, 0x5A, big * 4);
        memset(dst, 0x5A, big * 4);
        if (c->inplace && (c->kind == COLL_ALLREDUCE || c->kind == COLL_REDUCE)) in = dst;
        if (c->inplace && c->kind == COLL_REDUCE_SCATTER) { in = dst; out = dst + (size_t)rank * c->count * 4; }
        if (c->inplace && c->kind == COLL_ALLGATHER) in = dst + (size_t)rank * c->count * 4;
        for (j = 0; j < in_n; j++) put(c, in, j, gen(c, rank, j));
        if (c->kind == COLL_BROADCAST && rank == c->root)
            for (j = 0; j < c->count; j++) put(c, dst, j, gen(c, rank, j));
        a.src = c->kind == COLL_BROADCAST ? (void *)dst : (void *)in;
        a.dst = out;
        pthread_barrier_wait(&W->bar);

        if (c->resumable) {
            coll_request q;
            rc = coll_start(&q, &comm, &a);
            if (rc == COLL_OK) do { rc = coll_progress(&q); if (rc == COLL_AGAIN) sched_yield(); } while (rc == COLL_AGAIN);
        } else rc = coll_run(&comm, &a);
        if (cudaStreamSynchronize(st) != cudaSuccess) good = 0;   /* deadlock */

        if (rc == COLL_OK && want_out)
            for (j = 0; j < out_n && good; j++) {
                double want;
                size_t q;
                switch (c->kind) {
                case COLL_ALLREDUCE: case COLL_REDUCE: want = fold(c, n, j); break;
                case COLL_BROADCAST: want = gen(c, c->root, j); break;
                case COLL_REDUCE_SCATTER: want = fold(c, n, (size_t)rank * c->count + j); break;
                case COLL_ALLGATHER: case COLL_GATHER: want = gen(c, (int)(j / c->count), j % c->count); break;
                case COLL_SCATTER: want = gen(c, c->root, (size_t)rank * c->count + j); break;
                case COLL_ALLTOALL: want = gen(c, (int)(j / c->count), (size_t)rank * c->count + j % c->count); break;
                case COLL_SCAN: want = fold(c, rank + 1, j); break;
                case COLL_EXSCAN: want = fold(c, rank ? rank : 1, j); break;
                case COLL_SCATTERV: want = gen(c, c->root, off[rank] + j); break;
                case COLL_ALLTOALLV: want = a2av_want(c, n, rank, mat, j); break;
                case COLL_ALLGATHERV: case COLL_GATHERV:
                    for (q = (size_t)n - 1; off[q] > j || cnt[q] == 0; q--) { }
                    want = gen(c, (int)q, j - off[q]); break;
                default: want = fold(c, n, off[rank] + j); break;
                }
                if (!same(c, out, j, want)) good = 0;
            }
        if (!c->inplace)          /* src is const */
            for (j = 0; j < in_n && good; j++)
                if (!same(c, src, j, gen(c, rank, j))) good = 0;
        W->rc[ci * MAXR + rank] = rc;
        W->ok[ci * MAXR + rank] = good;
        pthread_barrier_wait(&W->bar);
    }
    cudaStreamDestroy(st);
    cudaFree(src); cudaFree(dst); cudaFree(scratch);
    return 0;
}

static int add(tcase *v, int k, coll_kind kind, coll_algo algo, coll_dtype dt, coll_op op,
               size_t count, int root, int inplace, int group, int resumable)
{
    if (v) {
        v[k].kind = kind; v[k].algo = algo; v[k].dt = dt; v[k].op = op; v[k].count = count;
        v[k].root = root; v[k].inplace = inplace; v[k].group = group; v[k].resumable = resumable;
    }
    return k + 1;
}

static int make_cases(tcase *v, int n)
{
    static const size_t counts[] = { 1, 37, 1001 };
    static const coll_op ops[] = { COLL_AVG, COLL_MIN, COLL_MAX, COLL_PROD };
    int k = 0, kind, algo, ci, ip, g, oi;
    for (kind = 0; kind < COLL_KIND_COUNT; kind++)
        for (algo = 0; algo < COLL_ALGO_COUNT; algo++)
            for (ci = 0; ci < 3; ci++) {
                int inplace_ok = kind == COLL_ALLREDUCE || kind == COLL_REDUCE ||
                                 kind == COLL_REDUCE_SCATTER || kind == COLL_ALLGATHER;
                for (ip = 0; ip <= inplace_ok; ip++)
                    k = add(v, k, (coll_kind)kind, (coll_algo)algo, COLL_FLOAT32, COLL_SUM,
                            counts[ci], ci ? n - 1 : 0, ip, 0, ci == 2 && ip == 0);
            }
    for (kind = 0; kind < COLL_KIND_COUNT; kind++) {
        if (kind != COLL_ALLREDUCE && kind != COLL_REDUCE && kind != COLL_REDUCE_SCATTER) continue;
        for (algo = 0; algo < COLL_ALGO_COUNT; algo++)
            for (oi = 0; oi < 4; oi++) {
                k = add(v, k, (coll_kind)kind, (coll_algo)algo, COLL_FLOAT32, ops[oi], 301, n / 2, 0, 0, 0);
                k = add(v, k, (coll_kind)kind, (coll_algo)algo, COLL_INT32, ops[oi], 301, 0, 0, 0, 0);
            }
    }
    for (g = 1; g <= n; g++)
        if (n % g == 0) k = add(v, k, COLL_ALLREDUCE, COLL_ALGO_HIERARCHICAL, COLL_FLOAT32, COLL_SUM,
                                1001, 0, g % 2, g, 0);
    return k;
}

/* Runs every case on n ranks; returns the number of wrong results. */
static int run_world(int n, const int *devices, int quiet_fail, const char *label)
{
    static world W;
    tcase *cases;
    int ci, r, bad = 0, passed = 0, skipped = 0;
    char msg[256];

    W.n = n;
    W.ncases = make_cases(NULL, n);
    cases = (tcase *)malloc(sizeof(tcase) * (size_t)W.ncases);
    make_cases(cases, n);
    W.cases = cases;
    W.rc = (int *)calloc((size_t)W.ncases * MAXR, sizeof(int));
    W.ok = (int *)calloc((size_t)W.ncases * MAXR, sizeof(int));
    pthread_barrier_init(&W.bar, NULL, (unsigned)n);
    if (coll_cuda_port_init(&W.port, n, devices, 5000) != COLL_OK) { check(0, "port init"); return 1; }
    coll_cuda_port_run(&W.port, rank_main, &W);
    coll_cuda_port_close(&W.port);
    for (ci = 0; ci < W.ncases; ci++) {
        const tcase *c = &cases[ci];
        int nosys = 1, ok = 1;
        for (r = 0; r < n; r++) {
            if (W.rc[ci * MAXR + r] != COLL_ERR_NOSYS) nosys = 0;
            if (W.rc[ci * MAXR + r] != COLL_OK && W.rc[ci * MAXR + r] != COLL_ERR_NOSYS) ok = 0;
            if (!W.ok[ci * MAXR + r]) ok = 0;
        }
        if (nosys && ok) { skipped++; continue; }
        if (ok) { passed++; continue; }
        bad++;
        if (!quiet_fail) {
            snprintf(msg, sizeof msg, "%s: %s/%s %s op %d count %zu root %d%s group %d rc[0]=%d",
                     label, coll_kind_name(c->kind), coll_algo_name(c->algo),
                     c->dt == COLL_FLOAT32 ? "float32" : "int32", (int)c->op, c->count, c->root,
                     c->inplace ? " in-place" : "", c->group, W.rc[ci * MAXR]);
            check(0, msg);
        }
    }
    if (!quiet_fail) {
        pthread_mutex_lock(&g_lock);
        g_pass += passed;
        pthread_mutex_unlock(&g_lock);
        printf("%s: %d cases passed, %d failed, %d skipped (not offered by coll.h)\n",
               label, passed, bad, skipped);
    }
    pthread_barrier_destroy(&W.bar);
    free(cases); free(W.rc); free(W.ok);
    return bad;
}

/* ---- the port's own calls ---------------------------------------------------- */

typedef struct direct_test {
    coll_cuda_port *w;
    pthread_barrier_t bar;
    int mode;
    int rc[2];
    int again_before, again_full, data_ok;
} direct_test;

static int direct_rank(int rank, void *arg)
{
    direct_test *T = (direct_test *)arg;
    cudaStream_t st;
    coll_port p;
    int32_t *buf, h[COLL_CUDA_PORT_DEPTH + 1], i, k;
    cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking);
    cudaMalloc((void **)&buf, 4 * 64 * (COLL_CUDA_PORT_DEPTH + 1));
    p = coll_cuda_port_port(T->w, rank, st);
    if (T->mode == 0) {            /* non-blocking calls and a full ring */
        if (rank == 0) {
            for (k = 0; k < COLL_CUDA_PORT_DEPTH + 1; k++)
                for (i = 0; i < 64; i++) buf[k * 64 + i] = k * 1000 + i;
            for (k = 0; k < COLL_CUDA_PORT_DEPTH; k++)
                if (p.isend(p.ctx, 1, buf + k * 64, 256, &h[k])) T->rc[0] = -1;
            T->again_before = p.wait(p.ctx, h[0], 0) == COLL_AGAIN;   /* nobody received yet */
            T->again_full = p.isend(p.ctx, 1, buf + COLL_CUDA_PORT_DEPTH * 64, 256,
                                    &h[COLL_CUDA_PORT_DEPTH]) == COLL_AGAIN;
            pthread_barrier_wait(&T->bar);
            for (k = 0; k < COLL_CUDA_PORT_DEPTH; k++) T->rc[0] |= p.wait(p.ctx, h[k], 1);
            T->rc[0] |= p.send(p.ctx, 1, buf + COLL_CUDA_PORT_DEPTH * 64, 256);  /* the slot is free now */
        } else {
            pthread_barrier_wait(&T->bar);
            for (k = 0; k < COLL_CUDA_PORT_DEPTH + 1; k++)
                T->rc[1] |= p.recv(p.ctx, 0, buf + k * 64, 256);
            cudaStreamSynchronize(st);
            T->data_ok = 1;
            for (k = 0; k < COLL_CUDA_PORT_DEPTH + 1; k++)
                for (i = 0; i < 64; i++) if (buf[k * 64 + i] != k * 1000 + i) T->data_ok = 0;
        }
    } else if (T->mode == 1) {     /* size mismatch */
        T->rc[rank] = rank == 0 ? p.send(p.ctx, 1, buf, 512) : p.recv(p.ctx, 0, buf, 256);
    } else if (T->mode == 2) {     /* nobody answers */
        T->rc[rank] = rank == 0 ? p.send(p.ctx, 1, buf, 512) : 0;
    } else {                       /* abort while a rank waits */
        if (rank == 0) T->rc[0] = p.recv(p.ctx, 1, buf, 64);
        else { struct timespec d = { 0, 50000000L }; nanosleep(&d, NULL); coll_cuda_port_abort(T->w); T->rc[1] = p.send(p.ctx, 0, buf, 64); }
    }
    cudaStreamSynchronize(st);
    cudaStreamDestroy(st);
    cudaFree(buf);
    return 0;
}

static void test_direct(void)
{
    static coll_cuda_port w;
    direct_test T;
    int mode;
    for (mode = 0; mode < 4; mode++) {
        memset(&T, 0, sizeof T);
        T.w = &w;
        T.mode = mode;
        pthread_barrier_init(&T.bar, NULL, 2);
        coll_cuda_port_init(&w, 2, NULL, mode == 2 ? 200 : 5000);
        coll_cuda_port_run(&w, direct_rank, &T);
        coll_cuda_port_close(&w);
        pthread_barrier_destroy(&T.bar);
        switch (mode) {
        case 0:
            check(T.again_before, "wait(block=0) answers COLL_AGAIN before the receiver posts");
            check(T.again_full, "isend with every slot of the pair busy answers COLL_AGAIN");
            check(T.rc[0] == 0 && T.rc[1] == 0 && T.data_ok,
                  "DEPTH+1 messages through isend/irecv/wait arrive in order, intact");
            break;
        case 1:
            check(T.rc[0] == COLL_ERR_MISMATCH && T.rc[1] == COLL_ERR_MISMATCH,
                  "size mismatch reported to both sides");
            break;
        case 2: check(T.rc[0] == COLL_ERR_TIMEOUT, "an unanswered send times out"); break;
        default:
            check(T.rc[0] == COLL_ERR_ABORTED && T.rc[1] == COLL_ERR_ABORTED,
                  "abort wakes a waiting rank and fails later calls");
        }
    }
}

int main(void)
{
    static const int nr[] = { 2, 3, 4, 5, 8 };
    int i, r, dev[MAXR], bad, seed;
    char label[64];

    setvbuf(stdout, NULL, _IOLBF, 0);
    sim_ndev = 2;
    test_direct();
    for (seed = 1; seed <= 2; seed++)
        for (i = 0; i < 5; i++) {
            int two = i % 2 == 0;                 /* 2, 4, 8 ranks: two GPUs */
            for (r = 0; r < nr[i]; r++) dev[r] = two ? r * 2 / nr[i] : 0;
            sim_seed((uint64_t)seed * 1000 + (uint64_t)i);
            snprintf(label, sizeof label, "%d ranks on %d simulated GPU%s, seed %d",
                     nr[i], two ? 2 : 1, two ? "s" : "", seed);
            run_world(nr[i], dev, 0, label);
        }
    check(sim_peer_copies > 0, "ranks on different GPUs used peer copies");
    check(sim_deadlocks == 0, "no stream ever waited on an event that could not complete");

    {   /* negative control: without the event waits the same runs go wrong */
        static coll_cuda_port w;
        int two[4] = { 0, 0, 1, 1 };
        int tries = 0;
        sim_skip_waits = 1;
        do {                      /* interleavings are random: up to 3 runs */
            sim_seed(7 + (uint64_t)tries);
            bad = run_world(4, two, 1, "no waits");
        } while (bad == 0 && ++tries < 3);
        sim_skip_waits = 0;
        printf("negative control: with cudaStreamWaitEvent switched off, %d cases went wrong\n", bad);
        check(bad > 0, "the simulator catches a port that skips its event waits");
        coll_cuda_port_init(&w, 4, NULL, 100);
        check(coll_cuda_port_group(&w) == 4, "one GPU: the whole world is one peer group");
        coll_cuda_port_close(&w);
    }
    printf("cuda-port-sim: %d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
