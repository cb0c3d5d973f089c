/* coll_mailbox.h - a coll port over mailboxes in plain memory: every rank in
                    one address space, driven cooperatively from one loop.
                    No OS, no threads, no heap, no libc.

   For event loops, bare metal (several ranks as state machines on one
   core, or cores that share RAM) and single-process simulations. Each
   rank owns a coll_request, and a main loop calls coll_progress on each in
   turn; the whole transport is one caller-owned struct.

   USAGE
       #define COLL_MAILBOX_IMPLEMENTATION      (in one file)
       #include "ports/coll_mailbox.h"

       static coll_mailbox box;                 (statics: it is a few KiB)
       coll_mailbox_init(&box, 4);
       for (r = 0; r < 4; r++) {
           coll_port port = coll_mailbox_port(&box, r);
           coll_init(&comm[r], r, 4, &port, scratch[r], sizeof scratch[r]);
       }
       ... coll_start(&req[r], &comm[r], &args[r]) for every r, then
       call coll_progress(&req[r]) round robin until none says COLL_AGAIN.

   MESSAGE SIZE
     Any: a pairing copies the whole message, so the port leaves max_bytes
     0. A mailbox of your own with a fixed slot size sets max_bytes to it;
     the library then cuts every message to fit, in a build without
     COLL_NO_PIECES (coll_init refuses a max_bytes port in one with it).

   HOW IT WORKS
     Each rank has COLL_MAILBOX_OPS slots. isend and irecv fill one and hand
     its index back as the handle. A posted send to rank d and a posted
     receive at d from us pair up when they carry the same sequence number:
     the n-th send from s to d meets the n-th receive at d from s, which is
     exactly the port contract's "messages between one pair arrive in
     order". Whoever posts second finds the pair, copies the bytes straight
     from the sender's buffer to the receiver's (one copy) and marks both
     slots done. So a send completes only once its receiver has the data:
     the port is strictly synchronous, the hardest case for deadlock
     freedom.

     irecv_fold posts a receive that, when it pairs, folds the sender's
     bytes into its buffer with coll.h's fold instead of copying them: a
     reduction reads the peer's buffer itself (zero-copy reduce).

     wait(h, 0) answers COLL_AGAIN while the partner is not posted yet.
     wait(h, 1) and the blocking send/recv cannot wait on one core: nothing
     else runs until they return. They call the mailbox's `idle` hook
     (which may run other ranks - ports/baremetal/bm_task.c switches to the
     next rank's stack - or, on a second core, just spin) and give up with
     COLL_ERR_TIMEOUT after `spin_limit` fruitless tries; with no hook they
     give up at once. A collective driven by coll_progress never needs them.

     abort (called by coll.h after a transport error on any rank) marks the
     mailbox failed: every later post or wait of every rank answers
     COLL_ERR_ABORTED, so the other ranks stop at once instead of polling
     for a partner that will never come. coll_mailbox_init clears it.

     Two cores sharing this memory would need each match made under a lock
     (or a hardware semaphore) and the `done` flags published with a
     barrier; one core needs neither.

   CONFIGURATION
     COLL_MAILBOX_MAX_RANKS   ranks in one mailbox                      (16)
     COLL_MAILBOX_OPS         outstanding transfers per rank             (8)
     COLL_MAILBOX_STATIC      every function static                    (off)
   The struct is about MAX_RANKS * (OPS * 40 + MAX_RANKS * 8 + 32) bytes:
   11 KiB with the defaults, 3 KiB at 8 ranks.

   LICENCE: MIT, as coll.h.
*/
#ifndef COLL_MAILBOX_H
#define COLL_MAILBOX_H

#ifndef COLL_H
#include "../coll.h"
#endif

#ifndef COLL_MAILBOX_MAX_RANKS
#define COLL_MAILBOX_MAX_RANKS 16
#endif
#ifndef COLL_MAILBOX_OPS
#define COLL_MAILBOX_OPS 8
#endif

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

enum { COLL_MAILBOX__FREE, COLL_MAILBOX__SEND, COLL_MAILBOX__RECV };

typedef struct coll_mailbox_op {
    unsigned char kind;        /* COLL_MAILBOX__FREE, __SEND or __RECV        */
    unsigned char done;        /* paired and copied (or failed)               */
    short peer;                /* the other end                               */
    int result;                /* 0 or the error the pairing found            */
    unsigned seq;              /* n-th message on this (sender, receiver)     */
    const void *sbuf;          /* send: the data                              */
    void *rbuf;                /* recv: where it goes                         */
    size_t bytes;
    coll_fold_fn fold;         /* recv: fold instead of copying (irecv_fold)  */
    void *fold_arg;
} coll_mailbox_op;

struct coll_mailbox;
typedef struct coll_mailbox_end {  /* the ctx a rank's port carries */
    struct coll_mailbox *box;
    int rank;
} coll_mailbox_end;

typedef struct coll_mailbox {
    int nranks;
    int failed;                /* 0, or the code abort was called with        */
    coll_mailbox_op op[COLL_MAILBOX_MAX_RANKS][COLL_MAILBOX_OPS];
    unsigned sends[COLL_MAILBOX_MAX_RANKS][COLL_MAILBOX_MAX_RANKS]; /* [from][to] posted */
    unsigned recvs[COLL_MAILBOX_MAX_RANKS][COLL_MAILBOX_MAX_RANKS]; /* [at][from] posted */
    coll_mailbox_end end[COLL_MAILBOX_MAX_RANKS];
    /* Traffic, counted when a pair completes: what a cost model predicts.
       Per sending rank, and in total. */
    unsigned long long bytes_sent[COLL_MAILBOX_MAX_RANKS];
    unsigned long msgs_sent[COLL_MAILBOX_MAX_RANKS];
    unsigned long long messages, bytes;
    unsigned long long bytes_folded;   /* of `bytes`, folded where they lay (irecv_fold) */
    /* Blocking calls only (see above). */
    void (*idle)(void *user);
    void *user;
    unsigned long spin_limit;  /* idle calls before a blocking call gives up  */
} coll_mailbox;

/* nranks in 1..COLL_MAILBOX_MAX_RANKS; 0 or COLL_ERR_INVAL. Clears
   everything, counts and hook included (spin_limit: 10^6). */
COLL_MAILBOX_API int coll_mailbox_init(coll_mailbox *box, int nranks);
/* The port of `rank`: send, recv, isend, irecv, wait, abort and
   irecv_fold; no sendrecv. A rank outside the mailbox gets a port without send/recv,
   which coll_init refuses. */
COLL_MAILBOX_API coll_port coll_mailbox_port(coll_mailbox *box, int rank);
/* Posted transfers not yet waited for, over all ranks: 0 after every
   collective that finished, whatever its result. */
COLL_MAILBOX_API int coll_mailbox_pending(const coll_mailbox *box);
COLL_MAILBOX_API void coll_mailbox_reset_counts(coll_mailbox *box);
/* The lifecycle every port shares: init, port, abort (every later post or
   wait answers `code`, or COLL_ERR_ABORTED), close (nothing to free). */
COLL_MAILBOX_API void coll_mailbox_abort(coll_mailbox *box, int code);
COLL_MAILBOX_API void coll_mailbox_close(coll_mailbox *box);

#ifdef __cplusplus
}
#endif
#endif /* COLL_MAILBOX_H */

#if defined(COLL_MAILBOX_IMPLEMENTATION) && !defined(COLL_MAILBOX__IMPLEMENTED)
#define COLL_MAILBOX__IMPLEMENTED

COLL_MAILBOX_API int coll_mailbox_init(coll_mailbox *box, int nranks)
{
    unsigned char *p = (unsigned char *)box;
    size_t i;
    int r;
    if (!box || nranks < 1 || nranks > COLL_MAILBOX_MAX_RANKS) return COLL_ERR_INVAL;
    for (i = 0; i < sizeof *box; i++) p[i] = 0;   /* no memset when freestanding */
    box->nranks = nranks;
    for (r = 0; r < nranks; r++) { box->end[r].box = box; box->end[r].rank = r; }
    box->spin_limit = 1000000ul;
    return COLL_OK;
}

COLL_MAILBOX_API int coll_mailbox_pending(const coll_mailbox *box)
{
    int r, h, n = 0;
    for (r = 0; r < box->nranks; r++)
        for (h = 0; h < COLL_MAILBOX_OPS; h++)
            n += box->op[r][h].kind != COLL_MAILBOX__FREE;
    return n;
}

COLL_MAILBOX_API void coll_mailbox_reset_counts(coll_mailbox *box)
{
    int r;
    for (r = 0; r < COLL_MAILBOX_MAX_RANKS; r++) { box->bytes_sent[r] = 0; box->msgs_sent[r] = 0; }
    box->messages = box->bytes = box->bytes_folded = 0;
}

/* Pair op `s` of rank `me` with its partner if that one is posted; both
   are marked done whichever way the pairing turns out. */
static void coll_mailbox__match(coll_mailbox *box, int me, coll_mailbox_op *s)
{
    int want = s->kind == COLL_MAILBOX__SEND ? COLL_MAILBOX__RECV : COLL_MAILBOX__SEND;
    coll_mailbox_op *t = box->op[s->peer];
    int h;
    for (h = 0; h < COLL_MAILBOX_OPS; h++) {
        coll_mailbox_op *o = &t[h];
        if (o->kind == want && !o->done && o->peer == me && o->seq == s->seq) {
            const coll_mailbox_op *snd = s->kind == COLL_MAILBOX__SEND ? s : o;
            coll_mailbox_op *rcv = s->kind == COLL_MAILBOX__SEND ? o : s;
            int from = s->kind == COLL_MAILBOX__SEND ? me : s->peer;
            if (snd->bytes != rcv->bytes) {
                /* The contract says this never happens; say so if it does. */
                s->result = o->result = COLL_ERR_MISMATCH;
            } else {
                const unsigned char *src = (const unsigned char *)snd->sbuf;
                unsigned char *dst = (unsigned char *)rcv->rbuf;
                size_t i;
                if (rcv->fold) {               /* straight from the sender */
                    rcv->fold(rcv->fold_arg, dst, src, snd->bytes);
                    box->bytes_folded += snd->bytes;
                } else for (i = 0; i < snd->bytes; i++) dst[i] = src[i];
                box->bytes_sent[from] += snd->bytes;
                box->msgs_sent[from]++;
                box->bytes += snd->bytes;
                box->messages++;
            }
            s->done = o->done = 1;
            return;
        }
    }
}

static int coll_mailbox__post(coll_mailbox_end *e, int kind, int peer, const void *sbuf,
                              void *rbuf, size_t bytes, coll_fold_fn fold, void *fold_arg, int *handle)
{
    coll_mailbox *box = e->box;
    coll_mailbox_op *s;
    int h;
    if (box->failed) return COLL_ERR_ABORTED;
    if (peer < 0 || peer >= box->nranks || peer == e->rank || bytes == 0) return COLL_ERR_INVAL;
    for (h = 0; h < COLL_MAILBOX_OPS; h++)
        if (box->op[e->rank][h].kind == COLL_MAILBOX__FREE) break;
    if (h == COLL_MAILBOX_OPS) return COLL_AGAIN;   /* "cannot post now" */
    s = &box->op[e->rank][h];
    s->kind = (unsigned char)kind;
    s->done = 0;
    s->peer = (short)peer;
    s->result = 0;
    s->sbuf = sbuf;
    s->rbuf = rbuf;
    s->bytes = bytes;
    s->fold = fold;
    s->fold_arg = fold_arg;
    s->seq = kind == COLL_MAILBOX__SEND ? box->sends[e->rank][peer]++
                                        : box->recvs[e->rank][peer]++;
    coll_mailbox__match(box, e->rank, s);    /* the partner may be waiting already */
    *handle = h;
    return COLL_OK;
}

static int coll_mailbox__isend(void *ctx, int peer, const void *buf, size_t bytes, int *handle)
{
    return coll_mailbox__post((coll_mailbox_end *)ctx, COLL_MAILBOX__SEND, peer, buf, 0, bytes, 0, 0, handle);
}

static int coll_mailbox__irecv(void *ctx, int peer, void *buf, size_t bytes, int *handle)
{
    return coll_mailbox__post((coll_mailbox_end *)ctx, COLL_MAILBOX__RECV, peer, 0, buf, bytes, 0, 0, handle);
}

static int coll_mailbox__irecv_fold(void *ctx, int peer, void *buf, size_t bytes, coll_fold_fn fold,
                                    void *arg, int *handle)
{
    return coll_mailbox__post((coll_mailbox_end *)ctx, COLL_MAILBOX__RECV, peer, 0, buf, bytes, fold, arg, handle);
}

static int coll_mailbox__wait(void *ctx, int handle, int block)
{
    coll_mailbox_end *e = (coll_mailbox_end *)ctx;
    coll_mailbox *box = e->box;
    coll_mailbox_op *s;
    unsigned long spins = 0;
    int result;
    if (handle < 0 || handle >= COLL_MAILBOX_OPS) return COLL_ERR_INVAL;
    s = &box->op[e->rank][handle];
    if (s->kind == COLL_MAILBOX__FREE) return COLL_ERR_INVAL;
    while (!s->done && !box->failed) {
        if (!block) return COLL_AGAIN;
        /* Blocking on one core: only the idle hook can make progress. */
        if (!box->idle || ++spins > box->spin_limit) return COLL_ERR_TIMEOUT;
        box->idle(box->user);
    }
    /* A transfer that completed before the abort keeps its result; one
       still waiting is answered COLL_ERR_ABORTED and its slot freed (no
       partner will read or write its buffer: the group is over). */
    result = s->done ? s->result : COLL_ERR_ABORTED;
    s->kind = COLL_MAILBOX__FREE;
    return result;
}

/* Blocking forms: post, then wait. If the wait gives up, the op stays
   posted (its buffer may still be read), so the mailbox is broken after a
   COLL_ERR_TIMEOUT, as the contract allows after any transport error. */
static int coll_mailbox__send(void *ctx, int peer, const void *buf, size_t bytes)
{
    int h, rc = coll_mailbox__isend(ctx, peer, buf, bytes, &h);
    if (rc == COLL_AGAIN) rc = COLL_ERR_TIMEOUT;   /* every slot busy */
    return rc ? rc : coll_mailbox__wait(ctx, h, 1);
}

static int coll_mailbox__recv(void *ctx, int peer, void *buf, size_t bytes)
{
    int h, rc = coll_mailbox__irecv(ctx, peer, buf, bytes, &h);
    if (rc == COLL_AGAIN) rc = COLL_ERR_TIMEOUT;
    return rc ? rc : coll_mailbox__wait(ctx, h, 1);
}

/* One address space: telling every peer is one store. */
COLL_MAILBOX_API void coll_mailbox_abort(coll_mailbox *box, int code)
{
    if (!box->failed) box->failed = code < 0 ? code : COLL_ERR_ABORTED;
}

COLL_MAILBOX_API void coll_mailbox_close(coll_mailbox *box) { (void)box; }

static void coll_mailbox__abort(void *ctx, int code)
{
    coll_mailbox_abort(((coll_mailbox_end *)ctx)->box, code);
}

COLL_MAILBOX_API coll_port coll_mailbox_port(coll_mailbox *box, int rank)
{
    coll_port p;
    int ok = box && rank >= 0 && rank < box->nranks;
    unsigned char *z = (unsigned char *)&p;
    size_t i;
    for (i = 0; i < sizeof p; i++) z[i] = 0;   /* members added later: absent */
    p.ctx = ok ? &box->end[rank] : 0;
    p.send = ok ? coll_mailbox__send : 0;
    p.recv = ok ? coll_mailbox__recv : 0;
    p.sendrecv = 0;             /* one thread: nothing to overlap */
    p.isend = coll_mailbox__isend;
    p.irecv = coll_mailbox__irecv;
    p.wait = coll_mailbox__wait;
    p.abort = coll_mailbox__abort;
    p.irecv_fold = coll_mailbox__irecv_fold;
    p.max_bytes = 0;            /* any size: a pairing copies the whole message */
    return p;
}

#endif /* COLL_MAILBOX_IMPLEMENTATION */
