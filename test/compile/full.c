/* The headers (coll.h, coll_layout.h, the threads port) with their implementations in one file, built as C99, C11
   and C++ by gcc and clang with every warning an error; then run: 3 ranks
   all-reduce over the threads port, so the build is also known to work. */
#define COLL_IMPLEMENTATION
#include "../../coll.h"
#include "../../coll_layout.h"
#define COLL_THREADS_IMPLEMENTATION
#include "../../ports/coll_threads.h"
#include <stdio.h>

static coll_threads world;

static int rank_body(int rank, void *arg)
{
    coll_port port = coll_threads_port(&world, rank);
    coll_comm c;
    double scratch[32];          /* 256 bytes, aligned for any element */
    int32_t v[10];
    int i, rc;
    (void)arg;
    rc = coll_init(&c, rank, 3, &port, scratch, sizeof scratch);
    if (rc != COLL_OK) return rc;
    for (i = 0; i < 10; i++) v[i] = rank * 10 + i;
    rc = coll_allreduce(&c, v, v, 10, COLL_INT32, COLL_SUM, COLL_ALGO_AUTO);
    if (rc != COLL_OK) return rc;
    for (i = 0; i < 10; i++)
        if (v[i] != 30 + 3 * i) return 1;
    return 0;
}

int main(void)
{
    int rc;
    if (coll_threads_init(&world, 3, 5000) != COLL_OK) return 1;
    rc = coll_threads_run(&world, rank_body, NULL);
    coll_threads_destroy(&world);
    if (rc != 0) printf("all-reduce failed: %d (%s)\n", rc, coll_result_str(rc));
    return rc != 0;
}
