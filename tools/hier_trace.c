/* hier_trace.c - watch a hierarchical collective (coll_hier.h) move, phase
   by phase, on H hosts x L ranks.

       make trace-hier COLL=allreduce HOSTS=2 LOCAL=3 N=12 [ORDER=interleaved|host-major]
       build/teach/hier_trace coll=broadcast hosts=3 local=2 n=6 root=4 order=host-major

   Options (key=value): coll (allreduce reduce_scatter allgather broadcast
   reduce gather scatter alltoall barrier), hosts, local (H x L at most
   16 ranks), n (the count the API takes: per rank for the block-wise
   collectives, at most 64), root, order (interleaved: rank r on host
   r % H; host-major: on host r / L), checks (0/1: coll.h's call checks,
   on by default). int32 sum throughout.

   The ranks are threads over ports/coll_threads.h and run coll_hier.h's
   own code, unchanged: an observer (coll_set_observer) on each of its
   sub-communicators (local, cross, byhost) and on the world tells every
   call and every message, with the world rank of the peer. Each rank's
   calls are lined up into phases (a rank that sits a phase out, as in
   broadcast's across phase, has none there); each phase prints its
   messages step by step, whether the receiver reduces or copies them,
   which level each one crosses (inside a host, or across hosts), the
   bytes that cross, and every rank's buffer after it. Then the local
   moves at the end and the check: every rank's result against a plain
   loop over the inputs, the road (coll_hier_road: the phases), the levels
   (a local phase's messages stay on their host, a cross phase's cross)
   and the phases' order, as the header documents it.

       build/teach/hier_trace --all [--break]   every collective at 2x3,
                 3x2 and 4x2, both orders, roots first and last, checked
                 quietly (--break: a corrupted element must be reported);
                 ends "N passed, N failed"
       build/teach/hier_trace --svg DIR        the diagrams (make diagrams):
                 one SVG per hier_pics row of tools/diagrams.c, host-major,
                 call checks off
*/
#define _POSIX_C_SOURCE 200809L
/* The traces show the general forms at any N: an all-reduce of up to
   COLL_HIER_SMALL_BYTES would otherwise take its two-phase road, and a
   broadcast from COLL_HIER_CHAIN_BYTES the chain over byhost. */
#define COLL_HIER_SMALL_BYTES 0u
#define COLL_HIER_CHAIN_BYTES ((size_t)-1)
#define COLL_IMPLEMENTATION
#include "coll_hier.h"
#define main diagrams_main
#include "tools/diagrams.c"
#undef main
#define COLL_THREADS_IMPLEMENTATION
#include "ports/coll_threads.h"

#define MAXP 16
#define MAXN 64
#define MAXE (MAXP * MAXN)
#define MAXCALL 24
#define MAXMSG 4096
#define MAXRECV 1024
#define SCR 16384
#define WORKB 65536
#define UNSET (-1)

enum { LV_LOCAL, LV_CROSS, LV_BYHOST, LV_WORLD };
static const char *const lv_what[] = { "inside each host", "across hosts", "over byhost (flat)", "over the world (flat)" };
static const char *const lv_short[] = { "inside", "across", "byhost", "world" };

typedef struct tcall { int level, rc, phase; coll_kind kind; coll_algo algo; int32_t snap[MAXE]; } tcall;
typedef struct tmsg { int call, step, to, bytes, reduce; } tmsg;
typedef struct trank {
    int ncall, nmsg, rc, road;
    tcall call[MAXCALL];
    tmsg msg[MAXMSG];
    int nrecv[MAXP];
    unsigned char fold[MAXP][MAXRECV];   /* k-th receive from a peer: reduced? */
} trank;
typedef struct octx { int rank, level; const coll_comm *c; const int *members; } octx;
typedef struct tcfg { coll_kind kind; int H, L, p, order, root, checks, quiet; size_t n; } tcfg;

static tcfg C;
static trank T[MAXP];
static octx OX[MAXP][4];
static int host_of[MAXP], lidx[MAXP], lane_of[MAXP];
static int32_t inb[MAXP][MAXE], outb[MAXP][MAXE];
static coll_threads W;
static coll_hier hier_of[MAXP];
static unsigned long long scr_w[MAXP][SCR / 8], scr_h[MAXP][SCR / 8], work_of[MAXP][WORKB / 8];
static int passed, failed, nphase;
static const tcall *tpl[MAXCALL];        /* the phases: the longest rank's calls */

/* One check counted; a failure is said at once. */
static void check(int ok, const char *what)
{
    if (ok) passed++;
    else { failed++; printf("FAIL: %s\n", what); }
}

/* ---- the collectives and their buffers ----------------------------------- */
static const coll_kind kinds[] = { COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER, COLL_BROADCAST,
                                   COLL_REDUCE, COLL_GATHER, COLL_SCATTER, COLL_ALLTOALL, COLL_BARRIER };
#define NKINDS ((int)(sizeof kinds / sizeof kinds[0]))

/* The levels of the phases in the order coll_hier.h's header gives them
   (L inside a host, C across), for the check. */
static const char *documented(coll_kind k)
{
    switch (k) {
    case COLL_ALLREDUCE: return "LCL";
    case COLL_REDUCE_SCATTER: return "LC";
    case COLL_ALLGATHER: return "CL";
    case COLL_BROADCAST: return "CL";
    case COLL_REDUCE: return "LC";
    case COLL_GATHER: return "LC";
    case COLL_SCATTER: return "CL";
    case COLL_ALLTOALL: return "LC";
    default: return "LCL";
    }
}

/* Elements a rank's input holds (the API's layout). */
static size_t in_len(coll_kind k)
{
    if (k == COLL_REDUCE_SCATTER || k == COLL_ALLTOALL || k == COLL_SCATTER) return (size_t)C.p * C.n;
    return k == COLL_BARRIER || k == COLL_BROADCAST ? 0 : C.n;
}
/* Elements a rank's output holds (the API's layout). */
static size_t out_len(coll_kind k)
{
    if (k == COLL_ALLGATHER || k == COLL_GATHER || k == COLL_ALLTOALL) return (size_t)C.p * C.n;
    return k == COLL_BARRIER ? 0 : C.n;
}
/* The calls that take a root. */
static int has_root(coll_kind k) { return k == COLL_BROADCAST || k == COLL_REDUCE || k == COLL_GATHER || k == COLL_SCATTER; }

/* Rank r's input element i: its rank in the hundreds for the copying
   kinds (who sent what shows), small for the reductions (sums stay short). */
static int32_t input(int r, size_t i)
{
    int red = C.kind == COLL_ALLREDUCE || C.kind == COLL_REDUCE_SCATTER || C.kind == COLL_REDUCE;
    return red ? (int32_t)(10 * r + (int)i) : (int32_t)(100 * r + (int)i);
}

/* The plain loop: what rank r's output must hold (0: nothing is promised). */
static size_t expected(int r, int32_t *want)
{
    size_t i, n = C.n, m = out_len(C.kind);
    int s;
    if (C.kind == COLL_BARRIER || ((C.kind == COLL_REDUCE || C.kind == COLL_GATHER) && r != C.root)) return 0;
    for (i = 0; i < m; i++) {
        int32_t v = 0;
        switch (C.kind) {
        case COLL_ALLREDUCE: case COLL_REDUCE: for (s = 0; s < C.p; s++) v += input(s, i); break;
        case COLL_REDUCE_SCATTER: for (s = 0; s < C.p; s++) v += input(s, (size_t)r * n + i); break;
        case COLL_ALLGATHER: case COLL_GATHER: v = input((int)(i / n), i % n); break;
        case COLL_BROADCAST: v = input(C.root, i); break;
        case COLL_SCATTER: v = input(C.root, (size_t)r * n + i); break;
        default: v = input((int)(i / n), (size_t)r * n + i % n); break;   /* all-to-all */
        }
        want[i] = v;
    }
    return m;
}

/* ---- the hosts --------------------------------------------------------------- */
/* Rank r's host_key for coll_hier_init: the order's host. */
static int key_of(int r) { return C.order ? r / C.L : r % C.H; }

/* The tool's own host map (hosts numbered by their lowest rank, as
   coll_hier_init numbers them) and each rank's lane (host, then local). */
static void read_hosts(void)
{
    int r, h, size[MAXP] = { 0 };
    for (r = 0; r < C.p; r++) {
        host_of[r] = C.order ? r / C.L : r % C.H;
        lidx[r] = size[host_of[r]]++;
    }
    for (r = 0; r < C.p; r++) {
        h = host_of[r];
        lane_of[r] = h * C.L + lidx[r];
    }
}

/* ---- the observer: each call and message, per rank --------------------------- */
/* Told on the rank's own thread: its log needs no lock. A send is a
   message; a receive notes whether its step reduces (the step in flight,
   coll_request.st), matched to the k-th send from that peer afterwards. */
static void on_event(void *ctx, const coll_event *e)
{
    const octx *x = (const octx *)ctx;
    trank *t = &T[x->rank];
    int peer = e->peer >= 0 && x->members ? x->members[e->peer] : e->peer;
    if (e->what == COLL_EV_CALL && t->ncall < MAXCALL) {
        tcall *c = &t->call[t->ncall++];
        c->level = x->level; c->kind = e->kind; c->algo = e->algo; c->rc = COLL_AGAIN; c->phase = UNSET;
    } else if (e->what == COLL_EV_END && t->ncall) {
        tcall *c = &t->call[t->ncall - 1];
        c->rc = e->result;
        memcpy(c->snap, outb[x->rank], out_len(C.kind) * sizeof(int32_t));
    } else if (e->what == COLL_EV_POST && e->send && t->ncall && t->nmsg < MAXMSG) {
        tmsg *m = &t->msg[t->nmsg++];
        m->call = t->ncall - 1; m->step = e->step; m->to = peer; m->bytes = (int)e->bytes; m->reduce = 0;
    } else if (e->what == COLL_EV_POST && !e->send && peer >= 0 && peer < MAXP && t->nrecv[peer] < MAXRECV) {
        const coll_request *q = x->c->obs.cur;
        t->fold[peer][t->nrecv[peer]++] = (unsigned char)(q && q->st.reduce);
    }
}

/* The observer on the world and on each of h's sub-communicators. */
static void watch(int r, coll_hier *h, coll_comm *world, int on)
{
    coll_comm *c[4];
    const coll_subport *sp[4];
    int l;
    c[0] = &h->local; c[1] = &h->cross; c[2] = &h->byhost; c[3] = world;
    sp[0] = &h->local_sp; sp[1] = &h->cross_sp; sp[2] = &h->byhost_sp; sp[3] = 0;
    for (l = 0; l < 4; l++) {
        octx *x = &OX[r][l];
        x->rank = r; x->level = l; x->c = c[l]; x->members = sp[l] ? sp[l]->members : 0;
        if (coll_size(c[l]) > 0) coll_set_observer(c[l], on ? on_event : NULL, x);
    }
}

/* Rank r's call of the collective. */
static int call_it(coll_hier *h, int r)
{
    int32_t *s = inb[r], *d = outb[r];
    switch (C.kind) {
    case COLL_ALLREDUCE: return coll_hier_allreduce(h, s, d, C.n, COLL_INT32, COLL_SUM);
    case COLL_REDUCE_SCATTER: return coll_hier_reduce_scatter(h, s, d, C.n, COLL_INT32, COLL_SUM);
    case COLL_ALLGATHER: return coll_hier_allgather(h, s, d, C.n, COLL_INT32);
    case COLL_BROADCAST: return coll_hier_broadcast(h, d, C.n, COLL_INT32, C.root);
    case COLL_REDUCE: return coll_hier_reduce(h, s, d, C.n, COLL_INT32, COLL_SUM, C.root);
    case COLL_GATHER: return coll_hier_gather(h, s, d, C.n, COLL_INT32, C.root);
    case COLL_SCATTER: return coll_hier_scatter(h, s, d, C.n, COLL_INT32, C.root);
    case COLL_ALLTOALL: return coll_hier_alltoall(h, s, d, C.n, COLL_INT32);
    default: return coll_hier_barrier(h);
    }
}

/* One rank's thread: the world, the hierarchy, the observed call. */
static int body(int r, void *arg)
{
    coll_comm world;
    coll_port port = coll_threads_port(&W, r);
    coll_hier *h = &hier_of[r];
    int rc;
    (void)arg;
    rc = coll_init(&world, r, C.p, &port, scr_w[r], sizeof scr_w[r]);
    if (rc == COLL_OK && !C.checks) rc = coll_set_checks(&world, 0);      /* (the subs inherit it) */
    if (rc == COLL_OK)
        rc = coll_hier_init(h, &world, key_of(r), scr_h[r], sizeof scr_h[r], work_of[r], sizeof work_of[r]);
    if (rc == COLL_OK) {
        watch(r, h, &world, 1);
        rc = call_it(h, r);
        watch(r, h, &world, 0);
        T[r].road = coll_hier_road(h);
    }
    T[r].rc = rc;
    return 0;
}

/* Fill the inputs, run every rank, match each send to its receive. */
static int run_all(void)
{
    int r, s, k, sent[MAXP][MAXP];
    size_t i;
    memset(T, 0, sizeof T);
    memset(sent, 0, sizeof sent);
    for (r = 0; r < C.p; r++) {
        for (i = 0; i < MAXE; i++) outb[r][i] = UNSET;
        for (i = 0; i < in_len(C.kind); i++) inb[r][i] = input(r, i);
        if (C.kind == COLL_BROADCAST && r == C.root)
            for (i = 0; i < C.n; i++) outb[r][i] = input(r, i);
    }
    if (coll_threads_init(&W, C.p, 30000) != COLL_OK) return -1;
    coll_threads_run(&W, body, NULL);
    coll_threads_destroy(&W);
    for (r = 0; r < C.p; r++)
        for (k = 0; k < T[r].nmsg; k++) {
            tmsg *m = &T[r].msg[k];
            s = sent[r][m->to]++;
            if (m->to >= 0 && m->to < C.p && s < T[m->to].nrecv[r]) m->reduce = T[m->to].fold[r][s];
        }
    return 0;
}

/* ---- phases ------------------------------------------------------------------ */
/* The rank with the most calls gives the phases; every other rank's calls
   are matched to them in order (a rank may sit a phase out). */
static int align(void)
{
    int r, j, k, best = 0;
    for (r = 1; r < C.p; r++) if (T[r].ncall > T[best].ncall) best = r;
    nphase = T[best].ncall;
    for (k = 0; k < nphase; k++) tpl[k] = &T[best].call[k];
    for (r = 0; r < C.p; r++) {
        for (j = 0, k = 0; k < T[r].ncall; k++, j++) {
            tcall *c = &T[r].call[k];
            while (j < nphase && (tpl[j]->level != c->level || tpl[j]->kind != c->kind)) j++;
            if (j == nphase) return -1;
            c->phase = j;
        }
    }
    return 0;
}

/* Which ranks take part in phase k ("every rank" or a list). */
static void fmt_members(int k, char *out, size_t n)
{
    int r, c, all = 1;
    size_t at = 0;
    out[0] = 0;
    for (r = 0; r < C.p; r++) {
        int in = 0;
        for (c = 0; c < T[r].ncall; c++) if (T[r].call[c].phase == k) in = 1;
        if (!in) { all = 0; continue; }
        at += (size_t)snprintf(out + at, at < n ? n - at : 0, " r%d", r);
        if (at >= n) break;
    }
    if (all) snprintf(out, n, " every rank");
}

/* The phase a message of rank r belongs to. */
static int phase_of(int r, const tmsg *m) { return T[r].call[m->call].phase; }
static int across(int r, const tmsg *m) { return host_of[r] != host_of[m->to]; }
/* A message that carries the call's data: a schedule's step, or a call
   check's frame where the call rides in them (dissemination). */
static int is_data(int r, const tmsg *m)
{
    return m->step > 0 || T[r].call[m->call].algo == COLL_ALGO_DISSEMINATION;
}

/* ---- printing ------------------------------------------------------------------ */
/* A buffer's elements; an element never written is a dot. */
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

/* The call, the hosts and their ranks, every rank's input. */
static void print_head(void)
{
    int h, r;
    printf("hier %s: %d hosts x %d ranks, %s (rank r on host %s)", coll_kind_name(C.kind), C.H, C.L,
           C.order ? "host-major" : "interleaved", C.order ? "r / L" : "r % H");
    if (C.kind != COLL_BARRIER) printf(", n = %zu int32 sum", C.n);
    if (!C.checks) printf(", call checks off");
    if (has_root(C.kind)) printf(", root %d", C.root);
    printf("\n");
    for (h = 0; h < C.H; h++) {
        printf("  host %d:", h);
        for (r = 0; r < C.p; r++) if (host_of[r] == h) printf(" r%d", r);
        printf("\n");
    }
    if (in_len(C.kind) == 0 && C.kind != COLL_BROADCAST) return;
    printf("start (%s):\n", C.kind == COLL_BROADCAST ? "buf" : "src");
    for (r = 0; r < C.p; r++) {
        printf("  r%-2d ", r);
        if (C.kind == COLL_BROADCAST) print_vals(outb[r], C.n);
        else print_vals(inb[r], in_len(C.kind));
        printf("\n");
    }
}

/* Phase k's messages, step by step, with the bytes that cross hosts: the
   call check's frames summed apart, unless the call rides in them
   (dissemination), when they are its data. */
static void print_msgs(int k, long *data_x, long *check_x)
{
    int r, i, s, top = 0, nchk = 0, rides = tpl[k]->algo == COLL_ALGO_DISSEMINATION;
    long chk = 0;
    if (rides) printf("  (a small call: its data rides in the call check's rounds, step 0)\n");
    for (r = 0; r < C.p; r++)
        for (i = 0; i < T[r].nmsg; i++) if (phase_of(r, &T[r].msg[i]) == k && T[r].msg[i].step > top) top = T[r].msg[i].step;
    for (s = 0; s <= top; s++)
        for (r = 0; r < C.p; r++)
            for (i = 0; i < T[r].nmsg; i++) {
                const tmsg *m = &T[r].msg[i];
                int x;
                if (phase_of(r, m) != k || m->step != s) continue;
                x = across(r, m);
                if (s == 0 && !rides) { nchk++; chk += m->bytes; if (x) *check_x += m->bytes; continue; }
                if (x) *data_x += m->bytes;
                if (s == 0) printf("  check round: r%d -> r%d  %4d B  frame   ", r, m->to, m->bytes);
                else printf("  step %d: r%d -> r%d  %3d el  %-6s  ", s, r, m->to, m->bytes / 4, m->reduce ? "reduce" : "copy");
                if (x) printf("ACROSS host %d -> host %d\n", host_of[r], host_of[m->to]);
                else printf("inside host %d\n", host_of[r]);
            }
    if (nchk) printf("  (the call check's rounds: %d frames, %ld bytes)\n", nchk, chk);
}

/* Phase k: what runs where, its messages, every rank's output after it. */
static void print_phase(int k, long *data_x, long *check_x)
{
    char who[200];
    long before = *data_x;
    int r, c;
    fmt_members(k, who, sizeof who);
    printf("phase %d: %s %s, %s; ranks:%s\n", k + 1, coll_kind_name(tpl[k]->kind), lv_what[tpl[k]->level],
           coll_algo_name(tpl[k]->algo), who);
    print_msgs(k, data_x, check_x);
    printf("  bytes across hosts in this phase: %ld\n", *data_x - before);
    if (out_len(C.kind) == 0) return;
    printf("  after phase %d (%s):\n", k + 1, C.kind == COLL_BROADCAST ? "buf" : "dst");
    for (r = 0; r < C.p; r++)
        for (c = 0; c < T[r].ncall; c++)
            if (T[r].call[c].phase == k) {
                printf("    r%-2d ", r);
                print_vals(T[r].call[c].snap, out_len(C.kind));
                printf("\n");
            }
}

/* ---- checks -------------------------------------------------------------------- */
/* Wrong elements of rank r's output (against the plain loop). */
static int wrong_on(int r)
{
    static int32_t want[MAXE];
    size_t i, m = expected(r, want);
    int bad = 0;
    for (i = 0; i < m; i++) if (outb[r][i] != want[i]) bad++;
    return bad;
}

/* The phases' levels as a string ("LCL"), and every message on the level
   its phase says: a local phase's stay on a host, a cross phase's cross. */
static int levels_ok(char *lv, size_t n)
{
    int k, r, i, ok = 1;
    for (k = 0; k < nphase && k + 1 < (int)n; k++)
        lv[k] = tpl[k]->level == LV_LOCAL ? 'L' : tpl[k]->level == LV_CROSS ? 'C' : 'F';
    lv[k < (int)n ? k : (int)n - 1] = 0;
    for (r = 0; r < C.p; r++)
        for (i = 0; i < T[r].nmsg; i++) {
            const tmsg *m = &T[r].msg[i];
            int lvl = T[r].call[m->call].level;
            if ((lvl == LV_LOCAL && across(r, m)) || (lvl == LV_CROSS && !across(r, m))) ok = 0;
        }
    return ok;
}

/* Every check of one traced call; break_it corrupts one element of one
   rank's result first, which the check must report. */
static void check_run(int break_it)
{
    char what[300], lv[MAXCALL + 1];
    int r, bad = 0, victim = has_root(C.kind) && C.kind != COLL_BROADCAST && C.kind != COLL_SCATTER ? C.root : C.p - 1;
    snprintf(what, sizeof what, "hier %s %dx%d %s n=%zu root=%d", coll_kind_name(C.kind), C.H, C.L,
             C.order ? "host-major" : "interleaved", C.n, C.root);
    if (break_it) {
        if (C.kind == COLL_BARRIER || C.n == 0) return;
        outb[victim][0] += 1;
        check(wrong_on(victim) > 0, what);
        if (!C.quiet) printf("check's own check: one element of r%d's result changed: %s\n", victim,
                             wrong_on(victim) > 0 ? "reported" : "NOT reported");
        return;
    }
    for (r = 0; r < C.p; r++) {
        char w[360];
        snprintf(w, sizeof w, "%s: rank %d rc %d road %d, %d elements wrong", what, r, T[r].rc, T[r].road, wrong_on(r));
        check(T[r].rc == COLL_OK && T[r].road == COLL_HIER_PHASES && wrong_on(r) == 0, w);
        bad += T[r].rc != COLL_OK || wrong_on(r) != 0;
    }
    check(align() == 0, what);
    {
        char w[400];
        int ok = levels_ok(lv, sizeof lv);
        snprintf(w, sizeof w, "%s: phases %s (%s documented), every message on its phase's level: %s",
                 what, lv, documented(C.kind), ok ? "yes" : "no");
        check(ok && strcmp(lv, documented(C.kind)) == 0, w);
    }
    if (!C.quiet && !bad)
        printf("check: every rank's result equals the plain loop on every rank (road: phases; phases %s as documented)\n", lv);
}

/* One traced call, printed (or, quiet, only checked). */
static void trace_one(int break_it)
{
    long data_x = 0, check_x = 0;
    int k, r, most = 0;
    read_hosts();
    if (run_all() != 0) { check(0, "threads port init"); return; }
    if (align() != 0) { check(0, "the ranks' calls do not line up into phases"); return; }
    if (!C.quiet) {
        print_head();
        for (k = 0; k < nphase; k++) print_phase(k, &data_x, &check_x);
        for (r = 0; r < C.p; r++) {
            long mine = 0;
            int i;
            for (i = 0; i < T[r].nmsg; i++) if (is_data(r, &T[r].msg[i]) && across(r, &T[r].msg[i])) mine += T[r].msg[i].bytes;
            if (mine > most) most = (int)mine;
        }
        printf("bytes across hosts: %ld of data (the most one rank sends: %d)", data_x, most);
        if (C.checks) printf(", %ld of call-check frames", check_x);
        printf("\n");
        if (out_len(C.kind)) {
            printf("end (%s, after the local moves):\n", C.kind == COLL_BROADCAST ? "buf" : "dst");
            for (r = 0; r < C.p; r++) { printf("  r%-2d ", r); print_vals(outb[r], out_len(C.kind)); printf("\n"); }
        }
    }
    check_run(0);
    if (break_it) check_run(1);
}

/* ---- the diagrams ------------------------------------------------------------ */
#define HTOP  100
#define HLEFT 80
#define MAXCOL 64

static int ncol, col_ph[MAXCOL], col_st[MAXCOL];

/* The columns: each phase's steps that carry a message, in order. */
static void hier_columns(void)
{
    int k, s, r, i, top;
    ncol = 0;
    for (k = 0; k < nphase; k++) {
        for (top = 0, r = 0; r < C.p; r++)
            for (i = 0; i < T[r].nmsg; i++) if (phase_of(r, &T[r].msg[i]) == k && T[r].msg[i].step > top) top = T[r].msg[i].step;
        for (s = 0; s <= top && ncol < MAXCOL; s++) {
            int any = 0;
            for (r = 0; r < C.p && !any; r++)
                for (i = 0; i < T[r].nmsg; i++) if (phase_of(r, &T[r].msg[i]) == k && T[r].msg[i].step == s) any = 1;
            if (any) { col_ph[ncol] = k; col_st[ncol] = s; ncol++; }
        }
    }
}
/* The column of phase k's step s (-1: none). */
static int col_of(int k, int s)
{
    int c;
    for (c = 0; c < ncol; c++) if (col_ph[c] == k && col_st[c] == s) return c;
    return -1;
}
/* The height of rank r's lane: lanes grouped by host. */
static int lane_y(int r) { return HTOP + lane_of[r] * LANE_H + LANE_H / 2; }

/* Hosts as boxes around their ranks' lanes; the lanes and their names. */
static void draw_hosts(FILE *o, int W)
{
    int h, r;
    for (h = 0; h < C.H; h++) {
        int y = HTOP + h * C.L * LANE_H + 3;
        fprintf(o, "<rect x=\"4\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"7\" fill=\"%s\" fill-opacity=\"0.35\" stroke=\"#6b8fb8\" stroke-width=\"1.5\"/>\n",
                y, W - 8, C.L * LANE_H - 6, h % 2 ? "#e3ecf6" : "#eef3e3");
        fprintf(o, "<text x=\"9\" y=\"%d\" font-size=\"10\" font-weight=\"bold\" fill=\"#3b5f8a\">host %d</text>\n", y + 14, h);
    }
    for (r = 0; r < C.p; r++) {
        int y = lane_y(r);
        fprintf(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#999\" stroke-width=\"1\"/>\n", HLEFT, y, W - 10, y);
        fprintf(o, "<text x=\"50\" y=\"%d\" font-size=\"12\">r%d</text>\n", y + 4, r);
        if (has_root(C.kind) && r == C.root)
            fprintf(o, "<text x=\"9\" y=\"%d\" font-size=\"8\" fill=\"#555\">root</text>\n", y + 4);
    }
}

/* Each phase's band and name over its columns, each column's step. */
static void draw_heads(FILE *o, int H)
{
    int c, c0;
    for (c0 = 0; c0 < ncol; c0 = c) {
        int k = col_ph[c0], x;
        for (c = c0; c < ncol && col_ph[c] == k; c++) continue;
        x = HLEFT + c0 * COL_W;
        if (k % 2) fprintf(o, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#f4f4f4\"/>\n", x, HTOP - 60, (c - c0) * COL_W, H - HTOP + 60 - 60);
        fprintf(o, "<text x=\"%d\" y=\"%d\" font-size=\"11\" font-weight=\"bold\" text-anchor=\"middle\">phase %d: %s</text>\n",
                x + (c - c0) * COL_W / 2, HTOP - 48, k + 1, lv_short[tpl[k]->level]);
        fprintf(o, "<text x=\"%d\" y=\"%d\" font-size=\"9\" fill=\"#555\" text-anchor=\"middle\">%s</text>\n",
                x + (c - c0) * COL_W / 2, HTOP - 36, coll_kind_name(tpl[k]->kind));
        fprintf(o, "<text x=\"%d\" y=\"%d\" font-size=\"9\" fill=\"#555\" text-anchor=\"middle\">%s</text>\n",
                x + (c - c0) * COL_W / 2, HTOP - 26, coll_algo_name(tpl[k]->algo));
    }
    for (c = 0; c < ncol; c++)
        fprintf(o, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\">step %d</text>\n",
                HLEFT + c * COL_W + COL_W / 2, HTOP - 12, col_st[c]);
}

/* Every message an arrow in its sender's column (red ending in a circled +:
   reduced; blue: copied; dashed and thicker: across hosts), then the
   labels clear of each other (tools/diagrams.c's place_label). */
static long draw_arrows(FILE *o)
{
    static int red[4096], xh[4096], el[4096];
    int r, i, n = 0;
    long bytes = 0;
    for (r = 0; r < C.p; r++)
        for (i = 0; i < T[r].nmsg && n < 4096; i++) {
            const tmsg *m = &T[r].msg[i];
            int c = col_of(phase_of(r, m), m->step);
            if (c < 0) continue;
            segs[n][0] = HLEFT + c * COL_W + 12; segs[n][1] = lane_y(r);
            segs[n][2] = HLEFT + c * COL_W + COL_W - 14; segs[n][3] = lane_y(m->to);
            red[n] = m->reduce; xh[n] = across(r, m); el[n] = m->bytes / 4;
            if (xh[n]) bytes += m->bytes;
            fprintf(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"%s\"%s marker-end=\"url(#%s)\"/>\n",
                    segs[n][0], segs[n][1], segs[n][2], segs[n][3], red[n] ? "#b2182b" : "#2166ac",
                    xh[n] ? "2.4" : "1.6", xh[n] ? " stroke-dasharray=\"7,3\"" : "", red[n] ? "ar" : "ac");
            n++;
        }
    nsegs = n; nboxes = 0;
    for (i = 0; i < n; i++) {
        char lab[24];
        double bx = 0, by = 0;
        if (C.kind == COLL_BARRIER) snprintf(lab, sizeof lab, "signal");
        else snprintf(lab, sizeof lab, "%s%d el", red[i] ? "+" : "", el[i]);
        place_label(i, segs[i][0], segs[i][1], segs[i][2], segs[i][3], (int)strlen(lab), &bx, &by);
        fprintf(o, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"10\" fill=\"%s\" stroke=\"#fff\" stroke-width=\"3\" paint-order=\"stroke\">%s</text>\n",
                bx, by, red[i] ? "#b2182b" : "#2166ac", lab);
    }
    return bytes;
}

/* The key under the lanes: the four kinds of arrow, the bytes across. */
static void draw_key(FILE *o, int y, long bytes)
{
    static const char *const what[] = { "copied, inside a host", "reduced, inside a host", "copied, across hosts", "reduced, across hosts" };
    int i;
    for (i = 0; i < 4; i++) {
        int x = 12 + i * 170, rd = i % 2, xh = i / 2;
        fprintf(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"%s\"%s marker-end=\"url(#%s)\"/>\n",
                x, y, x + 34, y, rd ? "#b2182b" : "#2166ac", xh ? "2.4" : "1.6", xh ? " stroke-dasharray=\"7,3\"" : "", rd ? "ar" : "ac");
        fprintf(o, "<text x=\"%d\" y=\"%d\" font-size=\"9\" fill=\"#444\">%s</text>\n", x + 50, y + 3, what[i]);
    }
    fprintf(o, "<text x=\"12\" y=\"%d\" font-size=\"9\" fill=\"#444\">labels: elements (int32) a message carries; "
               "%ld bytes cross between hosts in all; call checks off; run by coll_hier.h over the threads port</text>\n",
            y + 20, bytes);
}

/* The picture of the last traced call (hier_pics' shape, host-major). */
static int draw_hier(FILE *o)
{
    int W, H;
    long bytes;
    char name[80];
    hier_columns();
    W = HLEFT + ncol * COL_W + 20;
    if (W < 720) W = 720;
    H = HTOP + C.p * LANE_H + 56;
    snprintf(name, sizeof name, "hier-%s-%dx%d", coll_kind_name(C.kind), C.H, C.L);
    svg_open(o, W, H, name);
    fprintf(o, "<title>hierarchical %s, %d hosts x %d ranks</title>\n", coll_kind_name(C.kind), C.H, C.L);
    svg_marks(o, W, H);
    fprintf(o, "<text x=\"6\" y=\"16\" font-size=\"13\" font-weight=\"bold\">coll_hier_%s, %d hosts x %d ranks (host-major)", coll_kind_name(C.kind), C.H, C.L);
    if (C.kind != COLL_BARRIER) fprintf(o, ", n = %zu%s", C.n, has_root(C.kind) ? ", root r1" : "");
    fprintf(o, "</text>\n");
    draw_heads(o, H);
    draw_hosts(o, W);
    bytes = draw_arrows(o);
    draw_key(o, H - 34, bytes);
    fprintf(o, "</svg>\n");
    return ncol > 0 || C.p == 1 ? 0 : -1;
}

/* make diagrams: one SVG per hier_pics row, each call checked first. */
static int write_svgs(const char *dir)
{
    size_t i;
    int bad = 0;
    for (i = 0; i < sizeof hier_pics / sizeof hier_pics[0]; i++) {
        const hier_pic *h = &hier_pics[i];
        char path[600];
        FILE *f;
        C.kind = h->kind; C.H = h->hosts; C.L = h->local; C.p = C.H * C.L; C.order = 1; C.checks = 0; C.quiet = 1;
        C.n = out_len(C.kind) == 0 ? 0 : (C.kind == COLL_ALLREDUCE || C.kind == COLL_BROADCAST || C.kind == COLL_REDUCE) ? (size_t)(2 * C.p) : 2;
        C.root = has_root(C.kind) ? 1 : 0;
        trace_one(0);
        snprintf(path, sizeof path, "%s/hier-%s-%dx%d.svg", dir, coll_kind_name(C.kind), C.H, C.L);
        f = fopen(path, "w");
        if (!f) { fprintf(stderr, "hier_trace: cannot write %s\n", path); return 1; }
        if (draw_hier(f) != 0) bad++;
        fclose(f);
    }
    printf("hier_trace: %d SVGs in %s (%d checks passed, %d failed)\n", (int)(sizeof hier_pics / sizeof hier_pics[0]), dir, passed, failed);
    return bad || failed;
}

/* --all: every collective, at 2x3, 3x2 and 4x2, both orders, roots 0 and last. */
static void trace_all(int break_it)
{
    static const int shapes[][2] = { { 2, 3 }, { 3, 2 }, { 4, 2 } };
    int k, s, o, rt;
    C.quiet = 1; C.checks = 1;
    for (k = 0; k < NKINDS; k++)
        for (s = 0; s < 3; s++)
            for (o = 0; o < 2; o++)
                for (rt = 0; rt < (has_root(kinds[k]) ? 2 : 1); rt++) {
                    C.kind = kinds[k]; C.H = shapes[s][0]; C.L = shapes[s][1]; C.p = C.H * C.L; C.order = o;
                    C.n = kinds[k] == COLL_BARRIER ? 0 : (kinds[k] == COLL_ALLREDUCE || kinds[k] == COLL_BROADCAST || kinds[k] == COLL_REDUCE) ? 12 : 2;
                    C.root = rt ? C.p - 1 : 0;
                    trace_one(break_it);
                }
}

/* The index in kinds[] of a collective's name (-1: none). */
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
    fprintf(stderr, "hier_trace: %s%s\n  collectives:", why, arg);
    for (k = 0; k < NKINDS; k++) fprintf(stderr, " %s", coll_kind_name(kinds[k]));
    fprintf(stderr, "\n  keys: coll hosts local n root order checks\n  orders: interleaved host-major\n"
                    "usage: hier_trace [coll=allreduce] [hosts=2] [local=3] [n=12] [root=0] [order=interleaved]\n"
                    "                  [checks=1] | --all [--break] | --svg DIR\n");
    return 2;
}

/* One key=value; 0, or usage()'s 2. */
static int read_arg(const char *a, int *n_given)
{
    const char *v = strchr(a, '=');
    if (!v || !v[1]) return usage("cannot read ", a);
    v++;
    if (strncmp(a, "coll=", 5) == 0) {
        int k = find_kind(v);
        if (k < 0) return usage("cannot read ", a);
        C.kind = kinds[k];
    } else if (strncmp(a, "hosts=", 6) == 0) C.H = atoi(v);
    else if (strncmp(a, "local=", 6) == 0) C.L = atoi(v);
    else if (strncmp(a, "n=", 2) == 0) { C.n = (size_t)atol(v); *n_given = 1; }
    else if (strncmp(a, "root=", 5) == 0) C.root = atoi(v);
    else if (strncmp(a, "checks=", 7) == 0) C.checks = atoi(v) != 0;
    else if (strcmp(a, "order=interleaved") == 0) C.order = 0;
    else if (strcmp(a, "order=host-major") == 0) C.order = 1;
    else return usage("cannot read ", a);
    return 0;
}

/* The options, then one traced call, --all or --svg. */
int main(int argc, char **argv)
{
    int i, all = 0, break_it = 0, n_given = 0;
    (void)diagrams_main;
    memset(&C, 0, sizeof C);
    C.kind = COLL_ALLREDUCE; C.H = 2; C.L = 3; C.n = 12; C.checks = 1;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--svg") == 0) return i + 1 < argc ? write_svgs(argv[i + 1]) : usage("--svg needs a folder", "");
        if (strcmp(argv[i], "--all") == 0) all = 1;
        else if (strcmp(argv[i], "--break") == 0) break_it = 1;
        else if (read_arg(argv[i], &n_given)) return 2;
    }
    if (all) {
        trace_all(break_it);
        printf("hier_trace: %d passed, %d failed\n", passed, failed);
        return failed != 0;
    }
    C.p = C.H * C.L;
    if (!n_given && C.kind != COLL_ALLREDUCE && C.kind != COLL_BROADCAST && C.kind != COLL_REDUCE) C.n = 2;
    if (C.kind == COLL_BARRIER) C.n = 0;
    if (C.H < 1 || C.L < 1 || C.p > MAXP || C.n > MAXN || C.root < 0 || C.root >= C.p)
        return usage("hosts x local must be 1..16 ranks, n at most 64, root a rank", "");
    trace_one(break_it);
    if (failed) printf("hier_trace: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
