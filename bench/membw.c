/* membw.c - the machine's memory bandwidth: the ceiling for any collective
   between ranks that share memory.

       build/bench/membw [-M array_MiB] [-r passes] [-t threads,...]

   Two kernels over arrays far larger than the last-level cache (512 MiB
   by default; smaller arrays partly hit cache and read faster):
     memcpy   dst = src                 counts 2 bytes of traffic per byte
     add      a[i] += b[i] (float32)    counts 3 bytes of traffic per byte
   which are what an all-reduce does to memory: move a block, or fold a
   received block into the local one. Each thread takes a contiguous slice;
   a pass is timed from a barrier to a barrier and the best pass is
   reported (the ceiling, as STREAM does).

   Rows (the bench table's columns): impl=membw, collective=memcpy|add,
   algo=threads, ranks=threads, bytes=array size, time_us=one pass,
   algbw=array bytes per second, busbw=counted traffic per second. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include "bench_common.h"

#define MAX_THREADS 16

typedef struct job {
    int kernel;                   /* 0 memcpy, 1 add */
    int nthreads, passes;
    size_t n;                     /* floats per array */
    float *a, *b;
    pthread_barrier_t bar;
    double best;
} job;

typedef struct worker { job *j; int id; } worker;

/* a[i] += b[i] in blocks of 8 with a fixed inner trip count, as coll.h's
   reduction kernels are written: vector code at -O2 (gcc's cheap
   vectoriser leaves a plain loop of unknown length scalar, which would
   make the ceiling lower than what coll.h itself reaches in cache). */
static void add_kernel(float *restrict a, const float *restrict b, size_t n)
{
    size_t i = 0, j;
    for (; i + 8 <= n; i += 8)
        for (j = 0; j < 8; j++) a[i + j] += b[i + j];
    for (; i < n; i++) a[i] += b[i];
}

static void *run(void *arg)
{
    worker *w = (worker *)arg;
    job *j = w->j;
    size_t lo = j->n * (size_t)w->id / (size_t)j->nthreads;
    size_t hi = j->n * (size_t)(w->id + 1) / (size_t)j->nthreads;
    int pass;
    float *a = j->a, *b = j->b;
    for (pass = 0; pass < j->passes; pass++) {
        double t0;
        pthread_barrier_wait(&j->bar);
        t0 = bench_now();
        if (j->kernel == 0) memcpy(a + lo, b + lo, (hi - lo) * sizeof(float));
        else add_kernel(a + lo, b + lo, hi - lo);
        pthread_barrier_wait(&j->bar);
        if (w->id == 0) {
            double t = bench_now() - t0;
            if (pass == 0 || t < j->best) j->best = t;
        }
    }
    return NULL;
}

/* Spreads the first touch over the threads too, so each slice's pages are
   where its thread runs. */
static void *init(void *arg)
{
    worker *w = (worker *)arg;
    job *j = w->j;
    size_t lo = j->n * (size_t)w->id / (size_t)j->nthreads;
    size_t hi = j->n * (size_t)(w->id + 1) / (size_t)j->nthreads, i;
    for (i = lo; i < hi; i++) { j->a[i] = (float)(i % 7); j->b[i] = 1.0f; }
    return NULL;
}

static void spawn(job *j, void *(*fn)(void *))
{
    pthread_t t[MAX_THREADS];
    worker w[MAX_THREADS];
    int i;
    for (i = 0; i < j->nthreads; i++) {
        w[i].j = j; w[i].id = i;
        if (pthread_create(&t[i], NULL, fn, &w[i]) != 0) {
            fprintf(stderr, "membw: pthread_create failed\n");
            exit(1);
        }
    }
    for (i = 0; i < j->nthreads; i++) pthread_join(t[i], NULL);
}

int main(int argc, char **argv)
{
    size_t mib = 512, i, bad;
    int passes = 5, threads[8] = {1, 2}, nt = 2, k, t;
    job j;
    for (k = 1; k < argc; k++) {
        if (k + 1 >= argc) goto usage;
        if (!strcmp(argv[k], "-M")) mib = (size_t)atol(argv[++k]);
        else if (!strcmp(argv[k], "-r")) passes = atoi(argv[++k]);
        else if (!strcmp(argv[k], "-t")) {
            nt = bench_parse_ints(argv[++k], threads, 8);
            if (nt <= 0) goto usage;
        } else goto usage;
    }
    if (mib < 1 || passes < 1) goto usage;
    memset(&j, 0, sizeof j);
    j.n = mib * (1u << 20) / sizeof(float);
    j.a = (float *)malloc(j.n * sizeof(float));
    j.b = (float *)malloc(j.n * sizeof(float));
    if (!j.a || !j.b) { fprintf(stderr, "membw: cannot allocate 2 x %zu MiB\n", mib); return 1; }
    j.passes = passes;
    for (t = 0; t < nt; t++) {
        j.nthreads = threads[t] < MAX_THREADS ? threads[t] : MAX_THREADS;
        pthread_barrier_init(&j.bar, NULL, (unsigned)j.nthreads);
        for (j.kernel = 0; j.kernel < 2; j.kernel++) {
            size_t bytes = j.n * sizeof(float);
            spawn(&j, init);
            spawn(&j, run);
            /* memcpy: a == b == 1; add: a == i % 7 + passes (exact) */
            for (i = 0, bad = 0; i < j.n; i++)
                bad += j.a[i] != (j.kernel ? (float)(i % 7) + (float)passes : 1.0f);
            bench_row("membw", j.kernel ? "add" : "memcpy", "threads", j.nthreads, bytes,
                      j.best, j.kernel ? 3.0 : 2.0, bad == 0);
        }
        pthread_barrier_destroy(&j.bar);
    }
    free(j.a);
    free(j.b);
    return 0;
usage:
    fprintf(stderr, "usage: membw [-M array_MiB] [-r passes] [-t threads,...]\n");
    return 2;
}
