/* sched_sim.h - every rank's buffers, step by step, computed from the
   schedules alone (shared by tools/trace.c and tools/diagrams.c).

   A schedule is a pure function (rank, ranks, count, step) -> one step, so
   the whole collective can be played on paper: at step s ask every rank
   what it does, take each message out of its sender's buffer as it was
   before the step, and put it into the receiver's buffer (copied, or
   reduced with the operand the step names). Add the local moves the
   library makes before the first step (your own block into place) and
   after the last (the average's division, Bruck's rotation), and the
   result must be what the library computes over a real port.

   Include after coll.h with COLL_IMPLEMENTATION. coll_describe gives the
   peers, byte ranges and copy/reduce of a step; the simulation also needs
   the reduce's other operand and the strided spans of Bruck's all-to-all,
   which coll_describe does not report, so it reads the schedule's own step
   (coll__step) and checks that it agrees with coll_describe on the rest.

   Values are kept as doubles (small whole numbers by default, exact in
   every supported dtype); UNSET (NaN) marks bytes nothing has written. */
#ifndef SCHED_SIM_H
#define SCHED_SIM_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#define SIM_MAX_RANKS 16
#define SIM_MAX_ELEMS 4096          /* per rank: src and dst together */
#define SIM_MAX_STEPS 512
#define SIM_UNSET     NAN

typedef struct sim_cfg {
    coll_kind kind;
    coll_algo algo;
    int p, root, group, inplace;
    size_t n;                       /* count as the API takes it            */
    size_t counts[SIM_MAX_RANKS * SIM_MAX_RANKS];   /* the v forms; alltoallv's
                                       p x p matrix (row i: what rank i sends) */
    coll_dtype dtype;
    coll_op op;
    size_t scratch;                 /* bytes per rank (pipeline chunk size) */
} sim_cfg;

/* One rank: an arena holding src and dst (overlapping when in place). */
typedef struct sim_rank {
    double arena[SIM_MAX_ELEMS];
    size_t arena_n, src_off, dst_off, src_n, dst_n, mine, mine_n;
    size_t src_off0;                /* src as the caller passed it          */
    int src_is_dst;                 /* after the start: src aliases dst     */
    size_t room_off, room_b;        /* a small call's room (dissemination):
                                       p blocks of room_b elements          */
} sim_rank;

/* One message, from its sender's step to its receiver's. */
typedef struct sim_msg {
    int from, to;
    int sent_round, recv_round, sent_step, recv_step;
    int sbuf, rbuf, abuf, reduce;
    size_t soff, slen, roff, rlen, aoff, srun, sstride, rrun, rstride;
} sim_msg;

#define SIM_MAX_QUEUED 64           /* messages sent and not yet received   */

#define SIM_MAX_SCRATCH 65536

/* Stand-ins for the buffers: the planner sees addresses (for the in-place
   layout) but the simulation never touches them. */
static unsigned char sim__space[SIM_MAX_ELEMS * 8];
static unsigned char sim__scratch[SIM_MAX_SCRATCH];

typedef struct sim {
    sim_cfg cfg;
    coll_comm comm[SIM_MAX_RANKS];
    coll_args args[SIM_MAX_RANKS];
    coll__plan pl[SIM_MAX_RANKS];
    coll__schedule f;
    size_t es;
    sim_rank rk[SIM_MAX_RANKS];
    double init[SIM_MAX_RANKS][SIM_MAX_ELEMS];   /* arenas at the start     */
    int round;                      /* rounds played                         */
    int cur[SIM_MAX_RANKS];         /* each rank's next step                 */
    int loaded[SIM_MAX_RANKS], posted[SIM_MAX_RANKS], done[SIM_MAX_RANKS];
    coll__step st[SIM_MAX_RANKS];
    sim_msg q[SIM_MAX_QUEUED];      /* in flight, in sending order           */
    double qdata[SIM_MAX_QUEUED][SIM_MAX_ELEMS];
    int nq;
    int deadlock;
    int describe_mismatch;          /* steps where coll_describe disagreed  */
    int pair_mismatch;              /* a send with no matching receive      */
    char err[200];
} sim;

static int sim__nop_send(void *ctx, int peer, const void *b, size_t n)
{ (void)ctx; (void)peer; (void)b; (void)n; return COLL_ERR_NOSYS; }
static int sim__nop_recv(void *ctx, int peer, void *b, size_t n)
{ (void)ctx; (void)peer; (void)b; (void)n; return COLL_ERR_NOSYS; }

/* Does this algorithm fold a non-power-of-two p onto p2 ranks? */
static int sim_folds(coll_algo a)
{
    return a == COLL_ALGO_RECURSIVE_DOUBLING || a == COLL_ALGO_RABENSEIFNER ||
           a == COLL_ALGO_RECURSIVE_HALVING || a == COLL_ALGO_REDUCE_SCATTER_GATHER || a == COLL_ALGO_SWING;
}

static int sim_is_v(coll_kind k)
{
    return k == COLL_ALLGATHERV || k == COLL_REDUCE_SCATTERV || k == COLL_GATHERV || k == COLL_SCATTERV;
}
/* Does this rank's row of the registry begin by working in place (its
   begin hook copies src to dst)? The library's answer, not a list. */
static int sim__works_in_place(const coll__plan *pl)
{
    const coll__entry *e = coll__entry_of(pl->kind, pl->algo);
    return e && (COLL__BEGIN(e) == coll__work_in_place || (COLL__BEGIN(e) == coll__root_in_place && pl->rank == pl->root));
}

/* Does this rank's row rotate its work buffer so that its own block comes
   first, and back after the last step (its begin hook says so)? */
static int sim__rotates(const coll__plan *pl)
{
    const coll__entry *e = coll__entry_of(pl->kind, pl->algo);
    return e && COLL__BEGIN(e) == coll__rbruck_begin && pl->p > 1 && pl->total > 0;
}

/* Rotate n values left by k: v[i] takes v[(i + k) mod n]. */
static void sim__rotate(double *to, const double *from, size_t n, size_t k)
{
    static double tmp[SIM_MAX_ELEMS];
    size_t i;
    for (i = 0; i < n; i++) tmp[i] = from[(i + k) % n];
    memcpy(to, tmp, n * sizeof *to);
}

static int sim_is_scan(coll_kind k) { return k == COLL_SCAN || k == COLL_EXSCAN; }

/* Alltoallv: where block j of rank r's src (row) or dst (column) starts. */
static size_t sim__a2av_off(const sim_cfg *c, int r, int j, int column)
{
    size_t off = 0, P = (size_t)c->p;
    int i;
    for (i = 0; i < j; i++) off += column ? c->counts[(size_t)i * P + (size_t)r] : c->counts[(size_t)r * P + (size_t)i];
    return off;
}

/* Element counts of src and dst and where rank r's own block starts. */
static void sim__sizes(const sim_cfg *c, int r, size_t *in_n, size_t *out_n,
                       size_t *mine, size_t *mine_n)
{
    size_t total = 0, off = 0, n = c->n, P = (size_t)c->p;
    int i;
    if (c->kind == COLL_ALLTOALLV) {
        *mine = sim__a2av_off(c, r, r, 0); *mine_n = c->counts[(size_t)r * P + (size_t)r];
        *in_n = sim__a2av_off(c, r, c->p, 0); *out_n = sim__a2av_off(c, r, c->p, 1);
        return;
    }
    if (sim_is_v(c->kind)) {
        for (i = 0; i < c->p; i++) { if (i < r) off += c->counts[i]; total += c->counts[i]; }
        *mine = off; *mine_n = c->counts[r];
    } else { *mine = (size_t)r * n; *mine_n = n; total = n * P; }
    switch (c->kind) {
    case COLL_ALLREDUCE: case COLL_REDUCE: case COLL_BROADCAST: case COLL_SCAN: case COLL_EXSCAN:
        *in_n = *out_n = n; break;
    case COLL_REDUCE_SCATTER: case COLL_REDUCE_SCATTERV:
        *in_n = total; *out_n = *mine_n; break;
    case COLL_ALLGATHER: case COLL_ALLGATHERV: case COLL_GATHER: case COLL_GATHERV:
        *in_n = *mine_n; *out_n = total; break;
    case COLL_SCATTER: case COLL_SCATTERV: *in_n = total; *out_n = *mine_n; break;
    case COLL_ALLTOALL: *in_n = *out_n = total; break;
    default: *in_n = *out_n = 0; break;
    }
}

/* The value rank r starts with at element i of its input. Whole numbers,
   small enough that every sum and product below stays exact. */
static double sim_value(const sim_cfg *c, int r, size_t i)
{
    if (c->op == COLL_PROD) return (double)(1 + (r + (int)i) % 3);
    if (c->op >= COLL_BAND && c->op <= COLL_BXOR) return (double)((r * 5 + (int)i * 3) % 16);
    if (c->kind == COLL_ALLTOALL || c->kind == COLL_ALLTOALLV || c->kind == COLL_SCATTER || sim_is_v(c->kind) ||
        c->kind == COLL_REDUCE_SCATTER)
        return (double)((r + 1) * 100 + (int)i);
    return (double)((r + 1) * 100 + (int)i % 100);
}

static double sim__apply(coll_op op, double a, double b)
{
    long long x = (long long)a, y = (long long)b;
    switch (op) {
    case COLL_PROD: return a * b;
    case COLL_MIN:  return a < b ? a : b;
    case COLL_MAX:  return a > b ? a : b;
    case COLL_BAND: return (double)(x & y);
    case COLL_BOR:  return (double)(x | y);
    case COLL_BXOR: return (double)(x ^ y);
    default:        return a + b;        /* sum, and avg before its division */
    }
}

static int sim__is_int(coll_dtype t) { return t <= COLL_UINT64; }

/* The average's one division, as the library does it per dtype. */
static double sim__div(coll_dtype t, double v, int p)
{
    if (sim__is_int(t)) return (double)((long long)v / p);
    if (t == COLL_FLOAT32) return (double)((float)v / (float)p);
    return v / p;
}

static size_t sim__buf_off(const sim_rank *k, int buf)
{
    return buf == COLL_BUF_ROOM ? k->room_off : buf == COLL_BUF_SRC ? k->src_off : k->dst_off;
}

/* Does this rank's row keep its blocks in the request's room (a small
   call's dissemination gather)? The library's answer, not a list. */
static int sim__room(const coll__plan *pl)
{
    const coll__entry *e = coll__entry_of(pl->kind, pl->algo);
    return e && COLL__IN_ROOM(e);
}

/* Room block of rank q on rank r (block j holds rank r - j's). */
static double *sim__room_block(sim_rank *k, int r, int q, int p)
{
    return k->arena + k->room_off + (size_t)(((r - q) % p + p) % p) * k->room_b;
}

/* Element i of a (possibly strided) span: its index in the arena. */
static size_t sim__at(const sim_rank *k, int buf, size_t off, size_t run, size_t stride, size_t i)
{
    size_t e = run ? off + i / run * stride + i % run : off + i;
    return sim__buf_off(k, buf) + e;
}

/* What the schedule functions read: the library's plan, rebuilt from the
   arguments (the same fields coll_start fills in). */
static void sim__plan(const sim *s, int r, coll__plan *pl)
{
    const sim_cfg *c = &s->cfg;
    int i;
    memset(pl, 0, sizeof *pl);
    pl->kind = c->kind; pl->algo = c->algo; pl->rank = r; pl->p = c->p;
    pl->root = c->root; pl->group = c->group;
    for (pl->p2 = 1; pl->p2 * 2 <= c->p; pl->p2 *= 2) {}
    pl->rem = c->p - pl->p2;
    if (c->kind == COLL_BARRIER) { pl->count = pl->total = pl->chunk = 1; return; }
    if (c->kind == COLL_ALLTOALLV) {
        pl->counts = c->counts;
        pl->count = sim__a2av_off(c, r, c->p, 0);
        for (i = 0; i < c->p * c->p; i++) pl->total += c->counts[i];
    } else if (sim_is_v(c->kind)) {
        pl->counts = c->counts;
        pl->count = c->counts[r];
        for (i = 0; i < c->p; i++) pl->total += c->counts[i];
    } else {
        pl->count = c->n;
        pl->total = c->kind == COLL_ALLREDUCE || c->kind == COLL_REDUCE ||
                    c->kind == COLL_BROADCAST ? c->n : c->n * (size_t)c->p;
    }
    pl->chunk = s->comm[r].segment ? s->comm[r].segment / s->es : pl->count;
    if (pl->chunk == 0) pl->chunk = 1;
    pl->inplace = c->kind == COLL_BROADCAST ? 1 : c->kind == COLL_ALLTOALL ? 0 : c->inplace;
}

/* Set up the simulation of one collective: 0, or -1 with s->err set (the
   library refuses the call: the message says why). */
static int sim_init(sim *s, const sim_cfg *cfg)
{
    coll_port port;
    int r, rc;
    size_t in_n, out_n, mine, mine_n, i;
    memset(s, 0, sizeof *s);
    s->cfg = *cfg;
    if (cfg->p < 1 || cfg->p > SIM_MAX_RANKS) {
        snprintf(s->err, sizeof s->err, "ranks must be 1..%d", SIM_MAX_RANKS);
        return -1;
    }
    memset(&port, 0, sizeof port);
    port.send = sim__nop_send; port.recv = sim__nop_recv;
    for (r = 0; r < cfg->p; r++) {
        sim_rank *k = &s->rk[r];
        coll_args *a = &s->args[r];
        size_t sb = cfg->scratch < SIM_MAX_SCRATCH ? cfg->scratch : SIM_MAX_SCRATCH;
        coll_init(&s->comm[r], r, cfg->p, &port, sim__scratch, sb);
        sim__sizes(cfg, r, &in_n, &out_n, &mine, &mine_n);
        k->src_n = in_n; k->dst_n = out_n; k->mine = mine; k->mine_n = mine_n;
        if (cfg->kind == COLL_BROADCAST || (cfg->inplace && (cfg->kind == COLL_ALLREDUCE ||
                                                            cfg->kind == COLL_REDUCE ||
                                                            sim_is_scan(cfg->kind) ||
                                                            cfg->kind == COLL_ALLTOALL ||
                                                            cfg->kind == COLL_ALLTOALLV))) {
            k->src_off = k->dst_off = 0; k->arena_n = out_n;
        } else if (cfg->inplace && (cfg->kind == COLL_REDUCE_SCATTER ||
                                    cfg->kind == COLL_REDUCE_SCATTERV || cfg->kind == COLL_SCATTER ||
                                    cfg->kind == COLL_SCATTERV)) {
            k->src_off = 0; k->dst_off = mine; k->arena_n = in_n;
        } else if (cfg->inplace && (cfg->kind == COLL_ALLGATHER ||
                                    cfg->kind == COLL_ALLGATHERV || cfg->kind == COLL_GATHER ||
                                    cfg->kind == COLL_GATHERV)) {
            k->dst_off = 0; k->src_off = mine; k->arena_n = out_n;
        } else {
            k->src_off = 0; k->dst_off = in_n; k->arena_n = in_n + out_n;
        }
        if (k->arena_n > SIM_MAX_ELEMS) {
            snprintf(s->err, sizeof s->err, "too many elements (at most %d per rank)", SIM_MAX_ELEMS);
            return -1;
        }
        k->src_off0 = k->src_off;
        for (i = 0; i < k->arena_n; i++) k->arena[i] = SIM_UNSET;
        if (cfg->kind == COLL_BROADCAST) {
            if (r == cfg->root) for (i = 0; i < out_n; i++) k->arena[i] = sim_value(cfg, r, i);
        } else if (cfg->kind != COLL_BARRIER) {
            for (i = 0; i < in_n; i++) k->arena[k->src_off + i] = sim_value(cfg, r, i);
        }
        memcpy(s->init[r], k->arena, k->arena_n * sizeof(double));
        memset(a, 0, sizeof *a);
        a->kind = cfg->kind; a->algo = cfg->algo; a->count = cfg->n; a->dtype = cfg->dtype;
        a->op = cfg->op; a->root = cfg->root; a->group = cfg->group;
        a->counts = sim_is_v(cfg->kind) || cfg->kind == COLL_ALLTOALLV ? cfg->counts : 0;
    }
    /* the same layout as the real buffers, in bytes of the dtype */
    s->es = cfg->kind == COLL_BARRIER ? 1 : coll_dtype_size(cfg->dtype);
    if (s->es == 0 || s->es > 8) {
        snprintf(s->err, sizeof s->err, "dtype not shown here");
        return -1;
    }
    for (r = 0; r < cfg->p; r++)
        if (cfg->kind != COLL_BARRIER) {
            s->args[r].src = sim__space + s->rk[r].src_off * s->es;
            s->args[r].dst = sim__space + s->rk[r].dst_off * s->es;
        }
    if (cfg->algo == COLL_ALGO_AUTO) {
        coll_algo a = coll_choose(&s->comm[0], &s->args[0]);
        for (r = 0; r < cfg->p; r++) s->args[r].algo = a;
        s->cfg.algo = a;
    }
    for (r = 0; r < cfg->p; r++) {
        coll_xfer x;
        rc = coll_describe(&s->comm[r], &s->args[r], 0, &x);
        if (rc < 0) {
            snprintf(s->err, sizeof s->err, "the library refuses it: %s", coll_result_str(rc));
            return -1;
        }
        sim__plan(s, r, &s->pl[r]);
    }
    for (r = 0; r < cfg->p && sim__room(&s->pl[0]); r++) {   /* the room, behind src and dst */
        sim_rank *k = &s->rk[r];
        k->room_b = cfg->kind == COLL_REDUCE_SCATTER || cfg->kind == COLL_ALLTOALL ||
                    cfg->kind == COLL_SCATTER ? cfg->n * (size_t)cfg->p : cfg->n;
        k->room_off = k->arena_n;
        if (k->arena_n + (size_t)cfg->p * k->room_b > SIM_MAX_ELEMS) {
            snprintf(s->err, sizeof s->err, "too many elements (at most %d per rank)", SIM_MAX_ELEMS);
            return -1;
        }
        for (i = 0; i < (size_t)cfg->p * k->room_b; i++) k->arena[k->arena_n + i] = SIM_UNSET;
    }
    s->cfg.algo = s->pl[0].algo;
    s->f = coll__find(s->pl[0].kind, s->pl[0].algo);
    return 0;
}

/* The local moves before step 0 (as coll_start makes them). */
static void sim_start(sim *s)
{
    const sim_cfg *c = &s->cfg;
    int r, j, p = c->p;
    size_t i;
    for (r = 0; r < p; r++) {
        sim_rank *k = &s->rk[r];
        double *A = k->arena;
        if (c->kind == COLL_BARRIER) continue;
        if (sim__room(&s->pl[r]) && !(p == 1 && coll__reduces(c->kind))) {
            /* this rank's contribution into room block 0 (a broadcast's or
               scatter's root alone has one) */
            if ((c->kind != COLL_BROADCAST && c->kind != COLL_SCATTER) || r == c->root)
                for (i = 0; i < k->room_b; i++) A[k->room_off + i] = A[k->src_off + i];
            continue;
        }
        switch (c->kind) {
        case COLL_ALLREDUCE: case COLL_REDUCE: case COLL_SCAN: case COLL_EXSCAN:
            if (sim__rotates(&s->pl[r])) {          /* dst takes src, own block first */
                size_t off, len;
                coll__block(&s->pl[r], r, &off, &len);
                sim__rotate(A + k->dst_off, A + k->src_off, c->n, off);
            } else if (p == 1 || sim__works_in_place(&s->pl[r])) {
                for (i = 0; i < c->n; i++) A[k->dst_off + i] = A[k->src_off + i];
                k->src_off = k->dst_off; k->src_is_dst = 1;
                s->pl[r].inplace = 1;
            }
            break;
        case COLL_REDUCE_SCATTER: case COLL_REDUCE_SCATTERV:
            if (p == 1) for (i = 0; i < k->mine_n; i++) A[k->dst_off + i] = A[k->src_off + k->mine + i];
            if (sim__rotates(&s->pl[r]))             /* src, own block first */
                sim__rotate(A + k->src_off, A + k->src_off, s->pl[r].total, k->mine);
            break;
        case COLL_ALLGATHER: case COLL_ALLGATHERV:
            if (s->pl[r].algo != COLL_ALGO_BRUCK) {
                if (k->dst_off + k->mine != k->src_off)
                    for (i = 0; i < k->mine_n; i++) A[k->dst_off + k->mine + i] = A[k->src_off + i];
            } else {
                for (i = 0; i < k->mine_n; i++) A[k->dst_off + i] = A[k->src_off + i];   /* moving down */
            }
            break;
        case COLL_GATHER: case COLL_GATHERV:
            if ((r == c->root || s->pl[r].algo == COLL_ALGO_BINOMIAL) && k->dst_off + k->mine != k->src_off)
                for (i = 0; i < k->mine_n; i++) A[k->dst_off + k->mine + i] = A[k->src_off + i];
            break;
        case COLL_ALLTOALLV:      /* the block a rank sends itself */
            for (i = 0; i < k->mine_n; i++)
                A[k->dst_off + sim__a2av_off(c, r, r, 1) + i] = A[k->src_off + k->mine + i];
            break;
        case COLL_ALLTOALL:
            if (s->pl[r].algo != COLL_ALGO_BRUCK) {
                for (i = 0; i < c->n; i++) A[k->dst_off + k->mine + i] = A[k->src_off + k->mine + i];
            } else {
                for (j = 0; j < p; j++)
                    for (i = 0; i < c->n; i++)
                        A[k->dst_off + (size_t)j * c->n + i] = A[k->src_off + (size_t)((r + j) % p) * c->n + i];
            }
            break;
        default: break;
        }
    }
}

/* Play one round. A round: every rank that has not yet posted the send
   of its current step posts it (the data leave as the buffer is now); then
   every rank whose current step's receive has arrived (messages between a
   pair keep their order) takes it in and moves to its next step. For the
   schedules whose ranks all move in lockstep a round is a step; pipelined
   ones let ranks run ahead. Fills ev[0..*nev) with the messages received
   in this round and returns 1; returns 0 when every rank is past its last
   step (or nothing can move: s->deadlock). */
static int sim_round(sim *s, sim_msg ev[SIM_MAX_QUEUED], int *n_ev)
{
    const sim_cfg *c = &s->cfg;
    int r, p = c->p, nev = 0, moved = 0, all_done = 1, got[SIM_MAX_RANKS];
    size_t i;
    *n_ev = 0;
    for (r = 0; r < p; r++) {
        coll__step *st = &s->st[r];
        if (s->done[r] || s->loaded[r]) { all_done &= s->done[r]; continue; }
        if (!s->f(&s->pl[r], s->cur[r], st)) { s->done[r] = 1; continue; }
        all_done = 0;
        if (st->sbuf == COLL_BUF_ROOM) { st->soff *= s->rk[r].room_b; st->slen *= s->rk[r].room_b; }
        if (st->rbuf == COLL_BUF_ROOM) { st->roff *= s->rk[r].room_b; st->rlen *= s->rk[r].room_b; }
        s->loaded[r] = 1; s->posted[r] = 0;
        if (c->kind == COLL_BROADCAST && st->sbuf != COLL_BUF_ROOM) st->sbuf = st->rbuf = st->abuf = COLL_BUF_DST;
        if (s->rk[r].src_is_dst) {
            if (st->sbuf == COLL_BUF_SRC) st->sbuf = COLL_BUF_DST;
            if (st->abuf == COLL_BUF_SRC) st->abuf = COLL_BUF_DST;
            if (st->rbuf == COLL_BUF_SRC) st->rbuf = COLL_BUF_DST;
        }
        {   /* the public description must tell the same story */
            coll_xfer x;
            coll__step o;
            int d = coll_describe(&s->comm[r], &s->args[r], s->cur[r], &x);
            size_t u = sim__room(&s->pl[r]) ? coll__room_blk(&s->pl[r], s->es) : s->es;   /* room: blocks */
            s->f(&s->pl[r], s->cur[r], &o);
            if (d != 1 || x.send_to != o.to || x.recv_from != o.from ||
                (o.to >= 0 && (x.send_offset != o.soff * u || x.send_bytes != o.slen * u)) ||
                (o.from >= 0 && (x.recv_offset != o.roff * u || x.recv_bytes != o.rlen * u ||
                                 !x.reduce != !o.reduce)))
                s->describe_mismatch++;
        }
    }
    if (all_done) {
        if (s->nq) s->pair_mismatch += s->nq;       /* sent, never received */
        return 0;
    }
    /* sends leave with the senders' buffers as they are now */
    for (r = 0; r < p; r++) {
        coll__step *st = &s->st[r];
        sim_msg *m;
        if (!s->loaded[r] || s->posted[r]) continue;
        s->posted[r] = 1;
        if (st->to < 0) continue;
        if (s->nq == SIM_MAX_QUEUED) { s->deadlock = 1; return 0; }
        m = &s->q[s->nq];
        memset(m, 0, sizeof *m);
        m->from = r; m->to = st->to; m->sent_round = s->round; m->sent_step = s->cur[r];
        m->sbuf = st->sbuf; m->soff = st->soff; m->slen = st->slen;
        m->srun = st->srun; m->sstride = st->sstride;
        if (c->kind != COLL_BARRIER)
            for (i = 0; i < st->slen && i < SIM_MAX_ELEMS; i++)
                s->qdata[s->nq][i] = s->rk[r].arena[sim__at(&s->rk[r], st->sbuf, st->soff, st->srun,
                                                            st->sstride, i)];
        s->nq++;
    }
    /* receives: the oldest message from the peer, if it is there */
    for (r = 0; r < p; r++) {
        coll__step *st = &s->st[r];
        sim_rank *k = &s->rk[r];
        int j;
        got[r] = 0;
        if (!s->loaded[r]) continue;
        if (st->from < 0) { got[r] = 1; continue; }
        for (j = 0; j < s->nq; j++)
            if (s->q[j].from == st->from && s->q[j].to == r) break;
        if (j == s->nq) continue;                           /* not yet */
        got[r] = 1;
        ev[nev] = s->q[j];
        ev[nev].recv_step = s->cur[r];
        ev[nev].recv_round = s->round;
        ev[nev].rbuf = st->rbuf; ev[nev].roff = st->roff; ev[nev].rlen = st->rlen;
        ev[nev].rrun = st->rrun; ev[nev].rstride = st->rstride;
        ev[nev].abuf = st->abuf; ev[nev].aoff = st->aoff; ev[nev].reduce = st->reduce;
        if (s->q[j].slen != st->rlen) s->pair_mismatch++;
        if (c->kind != COLL_BARRIER)
            for (i = 0; i < st->rlen && i < s->q[j].slen; i++) {
                size_t at = sim__at(k, st->rbuf, st->roff, st->rrun, st->rstride, i);
                double v = s->qdata[j][i];
                if (st->reduce) {     /* 2: the received operand on the left */
                    double a = k->arena[sim__buf_off(k, st->abuf) + st->aoff + i];
                    k->arena[at] = st->reduce == 2 ? sim__apply(c->op, v, a) : sim__apply(c->op, a, v);
                } else k->arena[at] = v;
            }
        nev++;
        memmove(&s->q[j], &s->q[j + 1], (size_t)(s->nq - j - 1) * sizeof s->q[0]);
        memmove(s->qdata[j], s->qdata[j + 1], (size_t)(s->nq - j - 1) * sizeof s->qdata[0]);
        s->nq--;
    }
    for (r = 0; r < p; r++)
        if (s->loaded[r] && got[r]) { s->loaded[r] = 0; s->cur[r]++; moved = 1; }
    if (!moved) { s->deadlock = 1; s->pair_mismatch++; return 0; }
    s->round++;
    if (s->round > SIM_MAX_STEPS) { s->deadlock = 1; return 0; }
    *n_ev = nev;
    return 1;
}

/* The local moves after the last step (as the library finishes). Returns
   a short description, or "" if nothing moves. */
static const char *sim_finish(sim *s)
{
    const sim_cfg *c = &s->cfg;
    int r, p = c->p;
    size_t i;
    const char *what = "";
    static double tmp[SIM_MAX_ELEMS];
    for (r = 0; r < p; r++) {
        sim_rank *k = &s->rk[r];
        double *D = k->arena + k->dst_off, *S = k->arena + k->src_off;
        coll_algo a = s->pl[r].algo;
        if (sim__room(&s->pl[r]) && !(p == 1 && coll__reduces(c->kind))) {
            int q, red = c->kind == COLL_ALLREDUCE || c->kind == COLL_REDUCE_SCATTER ||
                         (c->kind == COLL_REDUCE && r == c->root);
            size_t n = c->n, at = c->kind == COLL_REDUCE_SCATTER ? k->mine : 0;
            what = "each rank computes its result from the p blocks (reduced in rank order)";
            if (red)
                for (i = 0; i < n; i++) {
                    double v = sim__room_block(k, r, 0, p)[at + i];
                    for (q = 1; q < p; q++) v = sim__apply(c->op, v, sim__room_block(k, r, q, p)[at + i]);
                    D[i] = c->op == COLL_AVG ? sim__div(c->dtype, v, p) : v;
                }
            else if (c->kind == COLL_BROADCAST && r != c->root)
                for (i = 0; i < n; i++) D[i] = sim__room_block(k, r, c->root, p)[i];
            else if (c->kind == COLL_ALLGATHER || (c->kind == COLL_GATHER && r == c->root))
                for (q = 0; q < p; q++) for (i = 0; i < n; i++) D[(size_t)q * n + i] = sim__room_block(k, r, q, p)[i];
            else if (c->kind == COLL_SCATTER)
                for (i = 0; i < n; i++) D[i] = sim__room_block(k, r, c->root, p)[k->mine + i];
            else if (c->kind == COLL_ALLTOALL)
                for (q = 0; q < p; q++) for (i = 0; i < n; i++) D[(size_t)q * n + i] = sim__room_block(k, r, q, p)[(size_t)r * n + i];
            continue;
        }
        if (sim__rotates(&s->pl[r])) {              /* the work buffer back in rank order */
            size_t off, len, n = s->pl[r].total;
            double *W = c->kind == COLL_ALLREDUCE ? D : S;
            coll__block(&s->pl[r], r, &off, &len);
            sim__rotate(W, W, n, n - off);
            what = "each rank rotates its blocks back into rank order";
        }
        if ((c->kind == COLL_SCATTER || c->kind == COLL_SCATTERV) && (a == COLL_ALGO_BINOMIAL || r == c->root)) {
            if (k->dst_off != k->src_off + k->mine)
                for (i = 0; i < k->mine_n; i++) D[i] = S[k->mine + i];
            what = "each rank copies its own block out of the workspace";
        } else if (c->kind == COLL_ALLTOALL && a == COLL_ALGO_BRUCK) {
            int j;
            for (j = 0; j < p; j++) {
                int from = ((r - j) % p + p) % p;
                for (i = 0; i < c->n; i++) tmp[(size_t)from * c->n + i] = D[(size_t)j * c->n + i];
            }
            memcpy(D, tmp, (size_t)p * c->n * sizeof(double));
            what = "each rank puts the blocks back in rank order (block j came from rank r-j)";
        } else if (a == COLL_ALGO_BRUCK && p > 1) {
            size_t n = s->pl[r].total, m = n - k->mine;
            for (i = 0; i < n; i++) tmp[i] = i < k->mine ? D[m + i] : D[i - k->mine];
            memcpy(D, tmp, n * sizeof(double));
            what = "each rank rotates its blocks into rank order";
        } else if (c->op == COLL_AVG && (c->kind == COLL_ALLREDUCE || c->kind == COLL_REDUCE_SCATTER ||
                   c->kind == COLL_REDUCE_SCATTERV || (c->kind == COLL_REDUCE && r == c->root))) {
            size_t len = c->kind == COLL_ALLREDUCE || c->kind == COLL_REDUCE ? c->n : k->mine_n;
            for (i = 0; i < len; i++) D[i] = sim__div(c->dtype, D[i], p);
            what = "avg: each result is divided once by the number of ranks";
        } else if (c->op == COLL_AVG && sim_is_scan(c->kind)) {
            int d = c->kind == COLL_SCAN ? r + 1 : (r ? r : 1);
            for (i = 0; i < c->n; i++) D[i] = sim__div(c->dtype, D[i], d);
            what = "avg: each prefix is divided once by the ranks it covers";
        }
    }
    return what;
}

/* The plain-loop answer for rank r's result, and where it must be (dst,
   `len` elements). Returns 0 if rank r has no result to check. */
static int sim_expected(const sim *s, int r, double *want, size_t *len)
{
    const sim_cfg *c = &s->cfg;
    int q, p = c->p;
    size_t i, n = c->n;
    const sim_rank *k = &s->rk[r];
    *len = 0;
    switch (c->kind) {
    case COLL_ALLREDUCE: case COLL_REDUCE:
        if (c->kind == COLL_REDUCE && r != c->root) return 0;
        for (i = 0; i < n; i++) {
            double v = sim_value(c, 0, i);
            for (q = 1; q < p; q++) v = sim__apply(c->op, v, sim_value(c, q, i));
            want[i] = c->op == COLL_AVG ? sim__div(c->dtype, v, p) : v;
        }
        *len = n; return 1;
    case COLL_REDUCE_SCATTER: case COLL_REDUCE_SCATTERV:
        for (i = 0; i < k->mine_n; i++) {
            double v = sim_value(c, 0, k->mine + i);
            for (q = 1; q < p; q++) v = sim__apply(c->op, v, sim_value(c, q, k->mine + i));
            want[i] = c->op == COLL_AVG ? sim__div(c->dtype, v, p) : v;
        }
        *len = k->mine_n; return 1;
    case COLL_SCAN: case COLL_EXSCAN: {
        int upto = c->kind == COLL_SCAN ? r + 1 : (r ? r : 1);   /* exscan: rank 0 keeps its own */
        for (i = 0; i < n; i++) {
            double v = sim_value(c, 0, i);
            for (q = 1; q < upto; q++) v = sim__apply(c->op, v, sim_value(c, q, i));
            want[i] = c->op == COLL_AVG ? sim__div(c->dtype, v, upto) : v;
        }
        *len = n; return 1;
    }
    case COLL_ALLGATHER: case COLL_ALLGATHERV: case COLL_GATHER: case COLL_GATHERV:
        if ((c->kind == COLL_GATHER || c->kind == COLL_GATHERV) && r != c->root) return 0;
        for (q = 0; q < p; q++)
            for (i = 0; i < s->rk[q].mine_n; i++) want[s->rk[q].mine + i] = sim_value(c, q, i);
        *len = k->dst_n; return 1;
    case COLL_BROADCAST:
        for (i = 0; i < n; i++) want[i] = sim_value(c, c->root, i);
        *len = n; return 1;
    case COLL_SCATTER: case COLL_SCATTERV:
        for (i = 0; i < k->mine_n; i++) want[i] = sim_value(c, c->root, k->mine + i);
        *len = k->mine_n; return 1;
    case COLL_ALLTOALL:
        for (q = 0; q < p; q++)
            for (i = 0; i < n; i++) want[(size_t)q * n + i] = sim_value(c, q, (size_t)r * n + i);
        *len = (size_t)p * n; return 1;
    case COLL_ALLTOALLV:
        for (q = 0; q < p; q++)
            for (i = 0; i < c->counts[(size_t)q * (size_t)p + (size_t)r]; i++)
                want[sim__a2av_off(c, r, q, 1) + i] = sim_value(c, q, sim__a2av_off(c, q, r, 0) + i);
        *len = k->dst_n; return 1;
    default: return 0;
    }
}

/* What part of the algorithm step `st` is (for headings and diagrams). */
static const char *sim_phase(const sim *s, int st)
{
    const coll__plan *pl = &s->pl[0];
    int p = pl->p, L = coll__ceil_log2(p), L2 = coll__ceil_log2(pl->p2);
    int f = sim_folds(pl->algo) && pl->rem > 0, k = st - f;
    size_t C = pl->count ? (pl->count - 1) / pl->chunk + 1 : 0;
    if (f && k < 0) return "fold in";
    switch (pl->algo) {
    case COLL_ALGO_RING:
        if (pl->kind == COLL_ALLREDUCE) return st < p - 1 ? "reduce-scatter" : "all-gather";
        return "";
    case COLL_ALGO_NAIVE: return st < p - 1 ? "reduce at 0" : "send back";
    case COLL_ALGO_TREE: return st < L ? "reduce to 0" : "broadcast from 0";
    case COLL_ALGO_RECURSIVE_DOUBLING:
        return k >= L2 ? "fold out" : "doubling";
    case COLL_ALGO_RABENSEIFNER:
        return k >= 2 * L2 ? "fold out" : k < L2 ? "halving (reduce-scatter)" : "doubling (all-gather)";
    case COLL_ALGO_SWING:
        if (pl->kind == COLL_REDUCE_SCATTER || pl->kind == COLL_REDUCE_SCATTERV)
            return k > L2 ? "fold out" : k == L2 ? "each region to its owner" : "halving at rho(s)";
        if (pl->kind == COLL_ALLGATHER || pl->kind == COLL_ALLGATHERV)
            return k > L2 ? "fold out" : k == 0 ? "each region to the rank of its number" : "doubling at rho(s)";
        return k >= 2 * L2 ? "fold out" : k < L2 ? "halving at rho(s) (reduce-scatter)" : "doubling at rho(s) (all-gather)";
    case COLL_ALGO_BINE:
        if (pl->kind == COLL_BROADCAST) return st < L2 ? "down the Bine tree" : "to the ranks past p2";
        return p > pl->p2 && st == 0 ? "from the ranks past p2" : "up the Bine tree";
    case COLL_ALGO_RECURSIVE_HALVING: return k >= L2 ? "fold out" : "halving";
    case COLL_ALGO_REDUCE_SCATTER_GATHER:
        return k >= 2 * L2 ? "to the root" : k < L2 ? "halving (reduce-scatter)" : "gather";
    case COLL_ALGO_HIERARCHICAL: {
        int g = pl->group < p ? pl->group : p, ng = (p + g - 1) / g, Lg = coll__ceil_log2(g);
        return st < Lg ? "reduce in group" : st < Lg + 2 * (ng - 1) ? "ring among leaders" : "broadcast in group";
    }
    case COLL_ALGO_PIPELINED_TREE: return (size_t)st < 2 * (C + 1) ? "up" : "down";
    case COLL_ALGO_DOUBLE_TREE: {       /* all-reduce: C/2 + H rounds of two steps each way */
        size_t Ch = pl->count ? (pl->count - pl->count / 2 - 1) / pl->chunk + 1 : 0;
        int H = coll__ceil_log2(p - p % 2) + p % 2 - 1;
        if (pl->kind == COLL_BROADCAST) return st % 3 == 2 ? "root to tree 1's top" : "down";
        if (pl->kind == COLL_REDUCE) return st % 3 == 2 ? "tree 1's top to the root" : "up";
        return (size_t)st < 2 * (Ch + (size_t)H) ? "up (reduce)" : "down (broadcast)";
    }
    case COLL_ALGO_SCATTER_ALLGATHER: return st < L ? "scatter" : "ring all-gather";
    default: return "";
    }
}

/* Block label of what a message carries: "b2", "b1-b3", or the range
   itself; from a small call's room, whose blocks it holds ("r2,r1"). */
static void sim_label(const sim *s, const sim_msg *m, char *out, size_t outsz)
{
    const coll__plan *pl = &s->pl[m->from];
    int i, j;
    size_t o, l, o2, l2, off = m->soff, len = m->slen;
    if (s->cfg.kind == COLL_BARRIER) { snprintf(out, outsz, "signal"); return; }
    if (m->sbuf == COLL_BUF_ROOM) {          /* block j of rank f's room: rank f-j's */
        size_t b = s->rk[m->from].room_b, k, nb = b ? len / b : 0, at = 0;
        for (k = 0; k < nb && at + 8 < outsz; k++)
            at += (size_t)snprintf(out + at, outsz - at, "%sr%d", k ? "," : "",
                                   ((m->from - (int)(off / b + k)) % pl->p + pl->p) % pl->p);
        if (!nb) snprintf(out, outsz, "-");
        return;
    }
    if (s->cfg.algo == COLL_ALGO_BRUCK) {     /* rotated or strided positions */
        snprintf(out, outsz, "[%lu:%lu]", (unsigned long)off, (unsigned long)(off + len));
        return;
    }
    for (i = 0; i < pl->p; i++) {
        coll__block(pl, i, &o, &l);
        if (o != off) continue;
        for (j = i; j < pl->p; j++) {
            coll__block(pl, j, &o2, &l2);
            if (o2 + l2 == off + len) {
                if (j == i) snprintf(out, outsz, "b%d", i);
                else if (i == 0 && j == pl->p - 1) snprintf(out, outsz, "all");
                else snprintf(out, outsz, "b%d-%d", i, j);
                return;
            }
        }
    }
    snprintf(out, outsz, "[%lu:%lu]", (unsigned long)off, (unsigned long)(off + len));
}

#endif /* SCHED_SIM_H */
