/* coll_mpi_tune.c - calibrate the MPI drop-in on the machine at hand

       make mpi-tune                      both MPIs, 2 and 4 ranks (MPI=, NP=)
       mpirun -np 2 -x LD_PRELOAD=build/lib/libcoll_mpi_openmpi.so \
              build/mpi/coll_mpi_tune.ompi [-o path] [-k list] [-s lo:hi]
                                           [-t ms] [-r reps] [-m percent] [-c n]

   An MPI program, run with the drop-in preloaded. For each collective the
   drop-in routes and each size (8 B to 64 MiB, the call's largest buffer
   as the drop-in counts it; up by 8x to 256 KiB, then by 4x) it times the
   MPI library alone (PMPI_Allreduce & co., which the drop-in does not
   intercept) against the same call through coll (MPI_Allreduce & co.,
   every call routed: it sets COLL_MPI_MIN_<NAME>=0 for itself before
   MPI_Init), on the same buffers, in `reps` repetitions (5) whose order
   alternates (plain first, then coll first, ...), each repetition as many
   calls as fill `ms` (20), the slowest rank's mean per call; each side's
   figure is the median of its repetitions. The first call of each road at
   each size is checked.

   A size routes to coll where coll's median times (1 + percent / 100)
   (5) is at most the MPI's, and again so in each of `confirmations` (1)
   more such measurements (noise that once favoured coll must do it
   twice). The row shows the last measurement made. Between two measured sizes the call routes only
   if both ends do; below the smallest and above the largest measured as
   there. gatherv, scatterv, alltoallv (no rank knows their size whole) and
   barrier route at every size or none: every size measured faster.

   It writes, on rank 0, a thresholds file version 2 (read by the drop-in
   at MPI_Init, coll_mpi_drop_in.c, di_read_thresholds):
       coll-mpi-thresholds 2
       allreduce 2 4096-262144 16777216-
       bcast 2 never
   one line per collective at this run's rank count (8: 8 and more); the
   lines of other rank counts already in the file are kept, so runs at 2
   and at 4 ranks build one file. Default path: the one the drop-in reads
   where COLL_MPI_THRESHOLDS is unset, $XDG_CONFIG_HOME/coll/mpi-thresholds-
   <mpi>, or $HOME/.config/coll/mpi-thresholds-<mpi> (<mpi>: openmpi,
   mpich). Rank counts never calibrated are not routed by such a file.
   stdout: a row per collective and size, "kind ranks bytes mpi_us coll_us
   ratio road". Exit 0 written; 1 a wrong result or the file not written;
   2 bad arguments or the drop-in not preloaded. */
#define _GNU_SOURCE
#include <mpi.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "bench_calls.h"

#define MAXREPS 101
#define MAXSIZES 24
#define MAXRANGES 6                 /* the drop-in's DI_RANGES */

/* the kinds whose size no rank knows whole, and barrier: all or nothing */
static int local_kind(int k) { return k == 6 || k == 8 || k == 10 || k == 15; }
/* the kinds whose size is the vector (else all ranks' blocks) */
static int vector_kind(int k) { return k == 0 || k == 1 || k == 2 || k == 13 || k == 14 || k == 15; }

/* mkdir -p of path's directory */
static int make_dirs(const char *path)
{
    char d[4096], *at;
    if (snprintf(d, sizeof d, "%s", path) >= (int)sizeof d) return -1;
    if (!(at = strrchr(d, '/')) || at == d) return 0;
    *at = 0;
    for (at = d + 1; *at; at++)
        if (*at == '/') {
            *at = 0;
            if (mkdir(d, 0755) && errno != EEXIST) return -1;
            *at = '/';
        }
    return mkdir(d, 0755) && errno != EEXIST ? -1 : 0;
}

static int default_path(char *path, size_t n, const char *mpi)
{
    const char *x = getenv("XDG_CONFIG_HOME"), *h = getenv("HOME");
    if (x && *x) return snprintf(path, n, "%s/coll/mpi-thresholds-%s", x, mpi) < (int)n;
    if (h && *h) return snprintf(path, n, "%s/.config/coll/mpi-thresholds-%s", h, mpi) < (int)n;
    return 0;
}

/* rank 0: the file at path with this rank count's lines replaced */
static int write_file(const char *path, const char *mpi, int pi, const char *lines, const char *about)
{
    char tmp[4200], line[1024], word[64];
    FILE *old = fopen(path, "r"), *f;
    int keep = 0, first = 1, r;
    if (make_dirs(path)) { fprintf(stderr, "coll_mpi_tune: cannot make the directory of %s\n", path); return 1; }
    snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
    if (!(f = fopen(tmp, "w"))) { fprintf(stderr, "coll_mpi_tune: cannot write %s\n", tmp); if (old) fclose(old); return 1; }
    fprintf(f, "coll-mpi-thresholds 2\n");
    fprintf(f, "# the MPI drop-in's calibration for %s on this machine, by coll_mpi_tune (make mpi-tune);\n", mpi);
    fprintf(f, "# collective, ranks (8: 8 and more), the sizes routed through coll (bytes, ends included;\n");
    fprintf(f, "# A-: from A up) or never; a rank count not listed is never routed\n");
    while (old && fgets(line, sizeof line, old)) {   /* a version 2 file: keep the other rank counts */
        char *at = line + strspn(line, " \t");
        if (first && *at != '#' && *at != '\n') {
            keep = !strncmp(at, "coll-mpi-thresholds 2", 21);
            first = 0;
            continue;
        }
        if (!keep) continue;
        if (!strncmp(at, "# at ", 5) && sscanf(at + 5, "%d", &r) == 1 && r != pi) fputs(line, f);
        else if (*at != '#' && sscanf(at, "%63s %d", word, &r) == 2 && r != pi) fputs(line, f);
    }
    if (old) fclose(old);
    fprintf(f, "# at %d ranks: %s\n%s", pi, about, lines);
    if (fclose(f) || rename(tmp, path)) { fprintf(stderr, "coll_mpi_tune: cannot write %s\n", path); remove(tmp); return 1; }
    return 0;
}

typedef struct {
    int reps, confirm;              /* -r repetitions, -c confirmations          */
    double budget, margin;          /* -t seconds a repetition's calls take, -m % */
    size_t lo, hi;                  /* -s lo:hi bytes                             */
    const char *klist, *out;        /* -k kinds, -o the file (0: the default)     */
} options;

#if defined(OPEN_MPI)
static const char *const mpi_name = "openmpi";
#else
static const char *const mpi_name = "mpich";
#endif

/* Every call through coll, in this process only: COLL_MPI_MIN_<NAME>=0
   for each kind, routing and no verify, the compiled thresholds (the
   file this run writes must not steer it). Before MPI_Init, which reads them. */
static void route_everything(void)
{
    char name[64], up[32];
    int i, k;
    for (k = 0; k < NKINDS; k++) {
        for (i = 0; kinds[k][i]; i++) up[i] = (char)(kinds[k][i] >= 'a' && kinds[k][i] <= 'z' ? kinds[k][i] - 32 : kinds[k][i]);
        up[i] = 0;
        snprintf(name, sizeof name, "COLL_MPI_MIN_%s", up);
        setenv(name, "0", 1);
    }
    setenv("COLL_MPI_ROUTE", "1", 1);
    setenv("COLL_MPI_VERIFY", "0", 1);
    setenv("COLL_MPI_THRESHOLDS", "", 1);
}

/* the options over their defaults; 1: one is missing, unknown or out of range */
static int parse(int argc, char **argv, options *o)
{
    int i, argbad = 0;
    for (i = 1; i < argc; i += 2) {
        const char *v = i + 1 < argc ? argv[i + 1] : 0;
        if (!v) argbad = 1;
        else if (!strcmp(argv[i], "-k")) o->klist = v;
        else if (!strcmp(argv[i], "-o")) o->out = v;
        else if (!strcmp(argv[i], "-s")) argbad |= sscanf(v, "%zu:%zu", &o->lo, &o->hi) != 2 || o->lo < 1 || o->hi < o->lo || o->hi > ((size_t)1 << 30);
        else if (!strcmp(argv[i], "-t")) argbad |= (o->budget = atof(v) / 1000.0) <= 0;
        else if (!strcmp(argv[i], "-r")) argbad |= (o->reps = atoi(v)) < 1 || o->reps > MAXREPS;
        else if (!strcmp(argv[i], "-m")) argbad |= (o->margin = atof(v)) < 0;
        else if (!strcmp(argv[i], "-c")) argbad |= (o->confirm = atoi(v)) < 0 || o->confirm > 9;
        else argbad = 1;
    }
    return argbad;
}

/* Why this run cannot go on, said by rank 0 (0: it can): bad arguments,
   the drop-in not preloaded (nothing to compare), no file to write (no
   -o and no default path; else o->out becomes the default, in path). */
static int cannot_run(int argbad, options *o, char *path, size_t n)
{
    if (argbad) {
        if (rank == 0)
            fprintf(stderr, "coll_mpi_tune: usage: coll_mpi_tune [-o path] [-k all|allreduce,bcast,...] [-s lo:hi bytes, "
                    "hi <= 1 GiB] [-t ms] [-r reps 1..%d] [-m percent] [-c confirmations 0..9]\n", MAXREPS);
        return 1;
    }
    /* preloaded, MPI_Allreduce is the drop-in's; without it, the MPI library's alias of PMPI_Allreduce */
    if (dlsym(RTLD_DEFAULT, "MPI_Allreduce") == dlsym(RTLD_DEFAULT, "PMPI_Allreduce")) {
        if (rank == 0)
            fprintf(stderr, "coll_mpi_tune: the drop-in is not preloaded (LD_PRELOAD=.../build/lib/libcoll_mpi_%s.so): "
                    "nothing to compare\n", mpi_name);
        return 1;
    }
    if (!o->out) {
        if (!default_path(path, n, mpi_name)) {
            if (rank == 0) fprintf(stderr, "coll_mpi_tune: neither XDG_CONFIG_HOME nor HOME set: give -o path\n");
            return 1;
        }
        o->out = path;
    }
    return 0;
}

/* One size of kind k: each road's first call checked (*bad counts the
   wrong ones), then `reps` repetitions a road in alternating order, the
   medians compared; again, up to `confirm` times, while coll stays
   faster. Rank 0 prints the row of the last measurement. *sz: the size
   as the drop-in counts it. Returns 1 where coll was faster every time. */
static int tune_size(int k, size_t bytes, const options *o, long long *sz, int *bad)
{
    static const char *const road[2] = { "coll", "MPI" };
    int vec = vector_kind(k), n = vec ? (int)(bytes / 4) : (int)(bytes / 4 / (size_t)p), iters, r, pass, fast = 0;
    double t[2][MAXREPS], med[2] = { 0, 0 };
    size_t nf;
    if (n < 1) n = 1;
    nf = vec ? (size_t)n : (size_t)n * (size_t)p;
    *bad += first_calls_wrong(k, n, nf, bytes, "coll_mpi_tune: ", road);
    iters = calls_for(k, n, o->budget, 1, 5000);
    *sz = vec ? (long long)n * 4 : (long long)n * 4 * p;
    for (pass = 0; pass <= o->confirm; pass++) {  /* coll faster: measured again, as many times */
        for (r = 0; r < o->reps; r++) {     /* alternating: plain first, then coll first */
            int first = r % 2 == 0;
            t[!first][r] = timed(k, n, first, iters);
            t[first][r] = timed(k, n, !first, iters);
        }
        med[0] = median(t[0], o->reps);     /* MPI */
        med[1] = median(t[1], o->reps);     /* coll */
        fast = med[1] * (1 + o->margin / 100) <= med[0];
        if (!fast) break;
    }
    if (rank == 0) {
        printf("%s %d %lld %.2f %.2f %.2f %s\n", kinds[k], p, *sz, med[0] * 1e6, med[1] * 1e6,
               med[1] > 0 ? med[0] / med[1] : 0, fast ? "coll" : "mpi");
        fflush(stdout);
    }
    return fast;
}

/* Kind k's line of the file at pi ranks, appended at lines + llen: the
   runs of measured sizes where coll was faster as ranges (the first from
   0, the last open where it reaches the largest size), at most MAXRANGES
   of them (the drop-in holds no more; the rest not routed), else never;
   the all-or-nothing kinds "0-" where every size was faster. Returns the
   new length. */
static size_t kind_line(char *lines, size_t llen, size_t lcap, int k, int pi, const long long *sz, const int *fast,
                        int ns, int all)
{
    int i, j, nr = 0;
    llen += (size_t)snprintf(lines + llen, lcap - llen, "%s %d", kinds[k], pi);
    if (local_kind(k)) return llen + (size_t)snprintf(lines + llen, lcap - llen, all && ns ? " 0-\n" : " never\n");
    for (i = 0; i < ns; i = j) {
        if (!fast[i]) { j = i + 1; continue; }
        for (j = i; j + 1 < ns && fast[j + 1]; j++) {}
        if (nr < MAXRANGES) {
            llen += (size_t)snprintf(lines + llen, lcap - llen, " %lld-", i == 0 ? 0 : sz[i]);
            if (j + 1 < ns) llen += (size_t)snprintf(lines + llen, lcap - llen, "%lld", sz[j]);
            nr++;
        }
        j++;
    }
    return llen + (size_t)snprintf(lines + llen, lcap - llen, nr ? "\n" : " never\n");
}

/* Kind k at each size from lo to hi (up by 8x to 256 KiB, then by 4x;
   barrier: one size), its line appended to lines; returns the new length. */
static size_t tune_kind(int k, const options *o, int pi, char *lines, size_t llen, size_t lcap, int *bad)
{
    long long sz[MAXSIZES];
    int fast[MAXSIZES], ns = 0, all = 1;
    size_t bytes;
    for (bytes = o->lo; bytes <= o->hi && ns < MAXSIZES; bytes *= bytes < ((size_t)256 << 10) ? 8 : 4) {
        fast[ns] = tune_size(k, bytes, o, &sz[ns], bad);
        all &= fast[ns];
        ns++;
        if (k == 15) break;                 /* barrier: one size */
    }
    return kind_line(lines, llen, lcap, k, pi, sz, fast, ns, all);
}

/* Every rank's wrong results summed; where there are none rank 0 writes
   the file, its lines headed by when, how and under what load they were
   measured. Returns, on every rank, nonzero where it was not written. */
static int finish(int bad, const options *o, int pi, const char *lines)
{
    char about[512], load[64] = "?";
    PMPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        time_t now = time(0);
        FILE *la = fopen("/proc/loadavg", "r");
        if (la) { if (!fgets(load, sizeof load, la)) load[0] = 0; fclose(la); load[strcspn(load, "\n")] = 0; }
        snprintf(about, sizeof about, "%.24s UTC, %s, sizes %zu-%zu B, median of %d, margin %g%%, confirmed %d, load %s",
                 asctime(gmtime(&now)), mpi_name, o->lo, o->hi, o->reps, o->margin, o->confirm, load);
        if (bad) fprintf(stderr, "coll_mpi_tune: %d wrong results: %s not written\n", bad, o->out);
        else if (write_file(o->out, mpi_name, pi, lines, about)) bad = 1;
        else printf("# wrote %s (%d ranks)\n", o->out, pi);
    }
    PMPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return bad;
}

int main(int argc, char **argv)
{
    options o = { 5, 1, 0.02, 5, 8, (size_t)64 << 20, "all", 0 };
    int k, want[NKINDS], bad = 0, argbad, pi;
    char path[4096], *lines;
    size_t lcap = 65536, llen = 0;
    route_everything();
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    pi = p > 8 ? 8 : p;
    argbad = parse(argc, argv, &o);
    pick_kinds(o.klist, want);
    if (cannot_run(argbad, &o, path, sizeof path)) { MPI_Finalize(); return 2; }
    alloc_buffers(o.hi);
    lines = (char *)malloc(lcap);
    if (!lines) MPI_Abort(MPI_COMM_WORLD, 2);
    lines[0] = 0;
    if (rank == 0) printf("# kind ranks bytes mpi_us coll_us ratio road (%s, %d ranks, median of %d, margin %g%%)\n",
                          mpi_name, p, o.reps, o.margin);
    for (k = 0; k < NKINDS; k++)
        if (want[k]) llen = tune_kind(k, &o, pi, lines, llen, lcap, &bad);
    bad = finish(bad, &o, pi, lines);
    free(src); free(dst); free(cnt); free(dsp); free(lines);
    MPI_Finalize();
    return bad != 0;
}
