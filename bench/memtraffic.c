/* memtraffic.c - the memory traffic of the algorithm AUTO runs: the bytes
   one call copies and reduces on all ranks together, counted while it runs.

       build/bench/memtraffic [-p threads,shm] [-n 2,4] [-c allreduce,...] [-s 8M,64M]
                              [-a algo] [-x]

   For each port, rank count, collective and size: every rank sets up coll
   as bench_coll does (the same scratch, the call checks in their default
   state), asks coll_choose which algorithm AUTO takes for the call, then
   runs that algorithm once over two counters:
     - a port wrapper that counts every byte received: the port moves each
       with one copy (the threads port's rendezvous memcpy; the shm port's
       two copies through its ring are its own cost, not the algorithm's);
     - coll_memops that count the bytes coll.h copies locally (coll__copy)
       and the bytes of output it reduces (out = a + b, float32).
   (With memops set coll.h neither folds on receipt (irecv_fold) nor takes
   the eager path; neither runs at the sizes this is for, >= 8 MiB, since
   COLL_FOLD_MAX is 4 MiB.) The result is checked against a plain loop on
   every rank.

   A copy of c bytes reads c and writes c; a reduction of r bytes reads 2r
   and writes r. So the call's memory traffic is 2C + 3R, with C and R the
   counts of all ranks, and its floor in time is C / M + R / A, with M and
   A the machine's memcpy and add rates (bench/membw.c's algbw, all cores)
   over arrays as large as the call's buffers. bench/goals.sh makes the
   memory ceiling of each row of that.

   Rows (bench table columns): impl=memtraffic-<port>, collective,
   algo=AUTO's pick, ranks, bytes, time_us=0 (nothing timed),
   algbw column = C / bytes, busbw column = R / bytes (bytes copied and
   reduced per byte of the call, all ranks together), check.

   With -a an algorithm is counted instead of AUTO's pick (to compare
   algorithms' traffic). With -x nothing runs: one row per cell says AUTO's pick alone (impl
   pick, zeros), for bench/goals.sh's list of the rows where AUTO was
   slow. AUTO reads the call, the scratch size and the tuning, not the
   port, so the threads port's picks are every port's (the MPI port's
   bench uses the same scratch). */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define COLL_IMPLEMENTATION
#include "../coll.h"
#include "bench_common.h"
#include "bench_shmctl.h"
#include "bench_ports.h"
#include "bench_coll.h"

typedef struct counts {
    coll_port inner;
    double copied, reduced;       /* bytes */
} counts;

/* ---- the port wrapper: every call passed on, received bytes counted ---- */
static int w_send(void *ctx, int peer, const void *buf, size_t n)
{
    counts *k = (counts *)ctx;
    return k->inner.send(k->inner.ctx, peer, buf, n);
}
static int w_recv(void *ctx, int peer, void *buf, size_t n)
{
    counts *k = (counts *)ctx;
    k->copied += (double)n;
    return k->inner.recv(k->inner.ctx, peer, buf, n);
}
static int w_sendrecv(void *ctx, int to, const void *sb, size_t sn, int from, void *rb, size_t rn)
{
    counts *k = (counts *)ctx;
    k->copied += (double)rn;
    return k->inner.sendrecv(k->inner.ctx, to, sb, sn, from, rb, rn);
}
static int w_isend(void *ctx, int peer, const void *buf, size_t n, int *h)
{
    counts *k = (counts *)ctx;
    return k->inner.isend(k->inner.ctx, peer, buf, n, h);
}
static int w_irecv(void *ctx, int peer, void *buf, size_t n, int *h)
{
    counts *k = (counts *)ctx;
    k->copied += (double)n;
    return k->inner.irecv(k->inner.ctx, peer, buf, n, h);
}
static int w_wait(void *ctx, int h, int block)
{
    counts *k = (counts *)ctx;
    return k->inner.wait(k->inner.ctx, h, block);
}
static void w_abort(void *ctx, int code)
{
    counts *k = (counts *)ctx;
    k->inner.abort(k->inner.ctx, code);
}
static int w_attach(void *ctx)
{
    counts *k = (counts *)ctx;
    return k->inner.attach(k->inner.ctx);
}

static coll_port wrap(counts *k, const coll_port *inner)
{
    coll_port p;
    memset(&p, 0, sizeof p);
    k->inner = *inner;
    p.ctx = k;
    p.send = w_send;
    p.recv = w_recv;
    p.max_bytes = inner->max_bytes;
    if (inner->sendrecv) p.sendrecv = w_sendrecv;
    if (inner->isend && inner->irecv && inner->wait) { p.isend = w_isend; p.irecv = w_irecv; p.wait = w_wait; }
    if (inner->abort) p.abort = w_abort;
    if (inner->attach) p.attach = w_attach;
    return p;                     /* irecv_fold left out: memops turn it off anyway */
}

/* ---- the memops: host loops, bytes counted ------------------------------ */
static int m_copy(void *ctx, void *dst, const void *src, size_t n)
{
    ((counts *)ctx)->copied += (double)n;
    if (n) memmove(dst, src, n);
    return 0;
}
static int m_reduce(void *ctx, void *out, const void *a, const void *b, size_t count,
                    coll_dtype t, coll_op op)
{
    float *o = (float *)out;
    const float *x = (const float *)a, *y = (const float *)b;
    size_t i;
    if (t != COLL_FLOAT32 || op != COLL_SUM) return COLL_ERR_NOSYS;
    ((counts *)ctx)->reduced += (double)(count * sizeof(float));
    for (i = 0; i < count; i++) o[i] = x[i] + y[i];
    return 0;
}
static int m_scale(void *ctx, void *buf, size_t n, coll_dtype t, size_t d)
{
    (void)ctx; (void)buf; (void)n; (void)t; (void)d;
    return COLL_ERR_NOSYS;        /* no average in the bench */
}

typedef struct config {
    const char *port;
    int p, kind, choose_only;
    coll_algo forced;             /* -a: this instead of AUTO's pick */
    size_t bytes;
} config;

/* -x: AUTO's pick for the cell, printed by rank 0; nothing runs. */
static int pick_only(const config *cf, int rank, coll_port *port)
{
    static unsigned char scratch[16][BENCH_COLL_SCRATCH];
    coll_comm c;
    coll_args a;
    size_t count = bench_count(cf->kind, cf->p, cf->bytes);
    coll_algo pick;
    if (rank >= 16 || coll_init(&c, rank, cf->p, port, scratch[rank], BENCH_COLL_SCRATCH)) return 1;
    bench_coll_args(&a, cf->kind, COLL_ALGO_AUTO, NULL, NULL, count, cf->p);
    pick = coll_choose(&c, &a);
    if (rank == 0) {
        printf("pick\t%s\t%s\t%d\t%zu\t0\t0\t0\t%s\n", bench_kind_names[cf->kind],
               bench_coll_algo_label(pick), cf->p, bench_bytes(cf->kind, cf->p, count),
               pick == COLL_ALGO_AUTO ? "FAIL" : "ok");
        fflush(stdout);
    }
    return pick == COLL_ALGO_AUTO;
}

static int rank_body(bench_world *w, int rank, coll_port *port)
{
    config *cf = (config *)w->arg;
    bench_shm_rank me;
    counts k;
    coll_port cp;
    coll_memops mem;
    coll_comm c;
    coll_args a;
    coll_algo pick = COLL_ALGO_AUTO;
    size_t count = bench_count(cf->kind, cf->p, cf->bytes), bad = 1;
    size_t ns = cf->choose_only ? 1 : bench_src_elems(cf->kind, cf->p, count);
    size_t nd = cf->choose_only ? 1 : bench_dst_elems(cf->kind, cf->p, count);
    float *src = (float *)malloc(ns * sizeof(float));
    float *dst = (float *)malloc(nd * sizeof(float));
    unsigned char *scratch = (unsigned char *)malloc(BENCH_COLL_SCRATCH);
    double copied, reduced;
    int rc = COLL_ERR_NOSPC;

    if (cf->choose_only) {
        free(src); free(dst); free(scratch);
        return pick_only(cf, rank, port);
    }
    me.s = w->shm; me.rank = rank;
    memset(&k, 0, sizeof k);
    cp = wrap(&k, port);
    mem.ctx = &k; mem.copy = m_copy; mem.reduce = m_reduce; mem.scale = m_scale;
    if (src && dst && scratch) rc = coll_init(&c, rank, cf->p, &cp, scratch, BENCH_COLL_SCRATCH);
    if (rc == COLL_OK) {
        bench_fill(src, bench_src_elems(cf->kind, cf->p, count), rank);
        if (cf->kind == BK_BROADCAST) {
            if (rank == BENCH_ROOT) bench_fill(dst, count, rank);
            else bench_poison(dst, count);
        } else {
            bench_poison(dst, bench_dst_elems(cf->kind, cf->p, count));
        }
        bench_coll_args(&a, cf->kind, COLL_ALGO_AUTO, src, dst, count, cf->p);
        pick = cf->forced != COLL_ALGO_AUTO ? cf->forced
             : coll_choose(&c, &a);             /* what the bench's AUTO rows run */
        bench_coll_args(&a, cf->kind, pick, src, dst, count, cf->p);
        rc = pick == COLL_ALGO_AUTO ? COLL_ERR_INVAL : coll_set_memops(&c, &mem);
        if (rc == COLL_OK) rc = coll_run(&c, &a);
        if (rc == COLL_OK) bad = bench_check(cf->kind, cf->p, rank, count, dst);
    }
    copied = bench_shm_sum(&me, k.copied);
    reduced = bench_shm_sum(&me, k.reduced);
    bad = (size_t)bench_shm_sum(&me, (double)bad + (rc != COLL_OK));
    if (rank == 0) {
        char impl[48];
        size_t b = bench_bytes(cf->kind, cf->p, count);
        snprintf(impl, sizeof impl, "memtraffic-%s", cf->port);
        printf("%s\t%s\t%s\t%d\t%zu\t0\t%.4f\t%.4f\t%s\n", impl, bench_kind_names[cf->kind],
               bench_coll_algo_label(pick), cf->p, b, copied / (double)b, reduced / (double)b,
               bad ? "FAIL" : "ok");
        fflush(stdout);
        if (rc != COLL_OK) fprintf(stderr, "memtraffic: %s %s p=%d %zu B: %s\n", cf->port,
                                   bench_kind_names[cf->kind], cf->p, b, coll_result_str(rc));
    }
    free(src);
    free(dst);
    free(scratch);
    return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    const char *ports = "threads", *colls = "allreduce", *sizes_s = "8M";
    int ranks[16] = {2, 4}, nr = 2, i, j, s, bad = 0;
    size_t sizes[BENCH_MAX_SIZES];
    int nsizes;
    char pbuf[128], cbuf[256], *pt, *ct, *ps, *cs;
    static config cf;

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-x")) { cf.choose_only = 1; continue; }
        if (i + 1 >= argc) goto usage;
        if (!strcmp(argv[i], "-p")) ports = argv[++i];
        else if (!strcmp(argv[i], "-a")) {
            if ((cf.forced = bench_coll_algo_by_name(argv[++i])) == COLL_ALGO_COUNT) goto usage;
        }
        else if (!strcmp(argv[i], "-n")) { if ((nr = bench_parse_ints(argv[++i], ranks, 16)) <= 0) goto usage; }
        else if (!strcmp(argv[i], "-c")) colls = argv[++i];
        else if (!strcmp(argv[i], "-s")) sizes_s = argv[++i];
        else goto usage;
    }
    if ((nsizes = bench_parse_sizes(sizes_s, sizes, BENCH_MAX_SIZES)) <= 0) goto usage;
    snprintf(pbuf, sizeof pbuf, "%s", ports);
    for (pt = strtok_r(pbuf, ",", &ps); pt; pt = strtok_r(NULL, ",", &ps)) {
        if (!bench_port_built(pt)) {
            fprintf(stderr, "memtraffic: port %s is not built in: its rows are skipped\n", pt);
            bad = 1;
            continue;
        }
        snprintf(cbuf, sizeof cbuf, "%s", colls);
        for (ct = strtok_r(cbuf, ",", &cs); ct; ct = strtok_r(NULL, ",", &cs)) {
            int kind = bench_kind_by_name(ct);
            if (kind < 0) { fprintf(stderr, "memtraffic: unknown collective %s\n", ct); return 2; }
            for (j = 0; j < nr; j++)
                for (s = 0; s < nsizes; s++) {
                    bench_world w;
                    memset(&w, 0, sizeof w);
                    cf.port = pt; cf.p = ranks[j]; cf.kind = kind; cf.bytes = sizes[s];
                    w.prog = "memtraffic"; w.tcp_name = "coll-tcp"; w.timeout_ms = 60000;
                    w.p = cf.p; w.fn = rank_body; w.arg = &cf;
                    if (bench_world_run(&w, pt) != 0) {
                        fprintf(stderr, "memtraffic: %s p=%d %zu B: a rank failed\n", pt, cf.p, cf.bytes);
                        bad = 1;
                    }
                }
        }
    }
    return bad;
usage:
    fprintf(stderr, "usage: memtraffic [-p threads,shm] [-n ranks,...] [-c coll,...] [-s sizes] [-a algo] [-x]\n");
    return 2;
}
