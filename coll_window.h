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
     algorithm to AUTO (coll_allreduce(&c, ..., COLL_ALGO_AUTO) above runs
     as coll_window_allreduce): coll_init installs this header's layer on
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
   COLL_WINDOW_AUTO takes the one-shot all-reduce up to
   COLL_WINDOW_ONE_SHOT_MAX bytes when no rank works in place.

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
    const coll_window_rec *r[COLL_WINDOW_MAX_RANKS];
    int algo;                    /* the all-reduce's form, decided in check  */
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
    for (i = 0; i < c->nranks; i++) {              /* every record covers what the call touches */
        if ((cov = coll__win_covers(w, i)) == 0)
            return coll__win_fail(w, COLL_ERR_CORRUPT, COLL__WHY("window: a rank's record does not cover the call"), 0);
        if (cov > 1) declined = 1;
    }
    if (declined) return COLL__WIN_MESSAGES;
    w->algo = (int)w->a.algo == (int)COLL_WINDOW_AUTO ?
              (!inplace && w->pl.count * w->es <= COLL_WINDOW_ONE_SHOT_MAX ? COLL_WINDOW_ONE_SHOT : COLL_WINDOW_TWO_SHOT) :
              (int)w->a.algo;
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
    if ((in_n && !w->a.src) || (out_n && !w->a.dst)) {
        w->c->why = COLL__WHY("window: a buffer the call needs is NULL");
        return COLL_ERR_INVAL;
    }
    if (w->pl.inplace && !w->c->segment) {
        w->c->why = COLL__WHY("window: in place needs scratch to stage through");
        return COLL_ERR_NOSPC;
    }
    return COLL_OK;
}

/* ---- >>win-moves  the loads and stores ----------------------------------- */

/* n elements at byte `off` of every rank's src, folded in rank order into
   out (out = x0 (+) x1 (+) ... (+) x(p-1), then avg's division). Staged:
   a segment at a time through scratch, for an out that is some rank's
   input (in place). */
static int coll__win_fold(coll__win *w, size_t off, size_t n, unsigned char *out, int staged)
{
    coll_comm *c = w->c;
    const coll_args *a = &w->a;
    size_t cut = staged ? c->segment / w->es : n, at, m;
    int i, rc = COLL_OK, p = c->nranks;
    if (cut == 0) cut = 1;
    for (at = 0; at < n && rc == COLL_OK; at += m) {
        unsigned char *o = staged ? c->scratch : out + at * w->es;
        const unsigned char *x0 = (const unsigned char *)w->r[0]->src + off + at * w->es;
        m = n - at < cut ? n - at : cut;
        if (p == 1) { if (o != x0) COLL_MEMCPY(o, x0, m * w->es); }
        else rc = coll__reduce(c, &c->user, o, x0, (const unsigned char *)w->r[1]->src + off + at * w->es,
                               m, a->dtype, a->op);
        for (i = 2; i < p && rc == COLL_OK; i++)
            rc = coll__reduce(c, &c->user, o, o, (const unsigned char *)w->r[i]->src + off + at * w->es,
                              m, a->dtype, a->op);
        if (rc == COLL_OK && a->op == COLL_AVG) rc = coll__scale(c, o, m, a->dtype, (size_t)p);
        if (staged) COLL_MEMCPY(out + at * w->es, o, m * w->es);
    }
    return rc;
}

/* Rank r's block of n elements split p ways (the first n % p one longer). */
static void coll__win_block(size_t n, int p, int r, size_t *off, size_t *len)
{
    size_t q = n / (size_t)p, e = n % (size_t)p, rr = (size_t)r;
    *off = rr * q + (rr < e ? rr : e);
    *len = q + (rr < e ? 1 : 0);
}

/* Does rank r's dst share bytes with any rank's src it is folded from? */
static int coll__win_aliased(const coll__win *w, const void *dst)
{
    int i;
    for (i = 0; i < w->c->nranks; i++)
        if (w->r[i]->src == dst) return 1;
    return 0;
}

/* All-reduce, one-shot: every rank folds every input into its own dst. */
static int coll__win_one_shot(coll__win *w)
{
    return coll__win_fold(w, 0, w->pl.count, (unsigned char *)w->a.dst, 0);
}

/* All-reduce, two-shot: my block folded into my dst; a sync; the other
   blocks copied from their owners' dsts. */
static int coll__win_two_shot(coll__win *w)
{
    coll_comm *c = w->c;
    size_t off, len, es = w->es;
    int i, me = c->rank, rc;
    unsigned char *d = (unsigned char *)w->a.dst;
    coll__win_block(w->pl.count, c->nranks, me, &off, &len);
    rc = coll__win_fold(w, off * es, len, d + off * es, coll__win_aliased(w, d));
    rc = coll__win_sync(w, rc);                    /* every block is folded */
    if (rc != COLL_OK) return rc;
    for (i = 0; i < c->nranks; i++) {
        if (i == me) continue;
        coll__win_block(w->pl.count, c->nranks, i, &off, &len);
        if (len) COLL_MEMCPY(d + off * es, (const unsigned char *)w->r[i]->dst + off * es, len * es);
    }
    return COLL_OK;
}

/* Reduce-scatter: block me of every input folded into my dst. */
static int coll__win_reduce_scatter(coll__win *w)
{
    size_t n = w->pl.count;
    return coll__win_fold(w, (size_t)w->c->rank * n * w->es, n, (unsigned char *)w->a.dst, w->pl.inplace);
}

/* All-gather: every rank's src copied into its block of my dst (mine is
   there already in place). */
static int coll__win_allgather(coll__win *w)
{
    size_t b = w->pl.count * w->es;
    unsigned char *d = (unsigned char *)w->a.dst;
    int i;
    for (i = 0; i < w->c->nranks; i++)
        if (d + (size_t)i * b != (const unsigned char *)w->r[i]->src && b)
            COLL_MEMCPY(d + (size_t)i * b, w->r[i]->src, b);
    return COLL_OK;
}

/* Broadcast: the root's buffer (its dst record) copied into mine. */
static int coll__win_broadcast(coll__win *w)
{
    int root = w->a.root;
    if (w->c->rank != root && w->pl.count)
        COLL_MEMCPY(w->a.dst, w->r[root]->dst, w->pl.count * w->es);
    return COLL_OK;
}

/* Reduce: block me of every input folded into the root's dst. */
static int coll__win_reduce(coll__win *w)
{
    size_t off, len;
    unsigned char *d = (unsigned char *)w->r[w->a.root]->dst;
    coll__win_block(w->pl.count, w->c->nranks, w->c->rank, &off, &len);
    if (!len) return COLL_OK;
    return coll__win_fold(w, off * w->es, len, d + off * w->es, coll__win_aliased(w, d));
}

/* All-to-all: block me of every rank's src into my dst; in place, the
   lower rank of each pair swaps the pair's two blocks, a segment at a
   time through scratch. */
static int coll__win_alltoall(coll__win *w)
{
    coll_comm *c = w->c;
    size_t b = w->pl.count * w->es, at, m;
    int i, me = c->rank;
    unsigned char *d = (unsigned char *)w->a.dst;
    if (!w->pl.inplace) {
        for (i = 0; i < c->nranks; i++)
            if (b) COLL_MEMCPY(d + (size_t)i * b, (const unsigned char *)w->r[i]->src + (size_t)me * b, b);
        return COLL_OK;
    }
    for (i = me + 1; i < c->nranks; i++) {
        unsigned char *mine = d + (size_t)i * b, *theirs = (unsigned char *)w->r[i]->dst + (size_t)me * b;
        for (at = 0; at < b; at += m) {
            m = b - at < c->segment ? b - at : c->segment;
            COLL_MEMCPY(c->scratch, mine + at, m);
            COLL_MEMCPY(mine + at, theirs + at, m);
            COLL_MEMCPY(theirs + at, c->scratch, m);
        }
    }
    return COLL_OK;
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
    switch (w->a.kind) {
    case COLL_ALLREDUCE:
        return w->algo == COLL_WINDOW_ONE_SHOT ? coll__win_one_shot(w) : coll__win_two_shot(w);
    case COLL_REDUCE_SCATTER: return coll__win_reduce_scatter(w);
    case COLL_ALLGATHER:      return coll__win_allgather(w);
    case COLL_BROADCAST:      return coll__win_broadcast(w);
    case COLL_REDUCE:         return coll__win_reduce(w);
    case COLL_ALLTOALL:       return coll__win_alltoall(w);
    default:                  return COLL_OK;      /* barrier: the syncs alone */
    }
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
    COLL_MEMSET(&w, 0, sizeof w);
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
   operator and no rule of coll_add_rule's for the kind (the rules say
   what AUTO runs), and gives the rest to coll.h's engine unchanged. What it
   decides from is the call's arguments, the same on every rank; a rank
   whose buffers its port cannot share declines its record, and then
   every rank runs coll.h's call by messages (one sync more than that). */
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
        if (coll_window_ok(c) && !a->user_op && !a->group && !coll__win_ruled(c, a->kind))
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
