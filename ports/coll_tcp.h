/* coll_tcp.h - ranks as processes on one or many hosts over TCP, a port for coll.h

   USAGE
     In exactly one file:
         #define COLL_TCP_IMPLEMENTATION
         #include "ports/coll_tcp.h"
     (COLL_TCP_STATIC makes every function static.) Then, in every process:

         static coll_tcp t;                          caller-owned, ~2 KB
         coll_tcp_init_env(&t, 10000);               MASTER_ADDR, MASTER_PORT,
                                                     WORLD_SIZE, RANK (as torchrun)
         coll_port p = coll_tcp_port(&t);
         coll_init(&c, t.rank, t.nranks, &p, scratch, sizeof scratch);
         ...
         coll_tcp_close(&t);

     or coll_tcp_init(&t, "10.0.0.1", 29500, rank, world, 10000) with the
     same facts passed explicitly. LOCAL_RANK, if set, is kept in
     t.local_rank (the process's index on its own host); it plays no part in
     the rendezvous. Under a strict -std=c99 define _POSIX_C_SOURCE=200809L
     (getaddrinfo, clock_gettime) before any include.

   THE RENDEZVOUS (the torch.distributed / OneFlow launch convention)
     Rank 0 listens on MASTER_PORT (bound to MASTER_ADDR when that is one of
     its own addresses, else to every address). Every other rank connects to
     it, opens its own listening socket on the local address that reached
     the master (port chosen by the kernel) and sends (rank, world, address,
     port). When all WORLD_SIZE - 1 have registered, rank 0 sends the table
     of addresses to each of them. Then each rank r connects to every rank
     0 < j < r and accepts a connection from every rank above it; the
     registration connection itself becomes the link to rank 0. Result: a
     full mesh, one TCP connection per pair, TCP_NODELAY, non-blocking.
     Because each rank advertises the address its own kernel used to reach
     the master, this works across hosts with no configuration.

   DEADLINES AND FAILURES
     timeout_ms bounds the whole rendezvous, and every transfer: a wait that
     sees no byte move for timeout_ms returns COLL_ERR_TIMEOUT (0 means
     COLL_TCP_DEFAULT_TIMEOUT_MS). A peer that closed or died (EOF, reset)
     gives COLL_ERR_IO. The first failure breaks the whole port: every link
     is shut down, so the other ranks see EOF at once instead of each
     waiting out its own deadline, and every later call returns that first
     code. No call blocks without a deadline.

   THE PORT
     send/recv/sendrecv and isend/irecv/wait are all one mechanism: a table
     of COLL_TCP_MAX_REQUESTS posted transfers. Waiting on any of them polls
     the sockets of all of them, so a sendrecv sends and receives at once
     and two ranks exchanging megabytes never stall on each other's full
     socket buffers. Per peer and direction, only the oldest posted
     transfer moves bytes: messages keep the order they were posted in.
     isend/irecv take up to COLL_TCP_MAX_REQUESTS - 2 handles (then answer
     COLL_AGAIN); the last two slots are kept for the blocking calls.
     t.bytes_sent / t.bytes_received count payload bytes, for traffic checks.

   COST: one send()/recv() system call per message when the socket buffer
     has room, plus one poll() per wait that cannot finish at once.
*/
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

typedef struct coll_tcp__req {
    int peer;                  /* -1: slot free                              */
    int is_send;
    int result;                /* COLL_AGAIN while pending, then 0 or error  */
    unsigned seq;              /* posting order, for per-lane FIFO order     */
    unsigned char *buf;        /* const for sends                            */
    size_t bytes, done;
} coll_tcp__req;

typedef struct coll_tcp {
    int rank, nranks, local_rank;
    unsigned timeout_ms;
    int failed;                /* 0, or the code every call now returns      */
    unsigned seq;
    int fd[COLL_TCP_MAX_RANKS];/* link to each peer; -1 for self             */
    coll_tcp__req req[COLL_TCP_MAX_REQUESTS];
    unsigned long long bytes_sent, bytes_received;   /* payload, this rank  */
} coll_tcp;

/* Join the job: returns COLL_OK when the full mesh is up, or COLL_ERR_INVAL
   (bad arguments or environment), COLL_ERR_TIMEOUT (someone did not come
   within timeout_ms), COLL_ERR_MISMATCH (ranks disagree on WORLD_SIZE or two
   claim one rank), COLL_ERR_IO (socket failure). */
COLL_TCP_API int coll_tcp_init(coll_tcp *t, const char *master_addr, int master_port,
                               int rank, int world, unsigned timeout_ms);
COLL_TCP_API int coll_tcp_init_env(coll_tcp *t, unsigned timeout_ms);
COLL_TCP_API void coll_tcp_set_timeout(coll_tcp *t, unsigned timeout_ms);
COLL_TCP_API coll_port coll_tcp_port(coll_tcp *t);
/* Break the port on purpose: every link shut down, calls return `code`. */
COLL_TCP_API void coll_tcp_abort(coll_tcp *t, int code);
COLL_TCP_API void coll_tcp_close(coll_tcp *t);

/* The port functions (ctx is the coll_tcp). */
COLL_TCP_API int coll_tcp_send(void *ctx, int peer, const void *buf, size_t bytes);
COLL_TCP_API int coll_tcp_recv(void *ctx, int peer, void *buf, size_t bytes);
COLL_TCP_API int coll_tcp_sendrecv(void *ctx, int to, const void *sbuf, size_t sbytes,
                                   int from, void *rbuf, size_t rbytes);
COLL_TCP_API int coll_tcp_isend(void *ctx, int peer, const void *buf, size_t bytes, int *handle);
COLL_TCP_API int coll_tcp_irecv(void *ctx, int peer, void *buf, size_t bytes, int *handle);
COLL_TCP_API int coll_tcp_wait(void *ctx, int handle, int block);

#ifdef __cplusplus
}
#endif
#endif /* COLL_TCP_H */

#ifdef COLL_TCP_IMPLEMENTATION
#ifndef COLL_TCP_IMPLEMENTED
#define COLL_TCP_IMPLEMENTED
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifdef MSG_NOSIGNAL                    /* a dead peer must not SIGPIPE us   */
#define COLL_TCP__SEND_FLAGS MSG_NOSIGNAL
#else
#define COLL_TCP__SEND_FLAGS 0
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
enum { COLL_TCP__ENTRY = 20, COLL_TCP__REG = 12 + COLL_TCP__ENTRY, COLL_TCP__HELLO = 12 };

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

static int coll_tcp__listen(const struct sockaddr_storage *a, socklen_t alen, int backlog)
{
    int fd = socket(a->ss_family, SOCK_STREAM, 0), one = 1;
    if (fd < 0) return COLL_ERR_IO;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (const struct sockaddr *)a, alen) < 0 || listen(fd, backlog) < 0) {
        close(fd);
        return COLL_ERR_IO;
    }
    coll_tcp__tune(fd);
    return fd;
}

static int coll_tcp__accept(int lfd, long long deadline)
{
    for (;;) {
        int fd = accept(lfd, NULL, NULL), rc;
        if (fd >= 0) { coll_tcp__tune(fd); return fd; }
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return COLL_ERR_IO;
        rc = coll_tcp__poll1(lfd, POLLIN, deadline);
        if (rc) return rc;
    }
}

/* ---- the rendezvous -------------------------------------------------------- */

/* Rank 0: collect WORLD_SIZE - 1 registrations on the master socket, then
   hand every registered rank the full table. The registration connections
   stay open as rank 0's links. */
static int coll_tcp__master(coll_tcp *t, int lfd, long long deadline)
{
    unsigned char table[COLL_TCP_MAX_RANKS * COLL_TCP__ENTRY];
    unsigned char reg[COLL_TCP__REG];
    int joined = 0, r, rc;
    memset(table, 0, sizeof table);
    while (joined < t->nranks - 1) {
        int fd = coll_tcp__accept(lfd, deadline);
        unsigned long rank, world;
        if (fd < 0) return fd;
        rc = coll_tcp__read_all(fd, reg, sizeof reg, deadline);
        if (rc == COLL_ERR_TIMEOUT) { close(fd); return rc; }
        if (rc || coll_tcp__get32(reg) != COLL_TCP__MAGIC) {
            close(fd);                      /* a stranger: not one of ours */
            continue;
        }
        rank = coll_tcp__get32(reg + 4);
        world = coll_tcp__get32(reg + 8);
        if (world != (unsigned long)t->nranks || rank == 0 || rank >= world ||
            t->fd[rank] >= 0) {
            close(fd);
            return COLL_ERR_MISMATCH;
        }
        t->fd[rank] = fd;
        memcpy(table + rank * COLL_TCP__ENTRY, reg + 12, COLL_TCP__ENTRY);
        joined++;
    }
    for (r = 1; r < t->nranks; r++) {
        rc = coll_tcp__write_all(t->fd[r], table, (size_t)t->nranks * COLL_TCP__ENTRY, deadline);
        if (rc) return rc;
    }
    return COLL_OK;
}

/* Rank r > 0: register with the master, learn the table, connect to the
   ranks between 0 and r, accept the ranks above r. */
static int coll_tcp__worker(coll_tcp *t, const struct sockaddr_storage *master,
                            socklen_t mlen, long long deadline)
{
    unsigned char table[COLL_TCP_MAX_RANKS * COLL_TCP__ENTRY];
    unsigned char reg[COLL_TCP__REG], hello[COLL_TCP__HELLO];
    struct sockaddr_storage me;
    socklen_t melen = sizeof me;
    int lfd = -1, fd, rc, j, accepted;

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
        lfd = coll_tcp__listen(&me, melen, t->nranks);
        if (lfd < 0) return lfd;
        melen = sizeof me;
        if (getsockname(lfd, (struct sockaddr *)&me, &melen) < 0) { close(lfd); return COLL_ERR_IO; }
    }
    coll_tcp__put32(reg, COLL_TCP__MAGIC);
    coll_tcp__put32(reg + 4, (unsigned long)t->rank);
    coll_tcp__put32(reg + 8, (unsigned long)t->nranks);
    coll_tcp__put_addr(reg + 12, &me);
    rc = coll_tcp__write_all(fd, reg, sizeof reg, deadline);
    if (!rc) rc = coll_tcp__read_all(fd, table, (size_t)t->nranks * COLL_TCP__ENTRY, deadline);

    /* Connect down: rank r dials 1..r-1. The listeners all exist already
       (each was opened before its owner registered), so at worst our
       connection waits in the peer's backlog until it gets to accept. */
    coll_tcp__put32(hello, COLL_TCP__MAGIC);
    coll_tcp__put32(hello + 4, (unsigned long)t->rank);
    coll_tcp__put32(hello + 8, (unsigned long)t->nranks);
    for (j = 1; !rc && j < t->rank; j++) {
        struct sockaddr_storage peer;
        socklen_t plen = coll_tcp__get_addr(table + j * COLL_TCP__ENTRY, &peer);
        if (plen == 0) { rc = COLL_ERR_IO; break; }
        t->fd[j] = coll_tcp__connect(&peer, plen, deadline);
        if (t->fd[j] < 0) { rc = t->fd[j]; t->fd[j] = -1; break; }
        rc = coll_tcp__write_all(t->fd[j], hello, sizeof hello, deadline);
    }
    /* Accept up: every rank above us introduces itself with a hello. */
    for (accepted = 0; !rc && accepted < t->nranks - 1 - t->rank; ) {
        unsigned long who;
        fd = coll_tcp__accept(lfd, deadline);
        if (fd < 0) { rc = fd; break; }
        rc = coll_tcp__read_all(fd, hello, sizeof hello, deadline);
        if (rc == COLL_ERR_TIMEOUT) { close(fd); break; }
        if (rc || coll_tcp__get32(hello) != COLL_TCP__MAGIC) { close(fd); rc = COLL_OK; continue; }
        who = coll_tcp__get32(hello + 4);
        if (coll_tcp__get32(hello + 8) != (unsigned long)t->nranks ||
            who <= (unsigned long)t->rank || who >= (unsigned long)t->nranks || t->fd[who] >= 0) {
            close(fd);
            rc = COLL_ERR_MISMATCH;
            break;
        }
        t->fd[who] = fd;
        accepted++;
    }
    if (lfd >= 0) close(lfd);
    return rc;
}

static void coll_tcp__reset(coll_tcp *t)
{
    int i;
    memset(t, 0, sizeof *t);
    for (i = 0; i < COLL_TCP_MAX_RANKS; i++) t->fd[i] = -1;
    for (i = 0; i < COLL_TCP_MAX_REQUESTS; i++) t->req[i].peer = -1;
}

COLL_TCP_API int coll_tcp_init(coll_tcp *t, const char *master_addr, int master_port,
                               int rank, int world, unsigned timeout_ms)
{
    struct addrinfo hints, *res = NULL;
    struct sockaddr_storage master;
    socklen_t mlen;
    char port[16];
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
    deadline = coll_tcp__now_ms() + t->timeout_ms;

    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(port, sizeof port, "%d", master_port);
    if (getaddrinfo(master_addr, port, &hints, &res) != 0 || !res) return COLL_ERR_INVAL;
    memset(&master, 0, sizeof master);
    memcpy(&master, res->ai_addr, res->ai_addrlen);
    mlen = (socklen_t)res->ai_addrlen;
    freeaddrinfo(res);

    if (rank == 0) {
        /* Listen on MASTER_ADDR itself when it is ours; when it is not (an
           address the others reach us by through NAT, say), on every
           address of its family. */
        int lfd = coll_tcp__listen(&master, mlen, world);
        if (lfd < 0) {
            struct sockaddr_storage any;
            memset(&any, 0, sizeof any);
            any.ss_family = master.ss_family;
            if (master.ss_family == AF_INET)
                ((struct sockaddr_in *)&any)->sin_port = ((struct sockaddr_in *)&master)->sin_port;
            else
                ((struct sockaddr_in6 *)&any)->sin6_port = ((struct sockaddr_in6 *)&master)->sin6_port;
            lfd = coll_tcp__listen(&any, mlen, world);
        }
        if (lfd < 0) return lfd;
        rc = coll_tcp__master(t, lfd, deadline);
        close(lfd);
    } else {
        rc = coll_tcp__worker(t, &master, mlen, deadline);
    }
    if (rc) coll_tcp_close(t);
    t->failed = rc;
    return rc;
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
    rc = coll_tcp_init(t, addr, port, rank, world, timeout_ms);
    if (coll_tcp__env_int("LOCAL_RANK", 0, COLL_TCP_MAX_RANKS - 1, &local)) t->local_rank = local;
    return rc;
}

COLL_TCP_API void coll_tcp_set_timeout(coll_tcp *t, unsigned timeout_ms)
{
    t->timeout_ms = timeout_ms ? timeout_ms : COLL_TCP_DEFAULT_TIMEOUT_MS;
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
    return p;
}

COLL_TCP_API void coll_tcp_abort(coll_tcp *t, int code)
{
    int i;
    if (!t->failed) t->failed = code;
    for (i = 0; i < COLL_TCP_MAX_RANKS; i++)
        if (t->fd[i] >= 0) shutdown(t->fd[i], SHUT_RDWR);
    for (i = 0; i < COLL_TCP_MAX_REQUESTS; i++)
        if (t->req[i].peer >= 0 && t->req[i].result == COLL_AGAIN) t->req[i].result = t->failed;
}

COLL_TCP_API void coll_tcp_close(coll_tcp *t)
{
    int i;
    for (i = 0; i < COLL_TCP_MAX_RANKS; i++)
        if (t->fd[i] >= 0) { close(t->fd[i]); t->fd[i] = -1; }
    if (!t->failed) t->failed = COLL_ERR_ABORTED;
}

/* ---- the data path: a table of posted transfers ---------------------------- */

static int coll_tcp__post(coll_tcp *t, int is_send, int peer, const void *buf,
                          size_t bytes, int limit, int *handle)
{
    int i;
    if (t->failed) return t->failed;
    if (peer < 0 || peer >= t->nranks || peer == t->rank || (bytes && !buf) || !handle)
        return COLL_ERR_INVAL;
    for (i = 0; i < limit; i++) {
        coll_tcp__req *q = &t->req[i];
        if (q->peer >= 0) continue;
        q->peer = peer; q->is_send = is_send;
        q->buf = (unsigned char *)buf;   /* a send only ever reads through it */
        q->bytes = bytes; q->done = 0;
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

/* Moves as many bytes as the sockets take right now, without blocking.
   Returns 1 if anything moved, 0 if not, or the error that broke the port. */
static int coll_tcp__pump(coll_tcp *t)
{
    int i, moved = 0;
    for (i = 0; i < COLL_TCP_MAX_REQUESTS; i++) {
        coll_tcp__req *q = &t->req[i];
        int fd = q->peer >= 0 ? t->fd[q->peer] : -1;
        if (q->peer < 0 || q->result != COLL_AGAIN || !coll_tcp__is_head(t, q)) continue;
        while (q->done < q->bytes) {
            size_t n = q->bytes - q->done;
            ssize_t k = q->is_send ? send(fd, q->buf + q->done, n, COLL_TCP__SEND_FLAGS)
                                   : recv(fd, q->buf + q->done, n, 0);
            if (k > 0) {
                q->done += (size_t)k;
                if (q->is_send) t->bytes_sent += (unsigned long long)k;
                else t->bytes_received += (unsigned long long)k;
                moved = 1;
                continue;
            }
            if (k < 0 && errno == EINTR) continue;
            if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
            coll_tcp_abort(t, COLL_ERR_IO);         /* EOF, reset, ... */
            return COLL_ERR_IO;
        }
        if (q->done == q->bytes) q->result = COLL_OK;
    }
    return moved;
}

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

COLL_TCP_API int coll_tcp_wait(void *ctx, int handle, int block)
{
    coll_tcp *t = (coll_tcp *)ctx;
    coll_tcp__req *q;
    long long idle_since = coll_tcp__now_ms();
    if (handle < 0 || handle >= COLL_TCP_MAX_REQUESTS || t->req[handle].peer < 0)
        return COLL_ERR_INVAL;
    q = &t->req[handle];
    for (;;) {
        int rc;
        if (q->result == COLL_AGAIN) {
            rc = coll_tcp__pump(t);
            if (rc < 0 && q->result == COLL_AGAIN) q->result = rc;
            if (rc > 0) idle_since = coll_tcp__now_ms();
        }
        if (q->result != COLL_AGAIN) {
            rc = q->result;
            q->peer = -1;                            /* the slot is free again */
            return rc;
        }
        if (!block) return COLL_AGAIN;
        {
            long long left = idle_since + (long long)t->timeout_ms - coll_tcp__now_ms();
            if (left <= 0 || (rc = coll_tcp__sleep(t, (int)(left > 1000000 ? 1000000 : left))) < 0) {
                /* No byte moved for timeout_ms: the peer is hung or gone
                   without a word. Our streams are now mid-message, so the
                   port is broken either way. */
                coll_tcp_abort(t, left <= 0 ? COLL_ERR_TIMEOUT : COLL_ERR_IO);
            }
        }
    }
}

COLL_TCP_API int coll_tcp_isend(void *ctx, int peer, const void *buf, size_t bytes, int *handle)
{
    coll_tcp *t = (coll_tcp *)ctx;
    int rc = coll_tcp__post(t, 1, peer, buf, bytes, COLL_TCP_MAX_REQUESTS - COLL_TCP__RESERVED, handle);
    if (rc == COLL_OK) (void)coll_tcp__pump(t);    /* start at once; wait reports errors */
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
