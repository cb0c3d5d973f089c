/* coll_tune over the threads port: every rank must end with the same,
   plausible constants (rank 0's measurement, broadcast), and so make the
   same AUTO choice; coll_add_rule must override AUTO for its size range
   only; coll_set_tuning must refuse negative constants. AUTO's memo (the
   last pick, reused when a call repeats): through changes of size,
   tuning and rules, every call must run what coll_choose picks afresh,
   and give the right sum. */
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
    return 0;
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
    coll_threads_destroy(&world);
    printf("tune: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
