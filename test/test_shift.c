/* test_shift.c - the order of a shift exchange over a port without
   sendrecv (coll__shift_send_first), played on paper: every rank r sends to
   r+d and receives from r-d, the send first or the receive first as the
   rule says, over a rendezvous port (a send completes only when its
   receiver is at the matching receive, and the other way round).

   For p = 2 .. 70 with every shift d from -p to 2p that is not a multiple
   of p, and for 100, 127, 128, 129, 255, 256, 257 ranks with d = 1 .. p-1,
   it checks:
     - every cycle of the shift (r, r+d, r+2d, ...) holds a rank that sends
       first and one that receives first;
     - the exchange completes: every rank's send and receive are matched,
       pass after pass, until none is left (no deadlock).
   Ends with "shift: N passed, N failed". */
#define COLL_IMPLEMENTATION
#include "../coll.h"

#include "test_tally.h"

#include <stdlib.h>

/* The cycles of r -> r+d: each has both kinds of rank. */
static int cycles_mixed(int p, int d, const int *first)
{
    int r, ok = 1;
    char *seen = (char *)calloc((size_t)p, 1);
    if (!seen) { printf("out of memory\n"); exit(1); }
    for (r = 0; r < p; r++) {
        int x = r, senders = 0, receivers = 0;
        if (seen[r]) continue;
        do { seen[x] = 1; if (first[x]) senders++; else receivers++; x = coll__mod(x + d, p); } while (x != r);
        if (!senders || !receivers) ok = 0;
    }
    free(seen);
    return ok;
}

/* A rendezvous port: rank r's two operations in its order; a pass
   completes every send whose receiver is at the matching receive. */
static int completes(int p, int d, const int *first)
{
    int *done = (int *)calloc((size_t)p, sizeof *done), r, progress = 1, all = 1;
    if (!done) { printf("out of memory\n"); exit(1); }
    while (progress) {
        progress = 0;
        for (r = 0; r < p; r++) {             /* r's current operation is its send? */
            int to = coll__mod(r + d, p), sending = done[r] < 2 && (done[r] == 0) == (first[r] != 0);
            int receiving = done[to] < 2 && (done[to] == 0) == (first[to] == 0);
            if (sending && receiving) { done[r]++; done[to]++; progress = 1; }
        }
    }
    for (r = 0; r < p; r++) if (done[r] != 2) all = 0;
    free(done);
    return all;
}

static void run_case(int p, int d)
{
    int *first = (int *)calloc((size_t)p, sizeof *first), r;
    if (!first) { printf("out of memory\n"); exit(1); }
    for (r = 0; r < p; r++) first[r] = coll__shift_send_first(r, p, d);
    CHECK(cycles_mixed(p, d, first), "p=%d d=%d: a cycle of ranks all sending (or all receiving) first", p, d);
    CHECK(completes(p, d, first), "p=%d d=%d: the shift deadlocks on a rendezvous port", p, d);
    free(first);
}

int main(void)
{
    static const int big[] = { 100, 127, 128, 129, 255, 256, 257 };
    int p, d;
    size_t i;
    for (p = 2; p <= 70; p++)
        for (d = -p; d <= 2 * p; d++)
            if (coll__mod(d, p) != 0) run_case(p, d);
    for (i = 0; i < sizeof big / sizeof big[0]; i++)
        for (d = 1; d < big[i]; d++) run_case(big[i], d);
    printf("shift: %ld passed, %ld failed\n", g_pass, g_fail);
    return g_fail != 0;
}
