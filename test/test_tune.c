/* coll_tune over the threads port: every rank must end with the same,
   plausible constants (rank 0's measurement, broadcast), and so make the
   same AUTO choice; coll_add_rule must override AUTO for its size range
   only; coll_set_tuning must refuse negative constants. */
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
static unsigned char scratch[P][1 << 16];

#define CHECK(c, msg) do { if (c) passed++; else { failed++; printf("FAIL: %s\n", msg); } } while (0)

static double now(void *ctx)
{
    struct timespec t;
    (void)ctx;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
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
