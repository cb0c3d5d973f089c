/* trace.c - watch one collective move, step by step, on every rank.

       make trace COLL=allreduce ALGO=rabenseifner P=6 N=12
       build/teach/trace coll=reduce algo=binomial p=5 n=4 root=2 dtype=float64 op=avg

   Options (key=value): coll, algo (any registered pair; auto = what the
   cost model picks), p (1..65535: up to 16 every rank's buffers, above
   that a summary per step; see below), n (the count the API takes: per rank for
   the block-wise collectives), root, dtype (int32 int64 uint32 uint64
   float32 float64), op (sum prod min max avg band bor bxor), inplace (0/1),
   group (hierarchical), scratch (bytes per rank; the pipeline chunk is half
   of it, rounded down to 64 bytes). The v forms split n unevenly: counts[i]
   = (n + i) / p.

   It prints every rank's buffers at the start, then for each step who
   sends which elements to whom and whether the receiver copies or reduces
   them, and every rank's buffers after the step; then the local moves at
   the end and the check. The steps come from the schedules alone
   (tools/sched_sim.h); then the real library runs the same call over the
   one-thread mailbox port (ports/coll_mailbox.h), and the result must equal
   both the simulation and a plain loop over the inputs.

   Above 16 ranks, where a lane per rank would not fit, each step is one
   line from coll_describe on every rank: messages, bytes, the most one
   rank sends, receives that reduce or copy, idle ranks and the most common
   peer distance, with what ranks 0, 1 and p-1 do; then the library runs the
   call over the mailbox port (up to TRACE_RUN_RANKS ranks) and every
   rank's result is checked against a plain loop.

   A name it does not know (coll=, algo=, dtype=, op=, or a key) is
   answered with the names it does know.

       build/teach/trace --all [p=5]    every registered (collective,
                                        algorithm), in and out of place,
                                        checked quietly; ends "N passed, N failed"
*/
#define COLL_IMPLEMENTATION
#include "coll.h"
#define TRACE_RUN_RANKS 1024       /* the library's own run, above 16 ranks */
#define COLL_MAILBOX_MAX_RANKS TRACE_RUN_RANKS
#define COLL_MAILBOX_IMPLEMENTATION
#include "ports/coll_mailbox.h"
#include "tools/sched_sim.h"

#include <stdlib.h>

static int passed, failed, quiet;

static void check(int ok, const char *what)
{
    if (ok) passed++;
    else { failed++; printf("FAIL: %s\n", what); }
}

/* ---- names --------------------------------------------------------------- */
static const char *const dtype_names[] = { "int8", "uint8", "int32", "uint32", "int64", "uint64",
                                           "float16", "bfloat16", "float32", "float64" };
static const char *const op_names[] = { "sum", "prod", "min", "max", "avg", "band", "bor", "bxor" };
static const char *const op_signs[] = { "+", "*", "min", "max", "+", "&", "|", "^" };

static int find_kind(const char *s)
{
    int k;
    for (k = 0; k < COLL_KIND_COUNT; k++) if (strcmp(s, coll_kind_name((coll_kind)k)) == 0) return k;
    return -1;
}
static int find_algo(const char *s)
{
    int a;
    for (a = 0; a < COLL_ALGO_COUNT; a++) if (strcmp(s, coll_algo_name((coll_algo)a)) == 0) return a;
    return -1;
}
static int find_name(const char *s, const char *const *names, int n)
{
    int i;
    for (i = 0; i < n; i++) if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

/* The names a bad one could have been, on stderr. */
static void list_kinds(void)
{
    int k;
    fprintf(stderr, "  collectives:");
    for (k = 0; k < COLL_KIND_COUNT; k++) fprintf(stderr, " %s", coll_kind_name((coll_kind)k));
    fprintf(stderr, "\n");
}
static void list_algos(int kind)
{
    size_t e;
    int a;
    fprintf(stderr, "  algorithms:");
    for (a = 0; a < COLL_ALGO_COUNT; a++) fprintf(stderr, " %s", coll_algo_name((coll_algo)a));
    fprintf(stderr, "\n");
    if (kind < 0) return;
    fprintf(stderr, "  registered for %s: auto", coll_kind_name((coll_kind)kind));
    for (e = 0; coll__row_at(e); e++)
        if (coll__row_at(e)->kind == kind && coll__row_at(e)->f)
            fprintf(stderr, " %s", coll_algo_name((coll_algo)coll__row_at(e)->algo));
    fprintf(stderr, "\n");
}
static void list_names(const char *what, const char *const *names, int n, int from)
{
    int i;
    fprintf(stderr, "  %s:", what);
    for (i = from; i < n; i++) fprintf(stderr, " %s", names[i]);
    fprintf(stderr, "\n");
}

/* ---- printing -------------------------------------------------------------- */
static void fmt_val(char *out, size_t n, double v)
{
    if (v != v) snprintf(out, n, ".");
    else snprintf(out, n, "%.6g", v);
}

static int width_of(const sim *s)
{
    int r, w = 1;
    size_t i;
    char b[40];
    for (r = 0; r < s->cfg.p; r++)
        for (i = 0; i < s->rk[r].arena_n; i++) {
            int l;
            fmt_val(b, sizeof b, s->rk[r].arena[i]);
            l = (int)strlen(b);
            if (l > w) w = l;
        }
    return w;
}

static void print_span(const double *v, size_t n, int w)
{
    size_t i;
    char b[40];
    printf("[");
    for (i = 0; i < n; i++) { fmt_val(b, sizeof b, v[i]); printf("%s%*s", i ? " " : "", w, b); }
    printf("]");
}

static void print_buffers(const sim *s)
{
    int r, w = width_of(s);
    for (r = 0; r < s->cfg.p; r++) {
        const sim_rank *k = &s->rk[r];
        printf("    r%-2d ", r);
        if (s->cfg.kind == COLL_BARRIER) { printf("(no data)\n"); continue; }
        if (k->src_off == k->dst_off || s->cfg.inplace || s->cfg.kind == COLL_BROADCAST) {
            printf("buf ");
            print_span(k->arena, k->room_b ? k->room_off : k->arena_n, w);
        } else {
            printf("src ");
            print_span(k->arena + k->src_off, k->src_n, w);
            printf("  dst ");
            print_span(k->arena + k->dst_off, k->dst_n, w);
        }
        if (k->room_b) {                 /* a small call's blocks: block j is rank r-j's */
            printf("  room ");
            print_span(k->arena + k->room_off, (size_t)s->cfg.p * k->room_b, w);
        }
        printf("\n");
    }
}

static const char *bufname(int b) { return b == COLL_BUF_ROOM ? "room" : b == COLL_BUF_SRC ? "src" : "dst"; }

static void print_span_name(int buf, size_t off, size_t len, size_t run, size_t stride)
{
    if (run) printf("%s[%lu:+%lu every %lu, %lu in all]", bufname(buf), (unsigned long)off,
                    (unsigned long)run, (unsigned long)stride, (unsigned long)len);
    else printf("%s[%lu:%lu]", bufname(buf), (unsigned long)off, (unsigned long)(off + len));
}

static void print_moves(const sim *s, const sim_msg *ev, int nev)
{
    int i;
    char lab[48];
    for (i = 0; i < nev; i++) {
        const sim_msg *x = &ev[i];
        if (s->cfg.kind == COLL_BARRIER) { printf("    %d -> %d  signal\n", x->from, x->to); continue; }
        sim_label(s, x, lab, sizeof lab);
        printf("    %d -> %d  %-6s ", x->from, x->to, lab);
        print_span_name(x->sbuf, x->soff, x->slen, x->srun, x->sstride);
        if (x->reduce) {
            printf("  reduced: r%d ", x->to);
            print_span_name(x->rbuf, x->roff, x->rlen, 0, 0);
            printf(" = ");
            print_span_name(x->abuf, x->aoff, x->rlen, 0, 0);
            printf(" %s received", op_signs[s->cfg.op]);
        } else {
            printf("  copied into r%d ", x->to);
            print_span_name(x->rbuf, x->roff, x->rlen, x->rrun, x->rstride);
        }
        if (x->sent_step != x->recv_step)
            printf("  (sender's step %d, receiver's step %d)", x->sent_step, x->recv_step);
        printf("\n");
    }
    if (!nev) printf("    (no message arrives)\n");
}

/* ---- the real library over the mailbox port ------------------------------ */
static unsigned char mem[SIM_MAX_RANKS][SIM_MAX_ELEMS * 8];
static unsigned char scratch_mem[SIM_MAX_RANKS][SIM_MAX_SCRATCH];

static void put(unsigned char *at, coll_dtype t, double v)
{
    switch (t) {
    case COLL_INT32:  { int32_t x = (int32_t)v; memcpy(at, &x, 4); } break;
    case COLL_UINT32: { uint32_t x = (uint32_t)v; memcpy(at, &x, 4); } break;
    case COLL_INT64:  { int64_t x = (int64_t)v; memcpy(at, &x, 8); } break;
    case COLL_UINT64: { uint64_t x = (uint64_t)v; memcpy(at, &x, 8); } break;
    case COLL_FLOAT32:{ float x = (float)v; memcpy(at, &x, 4); } break;
    default:          { memcpy(at, &v, 8); } break;
    }
}
static double get(const unsigned char *at, coll_dtype t)
{
    switch (t) {
    case COLL_INT32:  { int32_t x; memcpy(&x, at, 4); return (double)x; }
    case COLL_UINT32: { uint32_t x; memcpy(&x, at, 4); return (double)x; }
    case COLL_INT64:  { int64_t x; memcpy(&x, at, 8); return (double)x; }
    case COLL_UINT64: { uint64_t x; memcpy(&x, at, 8); return (double)x; }
    case COLL_FLOAT32:{ float x; memcpy(&x, at, 4); return (double)x; }
    default:          { double x; memcpy(&x, at, 8); return x; }
    }
}

/* Runs the call on every rank (coll_start, then coll_progress in turns).
   Returns 0 or the first error. */
static int run_real(const sim *s)
{
    static coll_mailbox box;
    const sim_cfg *c = &s->cfg;
    coll_comm comm[SIM_MAX_RANKS];
    coll_request req[SIM_MAX_RANKS];
    int r, done[SIM_MAX_RANKS] = {0}, pending = c->p, turns = 0, rc;
    size_t i, es = coll_dtype_size(c->dtype);
    coll_mailbox_init(&box, c->p);
    for (r = 0; r < c->p; r++) {
        coll_port port = coll_mailbox_port(&box, r);
        coll_args a = s->args[r];
        const sim_rank *k = &s->rk[r];
        coll_init(&comm[r], r, c->p, &port, scratch_mem[r], c->scratch);
        memset(mem[r], 0x5a, sizeof mem[r]);
        for (i = 0; i < k->arena_n; i++)
            if (s->init[r][i] == s->init[r][i]) put(mem[r] + i * es, c->dtype, s->init[r][i]);
        if (c->kind != COLL_BARRIER) {
            a.src = mem[r] + k->src_off0 * es;
            a.dst = mem[r] + k->dst_off * es;
        }
        a.algo = c->algo;
        rc = coll_start(&req[r], &comm[r], &a);
        if (rc != COLL_OK) return rc;
    }
    while (pending > 0 && turns++ < 1000000) {
        for (r = 0; r < c->p; r++) {
            if (done[r]) continue;
            rc = coll_progress(&req[r]);
            if (rc == COLL_AGAIN) continue;
            if (rc != COLL_OK) return rc;
            done[r] = 1;
            pending--;
        }
    }
    return pending ? COLL_ERR_TIMEOUT : COLL_OK;
}

static int same(coll_dtype t, double a, double b)
{
    if (t == COLL_FLOAT32) return fabs(a - b) <= 1e-6 * (fabs(b) + 1);
    return a == b;
}

/* ---- one traced call ------------------------------------------------------- */
static void trace_one(const sim_cfg *cfg, int break_it)
{
    static sim s;
    static sim_msg ev[SIM_MAX_QUEUED];
    int nev;
    char what[400], name[100];
    const char *fin;
    int r, rc, st = 0, ok_sim = 1, ok_real = 1;
    size_t i, es;
    static double want[SIM_MAX_ELEMS];

    snprintf(name, sizeof name, "%s/%s p=%d n=%lu %s%s", coll_kind_name(cfg->kind),
             coll_algo_name(cfg->algo), cfg->p, (unsigned long)cfg->n,
             cfg->inplace ? "in place" : "out of place",
             cfg->kind == COLL_REDUCE || cfg->kind == COLL_BROADCAST || cfg->kind == COLL_GATHER ||
             cfg->kind == COLL_SCATTER || cfg->kind == COLL_GATHERV || cfg->kind == COLL_SCATTERV ?
             (cfg->root ? " root>0" : "") : "");
    if (sim_init(&s, cfg) != 0) {
        snprintf(what, sizeof what, "%s: %s", name, s.err);
        if (!quiet) { printf("%s\n", what); fflush(stdout); list_algos(cfg->kind); }
        check(0, what);
        return;
    }
    es = coll_dtype_size(cfg->dtype);
    if (!quiet) {
        printf("%s, algorithm %s, p = %d, n = %lu, %s, op %s, %s", coll_kind_name(cfg->kind),
               coll_algo_name(s.cfg.algo), cfg->p, (unsigned long)cfg->n, dtype_names[cfg->dtype],
               op_names[cfg->op], cfg->inplace ? "in place" : "out of place");
        if (cfg->kind == COLL_REDUCE || cfg->kind == COLL_BROADCAST || cfg->kind == COLL_GATHER ||
            cfg->kind == COLL_SCATTER || cfg->kind == COLL_GATHERV || cfg->kind == COLL_SCATTERV)
            printf(", root %d", cfg->root);
        if (s.cfg.algo == COLL_ALGO_HIERARCHICAL) printf(", groups of %d", cfg->group);
        if (sim_is_v(cfg->kind)) {
            printf(", counts");
            for (r = 0; r < cfg->p; r++) printf("%s%lu", r ? "," : " ", (unsigned long)cfg->counts[r]);
        }
        printf("\n");
        if (sim_folds(s.cfg.algo) && s.pl[0].rem > 0) {
            int rem = s.pl[0].rem, p2 = s.pl[0].p2;
            printf("p = %d is not a power of two, so the ranks fold onto %d: in the first step\n"
                   "rank", cfg->p, p2);
            for (r = 0; r < rem; r++) printf("%s %d", r ? "," : rem > 1 ? "s" : "", 2 * r);
            printf(" hand%s everything to the odd neighbour and then sit out%s;\n"
                   "virtual ranks 0..%d = real ranks", rem > 1 ? "" : "s",
                   s.cfg.kind == COLL_ALLGATHER || s.cfg.kind == COLL_ALLGATHERV ? " (its block)" : "",
                   p2 - 1);
            for (r = 0; r < p2; r++) printf(" %d", coll__rrank(&s.pl[0], r));
            printf(" run the power-of-two algorithm;\nthe last step hands the result back.\n");
        }
        printf("start:\n");
        print_buffers(&s);
    }
    sim_start(&s);
    if (!quiet) {
        printf("after the local moves before step 0 (own data into place):\n");
        print_buffers(&s);
    }
    while (sim_round(&s, ev, &nev)) {
        if (!quiet) {
            const char *ph = sim_phase(&s, st);
            int pipe = s.cfg.algo == COLL_ALGO_PIPELINED_TREE || s.cfg.algo == COLL_ALGO_PIPELINED_CHAIN ||
                       s.cfg.algo == COLL_ALGO_DOUBLE_TREE;
            printf("%s %d%s%s%s\n", pipe ? "round" : "step", st, *ph ? " (" : "", ph, *ph ? ")" : "");
            print_moves(&s, ev, nev);
            printf("  after %s %d:\n", pipe ? "round" : "step", st);
            print_buffers(&s);
        }
        st++;
    }
    snprintf(what, sizeof what, "%s: the schedule runs to its end (no rank waits forever)", name);
    check(!s.deadlock, what);
    fin = sim_finish(&s);
    if (!quiet && *fin) {
        printf("at the end, %s:\n", fin);
        print_buffers(&s);
    }
    snprintf(what, sizeof what, "%s: coll_describe agrees with every step", name);
    check(s.describe_mismatch == 0, what);
    snprintf(what, sizeof what, "%s: every send meets a receive of its size", name);
    check(s.pair_mismatch == 0, what);

    /* the simulation against the plain loop */
    for (r = 0; r < cfg->p; r++) {
        size_t len;
        if (!sim_expected(&s, r, want, &len)) continue;
        for (i = 0; i < len; i++)
            if (!same(cfg->dtype, s.rk[r].arena[s.rk[r].dst_off + i], want[i])) {
                if (!quiet && ok_sim)
                    printf("  simulation: rank %d element %lu is %g, the plain loop says %g\n",
                           r, (unsigned long)i, s.rk[r].arena[s.rk[r].dst_off + i], want[i]);
                ok_sim = 0;
            }
    }
    snprintf(what, sizeof what, "%s: simulation equals the plain loop", name);
    check(ok_sim, what);

    /* the library over a real port against both */
    rc = run_real(&s);
    snprintf(what, sizeof what, "%s: the library runs it (%s)", name, coll_result_str(rc));
    check(rc == COLL_OK, what);
    if (rc == COLL_OK && break_it && cfg->kind != COLL_BARRIER) {   /* the check's own check */
        int rr = cfg->kind == COLL_REDUCE || cfg->kind == COLL_GATHER || cfg->kind == COLL_GATHERV ? cfg->root : 0;
        double v = get(mem[rr] + s.rk[rr].dst_off * es, cfg->dtype);
        put(mem[rr] + s.rk[rr].dst_off * es, cfg->dtype, v + 1);
    }
    for (r = 0; rc == COLL_OK && r < cfg->p; r++) {
        size_t len;
        if (!sim_expected(&s, r, want, &len)) continue;
        for (i = 0; i < len; i++) {
            double got = get(mem[r] + (s.rk[r].dst_off + i) * es, cfg->dtype);
            if (!same(cfg->dtype, got, want[i]) ||
                !same(cfg->dtype, got, s.rk[r].arena[s.rk[r].dst_off + i])) {
                if (!quiet && ok_real)
                    printf("  library: rank %d element %lu is %g, simulation %g, plain loop %g\n",
                           r, (unsigned long)i, got, s.rk[r].arena[s.rk[r].dst_off + i], want[i]);
                ok_real = 0;
            }
        }
    }
    snprintf(what, sizeof what, "%s: library equals the simulation and the plain loop", name);
    if (break_it) {
        snprintf(what, sizeof what, "%s: a corrupted result is caught", name);
        check(rc == COLL_OK && !ok_real, what);
    } else check(rc == COLL_OK && ok_real, what);
    if (!quiet)
        printf("check: %d steps; simulation %s the plain loop; library (mailbox port) %s\n", st,
               ok_sim ? "equals" : "DIFFERS FROM",
               rc != COLL_OK ? coll_result_str(rc) : ok_real ? "equals both" : "DIFFERS");
}

static void trace_big(sim_cfg *c, const size_t *cnt, int break_it);

/* Every registered (collective, algorithm) at p ranks above the lanes'
   limit: the summary (quiet) and the library's run against the plain loop. */
static void trace_all_big(int p, int break_it)
{
    static size_t cnt[64 * 64];
    size_t e;
    int i;
    for (e = 0; coll__row_at(e); e++) {
        const coll__entry *en = coll__row_at(e);
        sim_cfg c;
        if (!en->f) continue;
        memset(&c, 0, sizeof c);
        c.kind = en->kind; c.algo = en->algo; c.p = p; c.dtype = COLL_INT32; c.op = COLL_SUM;
        c.group = 4; c.scratch = 4096; c.root = p / 3;
        c.inplace = (en->needs & COLL__IN_PLACE) != 0;
        c.n = en->kind == COLL_ALLREDUCE || en->kind == COLL_REDUCE || en->kind == COLL_BROADCAST ||
              sim_is_scan(en->kind) || sim_is_v(en->kind) ? (size_t)(2 * p + 3) : 2;
        if (COLL__IN_ROOM(en)) {           /* a small call: p vectors must fit the room */
            if (en->kind == COLL_REDUCE_SCATTER || en->kind == COLL_SCATTER || en->kind == COLL_ALLTOALL) continue;
            c.n = 1;                       /* (these carry p blocks a vector: too large at this p) */
        }
        for (i = 0; i < p; i++) cnt[i] = (c.n + (size_t)i) / (size_t)p;
        if (en->kind == COLL_ALLTOALLV)
            for (i = 0; i < p * p; i++) cnt[i] = (size_t)(i / p + 2 * (i % p)) % 4;
        if (en->kind == COLL_REDUCE_SCATTERV && en->algo == COLL_ALGO_RING && !c.inplace)
            for (i = 0; i < p; i++) cnt[i] = 3;
        trace_big(&c, cnt, break_it);
        if (break_it) return;
    }
}

/* Every registered (collective, algorithm): out of place where the
   algorithm allows it, in place where the collective has a layout for it;
   sums in int32, and avg in float64 and a root > 0 where they apply. */
static void trace_all(int p, int break_it)
{
    size_t e;
    for (e = 0; coll__row_at(e); e++) {
        const coll__entry *en = coll__row_at(e);
        sim_cfg c;
        int ip, v;
        if (!en->f) continue;
        for (ip = 0; ip < 2; ip++) {
            if (ip == 0 && (en->needs & COLL__IN_PLACE)) continue;
            if (ip == 1 && en->kind == COLL_ALLTOALL) continue;         /* no in-place layout */
            if (ip == 1 && en->kind == COLL_BARRIER) continue;
            for (v = 0; v < 2; v++) {
                int i;
                memset(&c, 0, sizeof c);
                c.kind = en->kind; c.algo = en->algo; c.p = p; c.inplace = ip;
                c.n = en->kind == COLL_ALLREDUCE || en->kind == COLL_REDUCE ||
                      en->kind == COLL_BROADCAST || sim_is_v(en->kind) ? 12 : 3;
                for (i = 0; i < p; i++) c.counts[i] = (c.n + (size_t)i) / (size_t)p;
                if (en->kind == COLL_ALLTOALLV)   /* ragged; symmetric in place */
                    for (i = 0; i < p * p; i++)
                        c.counts[i] = ip ? (size_t)(i / p + i % p) % 3 : (size_t)(i / p + 2 * (i % p)) % 4;
                c.dtype = COLL_INT32; c.op = COLL_SUM; c.group = 2; c.scratch = 4096;
                if (en->kind == COLL_REDUCE_SCATTERV && en->algo == COLL_ALGO_RING && !ip)
                    for (i = 0; i < p; i++) c.counts[i] = 3;         /* equal blocks only */
                if (v == 1) {
                    if (coll__reduces(en->kind)) { c.dtype = COLL_FLOAT64; c.op = COLL_AVG; }
                    else if (en->kind == COLL_BROADCAST || en->kind == COLL_REDUCE ||
                             en->kind == COLL_GATHER || en->kind == COLL_SCATTER ||
                             en->kind == COLL_GATHERV || en->kind == COLL_SCATTERV) c.root = p / 2;
                    else continue;
                    if (en->kind == COLL_REDUCE) c.root = p / 2;
                    if (en->algo == COLL_ALGO_PIPELINED_TREE || en->algo == COLL_ALGO_PIPELINED_CHAIN ||
                        en->algo == COLL_ALGO_DOUBLE_TREE)
                        c.scratch = 128, c.n = 40;                    /* several chunks */
                    if (COLL__IN_ROOM(en) && en->kind == COLL_REDUCE_SCATTER)
                        c.n = 2;                  /* the whole vector fits the room */
                }
                trace_one(&c, break_it);
                if (break_it) return;
            }
        }
    }
}

/* ---- many ranks: a summary per step, then the library's own run -------------- */
/* The plain loop's answer for rank r of a call of p ranks (cnt: the v
   forms' counts, alltoallv's p x p matrix), into want; its length, or
   (size_t)-1 if rank r has no result. */
static size_t big_expected(const sim_cfg *c, const size_t *cnt, int r, double *want)
{
    int q, p = c->p, upto;
    size_t i, n = c->n, off = 0, len, j;
    switch (c->kind) {
    case COLL_ALLREDUCE: case COLL_REDUCE:
        if (c->kind == COLL_REDUCE && r != c->root) return (size_t)-1;
        for (i = 0; i < n; i++) {
            double v = sim_value(c, 0, i);
            for (q = 1; q < p; q++) v = sim__apply(c->op, v, sim_value(c, q, i));
            want[i] = c->op == COLL_AVG ? sim__div(c->dtype, v, p) : v;
        }
        return n;
    case COLL_REDUCE_SCATTER: case COLL_REDUCE_SCATTERV:
        if (c->kind == COLL_REDUCE_SCATTERV) { for (q = 0; q < r; q++) off += cnt[q]; len = cnt[r]; }
        else { off = (size_t)r * n; len = n; }
        for (i = 0; i < len; i++) {
            double v = sim_value(c, 0, off + i);
            for (q = 1; q < p; q++) v = sim__apply(c->op, v, sim_value(c, q, off + i));
            want[i] = c->op == COLL_AVG ? sim__div(c->dtype, v, p) : v;
        }
        return len;
    case COLL_SCAN: case COLL_EXSCAN:
        upto = c->kind == COLL_SCAN ? r + 1 : (r ? r : 1);
        for (i = 0; i < n; i++) {
            double v = sim_value(c, 0, i);
            for (q = 1; q < upto; q++) v = sim__apply(c->op, v, sim_value(c, q, i));
            want[i] = c->op == COLL_AVG ? sim__div(c->dtype, v, upto) : v;
        }
        return n;
    case COLL_ALLGATHER: case COLL_ALLGATHERV: case COLL_GATHER: case COLL_GATHERV:
        if ((c->kind == COLL_GATHER || c->kind == COLL_GATHERV) && r != c->root) return (size_t)-1;
        for (q = 0, j = 0; q < p; q++) {
            len = sim_is_v(c->kind) ? cnt[q] : n;
            for (i = 0; i < len; i++) want[j++] = sim_value(c, q, i);
        }
        return j;
    case COLL_BROADCAST:
        for (i = 0; i < n; i++) want[i] = sim_value(c, c->root, i);
        return n;
    case COLL_SCATTER: case COLL_SCATTERV:
        if (c->kind == COLL_SCATTERV) { for (q = 0; q < r; q++) off += cnt[q]; len = cnt[r]; }
        else { off = (size_t)r * n; len = n; }
        for (i = 0; i < len; i++) want[i] = sim_value(c, c->root, off + i);
        return len;
    case COLL_ALLTOALL:
        for (q = 0; q < p; q++) for (i = 0; i < n; i++) want[(size_t)q * n + i] = sim_value(c, q, (size_t)r * n + i);
        return (size_t)p * n;
    case COLL_ALLTOALLV:
        for (q = 0, j = 0; q < p; q++) {     /* column r: what rank q sends r, from its row's offset */
            size_t from = 0, k;
            for (k = 0; k < (size_t)r; k++) from += cnt[(size_t)q * (size_t)p + k];
            for (i = 0; i < cnt[(size_t)q * (size_t)p + (size_t)r]; i++) want[j++] = sim_value(c, q, from + i);
        }
        return j;
    default: return (size_t)-1;
    }
}

/* Elements in src and dst of rank r. */
static void big_sizes(const sim_cfg *c, const size_t *cnt, int r, size_t *in_n, size_t *out_n, size_t *mine)
{
    size_t total = 0, P = (size_t)c->p, i;
    *mine = 0;
    if (c->kind == COLL_ALLTOALLV) {
        *in_n = *out_n = 0;
        for (i = 0; i < P; i++) { *in_n += cnt[(size_t)r * P + i]; *out_n += cnt[i * P + (size_t)r]; }
        for (i = 0; i < (size_t)r; i++) *mine += cnt[(size_t)r * P + i];
        return;
    }
    if (sim_is_v(c->kind)) {
        for (i = 0; i < P; i++) { if ((int)i < r) *mine += cnt[i]; total += cnt[i]; }
    } else { *mine = (size_t)r * c->n; total = c->n * P; }
    switch (c->kind) {
    case COLL_ALLREDUCE: case COLL_REDUCE: case COLL_BROADCAST: case COLL_SCAN: case COLL_EXSCAN:
        *in_n = *out_n = c->n; break;
    case COLL_REDUCE_SCATTER: case COLL_SCATTER: *in_n = total; *out_n = c->n; break;
    case COLL_REDUCE_SCATTERV: case COLL_SCATTERV: *in_n = total; *out_n = cnt[r]; break;
    case COLL_ALLGATHER: case COLL_GATHER: *in_n = c->n; *out_n = total; break;
    case COLL_ALLGATHERV: case COLL_GATHERV: *in_n = cnt[r]; *out_n = total; break;
    case COLL_ALLTOALL: *in_n = *out_n = total; break;
    default: *in_n = *out_n = 0; break;
    }
}

/* Where src and dst start in rank r's arena (the in-place layouts as
   sim_init lays them out); the arena's length. */
static size_t big_layout(const sim_cfg *c, const size_t *cnt, int r, size_t *src_off, size_t *dst_off)
{
    size_t in_n, out_n, mine;
    coll_kind k = c->kind;
    big_sizes(c, cnt, r, &in_n, &out_n, &mine);
    if (k == COLL_BROADCAST || (c->inplace && (k == COLL_ALLREDUCE || k == COLL_REDUCE || sim_is_scan(k) ||
                                               k == COLL_ALLTOALL || k == COLL_ALLTOALLV))) {
        *src_off = *dst_off = 0; return out_n;
    }
    if (c->inplace && (k == COLL_REDUCE_SCATTER || k == COLL_REDUCE_SCATTERV || k == COLL_SCATTER || k == COLL_SCATTERV)) {
        *src_off = 0; *dst_off = mine; return in_n;
    }
    if (c->inplace && (k == COLL_ALLGATHER || k == COLL_ALLGATHERV || k == COLL_GATHER || k == COLL_GATHERV)) {
        *dst_off = 0; *src_off = mine; return out_n;
    }
    *src_off = 0; *dst_off = in_n;
    return in_n + out_n;
}

static void fmt_bytes(char *o, size_t n, double b)
{
    if (b >= 1048576) snprintf(o, n, "%.1f MiB", b / 1048576);
    else if (b >= 1024) snprintf(o, n, "%.1f KiB", b / 1024);
    else snprintf(o, n, "%.0f B", b);
}

static void print_xfer(int r, const coll_xfer *x)
{
    if (quiet) return;
    printf("      r%d:", r);
    if (x->send_to >= 0) printf(" sends %lu B to r%d", (unsigned long)x->send_bytes, x->send_to);
    if (x->recv_from >= 0) printf("%s %s %lu B from r%d", x->send_to >= 0 ? "," : "",
                                  x->reduce ? "reduces" : "copies", (unsigned long)x->recv_bytes, x->recv_from);
    if (x->send_to < 0 && x->recv_from < 0) printf(" idle");
    printf("\n");
}

#define say(...) (quiet ? 0 : printf(__VA_ARGS__))
static void trace_big(sim_cfg *c, const size_t *cnt, int break_it)
{
    int p = c->p, r, st, rc = COLL_OK, steps = 0, *dist;
    size_t es = coll_dtype_size(c->dtype), i, j, scratch = c->scratch;
    coll_comm *comm = malloc((size_t)p * sizeof *comm);
    coll_args *args = malloc((size_t)p * sizeof *args);
    unsigned char **mem = calloc((size_t)p, sizeof *mem), *scr;
    size_t *soff = malloc((size_t)p * sizeof *soff), *doff = malloc((size_t)p * sizeof *doff);
    double bytes = 0, *sent = calloc((size_t)p, sizeof *sent), maxsent = 0, *want;
    coll_port port;
    coll_xfer x;
    char b1[32], b2[32], what[200];
    int ok = 1;
    size_t max_arena = 0;
    dist = calloc((size_t)p, sizeof *dist);
    scr = malloc((size_t)p * (scratch ? scratch : 1));
    if (!comm || !args || !mem || !soff || !doff || !sent || !dist || !scr) { fprintf(stderr, "trace: out of memory at p = %d\n", p); exit(2); }
    memset(&port, 0, sizeof port);
    port.send = sim__nop_send; port.recv = sim__nop_recv;
    for (r = 0; r < p; r++) {     /* the arguments every rank passes (buffers only for the run below) */
        size_t n = big_layout(c, cnt, r, &soff[r], &doff[r]);
        if (n > max_arena) max_arena = n;
        memset(&args[r], 0, sizeof args[r]);
        args[r].kind = c->kind; args[r].algo = c->algo; args[r].count = c->n; args[r].dtype = c->dtype;
        args[r].op = c->op; args[r].root = c->root; args[r].group = c->group;
        args[r].counts = sim_is_v(c->kind) || c->kind == COLL_ALLTOALLV ? cnt : 0;
        mem[r] = malloc((n ? n : 1) * 8);
        if (!mem[r]) { fprintf(stderr, "trace: out of memory at p = %d\n", p); exit(2); }
        if (c->kind != COLL_BARRIER) { args[r].src = mem[r] + soff[r] * es; args[r].dst = mem[r] + doff[r] * es; }
        coll_init(&comm[r], r, p, &port, scr + (size_t)r * scratch, scratch);
    }
    want = malloc((max_arena ? max_arena : 1) * sizeof *want);
    if (c->algo == COLL_ALGO_AUTO) {
        c->algo = coll_choose(&comm[0], &args[0]);
        for (r = 0; r < p; r++) args[r].algo = c->algo;
    }
    say("%s, algorithm %s, p = %d, n = %lu, %s, op %s, %s", coll_kind_name(c->kind), coll_algo_name(c->algo), p,
           (unsigned long)c->n, dtype_names[c->dtype], op_names[c->op], c->inplace ? "in place" : "out of place");
    if (c->kind == COLL_REDUCE || c->kind == COLL_BROADCAST || c->kind == COLL_GATHER ||
        c->kind == COLL_SCATTER || c->kind == COLL_GATHERV || c->kind == COLL_SCATTERV) say(", root %d", c->root);
    say("\n%d ranks do not fit a lane each: one line per step from coll_describe on every rank\n"
           "(the step of each rank's schedule; ranks 0, 1 and %d shown)\n", p, p - 1);
    for (st = 0; ; st++) {
        int msgs = 0, red = 0, cp = 0, idle = 0, live = 0, best = 0, d;
        double sb = 0, mb = 0;
        memset(dist, 0, (size_t)p * sizeof *dist);
        for (r = 0; r < p; r++) {
            int d1 = coll_describe(&comm[r], &args[r], st, &x);
            if (d1 < 0) { rc = d1; break; }
            if (d1 == 0) { idle++; continue; }
            live++;
            if (x.send_to >= 0) {
                msgs++; sb += (double)x.send_bytes; sent[r] += (double)x.send_bytes;
                if ((double)x.send_bytes > mb) mb = (double)x.send_bytes;
                dist[((x.send_to - r) % p + p) % p]++;
            }
            if (x.recv_from >= 0) { if (x.reduce) red++; else cp++; }
            if (x.send_to < 0 && x.recv_from < 0) idle++;
        }
        if (rc < 0) {
            say("the library refuses it: %s\n", coll_result_str(rc));
            if (!quiet) list_algos(c->kind);
            snprintf(what, sizeof what, "%s/%s p=%d: the library takes the call (%s)", coll_kind_name(c->kind),
                     coll_algo_name(c->algo), p, coll_result_str(rc));
            check(0, what);
            return;
        }
        if (!live) break;
        steps++;
        bytes += sb;
        for (d = 1; d < p; d++) if (dist[d] > dist[best]) best = d;
        fmt_bytes(b1, sizeof b1, sb); fmt_bytes(b2, sizeof b2, mb);
        say("step %d: %d messages, %s (at most %s from one rank), %d reduce, %d copy, %d idle", st, msgs, b1, b2,
               red, cp, idle);
        if (msgs) say("; most common peer r+%d (%d ranks)", best, dist[best]);
        say("\n");
        {
            int show[3] = { 0, 1, p - 1 }, q;
            for (q = 0; q < 3; q++)
                if (coll_describe(&comm[show[q]], &args[show[q]], st, &x) == 1) print_xfer(show[q], &x);
                else say("      r%d: done\n", show[q]);
        }
    }
    for (r = 0; r < p; r++) if (sent[r] > maxsent) maxsent = sent[r];
    fmt_bytes(b1, sizeof b1, bytes); fmt_bytes(b2, sizeof b2, maxsent);
    say("%d steps, %s sent in all, at most %s by one rank\n", steps, b1, b2);
    if (p > TRACE_RUN_RANKS) {
        say("check: the library's run over the mailbox port is left out above %d ranks (TRACE_RUN_RANKS)\n",
               TRACE_RUN_RANKS);
        return;
    }
    {   /* the library over the mailbox port, checked against the plain loop */
        static coll_mailbox box;
        coll_request *req = malloc((size_t)p * sizeof *req);
        int pending = p, *done = calloc((size_t)p, sizeof *done);
        long turns = 0;
        if (!req || !done) { fprintf(stderr, "trace: out of memory at p = %d\n", p); exit(2); }
        coll_mailbox_init(&box, p);
        for (r = 0; r < p && rc == COLL_OK; r++) {
            size_t in_n, out_n, mine, so, dd, n = big_layout(c, cnt, r, &so, &dd);
            coll_port mp = coll_mailbox_port(&box, r);
            big_sizes(c, cnt, r, &in_n, &out_n, &mine);
            memset(mem[r], 0x5a, (n ? n : 1) * 8);
            if (c->kind == COLL_BROADCAST) { if (r == c->root) for (i = 0; i < out_n; i++) put(mem[r] + i * es, c->dtype, sim_value(c, r, i)); }
            else if (c->kind != COLL_BARRIER) for (i = 0; i < in_n; i++) put(mem[r] + (so + i) * es, c->dtype, sim_value(c, r, i));
            coll_init(&comm[r], r, p, &mp, scr + (size_t)r * scratch, scratch);
            rc = coll_start(&req[r], &comm[r], &args[r]);
        }
        while (rc == COLL_OK && pending > 0 && turns++ < 100000000L)
            for (r = 0; r < p && rc == COLL_OK; r++) {
                int x2;
                if (done[r]) continue;
                x2 = coll_progress(&req[r]);
                if (x2 == COLL_AGAIN) continue;
                if (x2 != COLL_OK) { rc = x2; break; }
                done[r] = 1; pending--;
            }
        if (rc == COLL_OK && pending) rc = COLL_ERR_TIMEOUT;
        snprintf(what, sizeof what, "%s/%s p=%d: the library runs it (%s)", coll_kind_name(c->kind),
                 coll_algo_name(c->algo), p, coll_result_str(rc));
        check(rc == COLL_OK, what);
        if (rc == COLL_OK && break_it && c->kind != COLL_BARRIER) {   /* the check's own check */
            int rr = c->kind == COLL_REDUCE || c->kind == COLL_GATHER || c->kind == COLL_GATHERV ? c->root : p - 1;
            put(mem[rr] + doff[rr] * es, c->dtype, get(mem[rr] + doff[rr] * es, c->dtype) + 1);
        }
        for (r = 0; rc == COLL_OK && r < p; r++) {
            size_t len = big_expected(c, cnt, r, want);
            if (len == (size_t)-1) continue;
            for (j = 0; j < len; j++) {
                double got = get(mem[r] + (doff[r] + j) * es, c->dtype);
                if (!same(c->dtype, got, want[j])) {
                    if (ok) say("  library: rank %d element %lu is %g, the plain loop says %g\n", r, (unsigned long)j, got, want[j]);
                    ok = 0;
                    break;
                }
            }
        }
        snprintf(what, sizeof what, "%s/%s p=%d: library equals the plain loop on every rank", coll_kind_name(c->kind),
                 coll_algo_name(c->algo), p);
        if (break_it) {
            snprintf(what, sizeof what, "%s/%s p=%d: a corrupted result is caught", coll_kind_name(c->kind),
                     coll_algo_name(c->algo), p);
            check(rc == COLL_OK && !ok, what);
        } else if (rc == COLL_OK) check(ok, what);
        say("check: library (mailbox port, %d ranks) %s the plain loop on every rank\n", p,
               rc != COLL_OK ? coll_result_str(rc) : ok ? "equals" : "DIFFERS FROM");
    }
}

#undef say

int main(int argc, char **argv)
{
    static size_t big_counts[TRACE_RUN_RANKS * TRACE_RUN_RANKS];
    sim_cfg c;
    int i, all = 0, break_it = 0, bad = 0, p_given = 0, kind_given = COLL_ALLREDUCE;   /* the default */
    memset(&c, 0, sizeof c);
    c.kind = COLL_ALLREDUCE; c.algo = COLL_ALGO_RING; c.p = 4; c.n = 8;
    c.dtype = COLL_INT32; c.op = COLL_SUM; c.group = 2; c.scratch = 4096;
    for (i = 1; i < argc; i++) {     /* coll= first: algo= lists what it registers */
        const char *v = strchr(argv[i], '=');
        if (strncmp(argv[i], "coll=", 5) == 0 && v[1]) kind_given = find_kind(v + 1);
    }
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = strchr(a, '=');
        if (strcmp(a, "--all") == 0) { all = 1; continue; }
        if (strcmp(a, "--break") == 0) { break_it = 1; continue; }
        if (!v || !v[1]) {
            if (v) continue;                                       /* key= : the default */
            fprintf(stderr, "trace: cannot read %s\n", a);
            bad = 1; break;
        }
        v++;
        if (strncmp(a, "coll=", 5) == 0) {
            int k = find_kind(v);
            if (k < 0) { fprintf(stderr, "trace: cannot read %s\n", a); list_kinds(); bad = 1; break; }
            c.kind = (coll_kind)k;
        } else if (strncmp(a, "algo=", 5) == 0) {
            int k = find_algo(v);
            if (k < 0) { fprintf(stderr, "trace: cannot read %s\n", a); list_algos(kind_given); bad = 1; break; }
            c.algo = (coll_algo)k;
        }
        else if (strncmp(a, "p=", 2) == 0) { c.p = atoi(v); p_given = 1; }
        else if (strncmp(a, "n=", 2) == 0) c.n = (size_t)atol(v);
        else if (strncmp(a, "root=", 5) == 0) c.root = atoi(v);
        else if (strncmp(a, "group=", 6) == 0) c.group = atoi(v);
        else if (strncmp(a, "inplace=", 8) == 0) c.inplace = atoi(v);
        else if (strncmp(a, "scratch=", 8) == 0) c.scratch = (size_t)atol(v);
        else if (strncmp(a, "dtype=", 6) == 0) {
            int k = find_name(v, dtype_names, 10);
            if (k < 0) { fprintf(stderr, "trace: cannot read %s\n  dtypes: int32 uint32 int64 uint64 float32 float64\n", a); bad = 1; break; }
            c.dtype = (coll_dtype)k;
        } else if (strncmp(a, "op=", 3) == 0) {
            int k = find_name(v, op_names, 8);
            if (k < 0) { fprintf(stderr, "trace: cannot read %s\n", a); list_names("ops", op_names, 8, 0); bad = 1; break; }
            c.op = (coll_op)k;
        } else {
            fprintf(stderr, "trace: cannot read %s\n  keys: coll algo p n root dtype op inplace group scratch\n", a);
            bad = 1; break;
        }
    }
    if (!bad && (c.dtype == COLL_INT8 || c.dtype == COLL_UINT8 || c.dtype == COLL_FLOAT16 ||
                 c.dtype == COLL_BFLOAT16)) {
        fprintf(stderr, "trace: dtype %s is not shown (int32 int64 uint32 uint64 float32 float64 are)\n",
                dtype_names[c.dtype]);
        bad = 1;
    }
    if (!bad && (c.p < 1 || c.p > 0xffff || c.scratch > SIM_MAX_SCRATCH ||
                 (c.kind == COLL_ALLTOALLV && c.p > TRACE_RUN_RANKS) || (all && c.p > SIM_MAX_RANKS))) {
        fprintf(stderr, "trace: p must be 1..65535 (alltoallv: 1..%d; --all: 1..%d) and scratch at most %d\n",
                TRACE_RUN_RANKS, SIM_MAX_RANKS, SIM_MAX_SCRATCH);
        bad = 1;
    }
    if (bad) {
        fprintf(stderr, "usage: trace [coll=allreduce] [algo=ring] [p=4] [n=8] [root=0] [dtype=int32]\n"
                        "             [op=sum] [inplace=0] [group=2] [scratch=4096] | --all [p=5]\n");
        return 2;
    }
    if (all) {
        quiet = 1;
        trace_all(p_given ? c.p : 5, 0);
        if (break_it) trace_all(p_given ? c.p : 5, 1);
        if (!p_given) {                 /* and above the lanes' limit */
            trace_all_big(37, 0);
            if (break_it) trace_all_big(37, 1);
        }
        printf("trace: %d passed, %d failed\n", passed, failed);
        return failed != 0;
    }
    if (c.root < 0 || c.root >= c.p) c.root = 0;
    if (c.p > SIM_MAX_RANKS) {
        size_t *cnt = c.kind == COLL_ALLTOALLV ? big_counts : big_counts;
        if (c.kind == COLL_ALLTOALLV)
            for (i = 0; i < c.p * c.p; i++) cnt[i] = (c.n + (size_t)(i / c.p + i % c.p)) / (size_t)c.p;
        else {
            size_t *v = malloc((size_t)c.p * sizeof *v);
            if (!v) return 2;
            for (i = 0; i < c.p; i++) v[i] = (c.n + (size_t)i) / (size_t)c.p;
            cnt = v;
        }
        trace_big(&c, cnt, break_it);
        if (failed) printf("trace: %d passed, %d failed\n", passed, failed);
        return failed != 0;
    }
    for (i = 0; i < c.p; i++) c.counts[i] = (c.n + (size_t)i) / (size_t)c.p;
    if (c.kind == COLL_ALLTOALLV)        /* row i: rank i sends n+i+j over p (about n/p each) */
        for (i = 0; i < c.p * c.p; i++) c.counts[i] = (c.n + (size_t)(i / c.p + i % c.p)) / (size_t)c.p;
    trace_one(&c, break_it);
    if (failed) printf("trace: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
