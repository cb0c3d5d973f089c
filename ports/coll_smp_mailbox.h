/* coll_smp_mailbox.h - a coll port between cores that share memory: one
                        lock-free single-producer/single-consumer ring per
                        ordered pair of cores. No OS, no heap, no locks;
                        no libc beyond memcpy.

   For multi-core microcontrollers and SoCs (two Cortex-M cores over shared
   SRAM, an application core and a real-time core), and for threads of one
   process standing in for them. Each core runs one rank, in its own
   context; the only thing the cores share is a block of memory the caller
   provides. (One core driving several ranks round robin: coll_mailbox.h.)

   USAGE
       #define COLL_SMP_MAILBOX_IMPLEMENTATION      (in one file per image)
       #include "ports/coll_smp_mailbox.h"

       shared memory, seen by every core at the same address:
       static unsigned char mem[COLL_SMP_MAILBOX_BYTES(2, 8, 128)];   8-aligned

       one core, before any other core touches it:
           coll_smp_mailbox_format(mem, sizeof mem, 2, 8, 128);
       then every core, with its own private struct:
           static coll_smp_mailbox mb;
           coll_smp_mailbox_init(&mb, mem, sizeof mem, rank, 2, 8, 128);
           coll_port port = coll_smp_mailbox_port(&mb);
           coll_init(&c, rank, 2, &port, scratch, sizeof scratch);
           ... collectives ...
           coll_smp_mailbox_close(&mb);

   HOW IT WORKS
     The shared block holds a small header (the geometry, and a `failed`
     word for abort) and nranks * (nranks - 1) rings, one per ordered pair
     (from, to). A ring is two counters, `head` (written only by `from`)
     and `tail` (written only by `to`), each on its own cache line, and
     `nslots` slots of `slot_bytes`: an 8-byte header (the message's total
     size and this piece's length) and the payload. A message longer than
     a slot's payload goes out in pieces, one per slot, in order: the
     port cuts its own messages, so it leaves coll_port.max_bytes 0 and
     works in a build with COLL_NO_PIECES. (A link that cannot cut, a
     fixed-size hardware mailbox, sets max_bytes instead and needs a build
     without COLL_NO_PIECES: ports/README.md, max_bytes.) MESSAGE SIZE: the
     slot header carries a message's total in 32 bits, so a post of more
     than 4 GiB - 1 bytes is refused (COLL_ERR_INVAL) rather than cut;
     max_bytes does not say so (a value there would need the pieces
     layer), so on a 64-bit host a collective that would hand the port a
     larger message fails with that error.

     The producer fills a slot, then publishes it by storing head + 1 with
     release order; the consumer loads head with acquire order, copies the
     slot out, then frees it by storing tail + 1 with release order; the
     producer loads tail with acquire order before reusing a slot. Each
     side keeps its own counter privately and never reads it back from the
     shared block.

     Distrusting the other core: every value read from the shared block is
     checked before it is used. A head or tail more than `nslots` away from
     this side's own counter, or a piece whose length is not the one this
     side expects, is COLL_ERR_CORRUPT; a total that differs from the
     posted size is COLL_ERR_MISMATCH. Nothing read from the block ever
     indexes memory: slot positions come from this side's counters, and
     copies are bounded by this side's own sizes. A core that writes
     garbage makes its peers fail with an error, never write out of bounds.

     isend / irecv post a transfer in a table of COLL_SMP_OPS handles and
     move what they can at once; every later call of the port (any wait,
     send or recv of this rank) moves more, oldest first per peer, so per
     pair order holds. A send completes once all its pieces are in the
     ring (eager up to the ring's size), a receive once all are copied out.
     Bytes move only inside this rank's own calls.

     irecv_fold posts a receive that folds each piece into its buffer
     straight from the slot (coll.h's zero-copy reduce): one call per
     slot, in order, before the slot is handed back.

     Waiting: a blocking call polls. After each poll that moved nothing it
     calls the `idle` hook (WFE, a yield), which may stop the wait by
     returning nonzero. The deadline is in time: with a clock (`now_ms`,
     milliseconds from any origin; init sets the host's monotonic clock
     where it has one, firmware gives its tick), a wait that sees no
     progress for `timeout_ms` (init: 10 s) stops, the clock read every 64
     fruitless polls; without one, `spin_limit` fruitless polls in a row
     (init: 10^8) stop it. Any: COLL_ERR_TIMEOUT. Any progress starts the
     count again, so a long transfer that keeps moving never times out.

     Errors: a failed wait ends every transfer of this rank (none will
     touch its buffer afterwards) and every later call answers the same
     error, until init. abort (called by coll.h after a transport error)
     stores the code in the shared `failed` word: every rank's next poll
     answers it. format clears it.

   MEMORY ORDERING
     Built as C11 with <stdatomic.h>, the counters are _Atomic uint32_t
     with acquire loads and release stores (plain loads and stores plus a
     DMB on Cortex-M; no read-modify-write, so no libatomic). Otherwise -
     C99, C++, or a compiler without atomics - define COLL_SMP_BARRIER() as
     a full memory barrier that the compiler cannot move accesses across,
     and the counters become volatile with a barrier before each store and
     after each load:
         Cortex-M (CMSIS)   -DCOLL_SMP_BARRIER()=__DMB()
         GCC / Clang        -DCOLL_SMP_BARRIER()=__sync_synchronize()
     Defining it in C11 as well selects it over <stdatomic.h>.

     The cores must see the block coherently: on a core with a data cache
     that the others do not snoop (Cortex-M7), place it in a non-cacheable
     region (MPU) - the port does no cache maintenance.

   CONFIGURATION
     COLL_SMP_MAX_RANKS     cores in one block                        (16)
     COLL_SMP_OPS           outstanding transfers per rank (>= 4)      (8)
     COLL_SMP_LINE          bytes a counter is padded to (cache line) (64)
     COLL_SMP_MEMCPY(d,s,n) the copy                              (memcpy)
     COLL_SMP_MAILBOX_STATIC  every function static                  (off)
   Geometry, the same on every core: nslots a power of two >= 2,
   slot_bytes a multiple of 8 and >= 16. The block takes
   COLL_SMP_MAILBOX_BYTES(nranks, nslots, slot_bytes) bytes:
   64 + n(n-1)(128 + nslots * slot_bytes) + n COLL_SMP_WIN_BYTES (a line
   for the count and the record's lines: 128 with 64-byte lines);
   2 cores, 8 slots of 128 B: 2.5 KiB.

   LICENCE: MIT, as coll.h.
*/
#ifndef COLL_SMP_MAILBOX_H
#define COLL_SMP_MAILBOX_H

#ifndef COLL_H
#include "../coll.h"
#endif
#include <stdint.h>

#ifndef COLL_SMP_MAX_RANKS
#define COLL_SMP_MAX_RANKS 16
#endif
#ifndef COLL_SMP_OPS
#define COLL_SMP_OPS 8
#endif
#ifndef COLL_SMP_LINE
#define COLL_SMP_LINE 64
#endif
#define COLL_SMP_HEADER 8          /* bytes of a slot before its payload     */

/* A rank's window entry (coll_window.h): its sync count on a line of its
   own, then its last two records (slot posts % 2), each rounded up to
   whole lines. */
#define COLL_SMP_REC_BYTES ((sizeof(coll_window_rec) + COLL_SMP_LINE - 1) / COLL_SMP_LINE * COLL_SMP_LINE)
#define COLL_SMP_WIN_BYTES ((size_t)COLL_SMP_LINE + 2u * COLL_SMP_REC_BYTES)

/* The shared block's size: header line, one ring per ordered pair, then
   one window entry per rank. */
#define COLL_SMP_MAILBOX_BYTES(nranks, nslots, slot_bytes)                        \
    ((size_t)COLL_SMP_LINE + (size_t)(nranks) * (size_t)((nranks) - 1) *          \
         (2u * COLL_SMP_LINE + (size_t)(nslots) * (size_t)(slot_bytes)) +         \
     (size_t)(nranks) * COLL_SMP_WIN_BYTES)

#ifndef COLL_SMP_MAILBOX_API
#if defined(COLL_SMP_MAILBOX_STATIC) && defined(__GNUC__)
#define COLL_SMP_MAILBOX_API static __attribute__((unused))
#elif defined(COLL_SMP_MAILBOX_STATIC)
#define COLL_SMP_MAILBOX_API static
#else
#define COLL_SMP_MAILBOX_API extern
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* One posted transfer (private to its rank). */
typedef struct coll_smp_op {
    unsigned char kind;        /* 0 free, 1 send, 2 recv                     */
    unsigned char done;        /* every piece moved (or failed)              */
    short peer;
    int result;
    unsigned seq;              /* n-th transfer of this kind with this peer  */
    unsigned char *buf;        /* send: read only                            */
    size_t bytes, moved;
    coll_fold_fn fold;         /* recv: fold each piece from its slot        */
    void *fold_arg;
} coll_smp_op;

/* One rank's end: private to its core, never in the shared block. */
typedef struct coll_smp_mailbox {
    unsigned char *mem;        /* the shared block                           */
    int rank, nranks;
    uint32_t nslots, slot_bytes;
    uint32_t head[COLL_SMP_MAX_RANKS];   /* next slot I fill towards peer    */
    uint32_t tail[COLL_SMP_MAX_RANKS];   /* next slot I empty from peer      */
    unsigned posted[2][COLL_SMP_MAX_RANKS];  /* [send/recv][peer]            */
    unsigned moving[2][COLL_SMP_MAX_RANKS];  /* seq whose turn it is         */
    coll_smp_op op[COLL_SMP_OPS];
    int error;                 /* 0, or the error that ended this end        */
    int attached;              /* communicators coll_init put on this end    */
    /* Waiting (see above): idle(user, polls) after each fruitless poll;
       nonzero stops the wait. timeout_ms without progress by now_ms(user)
       stop it (0: no deadline), or without a clock spin_limit fruitless
       polls in a row (0: no limit). init sets no hook, the host's clock
       (or none), 10 s and 10^8. */
    int (*idle)(void *user, unsigned long polls);
    void *user;
    unsigned long (*now_ms)(void *user);
    unsigned long timeout_ms;
    unsigned long spin_limit;
    /* Windows (coll_smp_mailbox_set_window): the shared region every
       window call's buffers lie in, this rank's syncs so far, and the
       peers' records as last read (copied out, then checked). */
    unsigned char *win_lo;
    size_t win_len;
    uint32_t wsyncs, wposts;
    coll_window_rec wrec[COLL_SMP_MAX_RANKS];
    /* Traffic of this rank. */
    unsigned long long bytes_sent, msgs_sent, slots_sent;
    unsigned long long bytes_folded;     /* received through irecv_fold    */
} coll_smp_mailbox;

/* The block's size for this geometry, 0 if the geometry is invalid. */
COLL_SMP_MAILBOX_API size_t coll_smp_mailbox_bytes(int nranks, unsigned nslots, unsigned slot_bytes);
/* Zero the block and write its geometry: once, on one core, before the
   others call init. 0 or COLL_ERR_INVAL (bad geometry, block too small or
   not 8-byte aligned). */
COLL_SMP_MAILBOX_API int coll_smp_mailbox_format(void *mem, size_t bytes, int nranks,
                                                 unsigned nslots, unsigned slot_bytes);
/* Join as `rank`: the same geometry as format (checked against the
   block). 0 or COLL_ERR_INVAL. */
COLL_SMP_MAILBOX_API int coll_smp_mailbox_init(coll_smp_mailbox *mb, void *mem, size_t bytes,
                                               int rank, int nranks, unsigned nslots,
                                               unsigned slot_bytes);
/* Windows for coll_window.h: the region of shared memory, at the same
   address on every core, that holds every buffer of a window call. Set
   it alike on every core, before coll_smp_mailbox_port; a record whose
   buffers leave it is none (the call fails on every rank). 0 or
   COLL_ERR_INVAL. */
COLL_SMP_MAILBOX_API int coll_smp_mailbox_set_window(coll_smp_mailbox *mb, void *base, size_t bytes);
/* send, recv, isend, irecv, wait, abort, irecv_fold, attach, and the
   windows once set. An end that init refused gets a port without
   send/recv, which coll_init refuses. */
COLL_SMP_MAILBOX_API coll_port coll_smp_mailbox_port(coll_smp_mailbox *mb);
/* Transfers posted on this end and not yet waited for. */
COLL_SMP_MAILBOX_API int coll_smp_mailbox_pending(const coll_smp_mailbox *mb);
/* Every rank's next poll answers `code` (or COLL_ERR_ABORTED). */
COLL_SMP_MAILBOX_API void coll_smp_mailbox_abort(coll_smp_mailbox *mb, int code);
COLL_SMP_MAILBOX_API void coll_smp_mailbox_close(coll_smp_mailbox *mb);

#ifdef __cplusplus
}
#endif
#endif /* COLL_SMP_MAILBOX_H */

#if defined(COLL_SMP_MAILBOX_IMPLEMENTATION) && !defined(COLL_SMP_MAILBOX__IMPLEMENTED)
#define COLL_SMP_MAILBOX__IMPLEMENTED

#ifndef COLL_SMP_MEMCPY
#include <string.h>
#define COLL_SMP_MEMCPY(d, s, n) memcpy((d), (s), (n))
#endif

/* ---- the host's clock, for the deadline (none on bare metal: the
   firmware sets now_ms to its tick) ----------------------------------------- */
#if defined(__STDC_HOSTED__) && __STDC_HOSTED__ && (defined(__unix__) || defined(__APPLE__))
#include <time.h>
#endif
#if defined(CLOCK_MONOTONIC)
static unsigned long coll_smp__host_ms(void *user)
{
    struct timespec t;
    (void)user;
    if (clock_gettime(CLOCK_MONOTONIC, &t) != 0) return 0;
    return (unsigned long)t.tv_sec * 1000ul + (unsigned long)(t.tv_nsec / 1000000);
}
#elif defined(TIME_UTC) && defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
static unsigned long coll_smp__host_ms(void *user)
{
    struct timespec t;
    (void)user;
    if (timespec_get(&t, TIME_UTC) != TIME_UTC) return 0;
    return (unsigned long)t.tv_sec * 1000ul + (unsigned long)(t.tv_nsec / 1000000);
}
#else
#define coll_smp__host_ms ((unsigned long (*)(void *))0)
#endif

/* ---- the shared counters: acquire loads, release stores ------------------ */
#if defined(COLL_SMP_BARRIER)
typedef volatile uint32_t coll_smp__word;
static uint32_t coll_smp__load(coll_smp__word *p)
{
    uint32_t v = *p;
    COLL_SMP_BARRIER();        /* later accesses stay after the load        */
    return v;
}
static void coll_smp__store(coll_smp__word *p, uint32_t v)
{
    COLL_SMP_BARRIER();        /* earlier accesses are done before it       */
    *p = v;
}
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L && \
      !defined(__STDC_NO_ATOMICS__) && !defined(__cplusplus)
#include <stdatomic.h>
typedef _Atomic uint32_t coll_smp__word;
static uint32_t coll_smp__load(coll_smp__word *p)
{
    return atomic_load_explicit(p, memory_order_acquire);
}
static void coll_smp__store(coll_smp__word *p, uint32_t v)
{
    atomic_store_explicit(p, v, memory_order_release);
}
#else
#error "coll_smp_mailbox.h: build as C11 (<stdatomic.h>), or define COLL_SMP_BARRIER() as a full memory barrier, e.g. -DCOLL_SMP_BARRIER()=__DMB() on Cortex-M, -DCOLL_SMP_BARRIER()=__sync_synchronize() with GCC or Clang"
#endif

enum { COLL_SMP__FREE, COLL_SMP__SEND, COLL_SMP__RECV };
enum { COLL_SMP__MAGIC = 0x636f6c6cu };      /* "coll": format was here      */

/* The block's header line: magic, geometry, the failed word. */
#define COLL_SMP__W_MAGIC  0
#define COLL_SMP__W_NRANKS 1
#define COLL_SMP__W_NSLOTS 2
#define COLL_SMP__W_SLOT   3
#define COLL_SMP__W_FAILED 4

static coll_smp__word *coll_smp__hdr(unsigned char *mem, int w)
{
    return (coll_smp__word *)(void *)(mem + (size_t)w * sizeof(coll_smp__word));
}

/* The ring from -> to: head at +0, tail one line later, slots after. */
static unsigned char *coll_smp__ring(const coll_smp_mailbox *mb, int from, int to)
{
    size_t idx = (size_t)from * (size_t)(mb->nranks - 1) + (size_t)(to < from ? to : to - 1);
    size_t ring = 2u * COLL_SMP_LINE + (size_t)mb->nslots * mb->slot_bytes;
    return mb->mem + COLL_SMP_LINE + idx * ring;
}
#define COLL_SMP__HEAD(r) ((coll_smp__word *)(void *)(r))
#define COLL_SMP__TAIL(r) ((coll_smp__word *)(void *)((r) + COLL_SMP_LINE))

static unsigned char *coll_smp__slot(const coll_smp_mailbox *mb, unsigned char *ring, uint32_t n)
{
    return ring + 2u * COLL_SMP_LINE + (size_t)(n & (mb->nslots - 1)) * mb->slot_bytes;
}

COLL_SMP_MAILBOX_API size_t coll_smp_mailbox_bytes(int nranks, unsigned nslots, unsigned slot_bytes)
{
    if (nranks < 1 || nranks > COLL_SMP_MAX_RANKS || nslots < 2 || nslots > (1u << 20) ||
        (nslots & (nslots - 1)) || slot_bytes < 16 || slot_bytes % 8 || slot_bytes > (1u << 24))
        return 0;
    return COLL_SMP_MAILBOX_BYTES(nranks, nslots, slot_bytes);
}

COLL_SMP_MAILBOX_API int coll_smp_mailbox_format(void *mem, size_t bytes, int nranks,
                                                 unsigned nslots, unsigned slot_bytes)
{
    unsigned char *p = (unsigned char *)mem;
    size_t need = coll_smp_mailbox_bytes(nranks, nslots, slot_bytes), i;
    if (!mem || need == 0 || bytes < need || ((uintptr_t)mem & 7u)) return COLL_ERR_INVAL;
    for (i = 0; i < need; i++) p[i] = 0;      /* no memset when freestanding */
    coll_smp__store(coll_smp__hdr(p, COLL_SMP__W_NRANKS), (uint32_t)nranks);
    coll_smp__store(coll_smp__hdr(p, COLL_SMP__W_NSLOTS), nslots);
    coll_smp__store(coll_smp__hdr(p, COLL_SMP__W_SLOT), slot_bytes);
    coll_smp__store(coll_smp__hdr(p, COLL_SMP__W_MAGIC), COLL_SMP__MAGIC);   /* last */
    return COLL_OK;
}

COLL_SMP_MAILBOX_API int coll_smp_mailbox_init(coll_smp_mailbox *mb, void *mem, size_t bytes,
                                               int rank, int nranks, unsigned nslots,
                                               unsigned slot_bytes)
{
    unsigned char *p = (unsigned char *)mem, *z = (unsigned char *)mb;
    size_t need = coll_smp_mailbox_bytes(nranks, nslots, slot_bytes), i;
    if (!mb) return COLL_ERR_INVAL;
    for (i = 0; i < sizeof *mb; i++) z[i] = 0;
    mb->rank = -1;                            /* refused until the end */
    if (!mem || need == 0 || bytes < need || ((uintptr_t)mem & 7u) || rank < 0 || rank >= nranks)
        return COLL_ERR_INVAL;
    /* The block must be formatted with this very geometry. */
    if (coll_smp__load(coll_smp__hdr(p, COLL_SMP__W_MAGIC)) != COLL_SMP__MAGIC ||
        coll_smp__load(coll_smp__hdr(p, COLL_SMP__W_NRANKS)) != (uint32_t)nranks ||
        coll_smp__load(coll_smp__hdr(p, COLL_SMP__W_NSLOTS)) != nslots ||
        coll_smp__load(coll_smp__hdr(p, COLL_SMP__W_SLOT)) != slot_bytes)
        return COLL_ERR_INVAL;
    mb->mem = p;
    mb->rank = rank;
    mb->nranks = nranks;
    mb->nslots = nslots;
    mb->slot_bytes = slot_bytes;
    mb->spin_limit = 100000000ul;
    mb->timeout_ms = 10000ul;
    mb->now_ms = coll_smp__host_ms;           /* NULL where the host has no clock */
    return COLL_OK;
}

COLL_SMP_MAILBOX_API int coll_smp_mailbox_pending(const coll_smp_mailbox *mb)
{
    int h, n = 0;
    for (h = 0; h < COLL_SMP_OPS; h++) n += mb->op[h].kind != COLL_SMP__FREE;
    return n;
}

/* The failed word: 0, or a code's magnitude. */
static int coll_smp__failed(coll_smp_mailbox *mb)
{
    uint32_t f = coll_smp__load(coll_smp__hdr(mb->mem, COLL_SMP__W_FAILED));
    if (f == 0) return 0;
    return f < 4096u ? -(int)f : COLL_ERR_ABORTED;   /* garbage: still a failure */
}

/* This end is over: every transfer ends with `code`, now and later. */
static int coll_smp__break(coll_smp_mailbox *mb, int code)
{
    int h;
    if (!mb->error) mb->error = code;
    for (h = 0; h < COLL_SMP_OPS; h++) mb->op[h].kind = COLL_SMP__FREE;
    return mb->error;
}

/* Move what fits of send `s`: >0 slots filled, 0 none, <0 an error. */
static int coll_smp__push(coll_smp_mailbox *mb, coll_smp_op *s)
{
    unsigned char *ring = coll_smp__ring(mb, mb->rank, s->peer);
    uint32_t *head = &mb->head[s->peer];
    uint32_t used = *head - coll_smp__load(COLL_SMP__TAIL(ring));
    uint32_t payload = mb->slot_bytes - COLL_SMP_HEADER;
    int filled = 0;
    if (used > mb->nslots) return COLL_ERR_CORRUPT;   /* a tail we never gave */
    while (used < mb->nslots && s->moved < s->bytes) {
        unsigned char *slot = coll_smp__slot(mb, ring, *head);
        size_t left = s->bytes - s->moved;
        uint32_t hdr[2];
        hdr[0] = (uint32_t)s->bytes;
        hdr[1] = left < payload ? (uint32_t)left : payload;
        COLL_SMP_MEMCPY(slot, hdr, sizeof hdr);
        COLL_SMP_MEMCPY(slot + COLL_SMP_HEADER, s->buf + s->moved, hdr[1]);
        s->moved += hdr[1];
        coll_smp__store(COLL_SMP__HEAD(ring), ++*head);   /* publish the slot */
        used++;
        filled++;
        mb->slots_sent++;
    }
    return filled;
}

/* Take what has arrived for receive `s`: >0 slots emptied, 0 none, <0. */
static int coll_smp__pull(coll_smp_mailbox *mb, coll_smp_op *s)
{
    unsigned char *ring = coll_smp__ring(mb, s->peer, mb->rank);
    uint32_t *tail = &mb->tail[s->peer];
    uint32_t avail = coll_smp__load(COLL_SMP__HEAD(ring)) - *tail;
    uint32_t payload = mb->slot_bytes - COLL_SMP_HEADER;
    int emptied = 0;
    if (avail > mb->nslots) return COLL_ERR_CORRUPT;  /* more than the ring holds */
    while (avail > 0 && s->moved < s->bytes) {
        const unsigned char *slot = coll_smp__slot(mb, ring, *tail);
        size_t left = s->bytes - s->moved;
        uint32_t want = left < payload ? (uint32_t)left : payload, hdr[2];
        COLL_SMP_MEMCPY(hdr, slot, sizeof hdr);          /* read once, then check */
        if (hdr[0] != s->bytes) return COLL_ERR_MISMATCH; /* the sizes disagree */
        if (hdr[1] != want) return COLL_ERR_CORRUPT;
        if (s->fold)           /* reduced where it lies: no copy */
            s->fold(s->fold_arg, s->buf + s->moved, slot + COLL_SMP_HEADER, want), mb->bytes_folded += want;
        else
            COLL_SMP_MEMCPY(s->buf + s->moved, slot + COLL_SMP_HEADER, want);
        s->moved += want;
        coll_smp__store(COLL_SMP__TAIL(ring), ++*tail);   /* hand the slot back */
        avail--;
        emptied++;
    }
    return emptied;
}

/* One pass over this rank's transfers, oldest first per (kind, peer):
   >0 something moved, 0 nothing, <0 an error (this end is then over). */
static int coll_smp__progress(coll_smp_mailbox *mb)
{
    int h, moved = 0, rc;
    if (mb->error) return mb->error;
    if ((rc = coll_smp__failed(mb)) != 0) return coll_smp__break(mb, rc);
    for (h = 0; h < COLL_SMP_OPS; h++) {
        coll_smp_op *s = &mb->op[h];
        int k = s->kind - 1;
        if (s->kind == COLL_SMP__FREE || s->done || s->seq != mb->moving[k][s->peer]) continue;
        rc = s->kind == COLL_SMP__SEND ? coll_smp__push(mb, s) : coll_smp__pull(mb, s);
        if (rc < 0) return coll_smp__break(mb, rc);
        moved += rc;
        if (s->moved == s->bytes) {
            s->done = 1;
            mb->moving[k][s->peer]++;
            if (s->kind == COLL_SMP__SEND) { mb->msgs_sent++; mb->bytes_sent += s->bytes; }
            h = -1;            /* the next one of that peer may move now */
        }
    }
    return moved;
}

/* A wait's fruitless polls in a row, and the clock when they began. */
typedef struct coll_smp__waiting { unsigned long polls, since; } coll_smp__waiting;

/* A poll that moved nothing: count it, ask the hook, read the clock (every
   64th); COLL_ERR_TIMEOUT when one says stop. */
static int coll_smp__idle(coll_smp_mailbox *mb, coll_smp__waiting *w)
{
    int late;
    ++w->polls;
    if (mb->now_ms) {
        late = 0;
        if ((w->polls & 63u) == 1u) {
            unsigned long t = mb->now_ms(mb->user);
            if (w->polls == 1u) w->since = t;
            else late = mb->timeout_ms && t - w->since > mb->timeout_ms;   /* (wraps) */
        }
    } else {
        late = mb->spin_limit && w->polls > mb->spin_limit;
    }
    if (late || (mb->idle && mb->idle(mb->user, w->polls))) return coll_smp__break(mb, COLL_ERR_TIMEOUT);
    return 0;
}

static int coll_smp__post(coll_smp_mailbox *mb, int kind, int peer, const void *buf,
                          size_t bytes, coll_fold_fn fold, void *fold_arg, int *handle)
{
    coll_smp_op *s;
    int h;
    if (mb->error) return mb->error;
    if (peer < 0 || peer >= mb->nranks || peer == mb->rank || bytes == 0 || !buf || !handle ||
        bytes > 0xffffffffu)
        return COLL_ERR_INVAL;
    for (h = 0; h < COLL_SMP_OPS; h++)
        if (mb->op[h].kind == COLL_SMP__FREE) break;
    if (h == COLL_SMP_OPS) return COLL_AGAIN;          /* "cannot post now" */
    s = &mb->op[h];
    s->kind = (unsigned char)kind;
    s->done = 0;
    s->peer = (short)peer;
    s->result = 0;
    s->seq = mb->posted[kind - 1][peer]++;
    s->buf = (unsigned char *)(uintptr_t)buf;         /* a send only reads it */
    s->bytes = bytes;
    s->moved = 0;
    s->fold = fold;
    s->fold_arg = fold_arg;
    *handle = h;
    h = coll_smp__progress(mb);                       /* start at once */
    return h < 0 ? h : COLL_OK;
}

static int coll_smp__isend(void *ctx, int peer, const void *buf, size_t bytes, int *handle)
{
    return coll_smp__post((coll_smp_mailbox *)ctx, COLL_SMP__SEND, peer, buf, bytes, 0, 0, handle);
}

static int coll_smp__irecv(void *ctx, int peer, void *buf, size_t bytes, int *handle)
{
    return coll_smp__post((coll_smp_mailbox *)ctx, COLL_SMP__RECV, peer, buf, bytes, 0, 0, handle);
}

static int coll_smp__irecv_fold(void *ctx, int peer, void *buf, size_t bytes, coll_fold_fn fold,
                                void *arg, int *handle)
{
    if (!fold) return COLL_ERR_INVAL;
    return coll_smp__post((coll_smp_mailbox *)ctx, COLL_SMP__RECV, peer, buf, bytes, fold, arg, handle);
}

static int coll_smp__wait(void *ctx, int handle, int block)
{
    coll_smp_mailbox *mb = (coll_smp_mailbox *)ctx;
    coll_smp__waiting w = { 0, 0 };
    coll_smp_op *s;
    if (mb->error) return mb->error;
    if (handle < 0 || handle >= COLL_SMP_OPS || mb->op[handle].kind == COLL_SMP__FREE)
        return COLL_ERR_INVAL;
    s = &mb->op[handle];
    while (!s->done) {
        int rc = coll_smp__progress(mb);
        if (rc < 0) return rc;
        if (s->done) break;
        if (!block) return COLL_AGAIN;
        if (rc == 0 && (rc = coll_smp__idle(mb, &w)) < 0) return rc;
        if (rc > 0) w.polls = 0;
    }
    s->kind = COLL_SMP__FREE;
    return s->result;
}

/* Blocking forms: post (waiting for a free handle if need be), then wait. */
static int coll_smp__blocking(coll_smp_mailbox *mb, int kind, int peer, const void *buf, size_t bytes)
{
    coll_smp__waiting w = { 0, 0 };
    int h, rc;
    while ((rc = coll_smp__post(mb, kind, peer, buf, bytes, 0, 0, &h)) == COLL_AGAIN) {
        rc = coll_smp__progress(mb);                  /* free a handle */
        if (rc < 0 || (rc == 0 && (rc = coll_smp__idle(mb, &w)) < 0)) return rc;
        if (rc > 0) w.polls = 0;
    }
    return rc ? rc : coll_smp__wait(mb, h, 1);
}

static int coll_smp__send(void *ctx, int peer, const void *buf, size_t bytes)
{
    return coll_smp__blocking((coll_smp_mailbox *)ctx, COLL_SMP__SEND, peer, buf, bytes);
}

static int coll_smp__recv(void *ctx, int peer, void *buf, size_t bytes)
{
    return coll_smp__blocking((coll_smp_mailbox *)ctx, COLL_SMP__RECV, peer, buf, bytes);
}

COLL_SMP_MAILBOX_API void coll_smp_mailbox_abort(coll_smp_mailbox *mb, int code)
{
    coll_smp__word *f;
    if (!mb || !mb->mem) return;
    f = coll_smp__hdr(mb->mem, COLL_SMP__W_FAILED);
    code = code < 0 && code > -4096 ? code : COLL_ERR_ABORTED;
    if (coll_smp__load(f) == 0) coll_smp__store(f, (uint32_t)-code);
}

COLL_SMP_MAILBOX_API void coll_smp_mailbox_close(coll_smp_mailbox *mb)
{
    if (mb) mb->mem = 0;       /* nothing to free; the block is the caller's */
}

static void coll_smp__abort(void *ctx, int code)
{
    coll_smp_mailbox_abort((coll_smp_mailbox *)ctx, code);
}

/* coll_port.attach: the communicators over this end, counted. */
static int coll_smp__attach(void *ctx)
{
    return ((coll_smp_mailbox *)ctx)->attached++;
}

/* ---- windows: records and a sync count in the block (coll_window.h) ---- */

/* Rank r's window entry: its count, then its record a line later. */
static unsigned char *coll_smp__win(const coll_smp_mailbox *mb, int r)
{
    size_t rings = (size_t)mb->nranks * (size_t)(mb->nranks - 1) *
                   (2u * COLL_SMP_LINE + (size_t)mb->nslots * mb->slot_bytes);
    return mb->mem + COLL_SMP_LINE + rings + (size_t)r * COLL_SMP_WIN_BYTES;
}

COLL_SMP_MAILBOX_API int coll_smp_mailbox_set_window(coll_smp_mailbox *mb, void *base, size_t bytes)
{
    if (!mb || !mb->mem || !base || !bytes || (uintptr_t)base + bytes < (uintptr_t)base) return COLL_ERR_INVAL;
    mb->win_lo = (unsigned char *)base;
    mb->win_len = bytes;
    return COLL_OK;
}

/* Rank r's record slot for post number n (two apart: coll_port.window_inline). */
static unsigned char *coll_smp__wslot(const coll_smp_mailbox *mb, int r, uint32_t n)
{
    return coll_smp__win(mb, r) + COLL_SMP_LINE + (n & 1u) * COLL_SMP_REC_BYTES;
}

/* coll_port.window_post: the record, with the inl bytes in use, into this
   rank's entry (published by the next sync's release). */
static int coll_smp__window_post(void *ctx, const coll_window_rec *rec)
{
    coll_smp_mailbox *mb = (coll_smp_mailbox *)ctx;
    size_t inl = rec->inl_bytes < sizeof rec->inl ? rec->inl_bytes : sizeof rec->inl;
    unsigned char *to;
    int rc;
    if (mb->error) return mb->error;
    if ((rc = coll_smp__failed(mb)) != 0) return coll_smp__break(mb, rc);
    to = coll_smp__wslot(mb, mb->rank, mb->wposts++);
    COLL_SMP_MEMCPY(to, rec, offsetof(coll_window_rec, inl) + inl);
    COLL_SMP_MEMCPY(to + offsetof(coll_window_rec, inl_bytes), &inl, sizeof inl);
    return COLL_OK;
}

/* coll_port.window_sync: this rank's count up (a release), then every
   rank's count at least as far (acquires), waiting as a transfer does:
   the failed word, the idle hook, the deadline. Counts modulo 2^32. */
static int coll_smp__window_sync(void *ctx)
{
    coll_smp_mailbox *mb = (coll_smp_mailbox *)ctx;
    uint32_t mine;
    int r, rc;
    if (mb->error) return mb->error;
    mine = ++mb->wsyncs;
    coll_smp__store((coll_smp__word *)(void *)coll_smp__win(mb, mb->rank), mine);
    for (r = 0; r < mb->nranks; r++) {
        coll_smp__waiting w = { 0, 0 };
        coll_smp__word *c = (coll_smp__word *)(void *)coll_smp__win(mb, r);
        while ((int32_t)(coll_smp__load(c) - mine) < 0) {
            if ((rc = coll_smp__failed(mb)) != 0) return coll_smp__break(mb, rc);
            if ((rc = coll_smp__idle(mb, &w)) < 0) return rc;
        }
    }
    return COLL_OK;
}

/* Does [p, p + n) lie in the window region? (n = 0: nothing is touched.) */
static int coll_smp__in_window(const coll_smp_mailbox *mb, const void *p, size_t n)
{
    uintptr_t a = (uintptr_t)p, lo = (uintptr_t)mb->win_lo;
    return n == 0 || (a >= lo && a - lo <= mb->win_len && n <= mb->win_len - (a - lo));
}

/* coll_port.window_peer: rank r's post of the same number as ours,
   copied out of the block (so it cannot change once checked) and checked:
   its buffers in the region, its inl bytes in the record. */
static const coll_window_rec *coll_smp__window_peer(void *ctx, int r)
{
    coll_smp_mailbox *mb = (coll_smp_mailbox *)ctx;
    const unsigned char *from;
    coll_window_rec *w;
    if (r < 0 || r >= mb->nranks) return 0;
    w = &mb->wrec[r];
    from = coll_smp__wslot(mb, r, mb->wposts - 1u);
    COLL_SMP_MEMCPY(w, from, offsetof(coll_window_rec, inl));
    if (w->inl_bytes > sizeof w->inl) return 0;
    COLL_SMP_MEMCPY(w->inl, from + offsetof(coll_window_rec, inl), w->inl_bytes);
    if (!coll_smp__in_window(mb, w->src, w->src_bytes) || !coll_smp__in_window(mb, w->dst, w->dst_bytes))
        return 0;
    return w;
}

COLL_SMP_MAILBOX_API coll_port coll_smp_mailbox_port(coll_smp_mailbox *mb)
{
    coll_port p;
    int ok = mb && mb->mem && mb->rank >= 0;
    unsigned char *z = (unsigned char *)&p;
    size_t i;
    for (i = 0; i < sizeof p; i++) z[i] = 0;   /* members added later: absent */
    p.ctx = ok ? mb : 0;
    p.send = ok ? coll_smp__send : 0;
    p.recv = ok ? coll_smp__recv : 0;
    p.sendrecv = 0;
    p.isend = ok ? coll_smp__isend : 0;
    p.irecv = ok ? coll_smp__irecv : 0;
    p.wait = ok ? coll_smp__wait : 0;
    p.abort = ok ? coll_smp__abort : 0;
    p.irecv_fold = ok ? coll_smp__irecv_fold : 0;
    p.attach = ok ? coll_smp__attach : 0;
    if (ok && mb->win_len) {
        p.window_post = coll_smp__window_post;
        p.window_sync = coll_smp__window_sync;
        p.window_peer = coll_smp__window_peer;
        p.window_inline = 1;
    }
    p.max_bytes = 0;            /* the port cuts its own messages into slots;
                                   a post above 4 GiB - 1 is COLL_ERR_INVAL
                                   (HOW IT WORKS, in the header comment) */
    return p;
}

#endif /* COLL_SMP_MAILBOX_IMPLEMENTATION */
