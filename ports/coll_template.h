/* coll_template.h - the smallest complete coll port: copy it to write yours

   This one moves bytes over one POSIX file descriptor per peer: a
   socketpair between forked processes, a pipe pair, a TCP connection, a
   serial line. Replace the four marked places (TRANSPORT) with your link's
   calls and keep the rest: argument checks, exact-size loops, error
   mapping, deadlines. ports/README.md explains every rule it follows.

   USAGE
         #define COLL_TEMPLATE_IMPLEMENTATION      (in one file)
         #include "ports/coll_template.h"

         int fds[N];            fds[peer]: a byte stream to that peer, -1 for self
         coll_template t;  coll_port port;
         coll_template_init(&t, rank, nranks, fds, 2000, &port);
         coll_init(&c, rank, nranks, &port, scratch, sizeof scratch);

   A write to a closed socket or pipe raises SIGPIPE: ignore it in your
   program (signal(SIGPIPE, SIG_IGN)) to get COLL_ERR_IO instead.

   A link that carries messages of at most N bytes (a mailbox, a FIFO):
   set port->max_bytes = N in coll_template_init and the library cuts
   every message to fit; that needs a build without COLL_NO_PIECES
   (coll_init refuses a max_bytes port there). A byte stream, as here,
   leaves it 0.

   LICENCE: MIT, as coll.h.
*/
#ifndef COLL_TEMPLATE_H
#define COLL_TEMPLATE_H

#ifndef COLL_H
#include "coll.h"
#endif

#ifndef COLL_TEMPLATE_MAX_RANKS
#define COLL_TEMPLATE_MAX_RANKS 64
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Everything a rank's port needs, owned by the caller (no heap). */
typedef struct coll_template {
    int rank, nranks;
    unsigned timeout_ms;                 /* 0 = wait forever                 */
    int fd[COLL_TEMPLATE_MAX_RANKS];     /* TRANSPORT: your per-peer handle  */
} coll_template;

int coll_template_init(coll_template *t, int rank, int nranks, const int *fds,
                       unsigned timeout_ms, coll_port *port);

#ifdef __cplusplus
}
#endif
#endif /* COLL_TEMPLATE_H */

#if defined(COLL_TEMPLATE_IMPLEMENTATION) && !defined(COLL_TEMPLATE__IMPLEMENTED)
#define COLL_TEMPLATE__IMPLEMENTED
#include <errno.h>
#include <string.h>
#include <poll.h>
#include <unistd.h>

/* Wait until fd is ready for `events`, at most t->timeout_ms.
   0, COLL_ERR_TIMEOUT (a peer that does not answer) or COLL_ERR_IO. */
static int coll_template__ready(coll_template *t, int fd, short events)
{
    struct pollfd p;
    int n;
    p.fd = fd;
    p.events = events;
    p.revents = 0;
    do
        n = poll(&p, 1, t->timeout_ms ? (int)t->timeout_ms : -1);
    while (n < 0 && errno == EINTR);
    if (n == 0)
        return COLL_ERR_TIMEOUT;
    return n < 0 ? COLL_ERR_IO : 0;    /* POLLHUP/POLLERR: the read/write says */
}

/* Required: send exactly `bytes` to `peer`, in order. Returning only when
   the bytes are handed to the transport is enough; returning only when the
   peer has them (rendezvous) would be fine as well. */
static int coll_template__send(void *ctx, int peer, const void *buf, size_t bytes)
{
    coll_template *t = (coll_template *)ctx;
    const unsigned char *p = (const unsigned char *)buf;
    if (peer < 0 || peer >= t->nranks || peer == t->rank)
        return COLL_ERR_INVAL;
    while (bytes > 0) {
        int rc = coll_template__ready(t, t->fd[peer], POLLOUT);
        ssize_t n;
        if (rc)
            return rc;
        n = write(t->fd[peer], p, bytes);           /* TRANSPORT: send */
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            return COLL_ERR_IO;     /* or your own negative code: passed up */
        p += n;
        bytes -= (size_t)n;
    }
    return 0;
}

/* Required: receive exactly `bytes` from `peer`. The library always asks
   for exactly what the peer sent, so a byte stream needs no headers. */
static int coll_template__recv(void *ctx, int peer, void *buf, size_t bytes)
{
    coll_template *t = (coll_template *)ctx;
    unsigned char *p = (unsigned char *)buf;
    if (peer < 0 || peer >= t->nranks || peer == t->rank)
        return COLL_ERR_INVAL;
    while (bytes > 0) {
        int rc = coll_template__ready(t, t->fd[peer], POLLIN);
        ssize_t n;
        if (rc)
            return rc;
        n = read(t->fd[peer], p, bytes);            /* TRANSPORT: receive */
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            return COLL_ERR_IO;     /* 0: the peer closed its end */
        p += n;
        bytes -= (size_t)n;
    }
    return 0;
}

int coll_template_init(coll_template *t, int rank, int nranks, const int *fds,
                       unsigned timeout_ms, coll_port *port)
{
    int i;
    if (!t || !port || !fds || nranks < 1 || nranks > COLL_TEMPLATE_MAX_RANKS ||
        rank < 0 || rank >= nranks)
        return COLL_ERR_INVAL;
    t->rank = rank;
    t->nranks = nranks;
    t->timeout_ms = timeout_ms;
    for (i = 0; i < nranks; i++)
        t->fd[i] = fds[i];                          /* TRANSPORT: connect */
    memset(port, 0, sizeof *port);     /* members added later stay NULL: absent */
    port->ctx = t;
    port->send = coll_template__send;
    port->recv = coll_template__recv;
    /* Optional capabilities stay NULL: the library then exchanges with
       blocking send/recv in a deadlock-free order. Add sendrecv for full
       duplex, or isend/irecv/wait for pipelining and coll_progress. */
    port->sendrecv = 0;
    port->isend = 0;
    port->irecv = 0;
    port->wait = 0;
    /* abort: NULL here. coll.h calls it once after a transport error so
       the other ranks fail now instead of at their deadline. Provide one
       when your transport can tell every peer at once - a shared "failed"
       word, a broadcast frame, closing every link (a closed socket or pipe
       makes the peer's read fail at once: close(t->fd[i]) for every peer
       would do here). Without it the peers still stop, at their deadline. */
    port->abort = 0;
    /* max_bytes: the largest message your link carries in one send, 0 =
       any. A mailbox or FIFO of N bytes sets N here, and the library
       cuts every message it hands the port into pieces of at most N (the
       pieces layer: a build with COLL_NO_PIECES refuses such a port at
       coll_init, COLL_ERR_NOSYS). A byte stream takes any size: 0. Every
       rank's port must say the same. */
    port->max_bytes = 0;
    return 0;
}

#endif /* COLL_TEMPLATE_IMPLEMENTATION */
