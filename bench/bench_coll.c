/* bench_coll.c - coll's collectives over the threads, shm and tcp ports

       build/bench/bench_coll -p threads,shm,tcp -n 2,4 -c allreduce -a all -s quick

   For each port, rank count, collective, algorithm and size it prints one
   row of the bench table (bench_common.h explains the columns). Ranks are
   threads (threads port) or forked processes (shm: forked by the port's
   own launcher; tcp: forked here, meeting on 127.0.0.1). The ranks agree
   on when to start and combine their times through bench_shmctl.h, never
   through the port being measured.

   A port whose header was missing at build time is reported on stderr and
   its rows are skipped. With -k every cell is one checked call and the
   program ends with "bench: N passed, N failed" (the test-bench target). */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define COLL_IMPLEMENTATION
#include "../coll_window.h"
#include "bench_common.h"
#include "bench_shmctl.h"
/* The shm port's heap, for -W 1 rows over buffers from coll_shm_alloc
   (coll-shm-win): virtual until touched (coll_shm_spawn maps it
   MAP_NORESERVE); the rings and their layout are as without it. */
#ifndef COLL_SHM_HEAP_BYTES
#define COLL_SHM_HEAP_BYTES (512u << 20)
#endif
#include "bench_ports.h"
#include "bench_coll.h"

/* A port's deadline: long enough for 256 MiB over loopback on a loaded
   machine, short enough that a hang ends the run with an error. */
#define BENCH_TIMEOUT_MS 60000u

typedef struct config {
    const char *impl;
    int p;
    int kinds[BK_COUNT], nk;
    const char *algos;
    size_t sizes[BENCH_MAX_SIZES];
    int nsizes;
    size_t algo_max;
    bench_opts o;
    volatile int *counts;        /* [0] passed, [1] failed (shared, rank 0)    */
    int checks;                  /* -C: COLL_CHECK_* flags, -1 = the default  */
    int cores;                   /* -K: coll_set_cores (0: not set)           */
    char impl_buf[64];           /* impl with its suffixes (-c0, -crc, -mac, -persist) */
} config;

/* A rank's src or dst of `bytes`: with -W 1 over the shm port, from its
   part of the segment's heap (so that the calls go over windows; where
   the part is full, malloc, and the rows are coll.h's own calls: said on
   stderr); else malloc. *heap says which, for bench_buf_free. */
static float *bench_buf(const config *cf, coll_port *port, size_t bytes, int *heap)
{
    *heap = 0;
#ifdef BENCH_HAVE_SHM
    if (bench_coll_window && strncmp(cf->impl, "coll-shm", 8) == 0) {
        void *p = coll_shm_alloc((coll_shm *)port->ctx, bytes);
        if (p) { *heap = 1; return (float *)p; }
        if (((coll_shm *)port->ctx)->rank == 0)
            fprintf(stderr, "bench: %s p=%d: %zu bytes do not fit the heap's part: malloc, so coll.h's own calls\n",
                    cf->impl, cf->p, bytes);
    }
#else
    (void)cf; (void)port;
#endif
    return (float *)malloc(bytes);
}

static void bench_buf_free(coll_port *port, float *p, int heap)
{
#ifdef BENCH_HAVE_SHM
    if (heap) { coll_shm_alloc_reset((coll_shm *)port->ctx); return; }
#endif
    (void)port; (void)heap;
    free(p);
}

/* What every rank does once its port is up. */
static int rank_body(bench_world *w, int rank, coll_port *port)
{
    config *cf = (config *)w->arg;
    bench_shm_rank me;
    bench_ctl ctl;
    coll_comm c;
    size_t maxb = 0, elems;
    float *src, *dst;
    unsigned char *scratch;
    int i, rc, passed = 0, failed = 0, sheap, dheap;

    me.s = w->shm; me.rank = rank;
    ctl.ctx = &me; ctl.barrier = bench_shm_barrier; ctl.sum = bench_shm_sum; ctl.max = bench_shm_max;
    for (i = 0; i < cf->nsizes; i++) if (cf->sizes[i] > maxb) maxb = cf->sizes[i];
    elems = maxb / sizeof(float) + 2 * (size_t)cf->p;
    src = bench_buf(cf, port, elems * sizeof(float), &sheap);
    dst = bench_buf(cf, port, elems * sizeof(float), &dheap);
    scratch = (unsigned char *)malloc(BENCH_COLL_SCRATCH);
    rc = (!src || !dst || !scratch) ? COLL_ERR_NOSPC
                                    : coll_init(&c, rank, cf->p, port, scratch, BENCH_COLL_SCRATCH);
    if (rc == COLL_OK && cf->checks >= 0) rc = coll_set_checks(&c, (unsigned)cf->checks);
    if (rc == COLL_OK && cf->cores > 0) rc = coll_set_cores(&c, cf->cores);
    /* rows without -W 1 time coll.h's engine: AUTO's calls by messages */
    if (rc == COLL_OK && !bench_coll_window) rc = coll_window_auto(&c, 0);
    /* every rank learns whether every rank is ready before anyone sends */
    if (bench_shm_max(&me, rc ? 1.0 : 0.0) > 0) {
        if (rank == 0) fprintf(stderr, "bench: %s p=%d: set-up failed (%d)\n", cf->impl, cf->p, rc);
        rc = -1;
    } else {
        rc = bench_coll_rows(&ctl, &c, cf->impl, cf->kinds, cf->nk, cf->algos, cf->sizes,
                             cf->nsizes, cf->algo_max, src, dst, &cf->o, &passed, &failed);
        if (rank == 0) { cf->counts[0] += passed; cf->counts[1] += failed; }
    }
    bench_buf_free(port, dst, dheap);
    bench_buf_free(port, src, sheap);
    free(scratch);
    return rc ? 1 : 0;
}

/* The row's impl: the port's name, with "-c0" when the call checks are off
   (-C 0) and "-crc" when CRCs are on too (-C 3), so that one table can
   hold the same rows with the checks in each state. The default (-C 1 or
   no -C) has no suffix. The tcp port's keyed mode (COLL_TCP_MAC=1 in the
   environment, which the port reads itself) adds "-mac"; -K n adds
   "-kn" (AUTO told the ranks share n cores). */
static const char *bench_impl_name(config *cf, const char *port)
{
    const char *sfx = cf->checks == 0 ? "-c0" : cf->checks > 1 ? "-crc" : "";
    const char *mac = getenv("COLL_TCP_MAC");
    char k[16] = "";
    if (cf->cores > 0) snprintf(k, sizeof k, "-k%d", cf->cores);
    snprintf(cf->impl_buf, sizeof cf->impl_buf, "coll-%s%s%s%s%s%s", port, sfx,
             strcmp(port, "tcp") == 0 && mac && strcmp(mac, "1") == 0 ? "-mac" : "",
             bench_coll_persist ? "-persist" : "", bench_coll_window ? "-win" : "", k);
    return cf->impl_buf;
}

/* Runs one port at one rank count; returns 0 if every rank came back. */
static int run_world(const char *port, config *cf)
{
    bench_world w;
    int rc;
    memset(&w, 0, sizeof w);
    w.prog = "bench"; w.tcp_name = "coll-tcp"; w.timeout_ms = BENCH_TIMEOUT_MS;
    w.p = cf->p; w.fn = rank_body; w.arg = cf;
    cf->impl = bench_impl_name(cf, port);
    rc = bench_world_run(&w, port);
    if (rc == BENCH_WORLD_NO_CTL) fprintf(stderr, "bench: cannot make the control block\n");
    return rc;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_coll [-p threads,shm,tcp] [-n ranks,...] [-c coll,...] [-a auto|all|algo,...]\n"
            "                  [-s quick|std|full|sizes] [-A max] [-T ms] [-N calls] [-C flags] [-P 0|1] [-W 0|1] [-K cores] [-k]\n"
            "  -p  ports (default threads)      -n  rank counts (default 2,4)\n"
            "  -c  collectives (default all)    -a  algorithms (default auto)\n"
            "  -s  sizes: quick, std (8 B..64 MiB), full (+256 MiB), or a list with K/M\n"
            "  -A  largest size for algorithms other than AUTO (default 64M)\n"
            "  -T  milliseconds of timed calls per row (default 20)\n"
            "  -N  exactly this many timed calls per row (for profiling)\n"
            "  -P  1: persistent calls (coll_prepare once per cell, coll_restart +\n"
            "      coll_waitall per call); rows say impl coll-<port>-persist\n"
            "  -W  1: calls over windows (coll_window.h's, AUTO form; the threads port has\n"
            "      them, and shm over buffers from its heap; tcp runs coll.h's own calls;\n"
            "      inputs of COLL_WINDOW_INLINE bytes or less ride in the records, one\n"
            "      sync); rows say impl coll-<port>-win\n"
            "  -C  call checks: 0 off, 1 calls (the default), 3 calls + CRC;\n"
            "      rows of -C 0 say impl coll-<port>-c0, of -C 3 coll-<port>-crc\n"
            "  -K  coll_set_cores: the cores the ranks share (AUTO weighs all ranks'\n"
            "      work over them where ranks outnumber them; default: not set)\n"
            "  -k  check only: one call per cell, no rows, ends with \"N passed, N failed\"\n");
}

int main(int argc, char **argv)
{
    static config cf;
    const char *ports = "threads", *colls = NULL, *sizes_s = "std";
    int ranks[16] = {2, 4}, nr = 2, i, k, bad = 0, missing = 0;
    int *counts;
    char buf[256], *tok, *save;

    cf.algos = "auto";
    cf.checks = -1;
    cf.algo_max = (size_t)64 << 20;
    cf.o.target = 0.02; cf.o.lo = 3; cf.o.hi = 1000;
    for (i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "-k")) { cf.o.check_only = 1; cf.o.quiet = 1; continue; }
        if (!v) { usage(); return 2; }
        if (!strcmp(argv[i], "-p")) ports = v;
        else if (!strcmp(argv[i], "-C")) cf.checks = atoi(v);
        else if (!strcmp(argv[i], "-K")) cf.cores = atoi(v);
        else if (!strcmp(argv[i], "-P")) bench_coll_persist = atoi(v) != 0;
        else if (!strcmp(argv[i], "-W")) bench_coll_window = atoi(v) != 0;
        else if (!strcmp(argv[i], "-n")) { if ((nr = bench_parse_ints(v, ranks, 16)) <= 0) { usage(); return 2; } }
        else if (!strcmp(argv[i], "-c")) colls = v;
        else if (!strcmp(argv[i], "-a")) cf.algos = v;
        else if (!strcmp(argv[i], "-s")) sizes_s = v;
        else if (!strcmp(argv[i], "-A")) cf.algo_max = bench_parse_size(v);
        else if (!strcmp(argv[i], "-T")) cf.o.target = atof(v) / 1e3;
        else if (!strcmp(argv[i], "-N")) cf.o.lo = cf.o.hi = atoi(v) > 0 ? atoi(v) : 1;
        else { usage(); return 2; }
        i++;
    }
    if ((cf.nsizes = bench_parse_sizes(sizes_s, cf.sizes, BENCH_MAX_SIZES)) <= 0) { usage(); return 2; }
    if (colls) {
        snprintf(buf, sizeof buf, "%s", colls);
        for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
            if ((k = bench_kind_by_name(tok)) >= 0) cf.kinds[cf.nk++] = k;
            else { fprintf(stderr, "bench: unknown collective %s\n", tok); return 2; }
    } else {
        for (k = 0; k < BK_COUNT; k++) cf.kinds[cf.nk++] = k;
    }
    counts = (int *)mmap(NULL, 2 * sizeof(int), PROT_READ | PROT_WRITE,
                         MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (counts == (int *)MAP_FAILED) return 1;
    counts[0] = counts[1] = 0;
    cf.counts = counts;

    snprintf(buf, sizeof buf, "%s", ports);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char port[32];
        snprintf(port, sizeof port, "%s", tok);
        if (!bench_port_built(port)) {
            fprintf(stderr, "bench: port %s is not built in (ports/coll_%s.h was missing or "
                            "unknown at build time): its rows are skipped\n", port, port);
            missing = 1;
            continue;
        }
        for (i = 0; i < nr; i++) {
            cf.p = ranks[i];
            if (run_world(port, &cf)) {
                fprintf(stderr, "bench: port %s p=%d: a rank failed\n", port, cf.p);
                bad = 1;
                if (cf.o.check_only) counts[1]++;
            }
        }
    }
    if (cf.o.check_only) {
        printf("bench: %d passed, %d failed\n", counts[0], counts[1] + missing);
        return counts[1] || bad || missing ? 1 : 0;
    }
    return bad;
}
