/* test_ports.h - two ports that exist to test the library, not to move data
   fast. Include after coll.h and ports/coll_threads.h (with its
   implementation somewhere in the program).

   RENDEZVOUS
       coll_port coll_rendezvous_port(coll_threads *w, int rank);
     Only send and recv, both from the threads port, whose send returns only
     once the receiver has the data. No sendrecv, no isend/irecv/wait: the
     library must order every exchange itself, and any schedule in which a
     ring of ranks all send first deadlocks (and then times out) here.

   COUNTING
       typedef struct coll_counting {
           coll_port inner;                     the port underneath
           uint64_t bytes_sent, msgs, rounds;   what this rank did
           uint64_t bytes_recv, msgs_recv;
       } coll_counting;
       void coll_counting_init(coll_counting *k, const coll_port *inner);
       coll_port coll_counting_port(coll_counting *k);
       void coll_counting_reset(coll_counting *k);
     One coll_counting per rank, zeroed by init/reset. It passes every call
     to `inner` and counts: `msgs` and `bytes_sent` per message sent,
     `msgs_recv` and `bytes_recv` per message received, and one `round` per
     call of send, recv or sendrecv (a sendrecv is one round: both halves
     overlap). It offers sendrecv only if `inner` has it, and never the
     non-blocking calls, so every transfer is seen exactly once. Each rank
     updates only its own struct; read them after the ranks have joined.

   FAILING
       typedef struct coll_failing { coll_port inner; int at, code, sends; } coll_failing;
       coll_port coll_failing_port(coll_failing *f, const coll_port *inner, int at, int code);
     Send number `at` (counted from 1; 0: none) answers `code` and sends
     nothing; every other send and every recv go to `inner`, and so does
     abort when `inner` has one. Only send and recv: a blocking port.

   FORWARDING
       coll_port coll_forward_port(void *wrapper);
     For a test's own wrapper whose struct begins with the port it wraps
     (`coll_port inner;` first): a port that passes every call `inner` has
     straight on to it. The wrapper then replaces the calls it changes
     (a damaging send, a misbehaving irecv_fold). */
#ifndef COLL_TEST_PORTS_H
#define COLL_TEST_PORTS_H

#include <string.h>

#ifdef __GNUC__
#define COLL_TEST_PORTS__UNUSED __attribute__((unused))
#else
#define COLL_TEST_PORTS__UNUSED
#endif

static COLL_TEST_PORTS__UNUSED coll_port coll_rendezvous_port(coll_threads *w, int rank)
{
    coll_port p = coll_threads_port(w, rank);
    p.sendrecv = NULL;
    p.isend = NULL;
    p.irecv = NULL;
    p.wait = NULL;
    return p;
}

typedef struct coll_counting {
    coll_port inner;
    uint64_t bytes_sent, msgs, rounds;
    uint64_t bytes_recv, msgs_recv;
} coll_counting;

static int coll_counting__send(void *ctx, int peer, const void *buf, size_t bytes)
{
    coll_counting *k = (coll_counting *)ctx;
    k->rounds++;
    k->msgs++;
    k->bytes_sent += bytes;
    return k->inner.send(k->inner.ctx, peer, buf, bytes);
}

static int coll_counting__recv(void *ctx, int peer, void *buf, size_t bytes)
{
    coll_counting *k = (coll_counting *)ctx;
    k->rounds++;
    k->msgs_recv++;
    k->bytes_recv += bytes;
    return k->inner.recv(k->inner.ctx, peer, buf, bytes);
}

static int coll_counting__sendrecv(void *ctx, int to, const void *sbuf, size_t sbytes,
                                   int from, void *rbuf, size_t rbytes)
{
    coll_counting *k = (coll_counting *)ctx;
    k->rounds++;
    k->msgs++;
    k->bytes_sent += sbytes;
    k->msgs_recv++;
    k->bytes_recv += rbytes;
    return k->inner.sendrecv(k->inner.ctx, to, sbuf, sbytes, from, rbuf, rbytes);
}

static COLL_TEST_PORTS__UNUSED void coll_counting_reset(coll_counting *k)
{
    k->bytes_sent = k->msgs = k->rounds = k->bytes_recv = k->msgs_recv = 0;
}

static COLL_TEST_PORTS__UNUSED void coll_counting_init(coll_counting *k, const coll_port *inner)
{
    k->inner = *inner;
    coll_counting_reset(k);
}

static COLL_TEST_PORTS__UNUSED coll_port coll_counting_port(coll_counting *k)
{
    coll_port p;
    memset(&p, 0, sizeof p);
    p.ctx = k;
    p.send = coll_counting__send;
    p.recv = coll_counting__recv;
    if (k->inner.sendrecv) p.sendrecv = coll_counting__sendrecv;
    return p;
}

typedef struct coll_failing {
    coll_port inner;
    int at, code, sends;
} coll_failing;

static int coll_failing__send(void *ctx, int peer, const void *buf, size_t bytes)
{
    coll_failing *f = (coll_failing *)ctx;
    if (++f->sends == f->at) return f->code;
    return f->inner.send(f->inner.ctx, peer, buf, bytes);
}

static int coll_failing__recv(void *ctx, int peer, void *buf, size_t bytes)
{
    coll_failing *f = (coll_failing *)ctx;
    return f->inner.recv(f->inner.ctx, peer, buf, bytes);
}

static void coll_failing__abort(void *ctx, int code)
{
    coll_failing *f = (coll_failing *)ctx;
    f->inner.abort(f->inner.ctx, code);
}

static COLL_TEST_PORTS__UNUSED coll_port coll_failing_port(coll_failing *f, const coll_port *inner,
                                                           int at, int code)
{
    coll_port p;
    f->inner = *inner;
    f->at = at;
    f->code = code;
    f->sends = 0;
    memset(&p, 0, sizeof p);
    p.ctx = f;
    p.send = coll_failing__send;
    p.recv = coll_failing__recv;
    if (inner->abort) p.abort = coll_failing__abort;
    return p;
}

/* ---- forwarding: ctx points at a struct whose first member is the inner port */
#define COLL_FORWARD__INNER(ctx) ((const coll_port *)(ctx))
static COLL_TEST_PORTS__UNUSED int coll_forward__send(void *ctx, int peer, const void *buf, size_t bytes)
{
    return COLL_FORWARD__INNER(ctx)->send(COLL_FORWARD__INNER(ctx)->ctx, peer, buf, bytes);
}
static COLL_TEST_PORTS__UNUSED int coll_forward__recv(void *ctx, int peer, void *buf, size_t bytes)
{
    return COLL_FORWARD__INNER(ctx)->recv(COLL_FORWARD__INNER(ctx)->ctx, peer, buf, bytes);
}
static COLL_TEST_PORTS__UNUSED int coll_forward__sendrecv(void *ctx, int to, const void *sbuf, size_t sbytes, int from,
                                  void *rbuf, size_t rbytes)
{
    return COLL_FORWARD__INNER(ctx)->sendrecv(COLL_FORWARD__INNER(ctx)->ctx, to, sbuf, sbytes, from, rbuf, rbytes);
}
static COLL_TEST_PORTS__UNUSED int coll_forward__isend(void *ctx, int peer, const void *buf, size_t bytes, int *h)
{
    return COLL_FORWARD__INNER(ctx)->isend(COLL_FORWARD__INNER(ctx)->ctx, peer, buf, bytes, h);
}
static COLL_TEST_PORTS__UNUSED int coll_forward__irecv(void *ctx, int peer, void *buf, size_t bytes, int *h)
{
    return COLL_FORWARD__INNER(ctx)->irecv(COLL_FORWARD__INNER(ctx)->ctx, peer, buf, bytes, h);
}
static COLL_TEST_PORTS__UNUSED int coll_forward__wait(void *ctx, int h, int block)
{
    return COLL_FORWARD__INNER(ctx)->wait(COLL_FORWARD__INNER(ctx)->ctx, h, block);
}
static COLL_TEST_PORTS__UNUSED int coll_forward__irecv_fold(void *ctx, int peer, void *buf, size_t bytes, coll_fold_fn fold,
                                    void *arg, int *h)
{
    return COLL_FORWARD__INNER(ctx)->irecv_fold(COLL_FORWARD__INNER(ctx)->ctx, peer, buf, bytes, fold, arg, h);
}
static COLL_TEST_PORTS__UNUSED void coll_forward__abort(void *ctx, int code)
{
    COLL_FORWARD__INNER(ctx)->abort(COLL_FORWARD__INNER(ctx)->ctx, code);
}

static COLL_TEST_PORTS__UNUSED coll_port coll_forward_port(void *wrapper)
{
    const coll_port *in = COLL_FORWARD__INNER(wrapper);
    coll_port p;
    memset(&p, 0, sizeof p);
    p.ctx = wrapper;
    p.send = coll_forward__send;
    p.recv = coll_forward__recv;
    if (in->sendrecv) p.sendrecv = coll_forward__sendrecv;
    if (in->isend) { p.isend = coll_forward__isend; p.irecv = coll_forward__irecv; p.wait = coll_forward__wait; }
    if (in->irecv_fold) p.irecv_fold = coll_forward__irecv_fold;
    if (in->abort) p.abort = coll_forward__abort;
    return p;
}

#endif /* COLL_TEST_PORTS_H */
