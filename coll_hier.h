/* coll_hier.h - hierarchical collectives over coll.h: inside each host, then
                 across hosts. C99, no heap; include after or instead of coll.h

   USAGE
     Where coll.h's implementation is compiled (COLL_IMPLEMENTATION defined),
     include this header too and the hierarchical code comes with it:
         #define COLL_IMPLEMENTATION
         #include "coll_hier.h"            (includes coll.h)
     Everywhere else include "coll_hier.h" alone.

         static coll_hier h;               caller-owned, about 27 KB; never moved
         coll_hier_init(&h, &world, host_key, scratch, sizeof scratch, work, sizeof work);
         coll_hier_allreduce(&h, src, dst, count, COLL_FLOAT32, COLL_SUM);

   CONFIGURATION (define before the first include)
     COLL_HIER_MAX_RANKS   most ranks the world may have               (256)

   WHAT IT DOES
     host_key is any int, equal exactly for the ranks that share a host
   (ports/coll_hosts.h hands out the host index it learned). coll_hier_init
   learns the whole host map with one all-gather of the keys over the
   world, so every rank decides everything below from the same table, and
   makes three sub-communicators of the world (coll_comm_split and
   coll_comm_sub, nothing else of coll.h's insides):
       local    this host's ranks, in world rank order; its rank is my
                local index j
       cross    local index j of every host that has one, in host order
                (hosts are numbered by their lowest world rank)
       byhost   the whole world, host-major: host 0's ranks, then host 1's
                ...; a flat ring over it crosses between hosts H times a
                lap where interleaved ranks (rank % H) cross at every hop
   A collective then runs as phases on them, each an AUTO call of coll.h:
   traffic between hosts goes over `cross`, so a host's L ranks share it,
   each moving 1/L of it; inside a host over `local`. Results are in world
   rank order whatever the host map: where a phase leaves blocks in its
   own order, a local permutation puts them in place (no traffic).

   COSTS  (p = H hosts x L ranks, n bytes; a = latency and b = time per
   byte, _i inside a host, _o across; lg = ceil(log2))
     allreduce       RS + AG inside, all-reduce across on n/L:
                     2(L-1)(a_i + n/L b_i) + 2(H-1)(a_o + n/(HL) b_o)  (ring);
                     up to COLL_HIER_SMALL_BYTES, all-reduce inside, then
                     across: lg L a_i + lg H a_o
     reduce_scatter  RS inside, RS across (n: the whole input)
     allgather       AG across, AG inside, a permutation
     broadcast       across among the root's local-index peers, inside;
                     from COLL_HIER_CHAIN_BYTES, a pipelined chain over byhost
     reduce          inside onto the root's local index, across
     gather/scatter  inside onto (from) the root's local index, across
     alltoall        inside, a transpose, across, a permutation
     barrier         inside, across among local index 0, inside
   In all-reduce, reduce-scatter, all-gather and all-to-all each of a
   host's L ranks carries 1/L of the host's traffic across; broadcast and
   reduce send the vector across once per host, in lg H rounds (tree)
   where a flat tree over interleaved ranks crosses in all lg p of them.
   Measured (test_hier's counting port, 256 KiB float32 all-reduce, the
   most bytes a rank sends across hosts): 2x4 host-major 262440 flat AUTO,
   65592 here; 4x2 host-major 393512, 196752; interleaved ranks the same
   both ways (the flat call's halving pairs, r ^ 4 first, already stay
   on a host there).

   ROADS  Every call takes one of three roads, decided on every rank from
   the host map, the call's arguments and the work size (all the same on
   every rank), so the ranks never disagree on it; coll_hier_road() tells
   which the last call took:
     COLL_HIER_PHASES  the hierarchical phases
     COLL_HIER_BYHOST  one flat call over byhost (and a permutation);
                       a broadcast of COLL_HIER_CHAIN_BYTES (8 MiB) or
                       more with the model off: a pipelined chain there
     COLL_HIER_WORLD   the flat call over the world itself
   Flat roads are taken where the phases would not give the flat answer or
   gain nothing: one host or one rank per host; hosts of different sizes
   (all-reduce, reduce-scatter and all-gather over byhost, all-to-all over
   the world; broadcast, reduce, gather and scatter keep the phases
   while the root's local index is on every host); avg over integers, and
   over floats on hosts of different sizes (two divisions would not give
   one's result: all-reduce over byhost, reduce-scatter over the world on
   hosts of one size and over byhost otherwise, reduce over the world); a
   user operator that is not commutative, or whose commutativity
   coll_hier_set_user_op was not told (the world); a call whose staging
   exceeds the work buffer (coll_hier_work_bytes says how much it needs);
   an argument the phases cannot read (a bad dtype or root, a count that
   overflows): the world call refuses it, on every rank alike.
     Float results differ from the flat call's in the order of the folds
   (each host first), not between ranks: every rank ends with the same
   bits. Avg over floats on the phases rounds twice (a host's mean, then
   the hosts' mean): within 2u (mean |x| + |result|), u the dtype's unit
   roundoff, as a sum's rounding is.

   TUNING  Every phase runs AUTO with its communicator's cost model: by
   default the world's, which knows one link. coll_hier_set_tuning gives
   the phases inside a host and those across their own alpha and beta
   (coll_hier_tune measures them). From then on (or from
   coll_hier_set_model(h, 1)) the model picks between the phases and the
   flat world call, and each phase's algorithm, from both levels'
   constants, for every collective (coll_hier_choose, see AUTO WITH A
   COST PER LEVEL below).

   MEMORY  scratch is the sub-communicators' (coll_init's scratch: they
   run one after another, so one buffer serves all three; the same size on
   every rank). It may be the world's own scratch: a communicator and its
   subs take turns (coll_waitall's rule), so no two calls ever hold it at
   once, and no call leaves anything in it for the next. work stages blocks that a phase needs in another order
   (a block: count elements): reduce-scatter p + H blocks (H where ranks
   are interleaved: world order is then local-major already; on hosts of
   different sizes p, none where ranks are host-major), all-to-all
   p, gather L (the largest host's), scatter L (p where ranks are not
   host-major: the root reorders src), reduce count elements at a non-root
   that passes no dst; the other calls none. Used as given, unaligned too.
   Both sizes are checked equal on every rank at init (else
   COLL_ERR_MISMATCH everywhere).
   Buffers live in host memory (the permutations copy with COLL_MEMCPY).

   ERRORS  As coll.h's. A phase that fails on one host is told to the next
   phase's peers: the ranks that saw the error still run the later phases
   they belong to, as refusals, so that the call check gives every rank
   COLL_ERR_PEER instead of leaving it waiting (with the call checks on, as
   by default): a NULL or overlapping buffer on one rank, say. Every rank
   must pass the same kind, count, dtype, op and root, as for coll.h: the
   road is chosen from them, and ranks that disagree there may take
   different roads and end at the port's deadline (COLL_ERR_TIMEOUT, the
   world broken) instead of at the call check.
   coll_hier_init's own refusals: COLL_ERR_INVAL (a world over
   COLL_HIER_MAX_RANKS ranks, misaligned scratch), MISMATCH (sizes differ).

   Set the world's checks, tuning and user operator before coll_hier_init
   (the sub-communicators inherit them then); a user operator set later
   goes through coll_hier_set_user_op. coll_hier holds pointers into
   itself: do not copy or move it after init.
*/
#ifndef COLL_HIER_H
#define COLL_HIER_H

#include "coll.h"

#ifndef COLL_HIER_SMALL_BYTES          /* an all-reduce this small takes  */
#define COLL_HIER_SMALL_BYTES 1024u       /* two phases (model off)          */
#endif
#ifndef COLL_HIER_CHAIN_BYTES          /* a broadcast this large takes the */
#define COLL_HIER_CHAIN_BYTES (8u << 20)  /* chain over byhost (model off)   */
#endif
#define COLL__HIER_CHAIN \
    (((COLL_ALGOS >> COLL_ALGO_PIPELINED_CHAIN) & 1) ? COLL_ALGO_PIPELINED_CHAIN : COLL_ALGO_AUTO)
#ifndef COLL_HIER_MAX_RANKS
#define COLL_HIER_MAX_RANKS 256
#endif

#ifdef __cplusplus
extern "C" {
#endif

enum { COLL_HIER_NONE = 0, COLL_HIER_PHASES = 1, COLL_HIER_BYHOST = 2, COLL_HIER_WORLD = 3 };

/* The host map and the three sub-communicators (caller-owned, fields
   private). Host h's ranks are byhost ranks hoff[h] .. hoff[h] + hsize[h]. */
typedef struct coll_hier {
    unsigned magic;
    coll_comm *world;
    coll_comm local, cross, byhost;
    coll_subport local_sp, cross_sp, byhost_sp;
    int p, rank, nhosts, host, li;   /* my host index and local index        */
    int lmin, lmax, even;            /* smallest and largest host; equal?    */
    int road;                        /* the last call's (COLL_HIER_*)        */
    const char *why;                 /* what the last error was about        */
    unsigned char *work;
    size_t work_bytes;
    coll_user_op uop;                /* coll_hier_set_user_op's, if any      */
    int has_uop;
    int model;                       /* coll_hier_set_model's: 1 on, 0 off;
                                        -1 (init): on once the levels have
                                        constants of their own               */
    int tuned;                       /* coll_hier_set_tuning or _tune was called */
    int host_of[COLL_HIER_MAX_RANKS];   /* world rank -> host index          */
    int lidx[COLL_HIER_MAX_RANKS];      /* world rank -> local index         */
    int hsize[COLL_HIER_MAX_RANKS], hoff[COLL_HIER_MAX_RANKS];
    int bpos[COLL_HIER_MAX_RANKS], bw[COLL_HIER_MAX_RANKS];   /* byhost order:
                                    world -> position, position -> world; bw
                                    is byhost's member list                  */
    int tpos[COLL_HIER_MAX_RANKS], tw[COLL_HIER_MAX_RANKS];   /* local-major
                                    order (local index, then host), even
                                    hosts only                               */
    unsigned char blead[COLL_HIER_MAX_RANKS], tlead[COLL_HIER_MAX_RANKS];
                                 /* 1: the least position of its cycle       */
    int bident, tident;          /* the orders equal world order             */
    int local_m[2 * COLL_HIER_MAX_RANKS], cross_m[2 * COLL_HIER_MAX_RANKS];
    size_t cnt[COLL_HIER_MAX_RANKS];    /* per-call counts of a v phase      */
    uint32_t tab[4 * COLL_HIER_MAX_RANKS];   /* init's all-gather            */
} coll_hier;

/* A collective over world (every rank of it, the same scratch_bytes and
   work_bytes everywhere). scratch: the sub-communicators' (8-aligned, as
   coll_init's); work: staging for the calls that reorder (may be NULL, 0). */
COLL_API int coll_hier_init(coll_hier *h, coll_comm *world, int host_key, void *scratch,
                            size_t scratch_bytes, void *work, size_t work_bytes);
/* Hosts, the largest host, my host index and local index (any may be NULL). */
COLL_API int coll_hier_shape(const coll_hier *h, int *nhosts, int *lmax, int *host, int *local);
/* The road the last call took (COLL_HIER_*), and what its error was about. */
COLL_API int coll_hier_road(const coll_hier *h);
COLL_API const char *coll_hier_last_error(const coll_hier *h);
/* Work bytes the phases of this call need (0: none); with less, the call
   takes a flat road. */
COLL_API size_t coll_hier_work_bytes(const coll_hier *h, coll_kind kind, size_t count, coll_dtype dtype);
/* The cost model's constants for the phases inside a host (local) and
   across hosts (cross, and the flat byhost road, which crosses them too),
   either NULL to keep it; AUTO picks each phase's algorithm with them. The
   same on every rank. A slow link between hosts (large beta) makes AUTO
   prefer the bandwidth-optimal ring and Rabenseifner forms across. */
COLL_API int coll_hier_set_tuning(coll_hier *h, const coll_tuning *local, const coll_tuning *cross);
/* AUTO WITH A COST PER LEVEL. The model's choice of road and algorithms
   for a call of any collective but the v forms, from the two levels'
   alpha, beta, gamma: the phases' time is the
   sum of their coll.h formulas (each phase on its sub-communicator, with
   the level's constants, the all-reduce's cross phase on the largest
   shard), the flat time the formula of the world call with the
   constants between hosts (a step of a flat schedule waits for its
   slowest message, and nearly every step has one between hosts). The
   least time wins, ties to the phases, then to the lower algorithm
   number. Rows AUTO leaves to the caller (in place only, a group, room
   rows) are no choice here. Decided from the host map, the constants and
   the call's kind, count, dtype and root only: the same on every rank.
   Hosts of different sizes, an op the phases cannot reduce, or work too
   small for the staging: the phases' cost is COLL_HIER_NEVER. */
#define COLL_HIER_NEVER 1e30
typedef struct coll_hier_pick {
    int road;                    /* COLL_HIER_PHASES or COLL_HIER_WORLD      */
    coll_algo flat;              /* the world call's algorithm               */
    int nphases;                 /* the phases, in the order they run        */
    coll_algo phase[3];          /* each phase's algorithm                   */
    int across[3];               /* 1: that phase runs across hosts          */
    double cost;                 /* the chosen road's time (seconds)         */
} coll_hier_pick;
/* The model's choice (local, cross: the levels' constants; NULL: those the
   sub-communicators have, coll_hier_set_tuning's or coll_hier_tune's).
   COLL_ERR_NOSYS for a v form. */
COLL_API int coll_hier_choose(const coll_hier *h, coll_kind kind, size_t count, coll_dtype dtype,
                              coll_op op, int root, const coll_tuning *local, const coll_tuning *cross,
                              coll_hier_pick *pick);
/* The model's time for one choice: choice->road, and choice->flat or
   choice->phase[0 .. nphases) (nphases as coll_hier_choose gives it);
   COLL_HIER_NEVER where it cannot run. */
COLL_API double coll_hier_cost(const coll_hier *h, coll_kind kind, size_t count, coll_dtype dtype,
                               coll_op op, int root, const coll_tuning *local, const coll_tuning *cross,
                               const coll_hier_pick *choice);
/* on = 1: every call takes the model's road and algorithms (with the
   sub-communicators' constants) wherever the phases could run; 0: the
   phases, each AUTO. The default: on once the levels have constants of
   their own (coll_hier_set_tuning, coll_hier_tune), the phases before
   (the world's constants know one link: they cannot tell a host from the
   network). The same on every rank. */
COLL_API int coll_hier_set_model(coll_hier *h, int on);
/* A per-level probe: coll_tune on every host (local) and across (cross),
   then host 0's figures inside and local index 0's across given to every
   rank (two broadcasts over the world), set as coll_hier_set_tuning does.
   A collective over the world; nothing on one level. */
COLL_API int coll_hier_tune(coll_hier *h, double (*now)(void *ctx), void *ctx);

/* The user operator, on the world and the three subs (the same everywhere). */
COLL_API int coll_hier_set_user_op(coll_hier *h, const coll_user_op *op);

/* As coll.h's calls of the same name, without the algorithm: every phase
   runs AUTO. Buffers, counts and in-place layouts are the world's. */
COLL_API int coll_hier_allreduce(coll_hier *h, const void *src, void *dst, size_t count,
                                 coll_dtype dtype, coll_op op);
COLL_API int coll_hier_reduce_scatter(coll_hier *h, const void *src, void *dst, size_t count,
                                      coll_dtype dtype, coll_op op);
COLL_API int coll_hier_allgather(coll_hier *h, const void *src, void *dst, size_t count,
                                 coll_dtype dtype);
COLL_API int coll_hier_broadcast(coll_hier *h, void *buf, size_t count, coll_dtype dtype, int root);
COLL_API int coll_hier_reduce(coll_hier *h, const void *src, void *dst, size_t count,
                              coll_dtype dtype, coll_op op, int root);
COLL_API int coll_hier_gather(coll_hier *h, const void *src, void *dst, size_t count,
                              coll_dtype dtype, int root);
COLL_API int coll_hier_scatter(coll_hier *h, const void *src, void *dst, size_t count,
                               coll_dtype dtype, int root);
COLL_API int coll_hier_alltoall(coll_hier *h, const void *src, void *dst, size_t count,
                                coll_dtype dtype);
COLL_API int coll_hier_barrier(coll_hier *h);

#ifdef __cplusplus
}
#endif

#endif /* COLL_HIER_H */

/* ========================================================================== */
/*                              IMPLEMENTATION                                */
/* ========================================================================== */
#if defined(COLL_IMPLEMENTATION) && !defined(COLL__HIER_IMPLEMENTED)
#define COLL__HIER_IMPLEMENTED
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#endif

#define COLL__HIER_MAGIC 0xC011415Eu
#define COLL__HIER_TMP 512        /* bytes a permutation moves at a time     */

/* ---- >>hier-map  the host map, learned once ------------------------------ */

/* Marks the least position of every cycle of map (a permutation of n). */
static void coll__hier_leaders(const int *map, int n, unsigned char *lead, int *ident)
{
    int a, q;
    *ident = 1;
    for (a = 0; a < n; a++) {
        if (map[a] != a) *ident = 0;
        lead[a] = 1;
        for (q = map[a]; q != a; q = map[q])
            if (q < a) { lead[a] = 0; break; }
    }
}

/* Every rank reads the same gathered table: keys, refusals, sizes. */
static int coll__hier_map(coll_hier *h)
{
    int p = h->p, r, s, H = 0;
    const uint32_t *t = h->tab;
    for (r = 0; r < p; r++)
        if (t[4 * r + 1]) {
            h->why = "init: a rank refused its arguments (scratch or work)";
            return t[4 * h->rank + 1] ? COLL_ERR_INVAL : COLL_ERR_PEER;
        }
    for (r = 1; r < p; r++)
        if (t[4 * r + 2] != t[2] || t[4 * r + 3] != t[3]) {
            h->why = "init: scratch_bytes or work_bytes differ between ranks";
            return COLL_ERR_MISMATCH;
        }
    for (r = 0; r < p; r++) {
        for (s = 0; s < r && t[4 * s] != t[4 * r]; s++) continue;
        if (s == r) { h->host_of[r] = H; h->hsize[H] = 0; H++; }
        else h->host_of[r] = h->host_of[s];
        h->lidx[r] = h->hsize[h->host_of[r]]++;
    }
    h->nhosts = H;
    h->lmin = h->lmax = h->hsize[0];
    for (s = 0, r = 0; r < H; r++) {
        h->hoff[r] = s; s += h->hsize[r];
        if (h->hsize[r] < h->lmin) h->lmin = h->hsize[r];
        if (h->hsize[r] > h->lmax) h->lmax = h->hsize[r];
    }
    h->even = h->lmin == h->lmax;
    for (r = 0; r < p; r++) {
        h->bpos[r] = h->hoff[h->host_of[r]] + h->lidx[r];
        h->bw[h->bpos[r]] = r;
        h->tpos[r] = h->even ? h->lidx[r] * H + h->host_of[r] : r;
        h->tw[h->tpos[r]] = r;
    }
    coll__hier_leaders(h->bpos, p, h->blead, &h->bident);
    coll__hier_leaders(h->tpos, p, h->tlead, &h->tident);
    h->host = h->host_of[h->rank];
    h->li = h->lidx[h->rank];
    return COLL_OK;
}

static uint32_t coll__hier_fold(size_t v)
{
    uint64_t w = (uint64_t)v;
    return (uint32_t)(w ^ (w >> 32)) ^ 0x9e3779b9u;
}

COLL_API int coll_hier_init(coll_hier *h, coll_comm *world, int host_key, void *scratch,
                            size_t scratch_bytes, void *work, size_t work_bytes)
{
    uint32_t mine[4];
    int p, rc, refused;
    if (!h) return COLL_ERR_INVAL;
    COLL_MEMSET(h, 0, sizeof *h);
    h->why = "";
    p = coll_size(world);
    if (p < 1) { h->why = "init: world is not a communicator"; return COLL_ERR_INVAL; }
    /* the same p on every rank: every rank refuses alike */
    if (p > COLL_HIER_MAX_RANKS) { h->why = "init: world larger than COLL_HIER_MAX_RANKS"; return COLL_ERR_INVAL; }
    h->world = world; h->p = p; h->rank = coll_rank(world);
    refused = (!scratch && scratch_bytes) || (uintptr_t)scratch % 8 || (!work && work_bytes);
    mine[0] = (uint32_t)host_key; mine[1] = (uint32_t)refused;
    mine[2] = coll__hier_fold(scratch_bytes); mine[3] = coll__hier_fold(work_bytes);
    rc = coll_allgather(world, mine, h->tab, 4, COLL_UINT32, COLL_ALGO_AUTO);
    if (rc != COLL_OK) { h->why = "init: the all-gather of host keys failed"; return rc; }
    if ((rc = coll__hier_map(h)) != COLL_OK) return rc;
    /* work as given: an alignment taken off here would differ between
       ranks, and so would the roads */
    h->work = (unsigned char *)work;
    h->work_bytes = work ? work_bytes : 0;
    rc = coll_comm_split(&h->local, &h->local_sp, world, h->host, h->rank, h->local_m, scratch, scratch_bytes);
    if (rc == COLL_OK)
        rc = coll_comm_split(&h->cross, &h->cross_sp, world, h->li, h->host, h->cross_m, scratch, scratch_bytes);
    if (rc == COLL_OK)
        rc = coll_comm_sub(&h->byhost, &h->byhost_sp, world, h->bw, p, scratch, scratch_bytes);
    if (rc != COLL_OK) { h->why = "init: a split failed (coll_last_error(world))"; return rc; }
    h->model = -1;
    h->magic = COLL__HIER_MAGIC;
    return COLL_OK;
}

static int coll__hier_ok(const coll_hier *h)
{
    return h && h->magic == COLL__HIER_MAGIC && coll_size(&h->byhost) == h->p;
}

COLL_API int coll_hier_shape(const coll_hier *h, int *nhosts, int *lmax, int *host, int *local)
{
    if (!coll__hier_ok(h)) return COLL_ERR_INVAL;
    if (nhosts) *nhosts = h->nhosts;
    if (lmax) *lmax = h->lmax;
    if (host) *host = h->host;
    if (local) *local = h->li;
    return COLL_OK;
}

COLL_API int coll_hier_road(const coll_hier *h) { return h ? h->road : COLL_HIER_NONE; }
COLL_API const char *coll_hier_last_error(const coll_hier *h) { return h && h->why ? h->why : ""; }

COLL_API int coll_hier_set_tuning(coll_hier *h, const coll_tuning *local, const coll_tuning *cross)
{
    int rc = COLL_OK;
    if (!coll__hier_ok(h)) return COLL_ERR_INVAL;
    if (local) rc = coll_set_tuning(&h->local, local);
    if (cross && rc == COLL_OK) rc = coll_set_tuning(&h->cross, cross);
    if (cross && rc == COLL_OK) rc = coll_set_tuning(&h->byhost, cross);
    if (rc == COLL_OK && (local || cross)) h->tuned = 1;
    return rc;
}

COLL_API int coll_hier_set_user_op(coll_hier *h, const coll_user_op *op)
{
    int rc;
    if (!coll__hier_ok(h) || !op || !op->fn) return COLL_ERR_INVAL;
    if ((rc = coll_set_user_op(h->world, op)) != COLL_OK) return rc;
    if ((rc = coll_set_user_op(&h->local, op)) != COLL_OK) return rc;
    if ((rc = coll_set_user_op(&h->cross, op)) != COLL_OK) return rc;
    if ((rc = coll_set_user_op(&h->byhost, op)) != COLL_OK) return rc;
    COLL_MEMCPY(&h->uop, op, sizeof h->uop);
    h->has_uop = 1;
    return COLL_OK;
}

/* ---- >>hier-moves  local permutations of blocks -------------------------- */

/* dst block map[a] = src block a, for a < n (no overlap). */
static void coll__hier_scatter_copy(unsigned char *dst, const unsigned char *src, size_t blk,
                                    const int *map, int n)
{
    int a;
    if (!blk) return;
    for (a = 0; a < n; a++) COLL_MEMCPY(dst + (size_t)map[a] * blk, src + (size_t)a * blk, blk);
}

/* In place: block a moves to block map[a] (inv: map's inverse, lead: the
   cycles' least positions). Each cycle turns one piece of COLL__HIER_TMP
   bytes of every block at a time, through a piece kept aside. Cost: one
   read and one write of the whole buffer. */
static void coll__hier_permute(unsigned char *buf, size_t blk, const int *inv,
                               const unsigned char *lead, int n)
{
    unsigned char tmp[COLL__HIER_TMP];
    size_t off, m;
    int a, q, prev;
    for (off = 0; off < blk; off += m) {
        m = blk - off < sizeof tmp ? blk - off : sizeof tmp;
        for (a = 0; a < n; a++) {
            if (!lead[a] || inv[a] == a) continue;
            COLL_MEMCPY(tmp, buf + (size_t)a * blk + off, m);
            for (q = a; (prev = inv[q]) != a; q = prev)
                COLL_MEMCPY(buf + (size_t)q * blk + off, buf + (size_t)prev * blk + off, m);
            COLL_MEMCPY(buf + (size_t)q * blk + off, tmp, m);
        }
    }
}

/* ---- >>hier-phases  one phase: an AUTO call of coll.h -------------------- */

/* Runs the call on c; after an earlier error (rc) it runs it as a refusal
   instead (an algorithm that is none), so that the call check tells c's
   other ranks, and hands rc on. */
static int coll__hier_run_algo(int rc, coll_comm *c, coll_kind k, const void *src, void *dst, size_t count,
                               const size_t *counts, coll_dtype t, coll_op op, int root, coll_algo algo)
{
    coll_args a;
    COLL_MEMSET(&a, 0, sizeof a);
    a.kind = k; a.algo = algo; a.src = src; a.dst = dst; a.count = count;
    a.counts = counts; a.dtype = t; a.op = op; a.root = root;
    if (rc == COLL_OK) return coll_run(c, &a);
    a.algo = COLL_ALGO_COUNT;
    (void)coll_run(c, &a);
    return rc;
}

static int coll__hier_run(int rc, coll_comm *c, coll_kind k, const void *src, void *dst, size_t count,
                          const size_t *counts, coll_dtype t, coll_op op, int root)
{
    return coll__hier_run_algo(rc, c, k, src, dst, count, counts, t, op, root, COLL_ALGO_AUTO);
}

/* Element size, 0 for a dtype the phases cannot size. */
static size_t coll__hier_es(const coll_hier *h, coll_dtype t)
{
    if ((unsigned)t >= (unsigned)COLL_DTYPE_COUNT) return 0;
    if (t == COLL_USER_TYPE) return h->has_uop ? h->uop.elem_size : 0;
    return coll_dtype_size(t);
}

/* May the ranks' contributions be reduced in any order (a flat call over
   byhost reduces them in host-major order)? */
static int coll__hier_commutes(const coll_hier *h, coll_op op)
{
    if ((unsigned)op >= (unsigned)COLL_OP_COUNT) return 0;
    return op != COLL_USER_OP || (h->has_uop && h->uop.commutative);
}

/* Element size for a call of n elements a rank, 0 where p x 2 blocks of
   them would not fit a size_t (the world call then refuses the count). */
static size_t coll__hier_esn(const coll_hier *h, coll_dtype t, size_t n)
{
    size_t es = coll__hier_es(h, t);
    return es && n > ((size_t)-1) / es / 2 / (size_t)h->p ? 0 : es;
}

/* Would two-level reduction give the flat answer? Not for avg over
   integers (two truncating divisions), nor an operator whose order matters;
   avg over floats needs every host of one size (avg of equal-weight avgs). */
static int coll__hier_reduces(const coll_hier *h, coll_dtype t, coll_op op)
{
    if (!coll__hier_commutes(h, op)) return 0;
    if (op == COLL_AVG) return h->even && (t == COLL_FLOAT16 || t == COLL_BFLOAT16 || t == COLL_FLOAT32 || t == COLL_FLOAT64);
    return 1;
}

/* The work (bytes) the phases of a call need. */
static size_t coll__hier_need(const coll_hier *h, coll_kind k, size_t n, size_t es)
{
    size_t blk = n * es, p = (size_t)h->p, H = (size_t)h->nhosts, L = (size_t)h->lmax;
    if (blk && (p > ((size_t)-1) / 2 / blk)) return (size_t)-1;
    switch (k) {
    case COLL_REDUCE_SCATTER:                   /* uneven hosts: over byhost */
        if (!h->even) return h->bident ? 0 : p * blk;
        return (h->tident ? 0 : p * blk) + H * blk;
    case COLL_ALLTOALL:       return p * blk;
    case COLL_GATHER:         return L * blk;
    case COLL_SCATTER:        return h->bident ? L * blk : p * blk;
    case COLL_REDUCE:         return blk;
    default:                  return 0;
    }
}

COLL_API size_t coll_hier_work_bytes(const coll_hier *h, coll_kind kind, size_t count, coll_dtype dtype)
{
    if (!coll__hier_ok(h)) return 0;
    return coll__hier_need(h, kind, count, coll__hier_esn(h, dtype, count));
}

/* The road of a call, the same on every rank: the phases only where there
   are two levels and the call's arguments can be read. */
static int coll__hier_two_levels(const coll_hier *h)
{
    return h->nhosts > 1 && h->lmax > 1;
}

static int coll__hier_model_pick(const coll_hier *h, coll_kind k, size_t count, coll_dtype t, coll_op op,
                                 int root, coll_hier_pick *pk);
static const coll_algo coll__hier_auto3[3] = { COLL_ALGO_AUTO, COLL_ALGO_AUTO, COLL_ALGO_AUTO };

/* ---- >>hier-calls  the collectives --------------------------------------- */

/* Reduce-scatter inside the host into my shard (n/L, the first n % L
   shards one longer) of dst, all-reduce of the shard across hosts with my
   local-index peers, all-gather inside. Up to COLL_HIER_SMALL_BYTES (model
   off), where the shards would cost a round each and carry nothing:
   all-reduce inside, then across on the whole vector, 2 phases for 3
   (every local rank ends with the same host sum, so the cross calls all
   fold the same bits). Hosts of different sizes have
   shards that do not line up: one flat all-reduce over byhost instead (and
   for avg over integers, whose two divisions would truncate twice). */
COLL_API int coll_hier_allreduce(coll_hier *h, const void *src, void *dst, size_t count,
                                 coll_dtype dtype, coll_op op)
{
    size_t es, off = 0, L;
    unsigned char *d = (unsigned char *)dst;
    const coll_algo *al = coll__hier_auto3;
    coll_hier_pick pk;
    int j, rc;
    if (!coll__hier_ok(h)) return COLL_ERR_INVAL;
    h->why = "";
    es = coll__hier_esn(h, dtype, count);
    if (!coll__hier_two_levels(h) || !es || !coll__hier_commutes(h, op)) {
        h->road = COLL_HIER_WORLD;
        return coll_allreduce(h->world, src, dst, count, dtype, op, COLL_ALGO_AUTO);
    }
    if (!h->even || !coll__hier_reduces(h, dtype, op)) {
        h->road = COLL_HIER_BYHOST;
        return coll_allreduce(&h->byhost, src, dst, count, dtype, op, COLL_ALGO_AUTO);
    }
    if (coll__hier_model_pick(h, COLL_ALLREDUCE, count, dtype, op, 0, &pk)) {
        if (pk.road == COLL_HIER_WORLD) {
            h->road = COLL_HIER_WORLD;
            return coll_allreduce(h->world, src, dst, count, dtype, op, pk.flat);
        }
        al = pk.phase;
    } else if (count * es <= (size_t)COLL_HIER_SMALL_BYTES) {
        /* two phases, not three: the host's sum on every local rank, then
           the hosts' sums with my local-index peers */
        h->road = COLL_HIER_PHASES;
        rc = coll__hier_run_algo(COLL_OK, &h->local, COLL_ALLREDUCE, src, dst, count, 0, dtype, op, 0,
                                 COLL_ALGO_AUTO);
        return coll__hier_run_algo(rc, &h->cross, COLL_ALLREDUCE, dst, dst, count, 0, dtype, op, 0,
                                   COLL_ALGO_AUTO);
    }
    h->road = COLL_HIER_PHASES;
    L = (size_t)h->lmax;
    for (j = 0; j < h->lmax; j++) {
        h->cnt[j] = count / L + ((size_t)j < count % L ? 1 : 0);
        if (j < h->li) off += h->cnt[j];
    }
    if (d) d += off * es;
    rc = coll__hier_run_algo(COLL_OK, &h->local, COLL_REDUCE_SCATTERV, src, d, 0, h->cnt, dtype, op, 0, al[0]);
    rc = coll__hier_run_algo(rc, &h->cross, COLL_ALLREDUCE, d, d, h->cnt[h->li], 0, dtype, op, 0, al[1]);
    rc = coll__hier_run_algo(rc, &h->local, COLL_ALLGATHERV, d, dst, 0, h->cnt, dtype, op, 0, al[2]);
    return rc;
}

/* Reduce-scatter inside the host, then across. The input is read in
   local-major order (local index, then host: the H blocks of local rank j
   lie together), staged in work unless the ranks are interleaved (rank %
   H), where that order is world order. Inside: local rank j gets the
   host's sum of its H blocks (work); across: my block of them.
   (L-1)(a_i + H n b_i) + (H-1)(a_o + n b_o), n a block. Hosts of
   different sizes: one flat reduce-scatter over byhost, its input put in
   host order (work: p blocks) unless it is already. */
COLL_API int coll_hier_reduce_scatter(coll_hier *h, const void *src, void *dst, size_t count,
                                      coll_dtype dtype, coll_op op)
{
    size_t es, blk, H;
    const unsigned char *in = (const unsigned char *)src;
    unsigned char *part;
    const coll_algo *al = coll__hier_auto3;
    coll_hier_pick pk;
    int rc;
    if (!coll__hier_ok(h)) return COLL_ERR_INVAL;
    h->why = "";
    es = coll__hier_esn(h, dtype, count);
    if (!coll__hier_two_levels(h) || !es || !coll__hier_commutes(h, op) ||
        coll__hier_need(h, COLL_REDUCE_SCATTER, count, es) > h->work_bytes ||
        (h->even && !coll__hier_reduces(h, dtype, op))) {
        h->road = COLL_HIER_WORLD;
        return coll_reduce_scatter(h->world, src, dst, count, dtype, op, COLL_ALGO_AUTO);
    }
    blk = count * es; H = (size_t)h->nhosts;
    if (!h->even) {                       /* one flat call over byhost */
        h->road = COLL_HIER_BYHOST;
        if (h->bident) return coll_reduce_scatter(&h->byhost, src, dst, count, dtype, op, COLL_ALGO_AUTO);
        rc = COLL_OK;
        if (in) coll__hier_scatter_copy(h->work, in, blk, h->bpos, h->p);
        else if (blk) { rc = COLL_ERR_INVAL; h->why = "reduce_scatter: src NULL"; }
        return coll__hier_run(rc, &h->byhost, COLL_REDUCE_SCATTER, h->work, dst, count, 0, dtype, op, 0);
    }
    if (coll__hier_model_pick(h, COLL_REDUCE_SCATTER, count, dtype, op, 0, &pk)) {
        if (pk.road == COLL_HIER_WORLD) {
            h->road = COLL_HIER_WORLD;
            return coll_reduce_scatter(h->world, src, dst, count, dtype, op, pk.flat);
        }
        al = pk.phase;
    }
    h->road = COLL_HIER_PHASES;
    part = h->work;
    rc = COLL_OK;
    if (!h->tident) {                     /* the input in local-major order */
        if (in) coll__hier_scatter_copy(h->work, in, blk, h->tpos, h->p);
        else if (blk) { rc = COLL_ERR_INVAL; h->why = "reduce_scatter: src NULL"; }
        in = h->work;
        part = h->work + (size_t)h->p * blk;
    }
    rc = coll__hier_run_algo(rc, &h->local, COLL_REDUCE_SCATTER, in, part, H * count, 0, dtype, op, 0, al[0]);
    rc = coll__hier_run_algo(rc, &h->cross, COLL_REDUCE_SCATTER, part, dst, count, 0, dtype, op, 0, al[1]);
    return rc;
}

/* All-gather across hosts among my local-index peers, into my slot of the
   local-major order, then inside the host (H blocks each), then a local
   permutation into world order (none where ranks are interleaved). Hosts
   of different sizes: one all-gather over byhost, then the permutation.
   (H-1)(a_o + n b_o) + (L-1)(a_i + H n b_i). */
COLL_API int coll_hier_allgather(coll_hier *h, const void *src, void *dst, size_t count,
                                 coll_dtype dtype)
{
    size_t es, blk, H;
    unsigned char *d = (unsigned char *)dst, *mine;
    const coll_algo *al = coll__hier_auto3;
    coll_hier_pick pk;
    int rc, inplace;
    if (!coll__hier_ok(h)) return COLL_ERR_INVAL;
    h->why = "";
    es = coll__hier_esn(h, dtype, count);
    if (!coll__hier_two_levels(h) || !es) {
        h->road = COLL_HIER_WORLD;
        return coll_allgather(h->world, src, dst, count, dtype, COLL_ALGO_AUTO);
    }
    blk = count * es; H = (size_t)h->nhosts;
    inplace = d && (const unsigned char *)src == d + (size_t)h->rank * blk;
    if (!h->even) {
        h->road = COLL_HIER_BYHOST;
        if (inplace && h->bpos[h->rank] != h->rank && blk) {
            COLL_MEMCPY(d + (size_t)h->bpos[h->rank] * blk, src, blk);
            src = d + (size_t)h->bpos[h->rank] * blk;
        }
        rc = coll_allgather(&h->byhost, src, dst, count, dtype, COLL_ALGO_AUTO);
        if (rc == COLL_OK && !h->bident) coll__hier_permute(d, blk, h->bpos, h->blead, h->p);
        return rc;
    }
    if (coll__hier_model_pick(h, COLL_ALLGATHER, count, dtype, COLL_SUM, 0, &pk)) {
        if (pk.road == COLL_HIER_WORLD) {
            h->road = COLL_HIER_WORLD;
            return coll_allgather(h->world, src, dst, count, dtype, pk.flat);
        }
        al = pk.phase;
    }
    h->road = COLL_HIER_PHASES;
    if (inplace && h->tpos[h->rank] != h->rank && blk) {
        COLL_MEMCPY(d + (size_t)h->tpos[h->rank] * blk, src, blk);
        src = d + (size_t)h->tpos[h->rank] * blk;
    }
    mine = d ? d + (size_t)h->li * H * blk : 0;
    rc = coll__hier_run_algo(COLL_OK, &h->cross, COLL_ALLGATHER, src, mine, count, 0, dtype, COLL_SUM, 0, al[0]);
    rc = coll__hier_run_algo(rc, &h->local, COLL_ALLGATHER, mine, d, H * count, 0, dtype, COLL_SUM, 0, al[1]);
    if (rc == COLL_OK && !h->tident) coll__hier_permute(d, blk, h->tpos, h->tlead, h->p);
    return rc;
}

/* Is the root's local index on every host? Then its peers of that index
   (one per host, cross ranks in host order) carry the root's traffic. */
static int coll__hier_rooted(const coll_hier *h, int root)
{
    return root >= 0 && root < h->p && h->lidx[root] < h->lmin;
}

/* ---- >>hier-model  AUTO with a cost per level ----------------------------- */

/* One phase of a call, as the model sees it: on the host's ranks or
   across, its kind, count (or shards) and root. */
typedef struct coll__hier_ph {
    const coll_comm *c;
    int across;
    coll_kind k;
    size_t count;
    const size_t *counts;
    int root;
} coll__hier_ph;

/* The phases of the call, as the calls below run them (cnt: L shards). */
static int coll__hier_phases(const coll_hier *h, coll_kind k, size_t count, int root, size_t *cnt,
                             coll__hier_ph *ph)
{
    size_t H = (size_t)h->nhosts, L = (size_t)h->lmax;
    int j, n = 0, hr = root >= 0 && root < h->p ? h->host_of[root] : 0, lr = root >= 0 && root < h->p ? h->lidx[root] : 0;
#define COLL__PH(AC, KK, N, CN, R) (ph[n].c = (AC) ? &h->cross : &h->local, ph[n].across = (AC), ph[n].k = (KK), \
                                    ph[n].count = (N), ph[n].counts = (CN), ph[n].root = (R), n++)
    switch (k) {
    case COLL_ALLREDUCE:
        for (j = 0; j < h->lmax; j++) cnt[j] = count / L + ((size_t)j < count % L ? 1 : 0);
        COLL__PH(0, COLL_REDUCE_SCATTERV, 0, cnt, 0);
        COLL__PH(1, COLL_ALLREDUCE, cnt[0], 0, 0);            /* the largest shard */
        COLL__PH(0, COLL_ALLGATHERV, 0, cnt, 0);
        break;
    case COLL_REDUCE_SCATTER: COLL__PH(0, k, H * count, 0, 0); COLL__PH(1, k, count, 0, 0); break;
    case COLL_ALLGATHER:      COLL__PH(1, k, count, 0, 0); COLL__PH(0, k, H * count, 0, 0); break;
    case COLL_BROADCAST:      COLL__PH(1, k, count, 0, hr); COLL__PH(0, k, count, 0, lr); break;
    case COLL_REDUCE:         COLL__PH(0, k, count, 0, lr); COLL__PH(1, k, count, 0, hr); break;
    case COLL_GATHER:
        for (j = 0; j < h->nhosts; j++) cnt[j] = L * count;   /* whole hosts across */
        COLL__PH(0, k, count, 0, lr); COLL__PH(1, COLL_GATHERV, 0, cnt, hr);
        break;
    case COLL_SCATTER:
        for (j = 0; j < h->nhosts; j++) cnt[j] = L * count;
        COLL__PH(1, COLL_SCATTERV, 0, cnt, hr); COLL__PH(0, k, count, 0, lr);
        break;
    case COLL_ALLTOALL:       COLL__PH(0, k, H * count, 0, 0); COLL__PH(1, k, L * count, 0, 0); break;
    case COLL_BARRIER:        COLL__PH(0, k, 0, 0, 0); COLL__PH(1, k, 0, 0, 0); COLL__PH(0, k, 0, 0, 0); break;
    default: break;
    }
#undef COLL__PH
    return n;
}

static int coll__hier_modelled(coll_kind k)
{
    return k == COLL_ALLREDUCE || k == COLL_REDUCE_SCATTER || k == COLL_ALLGATHER ||
           k == COLL_BROADCAST || k == COLL_REDUCE || k == COLL_GATHER || k == COLL_SCATTER ||
           k == COLL_ALLTOALL || k == COLL_BARRIER;
}

/* coll.h's formula for algorithm `algo` of one call on c, under tuning t;
   COLL_HIER_NEVER where the row does not serve the call or AUTO would not
   take it (a row for the caller to ask for, a room row, a row for many
   ranks on few). Buffers are not given: rows whose fit depends on them
   (in place or out of place only) are no choice. */
static double coll__hier_cost1(const coll_comm *c, coll_kind k, size_t count, const size_t *counts,
                               coll_dtype t, coll_op op, int root, coll_algo algo, const coll_tuning *tu)
{
#ifdef COLL_NO_COST_MODEL
    (void)c; (void)k; (void)count; (void)counts; (void)t; (void)op; (void)root; (void)algo; (void)tu;
    return COLL_HIER_NEVER;
#else
    coll_args a;
    coll__plan pl;
    coll__tune tt;
    size_t es = 0;
    const char *why;
    const coll__entry *e;
    coll__real cost;
    if (algo <= COLL_ALGO_AUTO || algo >= COLL_ALGO_COUNT) return COLL_HIER_NEVER;
    COLL_MEMSET(&a, 0, sizeof a);
    a.kind = k; a.algo = algo; a.count = count; a.counts = counts; a.dtype = t; a.op = op; a.root = root;
    if (coll__plan_args(c, &a, &pl, &es, &why) != COLL_OK) return COLL_HIER_NEVER;
    e = coll__entry_of(COLL__KIND(pl.kind), algo);
    if (!e || !e->f || (COLL__NEEDS(e) & (COLL__CALLER | COLL__OOP)) || COLL__IN_ROOM(e)) return COLL_HIER_NEVER;
    if ((COLL__NEEDS(e) & COLL__MANY) && pl.p <= 8) return COLL_HIER_NEVER;
    if (coll__fits(c, &pl, e, es, 0, &why) != COLL_OK) return COLL_HIER_NEVER;
    if ((COLL__NEEDS(e) & COLL__SCRATCH) && c->segment < coll__scratch_need(c, &pl, e, es)) return COLL_HIER_NEVER;
    pl.row = e;
    tt.alpha = (coll__real)tu->alpha; tt.beta = (coll__real)tu->beta; tt.gamma = (coll__real)tu->gamma;
    cost = e->cost(&pl, (coll__real)coll__total_bytes(&pl, es), &tt);
    return cost >= COLL__NEVER ? COLL_HIER_NEVER : (double)cost;
#endif
}

/* The sub-communicator's constants, as doubles. */
static void coll__hier_tuning_of(const coll_comm *c, coll_tuning *t)
{
    t->alpha = (double)c->tune.alpha; t->beta = (double)c->tune.beta; t->gamma = (double)c->tune.gamma;
}

/* May this call take the phases at all (the roads' own conditions)? */
static int coll__hier_phases_ok(const coll_hier *h, coll_kind k, size_t count, coll_dtype t, coll_op op, int root)
{
    size_t es = coll__hier_esn(h, t, count);
    if (k == COLL_BARRIER) return coll__hier_two_levels(h) && h->even;
    if (!coll__hier_two_levels(h) || !es || !h->even) return 0;
    if (k == COLL_BROADCAST) return coll__hier_rooted(h, root);
    if (k == COLL_ALLGATHER) return 1;
    if (k == COLL_GATHER || k == COLL_SCATTER)
        return coll__hier_rooted(h, root) && coll__hier_need(h, k, count, es) <= h->work_bytes;
    if (k == COLL_ALLTOALL) return coll__hier_need(h, k, count, es) <= h->work_bytes;
    if (!coll__hier_reduces(h, t, op)) return 0;
    if (k == COLL_REDUCE) return coll__hier_rooted(h, root);
    if (k == COLL_REDUCE_SCATTER) return coll__hier_need(h, k, count, es) <= h->work_bytes;
    return 1;
}

COLL_API double coll_hier_cost(const coll_hier *h, coll_kind kind, size_t count, coll_dtype dtype,
                               coll_op op, int root, const coll_tuning *local, const coll_tuning *cross,
                               const coll_hier_pick *choice)
{
    coll_tuning lt, ct;
    coll__hier_ph ph[3];
    size_t cnt[COLL_HIER_MAX_RANKS];
    double sum = 0, c1;
    int n, i;
    if (!coll__hier_ok(h) || !choice || !coll__hier_modelled(kind)) return COLL_HIER_NEVER;
    if (local) lt = *local; else coll__hier_tuning_of(&h->local, &lt);
    if (cross) ct = *cross; else coll__hier_tuning_of(&h->cross, &ct);
    if (choice->road == COLL_HIER_WORLD)
        return coll__hier_cost1(h->world, kind, count, 0, dtype, op, root, choice->flat, &ct);
    if (choice->road != COLL_HIER_PHASES || !coll__hier_phases_ok(h, kind, count, dtype, op, root))
        return COLL_HIER_NEVER;
    n = coll__hier_phases(h, kind, count, root, cnt, ph);
    if (choice->nphases != n) return COLL_HIER_NEVER;
    for (i = 0; i < n; i++) {
        c1 = coll__hier_cost1(ph[i].c, ph[i].k, ph[i].count, ph[i].counts, dtype, op, ph[i].root,
                              choice->phase[i], ph[i].across ? &ct : &lt);
        if (c1 >= COLL_HIER_NEVER) return COLL_HIER_NEVER;
        sum += c1;
    }
    return sum;
}

COLL_API int coll_hier_choose(const coll_hier *h, coll_kind kind, size_t count, coll_dtype dtype,
                              coll_op op, int root, const coll_tuning *local, const coll_tuning *cross,
                              coll_hier_pick *pick)
{
    coll_tuning lt, ct;
    coll__hier_ph ph[3];
    size_t cnt[COLL_HIER_MAX_RANKS];
    double flat = COLL_HIER_NEVER, sum = 0, c1;
    int n, i, a;
    if (!coll__hier_ok(h) || !pick) return COLL_ERR_INVAL;
    if (!coll__hier_modelled(kind)) return COLL_ERR_NOSYS;
    COLL_MEMSET(pick, 0, sizeof *pick);
    if (local) lt = *local; else coll__hier_tuning_of(&h->local, &lt);
    if (cross) ct = *cross; else coll__hier_tuning_of(&h->cross, &ct);
    pick->flat = COLL_ALGO_AUTO;
    for (a = 1; a < (int)COLL_ALGO_COUNT; a++) {
        c1 = coll__hier_cost1(h->world, kind, count, 0, dtype, op, root, (coll_algo)a, &ct);
        if (c1 < flat) { flat = c1; pick->flat = (coll_algo)a; }
    }
    n = coll__hier_phases(h, kind, count, root, cnt, ph);
    pick->nphases = n;
    if (!coll__hier_phases_ok(h, kind, count, dtype, op, root)) sum = COLL_HIER_NEVER;
    for (i = 0; i < n; i++) {               /* the phases' costs add: each its own least */
        double best = COLL_HIER_NEVER;
        pick->phase[i] = COLL_ALGO_AUTO;
        pick->across[i] = ph[i].across;
        for (a = 1; a < (int)COLL_ALGO_COUNT && sum < COLL_HIER_NEVER; a++) {
            c1 = coll__hier_cost1(ph[i].c, ph[i].k, ph[i].count, ph[i].counts, dtype, op, ph[i].root,
                                  (coll_algo)a, ph[i].across ? &ct : &lt);
            if (c1 < best) { best = c1; pick->phase[i] = (coll_algo)a; }
        }
        sum = best >= COLL_HIER_NEVER ? COLL_HIER_NEVER : sum + best;
    }
    if (sum < COLL_HIER_NEVER && sum <= flat) { pick->road = COLL_HIER_PHASES; pick->cost = sum; }
    else { pick->road = COLL_HIER_WORLD; pick->cost = flat; }
    return COLL_OK;
}

COLL_API int coll_hier_set_model(coll_hier *h, int on)
{
    if (!coll__hier_ok(h)) return COLL_ERR_INVAL;
    h->model = on != 0;
    return COLL_OK;
}

/* Is the model on (coll_hier_set_model's word, else the default)? */
static int coll__hier_model_on(const coll_hier *h)
{
    return h->model < 0 ? h->tuned : h->model;
}

COLL_API int coll_hier_tune(coll_hier *h, double (*now)(void *ctx), void *ctx)
{
    double v[6];
    coll_tuning lt, ct;
    int rc = COLL_OK;
    if (!coll__hier_ok(h) || !now) return COLL_ERR_INVAL;
    if (!coll__hier_two_levels(h)) return COLL_OK;
    if (coll_size(&h->local) > 1) rc = coll_tune(&h->local, now, ctx);
    if (rc == COLL_OK && coll_size(&h->cross) > 1) rc = coll_tune(&h->cross, now, ctx);
    if (rc != COLL_OK) { h->why = "tune: a level's probe failed"; return rc; }
    coll__hier_tuning_of(&h->local, &lt);
    coll__hier_tuning_of(&h->cross, &ct);
    v[0] = lt.alpha; v[1] = lt.beta; v[2] = lt.gamma; v[3] = ct.alpha; v[4] = ct.beta; v[5] = ct.gamma;
    /* host 0's first rank holds host 0's figures inside and local index 0's across */
    rc = coll_broadcast(h->world, v, 6, COLL_FLOAT64, h->bw[0], COLL_ALGO_AUTO);
    if (rc != COLL_OK) { h->why = "tune: handing the figures on failed"; return rc; }
    lt.alpha = v[0]; lt.beta = v[1]; lt.gamma = v[2]; ct.alpha = v[3]; ct.beta = v[4]; ct.gamma = v[5];
    return coll_hier_set_tuning(h, &lt, &ct);
}

/* With the model on: the pick for a call that may take the phases; 0 to
   keep the phases with AUTO (model off, no formula, or hosts of different
   sizes, whose phases each rank would price on its own host). */
static int coll__hier_model_pick(const coll_hier *h, coll_kind k, size_t count, coll_dtype t, coll_op op,
                                 int root, coll_hier_pick *pk)
{
    if (!coll__hier_model_on(h) || !h->even) return 0;     /* priced alike everywhere only on even hosts */
    if (coll_hier_choose(h, k, count, t, op, root, NULL, NULL, pk) != COLL_OK) return 0;
    return pk->cost < COLL_HIER_NEVER;
}

/* Broadcast across hosts among the root's local-index peers, then inside
   every host from that peer. lg H (a_o + n b_o) + lg L (a_i + n b_i)
   (binomial; AUTO may pipeline either phase). From COLL_HIER_CHAIN_BYTES
   on (model off), one pipelined chain over byhost instead: each byte
   crosses each host link once, as in the phases, but the hops inside and
   across run at once, (p - 1 + k)(a + n/k b) with b the slower link's,
   where the phases pay n b_o and then n b_i. */
COLL_API int coll_hier_broadcast(coll_hier *h, void *buf, size_t count, coll_dtype dtype, int root)
{
    const coll_algo *al = coll__hier_auto3;
    coll_hier_pick pk;
    int rc = COLL_OK;
    if (!coll__hier_ok(h)) return COLL_ERR_INVAL;
    h->why = "";
    if (!coll__hier_two_levels(h) || !coll__hier_esn(h, dtype, count) || !coll__hier_rooted(h, root)) {
        h->road = COLL_HIER_WORLD;
        return coll_broadcast(h->world, buf, count, dtype, root, COLL_ALGO_AUTO);
    }
    if (coll__hier_model_pick(h, COLL_BROADCAST, count, dtype, COLL_SUM, root, &pk)) {
        if (pk.road == COLL_HIER_WORLD) {
            h->road = COLL_HIER_WORLD;
            return coll_broadcast(h->world, buf, count, dtype, root, pk.flat);
        }
        al = pk.phase;
    } else if (count * coll__hier_es(h, dtype) >= (size_t)COLL_HIER_CHAIN_BYTES) {
        /* the chain through the hosts in turn: the hops inside and across overlap */
        h->road = COLL_HIER_BYHOST;
        return coll_broadcast(&h->byhost, buf, count, dtype, h->bpos[root], COLL__HIER_CHAIN);
    }
    h->road = COLL_HIER_PHASES;
    if (h->li == h->lidx[root])
        rc = coll__hier_run_algo(rc, &h->cross, COLL_BROADCAST, buf, buf, count, 0, dtype, COLL_SUM, h->host_of[root], al[0]);
    return coll__hier_run_algo(rc, &h->local, COLL_BROADCAST, buf, buf, count, 0, dtype, COLL_SUM, h->lidx[root], al[1]);
}

/* Reduce inside every host onto the root's local index, then across onto
   the root. The peers of that index keep the host's sum in their dst (a
   non-root's dst is workspace, as in coll.h; work if it is NULL).
   lg L (a_i + n b_i + n g) + lg H (a_o + n b_o + n g) (binomial). */
COLL_API int coll_hier_reduce(coll_hier *h, const void *src, void *dst, size_t count,
                              coll_dtype dtype, coll_op op, int root)
{
    size_t es;
    void *part;
    const coll_algo *al = coll__hier_auto3;
    coll_hier_pick pk;
    int rc = COLL_OK, bridge;
    if (!coll__hier_ok(h)) return COLL_ERR_INVAL;
    h->why = "";
    es = coll__hier_esn(h, dtype, count);
    if (!coll__hier_two_levels(h) || !es || !coll__hier_reduces(h, dtype, op) || !coll__hier_rooted(h, root)) {
        h->road = COLL_HIER_WORLD;
        return coll_reduce(h->world, src, dst, count, dtype, op, root, COLL_ALGO_AUTO);
    }
    if (coll__hier_model_pick(h, COLL_REDUCE, count, dtype, op, root, &pk)) {
        if (pk.road == COLL_HIER_WORLD) {
            h->road = COLL_HIER_WORLD;
            return coll_reduce(h->world, src, dst, count, dtype, op, root, pk.flat);
        }
        al = pk.phase;
    }
    h->road = COLL_HIER_PHASES;
    bridge = h->li == h->lidx[root];
    part = dst;
    if (bridge && !part) {
        if (count * es <= h->work_bytes) part = h->work;
        else { rc = COLL_ERR_INVAL; h->why = "reduce: a non-root without dst needs work of count elements"; }
    }
    rc = coll__hier_run_algo(rc, &h->local, COLL_REDUCE, src, bridge ? part : dst, count, 0, dtype, op, h->lidx[root], al[0]);
    if (bridge)
        rc = coll__hier_run_algo(rc, &h->cross, COLL_REDUCE, part, part, count, 0, dtype, op, h->host_of[root], al[1]);
    return rc;
}

/* Gather inside every host onto the root's local-index peer (the root's
   own host straight into its place in dst), then a gatherv of whole hosts
   across onto the root, in host order, then the root permutes dst into
   world order. (L-1)(a_i + n b_i) + (H-1)(a_o + L n b_o) (linear). */
COLL_API int coll_hier_gather(coll_hier *h, const void *src, void *dst, size_t count,
                              coll_dtype dtype, int root)
{
    size_t es, blk;
    unsigned char *d = (unsigned char *)dst, *g = 0;
    const coll_algo *al = coll__hier_auto3;
    coll_hier_pick pk;
    int rc = COLL_OK, i, me_root;
    if (!coll__hier_ok(h)) return COLL_ERR_INVAL;
    h->why = "";
    es = coll__hier_esn(h, dtype, count);
    if (!coll__hier_two_levels(h) || !es || !coll__hier_rooted(h, root) ||
        coll__hier_need(h, COLL_GATHER, count, es) > h->work_bytes) {
        h->road = COLL_HIER_WORLD;
        return coll_gather(h->world, src, dst, count, dtype, root, COLL_ALGO_AUTO);
    }
    if (coll__hier_model_pick(h, COLL_GATHER, count, dtype, COLL_SUM, root, &pk)) {
        if (pk.road == COLL_HIER_WORLD) {
            h->road = COLL_HIER_WORLD;
            return coll_gather(h->world, src, dst, count, dtype, root, pk.flat);
        }
        al = pk.phase;
    }
    h->road = COLL_HIER_PHASES;
    blk = count * es;
    me_root = h->rank == root;
    if (me_root && !d) { rc = COLL_ERR_INVAL; h->why = "gather: dst NULL at root"; }
    if (h->li == h->lidx[root]) {
        g = me_root && d ? d + (size_t)h->hoff[h->host] * blk : h->work;
        if (me_root && d && (const unsigned char *)src == d + (size_t)root * blk && h->bpos[root] != root && blk) {
            COLL_MEMCPY(d + (size_t)h->bpos[root] * blk, src, blk);     /* in place: to its byhost slot */
            src = d + (size_t)h->bpos[root] * blk;
        }
    }
    rc = coll__hier_run_algo(rc, &h->local, COLL_GATHER, src, g, count, 0, dtype, COLL_SUM, h->lidx[root], al[0]);
    if (h->li == h->lidx[root]) {
        for (i = 0; i < h->nhosts; i++) h->cnt[i] = (size_t)h->hsize[i] * count;
        rc = coll__hier_run_algo(rc, &h->cross, COLL_GATHERV, g, me_root ? d : 0, 0, h->cnt, dtype, COLL_SUM,
                                 h->host_of[root], al[1]);
    }
    if (rc == COLL_OK && me_root && !h->bident) coll__hier_permute(d, blk, h->bpos, h->blead, h->p);
    return rc;
}

/* The reverse of gather: the root puts src in host order (work, unless
   host-major already), scatters whole hosts across to its local-index
   peers, each of which scatters inside its host. */
COLL_API int coll_hier_scatter(coll_hier *h, const void *src, void *dst, size_t count,
                               coll_dtype dtype, int root)
{
    size_t es, blk;
    const unsigned char *s = (const unsigned char *)src;
    unsigned char *g = 0;
    const coll_algo *al = coll__hier_auto3;
    coll_hier_pick pk;
    int rc = COLL_OK, i, me_root;
    if (!coll__hier_ok(h)) return COLL_ERR_INVAL;
    h->why = "";
    es = coll__hier_esn(h, dtype, count);
    if (!coll__hier_two_levels(h) || !es || !coll__hier_rooted(h, root) ||
        coll__hier_need(h, COLL_SCATTER, count, es) > h->work_bytes) {
        h->road = COLL_HIER_WORLD;
        return coll_scatter(h->world, src, dst, count, dtype, root, COLL_ALGO_AUTO);
    }
    if (coll__hier_model_pick(h, COLL_SCATTER, count, dtype, COLL_SUM, root, &pk)) {
        if (pk.road == COLL_HIER_WORLD) {
            h->road = COLL_HIER_WORLD;
            return coll_scatter(h->world, src, dst, count, dtype, root, pk.flat);
        }
        al = pk.phase;
    }
    h->road = COLL_HIER_PHASES;
    blk = count * es;
    me_root = h->rank == root;
    if (me_root && !s) { rc = COLL_ERR_INVAL; h->why = "scatter: src NULL at root"; }
    if (rc == COLL_OK && me_root && !h->bident) {
        coll__hier_scatter_copy(h->work, s, blk, h->bpos, h->p);
        s = h->work;
    }
    if (h->li == h->lidx[root]) {
        g = me_root && s ? (unsigned char *)(uintptr_t)(s + (size_t)h->hoff[h->host] * blk) : h->work;
        for (i = 0; i < h->nhosts; i++) h->cnt[i] = (size_t)h->hsize[i] * count;
        rc = coll__hier_run_algo(rc, &h->cross, COLL_SCATTERV, me_root ? s : 0, g, 0, h->cnt, dtype, COLL_SUM,
                                 h->host_of[root], al[0]);
    }
    return coll__hier_run_algo(rc, &h->local, COLL_SCATTER, g, dst, count, 0, dtype, COLL_SUM, h->lidx[root], al[1]);
}

/* All-to-all inside the host (to local rank i go my H blocks for the
   ranks of local index i: src in local-major order), a transpose so that
   each host's blocks lie together, all-to-all across hosts (L blocks per
   peer), then a permutation from host order into world order. Staged in
   work (p blocks) and dst. (L-1)(a_i + H n b_i) + (H-1)(a_o + L n b_o). */
COLL_API int coll_hier_alltoall(coll_hier *h, const void *src, void *dst, size_t count,
                                coll_dtype dtype)
{
    size_t es, blk, H, L;
    unsigned char *d = (unsigned char *)dst, *w = h ? h->work : 0;
    const coll_algo *al = coll__hier_auto3;
    coll_hier_pick pk;
    int rc, j, k;
    if (!coll__hier_ok(h)) return COLL_ERR_INVAL;
    h->why = "";
    es = coll__hier_esn(h, dtype, count);
    if (!coll__hier_two_levels(h) || !es || !h->even ||
        coll__hier_need(h, COLL_ALLTOALL, count, es) > h->work_bytes) {
        h->road = COLL_HIER_WORLD;
        return coll_alltoall(h->world, src, dst, count, dtype, COLL_ALGO_AUTO);
    }
    if (coll__hier_model_pick(h, COLL_ALLTOALL, count, dtype, COLL_SUM, 0, &pk)) {
        if (pk.road == COLL_HIER_WORLD) {
            h->road = COLL_HIER_WORLD;
            return coll_alltoall(h->world, src, dst, count, dtype, pk.flat);
        }
        al = pk.phase;
    }
    h->road = COLL_HIER_PHASES;
    blk = count * es; H = (size_t)h->nhosts; L = (size_t)h->lmax;
    if ((!src || !d) && blk) {          /* refused in the first phase, told on */
        h->why = "alltoall: src or dst NULL";
        rc = coll__hier_run_algo(COLL_ERR_INVAL, &h->local, COLL_ALLTOALL, src, d, H * count, 0, dtype, COLL_SUM, 0, al[0]);
        return coll__hier_run_algo(rc, &h->cross, COLL_ALLTOALL, src, d, L * count, 0, dtype, COLL_SUM, 0, al[1]);
    }
    if ((const unsigned char *)src == d) {     /* in place: dst holds the input */
        if (!h->tident) coll__hier_permute(d, blk, h->tw, h->tlead, h->p);
        rc = coll__hier_run_algo(COLL_OK, &h->local, COLL_ALLTOALL, d, w, H * count, 0, dtype, COLL_SUM, 0, al[0]);
        for (j = 0; rc == COLL_OK && blk && j < (int)L; j++)         /* [j][host] -> [host][j] */
            for (k = 0; k < (int)H; k++)
                COLL_MEMCPY(d + ((size_t)k * L + (size_t)j) * blk, w + ((size_t)j * H + (size_t)k) * blk, blk);
        rc = coll__hier_run_algo(rc, &h->cross, COLL_ALLTOALL, d, w, L * count, 0, dtype, COLL_SUM, 0, al[1]);
        if (rc == COLL_OK) coll__hier_scatter_copy(d, w, blk, h->bw, h->p);
        return rc;
    }
    if (!h->tident) coll__hier_scatter_copy(w, (const unsigned char *)src, blk, h->tpos, h->p);
    rc = coll__hier_run_algo(COLL_OK, &h->local, COLL_ALLTOALL, h->tident ? src : (const void *)w, d, H * count, 0, dtype, COLL_SUM, 0, al[0]);
    for (j = 0; rc == COLL_OK && blk && j < (int)L; j++)
        for (k = 0; k < (int)H; k++)
            COLL_MEMCPY(w + ((size_t)k * L + (size_t)j) * blk, d + ((size_t)j * H + (size_t)k) * blk, blk);
    rc = coll__hier_run_algo(rc, &h->cross, COLL_ALLTOALL, w, d, L * count, 0, dtype, COLL_SUM, 0, al[1]);
    if (rc == COLL_OK && !h->bident) coll__hier_permute(d, blk, h->bpos, h->blead, h->p);
    return rc;
}

/* Barrier inside the host (everyone here has arrived), across among local
   index 0 (every host has arrived), inside again (the release).
   2 lg L a_i + lg H a_o. */
COLL_API int coll_hier_barrier(coll_hier *h)
{
    const coll_algo *al = coll__hier_auto3;
    coll_hier_pick pk;
    int rc;
    if (!coll__hier_ok(h)) return COLL_ERR_INVAL;
    h->why = "";
    if (!coll__hier_two_levels(h)) {
        h->road = COLL_HIER_WORLD;
        return coll_barrier(h->world, COLL_ALGO_AUTO);
    }
    if (coll__hier_model_pick(h, COLL_BARRIER, 0, COLL_UINT8, COLL_SUM, 0, &pk)) {
        if (pk.road == COLL_HIER_WORLD) {
            h->road = COLL_HIER_WORLD;
            return coll_barrier(h->world, pk.flat);
        }
        al = pk.phase;
    }
    h->road = COLL_HIER_PHASES;
    rc = coll__hier_run_algo(COLL_OK, &h->local, COLL_BARRIER, 0, 0, 0, 0, COLL_UINT8, COLL_SUM, 0, al[0]);
    if (h->li == 0) rc = coll__hier_run_algo(rc, &h->cross, COLL_BARRIER, 0, 0, 0, 0, COLL_UINT8, COLL_SUM, 0, al[1]);
    return coll__hier_run_algo(rc, &h->local, COLL_BARRIER, 0, 0, 0, 0, COLL_UINT8, COLL_SUM, 0, al[2]);
}

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#endif /* COLL_IMPLEMENTATION */

/* LICENCE: MIT, as coll.h. */
