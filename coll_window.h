/* coll_window.h - collectives over windows: ranks that load and store each
                   other's buffers. C99, no heap; include after or instead of coll.h

   USAGE
     Where coll.h's implementation is compiled (COLL_IMPLEMENTATION defined),
     include this header too and its code comes with it:
         #define COLL_IMPLEMENTATION
         #include "coll_window.h"          (includes coll.h)
     Everywhere else include "coll_window.h" alone. Then, on a communicator
     whose port offers windows (coll_port.window_post, window_sync,
     window_peer: the threads port does, the smp mailbox over the region
     coll_smp_mailbox_set_window names, the shm port built with
     COLL_SHM_HEAP_BYTES > 0 over buffers from coll_shm_alloc):
         coll_window_allreduce(&c, src, dst, count, COLL_FLOAT32, COLL_SUM, COLL_WINDOW_AUTO);
     On a port without them every call is coll.h's own (COLL_ALGO_AUTO).
     coll.h's own blocking calls go over windows too where they leave the
     algorithm to AUTO (coll_allreduce(&c, ..., COLL_ALGO_AUTO) runs as
     coll_window_allreduce), but for a call below COLL_WINDOW_DIRECT_MIN
     bytes on a port whose records cannot carry its input (two syncs lose
     to the engine's one hand-off; it goes by messages): coll_init installs this header's layer on
     every communicator where this header brought the implementation in
     (>>win-auto; coll_window_auto(&c, 0) takes it off). A forced
     algorithm, the non-blocking and persistent calls, and the kinds
     without a window form below always run coll.h's engine.
     Over the shm port, processes share only the segment's heap:
         float *v = coll_shm_alloc((coll_shm *)port->ctx, n * sizeof *v);
         coll_window_allreduce(&c, v, v, n, COLL_FLOAT32, COLL_SUM, COLL_WINDOW_AUTO);
     A buffer outside it (the stack, malloc) makes that rank's record
     declined, and the call - on every rank - is coll.h's own.

   THE IDEA
     Where ranks see each other's memory, a collective needs no messages:
     each rank reads what it needs straight from the others' buffers. The
     least any all-reduce can move is every input byte read once and every
     output byte written once; the two-shot form below comes within a
     copy of that. Every call runs the same three moves:
       1. POST and SYNC: each rank posts its record (its src, its dst and
          the call's signature, or its refusal) and meets the others at
          the port's barrier;
       2. CHECK: each rank reads every rank's record and checks that all
          are the same call on this communicator, that none refuses and
          that every buffer the call reads or writes is there. Every rank
          reads the same records, so every rank decides alike: all go on,
          or all return the same error (COLL_ERR_MISMATCH, COLL_ERR_PEER
          where the refusal was another rank's, COLL_ERR_IO for a record
          the port could not give, COLL_ERR_CORRUPT for one short of what
          the call touches) - or, where a rank's port declined its record
          (no buffers, no bytes: memory it cannot share) and the call
          touches bytes there, all meet once more and run coll.h's own
          call by messages instead;
       3. MOVE and SYNC: each rank does its share of loads and stores, then
          meets the others once more, so that nobody returns - and lets
          its caller touch its buffers - while another rank still reads or
          writes them (the two-shot forms meet once more between phases).
          A small call on a port that carries its input in the records
          reads those copies, never a buffer, and skips this last sync
          (>>win-inline).
     The syncs are the port's, bounded by its deadline: a rank that never
     comes ends the call in COLL_ERR_TIMEOUT on every other rank (the port
     is then aborted, and the communicator is broken, as for a message).
     The same ranks fold the same inputs in rank order 0, 1, ..., p-1 with
     coll.h's kernels: every rank ends with the same bits, NaN and -0 as in
     coll.h, and the one-shot and two-shot forms agree bitwise.

   COSTS  (p ranks, n bytes a rank's vector, s one sync: a barrier of p)
     allreduce, one-shot  every rank folds all p inputs into its dst:
                          2 s; reads p n, writes n. Small calls.
     allreduce, two-shot  rank r folds block r (n/p) of every input into
                          its dst, then copies the other p-1 blocks from
                          their owners: 3 s; reads 2n - n/p, writes n.
     reduce_scatter       rank r folds block r of every input: 2 s
     allgather            rank r copies every rank's block: 2 s; n p
     broadcast            every rank copies the root's buffer: 2 s; n
     reduce               rank r folds block r of every input into the
                          root's dst: 2 s; n (every rank its share)
     alltoall             rank r copies block r of every rank's src: 2 s;
                          in place, each pair swaps its two blocks (the
                          lower rank of the pair does it)
     barrier              2 s
     inline, any of them  every input at most COLL_WINDOW_INLINE bytes, on
                          a port with coll_port.window_inline: 1 s, and
                          the copy of the input into the record (barrier 1 s)
   COLL_WINDOW_AUTO takes the one-shot all-reduce when no rank works in
   place and the call is at most COLL_WINDOW_ONE_SHOT_MAX bytes or the
   ranks are two (each rank then loads n of its peer's bytes either way).

   LIMITS  The communicator must be one whose port is the caller's own:
   coll.h's layers (sub-communicators, the max_bytes pieces, the observer)
   pass no windows on, so over them every call is coll.h's own. Buffers
   are host memory (no memops). The in-place forms stage what a rank
   folds into its own input through the communicator's scratch, a
   segment at a time.
*/
#ifndef COLL_WINDOW_H
#define COLL_WINDOW_H

#if defined(COLL_IMPLEMENTATION) && !defined(COLL__DIRECT_LAYER)
/* coll_init installs the window layer on every communicator (>>win-auto) */
struct coll_comm;
struct coll_args;
static int coll__win_auto(struct coll_comm *c, const struct coll_args *a);
#define COLL__DIRECT_LAYER coll__win_auto
#endif
#include "coll.h"

#ifndef COLL_WINDOW_DIRECT_MIN
#define COLL_WINDOW_DIRECT_MIN 256       /* bytes: coll.h's AUTO calls over windows from it */
#endif
#ifndef COLL_WINDOW_ONE_SHOT_MAX
#define COLL_WINDOW_ONE_SHOT_MAX 16384   /* bytes: AUTO's one-shot all-reduce up to it */
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum coll_window_algo {
    COLL_WINDOW_AUTO = 0,
    COLL_WINDOW_ONE_SHOT = 1,          /* all-reduce: every rank reads every input */
    COLL_WINDOW_TWO_SHOT = 2           /* all-reduce: a block each, then the copies */
} coll_window_algo;

/* 1 if c's port offers windows (the calls below then use them). */
COLL_API int coll_window_ok(const coll_comm *c);
/* on 1 (coll_init's default where this header brings the implementation
   in): coll.h's blocking calls with COLL_ALGO_AUTO go over windows where
   the collective has a window form; 0: coll.h's engine, by messages. The
   same on every rank. */
COLL_API int coll_window_auto(coll_comm *c, int on);
/* The arguments are coll.h's (coll_allreduce and the others), in place
   as there. */
COLL_API int coll_window_allreduce(coll_comm *c, const void *src, void *dst, size_t count,
                                   coll_dtype dtype, coll_op op, coll_window_algo algo);
COLL_API int coll_window_reduce_scatter(coll_comm *c, const void *src, void *dst, size_t count,
                                        coll_dtype dtype, coll_op op);
COLL_API int coll_window_allgather(coll_comm *c, const void *src, void *dst, size_t count,
                                   coll_dtype dtype);
COLL_API int coll_window_broadcast(coll_comm *c, void *buf, size_t count, coll_dtype dtype, int root);
COLL_API int coll_window_reduce(coll_comm *c, const void *src, void *dst, size_t count,
                                coll_dtype dtype, coll_op op, int root);
COLL_API int coll_window_alltoall(coll_comm *c, const void *src, void *dst, size_t count,
                                  coll_dtype dtype);
COLL_API int coll_window_barrier(coll_comm *c);

#ifdef __cplusplus
}
#endif

#endif /* COLL_WINDOW_H */

/* ========================================================================== */
/*                              IMPLEMENTATION                                */
/* ========================================================================== */
#if defined(COLL_IMPLEMENTATION) && !defined(COLL__WINDOW_IMPLEMENTED)
#define COLL__WINDOW_IMPLEMENTED
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#endif

#ifndef COLL_WINDOW_MAX_RANKS
#define COLL_WINDOW_MAX_RANKS 256        /* the records one call reads       */
#endif
#define COLL__WIN_REFUSED ((uint64_t)1 << 63)   /* sig[3]: this rank refuses  */
#define COLL__WIN_INPLACE ((uint64_t)1 << 62)   /* sig[3]: it works in place  */
#define COLL__WIN_MESSAGES 1    /* check's verdict: coll.h's own call instead */

/* ---- >>win-call  one call: its plan, its records, its end ---------------- */

/* A call over windows: coll.h's plan of it, and every rank's record. */
typedef struct coll__win {
    coll_comm *c;
    coll__plan pl;
    size_t es;                   /* element size                             */
    size_t in_n, out_n;          /* elements of src and dst this rank touches */
    coll_args a;
    int algo;                    /* the all-reduce's form, decided in check  */
    int inl;                     /* 1: inline (>>win-inline), one sync       */
    const coll_window_rec *r[COLL_WINDOW_MAX_RANKS];   /* (last: set in check) */
} coll__win;

COLL_API int coll_window_ok(const coll_comm *c)
{
    return c && c->magic == COLL__MAGIC && c->port.window_post && c->port.window_sync &&
           c->port.window_peer && !c->mem && c->nranks <= COLL_WINDOW_MAX_RANKS;
}

/* The call's signature: what every rank must agree on, this communicator
   and this call's number among its calls included. */
static void coll__win_sig(const coll__win *w, uint64_t *sig)
{
    const coll_args *a = &w->a;
    sig[0] = (uint64_t)a->kind | (uint64_t)a->dtype << 8 | (uint64_t)a->op << 16 |
             (uint64_t)(uint32_t)a->root << 32;
    sig[1] = (uint64_t)a->count;
    sig[2] = (uint64_t)w->c->context | (uint64_t)w->c->group_id << 32;
    sig[3] = (uint64_t)w->c->seq | (uint64_t)(uint32_t)a->algo << 32;
}

/* The elements of src and dst rank r touches in this call (the plan's
   extents, as rank r sees them; a non-root of reduce uses no workspace). */
static void coll__win_extents(coll__win *w, int r, size_t *in_n, size_t *out_n)
{
    int me = w->pl.rank;
    w->pl.rank = r;
    coll__extents(&w->pl, in_n, out_n);
    w->pl.rank = me;
    if (w->a.kind == COLL_REDUCE && r != w->a.root) *out_n = 0;
}

/* The call fails with rc: said in the communicator's reason; a failure of
   the port (its sync) aborts the port and breaks the communicator, as a
   transport error does. */
static int coll__win_fail(coll__win *w, int rc, const char *why, int port)
{
    coll_comm *c = w->c;
    c->why = why;
    if (port) {
        if (c->port.abort) c->port.abort(c->port.ctx, rc);
        if (!c->broken) c->broken = rc;
    }
    return rc;
}

/* ---- >>win-inline  small calls: the input rides in the record ----------
   On a port with coll_port.window_inline, a call whose every input fits
   in a record (COLL_WINDOW_INLINE bytes) posts a copy of it there. Its
   peers then read the copies, never its buffers, and each rank writes
   only its own dst: the moves need no sync after them, so the call is a
   post, one sync and the moves (the last sync of >>win-calls goes).
   The port keeps each rank's last two posts apart, and a rank can post
   over the one of call k only in call k + 2, past call k + 1's sync,
   which every rank enters only once it has left call k. The reduce then
   folds at the root alone, and the all-to-all in place copies too (the
   copies are its inputs). Cost: 1 s and the copy of the input; buffers
   anywhere (no record is declined), in place without scratch. */

/* Does the call run inline? A port that carries records' inputs, not a
   forced two-shot, every rank's input at most COLL_WINDOW_INLINE bytes
   (es: an element's bytes, as the plan has it): from the arguments alone,
   the same on every rank (ranks that called different collectives see so
   in the check, and then all sync twice). */
static int coll__win_fits(const coll_comm *c, const coll_args *a, size_t es)
{
    size_t k = a->kind == COLL_REDUCE_SCATTER || a->kind == COLL_ALLTOALL ? (size_t)c->nranks : 1;
    if (!c->port.window_inline || (int)a->algo == (int)COLL_WINDOW_TWO_SHOT) return 0;
    return a->count <= (size_t)COLL_WINDOW_INLINE && es <= (size_t)COLL_WINDOW_INLINE &&
           a->count * es * k <= (size_t)COLL_WINDOW_INLINE;      /* (no product that wraps) */
}

/* The bytes of rank i's input: its src as the call reads it (p blocks
   for the reduce-scatter and the all-to-all), the root's buffer for a
   broadcast, none for the barrier. */
static size_t coll__win_input(const coll__win *w, int i)
{
    coll_kind k = w->a.kind;
    size_t b = w->pl.count * w->es;
    if (k == COLL_BROADCAST) return i == w->a.root ? b : 0;
    if (k == COLL_REDUCE_SCATTER || k == COLL_ALLTOALL) return b * (size_t)w->c->nranks;
    return k == COLL_BARRIER ? 0 : b;
}

/* This rank's input copied into its record (never past it: a record
   carrying none fails the check on every rank). */
static void coll__win_carry(coll__win *w, coll_window_rec *me)
{
    const void *in = w->a.kind == COLL_BROADCAST ? (const void *)w->a.dst : w->a.src;
    me->inl_bytes = coll__win_input(w, w->c->rank);
    if (me->inl_bytes > sizeof me->inl) me->inl_bytes = 0;
    if (me->inl_bytes) COLL_MEMCPY(me->inl, in, me->inl_bytes);
}

/* Every record carries exactly its rank's whole input (the port's copy
   is distrusted as any record is; the input fits, so inl_bytes does). */
static int coll__win_carried(coll__win *w)
{
    int i;
    for (i = 0; i < w->c->nranks; i++)
        if (w->r[i]->inl_bytes != coll__win_input(w, i))
            return coll__win_fail(w, COLL_ERR_CORRUPT, COLL__WHY("window: a rank's record does not carry its input"), 0);
    w->algo = COLL_WINDOW_ONE_SHOT;
    return COLL_OK;
}

/* Move 1: this rank's record (its refusal, rc, if any), then the sync. */
static int coll__win_post(coll__win *w, int refused)
{
    coll_comm *c = w->c;
    coll_window_rec me;
    int rc;
    me.src = w->a.src;
    me.dst = w->a.dst;
    me.src_bytes = refused ? 0 : w->in_n * w->es;
    me.dst_bytes = refused ? 0 : w->out_n * w->es;
    coll__win_sig(w, me.sig);
    me.inl_bytes = 0;
    if (w->inl && !refused) coll__win_carry(w, &me);
    if (refused) me.sig[3] |= COLL__WIN_REFUSED;
    if (w->pl.inplace) me.sig[3] |= COLL__WIN_INPLACE;
    rc = c->port.window_post(c->port.ctx, &me);
    if (rc == COLL_OK) rc = c->port.window_sync(c->port.ctx);
    return rc == COLL_OK ? rc : coll__win_fail(w, rc > 0 ? COLL_ERR_IO : rc, COLL__WHY("window: the sync failed"), 1);
}

/* A sync after the moves; its failure is the call's. */
static int coll__win_sync(coll__win *w, int rc)
{
    coll_comm *c = w->c;
    int s = c->port.window_sync(c->port.ctx);
    if (s != COLL_OK) return coll__win_fail(w, s > 0 ? COLL_ERR_IO : s, COLL__WHY("window: the sync failed"), 1);
    return rc;
}

/* Does rank i's record cover what the call touches there? 1 yes; 0 no
   (short, or a buffer missing); 2 declined (no buffers, no bytes: its
   port cannot share them) where the call touches bytes. */
static int coll__win_covers(coll__win *w, int i)
{
    const coll_window_rec *r = w->r[i];
    size_t in_n, out_n;
    coll__win_extents(w, i, &in_n, &out_n);
    if ((in_n || out_n) && !r->src && !r->dst && !r->src_bytes && !r->dst_bytes)
        return 2;
    return r->src_bytes >= in_n * w->es && r->dst_bytes >= out_n * w->es &&
           (!in_n || r->src) && (!out_n || r->dst);
}

/* AUTO's all-reduce: one-shot where no rank works in place and either
   the call is small or there are two ranks. Each rank loads (p - 1) n of
   its peers' bytes one-shot and 2 (p - 1) n / p two-shot: the same at
   p = 2, where one-shot saves a sync and the copy of the other half. */
static int coll__win_form(const coll__win *w, int inplace)
{
    if (inplace) return COLL_WINDOW_TWO_SHOT;
    return w->c->nranks == 2 || w->pl.count * w->es <= COLL_WINDOW_ONE_SHOT_MAX ? COLL_WINDOW_ONE_SHOT
                                                                                : COLL_WINDOW_TWO_SHOT;
}

/* Move 2: every record read and checked, the same way on every rank: the
   same call, no refusal, every record covering what the call touches (a
   declined one: COLL__WIN_MESSAGES, every rank then runs coll.h's call). */
static int coll__win_check(coll__win *w, int own)
{
    coll_comm *c = w->c;
    uint64_t sig[4];
    int i, k, peer_refused = 0, inplace = 0, declined = 0, cov;
    coll__win_sig(w, sig);
    for (i = 0; i < c->nranks; i++) {
        const coll_window_rec *r = c->port.window_peer(c->port.ctx, i);
        w->r[i] = r;
        if (!r) return coll__win_fail(w, COLL_ERR_IO, COLL__WHY("window: a rank's record is missing"), 0);
        for (k = 0; k < 3; k++)
            if (r->sig[k] != sig[k]) return coll__win_fail(w, COLL_ERR_MISMATCH, COLL__WHY("window: the ranks called different collectives"), 0);
        if ((r->sig[3] & ~(COLL__WIN_REFUSED | COLL__WIN_INPLACE)) != sig[3])
            return coll__win_fail(w, COLL_ERR_MISMATCH, COLL__WHY("window: the ranks called different collectives"), 0);
        if (r->sig[3] & COLL__WIN_REFUSED) peer_refused = 1;
        if (r->sig[3] & COLL__WIN_INPLACE) inplace = 1;
    }
    if (own) return own;
    if (peer_refused) return coll__win_fail(w, COLL_ERR_PEER, COLL__WHY("window: another rank refused the call"), 0);
    if (w->inl) return coll__win_carried(w);       /* >>win-inline */
    for (i = 0; i < c->nranks; i++) {              /* every record covers what the call touches */
        if ((cov = coll__win_covers(w, i)) == 0)
            return coll__win_fail(w, COLL_ERR_CORRUPT, COLL__WHY("window: a rank's record does not cover the call"), 0);
        if (cov > 1) declined = 1;
    }
    if (declined) return COLL__WIN_MESSAGES;
    w->algo = (int)w->a.algo == (int)COLL_WINDOW_AUTO ? coll__win_form(w, inplace) : (int)w->a.algo;
    if (inplace && w->algo == COLL_WINDOW_ONE_SHOT) w->algo = COLL_WINDOW_TWO_SHOT;   /* (a forced one-shot too) */
    return COLL_OK;
}

/* The call's arguments checked as coll.h checks them (the plan), and the
   buffers this rank touches present. */
static int coll__win_plan(coll__win *w)
{
    const char *why = "";
    size_t in_n, out_n;
    int rc;
    coll_args a = w->a;
    a.algo = COLL_ALGO_AUTO;
    rc = coll__plan_args(w->c, &a, &w->pl, &w->es, &why);
    if (rc != COLL_OK) { w->c->why = why; return rc; }
    coll__win_extents(w, w->c->rank, &in_n, &out_n);
    w->in_n = in_n; w->out_n = out_n;
    w->inl = coll__win_fits(w->c, &w->a, w->es);
    if ((in_n && !w->a.src) || (out_n && !w->a.dst)) {
        w->c->why = COLL__WHY("window: a buffer the call needs is NULL");
        return COLL_ERR_INVAL;
    }
    if (w->pl.inplace && !w->c->segment && !w->inl) {
        w->c->why = COLL__WHY("window: in place needs scratch to stage through");
        return COLL_ERR_NOSPC;
    }
    return COLL_OK;
}

/* ---- >>win-moves  the loads and stores ----------------------------------- */

/* The moves are a pure function, as coll.h's schedules are: (the call's
   shape, rank r, phase k, move i) -> what rank r loads or stores in its
   i-th move of phase k: which rank's buffer it reads (src or dst), the
   bytes there, where they land (rank r's dst or the root's) and whether
   they are copied or folded. No state, no addresses: coll__win_exec runs
   them over the records' buffers, tools/window_trace.c prints, checks and
   draws them. The phases are parted by syncs, so phase k + 1 reads what
   phase k wrote; inside a phase no rank reads bytes another rank writes.
   Costs: p ranks, n bytes a rank's vector (b a block of count elements),
   s one sync, the post's sync and the last one included (>>win-calls). */

/* What the moves depend on: the call's shape, never its buffers. */
typedef struct coll__win_shape {
    coll_kind kind;
    int form;                    /* all-reduce: COLL_WINDOW_ONE_SHOT or _TWO_SHOT */
    int p, root;
    int inplace;                 /* the rank works in place (the API's layout) */
    int inl;                     /* the inputs are the records' (>>win-inline) */
    size_t count, es;            /* the plan's count; an element's bytes       */
} coll__win_shape;

enum { COLL__WIN_COPY, COLL__WIN_FOLD, COLL__WIN_SWAP };

/* One move. COPY: len bytes at byte off of rank from's src (from_dst: its
   dst) into rank to's dst at byte at. FOLD: one term of a fold, its terms
   consecutive moves in rank order, term 0 first: the place they land
   ends as x0 (+) x1 (+) ... (+) x(terms-1), then avg's division. SWAP:
   rank from's dst bytes and rank to's exchanged. */
typedef struct coll__win_mv {
    int how;                     /* COLL__WIN_COPY, _FOLD or _SWAP            */
    int from, from_dst;          /* the rank read; 1: its dst, 0: its src     */
    size_t off, len;             /* bytes there                               */
    int to;                      /* the rank whose dst it lands in            */
    size_t at;                   /* byte offset there                         */
    int term, terms;             /* FOLD: this term's place in the rank order */
} coll__win_mv;

/* Fills *mv; 1, a move. */
static int coll__win_mv_put(coll__win_mv *mv, int how, int from, int from_dst, size_t off, size_t len,
                            int to, size_t at, int term, int terms)
{
    mv->how = how; mv->from = from; mv->from_dst = from_dst; mv->off = off; mv->len = len;
    mv->to = to; mv->at = at; mv->term = term; mv->terms = terms;
    return 1;
}

/* Rank r's block of n elements split p ways (the first n % p one longer). */
static void coll__win_block(size_t n, int p, int r, size_t *off, size_t *len)
{
    size_t q = n / (size_t)p, e = n % (size_t)p, rr = (size_t)r;
    *off = rr * q + (rr < e ? rr : e);
    *len = q + (rr < e ? 1 : 0);
}

/* All-reduce, one-shot: rank r folds every input, whole, into its dst.
       p = 4, every r:  dst = x0 + x1 + x2 + x3
   One phase of p terms; 2 s; reads p n, writes n. Small calls. */
static int coll__win_mv_one_shot(const coll__win_shape *s, int r, int k, int i, coll__win_mv *mv)
{
    if (k != 0 || i >= s->p) return 0;
    return coll__win_mv_put(mv, COLL__WIN_FOLD, i, 0, 0, s->count * s->es, r, 0, i, s->p);
}

/* All-reduce, two-shot: rank r folds block r (count/p elements, the first
   count % p one longer) of every input into its dst; a sync; then copies
   each other block from its owner's dst.
       p = 4, r1:  phase 0  dst[b1] = x0[b1] + x1[b1] + x2[b1] + x3[b1]
                   phase 1  dst[bq] = rq.dst[bq]  for q = 0, 2, 3
   3 s; reads 2n - n/p, writes n. */
static int coll__win_mv_two_shot(const coll__win_shape *s, int r, int k, int i, coll__win_mv *mv)
{
    size_t off, len;
    int q = k == 0 ? r : (i < r ? i : i + 1);
    if (k > 1 || i >= s->p - k) return 0;
    coll__win_block(s->count, s->p, q, &off, &len);
    off *= s->es; len *= s->es;
    if (k == 0) return coll__win_mv_put(mv, COLL__WIN_FOLD, i, 0, off, len, r, off, i, s->p);
    return coll__win_mv_put(mv, COLL__WIN_COPY, q, 1, off, len, r, off, 0, 0);
}

/* Reduce-scatter: rank r folds block r of every input into its dst.
       p = 4, r1:  dst = x0[b1] + x1[b1] + x2[b1] + x3[b1]
   2 s; reads p b, writes b. */
static int coll__win_mv_reduce_scatter(const coll__win_shape *s, int r, int k, int i, coll__win_mv *mv)
{
    size_t b = s->count * s->es;
    if (k != 0 || i >= s->p) return 0;
    return coll__win_mv_put(mv, COLL__WIN_FOLD, i, 0, (size_t)r * b, b, r, 0, i, s->p);
}

/* All-gather: rank r copies every rank's src into that rank's block of its
   dst (in place its own block is there already).
       p = 4, r1:  dst[bq] = rq.src  for q = 0 .. 3
   2 s; reads p b ((p - 1) b in place), writes as much. */
static int coll__win_mv_allgather(const coll__win_shape *s, int r, int k, int i, coll__win_mv *mv)
{
    size_t b = s->count * s->es;
    int q = s->inplace && i >= r ? i + 1 : i;
    if (k != 0 || q >= s->p) return 0;
    return coll__win_mv_put(mv, COLL__WIN_COPY, q, 0, 0, b, r, (size_t)q * b, 0, 0);
}

/* Broadcast: every rank but the root copies the root's buffer (its dst).
       p = 4, root 0, r1:  dst = r0.dst
   2 s; reads n, writes n (the root none). */
static int coll__win_mv_broadcast(const coll__win_shape *s, int r, int k, int i, coll__win_mv *mv)
{
    if (k != 0 || i != 0 || r == s->root) return 0;
    return coll__win_mv_put(mv, COLL__WIN_COPY, s->root, 1, 0, s->count * s->es, r, 0, 0, 0);
}

/* Reduce: rank r folds block r of every input into the root's dst, so
   that every rank does its share of the work.
       p = 4, root 0, r1:  r0.dst[b1] = x0[b1] + x1[b1] + x2[b1] + x3[b1]
   2 s; reads n, writes n/p (into the root's dst). Inline, nobody writes
   another rank's dst: the root folds every input whole, 1 s. */
static int coll__win_mv_reduce(const coll__win_shape *s, int r, int k, int i, coll__win_mv *mv)
{
    size_t off, len;
    if (k != 0 || i >= s->p || (s->inl && r != s->root)) return 0;
    if (s->inl) return coll__win_mv_put(mv, COLL__WIN_FOLD, i, 0, 0, s->count * s->es, r, 0, i, s->p);
    coll__win_block(s->count, s->p, r, &off, &len);
    off *= s->es; len *= s->es;
    return coll__win_mv_put(mv, COLL__WIN_FOLD, i, 0, off, len, s->root, off, i, s->p);
}

/* All-to-all: rank r copies block r of every rank's src into block q of
   its dst; in place, the lower rank of each pair swaps the pair's two
   blocks (rank r's dst block q with rank q's dst block r, q > r).
       p = 4, r1:  dst[bq] = rq.src[b1]  for q = 0 .. 3
       in place:   r1.dst[b2] <-> r2.dst[b1], r1.dst[b3] <-> r3.dst[b1]
   2 s; reads p b, writes p b; in place rank r swaps p - 1 - r pairs
   (inline, it copies: the records hold the inputs). */
static int coll__win_mv_alltoall(const coll__win_shape *s, int r, int k, int i, coll__win_mv *mv)
{
    size_t b = s->count * s->es;
    if (k != 0) return 0;
    if (s->inplace && !s->inl) {
        int q = r + 1 + i;
        if (q >= s->p) return 0;
        return coll__win_mv_put(mv, COLL__WIN_SWAP, q, 1, (size_t)r * b, b, r, (size_t)q * b, 0, 0);
    }
    if (i >= s->p) return 0;
    return coll__win_mv_put(mv, COLL__WIN_COPY, i, 0, (size_t)r * b, b, r, (size_t)i * b, 0, 0);
}

/* The phases of a kind's moves: two for the two-shot all-reduce, else one
   (the barrier's empty: its syncs alone, 2 s). */
static int coll__win_phases(const coll__win_shape *s)
{
    return s->kind == COLL_ALLREDUCE && s->form == COLL_WINDOW_TWO_SHOT ? 2 : 1;
}

/* Rank r's i-th move of phase k: 1 and *mv, or 0 past the last. */
static int coll__win_move(const coll__win_shape *s, int r, int k, int i, coll__win_mv *mv)
{
    if (r < 0 || r >= s->p || k < 0 || i < 0) return 0;
    switch (s->kind) {
    case COLL_ALLREDUCE:
        return s->form == COLL_WINDOW_TWO_SHOT ? coll__win_mv_two_shot(s, r, k, i, mv) : coll__win_mv_one_shot(s, r, k, i, mv);
    case COLL_REDUCE_SCATTER: return coll__win_mv_reduce_scatter(s, r, k, i, mv);
    case COLL_ALLGATHER:      return coll__win_mv_allgather(s, r, k, i, mv);
    case COLL_BROADCAST:      return coll__win_mv_broadcast(s, r, k, i, mv);
    case COLL_REDUCE:         return coll__win_mv_reduce(s, r, k, i, mv);
    case COLL_ALLTOALL:       return coll__win_mv_alltoall(s, r, k, i, mv);
    default:                  return 0;
    }
}

/* The shape of the call w runs, as this rank sees it. */
static void coll__win_shape_of(const coll__win *w, coll__win_shape *s)
{
    s->kind = w->a.kind; s->form = w->algo; s->p = w->c->nranks; s->root = w->a.root;
    s->inplace = w->pl.inplace; s->inl = w->inl; s->count = w->pl.count; s->es = w->es;
}

/* Where move m reads (inline: the copy in the record); where it lands
   (this rank's own dst as its caller gave it, another rank's as its
   record says). */
static const unsigned char *coll__win_src(const coll__win *w, const coll__win_mv *m)
{
    const coll_window_rec *r = w->r[m->from];
    if (w->inl) return (const unsigned char *)r->inl + m->off;
    return (const unsigned char *)(m->from_dst ? (const void *)r->dst : r->src) + m->off;
}
static unsigned char *coll__win_dst(const coll__win *w, const coll__win_mv *m)
{
    return (unsigned char *)(m->to == w->c->rank ? w->a.dst : w->r[m->to]->dst) + m->at;
}

/* The fold whose term 0 is move i of phase k (m0): its terms folded in
   rank order into where it lands, out = x0 (+) x1 (+) ... with coll.h's
   kernels, then avg's division. Staged - a segment at a time through
   scratch - where out is also one of the terms' inputs (in place), so
   that no input is overwritten before it is folded. */
static int coll__win_fold(coll__win *w, const coll__win_shape *s, int k, int i, const coll__win_mv *m0)
{
    coll_comm *c = w->c;
    const coll_args *a = &w->a;
    coll__win_mv m;
    unsigned char *out = coll__win_dst(w, m0), *o;
    const unsigned char *x0;
    size_t es = s->es, n = m0->len / es, cut = n, at, len;
    int t, staged = 0, rc = COLL_OK;
    for (t = 0; t < m0->terms && !w->inl; t++)     /* (inline: the inputs are copies) */
        if (coll__win_move(s, c->rank, k, i + t, &m) && coll__overlap(out, m0->len, coll__win_src(w, &m), m0->len))
            staged = 1;
    if (staged) cut = c->segment / es ? c->segment / es : 1;
    for (at = 0; at < n && rc == COLL_OK; at += len) {
        len = n - at < cut ? n - at : cut;
        o = staged ? c->scratch : out + at * es;
        coll__win_move(s, c->rank, k, i, &m);
        x0 = coll__win_src(w, &m) + at * es;
        if (m0->terms == 1 && o != x0) COLL_MEMCPY(o, x0, len * es);
        for (t = 1; t < m0->terms && rc == COLL_OK; t++) {
            coll__win_move(s, c->rank, k, i + t, &m);
            rc = coll__reduce(c, &c->user, o, t == 1 ? x0 : o, coll__win_src(w, &m) + at * es, len, a->dtype, a->op);
        }
        if (rc == COLL_OK && a->op == COLL_AVG) rc = coll__scale(c, o, len, a->dtype, (size_t)m0->terms);
        if (staged) COLL_MEMCPY(out + at * es, o, len * es);
    }
    return rc;
}

/* This rank's moves of phase k, in order: a copy (none onto itself), a
   fold (coll__win_fold, its terms), a swap a segment at a time through
   scratch. */
static int coll__win_phase(coll__win *w, const coll__win_shape *s, int k)
{
    coll_comm *c = w->c;
    coll__win_mv m;
    size_t at, len;
    int i, rc = COLL_OK;
    for (i = 0; rc == COLL_OK && coll__win_move(s, c->rank, k, i, &m); i++) {
        unsigned char *d, *y;
        if (m.how == COLL__WIN_FOLD) {
            if (m.len) rc = coll__win_fold(w, s, k, i, &m);
            i += m.terms - 1;
            continue;
        }
        if (!m.len) continue;
        d = coll__win_dst(w, &m);
        if (m.how == COLL__WIN_COPY) {
            if (d != coll__win_src(w, &m)) COLL_MEMCPY(d, coll__win_src(w, &m), m.len);
            continue;
        }
        y = (unsigned char *)w->r[m.from]->dst + m.off;
        for (at = 0; at < m.len; at += len) {
            len = m.len - at < c->segment ? m.len - at : c->segment;
            COLL_MEMCPY(c->scratch, d + at, len);
            COLL_MEMCPY(d + at, y + at, len);
            COLL_MEMCPY(y + at, c->scratch, len);
        }
    }
    return rc;
}

/* The kind's moves, phase by phase, a sync between two phases (a rank
   whose phase failed still meets the others there, then ends the call). */
static int coll__win_exec(coll__win *w)
{
    coll__win_shape s;
    int k, rc = COLL_OK;
    coll__win_shape_of(w, &s);
    for (k = 0; k < coll__win_phases(&s); k++) {
        if (k && (rc = coll__win_sync(w, rc)) != COLL_OK) return rc;
        rc = coll__win_phase(w, &s, k);
    }
    return rc;
}

/* ---- >>win-calls  the collectives ----------------------------------------- */

/* coll.h's own call for a, by messages (its AUTO algorithm). */
static int coll__win_messages(coll_comm *c, const coll_args *a)
{
    coll_args b = *a;
    b.algo = COLL_ALGO_AUTO;
    return coll__run_own(c, &b);
}

/* The kind's loads and stores, once every record is checked. */
static int coll__win_moves(coll__win *w)
{
    return coll__win_exec(w);                      /* >>win-moves */
}

/* Runs one call: plan, post and sync, check, the kind's moves, the last
   sync. Without windows, coll.h's own call; where a rank's record is
   declined, a sync (every rank has read every record before any posts
   again) and then coll.h's own call, on every rank alike. Lenient (the
   direct layer's calls): a rank that cannot run the call over windows
   for want of scratch declines its record instead of refusing the call. */
static int coll__win_run(coll_comm *c, const coll_args *a, int lenient)
{
    coll__win w;
    int own, rc;
    if (!c || c->magic != COLL__MAGIC) return COLL_ERR_INVAL;
    if (!coll_window_ok(c)) return coll__win_messages(c, a);
    if (c->broken) return c->broken;
    COLL_MEMSET(&w, 0, offsetof(coll__win, r));   /* (r: every entry set before it is read) */
    w.c = c;
    w.a = *a;
    own = coll__win_plan(&w);
    if (lenient && own == COLL_ERR_NOSPC) {     /* declined: src, dst NULL, no bytes */
        w.a.src = 0;
        w.a.dst = 0;
        w.in_n = w.out_n = 0;
        own = COLL_OK;
    }
    c->seq++;
    if ((rc = coll__win_post(&w, own != COLL_OK)) != COLL_OK) return rc;
    rc = coll__win_check(&w, own);
    if (rc == COLL__WIN_MESSAGES) {
        rc = coll__win_sync(&w, COLL_OK);
        return rc == COLL_OK ? coll__win_messages(c, a) : rc;
    }
    if (rc == COLL_OK && w.inl) return coll__win_moves(&w);   /* >>win-inline: no last sync */
    if (rc == COLL_OK) rc = coll__win_moves(&w);
    return coll__win_sync(&w, rc);
}

static int coll__win_call(coll_comm *c, coll_kind k, const void *src, void *dst, size_t count,
                          coll_dtype t, coll_op op, int root, int algo)
{
    coll_args a;
    COLL_MEMSET(&a, 0, sizeof a);
    a.kind = k; a.src = src; a.dst = dst; a.count = count; a.dtype = t; a.op = op; a.root = root;
    a.algo = (coll_algo)algo;
    return coll__win_run(c, &a, 0);
}

COLL_API int coll_window_allreduce(coll_comm *c, const void *src, void *dst, size_t count,
                                   coll_dtype dtype, coll_op op, coll_window_algo algo)
{
    if ((unsigned)algo > (unsigned)COLL_WINDOW_TWO_SHOT) {
        if (c && c->magic == COLL__MAGIC) c->why = COLL__WHY("window: not a coll_window_algo");
        return COLL_ERR_INVAL;
    }
    return coll__win_call(c, COLL_ALLREDUCE, src, dst, count, dtype, op, 0, (int)algo);
}

COLL_API int coll_window_reduce_scatter(coll_comm *c, const void *src, void *dst, size_t count,
                                        coll_dtype dtype, coll_op op)
{
    return coll__win_call(c, COLL_REDUCE_SCATTER, src, dst, count, dtype, op, 0, 0);
}

COLL_API int coll_window_allgather(coll_comm *c, const void *src, void *dst, size_t count, coll_dtype dtype)
{
    return coll__win_call(c, COLL_ALLGATHER, src, dst, count, dtype, COLL_SUM, 0, 0);
}

COLL_API int coll_window_broadcast(coll_comm *c, void *buf, size_t count, coll_dtype dtype, int root)
{
    return coll__win_call(c, COLL_BROADCAST, buf, buf, count, dtype, COLL_SUM, root, 0);
}

COLL_API int coll_window_reduce(coll_comm *c, const void *src, void *dst, size_t count,
                                coll_dtype dtype, coll_op op, int root)
{
    return coll__win_call(c, COLL_REDUCE, src, dst, count, dtype, op, root, 0);
}

COLL_API int coll_window_alltoall(coll_comm *c, const void *src, void *dst, size_t count, coll_dtype dtype)
{
    return coll__win_call(c, COLL_ALLTOALL, src, dst, count, dtype, COLL_SUM, 0, 0);
}

COLL_API int coll_window_barrier(coll_comm *c)
{
    return coll__win_call(c, COLL_BARRIER, 0, 0, 0, COLL_UINT8, COLL_SUM, 0, 0);
}

/* ---- >>win-auto  the direct layer: coll.h's AUTO calls over windows ------
   coll_init installs coll__win_auto as the communicator's direct layer
   where this header brought the implementation in, and coll_run hands it
   every blocking call that leaves the algorithm to AUTO. It takes those
   of the kinds above on a port with windows, with the communicator's own
   operator, no rule of coll_add_rule's for the kind (the rules say what
   AUTO runs) and either an input that rides in the records (>>win-inline:
   one sync) or at least COLL_WINDOW_DIRECT_MIN bytes in the larger
   buffer (elsewhere a window call costs two syncs however small it is,
   where the engine's small all-reduce of two ranks is one hand-off), and
   gives the rest to coll.h's engine unchanged. What it
   decides from is the call's arguments, the same on every rank; a rank
   whose buffers its port cannot share declines its record, and then
   every rank runs coll.h's call by messages (one sync more than that). */
/* Is the call below COLL_WINDOW_DIRECT_MIN bytes in its larger buffer (a
   rank's src or dst)? From its arguments alone, so the same on every rank. */
static int coll__win_small(const coll_comm *c, const coll_args *a)
{
#if COLL_WINDOW_DIRECT_MIN > 0
    size_t es = coll_dtype_size(a->dtype), k = 1;
    if (a->kind == COLL_ALLGATHER || a->kind == COLL_REDUCE_SCATTER || a->kind == COLL_ALLTOALL)
        k = (size_t)c->nranks;
    return a->count < (size_t)COLL_WINDOW_DIRECT_MIN &&     /* (no product that wraps) */
           a->count * es * k < (size_t)COLL_WINDOW_DIRECT_MIN;
#else
    (void)c; (void)a;
    return 0;
#endif
}

static int coll__win_ruled(const coll_comm *c, coll_kind k)
{
    int i;
    for (i = 0; i < c->nrules; i++)
        if (c->rules[i].kind == k) return 1;
    return 0;
}

static int coll__win_auto(coll_comm *c, const coll_args *a)
{
    switch (a->kind) {
    case COLL_ALLREDUCE: case COLL_REDUCE_SCATTER: case COLL_ALLGATHER: case COLL_BROADCAST:
    case COLL_REDUCE: case COLL_ALLTOALL: case COLL_BARRIER:
        if (coll_window_ok(c) && !a->user_op && !a->group && !coll__win_ruled(c, a->kind) &&
            (!coll__win_small(c, a) || coll__win_fits(c, a, coll__esize(c, a))))
            return coll__win_run(c, a, 1);
        break;
    default:
        break;
    }
    return coll__run_own(c, a);
}

COLL_API int coll_window_auto(coll_comm *c, int on)
{
    if (!c || c->magic != COLL__MAGIC) return COLL_ERR_INVAL;
    c->direct = on ? coll__win_auto : 0;
    return COLL_OK;
}

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#endif /* COLL_IMPLEMENTATION */

/* LICENCE: MIT, as coll.h. */
