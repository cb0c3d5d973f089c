/* coll.h - v0.1.0 - collective communication over send/recv functions you supply
                     single header, C99, no heap, no global state, freestanding-ready

   USAGE
     In exactly one C or C++ file:
         #define COLL_IMPLEMENTATION
         #include "coll.h"
     Everywhere else include "coll.h" alone. Define COLL_STATIC before the
     include to make every function static (several private copies in one
     program are then fine).

         coll_comm c;
         coll_init(&c, rank, nranks, &port, scratch, sizeof scratch);
         coll_allreduce(&c, src, dst, count, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);

   WHAT IT DOES
     allreduce, reduce_scatter(v), allgather(v), broadcast, reduce, gather,
     scatter, alltoall and barrier, each with the classic algorithms (ring,
     trees, recursive doubling/halving, Rabenseifner, Bruck, ...) written as
     *schedules*: pure functions from (rank, ranks, count, step) to "send this
     block to r1, receive that block from r2, copy or reduce it". One executor
     runs every schedule over your port; the same schedule can be printed
     (coll_describe) or fed to a cost model without moving a byte.

   THE PORT (your transport; see ports/README.md)
     Required:
         int send(void *ctx, int peer, const void *buf, size_t bytes);
         int recv(void *ctx, int peer, void *buf, size_t bytes);
       Blocking. Messages between one pair of ranks arrive in order, and a
       receive is always posted for exactly the size that was sent. Return 0,
       or a negative code that the collective hands back to you unchanged.
       send may be fully synchronous (return only when the peer has the
       data): every schedule orders the two halves of an exchange so that no
       ring of ranks waits on itself. Zero-byte messages are never sent.
     Optional (NULL = absent; each only makes things faster or resumable):
       sendrecv            full-duplex exchange with two peers at once.
       isend, irecv, wait  post a transfer, get a small integer handle, wait
                           for it (block = 1) or poll it (block = 0 returns
                           COLL_AGAIN while pending). isend/irecv may return
                           COLL_AGAIN ("cannot post now, nothing happened").
                           With these the executor keeps two segments in
                           flight and coll_progress never blocks. A port must
                           accept at least 4 outstanding handles per rank.

   MEMORY
     The library never allocates. Large messages are cut into segments of
     `segment` bytes = scratch_bytes / 2 (rounded down to 64). Reducing
     algorithms receive a segment into scratch, then fold it in, two segments
     at a time, so scratch is 2 x segment whatever the message size. Every
     rank must pass the same scratch_bytes: both ends of a message cut it the
     same way. Without scratch, copy-only collectives still run (unsegmented)
     and reducing ones return COLL_ERR_NOSPC.

   CONFIGURATION (define before including the implementation)
     COLL_STATIC           all functions static                      (off)
     COLL_API              decoration of public functions            (extern)
     COLL_MEMCPY(d,s,n)    memcpy to use           (memcpy; a loop if freestanding)
     COLL_MEMSET(d,v,n)    memset to use           (memset; a loop if freestanding)
     COLL_NO_ERRSTR        drop coll_result_str's message table      (off)
     COLL_ASSERT(x)        internal invariant checks                 (nothing)

   ERRORS
     Every function returns COLL_OK (0), COLL_AGAIN (1, only from progress)
     or a negative code: COLL_ERR_* below, or your port's own code unchanged.
     Arguments are checked before any byte moves. After a transport error the
     communicator's peers may be mid-collective: treat it as broken.

   THREAD SAFETY
     No global state. One communicator must not run two collectives at once;
     different communicators are independent.

   REVISIONS
     0.1.0  first release: the engine, ring/tree/naive and the classic
            algorithms, every dtype and op, resumable requests.

   LICENCE: MIT, at the end of this file.
*/
#ifndef COLL_H
#define COLL_H

#include <stddef.h>
#include <stdint.h>

#ifndef COLL_API
#ifdef COLL_STATIC
#define COLL_API static
#else
#define COLL_API extern
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- results ------------------------------------------------------------ */
enum {
    COLL_OK           = 0,
    COLL_AGAIN        = 1,     /* not finished: call coll_progress again    */
    COLL_ERR_IO       = -5,    /* transport failed                           */
    COLL_ERR_INVAL    = -22,   /* bad argument; nothing was sent             */
    COLL_ERR_NOSPC    = -28,   /* scratch too small for this call            */
    COLL_ERR_NOSYS    = -38,   /* algorithm not available for this call      */
    COLL_ERR_MISMATCH = -74,   /* peers disagree (message size, collective)  */
    COLL_ERR_TIMEOUT  = -110,  /* a peer did not answer before the deadline  */
    COLL_ERR_ABORTED  = -125   /* the transport was shut down                */
};

/* ---- element types and reduction operators ------------------------------ */
typedef enum coll_dtype {
    COLL_INT8, COLL_UINT8, COLL_INT32, COLL_UINT32, COLL_INT64, COLL_UINT64,
    COLL_FLOAT16, COLL_BFLOAT16, COLL_FLOAT32, COLL_FLOAT64,
    COLL_USER_TYPE,            /* elements of coll_user_op.elem_size bytes   */
    COLL_DTYPE_COUNT
} coll_dtype;

typedef enum coll_op {
    COLL_SUM, COLL_PROD, COLL_MIN, COLL_MAX,
    COLL_AVG,                  /* sum, then one division by nranks          */
    COLL_BAND, COLL_BOR, COLL_BXOR,   /* integer types only                 */
    COLL_USER_OP,              /* the function set by coll_set_user_op      */
    COLL_OP_COUNT
} coll_op;

/* A caller-supplied reduction: out[i] = a[i] (+) b[i] for i < count, where
   `a` holds the contribution of lower ranks than `b`. out may equal a. */
typedef void (*coll_reduce_fn)(void *out, const void *a, const void *b,
                               size_t count, void *user);
typedef struct coll_user_op {
    coll_reduce_fn fn;
    size_t elem_size;          /* bytes per element for COLL_USER_TYPE       */
    int commutative;           /* 0: only rank-order algorithms accept it    */
    void *user;
} coll_user_op;

/* ---- collectives and algorithms ----------------------------------------- */
typedef enum coll_kind {
    COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER, COLL_BROADCAST,
    COLL_REDUCE, COLL_GATHER, COLL_SCATTER, COLL_ALLTOALL, COLL_BARRIER,
    COLL_ALLGATHERV, COLL_REDUCE_SCATTERV,
    COLL_KIND_COUNT
} coll_kind;

typedef enum coll_algo {
    COLL_ALGO_AUTO,                /* chosen by the cost model               */
    COLL_ALGO_NAIVE,               /* flat: everything through one root      */
    COLL_ALGO_RING,
    COLL_ALGO_TREE,                /* binomial reduce + binomial broadcast   */
    COLL_ALGO_BINOMIAL,
    COLL_ALGO_RECURSIVE_DOUBLING,
    COLL_ALGO_RECURSIVE_HALVING,
    COLL_ALGO_RABENSEIFNER,
    COLL_ALGO_HIERARCHICAL,
    COLL_ALGO_PIPELINED_TREE,
    COLL_ALGO_PAIRWISE,
    COLL_ALGO_BRUCK,
    COLL_ALGO_SCATTER_ALLGATHER,
    COLL_ALGO_PIPELINED_CHAIN,
    COLL_ALGO_REDUCE_SCATTER_GATHER,
    COLL_ALGO_LINEAR,
    COLL_ALGO_DISSEMINATION,
    COLL_ALGO_COUNT
} coll_algo;

/* ---- the port ------------------------------------------------------------ */
typedef struct coll_port {
    void *ctx;
    int (*send)(void *ctx, int peer, const void *buf, size_t bytes);
    int (*recv)(void *ctx, int peer, void *buf, size_t bytes);
    /* optional */
    int (*sendrecv)(void *ctx, int to, const void *sbuf, size_t sbytes,
                    int from, void *rbuf, size_t rbytes);
    int (*isend)(void *ctx, int peer, const void *buf, size_t bytes, int *handle);
    int (*irecv)(void *ctx, int peer, void *buf, size_t bytes, int *handle);
    int (*wait)(void *ctx, int handle, int block);
} coll_port;

/* Local data movement. NULL = host memory (memcpy and the built-in loops);
   coll_cuda.h supplies device versions. Each returns 0 or a negative code. */
typedef struct coll_memops {
    void *ctx;
    int (*copy)(void *ctx, void *dst, const void *src, size_t bytes);
    int (*reduce)(void *ctx, void *out, const void *a, const void *b,
                  size_t count, coll_dtype dtype, coll_op op);
    int (*scale)(void *ctx, void *buf, size_t count, coll_dtype dtype,
                 size_t divisor);               /* buf[i] /= divisor (avg) */
} coll_memops;

/* The α-β-γ cost model behind COLL_ALGO_AUTO: seconds per message, per byte
   sent, per byte reduced. Defaults suit shared memory; coll_tune measures. */
typedef struct coll_tuning {
    double alpha, beta, gamma;
} coll_tuning;

/* ---- the communicator (caller-owned; fields are private) ----------------- */
typedef struct coll_comm {
    int rank, nranks;
    coll_port port;
    unsigned char *scratch;
    size_t segment;            /* bytes per message segment; 0 = uncut       */
    coll_user_op user;
    const coll_memops *mem;
    coll_tuning tune;
    unsigned magic;
} coll_comm;

/* Every collective described by one struct: the blocking calls below fill
   it in, coll_start takes it directly. Unused fields are ignored. */
typedef struct coll_args {
    coll_kind kind;
    coll_algo algo;
    const void *src;
    void *dst;
    size_t count;              /* elements; per rank for the block-wise ones */
    const size_t *counts;      /* per-rank counts of the "v" forms           */
    coll_dtype dtype;
    coll_op op;
    int root;
    int group;                 /* group size for COLL_ALGO_HIERARCHICAL      */
} coll_args;

/* A collective in progress (caller-owned, fields private). */
typedef struct coll_request {
    coll_comm *c;
    coll_args a;               /* algo resolved, buffers as given            */
    size_t esize;              /* bytes per element                          */
    int step;                  /* schedule step being executed               */
    int loaded;                /* 1: `x` holds step `step`                   */
    size_t x_[12];             /* current step (see coll__step)              */
    size_t nsend, nrecv;       /* segments of this step                      */
    size_t sposted, rposted, done;
    int hs[2], hr[2];          /* port handles of segments in flight         */
    int state;
} coll_request;

/* What one step of a schedule does on one rank (coll_describe). */
enum { COLL_BUF_SRC = 0, COLL_BUF_DST = 1 };
typedef struct coll_xfer {
    int send_to, recv_from;        /* peer ranks, -1 = none                  */
    int send_buf, recv_buf;        /* COLL_BUF_SRC or COLL_BUF_DST           */
    size_t send_offset, send_bytes;/* byte range of the buffer sent          */
    size_t recv_offset, recv_bytes;/* byte range of the buffer received into */
    int reduce;                    /* 1: received data is reduced, not copied */
} coll_xfer;

/* ---- API ----------------------------------------------------------------- */
COLL_API int coll_init(coll_comm *c, int rank, int nranks, const coll_port *port,
                       void *scratch, size_t scratch_bytes);
COLL_API int coll_set_user_op(coll_comm *c, const coll_user_op *op);
COLL_API int coll_set_memops(coll_comm *c, const coll_memops *mem);
COLL_API size_t coll_dtype_size(coll_dtype dtype);   /* 0 for COLL_USER_TYPE */
COLL_API const char *coll_result_str(int result);
COLL_API const char *coll_algo_name(coll_algo algo);
COLL_API const char *coll_kind_name(coll_kind kind);

/* Scratch the call needs at least (0 if none): with less, COLL_ERR_NOSPC. */
COLL_API size_t coll_scratch_bytes(const coll_comm *c, const coll_args *a);

/* in-place: src == dst. count elements in and out. */
COLL_API int coll_allreduce(coll_comm *c, const void *src, void *dst, size_t count,
                            coll_dtype dtype, coll_op op, coll_algo algo);
/* src: nranks blocks of count; dst: count. in-place: dst == src + rank*count. */
COLL_API int coll_reduce_scatter(coll_comm *c, const void *src, void *dst, size_t count,
                                 coll_dtype dtype, coll_op op, coll_algo algo);
/* src: count; dst: nranks blocks of count. in-place: src == dst + rank*count. */
COLL_API int coll_allgather(coll_comm *c, const void *src, void *dst, size_t count,
                            coll_dtype dtype, coll_algo algo);
/* buf: count elements, read at root, written elsewhere. */
COLL_API int coll_broadcast(coll_comm *c, void *buf, size_t count, coll_dtype dtype,
                            int root, coll_algo algo);
/* result in dst at root; other ranks' dst is workspace of count elements. */
COLL_API int coll_reduce(coll_comm *c, const void *src, void *dst, size_t count,
                         coll_dtype dtype, coll_op op, int root, coll_algo algo);
/* gather: src count -> root's dst nranks*count; scatter: the reverse. */
COLL_API int coll_gather(coll_comm *c, const void *src, void *dst, size_t count,
                         coll_dtype dtype, int root, coll_algo algo);
COLL_API int coll_scatter(coll_comm *c, const void *src, void *dst, size_t count,
                          coll_dtype dtype, int root, coll_algo algo);
/* src and dst: nranks blocks of count; block j of src goes to rank j. */
COLL_API int coll_alltoall(coll_comm *c, const void *src, void *dst, size_t count,
                           coll_dtype dtype, coll_algo algo);
COLL_API int coll_barrier(coll_comm *c, coll_algo algo);
/* "v" forms: counts[i] elements belong to rank i; dst (allgatherv) and src
   (reduce_scatterv) hold the blocks back to back in rank order. */
COLL_API int coll_allgatherv(coll_comm *c, const void *src, void *dst, const size_t *counts,
                             coll_dtype dtype, coll_algo algo);
COLL_API int coll_reduce_scatterv(coll_comm *c, const void *src, void *dst, const size_t *counts,
                                  coll_dtype dtype, coll_op op, coll_algo algo);

/* Resumable form: coll_start checks and plans, coll_progress advances and
   returns COLL_AGAIN until done (never blocking if the port has isend/irecv/
   wait), then COLL_OK or an error. coll_run = start + progress to the end. */
COLL_API int coll_start(coll_request *r, coll_comm *c, const coll_args *a);
COLL_API int coll_progress(coll_request *r);
COLL_API int coll_run(coll_comm *c, const coll_args *a);

/* The algorithm AUTO would run for `a` (the same on every rank). */
COLL_API coll_algo coll_choose(const coll_comm *c, const coll_args *a);
/* Step `step` of the schedule `a` runs on this rank: 1 and *x filled, 0 past
   the last step, or a negative code for arguments coll_start would refuse.
   Buffers in `a` may be NULL: nothing is touched. */
COLL_API int coll_describe(const coll_comm *c, const coll_args *a, int step, coll_xfer *x);

#ifdef __cplusplus
}
#endif
#endif /* COLL_H */
