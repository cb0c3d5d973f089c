/* floor.c - the direct all-reduce, reduce-scatter and all-gather at the
   memory floor, with no library: what any shared-memory implementation of
   them could reach on this machine.

       build/bench/floor [-n ranks,...] [-s sizes] [-c collectives] [-r runs] [-T ms] [-B 0|1] [-b] [-k]

   Ranks are threads over buffers they all see. A call (float32 sum of n
   bytes, each rank its own input and output) is two shots:
     1. rank r reduces its 1/p share of the vector straight from every
        rank's input into its own output (no copy first, no scratch);
     2. a spin barrier (C11 atomics); then rank r copies the other p - 1
        sums out of their owners' outputs into its own.
   A second barrier ends the call: the next call's sums overwrite what the
   peers may still be copying. Per rank that is n(p-1)/p + n/p bytes read
   and n/p written in the reduction, n(p-1)/p read and written in the
   copy: the least memory traffic an all-reduce has, and the fewest
   hand-offs (two barriers). Nothing waits on a message, a lock or a
   system call, so the time is the memory's, the barrier's, and the
   scheduler's: a waiter polls FLOOR_SPIN times (16, ~1 us) between
   yields of its core, and naps after FLOOR_YIELDS (64) yields. The
   kernel often keeps two ranks on one CPU, where a waiter that spins
   longer before yielding holds up the peer it waits for. The folds are
   written so that -O2 vectorizes them, as coll.h's kernels are.

   -c allreduce,reduce_scatter,allgather picks the collectives (default:
   allreduce alone). Their sizes are bench_coll's (bench_common.h): n,
   the row's bytes, is the whole vector of the all-reduce, the whole input
   of the reduce-scatter (p blocks of n/p) and the whole output of the
   all-gather (p blocks), a block rounded down to whole floats (at least
   one) and the row saying the bytes moved; above 64 MiB only the
   all-reduce is run, as in bench_coll. Each is one bare loop and one
   barrier at its end (after it no rank reads a peer's buffer, so the
   caller may write its input again):
     reduce_scatter  rank r folds block r of every rank's input straight
                     into its output (reads n, writes n/p);
     allgather       rank r copies every rank's input block (its own too)
                     into its place in r's output (reads n, writes n);
   each rank starting at a different peer, the fold in 8 KiB pieces as in
   the all-reduce.

   -B 1 binds rank r to the r-th CPU this process may use (round robin),
   as MPI launchers do; off by default, as in the threads port: under
   other programs' load a bound rank waits for its one CPU (2 MiB at 2
   ranks: 1.26 ms bound, 0.21 unbound, minutes apart).

   Each (ranks, size) row: `runs` runs (-r, 5), each of back-to-back calls
   for about -T ms (20; at least 3 calls), timed by rank 0 from a barrier
   to a barrier; the median run's time per call is reported with the
   fastest and slowest run. GB/s counts each rank's input and output once
   (read and written): 2n bytes for the all-reduce, n + n/p for the
   reduce-scatter and the all-gather.
   Inputs are small integers, so every sum is exact; after the timed calls
   every rank's output is checked against a plain loop (check: ok|FAIL).

   Output: a table (ranks, bytes, time_us, GBps, min_us, max_us, check;
   with a collective column first when -c names more than the all-reduce)
   with the command line and the load on top; -b prints the bench table's
   rows instead (impl floor, collective allreduce | reduce_scatter |
   allgather, algo direct; algbw = n / time, busbw = algbw x 2(p-1)/p for
   the all-reduce, x (p-1)/p for the others, as bench_coll's), for
   bench/goals.sh and bench/ab.sh.
   -k: check only, each collective at vectors (all-reduce) or blocks of
   0..67 floats at 1..5 ranks and a few back-to-back calls each, and that
   the check sees one wrong float, then "floor: N passed, N failed".
   Sizes default to 8 B..256 MiB by x4 (with 64 KiB and 64 MiB); -s takes
   a list with K/M suffixes. */
#define _GNU_SOURCE                /* sched_setaffinity, CPU_SET (-B) */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define FLOOR_MAX_RANKS 16
#define FLOOR_MAX_SIZES 64
#ifndef FLOOR_SPIN
#define FLOOR_SPIN 16              /* polls (~1 us) before a barrier waiter yields */
#endif
#define FLOOR_BLOCK 2048           /* floats reduced per block (8 KiB: in L1) */
#define FLOOR_LINE 64

static void floor_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* A sense-free barrier: the last to arrive resets the count and moves the
   generation on; the others poll the generation. Each word on a line of
   its own, so arrivals do not slow the pollers' reads. */
typedef struct floor_barrier {
    _Alignas(FLOOR_LINE) atomic_uint count;
    _Alignas(FLOOR_LINE) atomic_uint gen;
    unsigned n;
} floor_barrier;

/* A waiter polls FLOOR_SPIN times between two yields, and after
   FLOOR_YIELDS yields naps 50 us at a time instead, as the threads port's
   window sync does: where ranks outnumber the cores, a waiter that only
   yields keeps taking the CPU its peers need to arrive. */
#define FLOOR_YIELDS 64
static const struct timespec floor_nap = { 0, 50000 };

static void floor_wait(floor_barrier *b)
{
    unsigned g = atomic_load_explicit(&b->gen, memory_order_acquire), i = 0;
    if (atomic_fetch_add_explicit(&b->count, 1, memory_order_acq_rel) == b->n - 1) {
        atomic_store_explicit(&b->count, 0, memory_order_relaxed);
        atomic_store_explicit(&b->gen, g + 1, memory_order_release);
        return;
    }
    while (atomic_load_explicit(&b->gen, memory_order_acquire) == g) {
        if (++i % FLOOR_SPIN) floor_pause();
        else if (i < FLOOR_YIELDS * FLOOR_SPIN) sched_yield();
        else nanosleep(&floor_nap, NULL);       /* long: stop taking CPUs */
    }
}

/* What rank 0 tells the others at each barrier-separated round. */
enum { CMD_CALLS, CMD_QUIT };

/* The collectives, named as bench_coll's rows name them. */
enum { FK_ALLREDUCE, FK_REDUCE_SCATTER, FK_ALLGATHER, FK_COUNT };
static const char *const floor_kind_names[FK_COUNT] = { "allreduce", "reduce_scatter", "allgather" };
#define FLOOR_OTHER_MAX ((size_t)64 << 20)   /* bench_common.h's BENCH_OTHER_MAX */

typedef struct floor_world {
    int p;
    int kind;                      /* FK_*                                  */
    size_t count;                  /* floats per vector (all-reduce) or block */
    float *in[FLOOR_MAX_RANKS], *out[FLOOR_MAX_RANKS];
    floor_barrier bar;
    int cmd;                       /* written by rank 0 between barriers    */
    long calls;
} floor_world;

/* Rank q's share: [lo, hi) of the vector, 16-float aligned boundaries. */
static void floor_share(const floor_world *w, int q, size_t *lo, size_t *hi)
{
    size_t chunk = (w->count + (size_t)w->p - 1) / (size_t)w->p;
    chunk = (chunk + 15) / 16 * 16;
    *lo = (size_t)q * chunk < w->count ? (size_t)q * chunk : w->count;
    *hi = *lo + chunk < w->count ? *lo + chunk : w->count;
}

/* The folds, in runs of FLOOR_VEC floats and a tail: a loop of a fixed
   count is one a compiler vectorizes at -O2 (GCC 12 leaves a plain loop
   of unknown count scalar there, which made the fold the floor's limit,
   not the memory). */
#define FLOOR_VEC 16
static void floor_sum2(float *restrict d, const float *restrict a, const float *restrict b, size_t n)
{
    size_t i = 0, j;
    for (; i + FLOOR_VEC <= n; i += FLOOR_VEC)
        for (j = 0; j < FLOOR_VEC; j++) d[i + j] = a[i + j] + b[i + j];
    for (; i < n; i++) d[i] = a[i] + b[i];
}

static void floor_add(float *restrict d, const float *restrict a, size_t n)
{
    size_t i = 0, j;
    for (; i + FLOOR_VEC <= n; i += FLOOR_VEC)
        for (j = 0; j < FLOOR_VEC; j++) d[i + j] += a[i + j];
    for (; i < n; i++) d[i] += a[i];
}

/* Floats in a rank's input and output. */
static size_t floor_in_elems(const floor_world *w)
{
    return w->kind == FK_REDUCE_SCATTER ? w->count * (size_t)w->p : w->count;
}
static size_t floor_out_elems(const floor_world *w)
{
    return w->kind == FK_ALLGATHER ? w->count * (size_t)w->p : w->count;
}

/* One reduce-scatter, rank r's part: block r of every input, folded. */
static void floor_call_rs(floor_world *w, int r)
{
    size_t n = w->count, off = (size_t)r * n, b, e;
    int q;
    float *o = w->out[r];
    for (b = 0; b < n; b = e) {
        e = b + FLOOR_BLOCK < n ? b + FLOOR_BLOCK : n;
        if (w->p == 1) memcpy(o + b, w->in[0] + off + b, (e - b) * sizeof(float));
        else floor_sum2(o + b, w->in[r] + off + b, w->in[(r + 1) % w->p] + off + b, e - b);
        for (q = 2; q < w->p; q++) floor_add(o + b, w->in[(r + q) % w->p] + off + b, e - b);
    }
    floor_wait(&w->bar);
}

/* One all-gather, rank r's part: every input's block into its place. */
static void floor_call_ag(floor_world *w, int r)
{
    size_t n = w->count;
    int q;
    float *o = w->out[r];
    for (q = 0; q < w->p; q++) {
        int s = (r + q) % w->p;                /* start at a different owner each */
        if (n) memcpy(o + (size_t)s * n, w->in[s], n * sizeof(float));
    }
    floor_wait(&w->bar);
}

/* One all-reduce, rank r's part. */
static void floor_call_ar(floor_world *w, int r)
{
    size_t lo, hi, b, e;
    int q;
    float *o = w->out[r];
    floor_share(w, r, &lo, &hi);
    for (b = lo; b < hi; b = e) {              /* 1: my share, from every input */
        e = b + FLOOR_BLOCK < hi ? b + FLOOR_BLOCK : hi;
        if (w->p == 1) memcpy(o + b, w->in[0] + b, (e - b) * sizeof(float));
        else floor_sum2(o + b, w->in[0] + b, w->in[1] + b, e - b);
        for (q = 2; q < w->p; q++) floor_add(o + b, w->in[q] + b, e - b);
    }
    floor_wait(&w->bar);
    for (q = 1; q < w->p; q++) {               /* 2: the others' sums */
        int s = (r + q) % w->p;                /* start at a different owner each */
        floor_share(w, s, &lo, &hi);
        if (hi > lo) memcpy(o + lo, w->out[s] + lo, (hi - lo) * sizeof(float));
    }
    floor_wait(&w->bar);
}

static void floor_call(floor_world *w, int r)
{
    if (w->kind == FK_REDUCE_SCATTER) floor_call_rs(w, r);
    else if (w->kind == FK_ALLGATHER) floor_call_ag(w, r);
    else floor_call_ar(w, r);
}

typedef struct floor_rank { floor_world *w; int r; } floor_rank;

static int floor_bind_on;              /* -B 1: rank r keeps to the r-th allowed CPU */
static cpu_set_t floor_allowed;

static void floor_bind(int r)
{
    int c, seen = 0, n = CPU_COUNT(&floor_allowed);
    cpu_set_t one;
    if (n < 1) return;
    if (!floor_bind_on) {
        sched_setaffinity(0, sizeof floor_allowed, &floor_allowed);
        return;
    }
    for (c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &floor_allowed) || seen++ != r % n) continue;
        CPU_ZERO(&one);
        CPU_SET(c, &one);
        sched_setaffinity(0, sizeof one, &one);
        return;
    }
}

static void *floor_main(void *arg)
{
    floor_rank *me = (floor_rank *)arg;
    floor_world *w = me->w;
    floor_bind(me->r);
    for (;;) {
        long i;
        floor_wait(&w->bar);                   /* rank 0 has set cmd, calls */
        if (w->cmd == CMD_QUIT) return NULL;
        for (i = 0; i < w->calls; i++) floor_call(w, me->r);
        floor_wait(&w->bar);
    }
}

static double floor_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Rank 0 (the main thread): `calls` back-to-back calls, timed. */
static double floor_round(floor_world *w, long calls)
{
    double t0, t1;
    long i;
    w->cmd = CMD_CALLS;
    w->calls = calls;
    floor_wait(&w->bar);
    t0 = floor_now();
    for (i = 0; i < calls; i++) floor_call(w, 0);
    t1 = floor_now();
    floor_wait(&w->bar);
    return t1 - t0;
}

static float floor_value(int r, size_t i) { return (float)((i * 7u + (size_t)r * 5u) % 23u); }

/* Inputs set, outputs poisoned. */
static void floor_fill(floor_world *w)
{
    int r;
    size_t i;
    size_t ni = floor_in_elems(w), no = floor_out_elems(w);
    for (r = 0; r < w->p; r++) {
        for (i = 0; i < ni; i++) w->in[r][i] = floor_value(r, i);
        memset(w->out[r], 0xff, no * sizeof(float));   /* NaN */
    }
}

/* Every rank's output against a plain loop; the number of wrong floats. */
static size_t floor_check(const floor_world *w)
{
    size_t i, n = w->count, bad = 0;
    int r, q;
    if (w->kind == FK_REDUCE_SCATTER) {
        for (r = 0; r < w->p; r++)
            for (i = 0; i < n; i++) {
                float s = 0;
                for (q = 0; q < w->p; q++) s += floor_value(q, (size_t)r * n + i);
                bad += w->out[r][i] != s;
            }
    } else if (w->kind == FK_ALLGATHER) {
        for (r = 0; r < w->p; r++)
            for (q = 0; q < w->p; q++)
                for (i = 0; i < n; i++) bad += w->out[r][(size_t)q * n + i] != floor_value(q, i);
    } else {
        for (i = 0; i < n; i++) {
            float s = 0;
            for (q = 0; q < w->p; q++) s += floor_value(q, i);
            for (r = 0; r < w->p; r++) bad += w->out[r][i] != s;
        }
    }
    return bad;
}

static int floor_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* A world of p ranks over vectors of up to `maxcount` floats: the other
   p - 1 ranks wait at the barrier for rank 0's commands. */
typedef struct floor_run {
    floor_world w;
    pthread_t t[FLOOR_MAX_RANKS];
    floor_rank rk[FLOOR_MAX_RANKS];
} floor_run;

static int floor_start(floor_run *f, int p, size_t maxcount)
{
    int r;
    memset(&f->w, 0, sizeof f->w);
    f->w.p = p;
    f->w.bar.n = (unsigned)p;
    atomic_init(&f->w.bar.count, 0);
    atomic_init(&f->w.bar.gen, 0);
    for (r = 0; r < p; r++) {
        /* + 1: malloc(0) may return NULL */
        f->w.in[r] = (float *)malloc((maxcount + 1) * sizeof(float));
        f->w.out[r] = (float *)malloc((maxcount + 1) * sizeof(float));
        if (!f->w.in[r] || !f->w.out[r]) {
            fprintf(stderr, "floor: out of memory (%d ranks x 2 x %zu bytes)\n", p, maxcount * sizeof(float));
            return -1;
        }
    }
    floor_bind(0);                             /* rank 0 is the main thread */
    for (r = 1; r < p; r++) {
        f->rk[r].w = &f->w;
        f->rk[r].r = r;
        if (pthread_create(&f->t[r], NULL, floor_main, &f->rk[r]) != 0) {
            fprintf(stderr, "floor: pthread_create failed\n");
            exit(1);
        }
    }
    return 0;
}

static void floor_stop(floor_run *f)
{
    int r;
    f->w.cmd = CMD_QUIT;
    floor_wait(&f->w.bar);
    for (r = 1; r < f->w.p; r++) pthread_join(f->t[r], NULL);
    for (r = 0; r < f->w.p; r++) { free(f->w.in[r]); free(f->w.out[r]); }
}

static int floor_selftest(void)
{
    static floor_run f;
    int p, k, passed = 0, failed = 0;
    size_t n;
    for (p = 1; p <= 5; p++) {
        if (floor_start(&f, p, 67 * (size_t)p) != 0) return 1;
        for (k = 0; k < FK_COUNT; k++)
            for (n = 0; n <= 67; n++) {
                size_t bad, last;
                f.w.kind = k;
                f.w.count = n;
                floor_fill(&f.w);
                (void)floor_round(&f.w, 1 + (long)(n % 3));
                bad = floor_check(&f.w);
                if (bad) { failed++; printf("FAIL %s p=%d count=%zu: %zu wrong floats\n", floor_kind_names[k], p, n, bad); }
                else passed++;
                if (n > 0) {                  /* the check itself sees one wrong float */
                    last = floor_out_elems(&f.w) - 1;
                    f.w.out[p - 1][last] += 1.0f;
                    if (floor_check(&f.w) == 1) passed++;
                    else { failed++; printf("FAIL %s p=%d count=%zu: a wrong float went unseen\n", floor_kind_names[k], p, n); }
                }
            }
        floor_stop(&f);
    }
    printf("floor: %d passed, %d failed\n", passed, failed);
    return failed != 0 || passed == 0;
}

static size_t floor_parse_size(const char *s)
{
    char *e;
    double v = strtod(s, &e);
    if (*e == 'K' || *e == 'k') v *= 1024;
    else if (*e == 'M' || *e == 'm') v *= 1048576;
    else if (*e == 'G' || *e == 'g') v *= 1073741824.0;
    return (size_t)v;
}

static void floor_usage(void)
{
    fprintf(stderr, "usage: floor [-n ranks,...] [-s sizes] [-c collectives] [-r runs] [-T ms] [-B 0|1] [-b] [-k]\n"
                    "  -n  rank counts (default 2,4)   -s  sizes with K/M (default 8 B..256 MiB)\n"
                    "  -c  allreduce,reduce_scatter,allgather (default allreduce)\n"
                    "  -r  runs per row, median (5)    -T  ms of calls per run (20)\n"
                    "  -B  1: bind rank r to the r-th allowed CPU (default 0)\n"
                    "  -b  bench table rows            -k  check only, tiny sizes\n");
}

int main(int argc, char **argv)
{
    int ranks[FLOOR_MAX_RANKS], nranks = 0, nsizes = 0, runs = 5, bench = 0, failed = 0, i, j, a, k;
    int kinds[FK_COUNT], nkinds = 0, other = 0;
    size_t sizes[FLOOR_MAX_SIZES], maxb = 0;
    double T = 0.020;
    double load[3] = {0, 0, 0};
    FILE *la;
    for (a = 1; a < argc; a++) {
        const char *o = argv[a], *v = a + 1 < argc ? argv[a + 1] : NULL;
        if (strcmp(o, "-k") == 0) return floor_selftest();
        if (strcmp(o, "-b") == 0) { bench = 1; continue; }
        if (!v || o[0] != '-' || o[2]) { floor_usage(); return 2; }
        a++;
        if (o[1] == 'c') {
            char buf[512], *tok;
            snprintf(buf, sizeof buf, "%s", v);
            for (tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                for (k = 0; k < FK_COUNT && strcmp(tok, floor_kind_names[k]) != 0; k++) {}
                if (k == FK_COUNT) { floor_usage(); return 2; }
                for (i = 0; i < nkinds && kinds[i] != k; i++) {}
                if (i == nkinds) kinds[nkinds++] = k;
            }
        } else if (o[1] == 'n' || o[1] == 's') {
            char buf[512], *tok;
            snprintf(buf, sizeof buf, "%s", v);
            for (tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                if (o[1] == 'n' && nranks < FLOOR_MAX_RANKS) {
                    ranks[nranks] = atoi(tok);
                    if (ranks[nranks] < 1 || ranks[nranks] > FLOOR_MAX_RANKS) { floor_usage(); return 2; }
                    nranks++;
                } else if (o[1] == 's' && nsizes < FLOOR_MAX_SIZES)
                    sizes[nsizes++] = floor_parse_size(tok) / sizeof(float) * sizeof(float);
            }
        } else if (o[1] == 'r') runs = atoi(v);
        else if (o[1] == 'B') floor_bind_on = atoi(v) != 0;
        else if (o[1] == 'T') T = atof(v) * 1e-3;
        else { floor_usage(); return 2; }
    }
    if (runs < 1) runs = 1;
    if (sched_getaffinity(0, sizeof floor_allowed, &floor_allowed) != 0) floor_bind_on = 0;
    if (!nranks) { ranks[0] = 2; ranks[1] = 4; nranks = 2; }
    if (!nkinds) kinds[nkinds++] = FK_ALLREDUCE;
    for (k = 0; k < nkinds; k++) other |= kinds[k] != FK_ALLREDUCE;
    if (!nsizes) {
        size_t s;
        for (s = 8; s <= (64u << 20); s *= 4) {
            sizes[nsizes++] = s;
            if (s == (32u << 10)) sizes[nsizes++] = 64u << 10;   /* as bench_coll's std */
            if (s == (32u << 20)) sizes[nsizes++] = 64u << 20;
        }
        sizes[nsizes++] = 256u << 20;
    }
    for (i = 0; i < nsizes; i++) if (sizes[i] > maxb) maxb = sizes[i];
    if (!bench) {
        la = fopen("/proc/loadavg", "r");
        if (la) { if (fscanf(la, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3) load[0] = -1; fclose(la); }
        printf("#");
        for (a = 0; a < argc; a++) printf(" %s", argv[a]);
        printf("\n# direct %s, float32 sum, median of %d runs; load %.2f %.2f %.2f\n",
               other ? "all-reduce (two-shot), reduce-scatter, all-gather" : "two-shot all-reduce",
               runs, load[0], load[1], load[2]);
        printf("%sranks\tbytes\ttime_us\tGBps\tmin_us\tmax_us\tcheck\n", other ? "collective\t" : "");
    }
    for (j = 0; j < nranks; j++) {
        static floor_run f;
        int p = ranks[j];
        /* + p: a block is at least one float, so p of them may pass maxb */
        if (floor_start(&f, p, maxb / sizeof(float) + (size_t)p) != 0) return 1;
        for (k = 0; k < nkinds; k++)
        for (i = 0; i < nsizes; i++) {
            double t[64], warm, med, fac, io;
            long calls;
            int m, nr = runs < 64 ? runs : 64, kind = kinds[k];
            size_t bad, bytes;
            const char *name = floor_kind_names[kind];
            if (kind != FK_ALLREDUCE && sizes[i] > FLOOR_OTHER_MAX) continue;
            f.w.kind = kind;
            f.w.count = sizes[i] / sizeof(float);
            if (kind != FK_ALLREDUCE) {        /* bench_count: a block, at least one float */
                f.w.count /= (size_t)p;
                if (!f.w.count) f.w.count = 1;
            }
            bytes = (kind == FK_ALLREDUCE ? f.w.count : f.w.count * (size_t)p) * sizeof(float);
            fac = kind == FK_ALLREDUCE ? 2.0 * (p - 1) / p : (double)(p - 1) / p;
            io = kind == FK_ALLREDUCE ? 2.0 * (double)bytes : (double)bytes + (double)bytes / p;
            floor_fill(&f.w);
            warm = floor_round(&f.w, 1);       /* first touch of the pages */
            warm = floor_round(&f.w, 1);
            calls = warm > 0 ? (long)(T / warm) : 1000000;
            if (calls < 3) calls = 3;
            if (calls > 1000000) calls = 1000000;
            for (m = 0; m < nr; m++) t[m] = floor_round(&f.w, calls) / (double)calls;
            bad = floor_check(&f.w);
            qsort(t, (size_t)nr, sizeof t[0], floor_cmp);
            med = nr % 2 ? t[nr / 2] : 0.5 * (t[nr / 2 - 1] + t[nr / 2]);
            if (bench)
                printf("floor\t%s\tdirect\t%d\t%zu\t%.3f\t%.3f\t%.3f\t%s\n", name, p, bytes, med * 1e6,
                       (double)bytes / med / 1e9, (double)bytes / med / 1e9 * fac, bad ? "FAIL" : "ok");
            else
                printf("%s%s%d\t%zu\t%.3f\t%.3f\t%.3f\t%.3f\t%s\n", other ? name : "", other ? "\t" : "", p, bytes,
                       med * 1e6, io / med / 1e9, t[0] * 1e6, t[nr - 1] * 1e6, bad ? "FAIL" : "ok");
            fflush(stdout);
            if (bad) { fprintf(stderr, "floor: %s p=%d %zu B: %zu wrong floats\n", name, p, bytes, bad); failed = 1; }
        }
        floor_stop(&f);
    }
    return failed;
}
