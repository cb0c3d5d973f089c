/* The declarations of coll_cuda.h and ports/coll_cuda_port.h as a plain C
   (or C++) compiler sees them: no CUDA header, no nvcc. Linked against the
   nvcc-built objects it also proves every entry point has C linkage. With
   COLL_CUDA_IMPLEMENTATION defined it must refuse to compile (#error). */
#include "coll_cuda.h"
#include "ports/coll_cuda_port.h"

#include <stdio.h>

static coll_cuda_port world;

int main(void)
{
    coll_cuda_ctx ctx;
    coll_memops mem;
    int rc;
    coll_cuda_ctx_init(&ctx, 0, NULL);
    mem = coll_cuda_memops(&ctx);
    rc = coll_cuda_port_init(&world, 2, NULL, 100);
    printf("ctx %p, memops %s, port init: %s\n", (void *)mem.ctx,
           mem.copy && mem.reduce && mem.scale ? "complete" : "INCOMPLETE",
           coll_cuda_result_str(rc));
    if (rc == COLL_OK) coll_cuda_port_close(&world);
    (void)coll_cuda_reduce;
    (void)coll_cuda_scale;
    (void)coll_cuda_copy;
    (void)coll_cuda_port_port;
    (void)coll_cuda_port_group;
    (void)coll_cuda_port_abort;
    (void)coll_cuda_port_run;
    (void)coll_cuda_port_rank;             /* the older names still link */
    (void)coll_cuda_port_destroy;
    return 0;
}
