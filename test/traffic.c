/* traffic.c - every algorithm over the counting port: the bytes each rank
   really sent and the rounds it really took, next to the algorithm's
   documented cost. One TSV row per (collective, algorithm, ranks, bytes);
   a row whose measurement differs from its formula is marked and makes
   the program exit non-zero.

   bytes is the size of the whole vector (all-reduce, broadcast, reduce) or
   of all blocks together (the block-wise collectives). A round is one call
   of the port (send, recv or sendrecv); messages are not cut, since
   scratch is large, except for the pipelined algorithms, which run with
   C = 4 chunks. Counts divide by p, so the formulas are exact.

   The newer collectives follow (scan, exscan, linear reduce, gatherv,
   scatterv, in-place all-to-all): their rows at the same p and sizes, the
   v forms with ragged per-rank counts (bytes is their total), and then,
   without a row unless it fails, every p from 1 to 16 with counts that no
   p divides, zeros among them. Root 0 throughout.

   Last, alltoallv (pairwise, out of place and in place) over ragged p x p
   matrices with empty blocks (bytes is the whole matrix; in place, a
   symmetric one): rank r sends row r less its diagonal, one message per
   nonempty block, in p-1 steps (in place: the p-step swap schedule); a
   step where both halves are empty costs no round. Rows at the same p and
   sizes, then every p from 1 to 16, checked, no row unless it fails.

   Then the algorithms added since, at the same p and sizes (their rows
   come after all the above, which stay as they were), and at every other
   p up to 16 that divides the sizes, checked, no row unless it fails:
   the reversed Bruck reduce-scatter (in place) and all-reduce, lg p
   rounds each way, ring's bytes; the double-tree all-reduce in C = 4
   chunks (two per tree), 2n bytes at a rank with a parent and two
   children, its rounds from the trees built here on their own.

   Last, the small calls' dissemination rows (their own steps: the call
   checks are off here), at the table's p and then every p from 1 to 16,
   with blocks of 1, 2 and 5 floats (a whole vector of them for the
   collectives that scatter) where they fit the room: lg p rounds, and
   every rank sends the p - 1 others' blocks once, each 8-aligned. */
#define COLL_IMPLEMENTATION
#include "../coll.h"
#define COLL_THREADS_IMPLEMENTATION
#include "../ports/coll_threads.h"
#include "test_ports.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXP 16
#define MAXN (5040 * 16)

static coll_threads world;
static coll_counting counters[MAXP];
static float src[MAXP][MAXN], dst[MAXP][MAXN];
static unsigned char scratch[MAXP][2 * MAXN * 4];
static coll_args args;
static size_t scratch_bytes;
static int inplace;                     /* src == dst (the in-place all-to-all) */
static size_t vcounts[MAXP];            /* the v forms' per-rank counts */
static size_t matrix[MAXP * MAXP];      /* alltoallv's counts: row i to rank j */
static int failures;

static int run_rank(int rank, void *arg)
{
    coll_comm c;
    coll_port inner = coll_threads_port(&world, rank), port;
    coll_args a = args;
    int rc;
    (void)arg;
    coll_counting_init(&counters[rank], &inner);
    port = coll_counting_port(&counters[rank]);
    coll_init(&c, rank, world.nranks, &port, scratch[rank], scratch_bytes);
    coll_set_checks(&c, 0);     /* the formulas count the schedule's own messages;
                                   the call check adds lg p frames of 24 bytes */
    a.src = src[rank];
    a.dst = dst[rank];
    if (a.algo == COLL_ALGO_RECURSIVE_HALVING ||          /* run in place only */
        (a.kind == COLL_REDUCE_SCATTER && (a.algo == COLL_ALGO_REVERSED_BRUCK || a.algo == COLL_ALGO_SWING)))
        a.dst = src[rank] + (size_t)rank * a.count;
    if (a.kind == COLL_BARRIER) a.src = a.dst = 0;
    if (inplace) a.dst = src[rank];
    rc = coll_run(&c, &a);
    if (rc != COLL_OK) {
        fprintf(stderr, "%s/%s p=%d: %s\n", coll_kind_name(a.kind), coll_algo_name(a.algo),
                world.nranks, coll_result_str(rc));
        return 1;
    }
    return 0;
}

/* Runs `args` on p ranks; the busiest rank's bytes sent and rounds. */
static void measure(int p, uint64_t *bytes, uint64_t *rounds)
{
    int r;
    *bytes = *rounds = 0;
    coll_threads_init(&world, p, 0);
    if (coll_threads_run(&world, run_rank, 0) != 0) failures++;
    coll_threads_destroy(&world);
    for (r = 0; r < p; r++) {
        if (counters[r].bytes_sent > *bytes) *bytes = counters[r].bytes_sent;
        if (counters[r].rounds > *rounds) *rounds = counters[r].rounds;
    }
}

static int lg(int p) { int l = 0; while ((1 << l) < p) l++; return l; }
static int pow2_below(int p) { int q = 1; while (q * 2 <= p) q *= 2; return q; }

/* The documented cost of the busiest rank: bytes sent and rounds. n is the
   row's byte count, C the number of pipeline chunks, g the group size. */
static void formula(coll_kind k, coll_algo a, int p, double n, int C, int g,
                    double *bytes, double *rounds)
{
    int L = lg(p), p2 = pow2_below(p), L2 = lg(p2), rem = p > p2, ng, j;
    if (g > p) g = p;
    ng = (p + g - 1) / g;
    double blk = n / p;
    *bytes = 0; *rounds = 0;
    switch (k) {
    case COLL_ALLREDUCE:
        switch (a) {
        case COLL_ALGO_NAIVE: *bytes = (p - 1) * n; *rounds = 2 * (p - 1); break;
        case COLL_ALGO_RING:  *bytes = 2.0 * (p - 1) / p * n; *rounds = 2 * (p - 1); break;
        case COLL_ALGO_TREE:  *bytes = L * n; *rounds = 2 * L; break;
        case COLL_ALGO_RECURSIVE_DOUBLING: *bytes = (L2 + rem) * n; *rounds = L2 + 2 * rem; break;
        case COLL_ALGO_RABENSEIFNER:
            *bytes = 2.0 * (p2 - 1) / p2 * n + rem * n; *rounds = 2 * L2 + 2 * rem; break;
        case COLL_ALGO_HIERARCHICAL:
            *bytes = lg(g) * n + (ng > 1 ? 2.0 * (ng - 1) / ng * n : 0);
            *rounds = 2 * lg(g) + 2 * (ng - 1); break;
        case COLL_ALGO_PIPELINED_TREE:   /* busiest node: parent and two children */
            if (p == 2) { *bytes = n; *rounds = 2 * C; }
            else if (p <= 4) { *bytes = 2 * n; *rounds = 4 * C; }
            else { *bytes = 3 * n; *rounds = 4 * C + 2; }
            break;
        default: break;
        }
        break;
    case COLL_REDUCE_SCATTER:
        if (a == COLL_ALGO_RECURSIVE_HALVING) {
            *bytes = rem ? n : (double)(p - 1) * blk; *rounds = L2 + 2 * rem;
        } else { *bytes = (p - 1) * blk; *rounds = p - 1; }
        break;
    case COLL_ALLGATHER:
        if (a == COLL_ALGO_RECURSIVE_DOUBLING) {
            /* busiest: rank 1 (virtual 0) sends its window [0, 2^k) of virtual
               regions at each step (regions below rem hold two blocks) and
               then the whole vector to rank 0 when unfolding */
            *bytes = (double)(p - 1) * blk; *rounds = L2 + 2 * rem;
            if (rem) {
                *bytes = n;
                for (j = 0; j < L2; j++) *bytes += ((1 << j) + ((1 << j) < p - p2 ? (1 << j) : p - p2)) * blk;
            }
        } else if (a == COLL_ALGO_BRUCK) { *bytes = (p - 1) * blk; *rounds = L; }
        else { *bytes = (p - 1) * blk; *rounds = p - 1; }
        break;
    case COLL_BROADCAST:
        if (a == COLL_ALGO_BINOMIAL) { *bytes = L * n; *rounds = L; }
        else if (a == COLL_ALGO_SCATTER_ALLGATHER) { *bytes = 2.0 * (p - 1) / p * n; *rounds = L + p - 1; }
        else { *bytes = n; *rounds = p == 2 ? C : C + 1; }
        break;
    case COLL_REDUCE:
        if (a == COLL_ALGO_BINOMIAL) { *bytes = n; *rounds = L; }
        else { *bytes = (double)(p2 - 1) / p2 * n + (rem ? n : n / 2); *rounds = 2 * L2 + 2 * rem; }
        break;
    case COLL_GATHER:
        if (a == COLL_ALGO_LINEAR) { *bytes = blk; *rounds = p - 1; }
        else { *bytes = (p - (1 << (L - 1))) * blk; *rounds = L; }
        break;
    case COLL_SCATTER:
        *bytes = (p - 1) * blk; *rounds = a == COLL_ALGO_LINEAR ? p - 1 : L;
        break;
    case COLL_ALLTOALL:
        if (a == COLL_ALGO_BRUCK) {         /* step k moves the blocks with bit k set */
            *rounds = L;
            for (j = 0; j < L; j++) { int b, nb = 0; for (b = 0; b < p; b++) nb += (b >> j) & 1; *bytes += nb * blk; }
        } else { *bytes = (p - 1) * blk; *rounds = p - 1; }
        break;
    case COLL_BARRIER: *bytes = L; *rounds = L; break;
    default: break;
    }
}

/* The newer collectives, root 0: the busiest rank's bytes and rounds. n is
   each rank's vector (scan, exscan, reduce) or block (all-to-all) in bytes;
   c[j] is rank j's block in bytes for the v forms. A message of 0 bytes is
   never sent, so it costs no round. */
static double subtree(const double *c, int p, int v)   /* binomial: [v, v + lowbit v) */
{
    int j, end = v == 0 ? p : v + (v & -v);
    double b = 0;
    for (j = v; j < end && j < p; j++) b += c[j];
    return b;
}

static void formula_more(coll_kind k, coll_algo a, int p, double n, const double *c,
                         double *bytes, double *rounds)
{
    int L = lg(p), ex = k == COLL_EXSCAN, v, m, j;
    *bytes = 0; *rounds = 0;
    if (p == 1) return;
    switch (k) {
    case COLL_SCAN: case COLL_EXSCAN:
        if (n == 0) break;
        if (a == COLL_ALGO_LINEAR) {    /* chain: r-1 -> r -> r+1; exscan shifts once more */
            *bytes = (1 + ex) * n; *rounds = (p > 2 ? 2 : 1) + ex;
        } else {                        /* rank 0 sends in each of the lg p steps */
            *bytes = (L + ex) * n; *rounds = L + ex;
        }
        break;
    case COLL_REDUCE:                   /* linear: the root receives p-1 vectors */
        if (n > 0) { *bytes = n; *rounds = p - 1; }
        break;
    case COLL_ALLTOALL:                 /* in place: p steps, each rank idle in one */
        if (n > 0) { *bytes = (p - 1) * n; *rounds = p - 1; }
        break;
    case COLL_GATHERV: case COLL_SCATTERV:
        if (a == COLL_ALGO_LINEAR) {    /* the root and each other nonempty block */
            for (j = 1; j < p; j++) {
                if (c[j] == 0) continue;
                *rounds += 1;
                if (k == COLL_SCATTERV) *bytes += c[j];
                else if (c[j] > *bytes) *bytes = c[j];
            }
            break;
        }
        /* binomial: rank v passes its subtree on (gather: up, scatter: down)
           in one message, and one per child subtree v + m, m < lowbit v;
           the root's children's subtrees partition ranks 1..p-1 */
        for (v = 0; v < p; v++) {
            double sub = subtree(c, p, v), r = v > 0 && sub > 0;
            for (m = 1; (v == 0 || m < (v & -v)) && v + m < p; m *= 2) r += subtree(c, p, v + m) > 0;
            if (r > *rounds) *rounds = r;
            if (k == COLL_GATHERV && v > 0 && sub > *bytes) *bytes = sub;
        }
        if (k == COLL_SCATTERV) *bytes = subtree(c, p, 0) - c[0];
        break;
    default: break;
    }
}

/* One of the newer collectives on p ranks: count elements per rank (the v
   forms: vcounts[]), checked against formula_more; a TSV row when `row`
   or when it differs. Returns 1 if it matched. */
static int check_more(coll_kind k, coll_algo a, int in_place, int p, size_t count, int row)
{
    double c[MAXP], n, fb, fr;
    size_t total = 0, i;
    uint64_t bytes, rounds;
    int v = k == COLL_GATHERV || k == COLL_SCATTERV, r, ok;
    for (r = 0; r < p; r++) { c[r] = v ? (double)vcounts[r] * 4 : 0; total += v ? vcounts[r] : 0; }
    if (!v) total = k == COLL_ALLTOALL ? count * (size_t)p : count;
    n = (double)count * 4;
    memset(&args, 0, sizeof args);
    args.kind = k; args.algo = a; args.dtype = COLL_FLOAT32; args.op = COLL_SUM; args.root = 0;
    args.count = count;
    if (v) args.counts = vcounts;
    inplace = in_place;
    scratch_bytes = 2 * (total * 4 + 64) > 256 ? 2 * (total * 4 + 64) : 256;   /* one segment */
    for (r = 0; r < p; r++)
        for (i = 0; i < total; i++) src[r][i] = (float)(r + (int)i % 5);
    measure(p, &bytes, &rounds);
    inplace = 0;
    formula_more(k, a, p, n, c, &fb, &fr);
    ok = (double)bytes == fb && (double)rounds == fr;
    if (row || !ok)
        printf("%s\t%s%s\t%d\t%zu\t%llu\t%llu\t%.0f\t%.0f%s\n", coll_kind_name(k), coll_algo_name(a),
               in_place ? "_in_place" : "", p, total * 4, (unsigned long long)bytes,
               (unsigned long long)rounds, fb, fr, ok ? "" : "\tMISMATCH");
    if (!ok) failures++;
    return ok;
}

/* alltoallv, pairwise, over matrix[]: the busiest rank's bytes (row r
   less the diagonal) and rounds (the steps with a nonempty half: out of
   place, step s sends to r+s and receives from r-s; in place, rank r swaps
   with every other rank j, one block each way, equal as row = column). */
static void formula_a2av(int p, int in_place, double *bytes, double *rounds)
{
    int r, s;
    *bytes = *rounds = 0;
    for (r = 0; r < p; r++) {
        double b = 0, n = 0;
        for (s = 1; s < p; s++) {
            size_t out = matrix[(size_t)r * p + (size_t)((r + s) % p)];
            size_t in = matrix[(size_t)((r - s + p) % p) * p + (size_t)r];
            b += (double)out * 4;
            n += in_place ? out > 0 : out > 0 || in > 0;
        }
        if (b > *bytes) *bytes = b;
        if (n > *rounds) *rounds = n;
    }
}

/* alltoallv over matrix[] on p ranks against formula_a2av; a TSV row when
   `row` or when it differs. Returns 1 if it matched. */
static int check_a2av(int in_place, int p, int row)
{
    size_t total = 0, maxrow = 0, i;
    uint64_t bytes, rounds;
    double fb, fr;
    int r, j, ok;
    for (r = 0; r < p; r++) {
        size_t sum = 0;
        for (j = 0; j < p; j++) sum += matrix[(size_t)r * p + (size_t)j];
        total += sum;
        if (sum > maxrow) maxrow = sum;
    }
    memset(&args, 0, sizeof args);
    args.kind = COLL_ALLTOALLV; args.algo = COLL_ALGO_PAIRWISE; args.dtype = COLL_FLOAT32;
    args.op = COLL_SUM; args.counts = matrix;
    inplace = in_place;
    scratch_bytes = 2 * (maxrow * 4 + 64) > 256 ? 2 * (maxrow * 4 + 64) : 256;   /* one segment */
    if (scratch_bytes > sizeof scratch[0]) scratch_bytes = sizeof scratch[0];
    for (r = 0; r < p; r++)
        for (i = 0; i < maxrow; i++) src[r][i] = (float)(r + (int)i % 5);
    measure(p, &bytes, &rounds);
    inplace = 0;
    formula_a2av(p, in_place, &fb, &fr);
    ok = (double)bytes == fb && (double)rounds == fr;
    if (row || !ok)
        printf("%s\t%s%s\t%d\t%zu\t%llu\t%llu\t%.0f\t%.0f%s\n", coll_kind_name(COLL_ALLTOALLV),
               coll_algo_name(COLL_ALGO_PAIRWISE), in_place ? "_in_place" : "", p, total * 4,
               (unsigned long long)bytes, (unsigned long long)rounds, fb, fr, ok ? "" : "\tMISMATCH");
    if (!ok) failures++;
    return ok;
}

/* The double tree as its comment in coll.h describes it, built here on its
   own: NCCL's in-order tree over q = p - p%2 ranks (rank v at the level of
   its lowest set bit b, parent (v ^ b) | 2b or v ^ b past q, v = 0 on top
   at level lg q), tree 1 the same over u ^ 1 (u = r - p%2), an odd p's
   rank 0 above tree 0 (level lg q + 1) and a leaf under tree 1's top. */
static void dt_node(int p, int r, int t, int *parent, int *level)
{
    int o = p % 2, q = p - o, v, b = 1, h = 0;
    if (r < o) { *parent = t ? o + 1 : -1; *level = t ? 0 : lg(q) + 1; return; }
    v = (r - o) ^ t;
    if (v == 0) { *parent = o && !t ? 0 : -1; *level = lg(q); return; }
    while (!(v & b)) { b <<= 1; h++; }
    *level = h;
    *parent = (((v ^ b) | 2 * b) < q ? (v ^ b) | 2 * b : v ^ b) ^ t;
    *parent += o;
}

/* Its busiest rank's rounds, C chunks per half. The all-reduce (form 0):
   round R of each phase has two steps; in step (R, slot(k)) child k and
   its parent meet, slot(k) the parity of k's bits (u), flipped in tree 1,
   rank 0 of an odd p in 0; up, a rank at level h sends chunk R - h, down
   it receives chunk R - (H - h) (H the highest level below a parent).
   The broadcast (form 1, down) and reduce (form 2, up) from rank 0: the
   same trees and H with rank 0 left out of tree 1, three steps per round:
   the two slots, and the edge between rank 0 and tree 1's top (p % 2 + 1),
   first in a round down, carrying chunk c in round c, and last up, in
   round c + lg q - 1. A rank's round is a step with any message. */
static int dt_rounds(int p, int C, int form)
{
    int o = p % 2, H = lg(p - o) + o - 1, w = form ? 3 : 2, best = 0, x, y, t, R, i;
    int steps = form ? 3 * (C + H) : 4 * (C + H), down0 = form ? 0 : 2 * (C + H), lead = form == 1;
    for (x = 0; x < p; x++) {
        char busy[4 * 64];              /* C + H <= 64 here */
        int n = 0;
        memset(busy, 0, (size_t)steps);
        for (y = 0; y < p; y++)
            for (t = 0; t < 2; t++) {
                int par, lev, sl = y < o ? 0 : t, u = y - o;
                dt_node(p, y, t, &par, &lev);
                if (par < 0 || (form && t && y == 0) || (y != x && par != x)) continue;
                for (; u > 0; u >>= 1) sl ^= u & 1;
                for (R = 0; R < C; R++) {
                    if (form != 1) busy[w * (R + lev) + sl] = 1;                        /* up   */
                    if (form != 2) busy[down0 + w * (R + H - lev) + lead + sl] = 1;    /* down */
                }
            }
        if (form && (x == 0 || x == o + 1))     /* the root and tree 1's top */
            for (R = 0; R < C; R++) busy[form == 1 ? 3 * R : 3 * (R + lg(p - o) - 1) + 2] = 1;
        for (i = 0; i < steps; i++) n += busy[i];
        if (n > best) best = n;
    }
    return best;
}

/* Swing's numbering, found independently of coll.h's decoding: walk the
   tree from rank 0, step s (partner v + rho(s) for even v, v - rho(s) for
   odd) setting bit L-1-s of the number. */
static int tr_rho(int s) { int r = 0, t = 1, i; for (i = 0; i <= s; i++) { r += t; t *= -2; } return r; }
static void tr_walk(int v, int last, int bits, int L, int *num)
{
    int s, p2 = 1 << L;
    num[v] = bits;
    for (s = last + 1; s < L; s++) {
        int q = ((v % 2 ? v - tr_rho(s) : v + tr_rho(s)) % p2 + p2) % p2;
        tr_walk(q, s, bits | 1 << (L - 1 - s), L, num);
    }
}

/* Swing's reduce-scatter (all-gather): recursive halving (doubling) in the
   numbering's windows, and one step that moves each region between rank v
   and its owner. Bytes of the busiest rank, counted region by region (a
   folded pair's region is two blocks), and rounds. */
static void swing_rs_ag(coll_kind k, int p, double n, double *bytes, double *rounds)
{
    int p2 = pow2_below(p), rem = p - p2, L = lg(p2), num[64], v, j, w, most = 0;
    double blk = n / p, best = rem ? (k == COLL_REDUCE_SCATTER ? n : blk) : 0;
    tr_walk(0, -1, 0, L, num);
    for (v = 0; v < p2; v++) {
        double b = v < rem ? (k == COLL_REDUCE_SCATTER ? blk : n) : 0;   /* the unfold */
        if (num[v] != v) {                                   /* the region step */
            int r = k == COLL_REDUCE_SCATTER ? num[v] : v;
            b += (r < rem ? 2 : 1) * blk;
        }
        if (L + (num[v] != v) + 2 * (v < rem) > most) most = L + (num[v] != v) + 2 * (v < rem);
        for (j = 0; j < L; j++) {                            /* the windows */
            int d = k == COLL_REDUCE_SCATTER ? p2 >> (j + 1) : 1 << j;
            int lo = k == COLL_REDUCE_SCATTER ? (num[v] & ~(2 * d - 1)) + ((num[v] & d) ? 0 : d)
                                              : num[v] & ~(d - 1);
            for (w = lo; w < lo + d; w++) b += (w < rem ? 2 : 1) * blk;
        }
        if (b > best) best = b;
    }
    *bytes = best;
    *rounds = most;
}

/* The newer rows: the busiest rank's bytes and rounds for n bytes. */
static void formula_new(coll_kind k, coll_algo a, int p, double n, double *bytes, double *rounds)
{
    *bytes = *rounds = 0;
    if (p == 1) return;
    if (k == COLL_REDUCE_SCATTER && a == COLL_ALGO_REVERSED_BRUCK) { *bytes = (p - 1) * (n / p); *rounds = lg(p); }
    if (k == COLL_ALLREDUCE && a == COLL_ALGO_REVERSED_BRUCK) { *bytes = 2 * (p - 1) * (n / p); *rounds = 2 * lg(p); }
    if (k == COLL_ALLREDUCE && a == COLL_ALGO_DOUBLE_TREE) {
        size_t chunk = (((size_t)n / 4) & ~(size_t)63) / 4, half = (size_t)n / 8;   /* 4-element floats */
        *bytes = p == 2 ? n : p == 3 ? 1.5 * n : 2 * n;   /* parent, two children, a leaf's parent */
        *rounds = dt_rounds(p, (int)((half + chunk - 1) / chunk), 0);
    }
    if (a == COLL_ALGO_SWING && (k == COLL_REDUCE_SCATTER || k == COLL_ALLGATHER)) {
        swing_rs_ag(k, p, n, bytes, rounds);
        return;
    }
    if (a == COLL_ALGO_SWING || a == COLL_ALGO_BINE) {   /* Rabenseifner's and the binomial tree's */
        formula(k, k == COLL_ALLREDUCE ? COLL_ALGO_RABENSEIFNER : COLL_ALGO_BINOMIAL, p, n, 1, 1, bytes, rounds);
        return;
    }
    if ((k == COLL_BROADCAST || k == COLL_REDUCE) && a == COLL_ALGO_DOUBLE_TREE) {
        size_t chunk = (((size_t)n / 4) & ~(size_t)63) / 4, half = (size_t)n / 8;
        *bytes = n;                     /* the root or an inner rank, both halves; tree 1's top up */
        *rounds = dt_rounds(p, (int)((half + chunk - 1) / chunk), k == COLL_BROADCAST ? 1 : 2);
    }
}

/* One newer row on p ranks, n bytes; a TSV row when `row` or when it
   differs. Returns 1 if it matched. */
static int check_new(coll_kind k, coll_algo a, int p, size_t n, int row)
{
    size_t count = n / 4, i;
    uint64_t bytes, rounds;
    double fb, fr;
    int r, ok;
    memset(&args, 0, sizeof args);
    args.kind = k; args.algo = a; args.dtype = COLL_FLOAT32; args.op = COLL_SUM; args.root = 0;
    args.count = k == COLL_REDUCE_SCATTER || k == COLL_ALLGATHER ? count / (size_t)p : count;
    scratch_bytes = a == COLL_ALGO_DOUBLE_TREE ? 2 * n / 4 : 2 * n;   /* one segment per message;
                                                           the double tree in C = 4 chunks */
    for (r = 0; r < p; r++)
        for (i = 0; i < count; i++) src[r][i] = (float)(r + (int)i % 5);
    measure(p, &bytes, &rounds);
    formula_new(k, a, p, (double)n, &fb, &fr);
    ok = (double)bytes == fb && (double)rounds == fr;
    if (row || !ok)
        printf("%s\t%s\t%d\t%zu\t%llu\t%llu\t%.0f\t%.0f%s\n", coll_kind_name(k), coll_algo_name(a), p, n,
               (unsigned long long)bytes, (unsigned long long)rounds, fb, fr, ok ? "" : "\tMISMATCH");
    if (!ok) failures++;
    return ok;
}

/* One dissemination row on p ranks, `per` elements per rank; 0 where the
   block does not fit the room (the library refuses it), else 1 if the
   measure matched its formula. */
static int check_room(coll_kind k, int p, size_t per, int row)
{
    int scatters = k == COLL_REDUCE_SCATTER || k == COLL_ALLTOALL || k == COLL_SCATTER, r;
    size_t i, b = per * 4 * (scatters ? (size_t)p : 1), blk = (b + 7) & ~(size_t)7;
    uint64_t bytes, rounds;
    double fb = p > 1 ? (double)(p - 1) * (double)blk : 0, fr = lg(p);
    int ok;
    if (blk > coll__room_cap(p)) return 0;              /* the library's room */
    memset(&args, 0, sizeof args);
    args.kind = k; args.algo = COLL_ALGO_DISSEMINATION; args.dtype = COLL_FLOAT32; args.op = COLL_SUM;
    args.root = p - 1; args.count = per;
    scratch_bytes = 64;
    for (r = 0; r < p; r++)
        for (i = 0; i < per * (size_t)p; i++) src[r][i] = (float)(r + (int)i % 5);
    measure(p, &bytes, &rounds);
    ok = (double)bytes == fb && (double)rounds == fr;
    if (row || !ok)
        printf("%s\t%s\t%d\t%zu\t%llu\t%llu\t%.0f\t%.0f%s\n", coll_kind_name(k), coll_algo_name(args.algo), p, b,
               (unsigned long long)bytes, (unsigned long long)rounds, fb, fr, ok ? "" : "\tMISMATCH");
    if (!ok) failures++;
    return 1;
}

/* A ragged matrix: entry (i, j) of weight w, some 0 (symmetric in place).
   scaled: `count` elements in all, the unit count / (sum of weights) times
   each weight and what is left on entry (0, 0) (the diagonal keeps it
   symmetric); else count + w - 1 where w > 0. */
static void fill_a2av(int p, int in_place, size_t count, int scaled)
{
    size_t W = 0, unit, i;
    int a, b;
    for (a = 0; a < p; a++)
        for (b = 0; b < p; b++) {
            size_t w = in_place ? ((a + b) % 3 == 2 ? 0 : 1 + (size_t)((a + b + a * b) % 4))
                                : ((a + 2 * b) % 3 == 1 ? 0 : 1 + (size_t)((a * 3 + b * 5) % 4));
            matrix[(size_t)a * p + (size_t)b] = w;
            W += w;
        }
    unit = scaled ? count / W : 0;
    for (i = 0; i < (size_t)p * (size_t)p; i++)
        matrix[i] = scaled ? matrix[i] * unit : matrix[i] ? count + matrix[i] - 1 : 0;
    if (scaled) matrix[0] += count - unit * W;
}

int main(int argc, char **argv)
{
    static const struct { coll_kind k; coll_algo a; } rows[] = {
        { COLL_ALLREDUCE, COLL_ALGO_NAIVE }, { COLL_ALLREDUCE, COLL_ALGO_RING },
        { COLL_ALLREDUCE, COLL_ALGO_TREE }, { COLL_ALLREDUCE, COLL_ALGO_RECURSIVE_DOUBLING },
        { COLL_ALLREDUCE, COLL_ALGO_RABENSEIFNER }, { COLL_ALLREDUCE, COLL_ALGO_HIERARCHICAL },
        { COLL_ALLREDUCE, COLL_ALGO_PIPELINED_TREE },
        { COLL_REDUCE_SCATTER, COLL_ALGO_RING }, { COLL_REDUCE_SCATTER, COLL_ALGO_PAIRWISE },
        { COLL_REDUCE_SCATTER, COLL_ALGO_RECURSIVE_HALVING },
        { COLL_ALLGATHER, COLL_ALGO_RING }, { COLL_ALLGATHER, COLL_ALGO_RECURSIVE_DOUBLING },
        { COLL_ALLGATHER, COLL_ALGO_BRUCK },
        { COLL_BROADCAST, COLL_ALGO_BINOMIAL }, { COLL_BROADCAST, COLL_ALGO_SCATTER_ALLGATHER },
        { COLL_BROADCAST, COLL_ALGO_PIPELINED_CHAIN },
        { COLL_REDUCE, COLL_ALGO_BINOMIAL }, { COLL_REDUCE, COLL_ALGO_REDUCE_SCATTER_GATHER },
        { COLL_GATHER, COLL_ALGO_LINEAR }, { COLL_GATHER, COLL_ALGO_BINOMIAL },
        { COLL_SCATTER, COLL_ALGO_LINEAR }, { COLL_SCATTER, COLL_ALGO_BINOMIAL },
        { COLL_ALLTOALL, COLL_ALGO_PAIRWISE }, { COLL_ALLTOALL, COLL_ALGO_BRUCK },
        { COLL_BARRIER, COLL_ALGO_DISSEMINATION } };
    static const int ps[] = { 2, 3, 4, 6, 7, 8, 16 };
    static const size_t sizes[] = { 5040 * 4, 5040 * 16 * 4 };   /* bytes: divisible by every p */
    static const struct { coll_kind k; coll_algo a; int inplace; } more[] = {
        { COLL_SCAN, COLL_ALGO_LINEAR, 0 }, { COLL_SCAN, COLL_ALGO_RECURSIVE_DOUBLING, 0 },
        { COLL_EXSCAN, COLL_ALGO_LINEAR, 0 }, { COLL_EXSCAN, COLL_ALGO_RECURSIVE_DOUBLING, 0 },
        { COLL_REDUCE, COLL_ALGO_LINEAR, 0 },
        { COLL_GATHERV, COLL_ALGO_LINEAR, 0 }, { COLL_GATHERV, COLL_ALGO_BINOMIAL, 0 },
        { COLL_SCATTERV, COLL_ALGO_LINEAR, 0 }, { COLL_SCATTERV, COLL_ALGO_BINOMIAL, 0 },
        { COLL_ALLTOALL, COLL_ALGO_PAIRWISE, 1 } };
    static const size_t odd[] = { 0, 1, 7, 61, 1001 };  /* elements: no p > 1 divides them all */
    size_t ri, pi, si;
    int only_p = argc > 1 ? atoi(argv[1]) : 0, nrows = 0, nswept = 0;
    printf("collective\talgo\tranks\tbytes\tmax_bytes_sent\tmax_rounds\tformula_bytes\tformula_rounds\n");
    for (ri = 0; ri < sizeof rows / sizeof rows[0]; ri++)
        for (pi = 0; pi < sizeof ps / sizeof ps[0]; pi++)
            for (si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
                int p = ps[pi], r, C = 1, g = 4, pipelined;
                size_t n = sizes[si], count = n / 4;
                uint64_t bytes = 0, rounds = 0;
                double fb, fr;
                if (only_p && p != only_p) continue;
                if (rows[ri].k == COLL_BARRIER) { if (si) continue; n = 0; }
                pipelined = rows[ri].a == COLL_ALGO_PIPELINED_TREE || rows[ri].a == COLL_ALGO_PIPELINED_CHAIN;
                memset(&args, 0, sizeof args);
                args.kind = rows[ri].k; args.algo = rows[ri].a; args.dtype = COLL_FLOAT32;
                args.op = COLL_SUM; args.root = 0; args.group = g;
                args.count = rows[ri].k == COLL_ALLREDUCE || rows[ri].k == COLL_BROADCAST ||
                             rows[ri].k == COLL_REDUCE ? count : count / (size_t)p;
                /* one segment per message, or four chunks for the pipelines */
                scratch_bytes = pipelined ? 2 * n / 4 : 2 * n;
                {   /* chunks as the library cuts them: segment = scratch/2, 64-byte aligned */
                    size_t chunk = ((scratch_bytes / 2) & ~(size_t)63) / 4;
                    C = pipelined ? (int)((count + chunk - 1) / chunk) : 1;
                }
                for (r = 0; r < p; r++) {
                    size_t i;
                    for (i = 0; i < count; i++) src[r][i] = (float)(r + (int)i % 5);
                }
                measure(p, &bytes, &rounds);
                formula(rows[ri].k, rows[ri].a, p, (double)n, C, g, &fb, &fr);
                if (rows[ri].k == COLL_BARRIER) fb = fr;          /* one byte per round */
                printf("%s\t%s\t%d\t%zu\t%llu\t%llu\t%.0f\t%.0f%s\n", coll_kind_name(rows[ri].k),
                       coll_algo_name(rows[ri].a), p, n, (unsigned long long)bytes,
                       (unsigned long long)rounds, fb, fr,
                       (double)bytes == fb && (double)rounds == fr ? "" : "\tMISMATCH");
                if ((double)bytes != fb || (double)rounds != fr) failures++;
                nrows++;
            }
    for (ri = 0; ri < sizeof more / sizeof more[0]; ri++) {
        coll_kind k = more[ri].k;
        int v = k == COLL_GATHERV || k == COLL_SCATTERV, p, j;
        /* the table's rows: ragged v counts add up to the row's bytes */
        for (pi = 0; pi < sizeof ps / sizeof ps[0]; pi++)
            for (si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
                size_t count = sizes[si] / 4, w = 0, cum = 0;
                p = ps[pi];
                if (only_p && p != only_p) continue;
                for (j = 0; j < p; j++) w += j % 3 == 2 ? 0 : 1 + (size_t)j % 4;
                for (j = 0; j < p; j++) {       /* weights 1 2 0 4 1 0 3 ... */
                    size_t lo = count * cum / w;
                    cum += j % 3 == 2 ? 0 : 1 + (size_t)j % 4;
                    vcounts[j] = count * cum / w - lo;
                }
                check_more(k, more[ri].a, more[ri].inplace, p,
                           k == COLL_ALLTOALL ? count / (size_t)p : v ? 0 : count, 1);
                nrows++;
            }
        /* every p, counts no p divides, empty blocks: checked, no row */
        for (p = 1; p <= MAXP; p++) {
            if (only_p && p != only_p) continue;
            for (si = 0; si < sizeof odd / sizeof odd[0]; si++) {
                for (j = 0; j < p; j++)         /* every third rank has nothing */
                    vcounts[j] = j % 3 == 1 ? 0 : odd[si] + (size_t)((j * 7) % 5);
                check_more(k, more[ri].a, more[ri].inplace, p, odd[si], 0);
                nswept++;
                if (!v) continue;
                for (j = 0; j < p; j++) vcounts[j] = j == p - 1 ? odd[si] : 0;   /* one block */
                check_more(k, more[ri].a, more[ri].inplace, p, 0, 0);
                nswept++;
            }
        }
    }
    {   /* alltoallv: out of place, then in place */
        int ip, p, j;
        for (ip = 0; ip < 2; ip++) {
            for (pi = 0; pi < sizeof ps / sizeof ps[0]; pi++)
                for (si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
                    p = ps[pi];
                    if (only_p && p != only_p) continue;
                    fill_a2av(p, ip, sizes[si] / 4, 1);
                    check_a2av(ip, p, 1);
                    nrows++;
                }
            for (p = 1; p <= MAXP; p++) {
                if (only_p && p != only_p) continue;
                for (si = 0; si < sizeof odd / sizeof odd[0]; si++) {
                    fill_a2av(p, ip, odd[si], 0);
                    check_a2av(ip, p, 0);
                    memset(matrix, 0, sizeof matrix);          /* one block (and its mirror) */
                    matrix[(size_t)(p - 1) * p] = odd[si];
                    if (ip) matrix[p - 1] = odd[si];
                    check_a2av(ip, p, 0);
                    nswept += 2;
                    if (si) continue;
                    for (j = 0; j < p * p; j++) matrix[j] = 0;  /* all empty, once */
                    check_a2av(ip, p, 0);
                    nswept++;
                }
            }
        }
    }
    {   /* the newer rows: at the table's p and sizes, then every p that divides them */
        static const struct { coll_kind k; coll_algo a; } newer[] = {
            { COLL_ALLREDUCE, COLL_ALGO_REVERSED_BRUCK }, { COLL_REDUCE_SCATTER, COLL_ALGO_REVERSED_BRUCK },
            { COLL_ALLREDUCE, COLL_ALGO_DOUBLE_TREE }, { COLL_BROADCAST, COLL_ALGO_DOUBLE_TREE },
            { COLL_REDUCE, COLL_ALGO_DOUBLE_TREE },
            { COLL_ALLREDUCE, COLL_ALGO_SWING }, { COLL_BROADCAST, COLL_ALGO_BINE },
            { COLL_REDUCE, COLL_ALGO_BINE }, { COLL_REDUCE_SCATTER, COLL_ALGO_SWING },
            { COLL_ALLGATHER, COLL_ALGO_SWING } };
        int p;
        for (ri = 0; ri < sizeof newer / sizeof newer[0]; ri++) {
            for (pi = 0; pi < sizeof ps / sizeof ps[0]; pi++)
                for (si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
                    if (only_p && ps[pi] != only_p) continue;
                    check_new(newer[ri].k, newer[ri].a, ps[pi], sizes[si], 1);
                    nrows++;
                }
            for (p = 1; p <= MAXP; p++) {
                if ((only_p && p != only_p) || 5040 % p) continue;
                for (si = 0; si < sizeof sizes / sizeof sizes[0]; si++) { check_new(newer[ri].k, newer[ri].a, p, sizes[si], 0); nswept++; }
            }
        }
    }
    {   /* the small calls' dissemination rows */
        static const coll_kind rk[] = { COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER, COLL_BROADCAST,
                                        COLL_REDUCE, COLL_GATHER, COLL_SCATTER, COLL_ALLTOALL };
        static const size_t per[] = { 1, 2, 5 };
        int p, in_table;
        for (ri = 0; ri < sizeof rk / sizeof rk[0]; ri++)
            for (p = 1; p <= MAXP; p++) {
                if (only_p && p != only_p) continue;
                for (in_table = 0, pi = 0; pi < sizeof ps / sizeof ps[0]; pi++) in_table |= ps[pi] == p;
                for (si = 0; si < sizeof per / sizeof per[0]; si++)
                    if (check_room(rk[ri], p, per[si], in_table)) { if (in_table) nrows++; else nswept++; }
            }
    }
    printf("traffic: %d passed, %d failed\n", nrows + nswept - failures, failures);
    return failures != 0;
}
