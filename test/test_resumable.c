/* Every collective and algorithm run as resumable requests: p ranks advanced
   round-robin with coll_progress in ONE thread over the mailbox port (no
   threads at all, the numpy seed's way). Each result is checked on every
   rank against a plain-loop reference, and across ranks bit for bit. The
   v forms get ragged counts, some blocks empty; alltoallv a ragged p x p
   matrix with empty blocks (symmetric in place). */
#define COLL_IMPLEMENTATION
#include "../coll.h"
#define COLL_MAILBOX_IMPLEMENTATION
#include "../ports/coll_mailbox.h"
#include "test_values.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXP 16
#define MAXN 1100
static int passed, failed, unavailable;

#define CHECK(cond, ...) do { if (cond) passed++; else { failed++; \
    printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

/* ---- values: small integers so every dtype holds them exactly ----------- */
static double value(int rank, size_t i, coll_op op)
{
    if (op == COLL_PROD) return (double)(1 + (rank + (int)i) % 2);
    return (double)((rank * 7 + (int)i * 3) % 11 + 1);
}


/* The reference: fold the p contributions of element i in rank order. */
static double reference(coll_dtype t, coll_op op, int p, size_t i, int block_rank_offset)
{
    double acc = value(0, i, op);
    int r;
    (void)block_rank_offset;
    for (r = 1; r < p; r++) {
        double v = value(r, i, op);
        switch (op) {
        case COLL_SUM: case COLL_AVG: acc += v; break;
        case COLL_PROD: acc *= v; break;
        case COLL_MIN: acc = v < acc ? v : acc; break;
        case COLL_MAX: acc = v > acc ? v : acc; break;
        case COLL_BAND: acc = (double)((int64_t)acc & (int64_t)v); break;
        case COLL_BOR:  acc = (double)((int64_t)acc | (int64_t)v); break;
        case COLL_BXOR: acc = (double)((int64_t)acc ^ (int64_t)v); break;
        default: break;
        }
    }
    if (op == COLL_AVG) {
        if (t == COLL_FLOAT16 || t == COLL_BFLOAT16 || t == COLL_FLOAT32 || t == COLL_FLOAT64)
            acc /= p;
        else acc = (double)((int64_t)acc / p);
    }
    if (t == COLL_INT8) acc = (double)(int8_t)(int64_t)acc;        /* wrap like the type */
    if (t == COLL_UINT8) acc = (double)(uint8_t)(uint64_t)acc;
    return acc;
}

static int close_enough(coll_dtype t, double got, double want)
{
    double tol = t == COLL_FLOAT16 || t == COLL_BFLOAT16 ? 0.01 * (want < 0 ? -want : want) + 1e-3 : 1e-9;
    double d = got - want;
    if (t == COLL_BFLOAT16) tol = 0.01 * (want < 0 ? -want : want) + 1e-2;
    if (t == COLL_FLOAT32) tol = 1e-6 * (want < 0 ? -want : want);
    return d <= tol && d >= -tol;
}

/* ---- one collective on p ranks, round robin ------------------------------ */
static coll_mailbox box;
/* COLL_TEST_NOFOLD=1: ports without irecv_fold (every received byte lands
   in scratch first); else reductions fold straight from the sender, and
   the bytes folded so (zero-copy) are counted here. */
static int nofold;
static unsigned long long folded, moved;
static unsigned char S[MAXP][MAXP * MAXN * 8 + 64], D[MAXP][MAXP * MAXN * 8 + 64];
static unsigned char scratch[MAXP][256];
static size_t counts[MAXP];
static size_t matrix[MAXP * MAXP];     /* alltoallv: what rank i sends rank j at i*p + j */

/* alltoallv's matrix: ragged, some blocks empty; in place symmetric (row r
   = column r, as it must be). */
static size_t a2av_count(size_t n, int inplace, int i, int j)
{
    if (inplace) return (i + j) % 3 == 2 ? 0 : n + (size_t)(((i + j) * 7 + i * j) % 5);
    return (i + 2 * j) % 3 == 1 ? 0 : n + (size_t)((i * 7 + j * 3) % 5);
}

/* Element i of rank r's alltoallv row (col = 0: its input) or column (col =
   1: its output): the other rank of the block it sits in, and where in it. */
static int a2av_owner(int p, int r, int col, size_t i, size_t *j)
{
    int b;
    size_t off = 0, len = 0;
    for (b = 0; b < p; b++) {
        len = col ? matrix[(size_t)b * (size_t)p + (size_t)r] : matrix[(size_t)r * (size_t)p + (size_t)b];
        if (i < off + len) break;
        off += len;
    }
    *j = i - off;
    return b;
}

static size_t a2av_sum(int p, int r, int col)
{
    size_t s = 0;
    int b;
    for (b = 0; b < p; b++)
        s += col ? matrix[(size_t)b * (size_t)p + (size_t)r] : matrix[(size_t)r * (size_t)p + (size_t)b];
    return s;
}

/* Data for the moving collectives: element i of the block that rank `who`
   contributes (alltoall: who = sender*p + receiver). */
static double dat(int who, size_t i) { return (double)((who * 5 + (int)i) % 97); }

static void block_of(coll_kind k, int p, size_t n, int b, size_t *off, size_t *len)
{
    int j;
    if (k == COLL_ALLGATHERV || k == COLL_REDUCE_SCATTERV) {
        *off = 0;
        for (j = 0; j < b; j++) *off += counts[j];
        *len = counts[b];
    } else { *off = (size_t)b * n; *len = n; }
    (void)p;
}

static void run_case(coll_kind kind, coll_algo algo, coll_dtype t, coll_op op, int p,
                     size_t n, int inplace, int root, int group)
{
    coll_comm c[MAXP];
    coll_request q[MAXP];
    coll_args a;
    size_t es = coll_dtype_size(t), total = 0, i, off, len;
    int r, b, rc[MAXP], live, rounds = 0, ok = 1, avail = 1, nosys;
    unsigned char *sp[MAXP], *dp[MAXP];
    int vform = kind == COLL_ALLGATHERV || kind == COLL_REDUCE_SCATTERV;
    for (b = 0; b < p; b++) counts[b] = b % 3 == 1 ? 0 : n + (size_t)b;
    for (r = 0; r < p; r++)
        for (b = 0; b < p; b++) matrix[(size_t)r * (size_t)p + (size_t)b] = a2av_count(n, inplace, r, b);
    for (b = 0; b < p; b++) { block_of(kind, p, n, b, &off, &len); total += len; }
    coll_mailbox_init(&box, p);
    for (r = 0; r < p; r++) {
        coll_port port = coll_mailbox_port(&box, r);
        if (nofold) port.irecv_fold = 0;
        coll_init(&c[r], r, p, &port, scratch[r], sizeof scratch[r]);
        memset(S[r], 0xA5, sizeof S[r]);
        memset(D[r], 0x5A, sizeof D[r]);
        block_of(kind, p, n, r, &off, &len);
        sp[r] = S[r]; dp[r] = D[r];
        switch (kind) {
        case COLL_ALLREDUCE: case COLL_REDUCE:
            if (inplace) sp[r] = D[r];
            for (i = 0; i < n; i++) t_put(t, sp[r], i, value(r, i, op));
            break;
        case COLL_REDUCE_SCATTER: case COLL_REDUCE_SCATTERV:
            if (inplace) { sp[r] = D[r]; dp[r] = D[r] + off * es; }
            for (i = 0; i < total; i++) t_put(t, sp[r], i, value(r, i, op));
            break;
        case COLL_ALLGATHER: case COLL_ALLGATHERV: case COLL_GATHER:
            if (inplace) sp[r] = D[r] + off * es;
            for (i = 0; i < len; i++) t_put(t, sp[r], i, dat(r, i));
            break;
        case COLL_SCATTER:
            if (inplace) dp[r] = S[r] + off * es;
            if (r == root) for (b = 0; b < p; b++) for (i = 0; i < n; i++) t_put(t, sp[r], (size_t)b * n + i, dat(b, i));
            break;
        case COLL_ALLTOALL:
            if (inplace) sp[r] = dp[r];
            for (b = 0; b < p; b++) for (i = 0; i < n; i++) t_put(t, sp[r], (size_t)b * n + i, dat(r * p + b, i));
            break;
        case COLL_ALLTOALLV:                  /* block b of row r: rank r's for rank b */
            if (inplace) sp[r] = dp[r];
            for (i = 0, len = a2av_sum(p, r, 0); i < len; i++) {
                size_t j;
                b = a2av_owner(p, r, 0, i, &j);
                t_put(t, sp[r], i, dat(r * p + b, j));
            }
            break;
        case COLL_BROADCAST:
            if (r == root) for (i = 0; i < n; i++) t_put(t, dp[r], i, dat(root, i));
            break;
        default: break;
        }
    }
    for (r = 0; r < p; r++) {
        memset(&a, 0, sizeof a);
        a.kind = kind; a.algo = algo; a.count = n; a.dtype = t; a.op = op; a.root = root;
        a.src = sp[r]; a.dst = dp[r]; a.group = group;
        if (vform) a.counts = counts;
        if (kind == COLL_ALLTOALLV) a.counts = matrix;
        rc[r] = coll_start(&q[r], &c[r], &a);
        if (rc[r] == COLL_ERR_NOSYS) avail = 0;
        else if (rc[r] != COLL_OK) { ok = 0; printf("start rc %d\n", rc[r]); }
        else rc[r] = COLL_AGAIN;
    }
    if (!avail) { unavailable++; return; }
    do {                                      /* round robin until all are done */
        live = 0;
        for (r = 0; r < p; r++) {
            if (rc[r] != COLL_AGAIN) continue;
            rc[r] = coll_progress(&q[r]);
            if (rc[r] == COLL_AGAIN) live++;
            else if (rc[r] != COLL_OK && rc[r] != COLL_ERR_NOSYS) { ok = 0; printf("  rank %d rc %d\n", r, rc[r]); }
        }
    } while (live && ok && ++rounds < 100000);
    folded += box.bytes_folded;
    moved += box.bytes;
    /* with the call checks a refusal comes from coll_progress, on every rank */
    for (r = 0, nosys = 0; r < p; r++) nosys += rc[r] == COLL_ERR_NOSYS;
    if (nosys == p && ok && !live) { unavailable++; return; }
    if (nosys) { ok = 0; printf("  %d of %d ranks refused\n", nosys, p); }
    CHECK(ok && !live, "%s/%s %d ranks n=%zu dtype %d op %d inplace %d: rc/deadlock",
          coll_kind_name(kind), coll_algo_name(algo), p, n, (int)t, (int)op, inplace);
    if (!ok || live) return;
    for (r = 0; r < p; r++) {
        size_t out_n = 0;
        int good = 1;
        block_of(kind, p, n, r, &off, &len);
        switch (kind) {
        case COLL_ALLREDUCE: case COLL_REDUCE: case COLL_BROADCAST: out_n = n; break;
        case COLL_REDUCE_SCATTER: case COLL_REDUCE_SCATTERV: case COLL_SCATTER: out_n = len; break;
        case COLL_ALLGATHER: case COLL_ALLGATHERV: case COLL_GATHER: out_n = total; break;
        case COLL_ALLTOALL: out_n = n * (size_t)p; break;
        case COLL_ALLTOALLV: out_n = a2av_sum(p, r, 1); break;
        default: break;
        }
        if ((kind == COLL_REDUCE || kind == COLL_GATHER) && r != root) out_n = 0;
        for (i = 0; i < out_n && good; i++) {
            double want = 0;
            size_t bo, bl;
            switch (kind) {
            case COLL_ALLREDUCE: case COLL_REDUCE: want = reference(t, op, p, i, 0); break;
            case COLL_REDUCE_SCATTER: case COLL_REDUCE_SCATTERV: want = reference(t, op, p, off + i, 0); break;
            case COLL_BROADCAST: want = dat(root, i); break;
            case COLL_SCATTER: want = dat(r, i); break;
            case COLL_ALLTOALL: want = dat((int)(i / n) * p + r, i % n); break;
            case COLL_ALLTOALLV: {            /* block b of column r: rank b's for rank r */
                size_t j;
                b = a2av_owner(p, r, 1, i, &j);
                want = dat(b * p + r, j);
                break;
            }
            default:                               /* gathers */
                for (b = 0; b < p; b++) { block_of(kind, p, n, b, &bo, &bl); if (i < bo + bl) break; }
                want = dat(b, i - bo);
            }
            if (!close_enough(t, t_get(t, dp[r], i), want)) {
                good = 0;
                printf("  rank %d elem %zu: got %g want %g\n", r, i, t_get(t, dp[r], i), want);
            }
        }
        /* guard bytes: nothing past the buffers the call was given */
        {
            size_t dend = (size_t)(dp[r] - D[r]) + out_n * es, send = 0, in_n = 0;
            int src_in_s = sp[r] >= S[r] && sp[r] < S[r] + sizeof S[r];
            switch (kind) {
            case COLL_ALLREDUCE: case COLL_REDUCE: in_n = n; break;
            case COLL_REDUCE_SCATTER: case COLL_REDUCE_SCATTERV: in_n = total; break;
            case COLL_ALLGATHER: case COLL_ALLGATHERV: case COLL_GATHER: in_n = len; break;
            case COLL_SCATTER: case COLL_ALLTOALL: in_n = n * (size_t)p; break;
            case COLL_ALLTOALLV: in_n = a2av_sum(p, r, 0); break;
            default: break;
            }
            if (dp[r] < D[r] || dp[r] >= D[r] + sizeof D[r]) dend = 0;   /* dst lives in S */
            if (kind == COLL_REDUCE || kind == COLL_GATHER) dend = (size_t)(dp[r] - D[r]) + (kind == COLL_GATHER ? total : n) * es;
            if (inplace && (kind == COLL_REDUCE_SCATTER || kind == COLL_REDUCE_SCATTERV)) dend = total * es;
            if (inplace && (kind == COLL_ALLGATHER || kind == COLL_ALLGATHERV)) dend = total * es;
            if (src_in_s) send = (size_t)(sp[r] - S[r]) + in_n * es;
            if (kind == COLL_SCATTER) send = (size_t)p * n * es;
            for (i = dend; i < dend + 64 && good; i++)
                if (D[r][i] != 0x5A) { good = 0; printf("  rank %d wrote past dst (byte %zu)\n", r, i); }
            for (i = send; i < send + 64 && good && (src_in_s || kind == COLL_SCATTER); i++)
                if (S[r][i] != 0xA5) { good = 0; printf("  rank %d wrote past src (byte %zu)\n", r, i); }
        }
        CHECK(good, "%s/%s %d ranks n=%zu dtype %d op %d inplace %d root %d group %d: rank %d value",
              coll_kind_name(kind), coll_algo_name(algo), p, n, (int)t, (int)op, inplace, root, group, r);
        /* every rank holds the same bits */
        if ((kind == COLL_ALLREDUCE || kind == COLL_ALLGATHER || kind == COLL_ALLGATHERV) && r > 0)
            CHECK(memcmp(dp[r], dp[0], out_n * es) == 0, "%s/%s: rank %d differs from rank 0",
                  coll_kind_name(kind), coll_algo_name(algo), r);
    }
}

static void run_barrier(int p)
{
    coll_comm c[MAXP];
    coll_request q[MAXP];
    coll_args a;
    int r, rc[MAXP], live, rounds = 0, ok = 1, entered = 0;
    coll_mailbox_init(&box, p);
    memset(&a, 0, sizeof a);
    a.kind = COLL_BARRIER;
    for (r = 0; r < p; r++) {
        coll_port port = coll_mailbox_port(&box, r);
        coll_init(&c[r], r, p, &port, 0, 0);
    }
    /* rank p-1 enters late: nobody may leave before it has entered */
    for (r = 0; r < p - 1; r++) { rc[r] = coll_start(&q[r], &c[r], &a); if (rc[r] == COLL_OK) rc[r] = COLL_AGAIN; }
    for (rounds = 0; rounds < 50; rounds++)
        for (r = 0; r < p - 1; r++) if (rc[r] == COLL_AGAIN) rc[r] = coll_progress(&q[r]);
    for (r = 0; r < p - 1; r++) if (rc[r] != COLL_AGAIN && p > 1) ok = 0;
    CHECK(ok, "barrier %d ranks: a rank left before the last one entered", p);
    rc[p - 1] = coll_start(&q[p - 1], &c[p - 1], &a);
    if (rc[p - 1] == COLL_OK) rc[p - 1] = COLL_AGAIN;
    entered = 1;
    do {
        live = 0;
        for (r = 0; r < p; r++) {
            if (rc[r] != COLL_AGAIN) continue;
            rc[r] = coll_progress(&q[r]);
            if (rc[r] == COLL_AGAIN) live++;
            else if (rc[r] != COLL_OK) ok = 0;
        }
    } while (live && ok && ++rounds < 10000);
    CHECK(ok && !live && entered, "barrier %d ranks: did not complete", p);
}

/* "quick": a sample of the matrix, for valgrind */
int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "quick") == 0;
    const char *nf = getenv("COLL_TEST_NOFOLD");
    static const int ps[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 16 };
    static const coll_dtype ts[] = { COLL_INT8, COLL_UINT8, COLL_INT32, COLL_UINT32, COLL_INT64,
        COLL_UINT64, COLL_FLOAT16, COLL_BFLOAT16, COLL_FLOAT32, COLL_FLOAT64 };
    static const struct { coll_kind k; coll_algo a; } cases[] = {
        { COLL_ALLREDUCE, COLL_ALGO_RING }, { COLL_ALLREDUCE, COLL_ALGO_TREE },
        { COLL_ALLREDUCE, COLL_ALGO_NAIVE }, { COLL_ALLREDUCE, COLL_ALGO_AUTO },
        { COLL_ALLREDUCE, COLL_ALGO_RECURSIVE_DOUBLING }, { COLL_ALLREDUCE, COLL_ALGO_RABENSEIFNER },
        { COLL_ALLREDUCE, COLL_ALGO_HIERARCHICAL }, { COLL_ALLREDUCE, COLL_ALGO_PIPELINED_TREE },
        { COLL_REDUCE_SCATTER, COLL_ALGO_RING }, { COLL_REDUCE_SCATTER, COLL_ALGO_PAIRWISE },
        { COLL_REDUCE_SCATTER, COLL_ALGO_RECURSIVE_HALVING }, { COLL_REDUCE_SCATTER, COLL_ALGO_AUTO },
        { COLL_REDUCE_SCATTERV, COLL_ALGO_RING }, { COLL_REDUCE_SCATTERV, COLL_ALGO_PAIRWISE },
        { COLL_REDUCE_SCATTERV, COLL_ALGO_RECURSIVE_HALVING }, { COLL_REDUCE_SCATTERV, COLL_ALGO_AUTO },
        { COLL_ALLGATHER, COLL_ALGO_RING }, { COLL_ALLGATHER, COLL_ALGO_RECURSIVE_DOUBLING },
        { COLL_ALLGATHER, COLL_ALGO_BRUCK }, { COLL_ALLGATHER, COLL_ALGO_AUTO },
        { COLL_ALLGATHERV, COLL_ALGO_RING }, { COLL_ALLGATHERV, COLL_ALGO_RECURSIVE_DOUBLING },
        { COLL_ALLGATHERV, COLL_ALGO_BRUCK }, { COLL_ALLGATHERV, COLL_ALGO_AUTO },
        { COLL_BROADCAST, COLL_ALGO_BINOMIAL }, { COLL_BROADCAST, COLL_ALGO_SCATTER_ALLGATHER },
        { COLL_BROADCAST, COLL_ALGO_PIPELINED_CHAIN }, { COLL_BROADCAST, COLL_ALGO_AUTO },
        { COLL_REDUCE, COLL_ALGO_BINOMIAL }, { COLL_REDUCE, COLL_ALGO_REDUCE_SCATTER_GATHER }, { COLL_REDUCE, COLL_ALGO_LINEAR },
        { COLL_REDUCE, COLL_ALGO_AUTO },
        { COLL_GATHER, COLL_ALGO_LINEAR }, { COLL_GATHER, COLL_ALGO_BINOMIAL }, { COLL_GATHER, COLL_ALGO_AUTO },
        { COLL_SCATTER, COLL_ALGO_LINEAR }, { COLL_SCATTER, COLL_ALGO_BINOMIAL }, { COLL_SCATTER, COLL_ALGO_AUTO },
        { COLL_ALLTOALL, COLL_ALGO_PAIRWISE }, { COLL_ALLTOALL, COLL_ALGO_BRUCK },
        { COLL_ALLTOALL, COLL_ALGO_AUTO },
        { COLL_ALLTOALLV, COLL_ALGO_PAIRWISE }, { COLL_ALLTOALLV, COLL_ALGO_AUTO },
        { COLL_ALLREDUCE, COLL_ALGO_REVERSED_BRUCK }, { COLL_REDUCE_SCATTER, COLL_ALGO_REVERSED_BRUCK },
        { COLL_REDUCE_SCATTERV, COLL_ALGO_REVERSED_BRUCK }, { COLL_ALLREDUCE, COLL_ALGO_DOUBLE_TREE },
        { COLL_BROADCAST, COLL_ALGO_DOUBLE_TREE }, { COLL_REDUCE, COLL_ALGO_DOUBLE_TREE },
        { COLL_ALLREDUCE, COLL_ALGO_SWING }, { COLL_BROADCAST, COLL_ALGO_BINE }, { COLL_REDUCE, COLL_ALGO_BINE },
        { COLL_REDUCE_SCATTER, COLL_ALGO_SWING }, { COLL_REDUCE_SCATTERV, COLL_ALGO_SWING },
        { COLL_ALLGATHER, COLL_ALGO_SWING }, { COLL_ALLGATHERV, COLL_ALGO_SWING },
        /* small calls' dissemination rows (refused past the room: unavailable) */
        { COLL_ALLREDUCE, COLL_ALGO_DISSEMINATION }, { COLL_REDUCE_SCATTER, COLL_ALGO_DISSEMINATION },
        { COLL_ALLGATHER, COLL_ALGO_DISSEMINATION }, { COLL_BROADCAST, COLL_ALGO_DISSEMINATION },
        { COLL_REDUCE, COLL_ALGO_DISSEMINATION }, { COLL_GATHER, COLL_ALGO_DISSEMINATION },
        { COLL_SCATTER, COLL_ALGO_DISSEMINATION }, { COLL_ALLTOALL, COLL_ALGO_DISSEMINATION } };
    size_t ci, pi, ti, ni;
    int op;
    nofold = nf && *nf == '1';
    for (ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (pi = 0; pi < sizeof ps / sizeof ps[0]; pi++) {
            int p = ps[pi];
            size_t ns[] = { 0, 1, (size_t)p - 1, (size_t)p, (size_t)p + 1, 61, 1000 };
            if (quick && p != 1 && p != 3 && p != 5 && p != 8) continue;
            coll_kind k = cases[ci].k;
            int reduces = k == COLL_ALLREDUCE || k == COLL_REDUCE || k == COLL_REDUCE_SCATTER ||
                          k == COLL_REDUCE_SCATTERV;
            for (ti = 0; ti < sizeof ts / sizeof ts[0]; ti++)
                for (op = COLL_SUM; op <= COLL_BXOR; op++) {
                    if (op >= COLL_BAND && ts[ti] >= COLL_FLOAT16) continue;
                    if (quick && (ti % 2 != 0 || (op != COLL_SUM && op != COLL_AVG && op != COLL_MAX))) continue;
                    if (!reduces && op != COLL_SUM) continue;
                    for (ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
                        int inplace = (int)(ni + ti + (size_t)op) % 2;
                        int root = (int)(ni + ti) % p;
                        int group = 1 + (int)(ni % 4);
                        if (cases[ci].a == COLL_ALGO_RECURSIVE_HALVING ||
                            (k != COLL_ALLREDUCE && cases[ci].a == COLL_ALGO_REVERSED_BRUCK)) inplace = 1;
                        if (cases[ci].a == COLL_ALGO_HIERARCHICAL && ni == 0) group = p < 4 ? p : 4;
                        run_case(k, cases[ci].a, ts[ti], (coll_op)op, p, ns[ni], inplace, root, group);
                    }
                }
        }
    for (pi = 0; pi < sizeof ps / sizeof ps[0]; pi++) run_barrier(ps[pi]);
    if (nofold) CHECK(folded == 0, "no irecv_fold, yet %llu bytes folded", folded);
    else CHECK(folded > 0, "irecv_fold offered, yet no reduction folded where its data lay");
    printf("%s: %llu of %llu bytes received were folded where they lay (zero-copy)\n",
           nofold ? "ports without irecv_fold" : "ports with irecv_fold", folded, moved);
    printf("resumable: %d passed, %d failed\n", passed, failed);
    if (unavailable) printf("(%d cases: algorithm not available)\n", unavailable);
    return failed != 0;
}
