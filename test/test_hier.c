/* test_hier.c - coll_hier.h's hierarchical collectives over the threads
   port, with simulated hosts: host_key = rank % H (interleaved) and
   rank / L (host-major) for H x L in 1x1, 2x2, 4x2, 2x4, 8x1, 3x3, and
   hosts of different sizes (2 + 3 both ways round, 1 + 3 + 2 scattered).

   Every collective (all-reduce, reduce-scatter, all-gather, broadcast,
   reduce, gather, scatter, all-to-all, barrier), counts 0, 1, 7 and 1000,
   in place and out of place, roots first, last and in the middle, with the
   work buffer full-sized and absent (the flat roads), in
     reducing:  float32 sum, float32 avg, float64 sum, int32 max,
                int32 avg, int32 sum, uint8 bxor
     copying:   uint8, int32, float64 elements.
   Each rank checks its own output against a plain loop over every rank's
   input (integers exactly, float sums within a bound from the dtype, the
   ranks and the magnitudes), that the bytes past its output are untouched,
   and that every rank ends an all-reduce with the same bytes as rank 0.
   The road each call took (coll_hier_road) is checked against what the
   header documents, from the test's own reading of the host map (built
   with COLL_HIER_CHAIN_BYTES 4000, so broadcasts of 1000 elements of 4
   and 8 bytes take the chain over byhost, smaller ones the phases). Then a
   refusal on one host reaches every rank, counts that overflow are refused
   everywhere, work of exactly coll_hier_work_bytes takes the phases (one
   byte less, the flat road), coll_hier_init refuses work sizes that
   differ, and a counting port measures the bytes a rank sends across
   hosts in a 256 KiB all-reduce, flat and hierarchical (at most the cross
   phase's share, and never more than flat). AUTO with a cost per level:
   for three pairs of level constants, coll_hier_choose's pick for
   all-reduce, reduce-scatter, all-gather, broadcast and reduce at 1, 7
   and 1000 elements is the least time of the test's own loop over every
   flat algorithm and every combination of phase algorithms
   (coll_hier_cost), the same on every rank, both roads picked somewhere;
   with the model on the call takes the pick's road and gives the plain
   loop's result; coll_hier_tune leaves every rank with the same measured
   constants. Last, the quick matrix over
   the synchronous send/recv-only port (no phase may wait on itself), with
   the call checks off, and with the subs on the world's own scratch, on
   host-major, interleaved and uneven maps. */
#define _POSIX_C_SOURCE 200809L
#define COLL_IMPLEMENTATION
#include "../coll_hier.h"
#define COLL_THREADS_IMPLEMENTATION
#include "../ports/coll_threads.h"
#include "test_ports.h"
#include "coll_test.h"
#include "test_values.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAXP 9
#define MAXN 1000
#define ES 8
#define BUFB (MAXP * MAXN * ES)         /* p blocks of the largest count      */
#define GUARD 32
#define SCR 16384
#define WORKB (2 * BUFB + 64)

typedef struct cfg {
    const char *name;
    int p;
    int key[MAXP];
    int rendezvous;                      /* send/recv only, synchronous     */
    int nochecks;                        /* the call checks off             */
    int shared;                          /* the subs take the world's scratch */
} cfg;

static cfg C;
static coll_threads W;
static coll_hier hier_of[MAXP];
static unsigned long long scr_w[MAXP][SCR / 8], scr_h[MAXP][SCR / 8];
static unsigned long long work_of[MAXP][WORKB / 8];
static unsigned char inb[MAXP][BUFB + GUARD], outb[MAXP][BUFB + GUARD];
static int rc_of[MAXP];
static int quick;                        /* sanitizer builds: fewer counts
                                            (COLL_TEST_LEVEL=0), or for TSan
                                            one dtype and only with work (-1) */

/* ---- the test's own reading of the host map -------------------------------- */
typedef struct map {
    int H, lmin, lmax, even, tident, bident;
    int host[MAXP], li[MAXP];
} map;

static map M;

static void read_map(void)
{
    int r, s, size[MAXP] = { 0 }, first[MAXP], pos = 0, h;
    memset(&M, 0, sizeof M);
    for (r = 0; r < C.p; r++) {
        for (s = 0; s < r && C.key[s] != C.key[r]; s++) continue;
        if (s == r) { first[M.H] = r; M.host[r] = M.H++; }
        else M.host[r] = M.host[s];
        M.li[r] = size[M.host[r]]++;
    }
    (void)first;
    M.lmin = M.lmax = size[0];
    for (h = 1; h < M.H; h++) {
        if (size[h] < M.lmin) M.lmin = size[h];
        if (size[h] > M.lmax) M.lmax = size[h];
    }
    M.even = M.lmin == M.lmax;
    /* world order is local-major when rank r is host r % H, local r / H */
    M.tident = M.even;
    for (r = 0; r < C.p; r++) if (M.even && (M.li[r] * M.H + M.host[r]) != r) M.tident = 0;
    /* and host-major when the hosts' ranks come one host after another */
    M.bident = 1;
    for (h = 0; h < M.H; h++)
        for (r = 0; r < C.p; r++)
            if (M.host[r] == h) { if (r != pos) M.bident = 0; pos++; }
}

/* ---- elements ---------------------------------------------------------------- */
static size_t esize(coll_dtype t) { return coll_dtype_size(t); }

static double get(coll_dtype t, const unsigned char *b, size_t i)
{
    switch (t) {
    case COLL_UINT8: return b[i];
    case COLL_INT32: { int32_t v; memcpy(&v, b + 4 * i, 4); return v; }
    case COLL_FLOAT32: { float v; memcpy(&v, b + 4 * i, 4); return v; }
    case COLL_FLOAT64: { double v; memcpy(&v, b + 8 * i, 8); return v; }
    default: return 0;
    }
}
static void put(coll_dtype t, unsigned char *b, size_t i, double x)
{
    switch (t) {
    case COLL_UINT8: b[i] = (unsigned char)x; break;
    case COLL_INT32: { int32_t v = (int32_t)x; memcpy(b + 4 * i, &v, 4); break; }
    case COLL_FLOAT32: { float v = (float)x; memcpy(b + 4 * i, &v, 4); break; }
    case COLL_FLOAT64: { double v = x; memcpy(b + 8 * i, &v, 8); break; }
    default: break;
    }
}

/* Rank r's element i of a reduction's input: inexact in binary for floats,
   signed for int32 (nonnegative under avg), every bit for uint8. */
static double val(coll_dtype t, coll_op op, int r, size_t i)
{
    switch (t) {
    case COLL_FLOAT32: case COLL_FLOAT64:
        return (double)((r * 37 + (int)(i % 1009) * 11) % 97) * 0.013 + 0.1 * (r + 1);
    case COLL_INT32:
        if (op == COLL_AVG) return (double)((r * 13 + (int)i * 7) % 1000);
        return (double)((r * 7919 + (long)i * 104729) % 20011 - 10000);
    default:
        return (double)((r * 29 + (int)i * 7 + 3) & 255);
    }
}

/* The stored value (a float rounds). */
static double stored(coll_dtype t, coll_op op, int r, size_t i)
{
    unsigned char b[8];
    put(t, b, 0, val(t, op, r, i));
    return get(t, b, 0);
}

/* Element i folded over every rank, and a bound on a float result's error. */
static double ref_reduce(coll_dtype t, coll_op op, size_t i, double *tol)
{
    double acc = 0, mag = 0, x;
    long long iacc = 0;
    int r;
    for (r = 0; r < C.p; r++) {
        x = stored(t, op, r, i);
        mag += fabs(x);
        if (r == 0) { acc = x; iacc = (long long)x; continue; }
        switch (op) {
        case COLL_SUM: case COLL_AVG: acc += x; iacc += (long long)x; break;
        case COLL_MAX: if (x > acc) acc = x; break;
        case COLL_BXOR: iacc ^= (long long)x; break;
        default: break;
        }
    }
    *tol = 0;
    if (op == COLL_BXOR) return (double)(iacc & 255);
    if (t == COLL_INT32 && op == COLL_AVG) return (double)(iacc / C.p);   /* C division truncates */
    if (t == COLL_INT32) return op == COLL_SUM ? (double)iacc : acc;
    if (op == COLL_AVG) { acc /= C.p; mag /= C.p; }
    *tol = (C.p + 2) * mag * (t == COLL_FLOAT32 ? ldexp(1.0, -23) : ldexp(1.0, -52)) * 2;
    return acc;
}

/* Byte k of element i of the block rank s sends rank d (copying kinds). */
static unsigned char pat(int s, int d, size_t i, size_t k)
{
    return (unsigned char)(s * 31 + d * 17 + (int)i * 7 + (int)k * 101 + 1);
}
static void fill_block(unsigned char *b, int s, int d, size_t n, size_t es)
{
    size_t i, k;
    for (i = 0; i < n; i++)
        for (k = 0; k < es; k++) b[i * es + k] = pat(s, d, i, k);
}
static int block_ok(const unsigned char *b, int s, int d, size_t n, size_t es)
{
    size_t i, k;
    for (i = 0; i < n; i++)
        for (k = 0; k < es; k++) if (b[i * es + k] != pat(s, d, i, k)) return 0;
    return 1;
}

static int guard_ok(const unsigned char *b)
{
    int k;
    for (k = 0; k < GUARD; k++) if (b[k] != 0xA5) return 0;
    return 1;
}

/* ---- the cases --------------------------------------------------------------- */
typedef struct tcase {
    coll_kind kind;
    coll_dtype t;
    coll_op op;
    size_t n;
    int inplace, root, work;
} tcase;

/* The road the header documents for this call, from the test's own map. */
static int road_expected(const tcase *c)
{
    int two = M.H > 1 && M.lmax > 1, intavg = c->op == COLL_AVG && c->t == COLL_INT32;
    size_t blk = c->n * esize(c->t), p = (size_t)C.p, work = c->work ? WORKB - 64 : 0, need = 0;
    int rooted = M.li[c->root] < M.lmin;
    if (!two) return COLL_HIER_WORLD;
    switch (c->kind) {
    case COLL_BARRIER: return COLL_HIER_PHASES;
    case COLL_ALLREDUCE: return !M.even || intavg ? COLL_HIER_BYHOST : COLL_HIER_PHASES;
    case COLL_ALLGATHER: return M.even ? COLL_HIER_PHASES : COLL_HIER_BYHOST;
    case COLL_REDUCE_SCATTER:
        if (!M.even) return (M.bident ? 0 : p * blk) > work ? COLL_HIER_WORLD : COLL_HIER_BYHOST;
        need = (M.tident ? 0 : p * blk) + (size_t)M.H * blk;
        return intavg || need > work ? COLL_HIER_WORLD : COLL_HIER_PHASES;
    case COLL_ALLTOALL:
        return !M.even || p * blk > work ? COLL_HIER_WORLD : COLL_HIER_PHASES;
    case COLL_BROADCAST:
        return !rooted ? COLL_HIER_WORLD : blk >= COLL_HIER_CHAIN_BYTES ? COLL_HIER_BYHOST : COLL_HIER_PHASES;
    case COLL_REDUCE:
        return rooted && !(c->op == COLL_AVG && (intavg || !M.even)) ? COLL_HIER_PHASES : COLL_HIER_WORLD;
    case COLL_GATHER: need = (size_t)M.lmax * blk; break;
    case COLL_SCATTER: need = M.bident ? (size_t)M.lmax * blk : p * blk; break;
    default: break;
    }
    return rooted && need <= work ? COLL_HIER_PHASES : COLL_HIER_WORLD;
}

static int hier_call(coll_hier *h, const tcase *c, int r, unsigned char *in, unsigned char *out)
{
    size_t blk = c->n * esize(c->t);
    switch (c->kind) {
    case COLL_ALLREDUCE:
        return coll_hier_allreduce(h, c->inplace ? out : in, out, c->n, c->t, c->op);
    case COLL_REDUCE_SCATTER:
        return c->inplace ? coll_hier_reduce_scatter(h, out, out + (size_t)r * blk, c->n, c->t, c->op)
                          : coll_hier_reduce_scatter(h, in, out, c->n, c->t, c->op);
    case COLL_ALLGATHER:
        return coll_hier_allgather(h, c->inplace ? out + (size_t)r * blk : in, out, c->n, c->t);
    case COLL_BROADCAST:
        return coll_hier_broadcast(h, out, c->n, c->t, c->root);
    case COLL_REDUCE:
        return coll_hier_reduce(h, c->inplace ? out : in, out, c->n, c->t, c->op, c->root);
    case COLL_GATHER:
        return coll_hier_gather(h, c->inplace && r == c->root ? out + (size_t)r * blk : in, out, c->n, c->t, c->root);
    case COLL_SCATTER:
        return c->inplace && r == c->root ? coll_hier_scatter(h, out, out + (size_t)r * blk, c->n, c->t, c->root)
                                          : coll_hier_scatter(h, in, out, c->n, c->t, c->root);
    case COLL_ALLTOALL:
        return coll_hier_alltoall(h, c->inplace ? out : in, out, c->n, c->t);
    case COLL_BARRIER:
        return coll_hier_barrier(h);
    default:
        return COLL_ERR_INVAL;
    }
}

/* Inputs: in (out of place) or out (in place), as the call reads them. */
static void prepare(const tcase *c, int r, unsigned char *in, unsigned char *out)
{
    size_t es = esize(c->t), blk = c->n * es, i, p = (size_t)C.p;
    int d;
    memset(in, 0x5A, BUFB + GUARD);
    memset(out, 0xEE, BUFB);
    memset(out + BUFB, 0xA5, GUARD);
    switch (c->kind) {
    case COLL_ALLREDUCE: case COLL_REDUCE:
        for (i = 0; i < c->n; i++) put(c->t, c->inplace ? out : in, i, val(c->t, c->op, r, i));
        break;
    case COLL_REDUCE_SCATTER:
        for (i = 0; i < p * c->n; i++) put(c->t, c->inplace ? out : in, i, val(c->t, c->op, r, i));
        break;
    case COLL_ALLGATHER:
        fill_block(c->inplace ? out + (size_t)r * blk : in, r, 0, c->n, es);
        break;
    case COLL_BROADCAST:
        if (r == c->root) fill_block(out, r, 0, c->n, es);
        break;
    case COLL_GATHER:
        fill_block(c->inplace && r == c->root ? out + (size_t)r * blk : in, r, 0, c->n, es);
        break;
    case COLL_SCATTER:
        if (r == c->root)
            for (d = 0; d < C.p; d++) fill_block((c->inplace ? out : in) + (size_t)d * blk, r, d, c->n, es);
        break;
    case COLL_ALLTOALL:
        for (d = 0; d < C.p; d++) fill_block((c->inplace ? out : in) + (size_t)d * blk, r, d, c->n, es);
        break;
    default: break;
    }
}

/* This rank's output against the plain loop; the bytes past it untouched. */
static void verify(const tcase *c, int r, const unsigned char *out, const char *what)
{
    size_t es = esize(c->t), blk = c->n * es, i, p = (size_t)C.p, bad = 0, first = 0, len = 0;
    const unsigned char *res = out;
    double tol, want, got;
    int s, ok = 1;
    switch (c->kind) {
    case COLL_ALLREDUCE: len = c->n; break;
    case COLL_REDUCE: len = r == c->root ? c->n : 0; break;
    case COLL_REDUCE_SCATTER:
        len = c->n; first = (size_t)r * c->n;
        if (c->inplace) res = out + (size_t)r * blk;
        break;
    default: break;
    }
    for (i = 0; i < len; i++) {                 /* the reductions */
        want = ref_reduce(c->t, c->op, first + i, &tol);
        got = get(c->t, res, i);
        if (!(fabs(got - want) <= tol)) { if (!bad) first = first + i; bad++; }
    }
    if (len) COLL_CHECK_MSG(bad == 0, "%s rank %d: %zu of %zu elements wrong (first near %zu)", what, r, bad, len, first);
    switch (c->kind) {                          /* the copies */
    case COLL_ALLGATHER:
        for (s = 0; s < C.p; s++) ok &= block_ok(out + (size_t)s * blk, s, 0, c->n, es);
        COLL_CHECK_MSG(ok, "%s rank %d: a block out of place", what, r);
        break;
    case COLL_BROADCAST:
        COLL_CHECK_MSG(block_ok(out, c->root, 0, c->n, es), "%s rank %d: wrong data", what, r);
        break;
    case COLL_GATHER:
        if (r == c->root) {
            for (s = 0; s < C.p; s++) ok &= block_ok(out + (size_t)s * blk, s, 0, c->n, es);
            COLL_CHECK_MSG(ok, "%s root %d: a block out of place", what, r);
        }
        break;
    case COLL_SCATTER:
        COLL_CHECK_MSG(block_ok(out + (c->inplace && r == c->root ? (size_t)r * blk : 0), c->root, r, c->n, es),
                       "%s rank %d: wrong block", what, r);
        break;
    case COLL_ALLTOALL:
        for (s = 0; s < C.p; s++) ok &= block_ok(out + (size_t)s * blk, s, r, c->n, es);
        COLL_CHECK_MSG(ok, "%s rank %d: a block out of place", what, r);
        break;
    default: break;
    }
    (void)p;
    COLL_CHECK_MSG(guard_ok(out + BUFB), "%s rank %d: bytes past the buffer written", what, r);
}

/* The output bytes every rank must agree on (all-reduce: the whole result). */
static size_t agreed_bytes(const tcase *c)
{
    return c->kind == COLL_ALLREDUCE ? c->n * esize(c->t) : 0;
}

static const char *kname(coll_kind k) { return coll_kind_name(k); }

static void one_case(int r, coll_comm *world, const tcase *c)
{
    coll_hier *h = &hier_of[r];
    char what[160];
    int rc, road;
    size_t agree;
    snprintf(what, sizeof what, "%s %s dtype %d op %d n %zu %s root %d work %d", C.name, kname(c->kind),
             (int)c->t, (int)c->op, c->n, c->inplace ? "in place" : "out of place", c->root, c->work);
    prepare(c, r, inb[r], outb[r]);
    rc = hier_call(h, c, r, inb[r], outb[r]);
    road = coll_hier_road(h);
    COLL_CHECK_MSG(rc == COLL_OK, "%s rank %d: rc %d (%s; %s)", what, r, rc, coll_result_str(rc),
                   coll_hier_last_error(h));
    COLL_CHECK_MSG(road == road_expected(c), "%s rank %d: road %d, documented %d", what, r, road, road_expected(c));
    if (rc == COLL_OK) verify(c, r, outb[r], what);
    agree = agreed_bytes(c);
    coll_barrier(world, COLL_ALGO_AUTO);
    if (agree && r > 0)
        COLL_CHECK_MSG(memcmp(outb[r], outb[0], agree) == 0, "%s rank %d: not the bytes of rank 0", what, r);
    coll_barrier(world, COLL_ALGO_AUTO);
}

static const struct { coll_dtype t; coll_op op; } reducing[] = {
    { COLL_FLOAT32, COLL_SUM }, { COLL_FLOAT32, COLL_AVG }, { COLL_FLOAT64, COLL_SUM },
    { COLL_INT32, COLL_MAX }, { COLL_INT32, COLL_AVG }, { COLL_INT32, COLL_SUM }, { COLL_UINT8, COLL_BXOR },
};
static const coll_dtype copying[] = { COLL_UINT8, COLL_INT32, COLL_FLOAT64 };
static const size_t counts_all[] = { 0, 1, 7, 1000 };

static void matrix(int r, coll_comm *world, int work)
{
    static const coll_kind kinds[] = { COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER, COLL_BROADCAST,
                                       COLL_REDUCE, COLL_GATHER, COLL_SCATTER, COLL_ALLTOALL, COLL_BARRIER };
    int roots[3] = { 0, C.p - 1, (C.p / 2 + 1) % C.p };
    unsigned ki, di, ni, ri, ip;
    tcase c;
    for (ki = 0; ki < sizeof kinds / sizeof kinds[0]; ki++) {
        coll_kind k = kinds[ki];
        int reduces = k == COLL_ALLREDUCE || k == COLL_REDUCE_SCATTER || k == COLL_REDUCE;
        int rooted = k == COLL_BROADCAST || k == COLL_REDUCE || k == COLL_GATHER || k == COLL_SCATTER;
        unsigned nd = k == COLL_BARRIER ? 1 : reduces ? sizeof reducing / sizeof reducing[0] : sizeof copying / sizeof copying[0];
        for (di = 0; di < nd; di++)
                for (ni = 0; ni < 4; ni++) {
                    if (k == COLL_BARRIER && ni) break;
                    if (quick && (ni == 2 || (di && ni != 3))) continue;
                    if (quick > 1 && di) continue;
                    for (ri = 0; ri < (rooted ? 3u : 1u); ri++)
                        for (ip = 0; ip < (k == COLL_BARRIER ? 1u : 2u); ip++) {
                            memset(&c, 0, sizeof c);
                            c.kind = k;
                            c.t = reduces ? reducing[di].t : copying[di];
                            c.op = reduces ? reducing[di].op : COLL_SUM;
                            c.n = counts_all[ni];
                            c.inplace = (int)ip;
                            c.root = roots[ri];
                            c.work = work;
                            one_case(r, world, &c);
                        }
                }
    }
}

/* Every dtype with every op it takes, through the three reducing calls,
   with test_values.h's exact inputs (small integers: every partial result
   is exact in every dtype, so only avg of floats rounds, twice here: the
   host's avg, then the hosts'. The first rounding is of a host's mean, so
   the bound is a sum's: 2u (mean |x| + |result|), u the dtype's unit
   roundoff). */
static int sweep_close(coll_dtype t, coll_op op, size_t i, double got, double want)
{
    double d = got - want, tol = 0, mag = 0, x;
    int r;
    if (op == COLL_AVG && t_is_float(t)) {
        for (r = 0; r < C.p; r++) { x = t_input(r, i, t, op); mag += x < 0 ? -x : x; }
        tol = 2 * tv_unit_roundoff(t) * (mag / C.p + (want < 0 ? -want : want));
    }
    return d <= tol && d >= -tol;
}

static void sweep(int r)
{
    static const coll_kind kinds[] = { COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_REDUCE };
    coll_hier *h = &hier_of[r];
    unsigned char *in = inb[r], *out = outb[r];
    int ki, t, op, ip, rc, root = C.p - 1;
    size_t n = 7, i, len, first, es, bad;
    for (ki = 0; ki < 3; ki++)
        for (t = 0; t < (int)COLL_USER_TYPE; t++)
            for (op = 0; op < (int)COLL_USER_OP; op++) {
                if (op >= COLL_BAND && t_is_float((coll_dtype)t)) continue;
                ip = (t + op) % 2;
                es = coll_dtype_size((coll_dtype)t);
                len = kinds[ki] == COLL_REDUCE_SCATTER ? (size_t)C.p * n : n;
                memset(out, 0xEE, BUFB);
                memset(out + BUFB, 0xA5, GUARD);
                for (i = 0; i < len; i++)
                    t_put((coll_dtype)t, ip ? out : in, i, t_input(r, i, (coll_dtype)t, (coll_op)op));
                if (kinds[ki] == COLL_ALLREDUCE)
                    rc = coll_hier_allreduce(h, ip ? out : in, out, n, (coll_dtype)t, (coll_op)op);
                else if (kinds[ki] == COLL_REDUCE)
                    rc = coll_hier_reduce(h, ip ? out : in, out, n, (coll_dtype)t, (coll_op)op, root);
                else
                    rc = ip ? coll_hier_reduce_scatter(h, out, out + (size_t)r * n * es, n, (coll_dtype)t, (coll_op)op)
                            : coll_hier_reduce_scatter(h, in, out, n, (coll_dtype)t, (coll_op)op);
                COLL_CHECK_MSG(rc == COLL_OK, "%s sweep %s dtype %d op %d rank %d: rc %d", C.name,
                               coll_kind_name(kinds[ki]), t, op, r, rc);
                if (rc != COLL_OK) continue;
                first = kinds[ki] == COLL_REDUCE_SCATTER ? (size_t)r * n : 0;
                bad = 0;
                if (kinds[ki] != COLL_REDUCE || r == root)
                    for (i = 0; i < n; i++) {
                        const unsigned char *res = ip && kinds[ki] == COLL_REDUCE_SCATTER ? out + (size_t)r * n * es : out;
                        if (!sweep_close((coll_dtype)t, (coll_op)op, first + i, t_get((coll_dtype)t, res, i),
                                         t_reduce_ref((coll_dtype)t, (coll_op)op, C.p, first + i))) bad++;
                    }
                COLL_CHECK_MSG(bad == 0, "%s sweep %s dtype %d op %d %s rank %d: %zu of %zu wrong", C.name,
                               coll_kind_name(kinds[ki]), t, op, ip ? "in place" : "out of place", r, bad, n);
                COLL_CHECK_MSG(guard_ok(out + BUFB), "%s sweep rank %d: bytes past the buffer written", C.name, r);
            }
}

/* User operators on a user type of two int32s: commutative (sum, max) may
   take the phases; one whose order matters (a = 3a + b, wrapping) must be
   folded in rank order: the flat road over the world. */
static void user_fold(void *o, const void *a, const void *b, size_t n, void *u)
{
    const int32_t *x = (const int32_t *)a, *y = (const int32_t *)b;
    int32_t *z = (int32_t *)o;
    size_t i;
    (void)u;
    for (i = 0; i < n; i++) {
        int32_t s = (int32_t)((uint32_t)x[2 * i] + (uint32_t)y[2 * i]);
        int32_t m = x[2 * i + 1] > y[2 * i + 1] ? x[2 * i + 1] : y[2 * i + 1];
        z[2 * i] = s; z[2 * i + 1] = m;
    }
}
static void user_chain(void *o, const void *a, const void *b, size_t n, void *u)
{
    const uint32_t *x = (const uint32_t *)a, *y = (const uint32_t *)b;
    uint32_t *z = (uint32_t *)o;
    size_t i;
    (void)u;
    for (i = 0; i < 2 * n; i++) z[i] = x[i] * 3u + y[i];
}

static void user_ops(int r)
{
    coll_hier *h = &hier_of[r];
    coll_user_op op;
    int32_t x[2 * 7], y[2 * 7];
    int i, s, rc, kind, two = M.H > 1 && M.lmax > 1, ok;
    for (kind = 0; kind < 2; kind++) {
        memset(&op, 0, sizeof op);
        op.fn = kind ? user_chain : user_fold;
        op.elem_size = 8;
        op.commutative = !kind;
        rc = coll_hier_set_user_op(h, &op);
        COLL_CHECK_EQ(rc, COLL_OK);
        for (i = 0; i < 14; i++) x[i] = (int32_t)(r * 1000003 + i * 7919 - 50000);
        rc = coll_hier_allreduce(h, x, y, 7, COLL_USER_TYPE, COLL_USER_OP);
        COLL_CHECK_MSG(rc == COLL_OK, "%s user op %d rank %d: rc %d", C.name, kind, r, rc);
        COLL_CHECK_MSG(coll_hier_road(h) == (!two ? COLL_HIER_WORLD : kind ? COLL_HIER_WORLD :
                                             M.even ? COLL_HIER_PHASES : COLL_HIER_BYHOST),
                       "%s user op %d rank %d: road %d", C.name, kind, r, coll_hier_road(h));
        ok = 1;
        for (i = 0; i < 7; i++) {
            uint32_t a = 0, c = 0;
            int32_t m = 0;
            for (s = 0; s < C.p; s++) {
                uint32_t u0 = (uint32_t)(s * 1000003 + (2 * i) * 7919 - 50000);
                uint32_t u1 = (uint32_t)(s * 1000003 + (2 * i + 1) * 7919 - 50000);
                if (kind) { a = s ? a * 3u + u0 : u0; c = s ? c * 3u + u1 : u1; }
                else { a += u0; m = s == 0 || (int32_t)u1 > m ? (int32_t)u1 : m; }
            }
            if (kind) ok &= (uint32_t)y[2 * i] == a && (uint32_t)y[2 * i + 1] == c;
            else ok &= (uint32_t)y[2 * i] == a && y[2 * i + 1] == m;
        }
        COLL_CHECK_MSG(ok, "%s user op %d rank %d: wrong result", C.name, kind, r);
    }
}

/* Local index 0 of host 0 passes no dst to an all-reduce: it is refused
   there, and every other rank, on every host, gets an error too (none
   waits). Then the communicators still work. */
static void refusal(int r)
{
    coll_hier *h = &hier_of[r];
    float x[4] = { 1, 2, 3, 4 }, y[4];
    int rc, bad = M.host[r] == 0 && M.li[r] == 0;
    /* a count whose blocks overflow a size_t: refused everywhere, no crash */
    rc = coll_hier_alltoall(h, x, y, ((size_t)-1) / 4, COLL_FLOAT32);
    COLL_CHECK_MSG(rc == COLL_ERR_INVAL, "%s rank %d: a huge all-to-all gave %d", C.name, r, rc);
    rc = coll_hier_reduce_scatter(h, x, y, ((size_t)-1) / 16, COLL_FLOAT64, COLL_SUM);
    COLL_CHECK_MSG(rc == COLL_ERR_INVAL, "%s rank %d: a huge reduce-scatter gave %d", C.name, r, rc);
    if (!(M.H > 1 && M.lmax > 1 && M.even)) return;
    rc = coll_hier_allreduce(h, x, bad ? NULL : y, 4, COLL_FLOAT32, COLL_SUM);
    COLL_CHECK_MSG(rc != COLL_OK, "%s rank %d: a refusal on host 0 was not told (rc %d)", C.name, r, rc);
    rc = coll_hier_allreduce(h, x, y, 4, COLL_FLOAT32, COLL_SUM);
    COLL_CHECK_MSG(rc == COLL_OK && y[3] == 4.0f * (float)C.p, "%s rank %d: after the refusal rc %d", C.name, r, rc);
}

/* ---- work at its threshold, and the bytes that cross hosts ------------------ */

/* A work buffer of exactly what the call needs takes the phases; one byte
   less, the flat road; both right. work_of[r] from its first 64-aligned
   byte, so that coll_hier_init keeps every byte. */
static void threshold(int r, coll_comm *world)
{
    static const coll_kind kinds[] = { COLL_REDUCE_SCATTER, COLL_ALLTOALL, COLL_GATHER, COLL_SCATTER };
    unsigned char *w = (unsigned char *)work_of[r];
    size_t need, k;
    int less, rc;
    tcase c;
    w += (64 - (size_t)((uintptr_t)w % 64)) % 64;
    if (!(M.H > 1 && M.lmax > 1)) return;
    for (k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (less = 0; less < 2; less++) {
            memset(&c, 0, sizeof c);
            c.kind = kinds[k]; c.t = c.kind == COLL_REDUCE_SCATTER ? COLL_FLOAT32 : COLL_INT32;
            c.op = COLL_SUM; c.n = 7; c.root = C.p - 1;
            need = coll_hier_work_bytes(&hier_of[r], c.kind, c.n, c.t);
            if (!need) continue;                /* (uneven hosts: the world's) */
            rc = coll_hier_init(&hier_of[r], world, C.key[r], scr_h[r], sizeof scr_h[r], w, need - (size_t)less);
            COLL_CHECK_MSG(rc == COLL_OK, "%s rank %d: init with %zu work: rc %d", C.name, r, need, rc);
            if (rc != COLL_OK) return;
            c.work = 1;
            prepare(&c, r, inb[r], outb[r]);
            rc = hier_call(&hier_of[r], &c, r, inb[r], outb[r]);
            COLL_CHECK_MSG(rc == COLL_OK, "%s %s threshold rank %d: rc %d", C.name, kname(c.kind), r, rc);
            COLL_CHECK_MSG(coll_hier_road(&hier_of[r]) == (less ? COLL_HIER_WORLD : road_expected(&c)),
                           "%s %s with %zu of %zu work bytes, rank %d: road %d", C.name, kname(c.kind),
                           need - (size_t)less, need, r, coll_hier_road(&hier_of[r]));
            if (rc == COLL_OK) verify(&c, r, outb[r], "threshold");
        }
}

/* AUTO with a cost per level: coll_hier_choose's pick for three pairs of
   level constants against the test's own loop over every choice (every
   flat algorithm, every combination of the phases' algorithms, through
   coll_hier_cost): the least time, phases on a tie; the same pick on every
   rank; and the call with the model on takes the pick's road and gives
   the plain loop's result. */
#define NMODEL 81
static coll_hier_pick picks_of[MAXP][NMODEL];
static coll_tuning tuned_of[MAXP][2];
static double now_s(void *ctx)
{
    struct timespec ts;
    (void)ctx;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
static void model(int r, coll_comm *world)
{
    static const coll_kind kinds[] = { COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER, COLL_BROADCAST, COLL_REDUCE,
                                       COLL_GATHER, COLL_SCATTER, COLL_ALLTOALL, COLL_BARRIER };
    static const coll_tuning lv[3][2] = {
        { { 2e-6, 6.3e-11, 6.3e-13 }, { 5e-5, 8e-9, 6.3e-13 } },      /* a slow link between hosts */
        { { 2e-6, 6.3e-11, 6.3e-13 }, { 2e-6, 6.3e-11, 6.3e-13 } },   /* one link everywhere */
        { { 1e-7, 1e-11, 6.3e-13 }, { 1e-3, 1e-10, 6.3e-13 } },       /* latency across */
    };
    static const size_t ns[] = { 1, 7, 1000 };
    coll_hier *h = &hier_of[r];
    unsigned ti, ki, ni;
    int ci = 0, roads[2] = { 0, 0 };
    for (ti = 0; ti < 3; ti++)
        for (ki = 0; ki < sizeof kinds / sizeof kinds[0]; ki++)
            for (ni = 0; ni < 3; ni++, ci++) {
                tcase c;
                coll_hier_pick pk, ch;
                char what[160];
                int rc, a, want_road, road;
                memset(&c, 0, sizeof c);
                c.kind = kinds[ki]; c.t = COLL_FLOAT64; c.op = COLL_SUM; c.n = ns[ni];
                c.root = C.p - 1; c.work = 1;
                snprintf(what, sizeof what, "%s model %u %s n %zu", C.name, ti, kname(c.kind), c.n);
                rc = coll_hier_choose(h, c.kind, c.n, c.t, c.op, c.root, &lv[ti][0], &lv[ti][1], &pk);
                COLL_CHECK_MSG(rc == COLL_OK, "%s rank %d: choose rc %d", what, r, rc);
                picks_of[r][ci] = pk;
                if (r == 0 && (quick == 0 || ni == 2)) {    /* the argmin, by the test's own loop */
                    double flat = COLL_HIER_NEVER, ph = COLL_HIER_NEVER, x, best;
                    int i0, i1, i2, A = (int)COLL_ALGO_COUNT;
                    memset(&ch, 0, sizeof ch);
                    ch.road = COLL_HIER_WORLD;
                    for (a = 1; a < A; a++) {
                        ch.flat = (coll_algo)a;
                        x = coll_hier_cost(h, c.kind, c.n, c.t, c.op, c.root, &lv[ti][0], &lv[ti][1], &ch);
                        if (x < flat) flat = x;
                    }
                    ch.road = COLL_HIER_PHASES;
                    ch.nphases = pk.nphases;
                    for (i0 = 1; i0 < A; i0++)
                        for (i1 = 1; i1 < (pk.nphases > 1 ? A : 2); i1++)
                            for (i2 = 1; i2 < (pk.nphases > 2 ? A : 2); i2++) {
                                ch.phase[0] = (coll_algo)i0; ch.phase[1] = (coll_algo)i1; ch.phase[2] = (coll_algo)i2;
                                x = coll_hier_cost(h, c.kind, c.n, c.t, c.op, c.root, &lv[ti][0], &lv[ti][1], &ch);
                                if (x < ph) ph = x;
                            }
                    want_road = ph < COLL_HIER_NEVER && ph <= flat ? COLL_HIER_PHASES : COLL_HIER_WORLD;
                    best = want_road == COLL_HIER_PHASES ? ph : flat;
                    x = coll_hier_cost(h, c.kind, c.n, c.t, c.op, c.root, &lv[ti][0], &lv[ti][1], &pk);
                    COLL_CHECK_MSG(pk.road == want_road && pk.cost == best && x == best && best < COLL_HIER_NEVER,
                                   "%s: pick road %d cost %g (its cost %g), the loop's road %d: flat %g, phases %g",
                                   what, pk.road, pk.cost, x, want_road, flat, ph);
                    roads[pk.road == COLL_HIER_PHASES]++;
                }
                /* the call, with the model on and these constants */
                rc = coll_hier_set_tuning(h, &lv[ti][0], &lv[ti][1]);
                if (rc == COLL_OK) rc = coll_hier_set_model(h, 1);
                COLL_CHECK_MSG(rc == COLL_OK, "%s rank %d: set rc %d", what, r, rc);
                prepare(&c, r, inb[r], outb[r]);
                rc = hier_call(h, &c, r, inb[r], outb[r]);
                road = coll_hier_road(h);
                want_road = road_expected(&c);
                if (c.kind == COLL_BROADCAST && want_road == COLL_HIER_BYHOST && M.even)
                    want_road = COLL_HIER_PHASES;       /* the chain: the model-off road (and uneven hosts') */
                want_road = want_road == COLL_HIER_PHASES && M.even ? pk.road : want_road;
                COLL_CHECK_MSG(rc == COLL_OK, "%s rank %d: rc %d (%s)", what, r, rc, coll_hier_last_error(h));
                COLL_CHECK_MSG(road == want_road, "%s rank %d: road %d, the pick's %d", what, r, road, want_road);
                if (rc == COLL_OK) verify(&c, r, outb[r], what);
                coll_hier_set_model(h, 0);
                coll_barrier(world, COLL_ALGO_AUTO);
                if (r > 0)
                    COLL_CHECK_MSG(memcmp(&picks_of[r][ci], &picks_of[0][ci], sizeof pk) == 0,
                                   "%s rank %d: a pick other than rank 0's", what, r);
            }
    /* the per-level probe: every rank ends with host 0's figures inside
       and local index 0's across, measured (not the defaults), and a pick
       from them is the same everywhere */
    {
        coll_hier_pick pk;
        int rc = coll_hier_tune(h, now_s, NULL), two = M.H > 1 && M.lmax > 1;
        COLL_CHECK_MSG(rc == COLL_OK, "%s rank %d: coll_hier_tune rc %d (%s)", C.name, r, rc, coll_hier_last_error(h));
        tuned_of[r][0].alpha = h->local.tune.alpha; tuned_of[r][0].beta = h->local.tune.beta;
        tuned_of[r][0].gamma = h->local.tune.gamma;
        tuned_of[r][1].alpha = h->cross.tune.alpha; tuned_of[r][1].beta = h->cross.tune.beta;
        tuned_of[r][1].gamma = h->cross.tune.gamma;
        rc = coll_hier_choose(h, COLL_ALLREDUCE, 1000, COLL_FLOAT32, COLL_SUM, 0, NULL, NULL, &picks_of[r][0]);
        COLL_CHECK_MSG(rc == COLL_OK, "%s rank %d: choose after tune rc %d", C.name, r, rc);
        coll_barrier(world, COLL_ALGO_AUTO);
        if (r > 0)
            COLL_CHECK_MSG(memcmp(tuned_of[r], tuned_of[0], sizeof tuned_of[0]) == 0 &&
                           memcmp(&picks_of[r][0], &picks_of[0][0], sizeof pk) == 0,
                           "%s rank %d: tuned constants or pick other than rank 0's", C.name, r);
        if (two)
            COLL_CHECK_MSG(tuned_of[r][0].alpha > 0 && tuned_of[r][1].alpha > 0 &&
                           (tuned_of[r][0].alpha != lv[0][0].alpha || tuned_of[r][1].alpha != lv[0][1].alpha),
                           "%s rank %d: tune left alpha %g / %g", C.name, r, tuned_of[r][0].alpha, tuned_of[r][1].alpha);
        coll_barrier(world, COLL_ALGO_AUTO);
    }
    if (r == 0 && M.H > 1 && M.lmax > 1 && M.even && quick == 0) {
        printf("model %s: %d choices by the phases, %d flat (the loop agreed on all)\n", C.name, roads[1], roads[0]);
        COLL_CHECK_MSG(roads[0] > 0 && roads[1] > 0, "model %s: the constants chose one road only (%d phases, %d flat)",
                       C.name, roads[1], roads[0]);
    }
}

/* The threads port with a count of the bytes each rank sends to another
   host (the test's map). Every call goes through to the inner port. */
typedef struct cport { coll_port in; int rank; unsigned long long cross; } cport;
static cport cports[MAXP];
static void count_send(cport *q, int peer, size_t n)
{
    if (peer >= 0 && peer < C.p && M.host[peer] != M.host[q->rank]) q->cross += n;
}
static int c_send(void *x, int peer, const void *b, size_t n)
{
    cport *q = (cport *)x; count_send(q, peer, n); return q->in.send(q->in.ctx, peer, b, n);
}
static int c_recv(void *x, int peer, void *b, size_t n)
{
    cport *q = (cport *)x; return q->in.recv(q->in.ctx, peer, b, n);
}
static int c_isend(void *x, int peer, const void *b, size_t n, int *hd)
{
    cport *q = (cport *)x;
    int rc = q->in.isend(q->in.ctx, peer, b, n, hd);
    if (rc == COLL_OK) count_send(q, peer, n);
    return rc;
}
static int c_irecv(void *x, int peer, void *b, size_t n, int *hd)
{
    cport *q = (cport *)x; return q->in.irecv(q->in.ctx, peer, b, n, hd);
}
static int c_wait(void *x, int hd, int block)
{
    cport *q = (cport *)x; return q->in.wait(q->in.ctx, hd, block);
}
static void c_abort(void *x, int code)
{
    cport *q = (cport *)x; if (q->in.abort) q->in.abort(q->in.ctx, code);
}

/* All-reduce of 256 KiB of float32: the bytes a rank sends across hosts,
   flat over the world and hierarchical. The phases' share is the cross
   all-reduce of n/L bytes (ring or pairs: 2(H-1)/H n/L) plus the call
   checks' small frames; the flat ring over interleaved ranks crosses at
   every hop. */
#define XN 65536
static unsigned long long cross_flat[MAXP], cross_hier[MAXP];
static int traffic_body(int r, void *arg)
{
    static float xs[MAXP][XN], xd[MAXP][XN];
    coll_comm world;
    coll_port port;
    cport *q = &cports[r];
    size_t i;
    int rc;
    (void)arg;
    q->in = coll_threads_port(&W, r); q->rank = r; q->cross = 0;
    memset(&port, 0, sizeof port);
    port.ctx = q; port.send = c_send; port.recv = c_recv;
    port.isend = c_isend; port.irecv = c_irecv; port.wait = c_wait; port.abort = c_abort;
    rc = coll_init(&world, r, C.p, &port, scr_w[r], sizeof scr_w[r]);
    if (rc == COLL_OK)
        rc = coll_hier_init(&hier_of[r], &world, C.key[r], scr_h[r], sizeof scr_h[r], work_of[r], sizeof work_of[r]);
    if (rc == COLL_OK && arg) {                 /* across: a 1 Gbit/s link, 50 us a message */
        coll_tuning slow;
        slow.alpha = 5e-5; slow.beta = 8e-9; slow.gamma = 6.3e-13;
        rc = coll_hier_set_tuning(&hier_of[r], NULL, &slow);
    }
    COLL_CHECK_MSG(rc == COLL_OK, "traffic %s rank %d: init rc %d", C.name, r, rc);
    if (rc != COLL_OK) return 0;
    for (i = 0; i < XN; i++) xs[r][i] = (float)((r + 1) * (int)(i % 5));
    coll_barrier(&world, COLL_ALGO_AUTO);
    q->cross = 0;
    rc = coll_allreduce(&world, xs[r], xd[r], XN, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
    cross_flat[r] = q->cross;
    COLL_CHECK_MSG(rc == COLL_OK && xd[r][XN - 1] == (float)(C.p * (C.p + 1) / 2 * ((XN - 1) % 5)),
                   "traffic %s rank %d: flat rc %d", C.name, r, rc);
    coll_barrier(&world, COLL_ALGO_AUTO);
    q->cross = 0;
    rc = coll_hier_allreduce(&hier_of[r], xs[r], xd[r], XN, COLL_FLOAT32, COLL_SUM);
    cross_hier[r] = q->cross;
    COLL_CHECK_MSG(rc == COLL_OK && xd[r][XN - 1] == (float)(C.p * (C.p + 1) / 2 * ((XN - 1) % 5)),
                   "traffic %s rank %d: hier rc %d", C.name, r, rc);
    return 0;
}

static void traffic(const char *name, int p, const int *key, int tuned)
{
    unsigned long long fl = 0, hi = 0, n = (unsigned long long)XN * 4, bound;
    int r, rc;
    C.name = name; C.p = p;
    for (r = 0; r < p; r++) C.key[r] = key[r];
    read_map();
    rc = coll_threads_init(&W, p, 30000);
    COLL_CHECK_EQ(rc, COLL_OK);
    if (rc != COLL_OK) return;
    coll_threads_run(&W, traffic_body, tuned ? &W : NULL);
    coll_threads_destroy(&W);
    for (r = 0; r < p; r++) { if (cross_flat[r] > fl) fl = cross_flat[r]; if (cross_hier[r] > hi) hi = cross_hier[r]; }
    /* the most any rank sends across: the ring's share, and 8 KiB of frames */
    bound = 2 * (unsigned long long)(M.H - 1) * (n / (unsigned long long)M.lmax) / (unsigned long long)M.H + 8192;
    printf("traffic %s%s: 256 KiB all-reduce, most bytes a rank sends across hosts: flat %llu, hierarchical %llu (ring share %llu)\n",
           name, tuned ? ", slow link told" : "", fl, hi, bound - 8192);
    /* AUTO's pick across may be any all-reduce: at most lg H times the shard */
    if (!tuned) bound = (unsigned long long)(M.H > 2 ? 2 : 1) * (n / (unsigned long long)M.lmax) + 8192;
    COLL_CHECK_MSG(hi <= bound, "traffic %s: hierarchical sends %llu across, over %llu", name, hi, bound);
    COLL_CHECK_MSG(hi <= fl, "traffic %s: hierarchical %llu above flat %llu", name, hi, fl);
}

static int body(int r, void *arg)
{
    coll_comm world;
    coll_port port = C.rendezvous ? coll_rendezvous_port(&W, r) : coll_threads_port(&W, r);
    int rc;
    (void)arg;
    rc = coll_init(&world, r, C.p, &port, scr_w[r], sizeof scr_w[r]);
    COLL_CHECK_EQ(rc, COLL_OK);
    if (rc != COLL_OK) return 0;
    if (C.nochecks) coll_set_checks(&world, 0);     /* (the subs inherit it) */
    rc = coll_hier_init(&hier_of[r], &world, C.key[r], C.shared ? scr_w[r] : scr_h[r], sizeof scr_h[r],
                        work_of[r], sizeof work_of[r]);
    COLL_CHECK_MSG(rc == COLL_OK, "%s rank %d: init rc %d (%s)", C.name, r, rc, coll_hier_last_error(&hier_of[r]));
    if (rc != COLL_OK) return 0;
    {
        int H = -1, L = -1, host = -1, li = -1;
        coll_hier_shape(&hier_of[r], &H, &L, &host, &li);
        COLL_CHECK_MSG(H == M.H && L == M.lmax && host == M.host[r] && li == M.li[r],
                       "%s rank %d: shape %d %d %d %d", C.name, r, H, L, host, li);
    }
    matrix(r, &world, 1);
    if (C.rendezvous || C.nochecks || C.shared) return 0;   /* (the variants: the matrix) */
    sweep(r);
    user_ops(r);
    refusal(r);
    model(r, &world);
    /* no work: the calls that stage take the flat roads */
    rc = coll_hier_init(&hier_of[r], &world, C.key[r], scr_h[r], sizeof scr_h[r], NULL, 0);
    COLL_CHECK_MSG(rc == COLL_OK, "%s rank %d: init without work rc %d", C.name, r, rc);
    if (rc == COLL_OK && quick < 2) matrix(r, &world, 0);
    threshold(r, &world);
    /* work sizes that differ: every rank refuses alike */
    rc = coll_hier_init(&hier_of[r], &world, C.key[r], scr_h[r], sizeof scr_h[r], work_of[r],
                        r == C.p - 1 ? 128 : 256);
    rc_of[r] = rc;
    if (C.p > 1) COLL_CHECK_MSG(rc == COLL_ERR_MISMATCH, "%s rank %d: differing work sizes gave %d", C.name, r, rc);
    return 0;
}

static void run_cfg(const char *name, int p, const int *key)
{
    int rc, r;
    C.name = name; C.p = p; C.rendezvous = C.nochecks = C.shared = 0;
    if (strstr(name, "shared scratch")) C.shared = 1;
    if (strstr(name, "rendezvous")) C.rendezvous = 1;
    if (strstr(name, "checks off")) C.nochecks = 1;
    for (r = 0; r < p; r++) C.key[r] = key[r];
    read_map();
    rc = coll_threads_init(&W, p, 30000);
    COLL_CHECK_EQ(rc, COLL_OK);
    if (rc != COLL_OK) return;
    coll_threads_run(&W, body, NULL);
    coll_threads_destroy(&W);
}

int main(void)
{
    static const int grid[][2] = { { 1, 1 }, { 2, 2 }, { 4, 2 }, { 2, 4 }, { 8, 1 }, { 3, 3 } };
    static const int uneven_a[] = { 0, 0, 1, 1, 1 }, uneven_b[] = { 7, 7, 7, 3, 3 },
                     uneven_c[] = { 5, 9, 9, 2, 2, 9 };
    const char *lv = getenv("COLL_TEST_LEVEL");
    int key[MAXP], g, r, kind;
    char name[64];
    quick = !lv ? 0 : lv[0] == '0' ? 1 : lv[0] == '-' ? 2 : 0;
    for (g = 0; g < (int)(sizeof grid / sizeof grid[0]); g++) {
        int H = grid[g][0], L = grid[g][1], p = H * L;
        for (kind = 0; kind < 2; kind++) {
            if (kind && (H == 1 || L == 1)) break;   /* both maps are the same */
            for (r = 0; r < p; r++) key[r] = kind == 0 ? r % H : r / L;
            snprintf(name, sizeof name, "%dx%d %s", H, L, kind == 0 ? "interleaved" : "host-major");
            run_cfg(name, p, key);
        }
    }
    run_cfg("2+3 host-major", 5, uneven_a);
    run_cfg("3+2 host-major", 5, uneven_b);
    run_cfg("1+3+2 scattered", 6, uneven_c);
    /* a synchronous send/recv-only port, and the call checks off: the
       quick matrix on one map of each kind */
    {
        int save = quick;
        quick = quick ? quick : 1;
        for (r = 0; r < 8; r++) key[r] = r / 4;
        run_cfg("2x4 host-major, rendezvous", 8, key);
        run_cfg("2x4 host-major, checks off", 8, key);
        for (r = 0; r < 9; r++) key[r] = r % 3;
        run_cfg("3x3 interleaved, rendezvous", 9, key);
        run_cfg("3x3 interleaved, checks off", 9, key);
        run_cfg("2+3 host-major, rendezvous", 5, uneven_a);
        run_cfg("1+3+2 scattered, checks off", 6, uneven_c);
        run_cfg("1+3+2 scattered, shared scratch", 6, uneven_c);
        for (r = 0; r < 8; r++) key[r] = r % 4;
        run_cfg("4x2 interleaved, shared scratch", 8, key);
        quick = save;
    }
    for (r = 0; r < 8; r++) key[r] = r % 2;
    traffic("2x4 interleaved", 8, key, 0);
    for (r = 0; r < 8; r++) key[r] = r / 4;
    traffic("2x4 host-major", 8, key, 0);
    for (r = 0; r < 8; r++) key[r] = r % 4;
    traffic("4x2 interleaved", 8, key, 0);
    traffic("4x2 interleaved", 8, key, 1);
    for (r = 0; r < 8; r++) key[r] = r / 2;
    traffic("4x2 host-major", 8, key, 1);
    return coll_test_summary("hier");
}
