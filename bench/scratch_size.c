/* scratch_size.c - what the scratch size costs: all-reduce time against
   scratch bytes, 2 ranks as threads (ports/coll_threads.h).

       make bench-scratch
       build/bench/scratch_size [bytes] [runs] [scratch sizes...]

   Defaults: 1 MiB of float32 sums, 7 timed runs per scratch size, sizes
   32 B, 256 B, 4 KiB, 64 KiB and 1 MiB. Scratch fixes the message segment
   (scratch_bytes / 2): every segment is one hand-off through the port, so
   a tiny scratch turns one large message into many small ones and the
   per-message cost (alpha) dominates. Each run times enough calls to last
   about 0.2 s and reports the time per call; the sizes take turns, run by
   run, so a busy machine slows them alike. The table gives the median of
   the runs and its ratio to the largest scratch. The first and last
   elements of every call's result are checked on both ranks. */
#define COLL_IMPLEMENTATION
#define COLL_THREADS_IMPLEMENTATION
#include "../ports/coll_threads.h"     /* first: it asks for POSIX itself */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define P 2
#define MAX_SIZES 16

static coll_threads world;
static unsigned char *scratch[P];
static size_t scratch_bytes;
static float *buf[P];
static size_t count;
static long iters;
static double elapsed;           /* rank 0's seconds for `iters` calls   */
static int wrong;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int body(int rank, void *arg)
{
    coll_comm c;
    coll_port port = coll_threads_port(&world, rank);
    double t0;
    size_t i;
    long k;
    int rc;
    (void)arg;
    rc = coll_init(&c, rank, P, &port, scratch[rank], scratch_bytes);
    if (rc != COLL_OK) return rc;
    for (i = 0; i < count; i++) buf[rank][i] = (float)(rank + 1);
    if ((rc = coll_barrier(&c, COLL_ALGO_AUTO)) != COLL_OK) return rc;
    t0 = now();
    for (k = 0; k < iters; k++) {
        /* in place: the first and last elements are reset to rank + 1 and
           checked each call; the others keep growing, harmless for timing */
        rc = coll_allreduce(&c, buf[rank], buf[rank], count, COLL_FLOAT32, COLL_SUM,
                            COLL_ALGO_AUTO);
        if (rc != COLL_OK) return rc;
        if (buf[rank][0] != 3.0f || buf[rank][count - 1] != 3.0f) wrong = 1;
        buf[rank][0] = buf[rank][count - 1] = (float)(rank + 1);
    }
    if (rank == 0) elapsed = now() - t0;
    return COLL_OK;
}

static int run(long n)
{
    int rc;
    iters = n;
    rc = coll_threads_run(&world, body, NULL);
    if (rc != COLL_OK) fprintf(stderr, "scratch_size: %s\n", coll_result_str(rc));
    return rc;
}

/* Scratch of `bytes` for every rank, each its own buffer. */
static int use(size_t bytes)
{
    int r;
    scratch_bytes = bytes;
    for (r = 0; r < P; r++) {
        free(scratch[r]);
        scratch[r] = (unsigned char *)malloc(bytes ? bytes : 1);
        if (!scratch[r]) return -1;
    }
    return 0;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    size_t sizes[MAX_SIZES] = { 32, 256, 4096, 65536, 1048576 };
    int nsizes = 5, runs = 7, s, r, a, big = 0;
    size_t bytes = 1048576;
    double med[MAX_SIZES], t[MAX_SIZES][64];
    long n[MAX_SIZES];

    if (argc > 1) bytes = (size_t)strtoul(argv[1], NULL, 0);
    if (argc > 2) runs = atoi(argv[2]);
    if (runs < 1 || runs > 64 || bytes < 8) { fprintf(stderr, "usage: %s [bytes] [runs 1..64] [scratch...]\n", argv[0]); return 2; }
    if (argc > 3) {
        for (nsizes = 0, a = 3; a < argc && nsizes < MAX_SIZES; a++)
            sizes[nsizes++] = (size_t)strtoul(argv[a], NULL, 0);
    }
    count = bytes / sizeof(float);
    if (coll_threads_init(&world, P, 60000) != COLL_OK) return 1;
    for (r = 0; r < P; r++) {
        buf[r] = (float *)malloc(count * sizeof(float));
        if (!buf[r]) return 1;
    }
    printf("all-reduce, float32 sum, %zu bytes, %d ranks (threads), AUTO; median of %d runs\n",
           bytes, P, runs);
    printf("| scratch | segment | time per call | vs largest scratch |\n|---:|---:|---:|---:|\n");
    for (s = 0; s < nsizes; s++) {                     /* warm up, calibrate */
        if (use(sizes[s]) != 0 || run(1) != COLL_OK) return 1;
        n[s] = (long)(0.2 / (elapsed > 1e-7 ? elapsed : 1e-7));
        if (n[s] < 1) n[s] = 1;
        if (sizes[s] > sizes[big]) big = s;
    }
    /* the sizes take turns within each round, so a change in the machine's
       load falls on all of them alike and the ratios hold */
    for (r = 0; r < runs; r++)
        for (s = 0; s < nsizes; s++) {
            if (use(sizes[s]) != 0 || run(n[s]) != COLL_OK) return 1;
            t[s][r] = elapsed / (double)n[s];
        }
    for (s = 0; s < nsizes; s++) {
        qsort(t[s], (size_t)runs, sizeof t[s][0], cmp);
        med[s] = t[s][runs / 2];
    }
    for (s = 0; s < nsizes; s++) {
        size_t seg = sizes[s] / 2 >= 64 ? (sizes[s] / 2) & ~(size_t)63 : sizes[s] / 2;
        printf("| %zu B | %zu B | %.1f us | %.1fx |\n", sizes[s], seg, med[s] * 1e6,
               med[s] / med[big]);
    }
    for (r = 0; r < P; r++) { free(buf[r]); free(scratch[r]); }
    coll_threads_destroy(&world);
    if (wrong) { printf("WRONG results\n"); return 1; }
    return 0;
}
