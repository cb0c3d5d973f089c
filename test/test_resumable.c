/* Every collective and algorithm run as resumable requests: p ranks advanced
   round-robin with coll_progress in ONE thread over the mailbox port (no
   threads at all, the numpy seed's way). Each result is checked on every
   rank against a plain-loop reference, and across ranks bit for bit. */
#define COLL_IMPLEMENTATION
#include "../coll.h"
#define COLL_MAILBOX_IMPLEMENTATION
#include "../ports/coll_mailbox.h"
#include <stdio.h>
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

static uint16_t half_of(double v)     /* small non-negative integers only */
{
    int e = 0;
    if (v == 0) return 0;
    while (v >= 2.0 * (1 << e)) e++;
    if (e > 15) return 0x7c00;         /* beyond 65504: inf */
    return (uint16_t)(((e + 15) << 10) | (int)((v / (1 << e) - 1.0) * 1024.0));
}
static double half_val(uint16_t h)
{
    int e = (h >> 10) & 31;
    if (e == 31) return 1e300;
    if (e == 0) return (h & 1023) / 16777216.0;
    return (1.0 + (h & 1023) / 1024.0) * (double)(1 << e) / 32768.0;
}

static void put(coll_dtype t, void *p, size_t i, double v)
{
    switch (t) {
    case COLL_INT8:   ((int8_t *)p)[i] = (int8_t)(int64_t)v; break;
    case COLL_UINT8:  ((uint8_t *)p)[i] = (uint8_t)(uint64_t)v; break;
    case COLL_INT32:  ((int32_t *)p)[i] = (int32_t)(int64_t)v; break;
    case COLL_UINT32: ((uint32_t *)p)[i] = (uint32_t)(uint64_t)v; break;
    case COLL_INT64:  ((int64_t *)p)[i] = (int64_t)v; break;
    case COLL_UINT64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    case COLL_FLOAT16: ((uint16_t *)p)[i] = half_of(v); break;
    case COLL_BFLOAT16: { float f = (float)v; uint32_t u; memcpy(&u, &f, 4);
                          ((uint16_t *)p)[i] = (uint16_t)(u >> 16); } break;
    case COLL_FLOAT32: ((float *)p)[i] = (float)v; break;
    case COLL_FLOAT64: ((double *)p)[i] = v; break;
    default: break;
    }
}

static double get(coll_dtype t, const void *p, size_t i)
{
    switch (t) {
    case COLL_INT8:   return ((const int8_t *)p)[i];
    case COLL_UINT8:  return ((const uint8_t *)p)[i];
    case COLL_INT32:  return ((const int32_t *)p)[i];
    case COLL_UINT32: return ((const uint32_t *)p)[i];
    case COLL_INT64:  return (double)((const int64_t *)p)[i];
    case COLL_UINT64: return (double)((const uint64_t *)p)[i];
    case COLL_FLOAT16: return half_val(((const uint16_t *)p)[i]);
    case COLL_BFLOAT16: { uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16; float f;
                          memcpy(&f, &u, 4); return f; }
    case COLL_FLOAT32: return ((const float *)p)[i];
    case COLL_FLOAT64: return ((const double *)p)[i];
    default: return 0;
    }
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
static unsigned char src[MAXP][MAXP * MAXN * 8], dst[MAXP][MAXP * MAXN * 8];
static unsigned char scratch[MAXP][256];

static void run_case(coll_kind kind, coll_algo algo, coll_dtype t, coll_op op, int p,
                     size_t n, int inplace, int root)
{
    coll_comm c[MAXP];
    coll_request q[MAXP];
    coll_args a;
    size_t es = coll_dtype_size(t), in_n, out_n, i;
    int r, rc[MAXP], live, rounds = 0, ok = 1, avail = 1;
    in_n = kind == COLL_REDUCE_SCATTER ? n * p : n;
    out_n = kind == COLL_ALLGATHER ? n * p : n;
    coll_mailbox_init(&box, p);
    for (r = 0; r < p; r++) {
        coll_port port = coll_mailbox_port(&box, r);
        coll_init(&c[r], r, p, &port, scratch[r], sizeof scratch[r]);
        memset(src[r], 0xA5, sizeof src[r]);
        memset(dst[r], 0x5A, sizeof dst[r]);
        for (i = 0; i < in_n; i++) {
            /* reduce_scatter: element i of block b is element b*n+i globally */
            unsigned char *base = src[r];
            if (kind == COLL_ALLGATHER && inplace) base = dst[r] + (size_t)r * n * es;
            if (kind == COLL_REDUCE_SCATTER && inplace) base = dst[r];
            if (kind == COLL_BROADCAST) base = dst[r];
            put(t, base, i, kind == COLL_ALLGATHER || kind == COLL_BROADCAST
                               ? (double)((r * 5 + (int)i) % 97) : value(r, i, op));
        }
        if (inplace && (kind == COLL_ALLREDUCE || kind == COLL_REDUCE))
            memcpy(dst[r], src[r], in_n * es);
    }
    for (r = 0; r < p; r++) {
        memset(&a, 0, sizeof a);
        a.kind = kind; a.algo = algo; a.count = n; a.dtype = t; a.op = op; a.root = root;
        a.dst = dst[r];
        a.src = inplace ? (kind == COLL_ALLGATHER ? dst[r] + (size_t)r * n * es : dst[r]) : src[r];
        if (kind == COLL_REDUCE_SCATTER && inplace) { a.src = dst[r]; a.dst = dst[r] + (size_t)r * n * es; }
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
            else if (rc[r] != COLL_OK) ok = 0;
        }
    } while (live && ok && ++rounds < 100000);
    CHECK(ok && !live, "%s/%s %d ranks n=%zu dtype %d op %d inplace %d: rc/deadlock",
          coll_kind_name(kind), coll_algo_name(algo), p, n, (int)t, (int)op, inplace);
    if (!ok || live) return;
    for (r = 0; r < p; r++) {
        unsigned char *res = dst[r];
        size_t off = 0;
        int good = 1;
        if (kind == COLL_REDUCE && r != root) continue;
        if (kind == COLL_REDUCE_SCATTER && inplace) res = dst[r] + (size_t)r * n * es;
        for (i = 0; i < out_n && good; i++) {
            double want;
            if (kind == COLL_ALLGATHER) want = (double)(((int)(i / (n ? n : 1)) * 5 + (int)(i % (n ? n : 1))) % 97);
            else if (kind == COLL_BROADCAST) want = (double)((root * 5 + (int)i) % 97);
            else if (kind == COLL_REDUCE_SCATTER) want = reference(t, op, p, (size_t)r * n + i, 0);
            else want = reference(t, op, p, i, 0);
            if (!close_enough(t, get(t, res, i), want)) {
                good = 0;
                printf("  rank %d elem %zu: got %g want %g\n", r, i, get(t, res, i), want);
            }
        }
        /* guard bytes: nothing past the output */
        off = (kind == COLL_REDUCE_SCATTER && inplace) ? p * n * es : out_n * es;
        for (i = off; i < off + 64 && good; i++)
            if (dst[r][i] != 0x5A) { good = 0; printf("  rank %d wrote past the end\n", r); }
        CHECK(good, "%s/%s %d ranks n=%zu dtype %d op %d inplace %d root %d: rank %d value",
              coll_kind_name(kind), coll_algo_name(algo), p, n, (int)t, (int)op, inplace, root, r);
        /* every rank holds the same bits */
        if (kind == COLL_ALLREDUCE && r > 0)
            CHECK(memcmp(dst[r], dst[0], n * es) == 0, "allreduce/%s: rank %d differs from rank 0",
                  coll_algo_name(algo), r);
    }
}

int main(void)
{
    static const int ps[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 16 };
    static const coll_dtype ts[] = { COLL_INT8, COLL_UINT8, COLL_INT32, COLL_UINT32, COLL_INT64,
        COLL_UINT64, COLL_FLOAT16, COLL_BFLOAT16, COLL_FLOAT32, COLL_FLOAT64 };
    static const struct { coll_kind k; coll_algo a; } cases[] = {
        { COLL_ALLREDUCE, COLL_ALGO_RING }, { COLL_ALLREDUCE, COLL_ALGO_TREE },
        { COLL_ALLREDUCE, COLL_ALGO_NAIVE }, { COLL_ALLREDUCE, COLL_ALGO_AUTO },
        { COLL_REDUCE_SCATTER, COLL_ALGO_RING }, { COLL_ALLGATHER, COLL_ALGO_RING },
        { COLL_BROADCAST, COLL_ALGO_BINOMIAL }, { COLL_REDUCE, COLL_ALGO_BINOMIAL } };
    size_t ci, pi, ti, ni;
    int op;
    for (ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
        for (pi = 0; pi < sizeof ps / sizeof ps[0]; pi++) {
            int p = ps[pi];
            size_t ns[] = { 0, 1, (size_t)p - 1, (size_t)p, (size_t)p + 1, 61, 1000 };
            for (ti = 0; ti < sizeof ts / sizeof ts[0]; ti++)
                for (op = COLL_SUM; op <= COLL_BXOR; op++) {
                    if (op >= COLL_BAND && ts[ti] >= COLL_FLOAT16) continue;
                    if (cases[ci].k == COLL_ALLGATHER || cases[ci].k == COLL_BROADCAST) {
                        if (op != COLL_SUM) continue;
                    }
                    for (ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
                        int inplace = (int)(ni + ti + (size_t)op) % 2;
                        int root = cases[ci].k == COLL_REDUCE || cases[ci].k == COLL_BROADCAST
                                       ? (int)(ni + ti) % p : 0;
                        run_case(cases[ci].k, cases[ci].a, ts[ti], (coll_op)op, p, ns[ni], inplace, root);
                    }
                }
        }
    printf("resumable: %d passed, %d failed\n", passed, failed);
    if (unavailable) printf("(%d cases: algorithm not available)\n", unavailable);
    return failed != 0;
}
