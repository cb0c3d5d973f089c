/* seed_ring_sim.c - the numpy ring simulation, in C, over coll.h

   Four simulated hosts live in ONE process and ONE thread, exactly as in the
   numpy seed: each host owns a vector, the hosts form a ring, and a chunked
   ring all-reduce with an average leaves the mean on every host. The
   "network" is the mailbox port (ports/coll_mailbox.h): isend/irecv/wait in
   plain memory, no threads; the hosts take turns with coll_progress.

   Before running it, the program prints the schedule: coll_describe tells,
   for every step and host, which chunk goes to whom and whether the
   receiver adds it in (phase 1, the seed's "accumulate") or just keeps it
   (phase 2, the seed's "copy"). The schedule is the same pure function the
   executor runs, so the trace is what happens, not a drawing of it.

       make seed-ring-sim             the trace and the result
       seed_ring_sim --check          the result and the checks only

   Then it checks, like the seed's np.allclose lines, that every host holds
   the same vector (here: bit for bit) and that it is the mean; and it does
   the same for a length the seed's chunking cannot handle (10 values on 4
   hosts: chunks of 3, 3, 2, 2). */
#define COLL_IMPLEMENTATION
#include "coll.h"
#define COLL_MAILBOX_IMPLEMENTATION
#include "ports/coll_mailbox.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define HOSTS 4
#define MAXDIMS 16

static int passed, failed;

static void check(int ok, const char *what)
{
    if (ok) passed++;
    else { failed++; printf("FAIL: %s\n", what); }
}

/* Which chunk an element range is (chunks as coll.h cuts n over p: the
   first n % p chunks one element longer). */
static int chunk_of(size_t first_elem, size_t n, int p)
{
    size_t base = n / (size_t)p, extra = n % (size_t)p;
    int c;
    for (c = 0; c < p; c++) {
        size_t off = (size_t)c * base + ((size_t)c < extra ? (size_t)c : extra);
        if (off == first_elem) return c;
    }
    return -1;
}

/* The teaching trace: every step of the schedule, every host. */
static void print_trace(coll_comm *comm, size_t n)
{
    coll_args a;
    coll_xfer x;
    int step, r, phase = 0;
    memset(&a, 0, sizeof a);
    a.kind = COLL_ALLREDUCE; a.algo = COLL_ALGO_RING; a.count = n;
    a.dtype = COLL_FLOAT64; a.op = COLL_AVG;      /* buffers NULL: nothing is touched */
    printf("ring all-reduce (average) of %lu float64 values on %d hosts\n",
           (unsigned long)n, HOSTS);
    for (step = 0; coll_describe(&comm[0], &a, step, &x) == 1; step++) {
        if (x.reduce && phase != 1) {
            phase = 1;
            printf("phase 1, accumulate (reduce-scatter): a chunk travels the ring and\n"
                   "  every host it reaches adds its own part\n");
        } else if (!x.reduce && phase != 2) {
            phase = 2;
            printf("phase 2, copy (all-gather): each finished chunk travels the ring\n"
                   "  once more and every host keeps a copy\n");
        }
        printf("  step %d:", step);
        for (r = 0; r < HOSTS; r++) {
            coll_describe(&comm[r], &a, step, &x);
            if (x.send_to < 0) continue;
            printf("  %d->%d chunk %d", r, x.send_to,
                   chunk_of(x.send_offset / sizeof(double), n, HOSTS));
        }
        printf("\n");
    }
    printf("  then every host divides its sum by %d (the mean)\n", HOSTS);
}

/* Run one all-reduce over the simulated hosts; check and report. */
static void simulate(double data[HOSTS][MAXDIMS], size_t n, int trace, int show)
{
    static coll_mailbox box;
    static unsigned char scratch[HOSTS][256];
    coll_comm comm[HOSTS];
    coll_request req[HOSTS];
    coll_port port;
    double mean[MAXDIMS], orig[HOSTS][MAXDIMS];
    int r, pending = HOSTS, turns = 0, ok = 1, done[HOSTS] = {0}, same = 1, close = 1;
    size_t i;
    char what[120];

    memcpy(orig, data, sizeof orig);
    coll_mailbox_init(&box, HOSTS);
    for (r = 0; r < HOSTS; r++) {
        port = coll_mailbox_port(&box, r);
        coll_init(&comm[r], r, HOSTS, &port, scratch[r], sizeof scratch[r]);
    }
    if (trace) print_trace(comm, n);
    if (trace && show)
        printf("running it: every turn, each host advances as far as it can\n");

    /* the plain-loop answer: np.mean(data, axis=0) */
    for (i = 0; i < n; i++) {
        double s = 0;
        for (r = 0; r < HOSTS; r++) s += orig[r][i];
        mean[i] = s / HOSTS;
    }

    /* every host starts its all-reduce (in place), then they take turns */
    for (r = 0; r < HOSTS; r++) {
        coll_args a;
        memset(&a, 0, sizeof a);
        a.kind = COLL_ALLREDUCE; a.algo = COLL_ALGO_RING;
        a.src = data[r]; a.dst = data[r]; a.count = n;
        a.dtype = COLL_FLOAT64; a.op = COLL_AVG;
        if (coll_start(&req[r], &comm[r], &a) != COLL_OK) ok = 0;
    }
    while (ok && pending > 0 && turns < 100000) {
        for (r = 0; r < HOSTS; r++) {
            int rc;
            if (done[r]) continue;
            rc = coll_progress(&req[r]);      /* as far as it can without waiting */
            if (rc == COLL_AGAIN) continue;
            if (rc != COLL_OK) { printf("host %d: %s\n", r, coll_result_str(rc)); ok = 0; }
            done[r] = 1;
            pending--;
        }
        turns++;
        if (trace && show) {   /* each host's vector: partial sums, then copies */
            printf("  after turn %d:", turns);
            for (r = 0; r < HOSTS; r++) {
                printf("%s host %d [", r ? "\n               " : "", r);
                for (i = 0; i < n; i++) printf("%s%.4f", i ? " " : "", data[r][i]);
                printf("]");
            }
            printf("\n");
        }
    }
    snprintf(what, sizeof what, "%lu values: every host finished", (unsigned long)n);
    check(ok && pending == 0, what);

    if (show) {
        printf("host 0: [");
        for (i = 0; i < n; i++) printf("%s%.17g", i ? " " : "", data[0][i]);
        printf("]\n");
    }
    /* np.allclose(hosts[0].data, hosts[1].data) - here for every host, and
       bit for bit: each element was summed along one chain, then copied */
    for (r = 1; r < HOSTS; r++) {
        snprintf(what, sizeof what, "%lu values: host %d is bit-identical to host 0",
                 (unsigned long)n, r);
        if (memcmp(data[r], data[0], n * sizeof(double)) != 0) same = 0;
        check(memcmp(data[r], data[0], n * sizeof(double)) == 0, what);
    }
    /* np.allclose(hosts[0].data, mean) - with the float64 bound: four
       additions and one division, each off by at most half an ulp */
    for (i = 0; i < n; i++) {
        double tol = 4.0 * DBL_EPSILON * fabs(mean[i]) + DBL_MIN;
        snprintf(what, sizeof what, "%lu values: element %lu is the mean (%.17g vs %.17g)",
                 (unsigned long)n, (unsigned long)i, data[0][i], mean[i]);
        if (!(fabs(data[0][i] - mean[i]) <= tol)) close = 0;
        check(fabs(data[0][i] - mean[i]) <= tol, what);
    }
    if (show)
        printf("all hosts identical: %s\nequal to the mean:   %s\n",
               same ? "True" : "False", close ? "True" : "False");
    printf("  %lu values: %llu messages, %llu bytes moved in %d turns\n",
           (unsigned long)n, box.messages, box.bytes, turns);
}

int main(int argc, char **argv)
{
    /* the seed's data: 4 hosts x 4 values */
    static double seed[HOSTS][MAXDIMS] = {
        { 1.1, 1.2, 1.3, 1.4 },
        { 2.01, 2.02, 2.03, 2.04 },
        { 3.001, 3.002, 3.003, 3.004 },
        { 4.0001, 4.0002, 4.0003, 4.0004 },
    };
    static double ragged[HOSTS][MAXDIMS];
    int check_only = argc > 1 && strcmp(argv[1], "--check") == 0, r, i;

    simulate(seed, 4, !check_only, 1);

    /* 10 values on 4 hosts: the seed's `dims // world_size` chunks would
       drop two of them; coll.h's chunks are 3, 3, 2, 2 */
    for (r = 0; r < HOSTS; r++)
        for (i = 0; i < 10; i++)
            ragged[r][i] = (r + 1) + (i + 1) / 100.0;
    simulate(ragged, 10, !check_only, 0);

    printf("ring-sim: %d passed, %d failed\n", passed, failed);
    return failed != 0;
}
