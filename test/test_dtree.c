/* test_dtree.c - the double-tree schedules (all-reduce, broadcast,
   reduce), played on paper for far more ranks than the threaded tests
   run: p = 1 .. 70 and 100, 127, 128, 129, 255, 256, 257, with counts that
   no chunk divides and empty halves (0, 1, 2, 5, 64, 257 elements; chunks
   of 1, 3, 16 and 1000); broadcast and reduce from roots 0, 1, p/2 and
   p - 1.

   For every case it asks the schedule for every rank's steps and checks,
   step by step:
     - every message is received in the same step by the rank it is sent
       to, from the same sender, with the same length (so a blocking port
       that only sends and receives never waits across steps);
     - in each step the sends form paths and cycles, and every cycle has a
       rank that sends first and one that receives first (so it cannot
       deadlock on a rendezvous port);
     - no step receives into the part of a buffer it sends from;
     - moving the values as the steps say (send from src or dst as they
       are before the step; receive into dst, reduced with the operand the
       step names) leaves every rank's dst equal to the plain-loop sum of
       all the ranks' inputs (all-reduce), the root's dst equal to it
       (reduce), every rank's dst equal to the root's (broadcast);
     - no rank sends more than the schedule's comment says: count +
       2 x ceil(count/2) elements for the all-reduce, 2 x ceil(count/2)
       for the broadcast, count for the reduce; in the broadcast every
       rank but the root receives each element exactly once.
   Integer values: the sums are exact. Ends with "dtree: N passed, N failed". */
#define COLL_IMPLEMENTATION
#include "../coll.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int passed, failed;

#define CHECK(cond, ...) do {                                            \
        if (cond) passed++;                                              \
        else { failed++; if (failed <= 10) { printf("FAIL: "); printf(__VA_ARGS__); printf("\n"); } } \
    } while (0)

/* One case: collective k (all-reduce, broadcast or reduce) on p ranks
   from root, count elements, chunk elements per message. */
static void run_case(coll_kind k, int p, int root, size_t count, size_t chunk)
{
    coll__plan *pl = (coll__plan *)calloc((size_t)p, sizeof *pl);
    coll__step *st = (coll__step *)calloc((size_t)p, sizeof *st);
    double *src = (double *)calloc((size_t)p * (count + 1), sizeof *src);
    double *dst = (double *)calloc((size_t)p * (count + 1), sizeof *dst);
    double *msg = (double *)calloc((size_t)p * (count + 1), sizeof *msg);
    size_t *sent = (size_t *)calloc((size_t)p, sizeof *sent);
    size_t *got = (size_t *)calloc((size_t)p * (count + 1), sizeof *got);
    int r, s, aligned = 1, cycles_ok = 1, apart = 1, any = 1;
    size_t e, wrong = 0, h = count - count / 2, bound;
    const char *name = k == COLL_ALLREDUCE ? "allreduce" : k == COLL_BROADCAST ? "broadcast" : "reduce";
    int (*f)(const coll__plan *, int, coll__step *) = k == COLL_ALLREDUCE ? coll__double_tree_allreduce :
        coll__double_tree_rooted;
    if (!pl || !st || !src || !dst || !msg || !sent || !got) { printf("out of memory\n"); exit(1); }
    for (r = 0; r < p; r++) {
        pl[r].kind = k; pl[r].algo = COLL_ALGO_DOUBLE_TREE; pl[r].root = root;
        pl[r].rank = r; pl[r].p = p; pl[r].count = pl[r].total = count; pl[r].chunk = chunk;
        for (e = 0; e < count; e++) {
            src[(size_t)r * (count + 1) + e] = (double)((r + 1) * 1000 + (int)(e % 97));
            dst[(size_t)r * (count + 1) + e] = k == COLL_BROADCAST && r == root ? (double)(e * 7 + 3)
                                             : -1;       /* nothing written yet */
        }
    }
    for (s = 0; any && s < 1000000; s++) {
        any = 0;
        for (r = 0; r < p; r++) {
            if (!f(&pl[r], s, &st[r])) { st[r].to = st[r].from = -1; st[r].slen = st[r].rlen = 0; }
            else any = 1;
        }
        if (!any) break;
        /* each send met by the receive in the same step, same length */
        for (r = 0; r < p; r++) {
            int to = st[r].to, from = st[r].from;
            if (to >= 0 && (to >= p || to == r || st[to].from != r || st[to].rlen != st[r].slen)) aligned = 0;
            if (from >= 0 && (from >= p || from == r || st[from].to != r || st[from].slen != st[r].rlen)) aligned = 0;
            /* the part received into is not the part sent from */
            if (to >= 0 && from >= 0 && st[r].rbuf == st[r].sbuf &&
                st[r].roff < st[r].soff + st[r].slen && st[r].soff < st[r].roff + st[r].rlen) apart = 0;
        }
        if (!aligned) break;
        /* every cycle of senders has one that sends first and one that receives first */
        for (r = 0; r < p; r++) {
            int x = r, len = 0, sf = 0, rf = 0;
            while (st[x].to >= 0 && len <= p) {
                if (st[x].from >= 0) { if (st[x].send_first) sf = 1; else rf = 1; }
                x = st[x].to; len++;
                if (x == r) break;
            }
            if (x == r && len > 0 && !(sf && rf)) cycles_ok = 0;
        }
        /* the messages leave as the buffers are before the step */
        for (r = 0; r < p; r++) {
            const double *b = (st[r].sbuf == COLL_BUF_SRC ? src : dst) + (size_t)r * (count + 1);
            if (st[r].to < 0) continue;
            memcpy(msg + (size_t)r * (count + 1), b + st[r].soff, st[r].slen * sizeof *msg);
            sent[r] += st[r].slen;
        }
        for (r = 0; r < p; r++) {
            int fr = st[r].from;
            double *o = (st[r].rbuf == COLL_BUF_SRC ? src : dst) + (size_t)r * (count + 1) + st[r].roff;
            const double *a = (st[r].abuf == COLL_BUF_SRC ? src : dst) + (size_t)r * (count + 1) + st[r].aoff;
            const double *m = msg + (size_t)fr * (count + 1);
            if (fr < 0) continue;
            for (e = 0; e < st[r].rlen; e++) {
                o[e] = st[r].reduce == 1 ? a[e] + m[e] : st[r].reduce == 2 ? m[e] + a[e] : m[e];
                got[(size_t)r * (count + 1) + st[r].roff + e]++;
            }
        }
    }
    CHECK(aligned, "%s p=%d root=%d count=%zu chunk=%zu: a message sent in step %d is not received in it", name, p, root, count, chunk, s);
    CHECK(cycles_ok, "%s p=%d root=%d count=%zu chunk=%zu: a cycle of ranks all sending (or all receiving) first", name, p, root, count, chunk);
    CHECK(apart, "%s p=%d root=%d count=%zu chunk=%zu: a step receives where it sends from", name, p, root, count, chunk);
    CHECK(!aligned || !any, "%s p=%d root=%d count=%zu chunk=%zu: the schedule does not end", name, p, root, count, chunk);
    if (aligned && p > 1) {
        for (r = 0; r < p; r++) {
            if (k == COLL_REDUCE && r != root) continue;
            for (e = 0; e < count; e++) {
                double want = 0;
                int q;
                if (k == COLL_BROADCAST) want = (double)(e * 7 + 3);
                else for (q = 0; q < p; q++) want += (double)((q + 1) * 1000 + (int)(e % 97));
                wrong += dst[(size_t)r * (count + 1) + e] != want;
                if (k == COLL_BROADCAST) wrong += got[(size_t)r * (count + 1) + e] != (r != root);
            }
        }
        CHECK(wrong == 0, "%s p=%d root=%d count=%zu chunk=%zu: %zu wrong elements", name, p, root, count, chunk, wrong);
        bound = k == COLL_ALLREDUCE ? count + 2 * h : k == COLL_BROADCAST ? 2 * h : count;
        for (r = 0; r < p; r++)
            CHECK(sent[r] <= bound, "%s p=%d root=%d count=%zu chunk=%zu: rank %d sends %zu elements", name, p, root, count, chunk, r, sent[r]);
    }
    free(pl); free(st); free(src); free(dst); free(msg); free(sent); free(got);
}

int main(void)
{
    static const size_t counts[] = { 0, 1, 2, 5, 64, 257 }, chunks[] = { 1, 3, 16, 1000 };
    static const int big[] = { 100, 127, 128, 129, 255, 256, 257 };
    size_t c, k;
    int p, i, j;
    for (p = 1; p <= 70 + (int)(sizeof big / sizeof big[0]); p++) {
        int np = p <= 70 ? p : big[p - 71], roots[4];
        roots[0] = 0; roots[1] = 1 % np; roots[2] = np / 2; roots[3] = np - 1;
        for (c = 0; c < sizeof counts / sizeof counts[0]; c++)
            for (k = 0; k < sizeof chunks / sizeof chunks[0]; k++) {
                run_case(COLL_ALLREDUCE, np, 0, counts[c], chunks[k]);
                for (j = 0; j < 4; j++) {
                    if (j && roots[j] == roots[j - 1]) continue;
                    run_case(COLL_BROADCAST, np, roots[j], counts[c], chunks[k]);
                    run_case(COLL_REDUCE, np, roots[j], counts[c], chunks[k]);
                }
            }
    }
    for (i = 0; i < 2; i++) {                           /* 4095, 4096: the sim's sizes */
        run_case(COLL_ALLREDUCE, 4096 - i, 0, 40, 8);
        run_case(COLL_BROADCAST, 4096 - i, 17, 40, 8);
        run_case(COLL_REDUCE, 4096 - i, 4095 - i, 40, 8);
    }
    printf("dtree: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
