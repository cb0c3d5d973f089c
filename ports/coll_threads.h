/* coll_threads.h - N ranks as POSIX threads in one process, a port for coll.h

   USAGE
     In exactly one file:
         #define COLL_THREADS_IMPLEMENTATION
         #include "ports/coll_threads.h"
     (COLL_THREADS_STATIC makes every function static.) Then:

         static coll_threads w;                    caller-owned, ~350 KB
         coll_threads_init(&w, 4, 0);              4 ranks, default deadline
         coll_threads_run(&w, body, arg);          body(rank, arg) on 4 threads
         ...inside body: coll_port p = coll_threads_port(&w, rank);
         coll_threads_destroy(&w);

     POSIX.1-2008 (clock_gettime, pthread_condattr_setclock): a strict
     -std=c99 or -std=c11 hides it unless a feature-test macro asks for it.
     When no such macro is set, this header asks for _POSIX_C_SOURCE
     200809L itself, which takes effect only if no system header has been
     read yet: so in the implementation file include ports/coll_threads.h
     first (it includes coll.h), or pass -D_POSIX_C_SOURCE=200809L. Too late
     on glibc stops the build with an #error that says so.

   THE IDEA: a rendezvous mailbox per ordered pair of ranks
     For every pair src -> dst there is a FIFO of posted sends and a FIFO of
     posted receives; at most one of the two is non-empty. Whoever posts
     second (sender or receiver) takes the oldest op of the other FIFO and
     copies straight from the sender's buffer into the receiver's buffer -
     one memcpy per message, no staging, done outside the lock - then marks
     both ops done and wakes their owners. A blocking send therefore
     completes only when its receiver has the data: `send` is synchronous,
     the hardest case for a collective's deadlock-freedom.

   EAGER SMALL MESSAGES
     An isend of at most COLL_THREADS_EAGER bytes that finds no receive
     waiting copies its data into the op's own inline slot and is finished
     at once: its wait returns COLL_OK without waiting for the receiver,
     which later copies out of the slot and hands the slot back. The slot
     stays out of the pool until then, so eager sends are taken only while
     at least half the pool is free; past that, sends are rendezvous again
     and the pool still holds COLL_THREADS_MAX_OPS handles. Cost: a second
     copy of a few bytes; gain: the sender never sleeps on a small message,
     which is what a latency-bound collective (and coll.h's call check)
     sends. A size disagreement on an eager message is reported by the
     receiver alone (COLL_ERR_MISMATCH; coll.h then aborts the group).
     Blocking `send` stays synchronous, so it reports a mismatch on both
     ends.

   LOCKS AND WAITING
     The queues of the pairs * -> dst are guarded by rank dst's mutex, which
     is also the mutex of rank dst's condition variable. An op's state is an
     atomic: the matcher writes the data and the result, then releases DONE;
     the owner acquires DONE and only then reuses the slot. A waiter may poll
     with the CPU's pause instruction (a peer on another core answers in
     well under a microsecond), then a few rounds of sched_yield (a peer on
     the same core gets to run), then sleeps on its condition variable
     until a deadline; the clock is read once, when the sleep begins, never
     while polling. Polling is off by default (COLL_THREADS_PAUSE 0): on
     the project's shared 2-core machine, where other processes hold the
     cores as often as not, a rank that polls keeps the core its peer is
     queued for, and 8 B to 1 KiB all-reduce at 2 ranks ran 10-15 % slower
     with it than going straight to sched_yield. With a core per rank, set
     COLL_THREADS_PAUSE (2048, say); the budget then adapts per rank: a
     wait answered after i polls sets it to 2i + COLL_THREADS_PAUSE_MIN (at most
     COLL_THREADS_PAUSE), one that had to yield halves it (down to
     COLL_THREADS_PAUSE_MIN), so a rank polls about as long as its peers
     have lately taken to answer, and no longer. With more ranks than
     online CPUs the peer cannot run while we poll, so the budget starts
     and stays at the minimum and waiting goes straight to sched_yield:
     oversubscribed ranks never busy-wait one another out of the core.
     The matcher signals only a rank that says it is
     asleep: it publishes DONE, and the sleeper its `sleeping` count, each
     followed by a full fence, so one of them always sees the other. On
     expiry the whole world is marked failed and every sleeper woken, so
     peers report COLL_ERR_TIMEOUT at once instead of each waiting out its
     own deadline. An op that gives up is first taken out of its queue (or,
     if a copy into it is already under way, waited for), so no late copy
     ever touches a buffer its owner has been given back.

   COST: one memcpy (two for an eager message), two or three uncontended
   lock/unlock pairs per message.

   CONFIGURATION (define before the implementation)
     COLL_THREADS_MAX_RANKS   64    ranks in a world
     COLL_THREADS_MAX_OPS     16    outstanding handles per rank
     COLL_THREADS_EAGER       256   largest eager isend, bytes (0: none)
     COLL_THREADS_PAUSE       0     most pause-instruction polls per wait
     COLL_THREADS_PAUSE_MIN   16    fewest (and all, when oversubscribed),
                                    if COLL_THREADS_PAUSE is set
     COLL_THREADS_SPIN        64    sched_yield rounds before sleeping
*/
/* Outside the include guard: it matters only before the first system header. */
#if defined(COLL_THREADS_IMPLEMENTATION) && defined(__STRICT_ANSI__) && !defined(__cplusplus) && \
    !defined(_POSIX_C_SOURCE) && !defined(_XOPEN_SOURCE) && !defined(_GNU_SOURCE) && \
    !defined(_DEFAULT_SOURCE) && !defined(_BSD_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#ifndef COLL_THREADS_H
#define COLL_THREADS_H

#ifndef COLL_H
#include "../coll.h"                   /* beside ports/, in the tree and installed */
#endif
#include <pthread.h>

#ifndef COLL_THREADS_MAX_RANKS
#define COLL_THREADS_MAX_RANKS 64
#endif
#ifndef COLL_THREADS_MAX_OPS           /* outstanding handles per rank      */
#define COLL_THREADS_MAX_OPS 16
#endif
#ifndef COLL_THREADS_EAGER             /* isends up to this many bytes are  */
#define COLL_THREADS_EAGER 256         /* copied into a slot and done at once */
#endif
#ifndef COLL_THREADS_PAUSE             /* most pause-instruction polls per   */
#define COLL_THREADS_PAUSE 0           /* wait: 0 = none (see LOCKS AND      */
#endif                                 /* WAITING); 2048 on dedicated cores  */
#ifndef COLL_THREADS_PAUSE_MIN         /* fewest; the only budget when ranks */
#define COLL_THREADS_PAUSE_MIN 16      /* outnumber the online CPUs          */
#endif
#ifndef COLL_THREADS_SPIN              /* sched_yield rounds before sleeping */
#define COLL_THREADS_SPIN 64
#endif

#ifndef COLL_THREADS_API
#ifdef COLL_THREADS_STATIC
#define COLL_THREADS_API static
#else
#define COLL_THREADS_API extern
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct coll_threads coll_threads;

typedef struct coll_threads__op {
    int state;                 /* FREE, POSTED, BUSY, DONE (atomic)       */
    int is_send, peer, result;
    int eager;                 /* data in inl; the handle finished at post */
    int owned;                 /* the caller holds the handle (owner only) */
    short next;                /* next op of the same pair queue, -1 end   */
    void *buf;                 /* const for sends                          */
    size_t bytes;
#if COLL_THREADS_EAGER > 0
    unsigned char inl[COLL_THREADS_EAGER];   /* an eager send's copy      */
#endif
} coll_threads__op;

typedef struct coll_threads__rank {
    coll_threads *w;
    int rank;
    pthread_mutex_t m;         /* guards the queues of pairs * -> rank     */
    pthread_cond_t cv;         /* this rank's thread sleeps here           */
    int sleeping;              /* waiters on cv (atomic): wake only them   */
    int spin;                  /* pause-poll budget of the next wait (owner) */
    coll_threads__op ops[COLL_THREADS_MAX_OPS];
} coll_threads__rank;

typedef struct coll_threads__queue { short head, tail; } coll_threads__queue;

struct coll_threads {
    int nranks;
    unsigned timeout_ms;
    int spin_max, spin_min;    /* the polling budget's bounds: PAUSE and
                                  PAUSE_MIN, both the minimum if ranks
                                  outnumber online CPUs                   */
    int failed;                /* 0, or the code every call now returns    */
    coll_threads__rank r[COLL_THREADS_MAX_RANKS];
    /* [src][dst]: sends posted by src, receives posted by dst */
    coll_threads__queue sendq[COLL_THREADS_MAX_RANKS][COLL_THREADS_MAX_RANKS];
    coll_threads__queue recvq[COLL_THREADS_MAX_RANKS][COLL_THREADS_MAX_RANKS];
};

COLL_THREADS_API int coll_threads_init(coll_threads *w, int nranks, unsigned timeout_ms);
COLL_THREADS_API void coll_threads_destroy(coll_threads *w);
/* The lifecycle every port shares: init, port, abort, close (close is
   destroy under the name the other ports use). */
COLL_THREADS_API void coll_threads_close(coll_threads *w);
COLL_THREADS_API coll_port coll_threads_port(coll_threads *w, int rank);
COLL_THREADS_API void coll_threads_abort(coll_threads *w);
COLL_THREADS_API int coll_threads_run(coll_threads *w, int (*fn)(int rank, void *arg), void *arg);

#ifdef __cplusplus
}
#endif
#endif /* COLL_THREADS_H */

#ifdef COLL_THREADS_IMPLEMENTATION
#ifndef COLL_THREADS_IMPLEMENTED
#define COLL_THREADS_IMPLEMENTED
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* glibc read its feature macros before POSIX was asked for (see USAGE). */
#if defined(__GLIBC__) && !defined(__USE_XOPEN2K)
#error "coll_threads.h needs POSIX.1-2008, which this strict ISO C build hides: include ports/coll_threads.h before any other header in this file, or compile with -D_POSIX_C_SOURCE=200809L"
#endif

#if defined(__GNUC__) && defined(COLL_THREADS_STATIC)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"   /* a user may call only some */
#endif

enum { COLL_THREADS__FREE, COLL_THREADS__POSTED, COLL_THREADS__BUSY, COLL_THREADS__DONE };

#define COLL_THREADS__LOAD(p)     __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define COLL_THREADS__STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

static void coll_threads__wake(coll_threads__rank *r)
{
    pthread_mutex_lock(&r->m);
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->m);
}

/* The matcher stores DONE and then reads `sleeping`; a sleeper raises
   `sleeping` and then reads the state, all sequentially consistent: in
   their one total order, either the sleeper sees DONE or the matcher sees
   the sleeper (and wakes it under the mutex the sleeper holds). */
static void coll_threads__done(coll_threads__op *op)
{
    __atomic_store_n(&op->state, COLL_THREADS__DONE, __ATOMIC_SEQ_CST);
}

static void coll_threads__wake_if_asleep(coll_threads__rank *r)
{
    if (__atomic_load_n(&r->sleeping, __ATOMIC_SEQ_CST)) coll_threads__wake(r);
}

/* Sleep on cv (mutex held) unless `op` is done or the world failed. */
static int coll_threads__sleep(coll_threads__rank *me, coll_threads__op *op,
                               const struct timespec *deadline)
{
    int rc = 0;
    __atomic_fetch_add(&me->sleeping, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&op->state, __ATOMIC_SEQ_CST) != COLL_THREADS__DONE &&
        !COLL_THREADS__LOAD(&me->w->failed))
        rc = deadline ? pthread_cond_timedwait(&me->cv, &me->m, deadline)
                      : pthread_cond_wait(&me->cv, &me->m);
    __atomic_fetch_sub(&me->sleeping, 1, __ATOMIC_SEQ_CST);
    return rc;
}

static void coll_threads__pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ __volatile__("yield");
#endif
}

/* Marks the world failed (first code wins) and wakes every sleeper. */
static void coll_threads__fail(coll_threads *w, int code)
{
    int expected = 0, i;
    __atomic_compare_exchange_n(&w->failed, &expected, code, 0,
                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    for (i = 0; i < w->nranks; i++) coll_threads__wake(&w->r[i]);
}

/* The matched pair: one copy, then both ops done. The matcher owns `mine`
   and touches `other` (owned by rank `owner`) only until it releases DONE.
   An eager send (always `other`: a sender that comes second copies
   directly) has already been finished for its owner: its slot goes back
   to the pool (FREE) instead, and nobody needs waking. */
static void coll_threads__complete(coll_threads *w, coll_threads__op *mine,
                                   coll_threads__op *other, int owner)
{
    coll_threads__op *s = mine->is_send ? mine : other;
    coll_threads__op *d = mine->is_send ? other : mine;
    int rc = COLL_OK;
    if (s->bytes != d->bytes) rc = COLL_ERR_MISMATCH;
    else if (s->bytes) memcpy(d->buf, s->buf, s->bytes);
    mine->result = rc;
    if (other->eager) {
        COLL_THREADS__STORE(&other->state, COLL_THREADS__FREE);
        coll_threads__done(mine);
        return;
    }
    other->result = rc;
    coll_threads__done(other);
    coll_threads__done(mine);
    coll_threads__wake_if_asleep(&w->r[owner]);
}

/* Posts a send (to = peer) or a receive (from = peer); matches at once if
   the other side is already waiting. A send with `eager` set and at most
   COLL_THREADS_EAGER bytes that must queue goes as an eager message (see
   EAGER SMALL MESSAGES above). */
static int coll_threads__post(coll_threads__rank *me, int is_send, int peer,
                              void *buf, size_t bytes, int eager, int *handle)
{
    coll_threads *w = me->w;
    int src = is_send ? me->rank : peer, dst = is_send ? peer : me->rank;
    int i, k, nfree = 0, failed, owner = is_send ? dst : src;
    coll_threads__queue *theirs, *mine;
    coll_threads__op *op, *other = NULL;
    coll_threads__rank *q;

    if (peer < 0 || peer >= w->nranks || (bytes && !buf)) return COLL_ERR_INVAL;
    if ((failed = COLL_THREADS__LOAD(&w->failed)) != 0) return failed;
    for (i = -1, k = 0; k < COLL_THREADS_MAX_OPS; k++)
        if (!me->ops[k].owned && COLL_THREADS__LOAD(&me->ops[k].state) == COLL_THREADS__FREE) {
            if (i < 0) i = k;
            nfree++;
        }
    if (i < 0) return COLL_AGAIN;
    op = &me->ops[i];
    op->is_send = is_send; op->peer = peer; op->buf = buf; op->bytes = bytes;
    op->next = -1; op->result = COLL_OK; op->eager = 0;
    /* Eager only while half the pool stays free for the caller's handles;
       the copy is made before the lock, in case the send has to queue. */
    eager = eager && is_send && bytes <= (size_t)COLL_THREADS_EAGER &&
            nfree > COLL_THREADS_MAX_OPS / 2;
#if COLL_THREADS_EAGER > 0
    if (eager) memcpy(op->inl, buf, bytes);
#endif

    q = &w->r[dst];
    theirs = is_send ? &w->recvq[src][dst] : &w->sendq[src][dst];
    mine = is_send ? &w->sendq[src][dst] : &w->recvq[src][dst];
    pthread_mutex_lock(&q->m);
    if (theirs->head >= 0) {                    /* we are second: match */
        other = &w->r[owner].ops[theirs->head];
        theirs->head = other->next;
        if (theirs->head < 0) theirs->tail = -1;
        COLL_THREADS__STORE(&other->state, COLL_THREADS__BUSY);
        COLL_THREADS__STORE(&op->state, COLL_THREADS__BUSY);
    } else {                                    /* we are first: queue */
#if COLL_THREADS_EAGER > 0
        if (eager) { op->eager = 1; op->buf = op->inl; }
#endif
        COLL_THREADS__STORE(&op->state, COLL_THREADS__POSTED);
        if (mine->tail >= 0) me->ops[mine->tail].next = (short)i;
        else mine->head = (short)i;
        mine->tail = (short)i;
    }
    pthread_mutex_unlock(&q->m);
    if (other) coll_threads__complete(w, op, other, owner);
    op->owned = 1;
    *handle = i;
    return COLL_OK;
}

/* Gives up op `h` with `code`: unlinks it if still queued, else waits for
   the copy already under way. Frees the slot; returns the op's outcome. */
static int coll_threads__cancel(coll_threads__rank *me, int h, int code)
{
    coll_threads *w = me->w;
    coll_threads__op *op = &me->ops[h];
    int src = op->is_send ? me->rank : op->peer;
    int dst = op->is_send ? op->peer : me->rank;
    coll_threads__queue *qu = op->is_send ? &w->sendq[src][dst] : &w->recvq[src][dst];
    coll_threads__rank *q = &w->r[dst];
    int rc;

    /* An eager send is out of the caller's hands already: it was delivered
       as far as the sender can tell, and its slot returns to the pool when
       the receiver takes it (or never, if the world is failing). */
    op->owned = 0;
    if (op->eager) return COLL_OK;
    pthread_mutex_lock(&q->m);
    if (COLL_THREADS__LOAD(&op->state) == COLL_THREADS__POSTED) {
        short prev = -1, j = qu->head;
        while (j != h) { prev = j; j = me->ops[j].next; }
        if (prev < 0) qu->head = op->next; else me->ops[prev].next = op->next;
        if (qu->tail == h) qu->tail = prev;
        op->result = code;
        COLL_THREADS__STORE(&op->state, COLL_THREADS__DONE);
    }
    pthread_mutex_unlock(&q->m);
    pthread_mutex_lock(&me->m);                 /* BUSY: a copy, finishing */
    while (COLL_THREADS__LOAD(&op->state) != COLL_THREADS__DONE)
        coll_threads__sleep(me, op, 0);
    pthread_mutex_unlock(&me->m);
    rc = op->result;
    COLL_THREADS__STORE(&op->state, COLL_THREADS__FREE);
    return rc;
}

static int coll_threads__wait(void *ctx, int h, int block)
{
    coll_threads__rank *me = (coll_threads__rank *)ctx;
    coll_threads *w = me->w;
    coll_threads__op *op;
    struct timespec deadline;
    int i, rc, failed = 0;

    if (h < 0 || h >= COLL_THREADS_MAX_OPS) return COLL_ERR_INVAL;
    op = &me->ops[h];
    if (!op->owned) return COLL_ERR_INVAL;
    if (op->eager) { op->owned = 0; return COLL_OK; }     /* finished at post */
    if (block && COLL_THREADS__LOAD(&op->state) != COLL_THREADS__DONE) {
        /* Poll, with a budget that follows how the last waits ended. */
        for (i = 0; i < me->spin; i++) {
            if (COLL_THREADS__LOAD(&op->state) == COLL_THREADS__DONE) break;
            coll_threads__pause();
        }
        if (i < me->spin) {
            /* answered after i polls: allow twice that next time, so the
               budget follows the peer's latency rather than its ceiling */
            int want = 2 * i + w->spin_min;
            me->spin = want > w->spin_max ? w->spin_max : want;
        } else if (me->spin > w->spin_min) {
            me->spin /= 2;
            if (me->spin < w->spin_min) me->spin = w->spin_min;
        }
    }
    for (i = 0; block && i < COLL_THREADS_SPIN; i++) {
        if (COLL_THREADS__LOAD(&op->state) == COLL_THREADS__DONE) break;
        sched_yield();
    }
    if (COLL_THREADS__LOAD(&op->state) != COLL_THREADS__DONE) {
        if (!block) {
            failed = COLL_THREADS__LOAD(&w->failed);
            return failed ? coll_threads__cancel(me, h, failed) : COLL_AGAIN;
        }
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_sec += w->timeout_ms / 1000;
        deadline.tv_nsec += (long)(w->timeout_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) { deadline.tv_sec++; deadline.tv_nsec -= 1000000000L; }
        pthread_mutex_lock(&me->m);
        while (COLL_THREADS__LOAD(&op->state) != COLL_THREADS__DONE) {
            if ((failed = COLL_THREADS__LOAD(&w->failed)) != 0) break;
            if (coll_threads__sleep(me, op, &deadline) == ETIMEDOUT &&
                COLL_THREADS__LOAD(&op->state) != COLL_THREADS__DONE) {
                failed = COLL_ERR_TIMEOUT;
                break;
            }
        }
        pthread_mutex_unlock(&me->m);
        if (failed) {
            if (failed == COLL_ERR_TIMEOUT) coll_threads__fail(w, failed);
            return coll_threads__cancel(me, h, failed);
        }
    }
    rc = op->result;
    op->owned = 0;
    COLL_THREADS__STORE(&op->state, COLL_THREADS__FREE);
    return rc;
}

static int coll_threads__isend(void *ctx, int peer, const void *buf, size_t bytes, int *h)
{
    return coll_threads__post((coll_threads__rank *)ctx, 1, peer, (void *)buf, bytes, 1, h);
}

static int coll_threads__irecv(void *ctx, int peer, void *buf, size_t bytes, int *h)
{
    return coll_threads__post((coll_threads__rank *)ctx, 0, peer, buf, bytes, 0, h);
}

/* Blocking calls post then wait; a full op pool means handles were leaked.
   The blocking send is never eager: it returns once the receiver has the
   data (and so sees a size mismatch too). */
static int coll_threads__send(void *ctx, int peer, const void *buf, size_t bytes)
{
    int h, rc = coll_threads__post((coll_threads__rank *)ctx, 1, peer, (void *)buf, bytes, 0, &h);
    if (rc == COLL_AGAIN) return COLL_ERR_IO;
    return rc ? rc : coll_threads__wait(ctx, h, 1);
}

static int coll_threads__recv(void *ctx, int peer, void *buf, size_t bytes)
{
    int h, rc = coll_threads__irecv(ctx, peer, buf, bytes, &h);
    if (rc == COLL_AGAIN) return COLL_ERR_IO;
    return rc ? rc : coll_threads__wait(ctx, h, 1);
}

static int coll_threads__sendrecv(void *ctx, int to, const void *sbuf, size_t sbytes,
                                  int from, void *rbuf, size_t rbytes)
{
    int hs, hr, rc, rc2;
    rc = coll_threads__isend(ctx, to, sbuf, sbytes, &hs);
    if (rc) return rc == COLL_AGAIN ? COLL_ERR_IO : rc;
    rc = coll_threads__irecv(ctx, from, rbuf, rbytes, &hr);
    if (rc) {
        coll_threads__cancel((coll_threads__rank *)ctx, hs, rc);
        return rc == COLL_AGAIN ? COLL_ERR_IO : rc;
    }
    rc = coll_threads__wait(ctx, hs, 1);
    /* a failed send leaves the receive to be given up, not waited out */
    rc2 = rc ? coll_threads__cancel((coll_threads__rank *)ctx, hr, rc)
             : coll_threads__wait(ctx, hr, 1);
    return rc ? rc : rc2;
}

COLL_THREADS_API int coll_threads_init(coll_threads *w, int nranks, unsigned timeout_ms)
{
    pthread_condattr_t ca;
    int i, j;
    long ncpu;
    if (!w || nranks < 1 || nranks > COLL_THREADS_MAX_RANKS) return COLL_ERR_INVAL;
    memset(w, 0, sizeof *w);
    w->nranks = nranks;
    w->timeout_ms = timeout_ms ? timeout_ms : 10000;
    /* Polling pays only while every rank can have a CPU of its own. */
    ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    w->spin_min = COLL_THREADS_PAUSE_MIN < COLL_THREADS_PAUSE ? COLL_THREADS_PAUSE_MIN : COLL_THREADS_PAUSE;
    w->spin_max = ncpu > 0 && nranks > ncpu ? w->spin_min : COLL_THREADS_PAUSE;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    for (i = 0; i < nranks; i++) {
        w->r[i].w = w;
        w->r[i].rank = i;
        w->r[i].spin = w->spin_max;
        pthread_mutex_init(&w->r[i].m, NULL);
        pthread_cond_init(&w->r[i].cv, &ca);
        for (j = 0; j < nranks; j++) {
            w->sendq[i][j].head = w->sendq[i][j].tail = -1;
            w->recvq[i][j].head = w->recvq[i][j].tail = -1;
        }
    }
    pthread_condattr_destroy(&ca);
    return COLL_OK;
}

COLL_THREADS_API void coll_threads_destroy(coll_threads *w)
{
    int i;
    for (i = 0; i < w->nranks; i++) {
        pthread_mutex_destroy(&w->r[i].m);
        pthread_cond_destroy(&w->r[i].cv);
    }
    w->nranks = 0;
}

COLL_THREADS_API void coll_threads_close(coll_threads *w) { coll_threads_destroy(w); }

/* The port's abort: a rank whose collective failed wakes every waiter. */
static void coll_threads__abort_port(void *ctx, int code)
{
    (void)code;
    coll_threads__fail(((coll_threads__rank *)ctx)->w, COLL_ERR_ABORTED);
}

COLL_THREADS_API coll_port coll_threads_port(coll_threads *w, int rank)
{
    coll_port p;
    memset(&p, 0, sizeof p);
    if (rank < 0 || rank >= w->nranks) return p;   /* all NULL: coll_init refuses */
    p.ctx = &w->r[rank];
    p.send = coll_threads__send;
    p.recv = coll_threads__recv;
    p.sendrecv = coll_threads__sendrecv;
    p.isend = coll_threads__isend;
    p.irecv = coll_threads__irecv;
    p.wait = coll_threads__wait;
    p.abort = coll_threads__abort_port;
    return p;
}

COLL_THREADS_API void coll_threads_abort(coll_threads *w)
{
    coll_threads__fail(w, COLL_ERR_ABORTED);
}

typedef struct coll_threads__job {
    coll_threads *w;
    int rank, result;
    int (*fn)(int rank, void *arg);
    void *arg;
} coll_threads__job;

static void *coll_threads__main(void *p)
{
    coll_threads__job *j = (coll_threads__job *)p;
    j->result = j->fn(j->rank, j->arg);
    return NULL;
}

COLL_THREADS_API int coll_threads_run(coll_threads *w, int (*fn)(int rank, void *arg), void *arg)
{
    coll_threads__job job[COLL_THREADS_MAX_RANKS];
    pthread_t t[COLL_THREADS_MAX_RANKS];
    int i, started, rc = 0;
    for (started = 0; started < w->nranks; started++) {
        coll_threads__job *j = &job[started];
        j->w = w; j->rank = started; j->result = 0; j->fn = fn; j->arg = arg;
        if (pthread_create(&t[started], NULL, coll_threads__main, j) != 0) {
            coll_threads_abort(w);              /* the started ones must not hang */
            rc = COLL_ERR_IO;
            break;
        }
    }
    for (i = 0; i < started; i++) {
        pthread_join(t[i], NULL);
        if (!rc && job[i].result) rc = job[i].result;
    }
    return rc;
}

#if defined(__GNUC__) && defined(COLL_THREADS_STATIC)
#pragma GCC diagnostic pop
#endif
#endif /* COLL_THREADS_IMPLEMENTED */
#endif /* COLL_THREADS_IMPLEMENTATION */
