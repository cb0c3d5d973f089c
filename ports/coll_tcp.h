/* coll_tcp.h - ranks as processes on one or many hosts over TCP, a port for coll.h

   USAGE
     In exactly one file:
         #define COLL_TCP_IMPLEMENTATION
         #include "ports/coll_tcp.h"
     (COLL_TCP_STATIC makes every function static.) Then, in every process:

         static coll_tcp t;                          caller-owned, ~32 KB (~25 KB
                                                     with COLL_TCP_NO_MAC)
         coll_tcp_init_env(&t, 10000);               MASTER_ADDR, MASTER_PORT,
                                                     WORLD_SIZE, RANK (as torchrun)
                                                     and COLL_TCP_TOKEN
         coll_port p = coll_tcp_port(&t);
         coll_init(&c, t.rank, t.nranks, &p, scratch, sizeof scratch);
         ...
         coll_tcp_close(&t);

     or coll_tcp_init(&t, "10.0.0.1", 29500, rank, world, 10000) with the
     same facts passed explicitly (the token still from COLL_TCP_TOKEN), or
     coll_tcp_init_token(..., token) with the token passed too. LOCAL_RANK,
     if set, is kept in t.local_rank (the process's index on its own host);
     it plays no part in the rendezvous.
     The implementation needs POSIX.1-2008 (getaddrinfo, clock_gettime),
     which a strict -std=c99 or -std=c11 hides unless a feature-test macro
     asks for it. When no such macro is set, this header asks for
     _POSIX_C_SOURCE 200809L itself, which takes effect only if no system
     header has been read yet: so in the implementation file include
     ports/coll_tcp.h first (it includes coll.h), or pass
     -D_POSIX_C_SOURCE=200809L. Too late on glibc stops the build with an
     #error that says so.

   THE JOB TOKEN
     Every rank of a job must know one shared secret, the job token: the
     environment variable COLL_TCP_TOKEN, or the `token` argument of
     coll_tcp_init_token. Make it once per job, for example
         export COLL_TCP_TOKEN=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
     and hand it to every rank the way MASTER_ADDR travels. Each connection
     of the rendezvous - to the master and between the other ranks - begins
     with a challenge-response both ways: each side sends a fresh 16-byte
     nonce and must answer with a keyed MAC (SipHash-2-4 under a key derived
     from the token) over both nonces and both hellos. So a process without
     the token cannot join as a rank, cannot pose as the master or as any
     other rank, and is never sent anyone's data. With no token configured,
     init refuses (COLL_ERR_INVAL, with a line on stderr saying why) unless
     COLL_TCP_INSECURE=1 is set: then the same handshake runs under a
     publicly known key, which checks versions and nothing else. A world of
     one rank needs no token. The key is wiped from the struct once the
     mesh is up. What the token does and does not protect against:
     ports/README.md, "Threat model".

   THE RENDEZVOUS (the torch.distributed / OneFlow launch convention)
     Rank 0 listens on MASTER_PORT (bound to MASTER_ADDR when that is one of
     its own addresses, else to every address). Every other rank connects to
     it, opens its own listening socket on the local address that reached
     the master (port chosen by the kernel), and introduces itself (rank,
     world, address, port) in an authenticated hello. When all WORLD_SIZE - 1
     have registered, rank 0 sends the table of addresses, with a MAC, to
     each of them. Then each rank r connects to every rank 0 < j < r and
     accepts a connection from every rank above it, each link authenticated
     the same way; the registration connection itself becomes the link to
     rank 0. Result: a full mesh, one TCP connection per pair, TCP_NODELAY,
     non-blocking. Because each rank advertises the address its own kernel
     used to reach the master, this works across hosts with no configuration.

     Listeners serve up to COLL_TCP_MAX_PENDING connections at once with
     poll(), each with its own short deadline (COLL_TCP_HELLO_MS): a stranger
     that connects and says nothing, a connection that speaks something else,
     a peer of another protocol version or one that fails the token check is
     dropped with one line on stderr (COLL_TCP_LOG; for the first 64, then
     one line with the total) and counted in t.dropped; the rendezvous goes
     on. When every slot is taken and more connections wait, the least
     promising slot is recycled (coll_tcp__victim), and the listen backlog
     is deep: a flood of strangers delays the ranks, within limits that
     ports/README.md ("Threat model") states. Only an authenticated peer can make
     it fail: one that claims a rank already taken, or disagrees on
     WORLD_SIZE or the keyed mode (COLL_ERR_MISMATCH). The other way round, a rank that reaches
     something that fails the token check where the master or a peer should
     be gives COLL_TCP_ERR_AUTH, and one that answers with another protocol
     version COLL_TCP_ERR_VERSION: an error, never forged data.

   DEADLINES AND FAILURES
     timeout_ms bounds the whole rendezvous, and every transfer: a wait that
     sees no byte move for timeout_ms returns COLL_ERR_TIMEOUT (0 means
     COLL_TCP_DEFAULT_TIMEOUT_MS). A peer that closed or died (EOF, reset)
     gives COLL_ERR_IO; sends say MSG_NOSIGNAL, so a dead peer never raises
     SIGPIPE. The first failure breaks the port's epoch: every pending
     transfer ends with it, every live link is sent an abort frame, so the
     other ranks fail at once (COLL_ERR_IO) instead of each waiting out its
     own deadline, and every later call returns that first code - until
     renew. No call blocks without a deadline. coll_port.missing names the
     rank that never answered: a wait idle for a quarter of the deadline tells
     every peer whom it waits for, and abort frames carry the rank the
     first failure named, so every rank names the same one (>>missing).

   EPOCHS (coll_port.renew, for coll_comm_shrink)
     Every message travels in a frame whose 16-byte header carries its
     sender's epoch (0 until renew) and its length, and whose trailer says
     whether the sender finished it (>>frames). renew(ctx, e) starts epoch e
     at this rank's end: the epoch's failure is forgotten, transfers still
     posted are dropped, and from then on a frame of an older epoch is read
     and discarded unseen, and a frame from a peer already in a later epoch
     is held (header read, payload not) until this rank gets there - a
     receive of an older epoch that meets it fails without taking it. A
     transfer given up mid-frame leaves a debt on its link (the sender sends
     the rest as a voided frame, the receiver reads past it), so live links
     stay in step however calls end. After renew a dead link (EOF, reset)
     or a deadline fails only the calls it touches; an abort (coll.h's,
     coll_tcp_abort, or a peer's abort frame of the same epoch) still fails
     the whole epoch.

   THE PORT
     send/recv/sendrecv and isend/irecv/wait are all one mechanism: a table
     of COLL_TCP_MAX_REQUESTS posted transfers. Waiting on any of them polls
     the sockets of all of them, so a sendrecv sends and receives at once
     and two ranks exchanging megabytes never stall on each other's full
     socket buffers. Per peer and direction, only the oldest posted
     transfer moves bytes: messages keep the order they were posted in.
     A message is one frame: a 16-byte header (kind, epoch, length), the
     payload, a 4-byte status (and the tag in the keyed mode); a send puts
     them in one sendmsg, and a receive guesses that the next frame is its
     own and reads all three in one call too (a frame that is not - an
     older epoch's, an abort - keeps what came after its header for what
     follows, in a buffer malloc'ed then and freed once read).
     A small send (up to 4 KiB) starts at the first wait rather than when
     posted, and goes with MSG_MORE when another is queued behind it to the
     same peer: a check frame and its tail cross loopback as one delivery
     (2 ranks, 40-128 B all-reduce and broadcast: 0.66-0.79 of the time).
     A wait that has spun without progress and whose transfer is the only
     one pending sleeps in one blocking recv or send instead of poll() (the
     links are blocking sockets after the rendezvous; every try that must
     not wait passes MSG_DONTWAIT).
     isend/irecv take up to COLL_TCP_MAX_REQUESTS - 2 handles (then answer
     COLL_AGAIN); the last two slots are kept for the blocking calls.
     t.bytes_sent / t.bytes_received count payload bytes, for traffic checks.
     Payload travels in the clear, and unauthenticated unless the keyed
     mode is on (below): by default the token guards who joins, not what
     the bytes say (coll.h's optional CRC check finds damage, not forgery).

   THE KEYED MODE (opt-in: COLL_TCP_MAC=1 in the environment, or the flag
     COLL_TCP_MAC to coll_tcp_init_flags)
     Every message then carries an 8-byte tag: SipHash-2-4, under a key
     derived from the job token apart from the handshake's, over the
     link's session (both handshake nonces, through the link's MAC('A')),
     sender, receiver, the message's number on that link and direction,
     its length and its bytes. The receiver checks the tag before the
     message counts as received: a message forged, altered, replayed,
     dropped, reordered or sent down another link by someone without the
     token fails it, and the port breaks with COLL_ERR_CORRUPT (one line
     on stderr); coll.h's abort then tells the other ranks. The tag is
     64 bits: a forger's blind guess passes once in 2^64 tries, and each
     wrong guess ends the job. The mode is part of the authenticated
     hello: ranks that disagree on it refuse each other at the rendezvous
     (COLL_ERR_MISMATCH, both modes named on stderr). Large messages stay
     streamed: the sender hashes COLL_TCP_MAC_CHUNK bytes ahead of what it
     sends, the receiver each piece as it lands. Cost: 8 bytes per message
     and a SipHash of every byte on both sides (docs/benchmarks.md). With
     COLL_TCP_INSECURE=1 the key is public: the tags then catch replays
     and losses on the link, not forgers. Secrecy is not offered.

   COST: system calls, above all for small messages (about 3 us each on the
     virtual machine measured, as much as the loopback TCP stack's own work
     per message). A send the socket has room for is one call, a receive
     whose bytes are there one more; a wait that finds nothing yet spins
     (a try that answers EAGAIN and a sched_yield per round, up to
     COLL_TCP_SPIN rounds), then sleeps: in one blocking recv (MSG_WAITALL)
     or send when its transfer is the only one pending, bounded by the
     link's SO_RCVTIMEO/SO_SNDTIMEO, else in poll(); either for at most
     50 ms at a time, between which it peeks at the links no receive
     reads, for an abort frame (coll_tcp__watch), until the deadline. Large
     messages are bound by the kernel's two copies per byte (sender into
     the socket, receiver out of it): about 2 GB/s each way at once on
     loopback here, whatever the socket buffer sizes, several connections
     per pair, or MSG_ZEROCOPY (slower: on loopback the kernel copies
     anyway, and pins pages and queues notifications on top). The
     handshake adds two round trips per link, once, at init.

   CONFIGURATION (define before the implementation)
     COLL_TCP_MAX_RANKS          256    ranks in a job
     COLL_TCP_MAX_REQUESTS       16     posted transfers per rank
     COLL_TCP_DEFAULT_TIMEOUT_MS 60000  when timeout_ms is 0
     COLL_TCP_MAX_PENDING        16     unauthenticated connections served at once
     COLL_TCP_HELLO_MS           500    an accepted connection's time to authenticate
     COLL_TCP_SPIN               64     sched_yield + retry rounds before a wait sleeps in poll()
     COLL_TCP_SOCKBUF            0      socket buffer bytes; 0 keeps the kernel's autotuning
     COLL_TCP_MAC_CHUNK          131072 bytes a keyed-mode sender hashes ahead (and a
                                        receiver takes per system call) in a large message
     COLL_TCP_NO_MAC             undefined  leaves the keyed mode out (the struct
                                        shrinks by 7 KB; asking for it: COLL_ERR_NOSYS)
     COLL_TCP_LOG(t, line)       fputs to stderr   where "dropped ..." lines go
*/
/* Outside the include guard: it matters only before the first system header. */
#if defined(COLL_TCP_IMPLEMENTATION) && !defined(__cplusplus) && !defined(_POSIX_C_SOURCE) && \
    !defined(_XOPEN_SOURCE) && !defined(_GNU_SOURCE) && !defined(_DEFAULT_SOURCE) && \
    !defined(_BSD_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#ifndef COLL_TCP_H
#define COLL_TCP_H

#ifndef COLL_H
#include "coll.h"
#endif

#ifndef COLL_TCP_MAX_RANKS
#define COLL_TCP_MAX_RANKS 256
#endif
#ifndef COLL_TCP_MAX_REQUESTS          /* posted transfers per rank          */
#define COLL_TCP_MAX_REQUESTS 16
#endif
#ifndef COLL_TCP_DEFAULT_TIMEOUT_MS
#define COLL_TCP_DEFAULT_TIMEOUT_MS 60000u
#endif
#ifndef COLL_TCP_MAX_PENDING           /* handshakes a listener serves at once */
#define COLL_TCP_MAX_PENDING 16
#endif
#ifndef COLL_TCP_SOCKBUF               /* SO_SNDBUF/SO_RCVBUF; 0: the kernel's */
#define COLL_TCP_SOCKBUF 0             /* autotuning (measured best on loopback) */
#endif
#ifndef COLL_TCP_SPIN                  /* yield-and-retry rounds before poll() */
#define COLL_TCP_SPIN 64
#endif
#ifndef COLL_TCP_HELLO_MS              /* accept -> authenticated, at most    */
#define COLL_TCP_HELLO_MS 500
#endif
#ifndef COLL_TCP_MAC_CHUNK             /* keyed mode: bytes hashed ahead      */
#define COLL_TCP_MAC_CHUNK 131072
#endif
/* The hello's world field carries the mode flags in its upper 16 bits. */
#if COLL_TCP_MAX_RANKS > 65535
#error "COLL_TCP_MAX_RANKS must be below 65536"
#endif

/* Flags of coll_tcp_init_flags. */
#define COLL_TCP_MAC 1u                /* the keyed mode: a MAC on every message */

/* The port's own codes, in a range of its own, clear of the errno-valued
   COLL_ERR_* codes (coll_result_str does not know them). */
#define COLL_TCP_ERR_AUTH    (-2001)   /* the master or a peer failed the token check */
#define COLL_TCP_ERR_VERSION (-2002)   /* the master or a peer speaks another protocol version */
#define COLL_TCP_ERR_INUSE   (-2003)   /* rank 0: another program holds MASTER_PORT */
#define COLL_TCP_VERSION 4             /* of the protocol: ranks of another refuse each other */

#ifndef COLL_TCP_API
#ifdef COLL_TCP_STATIC
#define COLL_TCP_API static
#else
#define COLL_TCP_API extern
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* SipHash-2-4's running state (see >>siphash). */
typedef struct coll_tcp__sip { uint64_t v0, v1, v2, v3, m; size_t n; } coll_tcp__sip;

#ifndef COLL_TCP_NO_MAC
/* The keyed mode's state for one message in flight (see >>mac). */
typedef struct coll_tcp__mac_msg {
    coll_tcp__sip sip;         /* the tag so far                             */
    size_t hashed;             /* payload bytes in it                        */
    int begun;                 /* numbered and headed yet                    */
    unsigned char tag[8];      /* sent: ours; received: the sender's         */
} coll_tcp__mac_msg;

/* ... and for the port: the key, and per link its session and the count
   of messages each way. */
typedef struct coll_tcp__keyed {
    int on;
    uint64_t key[2];           /* for messages; zero when off or closed      */
    unsigned char session[COLL_TCP_MAX_RANKS][8];
    uint64_t sent[COLL_TCP_MAX_RANKS], got[COLL_TCP_MAX_RANKS];
} coll_tcp__keyed;
#endif

typedef struct coll_tcp__req {
    int peer;                  /* -1: slot free                              */
    int is_send;
    int result;                /* COLL_AGAIN while pending, then 0 or error  */
    unsigned seq;              /* posting order, for per-lane FIFO order     */
    unsigned char *buf;        /* const for sends                            */
    size_t bytes, done;        /* payload; its bytes and trailer's so far    */
    size_t wire;               /* payload and trailer (status, a tag)        */
    uint32_t epoch;            /* the port's epoch when it was posted        */
    unsigned hdone;            /* header bytes moved (a receive: 16 once it
                                  has taken its frame's header)              */
    unsigned char head[16];    /* a send's frame header (>>frames)           */
    unsigned char tail[12];    /* status, then the tag in the keyed mode     */
#ifndef COLL_TCP_NO_MAC
    coll_tcp__mac_msg mac;
#endif
} coll_tcp__req;

/* A control frame (a header alone, >>frames) owed on a link: on, the
   bytes of it out so far, its epoch and the word in its length field. */
typedef struct coll_tcp__ctl {
    unsigned char on, at;
    uint32_t epoch;
    uint64_t word;
} coll_tcp__ctl;

/* One link's frame state (>>frames): what this rank owes the stream out
   and what it must read past in the stream in. */
typedef struct coll_tcp__link {
    unsigned char rx_head[16]; /* the next frame's header, rx_got bytes of it */
    unsigned long long rx_skip;/* bytes of a dropped frame still to discard  */
    unsigned long long tx_at, tx_total;  /* a frame given up mid-way, voided:  */
    unsigned long long tx_len; /* bytes sent, size in all (0: none), payload */
    uint32_t tx_epoch;         /* ... and its epoch                          */
    coll_tcp__ctl note, ab;    /* a wait notice, an abort frame owed         */
    int waits;                 /* whom the peer says it waits for, + 1 (0:
                                  nobody or unknown), this epoch (>>missing) */
    int dead;                  /* 0, or why the link is gone (EOF, reset)    */
    unsigned char *pb;         /* bytes read ahead that belong to later frames */
    unsigned pb_len, pb_at;    /* (a guess that missed, see coll_tcp__rx_guess) */
    unsigned char rx_got;
    unsigned char ab_sent;     /* ab.epoch's abort frame queued already      */
    unsigned char busy;        /* a frame waits at its head (coll_tcp__watch) */
} coll_tcp__link;

typedef struct coll_tcp {
    int rank, nranks, local_rank;
    unsigned timeout_ms;
    int failed;                /* 0, or the code every call of this epoch returns */
    unsigned seq;
    uint32_t epoch;            /* 0, then what renew said (>>frames)         */
    int closed;
    int fd[COLL_TCP_MAX_RANKS];/* link to each peer; -1 for self             */
    coll_tcp__link link[COLL_TCP_MAX_RANKS];
    coll_tcp__req req[COLL_TCP_MAX_REQUESTS];
    unsigned long long bytes_sent, bytes_received;   /* payload, this rank  */
    unsigned dropped;          /* connections dropped during the rendezvous  */
    int insecure;              /* 1: no token, COLL_TCP_INSECURE=1           */
    uint64_t key[2];           /* from the token; zero once the mesh is up   */
    int attached;              /* communicators coll_init put on this port   */
    int named;                 /* the rank this epoch's failure names, + 1;
                                  0 before one (>>missing)                   */
    int noticed;               /* the peer every link was told this rank
                                  waits for, + 1; 0: none (>>missing)        */
#ifndef COLL_TCP_NO_MAC
    coll_tcp__keyed mac;       /* the keyed mode (>>mac)                     */
#endif
} coll_tcp;

/* Join the job: returns COLL_OK when the full mesh is up, or COLL_ERR_INVAL
   (bad arguments or environment, no token), COLL_ERR_TIMEOUT (someone did
   not come within timeout_ms), COLL_ERR_MISMATCH (authenticated ranks
   disagree on WORLD_SIZE or on the keyed mode, or two claim one rank),
   COLL_ERR_NOSYS (the keyed mode asked of a COLL_TCP_NO_MAC build), COLL_ERR_IO (socket
   failure), COLL_TCP_ERR_AUTH (what answered at the master's or a peer's
   address does not know the token), COLL_TCP_ERR_VERSION (it speaks
   another protocol version). coll_tcp_init takes the token from
   COLL_TCP_TOKEN; coll_tcp_init_token from `token` (NULL: from
   COLL_TCP_TOKEN too; "" is refused). */
COLL_TCP_API int coll_tcp_init(coll_tcp *t, const char *master_addr, int master_port,
                               int rank, int world, unsigned timeout_ms);
COLL_TCP_API int coll_tcp_init_token(coll_tcp *t, const char *master_addr, int master_port,
                                     int rank, int world, unsigned timeout_ms, const char *token);
COLL_TCP_API int coll_tcp_init_env(coll_tcp *t, unsigned timeout_ms);
/* coll_tcp_init_token with flags: COLL_TCP_MAC turns the keyed mode on
   (so does COLL_TCP_MAC=1 in the environment, for every init; "0" or
   unset leaves the flags as passed, anything else is COLL_ERR_INVAL). */
COLL_TCP_API int coll_tcp_init_flags(coll_tcp *t, const char *master_addr, int master_port,
                                     int rank, int world, unsigned timeout_ms, const char *token,
                                     unsigned flags);
COLL_TCP_API void coll_tcp_set_timeout(coll_tcp *t, unsigned timeout_ms);
COLL_TCP_API coll_port coll_tcp_port(coll_tcp *t);
/* Break the port's epoch on purpose: pending and later calls return
   `code`, and every peer is sent an abort frame (it fails too). */
COLL_TCP_API void coll_tcp_abort(coll_tcp *t, int code);
COLL_TCP_API void coll_tcp_close(coll_tcp *t);
/* A fresh job token for a launcher to hand out: 32 hex digits and a NUL
   from the system's random source; 0 or COLL_ERR_IO. */
COLL_TCP_API int coll_tcp_new_token(char hex[33]);
/* For a launcher that forks its ranks: put a fresh token in COLL_TCP_TOKEN
   unless one is there already. 0 or COLL_ERR_IO. */
COLL_TCP_API int coll_tcp_token_env(void);
/* For a launcher on one host: a loopback port the kernel considers free
   right now (for MASTER_PORT), or COLL_ERR_IO. */
COLL_TCP_API int coll_tcp_free_port(void);

/* The port functions (ctx is the coll_tcp). */
COLL_TCP_API int coll_tcp_send(void *ctx, int peer, const void *buf, size_t bytes);
COLL_TCP_API int coll_tcp_recv(void *ctx, int peer, void *buf, size_t bytes);
COLL_TCP_API int coll_tcp_sendrecv(void *ctx, int to, const void *sbuf, size_t sbytes,
                                   int from, void *rbuf, size_t rbytes);
COLL_TCP_API int coll_tcp_isend(void *ctx, int peer, const void *buf, size_t bytes, int *handle);
COLL_TCP_API int coll_tcp_irecv(void *ctx, int peer, void *buf, size_t bytes, int *handle);
COLL_TCP_API int coll_tcp_wait(void *ctx, int handle, int block);

/* SipHash-2-4 of `n` bytes under the 128-bit key (k0, k1): the MAC of the
   handshake, public for the tests' known-answer check. */
COLL_TCP_API uint64_t coll_tcp_siphash(uint64_t k0, uint64_t k1, const void *msg, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* COLL_TCP_H */

#ifdef COLL_TCP_IMPLEMENTATION
#ifndef COLL_TCP_IMPLEMENTED
#define COLL_TCP_IMPLEMENTED
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* glibc read its feature macros before POSIX was asked for (see USAGE). */
#if defined(__GLIBC__) && !defined(__USE_XOPEN2K)
#error "coll_tcp.h needs POSIX.1-2008, which this strict ISO C build hides: include ports/coll_tcp.h before any other header in this file, or compile with -D_POSIX_C_SOURCE=200809L"
#endif

#ifdef MSG_NOSIGNAL                    /* a dead peer must not SIGPIPE us   */
#define COLL_TCP__SEND_FLAGS MSG_NOSIGNAL
#else
#define COLL_TCP__SEND_FLAGS 0
#endif

/* The data path: after the rendezvous the links are blocking sockets with
   SO_RCVTIMEO/SO_SNDTIMEO set to the deadline or COLL_TCP__SLICE_MS,
   whichever is shorter (the wait counts the deadline), every attempt that must not
   wait says MSG_DONTWAIT, and a wait with nothing else to move makes one
   blocking call (see coll_tcp_wait). Without MSG_DONTWAIT the links stay
   non-blocking and every wait polls. */
/* A send with another queued behind it to the same peer says MSG_MORE:
   the kernel holds a part-filled segment until the last of the run goes
   (never longer: that one never says it), so a check frame and its tail,
   posted back to back, cross loopback as one delivery and wake the peer
   once. */
#define COLL_TCP__MORE_MAX 4096      /* bytes: larger messages go at once */
#ifdef MSG_MORE
#define COLL_TCP__MORE MSG_MORE
#else
#define COLL_TCP__MORE 0
#endif

#ifdef MSG_DONTWAIT
#define COLL_TCP__TRY MSG_DONTWAIT
#define COLL_TCP__BLOCKING 1
#else
#define COLL_TCP__TRY 0
#define COLL_TCP__BLOCKING 0
#endif

#ifndef COLL_TCP_LOG
#define COLL_TCP_LOG(t, line) ((void)(t), fputs((line), stderr))
#endif

/* Slots reserved for the blocking calls, so send/recv/sendrecv never find
   the table full however many isend/irecv the caller left posted. */
#define COLL_TCP__RESERVED 2
#define COLL_TCP__MAGIC 0x636f6c6cu    /* "coll" */

/* ---- time ----------------------------------------------------------------- */

static long long coll_tcp__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int coll_tcp__left(long long deadline)
{
    long long left = deadline - coll_tcp__now_ms();
    return left < 0 ? 0 : left > 1000000000 ? 1000000000 : (int)left;
}

/* ---- wire encoding (big-endian, so hosts of either byte order agree) ----- */

static void coll_tcp__put32(unsigned char *p, unsigned long v)
{
    p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);  p[3] = (unsigned char)v;
}

static unsigned long coll_tcp__get32(const unsigned char *p)
{
    return ((unsigned long)p[0] << 24) | ((unsigned long)p[1] << 16) |
           ((unsigned long)p[2] << 8) | p[3];
}

/* One rank's listening endpoint: family, port, 16 address bytes (an IPv4
   address uses the first 4). 20 bytes per rank in the table. */
enum { COLL_TCP__ENTRY = 20 };

static void coll_tcp__put_addr(unsigned char *p, const struct sockaddr_storage *a)
{
    memset(p, 0, COLL_TCP__ENTRY);
    if (a->ss_family == AF_INET) {
        const struct sockaddr_in *s = (const struct sockaddr_in *)a;
        p[0] = 4;
        memcpy(p + 2, &s->sin_port, 2);          /* already network order */
        memcpy(p + 4, &s->sin_addr, 4);
    } else if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)a;
        p[0] = 6;
        memcpy(p + 2, &s->sin6_port, 2);
        memcpy(p + 4, &s->sin6_addr, 16);
    }
}

static socklen_t coll_tcp__get_addr(const unsigned char *p, struct sockaddr_storage *a)
{
    memset(a, 0, sizeof *a);
    if (p[0] == 4) {
        struct sockaddr_in *s = (struct sockaddr_in *)a;
        s->sin_family = AF_INET;
        memcpy(&s->sin_port, p + 2, 2);
        memcpy(&s->sin_addr, p + 4, 4);
        return sizeof *s;
    }
    if (p[0] == 6) {
        struct sockaddr_in6 *s = (struct sockaddr_in6 *)a;
        s->sin6_family = AF_INET6;
        memcpy(&s->sin6_port, p + 2, 2);
        memcpy(&s->sin6_addr, p + 4, 16);
        return sizeof *s;
    }
    return 0;
}

/* ---- sockets with deadlines ---------------------------------------------- */

static void coll_tcp__tune(int fd)
{
    int one = 1;
#if COLL_TCP_SOCKBUF > 0
    int sz = COLL_TCP_SOCKBUF;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
#endif
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
#ifdef SO_NOSIGPIPE
    setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);
#endif
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK);
}

static int coll_tcp__poll1(int fd, short events, long long deadline)
{
    struct pollfd p;
    int n;
    p.fd = fd; p.events = events; p.revents = 0;
    do n = poll(&p, 1, coll_tcp__left(deadline));
    while (n < 0 && errno == EINTR);
    if (n < 0) return COLL_ERR_IO;
    return n == 0 ? COLL_ERR_TIMEOUT : COLL_OK;
}

/* Whole-buffer transfers for the rendezvous only; the data path uses the
   request table below. */
static int coll_tcp__write_all(int fd, const void *buf, size_t n, long long deadline)
{
    const unsigned char *p = (const unsigned char *)buf;
    while (n > 0) {
        ssize_t k = send(fd, p, n, COLL_TCP__SEND_FLAGS);
        if (k > 0) { p += k; n -= (size_t)k; continue; }
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int rc = coll_tcp__poll1(fd, POLLOUT, deadline);
            if (rc) return rc;
            continue;
        }
        return COLL_ERR_IO;
    }
    return COLL_OK;
}

static int coll_tcp__read_all(int fd, void *buf, size_t n, long long deadline)
{
    unsigned char *p = (unsigned char *)buf;
    while (n > 0) {
        ssize_t k = recv(fd, p, n, 0);
        if (k > 0) { p += k; n -= (size_t)k; continue; }
        if (k == 0) return COLL_ERR_IO;                  /* EOF */
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int rc = coll_tcp__poll1(fd, POLLIN, deadline);
            if (rc) return rc;
            continue;
        }
        return COLL_ERR_IO;
    }
    return COLL_OK;
}

/* Connects to `a`, retrying while nobody listens yet (the master may start
   after us) until the deadline. Returns the descriptor or a negative code. */
static int coll_tcp__connect(const struct sockaddr_storage *a, socklen_t alen, long long deadline)
{
    int pause_ms = 10;
    for (;;) {
        int fd = socket(a->ss_family, SOCK_STREAM, 0), rc, err = 0;
        socklen_t elen = sizeof err;
        if (fd < 0) return COLL_ERR_IO;
        coll_tcp__tune(fd);
        rc = connect(fd, (const struct sockaddr *)a, alen);
        if (rc < 0 && errno != EINPROGRESS) err = errno;
        else if (rc < 0) {
            rc = coll_tcp__poll1(fd, POLLOUT, deadline);
            if (rc) { close(fd); return rc; }
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0) err = errno;
        }
        if (err == 0) return fd;
        close(fd);
        if (err != ECONNREFUSED && err != ECONNRESET && err != ETIMEDOUT && err != EINTR)
            return COLL_ERR_IO;
        if (coll_tcp__left(deadline) == 0) return COLL_ERR_TIMEOUT;
        {   /* back off, at most until the deadline */
            int ms = pause_ms < coll_tcp__left(deadline) ? pause_ms : coll_tcp__left(deadline);
            struct timespec ts;
            ts.tv_sec = ms / 1000; ts.tv_nsec = (long)(ms % 1000) * 1000000L;
            nanosleep(&ts, NULL);
        }
        if (pause_ms < 200) pause_ms *= 2;
    }
}

/* A listener's backlog: deep, so that under a flood of strangers a rank's
   connection still finds room in it while we recycle slots (the kernel
   caps it at net.core.somaxconn). */
#define COLL_TCP__BACKLOG 4096

/* A listening socket, or COLL_TCP_ERR_INUSE (another socket holds the
   address), or COLL_ERR_IO. */
static int coll_tcp__listen(const struct sockaddr_storage *a, socklen_t alen, int backlog)
{
    int fd = socket(a->ss_family, SOCK_STREAM, 0), one = 1;
    if (fd < 0) return COLL_ERR_IO;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (const struct sockaddr *)a, alen) < 0 || listen(fd, backlog) < 0) {
        int e = errno;
        close(fd);
        return e == EADDRINUSE ? COLL_TCP_ERR_INUSE : COLL_ERR_IO;
    }
    coll_tcp__tune(fd);
    return fd;
}

/* ---- >>siphash SipHash-2-4: the MAC of the handshake and of the keyed mode -- */

/* Four 64-bit words of state; each 8-byte little-endian word of the message
   is mixed in with two rounds, the last partial word carries the length,
   four more rounds finish. Fed in pieces of any size (the keyed mode feeds
   a message as it streams): whole words go straight in, a piece that ends
   inside a word leaves it in s->m for the next. */
#define COLL_TCP__ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

static void coll_tcp__sip_rounds(coll_tcp__sip *s, int rounds)
{
    while (rounds-- > 0) {
        s->v0 += s->v1; s->v1 = COLL_TCP__ROTL(s->v1, 13); s->v1 ^= s->v0; s->v0 = COLL_TCP__ROTL(s->v0, 32);
        s->v2 += s->v3; s->v3 = COLL_TCP__ROTL(s->v3, 16); s->v3 ^= s->v2;
        s->v0 += s->v3; s->v3 = COLL_TCP__ROTL(s->v3, 21); s->v3 ^= s->v0;
        s->v2 += s->v1; s->v1 = COLL_TCP__ROTL(s->v1, 17); s->v1 ^= s->v2; s->v2 = COLL_TCP__ROTL(s->v2, 32);
    }
}

static void coll_tcp__sip_init(coll_tcp__sip *s, uint64_t k0, uint64_t k1)
{
    s->v0 = k0 ^ 0x736f6d6570736575ull;  /* "somepseudorandomlygeneratedbytes" */
    s->v1 = k1 ^ 0x646f72616e646f6dull;
    s->v2 = k0 ^ 0x6c7967656e657261ull;
    s->v3 = k1 ^ 0x7465646279746573ull;
    s->m = 0; s->n = 0;
}

static void coll_tcp__sip_word(coll_tcp__sip *s, uint64_t m)
{
    s->v3 ^= m; coll_tcp__sip_rounds(s, 2); s->v0 ^= m;
}

static void coll_tcp__sip_add(coll_tcp__sip *s, const void *msg, size_t n)
{
    const unsigned char *p = (const unsigned char *)msg;
    for (; n && (s->n & 7); n--) {                   /* finish a partial word */
        s->m |= (uint64_t)*p++ << (8 * (s->n & 7));
        if ((++s->n & 7) == 0) { coll_tcp__sip_word(s, s->m); s->m = 0; }
    }
    if (n >= 8) {                                    /* whole words, the state in */
        coll_tcp__sip w = *s;                        /* locals (p may alias *s)   */
        for (; n >= 8; n -= 8, p += 8) {
            uint64_t m = (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
                         (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 |
                         (uint64_t)p[6] << 48 | (uint64_t)p[7] << 56;
            w.v3 ^= m; coll_tcp__sip_rounds(&w, 2); w.v0 ^= m;
            w.n += 8;
        }
        *s = w;
    }
    for (; n; n--) {                                 /* the start of the next */
        s->m |= (uint64_t)*p++ << (8 * (s->n & 7));
        s->n++;
    }
}

static uint64_t coll_tcp__sip_end(coll_tcp__sip *s)
{
    uint64_t b = s->m | ((uint64_t)(s->n & 0xff) << 56);
    s->v3 ^= b; coll_tcp__sip_rounds(s, 2); s->v0 ^= b;
    s->v2 ^= 0xff; coll_tcp__sip_rounds(s, 4);
    return s->v0 ^ s->v1 ^ s->v2 ^ s->v3;
}

COLL_TCP_API uint64_t coll_tcp_siphash(uint64_t k0, uint64_t k1, const void *msg, size_t n)
{
    coll_tcp__sip s;
    coll_tcp__sip_init(&s, k0, k1);
    coll_tcp__sip_add(&s, msg, n);
    return coll_tcp__sip_end(&s);
}

/* The job key: two SipHashes of the token under a fixed public key, one per
   half. A token of 16 random bytes or more leaves nothing to guess; a short
   or guessable one can be found offline from one overheard handshake. */
static void coll_tcp__derive(coll_tcp *t, const char *token)
{
    int half;
    for (half = 0; half < 2; half++) {
        coll_tcp__sip s;
        unsigned char tag = (unsigned char)half;
        coll_tcp__sip_init(&s, 0x636f6c6c2d746370ull, 0x2d6a6f622d6b6579ull);  /* "coll-tcp-job-key" */
        coll_tcp__sip_add(&s, &tag, 1);
        coll_tcp__sip_add(&s, token, strlen(token));
        t->key[half] = coll_tcp__sip_end(&s);
    }
}

/* ---- the handshake ---------------------------------------------------------- *

   Every connection of the rendezvous, the dialling side D to the accepting
   side A (a worker to the master, rank r to rank j < r):

     D -> A  HELLO  "coll", version, D's rank, world, nonce_D (16), D's address (20)
     A -> D  REPLY  "coll", version, A's rank, world, nonce_A (16), MAC('A')
     D -> A  PROOF  MAC('C')
     A -> D  ACK    MAC('K')  - or MAC('N'): authenticated, but refused

   where MAC(role) is SipHash-2-4 under the job key of role || HELLO || the
   first 32 bytes of REPLY. Both nonces are fresh, so no answer can be
   replayed from another connection; the role byte keeps A's answer from
   serving as D's. D checks A before saying anything that proves D, and A
   registers D only after checking PROOF. The master's table then comes
   with MAC of 'T' || that link's MAC('A') || the table. A peer whose first
   8 bytes carry another version gets our "coll" + version back and is
   dropped: the dialling side reports it. */

enum {
    COLL_TCP__HELLO = 32 + COLL_TCP__ENTRY,
    COLL_TCP__REPLY = 40,
    COLL_TCP__HEAD = 32,                /* REPLY without its MAC            */
    COLL_TCP__TAG = 8
};

static void coll_tcp__put64(unsigned char *p, uint64_t v)
{
    coll_tcp__put32(p, (unsigned long)(v >> 32));
    coll_tcp__put32(p + 4, (unsigned long)(v & 0xffffffffu));
}

static void coll_tcp__mac(const coll_tcp *t, char role, const unsigned char *hello,
                          const unsigned char *reply, unsigned char *out)
{
    coll_tcp__sip s;
    unsigned char r = (unsigned char)role;
    coll_tcp__sip_init(&s, t->key[0], t->key[1]);
    coll_tcp__sip_add(&s, &r, 1);
    coll_tcp__sip_add(&s, hello, COLL_TCP__HELLO);
    coll_tcp__sip_add(&s, reply, COLL_TCP__HEAD);
    coll_tcp__put64(out, coll_tcp__sip_end(&s));
}

static void coll_tcp__table_mac(const coll_tcp *t, const unsigned char *tag_a,
                                const unsigned char *table, unsigned char *out)
{
    coll_tcp__sip s;
    unsigned char r = 'T';
    coll_tcp__sip_init(&s, t->key[0], t->key[1]);
    coll_tcp__sip_add(&s, &r, 1);
    coll_tcp__sip_add(&s, tag_a, COLL_TCP__TAG);
    coll_tcp__sip_add(&s, table, (size_t)t->nranks * COLL_TCP__ENTRY);
    coll_tcp__put64(out, coll_tcp__sip_end(&s));
}

/* Compares two tags without stopping at the first difference. */
static int coll_tcp__same(const unsigned char *a, const unsigned char *b)
{
    unsigned d = 0;
    int i;
    for (i = 0; i < COLL_TCP__TAG; i++) d |= (unsigned)(a[i] ^ b[i]);
    return d == 0;
}

static int coll_tcp__nonce(unsigned char *p)
{
    size_t got = 0;
#ifdef O_CLOEXEC
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
#else
    int fd = open("/dev/urandom", O_RDONLY);
#endif
    if (fd < 0) return COLL_ERR_IO;
    while (got < 16) {
        ssize_t k = read(fd, p + got, 16 - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
    }
    close(fd);
    return got == 16 ? COLL_OK : COLL_ERR_IO;
}

COLL_TCP_API int coll_tcp_new_token(char hex[33])
{
    static const char digits[] = "0123456789abcdef";
    unsigned char b[16];
    int i, rc = coll_tcp__nonce(b);
    if (rc != COLL_OK) return rc;
    for (i = 0; i < 16; i++) { hex[2 * i] = digits[b[i] >> 4]; hex[2 * i + 1] = digits[b[i] & 15]; }
    hex[32] = 0;
    return COLL_OK;
}

COLL_TCP_API int coll_tcp_token_env(void)
{
    char hex[33];
    int rc;
    if (getenv("COLL_TCP_TOKEN")) return COLL_OK;
    if ((rc = coll_tcp_new_token(hex)) != COLL_OK) return rc;
    return setenv("COLL_TCP_TOKEN", hex, 1) == 0 ? COLL_OK : COLL_ERR_IO;
}

COLL_TCP_API int coll_tcp_free_port(void)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = COLL_ERR_IO;
    if (fd < 0) return COLL_ERR_IO;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 && getsockname(fd, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

/* Lines about strangers shown per rendezvous; past that, t.dropped still
   counts them and the listener says how many went unshown (a flood must
   not become a flood of lines). */
#define COLL_TCP__LOG_DROPS 64

/* One line for COLL_TCP_LOG: who we are, who the connection came from. */
static void coll_tcp__log(const coll_tcp *t, int fd, const char *fmt, ...)
{
    char line[320], who[80] = "";
    struct sockaddr_storage a;
    socklen_t alen = sizeof a;
    va_list ap;
    int n;
    if (t->dropped >= COLL_TCP__LOG_DROPS && (strncmp(fmt, "dropped", 7) == 0 ||
        strncmp(fmt, "refused", 7) == 0 || strncmp(fmt, "hung up", 7) == 0))
        return;
    if (fd >= 0 && getpeername(fd, (struct sockaddr *)&a, &alen) == 0) {
        char host[INET6_ADDRSTRLEN] = "?";
        unsigned port = 0;
        if (a.ss_family == AF_INET) {
            const struct sockaddr_in *s = (const struct sockaddr_in *)&a;
            inet_ntop(AF_INET, &s->sin_addr, host, sizeof host);
            port = ntohs(s->sin_port);
        } else if (a.ss_family == AF_INET6) {
            const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)&a;
            inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof host);
            port = ntohs(s->sin6_port);
        }
        snprintf(who, sizeof who, " [%s]:%u", host, port);
    }
    n = snprintf(line, sizeof line, "coll_tcp: rank %d:%s ", t->rank, who);
    if (n < 0 || n >= (int)sizeof line - 2) n = 0;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    strcat(line, "\n");
    COLL_TCP_LOG(t, line);
}

/* The modes a rank runs in, which every rank of a job must share: the
   upper half of the hello's world field (0 in the plain mode, so its
   bytes are those of a port without the keyed mode). */
static unsigned long coll_tcp__modes(const coll_tcp *t)
{
#ifndef COLL_TCP_NO_MAC
    return t->mac.on ? COLL_TCP_MAC : 0;
#else
    (void)t;
    return 0;
#endif
}

static void coll_tcp__hello(const coll_tcp *t, unsigned char *p, int rank)
{
    coll_tcp__put32(p, COLL_TCP__MAGIC);
    coll_tcp__put32(p + 4, COLL_TCP_VERSION);
    coll_tcp__put32(p + 8, (unsigned long)rank);
    coll_tcp__put32(p + 12, (unsigned long)t->nranks | coll_tcp__modes(t) << 16);
}

/* Why an authenticated peer's world field `w` is not ours: a line. */
static void coll_tcp__say_world(const coll_tcp *t, int fd, const char *who, unsigned long w)
{
    if ((w & 0xffffu) != (unsigned long)t->nranks)
        coll_tcp__log(t, fd, "%s has WORLD_SIZE %lu, this rank %d", who, w & 0xffffu, t->nranks);
    else
        coll_tcp__log(t, fd, "%s runs %s the keyed mode (COLL_TCP_MAC), this rank %s: refused",
                      who, (w >> 16) & COLL_TCP_MAC ? "with" : "without",
                      coll_tcp__modes(t) & COLL_TCP_MAC ? "with" : "without");
}

/* ---- >>mac the keyed mode: a tag on every message ---------------------------- *

   With t->mac.on, message n of the link from rank S to rank R goes on the
   wire as its bytes and then an 8-byte tag:

       SipHash-2-4 under K_msg of   session (8) | S (4) | R (4) | n (8) | length (8) | bytes

   K_msg comes from the token as the handshake key does, under another
   fixed key, so neither key tells anything of the other. session is the
   link's MAC('A') from its handshake, which covers both fresh nonces: no
   message of another link, or of an earlier job with the same token,
   fits. n counts the messages of one direction of one link, so a message
   replayed, dropped or reordered arrives under the wrong n, and S and R
   keep a message from being bounced back to its sender. The length is
   the posted one on both sides, never read from the wire: a message of
   another length shifts the stream and fails its tag.

   The data path asks this layer three things, each trivial when it is
   off: which bytes of a message go next (coll_tcp__span), that k bytes
   moved (coll_tcp__moved), and whether a message that has all its bytes
   is good (coll_tcp__landed). A sender hashes up to COLL_TCP_MAC_CHUNK
   bytes ahead of what it sends and sends nothing unhashed; its last
   piece and the tag go in one system call. A receiver takes at most a
   chunk per call and hashes it while it is in the cache; the message
   counts as received only once the tag matches. */

#ifndef COLL_TCP_NO_MAC
/* K_msg: two SipHashes of the token under "coll-tcp-msg-key", one per half. */
static void coll_tcp__mac_derive(coll_tcp *t, const char *token)
{
    int half;
    for (half = 0; half < 2; half++) {
        coll_tcp__sip s;
        unsigned char tag = (unsigned char)half;
        coll_tcp__sip_init(&s, 0x636f6c6c2d746370ull, 0x2d6d73672d6b6579ull);
        coll_tcp__sip_add(&s, &tag, 1);
        coll_tcp__sip_add(&s, token, strlen(token));
        t->mac.key[half] = coll_tcp__sip_end(&s);
    }
}

static void coll_tcp__mac_session(coll_tcp *t, int peer, const unsigned char *tag_a)
{
    if (t->mac.on) memcpy(t->mac.session[peer], tag_a, 8);
}

/* The first time q moves: its number on the lane (only a lane's oldest
   transfer moves, so numbers follow posting order) and its header. A
   send given up before a byte of it went out gives its number back
   (coll_tcp__abandon): the receiver never saw it. */
static void coll_tcp__mac_begin(coll_tcp *t, coll_tcp__req *q)
{
    unsigned char head[36];
    uint64_t n = q->is_send ? t->mac.sent[q->peer]++ : t->mac.got[q->peer]++;
    memcpy(head, t->mac.session[q->peer], 8);
    coll_tcp__put32(head + 8, (unsigned long)(q->is_send ? t->rank : q->peer));
    coll_tcp__put32(head + 12, (unsigned long)(q->is_send ? q->peer : t->rank));
    coll_tcp__put64(head + 16, n);
    coll_tcp__put64(head + 24, (uint64_t)q->bytes);
    coll_tcp__put32(head + 32, (unsigned long)q->epoch);
    coll_tcp__sip_init(&q->mac.sip, t->mac.key[0], t->mac.key[1]);
    coll_tcp__sip_add(&q->mac.sip, head, sizeof head);
    q->mac.hashed = 0;
    q->mac.begun = 1;
}

/* How far q's payload may move now: a sender hashes up to a chunk ahead
   and sends nothing unhashed, a receiver takes a chunk per call. */
static size_t coll_tcp__mac_upto(coll_tcp *t, coll_tcp__req *q)
{
    coll_tcp__mac_msg *m = &q->mac;
    size_t upto = q->done < q->bytes && q->bytes - q->done > COLL_TCP_MAC_CHUNK
                ? q->done + COLL_TCP_MAC_CHUNK : q->bytes;
    if (!m->begun) coll_tcp__mac_begin(t, q);
    if (q->is_send) {
        if (m->hashed < upto) {
            coll_tcp__sip_add(&m->sip, q->buf + m->hashed, upto - m->hashed);
            m->hashed = upto;
            if (upto == q->bytes) coll_tcp__put64(q->tail + 4, coll_tcp__sip_end(&m->sip));
        }
        upto = m->hashed;
    }
    return upto;
}

/* A receiver's payload up to `upto` has landed: into the tag with it. */
static void coll_tcp__mac_heard(coll_tcp__req *q, size_t upto)
{
    if (upto > q->mac.hashed) {
        coll_tcp__sip_add(&q->mac.sip, q->buf + q->mac.hashed, upto - q->mac.hashed);
        q->mac.hashed = upto;
    }
}

static void coll_tcp__gone(coll_tcp *t, int peer, int code);
/* A received message is complete: its tag, or COLL_ERR_CORRUPT and the
   port broken (the stream can no longer be trusted at all). */
static int coll_tcp__mac_check(coll_tcp *t, coll_tcp__req *q)
{
    unsigned char want[COLL_TCP__TAG];
    if (q->is_send) return COLL_OK;
    coll_tcp__put64(want, coll_tcp__sip_end(&q->mac.sip));
    if (coll_tcp__same(want, q->tail + 4)) return COLL_OK;
    if (!t->failed)
        coll_tcp__log(t, -1, "message %llu of %lu bytes from rank %d failed its MAC: "
                      "forged, altered, replayed, dropped or reordered on the way",
                      (unsigned long long)(t->mac.got[q->peer] - 1), (unsigned long)q->bytes, q->peer);
    coll_tcp__gone(t, q->peer, COLL_ERR_CORRUPT);
    coll_tcp_abort(t, COLL_ERR_CORRUPT);
    return COLL_ERR_CORRUPT;
}
#else
#define coll_tcp__mac_session(t, peer, tag_a) ((void)0)
#endif

static void coll_tcp__gone(coll_tcp *t, int peer, int code);

/* ---- >>frames every message in a frame, every frame in an epoch ------------- *

   On the wire a message is a frame:

       header (16)   kind "colD" | the sender's epoch (4) | payload length (8)
       payload
       trailer       status (4): "colK", or "colV" for a frame its sender
                     voided; then the 8-byte tag in the keyed mode

   and two control frames are a header alone, whose length field is a
   rank + 1 (0: none; more than the ranks: no header):
       abort         kind "colA" | epoch | the rank its sender names
       wait notice   kind "colW" | epoch | the rank its sender waits for
   (>>missing says what they are for; an older epoch's are ignored). The
   epoch is 0 until renew (coll_comm_shrink) moves this rank's end on; a
   frame carries the epoch its sender was in when it posted it. The
   receiving rank, at the head of each frame:
     - an older epoch's frame is dropped unread (its payload and trailer
       read and discarded), an older abort ignored;
     - a later epoch's frame (a peer that renewed first) is kept, header
       read, payload not: the receive fails, and the frame waits for a
       receive of its epoch (after renew) - no receive of an older epoch
       ever takes its bytes;
     - an abort of this epoch fails the epoch here too (and is passed on);
     - a wait notice of this epoch is kept as that peer's wait;
     - a frame of this epoch must have the posted length (else
       COLL_ERR_MISMATCH, COLL_ERR_CORRUPT in the keyed mode);
     - a header of another kind, of an epoch more than COLL_TCP__AHEAD
       (64) ahead or a length of 2^40 or more is no header: the link is
       out of step and gone (COLL_ERR_IO; COLL_ERR_CORRUPT, with a failed
       MAC's line, in the keyed mode).
   A transfer given up mid-frame (a failed or aborted call) leaves the
   stream mid-frame: the sender owes the rest, which goes out - header,
   zeros, status "colV" - before its next frame on that link, and the
   receiver reads past what is left of its frame before the next header.
   So a link stays in step however its calls end, and a live pair keeps
   talking after renew. In epoch 0 the first failure fails the port's
   epoch, every call then answering that code (abort frames tell the
   peers, as the links' shutdown did before frames); after renew a dead
   link (EOF, reset) or a deadline fails only the calls it touches. The
   tag covers the epoch and length with the payload; the status is
   outside it, so a forged "colV" can only fail a call. */

#define COLL_TCP__DATA  0x636f6c44ul   /* "colD" */
#define COLL_TCP__ABORT 0x636f6c41ul   /* "colA" */
#define COLL_TCP__NOTE  0x636f6c57ul   /* "colW" */
#define COLL_TCP__OK    0x636f6c4bul   /* "colK" */
#define COLL_TCP__VOID  0x636f6c56ul   /* "colV" */
#define COLL_TCP__FRAME 16             /* header bytes */
#define COLL_TCP__AHEAD 64             /* epochs a peer may be ahead of us */
#define COLL_TCP__SLICE_MS 50          /* a sleeping wait looks at the other links */

static void coll_tcp__frame_head(unsigned char *p, unsigned long kind, uint32_t epoch, uint64_t n)
{
    coll_tcp__put32(p, kind);
    coll_tcp__put32(p + 4, (unsigned long)epoch);
    coll_tcp__put64(p + 8, n);
}

/* Trailer bytes: the status, and a tag in the keyed mode. */
static size_t coll_tcp__trailer(const coll_tcp *t)
{
#ifndef COLL_TCP_NO_MAC
    if (t->mac.on) return 4 + COLL_TCP__TAG;
#else
    (void)t;
#endif
    return 4;
}

/* Bytes of q on the wire after its header: payload and trailer. */
static size_t coll_tcp__wire(const coll_tcp *t, const coll_tcp__req *q)
{
    return q->bytes + coll_tcp__trailer(t);
}

/* The bytes of q that go next, as up to three pieces: the rest of a
   send's header, payload, trailer. */
static int coll_tcp__span(coll_tcp *t, coll_tcp__req *q, struct iovec *v)
{
    size_t upto = q->bytes;
    int n = 0;
    if (q->is_send && q->hdone < COLL_TCP__FRAME) {
        v[n].iov_base = q->head + q->hdone; v[n].iov_len = COLL_TCP__FRAME - q->hdone; n++;
    }
#ifndef COLL_TCP_NO_MAC
    if (t->mac.on) upto = coll_tcp__mac_upto(t, q);
#endif
    if (q->done < upto) {
        v[n].iov_base = q->buf + q->done; v[n].iov_len = upto - q->done; n++;
    }
    if (upto == q->bytes) {
        size_t at = q->done > q->bytes ? q->done - q->bytes : 0;
        v[n].iov_base = q->tail + at; v[n].iov_len = coll_tcp__trailer(t) - at; n++;
    }
    return n;
}

/* k more bytes of q moved: a send's header first, then payload and
   trailer; payload counted, and fed to the tag. */
static void coll_tcp__moved(coll_tcp *t, coll_tcp__req *q, size_t k)
{
    size_t before, after;
    if (q->is_send && q->hdone < COLL_TCP__FRAME) {
        size_t h = COLL_TCP__FRAME - q->hdone;
        if (h > k) h = k;
        q->hdone += (unsigned)h;
        k -= h;
    }
    before = q->done < q->bytes ? q->done : q->bytes;
    q->done += k;
    after = q->done < q->bytes ? q->done : q->bytes;
    if (q->is_send) t->bytes_sent += (unsigned long long)(after - before);
    else t->bytes_received += (unsigned long long)(after - before);
#ifndef COLL_TCP_NO_MAC
    if (t->mac.on && !q->is_send) coll_tcp__mac_heard(q, after);
#endif
}

/* A frame that cannot be (a header of no known kind, a length other than
   posted, a status of neither kind): the link is out of step for good.
   The keyed mode says so as a failed MAC would. */
static int coll_tcp__bad_frame(coll_tcp *t, coll_tcp__req *q, int code)
{
#ifndef COLL_TCP_NO_MAC
    if (t->mac.on) {
        if (!t->failed)
            coll_tcp__log(t, -1, "message %llu of %lu bytes from rank %d failed its MAC: "
                          "forged, altered, replayed, dropped or reordered on the way (its frame)",
                          (unsigned long long)t->mac.got[q->peer], (unsigned long)q->bytes, q->peer);
        code = COLL_ERR_CORRUPT;
    }
#endif
    coll_tcp__gone(t, q->peer, code);
    if (t->epoch == 0 || code == COLL_ERR_CORRUPT) coll_tcp_abort(t, code);
    return code;
}

/* Transfer q fails with `code`: in epoch 0 the port's epoch with it (as
   before renew existed), after renew q alone. */
static void coll_tcp__fail(coll_tcp *t, coll_tcp__req *q, int code);

/* q has all its bytes: its result. */
static int coll_tcp__landed(coll_tcp *t, coll_tcp__req *q)
{
    unsigned long status;
    if (q->is_send) return COLL_OK;
    status = coll_tcp__get32(q->tail);
    if (status == COLL_TCP__VOID) {              /* its sender gave it up */
        coll_tcp__fail(t, q, COLL_ERR_IO);
        return COLL_ERR_IO;
    }
    if (status != COLL_TCP__OK) return coll_tcp__bad_frame(t, q, COLL_ERR_IO);
#ifndef COLL_TCP_NO_MAC
    if (t->mac.on) return coll_tcp__mac_check(t, q);
#endif
    return COLL_OK;
}

/* ---- the accepting side: every pending connection at once ------------------ */

typedef struct coll_tcp__shake {
    int fd;                    /* -1: slot free                              */
    int stage;                 /* 0: reading HELLO, 1: PROOF, 2: refused     */
    size_t got;
    size_t drained;            /* stage 2: bytes read since, at most COLL_TCP__DRAIN */
    long long until;           /* dropped if not authenticated by then       */
    long long since;           /* accepted at                                */
    long long moved;           /* its last byte in                           */
    unsigned char hello[COLL_TCP__HELLO], reply[COLL_TCP__REPLY], proof[COLL_TCP__TAG];
} coll_tcp__shake;

/* A refused peer is read until it hangs up (so that our version reaches it
   before the close), but never more than this many bytes: a stranger that
   streams must not hold the listener. */
#define COLL_TCP__DRAIN 4096

static void coll_tcp__drop(coll_tcp *t, coll_tcp__shake *s)
{
    /* One that has not said who it is yet may be a rank held up on its
       way: our "coll" + version first tells it that a coll rank hung up
       (dial again), not a program that is no coll rank at all. */
    if (s->stage == 0 && s->got < 8) {
        unsigned char head[8];
        coll_tcp__put32(head, COLL_TCP__MAGIC);
        coll_tcp__put32(head + 4, COLL_TCP_VERSION);
        (void)send(s->fd, head, sizeof head, COLL_TCP__SEND_FLAGS | COLL_TCP__TRY);
    }
    close(s->fd);
    s->fd = -1;
    t->dropped++;
}

/* A step of a pending connection (below) or of a receive's header (the
   data path) that moved it on: the next step is decided again. */
#define COLL_TCP__GO 2

/* The refused peer's drain: what it sends (k bytes, the last recv's
   answer) is thrown away until it hangs up or has sent COLL_TCP__DRAIN
   bytes; then it is closed. */
static int coll_tcp__drain(coll_tcp *t, coll_tcp__shake *s, ssize_t k)
{
    if (k > 0 && (s->drained += (size_t)k) <= COLL_TCP__DRAIN) return COLL_TCP__GO;
    if (k > 0)
        coll_tcp__log(t, s->fd, "hung up on a refused peer that kept sending");
    close(s->fd);
    s->fd = -1;
    return 0;
}

/* The version check, once the hello's first 8 bytes are in: 1 for a coll
   rank of our version (its hello is read on); 0 for what is no coll rank
   (dropped); COLL_TCP__GO for another version, which is told ours and
   refused (drained from here on). */
static int coll_tcp__version(coll_tcp *t, coll_tcp__shake *s)
{
    if (coll_tcp__get32(s->hello) != COLL_TCP__MAGIC) {
        coll_tcp__log(t, s->fd, "dropped a connection that is not a coll rank");
        coll_tcp__drop(t, s);
        return 0;
    }
    if (coll_tcp__get32(s->hello + 4) == COLL_TCP_VERSION) return 1;
    /* Tell it ours, so its side can say what is wrong. */
    coll_tcp__hello(t, s->reply, t->rank);
    (void)send(s->fd, s->reply, 8, COLL_TCP__SEND_FLAGS);
    coll_tcp__log(t, s->fd, "refused a peer speaking protocol version %lu "
                  "(this rank speaks %d)", coll_tcp__get32(s->hello + 4), COLL_TCP_VERSION);
    /* Hang up only after it has read that: closing with its
       hello unread would send a reset that may overtake it. */
    shutdown(s->fd, SHUT_WR);
    s->stage = 2; s->got = 0; s->drained = 0;
    t->dropped++;
    return COLL_TCP__GO;
}

/* HELLO in: answer it (our hello with a fresh nonce, and its MAC('A')),
   then wait for the peer's proof. */
static int coll_tcp__answer(coll_tcp *t, coll_tcp__shake *s)
{
    coll_tcp__hello(t, s->reply, t->rank);
    if (coll_tcp__nonce(s->reply + 16)) return COLL_ERR_IO;
    coll_tcp__mac(t, 'A', s->hello, s->reply, s->reply + COLL_TCP__HEAD);
    if (coll_tcp__write_all(s->fd, s->reply, COLL_TCP__REPLY, s->until)) {
        coll_tcp__log(t, s->fd, "dropped a connection that did not take our answer");
        coll_tcp__drop(t, s);
        return 0;
    }
    s->stage = 1;
    return COLL_TCP__GO;
}

/* An authenticated peer contradicts the job (another world or mode, a
   rank not expected here or already held): a line says how, the peer is
   told no (MAC('N'), so that it fails too), and so is the job. */
static int coll_tcp__say_no(coll_tcp *t, coll_tcp__shake *s, unsigned long rank,
                            unsigned long world, int lo, int hi)
{
    unsigned char tag[COLL_TCP__TAG];
    if (world != ((unsigned long)t->nranks | coll_tcp__modes(t) << 16)) {
        char who[32];
        snprintf(who, sizeof who, "rank %lu", rank);
        coll_tcp__say_world(t, s->fd, who, world);
    } else
        coll_tcp__log(t, s->fd, "an authenticated peer claims rank %lu, %s", rank,
                      rank < (unsigned long)hi && rank >= (unsigned long)lo ?
                      "which another peer already holds" : "not expected here");
    coll_tcp__mac(t, 'N', s->hello, s->reply, tag);
    (void)coll_tcp__write_all(s->fd, tag, COLL_TCP__TAG, s->until);
    close(s->fd);
    s->fd = -1;
    return COLL_ERR_MISMATCH;
}

/* PROOF in, the verdict: a peer without the token is dropped, one that
   contradicts the job told no; any other is told yes (MAC('K')) and its
   connection becomes its rank's link, with its table entry and tag. */
static int coll_tcp__verdict(coll_tcp *t, coll_tcp__shake *s, int lo, int hi,
                             unsigned char *table, unsigned char (*tags)[COLL_TCP__TAG])
{
    unsigned char tag[COLL_TCP__TAG];
    unsigned long rank, world;
    coll_tcp__mac(t, 'C', s->hello, s->reply, tag);
    if (!coll_tcp__same(tag, s->proof)) {
        coll_tcp__log(t, s->fd, "dropped a peer claiming rank %lu that failed the token "
                      "check (no COLL_TCP_TOKEN, or another one)", coll_tcp__get32(s->hello + 8));
        coll_tcp__drop(t, s);
        return 0;
    }
    /* Authenticated: from here on a contradiction is the job's error. */
    rank = coll_tcp__get32(s->hello + 8);
    world = coll_tcp__get32(s->hello + 12);
    if (world != ((unsigned long)t->nranks | coll_tcp__modes(t) << 16) || rank < (unsigned long)lo ||
        rank >= (unsigned long)hi || t->fd[rank] >= 0)
        return coll_tcp__say_no(t, s, rank, world, lo, hi);
    coll_tcp__mac(t, 'K', s->hello, s->reply, tag);
    if (coll_tcp__write_all(s->fd, tag, COLL_TCP__TAG, s->until)) {
        coll_tcp__log(t, s->fd, "rank %lu's connection failed before it was told yes", rank);
        coll_tcp__drop(t, s);
        return 0;
    }
    t->fd[rank] = s->fd;
    s->fd = -1;
    coll_tcp__mac_session(t, (int)rank, s->reply + COLL_TCP__HEAD);
    if (table) memcpy(table + rank * COLL_TCP__ENTRY, s->hello + 32, COLL_TCP__ENTRY);
    if (tags) memcpy(tags[rank], s->reply + COLL_TCP__HEAD, COLL_TCP__TAG);
    return 1;
}

/* k more bytes of the hello or the proof are in: the version checked as
   soon as it is there, and a whole hello answered, a whole proof judged. */
static int coll_tcp__took(coll_tcp *t, coll_tcp__shake *s, ssize_t k, int lo, int hi,
                          unsigned char *table, unsigned char (*tags)[COLL_TCP__TAG])
{
    size_t need = s->stage == 1 ? COLL_TCP__TAG : COLL_TCP__HELLO;
    s->got += (size_t)k;
    s->moved = coll_tcp__now_ms();
    if (s->stage == 0 && s->got >= 8) {
        int r = coll_tcp__version(t, s);
        if (r != 1) return r;
    }
    if (s->got < need) return COLL_TCP__GO;
    s->got = 0;
    if (s->stage == 0) return coll_tcp__answer(t, s);
    return coll_tcp__verdict(t, s, lo, hi, table, tags);
}

/* Moves one pending connection on as far as the bytes that arrived allow:
   it reads the hello (stage 0), the proof (1) or a refused peer's rest
   (2), and hands what came to that stage's step. Returns 1 when it has
   become a rank's link, 0 while it waits (or once it was dropped), or a
   negative code - only for an authenticated peer that contradicts the
   job, or for a failure of our own. */
static int coll_tcp__step(coll_tcp *t, coll_tcp__shake *s, int lo, int hi,
                          unsigned char *table, unsigned char (*tags)[COLL_TCP__TAG])
{
    for (;;) {
        unsigned char *dst = s->stage == 1 ? s->proof : s->hello;
        size_t need = s->stage == 1 ? COLL_TCP__TAG : COLL_TCP__HELLO;
        int r;
        ssize_t k = recv(s->fd, dst + s->got, need - s->got, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        if (s->stage == 2) r = coll_tcp__drain(t, s, k);
        else if (k <= 0) {
            coll_tcp__log(t, s->fd, "dropped a connection that %s during the handshake",
                          k == 0 ? "closed" : "failed");
            coll_tcp__drop(t, s);
            return 0;
        } else r = coll_tcp__took(t, s, k, lo, hi, table, tags);
        if (r != COLL_TCP__GO) return r;
    }
}

/* When every slot is taken and more connections wait in the backlog, a
   slot is recycled (see coll_tcp__victim): a refused peer's at once, a
   silent connection's once it has had COLL_TCP__QUIET_MS to speak, one
   stalled inside the handshake once it has moved no byte for
   COLL_TCP_HELLO_MS / 4. A rank sends its hello the moment it is
   connected, and it is usually in the socket when we accept, so a rank
   is past the first stage at once and a flood of silent strangers only
   makes it queue: a slot serves 1000 / COLL_TCP__QUIET_MS of them a second. */
#define COLL_TCP__QUIET_MS 50

/* The slot to recycle for a connection waiting in the backlog, or -1 (and
   *wake lowered to when one becomes recyclable). */
static int coll_tcp__victim(const coll_tcp__shake *s, long long now, long long *wake)
{
    int i, best = -1, best_class = 3;
    long long best_at = 0;
    for (i = 0; i < COLL_TCP_MAX_PENDING; i++) {
        int cls;
        long long from;
        if (s[i].fd < 0) return i;
        if (s[i].stage == 2) { cls = 0; from = s[i].since; }
        else if (s[i].stage == 0 && s[i].got == 0) { cls = 1; from = s[i].since + COLL_TCP__QUIET_MS; }
        else { cls = 2; from = s[i].moved + COLL_TCP_HELLO_MS / 4; }
        if (from > now) {
            if (from < *wake) *wake = from;
            continue;
        }
        if (cls < best_class || (cls == best_class && from < best_at)) {
            best = i; best_class = cls; best_at = from;
        }
    }
    return best;
}

/* Lets go of the connections whose time to authenticate is up (a refused
   peer's without a line), and lists the others in p to poll, *wake
   lowered to the earliest such time. Returns how many it listed. */
static int coll_tcp__pending(coll_tcp *t, coll_tcp__shake *s, long long now, struct pollfd *p,
                             long long *wake)
{
    int i, n = 0;
    for (i = 0; i < COLL_TCP_MAX_PENDING; i++) {
        if (s[i].fd >= 0 && s[i].until <= now && s[i].stage == 2) {
            close(s[i].fd);
            s[i].fd = -1;
        } else if (s[i].fd >= 0 && s[i].until <= now) {
            coll_tcp__log(t, s[i].fd, "dropped a connection that did not authenticate "
                          "within %d ms", COLL_TCP_HELLO_MS);
            coll_tcp__drop(t, &s[i]);
        }
        if (s[i].fd < 0) continue;
        if (s[i].until < *wake) *wake = s[i].until;
        p[n].fd = s[i].fd; p[n].events = POLLIN; p[n].revents = 0; n++;
    }
    return n;
}

/* Slot s, the victim, is freed for a connection waiting in the backlog:
   a refused peer's is closed, any other dropped with a line saying why. */
static void coll_tcp__recycle(coll_tcp *t, coll_tcp__shake *s)
{
    if (s->fd >= 0 && s->stage == 2) {
        close(s->fd);
        s->fd = -1;
    } else if (s->fd >= 0) {
        coll_tcp__log(t, s->fd, "dropped a connection that %s, for one waiting",
                      s->stage == 0 && s->got == 0 ? "said nothing" : "stalled in the handshake");
        coll_tcp__drop(t, s);
    }
}

/* Slot s takes the accepted connection fd: a handshake from its start,
   with COLL_TCP_HELLO_MS to prove itself, and no later than the deadline. */
static void coll_tcp__seat(coll_tcp__shake *s, int fd, long long now, long long deadline)
{
    coll_tcp__tune(fd);
    s->fd = fd; s->stage = 0; s->got = 0; s->drained = 0;
    s->since = s->moved = now;
    s->until = now + COLL_TCP_HELLO_MS < deadline ? now + COLL_TCP_HELLO_MS : deadline;
}

/* Takes what waits in the backlog, at most one slot's worth each: a
   connection is stepped at once (its hello is usually there). Returns
   COLL_OK or the failure; *joined counts the ranks that became links. */
static int coll_tcp__take(coll_tcp *t, int lfd, coll_tcp__shake *s, int lo, int hi,
                          unsigned char *table, unsigned char (*tags)[COLL_TCP__TAG],
                          long long now, long long deadline, int *joined)
{
    int accepted, rc = COLL_OK;
    for (accepted = 0; rc == COLL_OK && accepted < COLL_TCP_MAX_PENDING; accepted++) {
        long long never = deadline;
        int fd, k, v = coll_tcp__victim(s, now, &never);
        if (v < 0) break;
        fd = accept(lfd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) rc = COLL_ERR_IO;
            break;
        }
        coll_tcp__recycle(t, &s[v]);
        coll_tcp__seat(&s[v], fd, now, deadline);
        k = coll_tcp__step(t, &s[v], lo, hi, table, tags);
        if (k < 0) rc = k; else *joined += k;
        if (*joined >= hi - lo) break;
    }
    return rc;
}

/* The rendezvous is over (rc): every connection still pending is let go,
   and past COLL_TCP__LOG_DROPS lines one more says how many were dropped. */
static void coll_tcp__admitted(coll_tcp *t, coll_tcp__shake *s, int rc)
{
    int i;
    for (i = 0; i < COLL_TCP_MAX_PENDING; i++) {
        if (s[i].fd < 0 || s[i].stage == 2) { if (s[i].fd >= 0) close(s[i].fd); continue; }
        coll_tcp__log(t, s[i].fd, "dropped a connection still unauthenticated when the "
                      "rendezvous %s", rc ? "failed" : "was complete");
        coll_tcp__drop(t, &s[i]);
    }
    if (t->dropped > COLL_TCP__LOG_DROPS)
        coll_tcp__log(t, -1, "%u connections dropped in all, a line shown for the first %d",
                      t->dropped, COLL_TCP__LOG_DROPS);
}

/* Accepts ranks lo..hi-1 on the listener `lfd`. Up to COLL_TCP_MAX_PENDING
   connections are served at once, each with COLL_TCP_HELLO_MS to prove
   itself; when more wait, the least promising slot is recycled (above),
   so strangers that stall only ever cost a slot for a short while. */
static int coll_tcp__admit(coll_tcp *t, int lfd, int lo, int hi, unsigned char *table,
                           unsigned char (*tags)[COLL_TCP__TAG], long long deadline)
{
    coll_tcp__shake s[COLL_TCP_MAX_PENDING];
    struct pollfd p[COLL_TCP_MAX_PENDING + 1];
    int i, rc = COLL_OK, joined = 0;
    for (i = 0; i < COLL_TCP_MAX_PENDING; i++) s[i].fd = -1;
    while (rc == COLL_OK && joined < hi - lo) {
        long long now = coll_tcp__now_ms(), wake = deadline;
        int n, k, room;
        if (now >= deadline) { rc = COLL_ERR_TIMEOUT; break; }
        n = coll_tcp__pending(t, s, now, p, &wake);
        /* Listen only while a slot is free or may be recycled now. */
        room = coll_tcp__victim(s, now, &wake) >= 0;
        if (room) { p[n].fd = lfd; p[n].events = POLLIN; p[n].revents = 0; n++; }
        do k = poll(p, (nfds_t)n, coll_tcp__left(wake));
        while (k < 0 && errno == EINTR);
        if (k < 0) { rc = COLL_ERR_IO; break; }
        for (i = 0; rc == COLL_OK && i < COLL_TCP_MAX_PENDING; i++) {
            if (s[i].fd < 0) continue;
            k = coll_tcp__step(t, &s[i], lo, hi, table, tags);
            if (k < 0) rc = k; else joined += k;
        }
        now = coll_tcp__now_ms();
        if (rc == COLL_OK && room)
            rc = coll_tcp__take(t, lfd, s, lo, hi, table, tags, now, deadline, &joined);
    }
    coll_tcp__admitted(t, s, rc);
    return rc;
}

/* ---- the dialling side --------------------------------------------------------- */

/* The first 8 bytes of the answer: "coll" and our protocol version, else
   what answered is no coll rank (COLL_TCP_ERR_AUTH) or speaks another
   version (COLL_TCP_ERR_VERSION). */
static int coll_tcp__answered(coll_tcp *t, int fd, int peer, const char *who,
                              const unsigned char *reply)
{
    if (coll_tcp__get32(reply) != COLL_TCP__MAGIC) {
        coll_tcp__log(t, fd, "what answered at %s's address (rank %d) is not a coll rank", who, peer);
        return COLL_TCP_ERR_AUTH;
    }
    if (coll_tcp__get32(reply + 4) != COLL_TCP_VERSION) {
        coll_tcp__log(t, fd, "%s (rank %d) speaks protocol version %lu, this rank speaks %d: "
                      "refused", who, peer, coll_tcp__get32(reply + 4), COLL_TCP_VERSION);
        return COLL_TCP_ERR_VERSION;
    }
    return COLL_OK;
}

/* The peer's verdict on our proof: MAC('K') is yes (its MAC('A') goes to
   tag_a and starts the link's keyed session), MAC('N') no; anything else
   is a bad acknowledgement. */
static int coll_tcp__yes(coll_tcp *t, int fd, int peer, const char *who, const unsigned char *hello,
                         const unsigned char *reply, unsigned char *tag_a, long long deadline)
{
    unsigned char tag[COLL_TCP__TAG], want[COLL_TCP__TAG];
    int rc = coll_tcp__read_all(fd, tag, sizeof tag, deadline);
    if (rc) return rc == COLL_ERR_IO ? COLL_AGAIN : rc;
    coll_tcp__mac(t, 'K', hello, reply, want);
    if (coll_tcp__same(want, tag)) {
        memcpy(tag_a, reply + COLL_TCP__HEAD, COLL_TCP__TAG);
        coll_tcp__mac_session(t, peer, tag_a);
        return COLL_OK;
    }
    coll_tcp__mac(t, 'N', hello, reply, want);
    if (coll_tcp__same(want, tag)) {
        coll_tcp__log(t, fd, "%s (rank %d) refused this rank: the rank is taken or the "
                      "world differs", who, peer);
        return COLL_ERR_MISMATCH;
    }
    coll_tcp__log(t, fd, "%s (rank %d) sent a bad acknowledgement", who, peer);
    return COLL_TCP_ERR_AUTH;
}

/* One handshake on the connected socket `fd`, to `peer`: our hello, the
   answer's version and MAC('A') checked, our proof MAC('C'), the world
   and rank it answers for checked, then its verdict. Returns COLL_OK
   with the peer's MAC('A') in tag_a, COLL_AGAIN when the link broke before
   the peer said yes (it dropped us as too slow, say: dial again), or an
   error. */
static int coll_tcp__shake_out(coll_tcp *t, int fd, int peer, const unsigned char *entry,
                               unsigned char *tag_a, int *heard, long long deadline)
{
    unsigned char hello[COLL_TCP__HELLO], reply[COLL_TCP__REPLY], tag[COLL_TCP__TAG], want[COLL_TCP__TAG];
    const char *who = peer == 0 ? "the master" : "a peer";
    int rc;
    coll_tcp__hello(t, hello, t->rank);
    if (coll_tcp__nonce(hello + 16)) return COLL_ERR_IO;
    if (entry) memcpy(hello + 32, entry, COLL_TCP__ENTRY);
    else memset(hello + 32, 0, COLL_TCP__ENTRY);
    *heard = 0;
    rc = coll_tcp__write_all(fd, hello, sizeof hello, deadline);
    if (!rc) rc = coll_tcp__read_all(fd, reply, 8, deadline);
    if (rc == COLL_ERR_TIMEOUT)
        coll_tcp__log(t, fd, "what listens at %s's address (rank %d) took the connection and "
                      "said nothing until the deadline: a rank too busy, or another program's port",
                      who, peer);
    if (rc) return rc == COLL_ERR_IO ? COLL_AGAIN : rc;
    *heard = 1;
    if ((rc = coll_tcp__answered(t, fd, peer, who, reply)) != COLL_OK) return rc;
    rc = coll_tcp__read_all(fd, reply + 8, COLL_TCP__REPLY - 8, deadline);
    if (rc) return rc == COLL_ERR_IO ? COLL_AGAIN : rc;
    coll_tcp__mac(t, 'A', hello, reply, want);
    if (!coll_tcp__same(want, reply + COLL_TCP__HEAD)) {
        coll_tcp__log(t, fd, "what answered at %s's address (rank %d) failed the token check: "
                      "an impostor, or another COLL_TCP_TOKEN", who, peer);
        return COLL_TCP_ERR_AUTH;
    }
    coll_tcp__mac(t, 'C', hello, reply, tag);
    rc = coll_tcp__write_all(fd, tag, sizeof tag, deadline);
    if (rc) return rc == COLL_ERR_IO ? COLL_AGAIN : rc;
    if (coll_tcp__get32(reply + 12) != ((unsigned long)t->nranks | coll_tcp__modes(t) << 16)) {
        coll_tcp__say_world(t, fd, who, coll_tcp__get32(reply + 12));
        return COLL_ERR_MISMATCH;
    }
    if (coll_tcp__get32(reply + 8) != (unsigned long)peer) {
        coll_tcp__log(t, fd, "rank %lu answered where rank %d should be",
                      coll_tcp__get32(reply + 8), peer);
        return COLL_ERR_MISMATCH;
    }
    return coll_tcp__yes(t, fd, peer, who, hello, reply, tag_a, deadline);
}

/* Hang-ups without an answer after which the dialled address is taken for
   another program's. */
#define COLL_TCP__MUTE 8

/* Dials `peer` and authenticates both ways, dialling again while the link
   breaks before the peer said yes. t->fd[peer], if already connected, is
   used first. The link ends in t->fd[peer] (closed by coll_tcp_close). */
static int coll_tcp__dial(coll_tcp *t, int peer, const struct sockaddr_storage *a, socklen_t alen,
                          const unsigned char *entry, unsigned char *tag_a, long long deadline)
{
    int mute = 0;              /* hang-ups in a row without a byte of answer */
    for (;;) {
        int rc, heard = 0;
        if (t->fd[peer] < 0) {
            int fd = coll_tcp__connect(a, alen, deadline);
            if (fd < 0) return fd;
            t->fd[peer] = fd;
        }
        rc = coll_tcp__shake_out(t, t->fd[peer], peer, entry, tag_a, &heard, deadline);
        /* A coll rank that drops us says "coll" first (coll_tcp__drop);
           what keeps hanging up without a word is another program. */
        mute = rc == COLL_AGAIN && !heard ? mute + 1 : 0;
        if (mute == COLL_TCP__MUTE) {
            coll_tcp__log(t, t->fd[peer], "what listens at %s's address (rank %d) hung up %d times "
                          "without a word: not a coll rank (another program on that port?)",
                          peer == 0 ? "the master" : "a peer", peer, mute);
            rc = COLL_TCP_ERR_AUTH;
        }
        if (rc != COLL_AGAIN) return rc;
        close(t->fd[peer]);
        t->fd[peer] = -1;
        if (coll_tcp__left(deadline) == 0) return COLL_ERR_TIMEOUT;
        {
            int ms = coll_tcp__left(deadline) < 20 ? coll_tcp__left(deadline) : 20;
            struct timespec ts;
            ts.tv_sec = 0; ts.tv_nsec = (long)ms * 1000000L;
            nanosleep(&ts, NULL);
        }
    }
}

/* ---- the rendezvous -------------------------------------------------------- */

/* Rank 0: admit WORLD_SIZE - 1 authenticated registrations, then hand every
   registered rank the full table with its link's MAC. The registration
   connections stay open as rank 0's links. */
static int coll_tcp__master(coll_tcp *t, int lfd, long long deadline)
{
    unsigned char table[COLL_TCP_MAX_RANKS * COLL_TCP__ENTRY + COLL_TCP__TAG];
    unsigned char tags[COLL_TCP_MAX_RANKS][COLL_TCP__TAG];
    size_t n = (size_t)t->nranks * COLL_TCP__ENTRY;
    int r, rc;
    memset(table, 0, sizeof table);
    rc = coll_tcp__admit(t, lfd, 1, t->nranks, table, tags, deadline);
    for (r = 1; !rc && r < t->nranks; r++) {
        coll_tcp__table_mac(t, tags[r], table, table + n);
        rc = coll_tcp__write_all(t->fd[r], table, n + COLL_TCP__TAG, deadline);
    }
    return rc;
}

/* Rank r > 0: register with the master, learn the table, dial the ranks
   between 0 and r, admit the ranks above r. */
static int coll_tcp__worker(coll_tcp *t, const struct sockaddr_storage *master,
                            socklen_t mlen, long long deadline)
{
    unsigned char table[COLL_TCP_MAX_RANKS * COLL_TCP__ENTRY + COLL_TCP__TAG];
    unsigned char entry[COLL_TCP__ENTRY], tag_a[COLL_TCP__TAG], want[COLL_TCP__TAG];
    size_t n = (size_t)t->nranks * COLL_TCP__ENTRY;
    struct sockaddr_storage me;
    socklen_t melen = sizeof me;
    int lfd = -1, fd, rc, j;

    fd = coll_tcp__connect(master, mlen, deadline);
    if (fd < 0) return fd;
    t->fd[0] = fd;
    /* The address our kernel used to reach the master is the one the
       others can reach us on; listen there on a port of the kernel's
       choosing. The highest rank accepts nobody and needs no listener. */
    if (getsockname(fd, (struct sockaddr *)&me, &melen) < 0) return COLL_ERR_IO;
    if (me.ss_family == AF_INET) ((struct sockaddr_in *)&me)->sin_port = 0;
    else ((struct sockaddr_in6 *)&me)->sin6_port = 0;
    if (t->rank < t->nranks - 1) {
        lfd = coll_tcp__listen(&me, melen, COLL_TCP__BACKLOG);
        if (lfd < 0) return lfd;
        melen = sizeof me;
        if (getsockname(lfd, (struct sockaddr *)&me, &melen) < 0) { close(lfd); return COLL_ERR_IO; }
    }
    coll_tcp__put_addr(entry, &me);
    rc = coll_tcp__dial(t, 0, master, mlen, entry, tag_a, deadline);
    if (!rc) rc = coll_tcp__read_all(t->fd[0], table, n + COLL_TCP__TAG, deadline);
    if (!rc) {
        coll_tcp__table_mac(t, tag_a, table, want);
        if (!coll_tcp__same(want, table + n)) {
            coll_tcp__log(t, t->fd[0], "the master's table failed the token check");
            rc = COLL_TCP_ERR_AUTH;
        }
    }
    /* Dial down: rank r dials 1..r-1. The listeners all exist already (each
       was opened before its owner registered), so at worst our connection
       waits in the peer's backlog until that peer starts admitting. */
    for (j = 1; !rc && j < t->rank; j++) {
        struct sockaddr_storage peer;
        socklen_t plen = coll_tcp__get_addr(table + j * COLL_TCP__ENTRY, &peer);
        if (plen == 0) { rc = COLL_ERR_IO; break; }
        rc = coll_tcp__dial(t, j, &peer, plen, NULL, tag_a, deadline);
    }
    /* Admit up: every rank above us dials in and proves itself. */
    if (!rc && lfd >= 0) rc = coll_tcp__admit(t, lfd, t->rank + 1, t->nranks, NULL, NULL, deadline);
    if (lfd >= 0) close(lfd);
    return rc;
}

/* The links' own bound on a blocking call, SO_RCVTIMEO/SO_SNDTIMEO: the
   deadline, or a slice of it (COLL_TCP__SLICE_MS) when longer. */
static void coll_tcp__link_timeouts(coll_tcp *t)
{
#if COLL_TCP__BLOCKING
    struct timeval tv;
    int i;
    unsigned ms = t->timeout_ms < COLL_TCP__SLICE_MS ? t->timeout_ms : COLL_TCP__SLICE_MS;
    tv.tv_sec = (time_t)(ms / 1000);
    tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
    for (i = 0; i < t->nranks && i < COLL_TCP_MAX_RANKS; i++) {
        if (t->fd[i] < 0) continue;
        setsockopt(t->fd[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(t->fd[i], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    }
#else
    (void)t;
#endif
}

/* The mesh is up: links become blocking sockets with the deadline as their
   timeouts (every attempt that must not wait passes MSG_DONTWAIT). */
static void coll_tcp__links_ready(coll_tcp *t)
{
#if COLL_TCP__BLOCKING
    int i;
    for (i = 0; i < t->nranks && i < COLL_TCP_MAX_RANKS; i++)
        if (t->fd[i] >= 0) fcntl(t->fd[i], F_SETFL, fcntl(t->fd[i], F_GETFL, 0) & ~O_NONBLOCK);
    coll_tcp__link_timeouts(t);
#else
    (void)t;
#endif
}

static void coll_tcp__reset(coll_tcp *t)
{
    int i;
    memset(t, 0, sizeof *t);
    for (i = 0; i < COLL_TCP_MAX_RANKS; i++) t->fd[i] = -1;
    for (i = 0; i < COLL_TCP_MAX_REQUESTS; i++) t->req[i].peer = -1;
}

/* The key from `token`, else COLL_TCP_TOKEN, else - only with
   COLL_TCP_INSECURE=1 - a publicly known one. */
static int coll_tcp__key(coll_tcp *t, const char *token)
{
    const char *insecure;
    if (token && !*token) {
        coll_tcp__log(t, -1, "an empty job token was passed: refused");
        return COLL_ERR_INVAL;
    }
    if (!token) token = getenv("COLL_TCP_TOKEN");
    if (token && *token) {
        coll_tcp__derive(t, token);
#ifndef COLL_TCP_NO_MAC
        if (t->mac.on) coll_tcp__mac_derive(t, token);
#endif
        return COLL_OK;
    }
    insecure = getenv("COLL_TCP_INSECURE");
    if (insecure && strcmp(insecure, "1") == 0) {
        if (t->rank == 0)
            coll_tcp__log(t, -1, "COLL_TCP_INSECURE=1, no job token: any process that can "
                          "reach these ports can join the job or pose as a rank");
        t->insecure = 1;
        coll_tcp__derive(t, "");
#ifndef COLL_TCP_NO_MAC
        if (t->mac.on) coll_tcp__mac_derive(t, "");
#endif
        return COLL_OK;
    }
    coll_tcp__log(t, -1, "no job token: set COLL_TCP_TOKEN to one secret shared by every "
                  "rank (or COLL_TCP_INSECURE=1 to run without)");
    return COLL_ERR_INVAL;
}

/* The keyed mode, as asked for by `flags` and COLL_TCP_MAC. */
static int coll_tcp__modes_set(coll_tcp *t, unsigned flags)
{
    const char *env = getenv("COLL_TCP_MAC");
    if (env && *env && strcmp(env, "0") != 0 && strcmp(env, "1") != 0) {
        coll_tcp__log(t, -1, "COLL_TCP_MAC=%.32s: use 1 (the keyed mode) or 0", env);
        return COLL_ERR_INVAL;
    }
    if (env && strcmp(env, "1") == 0) flags |= COLL_TCP_MAC;
    if (flags & ~COLL_TCP_MAC) return COLL_ERR_INVAL;
#ifndef COLL_TCP_NO_MAC
    t->mac.on = (flags & COLL_TCP_MAC) != 0;
#else
    if (flags & COLL_TCP_MAC) {
        coll_tcp__log(t, -1, "the keyed mode was asked for, but this build has COLL_TCP_NO_MAC");
        return COLL_ERR_NOSYS;
    }
#endif
    return COLL_OK;
}

COLL_TCP_API int coll_tcp_init_token(coll_tcp *t, const char *master_addr, int master_port,
                                     int rank, int world, unsigned timeout_ms, const char *token)
{
    return coll_tcp_init_flags(t, master_addr, master_port, rank, world, timeout_ms, token, 0);
}

/* MASTER_ADDR:MASTER_PORT resolved into *master (its length *mlen). */
static int coll_tcp__resolve(const char *master_addr, int master_port,
                             struct sockaddr_storage *master, socklen_t *mlen)
{
    struct addrinfo hints, *res = NULL;
    char port[16];
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(port, sizeof port, "%d", master_port);
    if (getaddrinfo(master_addr, port, &hints, &res) != 0 || !res) return COLL_ERR_INVAL;
    memset(master, 0, sizeof *master);
    memcpy(master, res->ai_addr, res->ai_addrlen);
    *mlen = (socklen_t)res->ai_addrlen;
    freeaddrinfo(res);
    return COLL_OK;
}

/* Rank 0's listener: on MASTER_ADDR itself when it is ours; when it is
   not (an address the others reach us by through NAT, say), on every
   address of its family. Returns the socket, or a negative code with a
   line saying why. */
static int coll_tcp__listen_master(coll_tcp *t, const struct sockaddr_storage *master,
                                   socklen_t mlen, const char *master_addr, int master_port)
{
    int lfd = coll_tcp__listen(master, mlen, COLL_TCP__BACKLOG);
    if (lfd == COLL_ERR_IO) {
        struct sockaddr_storage any;
        memset(&any, 0, sizeof any);
        any.ss_family = master->ss_family;
        if (master->ss_family == AF_INET)
            ((struct sockaddr_in *)&any)->sin_port = ((const struct sockaddr_in *)master)->sin_port;
        else
            ((struct sockaddr_in6 *)&any)->sin6_port = ((const struct sockaddr_in6 *)master)->sin6_port;
        lfd = coll_tcp__listen(&any, mlen, COLL_TCP__BACKLOG);
    }
    if (lfd == COLL_TCP_ERR_INUSE)
        coll_tcp__log(t, -1, "MASTER_PORT %d on %s: address in use - another program "
                      "(torch's store, an earlier job) holds it; pick a free port",
                      master_port, master_addr);
    else if (lfd < 0)
        coll_tcp__log(t, -1, "cannot listen on MASTER_PORT %d on %s", master_port, master_addr);
    return lfd;
}

COLL_TCP_API int coll_tcp_init_flags(coll_tcp *t, const char *master_addr, int master_port,
                                     int rank, int world, unsigned timeout_ms, const char *token,
                                     unsigned flags)
{
    struct sockaddr_storage master;
    socklen_t mlen;
    long long deadline;
    int rc;

    if (!t) return COLL_ERR_INVAL;
    coll_tcp__reset(t);
    if (!master_addr || master_port <= 0 || master_port > 65535 || world < 1 ||
        world > COLL_TCP_MAX_RANKS || rank < 0 || rank >= world)
        return COLL_ERR_INVAL;
    t->rank = rank; t->nranks = world; t->local_rank = rank;
    coll_tcp_set_timeout(t, timeout_ms);
    if (world == 1) return COLL_OK;
    rc = coll_tcp__modes_set(t, flags);
    if (!rc) rc = coll_tcp__key(t, token);
    if (rc) { t->failed = rc; return rc; }
    deadline = coll_tcp__now_ms() + t->timeout_ms;

    if (coll_tcp__resolve(master_addr, master_port, &master, &mlen)) {
        memset(t->key, 0, sizeof t->key);
        coll_tcp_close(t);
        t->failed = COLL_ERR_INVAL;
        return COLL_ERR_INVAL;
    }
    if (rank == 0) {
        int lfd = coll_tcp__listen_master(t, &master, mlen, master_addr, master_port);
        if (lfd < 0) rc = lfd;
        else {
            rc = coll_tcp__master(t, lfd, deadline);
            close(lfd);
        }
    } else {
        rc = coll_tcp__worker(t, &master, mlen, deadline);
    }
    memset(t->key, 0, sizeof t->key);    /* needed no more */
    if (rc) coll_tcp_close(t);
    else coll_tcp__links_ready(t);
    t->failed = rc;
    return rc;
}

COLL_TCP_API int coll_tcp_init(coll_tcp *t, const char *master_addr, int master_port,
                               int rank, int world, unsigned timeout_ms)
{
    return coll_tcp_init_token(t, master_addr, master_port, rank, world, timeout_ms, NULL);
}

/* Reads a whole decimal integer in [lo, hi] from the environment. */
static int coll_tcp__env_int(const char *name, long lo, long hi, int *out)
{
    const char *s = getenv(name);
    char *end;
    long v;
    if (!s || !*s) return 0;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end || v < lo || v > hi) return 0;
    *out = (int)v;
    return 1;
}

COLL_TCP_API int coll_tcp_init_env(coll_tcp *t, unsigned timeout_ms)
{
    const char *addr = getenv("MASTER_ADDR");
    int port, world, rank, local, rc;
    if (!t) return COLL_ERR_INVAL;
    if (!addr || !*addr || !coll_tcp__env_int("MASTER_PORT", 1, 65535, &port) ||
        !coll_tcp__env_int("WORLD_SIZE", 1, COLL_TCP_MAX_RANKS, &world) ||
        !coll_tcp__env_int("RANK", 0, world - 1, &rank)) {
        coll_tcp__reset(t);
        return COLL_ERR_INVAL;
    }
    rc = coll_tcp_init_token(t, addr, port, rank, world, timeout_ms, NULL);
    if (coll_tcp__env_int("LOCAL_RANK", 0, COLL_TCP_MAX_RANKS - 1, &local)) t->local_rank = local;
    return rc;
}

COLL_TCP_API void coll_tcp_set_timeout(coll_tcp *t, unsigned timeout_ms)
{
    t->timeout_ms = timeout_ms ? timeout_ms : COLL_TCP_DEFAULT_TIMEOUT_MS;
    coll_tcp__link_timeouts(t);
}

/* coll.h calls this after a transport error or a damaged message: the
   epoch fails here, and an abort frame tells every peer, so they fail at
   once instead of at their deadline. */
static void coll_tcp__abort_hook(void *ctx, int code)
{
    coll_tcp_abort((coll_tcp *)ctx, code);
}

/* coll_port.attach: the communicators over this rank's end, counted. */
static int coll_tcp__attach(void *ctx)
{
    return ((coll_tcp *)ctx)->attached++;
}

/* ---- what a link owes: the rest of a voided frame, a control frame -------- */

/* Byte `pos` of the voided frame: its header, zeros, status "colV", zeros. */
static unsigned char coll_tcp__void_byte(const coll_tcp__link *L, unsigned long long pos)
{
    unsigned long long len = L->tx_total - COLL_TCP__FRAME;   /* payload + trailer */
    unsigned long long tail = pos - COLL_TCP__FRAME;
    unsigned long long plen = L->tx_len;
    unsigned char st[COLL_TCP__FRAME];
    if (pos < COLL_TCP__FRAME) {
        coll_tcp__frame_head(st, COLL_TCP__DATA, L->tx_epoch, plen);
        return st[pos];
    }
    if (tail < plen || tail >= plen + 4 || tail >= len) return 0;
    coll_tcp__put32(st, COLL_TCP__VOID);
    return st[tail - plen];
}

/* Sends what link `peer` owes, without blocking (block: within the
   link's SO_SNDTIMEO): the rest of a voided frame, then a wait notice,
   then an abort frame. 1: nothing owed any more; 0: not yet; a negative
   code: the link failed (COLL_ERR_TIMEOUT: blocked to the deadline). */
static int coll_tcp__owed(coll_tcp *t, int peer, int block)
{
    coll_tcp__link *L = &t->link[peer];
    int fd = t->fd[peer];
    if (fd < 0 || L->dead) return L->dead ? L->dead : COLL_ERR_IO;
    while (L->tx_total || L->note.on || L->ab.on) {
        unsigned char b[4096];
        size_t n = 0;
        ssize_t k;
        coll_tcp__ctl *c = L->tx_total ? 0 : L->note.on ? &L->note : &L->ab;
        int flags = COLL_TCP__SEND_FLAGS | (block ? 0 : COLL_TCP__TRY);
        if (!c) {
            while (n < sizeof b && L->tx_at + n < L->tx_total) {
                b[n] = coll_tcp__void_byte(L, L->tx_at + n);
                n++;
            }
            k = send(fd, b, n, flags);
        } else {
            coll_tcp__frame_head(b, c == &L->ab ? COLL_TCP__ABORT : COLL_TCP__NOTE, c->epoch, c->word);
            k = send(fd, b + c->at, COLL_TCP__FRAME - c->at, flags);
        }
        if (k > 0) {
            if (!c) {
                L->tx_at += (unsigned long long)k;
                if (L->tx_at == L->tx_total) L->tx_at = L->tx_total = 0;
            } else if ((c->at = (unsigned char)(c->at + k)) == COLL_TCP__FRAME) {
                c->on = 0; c->at = 0;
            }
            continue;
        }
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return block ? COLL_ERR_TIMEOUT : 0;
        return COLL_ERR_IO;
    }
    return 1;
}

/* Does the link owe its stream anything before a frame of ours? */
static int coll_tcp__owes(const coll_tcp__link *L)
{
    return L->tx_total || L->note.on || L->ab.on;
}

static void coll_tcp__watch(coll_tcp *t);

/* ---- who is missing (coll_port.missing) ---------------------------------- */

/* A rank cannot see another's waits over TCP, so the ranks tell each
   other, and only when something is wrong:
     - a wait that has seen nothing move for a quarter of the deadline sends every
       live link a wait notice, "I wait for W" (and "nobody" once a wait
       that sent one ends well); at the deadline, a peer that has told
       nothing gets a quarter more to tell it (coll_tcp__grace). When a call hangs on a stopped or silent
       rank, every rank behind it has waited a quarter of a deadline (three
       quarters of one to spare, for a rank the scheduler holds up) before the
       first one reaches the whole, so by then each knows the others'
       waits and follows them, as the threads port reads them, from its
       own peer to the rank that waits for nobody;
     - the first failure of an epoch decides the rank it names: a deadline
       that chain's end, a dead link (EOF, reset) or a broken stream that
       peer itself, a peer's abort frame the rank that frame names (or its
       sender, if it names none). Abort frames carry it, so the ranks that
       fail at an abort name the rank the first one found.
   Notices cost nothing while calls move. The words are a peer's say-so:
   a value out of range is no frame at all (>>frames), and a chain ends
   after nranks hops, at a cycle, or at this rank. Outside the keyed
   mode's tag, a forged notice can only misname the missing rank. */

/* Is h (a whole header) a control frame of this epoch or an older one? */
static int coll_tcp__is_ctl(const coll_tcp *t, const unsigned char *h)
{
    unsigned long kind = coll_tcp__get32(h);
    return (kind == COLL_TCP__ABORT || kind == COLL_TCP__NOTE) && coll_tcp__get32(h + 8) == 0 &&
           coll_tcp__get32(h + 12) <= (unsigned long)t->nranks &&
           (uint32_t)coll_tcp__get32(h + 4) <= t->epoch;
}

/* Has `peer` said whom it waits for (and not that it waits no more)? */
static int coll_tcp__told(const coll_tcp *t, int peer)
{
    return t->link[peer].waits != 0;
}

/* From `peer`, who waits for whom, as the notices of this epoch say. */
static int coll_tcp__chain(const coll_tcp *t, int peer)
{
    int hops, next;
    for (hops = 0; hops < t->nranks; hops++) {
        if (peer < 0 || peer >= t->nranks || peer >= COLL_TCP_MAX_RANKS || peer == t->rank) break;
        next = t->link[peer].waits - 1;
        if (next < 0 || next >= t->nranks || next == peer || next == t->rank) break;
        peer = next;
    }
    return peer;
}

/* The epoch's first failure names its rank: the end of the chain from
   `peer` after a deadline, `peer` itself otherwise. */
static void coll_tcp__blame(coll_tcp *t, int peer, int deadline)
{
    if (!t->named && peer >= 0 && peer < t->nranks)
        t->named = (deadline ? coll_tcp__chain(t, peer) : peer) + 1;
}

/* Peer `from` sent an abort frame of this epoch naming `word` - 1: the
   epoch fails here too, naming the same rank. */
static void coll_tcp__heard_abort(coll_tcp *t, int from, int word)
{
    if (!t->named) t->named = word ? word : from + 1;
    coll_tcp_abort(t, COLL_ERR_IO);
}

/* Is a frame of ours on its way out on link `peer` (some of it sent)? A
   control frame may not cut into it. */
static int coll_tcp__mid_send(const coll_tcp *t, int peer)
{
    int i;
    for (i = 0; i < COLL_TCP_MAX_REQUESTS; i++) {
        const coll_tcp__req *q = &t->req[i];
        if (q->peer == peer && q->is_send && q->result == COLL_AGAIN && q->hdone) return 1;
    }
    return 0;
}

/* Tells every live link this rank waits for `who` - 1 (0: nobody), once
   per change; a link with a frame of ours half out is skipped. */
static void coll_tcp__notice(coll_tcp *t, int who)
{
    int i;
    if (t->noticed == who) return;
    t->noticed = who;
    for (i = 0; i < t->nranks && i < COLL_TCP_MAX_RANKS; i++) {
        coll_tcp__link *L = &t->link[i];
        if (t->fd[i] < 0 || L->dead || (L->note.on && L->note.at) || coll_tcp__mid_send(t, i)) continue;
        L->note.on = 1; L->note.at = 0;
        L->note.epoch = t->epoch;
        L->note.word = (uint64_t)who;
        (void)coll_tcp__owed(t, i, 0);           /* a failure: the next call on it finds out */
    }
}

/* A wait on q has seen nothing move for `idle` ms: at the deadline q
   fails; past a quarter of it the links hear whom this rank waits for; and
   the links no receive reads are looked at for control frames. */
static int coll_tcp__pump(coll_tcp *t);
static int coll_tcp__sleep(coll_tcp *t, int ms);

/* At the deadline, a peer that has told nothing of a wait of its own may
   be a rank the scheduler held up on its way to the notice: it gets a
   quarter of the deadline more to say it (or to answer q, or to abort),
   so the chain of waits reaches the rank that never answered. Epoch 0
   only: a renewed epoch's deadlines are coll_comm_shrink's rounds, where
   a silent rank is the answer looked for. */
static void coll_tcp__grace(coll_tcp *t, coll_tcp__req *q)
{
    long long end = coll_tcp__now_ms() + (long long)t->timeout_ms / 4;
    coll_tcp__link *L = &t->link[q->peer];
    if (t->epoch != 0) return;
    while (!t->failed && q->result == COLL_AGAIN && !coll_tcp__told(t, q->peer) &&
           !L->dead && coll_tcp__now_ms() < end) {
        (void)coll_tcp__pump(t);
        coll_tcp__watch(t);
        if (q->result == COLL_AGAIN) (void)coll_tcp__sleep(t, 5);
    }
}

static void coll_tcp__idle(coll_tcp *t, coll_tcp__req *q, long long idle)
{
    if (idle >= (long long)t->timeout_ms) {
        coll_tcp__grace(t, q);
        if (q->result == COLL_AGAIN && !t->failed) coll_tcp__fail(t, q, COLL_ERR_TIMEOUT);
        return;
    }
    if (4 * idle >= (long long)t->timeout_ms) coll_tcp__notice(t, q->peer + 1);
    coll_tcp__watch(t);
}

/* coll_port.missing: the rank this epoch's failure named, else the
   chain's end from `peer`. */
static int coll_tcp__missing(void *ctx, int peer)
{
    coll_tcp *t = (coll_tcp *)ctx;
    return t->named ? t->named - 1 : coll_tcp__chain(t, peer);
}

/* The link to `peer` is gone (EOF, reset, a stream out of step): no byte
   more is read from it or sent to it. In epoch 0 the port's epoch fails
   (as it always did); after renew, only the calls on that link. */
static void coll_tcp__gone(coll_tcp *t, int peer, int code)
{
    int i;
    coll_tcp__link *L = &t->link[peer];
    coll_tcp__blame(t, peer, 0);
    if (!L->dead) {
        L->dead = code;
        if (t->fd[peer] >= 0) shutdown(t->fd[peer], SHUT_RDWR);
    }
    if (t->epoch == 0) { coll_tcp_abort(t, code); return; }
    for (i = 0; i < COLL_TCP_MAX_REQUESTS; i++)
        if (t->req[i].peer == peer && t->req[i].result == COLL_AGAIN) t->req[i].result = code;
}

/* q is given up before it ended: a frame left mid-way becomes a debt of
   its link - the sender's rest of it (voided), the receiver's bytes to
   read past. A send of which no byte went gives its MAC number back. */
static void coll_tcp__abandon(coll_tcp *t, coll_tcp__req *q)
{
    coll_tcp__link *L = &t->link[q->peer];
    if (q->is_send) {
        if (q->hdone == 0) {
#ifndef COLL_TCP_NO_MAC
            if (t->mac.on && q->mac.begun) { t->mac.sent[q->peer]--; q->mac.begun = 0; }
#endif
            return;
        }
        if (L->dead || q->done >= q->wire) return;
        L->tx_epoch = q->epoch;
        L->tx_len = (unsigned long long)q->bytes;
        L->tx_total = COLL_TCP__FRAME + (unsigned long long)q->wire;
        L->tx_at = (unsigned long long)q->hdone + q->done;
        q->hdone = 0;
    } else if (q->hdone == COLL_TCP__FRAME && q->done < q->wire) {
        L->rx_skip += (unsigned long long)(q->wire - q->done);
        q->hdone = 0;
    }
}

static void coll_tcp__fail(coll_tcp *t, coll_tcp__req *q, int code)
{
    coll_tcp__blame(t, q->peer, code == COLL_ERR_TIMEOUT);
    if (t->epoch == 0) { coll_tcp_abort(t, code); return; }
    if (q->result != COLL_AGAIN) return;
    coll_tcp__abandon(t, q);
    q->result = code;
}

/* coll_port.renew: this rank's end starts epoch `epoch`. Every transfer
   still in the table belongs to an earlier epoch: ended (its frame left
   to the link's debts) and its slot freed; an abort frame not yet begun
   is no longer worth sending. Dead links stay dead. Local: no peer is
   waited for. */
static int coll_tcp__renew(void *ctx, uint32_t epoch)
{
    coll_tcp *t = (coll_tcp *)ctx;
    int i;
    if (t->closed) return t->failed ? t->failed : COLL_ERR_ABORTED;
    if (epoch <= t->epoch) return COLL_ERR_INVAL;
    for (i = 0; i < COLL_TCP_MAX_REQUESTS; i++) {
        coll_tcp__req *q = &t->req[i];
        if (q->peer < 0) continue;
        if (q->result == COLL_AGAIN) coll_tcp__abandon(t, q);
        q->peer = -1;
    }
    t->epoch = epoch;
    t->failed = 0;
    t->named = t->noticed = 0;
    for (i = 0; i < t->nranks && i < COLL_TCP_MAX_RANKS; i++) {
        coll_tcp__link *L = &t->link[i];
        L->waits = 0;
        if (t->fd[i] < 0 || L->dead) continue;
        if (L->ab.on && L->ab.at == 0) L->ab.on = 0;
        if (L->note.on && L->note.at == 0) L->note.on = 0;
        if (coll_tcp__owed(t, i, 0) < 0) { L->dead = COLL_ERR_IO; shutdown(t->fd[i], SHUT_RDWR); }
    }
    return COLL_OK;
}

COLL_TCP_API coll_port coll_tcp_port(coll_tcp *t)
{
    coll_port p;
    memset(&p, 0, sizeof p);
    p.ctx = t;
    p.send = coll_tcp_send;
    p.recv = coll_tcp_recv;
    p.sendrecv = coll_tcp_sendrecv;
    p.isend = coll_tcp_isend;
    p.irecv = coll_tcp_irecv;
    p.wait = coll_tcp_wait;
    p.abort = coll_tcp__abort_hook;
    p.attach = coll_tcp__attach;
    p.renew = coll_tcp__renew;
    p.missing = coll_tcp__missing;
    return p;
}

/* The epoch fails here: every pending transfer ends with the code (its
   frame left to its link's debts), and every live link is sent an abort
   frame of this epoch (after the rest of a frame voided on it), without
   waiting: a peer that reads us fails at once. */
COLL_TCP_API void coll_tcp_abort(coll_tcp *t, int code)
{
    int i;
    if (!t->failed) t->failed = code;
    for (i = 0; i < COLL_TCP_MAX_REQUESTS; i++) {
        coll_tcp__req *q = &t->req[i];
        if (q->peer >= 0 && q->result == COLL_AGAIN) {
            coll_tcp__abandon(t, q);
            q->result = t->failed;
        }
    }
    for (i = 0; i < t->nranks && i < COLL_TCP_MAX_RANKS; i++) {
        coll_tcp__link *L = &t->link[i];
        if (t->fd[i] < 0 || L->dead) continue;
        if (!(L->ab_sent && L->ab.epoch == t->epoch) && !(L->ab.on && L->ab.at)) {
            L->ab.epoch = t->epoch;
            L->ab.word = (uint64_t)t->named;
            L->ab.on = 1; L->ab.at = 0; L->ab_sent = 1;
        }
        if (coll_tcp__owed(t, i, 0) < 0) { L->dead = COLL_ERR_IO; shutdown(t->fd[i], SHUT_RDWR); }
    }
}

COLL_TCP_API void coll_tcp_close(coll_tcp *t)
{
    int i;
    for (i = 0; i < COLL_TCP_MAX_RANKS; i++) {
        if (t->fd[i] >= 0) { close(t->fd[i]); t->fd[i] = -1; }
        free(t->link[i].pb);
        t->link[i].pb = 0;
        t->link[i].pb_len = t->link[i].pb_at = 0;
    }
#ifndef COLL_TCP_NO_MAC
    memset(t->mac.key, 0, sizeof t->mac.key);
#endif
    if (!t->failed) t->failed = COLL_ERR_ABORTED;
    t->closed = 1;
}

/* ---- the data path: a table of posted transfers ---------------------------- */

static int coll_tcp__post(coll_tcp *t, int is_send, int peer, const void *buf,
                          size_t bytes, int limit, int *handle)
{
    int i;
    if (t->failed) return t->failed;
    if (peer < 0 || peer >= t->nranks || peer == t->rank || (bytes && !buf) || !handle)
        return COLL_ERR_INVAL;
    if (t->link[peer].dead) return t->link[peer].dead == COLL_ERR_CORRUPT ? COLL_ERR_CORRUPT : COLL_ERR_IO;
    for (i = 0; i < limit; i++) {
        coll_tcp__req *q = &t->req[i];
        if (q->peer >= 0) continue;
        q->peer = peer; q->is_send = is_send;
        q->buf = (unsigned char *)buf;   /* a send only ever reads through it */
        q->bytes = bytes; q->done = 0;
        q->epoch = t->epoch;
        q->hdone = 0;
        q->wire = coll_tcp__wire(t, q);
        if (is_send) {
            coll_tcp__frame_head(q->head, COLL_TCP__DATA, t->epoch, (uint64_t)bytes);
            coll_tcp__put32(q->tail, COLL_TCP__OK);
        }
#ifndef COLL_TCP_NO_MAC
        q->mac.begun = 0;
#endif
        q->seq = t->seq++;
        q->result = bytes ? COLL_AGAIN : COLL_OK;
        *handle = i;
        return COLL_OK;
    }
    return COLL_AGAIN;                   /* every slot in use: nothing posted */
}

/* Is q the oldest pending transfer of its lane (peer, direction)? Only
   that one may move bytes, so messages leave and land in posting order.
   Sequence numbers are compared by difference: wrap-around is harmless. */
static int coll_tcp__is_head(const coll_tcp *t, const coll_tcp__req *q)
{
    int i;
    for (i = 0; i < COLL_TCP_MAX_REQUESTS; i++) {
        const coll_tcp__req *o = &t->req[i];
        if (o != q && o->peer == q->peer && o->is_send == q->is_send &&
            o->result == COLL_AGAIN && (int)(o->seq - q->seq) < 0)
            return 0;
    }
    return 1;
}

/* The pending transfer right behind q in its lane, or 0. */
static coll_tcp__req *coll_tcp__next(coll_tcp *t, const coll_tcp__req *q)
{
    coll_tcp__req *n = 0;
    int i;
    for (i = 0; i < COLL_TCP_MAX_REQUESTS; i++) {
        coll_tcp__req *o = &t->req[i];
        if (o != q && o->peer == q->peer && o->is_send == q->is_send && o->result == COLL_AGAIN &&
            (int)(o->seq - q->seq) > 0 && (!n || (int)(o->seq - n->seq) < 0))
            n = o;
    }
    return n;
}

/* One system call moving the pieces v[0..n) of q; `flags` as recv/send's. */
static ssize_t coll_tcp__xfer(int fd, const coll_tcp__req *q, struct iovec *v, int n, int flags)
{
    struct msghdr h;
    if (n == 1)
        return q->is_send ? send(fd, v[0].iov_base, v[0].iov_len, COLL_TCP__SEND_FLAGS | flags)
                          : recv(fd, v[0].iov_base, v[0].iov_len, flags);
    memset(&h, 0, sizeof h);
    h.msg_iov = v;
    h.msg_iovlen = (size_t)n;
    return q->is_send ? sendmsg(fd, &h, COLL_TCP__SEND_FLAGS | flags) : recvmsg(fd, &h, flags);
}

/* Reads from link `peer` into v[0..n): first what a missed guess left in
   its read-ahead (no system call), then the socket (`flags` as recv's). */
static ssize_t coll_tcp__rd(coll_tcp *t, int peer, struct iovec *v, int n, int flags)
{
    coll_tcp__link *L = &t->link[peer];
    struct msghdr h;
    if (L->pb) {
        size_t got = 0;
        int i;
        for (i = 0; i < n && L->pb_at < L->pb_len; i++) {
            size_t m = L->pb_len - L->pb_at;
            if (m > v[i].iov_len) m = v[i].iov_len;
            memcpy(v[i].iov_base, L->pb + L->pb_at, m);
            L->pb_at += (unsigned)m;
            got += m;
            if (m < v[i].iov_len) break;
        }
        if (L->pb_at == L->pb_len) { free(L->pb); L->pb = 0; L->pb_len = L->pb_at = 0; }
        return (ssize_t)got;
    }
    if (n == 1) return recv(t->fd[peer], v[0].iov_base, v[0].iov_len, flags);
    memset(&h, 0, sizeof h);
    h.msg_iov = v;
    h.msg_iovlen = (size_t)n;
    return recvmsg(t->fd[peer], &h, flags);
}

/* A system call on q's link that moved nothing: k, errno. The link
   failed (EOF, reset: gone), or the wait timed out (block), or - 0 - it
   merely had nothing now. */
static int coll_tcp__stalled(coll_tcp *t, coll_tcp__req *q, ssize_t k)
{
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;   /* the wait decides */
    coll_tcp__gone(t, q->peer, COLL_ERR_IO);
    return -1;
}

/* While a wait sleeps: the links that no posted receive reads are looked
   at (a peek at the head of their stream), so that an abort frame of this
   epoch is noticed there too, within a slice (COLL_TCP__SLICE_MS) rather
   than at the deadline, and fails the epoch here, and a wait notice is
   kept; an older epoch's control frames are read and dropped. A link whose stream starts with anything
   else (a frame, EOF) is left alone (`busy`) until a receive takes
   frames from it. */
static void coll_tcp__watch(coll_tcp *t)
{
    int i, j;
    for (i = 0; i < t->nranks && i < COLL_TCP_MAX_RANKS && !t->failed; i++) {
        coll_tcp__link *L = &t->link[i];
        unsigned char h[COLL_TCP__FRAME];
        ssize_t k;
        if (t->fd[i] < 0 || L->dead || L->busy || L->rx_got || L->rx_skip || L->pb) continue;
        for (j = 0; j < COLL_TCP_MAX_REQUESTS; j++)
            if (t->req[j].peer == i && !t->req[j].is_send && t->req[j].result == COLL_AGAIN) break;
        if (j < COLL_TCP_MAX_REQUESTS) continue;       /* a receive reads it */
        do k = recv(t->fd[i], h, sizeof h, MSG_PEEK | COLL_TCP__TRY);
        while (k < 0 && errno == EINTR);
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
        /* EOF or reset: a peer that closed after its last call is no
           failure until a call needs it (as always), so that is left to
           the receive that meets it */
        if (k == COLL_TCP__FRAME && coll_tcp__is_ctl(t, h)) {
            unsigned long kind = coll_tcp__get32(h);
            int word = (int)coll_tcp__get32(h + 12);
            if (recv(t->fd[i], h, sizeof h, COLL_TCP__TRY) != (ssize_t)sizeof h) {
                coll_tcp__gone(t, i, COLL_ERR_IO);
                continue;
            }
            if ((uint32_t)coll_tcp__get32(h + 4) != t->epoch) continue;   /* an older one */
            if (kind == COLL_TCP__NOTE) L->waits = word;
            else coll_tcp__heard_abort(t, i, word);
            continue;
        }
        L->busy = 1;
    }
}

/* A receive at the head of its lane gets its frame's header in steps
   (coll_tcp__rx_head runs them), each returning what rx_head returns or
   COLL_TCP__GO: the step moved the link on, and the next one is chosen. */

/* Reads past what a dropped frame (an older epoch's) left, a buffer at a
   time, so that the next header is read where it starts. */
static int coll_tcp__rx_skip(coll_tcp *t, coll_tcp__req *q, int block, int *moved)
{
    coll_tcp__link *L = &t->link[q->peer];
    unsigned char junk[4096];
    struct iovec v[1];
    ssize_t k;
    v[0].iov_base = junk;
    v[0].iov_len = L->rx_skip < sizeof junk ? (size_t)L->rx_skip : sizeof junk;
    k = coll_tcp__rd(t, q->peer, v, 1, block ? MSG_WAITALL : COLL_TCP__TRY);
    if (k > 0) { L->rx_skip -= (unsigned long long)k; *moved = 1; return COLL_TCP__GO; }
    if (k < 0 && errno == EINTR) return COLL_TCP__GO;
    return coll_tcp__stalled(t, q, k);
}

/* Is the whole header in L->rx_head the one q expects: data of this
   epoch with q's length? */
static int coll_tcp__rx_mine(const coll_tcp *t, const coll_tcp__link *L, const coll_tcp__req *q)
{
    return coll_tcp__get32(L->rx_head) == COLL_TCP__DATA &&
           (uint32_t)coll_tcp__get32(L->rx_head + 4) == t->epoch &&
           coll_tcp__get32(L->rx_head + 8) == (unsigned long)((uint64_t)q->bytes >> 32) &&
           coll_tcp__get32(L->rx_head + 12) == (unsigned long)(q->bytes & 0xffffffffu);
}

/* A guess that missed: the k bytes that came after the header (into q's
   buffer, up to plen, then its trailer) belong to what follows, so they
   move to the link's read-ahead, which coll_tcp__rd serves first. */
static int coll_tcp__rx_keep(coll_tcp *t, coll_tcp__req *q, size_t k, size_t plen)
{
    coll_tcp__link *L = &t->link[q->peer];
    size_t in_buf = k < plen ? k : plen;
    L->pb = (unsigned char *)malloc(k);
    if (!L->pb) { coll_tcp__gone(t, q->peer, COLL_ERR_IO); return -1; }
    memcpy(L->pb, q->buf, in_buf);
    if (k > in_buf) memcpy(L->pb + in_buf, q->tail, k - in_buf);
    L->pb_len = (unsigned)k; L->pb_at = 0;
    return COLL_TCP__GO;
}

/* The guess: the next frame is q's, so its header, payload and trailer
   come in one call (without MSG_WAITALL: a frame of another size must not
   keep us waiting). A part of a header is finished next; a header that
   is not q's is acted on next, and what came after it kept. */
static int coll_tcp__rx_guess(coll_tcp *t, coll_tcp__req *q, int block, int *moved)
{
    coll_tcp__link *L = &t->link[q->peer];
    struct iovec v[3];
    size_t plen = q->bytes;
    int nv = 2;
    ssize_t k;
#ifndef COLL_TCP_NO_MAC
    if (t->mac.on && plen > COLL_TCP_MAC_CHUNK) plen = COLL_TCP_MAC_CHUNK;
#endif
    v[0].iov_base = L->rx_head; v[0].iov_len = COLL_TCP__FRAME;
    v[1].iov_base = q->buf; v[1].iov_len = plen;
    if (plen == q->bytes) { v[2].iov_base = q->tail; v[2].iov_len = coll_tcp__trailer(t); nv = 3; }
    k = coll_tcp__rd(t, q->peer, v, nv, block ? 0 : COLL_TCP__TRY);
    if (k <= 0) {
        if (k < 0 && errno == EINTR) return COLL_TCP__GO;
        return coll_tcp__stalled(t, q, k);
    }
    *moved = 1;
    if (k < COLL_TCP__FRAME) { L->rx_got = (unsigned char)k; return COLL_TCP__GO; }
    L->rx_got = COLL_TCP__FRAME;
    k -= COLL_TCP__FRAME;
    if (!coll_tcp__rx_mine(t, L, q))             /* it was not: keep those bytes */
        return k ? coll_tcp__rx_keep(t, q, (size_t)k, plen) : COLL_TCP__GO;
    L->rx_got = 0;                               /* it was: the frame is q's */
    q->hdone = COLL_TCP__FRAME;
#ifndef COLL_TCP_NO_MAC
    if (t->mac.on) coll_tcp__mac_begin(t, q);
#endif
    if (k) coll_tcp__moved(t, q, (size_t)k);
    return 1;
}

/* Finishes a header that came in part: the rest of its 16 bytes. */
static int coll_tcp__rx_part(coll_tcp *t, coll_tcp__req *q, int block, int *moved)
{
    coll_tcp__link *L = &t->link[q->peer];
    struct iovec v[1];
    ssize_t k;
    v[0].iov_base = L->rx_head + L->rx_got;
    v[0].iov_len = COLL_TCP__FRAME - L->rx_got;
    k = coll_tcp__rd(t, q->peer, v, 1, block ? MSG_WAITALL : COLL_TCP__TRY);
    if (k > 0) { L->rx_got = (unsigned char)(L->rx_got + k); *moved = 1; return COLL_TCP__GO; }
    if (k < 0 && errno == EINTR) return COLL_TCP__GO;
    return coll_tcp__stalled(t, q, k);
}

/* A data frame's header: an older epoch's frame is dropped (the rest of
   it read past next), a later one's kept for a receive of its epoch (q
   fails); one of this epoch must have q's length, and is q's. */
static int coll_tcp__rx_data(coll_tcp *t, coll_tcp__req *q, uint32_t epoch, uint64_t len)
{
    coll_tcp__link *L = &t->link[q->peer];
    if (epoch < t->epoch) {                      /* an older epoch's: dropped */
        L->rx_got = 0;
        L->rx_skip = len + coll_tcp__trailer(t);
#ifndef COLL_TCP_NO_MAC
        if (t->mac.on) t->mac.got[q->peer]++;
#endif
        return COLL_TCP__GO;
    }
    if (epoch > t->epoch) {                      /* a later one's: kept */
        coll_tcp__fail(t, q, COLL_ERR_IO);
        return -1;
    }
    if (len != (uint64_t)q->bytes) {
        coll_tcp__bad_frame(t, q, COLL_ERR_MISMATCH);
        return -1;
    }
    L->rx_got = 0;
    q->hdone = COLL_TCP__FRAME;                  /* the frame is q's now */
    return 1;
}

/* A control frame's header: an older epoch's is ignored, a later one's
   kept (q fails). Of this epoch, a wait notice is kept as the peer's
   wait and is no progress (*moved goes back to `quiet`, as it was before
   the read that brought it, unless that read brought more: the
   read-ahead); an abort fails this epoch here too, naming its rank. */
static int coll_tcp__rx_ctl(coll_tcp *t, coll_tcp__req *q, unsigned long kind, uint32_t epoch,
                            uint64_t len, int *moved, int quiet)
{
    coll_tcp__link *L = &t->link[q->peer];
    if (epoch < t->epoch) { L->rx_got = 0; return COLL_TCP__GO; }
    if (epoch > t->epoch) { coll_tcp__fail(t, q, COLL_ERR_IO); return -1; }
    L->rx_got = 0;
    if (kind == COLL_TCP__NOTE) {                /* no progress: the wait goes on */
        L->waits = (int)len;
        if (!L->pb) *moved = quiet;
        return COLL_TCP__GO;
    }
    coll_tcp__heard_abort(t, q->peer, (int)len);   /* the peer's epoch failed: ours too */
    return -1;
}

/* Acts on the whole header in the link's rx_head: a data frame's, a
   control frame's, or no header at all (the link is out of step). */
static int coll_tcp__rx_frame(coll_tcp *t, coll_tcp__req *q, int *moved, int quiet)
{
    const unsigned char *h = t->link[q->peer].rx_head;
    unsigned long kind = coll_tcp__get32(h);
    uint32_t epoch = (uint32_t)coll_tcp__get32(h + 4);
    uint64_t len = ((uint64_t)coll_tcp__get32(h + 8) << 32) | coll_tcp__get32(h + 12);
    /* a peer runs at most a few epochs ahead (a renew or two a shrink),
       and no message is a terabyte: anything else is no header at all */
    if (epoch > t->epoch + COLL_TCP__AHEAD || len >> 40) kind = 0;
    if ((kind == COLL_TCP__ABORT || kind == COLL_TCP__NOTE) && len > (uint64_t)t->nranks) kind = 0;
    if (kind == COLL_TCP__DATA) return coll_tcp__rx_data(t, q, epoch, len);
    if (kind == COLL_TCP__ABORT || kind == COLL_TCP__NOTE)
        return coll_tcp__rx_ctl(t, q, kind, epoch, len, moved, quiet);
    coll_tcp__bad_frame(t, q, COLL_ERR_IO);
    return -1;
}

/* A receive at the head of its lane gets its frame's header: read past
   what dropped frames left, take the next header (the guess first, when
   nothing of one is in), drop it if it is an older epoch's, keep it if a
   later one's. 1: q has its header and may take the payload; 0: nothing
   more now; -1: q has ended (its result). */
static int coll_tcp__rx_head(coll_tcp *t, coll_tcp__req *q, int block, int *moved)
{
    coll_tcp__link *L = &t->link[q->peer];
    int quiet = *moved;                          /* before a wait notice was read */
    L->busy = 0;                                 /* its head moves: watch it again */
    while (q->result == COLL_AGAIN) {
        int r;
        if (L->rx_skip) r = coll_tcp__rx_skip(t, q, block, moved);
        else if (L->rx_got == 0 && !L->pb) {
            quiet = *moved;
            r = coll_tcp__rx_guess(t, q, block, moved);
        } else if (L->rx_got < COLL_TCP__FRAME) r = coll_tcp__rx_part(t, q, block, moved);
        else r = coll_tcp__rx_frame(t, q, moved, quiet);
        if (r != COLL_TCP__GO) return r;
    }
    return -1;
}

/* Moves what one transfer's socket takes right now, without blocking;
   `more`: a send queued right behind it goes next (MSG_MORE). A send
   that the socket took only in part stops there: its buffer is full, and
   asking again at once would only cost a system call that answers
   EAGAIN. A send first pays what its link owes; a receive first gets its
   header. Returns 1 if anything moved, else 0; a failure is left in the
   transfers' results. */
static int coll_tcp__move(coll_tcp *t, coll_tcp__req *q, int more)
{
    int fd = t->fd[q->peer], moved = 0;
    coll_tcp__link *L = &t->link[q->peer];
    if (q->is_send && coll_tcp__owes(L)) {
        int rc = coll_tcp__owed(t, q->peer, 0);
        if (rc < 0) { coll_tcp__gone(t, q->peer, rc == COLL_ERR_TIMEOUT ? COLL_ERR_IO : rc); return 0; }
        if (rc == 0) return 0;
        moved = 1;
    }
    if (!q->is_send && q->hdone < COLL_TCP__FRAME && coll_tcp__rx_head(t, q, 0, &moved) <= 0)
        return moved;
    while (q->done < q->wire) {
        struct iovec v[3];
        int nv = coll_tcp__span(t, q, v), i;
        size_t n = 0;
        ssize_t k;
        for (i = 0; i < nv; i++) n += v[i].iov_len;
        k = q->is_send ? coll_tcp__xfer(fd, q, v, nv, COLL_TCP__TRY | (more ? COLL_TCP__MORE : 0))
                       : coll_tcp__rd(t, q->peer, v, nv, COLL_TCP__TRY);
        if (k > 0) {
            coll_tcp__moved(t, q, (size_t)k);
            moved = 1;
            if (q->is_send && (size_t)k < n) break;     /* the buffer is full */
            continue;
        }
        if (k < 0 && errno == EINTR) continue;
        (void)coll_tcp__stalled(t, q, k);              /* EOF, reset, ... or EAGAIN */
        break;
    }
    if (q->done == q->wire && q->result == COLL_AGAIN) q->result = coll_tcp__landed(t, q);
    return moved;
}

/* Every lane head moved as far as its socket allows; a send that went
   whole is followed at once by the one behind it, so a run that began
   with MSG_MORE ends in the same pass. */
static int coll_tcp__pump(coll_tcp *t)
{
    int i, moved = 0;
    for (i = 0; i < COLL_TCP_MAX_REQUESTS; i++) {
        coll_tcp__req *q = &t->req[i];
        if (q->peer < 0 || q->result != COLL_AGAIN || !coll_tcp__is_head(t, q)) continue;
        for (;;) {                      /* a send: then the one behind it */
            coll_tcp__req *n = q->is_send ? coll_tcp__next(t, q) : 0;
            moved |= coll_tcp__move(t, q, n && q->bytes <= COLL_TCP__MORE_MAX);
            if (!n || q->result == COLL_AGAIN) break;
            q = n;
        }
    }
    return moved;
}

#if COLL_TCP__BLOCKING
/* Is q the only transfer still pending? Then nothing else needs this rank
   while q waits, and it may wait inside one blocking system call. */
static int coll_tcp__alone(const coll_tcp *t, const coll_tcp__req *q)
{
    int i;
    for (i = 0; i < COLL_TCP_MAX_REQUESTS; i++)
        if (&t->req[i] != q && t->req[i].peer >= 0 && t->req[i].result == COLL_AGAIN) return 0;
    return 1;
}

/* Finishes q in blocking calls: a receive with MSG_WAITALL returns once
   the whole message is in (its header first), a send once the kernel
   holds all of it; either returns early when the link's SO_RCVTIMEO or
   SO_SNDTIMEO (a slice of the deadline) passes; 1 if anything moved. The
   wait counts the slices against the deadline. For a wait
   that has spun in vain this is one system call where sleeping in poll()
   takes two (the poll, then the try that moves the bytes). */
static int coll_tcp__finish(coll_tcp *t, coll_tcp__req *q)
{
    int fd = t->fd[q->peer], moved = 0;
    if (!q->is_send && q->hdone < COLL_TCP__FRAME && coll_tcp__rx_head(t, q, 1, &moved) <= 0)
        return moved;
    while (q->done < q->wire && q->result == COLL_AGAIN) {
        struct iovec v[3];
        int nv = coll_tcp__span(t, q, v);
        ssize_t k = q->is_send ? coll_tcp__xfer(fd, q, v, nv, 0)
                               : coll_tcp__rd(t, q->peer, v, nv, MSG_WAITALL);
        if (k > 0) {
            coll_tcp__moved(t, q, (size_t)k);
            moved = 1;
            continue;
        }
        if (k < 0 && errno == EINTR) continue;
        /* EAGAIN: a slice passed with no byte moved (the wait decides);
           else EOF, reset. */
        if (coll_tcp__stalled(t, q, k) == 0) break;
    }
    if (q->done == q->wire && q->result == COLL_AGAIN) q->result = coll_tcp__landed(t, q);
    return moved;
}
#endif

/* Polls the sockets of every lane head until one is ready or `ms` pass.
   Returns the number ready (0 = the time passed) or a negative code. */
static int coll_tcp__sleep(coll_tcp *t, int ms)
{
    struct pollfd p[COLL_TCP_MAX_REQUESTS];
    int i, n = 0, k;
    for (i = 0; i < COLL_TCP_MAX_REQUESTS; i++) {
        const coll_tcp__req *q = &t->req[i];
        if (q->peer < 0 || q->result != COLL_AGAIN || !coll_tcp__is_head(t, q)) continue;
        p[n].fd = t->fd[q->peer];
        p[n].events = q->is_send ? POLLOUT : POLLIN;
        p[n].revents = 0;
        n++;
    }
    do k = poll(p, (nfds_t)n, ms);
    while (k < 0 && errno == EINTR);
    return k < 0 ? COLL_ERR_IO : k;
}

/* Waiting: after a pump that moves nothing, up to COLL_TCP_SPIN rounds of
   sched_yield + pump before the rank goes to sleep. On loopback the peer
   that will fill or drain our socket is often a runnable process on this
   very core: yielding lets it run and skips the sleep and wake-up (2 ranks,
   8 and 64 MiB all-reduce: about twice the bandwidth measured here); with
   a core to itself, the yield returns at once and the rank polls its
   sockets without sleeping. Sleeping at once costs more than it saves
   where cores fall idle: a wake-up that must reach an idle core of a
   virtual machine took 70 us one way here, against 10 to 18 on a busy one
   (4 ranks on 2 cores, 8 B all-reduce on a quiet machine: 70 us sleeping
   at once, 43 spinning first). Then a transfer that is the only one
   pending sleeps in blocking system calls (coll_tcp__finish), woken by the
   kernel when its bytes are there; others sleep in poll(). The clock is
   read only when a wait goes to sleep, to set the idle deadline. */
COLL_TCP_API int coll_tcp_wait(void *ctx, int handle, int block)
{
    coll_tcp *t = (coll_tcp *)ctx;
    coll_tcp__req *q;
    long long idle_since = -1;
    int spins = 0, moved = 0;
    if (handle < 0 || handle >= COLL_TCP_MAX_REQUESTS || t->req[handle].peer < 0)
        return COLL_ERR_INVAL;
    q = &t->req[handle];
    for (;;) {
        int rc;
        if (q->result == COLL_AGAIN) {
            rc = coll_tcp__pump(t);
            if (rc > 0) { moved = 1; spins = 0; }
        }
        if (q->result != COLL_AGAIN) {
            rc = q->result;
            if (t->noticed == q->peer + 1 && rc == COLL_OK) coll_tcp__notice(t, 0);
            q->peer = -1;                            /* the slot is free again */
            return rc;
        }
        if (!block) return COLL_AGAIN;
        if (spins < COLL_TCP_SPIN) {
            spins++;
            sched_yield();
            continue;
        }
        spins = 0;
#if COLL_TCP__BLOCKING
        if (coll_tcp__alone(t, q) &&
            !(q->is_send && coll_tcp__owes(&t->link[q->peer]))) {
            long long start = coll_tcp__now_ms(), now;
            if (coll_tcp__finish(t, q)) { idle_since = -1; moved = 0; continue; }
            if (q->result != COLL_AGAIN) continue;
            now = coll_tcp__now_ms();            /* a slice passed, nothing moved */
            if (idle_since < 0 || moved) idle_since = start;
            moved = 0;
            coll_tcp__idle(t, q, now - idle_since);
            continue;
        }
#endif
        {
            long long now = coll_tcp__now_ms(), left;
            if (idle_since < 0 || moved) idle_since = now;
            moved = 0;
            left = idle_since + (long long)t->timeout_ms - now;
            if (left > COLL_TCP__SLICE_MS) left = COLL_TCP__SLICE_MS;
            /* No byte moved for timeout_ms: the peer is hung or gone
               without a word. In epoch 0 the port's epoch fails with it;
               after renew, this transfer. */
            if (left <= 0) coll_tcp__idle(t, q, now - idle_since);
            else if ((rc = coll_tcp__sleep(t, (int)left)) < 0) coll_tcp__fail(t, q, COLL_ERR_IO);
            else if (rc == 0) coll_tcp__idle(t, q, now + left - idle_since);
        }
    }
}

COLL_TCP_API int coll_tcp_isend(void *ctx, int peer, const void *buf, size_t bytes, int *handle)
{
    coll_tcp *t = (coll_tcp *)ctx;
    int rc = coll_tcp__post(t, 1, peer, buf, bytes, COLL_TCP_MAX_REQUESTS - COLL_TCP__RESERVED, handle);
    /* Start it at once if it heads its lane (wait reports errors). Only
       this one: trying every other transfer too would mostly cost system
       calls that answer EAGAIN. A small one waits for the first wait, to
       go with whatever the caller posts behind it (COLL_TCP__MORE). */
    if (rc == COLL_OK && bytes > COLL_TCP__MORE_MAX && coll_tcp__is_head(t, &t->req[*handle]))
        (void)coll_tcp__move(t, &t->req[*handle], 0);
    return rc;
}

COLL_TCP_API int coll_tcp_irecv(void *ctx, int peer, void *buf, size_t bytes, int *handle)
{
    coll_tcp *t = (coll_tcp *)ctx;
    return coll_tcp__post(t, 0, peer, buf, bytes, COLL_TCP_MAX_REQUESTS - COLL_TCP__RESERVED, handle);
}

COLL_TCP_API int coll_tcp_send(void *ctx, int peer, const void *buf, size_t bytes)
{
    int h, rc = coll_tcp__post((coll_tcp *)ctx, 1, peer, buf, bytes, COLL_TCP_MAX_REQUESTS, &h);
    return rc ? rc : coll_tcp_wait(ctx, h, 1);
}

COLL_TCP_API int coll_tcp_recv(void *ctx, int peer, void *buf, size_t bytes)
{
    int h, rc = coll_tcp__post((coll_tcp *)ctx, 0, peer, buf, bytes, COLL_TCP_MAX_REQUESTS, &h);
    return rc ? rc : coll_tcp_wait(ctx, h, 1);
}

/* Both halves posted before either is waited on: while the send waits for
   room in the peer's socket buffer, the receive keeps draining ours, so two
   ranks exchanging more than a socket buffer's worth cannot stall. A side
   with 0 bytes or a negative peer is skipped. */
COLL_TCP_API int coll_tcp_sendrecv(void *ctx, int to, const void *sbuf, size_t sbytes,
                                   int from, void *rbuf, size_t rbytes)
{
    coll_tcp *t = (coll_tcp *)ctx;
    int hs = -1, hr = -1, rs = COLL_OK, rr = COLL_OK;
    if (to >= 0 && sbytes)
        rs = coll_tcp__post(t, 1, to, sbuf, sbytes, COLL_TCP_MAX_REQUESTS, &hs);
    if (!rs && from >= 0 && rbytes)
        rr = coll_tcp__post(t, 0, from, rbuf, rbytes, COLL_TCP_MAX_REQUESTS, &hr);
    if (rs || rr) {
        if (hs >= 0) t->req[hs].peer = -1;
        return rs ? rs : rr;
    }
    if (hr >= 0) rr = coll_tcp_wait(t, hr, 1);
    if (hs >= 0) rs = coll_tcp_wait(t, hs, 1);
    return rr ? rr : rs;
}

#endif /* COLL_TCP_IMPLEMENTED */
#endif /* COLL_TCP_IMPLEMENTATION */

/* MIT licence: see the end of coll.h. */
