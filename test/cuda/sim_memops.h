/* sim_memops.h - what the CPU tests of the CUDA port share (test_port_sim.c,
   test_check_port_sim.c): sim_cudart.c's hooks, and memops that stand in
   for coll_cuda.h's kernels by enqueueing host functions on the rank's
   stream (cudaLaunchHostFunc), so coll.h's reduce after a recv is ordered
   exactly as on a GPU.

   The includer supplies the arithmetic, after including this:

     static void CUDART_CB run_reduce(void *job);  out = a (op) b, n elements
     static void CUDART_CB run_scale(void *job);   out /= d, n elements

   each handed a sim_job it frees. Include after coll.h and
   ports/coll_cuda_port.h (COLL_CUDA_ERR). */
#ifndef SIM_MEMOPS_H
#define SIM_MEMOPS_H

#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdlib.h>

/* sim_cudart.c's hooks */
extern int sim_ndev, sim_skip_waits;
extern unsigned long sim_peer_copies, sim_deadlocks;
void sim_seed(uint64_t s);
int sim_register(void *p, size_t n, int dev);
void sim_unregister(void *p);

typedef struct sim_job {
    void *out;
    const void *a, *b;
    size_t n, d;
    coll_dtype t;
    coll_op op;
} sim_job;

static void CUDART_CB run_reduce(void *job);
static void CUDART_CB run_scale(void *job);

static int m_copy(void *ctx, void *dst, const void *src, size_t bytes)
{
    return COLL_CUDA_ERR(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)ctx));
}

static int m_reduce(void *ctx, void *out, const void *a, const void *b, size_t n,
                    coll_dtype t, coll_op op)
{
    sim_job *j;
    if (t == COLL_USER_TYPE || op == COLL_USER_OP) return COLL_ERR_NOSYS;
    if ((j = (sim_job *)malloc(sizeof *j)) == NULL) return COLL_ERR_NOSPC;
    j->out = out; j->a = a; j->b = b; j->n = n; j->t = t; j->op = op; j->d = 1;
    return COLL_CUDA_ERR(cudaLaunchHostFunc((cudaStream_t)ctx, run_reduce, j));
}

static int m_scale(void *ctx, void *buf, size_t n, coll_dtype t, size_t d)
{
    sim_job *j;
    if (t == COLL_USER_TYPE) return COLL_ERR_NOSYS;
    if ((j = (sim_job *)malloc(sizeof *j)) == NULL) return COLL_ERR_NOSPC;
    j->out = buf; j->a = j->b = NULL; j->n = n; j->t = t; j->op = COLL_SUM; j->d = d;
    return COLL_CUDA_ERR(cudaLaunchHostFunc((cudaStream_t)ctx, run_scale, j));
}

#endif /* SIM_MEMOPS_H */
