/* coll_mailbox.h - a coll port between ranks that share one memory and one
                    thread: cooperative, non-blocking, no OS, no heap.

   For event loops, bare metal (several "ranks" on one core, or cores that
   share RAM) and single-process simulations. Ranks are advanced in turn
   with coll_progress; a transfer is a match between a posted send and a
   posted receive, and whichever is posted second copies the bytes (one copy).

       #define COLL_MAILBOX_IMPLEMENTATION
       #include "ports/coll_mailbox.h"

       static coll_mailbox box;                    // shared by all ranks
       coll_mailbox_init(&box, 4);
       coll_port port = coll_mailbox_port(&box, rank);

   The blocking send/recv succeed only when the peer has already posted the
   other half; otherwise they return COLL_ERR_NOSYS, since waiting in the
   only thread would wait forever. Drive collectives with coll_start and
   coll_progress, which use isend/irecv/wait and never block.

   COLL_MAILBOX_MAX_RANKS (16) and COLL_MAILBOX_OPS (8 per rank) size the
   struct: about MAX_RANKS^2 * 24 + MAX_RANKS * OPS * 40 bytes.
*/
#ifndef COLL_MAILBOX_H
#define COLL_MAILBOX_H
#include "../coll.h"

#ifndef COLL_MAILBOX_MAX_RANKS
#define COLL_MAILBOX_MAX_RANKS 16
#endif
#ifndef COLL_MAILBOX_OPS
#define COLL_MAILBOX_OPS 8
#endif
#define COLL_MAILBOX_QUEUE 8   /* unmatched posts per ordered pair */

#ifndef COLL_MAILBOX_API
#ifdef COLL_MAILBOX_STATIC
#define COLL_MAILBOX_API static
#else
#define COLL_MAILBOX_API extern
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct coll_mailbox_op {
    const void *sbuf;          /* send: the data                            */
    void *rbuf;                /* recv: where it goes                       */
    size_t bytes;
    int busy, done, err;
} coll_mailbox_op;

typedef struct coll_mailbox_queue {   /* posts from `src` to `dst` not yet matched */
    unsigned char op[COLL_MAILBOX_QUEUE];
    unsigned char head, len;
    unsigned char sends;              /* 1: the queue holds sends, 0: receives */
} coll_mailbox_queue;

typedef struct coll_mailbox_rank {
    struct coll_mailbox *box;
    int rank;
} coll_mailbox_rank;

typedef struct coll_mailbox {
    int nranks;
    coll_mailbox_rank ranks[COLL_MAILBOX_MAX_RANKS];
    coll_mailbox_op ops[COLL_MAILBOX_MAX_RANKS][COLL_MAILBOX_OPS];
    coll_mailbox_queue q[COLL_MAILBOX_MAX_RANKS][COLL_MAILBOX_MAX_RANKS]; /* [src][dst] */
    unsigned long long messages, bytes;   /* totals, for teaching traces */
} coll_mailbox;

COLL_MAILBOX_API int coll_mailbox_init(coll_mailbox *box, int nranks);
COLL_MAILBOX_API coll_port coll_mailbox_port(coll_mailbox *box, int rank);

#ifdef __cplusplus
}
#endif
#endif /* COLL_MAILBOX_H */

#ifdef COLL_MAILBOX_IMPLEMENTATION
#ifndef COLL_MAILBOX__IMPLEMENTED
#define COLL_MAILBOX__IMPLEMENTED

static void coll_mailbox__copy(void *d, const void *s, size_t n)
{
    unsigned char *dp = (unsigned char *)d;
    const unsigned char *sp = (const unsigned char *)s;
    while (n--) *dp++ = *sp++;
}

COLL_MAILBOX_API int coll_mailbox_init(coll_mailbox *box, int nranks)
{
    int i, j;
    if (!box || nranks < 1 || nranks > COLL_MAILBOX_MAX_RANKS) return COLL_ERR_INVAL;
    box->nranks = nranks;
    box->messages = box->bytes = 0;
    for (i = 0; i < COLL_MAILBOX_MAX_RANKS; i++) {
        box->ranks[i].box = box;
        box->ranks[i].rank = i;
        for (j = 0; j < COLL_MAILBOX_OPS; j++) box->ops[i][j].busy = 0;
        for (j = 0; j < COLL_MAILBOX_MAX_RANKS; j++) box->q[i][j].len = 0;
    }
    return COLL_OK;
}

/* Post one half of a transfer between src and dst. If the other half is
   already waiting in the pair's queue, this post completes both. */
static int coll_mailbox__post(coll_mailbox_rank *me, int peer, int sending,
                              const void *sbuf, void *rbuf, size_t bytes, int *handle)
{
    coll_mailbox *box = me->box;
    int src = sending ? me->rank : peer, dst = sending ? peer : me->rank, slot, mine;
    coll_mailbox_queue *q;
    coll_mailbox_op *op;
    if (peer < 0 || peer >= box->nranks) return COLL_ERR_INVAL;
    for (slot = 0; slot < COLL_MAILBOX_OPS && box->ops[me->rank][slot].busy; slot++) {}
    if (slot == COLL_MAILBOX_OPS) return COLL_AGAIN;          /* all handles out */
    q = &box->q[src][dst];
    op = &box->ops[me->rank][slot];
    op->sbuf = sbuf; op->rbuf = rbuf; op->bytes = bytes;
    op->busy = 1; op->done = 0; op->err = COLL_OK;
    *handle = slot;
    if (q->len > 0 && q->sends != sending) {                  /* match the oldest */
        int other_rank = sending ? dst : src;
        coll_mailbox_op *other = &box->ops[other_rank][q->op[q->head]];
        coll_mailbox_op *s = sending ? op : other, *r = sending ? other : op;
        q->head = (unsigned char)((q->head + 1) % COLL_MAILBOX_QUEUE);
        q->len--;
        if (s->bytes != r->bytes) s->err = r->err = COLL_ERR_MISMATCH;
        else coll_mailbox__copy(r->rbuf, s->sbuf, s->bytes);
        s->done = r->done = 1;
        box->messages++;
        box->bytes += s->bytes;
        return COLL_OK;
    }
    if (q->len == COLL_MAILBOX_QUEUE) { op->busy = 0; return COLL_AGAIN; }
    mine = (q->head + q->len) % COLL_MAILBOX_QUEUE;
    q->op[mine] = (unsigned char)slot;
    q->sends = (unsigned char)sending;
    q->len++;
    return COLL_OK;
}

static int coll_mailbox__isend(void *ctx, int peer, const void *buf, size_t bytes, int *h)
{
    return coll_mailbox__post((coll_mailbox_rank *)ctx, peer, 1, buf, 0, bytes, h);
}

static int coll_mailbox__irecv(void *ctx, int peer, void *buf, size_t bytes, int *h)
{
    return coll_mailbox__post((coll_mailbox_rank *)ctx, peer, 0, 0, buf, bytes, h);
}

static int coll_mailbox__wait(void *ctx, int h, int block)
{
    coll_mailbox_rank *me = (coll_mailbox_rank *)ctx;
    coll_mailbox_op *op;
    if (h < 0 || h >= COLL_MAILBOX_OPS) return COLL_ERR_INVAL;
    op = &me->box->ops[me->rank][h];
    if (!op->busy) return COLL_ERR_INVAL;
    if (!op->done) return block ? COLL_ERR_NOSYS : COLL_AGAIN;
    op->busy = 0;
    return op->err;
}

/* Blocking forms: fine when the other half is already posted. */
static int coll_mailbox__blocking(void *ctx, int peer, int sending, const void *sbuf,
                                  void *rbuf, size_t bytes)
{
    coll_mailbox_rank *me = (coll_mailbox_rank *)ctx;
    int h, rc = coll_mailbox__post(me, peer, sending, sbuf, rbuf, bytes, &h);
    if (rc == COLL_AGAIN) return COLL_ERR_NOSYS;
    if (rc != COLL_OK) return rc;
    if (!me->box->ops[me->rank][h].done) {       /* withdraw: it went last in its queue */
        coll_mailbox_queue *q = sending ? &me->box->q[me->rank][peer] : &me->box->q[peer][me->rank];
        q->len--;
        me->box->ops[me->rank][h].busy = 0;
        return COLL_ERR_NOSYS;
    }
    return coll_mailbox__wait(ctx, h, 1);
}

static int coll_mailbox__send(void *ctx, int peer, const void *buf, size_t bytes)
{
    return coll_mailbox__blocking(ctx, peer, 1, buf, 0, bytes);
}

static int coll_mailbox__recv(void *ctx, int peer, void *buf, size_t bytes)
{
    return coll_mailbox__blocking(ctx, peer, 0, 0, buf, bytes);
}

COLL_MAILBOX_API coll_port coll_mailbox_port(coll_mailbox *box, int rank)
{
    coll_port p;
    p.ctx = &box->ranks[rank];
    p.send = coll_mailbox__send;
    p.recv = coll_mailbox__recv;
    p.sendrecv = 0;
    p.isend = coll_mailbox__isend;
    p.irecv = coll_mailbox__irecv;
    p.wait = coll_mailbox__wait;
    return p;
}

#endif /* COLL_MAILBOX__IMPLEMENTED */
#endif /* COLL_MAILBOX_IMPLEMENTATION */
