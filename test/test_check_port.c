/* test_check_port.c - the port checker (test/check_port.h) over the two
   ports that live in one process:

     - the threads port (ports/coll_threads.h): ranks as threads, at 1, 2,
       3, 4 and 7 ranks; then at 4 ranks stripped to send/recv alone (the
       rendezvous port of test/test_ports.h), where every exchange is
       ordered by the library itself;
     - the mailbox port (ports/coll_mailbox.h): ranks advanced round robin
       in this one thread, at 1, 2, 3, 4, 5 and 8 ranks, plus the port's own
       abort: after it every rank's post and wait answer COLL_ERR_ABORTED;
     - and the checker's own check: over a port that damages one message
       in 97, or loses a rank's refusal, it must report failures.

       test_check_port [full]      full: every dtype with every operator

   Ends with "check_port: N passed, N failed". */
#include "ports/coll_threads.h"          /* first: it asks for POSIX.1-2008 */
#define COLL_IMPLEMENTATION
#include "coll.h"
#define COLL_THREADS_IMPLEMENTATION
#include "ports/coll_threads.h"
#define COLL_MAILBOX_IMPLEMENTATION
#include "ports/coll_mailbox.h"
#include "test/test_ports.h"
#include "test/check_port.h"
#include "test/test_clock.h"

#include <string.h>
#include <time.h>

static unsigned char arena[24u << 20] __attribute__((aligned(16)));

/* ---- threads: one body per thread, all at once ------------------------------ */

typedef struct threads_launch {
    coll_threads w;
    int rendezvous;                /* send and recv only                        */
    int damaging;                  /* ... through the damaging port below       */
    unsigned timeout_ms;           /* the threads port's deadline (0: 5000)     */
    coll_port_check_body body;
    void *arg;
} threads_launch;

/* A port that flips one byte in every 97th message rank 1 sends (send/recv
   only, over the threads port): the checker must notice. */
typedef struct damaging { coll_port inner; unsigned long sent; } damaging;
static damaging dmg[8];

static int damaging_send(void *ctx, int peer, const void *buf, size_t bytes)
{
    damaging *d = (damaging *)ctx;
    unsigned char copy[65536];
    if (d != &dmg[1] || ++d->sent % 97 != 0 || bytes > sizeof copy)
        return d->inner.send(d->inner.ctx, peer, buf, bytes);
    memcpy(copy, buf, bytes);
    copy[bytes / 2] ^= 0x10;
    return d->inner.send(d->inner.ctx, peer, copy, bytes);
}

static int damaging_recv(void *ctx, int peer, void *buf, size_t bytes)
{
    damaging *d = (damaging *)ctx;
    return d->inner.recv(d->inner.ctx, peer, buf, bytes);
}

static coll_port damaging_port(threads_launch *l, int rank)
{
    coll_port port;
    memset(&port, 0, sizeof port);
    dmg[rank].inner = coll_rendezvous_port(&l->w, rank);
    dmg[rank].sent = 0;
    port.ctx = &dmg[rank];
    port.send = damaging_send;
    port.recv = damaging_recv;
    return port;
}

static int threads_rank(int rank, void *arg)
{
    threads_launch *l = (threads_launch *)arg;
    coll_port port = l->damaging ? damaging_port(l, rank)
                   : l->rendezvous ? coll_rendezvous_port(&l->w, rank)
                                   : coll_threads_port(&l->w, rank);
    return l->body(rank, &port, l->arg);
}

static int threads_run(void *user, int nranks, coll_port_check_body body, void *arg)
{
    threads_launch *l = (threads_launch *)user;
    int rc;
    if (coll_threads_init(&l->w, nranks, l->timeout_ms ? l->timeout_ms : 5000) != COLL_OK) return nranks;
    l->body = body;
    l->arg = arg;
    rc = coll_threads_run(&l->w, threads_rank, l);
    coll_threads_destroy(&l->w);
    return rc;
}

/* ---- the mailbox: every rank in this thread, one turn each ------------------ */

static coll_mailbox box;

static int mailbox_run(void *user, int nranks, coll_port_check_body body, void *arg)
{
    coll_port port[COLL_MAILBOX_MAX_RANKS];
    int r, rc[COLL_MAILBOX_MAX_RANKS], live, failed = 0;
    (void)user;
    if (coll_mailbox_init(&box, nranks) != COLL_OK) return nranks;
    for (r = 0; r < nranks; r++) {
        port[r] = coll_mailbox_port(&box, r);
        rc[r] = COLL_AGAIN;
    }
    do {
        live = 0;
        for (r = 0; r < nranks; r++) {
            if (rc[r] != COLL_AGAIN) continue;
            rc[r] = body(r, &port[r], arg);
            live += rc[r] == COLL_AGAIN;
        }
    } while (live);
    for (r = 0; r < nranks; r++) failed += rc[r] != 0;
    COLL_CHECK_MSG(coll_mailbox_pending(&box) == 0, "mailbox: %d transfers left posted",
                   coll_mailbox_pending(&box));
    return failed;
}

/* The mailbox's abort: one rank's failure reaches everyone at once. */
static void mailbox_abort(void)
{
    unsigned char a[8] = { 1 }, b[8];
    coll_port p0, p1;
    int h0, h1;
    coll_mailbox_init(&box, 2);
    p0 = coll_mailbox_port(&box, 0);
    p1 = coll_mailbox_port(&box, 1);
    COLL_CHECK(p0.abort != NULL && p0.sendrecv == NULL);
    COLL_CHECK_EQ(p0.irecv(p0.ctx, 1, b, sizeof b, &h0), COLL_OK);
    COLL_CHECK_EQ(p0.wait(p0.ctx, h0, 0), COLL_AGAIN);
    p1.abort(p1.ctx, COLL_ERR_IO);
    COLL_CHECK_EQ(p0.wait(p0.ctx, h0, 0), COLL_ERR_ABORTED);   /* the waiter hears it */
    COLL_CHECK_EQ(p1.isend(p1.ctx, 0, a, sizeof a, &h1), COLL_ERR_ABORTED);
    COLL_CHECK_EQ(coll_mailbox_pending(&box), 0);
    COLL_CHECK_EQ(coll_mailbox_init(&box, 2), COLL_OK);        /* init clears it */
    COLL_CHECK_EQ(p1.isend(p1.ctx, 0, a, sizeof a, &h1), COLL_OK);
    COLL_CHECK_EQ(p0.recv(p0.ctx, 1, b, sizeof b), COLL_OK);
    COLL_CHECK_EQ(p1.wait(p1.ctx, h1, 0), COLL_OK);
    COLL_CHECK(b[0] == 1);
}

int main(int argc, char **argv)
{
    static threads_launch tl;
    static coll_port_check ck;
    static const int tp[] = { 1, 2, 3, 4, 7 }, mp[] = { 1, 2, 3, 4, 5, 8 };
    int full = argc > 1 && strcmp(argv[1], "full") == 0;
    size_t i;
    for (i = 0; i < sizeof tp / sizeof tp[0] + 1; i++) {
        unsigned long before = coll_test_passed;
        double t0 = now_s();
        memset(&ck, 0, sizeof ck);
        tl.rendezvous = i == sizeof tp / sizeof tp[0];
        ck.name = tl.rendezvous ? "threads (send/recv only)" : "threads";
        ck.nranks = tl.rendezvous ? 4 : tp[i];
        ck.launch = threads_run; ck.launch_user = &tl;
        ck.arena = arena; ck.arena_bytes = sizeof arena;
        ck.full = full && !tl.rendezvous; ck.now = now_s;
        coll_port_check_run(&ck);
        printf("  %s, %d ranks: %lu checks passed, %lu failed, %lu not available (%.2f s)\n",
               ck.name, ck.nranks, coll_test_passed - before, ck.tally->failed,
               ck.tally->unavailable, now_s() - t0);
    }
    for (i = 0; i < sizeof mp / sizeof mp[0]; i++) {
        unsigned long before = coll_test_passed;
        double t0 = now_s();
        memset(&ck, 0, sizeof ck);
        ck.name = "mailbox (round robin)";
        ck.nranks = mp[i];
        ck.launch = mailbox_run;
        ck.cooperative = 1;
        ck.arena = arena; ck.arena_bytes = sizeof arena;
        ck.full = full;
        coll_port_check_run(&ck);
        printf("  %s, %d ranks: %lu checks passed, %lu failed, %lu not available (%.2f s)\n",
               ck.name, ck.nranks, coll_test_passed - before, ck.tally->failed,
               ck.tally->unavailable, now_s() - t0);
    }
    mailbox_abort();
    /* the checker's own check: a damaging port fails it (quietly) */
    {
        unsigned long passed = coll_test_passed, failed = coll_test_failed, na = coll_test_na;
        unsigned long caught;
        memset(&ck, 0, sizeof ck);
        ck.name = "damaging"; ck.nranks = 3; ck.quiet = 1;
        tl.damaging = 1; tl.timeout_ms = 2000;
        ck.launch = threads_run; ck.launch_user = &tl;
        ck.arena = arena; ck.arena_bytes = sizeof arena;
        caught = coll_port_check_run(&ck);
        coll_test_passed = passed; coll_test_failed = failed; coll_test_na = na;
        COLL_CHECK_MSG(caught > 0, "a port that damages messages passed the checker");
        printf("  a port that damages one message in 97: %lu failures reported\n", caught);
    }
    return coll_test_summary("check_port");
}
