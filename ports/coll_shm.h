/* coll_shm.h - ranks as processes on one host sharing memory, a port for coll.h
                (Linux: mmap, futex, process_vm_readv)

   USAGE
     In exactly one file:
         #define COLL_SHM_IMPLEMENTATION
         #include "ports/coll_shm.h"
     The implementation uses POSIX and Linux calls (syscall, MAP_ANONYMOUS):
     build it as gnu99/gnu11 (gcc's default), or under -std=c99 define
     _DEFAULT_SOURCE (or _GNU_SOURCE) before the first #include.

     Forked ranks (the launcher makes the shared memory, forks, supervises):
         static int body(int rank, coll_port *port, void *arg) { ... return 0; }
         int failed = coll_shm_spawn(4, body, arg, 2000);   4 ranks, 2 s deadline

     Independently started ranks (any launcher: a shell loop, a job system):
         coll_shm s;  coll_port port;
         coll_shm_open(&s, "/myjob", rank, nranks, 2000, &port);
         ... collectives ...
         coll_shm_close(&s);
       Rank 0 creates the POSIX shared memory object `name` (it must not
       exist yet: a stale one left by a crash is refused; shm_unlink it) and
       removes the name once everybody has joined, so nothing is left behind.

   THE IDEA
     One shared segment holds, per ordered pair of ranks src -> dst, a ring of
     COLL_SHM_SLOTS slots with two counters: `head` (slots published by src)
     and `tail` (slots consumed by dst). Each counter has one writer, so no
     locks: the writer stores it with release order after filling or
     emptying a slot, the other side loads it with acquire order.

     A process cannot read another's private buffer - except through the
     kernel's cross-memory attach (process_vm_readv, "CMA"), which copies
     straight from the sender's pages into the receiver's. So a message takes
     one of two roads:
       - large (>= cma_min bytes): the sender publishes (its pid, the buffer
         address, the size) in one slot and waits until the receiver has
         consumed that slot; the receiver copies with process_vm_readv. One
         copy, and the send is synchronous (the contract allows it).
       - small, or when CMA is refused (Yama ptrace_scope, containers): the
         sender copies the message into slots of COLL_SHM_SLOT_BYTES, the
         receiver copies them out. Two copies, but eager: a send returns as
         soon as its chunks are in the ring, and for a few KiB a memcpy is
         cheaper than a system call. A chunk is marked LAST at a message's
         end, so a receive of the wrong size is caught (COLL_ERR_MISMATCH).
     Whether CMA works is probed at join time between every pair; the
     ranks agree on the answer. Which road is faster was measured
     (ports/README.md): on the machines we test on, two pipelined memcpys
     through the ring beat one process_vm_readv at every size, 2-4x (the
     kernel pins the peer's pages a few at a time), so CMA is off by
     default: s->cma_min = SIZE_MAX. Where it pays, lower cma_min on the
     sending rank (ranks may differ; the receiver follows each slot's kind)
     or set the environment variable COLL_SHM_CMA_MIN=<bytes>.

   PROGRESS AND ORDER
     isend/irecv only record the transfer in a handle; every wait - blocking
     or not - advances all of this rank's handles as far as they can go. So
     an irecv posted but not yet waited for still drains its ring, and a
     synchronous (CMA) send of the peer completes while we wait for
     something else. Transfers of one direction and one peer move strictly
     in posting order: a handle acts only when no older one is ahead of it.

   WAITING (ranks may outnumber cores)
     A waiter spins briefly (only while ranks <= cores; otherwise spinning
     only steals the core its peer needs), then sleeps on a futex: each rank
     has a `bell` word that a peer increments, and wakes, whenever it
     publishes a slot to that rank or frees one of its slots. Sleeps are cut
     into COLL_SHM_SLICE_MS slices; between them the waiter checks
       - the deadline: timeout_ms without any progress -> COLL_ERR_TIMEOUT,
         and the whole group is marked failed so the peers stop at once;
       - the group's failed flag (set by a peer's timeout, or by the spawn
         launcher when a child dies) -> that code, e.g. COLL_ERR_ABORTED;
       - whether the peers it waits on are still alive (a dead or zombie
         process) -> COLL_ERR_IO.

   CONFIGURATION (define before including the implementation)
     COLL_SHM_SLOTS       slots per ordered pair                    (8)
     COLL_SHM_SLOT_BYTES  staging bytes per slot                    (8192)
     COLL_SHM_CMA_MIN     default of s->cma_min            (SIZE_MAX: off)
     COLL_SHM_HANDLES     outstanding isend/irecv per rank          (16)
     COLL_SHM_MAX_RANKS   largest group                             (256)
     COLL_SHM_SLICE_MS    sleep slice between liveness checks       (20)
     COLL_SHM_STATIC      make the functions static                 (off)

   LICENCE: MIT, as coll.h.
*/
#ifndef COLL_SHM_H
#define COLL_SHM_H

#ifndef COLL_H
#include "coll.h"
#endif
#include <stddef.h>
#include <stdint.h>

#ifndef COLL_SHM_SLOTS
#define COLL_SHM_SLOTS 8
#endif
#ifndef COLL_SHM_SLOT_BYTES
#define COLL_SHM_SLOT_BYTES 8192
#endif
#ifndef COLL_SHM_CMA_MIN              /* SIZE_MAX: CMA off (see THE IDEA) */
#define COLL_SHM_CMA_MIN SIZE_MAX
#endif
#ifndef COLL_SHM_HANDLES
#define COLL_SHM_HANDLES 16
#endif
#ifndef COLL_SHM_MAX_RANKS
#define COLL_SHM_MAX_RANKS 256
#endif
#ifndef COLL_SHM_SLICE_MS
#define COLL_SHM_SLICE_MS 20
#endif
#ifndef COLL_SHM_API
#ifdef COLL_SHM_STATIC
#define COLL_SHM_API static
#else
#define COLL_SHM_API extern
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* One transfer in progress (private to its rank). */
typedef struct coll_shm__xfer {
    int used, is_send, peer, result;
    unsigned char *buf;
    size_t bytes, done;        /* bytes published (send) / taken (recv)     */
    uint32_t order;            /* posting order, for per-peer FIFO          */
    uint32_t cma_slot;         /* CMA send: the slot to see consumed        */
    int cma;                   /* CMA send published, waiting for the ack   */
    int finished;              /* 1: complete, result holds the outcome     */
} coll_shm__xfer;

/* The process-private side of one rank. The shared layout is private to
   the implementation. */
typedef struct coll_shm {
    unsigned char *base;       /* the shared segment                        */
    size_t size;
    int rank, nranks;
    unsigned timeout_ms;       /* no progress for this long: TIMEOUT (0 = none) */
    size_t cma_min;            /* messages this large go by CMA if it works */
    int cma;                   /* 1: every pair can use process_vm_readv    */
    int spin;                  /* polls before sleeping                     */
    uint32_t posted;           /* posting counter                           */
    uint64_t last_ms;          /* last progress (ms, monotonic)             */
    uint64_t check_ms;         /* last liveness check of the peers          */
    uint64_t probe;            /* a word peers read to test CMA             */
    /* handles 0..COLL_SHM_HANDLES-1 for isend/irecv, two more for the
       blocking calls so they never find the table full */
    coll_shm__xfer x[COLL_SHM_HANDLES + 2];
} coll_shm;

/* Forks nranks processes; each runs fn(rank, port, arg) over a fresh
   shared group and exits with 0 if fn returned 0. timeout_ms bounds every
   wait without progress (0 = none). The parent supervises: when a child
   fails, the group is marked aborted so the others return at once
   (COLL_ERR_ABORTED), and once the group has failed for any reason,
   children still running timeout_ms (1 s if 0) later are killed.
   Returns the number of children that failed (0 = all fine), or a negative
   code if the group could not be set up. */
COLL_SHM_API int coll_shm_spawn(int nranks, int (*fn)(int rank, coll_port *port, void *arg),
                                void *arg, unsigned timeout_ms);

/* Joins (rank 0: creates) the group `name` ("/something") and waits for all
   nranks to join, at most timeout_ms (0 = forever). 0 or a negative code. */
COLL_SHM_API int coll_shm_open(coll_shm *s, const char *name, int rank, int nranks,
                               unsigned timeout_ms, coll_port *port);
COLL_SHM_API void coll_shm_close(coll_shm *s);

/* Marks the group failed with `code`: every rank's pending and later calls
   return it. */
COLL_SHM_API void coll_shm_abort(coll_shm *s, int code);

COLL_SHM_API int coll_shm_send(void *ctx, int peer, const void *buf, size_t bytes);
COLL_SHM_API int coll_shm_recv(void *ctx, int peer, void *buf, size_t bytes);
COLL_SHM_API int coll_shm_sendrecv(void *ctx, int to, const void *sbuf, size_t sbytes,
                                   int from, void *rbuf, size_t rbytes);
COLL_SHM_API int coll_shm_isend(void *ctx, int peer, const void *buf, size_t bytes, int *handle);
COLL_SHM_API int coll_shm_irecv(void *ctx, int peer, void *buf, size_t bytes, int *handle);
COLL_SHM_API int coll_shm_wait(void *ctx, int handle, int block);

#ifdef __cplusplus
}
#endif
#endif /* COLL_SHM_H */

/* ========================================================================= */
#if defined(COLL_SHM_IMPLEMENTATION) && !defined(COLL_SHM__IMPLEMENTED)
#define COLL_SHM__IMPLEMENTED

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sched.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#if defined(SYS_futex)
#include <linux/futex.h>
#endif

/* ---- the shared layout ---------------------------------------------------
   [group header][rank 0 .. n-1 records][channel 0->1][channel 0->2]...
   Everything starts zeroed (fresh mmap / ftruncate), which is a valid
   initial state: all rings empty, no rank joined. */

#define COLL_SHM__MAGIC 0x636f6c6cu          /* "coll" */
#define COLL_SHM__LINE  64

typedef struct coll_shm__group {
    uint32_t magic;            /* set by the creator when the layout is ready */
    uint32_t nranks;
    uint32_t joined;           /* ranks that wrote their record               */
    uint32_t probed;           /* ranks that finished the CMA probe           */
    uint32_t no_cma;           /* 1: some pair cannot use process_vm_readv    */
    int32_t failed;            /* 0, or the code every call now returns       */
} coll_shm__group;

typedef struct coll_shm__rankrec {
    uint32_t bell;             /* futex word: bumped at every event for us   */
    uint32_t sleeping;         /* 1 while this rank is (about to be) asleep  */
    int32_t pid;
    uint32_t pad0;
    uint64_t probe_addr;       /* address of a known word, for the CMA probe */
    unsigned char pad[COLL_SHM__LINE - 24];
} coll_shm__rankrec;

enum { COLL_SHM__DATA = 1, COLL_SHM__LAST = 2, COLL_SHM__CMA = 4 };

typedef struct coll_shm__slot {
    uint64_t bytes;            /* DATA: bytes in data[]; CMA: message size   */
    uint64_t addr;             /* CMA: the sender's buffer                   */
    uint32_t kind;             /* COLL_SHM__DATA [| LAST] or COLL_SHM__CMA   */
    unsigned char pad[COLL_SHM__LINE - 20];
    unsigned char data[COLL_SHM_SLOT_BYTES];
} coll_shm__slot;

typedef struct coll_shm__chan {
    uint32_t head;             /* written by the sender only                 */
    unsigned char pad0[COLL_SHM__LINE - 4];
    uint32_t tail;             /* written by the receiver only               */
    unsigned char pad1[COLL_SHM__LINE - 4];
    coll_shm__slot slot[COLL_SHM_SLOTS];
} coll_shm__chan;

#define COLL_SHM__LOAD(p)      __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define COLL_SHM__STORE(p, v)  __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define COLL_SHM__SC_LOAD(p)   __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define COLL_SHM__SC_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)

static size_t coll_shm__hdr_bytes(int n)
{
    size_t h = (sizeof(coll_shm__group) + COLL_SHM__LINE - 1) / COLL_SHM__LINE * COLL_SHM__LINE;
    return h + (size_t)n * sizeof(coll_shm__rankrec);
}

static size_t coll_shm__bytes(int n)
{
    return coll_shm__hdr_bytes(n) + (size_t)n * (size_t)n * sizeof(coll_shm__chan);
}

static coll_shm__group *coll_shm__grp(const coll_shm *s)
{
    return (coll_shm__group *)s->base;
}

static coll_shm__rankrec *coll_shm__rec(const coll_shm *s, int r)
{
    size_t h = (sizeof(coll_shm__group) + COLL_SHM__LINE - 1) / COLL_SHM__LINE * COLL_SHM__LINE;
    return (coll_shm__rankrec *)(s->base + h) + r;
}

/* The channel src -> dst (the diagonal is never used; keeping it makes the
   index arithmetic plain). */
static coll_shm__chan *coll_shm__chan_of(const coll_shm *s, int src, int dst)
{
    return (coll_shm__chan *)(s->base + coll_shm__hdr_bytes(s->nranks)) +
           (size_t)src * (size_t)s->nranks + (size_t)dst;
}

/* ---- clocks, futex, liveness ------------------------------------------- */

static uint64_t coll_shm__now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

/* Sleep while *word == val, at most ms milliseconds (or a short nap where
   there is no futex). Spurious returns are fine: callers re-check. */
static void coll_shm__sleep(uint32_t *word, uint32_t val, unsigned ms)
{
#if defined(SYS_futex)
    struct timespec t;
    t.tv_sec = (time_t)(ms / 1000u);
    t.tv_nsec = (long)(ms % 1000u) * 1000000L;
    syscall(SYS_futex, word, FUTEX_WAIT, val, &t, NULL, 0);
#else
    struct timespec t = {0, 100000};
    (void)word; (void)val; (void)ms;
    nanosleep(&t, NULL);
#endif
}

/* Tell rank r that something it may wait for has happened. The increment
   and the load of `sleeping` are sequentially consistent, pairing with the
   sleeper's store of `sleeping` and load of `bell`: either the sleeper sees
   the new bell value (and does not sleep) or we see it sleeping (and wake
   it). */
static void coll_shm__ring(coll_shm *s, int r)
{
    coll_shm__rankrec *rr = coll_shm__rec(s, r);
    __atomic_fetch_add(&rr->bell, 1u, __ATOMIC_SEQ_CST);
    if (COLL_SHM__SC_LOAD(&rr->sleeping)) {
#if defined(SYS_futex)
        syscall(SYS_futex, &rr->bell, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
#endif
    }
}

/* A peer is gone when its pid no longer exists, or is a zombie nobody has
   reaped yet (siblings cannot reap each other, so kill(pid, 0) alone would
   call a dead sibling alive). */
static int coll_shm__dead(pid_t pid)
{
    char path[64], buf[256], *p;
    FILE *f;
    size_t n;
    if (pid <= 0)
        return 0;
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return 1;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (!f)
        return 0;                     /* no /proc: only kill() can tell     */
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    p = strrchr(buf, ')');            /* "pid (comm) S ..." - comm may hold ')' */
    return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

COLL_SHM_API void coll_shm_abort(coll_shm *s, int code)
{
    int32_t zero = 0;
    int r;
    if (code >= 0)
        code = COLL_ERR_ABORTED;
    __atomic_compare_exchange_n(&coll_shm__grp(s)->failed, &zero, code, 0,
                                __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    for (r = 0; r < s->nranks; r++)
        coll_shm__ring(s, r);
}

/* ---- moving bytes ------------------------------------------------------- */

/* Is some older transfer of the same direction and peer still ahead of x?
   (the handle table is small: a scan is cheaper than per-peer queues) */
static int coll_shm__blocked(const coll_shm *s, const coll_shm__xfer *x)
{
    int i;
    for (i = 0; i < COLL_SHM_HANDLES + 2; i++) {
        const coll_shm__xfer *y = &s->x[i];
        if (y == x || !y->used || y->finished || y->is_send != x->is_send || y->peer != x->peer)
            continue;
        /* a send stands in the way only until it is fully published */
        if (y->is_send && y->done == y->bytes)
            continue;
        if ((int32_t)(y->order - x->order) < 0)
            return 1;
    }
    return 0;
}

/* Advance a send; returns 1 if anything moved. */
static int coll_shm__step_send(coll_shm *s, coll_shm__xfer *x)
{
    coll_shm__chan *c = coll_shm__chan_of(s, s->rank, x->peer);
    uint32_t head = c->head, tail;
    int moved = 0;
    if (x->done < x->bytes && !coll_shm__blocked(s, x)) {
        tail = COLL_SHM__LOAD(&c->tail);
        while (x->done < x->bytes && head - tail < COLL_SHM_SLOTS) {
            coll_shm__slot *sl = &c->slot[head % COLL_SHM_SLOTS];
            if (s->cma && x->bytes >= s->cma_min) {
                sl->kind = COLL_SHM__CMA;
                sl->bytes = x->bytes;
                sl->addr = (uint64_t)(uintptr_t)x->buf;
                x->done = x->bytes;
                x->cma = 1;
                x->cma_slot = head;
            } else {
                size_t n = x->bytes - x->done;
                if (n > COLL_SHM_SLOT_BYTES)
                    n = COLL_SHM_SLOT_BYTES;
                memcpy(sl->data, x->buf + x->done, n);
                sl->bytes = n;
                x->done += n;
                sl->kind = COLL_SHM__DATA | (x->done == x->bytes ? COLL_SHM__LAST : 0);
            }
            head++;
            COLL_SHM__STORE(&c->head, head);
            moved = 1;
        }
        if (moved)
            coll_shm__ring(s, x->peer);
    }
    if (x->done == x->bytes) {
        /* eager chunks are complete once published; a CMA send once the
           receiver has consumed its slot (it has copied our buffer) */
        if (!x->cma || (int32_t)(COLL_SHM__LOAD(&c->tail) - x->cma_slot) > 0) {
            x->finished = 1;
            x->result = 0;
            moved = 1;
        }
    }
    return moved;
}

/* Copy `bytes` from the peer's address space with CMA; 0 or COLL_ERR_IO. */
static int coll_shm__cma_read(pid_t pid, void *dst, uint64_t src, size_t bytes)
{
    size_t done = 0;
    while (done < bytes) {
        struct iovec l, r;
        long n;
        l.iov_base = (unsigned char *)dst + done;
        l.iov_len = bytes - done;
        r.iov_base = (void *)(uintptr_t)(src + done);
        r.iov_len = bytes - done;
        n = syscall(SYS_process_vm_readv, (long)pid, &l, 1L, &r, 1L, 0L);
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            return COLL_ERR_IO;
        }
        done += (size_t)n;
    }
    return 0;
}

/* Advance a receive; returns 1 if anything moved, sets x->finished on
   completion or error. */
static int coll_shm__step_recv(coll_shm *s, coll_shm__xfer *x)
{
    coll_shm__chan *c = coll_shm__chan_of(s, x->peer, s->rank);
    uint32_t tail = c->tail, head;
    int moved = 0, rc = 0;
    if (coll_shm__blocked(s, x))
        return 0;
    head = COLL_SHM__LOAD(&c->head);
    while (x->done < x->bytes && tail != head) {
        coll_shm__slot *sl = &c->slot[tail % COLL_SHM_SLOTS];
        if (sl->kind == COLL_SHM__CMA) {
            if (x->done != 0 || sl->bytes != x->bytes)
                rc = COLL_ERR_MISMATCH;
            else
                rc = coll_shm__cma_read((pid_t)coll_shm__rec(s, x->peer)->pid,
                                        x->buf, sl->addr, x->bytes);
            if (rc == 0)
                x->done = x->bytes;
        } else {
            size_t n = (size_t)sl->bytes;
            int last = (sl->kind & COLL_SHM__LAST) != 0;
            if (n > x->bytes - x->done || last != (x->done + n == x->bytes))
                rc = COLL_ERR_MISMATCH;
            else {
                memcpy(x->buf + x->done, sl->data, n);
                x->done += n;
            }
        }
        if (rc)
            break;
        tail++;
        COLL_SHM__STORE(&c->tail, tail);
        moved = 1;
    }
    if (moved)
        coll_shm__ring(s, x->peer);        /* a slot is free / a CMA ack */
    if (rc == COLL_ERR_MISMATCH)
        coll_shm_abort(s, rc);   /* the pair is out of step: tell everybody,
                                    the sender of a CMA message included */
    if (rc || x->done == x->bytes) {
        x->finished = 1;
        x->result = rc;
        moved = 1;
    }
    return moved;
}

/* One pass over all live transfers; returns 1 if anything moved. */
static int coll_shm__progress(coll_shm *s)
{
    int i, moved = 0;
    for (i = 0; i < COLL_SHM_HANDLES + 2; i++) {
        coll_shm__xfer *x = &s->x[i];
        if (!x->used || x->finished)
            continue;
        moved |= x->is_send ? coll_shm__step_send(s, x) : coll_shm__step_recv(s, x);
    }
    return moved;
}

/* Is a peer of some unfinished transfer dead? */
static int coll_shm__peers_dead(coll_shm *s)
{
    int i;
    for (i = 0; i < COLL_SHM_HANDLES + 2; i++) {
        coll_shm__xfer *x = &s->x[i];
        if (x->used && !x->finished && coll_shm__dead((pid_t)coll_shm__rec(s, x->peer)->pid))
            return 1;
    }
    return 0;
}

static int coll_shm__all_done(coll_shm *s, const int *h, int n)
{
    int i;
    for (i = 0; i < n; i++)
        if (!s->x[h[i]].finished)
            return 0;
    return 1;
}

/* Wait until the transfers h[0..n-1] are finished (block = 0: advance once
   and answer COLL_AGAIN if they are not). Returns the first error among
   them, or a group failure; frees the handles unless COLL_AGAIN. The
   deadline counts time without progress on this rank, so a long transfer
   that keeps moving never times out, and polling callers get it too. */
static int coll_shm__wait(coll_shm *s, const int *h, int n, int block)
{
    coll_shm__group *g = coll_shm__grp(s);
    coll_shm__rankrec *me = coll_shm__rec(s, s->rank);
    int spins = 0, rc = 0, i;
    for (;;) {
        int moved = coll_shm__progress(s);
        uint64_t now;
        if (coll_shm__all_done(s, h, n))
            break;
        if ((rc = COLL_SHM__LOAD(&g->failed)) != 0)
            break;
        now = coll_shm__now_ms();
        if (moved) {
            s->last_ms = now;
            spins = 0;
        } else {
            if (now - s->check_ms >= COLL_SHM_SLICE_MS) {
                s->check_ms = now;
                /* A peer may have published its last message and exited
                   since we looked: what is in the ring still counts. */
                if (coll_shm__peers_dead(s) && !coll_shm__progress(s)) {
                    rc = COLL_ERR_IO;
                    break;
                }
                continue;
            }
            if (s->timeout_ms && now - s->last_ms >= s->timeout_ms) {
                rc = COLL_ERR_TIMEOUT;
                coll_shm_abort(s, rc);      /* peers stop now, not later */
                break;
            }
        }
        if (!block)
            return COLL_AGAIN;
        if (moved)
            continue;
        if (spins < s->spin) {
            spins++;
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
            continue;
        }
        /* Going to sleep: announce it, then look once more (see ring). */
        {
            uint32_t bell;
            COLL_SHM__SC_STORE(&me->sleeping, 1u);
            bell = COLL_SHM__SC_LOAD(&me->bell);
            if (coll_shm__progress(s))
                s->last_ms = coll_shm__now_ms();
            else if (!COLL_SHM__LOAD(&g->failed))
                coll_shm__sleep(&me->bell, bell, COLL_SHM_SLICE_MS);
            COLL_SHM__SC_STORE(&me->sleeping, 0u);
        }
        spins = 0;
    }
    for (i = 0; i < n; i++) {
        coll_shm__xfer *x = &s->x[h[i]];
        if (rc == 0 && x->finished && x->result)
            rc = x->result;
        x->used = 0;
    }
    return rc;
}

/* ---- the port functions ------------------------------------------------- */

static int coll_shm__post(coll_shm *s, int slot, int is_send, int peer,
                          const void *buf, size_t bytes)
{
    coll_shm__xfer *x = &s->x[slot];
    if (peer < 0 || peer >= s->nranks || peer == s->rank || bytes == 0 || !buf)
        return COLL_ERR_INVAL;
    x->used = 1;
    x->is_send = is_send;
    x->peer = peer;
    x->buf = (unsigned char *)buf;
    x->bytes = bytes;
    x->done = 0;
    x->order = s->posted++;
    x->cma = 0;
    x->finished = 0;
    x->result = 0;
    s->last_ms = coll_shm__now_ms();    /* the deadline starts at posting */
    return 0;
}

static int coll_shm__check(coll_shm *s)
{
    return COLL_SHM__LOAD(&coll_shm__grp(s)->failed);
}

COLL_SHM_API int coll_shm_send(void *ctx, int peer, const void *buf, size_t bytes)
{
    coll_shm *s = (coll_shm *)ctx;
    int h = COLL_SHM_HANDLES, rc = coll_shm__check(s);
    if (rc == 0)
        rc = coll_shm__post(s, h, 1, peer, buf, bytes);
    return rc ? rc : coll_shm__wait(s, &h, 1, 1);
}

COLL_SHM_API int coll_shm_recv(void *ctx, int peer, void *buf, size_t bytes)
{
    coll_shm *s = (coll_shm *)ctx;
    int h = COLL_SHM_HANDLES + 1, rc = coll_shm__check(s);
    if (rc == 0)
        rc = coll_shm__post(s, h, 0, peer, buf, bytes);
    return rc ? rc : coll_shm__wait(s, &h, 1, 1);
}

COLL_SHM_API int coll_shm_sendrecv(void *ctx, int to, const void *sbuf, size_t sbytes,
                                   int from, void *rbuf, size_t rbytes)
{
    coll_shm *s = (coll_shm *)ctx;
    int h[2] = {COLL_SHM_HANDLES + 1, COLL_SHM_HANDLES}, rc = coll_shm__check(s);
    if (rc == 0)
        rc = coll_shm__post(s, h[0], 0, from, rbuf, rbytes);
    if (rc == 0 && (rc = coll_shm__post(s, h[1], 1, to, sbuf, sbytes)) != 0)
        s->x[h[0]].used = 0;
    return rc ? rc : coll_shm__wait(s, h, 2, 1);
}

static int coll_shm__ipost(coll_shm *s, int is_send, int peer, const void *buf,
                           size_t bytes, int *handle)
{
    int h, rc = coll_shm__check(s);
    if (rc)
        return rc;
    for (h = 0; h < COLL_SHM_HANDLES && s->x[h].used; h++)
        ;
    if (h == COLL_SHM_HANDLES)
        return COLL_AGAIN;
    rc = coll_shm__post(s, h, is_send, peer, buf, bytes);
    if (rc)
        return rc;
    coll_shm__progress(s);        /* eager: start moving bytes right away */
    *handle = h;
    return 0;
}

COLL_SHM_API int coll_shm_isend(void *ctx, int peer, const void *buf, size_t bytes, int *handle)
{
    return coll_shm__ipost((coll_shm *)ctx, 1, peer, buf, bytes, handle);
}

COLL_SHM_API int coll_shm_irecv(void *ctx, int peer, void *buf, size_t bytes, int *handle)
{
    return coll_shm__ipost((coll_shm *)ctx, 0, peer, buf, bytes, handle);
}

COLL_SHM_API int coll_shm_wait(void *ctx, int handle, int block)
{
    coll_shm *s = (coll_shm *)ctx;
    if (handle < 0 || handle >= COLL_SHM_HANDLES || !s->x[handle].used)
        return COLL_ERR_INVAL;
    return coll_shm__wait(s, &handle, 1, block);
}

/* ---- joining a group ---------------------------------------------------- */

static void coll_shm__port(coll_shm *s, coll_port *port)
{
    port->ctx = s;
    port->send = coll_shm_send;
    port->recv = coll_shm_recv;
    port->sendrecv = coll_shm_sendrecv;
    port->isend = coll_shm_isend;
    port->irecv = coll_shm_irecv;
    port->wait = coll_shm_wait;
}

/* Wait until *word >= want, polling politely; 0 or COLL_ERR_TIMEOUT. */
static int coll_shm__await(coll_shm *s, uint32_t *word, uint32_t want, unsigned timeout_ms)
{
    uint64_t t0 = coll_shm__now_ms();
    coll_shm__rankrec *me = coll_shm__rec(s, s->rank);
    while (COLL_SHM__SC_LOAD(word) < want) {
        uint32_t bell;
        if (COLL_SHM__LOAD(&coll_shm__grp(s)->failed))
            return COLL_SHM__LOAD(&coll_shm__grp(s)->failed);
        if (timeout_ms && coll_shm__now_ms() - t0 >= timeout_ms)
            return COLL_ERR_TIMEOUT;
        COLL_SHM__SC_STORE(&me->sleeping, 1u);
        bell = COLL_SHM__SC_LOAD(&me->bell);
        if (COLL_SHM__SC_LOAD(word) < want)
            coll_shm__sleep(&me->bell, bell, COLL_SHM_SLICE_MS);
        COLL_SHM__SC_STORE(&me->sleeping, 0u);
    }
    return 0;
}

/* Everything after the segment is mapped: record ourselves, probe CMA
   towards every peer, agree on the answer. */
static int coll_shm__join(coll_shm *s, int rank, int nranks, unsigned timeout_ms,
                          coll_port *port)
{
    coll_shm__group *g = coll_shm__grp(s);
    coll_shm__rankrec *me;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int r, rc;
    s->rank = rank;
    s->nranks = nranks;
    s->timeout_ms = timeout_ms;
    s->cma_min = COLL_SHM_CMA_MIN;
    {
        const char *e = getenv("COLL_SHM_CMA_MIN");
        if (e && *e)
            s->cma_min = (size_t)strtoull(e, NULL, 10);
    }
    s->spin = (ncpu > 0 && nranks <= ncpu) ? 2000 : 0;
    s->posted = 0;
    s->last_ms = s->check_ms = coll_shm__now_ms();
    s->probe = 0x70726f6265ull;                               /* "probe" */
    memset(s->x, 0, sizeof s->x);
    me = coll_shm__rec(s, rank);
    me->pid = (int32_t)getpid();
    me->probe_addr = (uint64_t)(uintptr_t)&s->probe;
    __atomic_fetch_add(&g->joined, 1u, __ATOMIC_SEQ_CST);
    for (r = 0; r < nranks; r++)
        coll_shm__ring(s, r);
    if ((rc = coll_shm__await(s, &g->joined, (uint32_t)nranks, timeout_ms)) != 0)
        return rc;
    for (r = 0; r < nranks; r++) {
        uint64_t v = 0;
        coll_shm__rankrec *p = coll_shm__rec(s, r);
        if (r == rank)
            continue;
        if (coll_shm__cma_read((pid_t)p->pid, &v, p->probe_addr, sizeof v) != 0 ||
            v != 0x70726f6265ull)
            COLL_SHM__SC_STORE(&g->no_cma, 1u);
    }
    __atomic_fetch_add(&g->probed, 1u, __ATOMIC_SEQ_CST);
    for (r = 0; r < nranks; r++)
        coll_shm__ring(s, r);
    if ((rc = coll_shm__await(s, &g->probed, (uint32_t)nranks, timeout_ms)) != 0)
        return rc;
    s->cma = !COLL_SHM__SC_LOAD(&g->no_cma);
    coll_shm__port(s, port);
    return 0;
}

COLL_SHM_API int coll_shm_open(coll_shm *s, const char *name, int rank, int nranks,
                               unsigned timeout_ms, coll_port *port)
{
    size_t size;
    int fd = -1, rc;
    uint64_t t0 = coll_shm__now_ms();
    coll_shm__group *g;
    if (!s || !name || !port || nranks < 1 || nranks > COLL_SHM_MAX_RANKS ||
        rank < 0 || rank >= nranks)
        return COLL_ERR_INVAL;
    size = coll_shm__bytes(nranks);
    s->base = NULL;
    s->nranks = nranks;
    if (rank == 0) {
        fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd < 0)
            return COLL_ERR_IO;          /* exists already (stale?) or no shm */
        if (ftruncate(fd, (off_t)size) != 0) {
            close(fd);
            shm_unlink(name);
            return COLL_ERR_IO;
        }
    } else {
        /* wait for rank 0 to create it and to size it */
        struct timespec nap = {0, 1000000};
        for (;;) {
            struct stat st;
            fd = shm_open(name, O_RDWR, 0600);
            if (fd >= 0 && fstat(fd, &st) == 0 && (size_t)st.st_size == size)
                break;
            if (fd >= 0)
                close(fd);
            if (timeout_ms && coll_shm__now_ms() - t0 >= timeout_ms)
                return COLL_ERR_TIMEOUT;
            nanosleep(&nap, NULL);
        }
    }
    s->base = (unsigned char *)mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (s->base == (unsigned char *)MAP_FAILED) {
        s->base = NULL;
        if (rank == 0)
            shm_unlink(name);
        return COLL_ERR_IO;
    }
    s->size = size;
    g = coll_shm__grp(s);
    if (rank == 0) {
        g->nranks = (uint32_t)nranks;
        COLL_SHM__SC_STORE(&g->magic, COLL_SHM__MAGIC);
    } else {
        struct timespec nap = {0, 1000000};
        while (COLL_SHM__SC_LOAD(&g->magic) != COLL_SHM__MAGIC) {
            if (timeout_ms && coll_shm__now_ms() - t0 >= timeout_ms) {
                coll_shm_close(s);
                return COLL_ERR_TIMEOUT;
            }
            nanosleep(&nap, NULL);
        }
        if (g->nranks != (uint32_t)nranks) {
            coll_shm_close(s);
            return COLL_ERR_MISMATCH;
        }
    }
    rc = coll_shm__join(s, rank, nranks, timeout_ms, port);
    if (rank == 0)
        shm_unlink(name);          /* all mapped it (or gave up): drop the name */
    if (rc)
        coll_shm_close(s);
    return rc;
}

COLL_SHM_API void coll_shm_close(coll_shm *s)
{
    if (s->base)
        munmap(s->base, s->size);
    s->base = NULL;
}

/* ---- the forking launcher ------------------------------------------------ */

COLL_SHM_API int coll_shm_spawn(int nranks, int (*fn)(int rank, coll_port *port, void *arg),
                                void *arg, unsigned timeout_ms)
{
    coll_shm parent;            /* the launcher's view: only base/nranks   */
    pid_t pids[COLL_SHM_MAX_RANKS];
    size_t size;
    int r, alive, failed = 0;
    uint64_t kill_at = 0;
    if (nranks < 1 || nranks > COLL_SHM_MAX_RANKS || !fn)
        return COLL_ERR_INVAL;
    size = coll_shm__bytes(nranks);
    /* MAP_SHARED | MAP_ANONYMOUS before fork: every child inherits the same
       pages, and nothing is left to clean up when the last one exits. */
    parent.base = (unsigned char *)mmap(NULL, size, PROT_READ | PROT_WRITE,
                                        MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (parent.base == (unsigned char *)MAP_FAILED)
        return COLL_ERR_IO;
    parent.size = size;
    parent.nranks = nranks;
    coll_shm__grp(&parent)->nranks = (uint32_t)nranks;
    coll_shm__grp(&parent)->magic = COLL_SHM__MAGIC;
    fflush(NULL);               /* or buffered output is written n+1 times  */
    for (r = 0; r < nranks; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            static coll_shm s;  /* one per child process                   */
            coll_port port;
            int rc;
            s.base = parent.base;
            s.size = size;
            rc = coll_shm__join(&s, r, nranks, timeout_ms, &port);
            if (rc == 0)
                rc = fn(r, &port, arg);
            fflush(NULL);
            _exit(rc == 0 ? 0 : 1);
        }
        if (pids[r] < 0) {
            coll_shm_abort(&parent, COLL_ERR_ABORTED);
            failed++;
            nranks = r;         /* wait only for those that exist            */
            break;
        }
    }
    /* Supervise. At the first sign of trouble - a child that failed, or the
       group marked failed by a child's deadline - tell everybody to stop
       (they are probably waiting on the culprit) and give them `grace` to
       return before killing the rest: a rank stuck outside the port would
       otherwise hold the launcher forever. Only unreaped children are ever
       signalled: a reaped pid may already belong to somebody else. */
    for (alive = nranks; alive > 0;) {
        int st;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p > 0) {
            for (r = 0; r < nranks; r++)
                if (pids[r] == p)
                    pids[r] = 0;
            alive--;
            if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
                failed++;
                coll_shm_abort(&parent, COLL_ERR_ABORTED);
            }
            continue;
        }
        if (p < 0 && errno != EINTR)
            break;
        if (!kill_at && COLL_SHM__LOAD(&coll_shm__grp(&parent)->failed))
            kill_at = coll_shm__now_ms() + (timeout_ms ? timeout_ms : 1000u);
        if (kill_at && coll_shm__now_ms() >= kill_at) {
            for (r = 0; r < nranks; r++)
                if (pids[r] > 0)
                    kill(pids[r], SIGKILL);
            kill_at = UINT64_MAX;          /* once; keep reaping */
        }
        {
            struct timespec nap = {0, 5000000};   /* 5 ms: costs nothing */
            nanosleep(&nap, NULL);
        }
    }
    munmap(parent.base, size);
    return failed;
}

#endif /* COLL_SHM_IMPLEMENTATION */
