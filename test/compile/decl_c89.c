/* The declarations of coll.h and ports/coll_threads.h compile as C89 (the
   implementation needs C99): an old code base can call a library object
   built separately (lib.c). */
#include "../../coll.h"
#include "../../ports/coll_threads.h"
#include <stdio.h>

static coll_threads world;

static int rank_body(int rank, void *arg)
{
    coll_port port;
    coll_comm c;
    long scratch[32];
    int v[4], i, rc;
    (void)arg;
    port = coll_threads_port(&world, rank);
    rc = coll_init(&c, rank, 2, &port, scratch, sizeof scratch);
    if (rc != COLL_OK) return rc;
    for (i = 0; i < 4; i++) v[i] = rank ? 0 : 7 + i;
    rc = coll_broadcast(&c, v, 4, COLL_INT32, 0, COLL_ALGO_AUTO);
    if (rc != COLL_OK) return rc;
    for (i = 0; i < 4; i++)
        if (v[i] != 7 + i) return 1;
    return 0;
}

int main(void)
{
    int rc;
    if (coll_threads_init(&world, 2, 5000) != COLL_OK) return 1;
    rc = coll_threads_run(&world, rank_body, NULL);
    coll_threads_destroy(&world);
    if (rc != 0) printf("broadcast failed: %d\n", rc);
    return rc != 0;
}
