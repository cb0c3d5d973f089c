/* coll_threads.h - N ranks as POSIX threads in one process, a port for coll.h

   USAGE
     In exactly one file:
         #define COLL_THREADS_IMPLEMENTATION
         #include "ports/coll_threads.h"
     (COLL_THREADS_STATIC makes every function static.) Then:

         static coll_threads w;                    caller-owned, ~1.5 MB
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

   THE IDEA: two roads between every ordered pair of ranks
     Small messages, which are what a latency-bound collective (and coll.h's
     call check) sends, go through a FAST BOX: a ring of cache-line slots
     that only the sender writes and only the receiver reads, so a message
     costs a copy in, a copy out, and the cache lines themselves moving
     between two cores - no lock, no system call. Everything else meets in
     RENDEZVOUS queues under a mutex, where one memcpy moves it straight
     from the sender's buffer into the receiver's. Every message carries its
     number on the pair, and every receive takes the number after the last
     one its rank posted from that peer; a message goes to the receive of
     the same number, whichever road it took. So the two roads may overtake
     each other freely and the pair's order still holds.

   THE FAST BOX (the idea of Open MPI's vader fast boxes)
     Pair src -> dst owns a ring of fb_slots slots of COLL_THREADS_FBOX_SLOT
     bytes: an 8-byte header (a stamp and a length) and the data. An isend
     of at most fb_max bytes takes ceil(bytes / (SLOT - 8)) consecutive
     slots if all are empty (the receiver is done with them), writes the
     data, the tail slots' "taken" marks and the length, and last the
     header's stamp (the message number, top bit set) with a release: it
     is then finished, and its wait returns COLL_OK without waiting for the
     receiver. The receiver reads the stamp at its place in the ring with an
     acquire, checks the length against the receive of that number (a
     difference is COLL_ERR_MISMATCH, told to the receiver alone, as for
     any eager send; coll.h then aborts the group), copies the data out and
     clears the stamps with a release, which hands the slots back. A
     receive of at most fb_max bytes is private: only its owner matches it,
     from its fast box or from its send queue (a small send finds the ring
     full, or is a blocking `send`, or the sizes disagree), so posting it
     takes no lock either. The pool of COLL_THREADS_FBOX_POOL slots (1 MiB)
     is shared by a world's n * n pairs: each gets min(COLL_THREADS_FBOX,
     POOL / n^2) slots (64 up to 16 ranks, 4 at 64), and fb_max is
     COLL_THREADS_FBOX_MAX (1024) or what that ring holds. A ring holds
     at least two of the largest fast messages: with room for one, a
     second message finds the ring full and waits, rendezvous, for its
     receiver to be scheduled (docs/benchmarks.md has the measurement).
     Cost: two copies, and each slot's cache line crossing between the two
     cores twice (to the receiver, and back when the sender reuses it); the
     receiver's `sleeping` word, which the sender reads after every
     message, sits on a line of its own and stays shared while nobody
     sleeps.

   RENDEZVOUS: a mailbox per ordered pair of ranks
     For every pair src -> dst there is a FIFO of posted sends and a FIFO of
     posted receives. Whoever posts second (sender or receiver) takes the
     oldest op of the other FIFO if it has the same number and copies
     straight from the sender's buffer into the receiver's buffer - one
     memcpy per message, no staging, done outside the lock - then marks
     both ops done and wakes their owners; a receiver that waits also
     matches the sends queued for it. A blocking send therefore completes
     only when its receiver has the data: `send` is synchronous, the
     hardest case for a collective's deadlock-freedom, and reports a size
     mismatch on both ends.

   PULL: the receiver copies what it receives
     Where every rank has a CPU of its own, a send of at least
     COLL_THREADS_PULL bytes that finds its receive posted does not copy:
     it queues, and the receiver, which is awake (a sleeping one gets the
     copy done for it as before), copies when it next waits. Otherwise a
     rank that came second to every pairing did the copies of both
     directions while its peer sat idle: in a ring step each rank sends and
     receives at once, and one CPU moved both blocks. With the receiver
     copying, each rank moves its own incoming bytes, and they land in the
     cache of the CPU that reads them next (the fold, the next step).
     Below COLL_THREADS_PULL the hand-off costs more than the copy. Ranks
     that outnumber the CPUs let the sender copy: a receiver may be
     waiting for a CPU, and a sender that holds one should finish the
     copy (docs/benchmarks.md has the figures). COLL_THREADS_PULL=0 or =1
     in the environment turns it off or on whatever the CPUs (the tests
     run both roads at every rank count).

   EAGER SMALL MESSAGES
     An isend of at most COLL_THREADS_EAGER bytes that cannot take the fast
     box (its ring is full) and finds no receive waiting copies its data
     into the op's own inline slot and is finished at once; the receiver
     later copies out of the slot and hands the slot back. The slot stays
     out of the pool until then, so eager sends are taken only while at
     least half the pool is free; past that, sends are rendezvous again and
     the pool still holds COLL_THREADS_MAX_OPS handles.

   LOCKS AND WAITING
     The queues of the pairs * -> dst are guarded by rank dst's mutex, which
     is also the mutex of rank dst's condition variable. An op's state is an
     atomic: the matcher writes the data and the result, then releases DONE;
     the owner acquires DONE and only then reuses the slot. A waiter first
     polls - its fast boxes, its send queues, its op - with the CPU's pause
     instruction, then a few rounds of sched_yield, then sleeps on its
     condition variable until a deadline; the clock is read around each
     yield and when the sleep begins, never while polling. A yield that
     lasted longer than COLL_THREADS_YIELD_US, while every rank has a CPU
     of its own, gave the CPU to another program for its time slice: the
     rank's next waits skip the yields and sleep, for a sleeper is woken,
     and runs, when its peer wants it (coll_threads__yield_once). Where
     ranks outnumber the CPUs a long yield is a rank of ours at work, and
     the yields stay. The polling budget adapts per rank:
     a wait answered after i polls sets it to 2i + COLL_THREADS_PAUSE_MIN
     (at most COLL_THREADS_PAUSE), one that had to yield halves it (down to
     COLL_THREADS_PAUSE_MIN), so a rank polls about as long as its peers
     have lately taken to answer. A rank does not poll at all for a peer
     that sleeps and that no one has woken since (`roused`: a woken peer
     is about to run, and answers within a wake-up), or that last waited
     on the CPU it runs on itself (it could not answer while we hold that
     CPU), nor when ranks outnumber the online
     CPUs: oversubscribed ranks never busy-wait one another out of a core.
     A fast-box message needs no lock, so a poll answers it sooner than a
     sched_yield would.
     Every waiter (but one whose op is done already) passes the messages
     of all its posted receives on, so a rendezvous send completes while
     its receiver waits for something else.
     Senders wake only a rank that says it is asleep: a sender publishes its
     stamp (or queues under the mutex), a matcher DONE, and the sleeper its
     `sleeping` count, each followed by a full fence, and the sleeper looks
     once more for anything to take before it sleeps, so one of them always
     sees the other. On expiry the whole world is marked failed and every
     sleeper woken, so peers report COLL_ERR_TIMEOUT at once instead of
     each waiting out its own deadline. An op that gives up is first taken
     out of its queue (or, if a copy into it is already under way, waited
     for), so no late copy ever touches a buffer its owner has been given
     back; a fast-box message whose receive was given up is dropped.
     A SHARED CPU: when a waiter finds that the peer last waited on its own
     CPU while the world has a CPU for every rank, it moves itself (Linux:
     sched_setaffinity to one allowed CPU where no rank of the world last
     waited, then straight back to its own mask - a nudge, not a binding)
     and polls. Without it, two ranks the kernel put on one CPU can stay
     there: both always runnable, every hand-off a sched_yield, the other
     CPU idle - where the CPUs share no cache the kernel knows of, a
     wake-up never looks for an idle CPU, and the load balancer does not
     move a thread that ran a moment ago. After a move, the next waits
     beside a peer must number twice as many as last time before it moves
     again (at most COLL_THREADS_PART_GAP), and a move that holds (4 x that
     many waits answered by polling) halves the pause again: where another
     program keeps the other CPU busy, the kernel puts the ranks back
     together at once, and moving at every hand-off would cost more than
     it saves.
     Binding: coll_threads_run leaves the rank threads where the scheduler
     puts them unless COLL_THREADS_BIND=1 is in the environment; then rank
     r keeps to the r-th allowed CPU when there are enough. Bound ranks
     never share a CPU, which helps small calls, but the rank whose CPU
     another program also uses runs at half speed and the other cannot
     take its place, which costs large ones more: so it is off by default.

   EPOCHS (coll_port.renew, for coll_comm_shrink)
     Every op carries its owner's epoch and every fast-box message its
     sender's (16 bits beside the slot's length). A receiver drops what
     an earlier epoch left - fast-box messages, eager sends, and
     rendezvous sends, which then end ABORTED - and leaves a later epoch's
     for when it gets there; a send matches a receive of its own epoch
     only. renew gives up the rank's ops, starts its message numbers
     again and takes back its eager sends that nobody received. The
     world's failure carries the epochs it covers (a word of them and a
     code, 32-bit atomics, set under a mutex): a timeout in epoch 0
     fails every rank of that epoch at once, a timeout in a renewed epoch
     only its op (coll.h's abort, after every error, still fails the epoch
     and gives up the rank's other ops), and coll_threads_abort every
     epoch.

   ZERO-COPY REDUCE (irecv_fold)
     A receive posted with irecv_fold carries coll.h's fold: wherever this
     port would copy the message into the receive's buffer - the matcher's
     memcpy from the sender's buffer or eager slot, the receiver's copy
     out of the fast box slot by slot - it calls the fold instead, so a
     reduction reads the peer's bytes where they lie and nothing lands in
     scratch. The fold runs in the matching thread (either rank's).

   COST: a small isend: two copies, no lock; a rendezvous message: one
   memcpy (or one fold), by the receiver from 4 KiB on (PULL), two or
   three uncontended lock/unlock pairs.

   CONFIGURATION (define before the implementation)
     COLL_THREADS_MAX_RANKS   64    ranks in a world
     COLL_THREADS_MAX_OPS     16    outstanding handles per rank (at most 32)
     COLL_THREADS_FBOX        64    most fast-box slots per pair (0: no fast box)
     COLL_THREADS_FBOX_POOL   16384 fast-box slots of a world, all pairs
     COLL_THREADS_FBOX_SLOT   64    bytes per slot (a multiple of 64), 8 of
                                    them its header
     COLL_THREADS_FBOX_MAX    1024  largest message by the fast box
     COLL_THREADS_EAGER       256   largest eager isend when the fast box is
                                    full, bytes (0: none)
     COLL_THREADS_PULL        4096  smallest rendezvous message the
                                    receiver copies (PULL; SIZE_MAX: none)
     COLL_THREADS_PAUSE       1024  most pause-instruction polls per wait
                                    (0: none; one pause is ~20 ns here)
     COLL_THREADS_PAUSE_MIN   64    fewest, while ranks have a CPU each
     COLL_THREADS_SPIN        64    sched_yield rounds before sleeping
     COLL_THREADS_YIELD_US    100   a yield that lasts longer means another
                                    program holds the CPU: the next waits
                                    sleep without yielding (LOCKS AND
                                    WAITING; 0: every yield, at any rank
                                    count: the sleeping road everywhere)
     COLL_THREADS_CALM        256   how many (doubling while it lasts)
     COLL_THREADS_PART_GAP    1023  most waits beside a peer on one CPU
                                    between two moves (A SHARED CPU)
   and at run time COLL_THREADS_BIND=1 (see LOCKS AND WAITING) and
   COLL_THREADS_PULL=0|1 (see PULL).
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
#if COLL_THREADS_MAX_RANKS > 0xfffe   /* a rank + 1 in 16 bits (`left`)   */
#error "COLL_THREADS_MAX_RANKS: at most 65534"
#endif
#define COLL_THREADS__LEFT 4           /* epochs whose waits and names it keeps */
#ifndef COLL_THREADS_MAX_OPS           /* outstanding handles per rank      */
#define COLL_THREADS_MAX_OPS 16
#endif
#if COLL_THREADS_MAX_OPS > 32          /* a bit each in a rank's `recvs`    */
#error "COLL_THREADS_MAX_OPS: at most 32"
#endif
#ifndef COLL_THREADS_FBOX              /* most fast-box slots per ordered   */
#define COLL_THREADS_FBOX 64           /* pair of ranks (0: no fast box)    */
#endif
#ifndef COLL_THREADS_FBOX_POOL         /* slots of a whole world, shared by */
#define COLL_THREADS_FBOX_POOL 16384   /* its n * n pairs (1 MiB)           */
#endif
#ifndef COLL_THREADS_FBOX_SLOT         /* bytes per slot, its 8-byte header */
#define COLL_THREADS_FBOX_SLOT 64      /* included: a multiple of 64        */
#endif
#ifndef COLL_THREADS_FBOX_MAX          /* largest message by the fast box:  */
#define COLL_THREADS_FBOX_MAX 1024     /* it takes ceil(bytes / (SLOT - 8)) slots */
#endif
#ifndef COLL_THREADS_EAGER             /* other isends up to this many bytes */
#define COLL_THREADS_EAGER 256         /* are copied into the op and done at once */
#endif
#ifndef COLL_THREADS_PAUSE             /* most pause-instruction polls per   */
#define COLL_THREADS_PAUSE 1024        /* wait (0: none; see WAITING)        */
#endif
#ifndef COLL_THREADS_PAUSE_MIN         /* fewest, while ranks have a CPU each */
#define COLL_THREADS_PAUSE_MIN 64
#endif
#ifndef COLL_THREADS_PULL              /* rendezvous messages of this many  */
#define COLL_THREADS_PULL 4096         /* bytes on: the receiver copies (PULL) */
#endif
#ifndef COLL_THREADS_SPIN              /* sched_yield rounds before sleeping */
#define COLL_THREADS_SPIN 64
#endif
#ifndef COLL_THREADS_YIELD_US          /* a yield longer than this: the */
#define COLL_THREADS_YIELD_US 100      /* CPU is another program's (CALM) */
#endif
#ifndef COLL_THREADS_CALM              /* waits that then skip the yields */
#define COLL_THREADS_CALM 256
#endif
#ifndef COLL_THREADS_PART_GAP          /* most waits beside a peer on its CPU */
#define COLL_THREADS_PART_GAP 1023     /* between two moves away (WAITING)   */
#endif

/* The bytes of a message one fast-box slot carries. */
#define COLL_THREADS__PIECE (COLL_THREADS_FBOX_SLOT - 8)

/* Cache-line alignment keeps a slot, and the word a sender reads on every
   message (a rank's `sleeping`), off lines that others write. */
#if defined(__GNUC__) || defined(__clang__)
#define COLL_THREADS__LINE __attribute__((aligned(64)))
#else
#define COLL_THREADS__LINE
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
    int fbox;                  /* went by the fast box: finished at post   */
    int priv;                  /* a small receive: only its owner matches it */
    int owned;                 /* the caller holds the handle (owner only) */
    short next;                /* next op of the same pair queue, -1 end   */
    unsigned seq;              /* the message's number on its pair (atomic:
                                  others peek at it without the lock)      */
    unsigned epoch;            /* its owner's epoch when posted (atomic)   */
    void *buf;                 /* const for sends                          */
    size_t bytes;
    coll_fold_fn fold;         /* a receive that folds instead of copying  */
    void *fold_arg;            /* (irecv_fold), or NULL                    */
#if COLL_THREADS_EAGER > 0
    unsigned char inl[COLL_THREADS_EAGER];   /* an eager send's copy      */
#endif
} coll_threads__op;

/* One fast-box slot: a stamp (0 empty, else the message number with the
   top bit set; atomic), the length (the sender's epoch in its top 16 bits,
   on a message's first slot), the bytes. */
typedef struct coll_threads__slot {
    unsigned stamp, len;
    unsigned char data[COLL_THREADS_FBOX_SLOT - 8];
} COLL_THREADS__LINE coll_threads__slot;

typedef struct coll_threads__rank {
    coll_threads *w;
    int rank;
    pthread_mutex_t m;         /* guards the queues of pairs * -> rank     */
    pthread_cond_t cv;         /* this rank's thread sleeps here           */
    int spin;                  /* pause-poll budget of the next wait (owner) */
    int waiting_on;            /* the peer of the wait it is in or gave up
                                  in, -1 none (atomic; written by the owner
                                  beside its other fields, read by the others
                                  only after a failure: coll_port.missing,
                                  not on the line the waiters poll)        */
    int calm, calm_len;        /* owner: waits left that skip the yield
                                  stage, and the length of the last such
                                  spell (see coll_threads__yield_once)     */
    int part_skip, part_gap, part_ok;   /* owner: waits beside a peer on
                                  this CPU to let pass before it next moves,
                                  that pause after the last move, and the
                                  waits answered by polling since (see
                                  coll_threads__part)                     */
    /* owner only: the next message number to and from each peer, and the
       next fast-box slot to write to and to read from each peer */
    unsigned sseq[COLL_THREADS_MAX_RANKS], rseq[COLL_THREADS_MAX_RANKS];
    unsigned fb_head[COLL_THREADS_MAX_RANKS], fb_tail[COLL_THREADS_MAX_RANKS];   /* < fb_slots */
    coll_threads__op ops[COLL_THREADS_MAX_OPS];
    unsigned long recvs;       /* owner only: handles of the receives it
                                  posted, a bit each, cleared once seen
                                  done (so a poll visits only those)      */
    int sleeping COLL_THREADS__LINE;   /* waiters on cv (atomic): wake only them */
    int roused;                /* woken, not yet running again (atomic): a
                                  peer polls for it as for one awake      */
    int cpu;                   /* where it last waited (atomic; -1 unknown) */
    int attached;              /* communicators coll_init put on this rank  */
    unsigned epoch;            /* the port's epoch at this rank (renew;
                                  atomic: written by the owner only)       */
    unsigned left[COLL_THREADS__LEFT];   /* waiting_on as it left each of
                                  its last epochs, slot epoch % LEFT: the
                                  epoch's low 16 bits, then waiting_on + 1
                                  (atomic: coll_port.missing reads a rank
                                  that moved on as it was then; a shrink
                                  moves on twice)                          */
    coll_window_rec win[2];    /* its last two window posts, slot posts % 2 */
    unsigned wposts;           /* window posts made (the owner's own)      */
    unsigned wsyncs COLL_THREADS__LINE;  /* window syncs entered (atomic)  */
} coll_threads__rank;

typedef struct coll_threads__queue { short head, tail; } coll_threads__queue;

struct coll_threads {
    int nranks;
    unsigned timeout_ms;
    int spin_max, spin_min;    /* the polling budget's bounds: PAUSE and
                                  PAUSE_MIN, both the minimum if ranks
                                  outnumber online CPUs                   */
    long yield_long_ns;        /* a yield this long or longer is another
                                  program's time slice (YIELD_US; 0: every
                                  yield; -1: none, ranks outnumber CPUs)  */
    int pull;                  /* every rank has a CPU: receivers copy
                                  messages of COLL_THREADS_PULL bytes on  */
    unsigned failed_upto;      /* the ranks in epochs below it fail every  */
    int failed;                /* call with this code (atomics; 32-bit, as
                                  every target has them lock-free)        */
    pthread_mutex_t fail_m;    /* orders the failures of two epochs       */
    unsigned named[COLL_THREADS__LEFT];  /* the rank each of the last
                                  epochs' first deadline named, slot epoch
                                  % LEFT: the epoch's low 16 bits, then the
                                  rank + 1 (atomic; coll_port.missing)    */
    unsigned fb_slots;         /* slots per pair: min(FBOX, FBOX_POOL / n^2) */
    size_t fb_max;             /* largest fast-box message (0: none)       */
    coll_threads__rank r[COLL_THREADS_MAX_RANKS];
    /* [src][dst]: sends posted by src, receives posted by dst */
    coll_threads__queue sendq[COLL_THREADS_MAX_RANKS][COLL_THREADS_MAX_RANKS];
    coll_threads__queue recvq[COLL_THREADS_MAX_RANKS][COLL_THREADS_MAX_RANKS];
#if COLL_THREADS_FBOX > 0
    /* pair src -> dst: slots [(src * nranks + dst) * fb_slots, ... + fb_slots) */
    coll_threads__slot fb[COLL_THREADS_FBOX_POOL];
#endif
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
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__) && defined(__GLIBC__) && (defined(__USE_MISC) || !defined(__cplusplus))
#include <sys/syscall.h>
#if defined(SYS_sched_getaffinity) && defined(SYS_sched_setaffinity)
#define COLL_THREADS__BIND 1
#ifndef __USE_MISC
extern long syscall(long, ...);        /* glibc's, hidden by strict POSIX */
#endif
#endif
#endif

/* glibc read its feature macros before POSIX was asked for (see USAGE). */
#if defined(__GLIBC__) && !defined(__USE_XOPEN2K)
#error "coll_threads.h needs POSIX.1-2008, which this strict ISO C build hides: include ports/coll_threads.h before any other header in this file, or compile with -D_POSIX_C_SOURCE=200809L"
#endif

#if defined(__GNUC__) && defined(COLL_THREADS_STATIC)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"   /* a user may call only some */
#endif

#if COLL_THREADS_FBOX > 0 && (COLL_THREADS_FBOX_SLOT < 64 || COLL_THREADS_FBOX_SLOT % 64 != 0)
#error "COLL_THREADS_FBOX_SLOT must be a multiple of 64 (a whole number of cache lines)"
#endif
#if COLL_THREADS_FBOX > 0 && (COLL_THREADS_FBOX_MAX < 1 || \
    COLL_THREADS_FBOX_MAX > COLL_THREADS_FBOX * (COLL_THREADS_FBOX_SLOT - 8))
#error "COLL_THREADS_FBOX_MAX must fit the ring: at most COLL_THREADS_FBOX * (COLL_THREADS_FBOX_SLOT - 8)"
#endif
#if COLL_THREADS_FBOX > 0 && COLL_THREADS_FBOX_MAX > 0xffff
#error "COLL_THREADS_FBOX_MAX: at most 65535 (a slot's length shares its word with the epoch)"
#endif
#if COLL_THREADS_FBOX > 0 && COLL_THREADS_FBOX_POOL < COLL_THREADS_FBOX
#error "COLL_THREADS_FBOX_POOL must hold at least one pair's COLL_THREADS_FBOX slots"
#endif

enum { COLL_THREADS__FREE, COLL_THREADS__POSTED, COLL_THREADS__BUSY, COLL_THREADS__DONE };

#define COLL_THREADS__LOAD(p)     __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define COLL_THREADS__STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
/* A queue's head is read without the lock (a hint: "something queued");
   every access is atomic, every change made under the lock. */
#define COLL_THREADS__QHEAD(q)       __atomic_load_n(&(q)->head, __ATOMIC_RELAXED)
#define COLL_THREADS__QSET(q, v)     __atomic_store_n(&(q)->head, (short)(v), __ATOMIC_RELAXED)
/* Message numbers are compared on 31 bits: the stamp's top bit says "full". */
#define COLL_THREADS__SEQ(s)      ((s) & 0x7fffffffu)
#define COLL_THREADS__STAMP(s)    (0x80000000u | COLL_THREADS__SEQ(s))
#define COLL_THREADS__OPSEQ(o)    COLL_THREADS__SEQ(__atomic_load_n(&(o)->seq, __ATOMIC_RELAXED))

static void coll_threads__wake(coll_threads__rank *r)
{
    __atomic_store_n(&r->roused, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&r->m);
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->m);
}

/* The matcher stores DONE (a sender its stamp) and then reads `sleeping`;
   a sleeper raises `sleeping` and then reads the state (the stamps), all
   sequentially consistent: in their one total order, either the sleeper
   sees the news or its publisher sees the sleeper (and wakes it under the
   mutex the sleeper holds). */
static void coll_threads__done(coll_threads__op *op)
{
    __atomic_store_n(&op->state, COLL_THREADS__DONE, __ATOMIC_SEQ_CST);
}

static void coll_threads__wake_if_asleep(coll_threads__rank *r)
{
    if (__atomic_load_n(&r->sleeping, __ATOMIC_SEQ_CST)) coll_threads__wake(r);
}

/* The CPU this thread runs on (glibc's vDSO call, a few ns), -1 unknown. */
#if defined(__linux__) && defined(__GLIBC__) && (defined(__USE_GNU) || !defined(__cplusplus))
#ifndef __USE_GNU
extern int sched_getcpu(void);
#endif
#define COLL_THREADS__CPU() sched_getcpu()
#else
#define COLL_THREADS__CPU() (-1)
#endif

static void coll_threads__pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
    __asm__ __volatile__("yield");
#endif
}

/* Marks the world failed (first code wins) and wakes every sleeper. */
/* Fails every call of the ranks in epochs below `upto` with `code` (the
   first failure of an epoch keeps its code) and wakes every sleeper. */
static void coll_threads__fail(coll_threads *w, int code, unsigned upto)
{
    int i;
    pthread_mutex_lock(&w->fail_m);
    if (__atomic_load_n(&w->failed_upto, __ATOMIC_RELAXED) < upto) {
        __atomic_store_n(&w->failed, code, __ATOMIC_RELAXED);      /* the code first, */
        __atomic_store_n(&w->failed_upto, upto, __ATOMIC_RELEASE); /* then the epochs */
    }
    pthread_mutex_unlock(&w->fail_m);
    for (i = 0; i < w->nranks; i++) coll_threads__wake(&w->r[i]);
}

/* 0, or the code this rank's calls fail with: a failure of its epoch (or
   of a later one, whose code then stands for it). */
static int coll_threads__failed(const coll_threads__rank *me)
{
    unsigned upto = __atomic_load_n(&me->w->failed_upto, __ATOMIC_ACQUIRE);
    return upto > __atomic_load_n(&me->epoch, __ATOMIC_RELAXED) ? __atomic_load_n(&me->w->failed, __ATOMIC_RELAXED) : 0;
}

/* Epochs compared on 16 bits (a fast-box slot's): -1 older than mine,
   0 mine, 1 newer. */
static int coll_threads__age(const coll_threads__rank *me, unsigned epoch)
{
    unsigned d = (__atomic_load_n(&me->epoch, __ATOMIC_RELAXED) - epoch) & 0xffffu;
    return d == 0 ? 0 : d < 0x8000u ? -1 : 1;
}
#define COLL_THREADS__OPEPOCH(o)  __atomic_load_n(&(o)->epoch, __ATOMIC_RELAXED)

#if COLL_THREADS_FBOX > 0
static coll_threads__slot *coll_threads__box(coll_threads *w, int src, int dst)
{
    return &w->fb[((size_t)src * (size_t)w->nranks + (size_t)dst) * w->fb_slots];
}

/* Slot index i (< 2 * fb_slots) on the ring. */
static unsigned coll_threads__wrap(const coll_threads *w, unsigned i)
{
    return i >= w->fb_slots ? i - w->fb_slots : i;
}

/* Slots a message of `bytes` takes (an empty one still needs its header). */
static unsigned coll_threads__nslots(size_t bytes)
{
    return bytes ? (unsigned)((bytes + COLL_THREADS__PIECE - 1) / COLL_THREADS__PIECE) : 1u;
}

/* Copies a message out of its slots, from slot `at` on (the ring wraps),
   or folds it in slot by slot (a receive posted by irecv_fold). */
static void coll_threads__slots_out(const coll_threads *w, const coll_threads__op *op,
                                    const coll_threads__slot *box, unsigned at, size_t bytes)
{
    unsigned char *d = (unsigned char *)op->buf;
    for (; bytes; at = coll_threads__wrap(w, at + 1)) {
        size_t n = bytes < COLL_THREADS__PIECE ? bytes : COLL_THREADS__PIECE;
        if (op->fold) op->fold(op->fold_arg, d, box[at].data, n);
        else memcpy(d, box[at].data, n);
        d += n;
        bytes -= n;
    }
}
#endif

/* The matched pair: one copy, then both ops done. The matcher owns `mine`
   and touches `other` (owned by rank `owner`) only until it releases DONE.
   An eager send (always `other`: a sender that comes second copies
   directly) has already been finished for its owner: its slot goes back
   to the pool (FREE) instead, and nobody needs waking. Messages are
   matched by number, so a size disagreement is the only mismatch. */
static void coll_threads__complete(coll_threads *w, coll_threads__op *mine,
                                   coll_threads__op *other, int owner)
{
    coll_threads__op *s = mine->is_send ? mine : other;
    coll_threads__op *d = mine->is_send ? other : mine;
    int rc = COLL_OK;
    if (s->bytes != d->bytes) rc = COLL_ERR_MISMATCH;
    else if (s->bytes && d->fold) d->fold(d->fold_arg, d->buf, s->buf, s->bytes);   /* zero-copy */
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

/* Takes op h (of rank `owner`) out of queue `qu`; the queue's mutex held. */
static void coll_threads__unlink(coll_threads__rank *owner, coll_threads__queue *qu, short h)
{
    short prev = -1, j = qu->head;
    while (j != h) { prev = j; j = owner->ops[j].next; }
    if (prev < 0) COLL_THREADS__QSET(qu, owner->ops[h].next);
    else owner->ops[prev].next = owner->ops[h].next;
    if (qu->tail == h) qu->tail = prev;
}

/* The next of my posted, unmatched receives among the handles in *m (a
   copy of me->recvs), or NULL; a handle found done, or reused for a send,
   leaves me->recvs. Owner only. */
static coll_threads__op *coll_threads__next_recv(coll_threads__rank *me, unsigned long *m)
{
    while (*m) {
        int k = __builtin_ctzl(*m);
        coll_threads__op *o = &me->ops[k];
        *m &= *m - 1;
        if (o->owned && !o->is_send && COLL_THREADS__LOAD(&o->state) == COLL_THREADS__POSTED)
            return o;
        me->recvs &= ~(1ul << k);
    }
    return NULL;
}

/* My posted, unmatched receive from `src` numbered `seq`, if any. */
static coll_threads__op *coll_threads__pending(coll_threads__rank *me, int src, unsigned seq)
{
    coll_threads__op *o;
    unsigned long m = me->recvs;
    while ((o = coll_threads__next_recv(me, &m)) != NULL)
        if (o->peer == src && COLL_THREADS__SEQ(o->seq) == seq) return o;
    return NULL;
}

/* Whether message `seq` from `src` is older than every receive this rank
   has posted from it, i.e. its receive was given up (a failing world). */
#if COLL_THREADS_FBOX > 0
static int coll_threads__orphan(coll_threads__rank *me, int src, unsigned seq)
{
    return COLL_THREADS__SEQ(seq - me->rseq[src]) >= 0x40000000u;
}
#endif

/* Takes the sends of earlier epochs off the head of src's queue to me
   (my mutex held): an eager one's slot goes back to its pool, another
   ends with COLL_ERR_ABORTED (its owner, in a failed epoch, is giving it
   up or gone). */
static void coll_threads__drop_stale(coll_threads__rank *me, int src)
{
    coll_threads *w = me->w;
    coll_threads__queue *sq = &w->sendq[src][me->rank];
    short hs;
    while ((hs = COLL_THREADS__QHEAD(sq)) >= 0 &&
           coll_threads__age(me, COLL_THREADS__OPEPOCH(&w->r[src].ops[hs])) < 0) {
        coll_threads__op *s = &w->r[src].ops[hs];
        COLL_THREADS__QSET(sq, s->next);
        if (s->next < 0) sq->tail = -1;
        if (s->eager) { COLL_THREADS__STORE(&s->state, COLL_THREADS__FREE); continue; }
        s->result = COLL_ERR_ABORTED;
        coll_threads__done(s);
    }
}

#if COLL_THREADS_FBOX > 0
/* The fast box of the pair src -> me: each message, in order, to my
   receive of its number (a large receive gets MISMATCH), or dropped if an
   earlier epoch's or its receive was given up; a later epoch's, or one
   whose receive is not posted yet, stops it. Returns how many it took. */
static int coll_threads__take_fbox(coll_threads__rank *me, int src)
{
    coll_threads *w = me->w;
    coll_threads__queue *rq = &w->recvq[src][me->rank];
    coll_threads__slot *box = coll_threads__box(w, src, me->rank);
    int n = 0;
    while (w->fb_slots) {
        unsigned t = me->fb_tail[src], k, j;
        coll_threads__slot *sl = &box[t];
        unsigned st = COLL_THREADS__LOAD(&sl->stamp), seq = COLL_THREADS__SEQ(st);
        size_t len;
        coll_threads__op *op;
        int age;
        if (!st) break;
        len = sl->len & 0xffffu;        /* the sender's, checked all the same */
        age = coll_threads__age(me, sl->len >> 16);
        if (age > 0) break;             /* a later epoch's: kept for it */
        k = coll_threads__nslots(len <= w->fb_max ? len : w->fb_max);
        op = age ? NULL : coll_threads__pending(me, src, seq);   /* an earlier one's: dropped */
        if (op && op->priv) {
            if (len != op->bytes) op->result = COLL_ERR_MISMATCH;
            else coll_threads__slots_out(w, op, box, t, len);
            COLL_THREADS__STORE(&op->state, COLL_THREADS__DONE);
        } else if (op) {                /* a large receive, a small message */
            pthread_mutex_lock(&me->m);
            if (COLL_THREADS__LOAD(&op->state) == COLL_THREADS__POSTED) {
                coll_threads__unlink(me, rq, (short)(op - me->ops));
                op->result = COLL_ERR_MISMATCH;
                COLL_THREADS__STORE(&op->state, COLL_THREADS__DONE);
            }
            pthread_mutex_unlock(&me->m);
        } else if (!age && !coll_threads__orphan(me, src, seq))
            break;                      /* its receive is not posted yet */
        for (j = 1; j < k; j++) COLL_THREADS__STORE(&box[coll_threads__wrap(w, t + j)].stamp, 0u);
        COLL_THREADS__STORE(&sl->stamp, 0u);
        me->fb_tail[src] = coll_threads__wrap(w, t + k);
        n++;
    }
    return n;
}
#endif

/* The receiver's half of matching, for the pair src -> me: hands fast-box
   messages to my receives of the same number, and queued sends to mine of
   the same number and epoch (a small receive is matched by its owner only,
   so this is where it meets a send that had to queue); sends of an
   earlier epoch at the queue's head are dropped. Returns how many
   messages it took. Called without the mutex. */
static int coll_threads__progress(coll_threads__rank *me, int src)
{
    coll_threads *w = me->w;
    coll_threads__queue *sq = &w->sendq[src][me->rank], *rq = &w->recvq[src][me->rank];
    int n = 0;
#if COLL_THREADS_FBOX > 0
    n = coll_threads__take_fbox(me, src);
#endif
    for (;;) {
        coll_threads__op *s = NULL, *d = NULL;
        short hs = COLL_THREADS__QHEAD(sq);
        if (hs >= 0 && coll_threads__age(me, COLL_THREADS__OPEPOCH(&w->r[src].ops[hs])) < 0) {
            pthread_mutex_lock(&me->m);
            coll_threads__drop_stale(me, src);
            pthread_mutex_unlock(&me->m);
            continue;
        }
        /* a look without the lock first: is the oldest queued send mine? */
        if (hs < 0 || coll_threads__age(me, COLL_THREADS__OPEPOCH(&w->r[src].ops[hs])) ||
            !coll_threads__pending(me, src, COLL_THREADS__OPSEQ(&w->r[src].ops[hs])))
            break;
        pthread_mutex_lock(&me->m);
        if ((hs = COLL_THREADS__QHEAD(sq)) >= 0) {
            s = &w->r[src].ops[hs];
            d = coll_threads__age(me, COLL_THREADS__OPEPOCH(s)) ? NULL
              : coll_threads__pending(me, src, COLL_THREADS__OPSEQ(s));
            if (d) {
                COLL_THREADS__QSET(sq, s->next);
                if (s->next < 0) sq->tail = -1;
                if (!d->priv) coll_threads__unlink(me, rq, (short)(d - me->ops));
                COLL_THREADS__STORE(&s->state, COLL_THREADS__BUSY);
                COLL_THREADS__STORE(&d->state, COLL_THREADS__BUSY);
            }
        }
        pthread_mutex_unlock(&me->m);
        if (!d) break;
        coll_threads__complete(w, d, s, src);
        n++;
    }
    return n;
}

/* Progress for every pair I have a receive posted on. */
static int coll_threads__progress_all(coll_threads__rank *me)
{
    coll_threads__op *o;
    unsigned long m = me->recvs;
    int n = 0;
    while ((o = coll_threads__next_recv(me, &m)) != NULL) n += coll_threads__progress(me, o->peer);
    return n;
}

/* Whether progress would take something now: the test a rank makes, with
   its mutex held and its `sleeping` raised, before it sleeps. Senders
   publish a stamp (seq_cst) and then read `sleeping`, or queue under this
   mutex and then read it, so nothing published after this test goes
   unseen. */
static int coll_threads__work(coll_threads__rank *me)
{
    coll_threads *w = me->w;
    coll_threads__op *o;
    unsigned long m = me->recvs;
    while ((o = coll_threads__next_recv(me, &m)) != NULL) {
        short hs;
#if COLL_THREADS_FBOX > 0
        if (w->fb_slots) {
            coll_threads__slot *sl = &coll_threads__box(w, o->peer, me->rank)[me->fb_tail[o->peer]];
            unsigned st = __atomic_load_n(&sl->stamp, __ATOMIC_SEQ_CST);
            if (st && coll_threads__age(me, sl->len >> 16) < 0) return 1;   /* to drop */
            if (st && !coll_threads__age(me, sl->len >> 16) &&
                (coll_threads__pending(me, o->peer, COLL_THREADS__SEQ(st)) ||
                 coll_threads__orphan(me, o->peer, st)))
                return 1;
        }
#endif
        hs = COLL_THREADS__QHEAD(&w->sendq[o->peer][me->rank]);
        if (hs >= 0 && coll_threads__age(me, COLL_THREADS__OPEPOCH(&w->r[o->peer].ops[hs])) < 0) return 1;
        if (hs >= 0 && !coll_threads__age(me, COLL_THREADS__OPEPOCH(&w->r[o->peer].ops[hs])) &&
            coll_threads__pending(me, o->peer, COLL_THREADS__OPSEQ(&w->r[o->peer].ops[hs])))
            return 1;
    }
    return 0;
}

/* Whether handle k is free for a new op (neither the caller's nor an eager
   send's slot still waiting for its receiver), and how many are. */
static int coll_threads__free(const coll_threads__rank *me, int k)
{
    return !me->ops[k].owned && COLL_THREADS__LOAD(&me->ops[k].state) == COLL_THREADS__FREE;
}

static int coll_threads__nfree(const coll_threads__rank *me)
{
    int k, n = 0;
    for (k = 0; k < COLL_THREADS_MAX_OPS; k++) n += coll_threads__free(me, k);
    return n;
}

/* Whether a send that finds its receive posted leaves the copy to the
   receiver (see PULL): a large message, every rank with a CPU of its own,
   and the receiver awake. Read under the receiver's mutex, which a rank
   holds to go to sleep, so a receiver that goes to sleep after this test
   sees the queued send first (coll_threads__work). */
static int coll_threads__pulls(const coll_threads *w, coll_threads__rank *q, size_t bytes)
{
    return w->pull && bytes >= (size_t)COLL_THREADS_PULL &&
           !__atomic_load_n(&q->sleeping, __ATOMIC_RELAXED);
}

#if COLL_THREADS_FBOX > 0
/* The fast-box road: send `op` (numbered already) through the pair's ring
   if its next slots are free - the tail slots first, each marked taken,
   the header last. Returns whether it went. */
static int coll_threads__fbox_send(coll_threads__rank *me, coll_threads__op *op, int dst)
{
    coll_threads *w = me->w;
    coll_threads__slot *box = coll_threads__box(w, me->rank, dst);
    const unsigned char *b = (const unsigned char *)op->buf;
    size_t bytes = op->bytes;
    unsigned hd = me->fb_head[dst], nk = coll_threads__nslots(bytes), j;
    for (j = 0; j < nk; j++)                     /* the receiver is done with them */
        if (COLL_THREADS__LOAD(&box[coll_threads__wrap(w, hd + j)].stamp)) return 0;
    for (j = 1; j < nk; j++) {
        size_t off = (size_t)j * COLL_THREADS__PIECE, n = bytes - off;
        coll_threads__slot *sl = &box[coll_threads__wrap(w, hd + j)];
        memcpy(sl->data, b + off, n < COLL_THREADS__PIECE ? n : COLL_THREADS__PIECE);
        __atomic_store_n(&sl->stamp, 1u, __ATOMIC_RELAXED);
    }
    if (bytes) memcpy(box[hd].data, b, bytes < COLL_THREADS__PIECE ? bytes : COLL_THREADS__PIECE);
    box[hd].len = (unsigned)bytes | (me->epoch & 0xffffu) << 16;
    __atomic_store_n(&box[hd].stamp, COLL_THREADS__STAMP(op->seq), __ATOMIC_SEQ_CST);
    me->fb_head[dst] = coll_threads__wrap(w, hd + nk);
    coll_threads__wake_if_asleep(&w->r[dst]);
    op->fbox = 1;
    return 1;
}
#endif

/* The rendezvous road, under the receiver's mutex: match the other side's
   oldest queued op if it has op's number and epoch (but a large send
   leaves an awake receiver to match it: PULL), else queue op - an eager
   send with its copy in the op (EAGER SMALL MESSAGES). */
static void coll_threads__meet(coll_threads__rank *me, coll_threads__op *op, int eager)
{
    coll_threads *w = me->w;
    int is_send = op->is_send, peer = op->peer, h = (int)(op - me->ops);
    int src = is_send ? me->rank : peer, dst = is_send ? peer : me->rank, owner = is_send ? dst : src;
    coll_threads__queue *theirs = is_send ? &w->recvq[src][dst] : &w->sendq[src][dst];
    coll_threads__queue *mine = is_send ? &w->sendq[src][dst] : &w->recvq[src][dst];
    coll_threads__rank *q = &w->r[dst];
    coll_threads__op *other = NULL;
    int k;
    pthread_mutex_lock(&q->m);
    if (!is_send) coll_threads__drop_stale(me, peer);   /* q is me */
    k = COLL_THREADS__QHEAD(theirs);
    if (k >= 0 && !(is_send && coll_threads__pulls(w, q, op->bytes)) &&
        COLL_THREADS__OPEPOCH(&w->r[owner].ops[k]) == op->epoch &&
        COLL_THREADS__OPSEQ(&w->r[owner].ops[k]) == COLL_THREADS__SEQ(op->seq)) {
        other = &w->r[owner].ops[k];           /* we are second: match */
        COLL_THREADS__QSET(theirs, other->next);
        if (other->next < 0) theirs->tail = -1;
        COLL_THREADS__STORE(&other->state, COLL_THREADS__BUSY);
        COLL_THREADS__STORE(&op->state, COLL_THREADS__BUSY);
    } else {                                    /* first (for this number): queue */
#if COLL_THREADS_EAGER > 0
        if (eager) { op->eager = 1; op->buf = op->inl; }
#endif
        COLL_THREADS__STORE(&op->state, COLL_THREADS__POSTED);
        if (mine->tail >= 0) me->ops[mine->tail].next = (short)h;
        else COLL_THREADS__QSET(mine, h);
        mine->tail = (short)h;
    }
    pthread_mutex_unlock(&q->m);
    if (other) coll_threads__complete(w, op, other, owner);
    else if (is_send) coll_threads__wake_if_asleep(q);   /* a private receive may want it */
}

/* Posts a send (to = peer) or a receive (from = peer). Every message gets
   the next number of its pair on the sender's side, every receive the next
   on the receiver's side, and a message goes to the receive of the same
   number (and epoch), whichever road it took:
   - a send of at most COLL_THREADS_FBOX_MAX bytes with `eager` set (an
     isend) goes by the fast box when the pair's next slot is free;
   - a receive of at most that many bytes is private: its owner matches it,
     from the fast box or from the pair's send queue (progress above);
   - everything else meets in the rendezvous queues (coll_threads__meet). */
static int coll_threads__post(coll_threads__rank *me, int is_send, int peer,
                              void *buf, size_t bytes, int eager, coll_fold_fn fold, void *fold_arg,
                              int *handle)
{
    coll_threads *w = me->w;
    coll_threads__op *op;
    int i, failed;
    if (peer < 0 || peer >= w->nranks || (bytes && !buf)) return COLL_ERR_INVAL;
    if ((failed = coll_threads__failed(me)) != 0) return failed;
    for (i = 0; i < COLL_THREADS_MAX_OPS && !coll_threads__free(me, i); i++) {}
    if (i == COLL_THREADS_MAX_OPS) return COLL_AGAIN;
    op = &me->ops[i];
    op->is_send = is_send; op->peer = peer; op->buf = buf; op->bytes = bytes;
    op->next = -1; op->result = COLL_OK; op->eager = 0; op->fbox = 0; op->priv = 0;
    op->fold = fold; op->fold_arg = fold_arg;
    __atomic_store_n(&op->epoch, me->epoch, __ATOMIC_RELAXED);
    *handle = i;
    if (is_send) {
        __atomic_store_n(&op->seq, me->sseq[peer]++, __ATOMIC_RELAXED);
#if COLL_THREADS_FBOX > 0
        if (eager && w->fb_slots && bytes <= w->fb_max && coll_threads__fbox_send(me, op, peer)) {
            op->owned = 1;
            return COLL_OK;
        }
#endif
    } else {
        __atomic_store_n(&op->seq, me->rseq[peer]++, __ATOMIC_RELAXED);
        me->recvs |= 1ul << i;
        if (bytes <= w->fb_max) {               /* private: its owner matches it */
            op->priv = 1;
            op->owned = 1;
            COLL_THREADS__STORE(&op->state, COLL_THREADS__POSTED);
            coll_threads__progress(me, peer);
            return COLL_OK;
        }
    }
    /* Eager only while half the pool stays free for the caller's handles;
       the copy is made before the lock, in case the send has to queue. */
    eager = eager && is_send && bytes <= (size_t)COLL_THREADS_EAGER &&
            coll_threads__nfree(me) > COLL_THREADS_MAX_OPS / 2;
#if COLL_THREADS_EAGER > 0
    if (eager) memcpy(op->inl, buf, bytes);
#endif
    coll_threads__meet(me, op, eager);
    op->owned = 1;
    return COLL_OK;
}

/* Sleep on cv (mutex held) unless `op` is done or the world failed. */
static int coll_threads__sleep(coll_threads__rank *me, coll_threads__op *op,
                               const struct timespec *deadline)
{
    int rc = 0;
    __atomic_fetch_add(&me->sleeping, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&op->state, __ATOMIC_SEQ_CST) != COLL_THREADS__DONE &&
        !coll_threads__failed(me) && !coll_threads__work(me))
        rc = deadline ? pthread_cond_timedwait(&me->cv, &me->m, deadline)
                      : pthread_cond_wait(&me->cv, &me->m);
    __atomic_store_n(&me->roused, 0, __ATOMIC_RELAXED);
    __atomic_fetch_sub(&me->sleeping, 1, __ATOMIC_SEQ_CST);
    return rc;
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

    /* An eager or fast-box send is out of the caller's hands already: it
       was delivered as far as the sender can tell (an eager op's slot
       returns to the pool when the receiver takes it, or never, if the
       world is failing). A private receive nobody else can touch. */
    op->owned = 0;
    if (op->eager || op->fbox) return COLL_OK;
    if (op->priv) {
        rc = COLL_THREADS__LOAD(&op->state) == COLL_THREADS__DONE ? op->result : code;
        COLL_THREADS__STORE(&op->state, COLL_THREADS__FREE);
        return rc;
    }
    pthread_mutex_lock(&q->m);
    if (COLL_THREADS__LOAD(&op->state) == COLL_THREADS__POSTED) {
        coll_threads__unlink(me, qu, (short)h);
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

/* Gives up every op this rank still owns (after a failure, at renew). */
static void coll_threads__give_up_all(coll_threads__rank *me, int code)
{
    int i;
    for (i = 0; i < COLL_THREADS_MAX_OPS; i++)
        if (me->ops[i].owned) (void)coll_threads__cancel(me, i, code);
}

/* The world failed while this rank waited on `h`: give up h and every
   other op this rank still owns. coll.h keeps two segments in flight and
   does not wait for the rest of a failed collective, so a receive left
   posted could otherwise be matched by a sender that saw the world alive a
   moment before, and filled after the call returned its error. */
static int coll_threads__give_up(coll_threads__rank *me, int h, int code)
{
    int rc = coll_threads__cancel(me, h, code);
    coll_threads__give_up_all(me, code);
    return rc;
}

/* One word of `left` or `named`: a rank (or -1) tagged with the low 16
   bits of the epoch it is for; read back for epoch e, the rank, or -1
   where the word is another epoch's (or says nobody). */
static unsigned coll_threads__tag(unsigned e, int rank) { return (e & 0xffffu) << 16 | (unsigned)(rank + 1); }
static int coll_threads__untag(unsigned word, unsigned e)
{
    return word >> 16 == (e & 0xffffu) ? (int)(word & 0xffffu) - 1 : -1;
}

static void coll_threads__name(coll_threads__rank *me, int peer);

/* Who this rank waits for, for coll_port.missing: set when a wait finds
   its operation not done, cleared when a wait completes; a wait that
   gives up leaves it, so the chain of waits outlives the failure. */
static void coll_threads__waiting(coll_threads__rank *me, int peer)
{
    if (__atomic_load_n(&me->waiting_on, __ATOMIC_RELAXED) != peer)
        __atomic_store_n(&me->waiting_on, peer, __ATOMIC_RELEASE);
}

static int coll_threads__is_done(coll_threads__op *op)
{
    return COLL_THREADS__LOAD(&op->state) == COLL_THREADS__DONE;
}

/* Moves this thread off `cpu` to an allowed CPU where no rank of the
   world last waited, and gives it its own mask back at once: a nudge, not
   a binding (the kernel stays free to move it again). Returns whether it
   moved. */
static int coll_threads__move(coll_threads__rank *me, int cpu)
{
#ifdef COLL_THREADS__BIND
    enum { W = 8 * sizeof(unsigned long), N = 1024 / W };
    unsigned long mask[N], one[N];
    coll_threads *w = me->w;
    int c, k;
    memset(mask, 0, sizeof mask);
    if (syscall(SYS_sched_getaffinity, 0, sizeof mask, mask) <= 0) return 0;
    for (c = 0; c < (int)(N * W); c++) {
        if (c == cpu || !((mask[c / W] >> (c % W)) & 1u)) continue;
        for (k = 0; k < w->nranks; k++)
            if (__atomic_load_n(&w->r[k].cpu, __ATOMIC_RELAXED) == c) break;
        if (k < w->nranks) continue;           /* a rank waits there already */
        memset(one, 0, sizeof one);
        one[c / W] = 1ul << (c % W);
        /* Say where first: the peer takes this CPU the moment we leave
           it, and must not read the old one and follow us there. */
        __atomic_store_n(&me->cpu, c, __ATOMIC_SEQ_CST);
        if (syscall(SYS_sched_setaffinity, 0, sizeof one, one) != 0) {
            __atomic_store_n(&me->cpu, cpu, __ATOMIC_RELAXED);
            return 0;
        }
        syscall(SYS_sched_setaffinity, 0, sizeof mask, mask);
        __atomic_store_n(&me->cpu, COLL_THREADS__CPU(), __ATOMIC_RELAXED);
        return 1;
    }
#else
    (void)me; (void)cpu;
#endif
    return 0;
}

/* The peer last waited on this very CPU, and the world has a CPU for each
   rank: every hand-off would cost a sched_yield (two per call), for both
   stay runnable on the one CPU, and the kernel may leave the other CPU
   idle for tens of milliseconds (a machine whose CPUs share no cache the
   kernel knows of never looks for an idle CPU at a wake-up). So move
   away, unless the last move was lately: after each move, let twice as
   many waits beside a peer pass before the next (at most PART_GAP). A
   move that holds - 4 x that pause in waits answered by polling - halves
   the pause (coll_threads__held); one that the kernel undoes at once (a
   CPU busy with another program) keeps it long. Returns whether it moved. */
static int coll_threads__part(coll_threads__rank *me, int cpu)
{
    if (me->part_skip > 0) { me->part_skip--; return 0; }
    me->part_gap = me->part_gap >= COLL_THREADS_PART_GAP / 2 ? COLL_THREADS_PART_GAP : 2 * me->part_gap + 1;
    me->part_skip = me->part_gap;
    me->part_ok = 0;
    return coll_threads__move(me, cpu);
}

/* A wait answered by polling: the ranks run apart; count it towards
   shortening the pause between moves. */
static void coll_threads__held(coll_threads__rank *me)
{
    if (me->part_gap && ++me->part_ok >= 4 * me->part_gap) {
        me->part_gap /= 2;
        if (me->part_skip > me->part_gap) me->part_skip = me->part_gap;
        me->part_ok = 0;
    }
}

/* The polling stage of a blocking wait, with a budget that follows how
   the last waits ended; but not for a peer that sleeps, or last ran on
   this very CPU: it cannot answer while we hold the CPU. */
static void coll_threads__poll(coll_threads__rank *me, coll_threads__op *op)
{
    coll_threads *w = me->w;
    int cpu = COLL_THREADS__CPU(), budget = me->spin, i;
    coll_threads__rank *peer = &w->r[op->peer];
    if (__atomic_load_n(&me->cpu, __ATOMIC_RELAXED) != cpu)
        __atomic_store_n(&me->cpu, cpu, __ATOMIC_RELAXED);
    if (cpu >= 0 && __atomic_load_n(&peer->cpu, __ATOMIC_RELAXED) == cpu) {
        if (!coll_threads__part(me, cpu)) budget = 0;   /* moved: poll */
    } else if (__atomic_load_n(&peer->sleeping, __ATOMIC_RELAXED) &&
               !__atomic_load_n(&peer->roused, __ATOMIC_RELAXED))
        budget = 0;                             /* asleep, and no one woke it */
    for (i = 0; i < budget; i++) {
        coll_threads__progress_all(me);
        if (coll_threads__is_done(op)) break;
        coll_threads__pause();
    }
    if (i < budget) {
        /* answered after i polls: allow twice that next time, so the
           budget follows the peer's latency rather than its ceiling */
        int want = 2 * i + w->spin_min;
        me->spin = want > w->spin_max ? w->spin_max : want;
        coll_threads__held(me);
    } else if (budget && me->spin > w->spin_min) {
        me->spin /= 2;
        if (me->spin < w->spin_min) me->spin = w->spin_min;
    }
}

/* One sched_yield, *t the clock before it and after it; 1 when it lasted
   yield_long_ns or longer. A yield hands the CPU to whoever else can run:
   where every rank has a CPU of its own no rank of ours held it, and
   another program gives it back only at the end of its time slice (a
   millisecond or more); where ranks outnumber the CPUs a long yield is a
   rank of ours at its work, and yields are how they take turns (none is
   judged). After a long yield the rank's next waits skip the yield stage
   and sleep, for a sleeper is woken, and runs, when its peer wants it:
   COLL_THREADS_CALM waits, twice as many as the last spell when the first
   yield after it is long again (at most COLL_THREADS__CALM_MAX), CALM
   again once the yields are short. */
#define COLL_THREADS__CALM_MAX (1 << 16)
static int coll_threads__yield_once(coll_threads__rank *me, struct timespec *t)
{
    struct timespec a = *t;
    sched_yield();
    clock_gettime(CLOCK_MONOTONIC, t);
    if (me->w->yield_long_ns < 0 ||
        (long)(t->tv_sec - a.tv_sec) * 1000000000L + (t->tv_nsec - a.tv_nsec) < me->w->yield_long_ns)
        return 0;
    me->calm_len = !me->calm_len ? COLL_THREADS_CALM
                 : me->calm_len < COLL_THREADS__CALM_MAX ? 2 * me->calm_len : me->calm_len;
    me->calm = me->calm_len;
    return 1;
}

/* The yield stage of a blocking wait: up to COLL_THREADS_SPIN rounds of a
   look and a yield, none while the rank is calm (coll_threads__yield_once). */
static void coll_threads__yield(coll_threads__rank *me, coll_threads__op *op)
{
    struct timespec t;
    int i;
    if (me->calm > 0) { me->calm--; return; }
    clock_gettime(CLOCK_MONOTONIC, &t);
    for (i = 0; i < COLL_THREADS_SPIN; i++) {
        coll_threads__progress_all(me);
        if (coll_threads__is_done(op)) break;
        if (coll_threads__yield_once(me, &t)) return;
    }
    if (i > 0) me->calm_len = 0;              /* every yield was short */
}

/* The last stage of a blocking wait: sleep until op is done, the epoch
   fails or the deadline passes. 0, or the failure. */
static int coll_threads__sleep_until_done(coll_threads__rank *me, coll_threads__op *op)
{
    coll_threads *w = me->w;
    struct timespec deadline;
    int failed = 0;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += w->timeout_ms / 1000;
    deadline.tv_nsec += (long)(w->timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) { deadline.tv_sec++; deadline.tv_nsec -= 1000000000L; }
    for (;;) {
        int slept;
        coll_threads__progress_all(me);
        if (coll_threads__is_done(op)) return 0;
        if ((failed = coll_threads__failed(me)) != 0) return failed;
        pthread_mutex_lock(&me->m);
        slept = coll_threads__sleep(me, op, &deadline);
        pthread_mutex_unlock(&me->m);
        if (slept == ETIMEDOUT) {
            coll_threads__progress_all(me);
            return coll_threads__is_done(op) ? 0 : COLL_ERR_TIMEOUT;
        }
    }
}

/* Wait for op h: poll, yield, then sleep to the deadline (see LOCKS AND
   WAITING); block 0 looks once. */
static int coll_threads__wait(void *ctx, int h, int block)
{
    coll_threads__rank *me = (coll_threads__rank *)ctx;
    coll_threads__op *op;
    int rc, failed;

    if (h < 0 || h >= COLL_THREADS_MAX_OPS) return COLL_ERR_INVAL;
    op = &me->ops[h];
    if (!op->owned) return COLL_ERR_INVAL;
    if (op->eager || op->fbox) { op->owned = 0; return COLL_OK; }   /* finished at post */
    if (!coll_threads__is_done(op)) coll_threads__progress_all(me);
    if (!coll_threads__is_done(op)) coll_threads__waiting(me, op->peer);
    if (block && me->spin > 0 && !coll_threads__is_done(op)) coll_threads__poll(me, op);
    if (block && !coll_threads__is_done(op)) coll_threads__yield(me, op);
    if (!coll_threads__is_done(op)) {
        failed = block ? coll_threads__sleep_until_done(me, op) : coll_threads__failed(me);
        if (!block && !failed) return COLL_AGAIN;
        if (failed) {
            /* epoch 0 fails the world at once and gives up every op; a
               renewed epoch's timeout is this op's own (coll.h aborts
               after every error, which gives up the rest) */
            if (failed == COLL_ERR_TIMEOUT) coll_threads__name(me, op->peer);
            if (failed == COLL_ERR_TIMEOUT && me->epoch) return coll_threads__cancel(me, h, failed);
            if (failed == COLL_ERR_TIMEOUT) coll_threads__fail(me->w, failed, 1);
            return coll_threads__give_up(me, h, failed);
        }
    }
    coll_threads__waiting(me, -1);
    rc = op->result;
    op->owned = 0;
    COLL_THREADS__STORE(&op->state, COLL_THREADS__FREE);
    return rc;
}

static int coll_threads__isend(void *ctx, int peer, const void *buf, size_t bytes, int *h)
{
    return coll_threads__post((coll_threads__rank *)ctx, 1, peer, (void *)buf, bytes, 1, 0, 0, h);
}

static int coll_threads__irecv(void *ctx, int peer, void *buf, size_t bytes, int *h)
{
    return coll_threads__post((coll_threads__rank *)ctx, 0, peer, buf, bytes, 0, 0, 0, h);
}

/* A receive whose bytes are folded into buf (coll.h's zero-copy reduce)
   wherever the match finds them: the sender's buffer, its eager slot,
   the fast box's slots one by one. */
static int coll_threads__irecv_fold(void *ctx, int peer, void *buf, size_t bytes, coll_fold_fn fold,
                                    void *arg, int *h)
{
    return coll_threads__post((coll_threads__rank *)ctx, 0, peer, buf, bytes, 0, fold, arg, h);
}

/* Blocking calls post then wait; a full op pool means handles were leaked.
   The blocking send is never eager (nor by the fast box): it returns once
   the receiver has the data (and so sees a size mismatch too). */
static int coll_threads__send(void *ctx, int peer, const void *buf, size_t bytes)
{
    int h, rc = coll_threads__post((coll_threads__rank *)ctx, 1, peer, (void *)buf, bytes, 0, 0, 0, &h);
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

/* A switch from the environment: `name`=0 or =1, else `dflt`. Read once,
   at init (COLL_THREADS_PULL) or when a rank starts (COLL_THREADS_BIND). */
static int coll_threads__env_flag(const char *name, int dflt)
{
    const char *e = getenv(name);
    if (e && (e[0] == '0' || e[0] == '1') && e[1] == 0) return e[0] == '1';
    return dflt;
}

COLL_THREADS_API int coll_threads_init(coll_threads *w, int nranks, unsigned timeout_ms)
{
    pthread_condattr_t ca;
    int i, j;
    long ncpu;
    int crowded;
    if (!w || nranks < 1 || nranks > COLL_THREADS_MAX_RANKS) return COLL_ERR_INVAL;
    /* the fast boxes beyond this world's n * n rings stay untouched */
#if COLL_THREADS_FBOX > 0
    memset(w, 0, offsetof(coll_threads, fb));
    w->fb_slots = COLL_THREADS_FBOX_POOL / ((unsigned)nranks * (unsigned)nranks);
    if (w->fb_slots > COLL_THREADS_FBOX) w->fb_slots = COLL_THREADS_FBOX;
    w->fb_max = (size_t)w->fb_slots * COLL_THREADS__PIECE;
    if (w->fb_max > COLL_THREADS_FBOX_MAX) w->fb_max = COLL_THREADS_FBOX_MAX;
    memset(w->fb, 0, (size_t)nranks * (size_t)nranks * w->fb_slots * sizeof w->fb[0]);
#else
    memset(w, 0, sizeof *w);
#endif
    w->nranks = nranks;
    w->timeout_ms = timeout_ms ? timeout_ms : 10000;
    /* Polling, and receivers copying large messages (PULL), pay only while
       every rank can have a CPU of its own; COLL_THREADS_PULL=0|1 says
       never or always (the tests take both roads). */
    ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    crowded = ncpu > 0 && nranks > ncpu;
    w->spin_min = COLL_THREADS_PAUSE_MIN < COLL_THREADS_PAUSE ? COLL_THREADS_PAUSE_MIN : COLL_THREADS_PAUSE;
    w->spin_max = COLL_THREADS_PAUSE;
    if (crowded) w->spin_min = w->spin_max = 0;
    w->yield_long_ns = COLL_THREADS_YIELD_US == 0 ? 0 : crowded ? -1 : COLL_THREADS_YIELD_US * 1000L;
    w->pull = coll_threads__env_flag("COLL_THREADS_PULL", !crowded);
    pthread_mutex_init(&w->fail_m, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    for (i = 0; i < nranks; i++) {
        w->r[i].w = w;
        w->r[i].rank = i;
        w->r[i].spin = w->spin_max;
        w->r[i].cpu = -1;
        w->r[i].waiting_on = -1;
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
    if (w->nranks) pthread_mutex_destroy(&w->fail_m);
    w->nranks = 0;
}

COLL_THREADS_API void coll_threads_close(coll_threads *w) { coll_threads_destroy(w); }

/* The port's abort: a rank whose collective failed wakes every waiter. */
static void coll_threads__abort_port(void *ctx, int code)
{
    coll_threads__rank *me = (coll_threads__rank *)ctx;
    (void)code;
    coll_threads__fail(me->w, COLL_ERR_ABORTED, me->epoch + 1);
    coll_threads__give_up_all(me, COLL_ERR_ABORTED);   /* nothing lands after the call's error */
}

/* coll_port.renew: this rank moves to `epoch` (see EPOCHS). Its own ops
   are given up, its message numbers start again, and its eager sends
   that no receiver took come back to the pool. */
static int coll_threads__renew(void *ctx, uint32_t epoch)
{
    coll_threads__rank *me = (coll_threads__rank *)ctx;
    coll_threads *w = me->w;
    int d;
    coll_threads__give_up_all(me, COLL_ERR_ABORTED);
    __atomic_store_n(&me->left[me->epoch % COLL_THREADS__LEFT],
                     coll_threads__tag(me->epoch, __atomic_load_n(&me->waiting_on, __ATOMIC_RELAXED)), __ATOMIC_RELEASE);
    __atomic_store_n(&me->epoch, epoch, __ATOMIC_RELEASE);
    memset(me->sseq, 0, sizeof me->sseq);
    memset(me->rseq, 0, sizeof me->rseq);
    me->recvs = 0;
    for (d = 0; d < w->nranks; d++) {
        coll_threads__queue *sq = &w->sendq[me->rank][d];
        short h, next;
        pthread_mutex_lock(&w->r[d].m);
        for (h = sq->head; h >= 0; h = next) {
            coll_threads__op *o = &me->ops[h];
            next = o->next;
            if (coll_threads__age(me, COLL_THREADS__OPEPOCH(o)) < 0) {
                coll_threads__unlink(me, sq, h);
                COLL_THREADS__STORE(&o->state, COLL_THREADS__FREE);
            }
        }
        pthread_mutex_unlock(&w->r[d].m);
    }
    return COLL_OK;
}

/* Whom rank q waited for in epoch e, -1 nobody or not known: its wait
   now while it is in e (read between two looks at its epoch, so that a
   wait of its next epoch is never taken for one of e), else the wait it
   left e in, for its last COLL_THREADS__LEFT epochs. */
static int coll_threads__waited(const coll_threads__rank *q, unsigned e)
{
    if (__atomic_load_n(&q->epoch, __ATOMIC_ACQUIRE) == e) {
        int on = __atomic_load_n(&q->waiting_on, __ATOMIC_ACQUIRE);
        if (__atomic_load_n(&q->epoch, __ATOMIC_ACQUIRE) == e) return on;
    }
    return coll_threads__untag(__atomic_load_n(&q->left[e % COLL_THREADS__LEFT], __ATOMIC_ACQUIRE), e);
}

/* From `peer`, follow who waits for whom (at most nranks hops, a cycle
   ends it) to the rank that waits for nobody, each rank as it was in
   this rank's epoch (one that renewed since, as it left it; one further
   on ends the chain). */
static int coll_threads__chain(coll_threads__rank *me, int peer)
{
    coll_threads *w = me->w;
    unsigned e = __atomic_load_n(&me->epoch, __ATOMIC_RELAXED);
    int hops, next;
    if (peer < 0 || peer >= w->nranks) return peer;
    for (hops = 0; hops < w->nranks; hops++) {
        next = coll_threads__waited(&w->r[peer], e);
        if (next < 0 || next >= w->nranks || next == peer) break;
        peer = next;
    }
    return peer;
}

/* The first deadline of an epoch names the rank it ran out on: the end of
   the chain from the peer waited for, read before the failure wakes
   anyone, while every other rank still waits where it waited. (Once the
   world fails, a rank woken between two waits waits for nobody, and a
   chain through it would end there.) The first name of an epoch stays. */
static void coll_threads__name(coll_threads__rank *me, int peer)
{
    coll_threads *w = me->w;
    unsigned *slot = &w->named[me->epoch % COLL_THREADS__LEFT];
    int m = coll_threads__chain(me, peer);
    if (m < 0 || m >= w->nranks) return;
    pthread_mutex_lock(&w->fail_m);
    if (coll_threads__untag(__atomic_load_n(slot, __ATOMIC_RELAXED), me->epoch) < 0)
        __atomic_store_n(slot, coll_threads__tag(me->epoch, m), __ATOMIC_RELEASE);
    pthread_mutex_unlock(&w->fail_m);
}

/* coll_port.missing: the rank this epoch's first deadline named, on every
   rank alike; before one (a failure the port saw no deadline of), the
   end of the chain of waits from `peer`. */
static int coll_threads__missing(void *ctx, int peer)
{
    coll_threads__rank *me = (coll_threads__rank *)ctx;
    unsigned e = __atomic_load_n(&me->epoch, __ATOMIC_RELAXED);
    int m = coll_threads__untag(__atomic_load_n(&me->w->named[e % COLL_THREADS__LEFT], __ATOMIC_ACQUIRE), e);
    return m >= 0 && m < me->w->nranks ? m : coll_threads__chain(me, peer);
}

/* ---- windows: every rank's memory is every rank's (coll_window.h) ----- */

/* coll_port.window_post: kept in this rank's entry of the world, where
   the others read it after the next sync; the last two posts apart
   (coll_port.window_inline), with the inl bytes in use. */
static int coll_threads__window_post(void *ctx, const coll_window_rec *rec)
{
    coll_threads__rank *me = (coll_threads__rank *)ctx;
    coll_window_rec *to = &me->win[me->wposts & 1];
    size_t inl = rec->inl_bytes < sizeof rec->inl ? rec->inl_bytes : sizeof rec->inl;
    int rc = coll_threads__failed(me);
    if (rc) return rc;
    memcpy(to, rec, offsetof(coll_window_rec, inl) + inl);
    to->inl_bytes = inl;
    me->wposts++;
    return COLL_OK;
}

/* A wait on rank `peer` is about to poll: where the peer last waited on
   this very CPU, move off it, as a message's wait does (coll_threads__poll). */
static void coll_threads__apart(coll_threads__rank *me, int peer)
{
    int cpu = COLL_THREADS__CPU();
    if (cpu < 0) return;
    if (__atomic_load_n(&me->cpu, __ATOMIC_RELAXED) != cpu) __atomic_store_n(&me->cpu, cpu, __ATOMIC_RELAXED);
    if (__atomic_load_n(&me->w->r[peer].cpu, __ATOMIC_RELAXED) == cpu) (void)coll_threads__part(me, cpu);
}

/* Polls of a window sync between two yields: few, since a peer that has
   not arrived is as likely to be waiting for this CPU as running on its
   own (the floor benchmark's barrier polls as few). */
#define COLL_THREADS__WIN_POLLS 16

/* coll_port.window_sync: this rank's count of syncs goes up (a release:
   its record and every store before it go with it), then it waits until
   every rank's count has reached it (acquires): a few polls, then a
   yield, again; after 64 yields, or one that lasted long, or from the
   start while the rank is calm (coll_threads__yield_once), naps of 50 us
   instead, so that ranks kept waiting long give their CPUs away; until
   the deadline or a failure (the clock read before the first yield and
   after each yield or nap: a sync nobody waits in reads none). A rank waited for is the port's
   `missing` answer as for a message. Counts compared modulo 2^32. */
static int coll_threads__window_sync(void *ctx)
{
    coll_threads__rank *me = (coll_threads__rank *)ctx;
    coll_threads *w = me->w;
    unsigned mine = __atomic_add_fetch(&me->wsyncs, 1, __ATOMIC_ACQ_REL);
    struct timespec start = { 0, 0 }, now = { 0, 0 }, nap = { 0, 50000 };
    int r, polls = 0, rc, naps = 0;
    for (r = 0; r < w->nranks; r++) {
        if ((int)(__atomic_load_n(&w->r[r].wsyncs, __ATOMIC_ACQUIRE) - mine) < 0) coll_threads__apart(me, r);
        while ((int)(__atomic_load_n(&w->r[r].wsyncs, __ATOMIC_ACQUIRE) - mine) < 0) {
            if ((rc = coll_threads__failed(me)) != 0) return rc;
            coll_threads__waiting(me, r);
            if (++polls % COLL_THREADS__WIN_POLLS) { coll_threads__pause(); continue; }
            if (polls == COLL_THREADS__WIN_POLLS) {          /* the deadline from the first yield */
                clock_gettime(CLOCK_MONOTONIC, &now);
                start = now;
                if (me->calm > 0) { me->calm--; naps = 1; }
            }
            if (polls < 64 * COLL_THREADS__WIN_POLLS && !naps) naps = coll_threads__yield_once(me, &now);
            else { nanosleep(&nap, 0); clock_gettime(CLOCK_MONOTONIC, &now); }   /* long, or calm */
            if ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 >=
                (long)w->timeout_ms) {
                coll_threads__name(me, r);
                return COLL_ERR_TIMEOUT;
            }
        }
    }
    coll_threads__waiting(me, -1);
    return coll_threads__failed(me);
}

/* coll_port.window_peer: rank `peer`'s post of the same number as our
   last (between two syncs). */
static const coll_window_rec *coll_threads__window_peer(void *ctx, int peer)
{
    coll_threads__rank *me = (coll_threads__rank *)ctx;
    return peer >= 0 && peer < me->w->nranks ? &me->w->r[peer].win[(me->wposts - 1) & 1] : 0;
}

/* coll_port.attach: the communicators over this rank's end, counted. */
static int coll_threads__attach(void *ctx)
{
    return ((coll_threads__rank *)ctx)->attached++;
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
    p.irecv_fold = coll_threads__irecv_fold;
    p.attach = coll_threads__attach;
    p.missing = coll_threads__missing;
    p.renew = coll_threads__renew;
    p.window_post = coll_threads__window_post;
    p.window_sync = coll_threads__window_sync;
    p.window_peer = coll_threads__window_peer;
    p.window_inline = 1;
    return p;
}

COLL_THREADS_API void coll_threads_abort(coll_threads *w)
{
    coll_threads__fail(w, COLL_ERR_ABORTED, 0xffffffffu);   /* every epoch */
}

typedef struct coll_threads__job {
    coll_threads *w;
    int rank, result;
    int (*fn)(int rank, void *arg);
    void *arg;
} coll_threads__job;

/* With COLL_THREADS_BIND=1 in the environment, rank r of nranks keeps to
   the r-th CPU it may use, when there are enough of them, as MPI launchers
   and coll_shm_spawn do. Off by default: see WAITING in the header. */
static void coll_threads__bind(int r, int nranks)
{
#ifdef COLL_THREADS__BIND
    enum { W = 8 * sizeof(unsigned long), N = 1024 / W };
    unsigned long mask[N], one[N];
    long got;
    int i, seen = 0;
    if (!coll_threads__env_flag("COLL_THREADS_BIND", 0)) return;
    memset(mask, 0, sizeof mask);
    got = syscall(SYS_sched_getaffinity, 0, sizeof mask, mask);
    if (got <= 0) return;
    for (i = 0; i < (int)(N * W); i++) seen += (int)((mask[i / W] >> (i % W)) & 1u);
    if (seen < nranks) return;          /* more ranks than CPUs: the scheduler's */
    for (i = 0, seen = 0; i < (int)(N * W); i++) {
        if (!((mask[i / W] >> (i % W)) & 1u) || seen++ != r) continue;
        memset(one, 0, sizeof one);
        one[i / W] = 1ul << (i % W);
        syscall(SYS_sched_setaffinity, 0, sizeof one, one);
        return;
    }
#else
    (void)r; (void)nranks;
#endif
}

static void *coll_threads__main(void *p)
{
    coll_threads__job *j = (coll_threads__job *)p;
    coll_threads__bind(j->rank, j->w->nranks);
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
