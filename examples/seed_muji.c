/* seed_muji.c - caffe2's muji tree all-reduce, for any number of ranks.

   muji.py all-reduces blobs on 2, 4 or 8 GPUs by pairwise levels:
       2 GPUs:  0r <- 0 + 1;                           then 1r <- 0r
       4 GPUs:  0r <- 0 + 1, 2r <- 2 + 3; 0r <- 0r + 2r; then 2r <- 0r; 1r <- 0r, 3r <- 2r
       8 GPUs:  the same with a third level, the GPUs in two peer-access
                groups of 4 ({0..3}, {4..7}) and one copy between them
   and for any other count falls back to a flat loop through GPU 0 (p - 1
   serial adds, then p - 1 copies).

   coll's COLL_ALGO_TREE is a binomial reduce then a binomial broadcast for
   ANY rank count: on 2, 4, 8 ranks it makes muji's pattern (printed below,
   step by step, from coll_describe - the schedule itself, not a drawing of
   it), and on 3, 5, 6 ranks, where muji went flat, it still needs only
   ceil(lg p) levels each way. COLL_ALGO_HIERARCHICAL with groups of 4 is
   muji's 8-GPU layout made general: reduce inside each group of 4, all-
   reduce between the group leaders, broadcast back inside the groups, so
   only the leaders cross the slow link between groups.

   Ranks are threads (ports/coll_threads.h); every rank checks its result
   against a plain loop. Run: make seed-muji
*/
#define _POSIX_C_SOURCE 200809L
#define COLL_IMPLEMENTATION
#include "coll.h"
#define COLL_THREADS_IMPLEMENTATION
#include "ports/coll_threads.h"

#include <stdio.h>
#include <string.h>

enum { MAXP = 8, N = 1000 };

static coll_threads world;

typedef struct job {
    int p, group;
    coll_algo algo;
    int rc[MAXP], ok[MAXP];
} job;

/* One "GPU": its blob holds rank + 1 + (i % 7); all-reduce it in place. */
static int blob_rank(int rank, void *arg)
{
    static unsigned char scratch[MAXP][1 << 14];
    job *j = (job *)arg;
    coll_port port = coll_threads_port(&world, rank);
    coll_comm c;
    coll_args a;
    float blob[N];
    int i, r, ok = 1;
    for (i = 0; i < N; i++) blob[i] = (float)(rank + 1 + i % 7);
    coll_init(&c, rank, j->p, &port, scratch[rank], sizeof scratch[rank]);
    memset(&a, 0, sizeof a);
    a.kind = COLL_ALLREDUCE; a.algo = j->algo;
    a.src = blob; a.dst = blob; a.count = N;
    a.dtype = COLL_FLOAT32; a.op = COLL_SUM;
    a.group = j->group;
    j->rc[rank] = coll_run(&c, &a);
    for (i = 0; i < N; i++) {                         /* the plain-loop reference */
        float want = 0;
        for (r = 0; r < j->p; r++) want += (float)(r + 1 + i % 7);
        ok &= blob[i] == want;
    }
    j->ok[rank] = ok && j->rc[rank] == COLL_OK;
    return 0;
}

/* The schedule, step by step, in muji's notation: "0 += 1" is rank 0
   adding what rank 1 sent, "1 = 0" rank 1 taking a copy of rank 0's. */
static void print_schedule(int p, coll_algo algo, int group)
{
    coll_comm c[MAXP];
    coll_port port[MAXP];
    coll_args a;
    coll_xfer x;
    int r, s, any = 1;
    memset(&a, 0, sizeof a);
    a.kind = COLL_ALLREDUCE; a.algo = algo; a.count = N;
    a.dtype = COLL_FLOAT32; a.op = COLL_SUM; a.group = group;
    for (r = 0; r < p; r++) {
        port[r] = coll_threads_port(&world, r);          /* describing moves nothing */
        coll_init(&c[r], r, p, &port[r], NULL, 0);
    }
    for (s = 0; any; s++) {
        char line[512];
        size_t len = 0;
        any = 0;
        for (r = 0; r < p; r++) {
            int rc = coll_describe(&c[r], &a, s, &x);
            if (rc < 0) { printf("      (no schedule: %s)\n", coll_result_str(rc)); return; }
            if (rc == 0) continue;
            any = 1;
            if (x.recv_from >= 0 && len < sizeof line - 40)
                len += (size_t)snprintf(line + len, sizeof line - len, "%s%d %s %d",
                                        len ? ", " : "", r, x.reduce ? "+=" : "=", x.recv_from);
        }
        if (any && len) printf("      step %d: %s\n", s, line);
    }
}

/* Runs one all-reduce on p thread-ranks; returns 1 passed, 0 failed, -1 not offered. */
static int run(int p, coll_algo algo, int group)
{
    job j;
    int r, ok = 1;
    memset(&j, 0, sizeof j);
    j.p = p; j.algo = algo; j.group = group;
    coll_threads_init(&world, p, 10000);
    coll_threads_run(&world, blob_rank, &j);
    coll_threads_destroy(&world);
    if (j.rc[0] == COLL_ERR_NOSYS) return -1;
    for (r = 0; r < p; r++) ok &= j.ok[r];
    if (!ok)
        for (r = 0; r < p; r++)
            if (!j.ok[r]) printf("      rank %d: %s\n", r, j.rc[r] ? coll_result_str(j.rc[r]) : "wrong sum");
    return ok;
}

int main(void)
{
    static const int counts[] = { 2, 4, 8, 3, 5, 6 };
    static const int hier[][2] = { { 8, 4 }, { 6, 4 } };      /* ranks, group size */
    int i, passed = 0, failed = 0, missing = 0;
    printf("muji tree all-reduce, %d floats per blob, ranks as threads:\n", N);
    for (i = 0; i < 6; i++) {
        int p = counts[i], rc;
        printf("  tree, %d ranks%s\n", p, i < 3 ? " (muji's own case)" : " (muji: flat fallback)");
        coll_threads_init(&world, p, 10000);
        print_schedule(p, COLL_ALGO_TREE, 0);
        coll_threads_destroy(&world);
        rc = run(p, COLL_ALGO_TREE, 0);
        printf("      every rank holds the sum: %s\n", rc > 0 ? "yes" : rc < 0 ? "NOT OFFERED" : "NO");
        if (rc > 0) passed++; else if (rc < 0) missing++; else failed++;
    }
    for (i = 0; i < 2; i++) {
        int p = hier[i][0], g = hier[i][1], rc;
        printf("  hierarchical, %d ranks in groups of %d%s\n", p, g,
               p == 8 ? " (muji's two peer-access groups)" : " (a short last group)");
        coll_threads_init(&world, p, 10000);
        print_schedule(p, COLL_ALGO_HIERARCHICAL, g);
        coll_threads_destroy(&world);
        rc = run(p, COLL_ALGO_HIERARCHICAL, g);
        if (rc < 0)
            printf("      *** COLL_ALGO_HIERARCHICAL answered COLL_ERR_NOSYS: NOT RUN, not counted ***\n");
        else
            printf("      every rank holds the sum: %s\n", rc ? "yes" : "NO");
        if (rc > 0) passed++; else if (rc < 0) missing++; else failed++;
    }
    if (missing) printf("*** %d case(s) not offered by the library: not counted as passes ***\n", missing);
    printf("seed-muji: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
