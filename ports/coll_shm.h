/* coll_shm.h - ranks as processes on one host sharing memory, a port for coll.h
                (Linux: mmap, futex, process_vm_readv)

   USAGE
     In exactly one file:
         #define COLL_SHM_IMPLEMENTATION
         #include "ports/coll_shm.h"
     The implementation uses POSIX and Linux calls (syscall, MAP_ANONYMOUS),
     which a strict -std=c99 or -std=c11 hides unless a feature-test macro
     asks for them. Where neither _GNU_SOURCE nor _DEFAULT_SOURCE is set,
     this header asks for _DEFAULT_SOURCE itself, which takes effect only if
     no system header has been read yet: so in the implementation file
     include ports/coll_shm.h first (it includes coll.h), or pass
     -D_DEFAULT_SOURCE (pkg-config coll-shm does). Too late on glibc stops
     the build with an #error that says so.

     Forked ranks (the launcher makes the shared memory, forks, supervises):
         static int body(int rank, coll_port *port, void *arg) { ... return 0; }
         int failed = coll_shm_spawn(4, body, arg, 2000);   4 ranks, 2 s deadline
       Where the launcher may use at least nranks cores, child r is bound
       to the r-th of them (as MPI launchers do; see coll_shm__bind);
       the environment variable COLL_SHM_BIND=0 leaves placement to the
       scheduler.

     Independently started ranks (any launcher: a shell loop, a job system):
         coll_shm s;  coll_port port;
         coll_shm_open(&s, "/myjob", rank, nranks, 2000, &port);
         ... collectives ...
         coll_shm_close(&s);
       Rank 0 creates the POSIX shared memory object `name` (O_EXCL, mode
       0600) and removes the name once everybody has joined, so nothing is
       left behind. If the name exists already, rank 0 looks at it first:
         - owned by another user, or open to group/others -> refused,
           COLL_SHM_ERR_ACCESS (joiners refuse it the same way);
         - left by a run whose creator has died (killed during the join)
           -> removed and made anew; joiners that find such a dead segment
           wait for the new one instead of joining it;
         - a live group's, or not a coll segment at all -> COLL_ERR_IO.
       Rank 0 reserves every page of the segment when it makes it
       (posix_fallocate): n x n x 133 KiB with the defaults, 2.1 MiB for 4
       ranks, 33 MiB for 16, 133 MiB for 32 (COLL_SHM_SLOTS=8 halves it).
       Where /dev/shm has less room (Docker's default
       is 64 MiB), every rank's coll_shm_open returns COLL_ERR_NOSPC with
       both sizes in s->why - never a SIGBUS at the first touch of a page
       past the room, which is what tmpfs does to a segment only sized by
       ftruncate. (Rank 0 tells the joiners through a 64-byte record under
       the name; where not even that fits, they time out, and their reason
       names both sizes too.)
       After a failed open, s->why holds a one-line reason.
       Two runs must not use one name at the same time.

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
     And the smallest - at most COLL_SHM_FBOX_MAX bytes, which is what a
     latency-bound collective and the call checks send - take neither:
       - the FAST BOX (the idea of Open MPI's vader fast boxes): pair
         src -> dst also owns COLL_SHM_FBOX cache lines; a message takes
         ceil(bytes / 52) consecutive ones if they are free: its data,
         its length, its epoch, and last its stamp (the message's number,
         top bit set), all in the lines themselves. The receiver copies the data
         out and clears the stamp, which hands the lines back. No
         counters, no slot header line apart from the data, no atomic
         read-modify-write: an 8-byte message is one cache line crossing
         to the receiver and back, and the send is over at once. Above
         512 bytes the ring's one contiguous copy per side wins over
         copying 56 bytes a line (2 ranks, checks off: 768 B 0.84 us by
         the box, 0.77 by the ring; 512 B 0.71 against 0.80).
     Every message carries its number on the pair (the ring's slots too),
     and a receive takes whichever road holds the next number it expects,
     so a small message may overtake a large one still filling the ring,
     or go by the ring when the box is full, and per-pair order still
     holds. A receive that finds the other road's message under its
     number, of another size, is COLL_ERR_MISMATCH as before.
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
     something else. Sends to one peer go into the ring whole and in
     posting order (a handle acts only when no older send is ahead of
     it); receives match messages by number, not by position. A
     fast-box send is finished when posted. Only live handles are
     visited (a bit mask), and posting reads no clock: the deadline
     restarts at the next clock read instead. A wait that fails ends
     every transfer still live with its error (coll_shm__cancel): coll.h
     does not wait for them, and nothing may land, or be folded, late.

   ZERO-COPY REDUCE (irecv_fold)
     coll.h posts a reduction step's receives with irecv_fold (its THE
     PORT). Such a receive copies nothing into its buffer: where the
     copying receive would memcpy out of a ring slot, it calls coll.h's
     fold on the slot's bytes where they lie, and only then hands the slot
     back (advances the tail). The peer's bytes are reduced straight from
     the segment, with no copy into scratch first. One piece a slot, in
     order: COLL_SHM_SLOT_BYTES is a multiple of 8 and every slot but a
     message's last is full, so each piece but the last is whole
     elements. A fast-box message (at most COLL_SHM_FBOX_MAX bytes) is
     gathered out of its 52-byte pieces into a private buffer and folded as
     one piece (a fold call per line cost more than the copy it saved); a
     CMA message, in the sender's private memory, comes through a bounce
     buffer on our stack, 8 KiB and one process_vm_readv at a time.
     Everything is checked before the fold sees it, as for a copy (see
     SHARED MEMORY IS UNTRUSTED): no byte outside the message or not yet
     published, and a receive of another size is refused before its first
     piece (every DATA slot carries its message's total size). A member
     that rewrites a slot after publishing it can make us fold garbage, as
     it can make us copy garbage; never read out of bounds.
     s->folded_box, folded_ring and folded_cma count the bytes folded.
     What it buys (ports/README.md has the table): 1-4 MiB all-reduces
     5-25% faster, small ones unchanged, but 64 KiB at 2 ranks ~10%
     slower on a loaded machine; a lower bound on folding would be
     coll.h's to set (a port cannot decline one message's fold).

   WAITING (ranks may outnumber cores, other programs may share them)
     A waiter goes through three stages, each only as long as the last one
     brought nothing; any progress puts it back to the first:
       1. spin: poll the rings, with a pause between polls - but only
          while a peer we wait on can answer: it is awake (not asleep on
          its futex) and last ran on another core, or we woke it a moment
          ago (2 x spin_max: it answers within a wake-up's latency). The
          clock is read every COLL_SHM__POLLS polls, not on every one (a
          clock read costs as much as a poll).
       2. yield: sched_yield and poll until COLL_SHM_YIELD_US have passed
          since the last progress. Where the rank we wait for shares our
          core (more ranks than cores, or the other cores busy with other
          programs), this hands it the core at once.
       3. sleep on a futex: each rank has a `bell` word that a peer
          increments, and wakes, whenever it publishes a message to that
          rank or frees one of its slots, if that rank said it is asleep
          (coll_shm__nudge has the ordering, and why the sleeper calls
          membarrier(2) so that a sender needs no fence).
     How long a spin: where every rank may have a core (ranks <= online
     cores; the ranks are the group's, or all of the job's on this machine
     once coll_shm_set_neighbours says how many), COLL_SHM_SPIN_US
     whenever the peer can answer; where ranks
     outnumber cores, an adaptive budget of at most 1 us: a spin that ends
     in progress doubles it, one that runs out halves it (down to
     COLL_SHM__SPIN_MIN). Spinning only for a peer that can answer ended
     a trap the adaptive budget alone fell into on a noisy machine: after
     a few slow answers both ranks' budgets sank to the minimum, each
     slept at every hand-off, and a sleeping peer answers no sooner than a
     futex wake-up - so every spin ran out again. 8 B all-reduces stayed at
     30-180 us per call (under `perf record` every time), where a waker
     that spins through the peer's wake-up gets 0.5 us again.
     (Before that, a rank spun 2000 polls, ~110 us, whoever held the other
     core: when another program held it, both ranks shared one core and
     every hand-off cost that spin, the bimodal 8 B times.)
     Sleeping is the dear stage here: a futex wake-up that must bring an
     idle core back costs ~50 us on the machine we test on (a hand-off by
     sched_yield on one core ~5 us, through memory between two running
     cores ~0.1 us), and once every rank on a core sleeps, the core idles.
     So a waiter yields for COLL_SHM_YIELD_US before it sleeps, and
     nothing else sends it to sleep sooner. (The port used to stop
     yielding for 50 ms - up to 5 s, doubling - after a yield that kept
     it off the core for a time slice, as another program's would: under
     other programs' load that left the ranks sleeping at every hand-off,
     and 4 ranks on 2 cores took 70 us per 8 B all-reduce where yielding
     takes 15; with a busy loop on one core, yielding was no slower.)
     Sleeps are cut into COLL_SHM_SLICE_MS slices; while it waits the
     waiter also checks (at every clock read)
       - the deadline: timeout_ms without any progress -> COLL_ERR_TIMEOUT,
         and (in epoch 0) the whole group is marked failed so the peers
         stop at once - a renewed epoch's deadline fails the operation
         alone (see EPOCHS);
       - the group's failed flag (set by a peer's timeout, or by the spawn
         launcher when a child dies) -> that code, e.g. COLL_ERR_ABORTED;
       - whether the peers it waits on are still alive (a dead or zombie
         process) -> COLL_ERR_IO.
     One loop runs every blocking wait through these stages, a message
     wait's and a window sync's (coll_shm__until): what it waits for
     comes as a predicate (coll_shm__pred: a poll, the checks at each
     clock read, the last look before a sleep); the pauses, the clock,
     the stages, where we run, the sleep and the wake-up are the loop's.
     A window sync's wait (on a peer's count, no transfer to tell whether
     that peer can answer) spins a fixed spin_max where every rank may
     have a core, not at all where ranks outnumber them, never adapting
     the budget, and then yields the whole COLL_SHM_YIELD_US.
     Joining is always bounded: timeout_ms, or COLL_SHM_JOIN_MS when
     timeout_ms is 0 (then only the collectives wait without a deadline).

   SHARED MEMORY IS UNTRUSTED
     Any member of the group can write any byte of the segment at any time
     (a bug, a stray pointer, a hostile process of the same user). So no
     value read from it is used before it is checked, and a bad one is an
     error that aborts the group, never an access out of bounds or an
     endless wait:
       - a slot's kind must be DATA, DATA|LAST or (only if CMA was agreed
         at join) CMA; a DATA slot's length 1..COLL_SHM_SLOT_BYTES, and
         all of it unless LAST; a counter at most COLL_SHM_SLOTS ahead of
         ours -> else COLL_ERR_IO; a DATA slot's total, or a CMA slot's
         size, must be the receive's -> else COLL_ERR_MISMATCH;
       - a fast-box stamp must have its top bit set, a length
         1..COLL_SHM_FBOX_MAX; the lines it covers are counted from that
         checked length, from our private index, modulo the box;
       - a message number (stamp or slot) must lie in the window a
         correct sender can reach: from our oldest possible open receive
         to COLL_SHM_FBOX + COLL_SHM_SLOTS past our newest; a message
         under way in the ring must keep its number -> else COLL_ERR_IO;
       - each field is read once into a local, so it cannot change between
         the check and the use;
       - our own ring counters, every peer's pid (for CMA and liveness),
         the run's nonce and whether CMA was agreed are private copies
         taken at join, never read back from shared memory;
       - a record's `cpu` and `sleeping` (see WAITING) are only compared:
         any value only decides whether a waiter spins;
       - the `failed` word: 0 is healthy; a code in [-4095, -1] is returned
         as it is; anything else (positive, or out of range) becomes
         COLL_ERR_ABORTED - never a positive value a caller would take for
         success or for COLL_AGAIN.
     The segment itself is created O_EXCL with mode 0600, and a name that
     is another user's or open to others is never joined. Each run writes
     a random nonce (getrandom, else /dev/urandom) and its creator's pid
     and start time into the header; every rank's record carries the
     nonce, so a record that is not this run's is caught at join. Not
     covered: a member that truncates the shared object while others map
     it (they get SIGBUS) - only processes that opened the name before rank
     0 removed it, all of the same user, could do that.

   EPOCHS (coll_port.renew: coll_comm_shrink goes on without the dead)
     A rank's end of the port runs in an epoch: 0 from the join, and
     renew(e) moves it to a later one, locally (it fails no one). Every
     message carries its sender's epoch beside its number (in a fast-box
     message's first line, in every ring slot), and message numbers start
     again from 0 in each epoch at both ends of every pair, so a pair that
     a given-up operation left out of step is in step again. At the front
     of each road from a peer, a receive meets a message of
       - an earlier epoch: dropped (its lines or its slot handed back, the
         positions kept), never delivered;
       - its own epoch: matched by number, as always;
       - a later epoch: held (the road left as it is) until this rank gets
         there - unless the sender's record says it is not there yet,
         which no correct sender does: COLL_ERR_IO.
     renew drops what earlier epochs left at the front of every road to
     this rank, and voids this rank's handles (coll.h has let go of them).
     Failure is per epoch: epoch 0 keeps the `failed` word exactly as
     before; a renewed epoch fails through `efail` (the epoch in its high
     half, the code in its low half; it only ever moves to a later
     epoch), and a rank in epoch e > 0 fails when efail names e or a later
     one (a rank in epoch 0 also when `failed` is set) - never for an
     earlier epoch's failure. In a renewed epoch a
     deadline or a dead peer fails the operation that met it and nothing
     else (the port marks no word); coll_shm_abort - and so coll.h's
     abort after a collective error - fails the caller's epoch for every
     rank in it, as in epoch 0. The epoch fields are read once and checked
     like every other field of the segment. coll_shm_spawn's supervision
     belongs to epoch 0 (it kills the children a deadline after any
     failure): a group that is to go on without a dead rank is started by
     name (coll_shm_open).

   WINDOWS (coll_port.window_post/sync/peer: coll_window.h; as MPI_Win_allocate_shared)
     With COLL_SHM_HEAP_BYTES > 0 the segment grows by a heap of that many
     bytes, cut into nranks equal parts (each rounded down to 64 bytes),
     and by a window entry a rank (a line, then two records of 9 words
     and a small call's input, COLL_WINDOW_INLINE bytes: 736 bytes in
     all). coll_shm_alloc(s, bytes) hands out 64-byte-aligned pieces of
     this rank's part (a bump
     allocation, private to the rank; coll_shm_alloc_reset frees them
     all); every rank can load and store every part, so coll_window.h's
     calls over buffers from it move no messages. The port then offers
     windows (where a part holds at least 64 bytes):
       - window_post writes this rank's record into its entry as offsets
         from the heap's start, never pointers (coll_shm_open's processes
         map the segment at different addresses; coll_shm_spawn's at one).
         A buffer the call touches outside the heap - on the stack, from
         malloc, NULL - makes the record declined: no buffers, no bytes,
         the call's sig; coll_window.h then runs coll.h's own call, by
         messages, on every rank. The post goes to slot posts % 2 of the
         entry, with the input of a call small enough to ride in it
         (coll_port.window_inline: such a call needs one sync, and its
         buffers may lie anywhere);
       - window_sync is a barrier of all ranks on a count per rank (a line
         of its own, sequentially consistent stores and loads): spin,
         yield, then sleep on the bell as WAITING says, bounded by
         timeout_ms (COLL_ERR_TIMEOUT, in epoch 0 for the whole group),
         ended by the group's failure (coll_shm__failed) or a rank that
         died before it came (COLL_ERR_IO);
       - window_peer copies a rank's record (the slot of our last post)
         out of the segment, every field read once, and checks that each
         offset and length lies in the heap (off <= heap, bytes <= heap -
         off: no overflow) and the input's length in the record; a
         record that does not is none (NULL), and coll_window.h fails the
         call on every rank. A rank - or any process of the user that
         maps the segment - can still make a call compute garbage, or
         write into another buffer of the heap, but never make a rank
         touch memory outside it.
     Without a heap (the default) the segment, the port and every
     behaviour are as they were: no windows.

   CONFIGURATION (define before including the implementation)
     COLL_SHM_SLOTS       slots per ordered pair                   (16)
                          (16 x 8 KiB holds a whole 128 KiB segment, the
                          scratch the README advises: against 8, 2 and 4
                          ranks, all-reduce and all-gather 64 KiB-64 MiB,
                          0.83x the time, 64 KiB all-reduce at 2 ranks
                          0.61x; the segment twice the size)
     COLL_SHM_SLOT_BYTES  staging bytes per slot, a multiple of 8   (8192)
     COLL_SHM_FBOX        fast-box lines (64 B) per ordered pair      (64)
                          (0: no fast box; 4 KiB a pair)
     COLL_SHM_FBOX_MAX    largest message by the fast box (at most
                          COLL_SHM_FBOX * 52)                        (512)
     COLL_SHM_CMA_MIN     default of s->cma_min            (SIZE_MAX: off)
     COLL_SHM_HANDLES     outstanding isend/irecv per rank (4..30)  (16)
     COLL_SHM_MAX_RANKS   largest group                             (256)
     COLL_SHM_SLICE_MS    sleep slice between liveness checks       (20)
     COLL_SHM_SPIN_US     longest spin before yielding               (50)
     COLL_SHM_YIELD_US    yielding, since the last progress, before
                          sleeping on the futex                      (100)
     COLL_SHM_JOIN_MS     join deadline when timeout_ms is 0     (60000)
     COLL_SHM_HEAP_BYTES  the segment's heap for windows, all ranks'
                          parts together (see WINDOWS)       (0: none)
     COLL_SHM_STATIC      make the functions static                 (off)

   LICENCE: MIT, as coll.h.
*/
/* Outside the include guard: it matters only before the first system header. */
#if defined(COLL_SHM_IMPLEMENTATION) && !defined(__cplusplus) && !defined(_GNU_SOURCE) && \
    !defined(_DEFAULT_SOURCE) && !defined(_BSD_SOURCE)
#define _DEFAULT_SOURCE 1
#endif

#ifndef COLL_SHM_H
#define COLL_SHM_H

#ifndef COLL_H
#include "coll.h"
#endif
#include <stddef.h>
#include <stdint.h>

#ifndef COLL_SHM_SLOTS
#define COLL_SHM_SLOTS 16
#endif
#ifndef COLL_SHM_SLOT_BYTES
#define COLL_SHM_SLOT_BYTES 8192
#endif
#ifndef COLL_SHM_FBOX                /* fast-box lines per ordered pair      */
#define COLL_SHM_FBOX 64             /* (0: no fast box)                     */
#endif
#ifndef COLL_SHM_FBOX_MAX            /* largest message by the fast box      */
#define COLL_SHM_FBOX_MAX 512
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
#ifndef COLL_SHM_SPIN_US
#define COLL_SHM_SPIN_US 50
#endif
#ifndef COLL_SHM_YIELD_US
#define COLL_SHM_YIELD_US 100
#endif
#ifndef COLL_SHM_JOIN_MS             /* joining never waits forever */
#define COLL_SHM_JOIN_MS 60000
#endif
#ifndef COLL_SHM_HEAP_BYTES          /* the segment's heap: windows (0: none) */
#define COLL_SHM_HEAP_BYTES 0
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
    uint32_t seq;              /* the message's number on its pair          */
    uint32_t cma_slot;         /* CMA send: the slot to see consumed        */
    int cma;                   /* CMA send published, waiting for the ack   */
    int finished;              /* 1: complete, result holds the outcome     */
    coll_fold_fn fold;         /* receive by irecv_fold: fold, not copy     */
    void *fold_arg;
} coll_shm__xfer;

/* The port's own code (errno-style, away from COLL_ERR_*): the name exists
   but is not safe to join - another user owns it, or group/others may
   access it. */
#define COLL_SHM_ERR_ACCESS (-13)

/* The process-private side of one rank. The shared layout is private to
   the implementation. */
typedef struct coll_shm {
    unsigned char *base;       /* the shared segment                        */
    size_t size;
    int rank, nranks;
    unsigned timeout_ms;       /* no progress for this long: TIMEOUT (0 = none) */
    size_t cma_min;            /* messages this large go by CMA if it works */
    int cma;                   /* 1: CMA was agreed at join; 0 turns this
                                  rank's CMA sends off                      */
    uint32_t spin_ns;          /* spin budget now (adapts, see WAITING)     */
    uint32_t spin_max;         /* its ceiling (ns)                          */
    int over;                  /* ranks outnumber the cores                 */
    int mb;                    /* every rank registered for membarrier: the
                                  sleeper fences, senders need not (see
                                  coll_shm__nudge)                          */
    int woke;                  /* we woke a peer lately (see WAITING)       */
    uint64_t woke_ns;          /* clock at the first read after that wake   */
    uint64_t turn_ns;          /* when we last said where we run            */
    uint32_t posted;           /* posting counter                           */
    uint32_t live;             /* bit h: handle h posted and not finished   */
    int fresh;                 /* posted since the last clock read: the
                                  deadline starts again at the next one     */
    uint64_t last_ms;          /* last progress (ms, monotonic)             */
    uint64_t check_ms;         /* last liveness check of the peers          */
    uint64_t probe;            /* a word peers read to test CMA             */
    const char *why;           /* after a failed open: why (else NULL)      */
    /* bytes irecv_fold's receives folded, by where they lay (counters for
       tests and benchmarks; CMA: through a bounce buffer, see ZERO-COPY) */
    uint64_t folded_box, folded_ring, folded_cma;
    /* Private copies taken at join of what a peer could otherwise change
       under us in the shared segment (see SHARED MEMORY IS UNTRUSTED). */
    uint64_t nonce;            /* this run's random id                      */
    int cma_agreed;            /* every pair passed the CMA probe           */
    int32_t pid[COLL_SHM_MAX_RANKS];   /* each rank's pid                   */
    uint32_t head[COLL_SHM_MAX_RANKS]; /* slots we have published to rank r */
    uint32_t tail[COLL_SHM_MAX_RANKS]; /* slots we have taken from rank r   */
    uint32_t sseq[COLL_SHM_MAX_RANKS]; /* number of our next message to r   */
    uint32_t rseq[COLL_SHM_MAX_RANKS]; /* number of our next receive from r */
    uint16_t bhead[COLL_SHM_MAX_RANKS];/* our next fast-box line towards r  */
    uint16_t btail[COLL_SHM_MAX_RANKS];/* next line to read in r's box to us */
    /* handles 0..COLL_SHM_HANDLES-1 for isend/irecv, two more for the
       blocking calls so they never find the table full */
    coll_shm__xfer x[COLL_SHM_HANDLES + 2];
    int attached;              /* communicators coll_init put on this port   */
    uint32_t epoch;            /* this end's epoch (0 from the join; renew)  */
    uint64_t polled;           /* what our record's `polled` says (a copy)   */
#if COLL_SHM_HEAP_BYTES > 0
    /* Windows (see WINDOWS): the heap as this process maps it, its size and
       this rank's part of it (from nranks, never from the segment), what
       coll_shm_alloc has handed out, this rank's window syncs so far, and
       the peers' records as window_peer last copied them out. */
    unsigned char *heap;
    size_t heap_bytes, part_bytes, heap_used;
    uint32_t wsyncs, wposts;
    coll_window_rec wpeer[COLL_SHM_MAX_RANKS];
#endif
    char why_buf[200];         /* where a reason with figures is written
                                  (last: the fields above keep their place) */
} coll_shm;

/* Forks nranks processes; each runs fn(rank, port, arg) over a fresh
   shared group and exits with 0 if fn returned 0. timeout_ms bounds every
   wait without progress (0 = none; the join still ends after
   COLL_SHM_JOIN_MS). The parent supervises: when a child
   fails, the group is marked aborted so the others return at once
   (COLL_ERR_ABORTED), and once the group has failed for any reason,
   children still running timeout_ms (1 s if 0) later are killed.
   Returns the number of children that failed (0 = all fine), or a negative
   code if the group could not be set up. */
COLL_SHM_API int coll_shm_spawn(int nranks, int (*fn)(int rank, coll_port *port, void *arg),
                                void *arg, unsigned timeout_ms);

/* Joins (rank 0: creates) the group `name` ("/something") and waits for all
   nranks to join, at most timeout_ms (0: COLL_SHM_JOIN_MS; later waits of
   the collectives then have no deadline). 0 or a negative code:
   COLL_ERR_TIMEOUT, COLL_SHM_ERR_ACCESS (unsafe object), COLL_ERR_IO (the
   name is a live group's or not a coll segment), COLL_ERR_MISMATCH
   (another nranks), COLL_ERR_NOSPC (/dev/shm has no room for the
   segment); s->why says which. */
COLL_SHM_API int coll_shm_open(coll_shm *s, const char *name, int rank, int nranks,
                               unsigned timeout_ms, coll_port *port);
COLL_SHM_API void coll_shm_close(coll_shm *s);
/* The lifecycle every port shares: coll_shm_init (coll_shm_open without the
   port), coll_shm_port, coll_shm_abort, coll_shm_close. */
COLL_SHM_API int coll_shm_init(coll_shm *s, const char *name, int rank, int nranks,
                               unsigned timeout_ms);
COLL_SHM_API coll_port coll_shm_port(coll_shm *s);
/* How many ranks of the job share this machine's CPUs, where that is more
   than the group's own (other groups beside it on one kernel: emulated
   hosts, containers); this rank's waits then spin as WAITING says for
   ranks that outnumber the cores once these do. Call it after init;
   COLL_ERR_INVAL for a count below the group's. */
COLL_SHM_API int coll_shm_set_neighbours(coll_shm *s, int ranks);

/* Marks the group failed with `code` (in [-4095, -1]; anything else is
   recorded as COLL_ERR_ABORTED): every rank's pending and later calls
   return it - in the caller's epoch, and in earlier ones; a rank that
   has renewed past it goes on (see EPOCHS). */
COLL_SHM_API void coll_shm_abort(coll_shm *s, int code);

COLL_SHM_API int coll_shm_send(void *ctx, int peer, const void *buf, size_t bytes);
COLL_SHM_API int coll_shm_recv(void *ctx, int peer, void *buf, size_t bytes);
COLL_SHM_API int coll_shm_sendrecv(void *ctx, int to, const void *sbuf, size_t sbytes,
                                   int from, void *rbuf, size_t rbytes);
COLL_SHM_API int coll_shm_isend(void *ctx, int peer, const void *buf, size_t bytes, int *handle);
COLL_SHM_API int coll_shm_irecv(void *ctx, int peer, void *buf, size_t bytes, int *handle);
COLL_SHM_API int coll_shm_wait(void *ctx, int handle, int block);
/* coll_port.irecv_fold: a receive folded where it lies (see ZERO-COPY). */
COLL_SHM_API int coll_shm_irecv_fold(void *ctx, int peer, void *buf, size_t bytes,
                                     coll_fold_fn fold, void *arg, int *handle);

/* `bytes` of this rank's part of the segment's heap (see WINDOWS), 64-byte
   aligned, for buffers that coll_window.h's calls load and store across
   processes; NULL when bytes is 0, the part is full, or there is no heap
   (COLL_SHM_HEAP_BYTES 0). With coll_shm_spawn, s is (coll_shm *)port->ctx.
   coll_shm_alloc_reset hands every allocation of this rank back at once. */
COLL_SHM_API void *coll_shm_alloc(coll_shm *s, size_t bytes);
COLL_SHM_API void coll_shm_alloc_reset(coll_shm *s);

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
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#if defined(SYS_futex)
#include <linux/futex.h>
#endif

/* glibc read its feature macros before the Linux calls were asked for. */
#if defined(__GLIBC__) && !defined(__USE_MISC)
#error "coll_shm.h needs _DEFAULT_SOURCE (syscall, MAP_ANONYMOUS), which this strict ISO C build hides: include ports/coll_shm.h before any other header in this file, or compile with -D_DEFAULT_SOURCE"
#endif

/* ---- the shared layout ---------------------------------------------------
   [group header][rank 0 .. n-1 records][channel 0->1][channel 0->2]...
   Everything starts zeroed (fresh mmap / ftruncate), which is a valid
   initial state: all rings empty, no rank joined. */

#define COLL_SHM__MAGIC 0x636f6c36u          /* "col6": this layout        */
#define COLL_SHM__LINE  64
#define COLL_SHM__STALE 2   /* internal: our segment is a dead run's; retry */

typedef struct coll_shm__group {
    uint32_t magic;            /* stored last by the creator: header complete */
    uint32_t nranks;
    uint32_t joined;           /* ranks that wrote their record               */
    uint32_t probed;           /* ranks that finished the CMA probe           */
    uint32_t no_cma;           /* 1: some pair cannot use process_vm_readv    */
    int32_t failed;            /* 0, or the code every call now returns       */
    int32_t creator;           /* pid of the process that made the segment    */
    uint32_t no_mb;            /* 1: some rank cannot use membarrier          */
    uint64_t creator_start;    /* its start time (/proc, ticks; 0: unknown)   */
    uint64_t nonce;            /* random, one per run                         */
    uint64_t efail;            /* a renewed epoch's failure: epoch << 32 |
                                  (uint32_t)code, 0 none; only ever moves to
                                  a later epoch (see EPOCHS)                */
} coll_shm__group;

/* Two lines: the first is read by a peer after every message it sends us
   and written only around a sleep (or when we move to another core), so
   it stays in every cache while nobody sleeps; the second is written at
   join only, but for `epoch` (at renew), `waiting`, `ewait` and `polled`,
   which only its own rank writes and the others read once a call has
   failed (or, `epoch`, when a message of a later epoch arrives). */
typedef struct coll_shm__rankrec {
    uint32_t bell;             /* futex word: bumped to wake this rank       */
    uint32_t sleeping;         /* 1 while this rank is (about to be) asleep  */
    int32_t cpu;               /* where it last ran: a hint for waiters only */
    unsigned char pad0[COLL_SHM__LINE - 12];
    int32_t pid;
    uint32_t epoch;            /* the epoch this rank is in (renew)          */
    uint64_t probe_addr;       /* address of a known word, for the CMA probe */
    uint64_t nonce;            /* the run's nonce: this record is this run's */
    int32_t waiting;           /* 1 + the peer of the wait this rank is in
                                  or gave up in, 0 none (coll_port.missing;
                                  written by its rank, read at a failure):
                                  epoch 0's                                 */
    uint32_t pad1;
    uint64_t ewait[2];         /* the same in renewed epoch e, at [e & 1]:
                                  e << 32 | (1 + peer), 0 none              */
    uint64_t polled;           /* how its entry stands: COLL_SHM__STANDS
                                  while it is in the blocking wait it names
                                  or gave up in it; else the CLOCK_MONOTONIC
                                  ms of the poll (wait(h, 0)) that left it:
                                  a poller silent for long waits no more   */
    unsigned char pad2[COLL_SHM__LINE - 56];
} coll_shm__rankrec;

/* What rank 0 leaves under the name when /dev/shm cannot hold the
   segment: the group header with `failed` set and both sizes, so that
   every joiner returns the same error and reason instead of waiting out
   its deadline. Its size is never a segment's (those are >= 192 bytes
   plus a channel). */
typedef struct coll_shm__noroom {
    coll_shm__group g;
    uint64_t need, room;       /* the segment's bytes, the free bytes there */
} coll_shm__noroom;

enum { COLL_SHM__DATA = 1, COLL_SHM__LAST = 2, COLL_SHM__CMA = 4 };

typedef struct coll_shm__slot {
    uint64_t bytes;            /* DATA: bytes in data[]; CMA: message size   */
    uint64_t addr;             /* CMA: the sender's buffer                   */
    uint32_t kind;             /* COLL_SHM__DATA [| LAST] or COLL_SHM__CMA   */
    uint32_t seq;              /* the message's number on the pair           */
    uint64_t total;            /* DATA: the whole message's size, so that a
                                  receive of another size is refused before
                                  its first byte is taken (or folded)       */
    uint32_t epoch;            /* the sender's epoch (see EPOCHS)            */
    unsigned char pad[COLL_SHM__LINE - 36];
    unsigned char data[COLL_SHM_SLOT_BYTES];
} coll_shm__slot;

/* A fast-box line: a message's first line holds its stamp (COLL_SHM__TOP
   | its number; 0 while the line is free), its length and its sender's
   epoch; the data runs on through the next lines, PIECE bytes each, their
   headers unused. */
#define COLL_SHM__PIECE (COLL_SHM__LINE - 12)
#define COLL_SHM__TOP   0x80000000u
#define COLL_SHM__SEQ   0x7fffffffu   /* message numbers: 31 bits, wrapping */
typedef struct coll_shm__box {
    uint32_t stamp;
    uint32_t len;
    uint32_t epoch;
    unsigned char data[COLL_SHM__PIECE];
} coll_shm__box;

typedef struct coll_shm__chan {
    uint32_t head;             /* written by the sender only                 */
    unsigned char pad0[COLL_SHM__LINE - 4];
    uint32_t tail;             /* written by the receiver only               */
    unsigned char pad1[COLL_SHM__LINE - 4];
#if COLL_SHM_FBOX > 0
    coll_shm__box box[COLL_SHM_FBOX];  /* stamps: set by the sender, cleared
                                          by the receiver                  */
#endif
    coll_shm__slot slot[COLL_SHM_SLOTS];
} coll_shm__chan;

#if COLL_SHM_FBOX > 0 && (COLL_SHM_FBOX_MAX < 1 || COLL_SHM_FBOX > 65535 || \
    COLL_SHM_FBOX_MAX > COLL_SHM_FBOX * COLL_SHM__PIECE)
#error "COLL_SHM_FBOX_MAX must fit the box: 1 .. COLL_SHM_FBOX * 52 (and COLL_SHM_FBOX <= 65535)"
#endif
#if COLL_SHM_SLOT_BYTES % 8 != 0
#error "COLL_SHM_SLOT_BYTES must be a multiple of 8: a fold's pieces are whole elements"
#endif
#if COLL_SHM_HANDLES < 4 || COLL_SHM_HANDLES > 30
#error "COLL_SHM_HANDLES must be 4 .. 30"
#endif

#define COLL_SHM__LOAD(p)      __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define COLL_SHM__STORE(p, v)  __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define COLL_SHM__SC_LOAD(p)   __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define COLL_SHM__SC_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
/* A full fence between processes. gcc's TSan (-Wtsan) warns that it does
   not model fences; the ones here order a process's accesses against
   other processes', which TSan, one process at a time, cannot see
   anyway, so under it the fence stays and the warning goes. */
#if defined(__SANITIZE_THREAD__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#define COLL_SHM__FENCE() do { _Pragma("GCC diagnostic push") \
    _Pragma("GCC diagnostic ignored \"-Wtsan\"") __atomic_thread_fence(__ATOMIC_SEQ_CST); \
    _Pragma("GCC diagnostic pop") } while (0)
#else
#define COLL_SHM__FENCE() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#endif
/* One read of a field a peer may rewrite at any moment: the value checked
   is the value used (the compiler may not load it a second time). */
#define COLL_SHM__ONCE32(p)    (*(volatile const uint32_t *)(p))
#define COLL_SHM__ONCE64(p)    (*(volatile const uint64_t *)(p))

static size_t coll_shm__hdr_bytes(int n)
{
    size_t h = (sizeof(coll_shm__group) + COLL_SHM__LINE - 1) / COLL_SHM__LINE * COLL_SHM__LINE;
    return h + (size_t)n * sizeof(coll_shm__rankrec);
}

#if COLL_SHM_HEAP_BYTES > 0
/* A rank's window entry, after the channels: its count of window syncs on
   a line of its own, then its last two records (slot posts % 2:
   coll_port.window_inline) - offsets from the heap's start
   (COLL_SHM__NOWHERE: NULL), never pointers, since coll_shm_open's
   processes map the segment at different addresses, and a small call's
   input. Written by its rank only; every field read once by the others,
   and checked. */
#define COLL_SHM__NOWHERE UINT64_MAX
typedef struct coll_shm__winrec {
    uint64_t src_off, dst_off;
    uint64_t src_bytes, dst_bytes;
    uint64_t sig[4];
    uint64_t inl_bytes;
    uint64_t inl[COLL_WINDOW_INLINE / 8 + 1];
} coll_shm__winrec;
typedef struct coll_shm__winent {
    uint32_t sync;             /* window syncs this rank has entered         */
    unsigned char pad0[COLL_SHM__LINE - 4];
    coll_shm__winrec rec[2];
} coll_shm__winent;

/* Bytes of the n window entries, up to a whole line (the heap follows). */
static size_t coll_shm__wents_bytes(int n)
{
    return ((size_t)n * sizeof(coll_shm__winent) + COLL_SHM__LINE - 1) / COLL_SHM__LINE * COLL_SHM__LINE;
}

/* Bytes of each rank's part of the heap: an equal share, 64-byte aligned. */
static size_t coll_shm__part_bytes(int n)
{
    return (size_t)COLL_SHM_HEAP_BYTES / (size_t)n / COLL_SHM__LINE * COLL_SHM__LINE;
}
#endif

/* Where the channels end: the window entries and the heap follow. */
static size_t coll_shm__chans_end(int n)
{
    return coll_shm__hdr_bytes(n) + (size_t)n * (size_t)n * sizeof(coll_shm__chan);
}

/* The segment's size: header, records, channels, and with a heap the
   window entries and the heap's nranks parts. */
static size_t coll_shm__bytes(int n)
{
#if COLL_SHM_HEAP_BYTES > 0
    return coll_shm__chans_end(n) + coll_shm__wents_bytes(n) + (size_t)n * coll_shm__part_bytes(n);
#else
    return coll_shm__chans_end(n);
#endif
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
   index arithmetic plain). src and dst are always our own rank and a peer
   number checked at posting, never values read from the segment. */
static coll_shm__chan *coll_shm__chan_of(const coll_shm *s, int src, int dst)
{
    return (coll_shm__chan *)(s->base + coll_shm__hdr_bytes(s->nranks)) +
           (size_t)src * (size_t)s->nranks + (size_t)dst;
}

/* The `failed` word as a result: 0 healthy, an errno-style negative code
   as it is, anything else (a positive value would read as success or as
   COLL_AGAIN, and spin a blocking caller forever) COLL_ERR_ABORTED. */
static int coll_shm__code(int32_t v)
{
    if (v == 0)
        return 0;
    return (v < 0 && v >= -4095) ? (int)v : COLL_ERR_ABORTED;
}

/* Has our epoch failed? Epoch 0: the `failed` word, as it always was; and
   in every epoch, `efail` when it names ours or a later one (a renewed
   epoch's failure; never an earlier epoch's). The word is one load, its
   two halves checked as any value from the segment. */
static int coll_shm__failed(const coll_shm *s)
{
    coll_shm__group *g = coll_shm__grp(s);
    uint64_t e;
    int rc;
    if (s->epoch == 0 && (rc = coll_shm__code(COLL_SHM__LOAD(&g->failed))) != 0)
        return rc;
    e = COLL_SHM__LOAD(&g->efail);
    if ((uint32_t)e == 0 || (uint32_t)(e >> 32) < s->epoch)
        return 0;
    return coll_shm__code((int32_t)(uint32_t)e);
}

/* ---- clocks, futex, randomness, liveness ------------------------------- */

static uint64_t coll_shm__now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t coll_shm__now_ms(void)
{
    return coll_shm__now_ns() / 1000000u;
}

static void coll_shm__nap_ms(unsigned ms)
{
    struct timespec t;
    t.tv_sec = (time_t)(ms / 1000u);
    t.tv_nsec = (long)(ms % 1000u) * 1000000L;
    nanosleep(&t, NULL);
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
   it). For the group's events (join, abort), where nothing else was
   published that the sleeper would look at. */
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

/* membarrier(2) commands (linux/membarrier.h, Linux 4.16), spelled out
   so that the header is not needed */
#define COLL_SHM__MB_GLOBAL_EXPEDITED (1 << 1)
#define COLL_SHM__MB_REGISTER_GLOBAL_EXPEDITED (1 << 2)

/* A full barrier on every core that runs a rank of ours (or any program
   registered alike), as if each had executed a fence right now; 0 if
   done. */
static int coll_shm__membarrier(void)
{
#if defined(SYS_membarrier)
    return syscall(SYS_membarrier, COLL_SHM__MB_GLOBAL_EXPEDITED, 0, 0) == 0 ? 0 : -1;
#else
    return -1;
#endif
}

/* After a message or a freed slot was published (a release store): wake
   rank r only if it says it sleeps. This is Dekker's pattern - we store
   the message and then load `sleeping`, the sleeper stores `sleeping` and
   then looks at the rings once more - and it needs a store-load barrier on
   both sides, or each may miss the other's store and the sleeper sleeps
   through our message. A fence here costs what the message's stores take
   to reach the peer's cache (on the machine we test on, 0.35 us of a 0.6
   us all-reduce), so where every rank registered for membarrier(2), the
   sleeper pays instead: after storing `sleeping` it makes every core that
   runs one of us execute a barrier (coll_shm__membarrier), which orders
   our store before our load after the fact, and here a compiler barrier
   is enough. Otherwise: a fence. A peer that is awake costs one read of
   a line that stays shared: no atomic read-modify-write, no system
   call. */
static void coll_shm__nudge(coll_shm *s, int r)
{
    if (s->mb)
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
    else
        COLL_SHM__FENCE();
    if (__atomic_load_n(&coll_shm__rec(s, r)->sleeping, __ATOMIC_RELAXED)) {
        coll_shm__ring(s, r);
        s->woke = 1;              /* it will answer soon: worth a spin */
        s->woke_ns = 0;
    }
}

/* A run's nonce: never 0 (0 marks a record nobody has written). Without
   getrandom or /dev/urandom it falls back to clock and pid bits, which
   still tell one run from the next. */
static uint64_t coll_shm__random(void)
{
    uint64_t v = 0;
    int fd;
#if defined(SYS_getrandom)
    if (syscall(SYS_getrandom, &v, sizeof v, 0) == (long)sizeof v && v)
        return v;
#endif
    fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        if (read(fd, &v, sizeof v) != (ssize_t)sizeof v)
            v = 0;
        close(fd);
    }
    if (!v) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        v = ((uint64_t)t.tv_sec << 32) ^ (uint64_t)t.tv_nsec ^
            ((uint64_t)getpid() << 16) ^ (uint64_t)(uintptr_t)&v;
    }
    return v ? v : 1;
}

/* Is pid gone, or a zombie nobody has reaped yet? (siblings cannot reap
   each other, so kill(pid, 0) alone would call a dead sibling alive).
   *start, if given, receives the process's start time from /proc (0 when
   unknown), which tells a reused pid from the original. */
static int coll_shm__proc_dead(pid_t pid, uint64_t *start)
{
    char path[64], buf[512], *p;
    FILE *f;
    size_t n;
    int i;
    if (start)
        *start = 0;
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
    if (!p || p[1] != ' ')
        return 0;
    if (p[2] == 'Z' || p[2] == 'X')
        return 1;
    if (start) {                      /* field 22, the 20th after the ')'  */
        p += 2;
        for (i = 0; i < 19 && p; i++) {
            p = strchr(p, ' ');
            if (p)
                p++;
        }
        if (p)
            *start = (uint64_t)strtoull(p, NULL, 10);
    }
    return 0;
}

static int coll_shm__dead(pid_t pid)
{
    return coll_shm__proc_dead(pid, NULL);
}

/* Is the process (pid, start) - a creator named in a header - still
   running? A pid that now belongs to a process started at another time is
   somebody else: the creator is gone. */
static int coll_shm__alive(int32_t pid, uint64_t start)
{
    uint64_t now_start;
    if (pid <= 0)
        return 0;
    if (coll_shm__proc_dead((pid_t)pid, &now_start))
        return 0;
    return !start || !now_start || start == now_start;
}

COLL_SHM_API void coll_shm_abort(coll_shm *s, int code)
{
    coll_shm__group *g = coll_shm__grp(s);
    int32_t zero = 0;
    int r;
    if (code >= 0 || code < -4095)
        code = COLL_ERR_ABORTED;
    if (s->epoch == 0)
        __atomic_compare_exchange_n(&g->failed, &zero, code, 0,
                                    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    else {
        /* our epoch fails, unless it (or a later one) has already: the
           word only moves forward, so a rank of an epoch it names sees it */
        uint64_t old = COLL_SHM__SC_LOAD(&g->efail);
        uint64_t mine = (uint64_t)s->epoch << 32 | (uint32_t)(int32_t)code;
        int tries;                       /* bounded: a member may rewrite it */
        for (tries = 0; tries < 64 && ((uint32_t)old == 0 || (uint32_t)(old >> 32) < s->epoch) &&
                        !__atomic_compare_exchange_n(&g->efail, &old, mine, 0,
                                                     __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
             tries++)
            ;
    }
    for (r = 0; r < s->nranks; r++)
        coll_shm__ring(s, r);
}

/* ---- moving bytes ------------------------------------------------------- */

/* Is some older send to the same peer still being published into the
   ring? (The handle table is small: a scan of the live handles is cheaper
   than per-peer queues.) Ring messages of a pair go out whole and in
   posting order; a fast-box message never waits for one. */
static int coll_shm__blocked(const coll_shm *s, const coll_shm__xfer *x)
{
    uint32_t m = s->live;
    while (m) {
        const coll_shm__xfer *y = &s->x[__builtin_ctz(m)];
        m &= m - 1;
        if (y != x && y->is_send && y->peer == x->peer && y->done != y->bytes &&
            (int32_t)(y->order - x->order) < 0)
            return 1;
    }
    return 0;
}

static void coll_shm__finish(coll_shm *s, coll_shm__xfer *x, int rc)
{
    x->finished = 1;
    x->result = rc;
    s->live &= ~(1u << (x - s->x));
}

/* The peer broke the ring protocol (a counter out of range, a slot that no
   correct sender writes): end the transfer and tell everybody. */
static int coll_shm__broken(coll_shm *s, coll_shm__xfer *x, int rc)
{
    coll_shm__finish(s, x, rc);
    coll_shm_abort(s, rc);
    return 1;
}

/* After a failed wait nothing may land late (ports/README.md): coll.h
   returns the error without waiting for the transfers it still has
   posted and lets their buffers go - and a fold's arg, which lives in its
   request. So every transfer still live ends with the error, and no
   later call copies or folds another byte of it. */
static void coll_shm__cancel(coll_shm *s, int rc)
{
    uint32_t m = s->live;
    while (m) {
        coll_shm__xfer *x = &s->x[__builtin_ctz(m)];
        m &= m - 1;
        coll_shm__finish(s, x, rc);
    }
}

/* Could a correct sender have sent message `seq` to us? Each message not
   yet taken holds a fast-box line or a ring slot, so the sender is at most
   COLL_SHM_FBOX + COLL_SHM_SLOTS messages ahead of the receives we have
   posted; and a message no receive of ours still waits for was taken
   already. So it lies in [oldest receive we may still have posted, next
   receive + that many): a window around our own count, never a value
   read from the segment. */
static int coll_shm__plausible(const coll_shm *s, int peer, uint32_t seq)
{
    uint32_t lo = s->rseq[peer] - (uint32_t)(COLL_SHM_HANDLES + 2);
    return ((seq - lo) & COLL_SHM__SEQ) <
           (uint32_t)(COLL_SHM_HANDLES + 2 + COLL_SHM_FBOX + COLL_SHM_SLOTS);
}

/* Bytes [x->done, x->done + n) of a receive, from `in` - a box line, a
   ring slot, a bounce buffer - into its buffer: copied, or for irecv_fold
   folded where they lie (*folded counts them). The caller has checked n
   against what is left of the message, and still owns `in`: it hands the
   line or slot back to the sender only after this returns. */
static void coll_shm__deliver(coll_shm__xfer *x, const unsigned char *in, size_t n,
                              uint64_t *folded)
{
    if (x->fold) {
        x->fold(x->fold_arg, x->buf + x->done, in, n);
        *folded += n;
    } else
        memcpy(x->buf + x->done, in, n);
    x->done += n;
}

/* A message of a later epoch than ours at the front of a road from
   `peer`: held (0) - unless the peer's record says it is not in that
   epoch yet, which no correct sender does (it says so before its first
   message of the epoch): COLL_ERR_IO. */
static int coll_shm__later(const coll_shm *s, int peer, uint32_t ep)
{
    return ep <= COLL_SHM__LOAD(&coll_shm__rec(s, peer)->epoch) ? 0 : COLL_ERR_IO;
}

#if COLL_SHM_FBOX > 0
static uint32_t coll_shm__wrap(uint32_t i)
{
    return i >= COLL_SHM_FBOX ? i - COLL_SHM_FBOX : i;
}

/* Lines a fast-box message of `bytes` (1 .. COLL_SHM_FBOX_MAX) takes. */
static uint32_t coll_shm__lines(size_t bytes)
{
    return (uint32_t)((bytes + COLL_SHM__PIECE - 1) / COLL_SHM__PIECE);
}

/* A send of at most COLL_SHM_FBOX_MAX bytes: into the pair's fast box if
   the lines from our next one on are all free (the receiver clears a
   message's first line once it has copied all of it out, and the lines
   in use always run from its next message to ours, so a free stretch
   from ours on overlaps none of them). The data first, the stamp last
   (release; then see coll_shm__nudge). Returns 1 if sent, 0 if the box is
   full. */
static int coll_shm__box_put(coll_shm *s, int peer, const unsigned char *buf, size_t bytes,
                             uint32_t seq)
{
    coll_shm__box *box = coll_shm__chan_of(s, s->rank, peer)->box;
    uint32_t h = s->bhead[peer], k = coll_shm__lines(bytes), i;
    size_t off;
    for (i = 0; i < k; i++)
        if (COLL_SHM__LOAD(&box[coll_shm__wrap(h + i)].stamp))
            return 0;
    /* whole pieces as fixed-size copies (a few moves each), the rest after */
    for (i = 0, off = 0; bytes - off > COLL_SHM__PIECE; i++, off += COLL_SHM__PIECE)
        memcpy(box[coll_shm__wrap(h + i)].data, buf + off, COLL_SHM__PIECE);
    memcpy(box[coll_shm__wrap(h + i)].data, buf + off, bytes - off);
    box[h].len = (uint32_t)bytes;
    box[h].epoch = s->epoch;
    COLL_SHM__STORE(&box[h].stamp, COLL_SHM__TOP | seq);
    s->bhead[peer] = (uint16_t)coll_shm__wrap(h + k);
    coll_shm__nudge(s, peer);
    return 1;
}

/* A receive that has taken nothing yet looks at the next line of the
   peer's fast box: 0 nothing for it (empty, or a later message's),
   1 taken, or an error. The stamp must carry the top bit and a number a
   correct sender could have sent (else the box was forged: COLL_ERR_IO);
   the length, read once, 1 .. COLL_SHM_FBOX_MAX (else
   COLL_ERR_IO) and the receive's size (else COLL_ERR_MISMATCH). Clearing
   the stamp (release) hands all the message's lines back. A receive that
   folds gathers the lines into a private buffer and folds that once:
   folding a line's bytes at a time cost more than the copy it saves (2 ranks,
   512 B all-reduce: 1.67 us against 1.30 gathered, 1.35 before). */
/* The front of `peer`'s fast box to us, past what earlier epochs left
   there (see EPOCHS): a message of an earlier epoch is dropped as a take
   would hand it back (stamp cleared, our index past its lines, counted
   from its checked length). *stamp: the front message's stamp if it is
   of our epoch, else 0 (empty, or a later epoch's: held). 0, or
   COLL_ERR_IO for a stamp without its top bit, a dropped message's
   length out of range, or a later epoch its sender is not in. */
static int coll_shm__box_front(coll_shm *s, int peer, uint32_t *stamp)
{
    coll_shm__box *box = coll_shm__chan_of(s, peer, s->rank)->box;
    int k;
    *stamp = 0;
    for (k = 0; k < COLL_SHM_FBOX; k++) {    /* each drop frees a line at least */
        uint32_t t = s->btail[peer], st = COLL_SHM__LOAD(&box[t].stamp), ep, len;
        if (!st)
            return 0;
        if (!(st & COLL_SHM__TOP))
            return COLL_ERR_IO;
        ep = COLL_SHM__ONCE32(&box[t].epoch);
        if (ep == s->epoch) {
            *stamp = st;
            return 0;
        }
        if (ep > s->epoch)
            return coll_shm__later(s, peer, ep);
        len = COLL_SHM__ONCE32(&box[t].len);
        if (len == 0 || len > COLL_SHM_FBOX_MAX)
            return COLL_ERR_IO;
        COLL_SHM__STORE(&box[t].stamp, 0u);
        s->btail[peer] = (uint16_t)coll_shm__wrap(t + coll_shm__lines(len));
    }
    return 0;
}

static int coll_shm__box_take(coll_shm *s, coll_shm__xfer *x)
{
    coll_shm__box *box = coll_shm__chan_of(s, x->peer, s->rank)->box;
    uint32_t t, st, seq, len, i;
    union { unsigned char b[COLL_SHM_FBOX_MAX]; uint64_t align_; } gather;
    unsigned char *to = x->fold ? gather.b : x->buf;
    size_t off;
    int rc = coll_shm__box_front(s, x->peer, &st);
    if (rc || !st)
        return rc;
    t = s->btail[x->peer];
    seq = st & COLL_SHM__SEQ;
    if (!coll_shm__plausible(s, x->peer, seq))
        return COLL_ERR_IO;
    if (seq != x->seq)
        return 0;                       /* an earlier or a later receive's */
    len = COLL_SHM__ONCE32(&box[t].len);
    if (len == 0 || len > COLL_SHM_FBOX_MAX)
        return COLL_ERR_IO;
    if (len != x->bytes)
        return COLL_ERR_MISMATCH;
    for (i = 0, off = 0; len - off > COLL_SHM__PIECE; i++, off += COLL_SHM__PIECE)
        memcpy(to + off, box[coll_shm__wrap(t + i)].data, COLL_SHM__PIECE);
    memcpy(to + off, box[coll_shm__wrap(t + i)].data, len - off);
    if (x->fold)
        coll_shm__deliver(x, gather.b, len, &s->folded_box);
    COLL_SHM__STORE(&box[t].stamp, 0u);
    s->btail[x->peer] = (uint16_t)coll_shm__wrap(t + coll_shm__lines(len));
    x->done = x->bytes;
    return 1;
}
#endif

/* Advance a send through the ring; returns 1 if anything moved. Our head
   is the private copy; the receiver's tail is checked to lie within one
   ring behind it (a correct receiver never passes our head nor falls
   further back). */
static int coll_shm__step_send(coll_shm *s, coll_shm__xfer *x)
{
    coll_shm__chan *c = coll_shm__chan_of(s, s->rank, x->peer);
    uint32_t head = s->head[x->peer], tail;
    int moved = 0;
    if (x->done < x->bytes && !coll_shm__blocked(s, x)) {
        tail = COLL_SHM__LOAD(&c->tail);
        if ((uint32_t)(head - tail) > COLL_SHM_SLOTS)
            return coll_shm__broken(s, x, COLL_ERR_IO);
        while (x->done < x->bytes && head - tail < COLL_SHM_SLOTS) {
            coll_shm__slot *sl = &c->slot[head % COLL_SHM_SLOTS];
            sl->seq = x->seq;
            sl->epoch = s->epoch;
            if (s->cma && s->cma_agreed && x->bytes >= s->cma_min) {
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
                sl->total = x->bytes;
                x->done += n;
                sl->kind = COLL_SHM__DATA | (x->done == x->bytes ? COLL_SHM__LAST : 0);
            }
            head++;
            s->head[x->peer] = head;
            COLL_SHM__STORE(&c->head, head);
            moved = 1;
        }
        if (moved)
            coll_shm__nudge(s, x->peer);
    }
    if (x->done == x->bytes) {
        /* eager chunks are complete once published; a CMA send once the
           receiver has consumed its slot (it has copied our buffer) */
        if (x->cma) {
            tail = COLL_SHM__LOAD(&c->tail);
            if ((uint32_t)(head - tail) > COLL_SHM_SLOTS)
                return coll_shm__broken(s, x, COLL_ERR_IO);
            if ((int32_t)(tail - x->cma_slot) <= 0)
                return moved;
        }
        coll_shm__finish(s, x, 0);
        moved = 1;
    }
    return moved;
}

/* Copy `bytes` from the peer's address space with CMA; 0 or COLL_ERR_IO.
   pid is always a private copy taken at join. */
static int coll_shm__cma_read(pid_t pid, void *dst, uint64_t src, size_t bytes)
{
    size_t done = 0;
    if (pid <= 0)
        return COLL_ERR_IO;
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

/* A CMA message for a receive that folds: its bytes lie in the sender's
   private memory, out of reach but through process_vm_readv, so they come
   through a bounce buffer of ours, COLL_SHM__BOUNCE bytes at a time (one
   copy, as for a CMA receive that copies, and a system call per piece). */
#define COLL_SHM__BOUNCE 8192
static int coll_shm__cma_fold(coll_shm *s, coll_shm__xfer *x, uint64_t src)
{
    union { unsigned char b[COLL_SHM__BOUNCE]; uint64_t align_; } bounce;
    while (x->done < x->bytes) {
        size_t n = x->bytes - x->done < COLL_SHM__BOUNCE ? x->bytes - x->done : COLL_SHM__BOUNCE;
        int rc = coll_shm__cma_read((pid_t)s->pid[x->peer], bounce.b, src + x->done, n);
        if (rc)
            return rc;
        coll_shm__deliver(x, bounce.b, n, &s->folded_cma);
    }
    return 0;
}

/* What the ring's next slot was to the receive at it, both to be handed
   back (coll_shm__slot_recv; 0: held, or not its own: left there). */
enum { COLL_SHM__TOOK = 1, COLL_SHM__DROPPED = 2 };

#if COLL_SHM_FBOX > 0
/* A receive that has taken nothing yet looks in the fast box first (any
   size: a mismatch shows here too). 1 if that ended it (taken, or an
   error that aborts the group), 0 to go on to the ring. */
static int coll_shm__box_recv(coll_shm *s, coll_shm__xfer *x)
{
    int rc = coll_shm__box_take(s, x);
    if (rc < 0)
        return coll_shm__broken(s, x, rc);
    if (rc > 0)
        coll_shm__finish(s, x, 0);
    return rc > 0;
}
#endif

/* A ring slot of another epoch than ours at the receive's front: a later
   epoch's is held (0: a message of ours cut by one never ends, the wait's
   deadline or a failure does), unless its sender is not there yet
   (COLL_ERR_IO); an earlier epoch's is dropped (COLL_SHM__DROPPED) - but
   never inside one of ours (COLL_ERR_IO). */
static int coll_shm__slot_epoch(const coll_shm *s, const coll_shm__xfer *x, uint32_t ep)
{
    if (ep > s->epoch)
        return coll_shm__later(s, x->peer, ep);
    if (x->done != 0)
        return COLL_ERR_IO;
    return COLL_SHM__DROPPED;
}

/* A CMA slot saying `n` bytes: a forgery unless CMA was agreed at join
   (COLL_ERR_IO); it must be the whole receive (else COLL_ERR_MISMATCH).
   Copied - or folded through a bounce buffer - straight from the sender's
   buffer. 0 or the error. */
static int coll_shm__cma_take(coll_shm *s, coll_shm__xfer *x, const coll_shm__slot *sl,
                              uint64_t n)
{
    int rc;
    if (!s->cma_agreed)
        return COLL_ERR_IO;
    if (x->done != 0 || n != (uint64_t)x->bytes)
        return COLL_ERR_MISMATCH;
    if (x->fold)
        return coll_shm__cma_fold(s, x, COLL_SHM__ONCE64(&sl->addr));
    rc = coll_shm__cma_read((pid_t)s->pid[x->peer], x->buf, COLL_SHM__ONCE64(&sl->addr),
                            x->bytes);
    if (rc == 0)
        x->done = x->bytes;
    return rc;
}

/* A DATA slot of `n` bytes (kind: LAST or not): a length no sender writes
   is COLL_ERR_IO; a message of another total size, or a piece past or
   short of the receive's end, COLL_ERR_MISMATCH; a sender fills every
   slot but a message's last (else COLL_ERR_IO), so the pieces a fold sees
   stay whole elements. Then copied, or folded where it lies. 0 or the
   error. */
static int coll_shm__data_take(coll_shm *s, coll_shm__xfer *x, const coll_shm__slot *sl,
                               uint32_t kind, uint64_t n)
{
    int last = (kind & COLL_SHM__LAST) != 0;
    if (n == 0 || n > COLL_SHM_SLOT_BYTES)
        return COLL_ERR_IO;
    if (COLL_SHM__ONCE64(&sl->total) != (uint64_t)x->bytes ||
        n > (uint64_t)(x->bytes - x->done) || last != (x->done + (size_t)n == x->bytes))
        return COLL_ERR_MISMATCH;
    if (!last && n != COLL_SHM_SLOT_BYTES)
        return COLL_ERR_IO;
    coll_shm__deliver(x, sl->data, (size_t)n, &s->folded_ring);
    return 0;
}

/* The ring's next slot for receive x, every field read once and checked
   before use: COLL_SHM__TOOK (copied or folded) or COLL_SHM__DROPPED (an
   earlier epoch's), both to be handed back; 0 (a later epoch's, or
   another receive's message: left there); or the error. */
static int coll_shm__slot_recv(coll_shm *s, coll_shm__xfer *x, const coll_shm__slot *sl)
{
    uint32_t ep = COLL_SHM__ONCE32(&sl->epoch), kind, seq;
    uint64_t n;
    int rc;
    if (ep != s->epoch)
        return coll_shm__slot_epoch(s, x, ep);
    kind = COLL_SHM__ONCE32(&sl->kind);
    seq = COLL_SHM__ONCE32(&sl->seq);
    n = COLL_SHM__ONCE64(&sl->bytes);
    if (x->done == 0 && seq != x->seq)  /* another receive's message, or a forgery */
        return coll_shm__plausible(s, x->peer, seq) ? 0 : COLL_ERR_IO;
    if (seq != x->seq)
        return COLL_ERR_IO;             /* a message cut by another   */
    if (kind == COLL_SHM__CMA)
        rc = coll_shm__cma_take(s, x, sl, n);
    else if ((kind & ~(uint32_t)COLL_SHM__LAST) == COLL_SHM__DATA)
        rc = coll_shm__data_take(s, x, sl, kind, n);
    else
        rc = COLL_ERR_IO;
    return rc ? rc : COLL_SHM__TOOK;
}

/* Advance a receive; returns 1 if anything moved, finishes x on
   completion or error. A receive that has taken nothing yet looks in the
   fast box first, then at the ring's next slot, and takes whichever
   carries its number; a message begun in the ring continues there (a
   sender publishes a ring message whole before the next). Every slot
   field is read once and checked before use: a length beyond the slot, an
   unknown kind, a CMA slot when CMA was not agreed, a head more than one
   ring ahead of our tail, or a number no correct sender could have sent
   (coll_shm__plausible) is COLL_ERR_IO; a well-formed message
   of the wrong size COLL_ERR_MISMATCH. Either aborts the group. */
static int coll_shm__step_recv(coll_shm *s, coll_shm__xfer *x)
{
    coll_shm__chan *c = coll_shm__chan_of(s, x->peer, s->rank);
    uint32_t tail = s->tail[x->peer], head;
    int moved = 0, freed = 0, rc = 0;
#if COLL_SHM_FBOX > 0
    if (x->done == 0 && coll_shm__box_recv(s, x))
        return 1;
#endif
    head = COLL_SHM__LOAD(&c->head);
    if ((uint32_t)(head - tail) > COLL_SHM_SLOTS)
        rc = COLL_ERR_IO;
    while (rc == 0 && x->done < x->bytes && tail != head) {
        int got = coll_shm__slot_recv(s, x, &c->slot[tail % COLL_SHM_SLOTS]);
        if (got <= 0) {
            rc = got;                   /* 0: held, or not ours: left there */
            break;
        }
        tail++;                         /* the slot back to the sender */
        s->tail[x->peer] = tail;
        COLL_SHM__STORE(&c->tail, tail);
        if (got == COLL_SHM__TOOK)
            moved = 1;
        else
            freed = 1;
    }
    if (moved || freed)
        coll_shm__nudge(s, x->peer);       /* a slot is free / a CMA ack */
    if (rc)
        return coll_shm__broken(s, x, rc);  /* the pair is out of step: tell
                                               everybody, the sender of a CMA
                                               message included */
    if (x->done == x->bytes) {
        coll_shm__finish(s, x, 0);
        moved = 1;
    }
    return moved;
}

/* One pass over all live transfers; returns 1 if anything moved. */
static int coll_shm__progress(coll_shm *s)
{
    uint32_t m = s->live;
    int moved = 0;
    while (m) {
        coll_shm__xfer *x = &s->x[__builtin_ctz(m)];
        m &= m - 1;
        if (!x->finished)
            moved |= x->is_send ? coll_shm__step_send(s, x) : coll_shm__step_recv(s, x);
    }
    return moved;
}

/* Is a peer of some unfinished transfer dead? (pids: the private copies) */
static int coll_shm__peers_dead(coll_shm *s)
{
    uint32_t m = s->live;
    while (m) {
        coll_shm__xfer *x = &s->x[__builtin_ctz(m)];
        m &= m - 1;
        if (coll_shm__dead((pid_t)s->pid[x->peer]))
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

/* `polled` of a rank in a blocking wait (STANDS), or whose last wait or
   post gave up for a failure (GAVE): its entry stands, however long ago it
   was written (coll_shm__missing) */
#define COLL_SHM__STANDS UINT64_MAX
#define COLL_SHM__GAVE   (UINT64_MAX - 1u)

/* Who this rank waits for (the first handle not finished; -1 none), for
   coll_port.missing, in its epoch's entry (epoch 0: `waiting`, as ever;
   a renewed epoch e: ewait[e & 1], tagged with e); a wait that gives up
   leaves it. polled (0: leave it) is how the entry stands: COLL_SHM__STANDS
   in a blocking wait, the clock (ms) in a poll that finds it not done. */
static void coll_shm__entry_set(coll_shm *s, int v, uint64_t polled)
{
    coll_shm__rankrec *me = coll_shm__rec(s, s->rank);
    if (s->epoch == 0) {
        if (__atomic_load_n(&me->waiting, __ATOMIC_RELAXED) != v)
            __atomic_store_n(&me->waiting, v, __ATOMIC_RELAXED);
    } else {
        uint64_t w = v ? (uint64_t)s->epoch << 32 | (uint32_t)v : 0, *e = &me->ewait[s->epoch & 1];
        if (__atomic_load_n(e, __ATOMIC_RELAXED) != w)
            __atomic_store_n(e, w, __ATOMIC_RELAXED);
    }
    if (polled && polled != s->polled) {
        s->polled = polled;
        __atomic_store_n(&me->polled, polled, __ATOMIC_RELAXED);
    }
}

static void coll_shm__waiting(coll_shm *s, const int *h, int n, uint64_t polled)
{
    int i, v = 0;
    for (i = 0; i < n && !v; i++)
        if (!s->x[h[i]].finished) v = 1 + s->x[h[i]].peer;
    coll_shm__entry_set(s, v, polled);
}

/* While nothing moves: every COLL_SHM_SLICE_MS, whether the peers we
   wait on still live; whether the deadline (timeout_ms without progress)
   has passed. 0 or the code to return. */
static int coll_shm__idle(coll_shm *s, uint64_t now_ms)
{
    if (now_ms - s->check_ms >= COLL_SHM_SLICE_MS) {
        s->check_ms = now_ms;
        /* A peer may have published its last message and exited since we
           looked: what is in the ring still counts. */
        if (coll_shm__peers_dead(s) && !coll_shm__progress(s))
            return COLL_ERR_IO;
    }
    if (s->timeout_ms && now_ms - s->last_ms >= s->timeout_ms) {
        /* epoch 0: the peers stop now, not later; a renewed epoch's
           deadline is this operation's alone (see EPOCHS) */
        if (s->epoch == 0)
            coll_shm_abort(s, COLL_ERR_TIMEOUT);
        return COLL_ERR_TIMEOUT;
    }
    return 0;
}

/* polls between clock reads while spinning (a power of two) */
#define COLL_SHM__POLLS 16
#define COLL_SHM__SPIN_MIN 500u     /* ns: the budget never goes below this */
#define COLL_SHM__TURN_NS 50000u    /* a waiting rank says where it runs,
                                       at most this often (ns)             */

static void coll_shm__pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* The core we run on (-1: unknown). sched_getcpu is GNU (vDSO, cheap);
   without it, the system call. */
static int32_t coll_shm__cpu(void)
{
#if defined(__USE_GNU) || (!defined(__GLIBC__) && defined(_GNU_SOURCE))
    return (int32_t)sched_getcpu();
#elif defined(SYS_getcpu)
    unsigned cpu = 0;
    return syscall(SYS_getcpu, &cpu, NULL, NULL) == 0 ? (int32_t)cpu : -1;
#else
    return -1;
#endif
}

/* Say in our record on which core we run (at `now`, CLOCK_MONOTONIC ns).
   Waiting peers read it (see coll_shm__peer_up); nothing else does. The
   line is one every sender reads: it is written only when the core
   changes. */
static void coll_shm__turn(coll_shm *s, uint64_t now)
{
    coll_shm__rankrec *me = coll_shm__rec(s, s->rank);
    int32_t cpu = coll_shm__cpu();
    s->turn_ns = now;
    if (__atomic_load_n(&me->cpu, __ATOMIC_RELAXED) != cpu)
        __atomic_store_n(&me->cpu, cpu, __ATOMIC_RELAXED);
}

/* Can a peer we wait on answer while we spin? One that is awake (not
   asleep on its futex) and last ran on another core than ours (cpu: ours,
   -1 unknown). The records are the peers' to write: a wrong answer only
   makes us spin, or stop spinning, sooner than we should. */
static int coll_shm__peer_up(const coll_shm *s, int32_t cpu)
{
    uint32_t m = s->live;
    while (m) {
        const coll_shm__rankrec *rr = coll_shm__rec(s, s->x[__builtin_ctz(m)].peer);
        m &= m - 1;
        if (!__atomic_load_n(&rr->sleeping, __ATOMIC_RELAXED) &&
            (cpu < 0 || __atomic_load_n(&rr->cpu, __ATOMIC_RELAXED) != cpu))
            return 1;
    }
    return 0;
}

/* A blocking wait's place in the three stages of WAITING (private to the
   call, on its stack). */
enum { COLL_SHM__SPIN, COLL_SHM__YIELD, COLL_SHM__SLEEP };
typedef struct coll_shm__waiter {
    int stage;               /* COLL_SHM__SPIN, __YIELD or __SLEEP           */
    int adapt;               /* 1: a message wait's spin (only while a peer
                                can answer, the adaptive budget); 0: a window
                                sync's (fixed: spin_max, or none where ranks
                                outnumber the cores)                        */
    uint64_t t0;             /* clock at the first read since the last progress */
    uint32_t budget;         /* this spin's length (ns), set at t0           */
    uint64_t yield_ns;       /* the yield ends this long after t0, set at t0 */
    unsigned polls;          /* polls since the last clock read              */
    int spun;                /* paused since the last progress               */
    int moved;               /* the last poll brought progress               */
    int fresh;               /* progress (or posting) not yet stamped into
                                s->last_ms                                  */
} coll_shm__waiter;

/* What a blocking wait waits for; coll_shm__until runs the stages, reads
   the clock, says where we run, sleeps and wakes. */
typedef struct coll_shm__pred {
    /* One poll: 1 when the wait is over (*rc: 0, or the code that ends
       it), else 0; progress it brings goes to coll_shm__progressed. */
    int (*poll)(coll_shm *s, void *arg, coll_shm__waiter *w, int *rc);
    /* At each clock read (now, ns): our entry, the deadline, the peers'
       liveness. 0 or the code that ends the wait. */
    int (*tick)(coll_shm *s, void *arg, coll_shm__waiter *w, uint64_t now);
    /* The last look after `sleeping` is announced: how many ms to sleep,
       0 not to (what we wait for came, or progress did). */
    unsigned (*look)(coll_shm *s, void *arg, coll_shm__waiter *w);
} coll_shm__pred;

static void coll_shm__waiter_init(coll_shm__waiter *w, int adapt, int fresh)
{
    w->stage = COLL_SHM__SPIN;
    w->adapt = adapt;
    w->t0 = 0;
    w->budget = 0;
    w->yield_ns = 0;
    w->polls = 0;
    w->spun = 0;
    w->moved = 0;
    w->fresh = fresh;
}

/* Progress: the waiter goes back to the first stage, its spin and clock
   start anew, and the deadline starts again at the next clock read. */
static void coll_shm__restart(coll_shm__waiter *w)
{
    w->stage = COLL_SHM__SPIN;
    w->t0 = 0;
    w->polls = 0;
    w->spun = 0;
    w->fresh = 1;
}

/* Progress found by the wait's poll: a spin that brought it paid, so the
   adaptive budget doubles (up to spin_max); then back to spinning. */
static void coll_shm__progressed(coll_shm *s, coll_shm__waiter *w)
{
    if (w->adapt && w->spun && w->stage == COLL_SHM__SPIN && s->spin_ns < s->spin_max)   /* it paid */
        s->spin_ns = s->spin_ns > s->spin_max / 2 ? s->spin_max : s->spin_ns * 2;
    coll_shm__restart(w);
    w->moved = 1;
}

/* A poll (block = 0) that leaves the transfers unfinished: our entry says
   whom we wait for, stamped with the clock (a poller that stops calling
   goes quiet, coll_shm__quiet); fresh progress restarts the deadline,
   else the deadline and the peers are checked. COLL_AGAIN, or the error
   that ends the wait. */
static int coll_shm__poll_miss(coll_shm *s, const int *h, int n, int fresh)
{
    uint64_t ms = coll_shm__now_ms();
    int rc;
    coll_shm__waiting(s, h, n, ms);
    if (fresh)
        s->last_ms = ms;
    else if ((rc = coll_shm__idle(s, ms)) != 0)
        return rc;
    return COLL_AGAIN;
}

/* The first clock read since the last progress starts the spin and sets
   how long it may run and when the yield ends. A message wait spins only
   while a peer we wait on can answer - it is awake on another core, or we
   woke it a moment ago (it answers within a wake-up's latency) - as long
   as the adaptive budget, or where every rank may have a core of its own,
   the whole spin_max; it yields until COLL_SHM_YIELD_US after t0. A
   window sync's wait spins spin_max where every rank may have a core
   (none where they outnumber them), then yields COLL_SHM_YIELD_US. */
static void coll_shm__spin_start(coll_shm *s, coll_shm__waiter *w, uint64_t now)
{
    w->t0 = now;
    if (!w->adapt) {
        w->budget = s->over ? 0u : s->spin_max;
        w->yield_ns = w->budget + (uint64_t)COLL_SHM_YIELD_US * 1000u;
        return;
    }
    if (s->woke && !s->woke_ns)
        s->woke_ns = now;
    if (s->woke && now - s->woke_ns >= 2u * (uint64_t)s->spin_max)
        s->woke = 0;
    w->budget = s->woke || coll_shm__peer_up(s, coll_shm__cpu())
                    ? (s->over ? s->spin_ns : s->spin_max) : 0;
    w->yield_ns = (uint64_t)COLL_SHM_YIELD_US * 1000u;
}

/* After a clock read: spin on while the budget lasts (an adaptive spin
   that ran out did not pay: the budget halves, down to
   COLL_SHM__SPIN_MIN), then yield until yield_ns have passed since t0.
   1: poll again (after a pause or a yield), 0: time to sleep. */
static int coll_shm__spin_or_yield(coll_shm *s, coll_shm__waiter *w, uint64_t now)
{
    if (w->stage == COLL_SHM__SPIN) {
        if (now - w->t0 < w->budget) {
            w->spun = 1;
            coll_shm__pause();
            return 1;
        }
        if (w->adapt && w->budget && s->spin_ns > COLL_SHM__SPIN_MIN)    /* it did not pay */
            s->spin_ns = s->spin_ns / 2 > COLL_SHM__SPIN_MIN ? s->spin_ns / 2
                                                             : COLL_SHM__SPIN_MIN;
        w->stage = COLL_SHM__YIELD;
    }
    if (w->stage == COLL_SHM__YIELD) {
        if (now - w->t0 < w->yield_ns) {
            uint64_t back;
            sched_yield();
            back = coll_shm__now_ns();
            if (back - s->turn_ns >= COLL_SHM__TURN_NS)
                coll_shm__turn(s, back);
            return 1;
        }
        w->stage = COLL_SHM__SLEEP;
    }
    return 0;
}

/* Going to sleep: announce it, then the predicate's last look (the
   sleeper's half of coll_shm__nudge or of a window sync's ring), and
   sleep on our bell for what it says unless our epoch has failed. */
static void coll_shm__doze(coll_shm *s, const coll_shm__pred *p, void *arg, coll_shm__waiter *w)
{
    coll_shm__rankrec *me = coll_shm__rec(s, s->rank);
    uint32_t bell;
    unsigned ms;
    COLL_SHM__SC_STORE(&me->sleeping, 1u);
    bell = COLL_SHM__SC_LOAD(&me->bell);
    ms = p->look(s, arg, w);
    if (ms && !coll_shm__failed(s)) {
        coll_shm__sleep(&me->bell, bell, ms);
        coll_shm__turn(s, coll_shm__now_ns());
    }
    COLL_SHM__SC_STORE(&me->sleeping, 0u);
}

/* Every blocking wait: poll until the predicate says it is over, through
   the stages of WAITING - a pause between polls while spinning, the
   clock every COLL_SHM__POLLS of them (every poll once yielding); at
   each clock read our record says where we run (at most every
   COLL_SHM__TURN_NS) and the predicate's checks run; progress puts the
   waiter back to spinning. 0 or the code that ended the wait. Inlined
   into each wait, so that its predicate's calls are direct ones. */
static COLL__ALWAYS_INLINE int coll_shm__until(coll_shm *s, const coll_shm__pred *p, void *arg,
                                               coll_shm__waiter *w)
{
    int rc = 0;
    for (;;) {
        uint64_t now;
        w->moved = 0;
        if (p->poll(s, arg, w, &rc))
            return rc;
        if (w->moved)
            continue;
        if (w->stage == COLL_SHM__SPIN && (++w->polls & (COLL_SHM__POLLS - 1)) != 0) {
            w->spun = 1;
            coll_shm__pause();
            continue;
        }
        now = coll_shm__now_ns();
        if (now - s->turn_ns >= COLL_SHM__TURN_NS)
            coll_shm__turn(s, now);
        if ((rc = p->tick(s, arg, w, now)) != 0)
            return rc;
        if (!w->t0)
            coll_shm__spin_start(s, w, now);
        if (!coll_shm__spin_or_yield(s, w, now))
            coll_shm__doze(s, p, arg, w);
    }
}

/* A message wait's transfers (private, on the stack). */
typedef struct coll_shm__xwait {
    const int *h;
    int n;
} coll_shm__xwait;

/* A message wait's poll: advance every transfer; over when the handles'
   are finished, or when the group has failed. */
static int coll_shm__xfer_poll(coll_shm *s, void *arg, coll_shm__waiter *w, int *rc)
{
    const coll_shm__xwait *a = (const coll_shm__xwait *)arg;
    if (coll_shm__progress(s))
        coll_shm__progressed(s, w);
    if (coll_shm__all_done(s, a->h, a->n)) {
        *rc = 0;
        return 1;
    }
    return (*rc = coll_shm__failed(s)) != 0;
}

/* A message wait's clock read: our entry stands while we are in the wait;
   progress since the last read restarts the deadline; then the deadline
   and the peers' liveness (coll_shm__idle). 0 or the error that ends the
   wait. */
static int coll_shm__xfer_tick(coll_shm *s, void *arg, coll_shm__waiter *w, uint64_t now)
{
    const coll_shm__xwait *a = (const coll_shm__xwait *)arg;
    coll_shm__waiting(s, a->h, a->n, COLL_SHM__STANDS);
    if (w->fresh) {
        s->last_ms = now / 1000000u;
        w->fresh = 0;
    }
    return coll_shm__idle(s, now / 1000000u);
}

/* A message wait's last look before a sleep: a sender that saw us awake
   published without a fence (coll_shm__nudge), so where membarrier is
   agreed we make it order that for us (failing: 1 ms sleeps, a sender
   may have missed us), then a fence and one more poll. */
static unsigned coll_shm__xfer_look(coll_shm *s, void *arg, coll_shm__waiter *w)
{
    unsigned ms = COLL_SHM_SLICE_MS;
    (void)arg;
    if (s->mb && coll_shm__membarrier() != 0)
        ms = 1;
    COLL_SHM__FENCE();
    if (coll_shm__progress(s)) {
        coll_shm__restart(w);
        return 0;
    }
    return ms;
}

static const coll_shm__pred coll_shm__xfer_pred = {
    coll_shm__xfer_poll, coll_shm__xfer_tick, coll_shm__xfer_look
};

/* The wait is over (rc: 0, or the error that ended it). Done: our entry
   is cleared; given up: it stands (polled COLL_SHM__GAVE) for
   coll_port.missing. The first error among the transfers is the result;
   the handles are freed, and after an error every transfer still live
   ends with it (coll_shm__cancel). */
static int coll_shm__wait_end(coll_shm *s, const int *h, int n, int rc)
{
    int i;
    if (rc == 0) {
        coll_shm__waiting(s, h, n, 0);              /* all done: none */
        s->fresh = 1;       /* a finished wait is progress: the next one's
                               deadline starts at its first clock read   */
    }
    else if (s->polled != COLL_SHM__GAVE) {         /* given up: the entry stands */
        s->polled = COLL_SHM__GAVE;
        __atomic_store_n(&coll_shm__rec(s, s->rank)->polled, COLL_SHM__GAVE, __ATOMIC_RELAXED);
    }
    for (i = 0; i < n; i++) {
        coll_shm__xfer *x = &s->x[h[i]];
        if (rc == 0 && x->finished && x->result)
            rc = x->result;
        x->used = 0;
        s->live &= ~(1u << h[i]);     /* given up, if not finished */
    }
    if (rc != 0)
        coll_shm__cancel(s, rc);
    return rc;
}

/* Wait until the transfers h[0..n-1] are finished (block = 0: advance once
   and answer COLL_AGAIN if they are not). Returns the first error among
   them, or a group failure; frees the handles unless COLL_AGAIN. The
   deadline counts time without progress on this rank, so a long transfer
   that keeps moving never times out, and polling callers get it too.
   Blocking, it spins, yields, then sleeps (coll_shm__until, see WAITING);
   progress puts it back to spinning. */
static int coll_shm__wait(coll_shm *s, const int *h, int n, int block)
{
    coll_shm__xwait a;
    coll_shm__waiter w;
    int rc = 0;
    a.h = h;
    a.n = n;
    coll_shm__waiter_init(&w, 1, s->fresh);
    s->fresh = 0;
    if (block)
        rc = coll_shm__until(s, &coll_shm__xfer_pred, &a, &w);
    else if (!coll_shm__xfer_poll(s, &a, &w, &rc) &&
             (rc = coll_shm__poll_miss(s, h, n, w.fresh)) == COLL_AGAIN)
        return COLL_AGAIN;
    return coll_shm__wait_end(s, h, n, rc);
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
    x->fold = 0;
    x->fold_arg = 0;
    s->fresh = 1;                 /* the deadline starts again at posting */
    if (is_send) {
        x->seq = s->sseq[peer]++ & COLL_SHM__SEQ;
#if COLL_SHM_FBOX > 0
        /* small, and not a CMA message: the fast box, if it has room;
           then the send is over (and its handle finished) at once */
        if (bytes <= COLL_SHM_FBOX_MAX && !(s->cma && s->cma_agreed && bytes >= s->cma_min) &&
            coll_shm__box_put(s, peer, x->buf, bytes, x->seq)) {
            x->done = bytes;
            x->finished = 1;
            return 0;
        }
#endif
    } else
        x->seq = s->rseq[peer]++ & COLL_SHM__SEQ;
    s->live |= 1u << slot;
    return 0;
}

/* Before posting: has our epoch failed? A transfer refused for it gives
   up as a wait would, and leaves the same entry (towards `peer`), so a
   chain of waits that reaches this rank between two of its waits still
   goes on to the rank it would have waited for. */
static int coll_shm__check(coll_shm *s, int peer)
{
    int rc = coll_shm__failed(s);
    if (rc && peer >= 0 && peer < s->nranks && peer != s->rank)
        coll_shm__entry_set(s, 1 + peer, COLL_SHM__GAVE);
    return rc;
}

COLL_SHM_API int coll_shm_send(void *ctx, int peer, const void *buf, size_t bytes)
{
    coll_shm *s = (coll_shm *)ctx;
    int h = COLL_SHM_HANDLES, rc = coll_shm__check(s, peer);
    if (rc == 0)
        rc = coll_shm__post(s, h, 1, peer, buf, bytes);
    if (rc == 0 && s->x[h].finished) {          /* by the fast box */
        s->x[h].used = 0;
        return 0;
    }
    return rc ? rc : coll_shm__wait(s, &h, 1, 1);
}

COLL_SHM_API int coll_shm_recv(void *ctx, int peer, void *buf, size_t bytes)
{
    coll_shm *s = (coll_shm *)ctx;
    int h = COLL_SHM_HANDLES + 1, rc = coll_shm__check(s, peer);
    if (rc == 0)
        rc = coll_shm__post(s, h, 0, peer, buf, bytes);
    return rc ? rc : coll_shm__wait(s, &h, 1, 1);
}

COLL_SHM_API int coll_shm_sendrecv(void *ctx, int to, const void *sbuf, size_t sbytes,
                                   int from, void *rbuf, size_t rbytes)
{
    coll_shm *s = (coll_shm *)ctx;
    int h[2] = {COLL_SHM_HANDLES + 1, COLL_SHM_HANDLES}, rc = coll_shm__check(s, from);
    if (rc == 0)
        rc = coll_shm__post(s, h[0], 0, from, rbuf, rbytes);
    if (rc == 0 && (rc = coll_shm__post(s, h[1], 1, to, sbuf, sbytes)) != 0)
        s->x[h[0]].used = 0, s->live &= ~(1u << h[0]);
    return rc ? rc : coll_shm__wait(s, h, 2, 1);
}

static int coll_shm__ipost(coll_shm *s, int is_send, int peer, const void *buf,
                           size_t bytes, coll_fold_fn fold, void *arg, int *handle)
{
    int h, rc = coll_shm__check(s, peer);
    if (rc)
        return rc;
    for (h = 0; h < COLL_SHM_HANDLES && s->x[h].used; h++)
        ;
    if (h == COLL_SHM_HANDLES)
        return COLL_AGAIN;
    rc = coll_shm__post(s, h, is_send, peer, buf, bytes);
    if (rc)
        return rc;
    s->x[h].fold = fold;
    s->x[h].fold_arg = arg;
    if (!s->x[h].finished)
        coll_shm__progress(s);    /* eager: start moving bytes right away */
    *handle = h;
    return 0;
}

COLL_SHM_API int coll_shm_isend(void *ctx, int peer, const void *buf, size_t bytes, int *handle)
{
    return coll_shm__ipost((coll_shm *)ctx, 1, peer, buf, bytes, 0, 0, handle);
}

COLL_SHM_API int coll_shm_irecv(void *ctx, int peer, void *buf, size_t bytes, int *handle)
{
    return coll_shm__ipost((coll_shm *)ctx, 0, peer, buf, bytes, 0, 0, handle);
}

/* The same receive, but each piece is folded into buf where it lies: a
   box line, a ring slot (see ZERO-COPY REDUCE). */
COLL_SHM_API int coll_shm_irecv_fold(void *ctx, int peer, void *buf, size_t bytes,
                                     coll_fold_fn fold, void *arg, int *handle)
{
    if (!fold)
        return COLL_ERR_INVAL;
    return coll_shm__ipost((coll_shm *)ctx, 0, peer, buf, bytes, fold, arg, handle);
}

COLL_SHM_API int coll_shm_wait(void *ctx, int handle, int block)
{
    coll_shm *s = (coll_shm *)ctx;
    if (handle < 0 || handle >= COLL_SHM_HANDLES || !s->x[handle].used)
        return COLL_ERR_INVAL;
    return coll_shm__wait(s, &handle, 1, block);
}

/* ---- joining a group ---------------------------------------------------- */

/* coll.h calls it after a transport error: the peers stop at once. */
static void coll_shm__abort_hook(void *ctx, int code)
{
    coll_shm_abort((coll_shm *)ctx, code);
}

/* coll_port.attach: the communicators over this rank's end, counted. */
static int coll_shm__attach(void *ctx)
{
    return ((coll_shm *)ctx)->attached++;
}

/* Is process pid dead (gone, a zombie) or stopped (SIGSTOP, a tracer)?
   Read from /proc (a failure's question: never on a fast path). */
static int coll_shm__halted(pid_t pid)
{
    char path[64], buf[256], *p;
    FILE *f;
    size_t n;
    if (coll_shm__dead(pid))
        return 1;
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (!(f = fopen(path, "r")))
        return 0;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    p = strrchr(buf, ')');
    return p && p[1] == ' ' && (p[2] == 'T' || p[2] == 't');
}

/* Rank r's entry in our epoch's chain of waits: 1 + the peer it waits
   for, 0 none (an entry of another epoch is none). */
static int coll_shm__entry(const coll_shm *s, int r)
{
    const coll_shm__rankrec *rr = coll_shm__rec(s, r);
    uint64_t w;
    if (s->epoch == 0)
        return (int)__atomic_load_n(&rr->waiting, __ATOMIC_RELAXED);
    w = __atomic_load_n(&rr->ewait[s->epoch & 1], __ATOMIC_RELAXED);
    return (uint32_t)(w >> 32) == s->epoch ? (int)(uint32_t)w : 0;
}

/* Did rank r leave its entry in a poll (wait(h, 0): not done yet) so long
   ago that it no longer waits - it stopped calling (a silent rank)? An
   entry left in a blocking wait stands: the rank is still in it, or its
   wait gave up and the chain outlives the failure. */
static int coll_shm__quiet(const coll_shm *s, int r, uint64_t now_ms)
{
    uint64_t polled = __atomic_load_n(&coll_shm__rec(s, r)->polled, __ATOMIC_RELAXED);
    uint64_t limit = s->timeout_ms ? (uint64_t)s->timeout_ms * 3u / 4u : 1000u;
    if (limit < 10u * COLL_SHM_SLICE_MS)
        limit = 10u * COLL_SHM_SLICE_MS;
    return polled < COLL_SHM__GAVE && polled < now_ms && now_ms - polled > limit;
}

/* coll_port.missing: from `peer`, follow who waits for whom in our epoch
   through the ranks' records (at most nranks hops; every value read is
   checked) to the rank that waits for nobody - or, sooner, to one that
   cannot answer: dead or stopped (its pid, our private copy; not one that
   gave up for the failure and left), not in our
   epoch yet (a renewed epoch's entry in its record), or no longer in the
   wait its entry names (a poller gone silent). Where the chain ends at a rank that is
   alive and merely between two waits, or runs round a cycle, a rank of
   our epoch that is dead or stopped is the better answer, if there is
   one. */
/* Can rank r not answer: dead or stopped - and not after giving up for
   the failure itself (a rank that failed and left, or was stopped since:
   its entry leads on)? */
static int coll_shm__cannot(const coll_shm *s, int r)
{
    return coll_shm__halted((pid_t)s->pid[r]) &&
           (coll_shm__entry(s, r) == 0 ||
            __atomic_load_n(&coll_shm__rec(s, r)->polled, __ATOMIC_RELAXED) != COLL_SHM__GAVE);
}

static int coll_shm__missing(void *ctx, int peer)
{
    coll_shm *s = (coll_shm *)ctx;
    uint64_t now = coll_shm__now_ms();
    int hops, next, r;
    if (peer < 0 || peer >= s->nranks) return peer;
    for (hops = 0; hops < s->nranks; hops++) {
        if (peer != s->rank && coll_shm__cannot(s, peer))
            return peer;
        next = coll_shm__entry(s, peer) - 1;
        if (COLL_SHM__LOAD(&coll_shm__rec(s, peer)->epoch) < s->epoch)
            return peer;
        if (next < 0 || next >= s->nranks || next == peer)
            break;
        if (peer != s->rank && coll_shm__quiet(s, peer, now))
            return peer;
        peer = next;
    }
    for (r = 0; r < s->nranks; r++)
        if (r != s->rank && r != peer &&
            COLL_SHM__LOAD(&coll_shm__rec(s, r)->epoch) >= s->epoch && coll_shm__cannot(s, r))
            return r;
    return peer;
}

/* Drop what earlier epochs left at the front of the ring from `peer` to
   us (the fast box: coll_shm__box_front). A counter out of range stops
   it: the next receive from that peer says so. */
static void coll_shm__ring_drop(coll_shm *s, int peer)
{
    coll_shm__chan *c = coll_shm__chan_of(s, peer, s->rank);
    uint32_t tail = s->tail[peer], head = COLL_SHM__LOAD(&c->head);
    int freed = 0;
    if ((uint32_t)(head - tail) > COLL_SHM_SLOTS)
        return;
    while (tail != head && COLL_SHM__ONCE32(&c->slot[tail % COLL_SHM_SLOTS].epoch) < s->epoch) {
        tail++;
        s->tail[peer] = tail;
        COLL_SHM__STORE(&c->tail, tail);
        freed = 1;
    }
    if (freed)
        coll_shm__nudge(s, peer);
}

/* coll_port.renew: this rank's end starts epoch `epoch` (see EPOCHS).
   Local: it fails no one, waits for no one. Every handle of this rank is
   void (coll.h has let go of each one an error left behind); message
   numbers start again from 0 towards and from every peer; our record
   says where we are before any message of the epoch leaves; and what
   earlier epochs left at the front of every road to us is dropped.
   COLL_ERR_INVAL for an epoch that is not later than ours. */
static int coll_shm__renew(void *ctx, uint32_t epoch)
{
    coll_shm *s = (coll_shm *)ctx;
    int r, h;
    if (epoch <= s->epoch)
        return COLL_ERR_INVAL;
    for (h = 0; h < COLL_SHM_HANDLES + 2; h++)
        s->x[h].used = 0, s->x[h].finished = 1;
    s->live = 0;
    s->epoch = epoch;
    memset(s->sseq, 0, sizeof s->sseq);
    memset(s->rseq, 0, sizeof s->rseq);
    COLL_SHM__SC_STORE(&coll_shm__rec(s, s->rank)->epoch, epoch);
    for (r = 0; r < s->nranks; r++) {
        if (r == s->rank)
            continue;
#if COLL_SHM_FBOX > 0
        {
            uint32_t st;
            (void)coll_shm__box_front(s, r, &st);
        }
#endif
        coll_shm__ring_drop(s, r);
    }
    s->fresh = 1;                 /* the deadline starts again */
    return 0;
}

/* ---- windows: a heap in the segment (coll_window.h) ------------------- */

#if COLL_SHM_HEAP_BYTES > 0
/* Rank r's window entry (r: our own rank or one checked by the caller). */
static coll_shm__winent *coll_shm__went(const coll_shm *s, int r)
{
    return (coll_shm__winent *)(s->base + coll_shm__chans_end(s->nranks)) + r;
}

/* The heap's place and size in this process, from nranks alone (private:
   never read back from the segment); nothing allocated, no sync yet. */
static void coll_shm__heap_set(coll_shm *s)
{
    s->part_bytes = coll_shm__part_bytes(s->nranks);
    s->heap_bytes = s->part_bytes * (size_t)s->nranks;
    s->heap = s->base + coll_shm__chans_end(s->nranks) + coll_shm__wents_bytes(s->nranks);
    s->heap_used = 0;
    s->wsyncs = 0;
    s->wposts = 0;
}

/* The offset from the heap's start of `bytes` at p. COLL_SHM__NOWHERE for
   NULL, or for a buffer elsewhere of which the call touches nothing; a
   buffer (or NULL) with bytes outside the heap clears *ok. */
static uint64_t coll_shm__win_at(const coll_shm *s, const void *p, size_t bytes, int *ok)
{
    uintptr_t a = (uintptr_t)p, lo = (uintptr_t)s->heap;
    if (p && a >= lo && a - lo <= s->heap_bytes && bytes <= s->heap_bytes - (a - lo))
        return (uint64_t)(a - lo);
    if (bytes)
        *ok = 0;
    return COLL_SHM__NOWHERE;
}

/* coll_port.window_post: this rank's record into its entry as offsets
   (published by the next sync's count). A buffer the call touches outside
   the heap makes it a declined record: no buffers, no bytes, the sig as
   given - coll_window.h then runs coll.h's own call on every rank. */
static int coll_shm__window_post(void *ctx, const coll_window_rec *rec)
{
    coll_shm *s = (coll_shm *)ctx;
    coll_shm__winrec *e = &coll_shm__went(s, s->rank)->rec[s->wposts & 1u];
    size_t inl = rec->inl_bytes < sizeof rec->inl ? rec->inl_bytes : sizeof rec->inl;
    uint64_t so, dof;
    int k, ok = 1, rc = coll_shm__failed(s);
    if (rc)
        return rc;
    s->wposts++;
    __atomic_store_n(&e->inl_bytes, (uint64_t)inl, __ATOMIC_RELAXED);
    memcpy(e->inl, rec->inl, inl);     /* (the input rides whatever its buffers) */
    so = coll_shm__win_at(s, rec->src, rec->src_bytes, &ok);
    dof = coll_shm__win_at(s, rec->dst, rec->dst_bytes, &ok);
    __atomic_store_n(&e->src_off, ok ? so : COLL_SHM__NOWHERE, __ATOMIC_RELAXED);
    __atomic_store_n(&e->dst_off, ok ? dof : COLL_SHM__NOWHERE, __ATOMIC_RELAXED);
    __atomic_store_n(&e->src_bytes, ok ? (uint64_t)rec->src_bytes : 0u, __ATOMIC_RELAXED);
    __atomic_store_n(&e->dst_bytes, ok ? (uint64_t)rec->dst_bytes : 0u, __ATOMIC_RELAXED);
    for (k = 0; k < 4; k++)
        __atomic_store_n(&e->sig[k], rec->sig[k], __ATOMIC_RELAXED);
    return 0;
}

/* A window sync's wait on one rank (private, on the stack). */
typedef struct coll_shm__wwait {
    int r;                     /* the rank waited for                         */
    uint32_t mine;             /* the sync it must have entered               */
    uint64_t t0;               /* clock (ns) at the wait's first read         */
    uint64_t check_ms;         /* the last liveness check of the rank         */
} coll_shm__wwait;

/* Has rank r entered sync `mine` (counts compared modulo 2^32)? */
static int coll_shm__win_in(const coll_shm *s, int r, uint32_t mine)
{
    return (int32_t)(COLL_SHM__SC_LOAD(&coll_shm__went(s, r)->sync) - mine) >= 0;
}

/* A window sync's poll: over once rank r has entered sync `mine`. */
static int coll_shm__win_poll(coll_shm *s, void *arg, coll_shm__waiter *w, int *rc)
{
    const coll_shm__wwait *a = (const coll_shm__wwait *)arg;
    (void)w;
    *rc = 0;
    return coll_shm__win_in(s, a->r, a->mine);
}

/* A window sync's clock read: the first one names r in our entry
   (coll_port.missing) and starts the deadline; then the group's failure,
   every COLL_SHM_SLICE_MS whether r still lives (dead before it came: it
   never will, COLL_ERR_IO), and the deadline (timeout_ms since the wait
   began: COLL_ERR_TIMEOUT, in epoch 0 the whole group's, as in
   coll_shm__idle). 0 or the code. */
static int coll_shm__win_tick(coll_shm *s, void *arg, coll_shm__waiter *w, uint64_t now)
{
    coll_shm__wwait *a = (coll_shm__wwait *)arg;
    uint64_t ms = now / 1000000u;
    int rc;
    (void)w;
    if (!a->t0) {
        a->t0 = now;
        a->check_ms = ms;
        coll_shm__entry_set(s, 1 + a->r, COLL_SHM__STANDS);
    }
    if ((rc = coll_shm__failed(s)) != 0)
        return rc;
    if (ms - a->check_ms >= COLL_SHM_SLICE_MS) {
        a->check_ms = ms;
        if (coll_shm__dead((pid_t)s->pid[a->r]) && !coll_shm__win_in(s, a->r, a->mine))
            return COLL_ERR_IO;
    }
    if (s->timeout_ms && now - a->t0 >= (uint64_t)s->timeout_ms * 1000000u) {
        if (s->epoch == 0)
            coll_shm_abort(s, COLL_ERR_TIMEOUT);
        return COLL_ERR_TIMEOUT;
    }
    return 0;
}

/* A window sync's last look before a sleep: sleep a slice unless rank r
   has come meanwhile. All sequentially consistent, pairing with the
   syncing rank's store of its count and load of our `sleeping`: either
   we see its count or it sees us asleep and rings. */
static unsigned coll_shm__win_look(coll_shm *s, void *arg, coll_shm__waiter *w)
{
    const coll_shm__wwait *a = (const coll_shm__wwait *)arg;
    (void)w;
    return coll_shm__win_in(s, a->r, a->mine) ? 0u : (unsigned)COLL_SHM_SLICE_MS;
}

static const coll_shm__pred coll_shm__win_pred = {
    coll_shm__win_poll, coll_shm__win_tick, coll_shm__win_look
};

/* Wait until rank r has entered sync `mine` (coll_shm__until, see
   WAITING: the window sync's fixed spin, then yield, then sleep). Our
   entry names r while we wait (coll_port.missing). 0 or the code. */
static int coll_shm__win_await(coll_shm *s, int r, uint32_t mine)
{
    coll_shm__wwait a;
    coll_shm__waiter w;
    a.r = r;
    a.mine = mine;
    a.t0 = 0;
    a.check_ms = 0;
    coll_shm__waiter_init(&w, 0, 0);
    return coll_shm__until(s, &coll_shm__win_pred, &a, &w);
}

/* Wake every peer that says it sleeps (after our count's store). */
static void coll_shm__win_wake(coll_shm *s)
{
    int r;
    for (r = 0; r < s->nranks; r++)
        if (r != s->rank && COLL_SHM__SC_LOAD(&coll_shm__rec(s, r)->sleeping))
            coll_shm__ring(s, r);
}

/* coll_port.window_sync: a barrier of every rank. Our count goes up (a
   sequentially consistent store: our record and every load and store
   before it go with it), every sleeping peer is rung, then we wait until
   every rank's count has reached ours (acquire loads) - bounded by the
   deadline, ended by the group's failure or a dead rank. Done: our entry
   is cleared and the next message wait's deadline starts anew (progress);
   given up: the entry stands (polled COLL_SHM__GAVE), as a wait's. */
static int coll_shm__window_sync(void *ctx)
{
    coll_shm *s = (coll_shm *)ctx;
    uint32_t mine;
    int r, rc = coll_shm__failed(s);
    if (rc)
        return rc;
    mine = ++s->wsyncs;
    COLL_SHM__SC_STORE(&coll_shm__went(s, s->rank)->sync, mine);
    coll_shm__win_wake(s);
    for (r = 0; r < s->nranks && rc == 0; r++)
        if (r != s->rank)
            rc = coll_shm__win_await(s, r, mine);
    if (rc == 0 && (rc = coll_shm__failed(s)) == 0) {
        coll_shm__entry_set(s, 0, 0);
        s->fresh = 1;
        return 0;
    }
    if (s->polled != COLL_SHM__GAVE) {
        s->polled = COLL_SHM__GAVE;
        __atomic_store_n(&coll_shm__rec(s, s->rank)->polled, COLL_SHM__GAVE, __ATOMIC_RELAXED);
    }
    return rc;
}

/* A record's buffer as a pointer in this process: NOWHERE is NULL (and
   then no bytes); an offset and length must lie inside the heap, checked
   without overflow. 0 if they do not. */
static int coll_shm__win_ptr(const coll_shm *s, uint64_t off, uint64_t bytes, unsigned char **p)
{
    *p = NULL;
    if (off == COLL_SHM__NOWHERE)
        return bytes == 0;
    if (off > (uint64_t)s->heap_bytes || bytes > (uint64_t)s->heap_bytes - off)
        return 0;
    *p = s->heap + off;
    return 1;
}

/* coll_port.window_peer: rank r's record copied out of its entry, every
   field read once (any rank may rewrite it), its buffers checked to lie
   in the heap and turned into this process's pointers; NULL for a rank
   out of range or a buffer outside the heap. A declined record comes
   back declined. Good until the next window_peer(r). */
static const coll_window_rec *coll_shm__window_peer(void *ctx, int r)
{
    coll_shm *s = (coll_shm *)ctx;
    const coll_shm__winrec *e;
    coll_window_rec *w;
    uint64_t so, dof, sb, db, ib;
    unsigned char *sp, *dp;
    int k;
    if (r < 0 || r >= s->nranks)
        return NULL;
    e = &coll_shm__went(s, r)->rec[(s->wposts - 1u) & 1u];
    so = COLL_SHM__ONCE64(&e->src_off);
    dof = COLL_SHM__ONCE64(&e->dst_off);
    sb = COLL_SHM__ONCE64(&e->src_bytes);
    db = COLL_SHM__ONCE64(&e->dst_bytes);
    ib = COLL_SHM__ONCE64(&e->inl_bytes);
    if (!coll_shm__win_ptr(s, so, sb, &sp) || !coll_shm__win_ptr(s, dof, db, &dp) ||
        ib > sizeof w->inl)
        return NULL;
    w = &s->wpeer[r];
    w->inl_bytes = (size_t)ib;
    memcpy(w->inl, e->inl, (size_t)ib);
    w->src = sp;
    w->dst = dp;
    w->src_bytes = (size_t)sb;
    w->dst_bytes = (size_t)db;
    for (k = 0; k < 4; k++)
        w->sig[k] = COLL_SHM__ONCE64(&e->sig[k]);
    return w;
}
#endif /* COLL_SHM_HEAP_BYTES > 0 */

COLL_SHM_API void *coll_shm_alloc(coll_shm *s, size_t bytes)
{
#if COLL_SHM_HEAP_BYTES > 0
    unsigned char *p;
    if (!s || !s->base || bytes == 0 || bytes > s->part_bytes - s->heap_used)
        return NULL;
    p = s->heap + (size_t)s->rank * s->part_bytes + s->heap_used;
    s->heap_used += (bytes + COLL_SHM__LINE - 1) / COLL_SHM__LINE * COLL_SHM__LINE;
    return p;
#else
    (void)s;
    (void)bytes;
    return NULL;
#endif
}

COLL_SHM_API void coll_shm_alloc_reset(coll_shm *s)
{
#if COLL_SHM_HEAP_BYTES > 0
    if (s)
        s->heap_used = 0;
#else
    (void)s;
#endif
}

static void coll_shm__port(coll_shm *s, coll_port *port)
{
    memset(port, 0, sizeof *port);     /* members this port does not know */
    port->ctx = s;
    port->send = coll_shm_send;
    port->recv = coll_shm_recv;
    port->sendrecv = coll_shm_sendrecv;
    port->isend = coll_shm_isend;
    port->irecv = coll_shm_irecv;
    port->wait = coll_shm_wait;
    port->abort = coll_shm__abort_hook;
    port->irecv_fold = coll_shm_irecv_fold;
    port->attach = coll_shm__attach;
    port->missing = coll_shm__missing;
    port->renew = coll_shm__renew;
#if COLL_SHM_HEAP_BYTES > 0
    if (s->part_bytes > 0) {           /* windows only over a heap */
        port->window_post = coll_shm__window_post;
        port->window_sync = coll_shm__window_sync;
        port->window_peer = coll_shm__window_peer;
        port->window_inline = 1;
    }
#endif
}

/* Where a joiner's segment came from: the name, and the object it named
   when we opened it - to notice that the segment has been left behind. */
typedef struct coll_shm__where {
    const char *name;
    dev_t dev;
    ino_t ino;
} coll_shm__where;

/* Is the segment we mapped a dead run's? Its creator has died (before the
   group is complete nobody else can finish it), or the name now refers to
   another object (the next run's rank 0 has replaced it). */
static int coll_shm__stale(const coll_shm *s, const coll_shm__where *w)
{
    coll_shm__group *g = coll_shm__grp(s);
    int32_t creator = (int32_t)COLL_SHM__ONCE32(&g->creator);
    struct stat st;
    int fd, moved = 0;
    if (creator > 0 && !coll_shm__alive(creator, COLL_SHM__ONCE64(&g->creator_start)))
        return 1;
    fd = shm_open(w->name, O_RDONLY, 0);
    if (fd >= 0) {
        moved = fstat(fd, &st) == 0 && (st.st_dev != w->dev || st.st_ino != w->ino);
        close(fd);
    }
    return moved;
}

static int coll_shm__any_dead(const coll_shm *s)
{
    int r;
    for (r = 0; r < s->nranks; r++)
        if (r != s->rank && coll_shm__dead((pid_t)s->pid[r]))
            return 1;
    return 0;
}

/* Wait until *word >= want, sleeping on our bell. Every slice it also
   looks at the group's failed word and the deadline, and either (w: a
   joiner, before the group is complete) whether the segment went stale,
   or (peers) whether every peer still lives. */
static int coll_shm__await(coll_shm *s, uint32_t *word, uint32_t want, uint64_t deadline,
                           const coll_shm__where *w, int peers)
{
    coll_shm__rankrec *me = coll_shm__rec(s, s->rank);
    uint64_t next = 0;
    int rc;
    while (COLL_SHM__SC_LOAD(word) < want) {
        uint32_t bell;
        uint64_t now = coll_shm__now_ms();
        if ((rc = coll_shm__failed(s)) == 0 && now >= deadline)
            rc = COLL_ERR_TIMEOUT;
        if (rc == 0 && now >= next) {
            next = now + COLL_SHM_SLICE_MS;
            if (w && coll_shm__stale(s, w))
                rc = COLL_SHM__STALE;
            else if (peers && coll_shm__any_dead(s))
                rc = COLL_ERR_IO;
        }
        /* The count may have completed since we looked, and a fast peer
           already finished, failed or exited: a full count still counts. */
        if (rc)
            return COLL_SHM__SC_LOAD(word) >= want ? 0 : rc;
        COLL_SHM__SC_STORE(&me->sleeping, 1u);
        bell = COLL_SHM__SC_LOAD(&me->bell);
        if (COLL_SHM__SC_LOAD(word) < want)
            coll_shm__sleep(&me->bell, bell, COLL_SHM_SLICE_MS);
        COLL_SHM__SC_STORE(&me->sleeping, 0u);
    }
    return 0;
}

#define COLL_SHM__PROBE 0x70726f6265ull                    /* "probe" */

/* The spin budget for `ranks` ranks on ncpu cores (see WAITING). */
static void coll_shm__tune_spin(coll_shm *s, long ncpu, int ranks)
{
    s->over = !(ncpu > 0 && ranks <= ncpu);
    s->spin_max = s->over ? 1000u : (uint32_t)COLL_SHM_SPIN_US * 1000u;
    if (s->spin_max < COLL_SHM__SPIN_MIN)
        s->spin_max = COLL_SHM__SPIN_MIN;
    s->spin_ns = s->spin_max;
}

/* How this rank sends and waits, from the cores online and the
   environment: the CMA threshold (COLL_SHM_CMA_MIN overrides the
   default), and the spin budget - spinning only pays where the peer may
   have a core of its own (see WAITING). */
static void coll_shm__tune(coll_shm *s, int nranks)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    const char *e = getenv("COLL_SHM_CMA_MIN");
    s->cma_min = COLL_SHM_CMA_MIN;
    if (e && *e)
        s->cma_min = (size_t)strtoull(e, NULL, 10);
    coll_shm__tune_spin(s, ncpu, nranks);
}

COLL_SHM_API int coll_shm_set_neighbours(coll_shm *s, int ranks)
{
    if (!s || ranks < s->nranks) return COLL_ERR_INVAL;
    coll_shm__tune_spin(s, sysconf(_SC_NPROCESSORS_ONLN), ranks);
    return COLL_OK;
}

/* The private side of a joining rank: its place and deadline, its tuning,
   and every counter, copy and handle cleared (s may have been another
   group's); the run's nonce is copied from the header once. */
static void coll_shm__reset(coll_shm *s, int rank, int nranks, unsigned timeout_ms)
{
    s->rank = rank;
    s->nranks = nranks;
    s->timeout_ms = timeout_ms;
    s->attached = 0;
    s->epoch = 0;
    coll_shm__tune(s, nranks);
    s->mb = 0;                     /* fences until every rank has registered */
    s->woke = 0;
    s->turn_ns = 0;
    s->posted = 0;
    s->last_ms = s->check_ms = coll_shm__now_ms();
    s->probe = COLL_SHM__PROBE;
    s->nonce = COLL_SHM__ONCE64(&coll_shm__grp(s)->nonce);
    s->cma = s->cma_agreed = 0;
    memset(s->pid, 0, sizeof s->pid);
    memset(s->head, 0, sizeof s->head);
    memset(s->tail, 0, sizeof s->tail);
    memset(s->sseq, 0, sizeof s->sseq);
    memset(s->rseq, 0, sizeof s->rseq);
    memset(s->bhead, 0, sizeof s->bhead);
    memset(s->btail, 0, sizeof s->btail);
    s->live = 0;
    s->fresh = 0;
    s->folded_box = s->folded_ring = s->folded_cma = 0;
    memset(s->x, 0, sizeof s->x);
#if COLL_SHM_HEAP_BYTES > 0
    coll_shm__heap_set(s);
#endif
}

/* Our record in the segment: pid, epoch 0, an entry that stands, the
   address of the word the peers' CMA probe reads, and the run's nonce
   (published by the count that follows). */
static void coll_shm__record(coll_shm *s)
{
    coll_shm__rankrec *me = coll_shm__rec(s, s->rank);
    me->pid = (int32_t)getpid();
    me->epoch = 0;
    s->polled = COLL_SHM__STANDS;
    me->polled = COLL_SHM__STANDS;
    me->probe_addr = (uint64_t)(uintptr_t)&s->probe;
    me->nonce = s->nonce;
}

/* Count ourselves into a stage of the join (`joined`, `probed`) and ring
   every rank's bell, so that whoever waits for the count looks again. */
static void coll_shm__count_in(coll_shm *s, uint32_t *word)
{
    int r;
    __atomic_fetch_add(word, 1u, __ATOMIC_SEQ_CST);
    for (r = 0; r < s->nranks; r++)
        coll_shm__ring(s, r);
}

/* Once all have joined: take private copies of the peers' pids. A record
   without this run's nonce was never written by a member of this run
   (`joined` can be miscounted by anybody): refuse the group, COLL_ERR_IO. */
static int coll_shm__take_pids(coll_shm *s)
{
    int r;
    for (r = 0; r < s->nranks; r++) {
        coll_shm__rankrec *p = coll_shm__rec(s, r);
        int32_t pid = (int32_t)COLL_SHM__ONCE32(&p->pid);
        if (COLL_SHM__ONCE64(&p->nonce) != s->nonce || pid <= 0) {
            s->why = "a rank's record in the segment is not of this run";
            coll_shm_abort(s, COLL_ERR_IO);
            return COLL_ERR_IO;
        }
        s->pid[r] = r == s->rank ? (int32_t)getpid() : pid;
    }
    return 0;
}

/* What this rank can use: process_vm_readv of every peer's probe word
   (CMA), and membarrier; a no marks the group's no_cma or no_mb, which
   every rank reads once all have probed. */
static void coll_shm__probe_peers(coll_shm *s)
{
    coll_shm__group *g = coll_shm__grp(s);
    int r;
    for (r = 0; r < s->nranks; r++) {
        uint64_t v = 0;
        if (r == s->rank)
            continue;
        if (coll_shm__cma_read((pid_t)s->pid[r], &v,
                               COLL_SHM__ONCE64(&coll_shm__rec(s, r)->probe_addr), sizeof v) != 0 ||
            v != COLL_SHM__PROBE)
            COLL_SHM__SC_STORE(&g->no_cma, 1u);
    }
#if defined(SYS_membarrier)
    if (syscall(SYS_membarrier, COLL_SHM__MB_REGISTER_GLOBAL_EXPEDITED, 0, 0) != 0)
#endif
        COLL_SHM__SC_STORE(&g->no_mb, 1u);
}

/* Everything after the segment is mapped: record ourselves (pid, probe
   address, the run's nonce), wait for the others, take private copies of
   their pids, probe CMA towards every peer, agree on the answer. The
   whole join ends by `deadline`. */
static int coll_shm__join(coll_shm *s, int rank, int nranks, unsigned timeout_ms,
                          uint64_t deadline, const coll_shm__where *w, coll_port *port)
{
    coll_shm__group *g = coll_shm__grp(s);
    int rc;
    coll_shm__reset(s, rank, nranks, timeout_ms);
    coll_shm__record(s);
    /* A joiner counts itself only into a live run's segment - else the
       ranks that keep finding a dead run's segment would fill its count -
       and looks once more when the count is full: a creator that died
       meanwhile leaves a group nobody can finish. */
    if (w && coll_shm__stale(s, w))
        return COLL_SHM__STALE;
    coll_shm__count_in(s, &g->joined);
    if ((rc = coll_shm__await(s, &g->joined, (uint32_t)nranks, deadline, w, 0)) != 0)
        return rc;
    if (w && coll_shm__stale(s, w))
        return COLL_SHM__STALE;
    if ((rc = coll_shm__take_pids(s)) != 0)
        return rc;
    coll_shm__probe_peers(s);
    coll_shm__count_in(s, &g->probed);
    if ((rc = coll_shm__await(s, &g->probed, (uint32_t)nranks, deadline, NULL, 1)) != 0)
        return rc;
    /* read once: from here on only the private answer counts */
    s->cma_agreed = s->cma = COLL_SHM__SC_LOAD(&g->no_cma) == 0;
    s->mb = COLL_SHM__SC_LOAD(&g->no_mb) == 0;
    coll_shm__port(s, port);
    return 0;
}

/* May we join the object fd? Only a regular file of our own user that
   neither group nor others can reach (ours are made 0600): another
   user's object, or one others may write, could be read and rewritten
   behind our back, and a forged slot would then steer our copies. */
static int coll_shm__safe(coll_shm *s, int fd, struct stat *st)
{
    if (fstat(fd, st) != 0) {
        s->why = "fstat on the shared memory object failed";
        return COLL_ERR_IO;
    }
    if (!S_ISREG(st->st_mode) || st->st_uid != geteuid()) {
        s->why = "the shared memory object belongs to another user: refused";
        return COLL_SHM_ERR_ACCESS;
    }
    if (st->st_mode & (S_IRWXG | S_IRWXO)) {
        s->why = "the shared memory object is open to group or others: refused";
        return COLL_SHM_ERR_ACCESS;
    }
    return 0;
}

static const char coll_shm__not_ours[] =
    "the name exists and is not a coll segment (remove it with shm_unlink)";

/* Rank 0 found `name` taken. A dead run's segment (its creator is gone)
   is removed: COLL_SHM__STALE, try again. Anything else is refused. */
static int coll_shm__inspect(coll_shm *s, const char *name)
{
    struct stat st;
    coll_shm__group h;
    void *p;
    int fd = shm_open(name, O_RDONLY, 0), rc;
    if (fd < 0) {
        if (errno == ENOENT)
            return COLL_SHM__STALE;                   /* gone meanwhile */
        s->why = "the name exists and cannot be opened: refused";
        return errno == EACCES ? COLL_SHM_ERR_ACCESS : COLL_ERR_IO;
    }
    if ((rc = coll_shm__safe(s, fd, &st)) != 0) {
        close(fd);
        return rc;
    }
    if ((size_t)st.st_size < sizeof h) {
        close(fd);
        s->why = coll_shm__not_ours;
        return COLL_ERR_IO;
    }
    p = mmap(NULL, sizeof h, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        s->why = "mmap of the existing object failed";
        return COLL_ERR_IO;
    }
    memcpy(&h, p, sizeof h);
    munmap(p, sizeof h);
    /* magic 0 with a creator: killed while writing the header */
    if (h.creator <= 0 || (h.magic != COLL_SHM__MAGIC && h.magic != 0)) {
        s->why = coll_shm__not_ours;
        return COLL_ERR_IO;
    }
    if (coll_shm__alive(h.creator, h.creator_start)) {
        s->why = "the name is in use by a running group";
        return COLL_ERR_IO;
    }
    shm_unlink(name);
    return COLL_SHM__STALE;
}

/* Rank 0 drops the name once all have mapped it - if it still names our
   object (it always should; two runs must not share a name). */
static void coll_shm__unlink_ours(const coll_shm__where *w)
{
    struct stat st;
    int fd = shm_open(w->name, O_RDONLY, 0);
    if (fd < 0)
        return;
    if (fstat(fd, &st) == 0 && st.st_dev == w->dev && st.st_ino == w->ino)
        shm_unlink(w->name);
    close(fd);
}

/* The creator's part of the header; `magic` last, it says "complete". */
static void coll_shm__stamp(coll_shm__group *g, int nranks)
{
    uint64_t start;
    coll_shm__proc_dead(getpid(), &start);
    g->nranks = (uint32_t)nranks;
    g->creator = (int32_t)getpid();
    g->creator_start = start;
    g->nonce = coll_shm__random();
    COLL_SHM__SC_STORE(&g->magic, COLL_SHM__MAGIC);
}

/* ---- room in /dev/shm ------------------------------------------------------ */

/* Free bytes on the file system of `fd` (or of /dev/shm when fd < 0);
   UINT64_MAX when unknown. */
static uint64_t coll_shm__room(int fd)
{
    struct statvfs v;
    if ((fd >= 0 ? fstatvfs(fd, &v) : statvfs("/dev/shm", &v)) != 0)
        return UINT64_MAX;
    return (uint64_t)v.f_bavail * (uint64_t)v.f_frsize;
}

static void coll_shm__say_room(coll_shm *s, const char *what, uint64_t need, uint64_t room,
                               int nranks)
{
    char free_kib[32] = "?";
    if (room != UINT64_MAX)
        snprintf(free_kib, sizeof free_kib, "%llu", (unsigned long long)(room / 1024));
    snprintf(s->why_buf, sizeof s->why_buf, "%s: /dev/shm has %s KiB free, the segment "
             "for %d ranks needs %llu KiB (give /dev/shm more room, e.g. docker --shm-size)",
             what, free_kib, nranks, (unsigned long long)((need + 1023) / 1024));
    s->why = s->why_buf;
}

/* Gives the new object its size by reserving every page of it: tmpfs lets
   ftruncate promise more than /dev/shm holds, and the first touch past
   the room is then a SIGBUS in whichever rank gets there. posix_fallocate
   fails instead (ENOSPC), and the object keeps size 0 until all of it is
   reserved, so no joiner maps it before. 0 or an errno value. */
static int coll_shm__reserve(int fd, size_t size)
{
    int e;
    do
        e = posix_fallocate(fd, 0, (off_t)size);
    while (e == EINTR);
    if (e == EINVAL || e == EOPNOTSUPP || e == ENOSYS)    /* cannot reserve here */
        e = ftruncate(fd, (off_t)size) == 0 ? 0 : errno;
    return e;
}

static int coll_shm__map(coll_shm *s, int fd, size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        s->why = "mmap of the segment failed";
        return COLL_ERR_IO;
    }
    s->base = (unsigned char *)p;
    s->size = size;
    return 0;
}

/* Rank 0 found no room for the segment: it tells the joiners through a
   coll_shm__noroom record under the name, waits until all have read it
   (or the deadline), and removes the name. */
static int coll_shm__no_room(coll_shm *s, int fd, const coll_shm__where *w, int nranks,
                             size_t need, uint64_t deadline)
{
    uint64_t room = coll_shm__room(fd);
    if (nranks > 1 && coll_shm__reserve(fd, sizeof(coll_shm__noroom)) != 0)
        close(fd);                    /* not even the record fits: joiners time out */
    else if (nranks > 1 && coll_shm__map(s, fd, sizeof(coll_shm__noroom)) == 0) {
        coll_shm__noroom *rec = (coll_shm__noroom *)s->base;
        rec->need = need;
        rec->room = room;
        rec->g.failed = COLL_ERR_NOSPC;
        coll_shm__stamp(&rec->g, nranks);            /* magic last: complete */
        while (COLL_SHM__SC_LOAD(&rec->g.joined) < (uint32_t)(nranks - 1) &&
               coll_shm__now_ms() < deadline)
            coll_shm__nap_ms(1);
    } else if (nranks == 1) {
        close(fd);
    }
    coll_shm__unlink_ours(w);
    coll_shm__say_room(s, "no room for the shared segment", need, room, nranks);
    return COLL_ERR_NOSPC;
}

/* A joiner found rank 0's no-room record: the same error, the same figures. */
static int coll_shm__no_room_seen(coll_shm *s, int nranks)
{
    coll_shm__noroom *rec = (coll_shm__noroom *)s->base;
    int rc = coll_shm__failed(s);
    coll_shm__say_room(s, "rank 0 found no room for the shared segment",
                       COLL_SHM__ONCE64(&rec->need), COLL_SHM__ONCE64(&rec->room), nranks);
    __atomic_fetch_add(&rec->g.joined, 1u, __ATOMIC_SEQ_CST);
    return rc ? rc : COLL_ERR_IO;
}

static int coll_shm__open0(coll_shm *s, const char *name, int nranks, unsigned timeout_ms,
                           uint64_t deadline, coll_port *port)
{
    size_t size = coll_shm__bytes(nranks);
    coll_shm__where w;
    struct stat st;
    int fd, rc, tries;
    for (tries = 0;; tries++) {
        fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
        if (fd >= 0)
            break;
        if (errno != EEXIST) {
            s->why = "shm_open failed (no /dev/shm, or a bad name)";
            return COLL_ERR_IO;
        }
        if (tries == 3) {
            s->why = "the name keeps reappearing: another run is using it";
            return COLL_ERR_IO;
        }
        if ((rc = coll_shm__inspect(s, name)) != COLL_SHM__STALE)
            return rc;
    }
    if (fstat(fd, &st) != 0) {
        close(fd);
        shm_unlink(name);
        s->why = "fstat on the shared memory object failed";
        return COLL_ERR_IO;
    }
    w.name = name;
    w.dev = st.st_dev;
    w.ino = st.st_ino;
    rc = coll_shm__reserve(fd, size);
    if (rc == ENOSPC || rc == ENOMEM || rc == EFBIG)
        return coll_shm__no_room(s, fd, &w, nranks, size, deadline);
    if (rc != 0) {
        close(fd);
        shm_unlink(name);
        s->why = "could not size the shared memory object";
        return COLL_ERR_IO;
    }
    if ((rc = coll_shm__map(s, fd, size)) != 0) {
        shm_unlink(name);
        return rc;
    }
    coll_shm__stamp(coll_shm__grp(s), nranks);
    rc = coll_shm__join(s, 0, nranks, timeout_ms, deadline, NULL, port);
    coll_shm__unlink_ours(&w);   /* all mapped it (or gave up): drop the name */
    return rc;
}

/* A joiner's deadline passed before rank 0's segment appeared: the
   reason names both sizes if /dev/shm lacks the room (perhaps why rank 0
   could not make it). */
static int coll_shm__late(coll_shm *s, size_t size, int nranks)
{
    uint64_t room = coll_shm__room(-1);
    s->why = "timed out waiting for rank 0 to make the segment";
    if (room < size)
        coll_shm__say_room(s, s->why, size, room, nranks);
    return COLL_ERR_TIMEOUT;
}

/* One look under w->name for rank 0's segment: mapped (0; *norec: it is
   rank 0's no-room record instead, and w has the object's identity), not
   there or not sized yet (1: look again in a moment), or refused (a
   negative code). */
static int coll_shm__find(coll_shm *s, coll_shm__where *w, size_t size, int *norec)
{
    struct stat st;
    int rc, fd = shm_open(w->name, O_RDWR, 0);
    if (fd < 0) {
        if (errno == EACCES) {
            s->why = "the name exists and cannot be opened: refused";
            return COLL_SHM_ERR_ACCESS;
        }
        if (errno != ENOENT) {
            s->why = "shm_open failed (no /dev/shm, or a bad name)";
            return COLL_ERR_IO;
        }
        return 1;
    }
    if ((rc = coll_shm__safe(s, fd, &st)) != 0) {
        close(fd);
        return rc;
    }
    *norec = (size_t)st.st_size == sizeof(coll_shm__noroom);
    if ((size_t)st.st_size != size && !*norec) {   /* being sized, or not ours yet */
        close(fd);
        return 1;
    }
    if ((rc = coll_shm__map(s, fd, *norec ? sizeof(coll_shm__noroom) : size)) != 0)
        return rc;
    w->dev = st.st_dev;
    w->ino = st.st_ino;
    return 0;
}

/* Wait, by `deadline`, for the mapped segment's header to be complete
   (its magic); every slice, whether it went stale meanwhile. 0,
   COLL_ERR_TIMEOUT or COLL_SHM__STALE. */
static int coll_shm__await_magic(coll_shm *s, const coll_shm__where *w, uint64_t deadline)
{
    coll_shm__group *g = coll_shm__grp(s);
    uint64_t next = 0;
    while (COLL_SHM__SC_LOAD(&g->magic) != COLL_SHM__MAGIC) {
        uint64_t now = coll_shm__now_ms();
        if (now >= deadline) {
            s->why = "timed out waiting for rank 0 to make the segment";
            return COLL_ERR_TIMEOUT;
        }
        if (now >= next) {
            next = now + COLL_SHM_SLICE_MS;
            if (coll_shm__stale(s, w))
                return COLL_SHM__STALE;
        }
        coll_shm__nap_ms(1);
    }
    return 0;
}

/* A joiner with rank 0's object mapped: once its header is complete and
   made for our nranks, join the group - or, a no-room record, return its
   error. COLL_SHM__STALE: a dead run's, wait for the next. */
static int coll_shm__enter(coll_shm *s, const coll_shm__where *w, int norec, int rank,
                           int nranks, unsigned timeout_ms, uint64_t deadline, coll_port *port)
{
    int rc = coll_shm__await_magic(s, w, deadline);
    if (rc == 0 && COLL_SHM__ONCE32(&coll_shm__grp(s)->nranks) != (uint32_t)nranks) {
        s->why = "the group was made for another number of ranks";
        rc = COLL_ERR_MISMATCH;
    }
    if (rc == 0 && norec)
        rc = coll_shm__no_room_seen(s, nranks);
    else if (rc == 0)
        rc = coll_shm__join(s, rank, nranks, timeout_ms, deadline, w, port);
    return rc;
}

/* A joiner: wait for rank 0's segment under `name`, join it; a dead run's
   segment found on the way is left for the next one. */
static int coll_shm__openk(coll_shm *s, const char *name, int rank, int nranks,
                           unsigned timeout_ms, uint64_t deadline, coll_port *port)
{
    size_t size = coll_shm__bytes(nranks);
    coll_shm__where w;
    int rc, norec = 0;
    w.name = name;
    for (;;) {
        if (coll_shm__now_ms() >= deadline)
            return coll_shm__late(s, size, nranks);
        if ((rc = coll_shm__find(s, &w, size, &norec)) < 0)
            return rc;
        if (rc > 0) {
            coll_shm__nap_ms(1);
            continue;
        }
        rc = coll_shm__enter(s, &w, norec, rank, nranks, timeout_ms, deadline, port);
        if (rc != COLL_SHM__STALE)
            return rc;
        coll_shm_close(s);           /* a dead run's: wait for the new one */
        coll_shm__nap_ms(COLL_SHM_SLICE_MS);
    }
}

COLL_SHM_API int coll_shm_open(coll_shm *s, const char *name, int rank, int nranks,
                               unsigned timeout_ms, coll_port *port)
{
    uint64_t deadline;
    int rc;
    if (!s || !name || !port || nranks < 1 || nranks > COLL_SHM_MAX_RANKS ||
        rank < 0 || rank >= nranks)
        return COLL_ERR_INVAL;
    deadline = coll_shm__now_ms() + (timeout_ms ? timeout_ms : COLL_SHM_JOIN_MS);
    s->base = NULL;
    s->size = 0;
    s->nranks = nranks;
    s->rank = rank;
    s->epoch = 0;
    s->why = NULL;
    rc = rank == 0 ? coll_shm__open0(s, name, nranks, timeout_ms, deadline, port)
                   : coll_shm__openk(s, name, rank, nranks, timeout_ms, deadline, port);
    if (rc) {
        if (!s->why)
            s->why = rc == COLL_ERR_TIMEOUT ? "timed out waiting for the other ranks to join"
                                            : "the group failed while joining";
        coll_shm_close(s);
    }
    return rc;
}

COLL_SHM_API void coll_shm_close(coll_shm *s)
{
    if (s->base)
        munmap(s->base, s->size);
    s->base = NULL;
}

/* ---- the forking launcher ------------------------------------------------ */

/* Child r of nranks keeps to the r-th core the launcher may use, when
   there are enough of them (and COLL_SHM_BIND is not "0"). Left to the
   scheduler, two ranks often end up on one core and stay there - the
   other core busy with another program for a moment, and then the pair
   that hands the core back and forth looks like one busy task - and
   every hand-off waits for the core instead of taking under a
   microsecond. */
static void coll_shm__bind(int r, int nranks)
{
#if defined(SYS_sched_getaffinity) && defined(SYS_sched_setaffinity)
    enum { W = 8 * sizeof(unsigned long), N = 1024 / W };
    unsigned long mask[N], one[N];
    const char *e = getenv("COLL_SHM_BIND");
    long got;
    int i, seen = 0;
    if (e && e[0] == '0' && e[1] == 0)
        return;
    memset(mask, 0, sizeof mask);
    got = syscall(SYS_sched_getaffinity, 0, sizeof mask, mask);
    if (got <= 0)
        return;
    for (i = 0; i < (int)(N * W); i++)
        seen += (mask[i / W] >> (i % W)) & 1u;
    if (seen < nranks)
        return;                 /* more ranks than cores: the scheduler's */
    for (i = 0, seen = 0; i < (int)(N * W); i++) {
        if (!((mask[i / W] >> (i % W)) & 1u) || seen++ != r)
            continue;
        memset(one, 0, sizeof one);
        one[i / W] = 1ul << (i % W);
        syscall(SYS_sched_setaffinity, 0, sizeof one, one);
        return;
    }
#else
    (void)r; (void)nranks;
#endif
}

COLL_SHM_API int coll_shm_init(coll_shm *s, const char *name, int rank, int nranks,
                               unsigned timeout_ms)
{
    coll_port unused;
    return coll_shm_open(s, name, rank, nranks, timeout_ms, &unused);
}

COLL_SHM_API coll_port coll_shm_port(coll_shm *s)
{
    coll_port p;
    coll_shm__port(s, &p);
    return p;
}

/* The launcher's segment: MAP_SHARED | MAP_ANONYMOUS before fork, so every
   child inherits the same pages and nothing is left to clean up when the
   last one exits; its header stamped as rank 0 would. 0 or COLL_ERR_IO. */
static int coll_shm__launch_map(coll_shm *parent, int nranks)
{
    size_t size = coll_shm__bytes(nranks);
    parent->base = (unsigned char *)mmap(NULL, size, PROT_READ | PROT_WRITE,
                                         MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (parent->base == (unsigned char *)MAP_FAILED)
        return COLL_ERR_IO;
    parent->size = size;
    parent->nranks = nranks;
    parent->epoch = 0;          /* the launcher aborts epoch 0 only       */
    coll_shm__stamp(coll_shm__grp(parent), nranks);
    return 0;
}

/* Child r, in its own process: bound to its core, it joins the inherited
   segment, runs fn and exits with 0 if both went well. */
static void coll_shm__child(const coll_shm *parent, int r, int nranks,
                            int (*fn)(int rank, coll_port *port, void *arg), void *arg,
                            unsigned timeout_ms)
{
    static coll_shm s;          /* one per child process                   */
    coll_port port;
    int rc;
    s.base = parent->base;
    s.size = parent->size;
    coll_shm__bind(r, nranks);
    rc = coll_shm__join(&s, r, nranks, timeout_ms, coll_shm__now_ms() +
                        (timeout_ms ? timeout_ms : COLL_SHM_JOIN_MS), NULL, &port);
    if (rc == 0)
        rc = fn(r, &port, arg);
    fflush(NULL);
    _exit(rc == 0 ? 0 : 1);
}

/* Fork the children, pids[r] each. Returns how many were started: where
   fork fails, the group is aborted and the launcher waits only for those
   that exist. */
static int coll_shm__fork_ranks(coll_shm *parent, pid_t *pids, int nranks,
                                int (*fn)(int rank, coll_port *port, void *arg), void *arg,
                                unsigned timeout_ms)
{
    int r;
    fflush(NULL);               /* or buffered output is written n+1 times  */
    for (r = 0; r < nranks; r++) {
        pids[r] = fork();
        if (pids[r] == 0)
            coll_shm__child(parent, r, nranks, fn, arg, timeout_ms);
        if (pids[r] < 0) {
            coll_shm_abort(parent, COLL_ERR_ABORTED);
            return r;
        }
    }
    return nranks;
}

/* Child pid p has been reaped with status st: it is no longer signalled
   (its pid may soon be somebody else's); 1 if it failed, and then the
   group is told to stop. */
static int coll_shm__reaped(coll_shm *parent, pid_t *pids, int nranks, pid_t p, int st)
{
    int r;
    for (r = 0; r < nranks; r++)
        if (pids[r] == p)
            pids[r] = 0;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    coll_shm_abort(parent, COLL_ERR_ABORTED);
    return 1;
}

/* Once the group has failed, the children still running `grace` ms
   later (kill_at, 0 not yet set) are killed - once (then UINT64_MAX),
   and only unreaped ones. Returns kill_at as it now stands. */
static uint64_t coll_shm__overdue(const coll_shm *parent, const pid_t *pids, int nranks,
                                  uint64_t kill_at, unsigned grace)
{
    int r;
    if (!kill_at && COLL_SHM__LOAD(&coll_shm__grp(parent)->failed))
        kill_at = coll_shm__now_ms() + grace;
    if (kill_at && coll_shm__now_ms() >= kill_at) {
        for (r = 0; r < nranks; r++)
            if (pids[r] > 0)
                kill(pids[r], SIGKILL);
        kill_at = UINT64_MAX;          /* once; keep reaping */
    }
    return kill_at;
}

/* Supervise the children until all are reaped; returns how many failed.
   At the first sign of trouble - a child that failed, or the group
   marked failed by a child's deadline - tell everybody to stop (they are
   probably waiting on the culprit) and give them timeout_ms (1 s if 0) to
   return before killing the rest: a rank stuck outside the port would
   otherwise hold the launcher forever. */
static int coll_shm__supervise(coll_shm *parent, pid_t *pids, int nranks, unsigned timeout_ms)
{
    uint64_t kill_at = 0;
    int alive, failed = 0;
    for (alive = nranks; alive > 0;) {
        int st;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p > 0) {
            failed += coll_shm__reaped(parent, pids, nranks, p, st);
            alive--;
            continue;
        }
        if (p < 0 && errno != EINTR)
            break;
        kill_at = coll_shm__overdue(parent, pids, nranks, kill_at,
                                    timeout_ms ? timeout_ms : 1000u);
        {
            struct timespec nap = {0, 5000000};   /* 5 ms: costs nothing */
            nanosleep(&nap, NULL);
        }
    }
    return failed;
}

COLL_SHM_API int coll_shm_spawn(int nranks, int (*fn)(int rank, coll_port *port, void *arg),
                                void *arg, unsigned timeout_ms)
{
    coll_shm parent;            /* the launcher's view: only base/nranks   */
    pid_t pids[COLL_SHM_MAX_RANKS];
    int started, failed;
    if (nranks < 1 || nranks > COLL_SHM_MAX_RANKS || !fn)
        return COLL_ERR_INVAL;
    if (coll_shm__launch_map(&parent, nranks) != 0)
        return COLL_ERR_IO;
    started = coll_shm__fork_ranks(&parent, pids, nranks, fn, arg, timeout_ms);
    failed = started < nranks;  /* a fork that failed counts as a child */
    failed += coll_shm__supervise(&parent, pids, started, timeout_ms);
    munmap(parent.base, parent.size);
    return failed;
}

#endif /* COLL_SHM_IMPLEMENTATION */
