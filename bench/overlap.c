/* overlap.c - how much of an all-reduce hides behind the caller's computation

       make bench-overlap
       build/bench/overlap [-p threads,tcp] [-n 2,4] [-s 1M,16M] [-r runs]
                           [-C bytes] [-P passes] [-S slices] [-k]

   Every rank repeats an all-reduce of S bytes (float32 sum, AUTO) and a
   fixed computation C: passes of a saxpy (y += a*x, a = +0.5 / -0.5 in
   turn, so y stays bounded) over a private working set of -C bytes (x and
   y, half each; 8 MiB by default). The amount of C (whole and part
   passes) is set per row from median timings (one pass, then twice more
   at the estimate: a long C runs slower per pass than a short one) so
   that C alone takes about as long as the all-reduce alone; -P fixes it.
   Four ways are timed:

     comm alone    coll_allreduce
     compute alone C
     sequential    coll_allreduce, then C
     overlapped    coll_start and one coll_progress (the first messages
                   go out), then C cut into -S slices (16) with one
                   coll_progress after each, then coll_waitall

   A run times each way for about 30 ms (the mean of as many iterations as
   a sequential one fits in that, one at least): comm alone, compute
   alone, then sequential and overlapped in an order that alternates from
   run to run, so a busy machine slows both alike. The ranks start each
   iteration together (a barrier of bench_shmctl.h, never the port being
   measured) and its time is the slowest rank's. The table gives the
   median over the runs (-r, at least 5 unless -k), in ms; gain =
   sequential / overlapped, and ideal = sequential / max(comm alone,
   compute alone): the gain if the overlapped iteration took only as long
   as the longer of its two parts.

   Every all-reduce's result is compared on every rank with a plain loop
   over the ranks' inputs (outside the timed part); a wrong element or an
   error code fails the run (exit status 1).

   Ranks: threads of one process over ports/coll_threads.h, or forked
   processes over ports/coll_tcp.h meeting on 127.0.0.1 (a fresh port and
   job token per world; bench_ports.h, as bench_coll.c). Both ports have
   isend/irecv/wait, so coll_progress never blocks.

   -k: correctness only: tiny sizes, one run, one pass of a small C, every
   way once per size, ranks 1 to 4 unless -n says; ends with
   "overlap: N passed, N failed". */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define COLL_IMPLEMENTATION
#include "../coll.h"
#include "bench_common.h"
#include "bench_shmctl.h"
#include "bench_ports.h"

#define OV_TIMEOUT_MS 60000u
#define OV_SCRATCH    (256u << 10)   /* as bench_coll.h: segments of 128 KiB */
#define OV_MAX_RUNS   101
#define OV_MAX_ROWS   64
#define OV_RUN_S      0.03           /* a run of one way lasts about this long */

enum { W_COMM, W_COMP, W_SEQ, W_OVL, W_COUNT };

typedef struct ov_row {
    char port[16];
    int p;
    size_t bytes;
    double passes;                   /* C: passes over the working set        */
    double med[W_COUNT];             /* seconds                               */
} ov_row;

typedef struct ov_shared {           /* shared with forked ranks (mmap)       */
    int nrows;
    ov_row rows[OV_MAX_ROWS];
    int passed, failed;
} ov_shared;

typedef struct config {
    const char *port;
    int p;
    size_t sizes[BENCH_MAX_SIZES];
    int nsizes;
    int runs, slices, check_only;
    double passes;                   /* 0: calibrate per row                  */
    size_t comp_bytes;
    ov_shared *out;
} config;

/* One rank's state. */
typedef struct rk {
    config *cf;
    bench_shm_rank me;
    coll_comm c;
    float *src, *dst, *ref, *x, *y;
    size_t count, n;                 /* all-reduce elements; x and y elements */
    size_t work;                     /* C's items: `work / n` passes          */
    size_t checked, wrong;
    int err;                         /* first error code from coll            */
} rk;

static volatile float ov_sink;

/* Work items [lo, hi) of C: item j is element j % n of pass j / n. */
static void compute(rk *k, size_t lo, size_t hi)
{
    float *x = k->x, *y = k->y;
    size_t n = k->n;
    while (lo < hi) {
        size_t pass = lo / n, i = lo % n, end = n - i < hi - lo ? n : i + (hi - lo);
        float a = pass % 2 ? -0.5f : 0.5f;
        for (; i < end; i++) y[i] += a * x[i];
        lo += end - lo % n;
    }
    ov_sink = y[0];
}

static int allreduce(rk *k)
{
    return coll_allreduce(&k->c, k->src, k->dst, k->count, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
}

/* Start the all-reduce, progress it between slices of C, wait for it. */
static int overlapped(rk *k)
{
    coll_request q;
    coll_args a;
    size_t work = k->work;
    int s, rc, done;
    memset(&a, 0, sizeof a);
    a.kind = COLL_ALLREDUCE; a.algo = COLL_ALGO_AUTO;
    a.src = k->src; a.dst = k->dst; a.count = k->count;
    a.dtype = COLL_FLOAT32; a.op = COLL_SUM;
    if ((rc = coll_start(&q, &k->c, &a)) != COLL_OK) return rc;
    rc = coll_progress(&q);
    done = rc != COLL_AGAIN;
    for (s = 0; s < k->cf->slices; s++) {
        compute(k, work * (size_t)s / (size_t)k->cf->slices,
                work * (size_t)(s + 1) / (size_t)k->cf->slices);
        if (!done) { rc = coll_progress(&q); done = rc != COLL_AGAIN; }
    }
    /* coll_waitall returns only what it drove to the end itself */
    return done ? rc : coll_waitall(&q, 1);
}

static void check(rk *k, int rc)
{
    size_t i, bad = 0;
    k->checked++;
    if (rc != COLL_OK) {
        if (!k->err) k->err = rc;
        k->wrong++;
        return;
    }
    for (i = 0; i < k->count; i++) bad += k->dst[i] != k->ref[i];
    if (bad) {
        fprintf(stderr, "overlap: %s p=%d rank %d: %zu of %zu elements wrong (%zu B)\n",
                k->cf->port, k->cf->p, k->me.rank, bad, k->count, k->count * sizeof(float));
        k->wrong++;
    }
}

/* One way, timed from a common start; the slowest rank's seconds. */
static double timed(rk *k, int way)
{
    double t0, t;
    int rc = COLL_OK;
    if (way != W_COMP) bench_poison(k->dst, k->count);
    bench_shm_barrier(&k->me);
    t0 = bench_now();
    switch (way) {
    case W_COMM: rc = allreduce(k); break;
    case W_COMP: compute(k, 0, k->work); break;
    case W_SEQ:  rc = allreduce(k); compute(k, 0, k->work); break;
    case W_OVL:  rc = overlapped(k); break;
    }
    t = bench_now() - t0;
    if (way != W_COMP) check(k, rc);
    return bench_shm_max(&k->me, t);
}

/* The mean of `iters` timed iterations of one way. */
static double mean(rk *k, int way, int iters)
{
    double sum = 0;
    int i;
    for (i = 0; i < iters; i++) sum += timed(k, way);
    return sum / iters;
}

/* One size: calibrate C, then the runs. Returns 0, or 1 after an error
   or a wrong result on any rank (every rank returns the same). */
static int row(rk *k, size_t bytes, ov_row *out)
{
    config *cf = k->cf;
    double t[W_COUNT][OV_MAX_RUNS], tc[5], tp[5];
    size_t i;
    int r, w, p = cf->p, iters = 1;

    k->count = bytes / sizeof(float) ? bytes / sizeof(float) : 1;
    bench_fill(k->src, k->count, k->me.rank);
    for (i = 0; i < k->count; i++) {            /* the plain loop */
        float s = 0;
        for (r = 0; r < p; r++) s += bench_value(r, i);
        k->ref[i] = s;
    }
    k->work = k->n;                              /* one pass, to calibrate */
    for (r = 0; r < 2; r++) { timed(k, W_COMM); timed(k, W_COMP); }   /* warm-up, checked */
    if (cf->passes > 0) k->work = (size_t)(cf->passes * (double)k->n + 0.5);
    else {
        /* from one pass, then twice from C at the estimate: a long C runs
           slower per pass than a short one (caches, a shared machine) */
        double m, tcomm;
        int round;
        for (r = 0; r < 5; r++) { tc[r] = timed(k, W_COMM); tp[r] = timed(k, W_COMP); }
        tcomm = bench_median(tc, 5);
        for (round = 0; round < 3; round++) {
            m = tcomm / bench_median(tp, round ? 3 : 5);   /* the same on every rank */
            if (m > 100000) m = 100000;
            k->work = (size_t)(m * (double)k->work + 0.5);
            if (k->work < 1) k->work = 1;
            if (round == 2) break;
            for (r = 0; r < 3; r++) { tc[r] = timed(k, W_COMM); tp[r] = timed(k, W_COMP); }
            tcomm = (2 * tcomm + bench_median(tc, 3)) / 3;
        }
    }
    if (k->work < 1) k->work = 1;
    if (!cf->check_only) {          /* iterations per run: about OV_RUN_S of sequential */
        double est = timed(k, W_SEQ);
        iters = est > 0 && est < OV_RUN_S ? (int)(OV_RUN_S / est + 0.999) : 1;
        if (iters > 1000) iters = 1000;
    }
    if (bench_shm_max(&k->me, (double)(k->err || k->wrong)) > 0) return 1;
    for (r = 0; r < cf->runs; r++) {
        t[W_COMM][r] = mean(k, W_COMM, iters);
        t[W_COMP][r] = mean(k, W_COMP, iters);
        if (r % 2) { t[W_OVL][r] = mean(k, W_OVL, iters); t[W_SEQ][r] = mean(k, W_SEQ, iters); }
        else       { t[W_SEQ][r] = mean(k, W_SEQ, iters); t[W_OVL][r] = mean(k, W_OVL, iters); }
        if (bench_shm_max(&k->me, (double)(k->err || k->wrong)) > 0) return 1;
    }
    if (k->me.rank == 0) {
        snprintf(out->port, sizeof out->port, "%s", cf->port);
        out->p = p;
        out->bytes = k->count * sizeof(float);
        out->passes = (double)k->work / (double)k->n;
        for (w = 0; w < W_COUNT; w++) out->med[w] = bench_median(t[w], cf->runs);
        if (!cf->check_only)
            fprintf(stderr, "overlap: %s p=%d %zu B: C = %.2f saxpy passes, %d iterations per run\n",
                    cf->port, p, out->bytes, out->passes, iters);
    }
    return 0;
}

static int rank_body(bench_world *w, int rank, coll_port *port)
{
    static rk ks[BENCH_MAX_RANKS];   /* one per thread; a forked rank has its own copy */
    config *cf = (config *)w->arg;
    rk *k = &ks[rank];
    size_t maxb = 0, j;
    unsigned char *scratch;
    int i, rc, bad = 0, base;

    memset(k, 0, sizeof *k);
    k->cf = cf;
    k->me.s = w->shm; k->me.rank = rank;
    for (i = 0; i < cf->nsizes; i++) if (cf->sizes[i] > maxb) maxb = cf->sizes[i];
    maxb = maxb / sizeof(float) + 1;
    k->n = cf->comp_bytes / (2 * sizeof(float)) ? cf->comp_bytes / (2 * sizeof(float)) : 1;
    k->src = (float *)malloc(maxb * sizeof(float));
    k->dst = (float *)malloc(maxb * sizeof(float));
    k->ref = (float *)malloc(maxb * sizeof(float));
    k->x = (float *)malloc(k->n * sizeof(float));
    k->y = (float *)malloc(k->n * sizeof(float));
    scratch = (unsigned char *)malloc(OV_SCRATCH);
    rc = (!k->src || !k->dst || !k->ref || !k->x || !k->y || !scratch)
         ? COLL_ERR_NOSPC : coll_init(&k->c, rank, cf->p, port, scratch, OV_SCRATCH);
    if (k->x && k->y)
        for (j = 0; j < k->n; j++) { k->x[j] = (float)(j % 7) - 3.0f; k->y[j] = 1.0f; }
    if (bench_shm_max(&k->me, rc ? 1.0 : 0.0) > 0) {
        if (rank == 0) fprintf(stderr, "overlap: %s p=%d: set-up failed (%d)\n", cf->port, cf->p, rc);
        bad = 1;
    } else {
        base = cf->out->nrows;                  /* read by all before rank 0 adds rows */
        bench_shm_barrier(&k->me);
        for (i = 0; i < cf->nsizes && !bad; i++) {
            ov_row *o = base + i < OV_MAX_ROWS ? &cf->out->rows[base + i] : NULL;
            ov_row dummy;
            bad = row(k, cf->sizes[i], o ? o : &dummy);
            if (!bad && rank == 0 && o) cf->out->nrows = base + i + 1;
        }
        if (k->err)
            fprintf(stderr, "overlap: %s p=%d rank %d: %s (%s)\n", cf->port, cf->p, rank,
                    coll_result_str(k->err), coll_last_error(&k->c));
        bench_shm_barrier(&k->me);
        if (rank == 0) {       /* every rank's counts: summed through the control block */
            cf->out->passed += (int)bench_shm_sum(&k->me, (double)(k->checked - k->wrong));
            cf->out->failed += (int)bench_shm_sum(&k->me, (double)k->wrong);
        } else {
            bench_shm_sum(&k->me, (double)(k->checked - k->wrong));
            bench_shm_sum(&k->me, (double)k->wrong);
        }
    }
    free(k->src); free(k->dst); free(k->ref); free(k->x); free(k->y); free(scratch);
    return bad || k->wrong || k->err ? 1 : 0;
}

/* One port at one rank count; 0 if every rank came back with 0. */
static int run_world(config *cf)
{
    bench_world w;
    memset(&w, 0, sizeof w);
    w.prog = "overlap"; w.tcp_name = "tcp"; w.timeout_ms = OV_TIMEOUT_MS;
    w.p = cf->p; w.fn = rank_body; w.arg = cf;
    return bench_world_run(&w, cf->port);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: overlap [-p threads,tcp] [-n 2,4] [-s 1M,16M] [-r runs] [-C bytes] [-P passes]\n"
            "               [-S slices] [-k]\n"
            "  -p  ports (default threads,tcp)   -n  rank counts (default 2,4)\n"
            "  -s  all-reduce sizes, K/M suffixes (default 1M,16M)\n"
            "  -r  timed runs per row, median reported (default 7, at least 5)\n"
            "  -C  the computation's working set (default 8M)\n"
            "  -P  saxpy passes per iteration, may be a fraction (default 0: as long as\n"
            "      the all-reduce alone)\n"
            "  -S  slices of the computation, coll_progress after each (default 16)\n"
            "  -k  correctness only: tiny sizes, one run, ends with \"N passed, N failed\"\n");
}

static void print_ms(double s) { printf(" %.2f |", s * 1e3); }

int main(int argc, char **argv)
{
    static config cf;
    const char *ports = "threads,tcp", *sizes_s = "1M,16M";
    int ranks[16] = {2, 4}, nr = 2, i, j, bad = 0, missing = 0;
    int ranks_given = 0, runs_given = 0, sizes_given = 0, comp_given = 0;
    ov_shared *out;
    char buf[256], *tok, *save;

    cf.runs = 7; cf.slices = 16; cf.comp_bytes = (size_t)8 << 20;
    for (i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "-k")) { cf.check_only = 1; continue; }
        if (!v) { usage(); return 2; }
        if (!strcmp(argv[i], "-p")) ports = v;
        else if (!strcmp(argv[i], "-n")) {
            if ((nr = bench_parse_ints(v, ranks, 16)) <= 0) { usage(); return 2; }
            ranks_given = 1;
        }
        else if (!strcmp(argv[i], "-s")) { sizes_s = v; sizes_given = 1; }
        else if (!strcmp(argv[i], "-r")) { cf.runs = atoi(v); runs_given = 1; }
        else if (!strcmp(argv[i], "-C")) { cf.comp_bytes = bench_parse_size(v); comp_given = 1; }
        else if (!strcmp(argv[i], "-P")) cf.passes = atof(v);
        else if (!strcmp(argv[i], "-S")) cf.slices = atoi(v);
        else { usage(); return 2; }
        i++;
    }
    if (cf.check_only) {
        if (!sizes_given) sizes_s = "4,1000,65540,300K";
        if (!ranks_given) { ranks[0] = 1; ranks[1] = 2; ranks[2] = 3; ranks[3] = 4; nr = 4; }
        if (!runs_given) cf.runs = 1;
        if (cf.passes == 0) cf.passes = 1;
        if (!comp_given) cf.comp_bytes = 64 << 10;
    } else if (cf.runs < 5) {
        fprintf(stderr, "overlap: -r %d: medians need at least 5 runs\n", cf.runs);
        return 2;
    }
    if ((cf.nsizes = bench_parse_sizes(sizes_s, cf.sizes, BENCH_MAX_SIZES)) <= 0 ||
        cf.runs < 1 || cf.runs > OV_MAX_RUNS || cf.slices < 1 || cf.comp_bytes == 0 ||
        cf.passes < 0) { usage(); return 2; }
    out = (ov_shared *)mmap(NULL, sizeof *out, PROT_READ | PROT_WRITE,
                            MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (out == (ov_shared *)MAP_FAILED) return 1;
    memset(out, 0, sizeof *out);
    cf.out = out;

    snprintf(buf, sizeof buf, "%s", ports);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (!bench_port_built(tok)) {
            fprintf(stderr, "overlap: port %s is not built in: skipped\n", tok);
            missing = 1;
            continue;
        }
        for (j = 0; j < nr; j++) {
            cf.port = tok;
            cf.p = ranks[j];
            if (!cf.check_only)
                fprintf(stderr, "overlap: %s, %d ranks ...\n", tok, cf.p);
            if (run_world(&cf)) {
                fprintf(stderr, "overlap: port %s p=%d: a rank failed\n", tok, cf.p);
                bad = 1;
            }
        }
    }
    if (cf.check_only) {
        printf("overlap: %d passed, %d failed\n", out->passed, out->failed + bad + missing);
        return out->failed || bad || missing ? 1 : 0;
    }
    printf("| port | ranks | size | comm alone (ms) | compute alone (ms) | sequential (ms) "
           "| overlapped (ms) | gain | ideal |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (i = 0; i < out->nrows; i++) {
        ov_row *r = &out->rows[i];
        double m = r->med[W_COMM] > r->med[W_COMP] ? r->med[W_COMM] : r->med[W_COMP];
        if (r->bytes >= (1u << 20) && r->bytes % (1u << 20) == 0)
            printf("| %s | %d | %zu MiB |", r->port, r->p, r->bytes >> 20);
        else
            printf("| %s | %d | %zu B |", r->port, r->p, r->bytes);
        print_ms(r->med[W_COMM]); print_ms(r->med[W_COMP]);
        print_ms(r->med[W_SEQ]); print_ms(r->med[W_OVL]);
        printf(" %.2f | %.2f |\n", r->med[W_SEQ] / r->med[W_OVL], r->med[W_SEQ] / m);
    }
    printf("\n%d runs per row, medians; compute = saxpy over %zu KiB, as long as comm alone; "
           "%d slices; %d all-reduce results checked, %d wrong\n", cf.runs, cf.comp_bytes >> 10,
           cf.slices, out->passed + out->failed, out->failed);
    return bad || out->failed;
}
