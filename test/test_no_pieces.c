/* test_no_pieces.c - a port with max_bytes in a build without the pieces
   layer (COLL_NO_PIECES), which cuts messages to fit it.

   Built twice: with the argument checks and without them
   (COLL_NO_ARGCHECK). Either way coll_init must refuse the port
   (COLL_ERR_NOSYS) on every rank instead of handing it messages larger than
   max_bytes; with the error texts, coll_last_error names the cause. Should
   a build take the port anyway, each rank runs an all-reduce of 32 floats
   (128 B) over the wrapper, which counts the messages over its 64 B limit:
   there must be none.
   RUN  make test-max-bytes */
#include "../ports/coll_threads.h"       /* first: it asks for POSIX.1-2008 */
#define COLL_IMPLEMENTATION
#include "../coll.h"
#define COLL_THREADS_IMPLEMENTATION
#include "../ports/coll_threads.h"
#include "coll_test.h"

#include <string.h>

enum { P = 2, LIMIT = 64, N = 32 };

typedef struct fifo {
    coll_port inner;
    unsigned long over;                   /* messages over LIMIT */
} fifo;
static fifo F[P];

static int fifo_send(void *ctx, int peer, const void *buf, size_t bytes)
{
    fifo *f = (fifo *)ctx;
    if (bytes > LIMIT) __atomic_add_fetch(&f->over, 1, __ATOMIC_RELAXED);
    return f->inner.send(f->inner.ctx, peer, buf, bytes);
}
static int fifo_recv(void *ctx, int peer, void *buf, size_t bytes)
{
    fifo *f = (fifo *)ctx;
    if (bytes > LIMIT) __atomic_add_fetch(&f->over, 1, __ATOMIC_RELAXED);
    return f->inner.recv(f->inner.ctx, peer, buf, bytes);
}

static int rank_main(int r, void *arg)
{
    coll_threads *w = (coll_threads *)arg;
    static double scratch[P][64];
    float src[N], dst[N];
    coll_port port;
    coll_comm c;
    int rc, i;
    memset(&port, 0, sizeof port);
    F[r].inner = coll_threads_port(w, r);
    port.ctx = &F[r]; port.send = fifo_send; port.recv = fifo_recv;
    port.max_bytes = LIMIT;
    rc = coll_init(&c, r, P, &port, scratch[r], sizeof scratch[r]);
    COLL_CHECK_MSG(rc == COLL_ERR_NOSYS, "rank %d: coll_init of a max_bytes port without pieces gave %d, not COLL_ERR_NOSYS", r, rc);
#ifndef COLL_NO_ERRSTR
    COLL_CHECK_MSG(strstr(coll_last_error(&c), "max_bytes needs the pieces layer") != NULL,
                   "rank %d: coll_last_error says '%s'", r, coll_last_error(&c));
#endif
    COLL_CHECK_EQ(coll_size(&c), -1);                /* no communicator came of it */
    if (rc != COLL_OK) return 0;
    for (i = 0; i < N; i++) src[i] = (float)(r + i);
    rc = coll_allreduce(&c, src, dst, N, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
    COLL_CHECK_MSG(F[r].over == 0, "rank %d: %lu messages over the port's %d B (allreduce gave %d)",
                   r, F[r].over, LIMIT, rc);
    return 0;
}

int main(void)
{
    static coll_threads w;
    coll_threads_init(&w, P, 5000);
    COLL_CHECK(coll_threads_run(&w, rank_main, &w) == 0);
    coll_threads_destroy(&w);
#ifdef COLL_NO_ARGCHECK
    return coll_test_summary("no-pieces (no argument checks)");
#else
    return coll_test_summary("no-pieces");
#endif
}
