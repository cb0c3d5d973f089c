/* Compiled twice (TU_NAME=static_a, TU_NAME=static_b) and linked into one
   program: each object has its own static copy of coll.h and of the
   threads port, and the two must not collide. */
#define COLL_STATIC
#define COLL_IMPLEMENTATION
#include "../../coll.h"
#define COLL_THREADS_STATIC
#define COLL_THREADS_IMPLEMENTATION
#include "../../ports/coll_threads.h"

#ifndef TU_NAME
#error define TU_NAME
#endif

static coll_threads world;

static int rank_body(int rank, void *arg)
{
    coll_port port = coll_threads_port(&world, rank);
    coll_comm c;
    unsigned char scratch[128];
    double v[2][5];
    int i, rc;
    (void)arg;
    rc = coll_init(&c, rank, 2, &port, scratch, sizeof scratch);
    if (rc != COLL_OK) return rc;
    for (i = 0; i < 5; i++) v[rank][i] = rank + i * 0.5;
    rc = coll_allgather(&c, v[rank], v, 5, COLL_FLOAT64, COLL_ALGO_AUTO);
    if (rc != COLL_OK) return rc;
    for (i = 0; i < 5; i++)
        if (v[0][i] != i * 0.5 || v[1][i] != 1 + i * 0.5) return 1;
    return 0;
}

int TU_NAME(void);
int TU_NAME(void)
{
    int rc;
    if (coll_threads_init(&world, 2, 5000) != COLL_OK) return 1;
    rc = coll_threads_run(&world, rank_body, 0);
    coll_threads_destroy(&world);
    return rc;
}
