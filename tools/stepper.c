/* stepper.c - one HTML page to step through any schedule, rank by rank.

       make stepper                  -> build/stepper/index.html
       build/teach/stepper coll.h tools/stepper.html OUT.html

   For every registered (collective, algorithm) at p = 2, 3, 4, 5, 8 and 16
   and two counts, the schedule is played on every rank (tools/sched_sim.h:
   the library's own schedule functions, checked against coll_describe) and
   written as JSON into the page: every rank's buffers at the start, then
   per step the messages (sender's and receiver's cells, copy or reduce) and
   the cells that changed, then the local moves at the end. The page only
   replays what it is given; it computes no schedule of its own.

   At p = 64 and 256, where a lane per rank would not fit, each (collective,
   algorithm) is written as a per-step summary taken from coll_describe on
   every rank: messages, bytes, the most bytes one rank sends, how many
   receives reduce or copy, idle ranks and the most common peer distance.

   Beside each case: bytes sent (all ranks), the most one rank sends,
   rounds, the α-β-γ model's time from the library's own cost function of
   that row (at this count and at 1 MiB), and what AUTO (coll_choose) picks.

   Where each step comes from: the registry rows (COLL__ROWS_<list> in
   coll.h, "R(K, ALGO, schedule function, ...)") name each row's schedule
   function; this program reads coll.h, finds each row's function name in
   its list (the collectives that share a list through COLL__REGISTRY's
   X(KIND, LIST) share the function) and the line of "static int <name>("
   that defines it, and the page shows "coll.h:<line> <name>". */
#define COLL_IMPLEMENTATION
#include "coll.h"
#include "tools/sched_sim.h"

#include <ctype.h>
#include <stdlib.h>

static FILE *out;
static int ncases, nfail;

/* ---- the schedule functions' lines, read from coll.h ----------------------- */
typedef struct src_row { char list[40], algo[40], fn[80]; int line; } src_row;
static src_row rows[128];
static int nrows;
static struct { char kind[40], list[40]; } lists[32];
static int nlists;

static void upper(char *d, const char *s, size_t n)
{
    size_t i;
    for (i = 0; s[i] && i + 1 < n; i++) d[i] = (char)toupper((unsigned char)s[i]);
    d[i] = 0;
}

/* Reads the COLL__ROWS_<list> macros, COLL__REGISTRY's X(KIND, LIST) pairs
   and the line of each schedule function's definition. */
static void read_sources(const char *path)
{
    char line[1024], cur[40] = "";
    FILE *f = fopen(path, "r");
    int ln = 0, in_reg = 0, i;
    if (!f) { fprintf(stderr, "stepper: cannot read %s (the source lines are left out)\n", path); return; }
    while (fgets(line, sizeof line, f)) {
        char *p;
        ln++;
        if (sscanf(line, "#define COLL__ROWS_%39[A-Z_](R, S, K)", cur) == 1) continue;
        if (strncmp(line, "#define COLL__REGISTRY(X)", 25) == 0) { in_reg = 1; continue; }
        if (in_reg) {
            for (p = line; (p = strstr(p, "X(")) != 0 && nlists < 32; p += 2)
                if (sscanf(p, "X(%39[A-Z_], %39[A-Z_])", lists[nlists].kind, lists[nlists].list) == 2) nlists++;
            if (!strchr(line, '\\')) in_reg = 0;
            continue;
        }
        if (*cur && (p = strstr(line, "R(K,")) != 0 && nrows < 128) {
            src_row *r = &rows[nrows];
            if (sscanf(p, "R(K, %39[A-Z_], %79[a-z0-9_]", r->algo, r->fn) == 2) { strcpy(r->list, cur); nrows++; }
        }
        if (strstr(line, "#define COLL__ROOM_IN(R, K, NEEDS, ...) \\")) strcpy(cur, "ROOM");
        if (*cur && !strchr(line, '\\') && strncmp(line, "#define", 7) != 0) *cur = 0;
        if (strncmp(line, "static int coll__", 17) == 0)
            for (i = 0; i < nrows; i++) {
                size_t l = strlen(rows[i].fn);
                if (!rows[i].line && strncmp(line + 11, rows[i].fn, l) == 0 && line[11 + l] == '(') rows[i].line = ln;
            }
    }
    fclose(f);
    for (i = 0; i < nrows; i++)     /* a function defined before its row is named */
        if (!rows[i].line) {
            f = fopen(path, "r");
            ln = 0;
            while (f && fgets(line, sizeof line, f)) {
                size_t l = strlen(rows[i].fn);
                ln++;
                if (strncmp(line, "static int ", 11) == 0 && strncmp(line + 11, rows[i].fn, l) == 0 && line[11 + l] == '(') {
                    rows[i].line = ln;
                    break;
                }
            }
            if (f) fclose(f);
        }
}

/* The schedule function of (kind, algo) and its line, or 0. */
static const src_row *source_of(coll_kind k, coll_algo a)
{
    char K[40], A[40];
    const char *list = 0;
    int i;
    upper(K, coll_kind_name(k), sizeof K);
    upper(A, coll_algo_name(a), sizeof A);
    for (i = 0; i < nlists; i++)
        if (strcmp(lists[i].kind, K) == 0) list = lists[i].list;
    if (!list) return 0;
    for (i = 0; i < nrows; i++)
        if (strcmp(rows[i].algo, A) == 0 &&
            (strcmp(rows[i].list, list) == 0 || (strcmp(rows[i].list, "ROOM") == 0 && k != COLL_BARRIER)))
            return &rows[i];
    return 0;
}

/* ---- JSON ------------------------------------------------------------------ */
static void jstr(const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', out);
        if (*s == '<') { fputs("\\u003c", out); continue; }     /* never "</script>" */
        fputc(*s, out);
    }
    fputc('"', out);
}
static void jnum(double v)
{
    if (v != v) fputs("null", out);
    else if (v == floor(v) && fabs(v) < 1e15) fprintf(out, "%.0f", v);
    else fprintf(out, "%.6g", v);
}

/* ---- the cost model: the library's own cost function of the row ----------- */
static unsigned char model_scratch[1 << 16];

/* The row's modelled time for `a` on p ranks (the planner's plan, the row's
   cost function; a small call's row costs what its formula says, though
   AUTO takes it for nothing where it rides in the check rounds). Returns a
   negative value if the library refuses the call. */
static double model_time(int p, const coll_args *a0, size_t scratch, coll_algo *auto_pick)
{
    coll_comm comm;
    coll_port port;
    coll_args a = *a0;
    coll__plan pl;
    coll__step st;
    size_t es = 0;
    const char *why;
    memset(&port, 0, sizeof port);
    port.send = sim__nop_send; port.recv = sim__nop_recv;
    if (scratch > sizeof model_scratch) scratch = sizeof model_scratch;
    if (coll_init(&comm, 0, p, &port, model_scratch, scratch) != COLL_OK) return -1;
    if (auto_pick) { coll_args b = a; b.algo = COLL_ALGO_AUTO; *auto_pick = coll_choose(&comm, &b); }
    if (coll__plan_args(&comm, &a, &pl, &es, &why) != COLL_OK) return -1;
    if (coll__pick(&comm, 0, &a, &pl, es, &st, &why) != COLL_OK) return -1;
    if (!pl.row || !pl.row->cost) return -1;
    return (double)pl.row->cost(&pl, (coll__real)coll__total_bytes(&pl, es), &comm.tune);
}

/* The same call scaled to about `bytes` in all, on addresses the planner
   only looks at (src and dst laid out as the simulation lays them). */
static double model_scaled(const sim *s, double bytes, coll_algo *auto_pick)
{
    static size_t counts[SIM_MAX_RANKS * SIM_MAX_RANKS];
    coll_args a = s->args[0];
    size_t F, tot = 0, es = s->es, i, P = (size_t)s->cfg.p;
    uintptr_t base = (uintptr_t)1 << 28;
    if (s->cfg.kind == COLL_BARRIER) return model_time(s->cfg.p, &a, 65536, auto_pick);
    tot = s->rk[0].src_n > s->rk[0].dst_n ? s->rk[0].src_n : s->rk[0].dst_n;
    if (tot == 0) tot = 1;
    F = (size_t)(bytes / (double)(tot * es));
    if (F < 1) F = 1;
    a.count = s->cfg.n * F;
    if (a.counts) {
        for (i = 0; i < P * P; i++) counts[i] = s->cfg.counts[i] * F;
        a.counts = counts;
    }
    a.src = (void *)(base + s->rk[0].src_off0 * es * F);
    a.dst = (void *)(base + s->rk[0].dst_off * es * F);
    return model_time(s->cfg.p, &a, 65536, auto_pick);
}

/* ---- one case, every rank's cells ------------------------------------------ */
static void cfg_for(sim_cfg *c, coll_kind k, coll_algo a, int p, int big)
{
    int i, b = big ? 3 : 1;
    memset(c, 0, sizeof *c);
    c->kind = k; c->algo = a; c->p = p; c->group = 2; c->scratch = 4096;
    c->dtype = COLL_INT32; c->op = COLL_SUM;
    c->n = k == COLL_ALLREDUCE || k == COLL_REDUCE || k == COLL_BROADCAST || k == COLL_SCAN ||
           k == COLL_EXSCAN ? (size_t)(b * p) : (size_t)b;
    if (sim_is_v(k)) for (i = 0; i < p; i++) c->counts[i] = (size_t)b + (size_t)(i % 2);
    if (k == COLL_ALLTOALLV) for (i = 0; i < p * p; i++) c->counts[i] = (size_t)b + (size_t)((i / p + i % p) % 2);
    if (a == COLL_ALGO_PIPELINED_TREE || a == COLL_ALGO_PIPELINED_CHAIN || a == COLL_ALGO_DOUBLE_TREE) {
        c->scratch = 128;                              /* 16 int32 a chunk: several chunks */
        if (c->n < 24) c->n = big ? 48 : 24;
    }
    if (a == COLL_ALGO_RECURSIVE_HALVING || (k == COLL_REDUCE_SCATTERV && a == COLL_ALGO_RING)) c->inplace = 1;
    if (coll__entry_of(k, a) && (coll__entry_of(k, a)->needs & COLL__IN_PLACE)) c->inplace = 1;
}

/* The cells a (possibly strided) span covers, as [start, length] runs of
   the arena. */
static void runs(const sim_rank *k, int buf, size_t off, size_t len, size_t run, size_t stride)
{
    size_t i = 0, first = 1;
    fputc('[', out);
    while (i < len) {
        size_t a = sim__at(k, buf, off, run, stride, i), l = 1;
        while (i + l < len && sim__at(k, buf, off, run, stride, i + l) == a + l) l++;
        fprintf(out, "%s%lu,%lu", first ? "" : ",", (unsigned long)a, (unsigned long)l);
        first = 0;
        i += l;
    }
    fputc(']', out);
}

/* The cells that changed since `before`, and those a message wrote (1 copy,
   2 reduce; 3 a local move): [rank, cell, value, how]. */
static void deltas(const sim *s, double before[][SIM_MAX_ELEMS], const sim_msg *ev, int nev)
{
    static unsigned char how[SIM_MAX_RANKS][SIM_MAX_ELEMS];
    int r, i, first = 1;
    size_t j;
    memset(how, 0, sizeof how);
    for (i = 0; i < nev && s->cfg.kind != COLL_BARRIER; i++) {
        const sim_msg *m = &ev[i];
        for (j = 0; j < m->rlen; j++) {
            size_t at = sim__at(&s->rk[m->to], m->rbuf, m->roff, m->rrun, m->rstride, j);
            if (at < SIM_MAX_ELEMS) how[m->to][at] = m->reduce ? 2 : 1;
        }
    }
    fputs("\"d\":[", out);
    for (r = 0; r < s->cfg.p; r++)
        for (j = 0; j < s->rk[r].arena_n + (size_t)s->cfg.p * s->rk[r].room_b; j++) {
            double a = before[r][j], b = s->rk[r].arena[j];
            int changed = !((a != a && b != b) || a == b);
            if (!changed && !how[r][j]) continue;
            fprintf(out, "%s[%d,%lu,", first ? "" : ",", r, (unsigned long)j);
            jnum(b);
            fprintf(out, ",%d]", how[r][j] ? how[r][j] : 3);
            first = 0;
        }
    fputc(']', out);
    for (r = 0; r < s->cfg.p; r++)
        memcpy(before[r], s->rk[r].arena, sizeof before[r]);
}

static void segments(const sim *s, int r)
{
    const sim_rank *k = &s->rk[r];
    size_t data_n = k->room_b ? k->room_off : k->arena_n;
    fputc('[', out);
    if (s->cfg.kind == COLL_BARRIER) { fputs("]", out); return; }
    if (k->src_off0 == k->dst_off || s->cfg.inplace || s->cfg.kind == COLL_BROADCAST)
        fprintf(out, "[\"buf\",0,%lu]", (unsigned long)data_n);
    else
        fprintf(out, "[\"src\",%lu,%lu],[\"dst\",%lu,%lu]", (unsigned long)k->src_off0, (unsigned long)k->src_n,
                (unsigned long)k->dst_off, (unsigned long)k->dst_n);
    if (k->room_b)
        fprintf(out, ",[\"room\",%lu,%lu]", (unsigned long)k->room_off, (unsigned long)((size_t)s->cfg.p * k->room_b));
    fputc(']', out);
}

static void case_head(const char *key, coll_kind k, coll_algo a, int p, size_t n, const coll_args *args,
                      int inplace, int root)
{
    const src_row *sr = source_of(k, a);
    fprintf(out, "%s", ncases++ ? ",\n" : "");
    jstr(key);
    fprintf(out, ":{\"k\":\"%s\",\"a\":\"%s\",\"p\":%d,\"n\":%lu,\"inplace\":%d,\"root\":%d",
            coll_kind_name(k), coll_algo_name(a), p, (unsigned long)n, inplace, root);
    if (args->counts && k != COLL_ALLTOALLV) {
        int i;
        fputs(",\"counts\":[", out);
        for (i = 0; i < p; i++) fprintf(out, "%s%lu", i ? "," : "", (unsigned long)args->counts[i]);
        fputc(']', out);
    }
    if (sr) { fputs(",\"fn\":", out); jstr(sr->fn); fprintf(out, ",\"line\":%d", sr->line); }
}

static void model_fields(const sim *s, const coll_args *a, size_t scratch, int p)
{
    coll_algo pick = COLL_ALGO_AUTO, pick1m = COLL_ALGO_AUTO;
    double t = model_time(p, a, scratch, &pick), t1 = model_scaled(s, 1 << 20, &pick1m);
    fputs(",\"t\":", out); jnum(t < 0 ? NAN : t);
    fputs(",\"t1m\":", out); jnum(t1 < 0 ? NAN : t1);
    fprintf(out, ",\"auto\":\"%s\",\"auto1m\":\"%s\"", coll_algo_name(pick), coll_algo_name(pick1m));
}

static void one_case(coll_kind k, coll_algo a, int p, int big)
{
    static sim s;
    static sim_msg ev[SIM_MAX_QUEUED];
    static double before[SIM_MAX_RANKS][SIM_MAX_ELEMS];
    static double want[SIM_MAX_ELEMS];
    sim_cfg c;
    char key[120], lab[48];
    int r, i, nev, rounds = 0, ok = 1, steps = 0;
    double bytes = 0, maxb = 0, sent[SIM_MAX_RANKS] = {0};
    const char *fin;
    cfg_for(&c, k, a, p, big);
    snprintf(key, sizeof key, "%s/%s/%d/%d", coll_kind_name(k), coll_algo_name(a), p, big);
    if (sim_init(&s, &c) != 0) {            /* refused: the menu says why */
        case_head(key, k, a, p, c.n, &s.args[0], c.inplace, c.root);
        fputs(",\"refused\":", out); jstr(s.err); fputc('}', out);
        return;
    }
    case_head(key, k, a, p, c.n, &s.args[0], c.inplace, c.root);
    fputs(",\"seg\":[", out);
    for (r = 0; r < p; r++) { if (r) fputc(',', out); segments(&s, r); }
    fputs("],\"init\":[", out);
    for (r = 0; r < p; r++) {
        size_t j, m = s.rk[r].arena_n + (size_t)p * s.rk[r].room_b;
        fprintf(out, "%s[", r ? "," : "");
        for (j = 0; j < m; j++) { if (j) fputc(',', out); jnum(s.rk[r].arena[j]); }
        fputc(']', out);
        memcpy(before[r], s.rk[r].arena, sizeof before[r]);
    }
    fputs("],\"frames\":[", out);
    sim_start(&s);
    fputs("{\"h\":\"own data into place\",\"m\":[],", out);
    deltas(&s, before, ev, 0);
    fputc('}', out);
    while (sim_round(&s, ev, &nev)) {
        const char *ph = sim_phase(&s, rounds);
        fprintf(out, ",\n{\"h\":");
        jstr(ph);
        fputs(",\"m\":[", out);
        for (i = 0; i < nev; i++) {
            const sim_msg *m = &ev[i];
            if (k == COLL_BARRIER) snprintf(lab, sizeof lab, "signal");
            else sim_label(&s, m, lab, sizeof lab);
            fprintf(out, "%s[%d,%d,%d,%d,", i ? "," : "", m->from, m->to, m->reduce ? 1 : 0, m->sent_step);
            jstr(lab);
            fputc(',', out);
            if (k == COLL_BARRIER) fputs("[],[]", out);
            else {
                runs(&s.rk[m->from], m->sbuf, m->soff, m->slen, m->srun, m->sstride);
                fputc(',', out);
                runs(&s.rk[m->to], m->rbuf, m->roff, m->rlen, m->rrun, m->rstride);
            }
            fprintf(out, ",%lu]", (unsigned long)(m->slen * s.es));
            bytes += (double)(m->slen * s.es);
            sent[m->from] += (double)(m->slen * s.es);
            if (m->sent_step + 1 > steps) steps = m->sent_step + 1;
        }
        fputs("],", out);
        deltas(&s, before, ev, nev);
        fputc('}', out);
        rounds++;
    }
    fin = sim_finish(&s);
    fputs(",\n{\"h\":", out);
    jstr(*fin ? fin : "the end (no local moves)");
    fputs(",\"end\":1,\"m\":[],", out);
    deltas(&s, before, ev, 0);
    fputs("}]", out);
    if (s.deadlock || s.describe_mismatch || s.pair_mismatch) ok = 0;
    fputs(",\"want\":[", out);
    for (r = 0; r < p; r++) {               /* the plain loop's answer, for the reader */
        size_t len, j;
        if (r) fputc(',', out);
        if (!sim_expected(&s, r, want, &len)) { fputs("null", out); continue; }
        fprintf(out, "[%lu,[", (unsigned long)s.rk[r].dst_off);
        for (j = 0; j < len; j++) {
            if (j) fputc(',', out);
            jnum(want[j]);
            if (s.rk[r].arena[s.rk[r].dst_off + j] != want[j]) ok = 0;
        }
        fputs("]]", out);
    }
    fputc(']', out);
    for (r = 0; r < p; r++) if (sent[r] > maxb) maxb = sent[r];
    fprintf(out, ",\"ok\":%d,\"rounds\":%d,\"steps\":%d,\"bytes\":%.0f,\"maxb\":%.0f", ok, rounds, steps, bytes, maxb);
    model_fields(&s, &s.args[0], c.scratch, p);
    fputc('}', out);
    if (!ok) { nfail++; fprintf(stderr, "stepper: %s does not check\n", key); }
}

/* ---- many ranks: a summary per step from coll_describe --------------------- */
#define BIG_P 256
static coll_comm big_comm[BIG_P];
static size_t big_counts[BIG_P * BIG_P];

static void summary_case(coll_kind k, coll_algo a, int p)
{
    static struct { double bytes, maxb; int msgs, red, cp, idle, dist[BIG_P]; } agg[4096];
    static double sent[BIG_P];
    static sim s;     /* only its args layout and model */
    coll_port port;
    coll_args args;
    size_t n = k == COLL_ALLREDUCE || k == COLL_REDUCE || k == COLL_BROADCAST || k == COLL_SCAN ||
               k == COLL_EXSCAN ? (size_t)p : 1, es = 4, i;
    char key[120];
    int r, st, steps = 0, inplace = 0, refused = 0;
    double bytes = 0, maxb = 0;
    const coll__entry *e = coll__entry_of(k, a);
    uintptr_t base = (uintptr_t)1 << 28;
    memset(&port, 0, sizeof port);
    port.send = sim__nop_send; port.recv = sim__nop_recv;
    memset(&args, 0, sizeof args);
    args.kind = k; args.algo = a; args.count = n; args.dtype = COLL_INT32; args.op = COLL_SUM; args.group = 2;
    if (sim_is_v(k)) for (i = 0; i < (size_t)p; i++) big_counts[i] = 1 + i % 2;
    if (k == COLL_ALLTOALLV) for (i = 0; i < (size_t)p * (size_t)p; i++) big_counts[i] = 1 + (i / (size_t)p + i % (size_t)p) % 2;
    if (sim_is_v(k) || k == COLL_ALLTOALLV) args.counts = big_counts;
    if (a == COLL_ALGO_RECURSIVE_HALVING || (k == COLL_REDUCE_SCATTERV && a == COLL_ALGO_RING) ||
        (e && (e->needs & COLL__IN_PLACE))) inplace = 1;
    snprintf(key, sizeof key, "%s/%s/%d/0", coll_kind_name(k), coll_algo_name(a), p);
    memset(agg, 0, sizeof agg);
    memset(sent, 0, sizeof sent);
    for (r = 0; r < p && !refused; r++) {
        coll_xfer x;
        size_t mine = 0, total = 0;
        coll_init(&big_comm[r], r, p, &port, model_scratch, 4096);
        if (args.counts && k != COLL_ALLTOALLV) {
            for (i = 0; i < (size_t)p; i++) { if ((int)i < r) mine += big_counts[i]; total += big_counts[i]; }
        } else { mine = (size_t)r * n; total = n * (size_t)p; }
        if (inplace) {   /* the in-place layouts: dst is src, or its caller's block */
            args.src = args.dst = (void *)base;
            if (k == COLL_REDUCE_SCATTER || k == COLL_REDUCE_SCATTERV) args.dst = (void *)(base + mine * es);
        } else {
            args.src = (void *)base;
            args.dst = (void *)(base + ((size_t)1 << 24));
        }
        for (st = 0; st < 4096; st++) {
            int rc = coll_describe(&big_comm[r], &args, st, &x);
            if (rc < 0) {
                refused = 1;
                case_head(key, k, a, p, n, &args, inplace, 0);
                fputs(",\"refused\":", out); jstr(coll_result_str(rc));
                fputs(",\"why\":", out); jstr(coll_last_error(&big_comm[r]));
                fputc('}', out);
                break;
            }
            if (rc == 0) break;
            if (st + 1 > steps) steps = st + 1;
            if (x.send_to >= 0) {
                agg[st].msgs++;
                agg[st].bytes += (double)x.send_bytes;
                if ((double)x.send_bytes > agg[st].maxb) agg[st].maxb = (double)x.send_bytes;
                agg[st].dist[((x.send_to - r) % p + p) % p]++;
                sent[r] += (double)x.send_bytes;
                bytes += (double)x.send_bytes;
            }
            if (x.recv_from >= 0) { if (x.reduce) agg[st].red++; else agg[st].cp++; }
            if (x.send_to < 0 && x.recv_from < 0) agg[st].idle++;
        }
        for (; st < 4096 && !refused && st < steps; st++) agg[st].idle++;   /* past its last step */
    }
    if (refused) return;
    case_head(key, k, a, p, n, &args, inplace, 0);
    fputs(",\"summary\":1,\"srows\":[", out);
    for (st = 0; st < steps; st++) {
        int d, best = 0;
        for (d = 1; d < p; d++) if (agg[st].dist[d] > agg[st].dist[best]) best = d;
        fprintf(out, "%s[%d,%.0f,%.0f,%d,%d,%d,%d,%d]", st ? "," : "", agg[st].msgs, agg[st].bytes, agg[st].maxb,
                agg[st].red, agg[st].cp, agg[st].idle, agg[st].msgs ? best : 0, agg[st].dist[best]);
    }
    fputc(']', out);
    for (r = 0; r < p; r++) if (sent[r] > maxb) maxb = sent[r];
    fprintf(out, ",\"ok\":1,\"rounds\":%d,\"steps\":%d,\"bytes\":%.0f,\"maxb\":%.0f", steps, steps, bytes, maxb);
    {
        coll_algo pick = COLL_ALGO_AUTO, pick1m = COLL_ALGO_AUTO;
        coll_args b = args;
        double t = model_time(p, &args, 4096, &pick), t1;
        size_t F = ((size_t)1 << 20) / (es * (n * (size_t)p)), j;
        if (F < 1) F = 1;
        b.count = n * F;
        if (b.counts) { for (j = 0; j < (size_t)p * (size_t)p; j++) big_counts[j] *= F; }
        b.src = (void *)base;
        b.dst = inplace ? (void *)base : (void *)(base + ((size_t)1 << 30));
        t1 = model_time(p, &b, 65536, &pick1m);
        if (b.counts) { for (j = 0; j < (size_t)p * (size_t)p; j++) big_counts[j] /= F; }
        fputs(",\"t\":", out); jnum(t < 0 ? NAN : t);
        fputs(",\"t1m\":", out); jnum(t1 < 0 ? NAN : t1);
        fprintf(out, ",\"auto\":\"%s\",\"auto1m\":\"%s\"", coll_algo_name(pick), coll_algo_name(pick1m));
    }
    fputc('}', out);
    (void)s;
}

/* ---- the page -------------------------------------------------------------- */
int main(int argc, char **argv)
{
    static const int ps[] = { 2, 3, 4, 5, 8, 16 }, big_ps[] = { 64, 256 };
    const char *hdr = argc > 1 ? argv[1] : "coll.h", *tpl = argc > 2 ? argv[2] : "tools/stepper.html";
    const char *dst = argc > 3 ? argv[3] : "build/stepper/index.html";
    char line[4096];
    FILE *t;
    size_t e;
    int i, found = 0;
    read_sources(hdr);
    t = fopen(tpl, "r");
    if (!t) { fprintf(stderr, "stepper: cannot read %s\n", tpl); return 1; }
    out = fopen(dst, "w");
    if (!out) { fprintf(stderr, "stepper: cannot write %s\n", dst); return 1; }
    while (fgets(line, sizeof line, t)) {
        if (strstr(line, "@DATA@") == 0) { fputs(line, out); continue; }
        found = 1;
        fputs("{\"cases\":{\n", out);
        for (e = 0; coll__row_at(e); e++) {
            const coll__entry *en = coll__row_at(e);
            if (!en->f) continue;
            for (i = 0; i < (int)(sizeof ps / sizeof ps[0]); i++) {
                one_case((coll_kind)en->kind, (coll_algo)en->algo, ps[i], 0);
                one_case((coll_kind)en->kind, (coll_algo)en->algo, ps[i], 1);
            }
            for (i = 0; i < (int)(sizeof big_ps / sizeof big_ps[0]); i++)
                summary_case((coll_kind)en->kind, (coll_algo)en->algo, big_ps[i]);
        }
        fprintf(out, "\n},\"tuning\":{\"alpha\":");
        {
            coll_comm c;
            coll_port port;
            memset(&port, 0, sizeof port);
            port.send = sim__nop_send; port.recv = sim__nop_recv;
            coll_init(&c, 0, 4, &port, model_scratch, 4096);
            jnum(c.tune.alpha); fputs(",\"beta\":", out); jnum(c.tune.beta);
            fputs(",\"gamma\":", out); jnum(c.tune.gamma);
        }
        fputs("}}\n", out);
    }
    fclose(t);
    fclose(out);
    if (!found) { fprintf(stderr, "stepper: %s has no @DATA@ line\n", tpl); return 1; }
    printf("stepper: %d cases (%d not checking) in %s\n", ncases, nfail, dst);
    return nfail != 0;
}
