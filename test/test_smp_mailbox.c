/* test_smp_mailbox.c - the multi-core mailbox port (ports/coll_smp_mailbox.h)
   with POSIX threads standing in for cores, each rank on its own thread
   with its own private end, the rings in one shared block:

     - the port checker (test/check_port.h: every collective x algorithm,
       counts 0..4099, in place and out, checked on every rank against the
       plain-loop reference) at 1, 2, 3, 4 and 7 ranks over small slots
       (4 slots of 64 B: every message of more than 56 B is split, rings
       fill constantly), and at 4 ranks over 16 slots of 1 KiB; then at 3
       ranks stripped to send/recv, and without irecv_fold. After each run
       every ring is drained (each producer's head equals its consumer's
       tail), no transfer is left posted, and bytes went through
       irecv_fold (the zero-copy reduce) exactly when it was offered;
     - point to point between two threads: 600 messages of 1..1200 bytes
       (rings of 4 slots of 32 B), mixing send/isend and recv/irecv with up
       to 4 outstanding, every byte checked, and both ranks sending 4 KiB
       to each other at once;
     - the port's refusals, in one thread: a corrupted head, tail or slot
       length is COLL_ERR_CORRUPT (no byte written outside the buffer), a
       total that differs from the posted size COLL_ERR_MISMATCH, a silent
       peer COLL_ERR_TIMEOUT, abort reaches the other end, bad arguments
       COLL_ERR_INVAL, a full handle table COLL_AGAIN, attach counts; and
       3000 random heads, tails and slot headers from a "rogue core": every
       answer one the contract knows, no byte written past the message.

       test_smp_mailbox [quick]    quick: checker at 2 and 3 ranks only
       test_smp_mailbox bench      all-reduce times (float32 sum, AUTO), no checks

   Ends with "smp_mailbox: N passed, N failed". */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#define COLL_IMPLEMENTATION
#include "coll.h"
#define COLL_SMP_MAILBOX_IMPLEMENTATION
#include "ports/coll_smp_mailbox.h"
#include "test/check_port.h"
#include "test/test_clock.h"

#define MAXR 8
static unsigned char block[1u << 20] __attribute__((aligned(64)));
static unsigned char arena[24u << 20] __attribute__((aligned(16)));

/* The idle hook of a thread standing in for a core: spin a little, then
   yield (ranks outnumber cores here); give up 5 s after the last progress. */
typedef struct waiter { double since; } waiter;
static int idle_hook(void *user, unsigned long polls)
{
    waiter *w = (waiter *)user;
    if (polls == 1) w->since = now_s();
    if (polls > 32) sched_yield();
    return polls % 256 == 0 && now_s() - w->since > 5.0;
}

/* ---- the launcher: one thread per rank ---------------------------------------- */

typedef struct world {
    int nranks;
    unsigned nslots, slot_bytes;
    int strip;                 /* 1: send/recv only; 2: no irecv_fold      */
    unsigned long long folded; /* bytes all ranks took through irecv_fold  */
    coll_smp_mailbox mb[MAXR];
    waiter wt[MAXR];
    coll_port_check_body body;
    void *arg;
    int rc[MAXR];
} world;

typedef struct rank_arg { world *w; int rank; } rank_arg;

static void *rank_main(void *p)
{
    rank_arg *a = (rank_arg *)p;
    world *w = a->w;
    coll_smp_mailbox *mb = &w->mb[a->rank];
    coll_port port;
    if (coll_smp_mailbox_init(mb, block, sizeof block, a->rank, w->nranks, w->nslots,
                              w->slot_bytes) != COLL_OK) {
        w->rc[a->rank] = COLL_ERR_INVAL;
        return NULL;
    }
    mb->idle = idle_hook;
    mb->user = &w->wt[a->rank];
    port = coll_smp_mailbox_port(mb);
    if (w->strip) port.irecv_fold = NULL;
    if (w->strip == 1) port.isend = NULL, port.irecv = NULL, port.wait = NULL;
    w->rc[a->rank] = w->body(a->rank, &port, w->arg);
    return NULL;
}

static int threads_run(void *user, int nranks, coll_port_check_body body, void *arg)
{
    world *w = (world *)user;
    pthread_t th[MAXR];
    rank_arg ra[MAXR];
    int r, q, failed = 0;
    if (nranks > MAXR || coll_smp_mailbox_format(block, sizeof block, nranks, w->nslots,
                                                 w->slot_bytes) != COLL_OK)
        return nranks;
    w->nranks = nranks;
    w->body = body;
    w->arg = arg;
    for (r = 0; r < nranks; r++) {
        ra[r].w = w;
        ra[r].rank = r;
        if (pthread_create(&th[r], NULL, rank_main, &ra[r]) != 0) return nranks;
    }
    for (r = 0; r < nranks; r++) pthread_join(th[r], NULL);
    for (r = 0; r < nranks; r++) {
        failed += w->rc[r] != 0;
        w->folded += w->mb[r].bytes_folded;
        COLL_CHECK_MSG(coll_smp_mailbox_pending(&w->mb[r]) == 0, "rank %d: %d transfers left posted",
                       r, coll_smp_mailbox_pending(&w->mb[r]));
        for (q = 0; q < nranks; q++)
            if (q != r)
                COLL_CHECK_MSG(w->mb[r].head[q] == w->mb[q].tail[r],
                               "ring %d->%d not drained: head %u, tail %u", r, q,
                               (unsigned)w->mb[r].head[q], (unsigned)w->mb[q].tail[r]);
    }
    return failed;
}

static void run_checker(int nranks, unsigned nslots, unsigned slot_bytes, int strip)
{
    static world w;
    static coll_port_check ck;
    unsigned long before = coll_test_passed;
    double t0 = now_s();
    char name[64];
    memset(&w, 0, sizeof w);
    memset(&ck, 0, sizeof ck);
    w.nslots = nslots;
    w.slot_bytes = slot_bytes;
    w.strip = strip;
    snprintf(name, sizeof name, "smp_mailbox %ux%u B%s", nslots, slot_bytes,
             strip == 1 ? " (send/recv only)" : strip == 2 ? " (no irecv_fold)" : "");
    ck.name = name;
    ck.nranks = nranks;
    ck.launch = threads_run;
    ck.launch_user = &w;
    ck.arena = arena;
    ck.arena_bytes = sizeof arena;
    ck.now = now_s;
    ck.prompt_s = 5.0;         /* 7 threads on 2 cores, under TSan */
    coll_port_check_run(&ck);
    printf("  %s, %d ranks: %lu checks passed, %lu failed, %lu not available (%.2f s)\n", name,
           nranks, coll_test_passed - before, ck.tally->failed, ck.tally->unavailable, now_s() - t0);
    /* the zero-copy reduce was taken where offered, and only there */
    if (nranks > 1 && !strip)
        COLL_CHECK_MSG(w.folded > 0, "%d ranks: no byte went through irecv_fold", nranks);
    if (strip)
        COLL_CHECK_EQ(w.folded, 0);
    if (!strip) printf("    %llu bytes reduced straight from the slots\n", w.folded);
}

/* ---- point to point between two threads ---------------------------------------- */

#define P2P_MSGS 600
static unsigned char p2p_byte(int i, size_t k) { return (unsigned char)(i * 31 + k * 7 + 1); }
static size_t p2p_len(int i) { return (size_t)(i * 37 % 1200) + 1; }

static void *p2p_rank(void *p)
{
    coll_smp_mailbox *mb = (coll_smp_mailbox *)p;
    static unsigned char sbuf[4][1200], rbuf[4][1200], x0[4096], x1[4096];
    unsigned char (*buf)[1200] = mb->rank == 0 ? sbuf : rbuf;
    unsigned char *mine = mb->rank == 0 ? x0 : x1;
    coll_port port = coll_smp_mailbox_port(mb);
    int h[4], i, j, bad = 0;
    size_t k;
    for (i = 0; i < P2P_MSGS; i += 4) {
        /* four messages: the odd ones blocking, the even ones posted */
        for (j = 0; j < 4; j++) {
            if (mb->rank == 0)
                for (k = 0; k < p2p_len(i + j); k++) buf[j][k] = p2p_byte(i + j, k);
            if (j % 2 == 1) continue;
            h[j] = -1;
            if ((mb->rank == 0 ? port.isend(mb, 1, buf[j], p2p_len(i + j), &h[j])
                               : port.irecv(mb, 0, buf[j], p2p_len(i + j), &h[j])) != COLL_OK)
                bad++;
        }
        for (j = 1; j < 4; j += 2)
            if ((mb->rank == 0 ? port.send(mb, 1, buf[j], p2p_len(i + j))
                               : port.recv(mb, 0, buf[j], p2p_len(i + j))) != COLL_OK)
                bad++;
        for (j = 0; j < 4; j += 2)
            if (port.wait(mb, h[j], 1) != COLL_OK) bad++;
        if (mb->rank == 1)
            for (j = 0; j < 4; j++)
                for (k = 0; k < p2p_len(i + j); k++) bad += buf[j][k] != p2p_byte(i + j, k);
    }
    /* both ways at once, each bigger than the ring: only progress inside
       the other wait lets it through */
    for (k = 0; k < sizeof x0; k++) mine[k] = (unsigned char)(k * 3 + mb->rank);
    {
        static unsigned char in0[4096], in1[4096];
        unsigned char *in = mb->rank == 0 ? in0 : in1;
        int hs, hr;
        if (port.isend(mb, 1 - mb->rank, mine, 4096, &hs) != COLL_OK) bad++;
        if (port.irecv(mb, 1 - mb->rank, in, 4096, &hr) != COLL_OK) bad++;
        if (port.wait(mb, hs, 1) != COLL_OK) bad++;
        if (port.wait(mb, hr, 1) != COLL_OK) bad++;
        for (k = 0; k < 4096; k++) bad += in[k] != (unsigned char)(k * 3 + 1 - mb->rank);
    }
    return (void *)(size_t)bad;
}

static void point_to_point(void)
{
    static coll_smp_mailbox mb[2];
    static waiter wt[2];
    pthread_t th[2];
    void *bad[2];
    int r;
    COLL_CHECK_EQ(coll_smp_mailbox_format(block, sizeof block, 2, 4, 32), COLL_OK);
    for (r = 0; r < 2; r++) {
        COLL_CHECK_EQ(coll_smp_mailbox_init(&mb[r], block, sizeof block, r, 2, 4, 32), COLL_OK);
        mb[r].idle = idle_hook;
        mb[r].user = &wt[r];
    }
    for (r = 0; r < 2; r++) pthread_create(&th[r], NULL, p2p_rank, &mb[r]);
    for (r = 0; r < 2; r++) pthread_join(th[r], &bad[r]);
    COLL_CHECK_MSG(bad[0] == NULL, "p2p rank 0: %zu failures", (size_t)bad[0]);
    COLL_CHECK_MSG(bad[1] == NULL, "p2p rank 1: %zu failures", (size_t)bad[1]);
    COLL_CHECK_EQ(mb[0].msgs_sent, P2P_MSGS + 1);
    COLL_CHECK(mb[0].slots_sent > 4 * P2P_MSGS);        /* most went in pieces */
    COLL_CHECK(mb[0].head[1] == mb[1].tail[0] && mb[1].head[0] == mb[0].tail[1]);
}

/* ---- refusals, in one thread ------------------------------------------------------ */

/* Two fresh ends over 4 slots of 32 B (24 B of payload). */
static coll_smp_mailbox e0, e1;
static void fresh(void)
{
    COLL_CHECK_EQ(coll_smp_mailbox_format(block, sizeof block, 2, 4, 32), COLL_OK);
    COLL_CHECK_EQ(coll_smp_mailbox_init(&e0, block, sizeof block, 0, 2, 4, 32), COLL_OK);
    COLL_CHECK_EQ(coll_smp_mailbox_init(&e1, block, sizeof block, 1, 2, 4, 32), COLL_OK);
    e0.spin_limit = e1.spin_limit = 1000;
    e0.now_ms = e1.now_ms = 0;                /* (the deadline by count: quick) */
}

/* A firmware's tick: a millisecond per reading. */
static unsigned long ticks;
static unsigned long tick_ms(void *user) { (void)user; return ++ticks; }

/* The shared words of ring from -> to, as a rogue core would see them. */
static uint32_t *ring_word(int from, int to, int tail)
{
    unsigned char *r = coll_smp__ring(&e0, from, to);
    return (uint32_t *)(void *)(r + (tail ? COLL_SMP_LINE : 0));
}
static unsigned char *ring_slot(int from, int to, unsigned n)
{
    return coll_smp__slot(&e0, coll_smp__ring(&e0, from, to), n);
}

static void refusals(void)
{
    coll_port p0, p1;
    unsigned char out[40], in[40 + 16];
    int h, i, hs[COLL_SMP_OPS + 1];
    coll_comm c1, c2;
    unsigned char scratch[2][512];
    for (i = 0; i < 40; i++) out[i] = (unsigned char)(i + 1);

    /* a head far beyond what the ring holds: refused, nothing written */
    fresh();
    p0 = coll_smp_mailbox_port(&e0);
    p1 = coll_smp_mailbox_port(&e1);
    COLL_CHECK_EQ(p0.send(&e0, 1, out, 40), COLL_OK);         /* two slots */
    *ring_word(0, 1, 0) = 0x7fffffffu;                        /* the rogue head */
    memset(in, 0xEE, sizeof in);
    COLL_CHECK_EQ(p1.recv(&e1, 0, in, 40), COLL_ERR_CORRUPT);
    for (i = 0; i < (int)sizeof in; i++) if (in[i] != 0xEE) break;
    COLL_CHECK_MSG(i == (int)sizeof in, "a refused ring wrote byte %d", i);
    COLL_CHECK_EQ(p1.irecv(&e1, 0, in, 8, &h), COLL_ERR_CORRUPT);    /* and stays so */
    COLL_CHECK_EQ(coll_smp_mailbox_pending(&e1), 0);

    /* a head that ran backwards (below the consumer's tail) */
    fresh();
    COLL_CHECK_EQ(p0.send(&e0, 1, out, 40), COLL_OK);
    COLL_CHECK_EQ(p1.recv(&e1, 0, in, 40), COLL_OK);
    COLL_CHECK(memcmp(in, out, 40) == 0);
    *ring_word(0, 1, 0) = 0;                                  /* tail is 2 */
    COLL_CHECK_EQ(p1.recv(&e1, 0, in, 8), COLL_ERR_CORRUPT);

    /* a tail the consumer never gave back: the producer refuses it */
    fresh();
    *ring_word(0, 1, 1) = 12345u;
    COLL_CHECK_EQ(p0.send(&e0, 1, out, 8), COLL_ERR_CORRUPT);
    COLL_CHECK_EQ(p0.wait(&e0, 0, 1), COLL_ERR_CORRUPT);

    /* a slot whose length is not the piece expected */
    fresh();
    COLL_CHECK_EQ(p0.send(&e0, 1, out, 40), COLL_OK);
    ((uint32_t *)(void *)ring_slot(0, 1, 0))[1] = 5000u;
    memset(in, 0xEE, sizeof in);
    COLL_CHECK_EQ(p1.recv(&e1, 0, in, 40), COLL_ERR_CORRUPT);
    COLL_CHECK(in[0] == 0xEE && in[40] == 0xEE);
    fresh();
    COLL_CHECK_EQ(p0.send(&e0, 1, out, 40), COLL_OK);
    ((uint32_t *)(void *)ring_slot(0, 1, 1))[1] = 24u;        /* last piece is 16 */
    COLL_CHECK_EQ(p1.recv(&e1, 0, in, 40), COLL_ERR_CORRUPT);
    COLL_CHECK(in[24] == 0xEE && in[39] == 0xEE);

    /* sizes that disagree: 16 sent, 24 expected */
    fresh();
    COLL_CHECK_EQ(p0.send(&e0, 1, out, 16), COLL_OK);
    COLL_CHECK_EQ(p1.recv(&e1, 0, in, 24), COLL_ERR_MISMATCH);

    /* a silent peer; a full ring and a sender with no reader */
    fresh();
    COLL_CHECK_EQ(p1.recv(&e1, 0, in, 8), COLL_ERR_TIMEOUT);
    COLL_CHECK_EQ(p0.send(&e0, 1, out, 40), COLL_OK);
    COLL_CHECK_EQ(p0.send(&e0, 1, out, 40), COLL_OK);         /* 4 slots: full */
    COLL_CHECK_EQ(p0.send(&e0, 1, out, 8), COLL_ERR_TIMEOUT);

    /* the deadline in time: the host's clock by default (10 s), a silent
       peer ends at timeout_ms whatever spin_limit says; a firmware tick */
    fresh();
    COLL_CHECK_EQ(coll_smp_mailbox_init(&e1, block, sizeof block, 1, 2, 4, 32), COLL_OK);
    COLL_CHECK(e1.now_ms != 0 && e1.timeout_ms == 10000ul);
    e1.timeout_ms = 200; e1.spin_limit = 0;
    {
        double t0 = now_s(), dt;
        COLL_CHECK_EQ(p1.recv(&e1, 0, in, 8), COLL_ERR_TIMEOUT);
        dt = now_s() - t0;
        COLL_CHECK_MSG(dt >= 0.19 && dt < 3.0, "a silent peer with a 200 ms deadline: %.3f s", dt);
    }
    fresh();
    e1.now_ms = tick_ms; e1.timeout_ms = 50; e1.spin_limit = 0; ticks = 0;
    COLL_CHECK_EQ(p1.recv(&e1, 0, in, 8), COLL_ERR_TIMEOUT);
    COLL_CHECK_MSG(ticks >= 50 && ticks <= 53, "the tick read %lu times for a 50 ms deadline", ticks);

    /* abort on one end reaches the other's wait; format clears it */
    fresh();
    COLL_CHECK_EQ(p0.irecv(&e0, 1, in, 8, &h), COLL_OK);
    COLL_CHECK_EQ(p0.wait(&e0, h, 0), COLL_AGAIN);
    p1.abort(&e1, COLL_ERR_IO);
    COLL_CHECK_EQ(p0.wait(&e0, h, 0), COLL_ERR_IO);
    COLL_CHECK_EQ(p1.isend(&e1, 0, out, 8, &h), COLL_ERR_IO);
    fresh();
    COLL_CHECK_EQ(p1.send(&e1, 0, out, 8), COLL_OK);
    COLL_CHECK_EQ(p0.recv(&e0, 1, in, 8), COLL_OK);

    /* arguments, handles */
    fresh();
    COLL_CHECK_EQ(p0.send(&e0, 0, out, 8), COLL_ERR_INVAL);   /* self */
    COLL_CHECK_EQ(p0.send(&e0, 2, out, 8), COLL_ERR_INVAL);
    COLL_CHECK_EQ(p0.send(&e0, -1, out, 8), COLL_ERR_INVAL);
    COLL_CHECK_EQ(p0.send(&e0, 1, out, 0), COLL_ERR_INVAL);
    COLL_CHECK_EQ(p0.wait(&e0, 3, 0), COLL_ERR_INVAL);
    COLL_CHECK_EQ(p0.wait(&e0, COLL_SMP_OPS, 0), COLL_ERR_INVAL);
    for (i = 0; i < COLL_SMP_OPS; i++) COLL_CHECK_EQ(p0.irecv(&e0, 1, in, 8, &hs[i]), COLL_OK);
    COLL_CHECK_EQ(p0.irecv(&e0, 1, in, 8, &hs[i]), COLL_AGAIN);
    COLL_CHECK_EQ(coll_smp_mailbox_pending(&e0), COLL_SMP_OPS);

    /* geometry */
    COLL_CHECK_EQ(coll_smp_mailbox_format(block, sizeof block, 2, 3, 32), COLL_ERR_INVAL);
    COLL_CHECK_EQ(coll_smp_mailbox_format(block, sizeof block, 2, 4, 12), COLL_ERR_INVAL);
    COLL_CHECK_EQ(coll_smp_mailbox_format(block + 4, sizeof block - 4, 2, 4, 32), COLL_ERR_INVAL);
    COLL_CHECK_EQ(coll_smp_mailbox_format(block, 100, 2, 4, 32), COLL_ERR_INVAL);
    COLL_CHECK_EQ(coll_smp_mailbox_bytes(2, 8, 128), (size_t)64 + 2 * (128 + 8 * 128) + 2 * COLL_SMP_WIN_BYTES);
    fresh();
    COLL_CHECK_EQ(coll_smp_mailbox_init(&e1, block, sizeof block, 1, 2, 8, 32), COLL_ERR_INVAL);
    COLL_CHECK_EQ(coll_smp_mailbox_init(&e1, block, sizeof block, 2, 2, 4, 32), COLL_ERR_INVAL);
    p1 = coll_smp_mailbox_port(&e1);
    COLL_CHECK(p1.send == NULL);
    COLL_CHECK_EQ(coll_init(&c1, 1, 2, &p1, scratch[1], sizeof scratch[1]), COLL_ERR_INVAL);

    /* attach: communicators on one end, counted */
    fresh();
    p0 = coll_smp_mailbox_port(&e0);
    COLL_CHECK_EQ(coll_init(&c1, 0, 2, &p0, scratch[0], sizeof scratch[0]), COLL_OK);
    COLL_CHECK_EQ(coll_init(&c2, 0, 2, &p0, scratch[1], sizeof scratch[1]), COLL_OK);
    COLL_CHECK_EQ(e0.attached, 2);
    COLL_CHECK_EQ(p0.attach(&e0), 2);
    coll_smp_mailbox_close(&e0);
    coll_smp_mailbox_close(&e1);
}

/* ---- bench: all-reduce time (not a test) ---------------------------------------- */

typedef struct bench_arg { int nranks, iters; size_t count; double us; } bench_arg;
static float bench_buf[MAXR][1 << 18];
static unsigned char bench_scratch[MAXR][1 << 16];

static int bench_body(int rank, coll_port *port, void *arg)
{
    bench_arg *b = (bench_arg *)arg;
    coll_comm c;
    double t0 = 0;
    size_t k;
    int i, rc = coll_init(&c, rank, b->nranks, port, bench_scratch[rank], sizeof bench_scratch[rank]);
    for (k = 0; k < b->count; k++) bench_buf[rank][k] = 1.0f;
    for (i = -10; i < b->iters && rc == 0; i++) {     /* 10 to warm up */
        if (i == 0) t0 = now_s();
        rc = coll_allreduce(&c, bench_buf[rank], bench_buf[rank], b->count, COLL_FLOAT32, COLL_SUM,
                            COLL_ALGO_AUTO);
    }
    if (rank == 0) b->us = (now_s() - t0) / b->iters * 1e6;
    return rc;
}

static void bench(void)
{
    static world w;
    static const size_t counts[] = { 2, 256, 16384, 262144 };
    static const unsigned geo[][2] = { { 8, 128 }, { 16, 4096 } };
    bench_arg b;
    int p, g;
    size_t i;
    for (p = 2; p <= 4; p += 2)
        for (g = 0; g < 2; g++)
            for (i = 0; i < sizeof counts / sizeof counts[0]; i++) {
                memset(&w, 0, sizeof w);
                w.nslots = geo[g][0];
                w.slot_bytes = geo[g][1];
                b.nranks = p;
                b.count = counts[i];
                b.iters = counts[i] > 10000 ? 50 : 2000;
                if (threads_run(&w, p, bench_body, &b) != 0) { printf("bench failed\n"); return; }
                printf("  %d ranks, %2u slots x %4u B, %7zu B all-reduce: %9.2f us\n", p, geo[g][0],
                       geo[g][1], counts[i] * 4, b.us);
            }
}

/* A rogue core: random heads, tails and slot headers, 3000 times. Every
   call must end in an answer the contract knows, and never write outside
   its buffer (ASan builds see any read outside the block). */
static void rogue(void)
{
    static const int ok[] = { COLL_OK, COLL_ERR_CORRUPT, COLL_ERR_MISMATCH, COLL_ERR_TIMEOUT };
    unsigned long x = 12345;
    unsigned char out[100], in[100 + 32];
    int n, i, j, seen[4] = { 0 };
    for (i = 0; i < 100; i++) out[i] = (unsigned char)i;
    for (n = 0; n < 3000; n++) {
        coll_port p0, p1;
        size_t len = 1 + n % 100;
        uint32_t v[4];
        int rc, which = n % 4;
        for (j = 0; j < 4; j++) {
            x = x * 6364136223846793005ul + 1442695040888963407ul;
            v[j] = (uint32_t)(x >> 33);
            if (n % 3 == 0) v[j] %= 8;              /* near the real values too */
        }
        fresh();
        p0 = coll_smp_mailbox_port(&e0);
        p1 = coll_smp_mailbox_port(&e1);
        if (which == 0) *ring_word(0, 1, 1) = v[0];               /* tail */
        rc = p0.send(&e0, 1, out, len);
        if (which == 1) *ring_word(0, 1, 0) = v[1];               /* head */
        if (which >= 2) {                                         /* headers */
            ((uint32_t *)(void *)ring_slot(0, 1, v[2] % 4))[which - 2] = v[3];
        }
        memset(in, 0xEE, sizeof in);
        if (rc == COLL_OK) rc = p1.recv(&e1, 0, in, len);
        for (j = 0; j < 4 && rc != ok[j]; j++) {}
        COLL_CHECK_MSG(j < 4, "rogue case %d: answer %d", n, rc);
        if (j < 4) seen[j]++;
        for (j = (int)len; j < (int)sizeof in; j++)
            if (in[j] != 0xEE) break;
        COLL_CHECK_MSG(j == (int)sizeof in, "rogue case %d: byte %d written past the message", n, j);
    }
    COLL_CHECK(seen[1] > 0);                /* corruption was seen, and passed */
    printf("  rogue core: %d ok, %d corrupt, %d mismatch, %d timeout\n", seen[0], seen[1], seen[2],
           seen[3]);
}

int main(int argc, char **argv)
{
    static const int ps[] = { 1, 2, 3, 4, 7 };
    int quick = argc > 1 && strcmp(argv[1], "quick") == 0;
    size_t i;
    if (argc > 1 && strcmp(argv[1], "bench") == 0) { bench(); return 0; }
    refusals();
    rogue();
    point_to_point();
    for (i = 0; i < sizeof ps / sizeof ps[0]; i++)
        if (!quick || ps[i] == 2 || ps[i] == 3) run_checker(ps[i], 4, 64, 0);
    if (!quick) {
        run_checker(4, 16, 1024, 0);
        run_checker(3, 4, 64, 1);
        run_checker(3, 4, 64, 2);
    }
    return coll_test_summary("smp_mailbox");
}
