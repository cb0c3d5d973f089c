/* a2av.h - the alltoallv case of the CUDA tests (test_cuda.cu on the GPU,
   test_port_sim.c on the simulated runtime): its p x p matrix and where
   each element of a rank's output comes from. */
#ifndef COLL_TEST_A2AV_H
#define COLL_TEST_A2AV_H
#include <stddef.h>

/* Rank i sends m[i*n + j] elements to rank j: ragged, some blocks empty. */
static inline void a2av_matrix(size_t count, int n, size_t *m)
{
    int i, j;
    for (i = 0; i < n; i++)
        for (j = 0; j < n; j++)
            m[i * n + j] = (i + 2 * j) % 3 == 1 ? 0 : count + (size_t)(3 * i + j);
}

/* Element j of rank r's output (column r, blocks in rank order): the rank
   that sent it (*from) and its index in that rank's input (row *from,
   blocks back to back). */
static inline size_t a2av_source(const size_t *m, int n, int r, size_t j, int *from)
{
    size_t at = 0, in = 0;
    int i, k;
    for (i = 0; i < n && j >= at + m[i * n + r]; i++) at += m[i * n + r];
    for (k = 0; k < r; k++) in += m[i * n + k];
    *from = i;
    return in + j - at;
}
#endif
