/* coll_mbox.h - a coll port over mailboxes in plain memory: every rank in
                 one address space, driven cooperatively from one loop.

   The picture is a microcontroller (or one core of one) running several
   ranks as state machines: each rank owns a coll_request, and a main loop
   calls coll_progress on each in turn. No OS, no threads, no heap; the
   whole transport is one caller-owned struct.

   USAGE
       #define COLL_MBOX_IMPLEMENTATION      (in one file)
       #include "coll_mbox.h"

       static coll_mbox_world w;              (statics: it is a few KiB)
       coll_mbox_init(&w, 4);
       for (r = 0; r < 4; r++) {
           coll_mbox_port(&w, r, &port);
           coll_init(&comm[r], r, 4, &port, scratch[r], sizeof scratch[r]);
       }
       ... coll_start(&req[r], &comm[r], &args[r]) for every r, then
       call coll_progress(&req[r]) round robin until none says COLL_AGAIN.

   HOW IT WORKS
     Each rank has COLL_MBOX_SLOTS mailbox slots. isend and irecv fill one
     and hand its index back as the handle. A posted send to rank d and a
     posted receive at d from us pair up when they carry the same sequence
     number: the n-th send from s to d meets the n-th receive at d from s,
     which is exactly the port contract's "messages between one pair arrive
     in order". Whoever finds the pair (at posting, or in wait) copies the
     bytes straight from the sender's buffer to the receiver's and marks both
     slots done. So a send completes only once its receiver has the data: the
     port is strictly synchronous, the hardest case for deadlock freedom.

     wait(h, 0) answers COLL_AGAIN while the partner is not posted yet.
     wait(h, 1) and the blocking send/recv cannot wait on one core: nothing
     else runs until they return. They call the world's `idle` hook (which
     may run other ranks, or on a second core just spin) and give up with
     COLL_ERR_TIMEOUT after `spin_limit` fruitless tries; with no hook they
     give up at once. A collective driven by coll_progress never needs them.

     Two cores sharing this memory would need each match made under a lock
     and the `done` flags published with a barrier; one core needs neither.

   CONFIGURATION
     COLL_MBOX_MAX_RANKS   ranks in one world                          (8)
     COLL_MBOX_SLOTS       outstanding transfers per rank              (8)
*/
#ifndef COLL_MBOX_H
#define COLL_MBOX_H

#include "coll.h"

#ifndef COLL_MBOX_MAX_RANKS
#define COLL_MBOX_MAX_RANKS 8
#endif
#ifndef COLL_MBOX_SLOTS
#define COLL_MBOX_SLOTS 8
#endif

#ifdef __cplusplus
extern "C" {
#endif

enum { COLL_MBOX__FREE, COLL_MBOX__SEND, COLL_MBOX__RECV };

typedef struct coll_mbox_slot {
    unsigned char kind;        /* COLL_MBOX__FREE, __SEND or __RECV           */
    unsigned char done;        /* paired and copied (or failed)               */
    short peer;                /* the other end                               */
    int result;                /* 0 or the error the pairing found            */
    unsigned seq;              /* n-th message on this (sender, receiver)     */
    const void *sbuf;          /* send: the data; recv: unused                */
    void *rbuf;                /* recv: where it goes                         */
    size_t bytes;
} coll_mbox_slot;

struct coll_mbox_world;
typedef struct coll_mbox_end {     /* the ctx a rank's port carries */
    struct coll_mbox_world *w;
    int rank;
} coll_mbox_end;

typedef struct coll_mbox_world {
    int nranks;
    coll_mbox_slot slot[COLL_MBOX_MAX_RANKS][COLL_MBOX_SLOTS];
    unsigned sends[COLL_MBOX_MAX_RANKS][COLL_MBOX_MAX_RANKS]; /* [from][to] posted */
    unsigned recvs[COLL_MBOX_MAX_RANKS][COLL_MBOX_MAX_RANKS]; /* [at][from] posted */
    coll_mbox_end end[COLL_MBOX_MAX_RANKS];
    /* Traffic, counted when a pair completes: what a cost model predicts. */
    unsigned long long bytes_sent[COLL_MBOX_MAX_RANKS];
    unsigned long msgs_sent[COLL_MBOX_MAX_RANKS];
    /* Blocking calls only (see above). */
    void (*idle)(void *user);
    void *user;
    unsigned long spin_limit;
} coll_mbox_world;

/* nranks in 1..COLL_MBOX_MAX_RANKS; returns 0 or COLL_ERR_INVAL. */
int  coll_mbox_init(coll_mbox_world *w, int nranks);
/* The port for `rank` (send, recv, isend, irecv, wait; no sendrecv or abort). */
void coll_mbox_port(coll_mbox_world *w, int rank, coll_port *port);
/* Posted transfers not yet waited for, over all ranks: 0 after every
   collective that finished, whatever its result. */
int  coll_mbox_pending(const coll_mbox_world *w);
void coll_mbox_reset_counts(coll_mbox_world *w);

#ifdef __cplusplus
}
#endif
#endif /* COLL_MBOX_H */

#ifdef COLL_MBOX_IMPLEMENTATION
#ifndef COLL_MBOX_IMPLEMENTED
#define COLL_MBOX_IMPLEMENTED

int coll_mbox_init(coll_mbox_world *w, int nranks)
{
    unsigned char *p = (unsigned char *)w;
    size_t i;
    int r;
    if (nranks < 1 || nranks > COLL_MBOX_MAX_RANKS) return COLL_ERR_INVAL;
    for (i = 0; i < sizeof *w; i++) p[i] = 0;  /* no memset when freestanding */
    w->nranks = nranks;
    for (r = 0; r < nranks; r++) { w->end[r].w = w; w->end[r].rank = r; }
    w->spin_limit = 1000000ul;
    return 0;
}

int coll_mbox_pending(const coll_mbox_world *w)
{
    int r, h, n = 0;
    for (r = 0; r < w->nranks; r++)
        for (h = 0; h < COLL_MBOX_SLOTS; h++)
            n += w->slot[r][h].kind != COLL_MBOX__FREE;
    return n;
}

void coll_mbox_reset_counts(coll_mbox_world *w)
{
    int r;
    for (r = 0; r < COLL_MBOX_MAX_RANKS; r++) { w->bytes_sent[r] = 0; w->msgs_sent[r] = 0; }
}

/* Pair slot `s` of rank `me` with its partner if that one is posted; both
   are marked done either way the pairing turns out. */
static void coll_mbox__match(coll_mbox_world *w, int me, coll_mbox_slot *s)
{
    int want = s->kind == COLL_MBOX__SEND ? COLL_MBOX__RECV : COLL_MBOX__SEND;
    coll_mbox_slot *t = w->slot[s->peer];
    int h;
    for (h = 0; h < COLL_MBOX_SLOTS; h++) {
        coll_mbox_slot *o = &t[h];
        if (o->kind == want && !o->done && o->peer == me && o->seq == s->seq) {
            const coll_mbox_slot *snd = s->kind == COLL_MBOX__SEND ? s : o;
            coll_mbox_slot *rcv = s->kind == COLL_MBOX__SEND ? o : s;
            int from = s->kind == COLL_MBOX__SEND ? me : s->peer;
            if (snd->bytes != rcv->bytes) {
                /* The contract says this never happens; say so if it does. */
                s->result = o->result = COLL_ERR_MISMATCH;
            } else {
                const unsigned char *src = (const unsigned char *)snd->sbuf;
                unsigned char *dst = (unsigned char *)rcv->rbuf;
                size_t i;
                for (i = 0; i < snd->bytes; i++) dst[i] = src[i];
                w->bytes_sent[from] += snd->bytes;
                w->msgs_sent[from]++;
            }
            s->done = o->done = 1;
            return;
        }
    }
}

static int coll_mbox__post(coll_mbox_end *e, int kind, int peer, const void *sbuf,
                           void *rbuf, size_t bytes, int *handle)
{
    coll_mbox_world *w = e->w;
    coll_mbox_slot *s;
    int h;
    if (peer < 0 || peer >= w->nranks || peer == e->rank) return COLL_ERR_INVAL;
    for (h = 0; h < COLL_MBOX_SLOTS; h++)
        if (w->slot[e->rank][h].kind == COLL_MBOX__FREE) break;
    if (h == COLL_MBOX_SLOTS) return COLL_AGAIN;   /* "cannot post now" */
    s = &w->slot[e->rank][h];
    s->kind = (unsigned char)kind;
    s->done = 0;
    s->peer = (short)peer;
    s->result = 0;
    s->sbuf = sbuf;
    s->rbuf = rbuf;
    s->bytes = bytes;
    s->seq = kind == COLL_MBOX__SEND ? w->sends[e->rank][peer]++
                                     : w->recvs[e->rank][peer]++;
    coll_mbox__match(w, e->rank, s);    /* the partner may be waiting already */
    *handle = h;
    return 0;
}

static int coll_mbox__isend(void *ctx, int peer, const void *buf, size_t bytes, int *handle)
{
    return coll_mbox__post((coll_mbox_end *)ctx, COLL_MBOX__SEND, peer, buf, 0, bytes, handle);
}

static int coll_mbox__irecv(void *ctx, int peer, void *buf, size_t bytes, int *handle)
{
    return coll_mbox__post((coll_mbox_end *)ctx, COLL_MBOX__RECV, peer, 0, buf, bytes, handle);
}

static int coll_mbox__wait(void *ctx, int handle, int block)
{
    coll_mbox_end *e = (coll_mbox_end *)ctx;
    coll_mbox_world *w = e->w;
    coll_mbox_slot *s;
    unsigned long spins = 0;
    int result;
    if (handle < 0 || handle >= COLL_MBOX_SLOTS) return COLL_ERR_INVAL;
    s = &w->slot[e->rank][handle];
    if (s->kind == COLL_MBOX__FREE) return COLL_ERR_INVAL;
    while (!s->done) {
        coll_mbox__match(w, e->rank, s);
        if (s->done) break;
        if (!block) return COLL_AGAIN;
        /* Blocking on one core: only the idle hook can make progress. */
        if (!w->idle || ++spins > w->spin_limit) return COLL_ERR_TIMEOUT;
        w->idle(w->user);
    }
    result = s->result;
    s->kind = COLL_MBOX__FREE;
    return result;
}

/* Blocking forms: post, then wait. If the wait gives up, the slot stays
   posted (its buffer may still be read), so the world is broken after a
   COLL_ERR_TIMEOUT, as the contract allows after any transport error. */
static int coll_mbox__send(void *ctx, int peer, const void *buf, size_t bytes)
{
    int h, rc = coll_mbox__isend(ctx, peer, buf, bytes, &h);
    if (rc == COLL_AGAIN) rc = COLL_ERR_TIMEOUT;   /* all slots busy */
    return rc ? rc : coll_mbox__wait(ctx, h, 1);
}

static int coll_mbox__recv(void *ctx, int peer, void *buf, size_t bytes)
{
    int h, rc = coll_mbox__irecv(ctx, peer, buf, bytes, &h);
    if (rc == COLL_AGAIN) rc = COLL_ERR_TIMEOUT;
    return rc ? rc : coll_mbox__wait(ctx, h, 1);
}

void coll_mbox_port(coll_mbox_world *w, int rank, coll_port *port)
{
    port->ctx = &w->end[rank];
    port->send = coll_mbox__send;
    port->recv = coll_mbox__recv;
    port->sendrecv = 0;
    port->isend = coll_mbox__isend;
    port->irecv = coll_mbox__irecv;
    port->wait = coll_mbox__wait;
    port->abort = 0;            /* one address space: nobody to tell */
}

#endif /* COLL_MBOX_IMPLEMENTED */
#endif /* COLL_MBOX_IMPLEMENTATION */
