/* window_trace.c - watch a collective over windows (coll_window.h) move,
   phase by phase: who reads whom, which bytes, copied or folded.

       make trace-window COLL=allreduce FORM=two P=4 N=10 [ROOT= INPLACE= SCRATCH= INLINE=]
       build/teach/window_trace coll=reduce p=5 n=7 root=3 [inline=1]

   Options (key=value): coll (allreduce reduce_scatter allgather broadcast
   reduce alltoall barrier), form (one|two: the all-reduce's), p (ranks,
   1..8), n (the count the API takes: per rank for the block-wise
   collectives, at most 64), root, inplace (0/1), scratch (bytes of each
   rank's scratch; its half is the segment the in-place folds stage
   through), inline (0/1: the small calls' form, >>win-inline, where every
   rank's input rides in its record: the moves read those copies, and
   one sync is all; inputs of at most COLL_WINDOW_INLINE bytes).

   The moves are coll_window.h's own pure function (coll__win_move): each
   phase prints every rank's moves, the bytes each reads and writes, and
   every rank's dst after it; phases are parted by the syncs. Then the
   checks: the moves played over plain int32 arrays by this tool (a fold
   reads all its terms before it writes, as the staging does) end as a
   plain loop over the inputs says on every rank; inside a phase no rank
   reads or writes bytes another rank writes; and coll_window.h's own
   executor (coll__win_phase, ranks one after the other phase by phase, as
   the syncs allow) over float32 inputs whose sum depends on the order
   ends bitwise equal to the plain loop folding in rank order 0..p-1.

       build/teach/window_trace --all [--break]   every kind and form at
                 p = 1..8, counts 0, 1, 5, 13, 37 (none divisible by every
                 p), in place and out, roots first and last, inline where
                 the inputs fit a record and not, quietly
                 (--break: one move corrupted, which the checks must
                 catch); ends "N passed, N failed"
       build/teach/window_trace --svg DIR [--page FILE]   the diagrams: one
                 SVG per (kind, form, p) for p = 2, 4; --page adds a section
                 showing them to the diagrams page FILE (tools/diagrams.c's)
*/
#define _POSIX_C_SOURCE 200809L
#define COLL_IMPLEMENTATION
#include "coll_window.h"
#define main diagrams_main
#include "tools/diagrams.c"
#undef main

#define MAXP 8
#define MAXN 64
#define MAXE (MAXP * MAXN)
#define UNSET (-1)

typedef struct tcfg { coll_kind kind; int form, p, root, inplace, inl, quiet; size_t n, scratch; } tcfg;
static tcfg C;
static int passed, failed;

/* One check counted; a failure is said at once. */
static void check(int ok, const char *what)
{
    if (ok) passed++;
    else { failed++; printf("FAIL: %s\n", what); }
}

static const coll_kind kinds[] = { COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER, COLL_BROADCAST,
                                   COLL_REDUCE, COLL_ALLTOALL, COLL_BARRIER };
#define NKINDS ((int)(sizeof kinds / sizeof kinds[0]))

static int has_root(coll_kind k) { return k == COLL_BROADCAST || k == COLL_REDUCE; }
static int reduces(coll_kind k) { return k == COLL_ALLREDUCE || k == COLL_REDUCE_SCATTER || k == COLL_REDUCE; }
/* Elements of a rank's src and dst (the API's layout). */
static size_t in_len(coll_kind k)
{
    if (k == COLL_REDUCE_SCATTER || k == COLL_ALLTOALL) return (size_t)C.p * C.n;
    return k == COLL_BARRIER || k == COLL_BROADCAST ? 0 : C.n;
}
static size_t out_len(coll_kind k)
{
    if (k == COLL_ALLGATHER || k == COLL_ALLTOALL) return (size_t)C.p * C.n;
    return k == COLL_BARRIER ? 0 : C.n;
}
static const char *form_name(void)
{
    if (C.inl) return "inline";
    if (C.kind != COLL_ALLREDUCE) return C.kind == COLL_ALLTOALL && C.inplace ? "in-place" : "";
    return C.form == COLL_WINDOW_ONE_SHOT ? "one-shot" : "two-shot";
}

/* ---- the buffers: every rank's src and dst in one pool, in place as the API lays it out */
static int32_t pool[MAXP][2][MAXE];       /* [rank][0: src, 1: dst]      */
static int32_t *srcp[MAXP], *dstp[MAXP];

/* Where rank r's src and dst are, in place or not. */
static void lay_out(void)
{
    int r;
    for (r = 0; r < C.p; r++) {
        int ip = C.inplace && (C.kind != COLL_REDUCE || r == C.root) && C.kind != COLL_BROADCAST;
        dstp[r] = pool[r][1];
        srcp[r] = pool[r][0];
        if (!ip) continue;
        if (C.kind == COLL_REDUCE_SCATTER) dstp[r] = srcp[r] + (size_t)r * C.n;
        else if (C.kind == COLL_ALLGATHER) srcp[r] = dstp[r] + (size_t)r * C.n;
        else srcp[r] = dstp[r];
    }
    if (C.kind == COLL_BROADCAST) for (r = 0; r < C.p; r++) srcp[r] = dstp[r];
}

/* Rank r's input element i (the root's buffer for broadcast): its rank in
   the hundreds for the copying kinds, small for the folds. */
static int32_t input(int r, size_t i) { return reduces(C.kind) ? (int32_t)(10 * r + (int)i + 1) : (int32_t)(100 * r + (int)i); }

/* The inputs written, every dst element not an input unset. */
static void fill(void)
{
    int r;
    size_t i;
    for (r = 0; r < C.p; r++) for (i = 0; i < MAXE; i++) pool[r][0][i] = pool[r][1][i] = UNSET;
    for (r = 0; r < C.p; r++) {
        if (C.kind == COLL_BROADCAST) { if (r == C.root) for (i = 0; i < C.n; i++) dstp[r][i] = input(r, i); continue; }
        for (i = 0; i < in_len(C.kind); i++) srcp[r][i] = input(r, i);
    }
}

/* Inline: each rank's input as its record carries it, copied at the post
   (before any move). The moves then read these, never a buffer. */
static int32_t copies[MAXP][MAXE];
/* Elements of rank r's input: its src, the root's buffer for broadcast. */
static size_t input_len(int r)
{
    return C.kind == COLL_BROADCAST ? (r == C.root ? C.n : 0) : in_len(C.kind);
}
static void take_copies(void)
{
    int r;
    for (r = 0; r < C.p; r++)
        memcpy(copies[r], C.kind == COLL_BROADCAST ? dstp[r] : srcp[r], input_len(r) * sizeof(int32_t));
}
/* Do the inputs fit a record (the root's, the largest, in bytes)? */
static int fits_inline(void)
{
    return input_len(C.root) * 4 <= COLL_WINDOW_INLINE;
}

/* The plain loop: rank r's dst element i; 0 where nothing is promised. */
static int expect(int r, size_t i, int32_t *v)
{
    size_t n = C.n;
    int s;
    *v = 0;
    if (C.kind == COLL_BARRIER || (C.kind == COLL_REDUCE && r != C.root)) return 0;
    switch (C.kind) {
    case COLL_ALLREDUCE: case COLL_REDUCE: for (s = 0; s < C.p; s++) *v += input(s, i); break;
    case COLL_REDUCE_SCATTER: for (s = 0; s < C.p; s++) *v += input(s, (size_t)r * n + i); break;
    case COLL_ALLGATHER: *v = input((int)(i / n), i % n); break;
    case COLL_BROADCAST: *v = input(C.root, i); break;
    default: *v = input((int)(i / n), (size_t)r * n + i % n); break;
    }
    return 1;
}

/* The shape coll_window.h's moves take, as rank r sees it. */
static void shape(int r, coll__win_shape *s)
{
    s->kind = C.kind; s->form = C.form; s->p = C.p; s->root = C.root; s->count = C.n; s->es = 4;
    s->inplace = C.inplace && C.kind != COLL_BROADCAST && (C.kind != COLL_REDUCE || r == C.root);
    s->inl = C.inl;
}

/* Move i of rank r in phase k, corrupted where (r, k, i) is the victim. */
static int victim_r = -1, victim_k, victim_i;
static int move_of(int r, int k, int i, coll__win_mv *m)
{
    coll__win_shape s;
    shape(r, &s);
    if (!coll__win_move(&s, r, k, i, m)) return 0;
    if (r == victim_r && k == victim_k && i == victim_i) m->from = (m->from + 1) % C.p;   /* reads the wrong rank */
    return 1;
}

/* The element where a move reads, or lands. */
static int32_t *src_el(const coll__win_mv *m)
{
    if (C.inl) return copies[m->from] + m->off / 4;
    return (m->from_dst ? dstp[m->from] : srcp[m->from]) + m->off / 4;
}
static int32_t *dst_el(const coll__win_mv *m) { return dstp[m->to] + m->at / 4; }

/* ---- playing the moves over the plain arrays -------------------------------- */
static unsigned char wr[MAXP][2][MAXE], rd[MAXP][2][MAXE];   /* writer + 1; readers' bits */
static int races;

/* One element read (w = 0) or written (w = 1) by rank r this phase. */
static void touch(const int32_t *e, int r, int w)
{
    size_t at;
    if (e < &pool[0][0][0] || e >= &pool[0][0][0] + sizeof pool / sizeof pool[0][0][0]) return;   /* a record's copy */
    at = (size_t)(e - &pool[0][0][0]);
    int q = (int)(at / (2 * MAXE)), b = (int)(at / MAXE % 2);
    size_t j = at % MAXE;
    if (w) { if (wr[q][b][j] && wr[q][b][j] != r + 1) races++; wr[q][b][j] = (unsigned char)(r + 1); }
    else rd[q][b][j] |= (unsigned char)(1u << r);
}

/* Phase k of every rank, in rank order; a fold reads all its terms before
   it writes (as its staging does). The touches are counted for the race
   check: bytes written by one rank are touched by no other. */
static void play_phase(int k, long *rb, long *wb)
{
    coll__win_mv m;
    static int32_t acc[MAXE];
    int r, i, t;
    size_t e, n;
    memset(wr, 0, sizeof wr); memset(rd, 0, sizeof rd);
    for (r = 0; r < C.p; r++)
        for (i = 0; move_of(r, k, i, &m); i++) {
            n = m.len / 4;
            rb[r] += (long)m.len * (m.how == COLL__WIN_SWAP ? 2 : 1);
            wb[r] += (long)m.len * (m.how == COLL__WIN_SWAP ? 2 : 1);
            if (m.how == COLL__WIN_FOLD) {
                coll__win_mv x = m;
                for (e = 0; e < n; e++) acc[e] = 0;
                for (t = 0; t < m.terms && (t == 0 || move_of(r, k, i + t, &x)); t++) {
                    if (t) rb[r] += (long)x.len;
                    for (e = 0; e < n; e++) { acc[e] += src_el(&x)[e]; touch(src_el(&x) + e, r, 0); }
                }
                for (e = 0; e < n; e++) { dst_el(&m)[e] = acc[e]; touch(dst_el(&m) + e, r, 1); }
                i += m.terms - 1;
            } else if (m.how == COLL__WIN_COPY) {
                for (e = 0; e < n; e++) { touch(src_el(&m) + e, r, 0); touch(dst_el(&m) + e, r, 1); }
                memmove(dst_el(&m), src_el(&m), m.len);
            } else {
                for (e = 0; e < n; e++) {
                    int32_t v = src_el(&m)[e];
                    touch(src_el(&m) + e, r, 1); touch(dst_el(&m) + e, r, 1);
                    src_el(&m)[e] = dst_el(&m)[e]; dst_el(&m)[e] = v;
                }
            }
        }
    for (r = 0; r < C.p; r++) for (i = 0; i < 2; i++) for (e = 0; e < MAXE; e++)
        if (wr[r][i][e] && (rd[r][i][e] & ~(1u << (wr[r][i][e] - 1)))) races++;
}

/* Elements of rank r's dst that differ from the plain loop. */
static int wrong_on(int r)
{
    size_t i;
    int bad = 0;
    int32_t v;
    for (i = 0; i < out_len(C.kind); i++) if (expect(r, i, &v) && dstp[r][i] != v) bad++;
    return bad;
}

/* ---- coll_window.h's own executor over float32 arrays ----------------------- */
static float fpool[MAXP][2][MAXE];
static unsigned long long scr[MAXP][64];
static int no_send(void *ctx, int peer, const void *b, size_t n) { (void)ctx; (void)peer; (void)b; (void)n; return COLL_ERR_IO; }
static int no_recv(void *ctx, int peer, void *b, size_t n) { (void)ctx; (void)peer; (void)b; (void)n; return COLL_ERR_IO; }

/* Rank r's float input element i: the sum in another order rounds apart. */
static float finput(int r, size_t i) { return (r % 3 == 1 ? 3.0e7f : 1.0f) * (float)((int)((r * 7 + i * 3) % 11) - 5) + 0.37f * (float)r; }

/* Elements whose bits differ from the plain loop; -1 where the executor fails. */
static int run_executor(void)
{
    static coll_comm comm[MAXP];
    static coll__win w[MAXP];
    static coll_window_rec rec[MAXP];
    coll__win_shape s[MAXP];
    coll_port port;
    float *fs[MAXP], *fd[MAXP];
    int r, k, q, bad = 0;
    size_t i;
    memset(&port, 0, sizeof port);
    port.send = no_send; port.recv = no_recv;
    for (r = 0; r < C.p; r++) {                     /* the same layout as the int32 pool */
        fs[r] = &fpool[0][0][0] + (srcp[r] - &pool[0][0][0]);
        fd[r] = &fpool[0][0][0] + (dstp[r] - &pool[0][0][0]);
    }
    for (r = 0; r < C.p; r++) for (i = 0; i < 2 * MAXE; i++) (&fpool[r][0][0])[i] = -7.0f;
    for (r = 0; r < C.p; r++) {
        if (C.kind == COLL_BROADCAST) { if (r == C.root) for (i = 0; i < C.n; i++) fd[r][i] = finput(r, i); }
        else for (i = 0; i < in_len(C.kind); i++) fs[r][i] = finput(r, i);
    }
    for (q = 0; q < C.p && C.inl; q++) {                /* the records carry the inputs */
        rec[q].inl_bytes = input_len(q) * 4;
        memcpy(rec[q].inl, C.kind == COLL_BROADCAST ? fd[q] : fs[q], rec[q].inl_bytes);
    }
    for (r = 0; r < C.p; r++) {
        memset(&w[r], 0, sizeof w[r]);
        if (coll_init(&comm[r], r, C.p, &port, scr[r], C.scratch) != COLL_OK) return -1;
        w[r].c = &comm[r];
        w[r].a.kind = C.kind; w[r].a.src = fs[r]; w[r].a.dst = fd[r]; w[r].a.count = C.n;
        w[r].a.dtype = COLL_FLOAT32; w[r].a.op = COLL_SUM; w[r].a.root = C.root;
        if (C.kind == COLL_BARRIER) w[r].a.src = w[r].a.dst = 0;
        if (coll__win_plan(&w[r]) != COLL_OK) return -1;
        w[r].algo = C.kind == COLL_ALLREDUCE ? C.form : 0;
        w[r].inl = C.inl;
        for (q = 0; q < C.p; q++) { rec[q].src = fs[q]; rec[q].dst = fd[q]; w[r].r[q] = &rec[q]; }
        coll__win_shape_of(&w[r], &s[r]);
    }
    for (k = 0; k < coll__win_phases(&s[0]); k++)
        for (r = 0; r < C.p; r++) if (coll__win_phase(&w[r], &s[r], k) != COLL_OK) return -1;
    for (r = 0; r < C.p; r++)
        for (i = 0; i < out_len(C.kind); i++) {
            volatile float v = 0;
            size_t n = C.n;
            if (C.kind == COLL_REDUCE && r != C.root) break;
            switch (C.kind) {
            case COLL_ALLREDUCE: case COLL_REDUCE: v = finput(0, i); for (q = 1; q < C.p; q++) v = v + finput(q, i); break;
            case COLL_REDUCE_SCATTER: v = finput(0, r * n + i); for (q = 1; q < C.p; q++) v = v + finput(q, r * n + i); break;
            case COLL_ALLGATHER: v = finput((int)(i / n), i % n); break;
            case COLL_BROADCAST: v = finput(C.root, i); break;
            default: v = finput((int)(i / n), (size_t)r * n + i % n); break;
            }
            { float want = v; if (memcmp(&want, &fd[r][i], sizeof want) != 0) bad++; }
        }
    return bad;
}

/* ---- printing ------------------------------------------------------------------ */
static void print_vals(const int32_t *v, size_t n)
{
    size_t i;
    printf("[");
    for (i = 0; i < n; i++) {
        if (v[i] == UNSET) printf("%s%4s", i ? " " : "", ".");
        else printf("%s%4d", i ? " " : "", (int)v[i]);
    }
    printf("]");
}

/* One move, in words: who reads whom, which bytes, where they land. */
static void print_move(int r, const coll__win_mv *m)
{
    static const char *const how[] = { "copies", "folds", "swaps" };
    printf("    r%d %-6s r%d.%s [%zu:%zu)", r, how[m->how], m->from, C.inl ? "record" : m->from_dst ? "dst" : "src", m->off,
           m->off + m->len);
    printf(" %s r%d.dst [%zu:%zu)  (%zu el", m->how == COLL__WIN_SWAP ? "<->" : "->", m->to, m->at, m->at + m->len, m->len / 4);
    if (m->how == COLL__WIN_FOLD) printf(", term %d of %d in rank order", m->term, m->terms);
    printf(")\n");
}

static void print_head(void)
{
    int r;
    printf("window %s%s%s: p = %d", coll_kind_name(C.kind), *form_name() ? " " : "", form_name(), C.p);
    if (C.kind != COLL_BARRIER) printf(", n = %zu int32 sum, bytes [a:b) of each buffer", C.n);
    if (has_root(C.kind)) printf(", root %d", C.root);
    if (C.inplace) printf(", in place");
    if (C.inl) printf(", inline (each input rides in its rank's record: the moves read the copies)");
    printf("\n");
    if (C.kind == COLL_BARRIER) return;
    printf("start (%s):\n", C.kind == COLL_BROADCAST ? "buf" : "src");
    for (r = 0; r < C.p; r++) {
        printf("  r%-2d ", r);
        if (C.kind == COLL_BROADCAST) print_vals(dstp[r], C.n);
        else print_vals(srcp[r], in_len(C.kind));
        printf("\n");
    }
}

/* One call: printed phase by phase (or, quiet, only played), then checked. */
static void trace_one(int break_it)
{
    coll__win_shape s;
    long rb[MAXP] = { 0 }, wbytes[MAXP] = { 0 };
    char what[200];
    int k, r, i, nph, bad = 0;
    coll__win_mv m;
    shape(0, &s);
    nph = coll__win_phases(&s);
    snprintf(what, sizeof what, "window %s %s p=%d n=%zu root=%d inplace=%d inline=%d", coll_kind_name(C.kind), form_name(),
             C.p, C.n, C.root, C.inplace, C.inl);
    lay_out();
    fill();
    if (C.inl) take_copies();
    victim_r = -1;
    if (break_it) {                                  /* the last rank's first move with bytes */
        for (r = C.p - 1; r >= 0 && victim_r < 0; r--)
            for (k = 0; k < nph && victim_r < 0; k++)
                for (i = 0; move_of(r, k, i, &m) && victim_r < 0; i++)
                    if (m.len) { victim_r = r; victim_k = k; victim_i = i; }
        if (victim_r < 0 || C.p == 1) return;
    }
    if (!C.quiet) print_head();
    races = 0;
    for (k = 0; k < nph; k++) {
        if (!C.quiet) {
            printf("phase %d%s:\n", k, k ? " (after a sync: it reads what phase 0 wrote)" : " (after the post's sync)");
            for (r = 0; r < C.p; r++) {
                int any = 0;
                for (i = 0; move_of(r, k, i, &m); i++) if (m.len) { print_move(r, &m); any = 1; }
                if (!any) printf("    r%d nothing\n", r);
            }
        }
        play_phase(k, rb, wbytes);
        if (!C.quiet && out_len(C.kind)) {
            printf("  after phase %d (dst):\n", k);
            for (r = 0; r < C.p; r++) { printf("    r%-2d ", r); print_vals(dstp[r], out_len(C.kind)); printf("\n"); }
        }
    }
    if (!C.quiet && C.inl) printf("syncs: 1 (the post's: nobody reads another rank's buffer, so none after the moves)\n");
    else if (!C.quiet) {
        printf("syncs: %d (the post's, %d between phases, the last)\n", nph + 1, nph - 1);
    }
    if (!C.quiet) {
        for (r = 0; r < C.p; r++) printf("  r%d reads %ld B, writes %ld B\n", r, rb[r], wbytes[r]);
    }
    for (r = 0; r < C.p; r++) bad += wrong_on(r);
    if (break_it) {
        char w[300];
        snprintf(w, sizeof w, "%s: r%d's move %d of phase %d reads the wrong rank, and no check saw it", what, victim_r, victim_i, victim_k);
        check(bad > 0 || races > 0, w);
        if (!C.quiet) printf("check's own check: r%d's move %d of phase %d corrupted (reads the wrong rank): %s\n",
                             victim_r, victim_i, victim_k, bad || races ? "reported" : "NOT reported");
        return;
    }
    {
        char w[300];
        int ex;
        snprintf(w, sizeof w, "%s: %d elements wrong after the moves", what, bad);
        check(bad == 0, w);
        snprintf(w, sizeof w, "%s: %d bytes touched by two ranks in one phase", what, races);
        check(races == 0, w);
        ex = run_executor();
        snprintf(w, sizeof w, "%s: coll_window.h's executor: %d float32 elements off the rank-order fold", what, ex);
        check(ex == 0, w);
        if (!C.quiet && bad == 0 && races == 0 && ex == 0)
            printf("check: every rank's dst equals the plain loop on every rank; no rank touches bytes another writes in a phase; "
                   "coll_window.h's executor bitwise equal to the rank-order fold (float32)\n");
    }
}

/* ---- the diagrams ------------------------------------------------------------ */
#define WTOP 96
#define WLEFT 60
#define WCOL 150

/* A move's label: the block it carries ("all" for the whole vector). */
static void label_of(const coll__win_mv *m, char *lab, size_t n)
{
    const char *pre = m->how == COLL__WIN_FOLD ? "+" : m->how == COLL__WIN_SWAP ? "swap " : "";
    size_t b = C.n * 4, off, len;
    int q;
    if (C.kind == COLL_ALLREDUCE || C.kind == COLL_REDUCE) {
        if (m->len == b) { snprintf(lab, n, "%sall", pre); return; }
        for (q = 0; q < C.p; q++) { coll__win_block(C.n, C.p, q, &off, &len); if (off * 4 == m->off) break; }
    } else q = (int)(m->off / (b ? b : 1));
    if (C.kind == COLL_BROADCAST) snprintf(lab, n, "all");
    else snprintf(lab, n, "%sb%d", pre, q);
}

static int lane_y(int r) { return WTOP + r * LANE_H + LANE_H / 2; }

/* The picture of the current (kind, form, p): a column per move index of
   each phase, the syncs as dashed bars; arrows from the rank read to the
   rank whose dst it lands in, each rank's moves side by side. */
static int draw_window(FILE *o)
{
    coll__win_shape s;
    coll__win_mv m;
    int nph, k, r, i, col = 0, ncol = 0, cols[4], n = 0, W, H;
    static int how[4096];
    static char labs[4096][24];
    char name[96];
    shape(0, &s);
    nph = coll__win_phases(&s);
    for (k = 0; k < nph; k++) {
        cols[k] = 0;
        for (r = 0; r < C.p; r++) { for (i = 0; move_of(r, k, i, &m); i++) continue; if (i > cols[k]) cols[k] = i; }
        if (cols[k] == 0) cols[k] = 1;
        ncol += cols[k];
    }
    W = WLEFT + ncol * WCOL + 40; if (W < 640) W = 640;
    H = WTOP + C.p * LANE_H + 50;
    snprintf(name, sizeof name, "window-%s%s%s-p%d", coll_kind_name(C.kind), *form_name() ? "-" : "", form_name(), C.p);
    svg_open(o, W, H, name);
    fprintf(o, "<title>%s over windows, p = %d</title>\n", coll_kind_name(C.kind), C.p);
    svg_marks(o, W, H);
    fprintf(o, "<defs><marker id=\"as\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\">"
               "<path d=\"M0,0 L10,5 L0,10 z\" fill=\"#5e3c99\"/></marker></defs>\n");
    fprintf(o, "<text x=\"6\" y=\"16\" font-size=\"13\" font-weight=\"bold\">coll_window_%s%s%s, p = %d", coll_kind_name(C.kind),
            *form_name() ? " " : "", form_name(), C.p);
    if (C.kind != COLL_BARRIER) fprintf(o, ", n = %zu%s", C.n, has_root(C.kind) ? ", root r1" : "");
    fprintf(o, "</text>\n");
    for (r = 0; r < C.p; r++) {
        fprintf(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#999\" stroke-width=\"1\"/>\n", WLEFT, lane_y(r), W - 10, lane_y(r));
        fprintf(o, "<text x=\"8\" y=\"%d\" font-size=\"12\">r%d</text>\n", lane_y(r) + 4, r);
        if (has_root(C.kind) && r == C.root) fprintf(o, "<text x=\"28\" y=\"%d\" font-size=\"8\" fill=\"#555\">root</text>\n", lane_y(r) + 4);
    }
    for (k = 0; k < nph; k++) {
        int x = WLEFT + col * WCOL;
        if (k % 2) fprintf(o, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f4f4f4\"/>\n", x, WTOP - 30, cols[k] * WCOL, C.p * LANE_H + 30);
        fprintf(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#555\" stroke-width=\"1.2\" stroke-dasharray=\"4,3\"/>\n", x, WTOP - 44, x, WTOP + C.p * LANE_H);
        fprintf(o, "<text x=\"%d\" y=\"%d\" font-size=\"9\" fill=\"#555\">sync</text>\n", x + 3, WTOP - 46);
        fprintf(o, "<text x=\"%d\" y=\"%d\" font-size=\"11\" font-weight=\"bold\" text-anchor=\"middle\">phase %d</text>\n", x + cols[k] * WCOL / 2, WTOP - 16, k);
        for (r = 0; r < C.p; r++)
            for (i = 0; move_of(r, k, i, &m) && n < 4096; i++) {
                int cx = x + i * WCOL, dx = C.p > 1 ? r * 60 / (C.p - 1) : 0;
                if (!m.len) continue;
                segs[n][0] = cx + 14 + dx; segs[n][1] = lane_y(m.from);
                segs[n][2] = cx + WCOL - 76 + dx; segs[n][3] = lane_y(m.to);
                if (m.from == m.to) { segs[n][1] -= 6; segs[n][3] -= 6; }
                how[n] = m.how;
                label_of(&m, labs[n], sizeof labs[n]);
                fprintf(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"1.6\"%s marker-end=\"url(#%s)\"/>\n",
                        segs[n][0], segs[n][1], segs[n][2], segs[n][3],
                        m.how == COLL__WIN_FOLD ? "#b2182b" : m.how == COLL__WIN_SWAP ? "#5e3c99" : "#2166ac",
                        m.how == COLL__WIN_SWAP ? " marker-start=\"url(#as)\"" : "",
                        m.how == COLL__WIN_FOLD ? "ar" : m.how == COLL__WIN_SWAP ? "as" : "ac");
                n++;
            }
        col += cols[k];
    }
    if (!C.inl) {                                   /* the last sync (inline: none) */
        int x = WLEFT + col * WCOL;
        fprintf(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#555\" stroke-width=\"1.2\" stroke-dasharray=\"4,3\"/>\n", x, WTOP - 44, x, WTOP + C.p * LANE_H);
        fprintf(o, "<text x=\"%d\" y=\"%d\" font-size=\"9\" fill=\"#555\">sync</text>\n", x + 3, WTOP - 46);
    }
    nsegs = n; nboxes = 0;
    for (i = 0; i < n; i++) {
        double bx = 0, by = 0;
        place_label(i, segs[i][0], segs[i][1], segs[i][2], segs[i][3], (int)strlen(labs[i]), &bx, &by);
        fprintf(o, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"10\" fill=\"%s\" stroke=\"#fff\" stroke-width=\"3\" paint-order=\"stroke\">%s</text>\n",
                bx, by, how[i] == COLL__WIN_FOLD ? "#b2182b" : how[i] == COLL__WIN_SWAP ? "#5e3c99" : "#2166ac", labs[i]);
    }
    fprintf(o, "<text x=\"8\" y=\"%d\" font-size=\"9\" fill=\"#444\">arrows: from the rank whose buffer is read to the rank whose dst it lands in, "
               "rank r's own moves r-th from the left; red: folded in rank order, blue: copied, violet: swapped%s</text>\n",
            H - 28, C.kind == COLL_BARRIER ? "; a barrier is its syncs alone"
                    : C.inl ? "; inline: each arrow reads the copy in that rank's record, and no sync follows" : "");
    fprintf(o, "<text x=\"8\" y=\"%d\" font-size=\"9\" fill=\"#444\">labels: the block each move carries (all: the whole vector); "
               "dashed bars: the syncs; drawn from coll_window.h's coll__win_move</text>\n", H - 14);
    fprintf(o, "</svg>\n");
    return 0;
}

typedef struct wpic { coll_kind kind; int form, inplace, inl; const char *idea; } wpic;
static const wpic wpics[] = {
    { COLL_ALLREDUCE, COLL_WINDOW_ONE_SHOT, 0, 0, "Every rank folds every input, whole, into its own dst, in rank order: 2 syncs; reads p n, writes n. Small calls." },
    { COLL_ALLREDUCE, COLL_WINDOW_TWO_SHOT, 0, 0, "Rank r folds block r of every input into its dst; a sync; then copies each other block from its owner's dst: 3 syncs; reads 2n - n/p, writes n." },
    { COLL_REDUCE_SCATTER, 0, 0, 0, "Rank r folds block r of every input into its dst: 2 syncs." },
    { COLL_ALLGATHER, 0, 0, 0, "Rank r copies every rank's src into that rank's block of its dst: 2 syncs; n p." },
    { COLL_BROADCAST, 0, 0, 0, "Every rank but the root copies the root's buffer: 2 syncs; n." },
    { COLL_REDUCE, 0, 0, 0, "Rank r folds block r of every input into the root's dst, every rank its share: 2 syncs; n." },
    { COLL_ALLTOALL, 0, 0, 0, "Rank r copies block r of every rank's src into its dst: 2 syncs." },
    { COLL_ALLTOALL, 0, 1, 0, "In place, the lower rank of each pair swaps the pair's two blocks, through scratch: 2 syncs." },
    { COLL_BARRIER, 0, 0, 0, "No moves: the post's sync and the last one." },
    { COLL_ALLREDUCE, COLL_WINDOW_ONE_SHOT, 0, 1, "Inline: every input rides in its rank's record, and each rank folds the copies into its own dst; nobody reads another rank's buffer, so the post's sync is the only one. Calls of at most COLL_WINDOW_INLINE bytes." },
    { COLL_REDUCE, 0, 0, 1, "Inline: the root folds the records' copies of every input; nobody writes another rank's dst: 1 sync." },
};
#define NPICS ((int)(sizeof wpics / sizeof wpics[0]))

static void pic_cfg(const wpic *w, int p)
{
    C.kind = w->kind; C.form = w->kind == COLL_ALLREDUCE ? w->form : 0; C.inplace = w->inplace; C.inl = w->inl;
    C.p = p; C.quiet = 1;
    C.n = w->kind == COLL_BARRIER ? 0 : (w->kind == COLL_ALLREDUCE || w->kind == COLL_BROADCAST || w->kind == COLL_REDUCE) ? (size_t)(2 * p) : 2;
    C.root = has_root(w->kind) ? 1 : 0;
    C.scratch = sizeof scr[0];
}

/* The diagrams page's section on the window forms, before its script. */
static int add_to_page(const char *file)
{
    static char buf[1 << 21];
    size_t n;
    char *at;
    int i, j;
    FILE *f = fopen(file, "r");
    if (!f) { fprintf(stderr, "window_trace: cannot read %s\n", file); return 1; }
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    if (strstr(buf, "id=\"window\"")) return 0;
    if (!(at = strstr(buf, "<script>"))) { fprintf(stderr, "window_trace: %s has no <script>\n", file); return 1; }
    if (!(f = fopen(file, "w"))) { fprintf(stderr, "window_trace: cannot write %s\n", file); return 1; }
    fwrite(buf, 1, (size_t)(at - buf), f);
    fprintf(f, "<h2 id=\"window\">Over windows (coll_window.h): ranks that load and store each other's buffers</h2>\n"
               "<p class=\"idea\">Drawn from coll_window.h's moves, a pure function like the schedules above: "
               "columns are each phase's moves, dashed bars the syncs; an arrow runs from the rank whose buffer is read "
               "to the rank whose dst it lands in, rank r's own moves r-th from the left; red and blue as above, violet a swap. "
               "<code>make trace-window COLL=allreduce FORM=two P=4</code> prints them, every rank's buffer after each phase, checked.</p>\n");
    for (i = 0; i < NPICS; i++) {
        pic_cfg(&wpics[i], 2);
        fprintf(f, "<h3 id=\"window-%s%s%s\">%s%s%s</h3>\n<p class=\"idea\">%s</p>\n<div class=\"pics\">\n", coll_kind_name(C.kind),
                *form_name() ? "-" : "", form_name(), coll_kind_name(C.kind), *form_name() ? ", " : "", form_name(), wpics[i].idea);
        for (j = 2; j <= 4; j += 2) {
            pic_cfg(&wpics[i], j);
            fprintf(f, "<img src=\"svg/window-%s%s%s-p%d.svg\" alt=\"%s over windows, p = %d\" class=\"diagram\">\n",
                    coll_kind_name(C.kind), *form_name() ? "-" : "", form_name(), j, coll_kind_name(C.kind), j);
        }
        fprintf(f, "</div>\n");
    }
    fputs(at, f);
    fclose(f);
    return 0;
}

/* make diagrams: one SVG per wpics row at p = 2 and 4, each call checked first. */
static int write_svgs(const char *dir, const char *page)
{
    int i, j, nsvg = 0;
    for (i = 0; i < NPICS; i++)
        for (j = 2; j <= 4; j += 2) {
            char path[600];
            FILE *f;
            pic_cfg(&wpics[i], j);
            trace_one(0);
            snprintf(path, sizeof path, "%s/window-%s%s%s-p%d.svg", dir, coll_kind_name(C.kind), *form_name() ? "-" : "", form_name(), j);
            if (!(f = fopen(path, "w"))) { fprintf(stderr, "window_trace: cannot write %s\n", path); return 1; }
            draw_window(f);
            fclose(f);
            nsvg++;
        }
    if (page && add_to_page(page)) return 1;
    printf("window_trace: %d SVGs in %s (%d checks passed, %d failed)\n", nsvg, dir, passed, failed);
    return failed != 0;
}

/* --all: every kind and form at p = 1..8, counts not divisible by p and
   0, in place and out, roots first and last. */
static void trace_all(int break_it)
{
    static const size_t ns[] = { 0, 1, 5, 13, 37 };
    int k, f, p, ni, ip, rt, il;
    C.quiet = 1; C.scratch = 128;                  /* 64-byte segments: n = 37 stages in three */
    for (il = 0; il < 2; il++)
    for (k = 0; k < NKINDS; k++)
        for (f = 1; f <= (kinds[k] == COLL_ALLREDUCE ? 2 - il : 1); f++)
            for (p = 1; p <= MAXP; p++)
                for (ni = 0; ni < 5; ni++)
                    for (ip = 0; ip < 2; ip++)
                        for (rt = 0; rt < (has_root(kinds[k]) ? 2 : 1); rt++) {
                            C.kind = kinds[k]; C.form = kinds[k] == COLL_ALLREDUCE ? f : 0; C.p = p;
                            C.n = kinds[k] == COLL_BARRIER ? 0 : ns[ni]; C.root = rt ? p - 1 : 0;
                            C.inplace = ip; C.inl = il;
                            if ((kinds[k] == COLL_BARRIER || kinds[k] == COLL_BROADCAST) && ip) continue;
                            if (kinds[k] == COLL_BARRIER && ni) continue;
                            if (!il && ip && kinds[k] == COLL_ALLREDUCE && f == COLL_WINDOW_ONE_SHOT) continue;   /* in place runs two-shot */
                            if (il && !fits_inline()) continue;
                            if ((size_t)p * C.n > MAXN * 4) continue;
                            trace_one(break_it);
                        }
}

static int find_kind(const char *v)
{
    int k;
    for (k = 0; k < NKINDS; k++) if (strcmp(v, coll_kind_name(kinds[k])) == 0) return k;
    return -1;
}

/* A refusal with the names it does know, on stderr; exit status 2. */
static int usage(const char *why, const char *arg)
{
    int k;
    fprintf(stderr, "window_trace: %s%s\n  collectives:", why, arg);
    for (k = 0; k < NKINDS; k++) fprintf(stderr, " %s", coll_kind_name(kinds[k]));
    fprintf(stderr, "\n  keys: coll form p n root inplace scratch inline\n  forms: one two\n"
                    "usage: window_trace [coll=allreduce] [form=two] [p=4] [n=10] [root=0] [inplace=0] [scratch=512] [inline=0]\n"
                    "                    | --all [--break] | --svg DIR [--page FILE]\n");
    return 2;
}

static int read_arg(const char *a, int *n_given)
{
    const char *v = strchr(a, '=');
    if (!v || !v[1]) return usage("cannot read ", a);
    v++;
    if (strncmp(a, "coll=", 5) == 0) {
        int k = find_kind(v);
        if (k < 0) return usage("cannot read ", a);
        C.kind = kinds[k];
    } else if (strcmp(a, "form=one") == 0) C.form = COLL_WINDOW_ONE_SHOT;
    else if (strcmp(a, "form=two") == 0) C.form = COLL_WINDOW_TWO_SHOT;
    else if (strncmp(a, "p=", 2) == 0) C.p = atoi(v);
    else if (strncmp(a, "n=", 2) == 0) { C.n = (size_t)atol(v); *n_given = 1; }
    else if (strncmp(a, "root=", 5) == 0) C.root = atoi(v);
    else if (strncmp(a, "inplace=", 8) == 0) C.inplace = atoi(v) != 0;
    else if (strncmp(a, "scratch=", 8) == 0) C.scratch = (size_t)atol(v);
    else if (strncmp(a, "inline=", 7) == 0) C.inl = atoi(v) != 0;
    else return usage("cannot read ", a);
    return 0;
}

int main(int argc, char **argv)
{
    int i, all = 0, break_it = 0, n_given = 0;
    (void)diagrams_main;
    memset(&C, 0, sizeof C);
    C.kind = COLL_ALLREDUCE; C.form = COLL_WINDOW_TWO_SHOT; C.p = 4; C.n = 10; C.scratch = sizeof scr[0];
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--svg") == 0) {
            if (i + 1 >= argc) return usage("--svg needs a folder", "");
            return write_svgs(argv[i + 1], i + 3 < argc && strcmp(argv[i + 2], "--page") == 0 ? argv[i + 3] : 0);
        }
        if (strcmp(argv[i], "--all") == 0) all = 1;
        else if (strcmp(argv[i], "--break") == 0) break_it = 1;
        else if (read_arg(argv[i], &n_given)) return 2;
    }
    if (all) {
        trace_all(0);
        if (break_it) trace_all(1);
        printf("window_trace: %d passed, %d failed\n", passed, failed);
        return failed != 0;
    }
    if (!n_given && C.kind != COLL_ALLREDUCE && C.kind != COLL_BROADCAST && C.kind != COLL_REDUCE) C.n = 2;
    if (C.kind == COLL_BARRIER) C.n = 0;
    if (C.kind == COLL_ALLREDUCE && C.inplace) C.form = COLL_WINDOW_TWO_SHOT;   /* as coll_window.h runs it */
    if (C.kind == COLL_ALLREDUCE && C.inl) C.form = COLL_WINDOW_ONE_SHOT;       /* (in place too) */
    if (C.inl && !fits_inline()) return usage("inline: the inputs must fit a record (COLL_WINDOW_INLINE bytes)", "");
    if (C.p < 1 || C.p > MAXP || C.n > MAXN || (size_t)C.p * C.n > MAXE || C.root < 0 || C.root >= C.p ||
        C.scratch > sizeof scr[0] || (C.inplace && C.scratch < 64))
        return usage("p must be 1..8, n at most 64, root a rank, scratch 64..512 bytes in place", "");
    trace_one(0);
    if (break_it) trace_one(1);
    if (failed) printf("window_trace: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
