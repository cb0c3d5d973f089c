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

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

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

int main(int argc, char **argv)
{
    int i, k, want[NKINDS], reps = 5, bad = 0, argbad = 0, pi, confirm = 1;
    double budget = 0.02, margin = 5;
    size_t lo = 8, hi = (size_t)64 << 20, bytes;
    const char *klist = "all", *out = 0;
    char path[4096], name[64], about[512], *lines, load[64] = "?";
    size_t lcap = 65536, llen = 0;
#if defined(OPEN_MPI)
    const char *mpi = "openmpi";
#else
    const char *mpi = "mpich";
#endif
    for (k = 0; k < NKINDS; k++) {      /* every call through coll, this process only */
        char up[32];
        for (i = 0; kinds[k][i]; i++) up[i] = (char)(kinds[k][i] >= 'a' && kinds[k][i] <= 'z' ? kinds[k][i] - 32 : kinds[k][i]);
        up[i] = 0;
        snprintf(name, sizeof name, "COLL_MPI_MIN_%s", up);
        setenv(name, "0", 1);
    }
    setenv("COLL_MPI_ROUTE", "1", 1);
    setenv("COLL_MPI_VERIFY", "0", 1);
    setenv("COLL_MPI_THRESHOLDS", "", 1);
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    pi = p > 8 ? 8 : p;
    for (i = 1; i < argc; i += 2) {
        const char *v = i + 1 < argc ? argv[i + 1] : 0;
        if (!v) argbad = 1;
        else if (!strcmp(argv[i], "-k")) klist = v;
        else if (!strcmp(argv[i], "-o")) out = v;
        else if (!strcmp(argv[i], "-s")) argbad |= sscanf(v, "%zu:%zu", &lo, &hi) != 2 || lo < 1 || hi < lo || hi > ((size_t)1 << 30);
        else if (!strcmp(argv[i], "-t")) argbad |= (budget = atof(v) / 1000.0) <= 0;
        else if (!strcmp(argv[i], "-r")) argbad |= (reps = atoi(v)) < 1 || reps > MAXREPS;
        else if (!strcmp(argv[i], "-m")) argbad |= (margin = atof(v)) < 0;
        else if (!strcmp(argv[i], "-c")) argbad |= (confirm = atoi(v)) < 0 || confirm > 9;
        else argbad = 1;
    }
    for (k = 0; k < NKINDS; k++) {
        const char *at = strstr(klist, kinds[k]);
        size_t l = strlen(kinds[k]);
        want[k] = !strcmp(klist, "all");
        while (at && !want[k]) {
            if ((at == klist || at[-1] == ',') && (at[l] == 0 || at[l] == ',')) want[k] = 1;
            at = strstr(at + 1, kinds[k]);
        }
    }
    if (argbad) {
        if (rank == 0)
            fprintf(stderr, "coll_mpi_tune: usage: coll_mpi_tune [-o path] [-k all|allreduce,bcast,...] [-s lo:hi bytes, "
                    "hi <= 1 GiB] [-t ms] [-r reps 1..%d] [-m percent] [-c confirmations 0..9]\n", MAXREPS);
        MPI_Finalize();
        return 2;
    }
    /* preloaded, MPI_Allreduce is the drop-in's; without it, the MPI library's alias of PMPI_Allreduce */
    if (dlsym(RTLD_DEFAULT, "MPI_Allreduce") == dlsym(RTLD_DEFAULT, "PMPI_Allreduce")) {
        if (rank == 0)
            fprintf(stderr, "coll_mpi_tune: the drop-in is not preloaded (LD_PRELOAD=.../build/lib/libcoll_mpi_%s.so): "
                    "nothing to compare\n", mpi);
        MPI_Finalize();
        return 2;
    }
    if (!out) {
        if (!default_path(path, sizeof path, mpi)) {
            if (rank == 0) fprintf(stderr, "coll_mpi_tune: neither XDG_CONFIG_HOME nor HOME set: give -o path\n");
            MPI_Finalize();
            return 2;
        }
        out = path;
    }
    src = (float *)malloc(hi + 64 + (size_t)p * 4);
    dst = (float *)malloc(hi + 64 + (size_t)p * 4);
    cnt = (int *)malloc((size_t)p * sizeof(int));
    dsp = (int *)malloc((size_t)p * sizeof(int));
    lines = (char *)malloc(lcap);
    if (!src || !dst || !cnt || !dsp || !lines) MPI_Abort(MPI_COMM_WORLD, 2);
    lines[0] = 0;
    if (rank == 0) printf("# kind ranks bytes mpi_us coll_us ratio road (%s, %d ranks, median of %d, margin %g%%)\n",
                          mpi, p, reps, margin);
    for (k = 0; k < NKINDS; k++) {
        long long sz[MAXSIZES];
        int fast[MAXSIZES], ns = 0, all = 1, j;
        if (!want[k]) continue;
        for (bytes = lo; bytes <= hi && ns < MAXSIZES; bytes *= bytes < ((size_t)256 << 10) ? 8 : 4) {
            int vec = vector_kind(k), n = vec ? (int)(bytes / 4) : (int)(bytes / 4 / (size_t)p), iters, r, plain, pass;
            double t[2][MAXREPS], med[2] = { 0, 0 }, e, t1;
            size_t nf;
            if (n < 1) n = 1;
            nf = vec ? (size_t)n : (size_t)n * (size_t)p;
            for (plain = 1; plain >= 0; plain--) {
                fill(k, nf);
                call(k, n, plain);
                e = expect0(k);
                if (e >= 0 && dst[0] != (float)e) {
                    fprintf(stderr, "coll_mpi_tune: rank %d: %s %zu B %s: first element %g, want %g\n", rank, kinds[k],
                            bytes, plain ? "MPI" : "coll", dst[0], e);
                    bad++;
                }
            }
            t1 = timed(k, n, 1, 1);
            iters = t1 > 0 ? (int)(budget / t1) : 1000;
            if (iters < 1) iters = 1;
            if (iters > 5000) iters = 5000;
            PMPI_Bcast(&iters, 1, MPI_INT, 0, MPI_COMM_WORLD);
            sz[ns] = vec ? (long long)n * 4 : (long long)n * 4 * p;
            for (pass = 0; pass <= confirm; pass++) {  /* coll faster: measured again, as many times */
                for (r = 0; r < reps; r++) {    /* alternating: plain first, then coll first */
                    int first = r % 2 == 0;
                    t[!first][r] = timed(k, n, first, iters);
                    t[first][r] = timed(k, n, !first, iters);
                }
                med[0] = median(t[0], reps);    /* MPI */
                med[1] = median(t[1], reps);    /* coll */
                fast[ns] = med[1] * (1 + margin / 100) <= med[0];
                if (!fast[ns]) break;
            }
            all &= fast[ns];
            if (rank == 0) {
                printf("%s %d %lld %.2f %.2f %.2f %s\n", kinds[k], p, sz[ns], med[0] * 1e6, med[1] * 1e6,
                       med[1] > 0 ? med[0] / med[1] : 0, fast[ns] ? "coll" : "mpi");
                fflush(stdout);
            }
            ns++;
            if (k == 15) break;                 /* barrier: one size */
        }
        /* the line: runs of routed sizes as ranges */
        llen += (size_t)snprintf(lines + llen, lcap - llen, "%s %d", kinds[k], pi);
        if (local_kind(k)) llen += (size_t)snprintf(lines + llen, lcap - llen, all && ns ? " 0-\n" : " never\n");
        else {
            int nr = 0;
            for (i = 0; i < ns; i = j) {
                if (!fast[i]) { j = i + 1; continue; }
                for (j = i; j + 1 < ns && fast[j + 1]; j++) {}
                if (nr < MAXRANGES) {           /* more runs than the drop-in holds: the rest not routed */
                    llen += (size_t)snprintf(lines + llen, lcap - llen, " %lld-", i == 0 ? 0 : sz[i]);
                    if (j + 1 < ns) llen += (size_t)snprintf(lines + llen, lcap - llen, "%lld", sz[j]);
                    nr++;
                }
                j++;
            }
            llen += (size_t)snprintf(lines + llen, lcap - llen, nr ? "\n" : " never\n");
        }
    }
    PMPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        time_t now = time(0);
        FILE *la = fopen("/proc/loadavg", "r");
        if (la) { if (!fgets(load, sizeof load, la)) load[0] = 0; fclose(la); load[strcspn(load, "\n")] = 0; }
        snprintf(about, sizeof about, "%.24s UTC, %s, sizes %zu-%zu B, median of %d, margin %g%%, confirmed %d, load %s",
                 asctime(gmtime(&now)), mpi, lo, hi, reps, margin, confirm, load);
        if (bad) fprintf(stderr, "coll_mpi_tune: %d wrong results: %s not written\n", bad, out);
        else if (write_file(out, mpi, pi, lines, about)) bad = 1;
        else printf("# wrote %s (%d ranks)\n", out, pi);
    }
    PMPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(src); free(dst); free(cnt); free(dsp); free(lines);
    MPI_Finalize();
    return bad != 0;
}
