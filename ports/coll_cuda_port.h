/* coll_cuda_port.h - ranks as host threads over CUDA device buffers, a port for coll.h

   USAGE
     In exactly one file (C99 with the CUDA include path, or a .cu):
         #define COLL_CUDA_PORT_IMPLEMENTATION
         #include "ports/coll_cuda_port.h"
     (COLL_CUDA_PORT_STATIC makes every function static.) The port only
     calls the CUDA runtime API, so it needs no nvcc; link with -lcudart.

         static coll_cuda_port w;                 caller-owned, ~150 KB
         int dev[4] = {0, 0, 1, 1};               rank -> GPU
         coll_cuda_port_init(&w, 4, dev, 0);      4 ranks, default deadline
         coll_cuda_port_run(&w, body, arg);       body(rank, arg) on 4 threads,
                                                  each with its GPU current
         ...inside body:
             cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
             coll_port p = coll_cuda_port_port(&w, rank, s);
             ...coll_init with device scratch, coll_set_memops with a
             coll_cuda_ctx on the same stream s (coll_cuda.h)...
         coll_cuda_port_close(&w);

     The lifecycle every port shares: coll_cuda_port_init,
     coll_cuda_port_port (the coll_port of one rank), coll_cuda_port_abort
     (every waiting and later call fails with COLL_ERR_ABORTED) and
     coll_cuda_port_close. The older names coll_cuda_port_rank and
     coll_cuda_port_destroy still work. The coll_port's abort hook does what
     coll_cuda_port_abort does, so a rank whose collective fails (the
     library calls the hook) stops its peers at once, not at their deadline.

     Any number of ranks may share a GPU (each has its own stream). Ranks on
     different GPUs copy directly when the GPUs have peer access (init
     enables it); otherwise the CUDA runtime stages through host memory,
     slower but correct. coll_cuda_port_group() gives the group size for
     COLL_ALGO_HIERARCHICAL: the largest divisor g of the rank count such
     that each run of g consecutive ranks shares a GPU or has peer access.

   THE IDEA: one copy per message, ordered by events, never by the host
     The pair src -> dst owns a ring of COLL_CUDA_PORT_DEPTH message slots;
     message m of the pair lives in slot m mod DEPTH (messages of a pair are
     in order, so sender and receiver name the same slot without talking).
     Each slot has one CUDA event per side, on that side's GPU.
       - A side that posts records its event on its own stream ("ready":
         everything this rank enqueued so far, e.g. the kernel that produced
         the data to send, or the kernel still reading the buffer about to
         be received into).
       - Whoever posts second is the copier: it makes its stream wait for the
         other side's ready event, enqueues the one device-to-device (or
         peer) copy on its own stream, and records its own event again
         ("done"). Its call returns at once.
       - The side that posted first waits on the host only until the copy is
         enqueued, then makes its stream wait for the copier's done event and
         returns.
     After a send or a recv returns, the rank's stream is therefore ordered
     after the copy: a reduce kernel enqueued next reads the received bytes
     (read-after-write), a kernel that next overwrites the sent buffer runs
     after the copy read it (write-after-read). No call waits for the GPU;
     the host only waits for the peer thread to post, as with any
     synchronous send. The waits only point at work enqueued earlier, so
     the streams can never wait on each other in a cycle.
     A slot is reused only when both sides have taken their event waits
     (until then an event may still be re-recorded under someone's feet).
     Buffers in pageable host memory on both sides (coll.h's small frames)
     are copied by the host at once, with no event recorded or waited on:
     no GPU work touches them.

   LOCKS AND WAITING
     One mutex per world guards the slots. A rank waiting for a slot to
     change first looks COLL_CUDA_PORT_SPIN times, yielding its core
     between looks, then sleeps on its own condition variable. CUDA calls are
     made outside the lock. On the deadline the world is marked failed
     (COLL_ERR_TIMEOUT) and every sleeper woken; coll_cuda_port_abort does
     the same with COLL_ERR_ABORTED. After a failure, copies already
     enqueued may still run: synchronise the streams before freeing buffers.

   ERRORS
     COLL_ERR_MISMATCH  sender and receiver disagree on the size.
     COLL_ERR_TIMEOUT, COLL_ERR_ABORTED as above. CUDA errors as in
     coll_cuda.h: -(COLL_CUDA_ERR_BASE + cudaError_t).

   COST: a message costs two event records, two stream waits, one copy and a
   few lock round trips on the host (some microseconds); the GPU sees only
   the copy and two cheap waits.
*/
#ifndef COLL_CUDA_PORT_H
#define COLL_CUDA_PORT_H

#ifndef COLL_H
#include "coll.h"
#endif
#include "coll_cuda.h"         /* COLL_CUDA_ERR */
#include <pthread.h>

#ifndef COLL_CUDA_PORT_MAX_RANKS
#define COLL_CUDA_PORT_MAX_RANKS 16
#endif
#ifndef COLL_CUDA_PORT_DEPTH           /* message slots per ordered pair      */
#define COLL_CUDA_PORT_DEPTH 8
#endif
#ifndef COLL_CUDA_PORT_MAX_OPS         /* outstanding handles per rank        */
#define COLL_CUDA_PORT_MAX_OPS 16
#endif
#ifndef COLL_CUDA_PORT_SPIN            /* looks at a slot before sleeping     */
#define COLL_CUDA_PORT_SPIN 200        /* (64 reads and a yield each)        */
#endif

#ifndef COLL_CUDA_PORT_API
#ifdef COLL_CUDA_PORT_STATIC
#define COLL_CUDA_PORT_API static
#else
#define COLL_CUDA_PORT_API extern
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

struct CUstream_st;            /* cudaStream_t, without CUDA headers */
struct CUevent_st;             /* cudaEvent_t */

typedef struct coll_cuda_port coll_cuda_port;

typedef struct coll_cuda_port__slot {
    unsigned long long seq;    /* message number of the pair it now holds  */
    const void *src;
    void *dst;
    size_t bytes[2];           /* [0] as the sender posted, [1] the receiver */
    int posted[2], released[2];
    int state;                 /* OPEN, COPYING, DONE                       */
    int result;
    struct CUevent_st *ev[2];  /* [0] on the sender's GPU, [1] the receiver's */
    int where[2];              /* each side's buffer: coll_cuda_port__where  */
    int hostonly;              /* both in pageable host memory: copied by the
                                  host, no events recorded or waited on     */
} coll_cuda_port__slot;

typedef struct coll_cuda_port__op {
    int used, role, done, result;  /* done: completed at post (we copied)   */
    coll_cuda_port__slot *slot;
} coll_cuda_port__op;

typedef struct coll_cuda_port__rank {
    coll_cuda_port *w;
    int rank, device;
    struct CUstream_st *stream;
    pthread_cond_t cv;
    coll_cuda_port__op ops[COLL_CUDA_PORT_MAX_OPS];
} coll_cuda_port__rank;

struct coll_cuda_port {
    int nranks;
    unsigned timeout_ms;
    int failed;                /* 0, or the code every call now returns     */
    pthread_mutex_t m;
    coll_cuda_port__rank r[COLL_CUDA_PORT_MAX_RANKS];
    unsigned char direct[COLL_CUDA_PORT_MAX_RANKS][COLL_CUDA_PORT_MAX_RANKS];
    /* [src][dst]: the next message number each side will post */
    unsigned long long next_send[COLL_CUDA_PORT_MAX_RANKS][COLL_CUDA_PORT_MAX_RANKS];
    unsigned long long next_recv[COLL_CUDA_PORT_MAX_RANKS][COLL_CUDA_PORT_MAX_RANKS];
    coll_cuda_port__slot slot[COLL_CUDA_PORT_MAX_RANKS][COLL_CUDA_PORT_MAX_RANKS][COLL_CUDA_PORT_DEPTH];
};

/* devices[rank]: the GPU of each rank (NULL: all on the current GPU).
   timeout_ms: how long a rank waits for a peer to post (0: 10 s). Creates
   the events and enables peer access between the GPUs that allow it. */
COLL_CUDA_PORT_API int coll_cuda_port_init(coll_cuda_port *w, int nranks,
                                           const int *devices, unsigned timeout_ms);
/* The port of `rank`, whose work goes on `stream` (on the rank's GPU). Use
   the same stream for the rank's memops (coll_cuda_ctx). A rank outside
   the world gets a port of NULLs, which coll_init refuses. */
COLL_CUDA_PORT_API coll_port coll_cuda_port_port(coll_cuda_port *w, int rank,
                                                 struct CUstream_st *stream);
/* Marks the world failed: every waiting and later call answers
   COLL_ERR_ABORTED. Copies already enqueued may still run: synchronise
   the streams before freeing buffers. */
COLL_CUDA_PORT_API void coll_cuda_port_abort(coll_cuda_port *w);
/* Frees the events, locks and condition variables (no rank may be inside
   a call). */
COLL_CUDA_PORT_API void coll_cuda_port_close(coll_cuda_port *w);
/* The older names of coll_cuda_port_port and coll_cuda_port_close. */
COLL_CUDA_PORT_API coll_port coll_cuda_port_rank(coll_cuda_port *w, int rank,
                                                 struct CUstream_st *stream);
COLL_CUDA_PORT_API void coll_cuda_port_destroy(coll_cuda_port *w);
COLL_CUDA_PORT_API int coll_cuda_port_group(const coll_cuda_port *w);
/* fn(rank, arg) on one thread per rank, each with its GPU current; returns
   the first non-zero result. */
COLL_CUDA_PORT_API int coll_cuda_port_run(coll_cuda_port *w,
                                          int (*fn)(int rank, void *arg), void *arg);

#ifdef __cplusplus
}
#endif
#endif /* COLL_CUDA_PORT_H */

/* ========================================================================== */
#ifdef COLL_CUDA_PORT_IMPLEMENTATION
#ifndef COLL_CUDA_PORT_IMPLEMENTED
#define COLL_CUDA_PORT_IMPLEMENTED
#include <cuda_runtime_api.h>
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <time.h>

enum { COLL_CUDA_PORT__SEND = 0, COLL_CUDA_PORT__RECV = 1 };
enum { COLL_CUDA_PORT__OPEN, COLL_CUDA_PORT__COPYING, COLL_CUDA_PORT__DONE };

/* A slot's seq and state and the world's failed code are written under the
   lock, and read without it by a rank spinning in coll_cuda_port__pause. */
#define COLL_CUDA_PORT__PUT(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)
#define COLL_CUDA_PORT__GET(x) __atomic_load_n(&(x), __ATOMIC_ACQUIRE)

/* CUDA calls name the rank's stream and events, all on the rank's GPU:
   make it current (cheap when it already is). */
static int coll_cuda_port__enter(coll_cuda_port__rank *me)
{
    int cur;
    cudaError_t e = cudaGetDevice(&cur);
    if (e == cudaSuccess && cur != me->device) e = cudaSetDevice(me->device);
    return COLL_CUDA_ERR(e);
}

static void coll_cuda_port__deadline(const coll_cuda_port *w, struct timespec *t)
{
    clock_gettime(CLOCK_MONOTONIC, t);
    t->tv_sec += w->timeout_ms / 1000;
    t->tv_nsec += (long)(w->timeout_ms % 1000) * 1000000L;
    if (t->tv_nsec >= 1000000000L) { t->tv_sec++; t->tv_nsec -= 1000000000L; }
}

/* Marks the world failed (first code wins) and wakes every sleeper. Called
   with the mutex held. */
static void coll_cuda_port__fail_locked(coll_cuda_port *w, int code)
{
    int i;
    if (!w->failed) COLL_CUDA_PORT__PUT(w->failed, code);
    for (i = 0; i < w->nranks; i++) pthread_cond_broadcast(&w->r[i].cv);
}

/* One sleep of rank `me` (mutex held); 0, or the world's failure code. */
static int coll_cuda_port__sleep(coll_cuda_port__rank *me, const struct timespec *deadline)
{
    coll_cuda_port *w = me->w;
    if (w->failed) return w->failed;
    if (pthread_cond_timedwait(&me->cv, &w->m, deadline) == ETIMEDOUT && !w->failed)
        coll_cuda_port__fail_locked(w, COLL_ERR_TIMEOUT);
    return w->failed;
}

/* One more wait of rank `me` for slot s to change (mutex held). While
   `looks` lasts it lets the lock go and watches the slot, yielding its
   core every 64 reads: a peer on another core answers within microseconds,
   and a condition-variable wake-up costs tens of them (2 ranks on an H100
   host, 4 KiB all-reduce: 85 -> 43 us). Then it sleeps, until `deadline`
   (NULL: until woken). 0, or the world's failure code. */
static int coll_cuda_port__pause(coll_cuda_port__rank *me, const coll_cuda_port__slot *s,
                                 const struct timespec *deadline, unsigned *looks)
{
    coll_cuda_port *w = me->w;
    unsigned long long seq = s->seq;
    int state = s->state, i;
    if (w->failed) return w->failed;
    if (*looks < COLL_CUDA_PORT_SPIN) {
        pthread_mutex_unlock(&w->m);
        for (; *looks < COLL_CUDA_PORT_SPIN; ++*looks) {
            for (i = 0; i < 64; i++)
                if (COLL_CUDA_PORT__GET(s->seq) != seq || COLL_CUDA_PORT__GET(s->state) != state ||
                    COLL_CUDA_PORT__GET(w->failed))
                    break;
            if (i < 64) break;
            sched_yield();
        }
        pthread_mutex_lock(&w->m);
        return w->failed;
    }
    if (!deadline) {
        pthread_cond_wait(&me->cv, &w->m);
        return w->failed;
    }
    return coll_cuda_port__sleep(me, deadline);
}

/* Both sides have taken their event waits: the slot moves on to message
   seq + DEPTH and whoever waits for it is woken. Mutex held. */
static void coll_cuda_port__recycle_locked(coll_cuda_port *w, coll_cuda_port__slot *s,
                                           int src, int dst)
{
    if (!s->released[0] || !s->released[1]) return;
    COLL_CUDA_PORT__PUT(s->seq, s->seq + COLL_CUDA_PORT_DEPTH);
    s->src = NULL; s->dst = NULL;
    s->bytes[0] = s->bytes[1] = 0;
    s->posted[0] = s->posted[1] = 0;
    s->released[0] = s->released[1] = 0;
    s->hostonly = 0;
    COLL_CUDA_PORT__PUT(s->state, (int)COLL_CUDA_PORT__OPEN);
    s->result = COLL_OK;
    pthread_cond_broadcast(&w->r[src].cv);
    pthread_cond_broadcast(&w->r[dst].cv);
}

/* Where a buffer lives: its GPU, or -1 for pageable host memory (what
   coll.h passes for its own small tokens), or -2 for anything else
   (pinned host, managed) - left to cudaMemcpyDefault. */
static int coll_cuda_port__where(const void *p)
{
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();   /* old runtimes flag unknown pointers */
        return -1;
    }
    if (a.type == cudaMemoryTypeUnregistered) return -1;
    return a.type == cudaMemoryTypeDevice ? a.device : -2;
}

/* The copier's part, on its own stream: after the other side's ready
   event, copy, then record our event as "done". Both buffers in pageable
   host memory (coll.h's own small frames): no GPU work touches them, so
   the host copies at once and no event is involved. */
static int coll_cuda_port__copy(coll_cuda_port__rank *me, coll_cuda_port__slot *s, int role)
{
    cudaStream_t st = (cudaStream_t)me->stream;
    size_t n = s->bytes[0];
    int from = s->where[0], to = s->where[1];
    cudaError_t e;

    if (s->bytes[0] != s->bytes[1]) return COLL_ERR_MISMATCH;
    if (from == -1 && to == -1) {
        if (n) memcpy(s->dst, s->src, n);
        s->hostonly = 1;
        return COLL_OK;
    }
    e = cudaStreamWaitEvent(st, (cudaEvent_t)s->ev[!role], 0);
    if (e == cudaSuccess && n) {
        if (from >= 0 && to >= 0 && from != to)
            e = cudaMemcpyPeerAsync(s->dst, to, s->src, from, n, st);
        else
            e = cudaMemcpyAsync(s->dst, s->src, n, cudaMemcpyDefault, st);
    }
    if (e == cudaSuccess) e = cudaEventRecord((cudaEvent_t)s->ev[role], st);
    return COLL_CUDA_ERR(e);
}

/* Claims this side's next message number on the pair src -> dst and its
   slot, which may still hold message n - DEPTH: waits for it (block) or
   answers COLL_AGAIN. */
static int coll_cuda_port__claim(coll_cuda_port__rank *me, int role, int src, int dst, int block,
                                 coll_cuda_port__slot **slot)
{
    coll_cuda_port *w = me->w;
    unsigned long long *next = role == COLL_CUDA_PORT__SEND ? &w->next_send[src][dst] : &w->next_recv[src][dst];
    unsigned long long n;
    unsigned looks = 0;
    struct timespec deadline;
    coll_cuda_port__slot *s;
    int rc;
    pthread_mutex_lock(&w->m);
    n = *next;
    s = &w->slot[src][dst][n % COLL_CUDA_PORT_DEPTH];
    if (block) coll_cuda_port__deadline(w, &deadline);
    rc = w->failed;
    while (!rc && s->seq != n) {
        if (!block) { pthread_mutex_unlock(&w->m); return COLL_AGAIN; }
        rc = coll_cuda_port__pause(me, s, &deadline, &looks);
    }
    if (!rc) (*next)++;
    pthread_mutex_unlock(&w->m);
    *slot = s;
    return rc;
}

/* The copy of a slot whose two sides are posted, by the side that came
   second: done, and the slot recycled, at once. */
static void coll_cuda_port__copy_now(coll_cuda_port__rank *me, coll_cuda_port__op *op, int role,
                                     int src, int dst, int peer)
{
    coll_cuda_port *w = me->w;
    coll_cuda_port__slot *s = op->slot;
    int rc = coll_cuda_port__copy(me, s, role);
    pthread_mutex_lock(&w->m);
    s->result = rc;
    COLL_CUDA_PORT__PUT(s->state, (int)COLL_CUDA_PORT__DONE);
    s->released[role] = 1;                      /* nothing left to wait for */
    coll_cuda_port__recycle_locked(w, s, src, dst);
    pthread_cond_broadcast(&w->r[peer].cv);
    pthread_mutex_unlock(&w->m);
    op->done = 1;
    op->result = rc;
}

/* Posts one side of a message. block: wait for a free slot (the blocking
   calls) instead of answering COLL_AGAIN. */
static int coll_cuda_port__post(coll_cuda_port__rank *me, int role, int peer,
                                const void *sbuf, void *rbuf, size_t bytes,
                                int block, int *handle)
{
    coll_cuda_port *w = me->w;
    int src = role == COLL_CUDA_PORT__SEND ? me->rank : peer;
    int dst = role == COLL_CUDA_PORT__SEND ? peer : me->rank;
    int h, rc, copier = 0, where;
    coll_cuda_port__slot *s;
    coll_cuda_port__op *op;
    cudaError_t e;

    if (peer < 0 || peer >= w->nranks || (bytes && !sbuf && !rbuf)) return COLL_ERR_INVAL;
    for (h = 0; h < COLL_CUDA_PORT_MAX_OPS; h++)
        if (!me->ops[h].used) break;
    if (h == COLL_CUDA_PORT_MAX_OPS) return block ? COLL_ERR_IO : COLL_AGAIN;
    if ((rc = coll_cuda_port__enter(me)) != COLL_OK) return rc;
    if ((rc = coll_cuda_port__claim(me, role, src, dst, block, &s)) != COLL_OK) return rc;

    /* "ready": whatever this rank has enqueued up to now; nothing to
       order for a buffer in pageable host memory, which no GPU work touches */
    where = bytes ? coll_cuda_port__where(role == COLL_CUDA_PORT__SEND ? sbuf : rbuf) : -1;
    e = where == -1 ? cudaSuccess : cudaEventRecord((cudaEvent_t)s->ev[role], (cudaStream_t)me->stream);

    pthread_mutex_lock(&w->m);
    if (role == COLL_CUDA_PORT__SEND) s->src = sbuf; else s->dst = rbuf;
    s->where[role] = where;
    s->bytes[role] = bytes;
    s->posted[role] = 1;
    if (s->state == COLL_CUDA_PORT__OPEN) {
        if (e != cudaSuccess || w->failed) {
            COLL_CUDA_PORT__PUT(s->state, (int)COLL_CUDA_PORT__DONE);   /* both sides see it */
            s->result = e != cudaSuccess ? COLL_CUDA_ERR(e) : w->failed;
            pthread_cond_broadcast(&w->r[peer].cv);
        } else if (s->posted[!role]) {
            COLL_CUDA_PORT__PUT(s->state, (int)COLL_CUDA_PORT__COPYING);
            copier = 1;
        }
    }
    pthread_mutex_unlock(&w->m);

    op = &me->ops[h];
    op->used = 1;
    op->role = role;
    op->slot = s;
    op->done = 0;
    if (copier) coll_cuda_port__copy_now(me, op, role, src, dst, peer);
    *handle = h;
    return COLL_OK;
}

static int coll_cuda_port__wait(void *ctx, int h, int block)
{
    coll_cuda_port__rank *me = (coll_cuda_port__rank *)ctx;
    coll_cuda_port *w = me->w;
    coll_cuda_port__op *op;
    coll_cuda_port__slot *s;
    struct timespec deadline;
    int rc, role, src, dst;
    unsigned looks = 0;

    if (h < 0 || h >= COLL_CUDA_PORT_MAX_OPS || !me->ops[h].used) return COLL_ERR_INVAL;
    op = &me->ops[h];
    if (op->done) { op->used = 0; return op->result; }
    s = op->slot;
    role = op->role;
    /* the slot's position in the array names the pair */
    src = (int)((s - &w->slot[0][0][0]) / (COLL_CUDA_PORT_MAX_RANKS * COLL_CUDA_PORT_DEPTH));
    dst = (int)((s - &w->slot[0][0][0]) / COLL_CUDA_PORT_DEPTH % COLL_CUDA_PORT_MAX_RANKS);

    pthread_mutex_lock(&w->m);
    if (block) coll_cuda_port__deadline(w, &deadline);
    rc = COLL_OK;
    while (s->state != COLL_CUDA_PORT__DONE) {
        if (s->state == COLL_CUDA_PORT__COPYING) {
            /* the peer is enqueueing our copy: a matter of microseconds,
               and it must not find our buffer given back (no deadline) */
            coll_cuda_port__pause(me, s, NULL, &looks);
            continue;
        }
        if (w->failed) { rc = w->failed; break; }
        if (!block) { pthread_mutex_unlock(&w->m); return COLL_AGAIN; }
        coll_cuda_port__pause(me, s, &deadline, &looks);
    }
    if (!rc) {
        rc = s->result;
        pthread_mutex_unlock(&w->m);
        /* the copier's "done" event: our stream now follows the copy */
        if (rc == COLL_OK && !s->hostonly && (rc = coll_cuda_port__enter(me)) == COLL_OK)
            rc = COLL_CUDA_ERR(cudaStreamWaitEvent((cudaStream_t)me->stream,
                                                   (cudaEvent_t)s->ev[!role], 0));
        pthread_mutex_lock(&w->m);
        s->released[role] = 1;
        coll_cuda_port__recycle_locked(w, s, src, dst);
    }
    /* On failure the slot is left as it is: the world is broken for good. */
    pthread_mutex_unlock(&w->m);
    op->used = 0;
    return rc;
}

static int coll_cuda_port__isend(void *ctx, int peer, const void *buf, size_t bytes, int *h)
{
    return coll_cuda_port__post((coll_cuda_port__rank *)ctx, COLL_CUDA_PORT__SEND, peer,
                                buf, NULL, bytes, 0, h);
}

static int coll_cuda_port__irecv(void *ctx, int peer, void *buf, size_t bytes, int *h)
{
    return coll_cuda_port__post((coll_cuda_port__rank *)ctx, COLL_CUDA_PORT__RECV, peer,
                                NULL, buf, bytes, 0, h);
}

static int coll_cuda_port__send(void *ctx, int peer, const void *buf, size_t bytes)
{
    int h, rc = coll_cuda_port__post((coll_cuda_port__rank *)ctx, COLL_CUDA_PORT__SEND,
                                     peer, buf, NULL, bytes, 1, &h);
    return rc ? rc : coll_cuda_port__wait(ctx, h, 1);
}

static int coll_cuda_port__recv(void *ctx, int peer, void *buf, size_t bytes)
{
    int h, rc = coll_cuda_port__post((coll_cuda_port__rank *)ctx, COLL_CUDA_PORT__RECV,
                                     peer, NULL, buf, bytes, 1, &h);
    return rc ? rc : coll_cuda_port__wait(ctx, h, 1);
}

/* Both posted before either is waited for: a ring of sendrecvs cannot wait
   on itself, whatever the order the ranks arrive in. */
static int coll_cuda_port__sendrecv(void *ctx, int to, const void *sbuf, size_t sbytes,
                                    int from, void *rbuf, size_t rbytes)
{
    coll_cuda_port__rank *me = (coll_cuda_port__rank *)ctx;
    int hs, hr, rc, rc2;
    rc = coll_cuda_port__post(me, COLL_CUDA_PORT__SEND, to, sbuf, NULL, sbytes, 1, &hs);
    if (rc) return rc;
    rc = coll_cuda_port__post(me, COLL_CUDA_PORT__RECV, from, NULL, rbuf, rbytes, 1, &hr);
    if (rc) {
        coll_cuda_port__wait(ctx, hs, 1);
        return rc;
    }
    rc = coll_cuda_port__wait(ctx, hs, 1);
    rc2 = coll_cuda_port__wait(ctx, hr, 1);
    return rc ? rc : rc2;
}

static void coll_cuda_port__free_events(coll_cuda_port *w)
{
    int s, d, k, side;
    for (s = 0; s < w->nranks; s++)
        for (d = 0; d < w->nranks; d++)
            for (k = 0; k < COLL_CUDA_PORT_DEPTH; k++)
                for (side = 0; side < 2; side++)
                    if (w->slot[s][d][k].ev[side]) {
                        cudaEventDestroy((cudaEvent_t)w->slot[s][d][k].ev[side]);
                        w->slot[s][d][k].ev[side] = NULL;
                    }
}

/* Peer access, once per ordered pair of distinct GPUs; "already enabled"
   (by us for another rank pair, or by the application) is fine. Ranks on
   one GPU always copy directly. */
static void coll_cuda_port__peer_access(coll_cuda_port *w)
{
    int i, j, can_ij, can_ji;
    cudaError_t e;
    for (i = 0; i < w->nranks; i++)
        for (j = 0; j < w->nranks; j++) {
            int a = w->r[i].device, b = w->r[j].device;
            if (a == b) { w->direct[i][j] = 1; continue; }
            can_ij = can_ji = 0;
            if (cudaDeviceCanAccessPeer(&can_ij, a, b) != cudaSuccess ||
                cudaDeviceCanAccessPeer(&can_ji, b, a) != cudaSuccess) {
                (void)cudaGetLastError();
                continue;
            }
            if (can_ij && can_ji && cudaSetDevice(a) == cudaSuccess) {
                e = cudaDeviceEnablePeerAccess(b, 0);
                if (e == cudaErrorPeerAccessAlreadyEnabled) e = cudaSuccess;
                (void)cudaGetLastError();       /* neither outcome is sticky */
                w->direct[i][j] = e == cudaSuccess;
            }
        }
}

/* Each slot's event [0] on the sender's GPU, [1] on the receiver's. */
static cudaError_t coll_cuda_port__make_events(coll_cuda_port *w)
{
    cudaError_t e = cudaSuccess;
    int i, j, k, side;
    for (i = 0; i < w->nranks && e == cudaSuccess; i++)
        for (j = 0; j < w->nranks && e == cudaSuccess; j++)
            for (side = 0; side < 2 && e == cudaSuccess; side++) {
                e = cudaSetDevice(w->r[side ? j : i].device);
                for (k = 0; k < COLL_CUDA_PORT_DEPTH && e == cudaSuccess; k++) {
                    cudaEvent_t ev;
                    e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
                    if (e == cudaSuccess) w->slot[i][j][k].ev[side] = (struct CUevent_st *)ev;
                    w->slot[i][j][k].seq = (unsigned long long)k;
                }
            }
    return e;
}

COLL_CUDA_PORT_API int coll_cuda_port_init(coll_cuda_port *w, int nranks,
                                           const int *devices, unsigned timeout_ms)
{
    pthread_condattr_t ca;
    cudaError_t e;
    int i, cur;

    if (!w || nranks < 1 || nranks > COLL_CUDA_PORT_MAX_RANKS) return COLL_ERR_INVAL;
    memset(w, 0, sizeof *w);
    if ((e = cudaGetDevice(&cur)) != cudaSuccess) return COLL_CUDA_ERR(e);
    w->nranks = nranks;
    w->timeout_ms = timeout_ms ? timeout_ms : 10000;
    for (i = 0; i < nranks; i++) {
        w->r[i].w = w;
        w->r[i].rank = i;
        w->r[i].device = devices ? devices[i] : cur;
    }
    coll_cuda_port__peer_access(w);
    e = coll_cuda_port__make_events(w);
    cudaSetDevice(cur);
    if (e != cudaSuccess) {
        coll_cuda_port__free_events(w);
        return COLL_CUDA_ERR(e);
    }
    pthread_mutex_init(&w->m, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    for (i = 0; i < nranks; i++) pthread_cond_init(&w->r[i].cv, &ca);
    pthread_condattr_destroy(&ca);
    return COLL_OK;
}

COLL_CUDA_PORT_API void coll_cuda_port_close(coll_cuda_port *w)
{
    int i;
    coll_cuda_port__free_events(w);
    for (i = 0; i < w->nranks; i++) pthread_cond_destroy(&w->r[i].cv);
    pthread_mutex_destroy(&w->m);
    w->nranks = 0;
}

COLL_CUDA_PORT_API void coll_cuda_port_destroy(coll_cuda_port *w) { coll_cuda_port_close(w); }

/* The port's abort: a rank whose collective failed wakes every waiter. */
static void coll_cuda_port__abort_port(void *ctx, int code)
{
    (void)code;
    coll_cuda_port_abort(((coll_cuda_port__rank *)ctx)->w);
}

COLL_CUDA_PORT_API coll_port coll_cuda_port_port(coll_cuda_port *w, int rank,
                                                 struct CUstream_st *stream)
{
    coll_port p;
    memset(&p, 0, sizeof p);
    if (rank < 0 || rank >= w->nranks) return p;   /* all NULL: coll_init refuses */
    w->r[rank].stream = stream;
    p.ctx = &w->r[rank];
    p.send = coll_cuda_port__send;
    p.recv = coll_cuda_port__recv;
    p.sendrecv = coll_cuda_port__sendrecv;
    p.isend = coll_cuda_port__isend;
    p.irecv = coll_cuda_port__irecv;
    p.wait = coll_cuda_port__wait;
    p.abort = coll_cuda_port__abort_port;
    return p;
}

COLL_CUDA_PORT_API coll_port coll_cuda_port_rank(coll_cuda_port *w, int rank,
                                                 struct CUstream_st *stream)
{
    return coll_cuda_port_port(w, rank, stream);
}

COLL_CUDA_PORT_API int coll_cuda_port_group(const coll_cuda_port *w)
{
    int g, k, i, j, ok;
    for (g = w->nranks; g > 1; g--) {
        if (w->nranks % g) continue;
        ok = 1;
        for (k = 0; k < w->nranks && ok; k += g)
            for (i = k; i < k + g && ok; i++)
                for (j = k; j < k + g && ok; j++)
                    ok = w->direct[i][j];
        if (ok) return g;
    }
    return 1;
}

COLL_CUDA_PORT_API void coll_cuda_port_abort(coll_cuda_port *w)
{
    pthread_mutex_lock(&w->m);
    coll_cuda_port__fail_locked(w, COLL_ERR_ABORTED);
    pthread_mutex_unlock(&w->m);
}

typedef struct coll_cuda_port__job {
    coll_cuda_port *w;
    int rank, result;
    int (*fn)(int rank, void *arg);
    void *arg;
} coll_cuda_port__job;

static void *coll_cuda_port__main(void *p)
{
    coll_cuda_port__job *j = (coll_cuda_port__job *)p;
    cudaError_t e = cudaSetDevice(j->w->r[j->rank].device);
    j->result = e == cudaSuccess ? j->fn(j->rank, j->arg) : COLL_CUDA_ERR(e);
    return NULL;
}

COLL_CUDA_PORT_API int coll_cuda_port_run(coll_cuda_port *w,
                                          int (*fn)(int rank, void *arg), void *arg)
{
    coll_cuda_port__job job[COLL_CUDA_PORT_MAX_RANKS];
    pthread_t t[COLL_CUDA_PORT_MAX_RANKS];
    int i, started, rc = 0;
    for (started = 0; started < w->nranks; started++) {
        coll_cuda_port__job *j = &job[started];
        j->w = w; j->rank = started; j->result = 0; j->fn = fn; j->arg = arg;
        if (pthread_create(&t[started], NULL, coll_cuda_port__main, j) != 0) {
            coll_cuda_port_abort(w);            /* the started ones must not hang */
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

#endif /* COLL_CUDA_PORT_IMPLEMENTED */
#endif /* COLL_CUDA_PORT_IMPLEMENTATION */
