/* fit_auto.c - fits AUTO's alpha-beta-gamma constants to measured times.

       build/tools/fit_auto [-i impl,...] [-d per_decade] [-a alpha] [-m] [-t a,b,g] [-q] table.tsv...

   Reads bench tables (the columns of bench/bench_common.h; several tables,
   or one table of several passes: each cell's median across them, as
   bench/auto.sh takes) that hold, for a row (impl, collective, ranks,
   bytes), the times of forced algorithms. For every point of a log-spaced
   grid it asks the library itself what AUTO would run on each row
   (coll_init at rank 0 of p ranks over a port that does nothing, the
   bench's scratch size and arguments, coll_set_tuning, coll_choose) and
   scores the ratio time(pick) / time(fastest forced algorithm). The
   constants kept are those with (a) the fewest rows over 1.10, then (b) the
   lowest worst ratio, then (c) the lowest mean log ratio. Prints the table
   before (coll_init's defaults) and after, the summary of both, and the
   rows that no point of the grid brings to 1.10, with what AUTO can pick
   there.

   Every cost formula of coll.h is linear in (alpha, beta, gamma), so AUTO's
   pick depends on the ratios alone: the grid is over beta/alpha (1e-9 ..
   1e-1 per byte) and gamma/beta (0 and 1e-3 .. 1e3), and alpha is an
   anchor (-a, default coll_init's) that scales all three.

   -i  impls to fit (default: every impl with forced rows)
   -d  grid points per decade (default 8)
   -a  alpha to report the fitted constants at (seconds)
   -m  each cell's minimum across passes instead of its median
   -t  alpha,beta,gamma: score these constants as "after" instead of the
       fitted ones (to check constants fitted on other passes)
   -q  summary and unfixable rows only

   make fit-auto (FIT_TABLES=..., FIT_ARGS=...) */
#define COLL_IMPLEMENTATION
#include "../coll.h"
#include "../bench/bench_common.h"
#include "../bench/bench_coll.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GOAL 1.10
#define MAX_ROWS 4096
#define MAX_ALGOS 16
#define MAX_SAMPLES 32

typedef struct cell {
    char algo[64];
    double t[MAX_SAMPLES];
    int n;
    double med;
} cell;

typedef struct row {
    char impl[64];
    int kind, p;
    size_t bytes;
    cell c[MAX_ALGOS];
    int nc;
    int best;           /* the fastest forced cell */
    int autoc;          /* the AUTO cell, -1 if none */
} row;

static row rows[MAX_ROWS];
static int nrows;
static const char *impls[16];
static int nimpls;
static int use_min;

static int impl_wanted(const char *s)
{
    int i;
    if (nimpls == 0) return 1;
    for (i = 0; i < nimpls; i++)
        if (strcmp(impls[i], s) == 0) return 1;
    return 0;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    double w[MAX_SAMPLES > 4096 ? MAX_SAMPLES : 4096];
    memcpy(w, v, (size_t)n * sizeof *v);
    qsort(w, (size_t)n, sizeof *w, cmpd);
    return n % 2 ? w[n / 2] : (w[n / 2 - 1] + w[n / 2]) / 2;
}

static row *row_of(const char *impl, int kind, int p, size_t bytes)
{
    int i;
    for (i = 0; i < nrows; i++)
        if (rows[i].kind == kind && rows[i].p == p && rows[i].bytes == bytes &&
            strcmp(rows[i].impl, impl) == 0) return &rows[i];
    if (nrows == MAX_ROWS) return 0;
    memset(&rows[nrows], 0, sizeof rows[nrows]);
    snprintf(rows[nrows].impl, sizeof rows[nrows].impl, "%s", impl);
    rows[nrows].kind = kind; rows[nrows].p = p; rows[nrows].bytes = bytes;
    return &rows[nrows++];
}

static void read_table(const char *path)
{
    FILE *f = fopen(path, "r");
    char line[1024];
    if (!f) { perror(path); exit(2); }
    while (fgets(line, sizeof line, f)) {
        char impl[64], coll[64], algo[64], check[64];
        int p, kind, i;
        unsigned long long bytes;
        double t, ab, bb;
        row *r;
        if (sscanf(line, "%63[^\t]\t%63[^\t]\t%63[^\t]\t%d\t%llu\t%lf\t%lf\t%lf\t%63s",
                   impl, coll, algo, &p, &bytes, &t, &ab, &bb, check) != 9) continue;
        if (strncmp(impl, "coll-", 5) != 0 || strcmp(check, "ok") != 0 || !(t > 0)) continue;
        if (!impl_wanted(impl) || (kind = bench_kind_by_name(coll)) < 0) continue;
        if (!(r = row_of(impl, kind, p, (size_t)bytes))) continue;
        for (i = 0; i < r->nc && strcmp(r->c[i].algo, algo) != 0; i++) {}
        if (i == r->nc) {
            if (r->nc == MAX_ALGOS) continue;
            snprintf(r->c[r->nc++].algo, sizeof r->c[0].algo, "%s", algo);
        }
        if (r->c[i].n < MAX_SAMPLES) r->c[i].t[r->c[i].n++] = t;
    }
    fclose(f);
}

/* Medians, the fastest forced cell; drops rows without a forced cell. */
static void settle(void)
{
    int i, j, k = 0;
    for (i = 0; i < nrows; i++) {
        row *r = &rows[i];
        r->best = -1; r->autoc = -1;
        for (j = 0; j < r->nc; j++) {
            r->c[j].med = use_min ? r->c[j].t[0] : median(r->c[j].t, r->c[j].n);
            if (use_min) { int k2; for (k2 = 1; k2 < r->c[j].n; k2++) if (r->c[j].t[k2] < r->c[j].med) r->c[j].med = r->c[j].t[k2]; }
            if (strcmp(r->c[j].algo, "auto") == 0) { r->autoc = j; continue; }
            if (r->best < 0 || r->c[j].med < r->c[r->best].med) r->best = j;
        }
        if (r->best >= 0) rows[k++] = *r;
    }
    nrows = k;
}

/* ---- asking the library ------------------------------------------------- */

static int never(void *c, int p, const void *b, size_t n) { (void)c; (void)p; (void)b; (void)n; return COLL_ERR_IO; }
static int never_r(void *c, int p, void *b, size_t n) { (void)c; (void)p; (void)b; (void)n; return COLL_ERR_IO; }
static double scratch[BENCH_COLL_SCRATCH / sizeof(double)];
static coll_comm comms[MAX_ROWS];

static void init_comms(void)
{
    static coll_port port;
    int i;
    port.send = never; port.recv = never_r;
    for (i = 0; i < nrows; i++)
        if (coll_init(&comms[i], 0, rows[i].p, &port, scratch, sizeof scratch) != COLL_OK) {
            fprintf(stderr, "fit_auto: coll_init p=%d failed\n", rows[i].p);
            exit(2);
        }
}

/* AUTO's pick on row i under t: the index of its cell, -1 if unmeasured. */
static int pick(int i, const coll_tuning *t, coll_algo *out)
{
    row *r = &rows[i];
    coll_args a;
    coll_algo g;
    const char *name;
    int j;
    if (coll_set_tuning(&comms[i], t) != COLL_OK) return -1;
    bench_coll_args(&a, r->kind, COLL_ALGO_AUTO, NULL, NULL, bench_count(r->kind, r->p, r->bytes), r->p);
    g = coll_choose(&comms[i], &a);
    if (out) *out = g;
    name = g == COLL_ALGO_AUTO ? "auto" : coll_algo_name(g);
    for (j = 0; name && j < r->nc; j++)
        if (j != r->autoc && strcmp(r->c[j].algo, name) == 0) return j;
    return -1;
}

/* The model's cost of running `algo` on row i under t, or -1 where AUTO
   never weighs it (no cost formula, or it needs what only the caller
   gives: args.group, in place, a workspace). Reads coll.h's private cost
   rows (as tools/trace.c walks them): for the diagnosis of rows that no
   constants fix, never for the fit itself, which asks coll_choose. */
static double model_cost(int i, const char *algo, const coll_tuning *t)
{
    row *r = &rows[i];
    coll_args a;
    coll__plan pl;
    size_t es = 0;
    const char *why;
    const coll__entry *e;
    coll_tuning keep = comms[i].tune;
    double cost;
    coll_algo g = bench_coll_algo_by_name(algo);
    if (g == COLL_ALGO_COUNT || g == COLL_ALGO_AUTO) return -1;
    bench_coll_args(&a, r->kind, COLL_ALGO_AUTO, NULL, NULL, bench_count(r->kind, r->p, r->bytes), r->p);
    if (coll__plan_args(&comms[i], &a, &pl, &es, &why) != COLL_OK) return -1;
    e = coll__entry_of(a.kind, g);
    if (!e || (e->needs & COLL__CALLER) || coll__fits(&comms[i], &pl, e, es, 0, &why) != COLL_OK) return -1;
    cost = e->cost(&pl, (double)coll__total_bytes(&pl, es), t);
    comms[i].tune = keep;
    return cost >= 1e299 ? -1 : cost;
}

/* An unmeasured pick counts as this bad. */
#define UNMEASURED 1e3

static double ratio_of(int i, int j)
{
    return j < 0 ? UNMEASURED : rows[i].c[j].med / rows[i].c[rows[i].best].med;
}

typedef struct score {
    int over;
    double worst, meanlog, median;
} score;

static score evaluate(const coll_tuning *t, int *picks)
{
    static double rs[MAX_ROWS];
    score s;
    int i;
    s.over = 0; s.worst = 0; s.meanlog = 0;
    for (i = 0; i < nrows; i++) {
        int j = pick(i, t, 0);
        double x = ratio_of(i, j);
        if (picks) picks[i] = j;
        rs[i] = x;
        if (x > GOAL) s.over++;
        if (x > s.worst) s.worst = x;
        s.meanlog += log(x);
    }
    s.meanlog /= nrows ? nrows : 1;
    s.median = nrows ? median(rs, nrows) : 0;
    return s;
}

static int better(const score *a, const score *b)
{
    if (a->over != b->over) return a->over < b->over;
    if (a->worst != b->worst) return a->worst < b->worst - 1e-12;
    return a->meanlog < b->meanlog - 1e-12;
}

static void grid(double lo, double hi, int per, double *v, int *n, int zero)
{
    int k, m = (int)floor(log10(hi / lo) * per + 0.5);
    *n = 0;
    if (zero) v[(*n)++] = 0;
    for (k = 0; k <= m; k++) v[(*n)++] = lo * pow(10.0, (double)k / per);
}

static int row_cmp(const void *x, const void *y)
{
    const row *a = (const row *)x, *b = (const row *)y;
    int c = strcmp(a->impl, b->impl);
    if (c) return c;
    if (a->kind != b->kind) return a->kind - b->kind;
    if (a->p != b->p) return a->p - b->p;
    return a->bytes < b->bytes ? -1 : a->bytes > b->bytes;
}

static const char *cname(int i, int j) { return j < 0 ? "(unmeasured)" : rows[i].c[j].algo; }

/* Why AUTO never picks row i's fastest algorithm at any grid point. */
static const char *diagnose(int i, const double *xv, int nx, const double *yv, int ny, double anchor)
{
    static char why[256];
    row *r = &rows[i];
    const char *f = r->c[r->best].algo;
    double lo = 1e300, hi = 0;
    const char *other = "";
    int ix, iy;
    for (ix = 0; ix < nx; ix++)
        for (iy = 0; iy < ny; iy++) {
            coll_tuning t;
            coll_algo g;
            int j;
            double cf, cp;
            t.alpha = anchor; t.beta = anchor * xv[ix]; t.gamma = t.beta * yv[iy];
            j = pick(i, &t, &g);
            cf = model_cost(i, f, &t);
            if (cf < 0) {
                snprintf(why, sizeof why, "AUTO never weighs %s (no cost formula, or it needs %s)", f,
                         strcmp(f, "hierarchical") == 0 ? "args.group" : "what only the caller gives");
                return why;
            }
            cp = model_cost(i, j >= 0 ? r->c[j].algo : "auto", &t);
            if (cp <= 0) continue;
            if (cf / cp < lo) { lo = cf / cp; other = r->c[j].algo; }
            if (cf / cp > hi) hi = cf / cp;
        }
    if (lo < 1 + 1e-9)
        snprintf(why, sizeof why, "%s costs the same as %s in the model here (a tie: the registry's "
                 "order picks %s)", f, other, other);
    else
        snprintf(why, sizeof why, "the model prices %s %.2f..%.3gx the pick at every constant "
                 "(its formula, or the pick's, misses what this machine does)", f, lo, hi);
    return why;
}

int main(int argc, char **argv)
{
    static double xv[256], yv[256];
    static int pick0[MAX_ROWS], pick1[MAX_ROWS];
    static double reach[MAX_ROWS];             /* the best ratio any grid point gives a row */
    static unsigned reachable[MAX_ROWS];       /* cells some grid point picks (bit mask)     */
    static double rs0[MAX_ROWS];
    int per = 8, quiet = 0, nx, ny, ix, iy, i, j, argi, unfix = 0, nplat = 0;
    double anchor = 0, xlo = 1e300, xhi = 0, ylo = 1e300, yhi = -1, measured_worst = 0;
    int measured_over = 0, measured_n = 0;
    coll_tuning t0, t, best_t, grid_t, given;
    int have_given = 0;
    score s0, s, best_s;
    coll_comm probe;
    coll_port port;

    for (argi = 1; argi < argc && argv[argi][0] == '-'; argi++) {
        if (strcmp(argv[argi], "-q") == 0) quiet = 1;
        else if (strcmp(argv[argi], "-m") == 0) use_min = 1;
        else if (strcmp(argv[argi], "-d") == 0 && argi + 1 < argc) per = atoi(argv[++argi]);
        else if (strcmp(argv[argi], "-a") == 0 && argi + 1 < argc) anchor = atof(argv[++argi]);
        else if (strcmp(argv[argi], "-t") == 0 && argi + 1 < argc) {
            have_given = sscanf(argv[++argi], "%lf,%lf,%lf", &given.alpha, &given.beta, &given.gamma) == 3;
            if (!have_given) argi = argc;     /* usage */
        }
        else if (strcmp(argv[argi], "-i") == 0 && argi + 1 < argc) {
            char *sp = argv[++argi], *tok;
            for (tok = strtok(sp, ","); tok && nimpls < 16; tok = strtok(NULL, ",")) impls[nimpls++] = tok;
        } else break;
    }
    if (argi >= argc || per < 1 || per > 25 || anchor < 0) {
        fprintf(stderr, "usage: fit_auto [-i impl,...] [-d per_decade] [-a alpha] [-m] [-t a,b,g] [-q] table.tsv...\n");
        return 2;
    }
    for (; argi < argc; argi++) read_table(argv[argi]);
    settle();
    if (nrows == 0) { fprintf(stderr, "fit_auto: no row has forced algorithms\n"); return 1; }
    qsort(rows, (size_t)nrows, sizeof rows[0], row_cmp);
    init_comms();

    /* the defaults: what coll_init sets */
    memset(&port, 0, sizeof port);
    port.send = never; port.recv = never_r;
    coll_init(&probe, 0, 2, &port, scratch, sizeof scratch);
    t0 = probe.tune;
    if (anchor == 0) anchor = t0.alpha;
    s0 = evaluate(&t0, pick0);
    for (i = 0; i < nrows; i++) rs0[i] = ratio_of(i, pick0[i]);

    grid(1e-9, 1e-1, per, xv, &nx, 0);        /* beta / alpha  */
    grid(1e-3, 1e3, per, yv, &ny, 1);         /* gamma / beta  */
    for (i = 0; i < nrows; i++) reach[i] = 1e300;
    best_s = s0; best_t = t0;
    for (ix = 0; ix < nx; ix++)
        for (iy = 0; iy < ny; iy++) {
            t.alpha = anchor; t.beta = anchor * xv[ix]; t.gamma = t.beta * yv[iy];
            s = evaluate(&t, pick1);
            for (i = 0; i < nrows; i++) {
                double x = ratio_of(i, pick1[i]);
                if (x < reach[i]) reach[i] = x;
                if (pick1[i] >= 0) reachable[i] |= 1u << pick1[i];
            }
            if (better(&s, &best_s)) { best_s = s; best_t = t; }
        }
    /* the plateau: every grid point as good on (a) and (b) */
    for (ix = 0; ix < nx; ix++)
        for (iy = 0; iy < ny; iy++) {
            t.alpha = anchor; t.beta = anchor * xv[ix]; t.gamma = t.beta * yv[iy];
            s = evaluate(&t, 0);
            if (s.over != best_s.over || s.worst > best_s.worst + 1e-12) continue;
            nplat++;
            if (xv[ix] < xlo) xlo = xv[ix];
            if (xv[ix] > xhi) xhi = xv[ix];
            if (yv[iy] < ylo) ylo = yv[iy];
            if (yv[iy] > yhi) yhi = yv[iy];
        }
    grid_t = best_t;
    if (have_given) best_t = given;
    s = evaluate(&best_t, pick1);

    if (!quiet) {
        printf("impl\tcollective\tranks\tbytes\tfastest\tfastest_us\tauto_us\tdefault_pick\tdefault_ratio\tfitted_pick\tfitted_ratio\n");
        for (i = 0; i < nrows; i++) {
            row *r = &rows[i];
            printf("%s\t%s\t%d\t%zu\t%s\t%.3f\t", r->impl, bench_kind_names[r->kind], r->p, r->bytes,
                   r->c[r->best].algo, r->c[r->best].med);
            if (r->autoc >= 0) printf("%.3f\t", r->c[r->autoc].med); else printf("-\t");
            printf("%s\t%.2f\t%s\t%.2f%s\n", cname(i, pick0[i]), rs0[i], cname(i, pick1[i]),
                   ratio_of(i, pick1[i]), ratio_of(i, pick1[i]) > GOAL ? "\tSLOW" : "");
        }
    }
    for (i = 0; i < nrows; i++)
        if (rows[i].autoc >= 0) {
            double x = rows[i].c[rows[i].autoc].med / rows[i].c[rows[i].best].med;
            measured_n++;
            if (x > GOAL) measured_over++;
            if (x > measured_worst) measured_worst = x;
        }
    printf("# %d rows (cells: %s across passes); grid %d x %d: beta/alpha 1e-9..1e-1 /B, gamma/beta 0 and 1e-3..1e3, %d a decade\n",
           nrows, use_min ? "minimum" : "median", nx, ny, per);
    if (measured_n)
        printf("# measured AUTO rows (auto/fastest): %d of %d over %.2f, worst %.2f\n",
               measured_over, measured_n, GOAL, measured_worst);
    printf("# defaults alpha %.3g beta %.3g gamma %.3g: %d of %d over %.2f, worst %.2f, median %.3f\n",
           t0.alpha, t0.beta, t0.gamma, s0.over, nrows, GOAL, s0.worst, s0.median);
    printf("# %s alpha %.3g beta %.3g gamma %.3g: %d of %d over %.2f, worst %.2f, median %.3f\n",
           have_given ? "given   " : "fitted  ", best_t.alpha, best_t.beta, best_t.gamma, s.over, nrows, GOAL, s.worst, s.median);
    if (have_given) printf("# (the grid's best: alpha %.3g beta %.3g gamma %.3g, %d over, worst %.2f)\n",
                           grid_t.alpha, grid_t.beta, grid_t.gamma, best_s.over, best_s.worst);
    printf("# (alpha/beta %.3g B, gamma/beta %.3g; %d grid points as good: alpha/beta %.3g..%.3g B, gamma/beta %.3g..%.3g)\n",
           grid_t.alpha / grid_t.beta, grid_t.gamma / grid_t.beta, nplat, 1 / xhi, 1 / xlo, ylo, yhi);
    /* rows no grid point brings to the goal: why */
    for (i = 0; i < nrows; i++) {
        row *r = &rows[i];
        if (reach[i] <= GOAL) continue;
        if (!unfix++) printf("# rows no constants bring to %.2f (best reachable ratio; what AUTO can pick):\n", GOAL);
        printf("#   %s %s p=%d %zu B: fastest %s %.3f us, best reachable %.2f; AUTO picks only {",
               r->impl, bench_kind_names[r->kind], r->p, r->bytes, r->c[r->best].algo, r->c[r->best].med, reach[i]);
        for (j = 0; j < r->nc; j++)
            if (reachable[i] >> j & 1) printf(" %s(%.2f)", r->c[j].algo, ratio_of(i, j));
        printf(" }\n#       why: %s\n", diagnose(i, xv, nx, yv, ny, anchor));
    }
    printf("# %d rows no constants fix\n", unfix);
    /* rows some point fixes but the fitted one does not: the model's trade-offs */
    for (i = 0, j = 0; i < nrows; i++) {
        row *r = &rows[i];
        if (reach[i] > GOAL || ratio_of(i, pick1[i]) <= GOAL) continue;
        if (!j++) printf("# rows some constants fix but not the fitted ones (fixing them breaks others):\n");
        printf("#   %s %s p=%d %zu B: fastest %s, fitted pick %s (%.2f)\n", r->impl,
               bench_kind_names[r->kind], r->p, r->bytes, r->c[r->best].algo, cname(i, pick1[i]),
               ratio_of(i, pick1[i]));
    }
    return 0;
}
