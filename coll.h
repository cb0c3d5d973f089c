/* coll.h - v0.1.0 - collective communication over send/recv functions you supply
                     single header, C99, no heap, no global state, freestanding-ready

   CONTENTS (each section is tagged: search for ">>engine", say)
     >>api        the public declarations: results, types, the port, the
                  communicator, the calls
     >>config     memcpy/memset, the trimming masks, small helpers
     >>schedules  1. every algorithm as a pure function (plan, step) ->
                  what this rank sends and receives; >>registry, the one
                  row per algorithm; >>cost, its cost formula for AUTO
     >>recorder   what happened: the flight recorder, and a failure's
                  reason with its peer, call and step
     >>layers     what a port layer (a sub, the pieces, the observer)
                  passes on unchanged; >>observer, each call and message
                  told to the caller's callback
     >>engine     2. runs steps over the port: segments, two in flight,
                  strided spans, copy or reduce into place; >>fold
                  (zero-copy reduce), >>drive (a step over the port, the
                  driver), >>moves (local moves around them), >>source
                  (the plain source: a call without layers)
     >>agree      3. the agreement layer beside it: call checks, small
                  calls riding in them, CRCs (COLL_NO_CHECKS: none of it)
     >>pieces     a port's largest message: every message cut to it
     >>planner    4. AUTO; >>args 5. what coll_start checks of a call
     >>kernels    6. the dtypes and the reduction loops, CRC-32C
     >>calls      7. the definitions of the API; >>shrink, the survivors
                  agreeing on who lives
   A first read (about 15 minutes): coll__ring_allreduce in >>schedules,
   then coll__progress and coll__exchange_blocking in >>engine, which run
   its steps; then coll__agree_source in >>agree, which wraps them.

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
     scatter, alltoall, scan, exscan and barrier, each with the classic
     algorithms (ring, trees, recursive doubling/halving, Rabenseifner,
     Bruck, ...) written as
     *schedules*: pure functions from (rank, ranks, count, step) to "send this
     block to r1, receive that block from r2, copy or reduce it". One engine
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
                           With these the engine keeps two segments in
                           flight and coll_progress never blocks. A port must
                           accept at least 4 outstanding handles per rank.
                           When present they carry every transfer (blocking
                           collectives too); send/recv are then unused.
       abort               tell every peer the group is broken; called once
                           after a transport error, so the peers fail now
                           instead of at their deadline.
       irecv_fold          (with isend/irecv/wait, else ignored) an irecv
                           that, instead of copying the sender's bytes into
                           buf, calls fold(arg, buf + off, in, n) with `in`
                           where they already lie (the sender's buffer, a
                           shared slot) for pieces [off, off + n) in order,
                           each starting where the last ended, until they
                           cover the message; from any thread, one call at
                           a time, before the handle completes. A piece out
                           of order, or a message not covered, fails the
                           call. The engine uses it for reduction
                           steps whose result span no send of the same
                           step reads: the data is reduced straight from
                           the peer, with no copy into scratch.
       attach              how many communicators coll_init put on this
                           port (this rank's end) before: 0, 1, ... It
                           enters every call's signature, so communicators
                           sharing a port never take each other's messages.

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
     COLL_ASSERT(x)        internal invariant checks: a schedule's spans stay
                           inside the buffers, segments inside scratch ...
                           (assert() with COLL_DEBUG, else nothing)
   Trimming for small parts (what is left out answers COLL_ERR_NOSYS):
     COLL_DTYPES           bitmask of dtypes compiled in, e.g.
                           (COLL_BIT(COLL_FLOAT32) | COLL_BIT(COLL_INT32))   (all)
     COLL_OPS              bitmask of ops, e.g. COLL_BIT(COLL_SUM)           (all)
                           (COLL_USER_OP's bit keeps user operators)
     COLL_ALGOS            bitmask of algorithms, e.g. COLL_BIT(COLL_ALGO_RING) (all)
     COLL_KINDS            bitmask of collectives, e.g. COLL_BIT(COLL_ALLREDUCE) (all)
     COLL_NO_COST_MODEL    no floating point in the planner: AUTO takes the
                           first algorithm compiled in for the collective  (off)
     COLL_COST_FLOAT       the cost model in float (the default where the
     COLL_COST_DOUBLE      FPU has no double: Cortex-M4F, M0+, RV without
                           D; Cortex-M4F full build 1.3 KB less) or double
                           (the default elsewhere)
     COLL_NO_NAMES         coll_algo_name/coll_kind_name return ""         (off)
     COLL_NO_PIECES        no cutting of messages for a port's max_bytes
                           (such a port is then refused)               (off)
     COLL_NO_ARGCHECK      the checks of arguments and of call order (a
                           request restarted while running) become
                           COLL_ASSERTs, for parts whose every call is
                           known good (minimal profile, Cortex-M4F:
                           390 B less)                                  (off)
     COLL_NO_CHECKS        leave out the call checks and CRCs (see below)  (off)
     COLL_NO_RECORDER      leave out the flight recorder (coll_set_recorder
                           answers COLL_ERR_NOSYS)                      (off)
     COLL_NO_SHRINK        leave out coll_comm_shrink (it answers
                           COLL_ERR_NOSYS)                              (off)
     COLL_NO_OBSERVER      leave out the observer (coll_set_observer
                           answers COLL_ERR_NOSYS)                      (off)
     COLL_NO_CRC           keep the call checks, leave out COLL_CHECK_CRC's
                           payload CRCs (coll_set_checks refuses it)     (off)
     COLL_NO_NONBLOCKING   leave out the engine's non-blocking path: a
                           port's isend/irecv/wait go unused and
                           coll_progress runs each step to its end      (off)
     COLL_NO_ZERO_COPY     leave out the zero-copy reduce (>>fold): a
                           port's irecv_fold goes unused               (off)
     COLL_NO_MEMOPS        no caller-supplied copy/reduce/scale for device
                           buffers (coll_set_memops refuses them)      (off)
     COLL_NO_REUSE         a blocking call plans afresh even when it repeats
                           the last one (prepare a repeated call once:
                           coll_prepare, then coll_restart)            (off)
     COLL_CRC_SMALL        CRC-32C from a 16-entry table instead of 256
                           (on under -Os unless COLL_CRC_TABLE)            (off)
     COLL_EAGER_BYTES      bytes of each rank's block inside a check frame;
                           small calls ride in the check round up to
                           16 x this / p bytes per rank (256 at 2 ranks,
                           128 at 4), the rest of a block in a tail message
                           behind the frame; the same on every rank (0:
                           frames of 24 bytes, and no dissemination rows
                           for the collectives with data)                   (32)
     COLL_FOLD_MAX         largest call (bytes) whose reductions fold
                           straight from the peer where the port has
                           irecv_fold (zero-copy); larger ones copy   (4 MiB)
     COLL_AGAIN_LIMIT      a blocking call gives up (COLL_ERR_TIMEOUT) after
                           this many COLL_AGAIN in a row from a port    (2^26)
     COLL_MAX_RULES        per-size rules a communicator holds (coll_add_rule;
                           each costs 32 bytes of coll_comm)               (8)
   The masks are read only where the kernel table and the algorithm registry
   are built; the compiler drops every kernel and schedule nobody points to.

   ERRORS
     Every function returns COLL_OK (0), COLL_AGAIN (1, only from progress)
     or a negative code: COLL_ERR_* below, or your port's own code unchanged
     (a positive code other than COLL_AGAIN from a port counts as
     COLL_ERR_IO). coll_last_error(c) names what was wrong, in a short
     static string.

   CALL CHECKS (the first promise: the right answer on every rank, or an
   error on every rank that can see it)
     Before a collective moves any payload, its ranks run one dissemination
     round of 24-byte frames (lg p messages per rank, the pattern fixed by
     rank and size alone, so it cannot deadlock whatever the arguments):
     each frame carries a hash of the call's signature - sequence number,
     collective, algorithm actually run, counts, dtype, op, root, group,
     segment size, check flags, all-to-all in place - and whether a rank
     refused its arguments.
     Every rank ends the round with the same verdict: ranks that disagree
     get COLL_ERR_MISMATCH, a refusal gives the refusing rank its own code
     and every other rank COLL_ERR_PEER, promptly and on every rank.
     Small calls cost no extra round: when one rank's contribution fits a
     block (16 x COLL_EAGER_BYTES / p bytes), AUTO picks the collective's
     dissemination row, an algorithm of its own (the contributions reach
     every rank as in Bruck's all-gather, then each computes its result
     locally, in rank order), whose steps have the agreement rounds'
     pattern: with the checks on, its blocks travel in the frames
     themselves and its own steps are skipped - lg p rounds in all, and
     nothing lands in a user buffer before the ranks agree. (Forced, it
     runs with the checks off too, as its own steps.) A frame of round k carries COLL_EAGER_BYTES of each of
     min(2^k, p - 2^k) blocks, whether or not the call is small, so its
     size depends on p alone; a call whose blocks are larger sends their
     rest as a second message right behind the frame (the round's tail,
     of one of three sizes fixed by p and k: blocks of a quarter, a half
     or the whole of the room's share), announced by its class and a CRC
     in the frame: a receiver takes a tail because the sender said one
     follows, never because of its own arguments.
     With COLL_CHECK_CRC every step's payload is followed by its CRC-32C,
     seeded with the call's signature (so a message of another call, one
     replayed or misdelivered, fails it too), and a second round after the
     schedule tells every rank if any message arrived damaged, and compares
     the ranks' signatures once more (COLL_ERR_CORRUPT everywhere). The
     signature includes which communicator on the port the call is on
     (coll_port.attach): two communicators sharing a port never take each
     other's messages for their own. The CRC reads the
     buffers on the host, so it and coll_set_memops exclude each other
     (COLL_ERR_NOSYS from whichever comes second).
     An error after payload began to move (a port error, a damaged message)
     breaks the communicator: every later call returns COLL_ERR_BROKEN until
     coll_init. Errors found by the call check leave it usable: every rank
     saw the same frames and no payload moved. coll_set_checks(c, 0) turns
     the checks off (a refusal is then local, and ranks that disagree may
     hang or read each other's messages as data); COLL_NO_CHECKS compiles
     them out.

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

#define COLL_BIT(x) (1ul << (x))   /* for COLL_DTYPES, COLL_OPS, COLL_ALGOS */

/* ---- >>api  results ------------------------------------------------------ */
enum {
    COLL_OK           = 0,
    COLL_AGAIN        = 1,     /* not finished: call coll_progress again    */
    COLL_ERR_IO       = -5,    /* transport failed                           */
    COLL_ERR_BROKEN   = -32,   /* an earlier error broke this communicator   */
    COLL_ERR_CORRUPT  = -71,   /* a message failed its integrity check       */
    COLL_ERR_PEER     = -121,  /* another rank refused its arguments         */
    COLL_ERR_INVAL    = -22,   /* bad argument; nothing was sent             */
    COLL_ERR_NOSPC    = -28,   /* scratch (or a port's memory) too small     */
    COLL_ERR_NOSYS    = -38,   /* not in this build, or not for this call    */
    COLL_ERR_MISMATCH = -74,   /* peers disagree (message size, collective)  */
    COLL_ERR_TIMEOUT  = -110,  /* a peer did not answer before the deadline  */
    COLL_ERR_ABORTED  = -125   /* the transport was shut down                */
};

/* ---- element types and reduction operators ------------------------------ */
/* The element types, each described once: this list makes the enum, the
   sizes, the kernels, the kernel table and avg's division. Columns: name,
   short name, storage type, compute type, load and store (the halves go
   through float), the type integer sums and products wrap through, the
   type avg divides in, class (INT ones have the bitwise ops too). */
#define COLL_DTYPE_LIST(X)                                                                     \
    X(INT8,     i8,   int8_t,   int8_t,   COLL__ID,  COLL__ID,  uint8_t,  int32_t,  INT)       \
    X(UINT8,    u8,   uint8_t,  uint8_t,  COLL__ID,  COLL__ID,  uint8_t,  uint32_t, INT)       \
    X(INT32,    i32,  int32_t,  int32_t,  COLL__ID,  COLL__ID,  uint32_t, int32_t,  INT)       \
    X(UINT32,   u32,  uint32_t, uint32_t, COLL__ID,  COLL__ID,  uint32_t, uint32_t, INT)       \
    X(INT64,    i64,  int64_t,  int64_t,  COLL__ID,  COLL__ID,  uint64_t, int64_t,  INT)       \
    X(UINT64,   u64,  uint64_t, uint64_t, COLL__ID,  COLL__ID,  uint64_t, uint64_t, INT)       \
    X(FLOAT16,  f16,  uint16_t, float,    coll__h2f, coll__f2h, float,    float,    FLOAT)     \
    X(BFLOAT16, bf16, uint16_t, float,    coll__b2f, coll__f2b, float,    float,    FLOAT)     \
    X(FLOAT32,  f32,  float,    float,    COLL__ID,  COLL__ID,  float,    float,    FLOAT)     \
    X(FLOAT64,  f64,  double,   double,   COLL__ID,  COLL__ID,  double,   double,   FLOAT)
#define COLL__DTYPE_ENUM(E, N, T, C, IN, OUT, U, W, CL) COLL_##E,
typedef enum coll_dtype {
    COLL_DTYPE_LIST(COLL__DTYPE_ENUM)
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
/* The collectives and the algorithms, each named once: these lists make
   the enums and the names (coll_kind_name, coll_algo_name). */
#define COLL_KIND_LIST(X)                                                        \
    X(ALLREDUCE, "allreduce") X(REDUCE_SCATTER, "reduce_scatter")                \
    X(ALLGATHER, "allgather") X(BROADCAST, "broadcast") X(REDUCE, "reduce")      \
    X(GATHER, "gather") X(SCATTER, "scatter") X(ALLTOALL, "alltoall")            \
    X(BARRIER, "barrier") X(ALLGATHERV, "allgatherv")                            \
    X(REDUCE_SCATTERV, "reduce_scatterv") X(SCAN, "scan") X(EXSCAN, "exscan")   \
    X(GATHERV, "gatherv") X(SCATTERV, "scatterv") X(ALLTOALLV, "alltoallv")
#define COLL_ALGO_LIST(X)                                                        \
    X(AUTO, "auto")                 /* chosen by the cost model               */ \
    X(NAIVE, "naive")               /* flat: everything through one root      */ \
    X(RING, "ring")                                                              \
    X(TREE, "tree")                 /* binomial reduce + binomial broadcast   */ \
    X(BINOMIAL, "binomial")                                                      \
    X(RECURSIVE_DOUBLING, "recursive_doubling")                                  \
    X(RECURSIVE_HALVING, "recursive_halving")                                    \
    X(RABENSEIFNER, "rabenseifner")                                              \
    X(HIERARCHICAL, "hierarchical")                                              \
    X(PIPELINED_TREE, "pipelined_tree")                                          \
    X(PAIRWISE, "pairwise")                                                      \
    X(BRUCK, "bruck")                                                            \
    X(SCATTER_ALLGATHER, "scatter_allgather")                                    \
    X(PIPELINED_CHAIN, "pipelined_chain")                                        \
    X(REDUCE_SCATTER_GATHER, "reduce_scatter_gather")                            \
    X(LINEAR, "linear")                                                          \
    X(DISSEMINATION, "dissemination")                                            \
    X(REVERSED_BRUCK, "reversed_bruck") /* Bruck backwards: log-step, any p   */ \
    X(DOUBLE_TREE, "double_tree")   /* two pipelined trees, half each (NCCL)  */ \
    X(SWING, "swing")               /* halving/doubling at short distances    */ \
    X(BINE, "bine")                 /* binomial tree at short distances       */

#define COLL__KIND_ENUM(N, S) COLL_##N,
#define COLL__ALGO_ENUM(N, S) COLL_ALGO_##N,
#define COLL__LIST_TEXT(N, S) S "\0"
typedef enum coll_kind { COLL_KIND_LIST(COLL__KIND_ENUM) COLL_KIND_COUNT } coll_kind;
typedef enum coll_algo { COLL_ALGO_LIST(COLL__ALGO_ENUM) COLL_ALGO_COUNT } coll_algo;

/* ---- the port ------------------------------------------------------------ */
/* A receive that folds instead of copying (coll_port.irecv_fold): where it
   would copy bytes [off, off + n) of the message into buf + off, the port
   calls fold(arg, buf + off, in, n) with `in` the sender's bytes wherever
   they already lie (its buffer, a slot), from any thread, one call at a
   time. The pieces come in order, each starting where the last ended,
   and cover the message (one piece: off = 0, n = bytes); the library
   checks both and fails the call otherwise. */
typedef void (*coll_fold_fn)(void *arg, void *piece, const void *in, size_t n);

/* A rank's record for one call over windows (coll_port.window_post, used
   by coll_window.h): the buffers its peers may load from and store to
   during that call, what the call is, and - on a port that carries it
   (coll_port.window_inline) - a copy of a small call's input. */
#ifndef COLL_WINDOW_INLINE
#define COLL_WINDOW_INLINE 256     /* bytes of input a record carries (a multiple of 8) */
#endif
typedef struct coll_window_rec {
    const void *src;
    void *dst;
    size_t src_bytes, dst_bytes;   /* what the call reads and writes of them */
    uint64_t sig[4];           /* the call (and whether this rank refuses it) */
    size_t inl_bytes;          /* bytes of inl in use (0: the call is not inline) */
    uint64_t inl[COLL_WINDOW_INLINE / 8 + 1];   /* the input, for a call that fits */
} coll_window_rec;

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
    /* optional: tell every peer the group is broken (they fail promptly
       instead of at their deadline); called after a transport error */
    void (*abort)(void *ctx, int code);
    /* optional (with isend/irecv/wait): an irecv whose data `fold` folds
       into buf where it lies instead of a copy (zero-copy reduce) */
    int (*irecv_fold)(void *ctx, int peer, void *buf, size_t bytes,
                      coll_fold_fn fold, void *arg, int *handle);
    /* optional: how many communicators coll_init attached to this port
       (this rank's end of it) before this one: 0, 1, 2 ... It enters every
       call's signature, so two communicators over one port never take each
       other's messages for their own. A negative code refuses the new one. */
    int (*attach)(void *ctx);
    /* optional: the largest message the transport carries (a mailbox, a
       FIFO); 0 = any. The library then hands it no message larger: every
       segment, check frame, tail and CRC is cut into pieces of at most
       max_bytes, sent in order over its blocking calls (see >>pieces).
       Every rank's port must say the same. */
    size_t max_bytes;
    /* optional: after a failed wait, the rank at the end of the chain of
       waits that starts at `peer` (peer waits for r1, r1 for r2, ...):
       the one that never answered, or `peer` itself. It names that rank
       in coll_last_error; a port whose ranks cannot see each other's
       waits leaves it NULL. */
    int (*missing)(void *ctx, int peer);
    /* optional (coll_comm_shrink): this rank's end of the port starts
       epoch `epoch` (each one later than the last). A local call: it
       fails no one. From its return this rank's operations no longer fail
       for a failure of an earlier epoch; a message sent in an earlier
       epoch is never delivered to a receive of this one (what earlier
       epochs left unread is dropped), and one sent in a later epoch waits
       until the receiver gets there; an operation with a peer that never
       renews (dead, stopped) fails at the deadline, and in a renewed
       epoch that failure is the operation's own (the library's abort
       still fails the epoch for every rank in it). 0 or a negative code. */
    int (*renew)(void *ctx, uint32_t epoch);
    /* optional (windows: coll_window.h; all three or none): this rank's
       memory can be loaded and stored by its peers, and theirs by it
       (threads of one process, cores on one RAM). window_post keeps this
       rank's record for its next window_sync; window_sync is a barrier of
       every rank of the port, bounded by the port's deadline, failed by
       its abort (COLL_ERR_TIMEOUT, COLL_ERR_ABORTED ...), which orders
       every load and store before it, on every rank, before every one
       after it; window_peer(ctx, r) is rank r's record from r's last post
       before the last sync, read between two syncs (NULL: none, or one
       whose buffers lie outside what this rank may touch). A port whose
       rank's buffers lie outside the memory it shares (the shm port's
       heap) posts the record declined: src = dst = NULL, src_bytes =
       dst_bytes = 0, the sig as given; where the call touches bytes on
       such a rank, coll_window.h runs coll.h's own call on every rank.
       The library's layers (sub-communicators, pieces, the observer)
       pass no windows on. */
    int (*window_post)(void *ctx, const coll_window_rec *rec);
    int (*window_sync)(void *ctx);
    const coll_window_rec *(*window_peer)(void *ctx, int peer);
    /* optional (with the windows): 1 if the port keeps each rank's last
       two posts apart and carries a record's inl_bytes of inl with it;
       window_peer(ctx, r) is then r's post of the same number as this
       rank's last. A call whose input fits in inl then posts, syncs once
       and returns: its peers read the copy, never its buffers, and no
       rank can post over a record before every rank has left the call
       that read it (it has to pass the next call's sync first). */
    int window_inline;
} coll_port;

/* What the communicator verifies (coll_set_checks; see CALL CHECKS). */
enum {
    COLL_CHECK_CALLS = 1,      /* every rank agrees on the call (default)    */
    COLL_CHECK_CRC   = 2       /* a CRC-32C on every payload message         */
};

/* Local data movement. NULL = host memory (memcpy and the built-in loops);
   coll_cuda.h supplies device versions. Each returns 0 or a negative code.
   With memops set, a collective returns once its work is enqueued (on a
   CUDA stream, say): the result is final when the caller has synchronised.
   COLL_USER_OP and the algorithms that rearrange blocks on the host (Bruck)
   then answer COLL_ERR_NOSYS. */
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

/* The model's own arithmetic (private): double, or float where the target
   has no double-precision FPU (Cortex-M4F, M0+, RV32/64 without D: soft
   double would link ~2 KB of helpers to compare a few costs, and six
   digits decide as well). COLL_COST_FLOAT / COLL_COST_DOUBLE force one. */
#if defined(COLL_COST_FLOAT) || (!defined(COLL_COST_DOUBLE) &&                              \
    ((defined(__arm__) && !(defined(__ARM_FP) && (__ARM_FP & 8))) ||                        \
     (defined(__riscv) && !(defined(__riscv_flen) && __riscv_flen >= 64))))
typedef float coll__real;
typedef struct coll__tune { float alpha, beta, gamma; } coll__tune;
#else
typedef double coll__real;
typedef coll_tuning coll__tune;
#endif

/* A per-size override of AUTO: calls of `kind` moving between min_bytes and
   max_bytes (inclusive, whole buffer) use `algo`. */
typedef struct coll_rule {
    coll_kind kind;
    size_t min_bytes, max_bytes;
    coll_algo algo;
} coll_rule;
#ifndef COLL_MAX_RULES
#define COLL_MAX_RULES 8
#endif

typedef struct coll_comm coll_comm;   /* below, after coll_request */

/* AUTO's last pick and the call it was made for (private): a call that
   repeats it skips the cost model. Cleared whenever what AUTO reads
   changes (tuning, rules, memops, user op). */
typedef struct coll__memo {
    size_t count, total, chunk, es;
    int kind, root, group, inplace, ordered;
    int algo;                  /* COLL_ALGO_AUTO (0): empty                  */
} coll__memo;

/* Every collective described by one struct: the blocking calls below fill
   it in, coll_start takes it directly. Unused fields are ignored. */
typedef struct coll_args {
    coll_kind kind;
    coll_algo algo;
    const void *src;
    void *dst;
    size_t count;              /* elements; per rank for the block-wise ones */
    const size_t *counts;      /* per-rank counts of the "v" forms; a p x p
                                  matrix for alltoallv                       */
    coll_dtype dtype;
    coll_op op;
    int root;
    int group;                 /* group size for COLL_ALGO_HIERARCHICAL      */
    const size_t *displs;      /* v forms but reduce_scatterv: where block i
                                  starts in the big buffer, in elements, as
                                  MPI's displs (NULL: back to back); for
                                  alltoallv 2p of them, src's then dst's.
                                  Blocks may come in any order, with gaps
                                  that stay untouched. Given on every rank
                                  or on none (a non-root's are not read). */
    const coll_user_op *user_op;   /* COLL_USER_OP / COLL_USER_TYPE: this
                                  call's operator, copied at coll_start
                                  (NULL: the communicator's, coll_set_user_op) */
} coll_args;

/* What a schedule is computed from (private). */
typedef struct coll__plan {
    coll_kind kind;
    coll_algo algo;
    int rank, p, root, group, inplace;
    size_t count;                 /* as in coll_args; own block for v forms   */
    size_t total;                 /* elements of the whole split vector       */
    const size_t *counts;
    const size_t *displs;         /* as in coll_args (v forms), or NULL       */
    size_t span[2];               /* with displs: elements the blocks span in
                                     the big buffer (src's), and in dst
                                     (alltoallv's receives)                   */
    size_t chunk;                 /* elements per pipeline chunk              */
    int p2, rem;                  /* non-power-of-two fold: p = p2 + rem      */
    const struct coll__entry *row;   /* the registry row run (0 before picking) */
} coll__plan;

/* One step of a schedule on one rank (private; the engine's unit of work).
   Offsets and lengths count elements; buffers are COLL_BUF_SRC or _DST
   (or the small calls' room, COLL__BUF_ROOM, whose unit is a block). */
typedef struct coll__step {
    int to, from;              /* send to / receive from, -1 = none          */
    int sbuf, rbuf, abuf;      /* send from; receive (or reduce) into; the
                                  reduce's other operand                    */
    size_t soff, slen, roff, rlen, aoff;
    int reduce;                /* 1: rbuf[roff..] = abuf[aoff..] (+) received;
                                  2: the same with received on the left     */
    int send_first;            /* blocking ports: send before receiving      */
    size_t srun, sstride;      /* strided spans (0 = contiguous): element i  */
    size_t rrun, rstride;      /* lies at off + i/run*stride + i%run         */
} coll__step;

/* Small calls ride with the call check's frames (see CALL CHECKS). The
   ranks share a room of 16 x COLL_EAGER_BYTES: a rank's block is 256 B at
   2 ranks, 128 at 4, 64 at 8, 8 at 64, and a call up to that size takes
   lg p rounds instead of the check round plus the schedule's. The frame
   itself carries only COLL_EAGER_BYTES of each block, so that calls of
   any size pay little for it: 24 + 32 B at 2 ranks; a larger block's
   rest follows as the round's tail. A request (and so each coll_comm)
   holds 48 + 24 x COLL_EAGER_BYTES bytes of frames. */
#ifndef COLL_EAGER_BYTES
#define COLL_EAGER_BYTES 32
#endif
#define COLL__EAGER_ROOM (16 * COLL_EAGER_BYTES)   /* bytes of blocks, all ranks */
#ifndef COLL_NO_CHECKS             /* a request's check frames, out and in   */
#define COLL__FRAME_OUT (24 + COLL__EAGER_ROOM)
#define COLL__FRAME_IN  (24 + COLL__EAGER_ROOM / 2)
#else                              /* never used: no room taken              */
#define COLL__FRAME_OUT 8
#define COLL__FRAME_IN  8
#endif

/* What a zero-copy fold needs besides the bytes (private). */
typedef struct coll__fold_arg {
    const struct coll_request *q;
    const unsigned char *out;  /* the segment's place (buf of irecv_fold)    */
    const unsigned char *a;    /* the other operand, as long                 */
    size_t bytes;              /* the segment's                              */
    size_t done;               /* bytes folded so far (pieces come in order) */
    int bad;                   /* a piece off its element boundaries, out of
                                  order or out of the segment (a port's bug) */
} coll__fold_arg;

/* A buffer a step may name (private): the call's src and dst, and two a
   layer registers for messages of its own (the agreement layer's frames
   and CRCs). Spans count elements of `unit` bytes; messages are cut into
   segments of `cut` elements ((size_t)-1: never cut), after a first one
   of `head` elements if head is not 0 (a frame, then its tail). */
typedef struct coll__buffer {
    unsigned char *at;
    size_t unit, cut, head;
} coll__buffer;
enum { COLL__BUF_OUT = 2, COLL__BUF_IN = 3, COLL__NBUF = 4 };
/* A small call's blocks (the dissemination rows): the room behind the
   frame's header, in the agreement layer's outgoing frame. */
#define COLL__BUF_ROOM COLL__BUF_OUT

/* Which layers are compiled in: the agreement layer (>>agree), and in it
   the small calls that ride in its frames. */
#ifndef COLL_NO_CHECKS
#define COLL__CHECKS 1
#else
#define COLL__CHECKS 0
#endif
#define COLL__SMALL (COLL_EAGER_BYTES > 0)
/* A reduce's non-root may pass no dst where the call check can tell the
   others (every rank then runs linear reduce): with reduce compiled in. */
#define COLL__NULLDST_SWITCH (COLL__CHECKS && COLL__ON(COLL_KINDS, COLL_REDUCE))
/* What the engine offers the layers above it, named as capabilities so
   that the engine never names a layer: a watch on the pieces and a source
   of their own (the agreement layer uses them), and a first segment of its
   own size (its frames with a tail behind them: only with small calls). */
#define COLL__LAYERS COLL__CHECKS
#define COLL__HEADS (COLL__CHECKS && COLL__SMALL)
/* Small calls' rows (the dissemination gather in the layer's room). */
#define COLL__ROOMS (COLL__CHECKS && COLL__SMALL)

#ifndef COLL_NO_CHECKS
/* The agreement layer's state in a request (private; see >>agree). */
typedef struct coll__agree {
    unsigned char phase;       /* 0: agreement rounds, 1: schedule, 2: closing */
    unsigned char last;        /* the layer's step just run (COLL__LAST_*)   */
    unsigned char round;       /* the round being run                        */
    unsigned char nchk, nepi;  /* rounds of the agreement and of the closing */
    unsigned char eager;       /* 1: a small call's blocks ride in the rounds */
    unsigned char skip;        /* 1: the rounds were the schedule's (barrier,
                                  small calls): none of its steps run       */
    unsigned char tcls;        /* the class of this rank's tails: the least
                                  whose blocks hold blk (0: none)        */
    int refused;               /* this rank's own refusal, or 0              */
    uint32_t sig;              /* the call's signature, but its sequence no. */
    uint32_t lo, hi;           /* lowest and highest signature seen          */
    unsigned flags, bad;       /* F_* bits; lowest refusing rank, its code   */
    unsigned flags0, bad0;     /* what each run's first frame says of them   */
    size_t cap;                /* bytes a rank's block may take (eager call) */
    size_t inl;                /* bytes of each block inside a frame         */
    size_t blk;                /* bytes of each block in this eager call     */
    size_t fb;                 /* bytes of this round's frame                */
    size_t ts, tr;             /* bytes of the tails this round sends and
                                  receives (tr: as the frame announced)    */
    uint32_t crc_s, crc_r;     /* running CRC-32C of the step's payload      */
    unsigned char crc_out[4], crc_in[4];
    /* the frames last: coll_start clears only the part this p sends */
    union {                    /* 8-aligned: the kernels read the blocks     */
        unsigned char b[COLL__FRAME_OUT];
        uint64_t align_;
    } fo;
    unsigned char fin[COLL__FRAME_IN];
} coll__agree;
#endif

/* A collective in progress (caller-owned, fields private). */
typedef struct coll_request {
    coll_comm *c;
    coll__plan pl;
    struct {                   /* the call's element type and operator       */
        coll_dtype dtype;
        coll_op op;
        coll_user_op uop;      /* COLL_USER_OP's: the call's or the comm's   */
    } a;
    size_t esize;              /* bytes per element                          */
    size_t seg;                /* elements per message segment               */
    int step;                  /* the schedule's next step                   */
    /* the engine: where steps come from, who watches their pieces, the
       buffers they name, the step in flight */
    int (*source)(struct coll_request *q);   /* load the next step into st:
                                  1, or 0 when the call is complete, or < 0 */
    int (*watch)(struct coll_request *q, const unsigned char *piece, size_t n, int in);
                               /* sees each piece (in: received; nonzero
                                  keeps it from being folded), or NULL       */
    coll__buffer b[COLL__NBUF];
    size_t nsend, nrecv;       /* segments of this step                      */
    size_t sposted, rposted, done;
    int hs[4], hr[4];          /* port handles of messages in flight, -1    */
    struct { unsigned char *at; size_t n; } rin[4];   /* where each receive
                                  in flight lands (not with irecv_fold)     */
    unsigned long spins;       /* COLL_AGAIN in a row (blocking calls)       */
    uint32_t ticket;
    uint32_t seq;              /* its run's call number on c (c->seq then)   */
    int err;
    unsigned char loaded;      /* 1: `st` holds the step in flight           */
    unsigned char finished;
    unsigned char queued;      /* 1: holds `ticket` on the top communicator  */
    unsigned char zc;          /* 1: this step's receives fold (irecv_fold)  */
    unsigned char token[2];    /* the barrier's one-byte messages            */
    unsigned char prepared;    /* 1: coll_prepare planned it: it may run     */
    unsigned checks;           /* the communicator's checks when prepared    */
    struct {                   /* what a run may change (a hook working in
                                  place, linear reduce for a NULL dst), as
                                  prepared: each run starts from them       */
        unsigned char *src;
        const struct coll__entry *row;
        coll_algo algo;
        int inplace;
        uint32_t vsig;         /* a v form's counts and displs (coll__vsig)  */
    } pre;
#ifndef COLL_NO_CHECKS
    coll__agree g;             /* its frames are cleared on demand           */
#endif
    /* set before they are read: coll_start does not clear them */
    coll__step st;             /* the step in flight (the source loads it)   */
    coll__fold_arg fold[4];    /* per segment in flight (irecv_fold)         */
} coll_request;

#ifndef COLL_NO_PIECES
/* A port with max_bytes, wrapped (private; see >>pieces). */
typedef struct coll__msgcut {
    coll_port inner;           /* the caller's port                          */
} coll__msgcut;
#endif


/* The flight recorder's entry for one call (coll_set_recorder). */
typedef struct coll_record {
    uint32_t seq;              /* the communicator's call number: 1, 2, ...  */
    coll_kind kind;
    coll_algo algo;            /* what ran (AUTO's pick)                      */
    coll_dtype dtype;
    coll_op op;
    int root;
    size_t bytes;              /* the whole vector, as this rank planned it  */
    uint64_t start, end;       /* by the recorder's clock (0 without one)    */
    int result;                /* COLL_AGAIN while it runs                    */
    int step;                  /* steps of the schedule begun (0: none - a
                                  small call rides in the call check's
                                  rounds, or it ended in them)             */
    int peer;                  /* a failed transfer's peer (the one it
                                  received from, if both), else -1           */
} coll_record;

/* What an observer is told (coll_set_observer): a call's turn begins
   (CALL) or the call ends (END); a message is handed to the port (POST)
   or completes (DONE). The callback reads its own clock. */
enum { COLL_EV_CALL = 1, COLL_EV_END = 2, COLL_EV_POST = 3, COLL_EV_DONE = 4 };
typedef struct coll_event {
    int what;                  /* COLL_EV_*                                  */
    uint32_t seq;              /* the call's number; 0 outside a call        */
    int step;                  /* the schedule's step, 1, 2, ...; 0 before
                                  it (the call check's rounds)             */
    coll_kind kind;            /* CALL, END: the collective and the          */
    coll_algo algo;            /* algorithm that runs                        */
    int send;                  /* POST, DONE: 1 a send, 0 a receive          */
    int peer;                  /* POST, DONE: the peer                       */
    int handle;                /* POST, DONE: the port's handle, -1 for a
                                  blocking call                            */
    size_t bytes;              /* POST: the message's; CALL: the call's      */
    int result;                /* DONE, END: the outcome                     */
} coll_event;
typedef void (*coll_observer_fn)(void *ctx, const coll_event *e);

/* ---- the communicator (caller-owned; fields are private) ----------------- */
#ifndef COLL_NO_OBSERVER
/* The observer's layer over the communicator's port (private; see
   >>observer). */
typedef struct coll__observer {
    coll_port inner;           /* the port it wraps (first: see >>layers)    */
    coll_observer_fn fn;       /* the caller's callback, or NULL             */
    void *ctx;
    const coll_request *cur;   /* the call whose turn it is, or NULL         */
    coll_event ev;             /* the event being told (off the stack)       */
    uint32_t h[32];            /* handle h < 32: 1 + (peer << 1 | send)      */
} coll__observer;
#endif

struct coll_comm {
    int rank, nranks;
    coll_port port;
    unsigned char *scratch;
    size_t segment;            /* bytes per message segment; 0 = uncut       */
    coll_user_op user;
    const coll_memops *mem;
    coll__tune tune;           /* the model's α, β, γ                         */
    int cores;                 /* the cores the ranks share; 0: one each      */
    coll_rule rules[COLL_MAX_RULES];
    int nrules;
#ifndef COLL_NO_COST_MODEL
    coll__memo memo;           /* AUTO's last pick                            */
#endif
    unsigned checks;           /* COLL_CHECK_* flags                          */
    uint32_t seq;              /* calls so far (part of the call signature)   */
    int broken;                /* 0, or the error that broke the communicator */
    const char *why;           /* what the last error was about (static)      */
    struct coll_comm *up;      /* a sub-communicator's top one, else NULL     */
    uint32_t context;          /* which communicator on its port (attach)     */
    uint32_t group_id;         /* 0, or a hash of the sub's members (signed)  */
    uint32_t ticket, turn;     /* requests started / finished, this rank, on
                                  the top communicator: they run in turn      */
    unsigned magic;
    coll_request blk;          /* the blocking calls' request, on the top
                                  communicator: none on the caller's stack   */
    coll_args again;           /* the call blk is planned for, while again_ok */
    unsigned char again_ok;    /* (coll_run runs the same call's plan again) */
    int (*direct)(struct coll_comm *c, const coll_args *a);
                               /* a layer that takes the blocking AUTO calls
                                  before the engine (coll_window.h), or NULL */
#ifndef COLL_NO_PIECES
    coll__msgcut pieces;       /* >>pieces: a port with max_bytes, wrapped   */
#endif
#ifndef COLL_NO_RECORDER
    coll_record *rec;          /* >>recorder: the caller's ring, nrec long   */
    unsigned nrec;
    uint64_t (*now)(void *ctx);
    void *now_ctx;
#endif
#ifndef COLL_NO_SHRINK
    uint32_t epoch;            /* >>shrink: the port's epoch this one runs in */
#endif
#ifndef COLL_NO_OBSERVER
    coll__observer obs;        /* >>observer: a port layer, when set         */
#endif
#ifndef COLL_NO_ERRSTR
    char said[80];             /* a reason with figures (coll__failed)       */
#endif
};

/* What one step of a schedule does on one rank (coll_describe). */
enum { COLL_BUF_SRC = 0, COLL_BUF_DST = 1, COLL_BUF_ROOM = 2 };
typedef struct coll_xfer {
    int send_to, recv_from;        /* peer ranks, -1 = none                  */
    int send_buf, recv_buf;        /* COLL_BUF_SRC or COLL_BUF_DST, or
                                      COLL_BUF_ROOM: the request's own room
                                      of a small call's blocks (dissemination) */
    size_t send_offset, send_bytes;/* byte range of the buffer sent          */
    size_t recv_offset, recv_bytes;/* byte range of the buffer received into */
    int reduce;                    /* 1: received data is reduced, not copied */
} coll_xfer;

/* ---- API ----------------------------------------------------------------- */
COLL_API int coll_init(coll_comm *c, int rank, int nranks, const coll_port *port,
                       void *scratch, size_t scratch_bytes);
COLL_API int coll_rank(const coll_comm *c);           /* this rank, or -1 */
COLL_API int coll_size(const coll_comm *c);           /* ranks, or -1     */
COLL_API int coll_set_user_op(coll_comm *c, const coll_user_op *op);
COLL_API int coll_set_memops(coll_comm *c, const coll_memops *mem);
/* COLL_CHECK_* flags, the same on every rank (default COLL_CHECK_CALLS). */
COLL_API int coll_set_checks(coll_comm *c, unsigned flags);
/* What the last error on c was about: a short static string ("" if none). */
COLL_API const char *coll_last_error(const coll_comm *c);
/* CRC-32C (Castagnoli) of n bytes, continuing from crc (start with 0). */
COLL_API uint32_t coll_crc32c(uint32_t crc, const void *buf, size_t n);
/* The cost model's constants, and per-size overrides of AUTO. All ranks
   must set the same values. coll_tune measures α and β with ping-pongs
   between ranks 0 and 1 and γ with a local reduce, timed by now(ctx) in
   seconds, and gives rank 0's figures to every rank (a collective). */
COLL_API int coll_set_tuning(coll_comm *c, const coll_tuning *t);
COLL_API int coll_add_rule(coll_comm *c, coll_kind kind, size_t min_bytes, size_t max_bytes,
                           coll_algo algo);
COLL_API int coll_tune(coll_comm *c, double (*now)(void *ctx), void *ctx);
/* The cores that c's ranks share, where fewer than its ranks (4 ranks on a
   2-core host): AUTO then weighs the work of all ranks over the cores
   instead of one rank's path (see >>planner). 0, the default: a core per
   rank. The same on every rank. */
COLL_API int coll_set_cores(coll_comm *c, int cores);
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
/* gather: src count -> root's dst nranks*count; scatter: the reverse.
   COLL_ALGO_BINOMIAL uses every rank's big buffer (gather: dst, scatter:
   src, nranks*count) as workspace; linear (and AUTO) need it at root only. */
COLL_API int coll_gather(coll_comm *c, const void *src, void *dst, size_t count,
                         coll_dtype dtype, int root, coll_algo algo);
COLL_API int coll_scatter(coll_comm *c, const void *src, void *dst, size_t count,
                          coll_dtype dtype, int root, coll_algo algo);
/* src and dst: nranks blocks of count; block j of src goes to rank j.
   in-place: src == dst (pairwise swaps staged through scratch). */
COLL_API int coll_alltoall(coll_comm *c, const void *src, void *dst, size_t count,
                           coll_dtype dtype, coll_algo algo);
COLL_API int coll_barrier(coll_comm *c, coll_algo algo);
/* Prefix reductions: rank r gets x0 (+) .. (+) xr (scan) or x0 (+) .. (+)
   x(r-1) (exscan; rank 0's dst keeps its own x0). avg divides by the ranks
   covered. in-place: src == dst. */
COLL_API int coll_scan(coll_comm *c, const void *src, void *dst, size_t count,
                       coll_dtype dtype, coll_op op, coll_algo algo);
COLL_API int coll_exscan(coll_comm *c, const void *src, void *dst, size_t count,
                         coll_dtype dtype, coll_op op, coll_algo algo);
/* "v" forms: counts[i] elements belong to rank i; dst (allgatherv) and src
   (reduce_scatterv) hold the blocks back to back in rank order. */
COLL_API int coll_allgatherv(coll_comm *c, const void *src, void *dst, const size_t *counts,
                             coll_dtype dtype, coll_algo algo);
COLL_API int coll_reduce_scatterv(coll_comm *c, const void *src, void *dst, const size_t *counts,
                                  coll_dtype dtype, coll_op op, coll_algo algo);
/* gatherv: rank i's counts[i] elements to root's dst, back to back in rank
   order; scatterv: the reverse. in-place as gather / scatter, at the
   block's offset. */
COLL_API int coll_gatherv(coll_comm *c, const void *src, void *dst, const size_t *counts,
                          coll_dtype dtype, int root, coll_algo algo);
COLL_API int coll_scatterv(coll_comm *c, const void *src, void *dst, const size_t *counts,
                           coll_dtype dtype, int root, coll_algo algo);
/* alltoallv: counts is a p x p matrix, the same on every rank: rank i sends
   counts[i*p + j] elements to rank j. src holds row r's blocks back to
   back in rank order, dst column r's. (A rank that knows only its own row,
   as in MPI, gets the matrix with one coll_allgather of it.) in-place:
   src == dst, when row r equals column r. */
COLL_API int coll_alltoallv(coll_comm *c, const void *src, void *dst, const size_t *counts,
                            coll_dtype dtype, coll_algo algo);

/* Resumable form: coll_start checks and plans, coll_progress advances and
   returns COLL_AGAIN until done (never blocking if the port has isend/irecv/
   wait), then COLL_OK or an error. coll_run = start + progress to the end,
   in a request kept in the (top) communicator: the blocking calls put none
   on the caller's stack. With the call checks on (the default, p > 1), an
   argument this rank refuses is returned by coll_progress once the
   agreement round has told the other ranks; coll_start refuses at once
   only what leaves it no communicator or request to run the round with. */
COLL_API int coll_start(coll_request *r, coll_comm *c, const coll_args *a);
COLL_API int coll_progress(coll_request *r);
COLL_API int coll_run(coll_comm *c, const coll_args *a);
/* Persistent calls (MPI-4's MPI_Allreduce_init, any collective):
   coll_prepare checks and plans a call once - algorithm, plan, scratch,
   the call check's signature - without running it; each coll_restart runs
   it again, over the same buffers with whatever they hold now, then
   coll_progress (or coll_waitall) as for coll_start. Every rank must
   restart its matching requests in the same order, as for calls. The
   call checks stay on: each run is still a call with its own sequence
   number, only the planning is skipped. coll_start = prepare + restart.
   A request prepared under other checks (coll_set_checks since) is
   refused; prepare it again. */
COLL_API int coll_prepare(coll_request *r, coll_comm *c, const coll_args *a);
COLL_API int coll_restart(coll_request *r);
/* Several requests in flight (NCCL's grouped calls): start them, then wait
   for all. The matching rule: on each rank, the requests of a communicator
   and of its sub-communicators run one after another in the order they
   were started (a later one answers COLL_AGAIN until the earlier ones
   end), so their messages never mix on an untagged port; every pair of
   ranks must start the requests they share in the same order. A blocking
   call while a request is unfinished is refused (COLL_ERR_INVAL). A
   communicator and its subs share one turn counter: use them from one
   thread at a time, and drive every started request to its end. Returns
   the first error, after driving every request to its end. */
COLL_API int coll_waitall(coll_request *r, int n);

/* ---- sub-communicators ---------------------------------------------------
   A communicator over some of a parent's ranks, talking through the
   parent's port with ranks renumbered (no heap: the caller owns every
   struct and array, which must outlive the sub). It inherits the parent's
   checks, memops, user op and tuning; it may itself be a parent.
   coll_comm_sub: members[i] = the parent rank that is sub rank i, the same
   list on every member; this rank must be in it. coll_comm_split (MPI's
   Comm_split, a collective over the whole parent): ranks passing the same
   color >= 0 form one sub, ordered by key, then parent rank; color < 0
   joins none (sub is zeroed: coll_size(sub) == -1; COLL_OK). members: room for 2 x
   the parent's ranks ints; on return members[0..coll_size(sub)) lists it.
   The call checks sign a sub's calls with its members, and a split's also
   with the parent call that made it: a sub never passes for its parent,
   nor one split for another over the same members. Two subs that
   coll_comm_sub (a local call) made over one member list look alike to
   the checks: use them in one order on every rank, or split instead. */
typedef struct coll_subport {
    coll_port parent;          /* the parent communicator's port              */
    const int *members;
    int n;
} coll_subport;
COLL_API int coll_comm_sub(coll_comm *sub, coll_subport *sp, coll_comm *parent,
                           const int *members, int n, void *scratch, size_t scratch_bytes);
COLL_API int coll_comm_split(coll_comm *sub, coll_subport *sp, coll_comm *parent, int color,
                             int key, int *members, void *scratch, size_t scratch_bytes);

/* Revoke c (ULFM's MPIX_Comm_revoke, NCCL's ncclCommRevoke): its group's
   pending and later calls on this rank fail (COLL_ERR_BROKEN, "revoked"),
   and through the port's abort, where it has one, every other rank's
   waiting calls end too (COLL_ERR_ABORTED). Local, never blocks; a port
   without abort leaves the others to their deadline. */
COLL_API int coll_comm_revoke(coll_comm *c);

/* Shrink c (ULFM's MPIX_Comm_shrink, NCCL's ncclCommShrink): called by the
   survivors of c after an error (or by every rank, to be sure), it agrees
   on the ranks that live and makes out a communicator over them, ranked
   in c's order. Every survivor that returns COLL_OK has the same members;
   one that cannot agree gets an error (COLL_ERR_PEER). The port must have
   renew (else COLL_ERR_NOSYS): the new communicator runs in a later epoch
   of it, so no message of c is ever read by out. Each rank that does not
   answer costs the port's deadline. members: room for 2 x c's ranks ints;
   on return members[0..coll_size(out)) lists c's ranks that live. sp,
   members and scratch (out's, as for coll_init) must outlive out; c stays
   broken. out inherits c's checks, memops, user op, tuning and cores, not
   its recorder. COLL_NO_SHRINK leaves it out. */
COLL_API int coll_comm_shrink(coll_comm *out, coll_subport *sp, coll_comm *c, int *members,
                              void *scratch, size_t scratch_bytes);

/* ---- the flight recorder ---------------------------------------------------
   The last n calls of c, in the caller's ring (no heap): each entry is
   written when its call starts and completed when it ends (result, the
   step reached, the peer of a failed transfer), entry (seq - 1) % n.
   now(ctx) stamps them (any unit; NULL: none). ring NULL turns it off. Not
   inherited by sub-communicators: each has its own. coll_dump writes the
   entries, oldest first, as lines of text through write(ctx, text, n)
   (its nonzero answer stops it); 0, or the first nonzero answer. */
COLL_API int coll_set_recorder(coll_comm *c, coll_record *ring, unsigned n,
                               uint64_t (*now)(void *ctx), void *ctx);
COLL_API int coll_dump(const coll_comm *c, int (*write)(void *ctx, const char *text, size_t n), void *ctx);

/* The observer: fn(ctx, e) is told each call's turn and end and each
   message c hands its port and sees complete (coll_event), as it happens,
   on the calling thread; fn NULL turns it off. Set it with no request
   in flight; not inherited by sub-communicators (one made after it
   reports through it, as outside a call). */
COLL_API int coll_set_observer(coll_comm *c, coll_observer_fn fn, void *ctx);

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

/* ========================================================================== */
/*                              IMPLEMENTATION                                */
/* ========================================================================== */
#ifdef COLL_IMPLEMENTATION
#ifndef COLL__IMPLEMENTED
#define COLL__IMPLEMENTED

#ifdef __cplusplus
#define COLL__RESTRICT __restrict
#else
#define COLL__RESTRICT restrict
#endif

#ifndef COLL_ASSERT
#ifdef COLL_DEBUG                  /* the test builds: every invariant checked */
#include <assert.h>
#define COLL_ASSERT(x) assert(x)
#else
#define COLL_ASSERT(x) ((void)0)
#endif
#endif

/* ---- >>config  memcpy / memset: libc when hosted, loops when freestanding - */
#if !defined(COLL_MEMCPY) || !defined(COLL_MEMSET)
#if defined(__STDC_HOSTED__) && __STDC_HOSTED__ == 0
#if defined(__GNUC__) && !defined(__clang__)
#define COLL__NO_LIBCALL __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define COLL__NO_LIBCALL
#endif
static COLL__NO_LIBCALL void coll__copy_loop(void *d, const void *s, size_t n)
{
    unsigned char *dp = (unsigned char *)d;
    const unsigned char *sp = (const unsigned char *)s;
    while (n--) *dp++ = *sp++;
}
static COLL__NO_LIBCALL void coll__set_loop(void *d, int v, size_t n)
{
    unsigned char *dp = (unsigned char *)d;
    while (n--) *dp++ = (unsigned char)v;
}
#ifndef COLL_MEMCPY
#define COLL_MEMCPY(d, s, n) coll__copy_loop((d), (s), (n))
#endif
#ifndef COLL_MEMSET
#define COLL_MEMSET(d, v, n) coll__set_loop((d), (v), (n))
#endif
#else
#include <string.h>
#ifndef COLL_MEMCPY
#define COLL_MEMCPY(d, s, n) memcpy((d), (s), (n))
#endif
#ifndef COLL_MEMSET
#define COLL_MEMSET(d, v, n) memset((d), (v), (n))
#endif
#endif
#endif

#ifndef COLL_DTYPES
#define COLL_DTYPES 0xfffffffful
#endif
#ifndef COLL_OPS
#define COLL_OPS 0xfffffffful
#endif
#ifndef COLL_ALGOS
#define COLL_ALGOS 0xfffffffful
#endif
#ifndef COLL_KINDS
#define COLL_KINDS 0xfffffffful
#endif
#define COLL__ON(mask, x) ((((unsigned long)(mask)) >> (x)) & 1ul)

/* A build of one collective (one dtype, one op) has the value as a
   constant, so every branch on it folds away: COLL__KIND(k) is k, or the
   one kind COLL_KINDS leaves in (read only after k has been checked). */
#define COLL__ONE(mask) ((((unsigned long)(mask)) & (((unsigned long)(mask)) - 1ul)) == 0ul)
#if defined(__GNUC__)
#define COLL__FIRST(mask) __builtin_ctzl((unsigned long)(mask))
#else
#define COLL__FIRST(mask) coll__first((unsigned long)(mask))
static int coll__first(unsigned long m)
{
    int b = 0;
    while (m && !(m & 1ul)) { m >>= 1; b++; }
    return b;
}
#endif
#define COLL__KIND(k) (COLL__ONE(COLL_KINDS) ? (coll_kind)COLL__FIRST(COLL_KINDS) : (k))
/* Kind tests are tests of a set of kinds taken with the kinds compiled in:
   a build that keeps none of the set folds the test, and whatever it
   guards, to 0. COLL__KIND_IS(k, K): k is kind K. */
#define COLL__IS(set, k) COLL__ON((set) & COLL_KINDS, k)
#define COLL__KB(K) COLL_BIT(COLL_##K)
#define COLL__KIND_IS(k, K) COLL__IS(COLL_BIT(K), COLL__KIND((coll_kind)(k)))
#define COLL__DT(t)   (COLL__ONE(COLL_DTYPES) ? (coll_dtype)COLL__FIRST(COLL_DTYPES) : (t))
#define COLL__OPV(o)  (COLL__ONE(COLL_OPS) ? (coll_op)COLL__FIRST(COLL_OPS) : (o))
#define COLL__USER_OPS COLL__ON(COLL_OPS, COLL_USER_OP)   /* user operators compiled in */
#ifndef COLL_NO_MEMOPS            /* the caller's copy/reduce/scale (coll_set_memops) */
#define COLL__MEM(c) ((c)->mem)
#else
#define COLL__MEM(c) ((void)(c), (const coll_memops *)0)
#endif

/* Trimmed builds leave kernels and schedules unreferenced: not a problem.
   COLL__NOINLINE keeps a leaf's buffer out of its caller's frame, where it
   would add to the deepest chain instead of sitting beside it. */
#if defined(__GNUC__)
#define COLL__UNUSED __attribute__((unused))
#define COLL__NOINLINE __attribute__((noinline))
#define COLL__ALWAYS_INLINE __inline__ __attribute__((always_inline))
#else
#define COLL__NOINLINE
#define COLL__UNUSED
#define COLL__ALWAYS_INLINE
#endif

/* A case that goes on into the next on purpose (a comment would not reach
   the host compiler behind nvcc). */
#if (defined(__GNUC__) && __GNUC__ >= 7) || (defined(__clang__) && __clang_major__ >= 10)
#define COLL__FALLTHROUGH __attribute__((fallthrough))
#else
#define COLL__FALLTHROUGH ((void)0)
#endif

#define COLL__MAGIC 0xC011C0DEu
#define COLL__REFUSED 0xC011DEADu  /* coll_init refused it: only coll_last_error reads it */

/* The top communicator: it holds what a communicator and its subs share,
   one transport: the turn order of their requests (see coll_waitall) and
   whether it is broken. */
static coll_comm *coll__top(coll_comm *c)
{
    return c->up ? c->up : c;
}

/* The call's user operator: its own (args.user_op), or the communicator's. */
static const coll_user_op *coll__uop(const coll_comm *c, const coll_args *a)
{
    return a->user_op ? a->user_op : &c->user;
}

/* A refusal: the code and a short reason for coll_last_error; with
   COLL_NO_ERRSTR no reason is kept, not even as a string in flash. */
#ifdef COLL_NO_ERRSTR
#define COLL__WHY(text) ""
#else
#define COLL__WHY(text) text
#endif
#define COLL__NO(why_out, code, text) (*(why_out) = COLL__WHY(text), (code))
/* An argument check: with COLL_NO_ARGCHECK (the smallest parts, whose
   every call is known good) an assertion instead, and no code. */
#ifdef COLL_NO_ARGCHECK
#define COLL__ARG(bad) (COLL_ASSERT(!(bad)), (void)sizeof(bad), 0)   /* (sizeof: its names stay used) */
#else
#define COLL__ARG(bad) (bad)
#endif

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"   /* trimmed schedules */
#endif
#define COLL__NONE  (-1)

/* A small build (-Os: firmware) keeps the engine's per-step helpers out of
   coll_progress's frame, so its deepest chain stays short, and a helper
   that schedules call in several places (coll__block) in one copy; a fast
   one (-O2) lets the compiler inline them. */
#if defined(__OPTIMIZE_SIZE__)
#define COLL__OFF_CHAIN COLL__NOINLINE
#else
#define COLL__OFF_CHAIN
#endif

/* ---- kinds of collective ---------------------------------------------------- */

/* Collectives that combine data (and so need an op and scratch). */
static int coll__reduces(coll_kind k)
{
    return COLL__IS(COLL__KB(ALLREDUCE) | COLL__KB(REDUCE) | COLL__KB(REDUCE_SCATTER) |
                    COLL__KB(REDUCE_SCATTERV) | COLL__KB(SCAN) | COLL__KB(EXSCAN), k);
}

/* Collectives with a root; the "v" forms (per-rank counts[]). */
static int coll__rooted(coll_kind k)
{
    return COLL__IS(COLL__KB(BROADCAST) | COLL__KB(REDUCE) | COLL__KB(GATHER) |
                    COLL__KB(SCATTER) | COLL__KB(GATHERV) | COLL__KB(SCATTERV), k);
}
static int coll__vkind(coll_kind k)
{
    return COLL__IS(COLL__KB(ALLGATHERV) | COLL__KB(REDUCE_SCATTERV) | COLL__KB(GATHERV) |
                    COLL__KB(SCATTERV), k);
}

/* The kinds that take counts[] (and displs[]): a build without them reads
   neither (the plan's fields are then always NULL). */
#define COLL__COUNTED (COLL__KB(ALLGATHERV) | COLL__KB(REDUCE_SCATTERV) | COLL__KB(GATHERV) | \
                       COLL__KB(SCATTERV) | COLL__KB(ALLTOALLV))
#define COLL__COUNTS(pl) ((COLL_KINDS & COLL__COUNTED) ? (pl)->counts : (const size_t *)0)
#define COLL__DISPLS(pl) ((COLL_KINDS & COLL__COUNTED) ? (pl)->displs : (const size_t *)0)
/* The kinds whose buffers hold one block per rank: a build without them
   never asks for this rank's block while planning. */
#define COLL__BLOCKED (COLL__KB(REDUCE_SCATTER) | COLL__KB(REDUCE_SCATTERV) | COLL__KB(ALLGATHER) | \
                       COLL__KB(ALLGATHERV) | COLL__KB(GATHER) | COLL__KB(GATHERV) | COLL__KB(SCATTER) | \
                       COLL__KB(SCATTERV))

/* Collectives over one vector of count elements on every rank. */
static int coll__vector(coll_kind k)
{
    return COLL__IS(COLL__KB(ALLREDUCE) | COLL__KB(REDUCE) | COLL__KB(BROADCAST) |
                    COLL__KB(SCAN) | COLL__KB(EXSCAN), k);
}

/* Little-endian words on the wire, whatever the host's byte order. */
static void coll__put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v; p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16); p[3] = (unsigned char)(v >> 24);
}
static uint32_t coll__get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
/* The CRC-32C of a little-endian word, continuing from h. */
static uint32_t coll__crc_word(uint32_t h, uint32_t v)
{
    unsigned char w[4];
    coll__put32(w, v);
    return coll_crc32c(h, w, 4);
}

/* ---- what the sections ahead of their definitions use -------------------- */
/* Local data movement (>>kernels): host loops, or the caller's memops. */
static int coll__copy(const coll_comm *c, void *dst, const void *src, size_t n);
static int coll__reduce(const coll_comm *c, const coll_user_op *u, void *out, const void *a, const void *b, size_t n,
                        coll_dtype t, coll_op op);
static int coll__scale(const coll_comm *c, void *buf, size_t n, coll_dtype t, size_t d);
static int coll__kernel_kept(coll_dtype t, coll_op op);   /* a loop compiled in for (t, op) */
static int coll__is_integer(coll_dtype t);
/* What a call moves and touches (>>planner). */
static size_t coll__total_bytes(const struct coll__plan *pl, size_t esize);
static void coll__extents(const struct coll__plan *pl, size_t *in_n, size_t *out_n);
static int coll__overlap(const void *a, size_t an, const void *b, size_t bn);

/* ========================================================================== */
/* >>schedules  1. Schedules                                                  */
/* ========================================================================== */
/* A schedule is a pure function: (plan, step number) -> what this rank does
   in that step. It returns 1 and fills *st while there are steps (an idle
   step has to = from = -1) and 0 after the last. No state, no buffers: the
   engine, coll_describe and any cost model all read the same function.

   Costs below: p ranks, n bytes, α per message, β per byte sent, γ per byte
   reduced; lg = ceil(log2 p); p2 = the largest power of two <= p. Message
   order: a step that both sends and receives says which comes first on a
   port without sendrecv (send_first), chosen so that no cycle of ranks can
   all be sending to each other at once. */

typedef int (*coll__schedule)(const coll__plan *pl, int s, coll__step *st);

/* a mod p, in [0, p): a division only when a is more than p away (the
   schedules' r +- d rarely is; a division costs ~25 cycles, or a libgcc
   call on a core without one). */
static int coll__mod(int a, int p)
{
    if (a >= p) a -= p;
    else if (a < 0) a += p;
    if (a < 0 || a >= p) { a %= p; if (a < 0) a += p; }
    return a;
}

static int coll__ceil_log2(int p)
{
    int l = 0;
    while ((1 << l) < p) l++;
    return l;
}

static void coll__idle(coll__step *st)
{
    st->to = st->from = COLL__NONE;
    st->sbuf = st->rbuf = st->abuf = COLL_BUF_DST;
    st->soff = st->slen = st->roff = st->rlen = st->aoff = 0;
    st->reduce = 0;
    st->send_first = 1;
    st->srun = st->sstride = st->rrun = st->rstride = 0;
}

/* A shift exchange (send to r+d, receive from r-d) forms g = gcd(p,d)
   cycles, and a cycle of blocking sends and receives completes when it
   has a rank that receives first and one that sends first. The ranks
   below d mod p receive first: each cycle holds one (rank i < g), and
   one at or above it (its largest, p - g + i >= d). */
static int coll__shift_send_first(int r, int p, int d)
{
    int m = coll__mod(d, p);
    return r >= (m ? m : p);
}

/* An exchange with one partner: the lower rank speaks first. */
static void coll__pair(coll__step *st, int me, int partner)
{
    st->to = st->from = partner;
    st->send_first = me < partner;
}

/* Balanced split of n elements into k parts: part i starts at
   i·⌊n/k⌋ + min(i, n mod k); the first n mod k parts get one more. */
static size_t coll__split(size_t n, int k, int i)
{
    size_t base = n / (size_t)k, extra = n % (size_t)k, ii = (size_t)i;
    return ii * base + (ii < extra ? ii : extra);
}

/* Block i of the data the collective splits across ranks: a balanced split
   (allreduce, reduce, broadcast), count-sized blocks (reduce_scatter,
   allgather, gather, scatter, alltoall), or counts[] (v forms). */
static COLL__OFF_CHAIN void coll__block(const coll__plan *pl, int i, size_t *off, size_t *len)
{
    if (coll__vector(COLL__KIND(pl->kind))) {
        *off = coll__split(pl->count, pl->p, i);
        *len = coll__split(pl->count, pl->p, i + 1) - *off;
    } else if (COLL__COUNTS(pl)) {
        const size_t *row = pl->counts + (COLL__KIND_IS(pl->kind, COLL_ALLTOALLV) ? (size_t)pl->rank * (size_t)pl->p : 0);
        int j;
        *len = row[i];
        if (COLL__DISPLS(pl)) { *off = pl->displs[i]; return; }   /* where the caller put it */
        *off = 0;
        for (j = 0; j < i; j++) *off += row[j];
    } else {
        *off = (size_t)i * pl->count;
        *len = pl->count;
    }
}

/* This rank's block, for planning: only a kept kind with one block per
   rank reads it (COLL__BLOCKED), so a build without one skips the work. */
static void coll__my_block(const coll__plan *pl, size_t *off, size_t *len)
{
    if (COLL_KINDS & COLL__BLOCKED) coll__block(pl, pl->rank, off, len);
    else *off = *len = 0;
}

/* All-to-all: block i of dst, the one that comes from rank i. Alltoallv
   reads column r of the counts matrix (coll__block reads row r). */
static void coll__rblock(const coll__plan *pl, int i, size_t *off, size_t *len)
{
    int j, p = pl->p;
    if (!COLL__KIND_IS(pl->kind, COLL_ALLTOALLV)) { coll__block(pl, i, off, len); return; }
    *len = pl->counts[(size_t)i * (size_t)p + (size_t)pl->rank];
    if (pl->displs) { *off = pl->displs[(size_t)p + (size_t)i]; return; }
    *off = 0;
    for (j = 0; j < i; j++) *off += pl->counts[(size_t)j * (size_t)p + (size_t)pl->rank];
    *len = pl->counts[(size_t)i * (size_t)p + (size_t)pl->rank];
}

/* Blocks [i, j) as one element range (blocks are contiguous: never with
   displs, which only the block-wise rows take). */
static void coll__blocks(const coll__plan *pl, int i, int j, size_t *off, size_t *len)
{
    size_t end, l;
    COLL_ASSERT(!pl->displs);
    coll__block(pl, i, off, &l);
    if (j >= pl->p) end = pl->total;
    else coll__block(pl, j, &end, &l);
    *len = end - *off;
}

/* ---- the fold: any p onto a power of two ------------------------------------
   The first 2·rem ranks pair up, even r handing its data to r+1, so p2 =
   p - rem ranks remain, renumbered v = 0..p2-1; the power-of-two algorithm
   runs on v, and the pairs are unfolded at the end. Costs one extra
   exchange at each end, only when p is not a power of two.             */
static int coll__vrank(const coll__plan *pl, int r)      /* -1: sits out */
{
    if (r < 2 * pl->rem) return r % 2 ? r / 2 : -1;
    return r - pl->rem;
}
static int coll__rrank(const coll__plan *pl, int v)
{
    return v < pl->rem ? 2 * v + 1 : v + pl->rem;
}
/* First element of virtual rank v's region of the data. */
static size_t coll__vbound(const coll__plan *pl, int v)
{
    size_t off, len;
    if (v >= pl->p2) return pl->total;
    if (COLL__KIND_IS(pl->kind, COLL_ALLREDUCE) || COLL__KIND_IS(pl->kind, COLL_REDUCE)) return coll__split(pl->count, pl->p2, v);
    coll__block(pl, v < pl->rem ? 2 * v : v + pl->rem, &off, &len);
    return off;
}
static void coll__vrange(const coll__plan *pl, int v0, int v1, size_t *off, size_t *len)
{
    *off = coll__vbound(pl, v0);
    *len = coll__vbound(pl, v1) - *off;
}

/* Fold step: even r < 2·rem sends everything (its block, for an
   all-gather) to r+1, which reduces (copies) it in. */
static void coll__fold_in(const coll__plan *pl, coll__step *st, int whole)
{
    int r = pl->rank;
    if (r >= 2 * pl->rem) return;
    if (r % 2 == 0) {
        st->to = r + 1;
        st->sbuf = whole ? COLL_BUF_SRC : COLL_BUF_DST;
        if (whole) { st->soff = 0; st->slen = pl->total; }
        else coll__block(pl, r, &st->soff, &st->slen);
    } else {
        st->from = r - 1;
        if (whole) { st->rlen = pl->total; st->reduce = 1; st->abuf = COLL_BUF_SRC; }
        else coll__block(pl, r - 1, &st->roff, &st->rlen);
    }
}

/* Unfold step: odd r < 2·rem hands the result back to r-1. */
static void coll__fold_out(const coll__plan *pl, coll__step *st, int buf, size_t off, size_t len)
{
    int r = pl->rank;
    if (r >= 2 * pl->rem) return;
    if (r % 2) { st->to = r - 1; st->sbuf = buf; st->soff = off; st->slen = len; }
    else       { st->from = r + 1; st->rbuf = buf; st->roff = off; st->rlen = len; }
}

/* Has this rank's dst received a reduction before power-of-two step k? */
static int coll__dst_ready(const coll__plan *pl, int k)
{
    return k > 0 || (pl->rank < 2 * pl->rem && pl->rank % 2);
}

/* Recursive-halving step k on virtual ranks: partner v ^ d with d =
   p2/2^(k+1); each keeps the half of the current window holding its own
   region, sends the other half and reduces the partner's copy of its half.
   After lg p2 steps v holds its own region fully reduced. The _at form
   takes the region w this rank ends with and its partner (both virtual):
   any pairing whose windows nest the same way (Swing's) runs on it. */
static void coll__halving_at(const coll__plan *pl, int k, int w, int partner, int work, coll__step *st)
{
    int d = pl->p2 >> (k + 1), lo = w & ~(2 * d - 1);
    int keep = (w & d) ? lo + d : lo, give = (w & d) ? lo : lo + d;
    int ready = work == COLL_BUF_SRC || coll__dst_ready(pl, k);
    coll__pair(st, pl->rank, coll__rrank(pl, partner));
    st->sbuf = ready ? work : COLL_BUF_SRC;
    coll__vrange(pl, give, give + d, &st->soff, &st->slen);
    st->rbuf = work;
    coll__vrange(pl, keep, keep + d, &st->roff, &st->rlen);
    st->abuf = ready ? work : COLL_BUF_SRC;
    st->aoff = st->roff;
    st->reduce = 1;
}
static void coll__halving(const coll__plan *pl, int k, int work, coll__step *st)
{
    int v = coll__vrank(pl, pl->rank);
    coll__halving_at(pl, k, v, v ^ (pl->p2 >> (k + 1)), work, st);
}

/* Recursive-doubling all-gather step k: v and v ^ 2^k swap the 2^k regions
   each has gathered so far, doubling them. The _at form takes the region
   w this rank ended the halving with and the partner (both virtual). */
static void coll__doubling_gather_at(const coll__plan *pl, int k, int w, int partner, int work, coll__step *st)
{
    int d = 1 << k, lo = w & ~(d - 1);
    coll__pair(st, pl->rank, coll__rrank(pl, partner));
    st->sbuf = st->rbuf = work;
    coll__vrange(pl, lo, lo + d, &st->soff, &st->slen);
    coll__vrange(pl, lo ^ d, (lo ^ d) + d, &st->roff, &st->rlen);
}
static void coll__doubling_gather(const coll__plan *pl, int k, int work, coll__step *st)
{
    int v = coll__vrank(pl, pl->rank);
    coll__doubling_gather_at(pl, k, v, v ^ (1 << k), work, st);
}

/* Split step s of a folded schedule: -1 fold, 0..n-1 inner, n unfold. */
static int coll__folded(const coll__plan *pl, int s, int inner, int *k)
{
    int f = pl->rem > 0;
    if (s >= inner + 2 * f) return 0;           /* past the end */
    *k = s - f;
    return 1;
}

/* ---- Swing and Bine: negabinary distances ----------------------------------
   Swing (De Sensi et al., NSDI'24) and Bine trees (SC'25) pair the p2
   ranks of step s at distance rho(s) = 1 - 2 + 4 - ... + (-2)^s = 1, -1, 3,
   -5, 11, ...: even ranks step forward, odd ones back. |rho(s)| is about
   2/3 of 2^s, and the first step, which carries the most, joins
   neighbours: on a ring or torus the messages cross fewer links than
   recursive doubling's or halving's.
   The ranks that v reaches through steps s+1, s+2, ... form windows that
   nest as recursive halving's do. Numbering each rank by the steps that
   lead to it from rank 0 (step 0 the top bit) makes every window a
   contiguous run of numbers, so halving and doubling run Swing unchanged
   on that number. */
static unsigned coll__swing_rho(int s)              /* mod 2^32 */
{
    unsigned rho = 0, t = 1;
    int i;
    for (i = 0; i <= s; i++) { rho += t; t = 0u - 2u * t; }
    return rho;
}

static int coll__swing_peer(int v, int s, int p2)
{
    unsigned rho = coll__swing_rho(s);
    return (int)((v % 2 ? (unsigned)v - rho : (unsigned)v + rho) & (unsigned)(p2 - 1));
}

/* v's number (0 <= v < p2 = 2^L), decoded: with c_i the parity of the
   steps used up to step i, v = 2·sum(c_i·(-2)^i, i < L-1) + c_(L-1)·rho(L-1)
   mod p2, a negabinary number (read as (z + M) ^ M, M the odd bits);
   step i is used where c changes. */
static int coll__swing_pos(int v, int L)
{
    unsigned p2 = 1u << L, m = p2 / 2 - 1, M = 0xAAAAAAAAu & m, c_last = (unsigned)v & 1u;
    unsigned z = (((unsigned)v - (c_last ? coll__swing_rho(L - 1) : 0u)) & (p2 - 1)) >> 1;
    unsigned c = (((z + M) ^ M) & m) | c_last << (L - 1), used = (c ^ c << 1) & (p2 - 1), w = 0;
    int i;
    for (i = 0; i < L; i++) w |= (used >> i & 1u) << (L - 1 - i);
    return (int)w;
}

/* The rank whose number is w: walk from rank 0 through the steps w names. */
static int coll__swing_rank(int w, int L)
{
    int s, v = 0;
    for (s = 0; s < L; s++)
        if (w >> (L - 1 - s) & 1) v = coll__swing_peer(v, s, 1 << L);
    return v;
}

/* The step that moves each virtual region between rank v and the rank
   whose number is v: `out` sends region sigma(v) to its owner (after a
   Swing halving), else v's own region to the rank numbered v (before a
   Swing doubling). A permutation: in each of its cycles some rank sends
   to a higher one first and some to a lower one, so no cycle is all
   senders. */
static void coll__swing_permute(const coll__plan *pl, int L, int out, int work, coll__step *st)
{
    int v = coll__vrank(pl, pl->rank), w = coll__swing_pos(v, L), u = coll__swing_rank(v, L);
    int to = out ? w : u, from = out ? u : w;
    if (to == v) return;                                /* its own already */
    st->to = coll__rrank(pl, to);
    st->from = coll__rrank(pl, from);
    st->sbuf = st->rbuf = work;
    coll__vrange(pl, out ? w : v, (out ? w : v) + 1, &st->soff, &st->slen);
    coll__vrange(pl, out ? v : w, (out ? v : w) + 1, &st->roff, &st->rlen);
    st->send_first = v > to;
}

/* ---- ring ------------------------------------------------------------------ */

/* Where the running partial sum of a block lives during a reduce-scatter,
   given the block's place (buf, off) in the full vector: there, in place
   (dst for all-reduce, src for in-place reduce_scatter), or (out of place
   reduce_scatter) at the start of dst, which holds one block and is
   reused for each block passing through. */
static void coll__partial(const coll__plan *pl, int *buf, size_t *off)
{
    int own_dst = COLL__KIND(pl->kind) != COLL_ALLREDUCE && !pl->inplace;
    *buf = COLL__KIND_IS(pl->kind, COLL_ALLREDUCE) || own_dst ? COLL_BUF_DST : COLL_BUF_SRC;
    if (own_dst) *off = 0;
}

/* One step around the ring: send block sb (mod p) to r+1, receive block
   rb from r-1; even ranks send first, odd ones receive first (no cycle of
   senders). */
static void coll__ring_step(const coll__plan *pl, int sb, int rb, coll__step *st)
{
    int r = pl->rank, p = pl->p;
    coll__idle(st);
    st->to = coll__mod(r + 1, p);
    st->from = coll__mod(r - 1, p);
    coll__block(pl, coll__mod(sb, p), &st->soff, &st->slen);
    coll__block(pl, coll__mod(rb, p), &st->roff, &st->rlen);
    st->send_first = (r % 2 == 0);
}

/* Ring reduce-scatter. Cut the data into p blocks; in step s rank r passes
   block r-s-1 to r+1 and folds block r-s-2 arriving from r-1 into its own
   copy. Each block travels p-1 hops collecting one contribution per hop and
   ends, complete, at its owner (block r at rank r).
       step 0, p = 4:  0 -b3-> 1 -b0-> 2 -b1-> 3 -b2-> 0
   cost: (p-1)α + (p-1)/p·n(β+γ)                                            */
static int coll__ring_reduce_scatter(const coll__plan *pl, int s, coll__step *st)
{
    int r = pl->rank;
    if (s >= pl->p - 1) return 0;
    coll__ring_step(pl, r - s - 1, r - s - 2, st);
    st->sbuf = COLL_BUF_SRC;                         /* step 0: the input itself */
    if (s > 0) coll__partial(pl, &st->sbuf, &st->soff);
    st->aoff = st->roff;
    coll__partial(pl, &st->rbuf, &st->roff);
    st->abuf = COLL_BUF_SRC;
    st->reduce = 1;
    return 1;
}

/* Ring all-gather. Rank r starts with block r; in step s it forwards block
   r-s to r+1 and receives block r-s-1 from r-1, so after p-1 steps every
   block has visited every rank.
       step 0, p = 4:  0 -b0-> 1 -b1-> 2 -b2-> 3 -b3-> 0
   cost: (p-1)α + (p-1)/p·nβ                                                 */
static int coll__ring_allgather(const coll__plan *pl, int s, coll__step *st)
{
    if (s >= pl->p - 1) return 0;
    coll__ring_step(pl, pl->rank - s, pl->rank - s - 1, st);
    return 1;
}

/* Ring all-reduce = ring reduce-scatter, then ring all-gather of the
   reduced blocks (an "accumulate" phase, then a "copy" phase). Each
   rank sends 2(p-1)/p·n bytes, the minimum for an all-reduce.
       p = 4: steps 0-2 the reduce-scatter above, steps 3-5 the all-gather
   cost: 2(p-1)α + 2(p-1)/p·nβ + (p-1)/p·nγ                                  */
static int coll__ring_allreduce(const coll__plan *pl, int s, coll__step *st)
{
    if (s < pl->p - 1) return coll__ring_reduce_scatter(pl, s, st);
    return coll__ring_allgather(pl, s - (pl->p - 1), st);
}

/* ---- binomial trees -------------------------------------------------------- */

/* Binomial-tree reduce to root. With v = rank relative to root, in step l
   rank v (low l bits zero) receives the partial result of v + 2^l and folds
   it in; rank v with bit l set sends its partial result to v - 2^l and is
   done. Operands stay in rank order when root = 0 (a holds lower ranks).
       step 0, p = 4:  1 -> 0, 3 -> 2;   step 1:  2 -> 0
   cost: lg·(α + nβ + nγ)                                                    */
static int coll__binomial_reduce(const coll__plan *pl, int s, coll__step *st)
{
    int p = pl->p, v = coll__mod(pl->rank - pl->root, p), mask;
    if (s >= coll__ceil_log2(p)) return 0;
    mask = 1 << s;
    coll__idle(st);
    if (v & (mask - 1)) return 1;                       /* sent earlier */
    if (v & mask) {
        st->to = coll__mod(v - mask + pl->root, p);
        st->sbuf = (s > 0 && v + 1 < p) ? COLL_BUF_DST : COLL_BUF_SRC;  /* received anything? */
        st->slen = pl->count;
    } else if (v + mask < p) {
        st->from = coll__mod(v + mask + pl->root, p);
        st->rlen = pl->count;
        st->abuf = s == 0 ? COLL_BUF_SRC : COLL_BUF_DST;  /* first child meets own data */
        st->reduce = 1;
    }
    return 1;
}

/* Binomial-tree broadcast from root: the mirror image of the reduce. In
   step s (level l = lg-1-s) every rank that has the data and whose low l+1
   bits are zero sends it 2^l ranks further.
       p = 4:  step 0:  0 -> 2;   step 1:  0 -> 1, 2 -> 3
   cost: lg·(α + nβ)                                                          */
static int coll__binomial_broadcast(const coll__plan *pl, int s, coll__step *st)
{
    int p = pl->p, L = coll__ceil_log2(p), v = coll__mod(pl->rank - pl->root, p), mask;
    if (s >= L) return 0;
    mask = 1 << (L - 1 - s);
    coll__idle(st);
    if ((v & (2 * mask - 1)) == 0 && v + mask < p) {
        st->to = coll__mod(v + mask + pl->root, p);
        st->slen = pl->count;
    } else if ((v & (2 * mask - 1)) == mask) {
        st->from = coll__mod(v - mask + pl->root, p);
        st->rlen = pl->count;
    }
    return 1;
}

/* Bine tree broadcast (De Sensi et al., SC'25): a binomial tree whose
   edges join ranks rho(s) apart (above), taken far to near: step k pairs
   at rho(L-1-k), each rank that holds the data passing it on. Ranks v
   (relative to the root, below p2) numbered by the steps on their way from
   the root, bit s for a step at rho(s) (coll__bine_pos), v holds the data
   before step k when bits 0..L-1-k are 0 and receives it in step k when
   they are just bit L-1-k. So the many late messages are the short ones;
   ranks p2.. get the data last, from v - p2.
       p = 4:  step 0:  0 -> 3;   step 1:  0 -> 1, 3 -> 2
   cost: lg·(α + nβ)                                                          */
static int coll__bine_pos(int v, int L)
{
    unsigned m = (1u << L) - 1u, M = 0xAAAAAAAAu & m;
    unsigned f = (((unsigned)v + M) ^ M) & m;       /* v's negabinary digits */
    return (int)(f ^ f >> 1);   /* f_i: parity of the steps >= i taken */
}

static int coll__bine_broadcast(const coll__plan *pl, int s, coll__step *st)
{
    int p = pl->p, p2 = pl->p2, L = coll__ceil_log2(p2), v = coll__mod(pl->rank - pl->root, p), low, bit;
    if (s >= L + (p > p2)) return 0;
    coll__idle(st);
    if (s == L) {                                       /* the ranks past p2 */
        if (v >= p2) { st->from = coll__mod(v - p2 + pl->root, p); st->rlen = pl->count; }
        else if (v + p2 < p) { st->to = coll__mod(v + p2 + pl->root, p); st->slen = pl->count; }
        return 1;
    }
    if (v >= p2) return 1;
    bit = 1 << (L - 1 - s);
    low = coll__bine_pos(v, L) & (2 * bit - 1);
    if (low == 0) { st->to = coll__mod(coll__swing_peer(v, L - 1 - s, p2) + pl->root, p); st->slen = pl->count; }
    else if (low == bit) { st->from = coll__mod(coll__swing_peer(v, L - 1 - s, p2) + pl->root, p); st->rlen = pl->count; }
    return 1;
}

/* Bine tree reduce: the broadcast's tree backwards, near to far (step k
   undoes the broadcast's step L-1-k), each rank folding its children's
   partial results into its own before passing it up; the ranks past p2
   hand theirs in first.
       p = 4:  step 0:  1 -> 0, 2 -> 3;   step 1:  3 -> 0
   cost: lg·(α + nβ + nγ)                                                    */
static int coll__bine_reduce(const coll__plan *pl, int s, coll__step *st)
{
    int p = pl->p, p2 = pl->p2, L = coll__ceil_log2(p2), f = p > p2, k = s - f;
    int v = coll__mod(pl->rank - pl->root, p), w, low, got;
    if (s >= L + f) return 0;
    coll__idle(st);
    if (k < 0) {                                        /* the ranks past p2 */
        if (v >= p2) { st->to = coll__mod(v - p2 + pl->root, p); st->sbuf = COLL_BUF_SRC; st->slen = pl->count; }
        else if (v + p2 < p) { st->from = coll__mod(v + p2 + pl->root, p); st->rlen = pl->count;
                               st->abuf = COLL_BUF_SRC; st->reduce = 1; }
        return 1;
    }
    if (v >= p2) return 1;
    w = coll__bine_pos(v, L);
    low = w & ((2 << k) - 1);
    got = (f && v + p2 < p) || (k > 0 && !(w & 1));      /* received anything? */
    if (low == 1 << k) {
        st->to = coll__mod(coll__swing_peer(v, k, p2) + pl->root, p);
        st->sbuf = got ? COLL_BUF_DST : COLL_BUF_SRC;
        st->slen = pl->count;
    } else if (low == 0) {
        st->from = coll__mod(coll__swing_peer(v, k, p2) + pl->root, p);
        st->rlen = pl->count;
        st->abuf = got ? COLL_BUF_DST : COLL_BUF_SRC;
        st->reduce = 1;
    }
    return 1;
}

/* Blocks of relative ranks [v0, v0+n) sit at real ranks (v0+root) mod p
   onward, which may wrap past p: part 0 is the piece before the wrap,
   part 1 the piece after it (often empty). */
static void coll__wrapped(const coll__plan *pl, int v0, int n, int part, size_t *off, size_t *len)
{
    int a = coll__mod(v0 + pl->root, pl->p), first = a + n > pl->p ? pl->p - a : n;
    if (part == 0) coll__blocks(pl, a, a + first, off, len);
    else coll__blocks(pl, 0, n - first, off, len);
}

/* Binomial gather to root: the reduce's tree, but each rank forwards the
   blocks of its whole subtree instead of a sum. Each level takes two steps
   (the subtree's blocks before and after wrapping past rank p-1). Every
   rank's dst is a workspace of p blocks.
       p = 4:  steps 0-1:  1 -> 0, 3 -> 2;   steps 2-3:  2 -> 0 (blocks 2, 3)
   cost: lg·α + (p-1)/p·nβ                                                  */
static int coll__binomial_gather(const coll__plan *pl, int s, coll__step *st)
{
    int p = pl->p, v = coll__mod(pl->rank - pl->root, p), l = s / 2, mask, n;
    if (l >= coll__ceil_log2(p)) return 0;
    mask = 1 << l;
    coll__idle(st);
    if (v & (mask - 1)) return 1;
    if (v & mask) {
        n = p - v < mask ? p - v : mask;
        st->to = coll__mod(v - mask + pl->root, p);
        coll__wrapped(pl, v, n, s % 2, &st->soff, &st->slen);
    } else if (v + mask < p) {
        n = p - v - mask < mask ? p - v - mask : mask;
        st->from = coll__mod(v + mask + pl->root, p);
        coll__wrapped(pl, v + mask, n, s % 2, &st->roff, &st->rlen);
    }
    return 1;
}

/* Binomial scatter from root: the broadcast's tree, each rank passing on
   only the blocks of the subtree below its child. Every rank's src is a
   workspace of p blocks (read at root, written elsewhere).
       p = 4:  steps 0-1:  0 -> 2 (blocks 2, 3);   steps 2-3:  0 -> 1, 2 -> 3
   cost: lg·α + (p-1)/p·nβ                                                  */
static int coll__binomial_scatter(const coll__plan *pl, int s, coll__step *st)
{
    int p = pl->p, L = coll__ceil_log2(p), v = coll__mod(pl->rank - pl->root, p), mask, n;
    if (s / 2 >= L) return 0;
    mask = 1 << (L - 1 - s / 2);
    coll__idle(st);
    st->sbuf = st->rbuf = COLL_BUF_SRC;
    if ((v & (2 * mask - 1)) == 0 && v + mask < p) {
        n = p - v - mask < mask ? p - v - mask : mask;
        st->to = coll__mod(v + mask + pl->root, p);
        coll__wrapped(pl, v + mask, n, s % 2, &st->soff, &st->slen);
    } else if ((v & (2 * mask - 1)) == mask) {
        n = p - v < mask ? p - v : mask;
        st->from = coll__mod(v - mask + pl->root, p);
        coll__wrapped(pl, v, n, s % 2, &st->roff, &st->rlen);
    }
    return 1;
}

/* ---- all-reduce ------------------------------------------------------------- */

/* Tree all-reduce: binomial reduce to rank 0, then binomial broadcast
   (pairwise levels, for any p).
       p = 4:  1 -> 0, 3 -> 2;  2 -> 0;  then 0 -> 2;  0 -> 1, 2 -> 3
   cost: 2·lg·α + lg·n(2β + γ)                                               */
static int coll__tree_allreduce(const coll__plan *pl, int s, coll__step *st)
{
    int L = coll__ceil_log2(pl->p);
    if (s < L) return coll__binomial_reduce(pl, s, st);
    return coll__binomial_broadcast(pl, s - L, st);
}

/* Naive all-reduce: rank 0 receives every other rank's
   whole vector in turn and folds it in, then sends the result to each.
       p = 4:  1 -> 0, 2 -> 0, 3 -> 0 (folded in turn);  0 -> 1, 0 -> 2, 0 -> 3
   cost: 2(p-1)(α + nβ) + (p-1)nγ, all of it at rank 0                       */
static int coll__naive_allreduce(const coll__plan *pl, int s, coll__step *st)
{
    int r = pl->rank, p = pl->p, peer;
    if (s >= 2 * (p - 1)) return 0;
    coll__idle(st);
    peer = 1 + (s < p - 1 ? s : s - (p - 1));
    if (s < p - 1) {                                   /* gather and fold at 0 */
        if (r == 0) { st->from = peer; st->rlen = pl->count; st->reduce = 1;
                      st->abuf = s == 0 ? COLL_BUF_SRC : COLL_BUF_DST; }
        else if (r == peer) { st->to = 0; st->sbuf = COLL_BUF_SRC; st->slen = pl->count; }
    } else {                                           /* hand the result back  */
        if (r == 0) { st->to = peer; st->slen = pl->count; }
        else if (r == peer) { st->from = 0; st->rlen = pl->count; }
    }
    return 1;
}

/* Recursive doubling: in step k rank v swaps its whole partial result with
   v ^ 2^k and reduces, so after lg p2 steps everyone has everything.
   Fewest rounds; for small n.
       p = 4:  step 0:  0 <-> 1, 2 <-> 3;   step 1:  0 <-> 2, 1 <-> 3
   cost: lg·α + n·lg(β+γ)   (+ 2(α + nβ) to fold a non-power-of-two p)      */
static int coll__rd_allreduce(const coll__plan *pl, int s, coll__step *st)
{
    int k, L = coll__ceil_log2(pl->p2), v = coll__vrank(pl, pl->rank), ready;
    if (pl->p == 1 || !coll__folded(pl, s, L, &k)) return 0;
    coll__idle(st);
    if (k < 0) { coll__fold_in(pl, st, 1); return 1; }
    if (k == L) { coll__fold_out(pl, st, COLL_BUF_DST, 0, pl->count); return 1; }
    if (v < 0) return 1;
    ready = coll__dst_ready(pl, k);
    coll__pair(st, pl->rank, coll__rrank(pl, v ^ (1 << k)));
    st->sbuf = st->abuf = ready ? COLL_BUF_DST : COLL_BUF_SRC;
    st->slen = st->rlen = pl->count;
    st->reduce = (v & (1 << k)) ? 2 : 1;  /* both partners fold lower (+) higher: same bits */
    return 1;
}

/* Rabenseifner: recursive-halving reduce-scatter, then recursive-doubling
   all-gather. Ring's bandwidth with lg rounds instead of p-1.
       p = 4:  0 <-> 2, 1 <-> 3 (halves);  0 <-> 1, 2 <-> 3 (quarters);
       then the same pairs in reverse order, gathering
   cost: 2·lg·α + 2(p-1)/p·nβ + (p-1)/p·nγ   (+ the fold, as above)          */
static int coll__rabenseifner_allreduce(const coll__plan *pl, int s, coll__step *st)
{
    int k, L = coll__ceil_log2(pl->p2);
    if (pl->p == 1 || !coll__folded(pl, s, 2 * L, &k)) return 0;
    coll__idle(st);
    if (k < 0) { coll__fold_in(pl, st, 1); return 1; }
    if (k == 2 * L) { coll__fold_out(pl, st, COLL_BUF_DST, 0, pl->count); return 1; }
    if (coll__vrank(pl, pl->rank) < 0) return 1;
    if (k < L) coll__halving(pl, k, COLL_BUF_DST, st);
    else coll__doubling_gather(pl, k - L, COLL_BUF_DST, st);
    return 1;
}

/* Swing all-reduce (De Sensi et al., NSDI'24): Rabenseifner's halving,
   then doubling, with step s pairing v and v +- rho(s), so the largest
   messages go to the nearest ranks. Rabenseifner's bytes and rounds; on a
   ring or torus, fewer links crossed (a flat α-β model does not see
   links, so AUTO, between equal costs, keeps Rabenseifner).
       p = 4:  0 <-> 1, 2 <-> 3 (halves);  0 <-> 3, 1 <-> 2 (quarters);
       then the same pairs in reverse order, gathering
   cost: 2·lg·α + 2(p-1)/p·nβ + (p-1)/p·nγ   (+ the fold)                    */
static int coll__swing_allreduce(const coll__plan *pl, int s, coll__step *st)
{
    int k, L = coll__ceil_log2(pl->p2), v = coll__vrank(pl, pl->rank), w;
    if (pl->p == 1 || !coll__folded(pl, s, 2 * L, &k)) return 0;
    coll__idle(st);
    if (k < 0) { coll__fold_in(pl, st, 1); return 1; }
    if (k == 2 * L) { coll__fold_out(pl, st, COLL_BUF_DST, 0, pl->count); return 1; }
    if (v < 0) return 1;
    w = coll__swing_pos(v, L);
    if (k < L) coll__halving_at(pl, k, w, coll__swing_peer(v, k, pl->p2), COLL_BUF_DST, st);
    else coll__doubling_gather_at(pl, k - L, w, coll__swing_peer(v, 2 * L - 1 - k, pl->p2), COLL_BUF_DST, st);
    return 1;
}

/* A schedule run on a group of the ranks: q is pl seen from rank `me` of
   np; coll__from_group maps the step's peers back (group rank i is rank
   base + i*stride). The caller names the schedule itself, so the stack
   and the call graph show which one runs. */
static void coll__group_plan(const coll__plan *pl, coll__plan *q, int me, int np)
{
    COLL_MEMCPY(q, pl, sizeof *q);
    q->rank = me; q->p = np; q->root = 0;
}

static void coll__from_group(int ran, coll__step *st, int base, int stride)
{
    if (!ran) { coll__idle(st); return; }
    if (st->to >= 0) st->to = base + st->to * stride;
    if (st->from >= 0) st->from = base + st->from * stride;
}

/* Hierarchical (groups): ranks form groups of `group`
   consecutive ranks; reduce inside each group to its first rank, all-reduce
   among those leaders with the ring, broadcast back inside each group. The
   slow links between groups carry only the leaders' traffic.
       p = 4, group 2:  1 -> 0, 3 -> 2;  ring 0 <-> 2;  0 -> 1, 2 -> 3
   cost: 2·lg g·(α + nβ) + ring over p/g leaders                            */
static int coll__hierarchical_allreduce(const coll__plan *pl, int s, coll__step *st)
{
    int g = pl->group < pl->p ? pl->group : pl->p;      /* one group if larger than p */
    int r = pl->rank, ng = (pl->p + g - 1) / g, base = r / g * g;
    int size = pl->p - base < g ? pl->p - base : g, Lg = coll__ceil_log2(g), ring = 2 * (ng - 1);
    coll__plan q;
    coll__idle(st);
    if (s < Lg) {
        coll__group_plan(pl, &q, r - base, size);
        coll__from_group(coll__binomial_reduce(&q, s, st), st, base, 1);
        return 1;
    }
    s -= Lg;
    if (s < ring) {
        if (r != base) return 1;
        coll__group_plan(pl, &q, r / g, ng);
        coll__from_group(coll__ring_allreduce(&q, s, st), st, 0, g);
        return 1;
    }
    s -= ring;
    if (s < Lg) {
        coll__group_plan(pl, &q, r - base, size);
        coll__from_group(coll__binomial_broadcast(&q, s, st), st, base, 1);
        return 1;
    }
    return 0;
}

/* Pipelined binary tree (heap order: children 2r+1, 2r+2). The vector is
   cut into C chunks that stream up the tree, reduced at every node, and
   then stream back down, so all levels work at once.
   Up, for c = 0..C: [send chunk c-1 to parent, receive chunk c from the
   left child], [receive chunk c from the right child]. Down, for c = 0..C:
   [send chunk c-1 to the left child, receive chunk c from the parent],
   [send chunk c-1 to the right child].
       p = 4 (0 the root, 1 and 2 its children, 3 below 1): chunks
       stream 3 -> 1 -> 0 <- 2, then 0 -> 1 -> 3 and 0 -> 2
   cost: ≈ (2·lg + 4C)·α + 3nβ·(1 + lg/C) at an inner node                  */
static int coll__pipelined_tree_allreduce(const coll__plan *pl, int s, coll__step *st)
{
    int r = pl->rank, p = pl->p, parent = r ? (r - 1) / 2 : -1, left = 2 * r + 1, right = 2 * r + 2;
    size_t C = pl->count ? (pl->count - 1) / pl->chunk + 1 : 0, c = (size_t)s / 2 % (C + 1);
    int down = (size_t)s >= 2 * (C + 1), second = s % 2, kids = left < p;
    if (p == 1 || (size_t)s >= 4 * (C + 1)) return 0;
    coll__idle(st);
    if (!down) {
        if (!second && c >= 1 && parent >= 0) {
            st->to = parent; st->sbuf = kids ? COLL_BUF_DST : COLL_BUF_SRC;
            st->soff = (c - 1) * pl->chunk;
            st->slen = (c < C ? c * pl->chunk : pl->count) - st->soff;
        }
        if (c < C && (second ? right : left) < p) {
            st->from = second ? right : left;
            st->roff = st->aoff = c * pl->chunk;
            st->rlen = (c + 1 < C ? (c + 1) * pl->chunk : pl->count) - st->roff;
            st->abuf = second ? COLL_BUF_DST : COLL_BUF_SRC;
            st->reduce = 1;
        }
    } else {
        int child = second ? right : left;
        if (c >= 1 && child < p) {
            st->to = child; st->soff = (c - 1) * pl->chunk;
            st->slen = (c < C ? c * pl->chunk : pl->count) - st->soff;
        }
        if (!second && c < C && parent >= 0) {
            st->from = parent; st->roff = c * pl->chunk;
            st->rlen = (c + 1 < C ? (c + 1) * pl->chunk : pl->count) - st->roff;
        }
    }
    return 1;
}

/* ---- the double binary tree --------------------------------------------------- */

/* Tree t of the double binary tree (NCCL's pair of trees) over the q = p - o
   ranks from o = p mod 2 on, in coordinates v = u = r - o (tree 0) or
   v = u ^ 1 (tree 1). Rank v sits at level h = log2 of its lowest set bit
   b; its parent is (v ^ b) | 2b (v ^ b past the end), its children
   v - b/2 and v + b/2 (or the nearest one before q); v = 0 is on top with
   one child. Tree 0's leaves are the odd u, tree 1's the even u: a rank is
   inner in one tree only. An odd p puts rank 0 above tree 0 and as a leaf
   (the missing left child) under tree 1's top. n[0] the parent, n[1],
   n[2] the children (ranks, -1 for none); n[3] the rank's level, n[4],
   n[5] its children's. */
static void coll__dtree(int p, int r, int t, int *n)
{
    int o = p & 1, q = p - o, v = (r - o) ^ t, b = 1, l, h = 0, i;
    n[0] = n[1] = n[2] = -1;
    n[3] = 0;
    if (r < o) {                            /* rank 0 of an odd p */
        while (b < q) { b <<= 1; h++; }
        if (t) n[0] = o + 1;
        else if (q) { n[2] = o; n[5] = h; n[3] = h + 1; }
        return;
    }
    while (b < q && !(v & b)) { b <<= 1; h++; }
    n[3] = h;
    l = b / 2;
    n[0] = v ? ((v ^ b) | 2 * b) : -1;
    if (n[0] >= q) n[0] = v ^ b;
    n[1] = v && l ? v - l : -1;
    n[4] = h - 1;
    while (l && v + l >= q) { l /= 2; h--; }
    n[2] = l ? v + l : -1;
    n[5] = h - 1;
    for (i = 0; i < 3; i++)
        if (n[i] >= 0) n[i] = (n[i] ^ t) + o;
    if (!v && o) {                          /* rank 0 above tree 0, under tree 1 */
        if (t) { n[1] = 0; n[4] = 0; } else n[0] = 0;
    }
}

/* The slot (0 or 1 of a round) in which rank k and its parent in tree t
   meet: the parity of k's bits (u), flipped in tree 1. Two children of
   one parent differ in it (v - b/2 has v's bits, v + b/2 one more), and a
   rank's two parents get different slots, so every message of a round is
   sent and received in the same step. Rank 0 of an odd p takes slot 0
   under tree 1's top, whose own child (u = 0 or 2^k + 1) has slot 1. */
static int coll__dt_slot(int p, int k, int t)
{
    int o = p & 1, u = k - o, f = t;
    if (k < o) return 0;
    while (u) { f ^= u & 1; u >>= 1; }
    return f;
}

/* Chunk c of tree t's half (tree 0 [0, h), tree 1 [h, count), h = the
   larger half): its length, 0 outside; its first element in *off. */
static size_t coll__dt_chunk(const coll__plan *pl, int t, long c, size_t *off)
{
    size_t h = pl->count - pl->count / 2, end = t ? pl->count : h;
    *off = (t ? h : 0) + (c < 0 ? end : (size_t)c * pl->chunk);
    return *off < end ? (end - *off < pl->chunk ? end - *off : pl->chunk) : 0;
}

/* One slot (i) of round R of the double tree's pass up (down = 0) or
   down, for this rank counted from rank `base`. Each edge is named by its
   lower end k, whose level h times it: chunk R - h goes up, R - (H - h)
   comes down. Relative rank `cut` (or none, -1) is left out of tree 1. */
static void coll__dt_pass(const coll__plan *pl, int base, long R, int i, int down, int H, int cut,
                          coll__step *st)
{
    int p = pl->p, w = coll__mod(pl->rank - base, p), t, j, n[6];
    size_t off, len;
    for (t = 0; t < 2; t++) {
        coll__dtree(p, w, t, n);
        for (j = 0; j < 3 && t; j++)        /* tree 1 without rank `cut` */
            if ((j ? n[j] : w) == cut) n[j] = -1;
        for (j = 0; j < 3; j++) {           /* the parent, then the children */
            int h = n[j + 3];
            if (n[j] < 0 || coll__dt_slot(p, j ? n[j] : w, t) != i ||
                (len = coll__dt_chunk(pl, t, R - (down ? H - h : h), &off)) == 0) continue;
            if ((j == 0) != down) {         /* up to the parent, down to a child */
                st->to = coll__mod(n[j] + base, p); st->soff = off; st->slen = len;
                if (!down && n[1] < 0 && n[2] < 0) st->sbuf = COLL_BUF_SRC;   /* a leaf's own data */
            } else {
                st->from = coll__mod(n[j] + base, p); st->roff = off; st->rlen = len;
                if (!down) {                /* the other child heard first: fold into dst */
                    int later = n[3 - j] >= 0 && (n[6 - j] < h || (n[6 - j] == h && i));
                    st->aoff = off; st->reduce = 1;
                    st->abuf = later ? COLL_BUF_DST : COLL_BUF_SRC;
                }
            }
        }
    }
    st->send_first = st->to >= 0 && pl->rank < st->to;
}

/* Chunks in tree 0's half (the larger). */
static long coll__dt_chunks(const coll__plan *pl)
{
    return pl->count ? (long)((pl->count - pl->count / 2 - 1) / pl->chunk + 1) : 0;
}

/* Double binary tree all-reduce (NCCL's): tree 0 reduces and broadcasts
   the first half of the vector, tree 1 the second, each pipelined in
   chunks of pl->chunk. A rank inner in one tree is a leaf in the other,
   so a step pairs a message on one tree with one on the other. Round R
   has two steps (slots, coll__dt_slot); up, a rank at level h sends chunk
   R - h to its parent, after its children's chunk R - h arrived from
   lower levels; down, it receives chunk R - (H - h) from its parent (H
   the highest level below a parent). Each rank sends and receives about
   2n bytes (the single tree 3n at an inner node), 2 steps of a chunk each
   way per round, 4(C/2 + H) steps.
       p = 4: tree 0  0 - 2 - {1, 3};  tree 1  1 - 3 - {0, 2}
   cost: ≈ (2C + 4·lg)·(α + nβ/C) + nγ, C = chunks in n                   */
static int coll__double_tree_allreduce(const coll__plan *pl, int s, coll__step *st)
{
    int p = pl->p, H = coll__ceil_log2(p - (p & 1)) + (p & 1) - 1;
    long C = coll__dt_chunks(pl), R = s / 2;
    int down = R >= C + H;
    if (p == 1 || s >= 4 * (C + H)) return 0;
    coll__idle(st);
    coll__dt_pass(pl, 0, down ? R - C - H : R, s % 2, down, H, -1, st);
    return 1;
}

/* Double binary tree broadcast and reduce: the all-reduce's two trees
   over ranks counted from the root, each carrying half the vector in
   chunks; broadcast runs their pass down, reduce their pass up. The root
   tops tree 0 (or sits above its top, odd p) and is left out of tree 1:
   a third step per round carries tree 1's half between the root and
   tree 1's top, relative rank p mod 2 + 1 - first in a round down (root
   to top, chunk c in round c), last up (top to root, chunk c in round
   c + lg q - 1, where the root's own half joins; q = p - p mod 2). With
   the all-reduce's H, chunk c crosses level h in round c + H - h down,
   c + h up. No rank is busy in more than two of a round's three steps,
   and each sends about n bytes where a single binary tree's inner rank
   sends 2n.
       p = 4, root 0: tree 0  0 - 2 - {1, 3};  tree 1  1 - 3 - 2, and 0 - 1
   cost: ≈ (C + 2·lg)·(α + nβ/C) (+ nγ to reduce), C = chunks in n       */
static int coll__double_tree_rooted(const coll__plan *pl, int s, coll__step *st)
{
    int down = COLL__KIND_IS(pl->kind, COLL_BROADCAST), p = pl->p, o = p & 1, lq = coll__ceil_log2(p - o);
    int H = lq + o - 1, top = coll__mod(pl->root + o + 1, p), root = pl->rank == pl->root, i = (s + 2 * down) % 3;
    long C = coll__dt_chunks(pl), R = s / 3;
    size_t off, len;
    if (p == 1 || s >= 3 * (C + H)) return 0;
    coll__idle(st);
    if (i < 2) coll__dt_pass(pl, pl->root, R, i, down, H, 0, st);
    else if ((root || pl->rank == top) && (len = coll__dt_chunk(pl, 1, down ? R : R - lq + 1, &off)) != 0) {
        int peer = root ? top : pl->root;
        if (root == down) {                 /* the root's edge to tree 1's top */
            st->to = peer; st->soff = off; st->slen = len;
            if (p == 2 && !down) st->sbuf = COLL_BUF_SRC;   /* the top had only the root below */
        } else {
            st->from = peer; st->roff = off; st->rlen = len;
            if (!down) { st->reduce = 1; st->aoff = off; st->abuf = COLL_BUF_SRC; }
        }
    }
    return 1;
}

/* ---- reduce-scatter --------------------------------------------------------- */

/* Pairwise exchange: in step s rank r sends block r+s straight to its
   owner and reduces block r arriving from r-s. No workspace; p-1 rounds.
       step 0, p = 4:  r -> r+1 (0 -> 1 -> 2 -> 3 -> 0);   step 1:  r -> r+2
   cost: (p-1)α + (p-1)/p·n(β+γ)                                            */
static int coll__pairwise_reduce_scatter(const coll__plan *pl, int s, coll__step *st)
{
    int r = pl->rank, p = pl->p, to = coll__mod(r + s + 1, p), from = coll__mod(r - s - 1, p);
    size_t len;
    if (s >= p - 1) return 0;
    coll__idle(st);
    st->to = to; st->from = from;
    st->send_first = coll__shift_send_first(r, p, s + 1);
    st->sbuf = COLL_BUF_SRC;
    coll__block(pl, to, &st->soff, &st->slen);
    coll__block(pl, r, &st->aoff, &len);
    st->rlen = len;
    st->rbuf = pl->inplace ? COLL_BUF_SRC : COLL_BUF_DST;
    st->roff = pl->inplace ? st->aoff : 0;
    st->abuf = s == 0 ? COLL_BUF_SRC : st->rbuf;
    if (s > 0) st->aoff = st->roff;
    st->reduce = 1;
    return 1;
}

/* Recursive halving (in place: the whole src is the workspace). lg p2
   rounds, each halving the data in flight.
       p = 4:  step 0:  0 <-> 2, 1 <-> 3 (halves);   step 1:  0 <-> 1, 2 <-> 3
   cost: lg·α + (p-1)/p·n(β+γ)   (+ the fold)                               */
static int coll__halving_reduce_scatter(const coll__plan *pl, int s, coll__step *st)
{
    int k, L = coll__ceil_log2(pl->p2), r = pl->rank;
    if (pl->p == 1 || !coll__folded(pl, s, L, &k)) return 0;
    coll__idle(st);
    if (k < 0) {
        coll__fold_in(pl, st, 1);
        st->rbuf = st->abuf = COLL_BUF_SRC;
        return 1;
    }
    if (k == L) {       /* odd r of a folded pair holds block r-1 too */
        size_t off, len;
        coll__block(pl, r < 2 * pl->rem && r % 2 ? r - 1 : r, &off, &len);
        coll__fold_out(pl, st, COLL_BUF_SRC, off, len);
        return 1;
    }
    if (coll__vrank(pl, r) >= 0) coll__halving(pl, k, COLL_BUF_SRC, st);
    return 1;
}

/* Swing reduce-scatter: the halving of the Swing all-reduce (in place,
   in src), which leaves rank v with the region numbered sigma(v), then one
   step that hands each region to its owner.
       p = 4:  0 <-> 1, 2 <-> 3;  0 <-> 3, 1 <-> 2;  then 1 <-> 2 (swapped)
   cost: (lg + 1)·α + (p-1)/p·n(β+γ) + n/p·β   (+ the fold)                 */
static int coll__swing_reduce_scatter(const coll__plan *pl, int s, coll__step *st)
{
    int k, L = coll__ceil_log2(pl->p2), r = pl->rank, v = coll__vrank(pl, r);
    if (pl->p == 1 || !coll__folded(pl, s, L + 1, &k)) return 0;
    coll__idle(st);
    if (k < 0) {
        coll__fold_in(pl, st, 1);
        st->rbuf = st->abuf = COLL_BUF_SRC;
        return 1;
    }
    if (k == L + 1) {   /* odd r of a folded pair holds block r-1 too */
        size_t off, len;
        coll__block(pl, r < 2 * pl->rem && r % 2 ? r - 1 : r, &off, &len);
        coll__fold_out(pl, st, COLL_BUF_SRC, off, len);
        return 1;
    }
    if (v < 0) return 1;
    if (k == L) coll__swing_permute(pl, L, 1, COLL_BUF_SRC, st);
    else coll__halving_at(pl, k, coll__swing_pos(v, L), coll__swing_peer(v, k, pl->p2), COLL_BUF_SRC, st);
    return 1;
}

/* ---- all-gather ------------------------------------------------------------- */

/* Recursive doubling: lg p2 rounds, each doubling the blocks held.
       p = 4:  step 0:  0 <-> 1, 2 <-> 3;   step 1:  0 <-> 2, 1 <-> 3 (pairs)
   cost: lg·α + (p-1)/p·nβ   (+ the fold)                                   */
static int coll__rd_allgather(const coll__plan *pl, int s, coll__step *st)
{
    int k, L = coll__ceil_log2(pl->p2);
    if (pl->p == 1 || !coll__folded(pl, s, L, &k)) return 0;
    coll__idle(st);
    if (k < 0) { coll__fold_in(pl, st, 0); return 1; }
    if (k == L) { coll__fold_out(pl, st, COLL_BUF_DST, 0, pl->total); return 1; }
    if (coll__vrank(pl, pl->rank) >= 0) coll__doubling_gather(pl, k, COLL_BUF_DST, st);
    return 1;
}

/* Swing all-gather: one step that hands rank v's region to the rank
   numbered v, then the doubling of the Swing all-reduce.
       p = 4:  1 <-> 2 (swapped);  then 0 <-> 3, 1 <-> 2;  0 <-> 1, 2 <-> 3
   cost: (lg + 1)·α + (p-1)/p·nβ + n/p·β   (+ the fold)                     */
static int coll__swing_allgather(const coll__plan *pl, int s, coll__step *st)
{
    int k, L = coll__ceil_log2(pl->p2), v = coll__vrank(pl, pl->rank);
    if (pl->p == 1 || !coll__folded(pl, s, L + 1, &k)) return 0;
    coll__idle(st);
    if (k < 0) { coll__fold_in(pl, st, 0); return 1; }
    if (k == L + 1) { coll__fold_out(pl, st, COLL_BUF_DST, 0, pl->total); return 1; }
    if (v < 0) return 1;
    if (k == 0) coll__swing_permute(pl, L, 0, COLL_BUF_DST, st);
    else coll__doubling_gather_at(pl, k - 1, coll__swing_pos(v, L), coll__swing_peer(v, L - k, pl->p2), COLL_BUF_DST, st);
    return 1;
}

/* Bruck: dst holds the blocks rotated so that rank r's own block comes
   first; in step k every rank sends its first min(2^k, p-2^k) blocks to
   r - 2^k and appends those of r + 2^k. A final local rotation puts the
   blocks in rank order. ⌈lg p⌉ rounds for any p, no fold.
       step 0, p = 4:  r -> r-1 (1 -> 0, 2 -> 1, 3 -> 2, 0 -> 3);   step 1:  r -> r-2
   cost: lg·α + (p-1)/p·nβ                                                  */
static size_t coll__bruck_off(const coll__plan *pl, int j)   /* rotated offset */
{
    size_t a, b, len;
    coll__block(pl, pl->rank, &a, &len);
    if (pl->rank + j <= pl->p) { coll__blocks(pl, pl->rank, pl->rank + j, &b, &len); return len; }
    coll__block(pl, coll__mod(pl->rank + j, pl->p), &b, &len);
    return pl->total - a + b;
}
static int coll__bruck_allgather(const coll__plan *pl, int s, coll__step *st)
{
    int r = pl->rank, p = pl->p, d, m;
    if (s >= coll__ceil_log2(p)) return 0;
    d = 1 << s;
    m = d < p - d ? d : p - d;
    coll__idle(st);
    st->to = coll__mod(r - d, p);
    st->from = coll__mod(r + d, p);
    st->send_first = coll__shift_send_first(r, p, -d);
    st->slen = coll__bruck_off(pl, m);
    st->roff = coll__bruck_off(pl, d);
    st->rlen = coll__bruck_off(pl, d + m) - st->roff;
    return 1;
}

/* ---- reversed Bruck: reduce-scatter and all-reduce, any p, no fold -------
   The Bruck all-gather run backwards reduces instead of gathering:
   ⌈lg p⌉ rounds for any p, each block sent once per round it travels,
   and no power-of-two fold. It works, as the Bruck all-gather does, on
   the blocks rotated so that this rank's own comes first (relative block
   j is block r+j mod p, at coll__bruck_off(j)); the rows' begin and
   finish hooks below rotate the work buffer there and back, in place
   through scratch. The partial sums live in the work buffer (src in
   place, dst for the all-reduce), so scratch stays two segments whatever
   p and n. */

/* Reduce-scatter round k (k = lg-1 down to 0), d = 2^k, m = min(d, p-d):
   rank r passes its partial sums of relative blocks [d, d+m) (blocks
   r+d .. r+d+m-1) to r+d, for which they are relative [0, m), and folds
   those of its own [0, m) arriving from r-d into them. Before round k
   rank r holds partial sums of [0, min(2d, p)); after round 0 it holds
   its own block, complete. */
static void coll__rbruck_round(const coll__plan *pl, int k, int work, coll__step *st)
{
    int r = pl->rank, p = pl->p, d = 1 << k, m = d < p - d ? d : p - d;
    st->to = coll__mod(r + d, p);
    st->from = coll__mod(r - d, p);
    st->send_first = coll__shift_send_first(r, p, d);
    st->sbuf = st->rbuf = st->abuf = work;
    st->soff = coll__bruck_off(pl, d);
    st->slen = coll__bruck_off(pl, d + m) - st->soff;
    st->roff = st->aoff = 0;
    st->rlen = coll__bruck_off(pl, m);
    st->reduce = 1;
}

/* Reversed Bruck reduce-scatter, in place (src is the workspace): the
   rounds above (the rounds of NCCL's PAT), then src rotated back.
       p = 5:  round 2:  r -> r+4 (block r+4);   round 1:  r -> r+2
       (blocks r+2, r+3);   round 0:  r -> r+1 (block r+1)
   cost: lg·α + (p-1)/p·n(β+γ), + two rotations (local passes; AUTO does
   not pick it: it needs the caller's in-place layout)                     */
static int coll__rbruck_reduce_scatter(const coll__plan *pl, int s, coll__step *st)
{
    int L = coll__ceil_log2(pl->p);
    if (s >= L) return 0;
    coll__idle(st);
    coll__rbruck_round(pl, L - 1 - s, COLL_BUF_SRC, st);
    return 1;
}

/* Reversed Bruck all-reduce: dst takes src rotated, the reduce-scatter
   above, the Bruck all-gather (its mirror image), dst rotated back.
   Ring's bytes in 2⌈lg p⌉ rounds for any p; for p not a power of two it
   saves Rabenseifner's fold (its n more bytes and 2 rounds).
       p = 5:  rounds 2, 1, 0 reducing (as above), then 0, 1, 2 gathering
   cost: 2·lg·α + 2(p-1)/p·nβ + (p-1)/p·nγ, + 4nγ for the rotations (a
   copy in, about 3n bytes copied back through scratch)                     */
static int coll__rbruck_allreduce(const coll__plan *pl, int s, coll__step *st)
{
    int L = coll__ceil_log2(pl->p);
    if (s >= 2 * L) return 0;
    if (s >= L) return coll__bruck_allgather(pl, s - L, st);
    coll__idle(st);
    coll__rbruck_round(pl, L - 1 - s, COLL_BUF_DST, st);
    return 1;
}

/* Their local moves (the rows' hooks): the work buffer - dst for the
   all-reduce, the whole src for the reduce-scatter - rotated left by this
   rank's block offset, and back after the last round. In place the
   rotation swaps blocks through scratch (Gries and Mills: swap the
   shorter side across and repeat on the rest; about 3n bytes copied, a
   segment at a time), so it works on device memory too. */
static int coll__rotate_via(coll_request *q, unsigned char *b, size_t n, size_t k)
{
    size_t i = k, j = n - k, len, c, cap = 2 * q->c->segment;
    unsigned char *x, *y, *t = q->c->scratch;
    int rc = COLL_OK;
    if (k && k < n && !cap) return COLL_ERR_NOSPC;  /* reducing calls have scratch */
    while (i && j && rc == COLL_OK) {               /* [x, x+len) <-> [y, y+len) */
        x = b + k - i;
        if (i <= j) { y = b + k + j - i; len = i; j -= i; }
        else        { y = b + k; len = j; i -= j; }
        for (; len && rc == COLL_OK; x += c, y += c, len -= c) {
            c = len < cap ? len : cap;
            rc = coll__copy(q->c, t, x, c);
            if (rc == COLL_OK) rc = coll__copy(q->c, x, y, c);
            if (rc == COLL_OK) rc = coll__copy(q->c, y, t, c);
        }
    }
    return rc;
}

/* The work buffer - dst for the all-reduce, the whole src for the
   reduce-scatter - rotated left by this rank's block offset (back: right):
   out of place the rotation is dst taking src in two copies. */
static int coll__rbruck_rotate(coll_request *q, int back)
{
    size_t off, len, n = q->pl.total * q->esize, k;
    unsigned char *src = q->b[COLL_BUF_SRC].at;
    unsigned char *w = q->b[COLL__KIND_IS(q->pl.kind, COLL_ALLREDUCE) ? COLL_BUF_DST : COLL_BUF_SRC].at;
    int rc;
    coll__block(&q->pl, q->pl.rank, &off, &len);
    k = back ? n - off * q->esize : off * q->esize;
    if (back || w == src) return coll__rotate_via(q, w, n, k);
    rc = coll__copy(q->c, w, src + k, n - k);
    return rc == COLL_OK ? coll__copy(q->c, w + (n - k), src, k) : rc;
}

static int coll__rbruck_begin(coll_request *q) { return coll__rbruck_rotate(q, 0); }
static int coll__rbruck_finish(coll_request *q) { return coll__rbruck_rotate(q, 1); }

/* ---- broadcast -------------------------------------------------------------- */

/* Van de Geijn: scatter the vector's p blocks down the binomial tree, then
   ring all-gather them. Near 2n bytes per rank instead of n·lg p.
       p = 4:  0 -> 2 (half);  0 -> 1, 2 -> 3 (quarters);  then a ring all-gather
   cost: (lg + p-1)α + 2(p-1)/p·nβ                                         */
static int coll__scatter_allgather_broadcast(const coll__plan *pl, int s, coll__step *st)
{
    int p = pl->p, L = coll__ceil_log2(p), v = coll__mod(pl->rank - pl->root, p), mask, n;
    if (p == 1 || s >= L + p - 1) return 0;
    coll__idle(st);
    if (s < L) {                          /* blocks are numbered by v here */
        mask = 1 << (L - 1 - s);
        if ((v & (2 * mask - 1)) == 0 && v + mask < p) {
            n = p - v - mask < mask ? p - v - mask : mask;
            st->to = coll__mod(v + mask + pl->root, p);
            coll__blocks(pl, v + mask, v + mask + n, &st->soff, &st->slen);
        } else if ((v & (2 * mask - 1)) == mask) {
            n = p - v < mask ? p - v : mask;
            st->from = coll__mod(v - mask + pl->root, p);
            coll__blocks(pl, v, v + n, &st->roff, &st->rlen);
        }
        return 1;
    }
    s -= L;
    st->to = coll__mod(pl->rank + 1, p);
    st->from = coll__mod(pl->rank - 1, p);
    coll__block(pl, coll__mod(v - s, p), &st->soff, &st->slen);
    coll__block(pl, coll__mod(v - s - 1, p), &st->roff, &st->rlen);
    st->send_first = v % 2 == 0;
    return 1;
}

/* Pipelined chain: root -> root+1 -> ... -> root+p-1, the vector cut into
   C chunks; in step s position i forwards chunk s-i and receives chunk
   s-i+1, so every link is busy at once.
       p = 4:  step s:  chunk s 0 -> 1, chunk s-1 1 -> 2, chunk s-2 2 -> 3
   cost: (p-2+C)(α + nβ/C)                                                  */
static int coll__chain_broadcast(const coll__plan *pl, int s, coll__step *st)
{
    int p = pl->p, i = coll__mod(pl->rank - pl->root, p);
    size_t C = pl->count ? (pl->count - 1) / pl->chunk + 1 : 0, c;
    if (p == 1 || C == 0 || (size_t)s >= C + (size_t)p - 2) return 0;
    coll__idle(st);
    if (i < p - 1 && s >= i && (size_t)(s - i) < C) {
        c = (size_t)(s - i);
        st->to = coll__mod(pl->rank + 1, p);
        st->soff = c * pl->chunk;
        st->slen = (c + 1 < C ? (c + 1) * pl->chunk : pl->count) - st->soff;
    }
    if (i > 0 && s + 1 >= i && (size_t)(s - i + 1) < C) {
        c = (size_t)(s - i + 1);
        st->from = coll__mod(pl->rank - 1, p);
        st->roff = c * pl->chunk;
        st->rlen = (c + 1 < C ? (c + 1) * pl->chunk : pl->count) - st->roff;
    }
    return 1;
}

/* ---- reduce ----------------------------------------------------------------- */

/* Rabenseifner's reduce: recursive-halving reduce-scatter, then a binomial
   gather of the reduced regions to virtual rank 0; if the root sat out of
   the fold, its partner hands it the result at the end. Virtual ranks
   are rotated so that the root's side of the fold is 0.
       p = 4, root 0:  0 <-> 2, 1 <-> 3;  0 <-> 1, 2 <-> 3;  then 1 -> 0, 3 -> 2;  2 -> 0
   cost: 2·lg·α + 2(p-1)/p·nβ + (p-1)/p·nγ   (+ the fold)                    */
static int coll__rsg_reduce(const coll__plan *pl, int s, coll__step *st)
{
    int L = coll__ceil_log2(pl->p2), root = pl->root, out = root < 2 * pl->rem && root % 2 == 0;
    int f = pl->rem > 0, k = s - f, v, vroot, mask;
    if (pl->p == 1 || s >= f + 2 * L + out) return 0;
    coll__idle(st);
    if (k < 0) { coll__fold_in(pl, st, 1); return 1; }
    if (k == 2 * L) {                                   /* partner -> root */
        if (pl->rank == root + 1) { st->to = root; st->slen = pl->count; }
        if (pl->rank == root) { st->from = root + 1; st->rlen = pl->count; }
        return 1;
    }
    v = coll__vrank(pl, pl->rank);
    if (v < 0) return 1;
    /* rotate virtual ranks: the root's side of the fold becomes 0 */
    vroot = coll__vrank(pl, out ? root + 1 : root);
    if (k < L) {
        int d = pl->p2 >> (k + 1), w = coll__mod(v - vroot, pl->p2), lo = w & ~(2 * d - 1);
        int keep = (w & d) ? lo + d : lo, give = (w & d) ? lo : lo + d, ready = coll__dst_ready(pl, k);
        coll__pair(st, pl->rank, coll__rrank(pl, coll__mod((w ^ d) + vroot, pl->p2)));
        st->sbuf = st->abuf = ready ? COLL_BUF_DST : COLL_BUF_SRC;
        coll__vrange(pl, give, give + d, &st->soff, &st->slen);
        coll__vrange(pl, keep, keep + d, &st->roff, &st->rlen);
        st->aoff = st->roff;
        st->reduce = 1;
        return 1;
    }
    k -= L;                                             /* gather to w = 0 */
    mask = 1 << k;
    {
        int w = coll__mod(v - vroot, pl->p2);
        if (w & (mask - 1)) return 1;
        if (w & mask) {
            st->to = coll__rrank(pl, coll__mod(w - mask + vroot, pl->p2));
            coll__vrange(pl, w, w + mask, &st->soff, &st->slen);
        } else {
            st->from = coll__rrank(pl, coll__mod(w + mask + vroot, pl->p2));
            coll__vrange(pl, w + mask, w + 2 * mask, &st->roff, &st->rlen);
        }
    }
    return 1;
}

/* Linear reduce: the root receives every other rank's vector in turn and
   folds it in; the other ranks only send src, so they need no dst (what
   runs when a non-root passes NULL for it, as MPI programs do).
       p = 4, root 0:  step s:  s+1 -> 0
   cost: (p-1)(α + nβ + nγ), all of it at the root                          */
static int coll__linear_reduce(const coll__plan *pl, int s, coll__step *st)
{
    int r = pl->rank, p = pl->p, peer = coll__mod(pl->root + s + 1, p);
    if (s >= p - 1) return 0;
    coll__idle(st);
    if (r == pl->root) { st->from = peer; st->rlen = pl->count; st->reduce = 1; st->abuf = COLL_BUF_DST; }
    else if (r == peer) { st->to = pl->root; st->sbuf = COLL_BUF_SRC; st->slen = pl->count; }
    return 1;
}

/* ---- scan (prefix reductions) ----------------------------------------------- */

/* Exclusive scan's last step: every rank hands its inclusive prefix one
   rank on, where it replaces the receiver's own (staged through scratch,
   since the same buffer leaves). Rank 0 keeps its own contribution. */
static int coll__exscan_shift(const coll__plan *pl, int s, coll__step *st)
{
    int r = pl->rank, p = pl->p;
    if (COLL__KIND(pl->kind) != COLL_EXSCAN || s > 0 || p == 1) return 0;
    coll__idle(st);
    if (r + 1 < p) { st->to = r + 1; st->slen = pl->count; }
    if (r > 0) { st->from = r - 1; st->rlen = pl->count; st->rrun = st->rstride = pl->count; }
    return 1;
}

/* Linear scan, a chain: in step s rank s hands its prefix x0 (+) .. (+) xs
   to s+1, which folds it in on the left of its own.
       p = 4:  step 0:  0 -> 1;   step 1:  1 -> 2;   step 2:  2 -> 3
   cost: (p-1)(α + nβ + nγ)   (exscan: + α + nβ)                            */
static int coll__chain_scan(const coll__plan *pl, int s, coll__step *st)
{
    int r = pl->rank, p = pl->p;
    if (s >= p - 1) return coll__exscan_shift(pl, s - (p - 1), st);
    coll__idle(st);
    if (r == s) { st->to = r + 1; st->slen = pl->count; }
    else if (r == s + 1) { st->from = r - 1; st->rlen = pl->count; st->reduce = 2; }
    return 1;
}

/* Recursive doubling scan (Hillis and Steele): in step k rank r sends its
   partial prefix (ranks r-2^k+1 .. r) to r+2^k and folds the one arriving
   from r-2^k in on the left; after lg p steps it holds x0 (+) .. (+) xr.
       p = 4:  step 0:  0 -> 1, 1 -> 2, 2 -> 3;   step 1:  0 -> 2, 1 -> 3
   cost: lg·(α + nβ + nγ)   (exscan: + α + nβ)                              */
static int coll__rd_scan(const coll__plan *pl, int s, coll__step *st)
{
    int r = pl->rank, p = pl->p, L = coll__ceil_log2(p), d;
    if (s >= L) return coll__exscan_shift(pl, s - L, st);
    d = 1 << s;
    coll__idle(st);
    if (r + d < p) { st->to = r + d; st->slen = pl->count; }
    if (r - d >= 0) { st->from = r - d; st->rlen = pl->count; st->reduce = 2; }
    return 1;
}

/* ---- gather, scatter ----------------------------------------------------- */

/* Linear: the root talks to every other rank in turn. p-1 rounds at the
   root, one elsewhere; no workspace.
       p = 4, root 0:  step s:  s+1 -> 0 (scatter: 0 -> s+1)
   cost: (p-1)(α + nβ/p)                                                    */
static int coll__linear_gather(const coll__plan *pl, int s, coll__step *st)
{
    int r = pl->rank, p = pl->p, peer = coll__mod(pl->root + s + 1, p);
    if (s >= p - 1) return 0;
    coll__idle(st);
    if (r == pl->root) { st->from = peer; coll__block(pl, peer, &st->roff, &st->rlen); }
    else if (r == peer) { st->to = pl->root; st->sbuf = COLL_BUF_SRC; st->slen = pl->count; }
    return 1;
}

static int coll__linear_scatter(const coll__plan *pl, int s, coll__step *st)
{
    int r = pl->rank, p = pl->p, peer = coll__mod(pl->root + s + 1, p);
    if (s >= p - 1) return 0;
    coll__idle(st);
    if (r == pl->root) { st->to = peer; st->sbuf = COLL_BUF_SRC; coll__block(pl, peer, &st->soff, &st->slen); }
    else if (r == peer) { st->from = pl->root; st->rlen = pl->count; }
    return 1;
}

/* ---- all-to-all, barrier ------------------------------------------------- */

/* In place (src == dst), pairwise swaps: in step s rank r and rank s-r
   trade the blocks meant for each other; the block that arrives is the
   one that leaves, so it lands in scratch and is copied in after the send
   (a staged span: one run, through scratch). p steps; a rank whose
   partner is itself idles.
       p = 4:  step 1:  0 <-> 1, 2 <-> 3;   step 2:  0 <-> 2;   step 3:  0 <-> 3, 1 <-> 2
   cost: p·α + (p-1)/p·nβ, plus one local copy of what arrives            */
static int coll__swap_alltoall(const coll__plan *pl, int s, coll__step *st)
{
    int r = pl->rank, p = pl->p, peer = coll__mod(s - r, p);
    if (s >= p) return 0;
    coll__idle(st);
    if (peer == r) return 1;
    coll__pair(st, r, peer);
    st->sbuf = COLL_BUF_SRC;
    coll__block(pl, peer, &st->soff, &st->slen);
    coll__rblock(pl, peer, &st->roff, &st->rlen);
    st->rrun = st->rstride = st->rlen;          /* staged through scratch */
    return 1;
}

/* Pairwise exchange: in step s rank r sends block r+s of src to rank r+s
   and receives block r-s of dst from rank r-s.
       step 0, p = 4:  r -> r+1 (0 -> 1 -> 2 -> 3 -> 0);   step 1:  r -> r+2
   cost: (p-1)α + (p-1)/p·nβ                                                */
static int coll__pairwise_alltoall(const coll__plan *pl, int s, coll__step *st)
{
    int r = pl->rank, p = pl->p, to = coll__mod(r + s + 1, p), from = coll__mod(r - s - 1, p);
    if (pl->inplace) return coll__swap_alltoall(pl, s, st);
    if (s >= p - 1) return 0;
    coll__idle(st);
    st->to = to; st->from = from;
    st->send_first = coll__shift_send_first(r, p, s + 1);
    st->sbuf = COLL_BUF_SRC;
    coll__block(pl, to, &st->soff, &st->slen);
    coll__rblock(pl, from, &st->roff, &st->rlen);
    return 1;
}

/* Bruck: first rotate so that block j is the one for rank r+j; in step k
   send every block whose index has bit k set to r + 2^k (they move 2^k
   ranks on and keep their index), receiving the same positions from
   r - 2^k. After lg steps block j came from rank r-j; swapping blocks j and
   r-j puts them in rank order. The blocks of a step are strided (runs of
   2^k every 2^(k+1)), packed through scratch into one message.
       p = 4:  step 0:  r -> r+1 (blocks 1, 3);   step 1:  r -> r+2 (blocks 2, 3)
   cost: lg·α + lg·(n/2)β                                                   */
static int coll__bruck_alltoall(const coll__plan *pl, int s, coll__step *st)
{
    int r = pl->rank, p = pl->p, d, j, nb = 0;
    if (s >= coll__ceil_log2(p)) return 0;
    d = 1 << s;
    for (j = 0; j < p; j++) nb += (j & d) != 0;
    coll__idle(st);
    st->to = coll__mod(r + d, p);
    st->from = coll__mod(r - d, p);
    st->send_first = coll__shift_send_first(r, p, d);
    st->soff = st->roff = (size_t)d * pl->count;
    st->slen = st->rlen = (size_t)nb * pl->count;
    st->srun = st->rrun = (size_t)d * pl->count;
    st->sstride = st->rstride = 2 * (size_t)d * pl->count;
    return 1;
}

/* Step k of the dissemination pattern: signal r + 2^k and hear from
   r - 2^k. Returns 2^k, or 0 after the last of the ⌈lg p⌉ steps. */
static int coll__disseminate(const coll__plan *pl, int k, coll__step *st)
{
    int r = pl->rank, p = pl->p, d;
    if (k >= coll__ceil_log2(p)) return 0;
    d = 1 << k;
    coll__idle(st);
    st->to = coll__mod(r + d, p);
    st->from = coll__mod(r - d, p);
    st->send_first = coll__shift_send_first(r, p, d);
    return d;
}

/* Dissemination barrier: in step k signal r + 2^k and wait for r - 2^k;
   after ⌈lg p⌉ steps everyone has (transitively) heard from everyone.
       p = 4:  step 0:  0 -> 1 -> 2 -> 3 -> 0;   step 1:  r -> r+2
   cost: lg·α                                                               */
static int coll__dissemination_barrier(const coll__plan *pl, int s, coll__step *st)
{
    if (!coll__disseminate(pl, s, st)) return 0;
    st->sbuf = COLL_BUF_SRC; st->slen = 1;
    st->rlen = 1;
    return 1;
}

/* Dissemination gather, for small calls: every rank's block reaches every
   rank in the barrier's pattern (Bruck's all-gather), in the request's
   room; then each rank computes its own result from all p blocks, reducing
   in rank order (the same bits everywhere; a non-commutative op is fine).
   Room block j holds rank r - j's block: step k sends blocks 0 .. m-1 to
   r + 2^k and takes r - 2^k's into blocks 2^k .. 2^k + m - 1, with
   m = min(2^k, p - 2^k). Offsets count blocks. With the call checks on,
   these steps are the agreement rounds themselves: the blocks ride in the
   check frames (>>agree), and the call costs no message beyond them.
       p = 4:  step 0:  r -> r+1 (block 0);   step 1:  r -> r+2 (blocks 0-1)
   cost: lg·α + (p-1)·b·β (+ (p-1)·b·γ), b a rank's block                   */
#if COLL__ROOMS
static int coll__dissemination_gather(const coll__plan *pl, int s, coll__step *st)
{
    int d = pl->total ? coll__disseminate(pl, s, st) : 0;     /* (no data: no blocks) */
    if (!d) return 0;
    st->sbuf = st->rbuf = COLL__BUF_ROOM;
    st->slen = st->rlen = (size_t)(d < pl->p - d ? d : pl->p - d);
    st->roff = (size_t)d;
    return 1;
}
#endif

/* The room's bytes per rank at p ranks (16 x COLL_EAGER_BYTES in all), and
   a rank's block in it, 8-aligned: its contribution, a block or the whole
   vector where each rank takes a part (reduce-scatter, all-to-all,
   scatter). */
static COLL__UNUSED size_t coll__room_cap(int p)
{
    return (size_t)(COLL__EAGER_ROOM / p) & ~(size_t)7;
}

static COLL__UNUSED size_t coll__room_bytes(const coll__plan *pl, size_t es)
{
    size_t b = pl->count * es;                 /* (coll__plan_args: no overflow) */
    if (COLL__KIND_IS(pl->kind, COLL_REDUCE_SCATTER) || COLL__KIND_IS(pl->kind, COLL_ALLTOALL) ||
        COLL__KIND_IS(pl->kind, COLL_SCATTER))
        b *= (size_t)pl->p;
    return b;
}
#define coll__room_blk(pl, es) ((coll__room_bytes(pl, es) + 7) & ~(size_t)7)

/* ---- >>registry  the one home of every algorithm ---------------------------

   One row per (collective, algorithm) gives everything the library knows
   about it: its schedule, its cost formula (the one in the schedule's
   comment), what it needs, and the local moves before and after its
   messages. AUTO, forced algorithms, coll_start, coll_describe and
   coll_scratch_bytes all read the row through one check (coll__fits).
   Adding an algorithm = its schedule, its cost, one row (and its name in
   COLL_ALGO_LIST if the name is new; a pair of hooks no row has used
   yet, its coll__hooks_ pair and COLL__HK_ line). */

/* What an algorithm needs beyond the arguments every collective takes.
   AUTO picks only algorithms whose needs every rank meets alike (none of
   the CALLER ones); a forced one is refused when a need is not met. */
enum {
    COLL__IN_PLACE  = 1,   /* the whole src is its workspace: in place only    */
    COLL__WORKSPACE = 2,   /* every rank's big buffer is workspace             */
    COLL__GROUP     = 4,   /* needs args.group                                 */
    COLL__EQUAL_OOP = 8,   /* out of place only when every count is equal      */
    COLL__HOST      = 16,  /* rearranges blocks on the host: not with memops   */
    COLL__SCRATCH   = 32,  /* packs messages through scratch                   */
    COLL__ORDERED   = 64,  /* folds operands in rank order (non-commutative ok) */
    COLL__ORDERED0  = 128, /* ... when the root is rank 0                      */
    COLL__ROOT_ONLY = 256, /* only the root uses the big buffer                */
    COLL__PIPELINE  = 512, /* counts its steps in chunks: bound them           */
    COLL__OOP       = 1024,/* out of place only                                */
    COLL__STAGE_IP  = 2048,/* in place, stages what arrives through scratch    */
    /* not conditions on the call: which engine paths the row's steps use
       (a build that keeps no such row leaves the path out) */
    COLL__STRIDES   = 4096,/* strided spans, packed through scratch            */
    COLL__FOLD_LEFT = 8192,/* received (+) local (reduce == 2): in scratch      */
    COLL__BLOCKWISE = 16384,/* each message one block: takes displs            */
    /* not a condition on the call: AUTO's */
    COLL__MANY      = 32768,/* AUTO's last resort at 8 ranks and fewer, where
                               the model favours it but, measured, it lost */
    COLL__CALLER    = COLL__IN_PLACE | COLL__WORKSPACE | COLL__GROUP | COLL__EQUAL_OOP
};

/* The local moves around an algorithm's messages (rows' begin and finish). */
typedef int (*coll__hook)(coll_request *q);
static int coll__own_block(coll_request *q);
static int coll__own_block_a2a(coll_request *q);
static int coll__bruck_begin(coll_request *q);
static int coll__bruck_a2a_begin(coll_request *q);
static int coll__work_in_place(coll_request *q);
static int coll__root_in_place(coll_request *q);
static int coll__take_block(coll_request *q);
static int coll__bruck_finish(coll_request *q);
static int coll__bruck_a2a_finish(coll_request *q);
#if COLL__ROOMS
static int coll__room_begin(coll_request *q);
static int coll__room_finish(coll_request *q);
#endif

/* A row's local moves, before and after its messages. The rows that have
   any share these pairs, so a row pays one pointer for them (null: none). */
typedef struct coll__hooks { coll__hook begin, finish; } coll__hooks;
static const coll__hooks coll__hooks_own = { coll__own_block, 0 };
static const coll__hooks coll__hooks_own_a2a = { coll__own_block_a2a, 0 };
static const coll__hooks coll__hooks_bruck = { coll__bruck_begin, coll__bruck_finish };
static const coll__hooks coll__hooks_bruck_a2a = { coll__bruck_a2a_begin, coll__bruck_a2a_finish };
static const coll__hooks coll__hooks_rbruck = { coll__rbruck_begin, coll__rbruck_finish };
static const coll__hooks coll__hooks_in_place = { coll__work_in_place, 0 };
static const coll__hooks coll__hooks_root = { coll__root_in_place, 0 };
static const coll__hooks coll__hooks_take = { 0, coll__take_block };
#if COLL__ROOMS
static const coll__hooks coll__hooks_room = { coll__room_begin, coll__room_finish };
#endif
/* A row's (begin, finish) as given in its list, to its shared pair. */
#define COLL__HK(B, E) COLL__HK_##B##_##E
#define COLL__HK_0_0                                     ((const coll__hooks *)0)
#define COLL__HK_coll__own_block_0                       (&coll__hooks_own)
#define COLL__HK_coll__own_block_a2a_0                   (&coll__hooks_own_a2a)
#define COLL__HK_coll__bruck_begin_coll__bruck_finish    (&coll__hooks_bruck)
#define COLL__HK_coll__bruck_a2a_begin_coll__bruck_a2a_finish (&coll__hooks_bruck_a2a)
#define COLL__HK_coll__rbruck_begin_coll__rbruck_finish  (&coll__hooks_rbruck)
#define COLL__HK_coll__work_in_place_0                   (&coll__hooks_in_place)
#define COLL__HK_coll__root_in_place_0                   (&coll__hooks_root)
#define COLL__HK_0_coll__take_block                      (&coll__hooks_take)
#define COLL__HK_coll__room_begin_coll__room_finish      (&coll__hooks_room)
#define COLL__BEGIN(e) ((e)->hooks ? (e)->hooks->begin : (coll__hook)0)
#define COLL__FINISH(e) ((e)->hooks ? (e)->hooks->finish : (coll__hook)0)

#ifndef COLL_NO_COST_MODEL
typedef coll__real (*coll__costfn)(const coll__plan *pl, coll__real n, const coll__tune *t);
#endif

typedef struct coll__entry {
    unsigned char kind;          /* coll_kind */
    unsigned char algo;          /* coll_algo */
    unsigned short needs;
    coll__schedule f;            /* 0 if COLL_ALGOS or COLL_KINDS leave it out */
#ifndef COLL_NO_COST_MODEL
    coll__costfn cost;
#endif
    const coll__hooks *hooks;    /* 0: nothing to do                          */
} coll__entry;

/* A schedule, cost or hook, or 0 if COLL_ALGOS or COLL_KINDS leave the row
   out (and with it every function only that row names). */
#define COLL__KEEPS(K, A) (COLL__ON(COLL_KINDS, COLL_##K) && COLL__ON(COLL_ALGOS, COLL_ALGO_##A))
#define COLL__S(K, A, F) (COLL__KEEPS(K, A) ? F : 0)
#define COLL__H(K, A, B, E) (COLL__KEEPS(K, A) ? COLL__HK(B, E) : (const coll__hooks *)0)

/* ---- >>cost  the model behind COLL_ALGO_AUTO (α-β-γ; see each schedule) -- */
#ifndef COLL_NO_COST_MODEL
#define COLL__NEVER ((coll__real)1e30)   /* a row AUTO does not take */
#define COLL__C(NAME, EXPR)                                                      \
    static coll__real NAME(const coll__plan *pl, coll__real n, const coll__tune *t) \
    {                                                                            \
        typedef coll__real R;                                                    \
        int p = pl->p;                                                           \
        R lg = (R)coll__ceil_log2(p), f = (R)(p - 1) / (R)p;                     \
        R fold = pl->rem ? 2 * (t->alpha + n * t->beta) : 0;                     \
        R al = t->alpha, be = t->beta, ga = t->gamma;                            \
        R C = pl->count ? (R)((pl->count - 1) / pl->chunk + 1) : 1;              \
        (void)(lg + f + fold + al + be + ga + C);   /* each may go unused */   \
        return EXPR;                                                             \
    }
COLL__C(coll__cost_naive,        2 * (p - 1) * (al + n * be) + (p - 1) * n * ga)
COLL__C(coll__cost_ring_ar,      2 * (p - 1) * al + 2 * f * n * be + f * n * ga)
COLL__C(coll__cost_ring_rs,      (p - 1) * al + f * n * (be + ga))
COLL__C(coll__cost_ring_ag,      (p - 1) * al + f * n * be)
COLL__C(coll__cost_tree,         2 * lg * al + lg * n * (2 * be + ga))
COLL__C(coll__cost_rd_ar,        lg * al + n * lg * (be + ga) + fold)
COLL__C(coll__cost_rd_ag,        lg * al + f * n * be + fold)
COLL__C(coll__cost_rabenseifner, 2 * lg * al + 2 * f * n * be + f * n * ga + fold)
COLL__C(coll__cost_pipe_tree,    (2 * lg + 4 * C) * al + 3 * n * be * (1 + lg / C) + n * ga)
COLL__C(coll__cost_dtree,        (1 + COLL__KIND_IS(pl->kind, COLL_ALLREDUCE)) * (C + 2 * lg) * (al + n * be / C) +
                                 (COLL__KIND_IS(pl->kind, COLL_BROADCAST) ? 0 : n * ga))   /* both passes or one */
COLL__C(coll__cost_pairwise_rs,  (p - 1) * al + f * n * (be + ga))
COLL__C(coll__cost_pairwise_a2a, (p - 1) * al + f * n * be)
COLL__C(coll__cost_bruck_a2a,    lg * al + lg * n / 2 * be + 2 * n * be)   /* + its two local rotations */
COLL__C(coll__cost_bruck_ag,     lg * al + f * n * be)
COLL__C(coll__cost_binomial_red, lg * (al + n * be + n * ga))
COLL__C(coll__cost_binomial,     lg * (al + n * be))
COLL__C(coll__cost_sag,          (lg + p - 1) * al + 2 * f * n * be)
COLL__C(coll__cost_chain,        (p - 2 + C) * (al + n * be / C))
COLL__C(coll__cost_linear,       (p - 1) * (al + n * be / p))
COLL__C(coll__cost_dissem,       lg * al)
COLL__C(coll__cost_linear_red,   (p - 1) * (al + n * be + n * ga))
COLL__C(coll__cost_chain_scan,   (p - 1) * (al + n * be + n * ga) + (COLL__KIND_IS(pl->kind, COLL_EXSCAN) ? al + n * be : 0))
COLL__C(coll__cost_rd_scan,      lg * (al + n * be + n * ga) + (COLL__KIND_IS(pl->kind, COLL_EXSCAN) ? al + n * be : 0))
COLL__C(coll__cost_never,        COLL__NEVER)
#if COLL__ROOMS                     /* (γ where it reduces; n as the call's whole) */
COLL__C(coll__cost_room,         lg * al + (p - 1) * n * (be + ga))
#endif
#undef COLL__C

/* Reversed Bruck all-reduce: Rabenseifner's formula with no fold, and 4nγ
   for its rotations. */
static coll__real coll__cost_bruck_ar(const coll__plan *pl, coll__real n, const coll__tune *t)
{
    coll__real c = coll__cost_rabenseifner(pl, n, t) + 4 * n * t->gamma;
    return pl->rem ? c - 2 * (t->alpha + n * t->beta) : c;     /* (no fold) */
}
#endif

#ifndef COLL_NO_COST_MODEL
#define COLL__ROW(K, A, F, COST, NEEDS, BEGIN, FINISH)                          \
    { COLL_##K, COLL_ALGO_##A, NEEDS, COLL__S(K, A, F), COLL__S(K, A, COST),    \
      COLL__H(K, A, BEGIN, FINISH) }
#else
#define COLL__ROW(K, A, F, COST, NEEDS, BEGIN, FINISH)                          \
    { COLL_##K, COLL_ALGO_##A, NEEDS, COLL__S(K, A, F),                         \
      COLL__H(K, A, BEGIN, FINISH) }
#endif

/* The registry: each collective's rows, in AUTO's order of preference
   between equal costs (a row a mask leaves out stays, naming nothing).
   Each list is a macro, COLL__ROWS_<form>(R, S, K): R(K, algorithm, ...)
   per row, S between rows. Collectives that run the same schedules (a
   v-form and its even form, scan and exscan) share one list.
       R(K, algorithm, schedule, cost, needs, begin hook, finish hook)
   A small call's row (COLL__ROOM_ROW: the dissemination gather) comes first
   in the lists of the collectives it serves (not their v forms): where the
   agreement rounds carry it, it costs nothing, and without the cost model
   AUTO takes the first row that fits. (Its `...` is the separator S.) */
#define COLL__ROOM_ROW(R, K, NEEDS, ...) COLL__ROOM_ROW_##K(R, K, NEEDS, __VA_ARGS__)
#if COLL__ROOMS
#define COLL__ROOM_IN(R, K, NEEDS, ...) \
    R(K,               DISSEMINATION,         coll__dissemination_gather,         coll__cost_room,         COLL__HOST | COLL__ORDERED | (NEEDS), coll__room_begin, coll__room_finish) __VA_ARGS__
#else
#define COLL__ROOM_IN(R, K, NEEDS, ...)
#endif
#define COLL__ROOM_OUT(R, K, NEEDS, ...)
#define COLL__ROOM_ROW_ALLREDUCE      COLL__ROOM_IN
#define COLL__ROOM_ROW_REDUCE_SCATTER COLL__ROOM_IN
#define COLL__ROOM_ROW_ALLGATHER      COLL__ROOM_IN
#define COLL__ROOM_ROW_BROADCAST      COLL__ROOM_IN
#define COLL__ROOM_ROW_REDUCE         COLL__ROOM_IN
#define COLL__ROOM_ROW_GATHER         COLL__ROOM_IN
#define COLL__ROOM_ROW_SCATTER        COLL__ROOM_IN
#define COLL__ROOM_ROW_ALLTOALL       COLL__ROOM_IN
#define COLL__ROOM_ROW_ALLGATHERV     COLL__ROOM_OUT
#define COLL__ROOM_ROW_GATHERV        COLL__ROOM_OUT
#define COLL__ROOM_ROW_SCATTERV       COLL__ROOM_OUT
#define COLL__ROWS_ALLREDUCE(R, S, K) \
    COLL__ROOM_ROW(R, K, 0, S) \
    R(K,               NAIVE,                 coll__naive_allreduce,              coll__cost_naive,        COLL__ORDERED,                 0,                     0) S \
    R(K,               RING,                  coll__ring_allreduce,               coll__cost_ring_ar,      0,                             0,                     0) S \
    R(K,               TREE,                  coll__tree_allreduce,               coll__cost_tree,         COLL__ORDERED,                 0,                     0) S \
    R(K,               RECURSIVE_DOUBLING,    coll__rd_allreduce,                 coll__cost_rd_ar,        COLL__FOLD_LEFT,               0,                     0) S \
    R(K,               RABENSEIFNER,          coll__rabenseifner_allreduce,       coll__cost_rabenseifner, 0,                             0,                     0) S \
    R(K,               HIERARCHICAL,          coll__hierarchical_allreduce,       coll__cost_never,        COLL__GROUP,                   coll__work_in_place,   0) S \
    R(K,               PIPELINED_TREE,        coll__pipelined_tree_allreduce,     coll__cost_pipe_tree,    COLL__PIPELINE,                0,                     0) S \
    R(K,               REVERSED_BRUCK,        coll__rbruck_allreduce,             coll__cost_bruck_ar,     COLL__MANY,                    coll__rbruck_begin,    coll__rbruck_finish) S \
    R(K,               DOUBLE_TREE,           coll__double_tree_allreduce,        coll__cost_dtree,        COLL__PIPELINE | COLL__MANY,   0,                     0) S \
    R(K,               SWING,                 coll__swing_allreduce,              coll__cost_rabenseifner, 0,                             0,                     0)
#define COLL__ROWS_REDUCE_SCATTER(R, S, K) \
    COLL__ROOM_ROW(R, K, 0, S) \
    R(K,               RING,                  coll__ring_reduce_scatter,          coll__cost_ring_rs,      0,                             0,                     0) S \
    R(K,               PAIRWISE,              coll__pairwise_reduce_scatter,      coll__cost_pairwise_rs,  0,                             0,                     0) S \
    R(K,               RECURSIVE_HALVING,     coll__halving_reduce_scatter,       coll__cost_never,        COLL__IN_PLACE,                0,                     0) S \
    R(K,               REVERSED_BRUCK,        coll__rbruck_reduce_scatter,        coll__cost_never,        COLL__IN_PLACE,                coll__rbruck_begin,    coll__rbruck_finish) S \
    R(K,               SWING,                 coll__swing_reduce_scatter,         coll__cost_never,        COLL__IN_PLACE,                0,                     0)
#define COLL__ROWS_ALLGATHER(R, S, K) \
    COLL__ROOM_ROW(R, K, 0, S) \
    R(K,               RING,                  coll__ring_allgather,               coll__cost_ring_ag,      COLL__BLOCKWISE,               coll__own_block,       0) S \
    R(K,               RECURSIVE_DOUBLING,    coll__rd_allgather,                 coll__cost_rd_ag,        0,                             coll__own_block,       0) S \
    R(K,               BRUCK,                 coll__bruck_allgather,              coll__cost_bruck_ag,     COLL__HOST,                    coll__bruck_begin,     coll__bruck_finish) S \
    R(K,               SWING,                 coll__swing_allgather,              coll__cost_never,        0,                             coll__own_block,       0)
#define COLL__ROWS_BROADCAST(R, S, K) \
    COLL__ROOM_ROW(R, K, 0, S) \
    R(K,               BINOMIAL,              coll__binomial_broadcast,           coll__cost_binomial,     0,                             0,                     0) S \
    R(K,               SCATTER_ALLGATHER,     coll__scatter_allgather_broadcast,  coll__cost_sag,          0,                             0,                     0) S \
    R(K,               PIPELINED_CHAIN,       coll__chain_broadcast,              coll__cost_chain,        COLL__PIPELINE,                0,                     0) S \
    R(K,               DOUBLE_TREE,           coll__double_tree_rooted,           coll__cost_dtree,        COLL__PIPELINE | COLL__MANY,   0,                     0) S \
    R(K,               BINE,                  coll__bine_broadcast,               coll__cost_binomial,     0,                             0,                     0)
#define COLL__ROWS_REDUCE(R, S, K) \
    COLL__ROOM_ROW(R, K, COLL__ROOT_ONLY, S) \
    R(K,               BINOMIAL,              coll__binomial_reduce,              coll__cost_binomial_red, COLL__ORDERED0,                0,                     0) S \
    R(K,               REDUCE_SCATTER_GATHER, coll__rsg_reduce,                   coll__cost_rabenseifner, 0,                             0,                     0) S \
    R(K,               LINEAR,                coll__linear_reduce,                coll__cost_linear_red,   COLL__ORDERED0 | COLL__ROOT_ONLY, coll__root_in_place, 0) S \
    R(K,               DOUBLE_TREE,           coll__double_tree_rooted,           coll__cost_dtree,        COLL__PIPELINE | COLL__MANY,   0,                     0) S \
    R(K,               BINE,                  coll__bine_reduce,                  coll__cost_binomial_red, 0,                             0,                     0)
#define COLL__ROWS_GATHER(R, S, K) \
    COLL__ROOM_ROW(R, K, COLL__ROOT_ONLY, S) \
    R(K,               LINEAR,                coll__linear_gather,                coll__cost_linear,       COLL__ROOT_ONLY | COLL__BLOCKWISE, coll__own_block,    0) S \
    R(K,               BINOMIAL,              coll__binomial_gather,              coll__cost_binomial,     COLL__WORKSPACE,               coll__own_block,       0)
#define COLL__ROWS_SCATTER(R, S, K) \
    COLL__ROOM_ROW(R, K, COLL__ROOT_ONLY, S) \
    R(K,               LINEAR,                coll__linear_scatter,               coll__cost_linear,       COLL__ROOT_ONLY | COLL__BLOCKWISE, 0,                  coll__take_block) S \
    R(K,               BINOMIAL,              coll__binomial_scatter,             coll__cost_binomial,     COLL__WORKSPACE,               0,                     coll__take_block)
#define COLL__ROWS_ALLTOALL(R, S, K) \
    COLL__ROOM_ROW(R, K, 0, S) \
    R(K,               PAIRWISE,              coll__pairwise_alltoall,            coll__cost_pairwise_a2a, COLL__STAGE_IP | COLL__STRIDES | COLL__BLOCKWISE, coll__own_block_a2a, 0) S \
    R(K,               BRUCK,                 coll__bruck_alltoall,               coll__cost_bruck_a2a,    COLL__HOST | COLL__SCRATCH | COLL__OOP | COLL__STRIDES, coll__bruck_a2a_begin, coll__bruck_a2a_finish)
#define COLL__ROWS_BARRIER(R, S, K) \
    R(K,               DISSEMINATION,         coll__dissemination_barrier,        coll__cost_dissem,       0,                             0,                     0)
#define COLL__ROWS_REDUCE_SCATTERV(R, S, K) \
    R(K,               RING,                  coll__ring_reduce_scatter,          coll__cost_ring_rs,      COLL__EQUAL_OOP,               0,                     0) S \
    R(K,               PAIRWISE,              coll__pairwise_reduce_scatter,      coll__cost_pairwise_rs,  0,                             0,                     0) S \
    R(K,               RECURSIVE_HALVING,     coll__halving_reduce_scatter,       coll__cost_never,        COLL__IN_PLACE,                0,                     0) S \
    R(K,               REVERSED_BRUCK,        coll__rbruck_reduce_scatter,        coll__cost_never,        COLL__IN_PLACE,                coll__rbruck_begin,    coll__rbruck_finish) S \
    R(K,               SWING,                 coll__swing_reduce_scatter,         coll__cost_never,        COLL__IN_PLACE,                0,                     0)
/* exscan ends with a strided shift; scan does not */
#define COLL__SCAN_PATHS(K) (COLL__FOLD_LEFT | (COLL_##K == COLL_EXSCAN ? COLL__STRIDES : 0))
#define COLL__ROWS_SCAN(R, S, K) \
    R(K,               LINEAR,                coll__chain_scan,                   coll__cost_chain_scan,   COLL__ORDERED | COLL__SCAN_PATHS(K), coll__work_in_place, 0) S \
    R(K,               RECURSIVE_DOUBLING,    coll__rd_scan,                      coll__cost_rd_scan,      COLL__ORDERED | COLL__SCAN_PATHS(K), coll__work_in_place, 0)
#define COLL__ROWS_ALLTOALLV(R, S, K) \
    R(K,               PAIRWISE,              coll__pairwise_alltoall,            coll__cost_pairwise_a2a, COLL__STAGE_IP | COLL__STRIDES | COLL__BLOCKWISE, coll__own_block_a2a, 0)

/* Each collective's rows (K) from its list (L). */
#define COLL__REGISTRY(X)                                                       \
    X(ALLREDUCE, ALLREDUCE) X(REDUCE_SCATTER, REDUCE_SCATTER)                   \
    X(ALLGATHER, ALLGATHER) X(BROADCAST, BROADCAST) X(REDUCE, REDUCE)           \
    X(GATHER, GATHER) X(SCATTER, SCATTER) X(ALLTOALL, ALLTOALL)                 \
    X(BARRIER, BARRIER) X(ALLGATHERV, ALLGATHER)                                \
    X(REDUCE_SCATTERV, REDUCE_SCATTERV) X(SCAN, SCAN) X(EXSCAN, SCAN)           \
    X(GATHERV, GATHER) X(SCATTERV, SCATTER) X(ALLTOALLV, ALLTOALLV)
#define COLL__COMMA ,
#define COLL__ROWS_ARRAY(K, L) static const coll__entry coll__rows_##K[] = { COLL__ROWS_##L(COLL__ROW, COLL__COMMA, K) };
COLL__REGISTRY(COLL__ROWS_ARRAY)
#undef COLL__ROWS_ARRAY

/* Every need of a row the masks keep (a constant): coll__fits tests only
   these, so a trimmed build drops the tests that no kept row needs. */
#define COLL__ROW_NEEDS(K, A, F, COST, NEEDS, BEGIN, FINISH) (COLL__KEEPS(K, A) ? (unsigned)(NEEDS) : 0u)
#define COLL__NEEDS_OF(K, L) | COLL__ROWS_##L(COLL__ROW_NEEDS, |, K)
#define COLL__NEEDS_KEPT (0u COLL__REGISTRY(COLL__NEEDS_OF))
#define COLL__NEEDS(e) ((e)->needs & COLL__NEEDS_KEPT)     /* a row's needs, as read */
#undef COLL__ROW

/* Each collective's rows and their number, indexed by coll_kind (from
   COLL_KIND_LIST). A one-collective build reads one entry at a constant
   index, so the other lists are never referenced and drop out; a
   collective the masks leave out has no rows (its array is then unused and
   dropped). */
#define COLL__KIND_ROWS(N, S) COLL__ON(COLL_KINDS, COLL_##N) ? coll__rows_##N : 0,
#define COLL__KIND_NROWS(N, S) (unsigned char)(COLL__ON(COLL_KINDS, COLL_##N) ? sizeof coll__rows_##N / sizeof coll__rows_##N[0] : 0),
static const coll__entry *const coll__registry[COLL_KIND_COUNT] = { COLL_KIND_LIST(COLL__KIND_ROWS) };
static const unsigned char coll__nrows[COLL_KIND_COUNT] = { COLL_KIND_LIST(COLL__KIND_NROWS) };
#undef COLL__KIND_ROWS
#undef COLL__KIND_NROWS

/* A build of one collective and one algorithm (COLL_KINDS and COLL_ALGOS
   of one bit each) has one row: the one both masks keep, a constant. Each
   field is picked from the whole registry by a chain of constant tests. */
#define COLL__ONE_ROW (COLL__ONE(COLL_KINDS) && COLL__ONE(COLL_ALGOS))
#define COLL__PICK_K(K, A, F, COST, NEEDS, BEGIN, FINISH) COLL__KEEPS(K, A) ? COLL_##K :
#define COLL__PICK_A(K, A, F, COST, NEEDS, BEGIN, FINISH) COLL__KEEPS(K, A) ? COLL_ALGO_##A :
#define COLL__PICK_F(K, A, F, COST, NEEDS, BEGIN, FINISH) COLL__KEEPS(K, A) ? (coll__schedule)(F) :
#define COLL__PICK_C(K, A, F, COST, NEEDS, BEGIN, FINISH) COLL__KEEPS(K, A) ? (coll__costfn)(COST) :
#define COLL__PICK_H(K, A, F, COST, NEEDS, BEGIN, FINISH) COLL__KEEPS(K, A) ? COLL__HK(BEGIN, FINISH) :
#define COLL__ONE_K(K, L) COLL__ROWS_##L(COLL__PICK_K, , K)
#define COLL__ONE_A(K, L) COLL__ROWS_##L(COLL__PICK_A, , K)
#define COLL__ONE_F(K, L) COLL__ROWS_##L(COLL__PICK_F, , K)
#define COLL__ONE_C(K, L) COLL__ROWS_##L(COLL__PICK_C, , K)
#define COLL__ONE_H(K, L) COLL__ROWS_##L(COLL__PICK_H, , K)
static COLL__UNUSED const coll__entry coll__one_row = {
    (unsigned char)(COLL__REGISTRY(COLL__ONE_K) 0), (unsigned char)(COLL__REGISTRY(COLL__ONE_A) 0),
    (unsigned short)COLL__NEEDS_KEPT, COLL__REGISTRY(COLL__ONE_F) (coll__schedule)0,
#ifndef COLL_NO_COST_MODEL
    COLL__REGISTRY(COLL__ONE_C) (coll__costfn)0,
#endif
    COLL__REGISTRY(COLL__ONE_H) (const coll__hooks *)0 };

/* A collective's rows and their number (k compiled in). */
static const coll__entry *coll__rows_of(coll_kind k, unsigned *n)
{
    if (COLL__ONE_ROW) { *n = coll__one_row.f != 0; return &coll__one_row; }
    *n = coll__nrows[COLL__KIND(k)];
    return coll__registry[COLL__KIND(k)];
}

/* Row i of the whole registry, kind by kind, or NULL past the end (for
   tools that walk every row). */
static COLL__UNUSED const coll__entry *coll__row_at(size_t i)
{
    int k;
    for (k = 0; k < (int)COLL_KIND_COUNT; k++) {
        if (i < coll__nrows[k]) return &coll__registry[k][i];
        i -= coll__nrows[k];
    }
    return 0;
}

/* The registry entry for (collective, algorithm), or NULL. */
static const coll__entry *coll__entry_of(coll_kind k, coll_algo a)
{
    const coll__entry *row;
    unsigned i, n;
    if ((unsigned)k >= (unsigned)COLL_KIND_COUNT || !COLL__ON(COLL_KINDS, k)) return 0;
    row = coll__rows_of(k, &n);
    for (i = 0; i < n; i++)
        if (row[i].algo == a) return &row[i];
    return 0;
}

/* A small call's row: every dissemination row but the barrier's keeps its
   blocks in the layer's room, and AUTO takes it only where the agreement
   rounds carry it (at no cost). */
#define COLL__IN_ROOM(e) (COLL__ROOMS && COLL__ON(COLL_ALGOS, COLL_ALGO_DISSEMINATION) && \
                          (e)->algo == COLL_ALGO_DISSEMINATION && (e)->kind != COLL_BARRIER)

/* The row a picked plan runs (coll__pick looked it up once). */
#define COLL__ROW_OF(pl) (COLL__ONE_ROW ? &coll__one_row : (pl)->row)   /* one row: a constant */

/* The schedule for (collective, algorithm), or NULL if there is none. */
static coll__schedule coll__find(coll_kind k, coll_algo a)
{
    const coll__entry *e = coll__entry_of(k, a);
    return e ? e->f : 0;
}

/* Does the row serve this call? COLL_OK, or NOSYS / NOSPC and the reason.
   The one check behind AUTO, forced algorithms, coll_start, coll_describe
   and coll_scratch_bytes (the scratch a call needs is coll__scratch_ok's).
   `ordered`: the op is a non-commutative user op. */
static int coll__fits(const coll_comm *c, const coll__plan *pl, const coll__entry *e, size_t es, int ordered,
                      const char **why)
{
    unsigned needs;
    if (!e || !e->f) return COLL__NO(why, COLL_ERR_NOSYS, "algo: none for this call (or not compiled in)");
    needs = COLL__NEEDS(e);
    if (ordered && !((needs & COLL__ORDERED) || ((needs & COLL__ORDERED0) && pl->root == 0)))
        return COLL__NO(why, COLL_ERR_NOSYS, "algo: reorders operands of a non-commutative op");
    if ((needs & COLL__GROUP) && pl->group < 1)
        return COLL__NO(why, COLL_ERR_NOSYS, "algo: hierarchical needs args.group");
    if ((needs & COLL__IN_PLACE) && !pl->inplace && pl->p > 1)
        return COLL__NO(why, COLL_ERR_NOSYS, "algo: runs in place only");
    if ((needs & COLL__OOP) && pl->inplace && pl->p > 1)
        return COLL__NO(why, COLL_ERR_NOSYS, "algo: runs out of place only");
    if (COLL__DISPLS(pl) && !(needs & COLL__BLOCKWISE))
        return COLL__NO(why, COLL_ERR_NOSYS, "algo: displs need ring, linear or pairwise");
    if ((needs & COLL__HOST) && COLL__MEM(c))
        return COLL__NO(why, COLL_ERR_NOSYS, "algo: moves blocks on the host (not memops)");
    if (COLL__IN_ROOM(e) && (COLL__COUNTS(pl) || coll__room_blk(pl, es) > coll__room_cap(pl->p)))
        return COLL__NO(why, COLL_ERR_NOSYS, "algo: dissemination: too large, or a v form");
    if ((needs & COLL__EQUAL_OOP) && !pl->inplace) {
        int i;                  /* the partial sums pass through dst: equal blocks only */
        for (i = 0; i < pl->p; i++)
            if (pl->counts[i] != pl->counts[0])
                return COLL__NO(why, COLL_ERR_NOSYS, "algo: out of place needs equal counts");
    }
    /* pipelines count their steps in an int: bound the chunks */
    if ((needs & COLL__PIPELINE) && pl->count / pl->chunk >= (size_t)(0x7fffffff / 4 - pl->p))
        return COLL__NO(why, COLL_ERR_NOSPC, "algo: too many pipeline chunks for this scratch");
    return COLL_OK;
}

/* The least segment (bytes) a call needs from scratch: one element where
   a reduction lands, where a row packs through scratch, or where an
   in-place all-to-all stages what arrives; else none. coll_scratch_bytes,
   coll_start and AUTO all ask here. */
static size_t coll__scratch_need(const coll_comm *c, const coll__plan *pl, const coll__entry *e, size_t es)
{
    if (c->nranks == 1 || pl->total == 0) return 0;
    if (coll__reduces(COLL__KIND(pl->kind)) || (COLL__NEEDS(e) & COLL__SCRATCH)) return es;
    return (COLL__NEEDS(e) & COLL__STAGE_IP) && pl->inplace ? es : 0;
}

static int coll__scratch_ok(const coll_comm *c, const coll__plan *pl, size_t es, const char **why)
{
    if (COLL__ARG(c->segment && c->segment < es))
        return COLL__NO(why, COLL_ERR_NOSPC, "scratch: a segment is smaller than one element");
    if (COLL__ARG(c->segment < coll__scratch_need(c, pl, COLL__ROW_OF(pl), es)))
        return COLL__NO(why, COLL_ERR_NOSPC, "scratch: none, and this call needs some");
    return COLL_OK;
}

/* The i-th of the texts packed in s, each ended by a NUL: one string for a
   list of names, no table of pointers beside it. */
static const char *coll__nth(const char *s, unsigned i)
{
    while (i--) while (*s++) { }
    return s;
}

/* ========================================================================== */
/* >>recorder  What happened: the flight recorder, a failure's figures        */
/* ========================================================================== */
/* Beside the engine, as the agreement layer is: a call's entry is written
   where its run starts (coll_restart) and completed where every request
   ends (coll__end); the engine never reads it. A failed transfer's reason
   names the peer, the call and the step (coll__failed). */

/* The peer a failed step waited for: the one it receives from while its
   current segment's receive is not through, else the one it sends to. */
static int coll__lost_peer(const coll_request *q)
{
    if (!q->loaded) return -1;
    return q->done < q->nrecv ? q->st.from : q->st.to;
}

#if !defined(COLL_NO_ERRSTR) || !defined(COLL_NO_RECORDER)
/* v in decimal at out; its length. */
static size_t coll__dec(char *out, uint64_t v)
{
    char t[20];
    size_t n = 0, i;
    do { t[n++] = (char)('0' + (int)(v % 10u)); v /= 10u; } while (v);
    for (i = 0; i < n; i++) out[i] = t[n - 1 - i];
    return n;
}
static size_t coll__str(char *out, const char *s, size_t room)
{
    size_t n = 0;
    while (s[n] && n < room) { out[n] = s[n]; n++; }
    return n;
}
#endif

#ifndef COLL_NO_ERRSTR
/* "port failed: rank M, call N, step S[, via rank P]" in c->said: M the
   rank the port says the chain of waits from this rank's peer P ends at
   (coll_port.missing), P where they differ. The longest: 18 + 5 + 7 + 10
   + 7 + 10 + 11 + 5 = 73 bytes; the names would pull the name tables into
   every firmware: the recorder's entry has the collective and algorithm. */
static COLL__NOINLINE const char *coll__failed(coll_request *q)
{
    coll_comm *c = q->c;
    char *o = c->said;
    size_t n = coll__str(o, "port failed: rank ", 18);
    int peer = coll__lost_peer(q), m = peer;
    if (peer >= 0 && c->port.missing) m = c->port.missing(c->port.ctx, peer);
    if (m < 0 || m >= c->nranks) m = peer;                 /* the port's word, checked */
    if (m >= 0) n += coll__dec(o + n, (uint64_t)m);
    n += coll__str(o + n, ", call ", 7);
    n += coll__dec(o + n, q->seq);
    n += coll__str(o + n, ", step ", 7);
    n += coll__dec(o + n, (uint64_t)q->step);
    if (m != peer) { n += coll__str(o + n, ", via rank ", 11); n += coll__dec(o + n, (uint64_t)peer); }
    o[n] = 0;
    return o;
}
#else
#define coll__failed(q) ((void)(q), "")
#endif

#ifndef COLL_NO_RECORDER
static coll_record *coll__rec_of(const coll_comm *c, uint32_t seq)
{
    coll_record *e = c->rec ? &c->rec[(seq - 1u) % c->nrec] : 0;
    return e && e->seq == seq ? e : 0;
}
static COLL__NOINLINE void coll__record_start(coll_request *q)
{
    coll_comm *c = q->c;
    const coll__plan *pl = &q->pl;
    coll_record *e;
    if (!c->rec) return;
    e = &c->rec[(q->seq - 1u) % c->nrec];
    COLL_MEMSET(e, 0, sizeof *e);
    e->seq = q->seq;
    e->kind = COLL__KIND(pl->kind); e->algo = pl->algo;
    e->dtype = q->a.dtype; e->op = q->a.op; e->root = pl->root;
    e->bytes = COLL__KIND_IS(pl->kind, COLL_BARRIER) ? 0 : pl->total * q->esize;   /* (its token is no data) */
    e->start = c->now ? c->now(c->now_ctx) : 0;
    e->result = COLL_AGAIN;
    e->peer = -1;
}
static COLL__NOINLINE void coll__record_end(coll_request *q, int rc)
{
    coll_comm *c = q->c;
    coll_record *e = q->queued ? coll__rec_of(c, q->seq) : 0;   /* (a refusal at prepare never ran) */
    if (!e) return;
    e->algo = q->pl.algo;                   /* (a NULL dst may have made it linear) */
    e->end = c->now ? c->now(c->now_ctx) : 0;
    e->result = rc;
    e->step = q->step;
    e->peer = rc < 0 ? coll__lost_peer(q) : -1;
}
#else
#define coll__record_start(q) ((void)(q))
#define coll__record_end(q, rc) ((void)(q), (void)(rc))
#endif

/* ---- >>layers  what a port layer passes on unchanged ----------------------
   The sub-communicators, the pieces and the observer each put a port of
   their own between the communicator and the one below, whose first
   member is that port: abort, missing and renew go down to it as they
   are (a sub-communicator renumbers missing's answer). */
static void coll__inner_abort(void *ctx, int code)
{
    const coll_port *in = (const coll_port *)ctx;
    in->abort(in->ctx, code);
}
#ifndef COLL_NO_ERRSTR
static int coll__inner_missing(void *ctx, int peer)
{
    const coll_port *in = (const coll_port *)ctx;
    return in->missing(in->ctx, peer);
}
#endif
#ifndef COLL_NO_SHRINK
static int coll__inner_renew(void *ctx, uint32_t epoch)
{
    const coll_port *in = (const coll_port *)ctx;
    return in->renew(in->ctx, epoch);
}
#endif

/* A layer's port over `in`, its own ctx first: the members that pass on
   unchanged, where `in` has them. */
static void coll__layer_port(coll_port *out, const coll_port *in, void *ctx)
{
    COLL_MEMSET(out, 0, sizeof *out);
    out->ctx = ctx;
    if (in->abort) out->abort = coll__inner_abort;
#ifndef COLL_NO_ERRSTR
    if (in->missing) out->missing = coll__inner_missing;
#endif
#ifndef COLL_NO_SHRINK
    if (in->renew) out->renew = coll__inner_renew;
#endif
}

/* ---- >>observer  each call's turn and each message, told as they happen --
   coll_set_observer puts this layer between the communicator and its port,
   as >>pieces does for max_bytes: every port call is told to the caller's
   callback before (POST) and after (DONE), with the call and step it
   belongs to, and the engine does not know. A call is told when its turn
   comes (the engine's loop, coll__observe_turn) and when it ends
   (coll__end). State (coll__observer): the port it wraps, the callback,
   the request whose turn it is, the event, a word per handle (its peer
   and direction, for DONE). Cost: two callbacks a message, nothing when
   unset. */
#ifndef COLL_NO_OBSERVER
/* The event in o->ev - in the communicator, so that a port's stack pays
   for none - completed with its call's fields and told. */
static COLL__NOINLINE void coll__told(coll__observer *o)
{
    coll_event *e = &o->ev;
    const coll_request *q = o->cur;
    e->seq = q ? q->seq : 0;
    e->step = q ? q->step : 0;
    e->kind = q ? COLL__KIND(q->pl.kind) : (coll_kind)0;
    e->algo = q ? q->pl.algo : COLL_ALGO_AUTO;
    o->fn(o->ctx, e);
}
#define coll__tell(o, WHAT, SEND, PEER, HANDLE, BYTES, RESULT)                   \
    ((o)->ev.what = (WHAT), (o)->ev.send = (SEND), (o)->ev.peer = (PEER),        \
     (o)->ev.handle = (HANDLE), (o)->ev.bytes = (BYTES), (o)->ev.result = (RESULT), \
     coll__told(o))

static void coll__observe_turn(coll_request *q)
{
    coll__observer *o = &q->c->obs;
    if (!o->fn || o->cur == q) return;
    o->cur = q;
    coll__tell(o, COLL_EV_CALL, 0, -1, -1, COLL__KIND_IS(q->pl.kind, COLL_BARRIER) ? 0 : q->pl.total * q->esize, 0);
}

static void coll__observe_end(coll_request *q, int rc)
{
    coll__observer *o = &q->c->obs;
    if (!o->fn || o->cur != q) return;
    coll__tell(o, COLL_EV_END, 0, -1, -1, 0, rc);
    o->cur = 0;
}

static int coll__obs_send(void *ctx, int peer, const void *buf, size_t bytes)
{
    coll__observer *o = (coll__observer *)ctx;
    int rc;
    coll__tell(o, COLL_EV_POST, 1, peer, -1, bytes, 0);
    rc = o->inner.send(o->inner.ctx, peer, buf, bytes);
    coll__tell(o, COLL_EV_DONE, 1, peer, -1, 0, rc);
    return rc;
}
static int coll__obs_recv(void *ctx, int peer, void *buf, size_t bytes)
{
    coll__observer *o = (coll__observer *)ctx;
    int rc;
    coll__tell(o, COLL_EV_POST, 0, peer, -1, bytes, 0);
    rc = o->inner.recv(o->inner.ctx, peer, buf, bytes);
    coll__tell(o, COLL_EV_DONE, 0, peer, -1, 0, rc);
    return rc;
}
static int coll__obs_sendrecv(void *ctx, int to, const void *sbuf, size_t sbytes,
                              int from, void *rbuf, size_t rbytes)
{
    coll__observer *o = (coll__observer *)ctx;
    int rc;
    coll__tell(o, COLL_EV_POST, 1, to, -1, sbytes, 0);
    coll__tell(o, COLL_EV_POST, 0, from, -1, rbytes, 0);
    rc = o->inner.sendrecv(o->inner.ctx, to, sbuf, sbytes, from, rbuf, rbytes);
    coll__tell(o, COLL_EV_DONE, 1, to, -1, 0, rc);
    coll__tell(o, COLL_EV_DONE, 0, from, -1, 0, rc);
    return rc;
}
/* A posted message: told with its handle, which DONE will name again. */
static int coll__obs_posted(coll__observer *o, int rc, int send, int peer, size_t bytes, int handle)
{
    if (rc != COLL_OK) return rc;
    if (handle >= 0 && handle < 32) o->h[handle] = 1u + ((uint32_t)peer << 1 | (uint32_t)send);
    coll__tell(o, COLL_EV_POST, send, peer, handle, bytes, 0);
    return rc;
}
static int coll__obs_isend(void *ctx, int peer, const void *buf, size_t bytes, int *handle)
{
    coll__observer *o = (coll__observer *)ctx;
    int rc = o->inner.isend(o->inner.ctx, peer, buf, bytes, handle);
    return coll__obs_posted(o, rc, 1, peer, bytes, *handle);
}
static int coll__obs_irecv(void *ctx, int peer, void *buf, size_t bytes, int *handle)
{
    coll__observer *o = (coll__observer *)ctx;
    int rc = o->inner.irecv(o->inner.ctx, peer, buf, bytes, handle);
    return coll__obs_posted(o, rc, 0, peer, bytes, *handle);
}
static int coll__obs_irecv_fold(void *ctx, int peer, void *buf, size_t bytes, coll_fold_fn fold,
                                void *arg, int *handle)
{
    coll__observer *o = (coll__observer *)ctx;
    int rc = o->inner.irecv_fold(o->inner.ctx, peer, buf, bytes, fold, arg, handle);
    return coll__obs_posted(o, rc, 0, peer, bytes, *handle);
}
static int coll__obs_wait(void *ctx, int handle, int block)
{
    coll__observer *o = (coll__observer *)ctx;
    int rc = o->inner.wait(o->inner.ctx, handle, block);
    uint32_t w = handle >= 0 && handle < 32 ? o->h[handle] : 0;
    if (rc != COLL_AGAIN)
        coll__tell(o, COLL_EV_DONE, w ? (int)((w - 1u) & 1u) : 0, w ? (int)((w - 1u) >> 1) : -1, handle, 0, rc);
    return rc;
}

/* The communicator's port becomes this layer over the one it had. */
static void coll__observe_wrap(coll_comm *c)
{
    const coll_port *in = &c->obs.inner;
    COLL_MEMCPY(&c->obs.inner, &c->port, sizeof c->obs.inner);
    coll__layer_port(&c->port, in, &c->obs);
    c->port.send = coll__obs_send;
    c->port.recv = coll__obs_recv;
    if (in->sendrecv) c->port.sendrecv = coll__obs_sendrecv;
    if (in->isend) { c->port.isend = coll__obs_isend; c->port.irecv = coll__obs_irecv; c->port.wait = coll__obs_wait; }
    if (in->irecv_fold) c->port.irecv_fold = coll__obs_irecv_fold;
}
#else
#define coll__observe_turn(q) ((void)(q))
#define coll__observe_end(q, rc) ((void)(q), (void)(rc))
#endif

/* ========================================================================== */
/* >>engine  2. The step engine                                               */
/* ========================================================================== */
/* Runs steps, one after another, over the port. Where a step comes from is
   not its business: the request's source loads the next one (the plain
   source asks the schedule; the agreement layer, >>agree, wraps the
   schedule with rounds of its own). A step names its buffers by their
   place in one table, q->b: the call's src and dst, and two that a layer
   registers for its own messages.

   Each message is cut into segments of at most `cut` elements of its
   buffer (both ends cut the same way). A copy lands straight in its place;
   a reduction lands in one half of scratch and is folded in from there, or
   is folded where it lies if the port can (>>fold). With a non-blocking
   port two segments are in flight, so the fold of one hides behind the
   transfer of the next; with only blocking send/recv each segment is
   exchanged in the order the schedule gives (send_first), which keeps
   rendezvous ports deadlock-free. A layer may watch every piece that
   passes (q->watch) and keep a received one from being folded.

   Cost: nothing beyond the schedule's own messages and folds; per segment
   one port call each way, per step one call of the source. */

#ifndef COLL_AGAIN_LIMIT
#define COLL_AGAIN_LIMIT (1ul << 26)
#endif

/* An error after payload began to move: the communicator is broken for
   good, and the port (if it can) tells every peer at once. */
static int coll__broke(coll_request *q, int rc, const char *why)
{
    coll_comm *c = q->c;
    const coll_port *pt = &c->port;
    coll__top(c)->broken = rc;      /* one transport: parent and every sub */
#ifndef COLL_NO_ERRSTR
    c->why = why;
#else
    (void)why;
#endif
    if (pt->abort && rc != COLL_ERR_ABORTED) pt->abort(pt->ctx, rc);
    return rc;
}

static unsigned char *coll__buf(const coll_request *q, int which) { return q->b[which].at; }

static size_t coll__nseg(size_t len, size_t cut) { return len <= cut ? len > 0 : (len - 1) / cut + 1; }

/* A buffer's first segment of its own size, and the watch on the pieces:
   a build whose layers use neither (COLL__HEADS, COLL__LAYERS) has none. */
#if COLL__HEADS
#define COLL__HEAD(B) ((B)->head)
#else
#define COLL__HEAD(B) ((void)(B), (size_t)0)
#endif
#if COLL__LAYERS
#define COLL__WATCH(q) ((q)->watch)
#else
#define COLL__WATCH(q) ((void)(q), (int (*)(struct coll_request *, const unsigned char *, size_t, int))0)
#endif

/* Segments of a span of `len` elements of buffer B. */
static size_t coll__nsegs(const coll__buffer *B, size_t len)
{
    size_t h = COLL__HEAD(B);
    return h && len > h ? 1 + coll__nseg(len - h, B->cut) : coll__nseg(len, B->cut);
}

/* Segment k of a span of buffer b: byte pointer and byte length. */
static void coll__seg(const coll_request *q, int b, size_t off, size_t len, size_t k,
                      unsigned char **ptr, size_t *bytes)
{
    const coll__buffer *B = &q->b[b];
    size_t h = COLL__HEAD(B);
    size_t first = h && k ? h + (k - 1) * B->cut : k * B->cut;
    size_t most = h && !k ? h : B->cut;
    size_t n = len - first < most ? len - first : most;
    COLL_ASSERT(first < len);
    *ptr = B->at + (off + first) * B->unit;
    *bytes = n * B->unit;
}

/* Half k % 2 of the scratch (each `segment` bytes: 8-aligned). */
static unsigned char *coll__scratch_half(const coll_request *q, size_t k)
{
    COLL_ASSERT(q->c->segment > 0 && q->seg * q->esize <= q->c->segment);
    return q->c->scratch + (k & 1) * q->c->segment;
}

/* Pieces of the step loaded: the more of its sends and its receives. */
static size_t coll__pieces(const coll_request *q)
{
    return q->nsend > q->nrecv ? q->nsend : q->nrecv;
}

/* A receive whose first piece says how long it is: a layer's watch, seeing
   segment 0 arrive, may lengthen the step's receive to `rlen` (a header
   that announces what follows it). Nothing later than segment
   0 is posted before then, and the sender sent it all at once. */
static void coll__lengthen(coll_request *q, size_t rlen)
{
    COLL_ASSERT(q->done == 0);
    q->st.rlen = rlen;
    q->nrecv = coll__nsegs(&q->b[q->st.rbuf], rlen);
}

/* Strided spans travel packed: segment k of the logical message is copied
   between its runs in the buffer and a flat scratch half (send: half 0,
   receive: half 1; one segment in flight). */
static COLL__NOINLINE int coll__pack(coll_request *q, int buf, size_t off, size_t run, size_t stride,
                      size_t len, size_t k, unsigned char *flat, int into_flat)
{
    size_t es = q->esize, first = k * q->seg, n = len - first < q->seg ? len - first : q->seg;
    unsigned char *base = coll__buf(q, buf);
    int rc = COLL_OK;
    while (n && rc == COLL_OK) {
        size_t in = first % run, take = run - in < n ? run - in : n;
        unsigned char *at = base + (off + first / run * stride + in) * es;
        rc = into_flat ? coll__copy(q->c, flat, at, take * es) : coll__copy(q->c, at, flat, take * es);
        flat += take * es; first += take; n -= take;
    }
    return rc;
}

/* Two engine paths serve only some schedules, marked in the registry:
   strided spans (COLL__STRIDES: exscan's shift, in-place pairwise and
   Bruck all-to-all) and folding into scratch before the move
   (COLL__FOLD_LEFT: recursive doubling, the scans). A build whose masks
   keep no such row leaves the path out; coll__load asserts the marks. */
#define COLL__STRIDED ((COLL__NEEDS_KEPT & COLL__STRIDES) != 0)
#define COLL__FOLD2 ((COLL__NEEDS_KEPT & COLL__FOLD_LEFT) != 0)

/* The step uses only engine paths this build keeps (a row whose marks
   miss a path its schedule takes would fail here, in a debug build). */
static COLL__UNUSED int coll__paths_kept(const coll__step *st)
{
    return (COLL__STRIDED || !(st->srun || st->rrun)) && (COLL__FOLD2 || st->reduce != 2);
}

/* Where segment k of the step's send comes from (packed if strided). */
static int coll__send_source(coll_request *q, size_t k, unsigned char **ptr, size_t *bytes)
{
    coll__seg(q, q->st.sbuf, q->st.soff, q->st.slen, k, ptr, bytes);
    if (COLL__STRIDED && q->st.srun) {
        int rc;
        *ptr = coll__scratch_half(q, 0);
        rc = coll__pack(q, q->st.sbuf, q->st.soff, q->st.srun, q->st.sstride, q->st.slen, k, *ptr, 1);
        if (rc != COLL_OK) return rc;
    }
    if (COLL__WATCH(q)) (void)COLL__WATCH(q)(q, *ptr, *bytes, 0);
    return COLL_OK;
}

/* Where segment k of the step's receive lands: its place, or scratch. */
static void coll__recv_target(const coll_request *q, size_t k, unsigned char **ptr, size_t *bytes)
{
    coll__seg(q, q->st.rbuf, q->st.roff, q->st.rlen, k, ptr, bytes);
    if (q->st.reduce) *ptr = coll__scratch_half(q, k);
    else if (COLL__STRIDED && q->st.rrun) *ptr = coll__scratch_half(q, 1);
}

/* ---- >>fold  zero-copy reduce, a receive strategy --------------------------
   With the port's irecv_fold a reduction step's receives fold the peer's
   bytes into their place where they lie, in whichever thread the port
   delivers them, instead of landing in scratch first. Picked when a step
   loads. Safe only when nothing a peer may still read changes under it:
   the step's result span must not overlap what this rank sends in the same
   step, and may meet an operand only exactly (out == a, the in-place
   accumulate; the kernels' restrict forbids a partial overlap). Not while
   a layer watches the pieces (it reads the raw bytes), with memops
   (device memory) or user operators (they run in the caller's thread
   only). Cost: one copy per received byte saved; but where the call is too
   big for the caches the copy into scratch wins (it pipelines: the port
   copies segment k + 1 while this rank folds k), so calls over
   COLL_FOLD_MAX bytes copy (docs/benchmarks.md has the measurement that
   set it). COLL_NO_ZERO_COPY (or COLL_NO_NONBLOCKING) leaves it out. */
#ifndef COLL_FOLD_MAX
#define COLL_FOLD_MAX (4u << 20)
#endif
#if defined(COLL_NO_NONBLOCKING) || defined(COLL_NO_ZERO_COPY)
#define COLL__ZC(q) 0                     /* every receive lands, then folds */
#else
#define COLL__ZC(q) ((q)->zc)
#define COLL__IRECV_FOLD 1

static int coll__zero_copy(const coll_request *q)
{
    const coll_comm *c = q->c;
    const coll__step *st = &q->st;
    size_t es = q->esize, n = st->rlen * es;
    const unsigned char *out, *a;
    if (!c->port.irecv_fold || !st->reduce || st->from < 0 || COLL__WATCH(q) || COLL__MEM(c) ||
        coll__total_bytes(&q->pl, es) > (size_t)COLL_FOLD_MAX ||
        q->a.op == COLL_USER_OP || (COLL__STRIDED && (st->rrun || st->srun)))
        return 0;
    out = coll__buf(q, st->rbuf) + st->roff * es;
    a = coll__buf(q, st->abuf) + st->aoff * es;
    if (st->to >= 0 && coll__overlap(out, n, coll__buf(q, st->sbuf) + st->soff * es, st->slen * es)) return 0;
    if ((out != a || st->reduce == 2) && coll__overlap(out, n, a, n)) return 0;
    return 1;
}

/* The fold a port calls for a piece of a segment: piece = a (+) in, or
   in (+) a (reduce == 2), `a` at the piece's offset. Pieces come in order,
   so "each byte folded exactly once" is two counts: every piece starts
   where the last ended, and at the end they reached the segment's end. A
   piece that does not (skipped, repeated, outside the segment, off the
   element boundaries) is the port's bug: marked, and the call fails
   (COLL_ERR_IO) instead of returning a half-reduced result. */
static void coll__fold(void *arg, void *piece, const void *in, size_t n)
{
    coll__fold_arg *f = (coll__fold_arg *)arg;
    const coll_request *q = f->q;
    size_t off = (size_t)((uintptr_t)piece - (uintptr_t)f->out), es = q->esize;
    if (off != f->done || n > f->bytes - off || n % es) { f->bad = 1; return; }   /* below out: off wraps */
    f->done += n;
    if (q->st.reduce == 2) (void)coll__reduce(q->c, &q->a.uop, piece, in, f->a + off, n / es, q->a.dtype, q->a.op);
    else (void)coll__reduce(q->c, &q->a.uop, piece, f->a + off, in, n / es, q->a.dtype, q->a.op);
}

/* Post segment k's receive as a fold into its place. */
static COLL__NOINLINE int coll__irecv_fold(coll_request *q, size_t k, int *h)
{
    const coll_port *pt = &q->c->port;
    coll__fold_arg *f = &q->fold[k % 4];
    unsigned char *out, *a;
    size_t bytes;
    coll__seg(q, q->st.rbuf, q->st.roff, q->st.rlen, k, &out, &bytes);
    coll__seg(q, q->st.abuf, q->st.aoff, q->st.rlen, k, &a, &bytes);
    f->q = q; f->out = out; f->a = a; f->bytes = bytes; f->done = 0; f->bad = 0;
    return pt->irecv_fold(pt->ctx, q->st.from, out, bytes, coll__fold, f, h);
}
#endif

/* Received segment k is through (`in`, its `n` bytes, where
   coll__recv_target put it): let a watching layer see it, then fold it
   (now in scratch) into its place, or unpack it if strided. */
static int coll__absorb(coll_request *q, size_t k, unsigned char *in, size_t n)
{
    unsigned char *out, *a;
    size_t bytes;
    if (k >= q->nrecv) return COLL_OK;                 /* sends may outnumber receives */
    if (COLL__ZC(q))                                   /* the port folded it where it lay */
        return q->fold[k % 4].bad || q->fold[k % 4].done != q->fold[k % 4].bytes ? COLL_ERR_IO : COLL_OK;
    if (COLL__WATCH(q) && COLL__WATCH(q)(q, in, n, 1)) return COLL_OK;   /* the layer may keep it out */
    if (COLL__STRIDED && q->st.rrun)
        return coll__pack(q, q->st.rbuf, q->st.roff, q->st.rrun, q->st.rstride, q->st.rlen, k,
                          coll__scratch_half(q, 1), 0);
    if (!q->st.reduce) return COLL_OK;
    coll__seg(q, q->st.rbuf, q->st.roff, q->st.rlen, k, &out, &bytes);
    coll__seg(q, q->st.abuf, q->st.aoff, q->st.rlen, k, &a, &bytes);
    COLL_ASSERT(in == coll__scratch_half(q, k));
    if (COLL__FOLD2 && q->st.reduce == 2) {   /* received (+) a: fold in scratch, then move */
        int rc = coll__reduce(q->c, &q->a.uop, in, in, a, bytes / q->esize, q->a.dtype, q->a.op);
        return rc != COLL_OK ? rc : coll__copy(q->c, out, in, bytes);
    }
    return coll__reduce(q->c, &q->a.uop, out, a, in, bytes / q->esize, q->a.dtype, q->a.op);
}

/* ---- >>drive  a step over the port, and the driver -------------------------
   Blocking ports exchange a step's segments one at a time; non-blocking
   ones keep two in flight. coll__progress runs the source's steps until
   the call ends or, when it may not block, would have to wait. */

/* A port's answer: positive codes other than COLL_AGAIN mean nothing here. */
static int coll__port_rc(int rc) { return rc > 0 && rc != COLL_AGAIN ? COLL_ERR_IO : rc; }

/* One more COLL_AGAIN in a blocking call: bounded, never spin forever. */
static int coll__spin(coll_request *q)
{
    return ++q->spins > (unsigned long)COLL_AGAIN_LIMIT ? COLL_ERR_TIMEOUT : COLL_OK;
}

/* Blocking ports: exchange segment k, one message each way in schedule
   order, and absorb it. */
static COLL__OFF_CHAIN int coll__exchange_blocking(coll_request *q, size_t k)
{
    const coll_port *pt = &q->c->port;
    unsigned char *sp = 0, *rp = 0;
    size_t sn = 0, rn = 0;
    int rc, has_s = k < q->nsend, has_r = k < q->nrecv;
    if (has_s && (rc = coll__send_source(q, k, &sp, &sn)) != COLL_OK) return rc;
    if (has_r) coll__recv_target(q, k, &rp, &rn);
    if (has_s && has_r && pt->sendrecv)
        rc = pt->sendrecv(pt->ctx, q->st.to, sp, sn, q->st.from, rp, rn);
    else if (has_s && has_r && q->st.send_first) {
        rc = pt->send(pt->ctx, q->st.to, sp, sn);
        if (rc == COLL_OK) rc = pt->recv(pt->ctx, q->st.from, rp, rn);
    } else if (has_s && has_r) {
        rc = pt->recv(pt->ctx, q->st.from, rp, rn);
        if (rc == COLL_OK) rc = pt->send(pt->ctx, q->st.to, sp, sn);
    } else if (has_s) rc = pt->send(pt->ctx, q->st.to, sp, sn);
    else              rc = pt->recv(pt->ctx, q->st.from, rp, rn);
    if (rc > 0) rc = COLL_ERR_IO;
    return rc == COLL_OK ? coll__absorb(q, k, rp, rn) : rc;
}

#ifndef COLL_NO_NONBLOCKING
/* Wait for one posted message (handle -1: nothing to wait for). */
static int coll__wait(coll_request *q, int *h, int block)
{
    const coll_port *pt = &q->c->port;
    while (*h >= 0) {
        int rc = coll__port_rc(pt->wait(pt->ctx, *h, block));
        if (rc == COLL_OK) { *h = -1; break; }
        if (rc != COLL_AGAIN) return rc;
        if (!block) return COLL_AGAIN;
        if ((rc = coll__spin(q)) != COLL_OK) return rc;
    }
    return COLL_OK;
}

/* Non-blocking ports: keep segments [done, done+2) posted, complete them
   in order. Returns COLL_AGAIN when it would have to wait and may not. */
static COLL__OFF_CHAIN int coll__step_pipelined(coll_request *q, int block)
{
    const coll_port *pt = &q->c->port;
    size_t depth = COLL__STRIDED && (q->st.srun || q->st.rrun) ? 1 : 2;   /* packed spans: one staging half each */
    unsigned char *ptr;
    size_t bytes;
    int rc, h;
    while (q->done < coll__pieces(q)) {     /* (a watch may lengthen the receive) */
        while (q->sposted < q->nsend && q->sposted < q->done + depth) {
            if ((rc = coll__send_source(q, q->sposted, &ptr, &bytes)) != COLL_OK) return rc;
            rc = coll__port_rc(pt->isend(pt->ctx, q->st.to, ptr, bytes, &h));
            if (rc == COLL_AGAIN) break;
            if (rc != COLL_OK) return rc;
            q->hs[q->sposted % 4] = h;
            q->sposted++;
        }
        while (q->rposted < q->nrecv && q->rposted < q->done + depth) {
#ifdef COLL__IRECV_FOLD
            if (COLL__ZC(q))                     /* reduce where it lies: into its place */
                rc = coll__port_rc(coll__irecv_fold(q, q->rposted, &h));
            else
#endif
            {
                coll__recv_target(q, q->rposted, &ptr, &bytes);
                rc = coll__port_rc(pt->irecv(pt->ctx, q->st.from, ptr, bytes, &h));
                q->rin[q->rposted % 4].at = ptr;   /* where it lands, for coll__absorb */
                q->rin[q->rposted % 4].n = bytes;
            }
            if (rc == COLL_AGAIN) break;
            if (rc != COLL_OK) return rc;
            q->hr[q->rposted % 4] = h;
            q->rposted++;
        }
        /* segment `done` completes when both its halves are through */
        if ((q->done < q->nsend && q->sposted <= q->done) ||
            (q->done < q->nrecv && q->rposted <= q->done)) {
            if (!block) return COLL_AGAIN;
            if ((rc = coll__spin(q)) != COLL_OK) return rc;
            continue;                      /* the port said "later": ask again */
        }
        if (q->done < q->nrecv && (rc = coll__wait(q, &q->hr[q->done % 4], block)) != COLL_OK) return rc;
        if (q->done < q->nsend && (rc = coll__wait(q, &q->hs[q->done % 4], block)) != COLL_OK) return rc;
        if ((rc = coll__absorb(q, q->done, q->rin[q->done % 4].at, q->rin[q->done % 4].n)) != COLL_OK) return rc;
        q->done++;
        q->spins = 0;
    }
    return COLL_OK;
}
#endif

#ifdef COLL_DEBUG
/* The invariant behind "nothing outside the caller's buffers": every span
   a step names in src or dst lies inside that buffer's extent on this
   rank (a layer's own buffers are the layer's to check). */
static int coll__span_in(const coll_request *q, int buf, size_t off, size_t len, size_t run, size_t stride)
{
    size_t in_n, out_n, end;
    if (len == 0 || buf > COLL_BUF_DST || COLL__KIND_IS(q->pl.kind, COLL_BARRIER)) return 1;
    coll__extents(&q->pl, &in_n, &out_n);
    if (COLL__KIND_IS(q->pl.kind, COLL_BROADCAST) || q->b[COLL_BUF_SRC].at == q->b[COLL_BUF_DST].at)
        in_n = out_n = in_n > out_n ? in_n : out_n;
    end = run ? off + (len - 1) / run * stride + (len - 1) % run + 1 : off + len;
    return end <= (buf == COLL_BUF_SRC ? in_n : out_n);
}
static int coll__spans_ok(const coll_request *q)
{
    const coll__step *st = &q->st;
    return (st->to < 0 || coll__span_in(q, st->sbuf, st->soff, st->slen, st->srun, st->sstride)) &&
           (st->from < 0 || coll__span_in(q, st->rbuf, st->roff, st->rlen, st->rrun, st->rstride)) &&
           (st->from < 0 || !st->reduce || coll__span_in(q, st->abuf, st->aoff, st->rlen, 0, 0));
}
#endif

/* The step the source just put in q->st becomes the one in flight: its
   pieces each way, no handles yet, and how its receives land. Only a
   watch's coll__lengthen, on segment 0, changes them until the step is
   through. */
static COLL__OFF_CHAIN void coll__load(coll_request *q)
{
    const coll__step *st = &q->st;
    COLL_ASSERT(st->to < q->pl.p && st->from < q->pl.p);
    COLL_ASSERT(coll__spans_ok(q));
    COLL_ASSERT(coll__paths_kept(st));
    q->nsend = st->to >= 0 ? coll__nsegs(&q->b[st->sbuf], st->slen) : 0;
    q->nrecv = st->from >= 0 ? coll__nsegs(&q->b[st->rbuf], st->rlen) : 0;
    q->sposted = q->rposted = q->done = 0;
#ifndef COLL_NO_NONBLOCKING
    q->hs[0] = q->hs[1] = q->hs[2] = q->hs[3] = -1;
    q->hr[0] = q->hr[1] = q->hr[2] = q->hr[3] = -1;
#endif
#if !defined(COLL_NO_NONBLOCKING) && !defined(COLL_NO_ZERO_COPY)
    q->zc = (unsigned char)coll__zero_copy(q);
#endif
    q->loaded = 1;
}

/* The request's result, kept: later coll_progress calls return it again. */
static int coll__end(coll_request *q, int rc)
{
    coll__record_end(q, rc);
    coll__observe_end(q, rc);
    q->finished = 1;
    q->err = rc;
    if (q->queued) { q->queued = 0; coll__top(q->c)->turn++; }
    return rc;
}

/* Drive a request: load a step from its source, move its pieces, repeat
   until the source has no more (0) or something fails. */
static int coll__progress(coll_request *q, int block)
{
#ifdef COLL_NO_NONBLOCKING
    (void)block;                                  /* send/recv/sendrecv only */
#else
    const coll_port *pt = &q->c->port;
    int nonblocking = pt->isend && pt->irecv && pt->wait;
#endif
    int rc;
    if (q->finished) return q->err;
    {
        const coll_comm *top = coll__top(q->c);
        if (q->queued && q->ticket != top->turn) return COLL_AGAIN;   /* not its turn yet */
        if (top->broken) return coll__end(q, COLL_ERR_BROKEN);        /* an earlier one broke it */
    }
    coll__observe_turn(q);
    for (;;) {
        if (!q->loaded) {
            if ((rc = q->source(q)) <= 0) return coll__end(q, rc);    /* 0: all done */
            coll__load(q);
        }
#ifndef COLL_NO_NONBLOCKING
        if (nonblocking) rc = coll__step_pipelined(q, block);
        else
#endif
        for (rc = COLL_OK; rc == COLL_OK && q->done < coll__pieces(q); q->done++)
            rc = coll__exchange_blocking(q, q->done);
        if (rc == COLL_AGAIN) return rc;
        if (rc != COLL_OK) return coll__end(q, coll__broke(q, rc, coll__failed(q)));
        q->loaded = 0;
    }
}

/* ---- >>moves  local moves around the messages ----------------------------
   The registry's begin and finish hooks: what a rank does to its own
   buffers before an algorithm's first message and after its last. */

static void coll__swap(unsigned char *a, unsigned char *b, size_t n)
{
    while (n--) { unsigned char t = *a; *a++ = *b; *b++ = t; }
}

/* Reverse bytes [0, n) in place. */
static void coll__reverse(unsigned char *b, size_t n)
{
    size_t i;
    for (i = 0; i < n / 2; i++) { unsigned char t = b[i]; b[i] = b[n - 1 - i]; b[n - 1 - i] = t; }
}

/* Slide n bytes down to a lower address that may overlap the source. */
static void coll__move_down(unsigned char *d, const unsigned char *s, size_t n)
{
    while (n--) *d++ = *s++;
}

/* Work in place: dst takes src, and the schedule runs on dst alone
   (hierarchical; any reducing collective on one rank). */
static int coll__work_in_place(coll_request *q)
{
    int rc = coll__copy(q->c, coll__buf(q, COLL_BUF_DST), coll__buf(q, COLL_BUF_SRC), q->pl.count * q->esize);
    q->b[COLL_BUF_SRC].at = q->b[COLL_BUF_DST].at;
    q->pl.inplace = 1;
    return rc;
}

/* The root works in place; the other ranks keep their buffers (linear
   reduce: they only send). */
static int coll__root_in_place(coll_request *q)
{
    return q->pl.rank == q->pl.root ? coll__work_in_place(q) : COLL_OK;
}

/* This rank's block to its own place in dst, if this rank uses dst
   (all-gather, gather). */
static int coll__own_block(coll_request *q)
{
    size_t off, len, in_n, out_n, es = q->esize;
    coll__extents(&q->pl, &in_n, &out_n);
    if (!out_n) return COLL_OK;
    coll__block(&q->pl, q->pl.rank, &off, &len);
    return coll__copy(q->c, coll__buf(q, COLL_BUF_DST) + off * es, coll__buf(q, COLL_BUF_SRC), len * es);
}

/* All-to-all: the block a rank sends itself. */
static int coll__own_block_a2a(coll_request *q)
{
    size_t off, len, roff, rlen, es = q->esize;
    coll__block(&q->pl, q->pl.rank, &off, &len);
    coll__rblock(&q->pl, q->pl.rank, &roff, &rlen);
    if (len == 0) return COLL_OK;           /* alltoallv: src or dst may be NULL */
    return coll__copy(q->c, coll__buf(q, COLL_BUF_DST) + roff * es, coll__buf(q, COLL_BUF_SRC) + off * es, len * es);
}

/* Scatter: this rank's block out of the big buffer, if this rank has it. */
static int coll__take_block(coll_request *q)
{
    size_t off, len, in_n, out_n, es = q->esize;
    coll__extents(&q->pl, &in_n, &out_n);
    if (!in_n) return COLL_OK;
    coll__block(&q->pl, q->pl.rank, &off, &len);
    return coll__copy(q->c, coll__buf(q, COLL_BUF_DST), coll__buf(q, COLL_BUF_SRC) + off * es, len * es);
}

/* Bruck all-gather works on dst rotated so that this rank's block is first;
   at the end three reversals rotate it back in place. */
static int coll__bruck_begin(coll_request *q)
{
    size_t off, len, es = q->esize;
    unsigned char *src = coll__buf(q, COLL_BUF_SRC), *dst = coll__buf(q, COLL_BUF_DST);
    coll__block(&q->pl, q->pl.rank, &off, &len);
    if (coll__overlap(dst, len * es, src, len * es)) { coll__move_down(dst, src, len * es); return COLL_OK; }
    return coll__copy(q->c, dst, src, len * es);
}

static int coll__bruck_finish(coll_request *q)
{
    size_t off, len, es = q->esize, n = q->pl.total * es, m;
    unsigned char *dst = coll__buf(q, COLL_BUF_DST);
    if (q->pl.p == 1) return COLL_OK;
    coll__block(&q->pl, q->pl.rank, &off, &len);
    m = n - off * es;
    coll__reverse(dst, m); coll__reverse(dst + m, n - m); coll__reverse(dst, n);
    return COLL_OK;
}

/* Bruck all-to-all: block j of dst starts as the block for rank r+j; at the
   end block i holds the one from rank r-i, swapped into rank order. */
static int coll__bruck_a2a_begin(coll_request *q)
{
    size_t off, len, es = q->esize;
    unsigned char *src = coll__buf(q, COLL_BUF_SRC), *dst = coll__buf(q, COLL_BUF_DST);
    int j, p = q->pl.p, rc = COLL_OK;
    coll__block(&q->pl, q->pl.rank, &off, &len);
    for (j = 0; j < p && rc == COLL_OK; j++)
        rc = coll__copy(q->c, dst + (size_t)j * len * es, src + (size_t)((q->pl.rank + j) % p) * len * es, len * es);
    return rc;
}

static int coll__bruck_a2a_finish(coll_request *q)
{
    size_t off, len, es = q->esize;
    unsigned char *dst = coll__buf(q, COLL_BUF_DST);
    int i, p = q->pl.p;
    coll__block(&q->pl, q->pl.rank, &off, &len);
    for (i = 0; i < p; i++) {
        int j = coll__mod(q->pl.rank - i, p);
        if (i < j) coll__swap(dst + (size_t)i * len * es, dst + (size_t)j * len * es, len * es);
    }
    return COLL_OK;
}

/* The first local moves, once the ranks agree, so the schedules find every
   rank's own data where they expect it: the row's begin hook (a reducing
   collective on one rank just copies). */
static int coll__begin(coll_request *q)
{
    const coll__plan *pl = &q->pl;
    const coll__entry *e = COLL__ROW_OF(pl);
    size_t off, len;
    if (pl->total == 0) return COLL_OK;           /* nothing to move (buffers may be NULL) */
    if (pl->p == 1 && (COLL__KIND_IS(pl->kind, COLL_REDUCE_SCATTER) || COLL__KIND_IS(pl->kind, COLL_REDUCE_SCATTERV))) {
        coll__block(pl, 0, &off, &len);
        return coll__copy(q->c, coll__buf(q, COLL_BUF_DST), coll__buf(q, COLL_BUF_SRC), len * q->esize);
    }
    if (pl->p == 1 && coll__reduces(COLL__KIND(pl->kind))) return coll__work_in_place(q);
    return COLL__BEGIN(e) ? COLL__BEGIN(e)(q) : COLL_OK;
}

/* The last local touches: the row's finish hook (not where coll__begin
   ran none: one rank of a reducing collective), and avg's one division of
   the reduced result. */
static int coll__finish(coll_request *q)
{
    const coll__plan *pl = &q->pl;
    const coll__entry *e = COLL__ROW_OF(pl);
    size_t off, len;
    int rc;
    if (pl->total == 0) return COLL_OK;
    if (COLL__FINISH(e) && !(pl->p == 1 && coll__reduces(COLL__KIND(pl->kind))) && (rc = COLL__FINISH(e)(q)) != COLL_OK)
        return rc;
    if (!COLL__ON(COLL_OPS, COLL_AVG) || !coll__reduces(COLL__KIND(pl->kind)) || q->a.op != COLL_AVG) return COLL_OK;
    if (COLL__KIND_IS(pl->kind, COLL_REDUCE) && pl->rank != pl->root) return COLL_OK;
    coll__block(pl, pl->rank, &off, &len);
    if (coll__vector(COLL__KIND(pl->kind))) len = pl->count;
    /* a scan's average is over the ranks it covers: r+1, or r (exscan) */
    return coll__scale(q->c, coll__buf(q, COLL_BUF_DST), len, q->a.dtype,
                       COLL__KIND_IS(pl->kind, COLL_SCAN) ? (size_t)pl->rank + 1 :
                       COLL__KIND_IS(pl->kind, COLL_EXSCAN) ? (size_t)(pl->rank ? pl->rank : 1) : (size_t)pl->p);
}


/* ---- >>source  the plain source: the schedule's steps, then its finish --- */

/* The last local touches, or the error that breaks the communicator. */
static int coll__close(coll_request *q)
{
    int rc = coll__finish(q);
    return rc == COLL_OK ? 0 : coll__broke(q, rc, COLL__WHY("a local operation failed"));
}

/* The source of a call without the agreement layer (its begin ran in
   coll_start): step after step of the schedule. */
static int coll__plain_source(coll_request *q)
{
    if (COLL__ROW_OF(&q->pl)->f(&q->pl, q->step, &q->st)) { q->step++; return 1; }
    return coll__close(q);
}
/* Does a layer drive the call (its own source)? Never without one. */
#if COLL__LAYERS
#define COLL__LAYERED(q) ((q)->source != coll__plain_source)
#else
#define COLL__LAYERED(q) ((void)(q), 0)
#endif

/* ========================================================================== */
/* >>agree  3. The agreement layer: call checks, small calls, CRCs            */
/* ========================================================================== */
/* The first promise - the right answer on every rank, or an error on every
   rank that can see it - kept by a layer that drives the engine: it hands
   the engine steps of its own around the schedule's and watches the
   schedule's pieces, and the engine knows none of it (see CALL CHECKS at
   the top). Its source, coll__agree_source, runs
     phase 0  the agreement rounds: lg p dissemination rounds of frames
              (24 bytes, and the blocks of a small call), each round a
              frame step (and, where one end's blocks need it, its tail);
              then the verdict, the same on every rank;
     phase 1  the schedule, each step followed, with COLL_CHECK_CRC, by a
              step that exchanges the CRC-32C of what the step moved;
     phase 2  the closing rounds (COLL_CHECK_CRC only): did any rank see a
              damaged message?
   A small call (a dissemination row: a block of at most 16 x
   COLL_EAGER_BYTES / p bytes) rides in the frames of phase 0: its begin
   hook loads this rank's block before the rounds, the rounds carry the
   blocks, its steps are skipped, and its finish hook computes the result
   once the verdict is in: lg p rounds in all.
   State: q->g. Cost: lg p messages of 24 + min(2^k, p - 2^k) x 32 bytes
   per rank per call (more for a small call's tails); with the CRC one
   4-byte message per schedule step each way and lg p closing frames.
   COLL_NO_CHECKS leaves the whole layer out. */
#ifndef COLL_NO_CHECKS
enum {
    COLL__FRAME = 24,              /* bytes of a check frame's header (8-aligned blocks follow) */
    COLL__F_REFUSED = 1,           /* some rank refused its arguments        */
    COLL__F_CORRUPT = 2,           /* some rank got a damaged message        */
    COLL__F_NULLDST = 4,           /* a non-root of reduce passed no dst     */
    COLL__F_TAILS = 24,            /* (sender's own) the class of the round's
                                      tail that follows (1-3), 0: none      */
    COLL__TAIL_SHIFT = 3,
    /* the frame format's version, even: ranks built with another room
       (COLL_EAGER_BYTES) disagree */
    COLL__VERSION = 2 + 2 * (COLL_EAGER_BYTES / 8 % 127)
};
/* A small call rides in the rounds (never with COLL_EAGER_BYTES 0: then
   the compiler drops every line of it). */
#define COLL__EAGER(g) (COLL__SMALL && (g)->eager)
enum { COLL__LAST_NONE, COLL__LAST_FRAME, COLL__LAST_PAYLOAD, COLL__LAST_CRC };

/* A hash of everything that shapes the message pattern or the meaning of
   the bytes: ranks that agree on it run the same steps with the same
   sizes. Byte order fixed, so mixed-endian ranks compare alike. Computed
   once per plan (coll_prepare); each run adds its sequence number. */
static COLL__NOINLINE uint32_t coll__signature(coll_comm *c, const coll__plan *pl, const coll_args *a, size_t es)
{
    unsigned char w[56];
    uint32_t h, v[14];
    int k = COLL__KIND(pl->kind), rooted = coll__rooted(COLL__KIND(pl->kind));
    int user = coll__reduces(COLL__KIND(pl->kind)) && a->op == COLL_USER_OP;
    size_t i, nc, t = pl->total;
    v[0] = (uint32_t)pl->p;
    v[1] = (uint32_t)k;
    v[2] = (uint32_t)pl->algo;
    v[3] = rooted ? (uint32_t)pl->root : 0u;
    v[4] = COLL__NEEDS(COLL__ROW_OF(pl)) & COLL__GROUP ? (uint32_t)pl->group : 0u;
    v[5] = (uint32_t)t;
    v[6] = (uint32_t)((t >> 16) >> 16);
    v[7] = coll__reduces(COLL__KIND(pl->kind)) ? (uint32_t)a->op : 0u;
    v[8] = COLL__KIND_IS(k, COLL_BARRIER) ? 0u : (uint32_t)a->dtype;
    v[9] = (uint32_t)es;
    v[10] = (uint32_t)c->segment;
    v[11] = c->checks | (user && coll__uop(c, a)->commutative ? 256u : 0u) |   /* all-to-all in place */
            ((COLL__KIND_IS(k, COLL_ALLTOALL) || COLL__KIND_IS(k, COLL_ALLTOALLV)) && pl->inplace ? 512u : 0u);   /* swaps */
    v[12] = c->group_id;                    /* which group of ranks */
    v[13] = coll__top(c)->context;          /* which communicator on the port: its top's */
    for (i = 0; i < 14; i++) coll__put32(w + 4 * i, v[i]);     /* little-endian on every host */
    h = coll_crc32c(0, w, sizeof w);
    nc = !COLL__COUNTS(pl) ? 0 : COLL__KIND_IS(k, COLL_ALLTOALLV) ? (size_t)pl->p * (size_t)pl->p : (size_t)pl->p;
    for (i = 0; i < nc; i++)                    /* the counts: p x p of them for alltoallv */
        h = coll__crc_word(coll__crc_word(h, (uint32_t)pl->counts[i]), (uint32_t)((pl->counts[i] >> 16) >> 16));
    return h;
}

/* ---- frames ----------------------------------------------------------------
   A frame: 'c', version, flags, phase, lowest and highest signature seen,
   lowest refusing rank and its code, CRC-32C of the frame (this field 0), the
   tail's CRC-32C (0 without one), then the first `inl` bytes of the
   round's blocks (zeros unless eager). Round k carries m = min(2^k,
   p - 2^k) blocks of `blk` bytes, packed: m x inl bytes of them in the
   frame, and when m x blk is more, bytes m x inl .. m x b follow as the
   round's tail, where b is the least of cap / 4, cap / 2 and cap that
   holds a block: the tail's class (1, 2, 3), in the frame's flags. The
   frame's size depends on p and k alone, the tail's on p, k and its
   class: never on what the receiver was asked to do. */
static int coll__round_blocks(const coll_request *q, int k)
{
    int d = 1 << k;
    return d < q->pl.p - d ? d : q->pl.p - d;
}

/* Bytes of each block inside the frame: COLL_EAGER_BYTES, the rest of a
   larger block in the round's tail. Every call sends the frames, so they
   stay small: each cache line of a frame is one more hand-off between
   cores for every call, not only for the calls whose blocks ride in it. */
static size_t coll__inl(const coll_request *q)
{
    return COLL__SMALL ? q->g.inl : 0;       /* (coll__agree_prepare: p alone) */
}

static size_t coll__frame_bytes(const coll_request *q, int k)
{
    return COLL__FRAME + (size_t)coll__round_blocks(q, k) * coll__inl(q);
}

/* A block of tail class c (1-3): a quarter, a half or the whole of the
   room's share. */
static size_t coll__class_blk(const coll__agree *g, unsigned c)
{
    return g->cap >> (3 - c);
}

/* The tail of class c (0: none) in round k: the rest of m blocks of its
   class. A 40-byte call at 2 ranks sends 32 bytes of tail, not the 224 a
   block of the whole share would take. */
static size_t coll__tail_of(const coll_request *q, int k, unsigned c)
{
    size_t b = c ? coll__class_blk(&q->g, c) : 0, inl = coll__inl(q);
    if (!COLL__SMALL || b <= inl) return 0;          /* no room: no tails */
    return (size_t)coll__round_blocks(q, k) * (b - inl);
}

/* The class of the tail this rank sends this round, 0: none (only a
   small call's blocks in the agreement rounds have one). */
static unsigned coll__tail_class(const coll_request *q)
{
    return COLL__SMALL && q->g.phase == 0 ? q->g.tcls : 0u;
}

/* A frame's CRC-32C: of the whole frame with its own field zero (one pass). */
static uint32_t coll__frame_crc(unsigned char *f, size_t bytes)
{
    coll__put32(f + 16, 0);
    return coll_crc32c(0, f, bytes);
}

static void coll__frame_pack(coll_request *q)
{
    coll__agree *g = &q->g;
    unsigned char *f = g->fo.b;
    size_t bytes = g->fb;
    unsigned tail = coll__tail_class(q);
    f[0] = 'c'; f[1] = COLL__VERSION;
    f[2] = (unsigned char)(g->flags | tail << COLL__TAIL_SHIFT); f[3] = g->phase;
    coll__put32(f + 4, g->lo);
    coll__put32(f + 8, g->hi);
    coll__put32(f + 12, g->bad);
    if (COLL__SMALL) coll__put32(f + 20, g->ts ? coll_crc32c(0, f + bytes, g->ts) : 0u);
    coll__put32(f + 16, coll__frame_crc(f, bytes));
}

/* The frame of this round is in: believe it, or mark the link out of step.
   Nothing of a damaged frame is believed but its tail class, and that only
   to take the tail (its size fixed by p, k and the class) and throw it
   away: a sender is not left blocked on it while the verdict is already
   COLL_ERR_CORRUPT. */
static void coll__frame_check(coll_request *q)
{
    coll__agree *g = &q->g;
    unsigned char *f = g->fin;
    uint32_t crc = coll__get32(f + 16);
    unsigned cls = (f[2] & COLL__F_TAILS) >> COLL__TAIL_SHIFT;
    g->tr = g->phase == 0 ? coll__tail_of(q, g->round, cls) : 0;   /* the rest of its blocks follows */
    if (f[0] != 'c' || f[1] != COLL__VERSION || f[3] != g->phase ||
        crc != coll__frame_crc(f, g->fb) || (cls && !g->tr))
        g->flags |= COLL__F_CORRUPT;    /* not a frame of this round: the link is out of step */
}

/* The round is through both ways (frame and tail): fold the frame into the
   running verdict (min, max, or); an eager call also keeps the sender's
   blocks (`got` bytes of them arrived): they are the ranks r-2^k, r-2^k-1,
   ..., so they follow the 2^k this rank holds already. Merged only now,
   when no message of the round still reads the blocks. */
static void coll__round_end(coll_request *q)
{
    coll__agree *g = &q->g;
    const unsigned char *f = g->fin;
    size_t bytes = g->fb, tail = g->tr;
    size_t got = bytes - COLL__FRAME + tail;
    if (COLL__SMALL && tail && coll__get32(f + 20) != coll_crc32c(0, f + bytes, tail))
        g->flags |= COLL__F_CORRUPT;         /* the tail it announced */
    if (!(g->flags & COLL__F_CORRUPT)) {
        uint32_t lo = coll__get32(f + 4), hi = coll__get32(f + 8), bad = coll__get32(f + 12);
        g->flags |= f[2] & (COLL__F_REFUSED | COLL__F_CORRUPT | COLL__F_NULLDST);
        if (lo < g->lo) g->lo = lo;
        if (hi > g->hi) g->hi = hi;
        if (bad < g->bad) g->bad = bad;
        if (COLL__EAGER(g) && g->phase == 0) {
            size_t want = (size_t)coll__round_blocks(q, g->round) * g->blk;
            unsigned char *to = g->fo.b + COLL__FRAME + ((size_t)1 << g->round) * g->blk;
            COLL_ASSERT(((size_t)1 << g->round) * g->blk + want <= (size_t)COLL__EAGER_ROOM);
            /* a sender that sent less disagrees on the call: zeros, then MISMATCH */
            COLL_MEMCPY(to, f + COLL__FRAME, want < got ? want : got);
            if (want > got) COLL_MEMSET(to + got, 0, want - got);
        }
    }
    g->round++;
}

/* The layer's two buffers in the engine's table: bytes, a first segment
   of `head` (0: none) and the rest in one. */
static void coll__layer_buffers(coll_request *q, unsigned char *out, unsigned char *in, size_t head)
{
    int i;
    for (i = COLL__BUF_OUT; i <= COLL__BUF_IN; i++) {
        q->b[i].at = i == COLL__BUF_OUT ? out : in;
        q->b[i].unit = 1; q->b[i].cut = (size_t)-1; q->b[i].head = head;
    }
}

/* The watch on a frame step: its frame is in - believe it or not, and
   take the tail it announces as the rest of the same receive. */
static int coll__frame_watch(coll_request *q, const unsigned char *piece, size_t n, int in)
{
    coll__agree *g = &q->g;
    (void)n;
    if (!in || piece != g->fin) return 1;
    coll__frame_check(q);
    if (COLL__SMALL && g->tr) coll__lengthen(q, g->fb + g->tr);
    return 1;
}

/* Round k as a step: dissemination, signal r + 2^k and hear from r - 2^k;
   after lg p rounds every rank has heard, transitively, from every rank.
   The frame is the step's first segment; the tail, when this rank's
   blocks need one, its second, sent right behind it. The receive is the
   frame until the frame says a tail follows (coll__frame_watch). The
   pattern depends on rank and size alone, so it cannot deadlock whatever
   the arguments. */
static void coll__round_step(coll_request *q)
{
    coll__agree *g = &q->g;
    coll__step *st = &q->st;
    int r = q->pl.rank, p = q->pl.p, d = 1 << g->round;
    coll__idle(st);
    st->to = coll__mod(r + d, p);
    st->from = coll__mod(r - d, p);
    st->send_first = coll__shift_send_first(r, p, d);
    st->sbuf = COLL__BUF_OUT; st->rbuf = COLL__BUF_IN;
    st->slen = g->fb + g->ts;
    st->rlen = g->fb;
    g->tr = 0;
    coll__layer_buffers(q, g->fo.b, g->fin, g->fb);
    q->watch = coll__frame_watch;
    g->last = COLL__LAST_FRAME;
}

/* What every rank concludes from the agreement rounds (the same frames
   reached all of them, so the same verdict). */
static int coll__verdict(coll_request *q)
{
    coll_comm *c = q->c;
    coll__agree *g = &q->g;
    if (g->flags & COLL__F_CORRUPT) return coll__broke(q, COLL_ERR_CORRUPT, COLL__WHY("a check frame arrived damaged"));
    if (g->refused) return g->refused;
#ifndef COLL_NO_ERRSTR
    if (g->flags & COLL__F_REFUSED) c->why = COLL__WHY("another rank refused its arguments");
    else if (g->lo != g->hi) c->why = COLL__WHY("ranks disagree on the call or its arguments");
#endif
    (void)c;
    if (g->flags & COLL__F_REFUSED) return COLL_ERR_PEER;
    if (g->lo != g->hi) return COLL_ERR_MISMATCH;
    return COLL_OK;
}

/* ---- COLL_CHECK_CRC: a watch on every payload piece, a step after each ----
   The running CRC-32C of what a step sends and receives; after the step, its
   CRC travels as one 4-byte message each way to the same peers (so payload
   segments still pipeline). A mismatch is noted for the closing rounds;
   once one is seen nothing more is folded. COLL_NO_CRC leaves it out, and
   the closing rounds with it. */
#ifndef COLL_NO_CRC
#define COLL__CRCS 1
#else
#define COLL__CRCS 0
#endif
#define COLL__CRC_ON(c) (COLL__CRCS ? (c)->checks & COLL_CHECK_CRC : 0u)
#define COLL__CLOSING(g) (COLL__CRCS ? (g)->nepi : 0)   /* closing rounds of this call */
static int coll__crc_watch(coll_request *q, const unsigned char *piece, size_t n, int in)
{
    coll__agree *g = &q->g;
    if (!in) { g->crc_s = coll_crc32c(g->crc_s, piece, n); return 0; }
    g->crc_r = coll_crc32c(g->crc_r, piece, n);
    return (g->flags & COLL__F_CORRUPT) != 0;
}

static void coll__crc_step(coll_request *q)
{
    coll__agree *g = &q->g;
    coll__step *st = &q->st;
    int to = q->nsend ? st->to : -1, from = q->nrecv ? st->from : -1, first = st->send_first;
    coll__idle(st);
    st->to = to; st->from = from; st->send_first = first;
    st->sbuf = COLL__BUF_OUT; st->rbuf = COLL__BUF_IN;
    st->slen = st->rlen = 4;
    coll__put32(g->crc_out, g->crc_s);
    coll__layer_buffers(q, g->crc_out, g->crc_in, 0);
    q->watch = 0;
    g->last = COLL__LAST_CRC;
}

#if COLL__ROOMS
/* ---- small calls: the dissemination rows' local work ----------------------
   A small call is a row of its own (the dissemination gather, in
   >>schedules): its begin hook puts this rank's contribution into block 0
   of the room, its finish hook computes the result from the p blocks. With
   the layer on, the agreement rounds carry the blocks in their frames and
   the row's own steps are skipped; without it, its steps run as any
   schedule's. The room is the layer's outgoing frame behind its header. */
static unsigned char *coll__room(coll_request *q)
{
    return q->g.fo.b + COLL__FRAME;
}

/* Begin: this rank's contribution into block 0 (zero-padded), and the
   room in the engine's table with the block as its unit. */
static int coll__room_begin(coll_request *q)
{
    const coll__plan *pl = &q->pl;
    size_t b = coll__room_bytes(pl, q->esize), blk = (b + 7) & ~(size_t)7;
    coll__buffer *B = &q->b[COLL__BUF_ROOM];
    int from = !(COLL__KIND_IS(pl->kind, COLL_BROADCAST) || COLL__KIND_IS(pl->kind, COLL_SCATTER)) ||
               pl->rank == pl->root;          /* a broadcast's or scatter's root alone has data */
    B->at = coll__room(q); B->unit = q->g.blk = blk; B->cut = (size_t)-1; B->head = 0;
    if (from && b) COLL_MEMCPY(B->at, coll__buf(q, COLL_BUF_SRC), b);
    else b = 0;                         /* (then a block of zeros) */
    if (blk > b) COLL_MEMSET(B->at + b, 0, blk - b);
    return COLL_OK;
}

/* Finish: the result from the blocks (block j holds rank r - j's), reduced
   strictly in rank order so every rank gets the same bits. */
static COLL__NOINLINE int coll__room_finish(coll_request *q)
{
    const coll__plan *pl = &q->pl;
    coll_comm *c = q->c;
    size_t bn = pl->count * q->esize, mine = (size_t)pl->rank * bn, blk = q->g.blk;   /* (coll__room_begin's) */
    unsigned char *dst = coll__buf(q, COLL_BUF_DST), *room = coll__room(q);
    int i, p = pl->p, r = pl->rank, rc = COLL_OK, lo = 0, hi = p, root = r == pl->root;
    coll_kind k = COLL__KIND(pl->kind);
#define COLL__BLK(i) (room + (size_t)coll__mod(r - (i), p) * blk)    /* rank i's */
    if ((COLL__KIND_IS(k, COLL_REDUCE) || COLL__KIND_IS(k, COLL_GATHER)) && !root) return COLL_OK;
    if (coll__reduces(k)) {                 /* all-reduce, reduce, reduce-scatter */
        size_t at = COLL__KIND_IS(k, COLL_REDUCE_SCATTER) ? mine : 0;
        for (i = 1; i < p && rc == COLL_OK; i++)    /* ((b0 + b1) + b2) + ... */
            rc = coll__reduce(c, &q->a.uop, dst, i == 1 ? COLL__BLK(0) + at : dst, COLL__BLK(i) + at,
                              pl->count, q->a.dtype, q->a.op);
        return rc;                              /* (avg: coll__finish divides) */
    }
    if (COLL__KIND_IS(k, COLL_BROADCAST) || COLL__KIND_IS(k, COLL_SCATTER)) {   /* the root's block */
        if (root && COLL__KIND_IS(k, COLL_BROADCAST)) return COLL_OK;
        lo = pl->root; hi = lo + 1;
    }
    if (!COLL__KIND_IS(k, COLL_SCATTER) && !COLL__KIND_IS(k, COLL_ALLTOALL)) mine = 0;
    for (i = lo; i < hi; i++)               /* each rank's block, or the part meant for this rank */
        COLL_MEMCPY(dst + (size_t)(i - lo) * bn, COLL__BLK(i) + mine, bn);
    return COLL_OK;
#undef COLL__BLK
}
#endif

/* ---- the layer's source ---------------------------------------------------- */

/* The verdict is in (phase 0 is through): an error on every rank, or the
   call goes on - as linear reduce if a non-root had no dst, finished here
   if it rode in the rounds, else into the schedule. */
static int coll__agreed(coll_request *q)
{
    coll__agree *g = &q->g;
    int rc = coll__verdict(q);
    if (rc != COLL_OK) return rc;
    g->round = 0;
    if (COLL__NULLDST_SWITCH && (g->flags & COLL__F_NULLDST) && !COLL__EAGER(g)) {   /* a non-root has no dst */
        const coll__entry *e = coll__entry_of(COLL_REDUCE, COLL_ALGO_LINEAR);
        if (!e || !e->f) return COLL__NO(&q->c->why, COLL_ERR_NOSYS, "algo: linear reduce (for a NULL dst) not compiled in");
        q->pl.algo = COLL_ALGO_LINEAR;
        q->pl.row = e;
    }
    g->phase = 1;
    if (g->skip) return COLL_OK;        /* the rounds were its steps: on to its finish */
    rc = coll__begin(q);
    return rc == COLL_OK ? rc : coll__broke(q, rc, COLL__WHY("a local copy failed"));
}

/* What the step just run leaves to do: end the round of its frame, load
   the CRC step after a
   payload step, check a CRC; then the verdict once the agreement rounds
   are through. 1: a step is loaded; 0: go on; < 0: the call's error. Its
   own function, off the stack chain that runs the schedule. */
static COLL__NOINLINE int coll__agree_after(coll_request *q)
{
    coll__agree *g = &q->g;
    int last = g->last;
    g->last = COLL__LAST_NONE;
    if (last == COLL__LAST_FRAME) coll__round_end(q);
    if (last == COLL__LAST_PAYLOAD && COLL__CRC_ON(q->c) && (q->nsend || q->nrecv)) {
        coll__crc_step(q);
        return 1;
    }
    if (COLL__CRCS && last == COLL__LAST_CRC && q->nrecv && coll__get32(g->crc_in) != g->crc_r)
        g->flags |= COLL__F_CORRUPT;
    return g->phase == 0 && g->round == g->nchk ? coll__agreed(q) : 0;
}

/* The layer's next step: what the last one leaves to do, then the next
   of the phase - an agreement round, a step of the schedule, a closing
   round. 1: loaded; 0: the call is complete; < 0: its error. */
static int coll__agree_source(coll_request *q)
{
    coll__agree *g = &q->g;
    int rc = g->last != COLL__LAST_NONE || g->phase == 1 ? coll__agree_after(q) : 0;
    if (rc != 0) return rc;
    if (g->phase == 1) {
        if (!g->skip && COLL__ROW_OF(&q->pl)->f(&q->pl, q->step, &q->st)) {
            q->step++;
            if (COLL__CRCS) g->crc_s = g->crc_r = g->lo;   /* seeded with the call's signature:
                                                              a message of another call fails it */
            q->watch = COLL__CRC_ON(q->c) ? coll__crc_watch : 0;
            g->last = COLL__LAST_PAYLOAD;
            return 1;
        }
        g->phase = 2;
    }
    if (g->round < (g->phase == 0 ? g->nchk : COLL__CLOSING(g))) {
        g->fb = coll__frame_bytes(q, g->round);   /* the round's sizes */
        g->ts = coll__tail_of(q, g->round, coll__tail_class(q));
        coll__frame_pack(q);
        coll__round_step(q);
        return 1;
    }
    if (COLL__CRCS && (g->flags & COLL__F_CORRUPT))   /* what the CRCs and closing rounds saw */
        return coll__broke(q, COLL_ERR_CORRUPT, COLL__WHY("a message failed its CRC (here or elsewhere)"));
    if (COLL__CRCS && g->lo != g->hi)   /* a closing frame of another call came in */
        return coll__broke(q, COLL_ERR_CORRUPT, COLL__WHY("a replayed or misdelivered closing frame"));
    return coll__close(q);
}

/* coll_prepare's part: whether this call runs the agreement rounds (checks
   on, more than one rank) and what its frames will say - its signature or
   its refusal (rc), a non-root's missing dst, whether it rides in them. A
   refusing rank still takes part in the rounds, so every other rank
   returns then instead of waiting for it; its own code comes back from
   coll_progress (coll_run: at once). coll__agree_refuse makes a request a
   refusal: at prepare, or when a run finds its plan stale (coll_restart). */
static COLL__NOINLINE void coll__agree_refuse(coll_request *q, int rc)
{
    coll__agree *g = &q->g;
    int rank = q->pl.rank, p = q->pl.p;
    COLL_MEMSET(&q->pl, 0, sizeof q->pl);      /* the rounds of a refusal run on rank and size alone */
    q->pl.rank = rank; q->pl.p = p;
    g->eager = g->skip = g->tcls = g->nepi = 0;
    g->sig = 0;
    g->refused = rc;
    g->flags0 = COLL__F_REFUSED;
    g->bad0 = (uint32_t)rank << 16 | (uint32_t)(-rc & 0xffff);
}
static void coll__agree_prepare(coll_request *q, const coll_args *a, size_t es, int rc, int nulldst)
{
    coll_comm *c = q->c;
    coll__agree *g = &q->g;
    if (!(c->checks & COLL_CHECK_CALLS) || c->nranks < 2) return;
    g->nchk = (unsigned char)coll__ceil_log2(c->nranks);
    if (COLL__SMALL) {                                           /* frame sizes: p alone */
        g->cap = coll__room_cap(c->nranks);
        g->inl = ((size_t)COLL_EAGER_BYTES < g->cap ? (size_t)COLL_EAGER_BYTES : g->cap) & ~(size_t)7;
    }
    q->source = coll__agree_source;
    if (rc != COLL_OK) { coll__agree_refuse(q, rc); return; }
    g->bad0 = 0xffffffffu;
    /* (the request is cleared: what is not set here is 0) */
    if (COLL__CRC_ON(c)) g->nepi = g->nchk;
    /* the agreement rounds are a barrier's steps, and carry a small call's */
    g->eager = COLL__IN_ROOM(COLL__ROW_OF(&q->pl));
    g->skip = g->eager || COLL__KIND_IS(a->kind, COLL_BARRIER);
    if (COLL__EAGER(g)) {
        g->blk = coll__room_blk(&q->pl, es);
        if (g->blk > g->inl)                /* the least class that holds it */
            for (g->tcls = 1; g->tcls < 3 && coll__class_blk(g, g->tcls) < g->blk; g->tcls++) {}
    }
    g->flags0 = nulldst ? (unsigned)COLL__F_NULLDST : 0u;
    g->sig = coll__signature(c, &q->pl, a, es);
}

/* Each run's part: the layer's state afresh and this rank's first frame -
   the signature with the run's sequence number, or the refusal. */
static void coll__agree_run(coll_request *q)
{
    coll__agree *g = &q->g;
    g->phase = g->round = 0;
    g->tr = 0;
    g->last = COLL__LAST_NONE;
    g->flags = g->flags0;
    g->bad = g->bad0;
    /* odd multiplier: a bijection, so runs with one plan never collide
       (a refusal's signature is 0 and goes unread: its flag decides) */
    g->lo = g->hi = g->sig ^ (q->c->seq * 0x9e3779b1u);
    COLL_MEMSET(g->fo.b, 0, COLL__FRAME + coll__inl(q) * (size_t)q->pl.p);   /* zeros unless eager */
#if COLL__ROOMS
    if (COLL__EAGER(g)) {
        if (g->tcls)                        /* tails send their class's blocks whole: */
            COLL_MEMSET(coll__room(q) + coll__inl(q) * (size_t)q->pl.p, 0,    /* clear the rest */
                        (coll__class_blk(g, g->tcls) - coll__inl(q)) * (size_t)q->pl.p);   /* (the frames
                                                                                        are cleared) */
        coll__room_begin(q);                /* the row's begin: block 0 is this rank's */
    }
#endif
}
#endif

/* ========================================================================== */
/* >>pieces  A port's largest message                                         */
/* ========================================================================== */
/* A transport that carries messages of at most max_bytes (a hardware
   mailbox, a FIFO of 64 bytes) gets none larger: coll_init puts this layer
   between the engine and such a port, and every message - a segment, a
   check frame, its tail, a CRC - goes as pieces of at most max_bytes, in
   order; the engine does not know. The layer offers the blocking calls
   only: send and recv move a whole message piece by piece, in the order
   the schedule gives, so a synchronous port stays deadlock-free, and
   sendrecv pairs the pieces of both directions. (Pieces of several
   messages in flight would need a progress engine of their own: each
   piece's completion must post the next, whichever message a rank waits
   for. So with max_bytes coll_progress runs a step to its end, as with
   COLL_NO_NONBLOCKING, and irecv_fold goes unused.) Cost: a message of n
   bytes is ceil(n / max_bytes) port calls each way. State: the caller's
   port, in the communicator. COLL_NO_PIECES leaves it out (max_bytes is
   then refused). */
#ifndef COLL_NO_PIECES
static size_t coll__piece(const coll_port *in, size_t left)
{
    return left < in->max_bytes ? left : in->max_bytes;
}

/* Piece i of each direction together, while either has one (a send or a
   receive alone is the same with nothing the other way). */
static int coll__pieces_sendrecv(void *ctx, int to, const void *sbuf, size_t sbytes,
                                 int from, void *rbuf, size_t rbytes)
{
    const coll_port *in = &((coll__msgcut *)ctx)->inner;
    const unsigned char *s = (const unsigned char *)sbuf;
    unsigned char *r = (unsigned char *)rbuf;
    size_t so = 0, ro = 0;
    int rc = COLL_OK;
    while (rc == COLL_OK && (so < sbytes || ro < rbytes)) {
        size_t a = coll__piece(in, sbytes - so), b = coll__piece(in, rbytes - ro);
        rc = a && b ? in->sendrecv(in->ctx, to, s + so, a, from, r + ro, b)
           : a      ? in->send(in->ctx, to, s + so, a) : in->recv(in->ctx, from, r + ro, b);
        so += a; ro += b;
    }
    return rc;
}

static int coll__pieces_send(void *ctx, int peer, const void *buf, size_t bytes)
{
    return coll__pieces_sendrecv(ctx, peer, buf, bytes, peer, 0, 0);
}

static int coll__pieces_recv(void *ctx, int peer, void *buf, size_t bytes)
{
    return coll__pieces_sendrecv(ctx, peer, 0, 0, peer, buf, bytes);
}


/* coll_init's part: the communicator's port becomes this layer over the
   caller's. */
static void coll__pieces_wrap(coll_comm *c, const coll_port *port)
{
    coll__msgcut *P = &c->pieces;
    COLL_MEMCPY(&P->inner, port, sizeof P->inner);
    coll__layer_port(&c->port, port, P);
    c->port.send = coll__pieces_send;
    c->port.recv = coll__pieces_recv;
    if (port->sendrecv) c->port.sendrecv = coll__pieces_sendrecv;
}
#endif

/* ========================================================================== */
/* >>planner  4. Planner: AUTO                                                */
/* ========================================================================== */

static size_t coll__total_bytes(const coll__plan *pl, size_t esize)
{
    size_t n = pl->total;
    if (COLL__KIND_IS(pl->kind, COLL_ALLTOALL)) n = pl->count * (size_t)pl->p;
    if (COLL__KIND_IS(pl->kind, COLL_ALLTOALLV)) n = pl->total / (size_t)pl->p;   /* the mean row: alike everywhere */
    return n * esize;
}

/* Do the agreement rounds carry a small call's blocks (the dissemination
   rows)? With the call checks on, over 2 ranks and more, and a call with
   data: then its blocks ride in frames that every call sends anyway. */
static int coll__rides(const coll_comm *c, const coll__plan *pl)
{
    return (c->checks & COLL_CHECK_CALLS) && pl->p > 1 && pl->total > 0;
}

#ifndef COLL_NO_COST_MODEL
/* ---- crowded: more ranks than cores (coll_set_cores) -----------------------
   With p ranks on c < p cores the cores do every rank's work, and a
   message that a rank must first receive and combine before it can send
   it on (a dependent send) waits until that rank gets a core again: a
   hand-off. The α-β-γ formulas price one rank's path as if every rank had
   a core. Here a call takes at least the work of all ranks spread over
   the cores, and at least its path's own bytes (the formula's β and γ
   terms, bw: more cores do not shorten them); a row costs the larger,
       max(bw, (α·(M + D) + β·B + γ·G) / c)
   with M the messages (segments), D those of them that are dependent
   (sent from anything but src: a hand-off more), B the bytes sent and G
   the bytes reduced, summed over the ranks by walking each rank's steps
   of the row's schedule. At 4 ranks naive all-reduce has D = 3 (the
   root's broadcast), the binomial tree 4, Rabenseifner 12, ring 20: small
   calls go to the fewest messages and hand-offs, large ones to the
   shortest path in bytes. Every rank walks the same plans (this call's
   count and root, out of place), so all pick alike: the walk borrows the
   call's own plan and step (no copies on the stack) and gives back what
   it changed. It costs p x steps schedule calls per row (0.6 ms for
   all-reduce at 64 ranks here, once per call shape: AUTO's memo keeps the
   pick), so it runs up to COLL__CROWD_RANKS ranks (above, the formulas
   decide), and a row of more than COLL__CROWD_STEPS steps over all ranks
   is no choice. */
#define COLL__CROWD_RANKS 64
#define COLL__CROWD_STEPS 16384
static coll__real coll__cost_crowded(const coll_comm *c, coll__plan *pl, const coll__entry *e, size_t es,
                                     coll__step *st, coll__real bw)
{
    const coll__tune *t = &c->tune;
    const coll__entry *row = pl->row;
    coll__real w = 0;
    long steps = 0;
    int s, rank = pl->rank, inplace = pl->inplace, algo = pl->algo;
    pl->inplace = 0; pl->row = e; pl->algo = (coll_algo)e->algo;
    for (pl->rank = 0; pl->rank < pl->p; pl->rank++)
        for (s = 0; steps <= COLL__CROWD_STEPS && e->f(pl, s, st); s++, steps++) {
            if (st->to >= 0 && st->slen) {
                size_t m = coll__nseg(st->slen, pl->chunk) << (st->sbuf != COLL_BUF_SRC);   /* M + D */
                w += t->alpha * (coll__real)m + t->beta * (coll__real)(st->slen * es);
            }
            if (st->reduce && st->from >= 0) w += t->gamma * (coll__real)(st->rlen * es);
        }
    pl->rank = rank; pl->inplace = inplace; pl->row = row; pl->algo = (coll_algo)algo;
    w /= (coll__real)c->cores;
    return steps > COLL__CROWD_STEPS ? COLL__NEVER : w > bw ? w : bw;
}

/* A row's cost for AUTO: free where it rides in the rounds every call
   sends, a last resort where it wants many ranks, else its formula (which
   reads the call, not pl->algo) - crowded where ranks outnumber the
   cores, but never a row whose formula says never. */
static coll__real coll__row_cost(const coll_comm *c, coll__plan *pl, const coll__entry *e, coll__real n,
                                 size_t es, coll__step *st)
{
    coll__real cost;
    if (COLL__IN_ROOM(e)) return 0;
    if ((COLL__NEEDS(e) & COLL__MANY) && pl->p <= 8) return COLL__NEVER;
    cost = e->cost(pl, n, &c->tune);
    if (cost < COLL__NEVER && c->cores && pl->p > c->cores && pl->p <= COLL__CROWD_RANKS && !COLL__COUNTS(pl))
        cost = coll__cost_crowded(c, pl, e, es, st, cost - e->cost(pl, 0, &c->tune));   /* bw: the formulas
                                                                                          are affine in n */
    return cost;
}
#endif

/* AUTO: the caller's per-size rule if one matches; else the cheapest row
   that fits and needs nothing only some ranks could give (so every rank
   picks the same one); without the cost model, the first such row. A
   small call's row is AUTO's only where it rides in the agreement rounds,
   and free there. */
static coll_algo coll__choose(const coll_comm *c, coll__plan *pl, size_t esize, int ordered, coll__step *st)
{
    coll_algo best = COLL_ALGO_AUTO;
    size_t bytes = coll__total_bytes(pl, esize), i;
    unsigned nrows;
    const coll__entry *row = coll__rows_of(COLL__KIND(pl->kind), &nrows);
#ifndef COLL_NO_COST_MODEL
    coll__real best_cost = 0, n = (coll__real)bytes;
#endif
    const char *why;
    int ride = coll__rides(c, pl);
    for (i = 0; !COLL__ONE_ROW && i < (size_t)c->nrules; i++) {   /* (one row: nothing to choose) */
        const coll_rule *u = &c->rules[i];
        if (u->kind == COLL__KIND(pl->kind) && bytes >= u->min_bytes && bytes <= u->max_bytes) return u->algo;
    }
    for (i = 0; i < nrows; i++) {
        const coll__entry *e = &row[i];
        if (COLL__NEEDS(e) & COLL__CALLER) continue;
        if (coll__fits(c, pl, e, esize, ordered, &why) != COLL_OK) continue;
        if (COLL__IN_ROOM(e) && !ride) continue;        /* AUTO: only free */
        /* a row that packs through scratch is no choice without it (a need
           every row of the call shares is coll_start's to report: NOSPC) */
        if ((COLL__NEEDS(e) & COLL__SCRATCH) && c->segment < coll__scratch_need(c, pl, e, esize)) continue;
#ifdef COLL_NO_COST_MODEL
        (void)st;
        return (coll_algo)e->algo;
#else
        {
            coll__real cost = coll__row_cost(c, pl, e, n, esize, st);
            if (best == COLL_ALGO_AUTO || cost < best_cost) { best = (coll_algo)e->algo; best_cost = cost; }
        }
#endif
    }
    return best;
}

/* ========================================================================== */
/* >>args  5. Checking arguments and planning                                 */
/* ========================================================================== */

/* [a, a+an) and [b, b+bn) share a byte. */
static int coll__overlap(const void *a, size_t an, const void *b, size_t bn)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
    if (an == 0 || bn == 0 || !a || !b) return 0;     /* NULL: not given (planning only) */
    return x < y + bn && y < x + an;
}

static size_t coll__esize(const coll_comm *c, const coll_args *a)
{
    return a->dtype == COLL_USER_TYPE ? coll__uop(c, a)->elem_size : coll_dtype_size(a->dtype);
}


/* With displs: the end of the last block in the big buffer (src's side,
   or dst's for alltoallv's receives). */
static size_t coll__vspan(const coll__plan *pl, int recv)
{
    size_t end = 0, off, len;
    int i;
    for (i = 0; i < pl->p; i++) {
        if (recv) coll__rblock(pl, i, &off, &len); else coll__block(pl, i, &off, &len);
        if (len && off + len > end) end = off + len;
    }
    return end;
}

/* Everything coll_start checks about the arguments that every rank can
   check alike, without touching a buffer: kinds, types, ops, roots, sizes. */
/* A reducing call's op against its dtype and what the build keeps. */
static int coll__check_op(const coll_comm *c, const coll_args *a, const char **why)
{
    if (COLL__ARG((unsigned)a->op >= (unsigned)COLL_OP_COUNT)) return COLL__NO(why, COLL_ERR_INVAL, "op: not a coll_op");
    if (a->op == COLL_USER_OP) {
        if (COLL__ARG(!COLL__USER_OPS)) return COLL__NO(why, COLL_ERR_NOSYS, "op: COLL_USER_OP not compiled in (COLL_OPS)");
        if (COLL__ARG(!coll__uop(c, a)->fn)) return COLL__NO(why, COLL_ERR_INVAL, "op: COLL_USER_OP without an operator");
        if (COLL__ARG(COLL__MEM(c))) return COLL__NO(why, COLL_ERR_NOSYS, "op: a user op cannot read device memory");
    }
    else if (COLL__ARG(a->dtype == COLL_USER_TYPE)) return COLL__NO(why, COLL_ERR_INVAL, "op: COLL_USER_TYPE needs COLL_USER_OP");
    else if (COLL__ARG(a->op >= COLL_BAND && !coll__is_integer(a->dtype))) return COLL__NO(why, COLL_ERR_INVAL, "op: bitwise op on a float type");
    else if (COLL__ARG(!COLL__MEM(c) && (COLL__ONE(COLL_DTYPES) && COLL__ONE(COLL_OPS)
                                         ? a->dtype != COLL__DT(a->dtype) || a->op != COLL__OPV(a->op)
                                         : !coll__kernel_kept(a->dtype, a->op))))
        return COLL__NO(why, COLL_ERR_NOSYS, "op: dtype or op not compiled in");
    return COLL_OK;
}

/* A v form's counts (p of them; alltoallv's p x p, row r this rank's) and
   displs: the totals, none overflowing, into the plan. */
static int coll__plan_counts(const coll_comm *c, const coll_args *a, coll__plan *pl, size_t es,
                             const char **why)
{
    int p = c->nranks, r = c->rank, a2a = COLL__KIND_IS(a->kind, COLL_ALLTOALLV);
    size_t k, n = 0, pp = a2a ? (size_t)p * (size_t)p : (size_t)p, row = a2a ? (size_t)r * (size_t)p : 0;
    if (COLL__ARG(!a->counts)) return COLL__NO(why, COLL_ERR_INVAL, "counts: NULL");
    for (k = 0; k < pp; k++) {
        if (COLL__ARG(a->counts[k] > ((size_t)-1) / es - n)) return COLL__NO(why, COLL_ERR_INVAL, "counts: total overflows");
        n += a->counts[k];
    }
    pl->counts = a->counts;
    pl->total = n;
    pl->count = a2a ? 0 : a->counts[r];
    for (k = 0; a2a && k < (size_t)p; k++) pl->count += a->counts[row + k];
    if (a->displs && COLL__KIND_IS(a->kind, COLL_REDUCE_SCATTERV))
        return COLL__NO(why, COLL_ERR_INVAL, "displs: reduce_scatterv takes none (as MPI's)");
    for (k = 0; a->displs && k < (size_t)p; k++)      /* src's, then (alltoallv) dst's */
        if (COLL__ARG(a->displs[k] > ((size_t)-1) / es - a->counts[a2a ? row + k : k] ||
                      (a2a && a->displs[(size_t)p + k] > ((size_t)-1) / es - a->counts[k * (size_t)p + (size_t)r])))
            return COLL__NO(why, COLL_ERR_INVAL, "displs: a block ends past the address space");
    pl->displs = a->displs;
    if (pl->displs) { pl->span[0] = coll__vspan(pl, 0); if (a2a) pl->span[1] = coll__vspan(pl, 1); }
    return COLL_OK;
}

/* The in-place layouts, from addresses (no arithmetic on NULL), and what
   alltoallv in place needs. */
static int coll__plan_inplace(const coll_args *a, coll__plan *pl, size_t es, const char **why)
{
    uintptr_t src = (uintptr_t)a->src, dst = (uintptr_t)a->dst, mine;
    size_t off, l;
    coll_kind k = COLL__KIND(a->kind);
    int i, p = pl->p, r = pl->rank;
    coll__my_block(pl, &off, &l);
    mine = (uintptr_t)(off * es);
    if (COLL__IS(COLL__KB(ALLREDUCE) | COLL__KB(REDUCE) | COLL__KB(SCAN) | COLL__KB(EXSCAN), k))
        pl->inplace = src == dst;
    else if (COLL__KIND_IS(k, COLL_BROADCAST)) pl->inplace = 1;
    else if (COLL__IS(COLL__KB(REDUCE_SCATTER) | COLL__KB(REDUCE_SCATTERV) | COLL__KB(SCATTER) | COLL__KB(SCATTERV), k))
        pl->inplace = src && dst == src + mine;
    else if (COLL__IS(COLL__KB(ALLGATHER) | COLL__KB(ALLGATHERV) | COLL__KB(GATHER) | COLL__KB(GATHERV), k))
        pl->inplace = dst && src == dst + mine;
    else if (COLL__IS(COLL__KB(ALLTOALL) | COLL__KB(ALLTOALLV), k)) pl->inplace = src && src == dst;
    if (!COLL__KIND_IS(k, COLL_ALLTOALLV) || !pl->inplace) return COLL_OK;
    if (pl->displs) return COLL__NO(why, COLL_ERR_NOSYS, "displs: alltoallv in place takes none");
    for (i = 0; i < p; i++)                     /* a block leaves where its reply lands */
        if (a->counts[(size_t)r * (size_t)p + (size_t)i] != a->counts[(size_t)i * (size_t)p + (size_t)r])
            return COLL__NO(why, COLL_ERR_INVAL, "counts: alltoallv in place needs row r == column r");
    return COLL_OK;
}

/* The call's arguments checked and planned: the kind, the algorithm asked
   for, the ranks' shape, the dtype and op, the root, the counts, the
   segment and the in-place layout. */
static int coll__plan_args(const coll_comm *c, const coll_args *a, coll__plan *pl, size_t *esize_out,
                           const char **why)
{
    size_t es;
    int p, rc;
    if (COLL__ARG(!a)) return COLL__NO(why, COLL_ERR_INVAL, "args: NULL");   /* (c: its caller's check) */
    p = c->nranks;
    if (COLL__ARG((unsigned)a->kind >= (unsigned)COLL_KIND_COUNT)) return COLL__NO(why, COLL_ERR_INVAL, "kind: not a coll_kind");
    if (COLL__ARG(!COLL__ON(COLL_KINDS, a->kind))) return COLL__NO(why, COLL_ERR_NOSYS, "kind: not compiled in (COLL_KINDS)");
    if (COLL__ARG((unsigned)a->algo >= (unsigned)COLL_ALGO_COUNT)) return COLL__NO(why, COLL_ERR_INVAL, "algo: not a coll_algo");
    pl->kind = COLL__KIND(a->kind); pl->algo = a->algo; pl->rank = c->rank; pl->p = p;
    pl->root = a->root; pl->group = a->group; pl->count = a->count; pl->counts = 0; pl->displs = 0;
    pl->inplace = 0; pl->row = 0;
    for (pl->p2 = 1; pl->p2 * 2 <= p; pl->p2 *= 2) {}
    pl->rem = p - pl->p2;
    if (COLL__KIND_IS(a->kind, COLL_BARRIER)) {
        pl->count = pl->total = 1; pl->chunk = 1; pl->inplace = 0;
        *esize_out = 1;
        return COLL_OK;
    }
    if (COLL__ARG((unsigned)a->dtype >= (unsigned)COLL_DTYPE_COUNT)) return COLL__NO(why, COLL_ERR_INVAL, "dtype: not a coll_dtype");
    es = coll__esize(c, a);
    if (COLL__ARG(es == 0)) return COLL__NO(why, COLL_ERR_INVAL, "dtype: COLL_USER_TYPE without coll_set_user_op");
    if (coll__reduces(COLL__KIND(a->kind)) && (rc = coll__check_op(c, a, why)) != COLL_OK) return rc;
    if (coll__rooted(COLL__KIND(a->kind))) {
        if (COLL__ARG(a->root < 0 || a->root >= p)) return COLL__NO(why, COLL_ERR_INVAL, "root: not a rank");
    }
    if (COLL__IS(COLL__COUNTED, COLL__KIND(a->kind))) {
        if ((rc = coll__plan_counts(c, a, pl, es, why)) != COLL_OK) return rc;
    } else {
        if (COLL__ARG(a->count > ((size_t)-1) / es / (size_t)p)) return COLL__NO(why, COLL_ERR_INVAL, "count: too large");
        pl->total = coll__vector(COLL__KIND(a->kind)) ? a->count : a->count * (size_t)p;
    }
    /* pipeline chunk: one message segment, or the whole vector uncut */
    pl->chunk = c->segment ? c->segment / es : pl->count;
    if (pl->chunk == 0) pl->chunk = 1;
    if ((rc = coll__plan_inplace(a, pl, es, why)) != COLL_OK) return rc;
    *esize_out = es;
    return COLL_OK;
}

/* Which buffers this rank uses, in elements (0: not touched, may be NULL):
   linear gather and scatter use only the root's big buffer; broadcast has
   one buffer; v forms skip an empty own block. */
static void coll__extents(const coll__plan *pl, size_t *in_n, size_t *out_n)
{
    size_t off, len, n = pl->count, p = (size_t)pl->p, all = COLL__DISPLS(pl) ? pl->span[0] : pl->total;
    int root = pl->rank == pl->root, big = !pl->row || !(COLL__NEEDS(COLL__ROW_OF(pl)) & COLL__ROOT_ONLY);
    coll_kind k = COLL__KIND(pl->kind);
    coll__my_block(pl, &off, &len);
    *in_n = *out_n = 0;
    if (COLL__IS(COLL__KB(ALLREDUCE) | COLL__KB(SCAN) | COLL__KB(EXSCAN), k)) *in_n = *out_n = n;
    else if (COLL__KIND_IS(k, COLL_REDUCE)) { *in_n = n; *out_n = root || big ? n : 0; }
    else if (COLL__KIND_IS(k, COLL_BROADCAST)) *out_n = n;
    else if (COLL__IS(COLL__KB(REDUCE_SCATTER) | COLL__KB(REDUCE_SCATTERV), k)) { *in_n = pl->total; *out_n = len; }
    else if (COLL__IS(COLL__KB(ALLGATHER) | COLL__KB(ALLGATHERV), k)) { *in_n = len; *out_n = all; }
    else if (COLL__IS(COLL__KB(GATHER) | COLL__KB(GATHERV), k)) { *in_n = len; *out_n = root || big ? all : 0; }
    else if (COLL__IS(COLL__KB(SCATTER) | COLL__KB(SCATTERV), k)) { *in_n = root || big ? all : 0; *out_n = len; }
    else if (COLL__KIND_IS(k, COLL_ALLTOALL)) *in_n = *out_n = n * p;
    else if (COLL__KIND_IS(k, COLL_ALLTOALLV) && pl->displs) { *in_n = all; *out_n = pl->span[1]; }
    else if (COLL__KIND_IS(k, COLL_ALLTOALLV)) {
        coll__rblock(pl, pl->p - 1, &off, &len);
        *in_n = n; *out_n = off + len;
    }
    if (pl->total == 0) *in_n = *out_n = 0;
}

/* The buffers this rank passed, for the algorithm picked: present where
   used, inside the address space, and overlapping only in the in-place
   layout. A refusal here is this rank's alone: the call check tells the
   others. */
static int coll__buffers_ok(const coll__plan *pl, const coll_args *a, size_t es, int nulldst,
                            const char **why)
{
    size_t in_n, out_n;
    coll__extents(pl, &in_n, &out_n);
    if (nulldst) out_n = 0;                     /* told to the others instead */
    if (COLL__KIND_IS(pl->kind, COLL_BARRIER)) return COLL_OK;
    if (COLL__KIND_IS(pl->kind, COLL_BROADCAST)) in_n = 0;
    if (COLL__ARG(in_n && !a->src)) return COLL__NO(why, COLL_ERR_INVAL, "src: NULL");
    if (COLL__ARG(out_n && !a->dst)) return COLL__NO(why, COLL_ERR_INVAL, "dst: NULL");
    if (COLL__ARG(in_n && in_n * es > UINTPTR_MAX - (uintptr_t)a->src)) return COLL__NO(why, COLL_ERR_INVAL, "src: wraps the address space");
    if (COLL__ARG(out_n && out_n * es > UINTPTR_MAX - (uintptr_t)a->dst)) return COLL__NO(why, COLL_ERR_INVAL, "dst: wraps the address space");
    if (COLL__ARG(!pl->inplace && coll__overlap(a->src, in_n * es, a->dst, out_n * es)))
        return COLL__NO(why, COLL_ERR_INVAL, "src and dst overlap outside the in-place layout");
    return COLL_OK;
}

/* Resolve AUTO and check the algorithm fits this call. */
#ifndef COLL_NO_COST_MODEL
#define COLL__MEMO(c) (&(c)->memo)
#define COLL__FORGET(c) ((c)->memo.algo = COLL_ALGO_AUTO)
#else
#define COLL__MEMO(c) ((coll__memo *)0)
#define COLL__FORGET(c) ((void)0)
#endif

/* A setting changed: no plan made before it is reused (AUTO's memo, the
   blocking calls' last plan). */
static void coll__forget(coll_comm *c)
{
    COLL__FORGET(c);
    coll__top(c)->again_ok = 0;
}

/* coll__choose through the communicator's memo (m; NULL: none): the same
   call as last time gets the same pick without the cost model. Every input
   of the choice is in the key, or clears the memo when it changes; the v
   forms (whose per-rank counts it reads) always choose afresh. */
static coll_algo coll__choose_memo(const coll_comm *c, coll__memo *m, coll__plan *pl, size_t es, int ordered,
                                   coll__step *st)
{
#ifdef COLL_NO_COST_MODEL
    (void)m;                                    /* the first row that fits: cheap */
#else
    if (m && !COLL__COUNTS(pl)) {
        if (m->algo != COLL_ALGO_AUTO && m->count == pl->count && m->total == pl->total &&
            m->chunk == pl->chunk && m->es == es && m->kind == (int)pl->kind && m->root == pl->root &&
            m->group == pl->group && m->inplace == pl->inplace && m->ordered == ordered)
            return (coll_algo)m->algo;
        m->count = pl->count; m->total = pl->total; m->chunk = pl->chunk; m->es = es;
        m->kind = (int)pl->kind; m->root = pl->root; m->group = pl->group; m->inplace = pl->inplace;
        m->ordered = ordered;
        return (coll_algo)(m->algo = (int)coll__choose(c, pl, es, ordered, st));
    }
#endif
    return coll__choose(c, pl, es, ordered, st);
}

/* (st: a step for AUTO to walk schedules with, the request's own where
   there is one: see crowded) */
static int coll__pick(const coll_comm *c, coll__memo *m, const coll_args *a, coll__plan *pl, size_t es,
                      coll__step *st, const char **why)
{
    const coll__entry *e;
    int ordered = COLL__USER_OPS && a->op == COLL_USER_OP && coll__reduces(COLL__KIND(a->kind)) && !coll__uop(c, a)->commutative;
    if (pl->algo == COLL_ALGO_AUTO)
        pl->algo = COLL__KIND_IS(a->kind, COLL_BARRIER) ? COLL_ALGO_DISSEMINATION : coll__choose_memo(c, m, pl, es, ordered, st);
    e = coll__entry_of(COLL__KIND(pl->kind), pl->algo);
    pl->row = e;
    return coll__fits(c, pl, e, es, ordered, why);
}

/* Scratch whose halves, as coll_init rounds them (to 8 bytes below 64, to
   64 above), still hold `half` bytes each. */
static size_t coll__halves(size_t half)
{
    if (half == 0) return 0;
    half = half < 64 ? (half + 7) & ~(size_t)7 : (half + 63) & ~(size_t)63;
    return 2 * half;
}

COLL_API size_t coll_scratch_bytes(const coll_comm *c, const coll_args *a)
{
    size_t es = 0;
    coll__plan pl;
    coll__step st;
    const char *why;
    if (!c || !a || c->magic != COLL__MAGIC) return 0;
    if (coll__plan_args(c, a, &pl, &es, &why) != COLL_OK) return 0;
    if (coll__pick(c, 0, a, &pl, es, &st, &why) != COLL_OK)  /* no row: what any row would need */
        return coll__reduces(COLL__KIND(a->kind)) && c->nranks > 1 && pl.total > 0 ? coll__halves(es) : 0;
    return coll__halves(coll__scratch_need(c, &pl, COLL__ROW_OF(&pl), es));
}

/* ========================================================================== */
/* >>kernels  6. Types: sizes, half-precision conversion                      */
/* ========================================================================== */

#define COLL__DTYPE_SIZE(E, N, T, C, IN, OUT, U, W, CL) case COLL_##E: return sizeof(T);
#define COLL__DTYPE_CLASS(E, N, T, C, IN, OUT, U, W, CL) case COLL_##E: return COLL__IS_##CL;
#define COLL__IS_INT 1
#define COLL__IS_FLOAT 0
COLL_API size_t coll_dtype_size(coll_dtype dtype)
{
    switch (dtype) {
    COLL_DTYPE_LIST(COLL__DTYPE_SIZE)
    default: return 0;
    }
}

static int coll__is_integer(coll_dtype t)
{
    switch (t) {
    COLL_DTYPE_LIST(COLL__DTYPE_CLASS)
    default: return 0;
    }
}

typedef union { float f; uint32_t u; } coll__f32;

/* IEEE binary16 <-> float, round to nearest even; NaN stays NaN. */
static float coll__h2f(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    coll__f32 v;
    if (e == 0x1f)      v.u = sign | 0x7f800000u | (m << 13);
    else if (e != 0)    v.u = sign | ((e + 112u) << 23) | (m << 13);
    else if (m == 0)    v.u = sign;
    else {                                  /* subnormal: normalise */
        e = 113;
        while (!(m & 0x400u)) { m <<= 1; e--; }
        v.u = sign | (e << 23) | ((m & 0x3ffu) << 13);
    }
    return v.f;
}

static uint16_t coll__f2h(float f)
{
    coll__f32 v;
    uint32_t sign, ax, r, rem, half, shift, m;
    v.f = f;
    sign = (v.u >> 16) & 0x8000u;
    ax = v.u & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);      /* >= 65520: inf */
    if (ax < 0x33000000u) return (uint16_t)sign;                   /* < 2^-25: zero */
    if (ax < 0x38800000u) {                                        /* subnormal     */
        shift = 126u - (ax >> 23);
        m = (ax & 0x7fffffu) | 0x800000u;
        r = m >> shift; rem = m & ((1u << shift) - 1u); half = 1u << (shift - 1u);
    } else {
        r = (ax - 0x38000000u) >> 13; rem = ax & 0x1fffu; half = 0x1000u;
    }
    if (rem > half || (rem == half && (r & 1u))) r++;
    return (uint16_t)(sign | r);
}

/* bfloat16 is the top half of a float. */
static float coll__b2f(uint16_t b) { coll__f32 v; v.u = (uint32_t)b << 16; return v.f; }
static uint16_t coll__f2b(float f)
{
    coll__f32 v;
    v.f = f;
    if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((v.u >> 16) | 0x40u);
    v.u += 0x7fffu + ((v.u >> 16) & 1u);
    return (uint16_t)(v.u >> 16);
}

/* ---- CRC-32C: the integrity check of COLL_CHECK_CRC and of check frames --- */
/* Castagnoli polynomial, reflected (0x82F63B78), as in iSCSI and ext4: it
   catches every burst error up to 32 bits. The instruction where the
   target has one (SSE4.2, ARMv8 CRC), else a table of 256 entries (1 KiB),
   or of 16 with COLL_CRC_SMALL (64 B, two look-ups per byte). */
#if defined(__OPTIMIZE_SIZE__) && !defined(COLL_CRC_SMALL) && !defined(COLL_CRC_TABLE)
#define COLL_CRC_SMALL             /* built for size: the 64-byte table */
#endif
#if defined(__SSE4_2__) && !defined(COLL_CRC_SMALL)
#include <nmmintrin.h>
#define COLL__CRC_HW(c, b) ((uint32_t)_mm_crc32_u8((c), (b)))
#elif defined(__ARM_FEATURE_CRC32) && !defined(COLL_CRC_SMALL)
#include <arm_acle.h>
#define COLL__CRC_HW(c, b) __crc32cb((c), (b))
#elif defined(COLL_CRC_SMALL)
static const uint32_t coll__crc_tab[16] = {
    0x00000000u, 0x105ec76fu, 0x20bd8edeu, 0x30e349b1u, 0x417b1dbcu, 0x5125dad3u, 0x61c69362u, 0x7198540du,
    0x82f63b78u, 0x92a8fc17u, 0xa24bb5a6u, 0xb21572c9u, 0xc38d26c4u, 0xd3d3e1abu, 0xe330a81au, 0xf36e6f75u
};
#else
#if defined(__x86_64__) && defined(__GNUC__) && defined(__STDC_HOSTED__) && __STDC_HOSTED__ == 1
/* x86-64 without -msse4.2: use the instruction when this CPU has it */
#include <nmmintrin.h>
#define COLL__CRC_DISPATCH 1
__attribute__((target("sse4.2")))
static uint32_t coll__crc_sse42(uint32_t c, const unsigned char *b, size_t n)
{
    for (; n >= 8; n -= 8, b += 8) {
        uint64_t w; COLL_MEMCPY(&w, b, 8);
        c = (uint32_t)_mm_crc32_u64(c, w);
    }
    while (n--) c = _mm_crc32_u8(c, *b++);
    return c;
}
#endif
static const uint32_t coll__crc_tab[256] = {
    0x00000000u, 0xf26b8303u, 0xe13b70f7u, 0x1350f3f4u, 0xc79a971fu, 0x35f1141cu,
    0x26a1e7e8u, 0xd4ca64ebu, 0x8ad958cfu, 0x78b2dbccu, 0x6be22838u, 0x9989ab3bu,
    0x4d43cfd0u, 0xbf284cd3u, 0xac78bf27u, 0x5e133c24u, 0x105ec76fu, 0xe235446cu,
    0xf165b798u, 0x030e349bu, 0xd7c45070u, 0x25afd373u, 0x36ff2087u, 0xc494a384u,
    0x9a879fa0u, 0x68ec1ca3u, 0x7bbcef57u, 0x89d76c54u, 0x5d1d08bfu, 0xaf768bbcu,
    0xbc267848u, 0x4e4dfb4bu, 0x20bd8edeu, 0xd2d60dddu, 0xc186fe29u, 0x33ed7d2au,
    0xe72719c1u, 0x154c9ac2u, 0x061c6936u, 0xf477ea35u, 0xaa64d611u, 0x580f5512u,
    0x4b5fa6e6u, 0xb93425e5u, 0x6dfe410eu, 0x9f95c20du, 0x8cc531f9u, 0x7eaeb2fau,
    0x30e349b1u, 0xc288cab2u, 0xd1d83946u, 0x23b3ba45u, 0xf779deaeu, 0x05125dadu,
    0x1642ae59u, 0xe4292d5au, 0xba3a117eu, 0x4851927du, 0x5b016189u, 0xa96ae28au,
    0x7da08661u, 0x8fcb0562u, 0x9c9bf696u, 0x6ef07595u, 0x417b1dbcu, 0xb3109ebfu,
    0xa0406d4bu, 0x522bee48u, 0x86e18aa3u, 0x748a09a0u, 0x67dafa54u, 0x95b17957u,
    0xcba24573u, 0x39c9c670u, 0x2a993584u, 0xd8f2b687u, 0x0c38d26cu, 0xfe53516fu,
    0xed03a29bu, 0x1f682198u, 0x5125dad3u, 0xa34e59d0u, 0xb01eaa24u, 0x42752927u,
    0x96bf4dccu, 0x64d4cecfu, 0x77843d3bu, 0x85efbe38u, 0xdbfc821cu, 0x2997011fu,
    0x3ac7f2ebu, 0xc8ac71e8u, 0x1c661503u, 0xee0d9600u, 0xfd5d65f4u, 0x0f36e6f7u,
    0x61c69362u, 0x93ad1061u, 0x80fde395u, 0x72966096u, 0xa65c047du, 0x5437877eu,
    0x4767748au, 0xb50cf789u, 0xeb1fcbadu, 0x197448aeu, 0x0a24bb5au, 0xf84f3859u,
    0x2c855cb2u, 0xdeeedfb1u, 0xcdbe2c45u, 0x3fd5af46u, 0x7198540du, 0x83f3d70eu,
    0x90a324fau, 0x62c8a7f9u, 0xb602c312u, 0x44694011u, 0x5739b3e5u, 0xa55230e6u,
    0xfb410cc2u, 0x092a8fc1u, 0x1a7a7c35u, 0xe811ff36u, 0x3cdb9bddu, 0xceb018deu,
    0xdde0eb2au, 0x2f8b6829u, 0x82f63b78u, 0x709db87bu, 0x63cd4b8fu, 0x91a6c88cu,
    0x456cac67u, 0xb7072f64u, 0xa457dc90u, 0x563c5f93u, 0x082f63b7u, 0xfa44e0b4u,
    0xe9141340u, 0x1b7f9043u, 0xcfb5f4a8u, 0x3dde77abu, 0x2e8e845fu, 0xdce5075cu,
    0x92a8fc17u, 0x60c37f14u, 0x73938ce0u, 0x81f80fe3u, 0x55326b08u, 0xa759e80bu,
    0xb4091bffu, 0x466298fcu, 0x1871a4d8u, 0xea1a27dbu, 0xf94ad42fu, 0x0b21572cu,
    0xdfeb33c7u, 0x2d80b0c4u, 0x3ed04330u, 0xccbbc033u, 0xa24bb5a6u, 0x502036a5u,
    0x4370c551u, 0xb11b4652u, 0x65d122b9u, 0x97baa1bau, 0x84ea524eu, 0x7681d14du,
    0x2892ed69u, 0xdaf96e6au, 0xc9a99d9eu, 0x3bc21e9du, 0xef087a76u, 0x1d63f975u,
    0x0e330a81u, 0xfc588982u, 0xb21572c9u, 0x407ef1cau, 0x532e023eu, 0xa145813du,
    0x758fe5d6u, 0x87e466d5u, 0x94b49521u, 0x66df1622u, 0x38cc2a06u, 0xcaa7a905u,
    0xd9f75af1u, 0x2b9cd9f2u, 0xff56bd19u, 0x0d3d3e1au, 0x1e6dcdeeu, 0xec064eedu,
    0xc38d26c4u, 0x31e6a5c7u, 0x22b65633u, 0xd0ddd530u, 0x0417b1dbu, 0xf67c32d8u,
    0xe52cc12cu, 0x1747422fu, 0x49547e0bu, 0xbb3ffd08u, 0xa86f0efcu, 0x5a048dffu,
    0x8ecee914u, 0x7ca56a17u, 0x6ff599e3u, 0x9d9e1ae0u, 0xd3d3e1abu, 0x21b862a8u,
    0x32e8915cu, 0xc083125fu, 0x144976b4u, 0xe622f5b7u, 0xf5720643u, 0x07198540u,
    0x590ab964u, 0xab613a67u, 0xb831c993u, 0x4a5a4a90u, 0x9e902e7bu, 0x6cfbad78u,
    0x7fab5e8cu, 0x8dc0dd8fu, 0xe330a81au, 0x115b2b19u, 0x020bd8edu, 0xf0605beeu,
    0x24aa3f05u, 0xd6c1bc06u, 0xc5914ff2u, 0x37faccf1u, 0x69e9f0d5u, 0x9b8273d6u,
    0x88d28022u, 0x7ab90321u, 0xae7367cau, 0x5c18e4c9u, 0x4f48173du, 0xbd23943eu,
    0xf36e6f75u, 0x0105ec76u, 0x12551f82u, 0xe03e9c81u, 0x34f4f86au, 0xc69f7b69u,
    0xd5cf889du, 0x27a40b9eu, 0x79b737bau, 0x8bdcb4b9u, 0x988c474du, 0x6ae7c44eu,
    0xbe2da0a5u, 0x4c4623a6u, 0x5f16d052u, 0xad7d5351u
};
#endif

COLL_API uint32_t coll_crc32c(uint32_t crc, const void *buf, size_t n)
{
    const unsigned char *b = (const unsigned char *)buf;
    uint32_t c = ~crc;
#if defined(COLL__CRC_HW)
#if defined(__SSE4_2__) && defined(__x86_64__)
    for (; n >= 8; n -= 8, b += 8) {
        uint64_t w; COLL_MEMCPY(&w, b, 8);
        c = (uint32_t)_mm_crc32_u64(c, w);
    }
#endif
    while (n--) c = COLL__CRC_HW(c, *b++);
#elif defined(COLL_CRC_SMALL)
    while (n--) {
        c ^= *b++;
        c = (c >> 4) ^ coll__crc_tab[c & 15];
        c = (c >> 4) ^ coll__crc_tab[c & 15];
    }
#else
#ifdef COLL__CRC_DISPATCH
    if (__builtin_cpu_supports("sse4.2")) return ~coll__crc_sse42(c, b, n);
#endif
    while (n--) c = (c >> 8) ^ coll__crc_tab[(c ^ *b++) & 255];
#endif
    return ~c;
}


/* ========================================================================== */
/* 6. Local kernels: out[i] = a[i] (+) b[i]                                   */
/* ========================================================================== */
/* One loop per (dtype, op), chosen once per call from a table, so the inner
   loop holds no switch and the compiler vectorises it. Two forms: out == a
   (the common in-place accumulate) and three distinct arrays; `restrict` on
   both keeps the vector path. Signed sums and products wrap through the
   unsigned type (no undefined overflow); halves go through float. */

typedef void (*coll__kernel)(void *out, const void *a, const void *b, size_t n);

#define COLL__ID(x) (x)
/* The body runs in blocks of 8 with a fixed inner trip count, in a typed
   function whose restrict parameters let the compiler skip alias checks:
   that is vector code even at -O2 (gcc's cheap vectoriser will not touch a
   plain loop of unknown length). A scalar tail follows. Built for size
   (-Os) there is one plain loop per (dtype, op), no restrict (out may
   equal a), and one table: half the code. */
#define COLL__VEC 8
/* out[i] = A[i] (+) b[i], A being `a` or, in place, `o` itself. */
#define COLL__LOOP(A, C, IN, OUT, EXPR)                                          \
    size_t i = 0, j;                                                             \
    for (; i + COLL__VEC <= n; i += COLL__VEC)                                   \
        for (j = 0; j < COLL__VEC; j++) { C x = IN(A[i + j]), y = IN(b[i + j]); o[i + j] = OUT(EXPR); } \
    for (; i < n; i++) { C x = IN(A[i]), y = IN(b[i]); o[i] = OUT(EXPR); }
#if defined(__OPTIMIZE_SIZE__)
#define COLL__KERNEL(NAME, T, C, IN, OUT, EXPR)                                  \
    static COLL__UNUSED void NAME##_3(void *vo, const void *va, const void *vb, size_t n) \
    {                                                                            \
        T *o = (T *)vo; const T *a = (const T *)va, *b = (const T *)vb; size_t i; \
        for (i = 0; i < n; i++) { C x = IN(a[i]), y = IN(b[i]); o[i] = OUT(EXPR); } \
    }
#else
#define COLL__KERNEL(NAME, T, C, IN, OUT, EXPR)                                  \
    static COLL__UNUSED void NAME##_3t(T *COLL__RESTRICT o, const T *COLL__RESTRICT a, \
                                       const T *COLL__RESTRICT b, size_t n)      \
    { COLL__LOOP(a, C, IN, OUT, EXPR) }                                          \
    static COLL__UNUSED void NAME##_2t(T *COLL__RESTRICT o, const T *COLL__RESTRICT b, size_t n) \
    { COLL__LOOP(o, C, IN, OUT, EXPR) }                                          \
    static COLL__UNUSED void NAME##_3(void *o, const void *a, const void *b, size_t n) \
    { NAME##_3t((T *)o, (const T *)a, (const T *)b, n); }                        \
    static COLL__UNUSED void NAME##_2(void *o, const void *a, const void *b, size_t n) \
    { (void)a; NAME##_2t((T *)o, (const T *)b, n); }
#endif

/* Float min and max propagate NaN (y != y is true only for NaN).
   Which operand wins among equals (+0/-0, two NaNs) depends on operand
   order: every algorithm fixes that order, so every rank gets the same bits. */
#define COLL__MIN(x, y) ((y) < (x) ? (y) : (x))
#define COLL__MAX(x, y) ((y) > (x) ? (y) : (x))
#define COLL__FMIN(x, y) ((y) < (x) || (y) != (y) ? (y) : (x))
#define COLL__FMAX(x, y) ((y) > (x) || (y) != (y) ? (y) : (x))

#define COLL__INT_KERNELS(N, T, U)                                               \
    COLL__KERNEL(coll__##N##_sum,  T, T, COLL__ID, (T), (U)x + (U)y)             \
    COLL__KERNEL(coll__##N##_prod, T, T, COLL__ID, (T), (U)x * (U)y)             \
    COLL__KERNEL(coll__##N##_min,  T, T, COLL__ID, (T), COLL__MIN(x, y))         \
    COLL__KERNEL(coll__##N##_max,  T, T, COLL__ID, (T), COLL__MAX(x, y))         \
    COLL__KERNEL(coll__##N##_band, T, T, COLL__ID, (T), x & y)                   \
    COLL__KERNEL(coll__##N##_bor,  T, T, COLL__ID, (T), x | y)                   \
    COLL__KERNEL(coll__##N##_bxor, T, T, COLL__ID, (T), x ^ y)

#define COLL__FLOAT_KERNELS(N, T, C, IN, OUT)                                    \
    COLL__KERNEL(coll__##N##_sum,  T, C, IN, OUT, x + y)                         \
    COLL__KERNEL(coll__##N##_prod, T, C, IN, OUT, x * y)                         \
    COLL__KERNEL(coll__##N##_min,  T, C, IN, OUT, COLL__FMIN(x, y))              \
    COLL__KERNEL(coll__##N##_max,  T, C, IN, OUT, COLL__FMAX(x, y))

#define COLL__KERNELS_INT(N, T, C, IN, OUT, U) COLL__INT_KERNELS(N, T, U)
#define COLL__KERNELS_FLOAT(N, T, C, IN, OUT, U) COLL__FLOAT_KERNELS(N, T, C, IN, OUT)
#define COLL__DTYPE_KERNELS(E, N, T, C, IN, OUT, U, W, CL) COLL__KERNELS_##CL(N, T, C, IN, OUT, U)
COLL_DTYPE_LIST(COLL__DTYPE_KERNELS)

/* Table entry for (dtype T, op O), or 0 if either is trimmed out. */
#define COLL__K(T, O, FN) (COLL__ON(COLL_DTYPES, T) && COLL__ON(COLL_OPS, O) ? FN : 0)
#define COLL__ARITH(T, N, F) COLL__K(T, COLL_SUM, coll__##N##_sum_##F),          \
    COLL__K(T, COLL_PROD, coll__##N##_prod_##F), COLL__K(T, COLL_MIN, coll__##N##_min_##F), \
    COLL__K(T, COLL_MAX, coll__##N##_max_##F), COLL__K(T, COLL_AVG, coll__##N##_sum_##F)
#define COLL__BITS(T, N, F) { COLL__K(T, COLL_BAND, coll__##N##_band_##F),    \
    COLL__K(T, COLL_BOR, coll__##N##_bor_##F), COLL__K(T, COLL_BXOR, coll__##N##_bxor_##F) }
#define COLL__INT_BITS(T, N, F) COLL__BITS(T, N, F)
#define COLL__FLOAT_BITS(T, N, F) { 0, 0, 0 }
#define COLL__ROW3(E, N, T, C, IN, OUT, U, W, CL) { COLL__ARITH(COLL_##E, N, 3) },
#define COLL__ROW2(E, N, T, C, IN, OUT, U, W, CL) { COLL__ARITH(COLL_##E, N, 2) },
#define COLL__BITS3(E, N, T, C, IN, OUT, U, W, CL) COLL__##CL##_BITS(COLL_##E, N, 3),
#define COLL__BITS2(E, N, T, C, IN, OUT, U, W, CL) COLL__##CL##_BITS(COLL_##E, N, 2),

/* [dtype][op]; avg reduces as a sum (the division comes once, at the end).
   The bitwise ops have a table of their own: a build without them (the
   COLL_OPS of most firmware) drops it. */
#define COLL__BITWISE (COLL_BIT(COLL_BAND) | COLL_BIT(COLL_BOR) | COLL_BIT(COLL_BXOR))
static const coll__kernel coll__kernels3[COLL_DTYPE_COUNT][COLL_AVG + 1] = {
    COLL_DTYPE_LIST(COLL__ROW3) { 0, 0, 0, 0, 0 } };
static const coll__kernel coll__bitwise3[COLL_DTYPE_COUNT][3] = {
    COLL_DTYPE_LIST(COLL__BITS3) { 0, 0, 0 } };
#if !defined(__OPTIMIZE_SIZE__)
static const coll__kernel coll__kernels2[COLL_DTYPE_COUNT][COLL_AVG + 1] = {
    COLL_DTYPE_LIST(COLL__ROW2) { 0, 0, 0, 0, 0 } };
static const coll__kernel coll__bitwise2[COLL_DTYPE_COUNT][3] = {
    COLL_DTYPE_LIST(COLL__BITS2) { 0, 0, 0 } };
#endif
/* The loop for (t, op) from a pair of tables, or 0 (t and op in range, not
   the user's). */
#define COLL__KERNEL_AT(arith, bits, t, op)                                      \
    ((op) <= COLL_AVG ? (arith)[t][op] : (COLL_OPS & COLL__BITWISE) ? (bits)[t][(op) - COLL_BAND] : (coll__kernel)0)

/* avg's one division: buf[i] /= d, in the element type (integers truncate). */
static void coll__scale_host(void *buf, size_t n, coll_dtype t, size_t d)
{
    size_t i;
#define COLL__DTYPE_SCALE(E, N, T, C, IN, OUT, U, W, CL) case COLL_##E:          \
    if (COLL__ON(COLL_DTYPES, COLL_##E)) {                                       \
        T *p = (T *)buf;                                                         \
        for (i = 0; i < n; i++) p[i] = (T)OUT((C)((W)IN(p[i]) / (W)d));          \
    } break;
    switch (t) {
    COLL_DTYPE_LIST(COLL__DTYPE_SCALE)
    default: break;
    }
#undef COLL__DTYPE_SCALE
}

static int coll__kernel_kept(coll_dtype t, coll_op op)
{
    return COLL__KERNEL_AT(coll__kernels3, coll__bitwise3, t, op) != 0;
}

/* The three local operations the engine needs, host or caller-supplied. */
static int coll__copy(const coll_comm *c, void *dst, const void *src, size_t bytes)
{
    if (dst == src || bytes == 0) return COLL_OK;
    if (COLL__MEM(c)) return c->mem->copy(c->mem->ctx, dst, src, bytes);
    COLL_MEMCPY(dst, src, bytes);
    return COLL_OK;
}

static int coll__reduce(const coll_comm *c, const coll_user_op *u, void *out, const void *a, const void *b,
                        size_t n, coll_dtype t, coll_op op)
{
    if (n == 0) return COLL_OK;
    if (COLL__USER_OPS && op == COLL_USER_OP) {
        u->fn(out, a, b, n, u->user);
        return COLL_OK;
    }
    if (COLL__MEM(c)) return c->mem->reduce(c->mem->ctx, out, a, b, n, t, op);
#if defined(__OPTIMIZE_SIZE__)
    COLL__KERNEL_AT(coll__kernels3, coll__bitwise3, COLL__DT(t), COLL__OPV(op))(out, a, b, n);
#else
    if (out == a) COLL__KERNEL_AT(coll__kernels2, coll__bitwise2, COLL__DT(t), COLL__OPV(op))(out, a, b, n);
    else COLL__KERNEL_AT(coll__kernels3, coll__bitwise3, COLL__DT(t), COLL__OPV(op))(out, a, b, n);
#endif
    return COLL_OK;
}

static COLL__OFF_CHAIN int coll__scale(const coll_comm *c, void *buf, size_t n, coll_dtype t, size_t d)
{
    if (n == 0 || d == 1) return COLL_OK;
    if (COLL__MEM(c)) return c->mem->scale(c->mem->ctx, buf, n, t, d);
    coll__scale_host(buf, n, t, d);
    return COLL_OK;
}

/* ========================================================================== */
/* >>calls  7. The API's definitions                                          */
/* ========================================================================== */

/* A coll_init refused for its build leaves the reason for coll_last_error
   (and a communicator no other call takes). */
#if defined(COLL_NO_PIECES) && !defined(COLL_NO_ERRSTR)
static COLL__NOINLINE int coll__init_no(coll_comm *c, int rc, const char *why)
{
    COLL_MEMSET(c, 0, sizeof *c);
    c->why = why;
    c->magic = COLL__REFUSED;
    return rc;
}
#define COLL__INIT_NO(c, rc, text) coll__init_no(c, rc, text)
#else
#define COLL__INIT_NO(c, rc, text) ((void)(c), (rc))
#endif

COLL_API int coll_init(coll_comm *c, int rank, int nranks, const coll_port *port,
                       void *scratch, size_t scratch_bytes)
{
    int context = 0;
    if (COLL__ARG(!c || !port || !port->send || !port->recv)) return COLL_ERR_INVAL;
    if (COLL__ARG(nranks < 1 || rank < 0 || rank >= nranks || nranks > 0xffff)) return COLL_ERR_INVAL;
    if (COLL__ARG(!scratch && scratch_bytes)) return COLL_ERR_INVAL;
    /* the kernels read 8-byte elements straight from scratch */
    if (COLL__ARG((uintptr_t)scratch % 8)) return COLL_ERR_INVAL;
#ifndef COLL_NO_NONBLOCKING       /* (without the path they go unused) */
    if ((port->isend || port->irecv || port->wait) &&
        !(port->isend && port->irecv && port->wait)) return COLL_ERR_INVAL;
#endif
#ifdef COLL_NO_PIECES
    /* not an argument check: without the layer that cuts messages, every
       build must refuse the port rather than hand it larger ones */
    if (port->max_bytes) return COLL__INIT_NO(c, COLL_ERR_NOSYS, "port: max_bytes needs the pieces layer (COLL_NO_PIECES)");
#endif
    if (port->attach && (context = port->attach(port->ctx)) < 0) return context;
    COLL_MEMSET(c, 0, sizeof *c);
    c->context = (uint32_t)context;
    c->rank = rank;
    c->nranks = nranks;
    COLL_MEMCPY(&c->port, port, sizeof c->port);
    if (!port->isend) c->port.irecv_fold = 0;   /* it rides on the non-blocking path */
#ifndef COLL_NO_PIECES
    if (port->max_bytes) coll__pieces_wrap(c, port);   /* no message larger */
#endif
    c->scratch = (unsigned char *)scratch;
    /* halves of a multiple of 64 bytes (of 8 when tiny): both stay aligned */
    c->segment = scratch_bytes / 2 >= 64 ? (scratch_bytes / 2) & ~(size_t)63 : (scratch_bytes / 2) & ~(size_t)7;
#ifndef COLL_NO_CHECKS
    c->checks = COLL_CHECK_CALLS;
#endif
    c->why = COLL__WHY("");
#ifndef COLL_NO_COST_MODEL     /* the only reader of the constants */
    /* fitted by `make fit-auto` to every forced algorithm's time on the
       threads, shm, tcp and MPI ports (2-core host); only β/α and γ/β
       matter to AUTO */
    c->tune.alpha = (coll__real)2e-6;      /* a few µs per hand-off        */
    c->tune.beta = (coll__real)6.3e-11;    /* ~16 GB/s copy                */
    c->tune.gamma = (coll__real)6.3e-13;   /* the reduce hides behind the copy */
#endif
#ifdef COLL__DIRECT_LAYER      /* coll_window.h brought the implementation in */
    c->direct = COLL__DIRECT_LAYER;
#endif
    c->magic = COLL__MAGIC;
    return COLL_OK;
}

/* ---- sub-communicators: the parent's port with ranks renumbered ----------
   Sub rank i is parent rank members[i]; the sub's messages go through the
   parent's port unchanged. Its requests take turns with the parent's (the
   ticket order of the top communicator), so the two never mix on a pair. */
static int coll__sub_to(void *ctx, int peer)
{
    const coll_subport *sp = (const coll_subport *)ctx;
    return peer >= 0 && peer < sp->n ? sp->members[peer] : -1;
}
static int coll__sub_send(void *ctx, int peer, const void *buf, size_t bytes)
{
    const coll_subport *sp = (const coll_subport *)ctx;
    int to = coll__sub_to(ctx, peer);
    return to < 0 ? COLL_ERR_INVAL : sp->parent.send(sp->parent.ctx, to, buf, bytes);
}
static int coll__sub_recv(void *ctx, int peer, void *buf, size_t bytes)
{
    const coll_subport *sp = (const coll_subport *)ctx;
    int from = coll__sub_to(ctx, peer);
    return from < 0 ? COLL_ERR_INVAL : sp->parent.recv(sp->parent.ctx, from, buf, bytes);
}
static int coll__sub_sendrecv(void *ctx, int to, const void *sbuf, size_t sbytes,
                              int from, void *rbuf, size_t rbytes)
{
    const coll_subport *sp = (const coll_subport *)ctx;
    int t = coll__sub_to(ctx, to), f = coll__sub_to(ctx, from);
    if (t < 0 || f < 0) return COLL_ERR_INVAL;
    return sp->parent.sendrecv(sp->parent.ctx, t, sbuf, sbytes, f, rbuf, rbytes);
}
static int coll__sub_isend(void *ctx, int peer, const void *buf, size_t bytes, int *handle)
{
    const coll_subport *sp = (const coll_subport *)ctx;
    int to = coll__sub_to(ctx, peer);
    return to < 0 ? COLL_ERR_INVAL : sp->parent.isend(sp->parent.ctx, to, buf, bytes, handle);
}
static int coll__sub_irecv(void *ctx, int peer, void *buf, size_t bytes, int *handle)
{
    const coll_subport *sp = (const coll_subport *)ctx;
    int from = coll__sub_to(ctx, peer);
    return from < 0 ? COLL_ERR_INVAL : sp->parent.irecv(sp->parent.ctx, from, buf, bytes, handle);
}
static int coll__sub_irecv_fold(void *ctx, int peer, void *buf, size_t bytes, coll_fold_fn fold,
                                void *arg, int *handle)
{
    const coll_subport *sp = (const coll_subport *)ctx;
    int from = coll__sub_to(ctx, peer);
    return from < 0 ? COLL_ERR_INVAL : sp->parent.irecv_fold(sp->parent.ctx, from, buf, bytes, fold, arg, handle);
}
static int coll__sub_wait(void *ctx, int handle, int block)
{
    const coll_subport *sp = (const coll_subport *)ctx;
    return sp->parent.wait(sp->parent.ctx, handle, block);
}
#ifndef COLL_NO_ERRSTR                  /* only coll__failed's text asks */
/* The parent's answer, as a member's index; `peer` if outside the group. */
static int coll__sub_missing(void *ctx, int peer)
{
    const coll_subport *sp = (const coll_subport *)ctx;
    int to = coll__sub_to(ctx, peer), m, i;
    if (to < 0) return peer;
    m = sp->parent.missing(sp->parent.ctx, to);
    for (i = 0; i < sp->n; i++)
        if (sp->members[i] == m) return i;
    return peer;
}
#endif

/* The port of a communicator over members[0..n) of `parent`'s ranks. */
static void coll__sub_port(coll_port *port, coll_subport *sp, const coll_port *parent,
                           const int *members, int n)
{
    COLL_MEMCPY(&sp->parent, parent, sizeof sp->parent);   /* no struct copies: */
    sp->members = members;                                  /* freestanding       */
    sp->n = n;
    coll__layer_port(port, parent, sp);
    port->send = coll__sub_send;
    port->recv = coll__sub_recv;
    if (parent->sendrecv) port->sendrecv = coll__sub_sendrecv;
    if (parent->isend) { port->isend = coll__sub_isend; port->irecv = coll__sub_irecv; port->wait = coll__sub_wait; }
    if (parent->irecv_fold) port->irecv_fold = coll__sub_irecv_fold;
#ifndef COLL_NO_ERRSTR
    if (parent->missing) port->missing = coll__sub_missing;   /* renumbered */
#endif
}

/* What a communicator made from another takes over from it. */
static void coll__inherit(coll_comm *sub, const coll_comm *parent)
{
    sub->checks = parent->checks;
    sub->mem = parent->mem;
    COLL_MEMCPY(&sub->user, &parent->user, sizeof sub->user);
    COLL_MEMCPY(&sub->tune, &parent->tune, sizeof sub->tune);
    sub->cores = parent->cores;
}

COLL_API int coll_comm_sub(coll_comm *sub, coll_subport *sp, coll_comm *parent,
                           const int *members, int n, void *scratch, size_t scratch_bytes)
{
    coll_port port;
    int i, j, me = -1, rc;
    if (!sub || !sp || !parent || parent->magic != COLL__MAGIC || !members) return COLL_ERR_INVAL;
    if (coll__top(parent)->broken) return COLL_ERR_BROKEN;
    if (n < 1 || n > parent->nranks) return COLL_ERR_INVAL;
    for (i = 0; i < n; i++) {                   /* ranks of the parent, each once */
        if (members[i] < 0 || members[i] >= parent->nranks) return COLL_ERR_INVAL;
        for (j = 0; j < i; j++)
            if (members[j] == members[i]) return COLL_ERR_INVAL;
        if (members[i] == parent->rank) me = i;
    }
    if (me < 0) return COLL_ERR_INVAL;
    coll__sub_port(&port, sp, &parent->port, members, n);
    rc = coll_init(sub, me, n, &port, scratch, scratch_bytes);
    if (rc != COLL_OK) return rc;
    sub->up = coll__top(parent);
    coll__inherit(sub, parent);
#ifndef COLL_NO_SHRINK
    sub->epoch = parent->epoch;
#endif
    /* signed into every call check: a sub's call never passes for its parent's */
    sub->group_id = coll__crc_word(0, parent->group_id);
    for (i = 0; i < n; i++) sub->group_id = coll__crc_word(sub->group_id, (uint32_t)members[i]);
    sub->group_id |= 1u;
    return COLL_OK;
}

/* One all-gather of (color, key) pairs, then every rank reads the same
   table: its group is the ranks of its color, in (key, rank) order. A rank
   that cannot take part sends the color COLL__SPLIT_REFUSED, so every rank
   refuses together. The table is squeezed in place into the member list. */
#define COLL__SPLIT_REFUSED (-0x7fffffff - 1)
COLL_API int coll_comm_split(coll_comm *sub, coll_subport *sp, coll_comm *parent, int color,
                             int key, int *members, void *scratch, size_t scratch_bytes)
{
    int32_t mine[2];
    int i, j, m = 0, p, rc, refused = 0;
    if (!parent || parent->magic != COLL__MAGIC) return COLL_ERR_INVAL;
    p = parent->nranks;
    if (color >= 0 && (!sub || !sp || (!scratch && scratch_bytes) || (uintptr_t)scratch % 8)) refused = 1;
    mine[0] = refused ? COLL__SPLIT_REFUSED : color < 0 ? -1 : color;
    mine[1] = key;
    rc = coll_allgather(parent, mine, members, 2, COLL_INT32, COLL_ALGO_AUTO);
    if (rc != COLL_OK) return rc;
    for (i = 0; i < p; i++)
        if (members[2 * i] == COLL__SPLIT_REFUSED) {
            parent->why = COLL__WHY("split: a rank lacks sub, subport or scratch");
            return refused ? COLL_ERR_INVAL : COLL_ERR_PEER;
        }
    if (color < 0) {                            /* in no group: coll_size(sub) == -1 */
        if (sub) COLL_MEMSET(sub, 0, sizeof *sub);
        return COLL_OK;
    }
    for (i = 0; i < p; i++)                     /* (key, rank) of my color, to the front */
        if (members[2 * i] == color) {
            int k = members[2 * i + 1];
            members[2 * m] = k;                 /* m <= i: already read */
            members[2 * m + 1] = i;
            m++;
        }
    for (i = 1; i < m; i++) {                   /* insertion sort by key: ties keep rank order */
        int k = members[2 * i], r = members[2 * i + 1];
        for (j = i; j > 0 && members[2 * (j - 1)] > k; j--) {
            members[2 * j] = members[2 * (j - 1)];
            members[2 * j + 1] = members[2 * (j - 1) + 1];
        }
        members[2 * j] = k;
        members[2 * j + 1] = r;
    }
    for (i = 0; i < m; i++) members[i] = members[2 * i + 1];
    rc = coll_comm_sub(sub, sp, parent, members, m, scratch, scratch_bytes);
    /* the split's own place among the parent's calls, the same on every
       rank: two splits over one member list never sign alike */
    if (rc == COLL_OK) sub->group_id = coll__crc_word(sub->group_id, parent->seq) | 1u;
    return rc;
}

COLL_API int coll_rank(const coll_comm *c) { return c && c->magic == COLL__MAGIC ? c->rank : -1; }
COLL_API int coll_size(const coll_comm *c) { return c && c->magic == COLL__MAGIC ? c->nranks : -1; }

COLL_API int coll_set_user_op(coll_comm *c, const coll_user_op *op)
{
    if (!c || c->magic != COLL__MAGIC || !op || !op->fn) return COLL_ERR_INVAL;
    COLL_MEMCPY(&c->user, op, sizeof c->user);
    coll__forget(c);
    return COLL_OK;
}

COLL_API int coll_set_memops(coll_comm *c, const coll_memops *mem)
{
    if (!c || c->magic != COLL__MAGIC) return COLL_ERR_INVAL;
    if (mem && (!mem->copy || !mem->reduce || !mem->scale)) return COLL_ERR_INVAL;
#ifdef COLL_NO_MEMOPS
    if (mem) { c->why = COLL__WHY("memops: not compiled in (COLL_NO_MEMOPS)"); return COLL_ERR_NOSYS; }
#endif
    if (mem && (c->checks & COLL_CHECK_CRC)) {     /* the CRC reads buffers on the host */
        c->why = COLL__WHY("memops: not with COLL_CHECK_CRC");
        return COLL_ERR_NOSYS;
    }
    c->mem = mem;
    coll__forget(c);
    return COLL_OK;
}

COLL_API int coll_set_checks(coll_comm *c, unsigned flags)
{
    if (!c || c->magic != COLL__MAGIC || (flags & ~(unsigned)(COLL_CHECK_CALLS | COLL_CHECK_CRC)))
        return COLL_ERR_INVAL;
#ifdef COLL_NO_CHECKS
    if (flags) return COLL_ERR_NOSYS;
#endif
#ifdef COLL_NO_CRC
    if (flags & COLL_CHECK_CRC) { c->why = COLL__WHY("checks: COLL_CHECK_CRC not compiled in (COLL_NO_CRC)"); return COLL_ERR_NOSYS; }
#endif
    if ((flags & COLL_CHECK_CRC) && COLL__MEM(c)) {
        c->why = COLL__WHY("checks: COLL_CHECK_CRC not with memops");
        return COLL_ERR_NOSYS;
    }
    c->checks = flags;
    coll__forget(c);
    return COLL_OK;
}

COLL_API const char *coll_last_error(const coll_comm *c)
{
    if (!c || (c->magic != COLL__MAGIC && c->magic != COLL__REFUSED)) return COLL__WHY("comm: not initialised");
    return c->why ? c->why : "";
}

COLL_API int coll_set_tuning(coll_comm *c, const coll_tuning *t)
{
    if (!c || c->magic != COLL__MAGIC || !t) return COLL_ERR_INVAL;
#ifndef COLL_NO_COST_MODEL
    if (!(t->alpha >= 0) || !(t->beta >= 0) || !(t->gamma >= 0)) return COLL_ERR_INVAL;
#endif
    c->tune.alpha = (coll__real)t->alpha; c->tune.beta = (coll__real)t->beta; c->tune.gamma = (coll__real)t->gamma;
    coll__forget(c);
    return COLL_OK;
}

COLL_API int coll_set_cores(coll_comm *c, int cores)
{
    if (!c || c->magic != COLL__MAGIC || cores < 0) return COLL_ERR_INVAL;
#ifdef COLL_NO_COST_MODEL
    if (cores) return COLL_ERR_NOSYS;                /* no model to weigh it */
#endif
    c->cores = cores;
    coll__forget(c);
    return COLL_OK;
}

COLL_API int coll_add_rule(coll_comm *c, coll_kind kind, size_t min_bytes, size_t max_bytes,
                           coll_algo algo)
{
    coll_rule *u;
    if (!c || c->magic != COLL__MAGIC || (unsigned)kind >= (unsigned)COLL_KIND_COUNT) return COLL_ERR_INVAL;
    if (!coll__find(kind, algo) || min_bytes > max_bytes) return COLL_ERR_INVAL;
    if (c->nrules == COLL_MAX_RULES) return COLL_ERR_NOSPC;
    u = &c->rules[c->nrules++];
    u->kind = kind; u->min_bytes = min_bytes; u->max_bytes = max_bytes; u->algo = algo;
    coll__forget(c);
    return COLL_OK;
}

/* n round trips of `bytes` between ranks 0 and 1: rank 0 sends from buf
   and hears back into buf + bytes; rank 1 answers. */
static int coll__pingpong(coll_comm *c, unsigned char *buf, size_t bytes, int n)
{
    const coll_port *pt = &c->port;
    int i, rc = COLL_OK, peer = 1 - c->rank;
    for (i = 0; i < n && rc == COLL_OK; i++) {
        if (c->rank == 0 && (rc = pt->send(pt->ctx, peer, buf, bytes)) != COLL_OK) break;
        rc = pt->recv(pt->ctx, peer, buf + bytes, bytes);
        if (c->rank == 1 && rc == COLL_OK) rc = pt->send(pt->ctx, peer, buf, bytes);
    }
    return rc;
}

/* Ping-pong between ranks 0 and 1: a one-byte exchange costs 2α, a
   segment-sized one 2(α + sβ); a local float sum over a segment costs sγ.
   Rank 0's figures are then broadcast so every rank decides alike. */
COLL_API int coll_tune(coll_comm *c, double (*now)(void *ctx), void *ctx)
{
#ifdef COLL_NO_COST_MODEL
    (void)c; (void)now; (void)ctx;
    return COLL_ERR_NOSYS;
#else
    enum { REPS = 16 };
    union { coll_tuning t; unsigned char b[sizeof(coll_tuning)]; } m;
    unsigned char one[2] = { 0, 0 }, *buf;
    size_t s;
    int i, rc = COLL_OK;
    double t0, t1, t2;
    if (!c || c->magic != COLL__MAGIC || !now) return COLL_ERR_INVAL;
    m.t.alpha = c->tune.alpha; m.t.beta = c->tune.beta; m.t.gamma = c->tune.gamma;
    s = c->segment & ~(size_t)3;
    buf = c->scratch;
    if (c->nranks > 1 && c->rank < 2) {
        t0 = now(ctx);
        rc = coll__pingpong(c, one, 1, REPS);
        t1 = now(ctx);
        if (rc == COLL_OK && s) rc = coll__pingpong(c, buf, s, REPS);
        t2 = now(ctx);
        if (rc != COLL_OK) return rc;
        if (c->rank == 0) {
            m.t.alpha = (t1 - t0) / (2.0 * REPS);
            if (s) {
                double b = (t2 - t1) / (2.0 * REPS) - m.t.alpha;
                m.t.beta = b > 0 ? b / (double)s : m.t.beta;
                if (!COLL__MEM(c)) COLL_MEMSET(buf, 0, 2 * s);   /* memops: scratch is not ours to touch */
                t0 = now(ctx);
                for (i = 0; i < REPS; i++)
                    coll__reduce(c, &c->user, buf, buf, buf + s, s / 4, COLL_FLOAT32, COLL_SUM);
                m.t.gamma = (now(ctx) - t0) / ((double)REPS * (double)s);
            }
        }
    }
    rc = coll_broadcast(c, m.b, sizeof m.b, COLL_UINT8, 0, COLL_ALGO_BINOMIAL);
    if (rc == COLL_OK) rc = coll_set_tuning(c, &m.t);
    return rc;
#endif
}

/* The call's operands and its buffers in the engine's table. */
static void coll__take_call(coll_request *q, const coll_args *a, size_t es)
{
    const coll_comm *c = q->c;
    const void *src = a->src;
    void *dst = a->dst;
    q->a.dtype = a->dtype; q->a.op = a->op;
    if (COLL__USER_OPS && a->op == COLL_USER_OP) COLL_MEMCPY(&q->a.uop, coll__uop(c, a), sizeof q->a.uop);
    q->esize = es;
    q->seg = c->segment ? q->pl.chunk : (size_t)-1;      /* segment / es */
    if (COLL__KIND_IS(a->kind, COLL_BARRIER)) { src = &q->token[0]; dst = &q->token[1]; }
    if (COLL__KIND_IS(a->kind, COLL_BROADCAST)) src = a->dst;
    q->b[COLL_BUF_SRC].at = (unsigned char *)(uintptr_t)src;
    q->b[COLL_BUF_DST].at = (unsigned char *)dst;
    q->b[COLL_BUF_SRC].unit = q->b[COLL_BUF_DST].unit = es;
    q->b[COLL_BUF_SRC].cut = q->b[COLL_BUF_DST].cut = q->seg;
}

/* A v form's counts and displs folded into one word: a plan is made from
   them, so coll_restart refuses a run whose caller changed them since (a
   multiplicative hash of each; 0 for the other kinds, never for these). */
#define COLL__VSIGS (COLL_KINDS & COLL__COUNTED)
static COLL__NOINLINE uint32_t coll__vhash(uint32_t h, const size_t *v, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ (uint32_t)v[i] ^ (uint32_t)((v[i] >> 16) >> 16)) * 0x9e3779b1u + 1u;
    return h;
}
static uint32_t coll__vsig(const coll__plan *pl)
{
    size_t m = COLL__KIND_IS(pl->kind, COLL_ALLTOALLV) ? (size_t)pl->p : 1u;
    if (!COLL__COUNTS(pl)) return 0;
    return coll__vhash(coll__vhash(1u, pl->counts, (size_t)pl->p * m), pl->displs,
                       pl->displs ? (size_t)pl->p * (m > 1 ? 2u : 1u) : 0) | 1u;
}

/* `q` holds a call still running on `c` (started, not finished, its ticket
   among those in flight): coll_prepare must not clear it. Its fields are
   read only while some request of c's group is running, and its owner
   pointer compared, never followed; a copy of a request that ran to its
   end elsewhere (coll_waitall over copies) holds a ticket already past. */
static int coll__running(coll_comm *c, const coll_request *q)
{
    const coll_comm *top = coll__top(c);
    return top->ticket != top->turn && q->c == c && q->queued && !q->finished &&
           (uint32_t)(q->ticket - top->turn) < (uint32_t)(top->ticket - top->turn);   /* (a stale copy's is past) */
}

#ifndef COLL_NO_CHECKS             /* the agreement layer clears its frames itself */
#define COLL__CLEARED offsetof(coll_request, g.fo)
#else
#define COLL__CLEARED offsetof(coll_request, st)
#endif

/* A call is planned once (coll_prepare) and run any number of times
   (coll_restart); coll_start is the two at once. */
static int coll__prepare(coll_request *q, coll_comm *c, const coll_args *a)
{
    coll__plan *pl;                             /* planned in place: no copy on the stack */
    size_t es = 0;
    const char *why = "";
    int rc, nulldst;
    if (COLL__ARG(!c || c->magic != COLL__MAGIC)) return COLL_ERR_INVAL;
    if (COLL__ARG(!q)) { c->why = COLL__WHY("request: NULL"); return COLL_ERR_INVAL; }
    COLL_MEMSET(q, 0, COLL__CLEARED);
    q->c = c;
    q->source = coll__plain_source;
    q->checks = c->checks;
    if (coll__top(c)->broken) return coll__end(q, COLL_ERR_BROKEN);   /* c->why says what broke it */
    pl = &q->pl;
    rc = coll__plan_args(c, a, pl, &es, &why);
    if (rc == COLL_OK) rc = coll__pick(c, COLL__MEMO(c), a, pl, es, &q->st, &why);
    /* A non-root of an AUTO reduce may pass no dst (MPI's habit): with the
       call check it tells the others, and every rank runs linear reduce,
       where non-roots only send. */
    nulldst = rc == COLL_OK && COLL__NULLDST_SWITCH && (c->checks & COLL_CHECK_CALLS) && c->nranks > 1 &&
              COLL__KIND_IS(a->kind, COLL_REDUCE) && a->algo == COLL_ALGO_AUTO && a->root != c->rank &&
              !a->dst && pl->total > 0;
    if (rc == COLL_OK) rc = coll__buffers_ok(pl, a, es, nulldst, &why);
    if (rc == COLL_OK) rc = coll__scratch_ok(c, pl, es, &why);
    if (COLL__CHECKS && rc != COLL_OK) {        /* the rounds of a refusal run on rank and size alone */
        COLL_MEMSET(pl, 0, sizeof *pl);
        pl->rank = c->rank; pl->p = c->nranks;
    }
#ifndef COLL_NO_ERRSTR
    c->why = why;
#endif
    if (rc == COLL_OK) coll__take_call(q, a, es);
#ifndef COLL_NO_CHECKS
    coll__agree_prepare(q, a, es, rc, nulldst);       /* it drives the call from here */
#endif
    if (rc != COLL_OK && !COLL__LAYERED(q)) return coll__end(q, rc);
    q->pre.src = q->b[COLL_BUF_SRC].at;      /* (refused: the rounds tell the others) */
    q->pre.inplace = q->pl.inplace;
    if (COLL__VSIGS) q->pre.vsig = coll__vsig(&q->pl);
    if (COLL__NULLDST_SWITCH) { q->pre.row = q->pl.row; q->pre.algo = q->pl.algo; }
    q->prepared = 1;
    q->finished = 1;                         /* not running */
    return COLL_OK;
}

/* The caller's request may be one still running: refused, not cleared
   (coll_run's own request never is: it refuses while one runs). */
COLL_API int coll_prepare(coll_request *q, coll_comm *c, const coll_args *a)
{
    if (COLL__ARG(q && c && c->magic == COLL__MAGIC && coll__running(c, q))) {
        c->why = COLL__WHY("request: still running");
        return COLL_ERR_INVAL;
    }
    return coll__prepare(q, c, a);
}

/* Run a prepared call (again): its buffers as prepared, their contents as
   they are now. The sequence number and the frames are each run's own. */
COLL_API int coll_restart(coll_request *q)
{
    coll_comm *c = q ? q->c : 0, *top;
    int rc;
    if (COLL__ARG(!c || c->magic != COLL__MAGIC)) return COLL_ERR_INVAL;
    if (COLL__ARG(!q->prepared || !q->finished)) {
        c->why = COLL__WHY("request: not prepared, or still running");
        return COLL_ERR_INVAL;
    }
    if (COLL__CHECKS && COLL__ARG(q->checks != c->checks)) {
        c->why = COLL__WHY("request: checks changed since coll_prepare");
        return COLL_ERR_INVAL;
    }
    if (COLL__VSIGS && COLL__ARG(q->pre.vsig != coll__vsig(&q->pl))) {   /* the plan is stale: a refusal */
        c->why = COLL__WHY("counts: changed since coll_prepare");
        if (!COLL__LAYERED(q)) return COLL_ERR_INVAL;
#ifndef COLL_NO_CHECKS
        coll__agree_refuse(q, COLL_ERR_INVAL);      /* its rounds tell the others */
        q->pre.vsig = 0;
#endif
    }
    top = coll__top(c);
    q->finished = q->loaded = 0;
    q->err = 0;
    q->step = 0;
    q->spins = 0;
    q->watch = 0;
    q->b[COLL_BUF_SRC].at = q->pre.src;
    q->pl.inplace = q->pre.inplace;
    if (COLL__NULLDST_SWITCH) {                 /* the last run may have switched to linear */
        q->pl.row = q->pre.row; q->pl.algo = q->pre.algo;
    }
    if (top->broken) return coll__end(q, COLL_ERR_BROKEN);
#ifndef COLL_NO_CHECKS
    if (COLL__LAYERED(q)) coll__agree_run(q);
#endif
    q->seq = ++c->seq;
    coll__record_start(q);
    q->queued = 1;
    q->ticket = top->ticket++;
    if (!COLL__LAYERED(q) && (rc = coll__begin(q)) != COLL_OK)
        return coll__end(q, coll__broke(q, rc, COLL__WHY("a local copy failed")));   /* no agreement: begin at once */
    return COLL_OK;
}

COLL_API int coll_start(coll_request *q, coll_comm *c, const coll_args *a)
{
    int rc = coll_prepare(q, c, a);
    return rc == COLL_OK ? coll_restart(q) : rc;
}

COLL_API int coll_progress(coll_request *q)
{
    if (!q || !q->c) return COLL_ERR_INVAL;
    return coll__progress(q, 0);
}

/* COLL_NO_REUSE: every blocking call plans afresh. */
#ifndef COLL_NO_REUSE
#define COLL__REUSE 1
#else
#define COLL__REUSE 0
#endif

/* The same call again: every field a plan reads as the last blocking
   call's on this communicator. Not the counted kinds, a user operator or
   a user type: their arrays and operator may change under the same
   pointers (and no other field of args is read). */
static int coll__same_call(const coll_args *x, const coll_args *a)
{
    return x->kind == a->kind && x->algo == a->algo && x->src == a->src && x->dst == a->dst &&
           x->count == a->count && x->dtype == a->dtype && x->op == a->op && x->root == a->root &&
           x->group == a->group && !COLL__IS(COLL__COUNTED, COLL__KIND(a->kind)) &&
           !(COLL__USER_OPS && a->op == COLL_USER_OP) && a->dtype != COLL_USER_TYPE;
}

/* A blocking call runs in the top communicator's own request: only one
   can be under way in a group (the turn check), and firmware keeps the
   request off the stack. The same call as the last one (nothing set on
   the communicator since) runs that call's plan again, as a persistent
   call would: coll.h's own cost of a repeated call is coll_restart's. */
static int coll__run_own(coll_comm *c, const coll_args *a)
{
    coll_comm *top = c && c->magic == COLL__MAGIC ? coll__top(c) : 0;
    int rc;
    if (COLL__ARG(!top || !a)) return COLL_ERR_INVAL;
    if (COLL__ARG(top->ticket != top->turn)) {
        c->why = COLL__WHY("an earlier request on this communicator is unfinished");
        return COLL_ERR_INVAL;
    }
    if (!COLL__REUSE || !top->again_ok || top->blk.c != c || !coll__same_call(&top->again, a)) {
        top->again_ok = 0;
        if ((rc = coll__prepare(&top->blk, c, a)) != COLL_OK) return rc;
        if (COLL__REUSE && top->blk.pl.row) {           /* planned (a refusal plans nothing) */
            COLL_MEMCPY(&top->again, a, sizeof *a);
            top->again_ok = 1;
        }
    }
#ifndef COLL_NO_ERRSTR
    else c->why = "";                                   /* as coll_prepare leaves it */
#endif
    if ((rc = coll_restart(&top->blk)) != COLL_OK) return rc;
    return coll__progress(&top->blk, 1);
}

/* The direct layer, where one is installed (coll_window.h's, by coll_init
   where that header brought the implementation in): it takes a blocking
   call that leaves the algorithm to AUTO, while no request is unfinished,
   and answers it itself or by coll__run_own. Everything else, and every
   build without the layer, goes straight to the engine. */
COLL_API int coll_run(coll_comm *c, const coll_args *a)
{
#ifdef COLL__DIRECT_LAYER
    if (c && a && c->magic == COLL__MAGIC && c->direct && a->algo == COLL_ALGO_AUTO &&
        coll__top(c)->ticket == coll__top(c)->turn)
        return c->direct(c, a);
#endif
    return coll__run_own(c, a);
}

/* The requests in the order they were started: each runs to its end
   (blocking) when its turn comes. */
COLL_API int coll_waitall(coll_request *q, int n)
{
    int i, rc, first = COLL_OK;
    if (n < 0 || (n > 0 && !q)) return COLL_ERR_INVAL;
    for (;;) {
        coll_request *next = 0;
        for (i = 0; i < n; i++) {
            if (!q[i].c) return COLL_ERR_INVAL;
            if (!q[i].finished && (!next || (uint32_t)(q[i].ticket - next->ticket) > 0x7fffffffu))
                next = &q[i];
        }
        if (!next) return first;
        if (next->queued && next->ticket != coll__top(next->c)->turn) {
            next->c->why = COLL__WHY("an earlier request is unfinished");
            return COLL_ERR_INVAL;
        }
        rc = coll__progress(next, 1);
        if (rc != COLL_OK && first == COLL_OK) first = rc;
    }
}

static void coll__args(coll_args *a, coll_kind k, const void *src, void *dst, size_t count,
                       coll_dtype t, coll_op op, int root, coll_algo algo)
{
    COLL_MEMSET(a, 0, sizeof *a);
    a->kind = k; a->algo = algo; a->src = src; a->dst = dst; a->count = count;
    a->dtype = t; a->op = op; a->root = root;
}

/* A blocking call of the fixed-size forms: its arguments, then coll_run.
   One copy (coll__call) serves them all; a build of one collective, which
   keeps one of them, has it in place instead (COLL__CALL). */
static COLL__ALWAYS_INLINE int coll__run_args(coll_comm *c, coll_kind k, const void *src, void *dst,
                                              size_t count, coll_dtype t, coll_op op, int root, coll_algo algo)
{
    coll_args a;
    coll__args(&a, k, src, dst, count, t, op, root, algo);
    return coll_run(c, &a);
}
static int coll__call(coll_comm *c, coll_kind k, const void *src, void *dst, size_t count,
                      coll_dtype t, coll_op op, int root, coll_algo algo)
{
    return coll__run_args(c, k, src, dst, count, t, op, root, algo);
}
#define COLL__CALL(...) (COLL__ONE(COLL_KINDS) ? coll__run_args(__VA_ARGS__) : coll__call(__VA_ARGS__))

COLL_API int coll_allreduce(coll_comm *c, const void *src, void *dst, size_t count,
                            coll_dtype dtype, coll_op op, coll_algo algo)
{
    return COLL__CALL(c, COLL_ALLREDUCE, src, dst, count, dtype, op, 0, algo);
}

COLL_API int coll_reduce_scatter(coll_comm *c, const void *src, void *dst, size_t count,
                                 coll_dtype dtype, coll_op op, coll_algo algo)
{
    return COLL__CALL(c, COLL_REDUCE_SCATTER, src, dst, count, dtype, op, 0, algo);
}

COLL_API int coll_allgather(coll_comm *c, const void *src, void *dst, size_t count,
                            coll_dtype dtype, coll_algo algo)
{
    return COLL__CALL(c, COLL_ALLGATHER, src, dst, count, dtype, COLL_SUM, 0, algo);
}

COLL_API int coll_broadcast(coll_comm *c, void *buf, size_t count, coll_dtype dtype,
                            int root, coll_algo algo)
{
    return COLL__CALL(c, COLL_BROADCAST, buf, buf, count, dtype, COLL_SUM, root, algo);
}

COLL_API int coll_reduce(coll_comm *c, const void *src, void *dst, size_t count,
                         coll_dtype dtype, coll_op op, int root, coll_algo algo)
{
    return COLL__CALL(c, COLL_REDUCE, src, dst, count, dtype, op, root, algo);
}

COLL_API int coll_gather(coll_comm *c, const void *src, void *dst, size_t count,
                         coll_dtype dtype, int root, coll_algo algo)
{
    return COLL__CALL(c, COLL_GATHER, src, dst, count, dtype, COLL_SUM, root, algo);
}

COLL_API int coll_scatter(coll_comm *c, const void *src, void *dst, size_t count,
                          coll_dtype dtype, int root, coll_algo algo)
{
    return COLL__CALL(c, COLL_SCATTER, src, dst, count, dtype, COLL_SUM, root, algo);
}

COLL_API int coll_alltoall(coll_comm *c, const void *src, void *dst, size_t count,
                           coll_dtype dtype, coll_algo algo)
{
    return COLL__CALL(c, COLL_ALLTOALL, src, dst, count, dtype, COLL_SUM, 0, algo);
}

COLL_API int coll_gatherv(coll_comm *c, const void *src, void *dst, const size_t *counts,
                          coll_dtype dtype, int root, coll_algo algo)
{
    coll_args a; coll__args(&a, COLL_GATHERV, src, dst, 0, dtype, COLL_SUM, root, algo);
    a.counts = counts;
    return coll_run(c, &a);
}

COLL_API int coll_alltoallv(coll_comm *c, const void *src, void *dst, const size_t *counts,
                            coll_dtype dtype, coll_algo algo)
{
    coll_args a; coll__args(&a, COLL_ALLTOALLV, src, dst, 0, dtype, COLL_SUM, 0, algo);
    a.counts = counts;
    return coll_run(c, &a);
}

COLL_API int coll_scatterv(coll_comm *c, const void *src, void *dst, const size_t *counts,
                           coll_dtype dtype, int root, coll_algo algo)
{
    coll_args a; coll__args(&a, COLL_SCATTERV, src, dst, 0, dtype, COLL_SUM, root, algo);
    a.counts = counts;
    return coll_run(c, &a);
}

COLL_API int coll_scan(coll_comm *c, const void *src, void *dst, size_t count,
                       coll_dtype dtype, coll_op op, coll_algo algo)
{
    return COLL__CALL(c, COLL_SCAN, src, dst, count, dtype, op, 0, algo);
}

COLL_API int coll_exscan(coll_comm *c, const void *src, void *dst, size_t count,
                         coll_dtype dtype, coll_op op, coll_algo algo)
{
    return COLL__CALL(c, COLL_EXSCAN, src, dst, count, dtype, op, 0, algo);
}

COLL_API int coll_barrier(coll_comm *c, coll_algo algo)
{
    return COLL__CALL(c, COLL_BARRIER, 0, 0, 0, COLL_UINT8, COLL_SUM, 0, algo);
}

COLL_API int coll_allgatherv(coll_comm *c, const void *src, void *dst, const size_t *counts,
                             coll_dtype dtype, coll_algo algo)
{
    coll_args a; coll__args(&a, COLL_ALLGATHERV, src, dst, 0, dtype, COLL_SUM, 0, algo);
    a.counts = counts;
    return coll_run(c, &a);
}

COLL_API int coll_reduce_scatterv(coll_comm *c, const void *src, void *dst, const size_t *counts,
                                  coll_dtype dtype, coll_op op, coll_algo algo)
{
    coll_args a; coll__args(&a, COLL_REDUCE_SCATTERV, src, dst, 0, dtype, op, 0, algo);
    a.counts = counts;
    return coll_run(c, &a);
}

COLL_API coll_algo coll_choose(const coll_comm *c, const coll_args *a)
{
    coll__plan pl;
    coll__step st;
    size_t es = 0;
    coll_args b;
    const char *why;
    if (!c || c->magic != COLL__MAGIC || !a) return COLL_ALGO_AUTO;
    COLL_MEMCPY(&b, a, sizeof b);
    b.algo = COLL_ALGO_AUTO;
    if (coll__plan_args(c, &b, &pl, &es, &why) != COLL_OK) return COLL_ALGO_AUTO;
    if (coll__pick(c, 0, &b, &pl, es, &st, &why) != COLL_OK) return COLL_ALGO_AUTO;
    return pl.algo;
}

COLL_API int coll_describe(const coll_comm *c, const coll_args *a, int step, coll_xfer *x)
{
    coll__plan pl;
    coll__step st;
    size_t es = 0;
    const char *why;
    int rc, room;
    if (!c || c->magic != COLL__MAGIC || !x || step < 0) return COLL_ERR_INVAL;
    rc = coll__plan_args(c, a, &pl, &es, &why);
    if (rc != COLL_OK) return rc;
    rc = coll__pick(c, 0, a, &pl, es, &st, &why);
    if (rc != COLL_OK) return rc;
    if (COLL__BEGIN(COLL__ROW_OF(&pl)) == coll__work_in_place) pl.inplace = 1;
    if (!COLL__ROW_OF(&pl)->f(&pl, step, &st)) return 0;
    room = COLL__IN_ROOM(COLL__ROW_OF(&pl));
    if (room) es = coll__room_blk(&pl, es);         /* its offsets count blocks */
    x->send_to = st.to;   x->send_buf = st.sbuf;
    x->recv_from = st.from; x->recv_buf = st.rbuf;
    x->send_offset = st.soff * es; x->send_bytes = st.to >= 0 ? st.slen * es : 0;
    x->recv_offset = st.roff * es; x->recv_bytes = st.from >= 0 ? st.rlen * es : 0;
    x->reduce = st.reduce;
    if (COLL__KIND_IS(a->kind, COLL_BROADCAST) && !room) x->send_buf = x->recv_buf = COLL_BUF_DST;
    return 1;
}

COLL_API int coll_comm_revoke(coll_comm *c)
{
    coll_comm *top;
    if (!c || c->magic != COLL__MAGIC) return COLL_ERR_INVAL;
    top = coll__top(c);
    if (!top->broken) top->broken = COLL_ERR_ABORTED;
    c->why = top->why = COLL__WHY("revoked (coll_comm_revoke)");
    if (c->port.abort) c->port.abort(c->port.ctx, COLL_ERR_ABORTED);
    return COLL_OK;
}

/* ---- >>shrink  the survivors agree on who lives ---------------------------
   Every survivor renews the port (epoch e: nothing of c is read again),
   tells every other rank that it lives, then hears from each in turn: a
   rank that does not answer within the port's deadline is taken for dead.
   Then it sends the set it heard from (its view) to each rank in it, and
   takes theirs. If every view it gets equals its own, that set is the new
   communicator, which runs in epoch e + 1 so that nothing the agreement
   left unread is ever taken for a call's message. Every rank sends before
   it waits, so the only waits that run out are those on the dead: one
   deadline per dead rank, 2 (p - 1) small messages per survivor a round.
   A survivor that loses a rank between the rounds, or whose views differ
   (a rank that answered some and not others), returns COLL_ERR_PEER: every
   survivor that returns COLL_OK has the same members. Survivors that come
   to shrink a deadline or more apart (one learned of the failure that much
   later) wait out each other's views and answer so too. */
#ifndef COLL_NO_SHRINK
#define COLL__SHRINK_ALIVE 0x53484b31u      /* "SHK1": I live (epoch, from, to) */
#define COLL__SHRINK_VIEW  0x53484b32u      /* "SHK2": whom I heard from        */
#define COLL__SHRINK_WORDS 8                /* view words on the stack: 256 ranks */

/* A message that must go even to a rank that may be dead: posted and
   waited for where the port can (an eager send is then done at once). */
static int coll__shrink_send(const coll_port *pt, int to, const void *buf, size_t bytes)
{
    int h, rc = COLL_AGAIN;
    if (pt->isend) rc = pt->isend(pt->ctx, to, buf, bytes, &h);
    if (rc == COLL_AGAIN) return pt->send(pt->ctx, to, buf, bytes);
    return rc != COLL_OK ? rc : pt->wait(pt->ctx, h, 1);
}

#define COLL__SHRINK_BIT(w, j) ((w)[4 + (j) / 32] >> ((j) % 32) & 1u)
#define COLL__SHRINK_SET(w, j) ((w)[4 + (j) / 32] |= 1u << ((j) % 32))
#define COLL__SHRINK_POSTED 16              /* "alive" sends left in flight */

/* Round 1: view[4..) gets a bit for this rank and for every rank it told
   that it lives and heard the same from (unsent[4..): zeros, scribbled).
   The sends are posted, not waited for, where the port can: one to a
   stopped rank may never complete (a full ring), and the ranks waiting
   for this one's word must not wait for it. Those left to the dead are
   the port's to drop (the renew that follows, before m goes). */
static void coll__shrink_hear(const coll_comm *c, uint32_t e, uint32_t *m, uint32_t *view, uint32_t *unsent)
{
    const coll_port *pt = &c->port;
    int j, k, n = 0, p = c->nranks, me = c->rank, h[COLL__SHRINK_POSTED], to[COLL__SHRINK_POSTED];
    m[0] = COLL__SHRINK_ALIVE; m[1] = e; m[2] = (uint32_t)me; m[3] = 0;
    for (j = 0; j < p; j++) {
        int rc = COLL_AGAIN;
        if (j == me) continue;
        if (pt->isend && n < COLL__SHRINK_POSTED && (rc = pt->isend(pt->ctx, j, m, 16, &h[n])) == COLL_OK)
            to[n++] = j;
        if (rc == COLL_AGAIN) rc = pt->send(pt->ctx, j, m, 16);
        if (rc != COLL_OK) COLL__SHRINK_SET(unsent, j);
    }
    COLL__SHRINK_SET(view, me);
    for (j = 0; j < p; j++) {
        uint32_t in[4];
        if (j == me || pt->recv(pt->ctx, j, in, sizeof in) != COLL_OK) continue;
        if (in[0] == COLL__SHRINK_ALIVE && in[1] == e && in[2] == (uint32_t)j && in[3] == 0)
            COLL__SHRINK_SET(view, j);
    }
    for (k = 0; k < n; k++)                     /* the living take theirs (a send the
                                                   port gave up shows in round 2) */
        if (COLL__SHRINK_BIT(view, to[k])) (void)pt->wait(pt->ctx, h[k], 1);
    for (j = 0; j < p; j++)
        if (COLL__SHRINK_BIT(unsent, j)) view[4 + j / 32] &= ~(1u << (j % 32));
}

/* Round 2: the view to every rank in it, and theirs, which must be the
   same (the header's sender field aside). */
static int coll__shrink_compare(const coll_comm *c, const uint32_t *view, uint32_t *theirs, int nw)
{
    const coll_port *pt = &c->port;
    size_t bytes = (size_t)(4 + nw) * 4;
    int j, k, p = c->nranks, me = c->rank;
    for (j = 0; j < p; j++)
        if (j != me && COLL__SHRINK_BIT(view, j) && coll__shrink_send(pt, j, view, bytes) != COLL_OK)
            return COLL_ERR_PEER;
    for (j = 0; j < p; j++) {
        if (j == me || !COLL__SHRINK_BIT(view, j)) continue;
        if (pt->recv(pt->ctx, j, theirs, bytes) != COLL_OK) return COLL_ERR_PEER;
        if (theirs[0] != view[0] || theirs[1] != view[1] || theirs[2] != (uint32_t)j || theirs[3] != view[3])
            return COLL_ERR_PEER;
        for (k = 0; k < nw; k++)
            if (theirs[4 + k] != view[4 + k]) return COLL_ERR_PEER;
    }
    return COLL_OK;
}

COLL_API int coll_comm_shrink(coll_comm *out, coll_subport *sp, coll_comm *c, int *members,
                              void *scratch, size_t scratch_bytes)
{
    uint32_t small[2][4 + COLL__SHRINK_WORDS], alive[4], *view, *theirs, e;
    coll_port port;
    int p, nw, j, n = 0, me = -1, rc;
    if (!out || !sp || !c || c->magic != COLL__MAGIC || !members) return COLL_ERR_INVAL;
    if (!c->port.renew) return COLL__NO(&c->why, COLL_ERR_NOSYS, "shrink: the port cannot renew");
    p = c->nranks;
    nw = (p + 31) / 32;
    view = small[0]; theirs = small[1];
    if (nw > COLL__SHRINK_WORDS) {              /* many ranks: the members' room */
        if (sizeof(int) < 4 || (size_t)(8 + 2 * nw) * 4 > (size_t)p * sizeof(int)) return COLL_ERR_NOSPC;
        view = (uint32_t *)(void *)(members + p);
        theirs = view + 4 + nw;
    }
    e = c->epoch + 1;
    c->epoch = e + 1;                           /* a second try starts afresh */
    rc = c->port.renew(c->port.ctx, e);
    if (rc != COLL_OK) return COLL__NO(&c->why, rc, "shrink: the port's renew failed");
    view[0] = COLL__SHRINK_VIEW; view[1] = e; view[2] = (uint32_t)c->rank; view[3] = (uint32_t)p;
    for (j = 0; j < nw; j++) view[4 + j] = theirs[4 + j] = 0;
    coll__shrink_hear(c, e, alive, view, theirs);
    rc = coll__shrink_compare(c, view, theirs, nw);
    j = c->port.renew(c->port.ctx, e + 1);      /* (what is left in flight goes) */
    if (rc != COLL_OK) return COLL__NO(&c->why, rc, "shrink: the survivors do not agree");
    if (j != COLL_OK) return COLL__NO(&c->why, j, "shrink: the port's renew failed");
    for (j = 0; j < p; j++)                     /* the view as a list of c's ranks */
        if (COLL__SHRINK_BIT(view, j)) {
            if (j == c->rank) me = n;
            members[n++] = j;
        }
    coll__sub_port(&port, sp, &c->port, members, n);
    rc = coll_init(out, me, n, &port, scratch, scratch_bytes);
    if (rc != COLL_OK) return rc;
    coll__inherit(out, c);
    out->epoch = e + 1;
    /* signed into every call check: the new group, and the epoch it runs in */
    out->group_id = coll__crc_word(0, e + 1);
    for (j = 0; j < n; j++) out->group_id = coll__crc_word(out->group_id, (uint32_t)members[j]);
    out->group_id |= 1u;
    return COLL_OK;
}
#else
COLL_API int coll_comm_shrink(coll_comm *out, coll_subport *sp, coll_comm *c, int *members,
                              void *scratch, size_t scratch_bytes)
{
    (void)out; (void)sp; (void)c; (void)members; (void)scratch; (void)scratch_bytes;
    return COLL_ERR_NOSYS;
}
#endif

COLL_API int coll_set_observer(coll_comm *c, coll_observer_fn fn, void *ctx)
{
    if (!c || c->magic != COLL__MAGIC) return COLL_ERR_INVAL;
#ifndef COLL_NO_OBSERVER
    if (coll__top(c)->ticket != coll__top(c)->turn) return COLL__NO(&c->why, COLL_ERR_INVAL, "observer: a request is in flight");
    if (fn && !c->obs.fn) coll__observe_wrap(c);
    if (!fn && c->obs.fn) COLL_MEMCPY(&c->port, &c->obs.inner, sizeof c->port);   /* unwrapped */
    c->obs.fn = fn;
    c->obs.ctx = ctx;
    c->obs.cur = 0;
    return COLL_OK;
#else
    (void)fn; (void)ctx;
    return COLL_ERR_NOSYS;
#endif
}

COLL_API int coll_set_recorder(coll_comm *c, coll_record *ring, unsigned n,
                               uint64_t (*now)(void *ctx), void *ctx)
{
    if (!c || c->magic != COLL__MAGIC || (ring && !n)) return COLL_ERR_INVAL;
#ifndef COLL_NO_RECORDER
    if (ring) COLL_MEMSET(ring, 0, (size_t)n * sizeof *ring);
    c->rec = ring; c->nrec = n;
    c->now = now; c->now_ctx = ctx;
    return COLL_OK;
#else
    (void)ring; (void)now; (void)ctx;
    return COLL_ERR_NOSYS;
#endif
}

/* One line an entry: "call 12 allreduce ring dtype 8 op 0 root 0 bytes
   4096 start 1000 end 1450 step 6 peer -1 result 0 ok". */
COLL_API int coll_dump(const coll_comm *c, int (*write)(void *ctx, const char *text, size_t n), void *ctx)
{
#ifndef COLL_NO_RECORDER
    static const char label[] = " dtype \0 op \0 root \0 bytes \0 start \0 end \0 step \0 peer \0 result \0";
    char l[320];               /* the longest line: 5 + 10 + 2 x 41 + 9 x 27 - 26 + 41 */
    unsigned i, f;
    int rc;
    if (!c || c->magic != COLL__MAGIC || !write) return COLL_ERR_INVAL;
    for (i = 1; c->rec && i <= c->nrec; i++) {
        const coll_record *e = &c->rec[(c->seq + i - 1u) % c->nrec];   /* oldest first */
        int64_t v[9];
        size_t n = coll__str(l, "call ", 5);
        if (!e->seq) continue;
        v[0] = (int64_t)e->dtype; v[1] = (int64_t)e->op; v[2] = e->root; v[3] = (int64_t)e->bytes;
        v[4] = (int64_t)e->start; v[5] = (int64_t)e->end; v[6] = e->step; v[7] = e->peer; v[8] = e->result;
        n += coll__dec(l + n, e->seq);
        l[n++] = ' '; n += coll__str(l + n, coll_kind_name(e->kind), 40);
        l[n++] = ' '; n += coll__str(l + n, coll_algo_name(e->algo), 40);
        for (f = 0; f < 9; f++) {
            n += coll__str(l + n, coll__nth(label, f), 8);
            if (v[f] < 0) { l[n++] = '-'; v[f] = -v[f]; }
            n += coll__dec(l + n, (uint64_t)v[f]);
        }
        l[n++] = ' '; n += coll__str(l + n, coll_result_str(e->result), 40);
        l[n++] = '\n';
        if ((rc = write(ctx, l, n)) != 0) return rc;
    }
    return COLL_OK;
#else
    (void)c; (void)write; (void)ctx;
    return COLL_ERR_NOSYS;
#endif
}

COLL_API const char *coll_result_str(int result)
{
#ifdef COLL_NO_ERRSTR
    (void)result;
    return "";
#else
    static const signed char code[] = { COLL_OK, COLL_AGAIN, COLL_ERR_IO, COLL_ERR_BROKEN,
        COLL_ERR_CORRUPT, COLL_ERR_PEER, COLL_ERR_INVAL, COLL_ERR_NOSPC, COLL_ERR_NOSYS,
        COLL_ERR_MISMATCH, COLL_ERR_TIMEOUT, COLL_ERR_ABORTED };
    static const char text[] = "ok\0in progress: call coll_progress again\0transport failed\0"
        "communicator broken by an earlier error\0a message failed its integrity check\0"
        "another rank refused its arguments\0invalid argument\0no room: scratch or port memory too small\0"
        "not in this build, or no algorithm for this call\0peers disagree about a message\0"
        "timed out waiting for a peer\0transport shut down";
    unsigned i;
    for (i = 0; i < sizeof code; i++)
        if (code[i] == result) return coll__nth(text, i);
    return result < 0 ? "error from the port" : "unknown result";
#endif
}

COLL_API const char *coll_algo_name(coll_algo a)
{
#ifdef COLL_NO_NAMES
    (void)a;
    return "";
#else
    static const char names[] = COLL_ALGO_LIST(COLL__LIST_TEXT);
    return (unsigned)a < (unsigned)COLL_ALGO_COUNT ? coll__nth(names, (unsigned)a) : "?";
#endif
}

COLL_API const char *coll_kind_name(coll_kind k)
{
#ifdef COLL_NO_NAMES
    (void)k;
    return "";
#else
    static const char names[] = COLL_KIND_LIST(COLL__LIST_TEXT);
    return (unsigned)k < (unsigned)COLL_KIND_COUNT ? coll__nth(names, (unsigned)k) : "?";
#endif
}


#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#endif /* COLL__IMPLEMENTED */
#endif /* COLL_IMPLEMENTATION */

/*
   LICENCE (MIT)
   Copyright (c) 2026 the coll authors
   Permission is hereby granted, free of charge, to any person obtaining a copy
   of this software and associated documentation files (the "Software"), to
   deal in the Software without restriction, including without limitation the
   rights to use, copy, modify, merge, publish, distribute, sublicense, and/or
   sell copies of the Software, and to permit persons to whom the Software is
   furnished to do so, subject to the following conditions: the above
   copyright notice and this permission notice shall be included in all copies
   or substantial portions of the Software. THE SOFTWARE IS PROVIDED "AS IS",
   WITHOUT WARRANTY OF ANY KIND.
*/
