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

/* The hosts move in lockstep, as the seed's hosts do: in turn t a host may
   post only the transfers of schedule step t-1 or earlier. A thin port in
   front of the mailbox answers COLL_AGAIN ("not now, nothing happened") to
   a later one; it knows which step each transfer belongs to from
   coll_describe. So after turn t every host has done exactly steps 0..t-1. */
typedef struct gate {
    coll_port inner;
    int sends[64], recvs[64];   /* step of the k-th send / receive          */
    int nsends, nrecvs, posted_s, posted_r;
    const int *turn;
} gate;

static int gate_isend(void *ctx, int peer, const void *buf, size_t bytes, int *h)
{
    gate *g = (gate *)ctx;
    int rc;
    if (g->posted_s < g->nsends && g->sends[g->posted_s] >= *g->turn) return COLL_AGAIN;
    rc = g->inner.isend(g->inner.ctx, peer, buf, bytes, h);
    if (rc == COLL_OK) g->posted_s++;
    return rc;
}
static int gate_irecv(void *ctx, int peer, void *buf, size_t bytes, int *h)
{
    gate *g = (gate *)ctx;
    int rc;
    if (g->posted_r < g->nrecvs && g->recvs[g->posted_r] >= *g->turn) return COLL_AGAIN;
    rc = g->inner.irecv(g->inner.ctx, peer, buf, bytes, h);
    if (rc == COLL_OK) g->posted_r++;
    return rc;
}
static int gate_wait(void *ctx, int h, int block)
{
    gate *g = (gate *)ctx;
    return g->inner.wait(g->inner.ctx, h, block);
}
static int gate_send(void *ctx, int peer, const void *buf, size_t bytes)
{
    gate *g = (gate *)ctx;
    return g->inner.send(g->inner.ctx, peer, buf, bytes);
}
static int gate_recv(void *ctx, int peer, void *buf, size_t bytes)
{
    gate *g = (gate *)ctx;
    return g->inner.recv(g->inner.ctx, peer, buf, bytes);
}

static void print_hosts(double data[HOSTS][MAXDIMS], size_t n)
{
    int r;
    size_t i;
    for (r = 0; r < HOSTS; r++) {
        printf("    host %d [", r);
        for (i = 0; i < n; i++) printf("%s%.4f", i ? " " : "", data[r][i]);
        printf("]\n");
    }
}

/* Run one all-reduce over the simulated hosts; check and report. */
static void simulate(double data[HOSTS][MAXDIMS], size_t n, int trace, int show)
{
    static coll_mailbox box;
    static unsigned char scratch[HOSTS][256];
    coll_comm comm[HOSTS];
    coll_request req[HOSTS];
    coll_port port;
    static gate g[HOSTS];
    double mean[MAXDIMS], orig[HOSTS][MAXDIMS];
    int r, pending = HOSTS, turns = 0, ok = 1, done[HOSTS] = {0}, same = 1, close = 1, nsteps = 0;
    size_t i;
    char what[120];

    memcpy(orig, data, sizeof orig);
    coll_mailbox_init(&box, HOSTS);
    for (r = 0; r < HOSTS; r++) {
        coll_args d;
        coll_xfer x;
        int step;
        memset(&g[r], 0, sizeof g[r]);
        g[r].inner = coll_mailbox_port(&box, r);
        g[r].turn = &turns;
        memset(&port, 0, sizeof port);
        port.ctx = &g[r];
        port.send = gate_send; port.recv = gate_recv;
        port.isend = gate_isend; port.irecv = gate_irecv; port.wait = gate_wait;
        coll_init(&comm[r], r, HOSTS, &port, scratch[r], sizeof scratch[r]);
        /* the seed's hosts trust each other: no call-agreement frames, so
           every transfer is one of the schedule's and turns are steps */
        coll_set_checks(&comm[r], 0);
        memset(&d, 0, sizeof d);       /* which step each transfer belongs to */
        d.kind = COLL_ALLREDUCE; d.algo = COLL_ALGO_RING; d.count = n;
        d.dtype = COLL_FLOAT64; d.op = COLL_AVG;
        for (step = 0; step < 64 && coll_describe(&comm[r], &d, step, &x) == 1; step++) {
            if (x.send_to >= 0) g[r].sends[g[r].nsends++] = step;
            if (x.recv_from >= 0) g[r].recvs[g[r].nrecvs++] = step;
            if (step + 1 > nsteps) nsteps = step + 1;
        }
    }
    if (trace) print_trace(comm, n);
    if (trace && show) {
        printf("running it: in turn t every host does step t-1 of the schedule (no more)\n");
        printf("  at the start:\n");
        print_hosts(data, n);
    }

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
    while (ok && pending > 0 && turns <= nsteps) {
        unsigned long long before;
        turns++;               /* this turn: step turns-1 on every host */
        do {                   /* every host as far as the gate lets it */
            before = box.messages;
            for (r = 0; r < HOSTS; r++) {
                int rc;
                if (done[r]) continue;
                rc = coll_progress(&req[r]);
                if (rc == COLL_AGAIN) continue;
                if (rc != COLL_OK) { printf("host %d: %s\n", r, coll_result_str(rc)); ok = 0; }
                done[r] = 1;
                pending--;
            }
        } while (ok && box.messages != before);
        if (trace && show) {   /* each host's vector: partial sums, then copies */
            if (turns <= nsteps)
                printf("  after turn %d (step %d, %s%s):\n", turns, turns - 1,
                       turns <= HOSTS - 1 ? "accumulate" : "copy",
                       turns == nsteps ? "; then each host divides by 4" : "");
            else
                printf("  at the end (every host divides by %d):\n", HOSTS);
            print_hosts(data, n);
        }
    }
    snprintf(what, sizeof what, "%lu values: one turn per schedule step (%d turns, %d steps)",
             (unsigned long)n, turns, nsteps);
    check(ok && turns == nsteps, what);
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
