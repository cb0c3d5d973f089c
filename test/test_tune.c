/* coll_tune over the threads port: every rank must end with the same,
   plausible constants (rank 0's measurement, broadcast), and so make the
   same AUTO choice; coll_add_rule must override AUTO for its size range
   only; coll_set_tuning must refuse negative constants. AUTO's memo (the
   last pick, reused when a call repeats): through changes of size,
   tuning and rules, every call must run what coll_choose picks afresh,
   and give the right sum. coll_set_cores (ranks outnumbering cores): AUTO's
   pick must be the same on every rank, leave picks alone where the cores
   suffice, and run and sum right; for calls small enough that the work of
   all ranks decides (not the path's bytes), it must cost least by that
   work, worked out here from every rank's coll_describe steps. */
#define COLL_IMPLEMENTATION
#include "../coll.h"
#define COLL_THREADS_IMPLEMENTATION
#include "../ports/coll_threads.h"
#include <stdio.h>
#include <string.h>
#include <time.h>

#define P 4
static coll_threads world;
static coll_tuning got[P];
static coll_algo small_pick[P], big_pick[P], ruled_small[P], ruled_big[P];
static int rcs[P], passed, failed;
static int memo_calls[P], memo_wrong_algo[P], memo_wrong_sum[P];
static int crowd_calls[P], crowd_wrong[P];
static float buf[P][2][100000];
static unsigned char scratch[P][1 << 16];

#define CHECK(c, msg) do { if (c) passed++; else { failed++; printf("FAIL: %s\n", msg); } } while (0)

static double now(void *ctx)
{
    struct timespec t;
    (void)ctx;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The same sequence on every rank: each all-reduce must run the algorithm
   coll_choose picks now (it bypasses the memo), and sum right. */
static void memo_run(coll_comm *c, int rank)
{
    static const coll_tuning lat = { 1e-3, 1e-12, 0 }, bw = { 1e-12, 1e-6, 1e-6 };
    /* each round ends with the call the next begins with: a memo kept
       across a change would show */
    static const size_t counts[] = { 100000, 2, 1000, 2, 1000, 100000 };
    const coll_tuning *tunes[4];
    coll_args a;
    size_t i, j, k;
    tunes[0] = &c->tune; tunes[1] = &lat; tunes[2] = &bw; tunes[3] = &lat;
    memset(&a, 0, sizeof a);
    a.kind = COLL_ALLREDUCE; a.dtype = COLL_FLOAT32; a.op = COLL_SUM;
    a.src = buf[rank][0]; a.dst = buf[rank][1];
    for (i = 0; i < 5; i++) {
        coll_tuning t = i < 4 ? *tunes[i] : lat;
        if (i < 4) coll_set_tuning(c, &t);
        else coll_add_rule(c, COLL_ALLREDUCE, 400000, 400000, COLL_ALGO_NAIVE);   /* count 100000 */
        for (j = 0; j < sizeof counts / sizeof counts[0]; j++) {
            coll_algo want;
            a.count = counts[j];
            for (k = 0; k < a.count; k++) buf[rank][0][k] = (float)(rank + 1 + (int)(k % 3));
            want = coll_choose(c, &a);
            memo_calls[rank]++;
            if (coll_run(c, &a) != COLL_OK) { memo_wrong_sum[rank]++; continue; }
            if (c->blk.pl.algo != want) memo_wrong_algo[rank]++;
            for (k = 0; k < a.count; k++)
                if (buf[rank][1][k] != (float)(P * (P + 1) / 2 + P * (int)(k % 3))) { memo_wrong_sum[rank]++; break; }
        }
    }
}

static int rank_main(int rank, void *arg)
{
    coll_comm c;
    coll_port port = coll_threads_port(&world, rank);
    coll_args a;
    (void)arg;
    coll_init(&c, rank, P, &port, scratch[rank], sizeof scratch[rank]);
    rcs[rank] = coll_tune(&c, now, 0);
    got[rank] = c.tune;
    memset(&a, 0, sizeof a);
    a.kind = COLL_ALLREDUCE; a.dtype = COLL_FLOAT32; a.op = COLL_SUM;
    a.count = 2; small_pick[rank] = coll_choose(&c, &a);
    a.count = 1 << 22; big_pick[rank] = coll_choose(&c, &a);
    coll_add_rule(&c, COLL_ALLREDUCE, 0, 64, COLL_ALGO_NAIVE);
    a.count = 2; ruled_small[rank] = coll_choose(&c, &a);
    a.count = 1 << 22; ruled_big[rank] = coll_choose(&c, &a);
    memo_run(&c, rank);
    /* crowded: 4 ranks on 2 cores; the call runs what coll_choose picks */
    coll_set_checks(&c, 0);
    coll_set_cores(&c, 2);
    a.src = buf[rank][0]; a.dst = buf[rank][1];
    for (a.count = 2; a.count <= 100000; a.count *= 50) {
        size_t k;
        coll_algo want = coll_choose(&c, &a);
        for (k = 0; k < a.count; k++) buf[rank][0][k] = (float)(rank + 1 + (int)(k % 3));
        crowd_calls[rank]++;
        if (coll_run(&c, &a) != COLL_OK || c.blk.pl.algo != want) { crowd_wrong[rank]++; continue; }
        for (k = 0; k < a.count; k++)
            if (buf[rank][1][k] != (float)(P * (P + 1) / 2 + P * (int)(k % 3))) { crowd_wrong[rank]++; break; }
    }
    return 0;
}

static int no_send(void *x, int p, const void *b, size_t n) { (void)x; (void)p; (void)b; (void)n; return COLL_ERR_IO; }
static int no_recv(void *x, int p, void *b, size_t n) { (void)x; (void)p; (void)b; (void)n; return COLL_ERR_IO; }

/* A port for communicators that only plan (coll_choose, coll_describe). */
static coll_port planning_port(void)
{
    coll_port none;
    memset(&none, 0, sizeof none);
    none.send = no_send; none.recv = no_recv;
    return none;
}

/* The work of all ranks over the cores for all-reduce of `count` floats
   by `algo`, worked out from each rank's steps as coll_describe gives
   them: (α·(M + D) + β·B + γ·G) / cores, M the segments sent, D those
   sent from anything but src. -1: the algorithm does not run this call. */
static double crowded_ref(coll_algo algo, size_t count, int cores, size_t segment)
{
    static unsigned char sc[1 << 16];
    coll_port none = planning_port();
    double w = 0;
    int r, s;
    for (r = 0; r < P; r++) {
        coll_comm c;
        coll_args a;
        coll_xfer x;
        memset(&a, 0, sizeof a);
        a.kind = COLL_ALLREDUCE; a.dtype = COLL_FLOAT32; a.op = COLL_SUM; a.count = count; a.algo = algo;
        coll_init(&c, r, P, &none, sc, sizeof sc);
        coll_set_checks(&c, 0);
        for (s = 0; ; s++) {
            int rc = coll_describe(&c, &a, s, &x);
            if (rc < 0) return -1;
            if (rc == 0) break;
            if (x.send_to >= 0 && x.send_bytes) {
                double m = (double)((x.send_bytes - 1) / segment + 1);
                w += c.tune.beta * (double)x.send_bytes + c.tune.alpha * m * (x.send_buf != COLL_BUF_SRC ? 2 : 1);
            }
            if (x.reduce && x.recv_from >= 0) w += c.tune.gamma * (double)x.recv_bytes;
        }
    }
    return w / cores;
}

static void crowded_checks(void)
{
    static unsigned char sc[P][1 << 16];
    static const size_t counts[] = { 2, 1000, 100000 };
    coll_port none = planning_port();
    size_t i;
    int r, al;
    for (i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        coll_comm c[P];
        coll_args a;
        coll_algo pick[P], plain;
        double best = -1, mine;
        memset(&a, 0, sizeof a);
        a.kind = COLL_ALLREDUCE; a.dtype = COLL_FLOAT32; a.op = COLL_SUM; a.count = counts[i];
        for (r = 0; r < P; r++) {
            coll_init(&c[r], r, P, &none, sc[r], sizeof sc[r]);
            coll_set_checks(&c[r], 0);
            plain = coll_choose(&c[r], &a);
            CHECK(coll_set_cores(&c[r], P) == COLL_OK, "coll_set_cores(p) accepted");
            CHECK(coll_choose(&c[r], &a) == plain, "as many cores as ranks: AUTO picks as without");
            coll_set_cores(&c[r], 2);
            pick[r] = coll_choose(&c[r], &a);
            CHECK(pick[r] == pick[0], "crowded: every rank picks the same");
        }
        /* every algorithm AUTO weighs (not the last resorts of 8 ranks and fewer) */
        for (al = 1; al < COLL_ALGO_COUNT; al++) {
            double v;
            if (al == COLL_ALGO_REVERSED_BRUCK || al == COLL_ALGO_DOUBLE_TREE || al == COLL_ALGO_DISSEMINATION ||
                al == COLL_ALGO_HIERARCHICAL) continue;
            v = crowded_ref((coll_algo)al, counts[i], 2, c[0].segment);
            if (v >= 0 && (best < 0 || v < best)) best = v;
        }
        mine = crowded_ref(pick[0], counts[i], 2, c[0].segment);
        if (counts[i] <= 1000)          /* there the work decides, not the path's bytes */
            CHECK(best > 0 && mine >= 0 && mine <= best * (1 + 1e-5),
                  "crowded: AUTO's pick costs least by every rank's steps");
        printf("crowded, 4 ranks on 2 cores, %zu floats: AUTO %s (alone: %s)\n", counts[i],
               coll_algo_name(pick[0]), coll_algo_name(plain));
    }
    {   /* every collective, rank counts and cores: ranks 0, p/2 and p-1 pick alike */
        static const int ps[] = { 2, 3, 5, 7, 8, 9, 16, 17, 64 };
        static const size_t ns[] = { 0, 1, 7, 1000, 1 << 16 };
        size_t pi, ni;
        int k, cores, agree = 1, runs = 0;
        for (pi = 0; pi < sizeof ps / sizeof ps[0]; pi++)
            for (k = 0; k < COLL_KIND_COUNT; k++)
                for (ni = 0; ni < sizeof ns / sizeof ns[0]; ni++)
                    for (cores = 1; cores < ps[pi] && cores <= 3; cores++) {
                        coll_algo first = COLL_ALGO_AUTO;
                        int rr[3], j;
                        coll_args a;
                        size_t counts[64];
                        rr[0] = 0; rr[1] = ps[pi] / 2; rr[2] = ps[pi] - 1;
                        memset(&a, 0, sizeof a);
                        a.kind = (coll_kind)k; a.dtype = COLL_FLOAT32; a.op = COLL_SUM; a.count = ns[ni];
                        a.root = ps[pi] - 1;
                        for (j = 0; j < ps[pi]; j++) counts[j] = ns[ni] + (size_t)j;
                        if (k != COLL_ALLTOALLV) a.counts = counts;   /* (read by the v forms only) */
                        for (j = 0; j < 3; j++) {
                            coll_comm c;
                            coll_algo got;
                            coll_init(&c, rr[j], ps[pi], &none, sc[0], sizeof sc[0]);
                            coll_set_checks(&c, (unsigned)(ni & 1));
                            coll_set_cores(&c, cores);
                            got = coll_choose(&c, &a);
                            if (j == 0) first = got;
                            else if (got != first) agree = 0;
                            runs++;
                        }
                    }
        CHECK(agree && runs > 1000, "crowded: every collective, 2-64 ranks, 1-3 cores: ranks pick alike");
    }
    {
        coll_comm c;
        coll_init(&c, 0, P, &none, sc[0], sizeof sc[0]);
        CHECK(coll_set_cores(&c, -1) == COLL_ERR_INVAL, "negative cores refused");
        CHECK(coll_set_cores(0, 2) == COLL_ERR_INVAL, "coll_set_cores(NULL) refused");
        CHECK(coll_set_cores(&c, 0) == COLL_OK, "cores 0 (a core each) accepted");
    }
}

int main(void)
{
    coll_comm c;
    coll_port port;
    coll_tuning bad = { -1, 0, 0 };
    int r;
    coll_threads_init(&world, P, 0);
    coll_threads_run(&world, rank_main, 0);
    for (r = 0; r < P; r++) {
        CHECK(rcs[r] == COLL_OK, "coll_tune returns OK on every rank");
        CHECK(memcmp(&got[r], &got[0], sizeof got[0]) == 0, "every rank holds rank 0's constants");
        CHECK(small_pick[r] == small_pick[0] && big_pick[r] == big_pick[0], "same AUTO choice everywhere");
        CHECK(ruled_small[r] == COLL_ALGO_NAIVE, "a rule overrides AUTO inside its range");
        CHECK(ruled_big[r] == big_pick[r], "a rule leaves other sizes alone");
        CHECK(memo_calls[r] == 30 && memo_wrong_algo[r] == 0, "every call ran what coll_choose picks afresh (memo)");
        CHECK(memo_wrong_sum[r] == 0, "every call of the memo sequence summed right");
        CHECK(crowd_calls[r] == 3 && crowd_wrong[r] == 0, "crowded: each call ran AUTO's pick and summed right");
    }
    CHECK(got[0].alpha > 0 && got[0].alpha < 1e-2, "alpha between 0 and 10 ms");
    CHECK(got[0].beta > 0 && got[0].beta < 1e-6, "beta between 0 and 1 us/B");
    CHECK(got[0].gamma > 0 && got[0].gamma < 1e-6, "gamma between 0 and 1 us/B");
    printf("measured: alpha %.3g s, beta %.3g s/B (%.2f GB/s), gamma %.3g s/B; AUTO 8 B -> %s, 16 MiB -> %s\n",
           got[0].alpha, got[0].beta, 1e-9 / got[0].beta, got[0].gamma,
           coll_algo_name(small_pick[0]), coll_algo_name(big_pick[0]));
    port = coll_threads_port(&world, 0);
    coll_init(&c, 0, P, &port, 0, 0);
    CHECK(coll_set_tuning(&c, &bad) == COLL_ERR_INVAL, "negative constants refused");
    CHECK(coll_add_rule(&c, COLL_ALLREDUCE, 0, 8, COLL_ALGO_BRUCK) == COLL_ERR_INVAL, "a rule needs an algorithm of that collective");
    crowded_checks();
    coll_threads_destroy(&world);
    printf("tune: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
