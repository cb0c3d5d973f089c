/* check_port.h - the port checker: every collective and every algorithm
   coll.h offers, run over your port on p ranks and checked on every rank.

   Include it after coll.h (with its implementation somewhere in the
   program). It brings test/coll_test.h and test/test_values.h along.

   WHAT IT RUNS
     For every collective (coll_kind) and every algorithm (coll_algo) that
     coll_describe does not answer COLL_ERR_NOSYS for - AUTO included:
       - counts 0, 1, p-1, p+1, 61 and a larger one (`big`), ragged against
         p, in place and out of place, float32 sum and int32 max, with the
         normal scratch and with a tiny one (many small segments);
       - a few more dtypes and operators at count 13 (quick), or every dtype
         with every operator (full);
       - the v forms with ragged per-rank counts, some blocks empty;
         alltoallv with a ragged p x p matrix that depends only on p and
         the count (some blocks empty; in place, a symmetric one, so that
         row r equals column r on every rank);
     and checks on every rank: every element against the plain-loop
     reference of test/test_values.h (inputs are small integers, so the
     answer is exact), guard bytes on both sides of every output and input,
     the input of an out-of-place call untouched. A case that returns
     COLL_ERR_NOSYS on its own arguments is counted "not available".
     Then the error cases: a bad root on every rank, a bad root on one rank,
     a count that one rank disagrees on, alltoallv in place with a matrix
     whose row r differs from its column r on some ranks (those must say
     COLL_ERR_INVAL): every rank must return an error,
     promptly (within `prompt_s` if a clock is given; in round-robin mode,
     within a bounded number of turns), and the communicator must still
     work afterwards (call-check errors move no payload).
     The first collective that fails with a transport error stops the
     rank's suite: the ranks may be out of step after it.

   HOW RANKS RUN: your launcher
       typedef int (*coll_port_check_body)(int rank, coll_port *port, void *arg);
       int launch(void *user, int nranks, coll_port_check_body body, void *arg);
     launch runs body(rank, &port, arg) for every rank with that rank's
     port, and returns 0 if every body returned 0 (the signature of
     coll_shm_spawn's body, so a forking launcher is one call). Ranks may be
       - threads or processes (one body call per rank, all at once): set
         `private_arena` for processes, where each rank has its own copy of
         the arena and the counts must reach `tally` in shared memory;
       - one rank of many, in an MPI or TCP job: launch calls body once, for
         its own rank (also `private_arena`); add the ranks' counts up
         yourself (coll_test_passed/failed after coll_port_check_run);
       - round robin in one thread (`cooperative` = 1): the body never
         blocks (coll_start/coll_progress) and returns COLL_AGAIN while its
         rank has more to do; launch calls every rank's body in turn until
         none says COLL_AGAIN. No threads, no heap: bare metal can run it.

   USAGE
       static unsigned char arena[4 << 20];          8-byte aligned
       coll_port_check ck;
       memset(&ck, 0, sizeof ck);                    zero = the defaults
       ck.name = "myport"; ck.nranks = 4;
       ck.launch = my_launch; ck.launch_user = &my_world;
       ck.arena = arena; ck.arena_bytes = sizeof arena;
       return coll_port_check_test(&ck);   runs, prints "myport: N passed, N failed"

     coll_port_check_run(&ck) does the same without the closing line (it
     adds its counts to coll_test.h's), for programs with checks of their
     own; coll_port_check_arena_bytes(nranks, big) says how big an arena
     lets the largest count be `big` (less arena: a smaller `big`).

   FIELDS (zero gives the default)
     name            prefix of messages and the closing line      ("port")
     nranks          ranks                                        (required)
     launch, launch_user                                          (required)
     arena, arena_bytes   buffers and scratch of every rank       (required)
     private_arena   1: every rank has its own copy of the arena      (0)
     cooperative     1: round robin in one thread, see above          (0)
     full            1: every dtype with every operator               (0)
     big             largest count tried                           (4099)
     scratch_bytes   the normal communicator's scratch              (4096)
     now, prompt_s   a clock in seconds, and how soon an error must
                     reach every rank                          (none, 1 s)
     other_allreduce, other_ctx   a second opinion on each allreduce
                     (MPI_Allreduce, say): 0 and dst filled, or nonzero
                     for "cannot do this dtype/op"                 (none)
     tally           where the counts go (shared memory for processes)
                                                       (inside the struct)
     quiet           1: count failures without printing them          (0)
     memops, sync, mem_ctx   for a port whose copies and local work run
                     late, in order on a queue per rank (a CUDA stream):
                     memops(mem_ctx, rank) is set on the rank's
                     communicators (coll_set_memops), and sync(mem_ctx,
                     rank) - 0, or an error counted as a failure - is
                     called after every call, before its results are read
                     and the next inputs written; the arena must then be
                     memory both the host and the memops can reach
                     (test/cuda/test_check_port_sim.c)          (none: host)
   COLL_PORT_CHECK_MAX_RANKS (16) bounds nranks when the ranks share the
   struct (threads, round robin); private_arena has no bound.
*/
#ifndef COLL_PORT_CHECK_H
#define COLL_PORT_CHECK_H

#include "coll_test.h"
#include "test_values.h"

#ifndef COLL_PORT_CHECK_MAX_RANKS
#define COLL_PORT_CHECK_MAX_RANKS 16
#endif
#define COLL_PORT_CHECK_GUARD 32          /* bytes checked on each side        */
#define COLL_PORT_CHECK_GUARD_BYTE 0xA5
#define COLL_PORT_CHECK_SMALL 200         /* the tiny scratch: 64-byte segments */
#define COLL_PORT_CHECK_TURNS 2000000ul   /* round robin: a case's turns at most */

#ifdef __GNUC__
#define COLL_PORT_CHECK__UNUSED __attribute__((unused))
#else
#define COLL_PORT_CHECK__UNUSED
#endif

/* Output is flushed before a forked rank exits (when stdio is there). */
#ifndef COLL_PORT_CHECK_FLUSH
#ifdef EOF
#define COLL_PORT_CHECK_FLUSH() fflush(stdout)
#else
#define COLL_PORT_CHECK_FLUSH() ((void)0)
#endif
#endif

typedef int (*coll_port_check_body)(int rank, coll_port *port, void *arg);
typedef int (*coll_port_check_launch)(void *user, int nranks, coll_port_check_body body,
                                      void *arg);

typedef struct coll_port_check_tally {
    unsigned long passed, failed, unavailable;
} coll_port_check_tally;

/* One case, the same on every rank. */
typedef struct coll_port_check_case {
    coll_kind kind;
    coll_algo algo;
    coll_dtype t;
    coll_op op;
    size_t count;
    int root, inplace, small;
    int error;                 /* 0, or which error case (1..3)              */
} coll_port_check_case;

/* A rank's state (private): kept between calls in round-robin mode. */
typedef struct coll_port_check_rank {
    int started, running, finished, broken, checks, rank;
    coll_comm c, cs;
    coll_request q;
    coll_args a;
    coll_port_check_case k;
    int stage, kind, algo, variant, serial;   /* where the case list is    */
    unsigned char *s, *d;      /* the two buffer regions (guard in front)    */
    size_t region;             /* bytes of each, guards included             */
    size_t *counts;            /* per-rank counts of the v forms; p x p for
                                  alltoallv                                  */
    size_t big;
    unsigned long turns;
    double t0;
} coll_port_check_rank;

typedef struct coll_port_check {
    const char *name;
    int nranks;
    coll_port_check_launch launch;
    void *launch_user;
    void *arena;
    size_t arena_bytes;
    int private_arena, cooperative, full, quiet;
    size_t big, scratch_bytes;
    double (*now)(void);
    double prompt_s;
    int (*other_allreduce)(void *ctx, const void *src, void *dst, size_t count,
                           coll_dtype t, coll_op op);
    void *other_ctx;
    const coll_memops *(*memops)(void *mem_ctx, int rank);
    int (*sync)(void *mem_ctx, int rank);
    void *mem_ctx;
    coll_port_check_tally *tally;
    /* private */
    coll_port_check_tally own;
    coll_port_check_rank rk[COLL_PORT_CHECK_MAX_RANKS];
} coll_port_check;

/* ---- sizes ---------------------------------------------------------------- */

static size_t coll_port_check__up(size_t n) { return (n + 15u) & ~(size_t)15u; }

/* One buffer region: p blocks of up to big + p elements of 8 bytes (the v
   forms' counts and alltoallv's matrix entries run up to count + p - 1),
   guards on both sides. */
static size_t coll_port_check__region(int p, size_t big)
{
    return coll_port_check__up(2 * COLL_PORT_CHECK_GUARD + 8u * (size_t)p * (big + (size_t)p));
}

static size_t coll_port_check__share(int p, size_t big, size_t scratch)
{
    return 2 * coll_port_check__region(p, big) + coll_port_check__up(scratch) +
           coll_port_check__up(COLL_PORT_CHECK_SMALL) + coll_port_check__up(sizeof(size_t) * (size_t)p * (size_t)p) + 16;
}

/* Arena bytes for nranks ranks sharing one arena, the largest count `big`
   and the default scratch. (private_arena: divide by nranks.) */
static COLL_PORT_CHECK__UNUSED size_t coll_port_check_arena_bytes(int nranks, size_t big)
{
    return (size_t)nranks * coll_port_check__share(nranks, big, 4096);
}

/* ---- reporting ------------------------------------------------------------ */

static const char *coll_port_check__tname(coll_dtype t)
{
    static const char *const n[] = { "int8", "uint8", "int32", "uint32", "int64",
        "uint64", "float16", "bfloat16", "float32", "float64" };
    return (unsigned)t < (unsigned)COLL_USER_TYPE ? n[t] : "?";
}

static const char *coll_port_check__oname(coll_op op)
{
    static const char *const n[] = { "sum", "prod", "min", "max", "avg", "band", "bor", "bxor" };
    return (unsigned)op < (unsigned)COLL_USER_OP ? n[op] : "?";
}

static void coll_port_check__pass(coll_port_check *ck) { COLL_TEST__INC(ck->tally->passed); }

/* Counts a failure; prints the case and returns 1 when the caller should
   print its own detail after it (the first COLL_TEST_MAX_REPORTS only). */
static int coll_port_check__fail(coll_port_check *ck, const coll_port_check_rank *st)
{
    const coll_port_check_case *k = &st->k;
    unsigned long n = COLL_TEST__INC(ck->tally->failed);
    if (ck->quiet) return 0;
    if (n > COLL_TEST_MAX_REPORTS) {
        if (n == COLL_TEST_MAX_REPORTS + 1)
            COLL_TEST_PRINTF("(further failures are counted, not shown)\n");
        return 0;
    }
    COLL_TEST_PRINTF("FAIL %s rank %d/%d: ", ck->name, st->rank, ck->nranks);
    if (k->error)
        COLL_TEST_PRINTF("error case %d: ", k->error);
    else
        COLL_TEST_PRINTF("%s(%d)/%s(%d) %s %s count %lu root %d%s%s: ",
                         coll_kind_name(k->kind), (int)k->kind, coll_algo_name(k->algo),
                         (int)k->algo, coll_port_check__tname(k->t), coll_port_check__oname(k->op),
                         (unsigned long)k->count, k->root, k->inplace ? " in place" : "",
                         k->small ? " tiny scratch" : "");
    return 1;
}

#define COLL_PORT_CHECK__EXPECT(ck, st, cond, ...)                               \
    do {                                                                        \
        if (cond) coll_port_check__pass(ck);                                    \
        else if (coll_port_check__fail(ck, st)) {                               \
            COLL_TEST_PRINTF(__VA_ARGS__);                                      \
            COLL_TEST_PRINTF("\n");                                             \
        }                                                                       \
    } while (0)

/* ---- the case list ---------------------------------------------------------- */

static int coll_port_check__reduces(coll_kind k)
{
    return k == COLL_ALLREDUCE || k == COLL_REDUCE || k == COLL_REDUCE_SCATTER ||
           k == COLL_REDUCE_SCATTERV || k == COLL_SCAN || k == COLL_EXSCAN;
}

static int coll_port_check__vform(coll_kind k)
{
    return k == COLL_ALLGATHERV || k == COLL_REDUCE_SCATTERV || k == COLL_GATHERV || k == COLL_SCATTERV;
}

/* Elements of block b: equal blocks, or the v forms' ragged ones (some
   empty). */
static size_t coll_port_check__block(const coll_port_check_case *k, int b)
{
    if (!coll_port_check__vform(k->kind)) return k->count;
    return b % 3 == 1 ? 0 : k->count + (size_t)b;
}

/* Element i of a whole split vector: which rank's block, and where in it. */
static int coll_port_check__owner(const coll_port_check_case *k, int p, size_t i, size_t *j)
{
    int b;
    size_t off = 0;
    for (b = 0; b < p - 1 && i >= off + coll_port_check__block(k, b); b++) off += coll_port_check__block(k, b);
    *j = i - off;
    return b;
}

static size_t coll_port_check__offset(const coll_port_check_case *k, int b)
{
    size_t off = 0;
    int j;
    for (j = 0; j < b; j++) off += coll_port_check__block(k, j);
    return off;
}

/* alltoallv's matrix, entry (i, j): what rank i sends rank j. Ragged, some
   entries empty, and the same on every rank (a function of p, the count
   and the case). In place it is symmetric (row r = column r); error case
   4 gives the in-place call the other one, where ranks 0 and 1 at least
   have row != column. */
static size_t coll_port_check__a2av(const coll_port_check_case *k, int p, int i, int j)
{
    if (k->inplace && k->error != 4)
        return (i + j) % 3 == 1 ? 0 : k->count + (size_t)(((i + j) * 3 + i * j) % p);
    return (i + 2 * j) % 3 == 1 ? 0 : k->count + (size_t)((i * 3 + j * 5 + 1) % p);
}

/* Elements rank r sends (row r) or receives (column r) under alltoallv. */
static size_t coll_port_check__a2av_sum(const coll_port_check_case *k, int p, int r, int col)
{
    size_t s = 0;
    int j;
    for (j = 0; j < p; j++) s += col ? coll_port_check__a2av(k, p, j, r) : coll_port_check__a2av(k, p, r, j);
    return s;
}

/* Element i of alltoallv's row r (col = 0: the input) or column r (col =
   1: the output): the peer's block it sits in and where in it. */
static int coll_port_check__a2av_owner(const coll_port_check_case *k, int p, int r, int col,
                                       size_t i, size_t *j)
{
    int b;
    size_t off = 0, len = 0;
    for (b = 0; b < p; b++) {
        len = col ? coll_port_check__a2av(k, p, b, r) : coll_port_check__a2av(k, p, r, b);
        if (i < off + len) break;
        off += len;
    }
    *j = i - off;
    return b;
}

/* Variant v of (kind, algo) for this p; 0 past the last. */
static int coll_port_check__variant(coll_port_check *ck, coll_port_check_rank *st, int v,
                                    coll_port_check_case *k)
{
    static const coll_dtype qt[] = { COLL_FLOAT16, COLL_UINT8, COLL_FLOAT64, COLL_INT64,
                                     COLL_BFLOAT16, COLL_INT8 };
    static const coll_op qo[] = { COLL_MIN, COLL_BXOR, COLL_AVG, COLL_PROD, COLL_SUM, COLL_SUM };
    int p = ck->nranks, reduces = coll_port_check__reduces((coll_kind)st->kind);
    size_t sizes[6];
    int nsweep, i;
    k->kind = (coll_kind)st->kind;
    k->algo = (coll_algo)st->algo;
    k->error = 0;
    k->small = 0;
    k->inplace = 0;
    k->root = st->serial % p;
    if (k->kind == COLL_BARRIER) {         /* nothing but the synchronisation */
        if (v > 0) return 0;
        k->t = COLL_UINT8; k->op = COLL_SUM; k->count = 0;
        return 1;
    }
    /* part 1: dtypes and operators at a count that no p divides evenly */
    k->count = 13;
    if (ck->full) {
        int t, op, j = 0;
        for (t = 0; t < (int)COLL_USER_TYPE; t++)
            for (op = 0; op < (reduces ? (int)COLL_USER_OP : 1); op++) {
                if (op >= COLL_BAND && op <= COLL_BXOR && t_is_float((coll_dtype)t)) continue;
                if (j++ == v) { k->t = (coll_dtype)t; k->op = (coll_op)op; return 1; }
            }
        v -= j;
    } else {
        if (v < 6) { k->t = qt[v]; k->op = reduces ? qo[v] : COLL_SUM; return 1; }
        v -= 6;
    }
    /* part 2: the sizes, float32 sum and int32 max, in and out of place,
       normal and tiny scratch (tiny for the smaller counts only) */
    sizes[0] = 0; sizes[1] = 1; sizes[2] = (size_t)(p - 1); sizes[3] = (size_t)(p + 1);
    sizes[4] = 61; sizes[5] = st->big;
    nsweep = 6 * 2 * 2;
    if (v >= nsweep) return 0;
    i = v / 4;
    k->count = sizes[i];
    k->inplace = (v / 2) % 2;
    k->t = v % 2 ? COLL_INT32 : COLL_FLOAT32;
    k->op = v % 2 && reduces ? COLL_MAX : COLL_SUM;
    k->small = v % 2 && k->count <= 61;
    if (k->inplace && k->kind == COLL_BROADCAST)
        k->inplace = -1;                   /* no in-place form: skipped */
    if (i == 5 && st->big <= 61) k->inplace = -1;
    return 1;
}

/* The buffers and arguments of case k on this rank, inputs written. */
static void coll_port_check__prepare(coll_port_check *ck, coll_port_check_rank *st)
{
    const coll_port_check_case *k = &st->k;
    int p = ck->nranks, r = st->rank, b;
    size_t es = coll_dtype_size(k->t), n = k->count, i, total = 0, mine;
    unsigned char *S = st->s + COLL_PORT_CHECK_GUARD, *D = st->d + COLL_PORT_CHECK_GUARD;
    coll_args *a = &st->a;
    for (b = 0; b < p; b++) total += coll_port_check__block(k, b);
    mine = coll_port_check__block(k, r);
    if (k->kind == COLL_ALLTOALLV) {       /* row r in, column r out */
        size_t row = coll_port_check__a2av_sum(k, p, r, 0), col = coll_port_check__a2av_sum(k, p, r, 1);
        total = row > col ? row : col;
    }
    /* guards everywhere the case can reach (and a little beyond) */
    {
        size_t used = 2 * COLL_PORT_CHECK_GUARD + es * (total > n * (size_t)p ? total : n * (size_t)p);
        unsigned char *x = st->s, *y = st->d;
        if (used > st->region) used = st->region;
        for (i = 0; i < used; i++) x[i] = y[i] = COLL_PORT_CHECK_GUARD_BYTE;
    }
    if (k->kind == COLL_ALLTOALLV)
        for (i = 0; i < (size_t)p * (size_t)p; i++)
            st->counts[i] = coll_port_check__a2av(k, p, (int)(i / (size_t)p), (int)(i % (size_t)p));
    else
        for (i = 0; i < (size_t)p; i++) st->counts[i] = coll_port_check__block(k, (int)i);
    {
        unsigned char *z = (unsigned char *)a;
        for (i = 0; i < sizeof *a; i++) z[i] = 0;
    }
    a->kind = k->kind; a->algo = k->algo; a->count = n; a->dtype = k->t; a->op = k->op;
    a->root = k->root; a->group = p < 2 ? 1 : 2;
    if (coll_port_check__vform(k->kind) || k->kind == COLL_ALLTOALLV) a->counts = st->counts;
    a->src = S; a->dst = D;
    switch (k->kind) {
    case COLL_ALLREDUCE: case COLL_REDUCE: case COLL_SCAN: case COLL_EXSCAN:
        if (k->inplace) a->src = D;
        for (i = 0; i < n; i++) t_put(k->t, (void *)a->src, i, t_input(r, i, k->t, k->op));
        break;
    case COLL_REDUCE_SCATTER: case COLL_REDUCE_SCATTERV:
        if (k->inplace) { a->src = D; a->dst = D + coll_port_check__offset(k, r) * es; }
        for (i = 0; i < total; i++) t_put(k->t, (void *)a->src, i, t_input(r, i, k->t, k->op));
        break;
    case COLL_ALLGATHER: case COLL_ALLGATHERV: case COLL_GATHER: case COLL_GATHERV:
        if (k->inplace) a->src = D + coll_port_check__offset(k, r) * es;
        for (i = 0; i < mine; i++) t_put(k->t, (void *)a->src, i, t_input(r, i, k->t, COLL_SUM));
        break;
    case COLL_SCATTER: case COLL_SCATTERV:
        if (k->inplace) a->dst = S + coll_port_check__offset(k, r) * es;
        if (r == k->root)
            for (i = 0; i < total; i++) {
                size_t j;
                int b = coll_port_check__owner(k, p, i, &j);
                t_put(k->t, S, i, t_input(b, j, k->t, COLL_SUM));
            }
        break;
    case COLL_ALLTOALL:
        if (k->inplace) a->dst = S;        /* in place: src == dst */
        for (i = 0; i < n * (size_t)p; i++)
            t_put(k->t, S, i, t_input(r * p + (int)(i / n), i % n, k->t, COLL_SUM));
        break;
    case COLL_ALLTOALLV: {                 /* block b of row r: rank r's for rank b */
        size_t in_n = coll_port_check__a2av_sum(k, p, r, 0);
        if (k->inplace) a->dst = S;
        for (i = 0; i < in_n; i++) {
            size_t j;
            int b = coll_port_check__a2av_owner(k, p, r, 0, i, &j);
            t_put(k->t, S, i, t_input(r * p + b, j, k->t, COLL_SUM));
        }
        break;
    }
    case COLL_BROADCAST:
        a->src = D;
        if (r == k->root) for (i = 0; i < n; i++) t_put(k->t, D, i, t_input(k->root, i, k->t, COLL_SUM));
        break;
    default:                               /* barrier: no buffers */
        a->src = 0; a->dst = 0;
        break;
    }
}

/* Is (kind, algo) offered at all? coll_describe, in place or not, on a
   count of 13: only COLL_ERR_NOSYS says no. */
static int coll_port_check__offered(coll_port_check *ck, coll_port_check_rank *st)
{
    coll_xfer x;
    int ip, rc;
    for (ip = 0; ip < 2; ip++) {
        st->k.kind = (coll_kind)st->kind; st->k.algo = (coll_algo)st->algo;
        st->k.t = COLL_FLOAT32; st->k.op = COLL_SUM; st->k.count = 13;
        st->k.root = 0; st->k.inplace = ip; st->k.small = 0; st->k.error = 0;
        coll_port_check__prepare(ck, st);
        rc = coll_describe(&st->c, &st->a, 0, &x);
        if (rc != COLL_ERR_NOSYS) return 1;
    }
    return 0;
}

/* The error cases - 0: every rank names root p; 1: the last rank alone
   does (p > 1); 2: rank 0 has one element more (p > 1); 3: alltoallv in
   place with row r != column r on some ranks (p > 1) - and 4: a plain
   call after them that must work, as call-check errors move no payload
   and leave the communicator usable. Skipped without call checks
   (COLL_NO_CHECKS), where a refusal is local and the others would wait. */
static int coll_port_check__error_case(coll_port_check *ck, coll_port_check_rank *st, int e)
{
    coll_port_check_case *k = &st->k;
    int p = ck->nranks;
    if (e >= 5) return 0;
    if (!st->checks || (p < 2 && e >= 1 && e <= 3)) return -1;
    k->error = e < 4 ? e + 1 : 0;
    k->kind = e == 0 ? COLL_BROADCAST : e == 1 ? COLL_REDUCE : e == 3 ? COLL_ALLTOALLV : COLL_ALLREDUCE;
    k->algo = COLL_ALGO_AUTO;
    k->t = COLL_FLOAT32; k->op = COLL_SUM; k->count = 61; k->inplace = e == 3; k->small = 0;
    k->root = 0;
    return 1;
}

/* Next case for this rank; 0 at the end. Every rank walks the same list. */
static int coll_port_check__next(coll_port_check *ck, coll_port_check_rank *st)
{
    for (;;) {
        if (st->stage == 0) {
            int v;
            if (st->kind >= (int)COLL_KIND_COUNT) { st->stage = 1; st->variant = 0; continue; }
            if (st->algo >= (int)COLL_ALGO_COUNT) { st->kind++; st->algo = 0; st->variant = 0; continue; }
            if (st->variant == 0 && !coll_port_check__offered(ck, st)) { st->algo++; continue; }
            v = st->variant++;
            if (!coll_port_check__variant(ck, st, v, &st->k)) {
                st->algo++; st->variant = 0; continue;
            }
            st->serial++;
            if (st->k.inplace < 0) continue;
            return 1;
        }
        if (st->stage == 1) {
            int rc = coll_port_check__error_case(ck, st, st->variant++);
            if (rc > 0) return 1;
            if (rc < 0) continue;
            st->stage = 2;
        }
        return 0;
    }
}

/* ---- checking one result ---------------------------------------------------- */

static int coll_port_check__guarded(const unsigned char *lo, size_t bytes)
{
    size_t i;
    for (i = 0; i < COLL_PORT_CHECK_GUARD; i++)
        if (lo[-1 - (long)i] != COLL_PORT_CHECK_GUARD_BYTE ||
            lo[bytes + i] != COLL_PORT_CHECK_GUARD_BYTE)
            return 0;
    return 1;
}

/* Element i of this rank's output, by the plain loop. */
static double coll_port_check__want(coll_port_check *ck, const coll_port_check_rank *st, size_t i)
{
    const coll_port_check_case *k = &st->k;
    int p = ck->nranks, r = st->rank, b;
    size_t n = k->count, off;
    switch (k->kind) {
    case COLL_ALLREDUCE: case COLL_REDUCE: return t_reduce_ref(k->t, k->op, p, i);
    case COLL_SCAN: return t_reduce_ref(k->t, k->op, r + 1, i);            /* ranks 0..r   */
    case COLL_EXSCAN:                                                      /* ranks 0..r-1 */
        return r ? t_reduce_ref(k->t, k->op, r, i) : t_input(0, i, k->t, k->op);
    case COLL_REDUCE_SCATTER: case COLL_REDUCE_SCATTERV:
        return t_reduce_ref(k->t, k->op, p, coll_port_check__offset(k, r) + i);
    case COLL_BROADCAST: return t_input(k->root, i, k->t, COLL_SUM);
    case COLL_SCATTER: case COLL_SCATTERV: return t_input(r, i, k->t, COLL_SUM);
    case COLL_ALLTOALL: return t_input((int)(i / n) * p + r, i % n, k->t, COLL_SUM);
    case COLL_ALLTOALLV: {                 /* block b of column r: rank b's for rank r */
        size_t j;
        b = coll_port_check__a2av_owner(k, p, r, 1, i, &j);
        return t_input(b * p + r, j, k->t, COLL_SUM);
    }
    default:                               /* the gathers: block b from rank b */
        for (b = 0, off = 0; b < p; off += coll_port_check__block(k, b), b++)
            if (i < off + coll_port_check__block(k, b)) break;
        return t_input(b, i - off, k->t, COLL_SUM);
    }
}

static void coll_port_check__verify(coll_port_check *ck, coll_port_check_rank *st, int rc)
{
    const coll_port_check_case *k = &st->k;
    int p = ck->nranks, r = st->rank, b;
    size_t es = coll_dtype_size(k->t), n = k->count, i, total = 0, out_n = 0, in_n = 0;
    const unsigned char *out = (const unsigned char *)st->a.dst;
    const unsigned char *in = (const unsigned char *)st->a.src;
    const unsigned char *D = st->d + COLL_PORT_CHECK_GUARD, *S = st->s + COLL_PORT_CHECK_GUARD;
    int root_only = k->kind == COLL_REDUCE || k->kind == COLL_GATHER || k->kind == COLL_GATHERV;
    if (rc == COLL_ERR_NOSYS) {            /* decided by the arguments: every rank */
        if (r == 0) COLL_TEST__INC(ck->tally->unavailable);
        return;
    }
    if (rc != COLL_OK) {
        COLL_PORT_CHECK__EXPECT(ck, st, 0, "returned %d (%s); this rank stops here", rc,
                                coll_result_str(rc));
        st->broken = 1;
        return;
    }
    coll_port_check__pass(ck);
    if (k->kind == COLL_BARRIER) return;
    for (b = 0; b < p; b++) total += coll_port_check__block(k, b);
    switch (k->kind) {
    case COLL_ALLREDUCE: case COLL_REDUCE: case COLL_BROADCAST: case COLL_SCAN: case COLL_EXSCAN:
        out_n = in_n = n; break;
    case COLL_REDUCE_SCATTER: case COLL_REDUCE_SCATTERV:
        out_n = coll_port_check__block(k, r); in_n = total; break;
    case COLL_ALLGATHER: case COLL_ALLGATHERV: case COLL_GATHER: case COLL_GATHERV:
        out_n = total; in_n = coll_port_check__block(k, r); break;
    case COLL_SCATTER: out_n = n; in_n = n * (size_t)p; break;
    case COLL_SCATTERV: out_n = coll_port_check__block(k, r); in_n = total; break;
    case COLL_ALLTOALL: out_n = in_n = n * (size_t)p; break;
    case COLL_ALLTOALLV:
        in_n = coll_port_check__a2av_sum(k, p, r, 0); out_n = coll_port_check__a2av_sum(k, p, r, 1); break;
    default: break;
    }
    /* every element of the output */
    if (!root_only || r == k->root) {
        size_t bad = out_n;
        for (i = 0; i < out_n && bad == out_n; i++)
            if (!t_close(k->t, k->op, t_get(k->t, out, i), coll_port_check__want(ck, st, i)))
                bad = i;
        COLL_PORT_CHECK__EXPECT(ck, st, bad == out_n, "element %lu of %lu is %g, want %g",
                                (unsigned long)bad, (unsigned long)out_n,
                                bad < out_n ? t_get(k->t, out, bad) : 0.0,
                                bad < out_n ? coll_port_check__want(ck, st, bad) : 0.0);
    }
    /* nothing written outside the buffers the call was given. In place,
       the whole vector is the buffer (reduce_scatter: the input; the
       gathers: the output); binomial gather and scatter use the big
       buffer of every rank as workspace. */
    {
        const unsigned char *lo = out;
        size_t bytes = out_n * es;
        if (k->kind == COLL_GATHER || k->kind == COLL_GATHERV) { lo = D; bytes = total * es; }
        if (k->kind == COLL_REDUCE_SCATTER || k->kind == COLL_REDUCE_SCATTERV) {
            if (k->inplace) { lo = D; bytes = total * es; }
        }
        if ((k->kind == COLL_ALLGATHER || k->kind == COLL_ALLGATHERV) && k->inplace) {
            lo = D; bytes = total * es;
        }
        if ((k->kind == COLL_SCATTER || k->kind == COLL_SCATTERV) && k->inplace) { lo = S; bytes = total * es; }
        COLL_PORT_CHECK__EXPECT(ck, st, coll_port_check__guarded(lo, bytes),
                                "wrote outside its output (%lu bytes)", (unsigned long)bytes);
        if (!k->inplace && k->kind != COLL_BROADCAST) {
            const unsigned char *ilo = in;
            size_t ibytes = in_n * es;
            if (k->kind == COLL_SCATTER || k->kind == COLL_SCATTERV) { ilo = S; ibytes = total * es; }
            COLL_PORT_CHECK__EXPECT(ck, st, coll_port_check__guarded(ilo, ibytes),
                                    "wrote outside its input (%lu bytes)", (unsigned long)ibytes);
        }
    }
    /* out of place, the input is read only (scatter's: at the root; the
       other ranks' big buffer is workspace) */
    if (!k->inplace && k->kind != COLL_BROADCAST &&
        ((k->kind != COLL_SCATTER && k->kind != COLL_SCATTERV) || r == k->root)) {
        size_t bad = in_n;
        for (i = 0; i < in_n && bad == in_n; i++) {
            double want;
            switch (k->kind) {
            case COLL_ALLREDUCE: case COLL_REDUCE: case COLL_REDUCE_SCATTER:
            case COLL_REDUCE_SCATTERV: case COLL_SCAN: case COLL_EXSCAN:
                want = t_input(r, i, k->t, k->op); break;
            case COLL_SCATTER: want = t_input((int)(i / n), i % n, k->t, COLL_SUM); break;
            case COLL_SCATTERV: {
                size_t j;
                int b = coll_port_check__owner(k, p, i, &j);
                want = t_input(b, j, k->t, COLL_SUM);
                break;
            }
            case COLL_ALLTOALL: want = t_input(r * p + (int)(i / n), i % n, k->t, COLL_SUM); break;
            case COLL_ALLTOALLV: {
                size_t j;
                int b = coll_port_check__a2av_owner(k, p, r, 0, i, &j);
                want = t_input(r * p + b, j, k->t, COLL_SUM);
                break;
            }
            default: want = t_input(r, i, k->t, COLL_SUM); break;
            }
            if (t_get(k->t, in, i) != want) bad = i;
        }
        COLL_PORT_CHECK__EXPECT(ck, st, bad == in_n, "changed its input at element %lu",
                                (unsigned long)bad);
    }
    /* a second opinion on the same inputs (every rank reaches this for the
       same cases, so a collective second opinion lines up) */
    if (k->kind == COLL_ALLREDUCE && ck->other_allreduce && !ck->cooperative) {
        unsigned char *src = st->s + COLL_PORT_CHECK_GUARD, *dst = st->d + COLL_PORT_CHECK_GUARD;
        for (i = 0; i < n; i++) t_put(k->t, src, i, t_input(r, i, k->t, k->op));
        if (ck->other_allreduce(ck->other_ctx, src, dst, n, k->t, k->op) == 0) {
            size_t bad = n;
            for (i = 0; i < n && bad == n; i++)
                if (!t_close(k->t, k->op, t_get(k->t, dst, i), t_reduce_ref(k->t, k->op, p, i)))
                    bad = i;
            COLL_PORT_CHECK__EXPECT(ck, st, bad == n, "the second opinion differs at element %lu",
                                    (unsigned long)bad);
        }
    }
}

/* An error case's arguments: e 1, every rank names root p; e 2, the last
   rank alone does; e 3, rank 0 has one element more; e 4 (alltoallv in
   place, a matrix that is not symmetric) is prepare's. */
static void coll_port_check__spoil(coll_port_check *ck, coll_port_check_rank *st)
{
    int p = ck->nranks, r = st->rank;
    if (st->k.error == 1) st->a.root = p;
    if (st->k.error == 2 && r == p - 1) st->a.root = p;
    if (st->k.error == 3 && r == 0) st->a.count++;
}

static void coll_port_check__verify_error(coll_port_check *ck, coll_port_check_rank *st, int rc,
                                          double secs)
{
    int e = st->k.error, want = e == 1 || (e == 2 && st->rank == ck->nranks - 1);
    if (e == 4) {                          /* this rank's row against its column */
        int j, p = ck->nranks, r = st->rank;
        for (j = 0; j < p; j++)
            want |= coll_port_check__a2av(&st->k, p, r, j) != coll_port_check__a2av(&st->k, p, j, r);
    }
    if (want)
        COLL_PORT_CHECK__EXPECT(ck, st, rc == COLL_ERR_INVAL, "returned %d (%s), want %s", rc,
                                coll_result_str(rc), coll_result_str(COLL_ERR_INVAL));
    else
        COLL_PORT_CHECK__EXPECT(ck, st, rc < 0, "returned %d (%s), want an error", rc,
                                coll_result_str(rc));
    if (ck->now)
        COLL_PORT_CHECK__EXPECT(ck, st, secs <= ck->prompt_s, "the error took %.3f s (limit %.3f s)",
                                secs, ck->prompt_s);
}

/* ---- the body every rank runs ------------------------------------------------ */

static int coll_port_check__setup(coll_port_check *ck, coll_port_check_rank *st, int rank,
                                  coll_port *port)
{
    unsigned char *base = (unsigned char *)ck->arena;
    size_t share = ck->arena_bytes / (size_t)(ck->private_arena ? 1 : ck->nranks), sc, region;
    size_t big = ck->big ? ck->big : 4099;
    int p = ck->nranks, rc;
    sc = ck->scratch_bytes ? ck->scratch_bytes : 4096;
    base += ck->private_arena ? 0 : share * (size_t)rank;
    base += (16u - (size_t)base % 16u) % 16u;
    while (big > 61 && coll_port_check__share(p, big, sc) > share) big = big * 3 / 4;
    if (coll_port_check__share(p, big, sc) > share) {
        COLL_PORT_CHECK__EXPECT(ck, st, 0, "arena of %lu bytes per rank is too small",
                                (unsigned long)share);
        return -1;
    }
    region = coll_port_check__region(p, big);
    st->rank = rank;
    st->big = big;
    st->region = region;
    st->s = base;
    st->d = base + region;
    st->counts = (size_t *)(base + 2 * region);
    base += 2 * region + coll_port_check__up(sizeof(size_t) * (size_t)p * (size_t)p);
    rc = coll_init(&st->c, rank, p, port, base, sc);
    base += coll_port_check__up(sc);
    if (rc == COLL_OK) rc = coll_init(&st->cs, rank, p, port, base, COLL_PORT_CHECK_SMALL);
    if (rc == COLL_OK && ck->memops) {
        const coll_memops *m = ck->memops(ck->mem_ctx, rank);
        rc = coll_set_memops(&st->c, m);
        if (rc == COLL_OK) rc = coll_set_memops(&st->cs, m);
    }
    COLL_PORT_CHECK__EXPECT(ck, st, rc == COLL_OK, "coll_init: %s", coll_result_str(rc));
    if (rc != COLL_OK) return -1;
    st->checks = coll_set_checks(&st->c, COLL_CHECK_CALLS) == COLL_OK &&
                 coll_set_checks(&st->cs, COLL_CHECK_CALLS) == COLL_OK;
    return 0;
}

/* A call has returned rc: wait for the work it left queued (sync), then
   check it. */
static void coll_port_check__done(coll_port_check *ck, coll_port_check_rank *st, int rc,
                                  double secs)
{
    if (ck->sync) {
        int s = ck->sync(ck->mem_ctx, st->rank);
        if (s != 0) {
            COLL_PORT_CHECK__EXPECT(ck, st, 0, "sync after the call: %d (%s); this rank stops here",
                                    s, coll_result_str(s));
            st->broken = 1;
            return;
        }
    }
    if (st->k.error) coll_port_check__verify_error(ck, st, rc, secs);
    else coll_port_check__verify(ck, st, rc);
}

static int coll_port_check__body(int rank, coll_port *port, void *arg)
{
    coll_port_check *ck = (coll_port_check *)arg;
    coll_port_check_rank *st = &ck->rk[ck->private_arena ? 0 : rank];
    int rc;
    if (!st->started) {
        st->started = 1;
        if (coll_port_check__setup(ck, st, rank, port)) st->broken = 1;
    }
    while (!st->finished) {
        coll_comm *c;
        if (st->running) {                 /* round robin: one turn */
            rc = coll_progress(&st->q);
            if (rc == COLL_AGAIN && ++st->turns < COLL_PORT_CHECK_TURNS) return COLL_AGAIN;
            if (rc == COLL_AGAIN) {
                COLL_PORT_CHECK__EXPECT(ck, st, 0, "no progress in %lu turns", st->turns);
                st->broken = 1;
                st->finished = 1;
                break;
            }
            st->running = 0;
            coll_port_check__done(ck, st, rc, 0);
            continue;
        }
        if (st->broken || !coll_port_check__next(ck, st)) { st->finished = 1; break; }
        coll_port_check__prepare(ck, st);
        if (st->k.error) coll_port_check__spoil(ck, st);
        c = st->k.small ? &st->cs : &st->c;
        if (ck->cooperative) {
            rc = coll_start(&st->q, c, &st->a);
            if (rc == COLL_OK) { st->running = 1; st->turns = 0; continue; }
            coll_port_check__done(ck, st, rc, 0);
        } else {
            double t0 = ck->now ? ck->now() : 0;
            rc = coll_run(c, &st->a);
            coll_port_check__done(ck, st, rc, ck->now ? ck->now() - t0 : 0);
        }
    }
    COLL_PORT_CHECK_FLUSH();
    return st->broken ? -1 : 0;
}

/* ---- the whole run ------------------------------------------------------------ */

/* Runs every case on every rank; adds the counts to coll_test.h's (this
   process's share, for one rank of a job; with several processes on one
   shared tally, read the tally instead) and returns the failures. A tally
   of the caller's is not zeroed: zero it before the first run. */
static COLL_PORT_CHECK__UNUSED unsigned long coll_port_check_run(coll_port_check *ck)
{
    coll_port_check_tally before;
    unsigned long failed, passed;
    size_t i;
    int rc;
    if (!ck->name) ck->name = "port";
    if (ck->prompt_s <= 0) ck->prompt_s = 1.0;
    {
        unsigned char *z = (unsigned char *)ck->rk;
        for (i = 0; i < sizeof ck->rk; i++) z[i] = 0;
    }
    if (!ck->tally) ck->tally = &ck->own;
    if (ck->tally == &ck->own)             /* a tally of the caller's is the caller's */
        ck->own.passed = ck->own.failed = ck->own.unavailable = 0;
    before = *ck->tally;
    if (ck->nranks < 1 || !ck->launch || !ck->arena ||
        (!ck->private_arena && ck->nranks > COLL_PORT_CHECK_MAX_RANKS)) {
        COLL_TEST_PRINTF("FAIL %s: nranks, launch or arena missing (or nranks > %d)\n",
                         ck->name, COLL_PORT_CHECK_MAX_RANKS);
        COLL_TEST__INC(coll_test_failed);
        return 1;
    }
    rc = ck->launch(ck->launch_user, ck->nranks, coll_port_check__body, ck);
    passed = ck->tally->passed - before.passed;
    failed = ck->tally->failed - before.failed;
    if (rc != 0 && failed == 0) {          /* a rank that died without a word */
        if (!ck->quiet) COLL_TEST_PRINTF("FAIL %s: the launcher says %d ranks failed\n", ck->name, rc);
        failed = 1;
    }
    if (passed == 0 && failed == 0) {
        COLL_TEST_PRINTF("FAIL %s: nothing was checked\n", ck->name);
        failed = 1;
    }
    coll_test_passed += passed;
    coll_test_failed += failed;
    coll_test_na += ck->tally->unavailable - before.unavailable;
    return failed;
}

/* coll_port_check_run, then the closing line "name: N passed, N failed".
   Returns 0 if all passed (for main to return). */
static COLL_PORT_CHECK__UNUSED int coll_port_check_test(coll_port_check *ck)
{
    coll_port_check_run(ck);
    return coll_test_summary(ck->name);
}

#endif /* COLL_PORT_CHECK_H */
