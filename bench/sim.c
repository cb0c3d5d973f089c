/* sim.c - coll's schedules for up to thousands of ranks, in one thread,
           without moving a byte, under an α-β-γ clock

       build/bench/sim -c allreduce -p 4,4096 -n 8,64M [-a all|ring,...] [-steps]
                       [-alpha s] [-beta s_per_byte] [-gamma s_per_byte]
       build/bench/sim -H 512 -L 8 -c allreduce -n 8,64M [-best] [-pairs]
                       [-intra a,b,g] [-inter a,b,g]      the two-level machine
       build/bench/sim -t          self-test, ends with "sim: N passed, N failed"

   coll_describe(comm, args, step, &x) tells what rank `comm->rank` does in
   step `step` of a schedule: send x.send_bytes to x.send_to, receive
   x.recv_bytes from x.recv_from (reduced into place if x.reduce), or
   nothing. The simulator keeps one communicator per rank (its port is a
   pair of functions that are never called) and plays every rank's steps.

   THE CLOCK. Each rank has a time t. A message carries the time its sender
   had when it posted it. A step that receives finishes at
       max(t, t of the message) + α + max(sent, received)·β + received·γ
   (γ only if the step reduces); a step that only sends finishes at
   t + α + sent·β; an idle step costs nothing. Sends never block: this is
   the eager (buffered) model, the schedule's own ordering is what is
   measured. Messages between two ranks match in order: the k-th send from
   a to b is the k-th receive at b from a, and their sizes must be equal.

   THE RUN. A rank runs until it needs a message that has not been sent;
   it then waits, and the sender wakes it when it posts to it. When no rank
   can run and some have not finished, the schedule deadlocks: an error.
   Each step is one call of the row's schedule function, on a plan made
   once per rank (coll_sched: coll_describe without re-planning at every
   step; the self-test checks the two agree), and each rank's inbox keeps a
   queue per sender; a 4096-rank ring all-reduce (8190 steps per rank) is
   33 M steps, under a second.

   WHAT IT PRINTS, per (collective, ranks, bytes, algorithm):
     sent_B     the most bytes any rank sends
     lb_B       the lower bound on that (allreduce 2(p-1)/p·n; reduce_scatter,
                allgather, alltoall, reduce, scatter (p-1)/p·n; broadcast n;
                gather n/p)
     step_B     the most bytes one rank sends in one step (its largest
                message); -steps adds a line per step: the bytes all ranks
                send in it and the most one rank does
     rounds     the most steps in which any rank communicates
     depth      the longest chain of dependent steps (a step after a receive
                comes after the sender's step); every collective here needs
                depth >= ceil(lg p), the lower bound printed as lb_rounds
     time_us    when the last rank finishes, under the clock above
     auto       "*" on the algorithm coll_choose picks for this call
   The hierarchical algorithm is simulated with groups of the largest
   divisor of p not above its square root.

   THE TWO-LEVEL MACHINE (-H hosts -L ranks a host; make sim HOSTS=512x8).
   Each message is clocked at its level (-intra, -inter: α,β,γ; inside
   by default coll's own model, between hosts 20 µs, 0.32 ns/B, the same
   γ: about 25 Gbit/s) and counted as inside a host or between two:
     inter_link_B  the most bytes one host sends or receives across
     inter_B       all bytes between hosts;  intra_B  all bytes inside
     rounds, time_us as above; auto "*": AUTO's pick (flat: coll_choose
                   with the inter-host model; hier: each phase's pick with
                   its level's); "<": the fastest of its form (-best: only
                   those and AUTO's)
   Forms: flat-host (rank r on host r / L), flat-inter (host r % H), every
   algorithm of the registry over the world; hier, coll_hier.h's phases
   (inside x across, as coll_hier_allreduce and the others run them, on
   hosts of one size: the root's local index 0, gather's v call across as
   a gather of L blocks), named phase by phase: by default every inside
   algorithm with AUTO's across and every across algorithm with AUTO's
   inside (a phase inside that cannot run the algorithm takes its AUTO),
   with -pairs every pair. A rank's bandwidth between hosts is its own
   (a link per rank); inter_link_B is what one shared host link would
   carry. Bytes come from playing the schedules, never from formulas.
   bytes is the size as the bench counts it (bench/bench_common.h). */
#define COLL_IMPLEMENTATION
#include "../coll.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the simulator core: any source of steps ----------------------------- */

typedef int (*sim_sched)(void *ctx, int rank, int step, coll_xfer *x);

typedef struct sim_model { double alpha, beta, gamma; } sim_model;

/* The two-level machine (-H hosts -L ranks a host): a message between two
   ranks of one host is clocked with `in`, one between hosts with `out`
   (a step that does both waits for the slower: the larger α, the larger of
   the two transfer times, γ of the level the received message came over),
   and counted as intra- or inter-host bytes. Ranks are host-major (rank r
   on host r / L) or interleaved (host r % H). NULL: one level. */
typedef struct sim_topo { int H, L, inter; sim_model in, out; } sim_topo;
static const sim_topo *sim_two;

static int sim_host(const sim_topo *t, int r) { return t->inter ? r % t->H : r / t->L; }

typedef struct sim_msg {
    int from;                 /* -1 once received                      */
    int depth;
    double t;
    size_t bytes;
} sim_msg;

/* A rank's inbox: one FIFO per sender (a channel), so finding the oldest
   message from one peer never walks past another peer's backlog (a
   pipeline's sender runs thousands of chunks ahead of its receiver). A
   channel goes when it empties (pairwise exchanges use each once: 16 M
   of them at 4096 ranks), its buffer kept for the next one. */
typedef struct sim_chan { int from; size_t head, len, cap; sim_msg *m; } sim_chan;
typedef struct sim_inbox {
    sim_chan *ch;
    int n, cap, last;
    int *slot, nslots, ntomb;   /* sender -> 1 + its channel, open addressing
                                   (0 empty, -1 a channel that went); a root
                                   hears from every rank */
    sim_msg *spare;             /* an emptied channel's buffer */
    size_t spare_cap;
} sim_inbox;

typedef struct sim_rank {
    double t;
    int step, depth, loaded, posted, done, waiting, queued;
    long rounds;
    unsigned long long sent;
    coll_xfer x;
} sim_rank;

typedef struct sim_result {
    unsigned long long sent_max;
    unsigned long long step_max;  /* the most bytes one rank sends in one step */
    unsigned long long *step_bytes, *step_top;   /* per step (sim_steps on):
                                     all ranks' bytes, the most of one rank */
    int nsteps, steps_cap;
    unsigned long long inter_total, inter_link, intra_total;   /* sim_two: bytes
                                     between hosts (all; the most one host
                                     sends or receives), inside hosts */
    long rounds_max;
    int depth_max;
    double time;
    int error;                /* 0, SIM_DEADLOCK, SIM_MISMATCH, SIM_BADPEER or a coll code */
    int err_rank, err_step;
} sim_result;

enum { SIM_DEADLOCK = -1001, SIM_MISMATCH = -1002, SIM_BADPEER = -1003, SIM_NOMEM = -1004 };

static const char *sim_error_str(int e)
{
    switch (e) {
    case SIM_DEADLOCK: return "deadlock: no rank can advance";
    case SIM_MISMATCH: return "a receive's size differs from the matching send's";
    case SIM_BADPEER: return "a peer rank out of range (or itself)";
    case SIM_NOMEM: return "out of memory";
    default: return coll_result_str(e);
    }
}

static unsigned sim_hash(int from, int nslots) { return (unsigned)from * 2654435761u & (unsigned)(nslots - 1); }

/* The slot holding `from`'s channel, or -1. */
static int sim_slot_of(const sim_inbox *b, int from)
{
    unsigned h, m = (unsigned)b->nslots - 1;
    if (!b->nslots) return -1;
    for (h = sim_hash(from, b->nslots); b->slot[h]; h = (h + 1) & m)
        if (b->slot[h] > 0 && b->ch[b->slot[h] - 1].from == from) return (int)h;
    return -1;
}

/* Every channel into a table of ns slots (no tombstones left). */
static int sim_rehash(sim_inbox *b, int ns)
{
    int *t = (int *)calloc((size_t)ns, sizeof *t), i;
    unsigned h;
    if (!t) return SIM_NOMEM;
    for (i = 0; i < b->n; i++) {
        for (h = sim_hash(b->ch[i].from, ns); t[h]; h = (h + 1) & (unsigned)(ns - 1)) {}
        t[h] = i + 1;
    }
    free(b->slot);
    b->slot = t;
    b->nslots = ns;
    b->ntomb = 0;
    return 0;
}

/* The channel from `from` (made if `make`), or NULL. */
static sim_chan *sim_chan_of(sim_inbox *b, int from, int make)
{
    unsigned h;
    int k;
    if (b->last < b->n && b->ch[b->last].from == from) return &b->ch[b->last];
    if ((k = sim_slot_of(b, from)) >= 0) { b->last = b->slot[k] - 1; return &b->ch[b->last]; }
    if (!make) return NULL;
    if (b->n == b->cap) {
        int cap = b->cap ? 2 * b->cap : 4;
        sim_chan *n = (sim_chan *)realloc(b->ch, (size_t)cap * sizeof *n);
        if (!n) return NULL;
        b->ch = n;
        b->cap = cap;
    }
    if (2 * (b->n + 1 + b->ntomb) > b->nslots &&
        sim_rehash(b, 4 * (b->n + 1) > b->nslots ? (b->nslots ? 2 * b->nslots : 8) : b->nslots))
        return NULL;
    memset(&b->ch[b->n], 0, sizeof b->ch[0]);
    b->ch[b->n].from = from;
    if (b->spare) {
        b->ch[b->n].m = b->spare; b->ch[b->n].cap = b->spare_cap;
        b->spare = NULL; b->spare_cap = 0;
    }
    for (h = sim_hash(from, b->nslots); b->slot[h] > 0; h = (h + 1) & (unsigned)(b->nslots - 1)) {}
    if (b->slot[h] < 0) b->ntomb--;
    b->slot[h] = b->n + 1;
    b->last = b->n;
    return &b->ch[b->n++];
}

/* Channel c is empty: it goes (the last one takes its place). */
static void sim_chan_drop(sim_inbox *b, sim_chan *c)
{
    int i = (int)(c - b->ch), k = sim_slot_of(b, c->from);
    b->slot[k] = -1;
    b->ntomb++;
    if (!b->spare) { b->spare = c->m; b->spare_cap = c->cap; }
    else free(c->m);
    if (i != b->n - 1) {
        b->ch[i] = b->ch[b->n - 1];
        b->slot[sim_slot_of(b, b->ch[i].from)] = i + 1;
    }
    b->n--;
    b->last = b->n;
}

static int sim_push(sim_inbox *b, sim_msg m)
{
    sim_chan *c = sim_chan_of(b, m.from, 1);
    if (!c) return SIM_NOMEM;
    if (c->head > 0 && c->len == c->cap) {            /* reclaim received ones */
        memmove(c->m, c->m + c->head, (c->len - c->head) * sizeof *c->m);
        c->len -= c->head;
        c->head = 0;
    }
    if (c->len == c->cap) {
        size_t cap = c->cap ? 2 * c->cap : 4;
        sim_msg *n = (sim_msg *)realloc(c->m, cap * sizeof *n);
        if (!n) return SIM_NOMEM;
        c->m = n;
        c->cap = cap;
    }
    c->m[c->len++] = m;
    return 0;
}

/* The oldest message from `from`, or NULL. */
static sim_msg *sim_find(sim_inbox *b, int from)
{
    sim_chan *c = sim_chan_of(b, from, 0);
    return c && c->head < c->len ? &c->m[c->head] : NULL;
}

/* Takes the message sim_find just gave (the oldest of its channel). */
static void sim_take(sim_inbox *b, sim_msg *m)
{
    sim_chan *c = sim_chan_of(b, m->from, 0);
    if (++c->head == c->len) sim_chan_drop(b, c);
}

static int sim_steps;          /* -steps: keep the bytes of every step */

/* Counts b bytes sent in step `step`. */
static int sim_count_step(sim_result *res, int step, unsigned long long b)
{
    if (step >= res->steps_cap) {
        int n = res->steps_cap ? res->steps_cap : 64, i;
        unsigned long long *x, *y;
        while (n <= step) n *= 2;
        x = (unsigned long long *)realloc(res->step_bytes, (size_t)n * sizeof *x);
        if (x) res->step_bytes = x;
        y = (unsigned long long *)realloc(res->step_top, (size_t)n * sizeof *y);
        if (y) res->step_top = y;
        if (!x || !y) return SIM_NOMEM;
        for (i = res->steps_cap; i < n; i++) res->step_bytes[i] = res->step_top[i] = 0;
        res->steps_cap = n;
    }
    if (step + 1 > res->nsteps) res->nsteps = step + 1;
    res->step_bytes[step] += b;
    if (b > res->step_top[step]) res->step_top[step] = b;
    return 0;
}

/* Plays the schedule on p ranks. */
static sim_result sim_run(int p, sim_sched sched, void *ctx, const sim_model *md)
{
    sim_result res;
    sim_rank *R = (sim_rank *)calloc((size_t)p, sizeof *R);
    sim_inbox *in = (sim_inbox *)calloc((size_t)p, sizeof *in);
    int *runq = (int *)malloc((size_t)p * sizeof *runq), nq = 0, r, i;
    const sim_topo *tp = sim_two;
    unsigned long long *hio = tp ? (unsigned long long *)calloc(2 * (size_t)tp->H, sizeof *hio) : NULL;

    memset(&res, 0, sizeof res);
    res.err_rank = res.err_step = -1;
    if (!R || !in || !runq || (tp && !hio)) { res.error = SIM_NOMEM; goto out; }
    if (tp && tp->H * tp->L != p) { res.error = SIM_BADPEER; goto out; }
    for (r = p - 1; r >= 0; r--) { R[r].waiting = -1; R[r].queued = 1; runq[nq++] = r; }

    while (nq > 0 && !res.error) {
        sim_rank *me = &R[r = runq[--nq]];
        me->queued = 0;
        while (!me->done) {
            coll_xfer *x = &me->x;
            int has_s, has_r;
            sim_msg *m = NULL;
            if (!me->loaded) {
                int rc = sched(ctx, r, me->step, x);
                if (rc < 0) { res.error = rc; break; }
                if (rc == 0) { me->done = 1; break; }
                me->loaded = 1;
                me->posted = 0;
            }
            has_s = x->send_to >= 0 && x->send_bytes > 0;
            has_r = x->recv_from >= 0 && x->recv_bytes > 0;
            if ((has_s && (x->send_to >= p || x->send_to == r)) ||
                (has_r && (x->recv_from >= p || x->recv_from == r))) {
                res.error = SIM_BADPEER;
                break;
            }
            if (has_s && !me->posted) {
                sim_msg s;
                s.from = r; s.depth = me->depth; s.t = me->t; s.bytes = x->send_bytes;
                if ((res.error = sim_push(&in[x->send_to], s)) != 0) break;
                me->posted = 1;
                if (R[x->send_to].waiting == r && !R[x->send_to].queued) {
                    R[x->send_to].queued = 1;
                    runq[nq++] = x->send_to;
                }
            }
            if (has_r) {
                m = sim_find(&in[r], x->recv_from);
                if (!m) { me->waiting = x->recv_from; break; }        /* blocked */
                if (m->bytes != x->recv_bytes) { res.error = SIM_MISMATCH; break; }
            }
            if (has_s || has_r) {
                double t0 = me->t;
                int d0 = me->depth;
                size_t b = has_s ? x->send_bytes : 0;
                if (has_r) {
                    if (m->t > t0) t0 = m->t;
                    if (m->depth > d0) d0 = m->depth;
                    if (x->recv_bytes > b) b = x->recv_bytes;
                }
                if (tp) {         /* each message at its level's clock */
                    int hr = sim_host(tp, r);
                    const sim_model *ms = has_s && sim_host(tp, x->send_to) != hr ? &tp->out : &tp->in;
                    const sim_model *mr = has_r && sim_host(tp, x->recv_from) != hr ? &tp->out : &tp->in;
                    double al = has_s ? ms->alpha : 0, ts = has_s ? (double)x->send_bytes * ms->beta : 0;
                    double tr = has_r ? (double)x->recv_bytes * mr->beta : 0;
                    if (has_r && mr->alpha > al) al = mr->alpha;
                    me->t = t0 + al + (ts > tr ? ts : tr) +
                            (has_r && x->reduce ? (double)x->recv_bytes * mr->gamma : 0);
                    if (has_s) {
                        int hs = sim_host(tp, x->send_to);
                        if (hs != hr) {
                            res.inter_total += x->send_bytes;
                            hio[2 * hr] += x->send_bytes;
                            hio[2 * hs + 1] += x->send_bytes;
                        } else {
                            res.intra_total += x->send_bytes;
                        }
                    }
                } else {
                    me->t = t0 + md->alpha + (double)b * md->beta +
                            (has_r && x->reduce ? (double)x->recv_bytes * md->gamma : 0);
                }
                me->depth = d0 + 1;
                me->rounds++;
                if (has_s) {
                    me->sent += x->send_bytes;
                    if (x->send_bytes > res.step_max) res.step_max = x->send_bytes;
                    if (sim_steps && (res.error = sim_count_step(&res, me->step, x->send_bytes)) != 0) break;
                }
                if (has_r) sim_take(&in[r], m);
            }
            me->waiting = -1;
            me->loaded = 0;
            me->step++;
        }
        if (res.error) { res.err_rank = r; res.err_step = me->step; }
    }
    for (i = 0; i < p && !res.error; i++) {
        if (!R[i].done) {
            res.error = SIM_DEADLOCK;
            res.err_rank = i;
            res.err_step = R[i].step;
        }
    }
    for (i = 0; i < p; i++) {
        if (R[i].sent > res.sent_max) res.sent_max = R[i].sent;
        if (R[i].rounds > res.rounds_max) res.rounds_max = R[i].rounds;
        if (R[i].depth > res.depth_max) res.depth_max = R[i].depth;
        if (R[i].t > res.time) res.time = R[i].t;
    }
    for (i = 0; tp && i < 2 * tp->H; i++)
        if (hio[i] > res.inter_link) res.inter_link = hio[i];
out:
    free(hio);
    if (in)
        for (i = 0; i < p; i++) {
            int j;
            for (j = 0; j < in[i].n; j++) free(in[i].ch[j].m);
            free(in[i].ch);
            free(in[i].slot);
            free(in[i].spare);
        }
    free(in);
    free(R);
    free(runq);
    return res;
}

/* ---- coll's schedules as a step source ----------------------------------- */

static int dummy_send(void *ctx, int peer, const void *buf, size_t bytes)
{
    (void)ctx; (void)peer; (void)buf; (void)bytes;
    fprintf(stderr, "sim: the port was called - coll_describe moved data\n");
    abort();
}
static int dummy_recv(void *ctx, int peer, void *buf, size_t bytes)
{
    return dummy_send(ctx, peer, buf, bytes);
}

typedef struct coll_world {
    int p;
    coll_comm *c;             /* one communicator per rank */
    coll_args a;
    int inplace;              /* the row runs in place only: dst is each
                                 rank's block of src (reduce-scatter) */
    coll__plan *pl;           /* each rank's plan, made at its first step */
    size_t *es;               /* its element size (a room row: its block) */
    signed char *planned;     /* 0 not yet, 1 made, or the refusal below  */
    int *refused;
} coll_world;

static unsigned char sim_scratch[1 << 16];   /* named, never touched */

static coll_args rank_args(const coll_world *w, int rank)
{
    coll_args a = w->a;
    if (w->inplace)
        a.dst = (unsigned char *)(uintptr_t)a.src + (size_t)rank * a.count * coll_dtype_size(a.dtype);
    return a;
}

/* coll_describe, with its plan made once per rank instead of at every
   step: the planning (checking the arguments, AUTO, the row's fit) is the
   same for every step of a call, and was three quarters of the time at
   4096 ranks. The same steps as coll_describe: the self-test compares the
   two on every step of every schedule it plays. */
static int coll_sched(void *ctx, int rank, int step, coll_xfer *x)
{
    coll_world *w = (coll_world *)ctx;
    coll__plan *pl = &w->pl[rank];
    coll__step st;
    size_t es;
    int room;
    if (step < 0) return COLL_ERR_INVAL;
    if (!w->planned[rank]) {
        coll_args a = rank_args(w, rank);
        const char *why;
        int rc = coll__plan_args(&w->c[rank], &a, pl, &w->es[rank], &why);
        if (rc == COLL_OK) rc = coll__pick(&w->c[rank], 0, &a, pl, w->es[rank], &st, &why);
        if (rc != COLL_OK) { w->planned[rank] = -1; w->refused[rank] = rc; return rc; }
        if (COLL__BEGIN(COLL__ROW_OF(pl)) == coll__work_in_place) pl->inplace = 1;
        w->planned[rank] = 1;
    }
    if (w->planned[rank] < 0) return w->refused[rank];
    if (!COLL__ROW_OF(pl)->f(pl, step, &st)) return 0;
    es = w->es[rank];
    room = COLL__IN_ROOM(COLL__ROW_OF(pl));
    if (room) es = coll__room_blk(pl, es);         /* its offsets count blocks */
    x->send_to = st.to;   x->send_buf = st.sbuf;
    x->recv_from = st.from; x->recv_buf = st.rbuf;
    x->send_offset = st.soff * es; x->send_bytes = st.to >= 0 ? st.slen * es : 0;
    x->recv_offset = st.roff * es; x->recv_bytes = st.from >= 0 ? st.rlen * es : 0;
    x->reduce = st.reduce;
    if (COLL__KIND_IS(w->a.kind, COLL_BROADCAST) && !room) x->send_buf = x->recv_buf = COLL_BUF_DST;
    return 1;
}

/* coll_describe itself, for the self-test's comparison. */
static int coll_sched_describe(void *ctx, int rank, int step, coll_xfer *x)
{
    coll_world *w = (coll_world *)ctx;
    coll_args a = rank_args(w, rank);
    return coll_describe(&w->c[rank], &a, step, x);
}

static void world_free(coll_world *w)
{
    free(w->c); free(w->pl); free(w->es); free(w->planned); free(w->refused);
    w->c = 0; w->pl = 0; w->es = 0; w->planned = 0; w->refused = 0;
}

static int world_init(coll_world *w, int p, const sim_model *override)
{
    coll_port port;
    int r;
    memset(w, 0, sizeof *w);
    memset(&port, 0, sizeof port);
    port.send = dummy_send;
    port.recv = dummy_recv;
    w->p = p;
    w->c = (coll_comm *)malloc((size_t)p * sizeof *w->c);
    w->pl = (coll__plan *)malloc((size_t)p * sizeof *w->pl);
    w->es = (size_t *)malloc((size_t)p * sizeof *w->es);
    w->planned = (signed char *)calloc((size_t)p, 1);
    w->refused = (int *)calloc((size_t)p, sizeof *w->refused);
    if (!w->c || !w->pl || !w->es || !w->planned || !w->refused) return SIM_NOMEM;
    for (r = 0; r < p; r++) {
        int rc = coll_init(&w->c[r], r, p, &port, sim_scratch, sizeof sim_scratch);
        if (rc) return rc;
        if (override) {   /* so that AUTO's choice and the clock use one model */
            w->c[r].tune.alpha = override->alpha;
            w->c[r].tune.beta = override->beta;
            w->c[r].tune.gamma = override->gamma;
        }
    }
    return 0;
}

/* The group size the hierarchical algorithm is simulated with: the
   largest divisor of p not above its square root (64 x 64 for 4096), or 0
   (no grouping) when p is prime. */
static int hier_group(int p)
{
    int g, best = 0;
    for (g = 2; g * g <= p; g++)
        if (p % g == 0) best = g;
    return best;
}

/* Buffers are never touched, but coll checks that src and dst do not
   overlap: two far-apart addresses that are never dereferenced. */
static void world_args(coll_world *w, coll_kind kind, coll_algo algo, size_t count)
{
    memset(&w->a, 0, sizeof w->a);
    w->a.kind = kind;
    w->a.algo = algo;
    w->a.src = (const void *)(uintptr_t)((uintptr_t)1 << 20);
    w->a.dst = (void *)(uintptr_t)((uintptr_t)1 << (sizeof(void *) * 8 - 2));
    w->a.count = count;
    w->a.dtype = COLL_FLOAT32;
    w->a.op = COLL_SUM;
    w->a.root = 0;
    w->a.group = algo == COLL_ALGO_HIERARCHICAL ? hier_group(w->p) : 0;
    {   /* the library's answer: does the row run in place only? */
        const coll__entry *e = coll__entry_of(kind, algo);
        w->inplace = e && (e->needs & COLL__IN_PLACE) && (kind == COLL_REDUCE_SCATTER);
    }
    memset(w->planned, 0, (size_t)w->p);      /* new arguments: plan again */
}

/* ---- sizes and bounds, as the bench counts them -------------------------- */

static int blockwise(coll_kind k)
{
    return k == COLL_REDUCE_SCATTER || k == COLL_ALLGATHER || k == COLL_ALLTOALL ||
           k == COLL_GATHER || k == COLL_SCATTER;
}

/* Elements per call for a size in bytes (float32), and the size it really is. */
static size_t count_for(coll_kind k, int p, size_t bytes, size_t *actual)
{
    size_t n = bytes / 4;
    if (blockwise(k)) n /= (size_t)p;
    if (n == 0) n = 1;
    *actual = n * 4 * (blockwise(k) ? (size_t)p : 1);
    return n;
}

/* Lower bound on the bytes the busiest rank sends, as num/den. */
static void sent_bound(coll_kind k, int p, size_t n, unsigned long long *num, unsigned long long *den)
{
    unsigned long long N = n, P = (unsigned long long)p;
    *den = P;
    if (p == 1) { *num = 0; return; }
    switch (k) {
    case COLL_ALLREDUCE: *num = 2 * (P - 1) * N; break;
    case COLL_BROADCAST: *num = P * N; break;
    case COLL_GATHER: *num = N; break;
    case COLL_BARRIER: *num = 0; break;
    default: *num = (P - 1) * N; break;
    }
}

static int ceil_lg(int p)
{
    int l = 0;
    while ((1 << l) < p) l++;
    return l;
}

static coll_kind kind_by_name(const char *s)
{
    int k;
    for (k = 0; k < COLL_KIND_COUNT; k++)
        if (strcmp(coll_kind_name((coll_kind)k), s) == 0) return (coll_kind)k;
    return COLL_KIND_COUNT;
}

static coll_algo algo_by_name(const char *s)
{
    int a;
    for (a = 0; a < COLL_ALGO_COUNT; a++)
        if (strcmp(coll_algo_name((coll_algo)a), s) == 0) return (coll_algo)a;
    return COLL_ALGO_COUNT;
}

/* ---- the report ------------------------------------------------------------ */

/* Simulates one (collective, p, size) for each algorithm in `algos` (or
   every one coll runs, if algos is NULL) and prints a row each. Returns
   the number of algorithms that failed. */
static int report(coll_kind kind, int p, size_t bytes, const coll_algo *algos, int nalgos,
                  const sim_model *md, const sim_model *override)
{
    coll_world w;
    size_t actual, count = count_for(kind, p, bytes, &actual);
    coll_algo pick, list[COLL_ALGO_COUNT];
    unsigned long long num, den;
    int n = 0, a, bad = 0, rc = world_init(&w, p, override);
    if (rc) {
        fprintf(stderr, "sim: coll_init: %s\n", sim_error_str(rc));
        world_free(&w);
        return 1;
    }
    world_args(&w, kind, COLL_ALGO_AUTO, count);
    pick = coll_choose(&w.c[0], &w.a);
    if (algos) {
        memcpy(list, algos, (size_t)nalgos * sizeof *list);
        n = nalgos;
    } else {
        coll_xfer x;
        for (a = 1; a < COLL_ALGO_COUNT; a++) {
            world_args(&w, kind, (coll_algo)a, count);
            if (coll_sched(&w, 0, 0, &x) >= 0) list[n++] = (coll_algo)a;   /* in place where it must */
        }
        if (n == 0)
            fprintf(stderr, "sim: coll.h runs no algorithm for %s\n", coll_kind_name(kind));
    }
    sent_bound(kind, p, actual, &num, &den);
    for (a = 0; a < n; a++) {
        sim_result r;
        world_args(&w, kind, list[a], count);
        r = sim_run(p, coll_sched, &w, md);
        if (r.error) {
            printf("%s\t%s\t%d\t%zu\tERROR: %s (rank %d, step %d)\n", coll_kind_name(kind),
                   coll_algo_name(list[a]), p, actual, sim_error_str(r.error), r.err_rank,
                   r.err_step);
            free(r.step_bytes);
            free(r.step_top);
            bad++;
            continue;
        }
        printf("%s\t%s\t%d\t%zu\t%llu\t%llu\t%llu\t%ld\t%d\t%d\t%.3f\t%s\n", coll_kind_name(kind),
               coll_algo_name(list[a]), p, actual, r.sent_max, (num + den - 1) / den, r.step_max,
               r.rounds_max, p > 1 ? ceil_lg(p) : 0, r.depth_max, r.time * 1e6,
               list[a] == pick ? "*" : "");
        if (sim_steps) {
            int s2;
            for (s2 = 0; s2 < r.nsteps; s2++)
                printf("#\tstep %d\t%llu B in all\tat most %llu B from one rank\n", s2, r.step_bytes[s2], r.step_top[s2]);
        }
        free(r.step_bytes);
        free(r.step_top);
    }
    fflush(stdout);
    world_free(&w);
    return bad;
}

/* ---- the two-level machine: flat over the world, or coll_hier.h's phases -- */

/* One phase of coll_hier.h's composition: a call of coll.h on each host's
   ranks (level 0: L ranks) or across hosts among the ranks of one local
   index (level 1: H ranks), run by every rank of it or by the bridge (the
   root's local index, 0 here) only. */
typedef struct hier_phase {
    int level, bridge;
    coll_kind kind;
    size_t count;             /* per call, as the phase's own call takes it */
    int vcounts;              /* a v form: counts are the shards cnt[]      */
} hier_phase;

typedef struct hier_run {
    int H, L, nph;
    hier_phase ph[3];
    coll_world w[3][64];      /* phase k: [0] for a host's phase (every host
                                 plays the same schedule), [j] across for
                                 local index j (its shard's count)          */
    size_t cnt[64];           /* all-reduce's shards, as coll_hier_allreduce */
    int *at, *base;           /* per world rank: its phase, and the step it began at */
} hier_run;

#define HIER_MAX_L 64

/* coll_hier.h's phases for a call of `count` (as count_for gives it). */
static int hier_phases(hier_run *hr, coll_kind k, size_t count)
{
    size_t H = (size_t)hr->H, L = (size_t)hr->L;
    hier_phase *p = hr->ph;
    int j;
    memset(p, 0, sizeof hr->ph);
    for (j = 0; j < 3; j++) p[j].bridge = -1;
    for (j = 0; j < hr->L; j++) hr->cnt[j] = count / L + ((size_t)j < count % L ? 1 : 0);
#define PH(i, lev, kk, n) (p[i].level = (lev), p[i].kind = (kk), p[i].count = (n))
    switch (k) {
    case COLL_ALLREDUCE:
        PH(0, 0, COLL_REDUCE_SCATTERV, 0); p[0].vcounts = 1;
        PH(1, 1, COLL_ALLREDUCE, 0); p[1].vcounts = 1;    /* cnt[j] across */
        PH(2, 0, COLL_ALLGATHERV, 0); p[2].vcounts = 1;
        return hr->nph = 3;
    case COLL_REDUCE_SCATTER: PH(0, 0, k, H * count); PH(1, 1, k, count); return hr->nph = 2;
    case COLL_ALLGATHER:      PH(0, 1, k, count); PH(1, 0, k, H * count); return hr->nph = 2;
    case COLL_BROADCAST:      PH(0, 1, k, count); p[0].bridge = 0; PH(1, 0, k, count); return hr->nph = 2;
    case COLL_REDUCE:         PH(0, 0, k, count); PH(1, 1, k, count); p[1].bridge = 0; return hr->nph = 2;
    case COLL_GATHER:         PH(0, 0, k, count); PH(1, 1, k, L * count); p[1].bridge = 0; return hr->nph = 2;
    case COLL_SCATTER:        PH(0, 1, k, L * count); p[0].bridge = 0; PH(1, 0, k, count); return hr->nph = 2;
    case COLL_ALLTOALL:       PH(0, 0, k, H * count); PH(1, 1, k, L * count); return hr->nph = 2;
    case COLL_BARRIER:
        PH(0, 0, k, 0); PH(1, 1, k, 0); p[1].bridge = 0; PH(2, 0, k, 0);
        return hr->nph = 3;
    default: return hr->nph = 0;
    }
#undef PH
}

/* The worlds of phase i (one for a host's phase, L across). */
static int hier_nworlds(const hier_run *hr, int i) { return hr->ph[i].level ? hr->L : 1; }

/* Phase i's arguments with algorithm a on all its worlds. */
static void hier_args(hier_run *hr, int i, coll_algo a)
{
    const hier_phase *ph = &hr->ph[i];
    int j;
    for (j = 0; j < hier_nworlds(hr, i); j++) {
        coll_world *w = &hr->w[i][j];
        world_args(w, ph->kind, a, ph->vcounts && ph->level ? hr->cnt[j] : ph->count);
        if (ph->vcounts && !ph->level) { w->a.count = 0; w->a.counts = hr->cnt; }
        if (a == COLL_ALGO_HIERARCHICAL) w->a.group = hier_group(w->p);
    }
}

/* World rank r = host * L + local index, as byhost numbers them. */
static int hier_sched(void *ctx, int r, int step, coll_xfer *x)
{
    hier_run *hr = (hier_run *)ctx;
    int L = hr->L, h = r / L, j = r % L;
    while (hr->at[r] < hr->nph) {
        const hier_phase *ph = &hr->ph[hr->at[r]];
        int rc;
        if (ph->bridge >= 0 && j != ph->bridge) { hr->at[r]++; continue; }
        rc = coll_sched(&hr->w[hr->at[r]][ph->level ? j : 0], ph->level ? h : j, step - hr->base[r], x);
        if (rc < 0) return rc;
        if (rc == 0) { hr->at[r]++; hr->base[r] = step; continue; }
        if (ph->level) {
            if (x->send_to >= 0) x->send_to = x->send_to * L + j;
            if (x->recv_from >= 0) x->recv_from = x->recv_from * L + j;
        } else {
            if (x->send_to >= 0) x->send_to += h * L;
            if (x->recv_from >= 0) x->recv_from += h * L;
        }
        return 1;
    }
    return 0;
}

static void hier_free(hier_run *hr)
{
    int i, j;
    for (i = 0; i < 3; i++)
        for (j = 0; j < HIER_MAX_L; j++) world_free(&hr->w[i][j]);
    free(hr->at); free(hr->base);
    hr->at = hr->base = NULL;
}

static int hier_init(hier_run *hr, int H, int L, coll_kind k, size_t count, const sim_topo *tp)
{
    int i, j, rc;
    memset(hr, 0, sizeof *hr);
    hr->H = H; hr->L = L;
    if (L > HIER_MAX_L) return COLL_ERR_INVAL;
    hier_phases(hr, k, count);
    hr->at = (int *)calloc((size_t)H * (size_t)L, sizeof *hr->at);
    hr->base = (int *)calloc((size_t)H * (size_t)L, sizeof *hr->base);
    if (!hr->at || !hr->base) return SIM_NOMEM;
    for (i = 0; i < hr->nph; i++)
        for (j = 0; j < hier_nworlds(hr, i); j++)   /* AUTO with each level's model */
            if ((rc = world_init(&hr->w[i][j], hr->ph[i].level ? H : L, hr->ph[i].level ? &tp->out : &tp->in)) != 0)
                return rc;
    return 0;
}

/* Does phase i run algorithm a (every world of it)? */
static int hier_fits(hier_run *hr, int i, coll_algo a)
{
    coll_xfer x;
    int j, q;
    hier_args(hr, i, a);
    for (j = 0; j < hier_nworlds(hr, i); j++)
        for (q = 0; q < hr->w[i][j].p; q++)
            if (coll_sched(&hr->w[i][j], q, 0, &x) < 0) return 0;
    return 1;
}

static sim_result hier_play(hier_run *hr, const coll_algo *pick, const sim_topo *tp)
{
    sim_topo hm = *tp;
    const sim_topo *keep = sim_two;
    sim_result r;
    int i, p = hr->H * hr->L;
    for (i = 0; i < hr->nph; i++) hier_args(hr, i, pick[i]);
    memset(hr->at, 0, (size_t)p * sizeof *hr->at);
    memset(hr->base, 0, (size_t)p * sizeof *hr->base);
    hm.inter = 0;                                   /* the composition's numbering */
    sim_two = &hm;
    r = sim_run(p, hier_sched, hr, &tp->in);
    sim_two = keep;
    return r;
}

static int sim_best;          /* -best: per form, only the fastest row and AUTO's */
static int sim_pairs;         /* -pairs: every inner x outer pair, not only
                                 those with one of the two AUTO's pick */

typedef struct two_row { char form[16], algo[64]; sim_result r; int pick; } two_row;

static void two_print(coll_kind kind, const sim_topo *tp, size_t actual, const two_row *row, int n)
{
    int i, j, fastest = -1, best_here;
    for (i = 0; i < n; i++)
        if (!row[i].r.error && (fastest < 0 || row[i].r.time < row[fastest].r.time)) fastest = i;
    for (i = 0; i < n; i++) {
        const sim_result *r = &row[i].r;
        for (best_here = !r->error, j = 0; j < n && best_here; j++)     /* the fastest of its form */
            if (j != i && !strcmp(row[j].form, row[i].form) && !row[j].r.error &&
                (row[j].r.time < r->time || (row[j].r.time == r->time && j < i))) best_here = 0;
        if (sim_best && !best_here && !row[i].pick) continue;
        if (r->error) {
            printf("%s\t%s\t%s\t%dx%d\t%zu\tERROR: %s (rank %d, step %d)\n", coll_kind_name(kind), row[i].form,
                   row[i].algo, tp->H, tp->L, actual, sim_error_str(r->error), r->err_rank, r->err_step);
            continue;
        }
        printf("%s\t%s\t%s\t%dx%d\t%zu\t%llu\t%llu\t%llu\t%ld\t%.3f\t%s%s\n", coll_kind_name(kind), row[i].form,
               row[i].algo, tp->H, tp->L, actual, r->inter_link, r->inter_total, r->intra_total, r->rounds_max,
               r->time * 1e6, row[i].pick ? "*" : "", i == fastest ? "<" : "");
    }
}

/* One (collective, size) on H x L: every flat algorithm over the world,
   host-major then interleaved (AUTO's pick is its choice with the
   inter-host model), then every pair (the host's phases' algorithm x the
   one across) of coll_hier.h's composition (AUTO's: each phase's pick with
   its level's model). Returns the number of schedules that failed. */
static int report_two(coll_kind kind, sim_topo *tp, size_t bytes)
{
    int p = tp->H * tp->L, n = 0, cap = 0, bad = 0, a, b, pl, i, in_ph = -1, out_ph = -1;
    size_t actual, count = count_for(kind, p, bytes, &actual);
    two_row *row = NULL;
    coll_world w;
    coll_algo pick, auto_ph[3];
    hier_run *hr = (hier_run *)calloc(1, sizeof *hr);
    int rc = hr ? world_init(&w, p, &tp->out) : SIM_NOMEM;
#define ROW_ADD() do { if (n == cap) { two_row *t_ = (two_row *)realloc(row, (size_t)(cap = cap ? 2 * cap : 64) * sizeof *row); \
                       if (!t_) { bad++; goto done; } row = t_; } memset(&row[n], 0, sizeof *row); } while (0)
    if (rc) { fprintf(stderr, "sim: coll_init: %s\n", sim_error_str(rc)); bad = 1; goto done; }
    world_args(&w, kind, COLL_ALGO_AUTO, count);
    pick = coll_choose(&w.c[0], &w.a);
    for (pl = 0; pl < 2; pl++) {
        tp->inter = pl;
        for (a = 1; a < COLL_ALGO_COUNT; a++) {
            coll_xfer x;
            world_args(&w, kind, (coll_algo)a, count);
            if (coll_sched(&w, 0, 0, &x) < 0) continue;
            ROW_ADD();
            snprintf(row[n].form, sizeof row[n].form, "flat-%s", pl ? "inter" : "host");
            snprintf(row[n].algo, sizeof row[n].algo, "%s", coll_algo_name((coll_algo)a));
            row[n].pick = a == (int)pick;
            sim_two = tp;
            row[n].r = sim_run(p, coll_sched, &w, &tp->in);
            sim_two = NULL;
            free(row[n].r.step_bytes); free(row[n].r.step_top);
            bad += row[n].r.error != 0;
            n++;
        }
    }
    tp->inter = 0;
    if (tp->H > 1 && tp->L > 1 && (rc = hier_init(hr, tp->H, tp->L, kind, count, tp)) == 0 && hr->nph) {
        /* the inner choice is phase 0's algorithm (or the first phase inside);
           the other phases inside take it where it runs, else their AUTO */
        for (i = 0; i < hr->nph; i++) {
            hier_args(hr, i, COLL_ALGO_AUTO);
            auto_ph[i] = coll_choose(&hr->w[i][0].c[0], &hr->w[i][0].a);
            if (hr->ph[i].level == 0 && in_ph < 0) in_ph = i;
            if (hr->ph[i].level == 1 && out_ph < 0) out_ph = i;
        }
        for (a = 1; a < COLL_ALGO_COUNT; a++) {
            if (!hier_fits(hr, in_ph, (coll_algo)a)) continue;
            for (b = 1; b < COLL_ALGO_COUNT; b++) {
                coll_algo ch[3];
                char nm[64] = "";
                int same = 1;
                if (!sim_pairs && a != (int)auto_ph[in_ph] && b != (int)auto_ph[out_ph]) continue;
                if (!hier_fits(hr, out_ph, (coll_algo)b)) continue;
                for (i = 0; i < hr->nph; i++) {
                    ch[i] = hr->ph[i].level ? (coll_algo)b : hier_fits(hr, i, (coll_algo)a) ? (coll_algo)a : auto_ph[i];
                    if (ch[i] != auto_ph[i]) same = 0;
                    snprintf(nm + strlen(nm), sizeof nm - strlen(nm), "%s%s", i ? "+" : "", coll_algo_name(ch[i]));
                }
                ROW_ADD();
                snprintf(row[n].form, sizeof row[n].form, "hier");
                snprintf(row[n].algo, sizeof row[n].algo, "%s", nm);
                row[n].pick = same;
                row[n].r = hier_play(hr, ch, tp);
                free(row[n].r.step_bytes); free(row[n].r.step_top);
                bad += row[n].r.error != 0;
                n++;
            }
        }
    } else if (rc) {
        fprintf(stderr, "sim: the hierarchical phases: %s\n", sim_error_str(rc));
        bad++;
    }
    two_print(kind, tp, actual, row, n);
done:
#undef ROW_ADD
    fflush(stdout);
    if (hr) hier_free(hr);
    free(hr);
    free(row);
    world_free(&w);
    return bad;
}

/* ---- self-test ------------------------------------------------------------- */

static int t_pass, t_fail;
static void expect(int ok, const char *what)
{
    if (ok) t_pass++;
    else { t_fail++; printf("FAIL: %s\n", what); }
}

/* Hand-made schedules with known answers, to test the simulator itself. */
typedef struct toy { int kind; } toy;
static int toy_sched(void *ctx, int rank, int step, coll_xfer *x)
{
    int kind = ((toy *)ctx)->kind;
    memset(x, 0, sizeof *x);
    x->send_to = x->recv_from = -1;
    switch (kind) {
    case 0:   /* chain 0 -> 1 -> 2 of 100 bytes */
        if (step > 1) return 0;
        if (rank == 0 && step == 0) { x->send_to = 1; x->send_bytes = 100; }
        if (rank == 1 && step == 0) { x->recv_from = 0; x->recv_bytes = 100; }
        if (rank == 1 && step == 1) { x->send_to = 2; x->send_bytes = 100; }
        if (rank == 2 && step == 1) { x->recv_from = 1; x->recv_bytes = 100; }
        return 1;
    case 1:   /* both receive first: deadlock */
        if (step > 0) return 0;
        x->recv_from = 1 - rank; x->recv_bytes = 8;
        return 1;
    case 2:   /* 8 bytes sent, 16 expected */
        if (step > 0) return 0;
        if (rank == 0) { x->send_to = 1; x->send_bytes = 8; }
        else { x->recv_from = 0; x->recv_bytes = 16; }
        return 1;
    case 3:   /* two messages 0 -> 1 of different sizes, received in order,
                 the receiver one step behind; the second reduced */
        if (step > 2) return 0;
        if (rank == 0 && step < 2) { x->send_to = 1; x->send_bytes = step ? 20 : 10; }
        if (rank == 1 && step > 0) {
            x->recv_from = 0; x->recv_bytes = step == 1 ? 10 : 20; x->reduce = step == 2;
        }
        return 1;
    }
    return 0;
}

static void self_test(void)
{
    sim_model md = {1.0, 0.01, 0.5};
    toy t;
    sim_result r;
    char what[160];
    int ps[] = {1, 2, 3, 4, 5, 7, 8, 13, 64};
    size_t sizes[] = {8, 4000, 1 << 20};
    coll_kind kinds[] = {COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER, COLL_BROADCAST,
                         COLL_REDUCE, COLL_GATHER, COLL_SCATTER, COLL_ALLTOALL};
    unsigned i, j, k;
    int a;

    t.kind = 0;
    r = sim_run(3, toy_sched, &t, &md);
    expect(r.error == 0 && fabs(r.time - 4.0) < 1e-12 && r.sent_max == 100 &&
           r.rounds_max == 2 && r.depth_max == 2, "toy chain: time 4, 100 B, 2 rounds, depth 2");
    t.kind = 1;
    r = sim_run(2, toy_sched, &t, &md);
    expect(r.error == SIM_DEADLOCK, "toy: both ranks receiving first is a deadlock");
    t.kind = 2;
    r = sim_run(2, toy_sched, &t, &md);
    expect(r.error == SIM_MISMATCH, "toy: 8 B sent, 16 B expected is a mismatch");
    t.kind = 3;
    r = sim_run(2, toy_sched, &t, &md);
    /* rank 1: step 1 at max(0, 0) + 1 + 0.1 = 1.1; step 2 at max(1.1, 1.1) + 1 + 0.2 + 10 */
    expect(r.error == 0 && fabs(r.time - 12.3) < 1e-12, "toy: in-order matching and γ");

    /* every schedule coll runs: completes, meets the bounds */
    md.alpha = 2e-6; md.beta = 1e-10; md.gamma = 1e-10;
    for (k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (i = 0; i < sizeof ps / sizeof *ps; i++)
            for (j = 0; j < sizeof sizes / sizeof *sizes; j++) {
                coll_world w;
                size_t actual, count = count_for(kinds[k], ps[i], sizes[j], &actual);
                unsigned long long num, den;
                coll_xfer x;
                if (world_init(&w, ps[i], NULL)) { expect(0, "coll_init"); world_free(&w); continue; }
                sent_bound(kinds[k], ps[i], actual, &num, &den);
                for (a = 1; a < COLL_ALGO_COUNT; a++) {
                    world_args(&w, kinds[k], (coll_algo)a, count);
                    if (coll_describe(&w.c[0], &w.a, 0, &x) < 0) continue;
                    r = sim_run(ps[i], coll_sched, &w, &md);
                    {   /* the cached plan's steps are coll_describe's, every step of every rank */
                        sim_result r2 = sim_run(ps[i], coll_sched_describe, &w, &md);
                        int q, st2, same = r2.error == r.error && r2.sent_max == r.sent_max &&
                                           r2.rounds_max == r.rounds_max && r2.depth_max == r.depth_max &&
                                           r2.time == r.time && r2.step_max == r.step_max;
                        for (q = 0; q < ps[i] && same; q++)
                            for (st2 = 0; same; st2++) {
                                coll_xfer x1, x2;
                                int a1, a2;
                                memset(&x1, 0, sizeof x1); memset(&x2, 0, sizeof x2);
                                a1 = coll_sched(&w, q, st2, &x1);
                                a2 = coll_sched_describe(&w, q, st2, &x2);
                                same = a1 == a2 && (a1 != 1 || memcmp(&x1, &x2, sizeof x1) == 0);
                                if (a1 != 1) break;
                            }
                        snprintf(what, sizeof what, "%s %s p=%d %zu B: every step as coll_describe says",
                                 coll_kind_name(kinds[k]), coll_algo_name((coll_algo)a), ps[i], actual);
                        expect(same, what);
                    }
                    snprintf(what, sizeof what, "%s %s p=%d %zu B: %s", coll_kind_name(kinds[k]),
                             coll_algo_name((coll_algo)a), ps[i], actual,
                             r.error ? sim_error_str(r.error) : "bounds");
                    expect(r.error == 0 && r.sent_max * den >= num &&
                           (ps[i] == 1 || r.depth_max >= ceil_lg(ps[i])), what);
                    /* the ring's formula, exactly, when p divides the data */
                    if (a == COLL_ALGO_RING && !r.error && count % (size_t)ps[i] == 0 &&
                        (kinds[k] == COLL_ALLREDUCE || kinds[k] == COLL_REDUCE_SCATTER ||
                         kinds[k] == COLL_ALLGATHER)) {
                        unsigned long long want = num / den;
                        snprintf(what, sizeof what, "%s ring p=%d %zu B sends exactly %llu B",
                                 coll_kind_name(kinds[k]), ps[i], actual, want);
                        expect(num % den == 0 && r.sent_max == want, what);
                    }
                }
                world_free(&w);
            }

    /* the two-level machine: each message between hosts counted, as an
       independent replay of coll_describe counts them */
    {
        sim_topo tp;
        coll_kind tk[] = {COLL_ALLREDUCE, COLL_ALLGATHER, COLL_BROADCAST, COLL_ALLTOALL};
        memset(&tp, 0, sizeof tp);
        tp.H = 2; tp.L = 4; tp.in = md; tp.out = md; tp.out.alpha *= 10; tp.out.beta *= 10;
        for (k = 0; k < sizeof tk / sizeof *tk; k++)
            for (tp.inter = 0; tp.inter < 2; tp.inter++) {
                coll_world w;
                size_t actual, count = count_for(tk[k], 8, 64 << 10, &actual);
                if (world_init(&w, 8, NULL)) { expect(0, "coll_init"); world_free(&w); continue; }
                for (a = 1; a < COLL_ALGO_COUNT; a++) {
                    unsigned long long inter = 0, intra = 0, link[4] = {0, 0, 0, 0}, lmax = 0;
                    coll_xfer x;
                    int q, st2;
                    world_args(&w, tk[k], (coll_algo)a, count);
                    if (coll_describe(&w.c[0], &w.a, 0, &x) < 0) continue;
                    for (q = 0; q < 8; q++)
                        for (st2 = 0; coll_sched_describe(&w, q, st2, &x) == 1; st2++)
                            if (x.send_to >= 0 && x.send_bytes) {
                                int h1 = tp.inter ? q % 2 : q / 4, h2 = tp.inter ? x.send_to % 2 : x.send_to / 4;
                                if (h1 == h2) { intra += x.send_bytes; continue; }
                                inter += x.send_bytes; link[2 * h1] += x.send_bytes; link[2 * h2 + 1] += x.send_bytes;
                            }
                    for (q = 0; q < 4; q++) if (link[q] > lmax) lmax = link[q];
                    sim_two = &tp;
                    r = sim_run(8, coll_sched, &w, &md);
                    sim_two = NULL;
                    snprintf(what, sizeof what, "%s %s 2x4 %s: inter %llu (replay %llu), link %llu (%llu), intra %llu (%llu)",
                             coll_kind_name(tk[k]), coll_algo_name((coll_algo)a), tp.inter ? "interleaved" : "host-major",
                             r.inter_total, inter, r.inter_link, lmax, r.intra_total, intra);
                    expect(r.error == 0 && r.inter_total == inter && r.inter_link == lmax && r.intra_total == intra, what);
                    free(r.step_bytes); free(r.step_top);
                }
                world_free(&w);
            }
        /* the ring over host-major ranks crosses at 2 of 8 hops: 2 x 2(p-1) x n/p;
           interleaved at every hop */
        {
            coll_world w;
            size_t n8 = 8192;
            if (world_init(&w, 8, NULL) == 0) {
                world_args(&w, COLL_ALLREDUCE, COLL_ALGO_RING, n8);
                for (tp.inter = 0; tp.inter < 2; tp.inter++) {
                    unsigned long long want = (tp.inter ? 8ull : 2ull) * 14 * (n8 * 4 / 8);
                    sim_two = &tp;
                    r = sim_run(8, coll_sched, &w, &md);
                    sim_two = NULL;
                    snprintf(what, sizeof what, "ring allreduce 2x4 %s: %llu B between hosts, want %llu",
                             tp.inter ? "interleaved" : "host-major", r.inter_total, want);
                    expect(r.error == 0 && r.inter_total == want, what);
                }
            } else expect(0, "coll_init");
            world_free(&w);
        }
        /* coll_hier.h's all-reduce, rings: across, each of the 8 ranks sends
           2(H-1)/H = 1 times its n/L shard, 8 x n/4 = 2n in all; inside, the
           reduce-scatter and the all-gather send (L-1) shards of n/L each */
        {
            hier_run *hr = (hier_run *)calloc(1, sizeof *hr);
            coll_algo ch[3] = {COLL_ALGO_RING, COLL_ALGO_RING, COLL_ALGO_RING};
            size_t n8 = 8192;
            tp.inter = 0;
            if (hr && hier_init(hr, 2, 4, COLL_ALLREDUCE, n8, &tp) == 0) {
                r = hier_play(hr, ch, &tp);
                snprintf(what, sizeof what, "hier allreduce 2x4: %llu B between hosts, want %zu; intra %llu, want %zu",
                         r.inter_total, 2 * n8 * 4, r.intra_total, 8 * 2 * 3 * (n8 * 4 / 4));
                expect(r.error == 0 && r.inter_total == 2 * n8 * 4 && r.intra_total == 8 * 2 * 3 * (n8 * 4 / 4), what);
            } else expect(0, "hier_init");
            if (hr) hier_free(hr);
            free(hr);
        }
    }

    /* 4096 ranks in reasonable time */
    {
        coll_world w;
        clock_t c0 = clock();
        double secs;
        if (world_init(&w, 4096, NULL) == 0) {
            world_args(&w, COLL_ALLREDUCE, COLL_ALGO_TREE, 1 << 20);
            r = sim_run(4096, coll_sched, &w, &md);
            secs = (double)(clock() - c0) / CLOCKS_PER_SEC;
            snprintf(what, sizeof what, "allreduce tree p=4096: %.2f s, depth %d", secs, r.depth_max);
            expect(r.error == 0 && r.depth_max == 2 * 12 && secs < 5, what);
        } else {
            expect(0, "coll_init p=4096");
        }
        world_free(&w);
    }
    printf("sim: %d passed, %d failed\n", t_pass, t_fail);
}

/* ---- main ------------------------------------------------------------------ */

static void usage(void)
{
    fprintf(stderr,
            "usage: sim [-c coll,...] [-p ranks,...] [-n bytes,...] [-a all|algo,...] [-steps]\n"
            "           [-alpha s] [-beta s/B] [-gamma s/B]    (defaults: coll's own model)\n"
            "       sim -H hosts -L ranks_a_host [-c ...] [-n ...] [-best] [-pairs]\n"
            "           [-intra a,b,g] [-inter a,b,g]   the two-level machine (default inside:\n"
            "           coll's own model; between hosts 20e-6,0.32e-9 and the same gamma)\n"
            "       sim -t     self-test\n");
}

static size_t parse_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end == 'K' || *end == 'k') { v <<= 10; end++; }
    else if (*end == 'M' || *end == 'm') { v <<= 20; end++; }
    else if (*end == 'G' || *end == 'g') { v <<= 30; end++; }
    return *end || end == s ? 0 : (size_t)v;
}

int main(int argc, char **argv)
{
    const char *colls = "allreduce", *ps = "2,4,64,4096", *ns = "8,64M", *as = "all";
    sim_model md, ov;
    sim_topo two;
    int i, have_ov = 0, bad = 0, nalgos = 0, two_set = 0;
    coll_algo algos[COLL_ALGO_COUNT];
    char cbuf[256], pbuf[256], nbuf[256], *c, *sc, *pp, *sp, *nn, *sn;

    memset(&two, 0, sizeof two);
    {   /* the default clock: coll's own cost model, as a fresh comm has it */
        coll_world w;
        if (world_init(&w, 1, NULL)) return 1;
        md.alpha = w.c[0].tune.alpha; md.beta = w.c[0].tune.beta; md.gamma = w.c[0].tune.gamma;
        world_free(&w);
    }
    ov = md;
    two.in = md;                    /* inside a host: coll's own model */
    two.out.alpha = 20e-6; two.out.beta = 0.32e-9; two.out.gamma = md.gamma;   /* ~25 Gbit/s */
    for (i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "-t")) { self_test(); return t_fail ? 1 : 0; }
        if (!strcmp(argv[i], "-steps")) { sim_steps = 1; continue; }
        if (!strcmp(argv[i], "-best")) { sim_best = 1; continue; }
        if (!strcmp(argv[i], "-pairs")) { sim_pairs = 1; continue; }
        if (!v) { usage(); return 2; }
        if (!strcmp(argv[i], "-H")) two.H = atoi(v);
        else if (!strcmp(argv[i], "-L")) two.L = atoi(v);
        else if (!strcmp(argv[i], "-intra") || !strcmp(argv[i], "-inter")) {
            sim_model *m = argv[i][3] == 't' && argv[i][4] == 'r' ? &two.in : &two.out;
            if (sscanf(v, "%lf,%lf,%lf", &m->alpha, &m->beta, &m->gamma) != 3 ||
                !(m->alpha >= 0) || !(m->beta >= 0) || !(m->gamma >= 0)) {
                fprintf(stderr, "sim: %s wants alpha,beta,gamma (s, s/B, s/B; none negative), got %s\n", argv[i], v);
                return 2;
            }
            two_set = 1;
        }
        else if (!strcmp(argv[i], "-c")) colls = v;
        else if (!strcmp(argv[i], "-p")) ps = v;
        else if (!strcmp(argv[i], "-n")) ns = v;
        else if (!strcmp(argv[i], "-a")) as = v;
        else if (!strcmp(argv[i], "-alpha")) { ov.alpha = atof(v); have_ov = 1; }
        else if (!strcmp(argv[i], "-beta")) { ov.beta = atof(v); have_ov = 1; }
        else if (!strcmp(argv[i], "-gamma")) { ov.gamma = atof(v); have_ov = 1; }
        else { usage(); return 2; }
        i++;
    }
    if (have_ov) md = ov;
    if (strcmp(as, "all") != 0) {
        char abuf[256], *t, *st;
        snprintf(abuf, sizeof abuf, "%s", as);
        for (t = strtok_r(abuf, ",", &st); t; t = strtok_r(NULL, ",", &st)) {
            if ((algos[nalgos] = algo_by_name(t)) == COLL_ALGO_COUNT) {
                fprintf(stderr, "sim: unknown algorithm %s\n", t);
                return 2;
            }
            nalgos++;
        }
    }
    if (two.H || two.L || two_set) {          /* the two-level machine */
        if (two.H < 1 || two.L < 1 || two.L > HIER_MAX_L || (long)two.H * two.L > 1 << 20) {
            fprintf(stderr, "sim: the two-level machine needs -H hosts >= 1 and -L ranks a host, 1..%d\n", HIER_MAX_L);
            return 2;
        }
        printf("# %d hosts x %d ranks; inside a host: alpha %.3g s, beta %.3g s/B, gamma %.3g s/B;"
               " between hosts: alpha %.3g s, beta %.3g s/B, gamma %.3g s/B\n", two.H, two.L, two.in.alpha,
               two.in.beta, two.in.gamma, two.out.alpha, two.out.beta, two.out.gamma);
        printf("collective\tform\talgo\thosts\tbytes\tinter_link_B\tinter_B\tintra_B\trounds\ttime_us\tauto\n");
        snprintf(cbuf, sizeof cbuf, "%s", colls);
        for (c = strtok_r(cbuf, ",", &sc); c; c = strtok_r(NULL, ",", &sc)) {
            coll_kind k = kind_by_name(c);
            if (k == COLL_KIND_COUNT) { fprintf(stderr, "sim: unknown collective %s\n", c); return 2; }
            snprintf(nbuf, sizeof nbuf, "%s", ns);
            for (nn = strtok_r(nbuf, ",", &sn); nn; nn = strtok_r(NULL, ",", &sn)) {
                size_t b = parse_size(nn);
                if (!b) { fprintf(stderr, "sim: bad size %s\n", nn); return 2; }
                bad += report_two(k, &two, b);
            }
        }
        return bad ? 1 : 0;
    }
    printf("# clock: alpha %.3g s, beta %.3g s/B, gamma %.3g s/B\n", md.alpha, md.beta, md.gamma);
    printf("collective\talgo\tranks\tbytes\tsent_B\tlb_B\tstep_B\trounds\tlb_rounds\tdepth\ttime_us\tauto\n");
    snprintf(cbuf, sizeof cbuf, "%s", colls);
    for (c = strtok_r(cbuf, ",", &sc); c; c = strtok_r(NULL, ",", &sc)) {
        coll_kind k = kind_by_name(c);
        if (k == COLL_KIND_COUNT) { fprintf(stderr, "sim: unknown collective %s\n", c); return 2; }
        snprintf(pbuf, sizeof pbuf, "%s", ps);
        for (pp = strtok_r(pbuf, ",", &sp); pp; pp = strtok_r(NULL, ",", &sp)) {
            int p = atoi(pp);
            if (p < 1 || p > 1 << 20) { fprintf(stderr, "sim: bad rank count %s\n", pp); return 2; }
            snprintf(nbuf, sizeof nbuf, "%s", ns);
            for (nn = strtok_r(nbuf, ",", &sn); nn; nn = strtok_r(NULL, ",", &sn)) {
                size_t b = parse_size(nn);
                if (!b) { fprintf(stderr, "sim: bad size %s\n", nn); return 2; }
                bad += report(k, p, b, nalgos ? algos : NULL, nalgos, &md, have_ov ? &ov : NULL);
            }
        }
    }
    return bad ? 1 : 0;
}
