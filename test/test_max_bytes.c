/* test_max_bytes.c - a port that carries at most max_bytes per message.

   The threads port behind a wrapper that refuses any message larger than
   its limit (an error the collective would return) and says so in
   coll_port.max_bytes: the port checker (test/check_port.h: every
   collective and algorithm, ragged counts, in and out of place, tiny
   scratch, error cases) must pass at limits of 1, 8 and 64 bytes, at 2 to
   16 ranks, over the threads port's buffered sends and its synchronous
   (rendezvous) ones - and the wrapper must have seen no message over its
   limit: frames, tails and CRCs included.
   RUN  make test-max-bytes */
#include "../ports/coll_threads.h"       /* first: it asks for POSIX.1-2008 */
#define COLL_IMPLEMENTATION
#include "../coll.h"
#define COLL_THREADS_IMPLEMENTATION
#include "../ports/coll_threads.h"
#include "test_ports.h"
#include "check_port.h"
#include "test_clock.h"

#include <string.h>
#include <time.h>

enum { LIMIT_ERR = -77, MAXR = 16 };
static unsigned char arena[16u << 20] __attribute__((aligned(16)));

/* The wrapper: forwards every call, refuses a message over the limit. */
typedef struct limited {
    coll_port inner;
    size_t limit;
    unsigned long over, msgs;             /* messages over the limit, all */
} limited;
static limited lim[MAXR];

static int too_big(limited *L, size_t bytes)
{
    __atomic_add_fetch(&L->msgs, 1, __ATOMIC_RELAXED);
    if (bytes <= L->limit) return 0;
    __atomic_add_fetch(&L->over, 1, __ATOMIC_RELAXED);
    return 1;
}
static int l_send(void *ctx, int peer, const void *buf, size_t bytes)
{
    limited *L = (limited *)ctx;
    return too_big(L, bytes) ? LIMIT_ERR : L->inner.send(L->inner.ctx, peer, buf, bytes);
}
static int l_recv(void *ctx, int peer, void *buf, size_t bytes)
{
    limited *L = (limited *)ctx;
    return too_big(L, bytes) ? LIMIT_ERR : L->inner.recv(L->inner.ctx, peer, buf, bytes);
}
static int l_sendrecv(void *ctx, int to, const void *sbuf, size_t sbytes, int from, void *rbuf, size_t rbytes)
{
    limited *L = (limited *)ctx;
    if (too_big(L, sbytes) | too_big(L, rbytes)) return LIMIT_ERR;
    return L->inner.sendrecv(L->inner.ctx, to, sbuf, sbytes, from, rbuf, rbytes);
}
static int l_isend(void *ctx, int peer, const void *buf, size_t bytes, int *h)
{
    limited *L = (limited *)ctx;
    return too_big(L, bytes) ? LIMIT_ERR : L->inner.isend(L->inner.ctx, peer, buf, bytes, h);
}
static int l_irecv(void *ctx, int peer, void *buf, size_t bytes, int *h)
{
    limited *L = (limited *)ctx;
    return too_big(L, bytes) ? LIMIT_ERR : L->inner.irecv(L->inner.ctx, peer, buf, bytes, h);
}
static int l_wait(void *ctx, int h, int block)
{
    limited *L = (limited *)ctx;
    return L->inner.wait(L->inner.ctx, h, block);
}
static void l_abort(void *ctx, int code)
{
    limited *L = (limited *)ctx;
    L->inner.abort(L->inner.ctx, code);
}
static int l_attach(void *ctx)
{
    limited *L = (limited *)ctx;
    return L->inner.attach(L->inner.ctx);
}

typedef struct launch {
    coll_threads w;
    int rendezvous;
    size_t limit;
    coll_port_check_body body;
    void *arg;
} launch;

static int rank_main(int rank, void *arg)
{
    launch *l = (launch *)arg;
    limited *L = &lim[rank];
    coll_port port;
    L->inner = l->rendezvous ? coll_rendezvous_port(&l->w, rank) : coll_threads_port(&l->w, rank);
    L->limit = l->limit;
    memset(&port, 0, sizeof port);
    port.ctx = L;
    port.send = l_send; port.recv = l_recv; port.abort = l_abort; port.attach = l_attach;
    if (!l->rendezvous) {
        port.sendrecv = l_sendrecv; port.isend = l_isend; port.irecv = l_irecv; port.wait = l_wait;
    }
    port.max_bytes = l->limit;
    return l->body(rank, &port, l->arg);
}

static int run(void *user, int nranks, coll_port_check_body body, void *arg)
{
    launch *l = (launch *)user;
    int rc;
    if (coll_threads_init(&l->w, nranks, 20000) != COLL_OK) return nranks;
    l->body = body;
    l->arg = arg;
    rc = coll_threads_run(&l->w, rank_main, l);
    coll_threads_destroy(&l->w);
    return rc;
}

int main(void)
{
    static launch L;
    static coll_port_check ck;
    static const struct { size_t limit; int p, rendezvous; } cases[] = {
        {64, 2, 0}, {64, 4, 0}, {64, 7, 0}, {64, 16, 0}, {64, 4, 1},
        {8, 3, 0}, {8, 5, 0}, {8, 3, 1},
        {1, 2, 0}, {1, 3, 0}, {1, 2, 1}
    };
    size_t i;
    int r;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned long before = coll_test_passed, over = 0, msgs = 0;
        double t0 = now_s();
        memset(&ck, 0, sizeof ck);
        memset(lim, 0, sizeof lim);
        L.limit = cases[i].limit; L.rendezvous = cases[i].rendezvous;
        ck.name = L.rendezvous ? "max_bytes (send/recv only)" : "max_bytes";
        ck.nranks = cases[i].p;
        ck.launch = run; ck.launch_user = &L;
        ck.arena = arena; ck.arena_bytes = sizeof arena;
        ck.now = now_s;
        coll_port_check_run(&ck);
        for (r = 0; r < cases[i].p; r++) { over += lim[r].over; msgs += lim[r].msgs; }
        COLL_CHECK_MSG(over == 0, "%s, limit %zu, %d ranks: %lu messages over the limit",
                       ck.name, cases[i].limit, cases[i].p, over);
        COLL_CHECK_MSG(msgs > 0, "%s, limit %zu: no message at all", ck.name, cases[i].limit);
        printf("  %s %zu B, %d ranks: %lu checks passed, %lu failed, %lu not available, %lu messages (%.2f s)\n",
               ck.name, cases[i].limit, ck.nranks, coll_test_passed - before, ck.tally->failed,
               ck.tally->unavailable, msgs, now_s() - t0);
    }
    return coll_test_summary("max_bytes");
}
