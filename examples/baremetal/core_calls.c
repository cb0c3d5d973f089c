/* core_calls.c - what a firmware that makes the core calls links of coll:
   the image `make size` measures for the three core profiles (see
   mk/baremetal.mk, BM_CORE_*), built like the minimal one - the library
   its own object, -ffunction-sections -fdata-sections, --gc-sections - so
   the library's share of the image is what these calls need of it.

   The calls: coll_init and the five core collectives (all-reduce,
   reduce-scatter, all-gather, broadcast, reduce), each with the dtype, op
   and algorithm a host sets at run time (any of the masks' dtypes, sum,
   min, max or avg, naive, ring, tree or AUTO), so no kernel or schedule
   can be dropped. With CORE_CALLS_EVERYTHING (the "every feature"
   profile) also the resumable and persistent forms, the check settings
   and the error strings.

   A link probe: it is built and measured, not run (min_allreduce.c is the
   firmware `make qemu-min` runs). */
#include "coll.h"
#define COLL_MAILBOX_MAX_RANKS 4
#define COLL_MAILBOX_IMPLEMENTATION
#include "ports/coll_mailbox.h"
#include "bm.h"

#define RANKS 4
#define N 16

/* What a host would set: volatile, so the compiler keeps every case. */
static volatile int dtype_v = COLL_FLOAT32, op_v = COLL_SUM, algo_v = COLL_ALGO_RING, root_v = 0;

static coll_mailbox world;
static coll_comm comm;
static uint64_t scratch[64];
static uint64_t src[N * RANKS], dst[N * RANKS];

int main(void)
{
    coll_port port;
    coll_dtype t = (coll_dtype)dtype_v;
    coll_op op = (coll_op)op_v;
    coll_algo a = (coll_algo)algo_v;
    int rc;
    coll_mailbox_init(&world, RANKS);
    port = coll_mailbox_port(&world, 0);
    rc = coll_init(&comm, 0, RANKS, &port, scratch, sizeof scratch);
    if (rc == COLL_OK) rc = coll_allreduce(&comm, src, dst, N, t, op, a);
    if (rc == COLL_OK) rc = coll_reduce_scatter(&comm, src, dst, N, t, op, a);
    if (rc == COLL_OK) rc = coll_allgather(&comm, src, dst, N, t, a);
    if (rc == COLL_OK) rc = coll_broadcast(&comm, dst, N, t, root_v, a);
    if (rc == COLL_OK) rc = coll_reduce(&comm, src, dst, N, t, op, root_v, a);
#ifdef CORE_CALLS_EVERYTHING
    {
        coll_request q;
        coll_args args = { 0 };
        args.kind = COLL_ALLREDUCE; args.src = src; args.dst = dst; args.count = N;
        args.dtype = t; args.op = op; args.algo = a;
        if (rc == COLL_OK) rc = coll_set_checks(&comm, COLL_CHECK_CALLS | COLL_CHECK_CRC);
        if (rc == COLL_OK) rc = coll_start(&q, &comm, &args);
        while (rc == COLL_OK && (rc = coll_progress(&q)) == COLL_AGAIN) { }
        if (rc == COLL_OK) rc = coll_prepare(&q, &comm, &args);
        if (rc == COLL_OK) rc = coll_restart(&q);
        if (rc == COLL_OK) rc = coll_waitall(&q, 1);
        if (rc != COLL_OK) { bm_puts(coll_result_str(rc)); bm_puts(coll_last_error(&comm)); }
    }
#endif
    return rc == COLL_OK ? 0 : 1;
}
