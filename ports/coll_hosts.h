/* coll_hosts.h - ranks as processes on several hosts, shared memory between
                  the ranks of one host and TCP between hosts: a port for coll.h

   USAGE
     In exactly one file:
         #define COLL_HOSTS_IMPLEMENTATION
         #include "ports/coll_hosts.h"
     This also implements ports/coll_tcp.h and ports/coll_shm.h in that file
     (define COLL_HOSTS_EXTERN_PORTS where another file implements them).
     COLL_HOSTS_STATIC makes every function static (and theirs). The shm
     port needs _DEFAULT_SOURCE, which this header asks for itself when no
     feature macro is set: include it first in the implementation file, or
     pass -D_DEFAULT_SOURCE. Then, in every process:

         static coll_hosts h;                      caller-owned, ~26 KB
         coll_hosts_init_env(&h, 10000);           MASTER_ADDR, MASTER_PORT,
                                                   WORLD_SIZE, RANK, COLL_TCP_TOKEN
         coll_port p = coll_hosts_port(&h);
         coll_init(&c, h.rank, h.nranks, &p, scratch, sizeof scratch);
         coll_hier_init(&hier, &c, coll_hosts_host(&h), ...);   if wanted
         ...
         coll_hosts_close(&h);

     or coll_hosts_init(&h, "10.0.0.1", 29500, rank, world, 10000) with the
     same facts passed explicitly.

   THE IDEA
     One coll_port over two: peers on this host are reached through a
     shared-memory group (coll_shm.h), the others through TCP (coll_tcp.h).
     Nobody says which ranks share a host; the rendezvous finds out:
       1. the TCP port's own rendezvous joins everyone in a full mesh (its
          job token, its handshake, its deadline);
       2. every rank sends rank 0 its HOST IDENTITY (below) and what
          LOCAL_RANK / LOCAL_WORLD_SIZE say, if set; rank 0 sends the whole
          table, with a fresh random job nonce, back to everyone. Each rank
          checks the table (its own row must be what it sent) and works out
          the same host numbering from it: hosts numbered by their lowest
          rank, local ranks in rank order (and a digest of the table goes
          round with step 3's verdict, so a rank that holds another table
          fails init on every rank). A LOCAL_RANK or LOCAL_WORLD_SIZE
          that disagrees with what the table says, on any rank, fails init
          on every rank (COLL_ERR_MISMATCH, the rank and both values on
          stderr): every rank decides from the same table;
       3. the ranks of each host with more than one rank open one shm group,
          named from MASTER_PORT, the nonce and the host index (so two
          jobs, or two emulated hosts sharing /dev/shm, never meet; the
          token stays out of names anyone can list); then every rank tells
          rank 0 how that went and rank 0 tells everyone the first failure:
          all ranks return it, or all go on.
     Then every send, receive and handle goes to the child that reaches its
     peer, with the peer's number in that child (the shm group numbers a
     host's ranks 0..local_size-1).

   HOST IDENTITY
     COLL_HOST_ID from the environment when set (any string up to 255
     bytes; for tests and for setups where the default is wrong), else
     /proc/sys/kernel/random/boot_id, the inode of /proc/self/ns/net and
     the host name: different on different machines, and on one machine
     different between network namespaces (emulated hosts share the kernel
     and /dev/shm but not the network: their ranks cannot share a TCP
     loopback, but can share memory). Ranks compare 16-byte digests of it.
     coll_hosts_identity() says what this process would send. Each row
     also names the machine (a digest of boot_id alone):
     coll_hosts_machine_ranks() counts the job's ranks on this kernel, and
     where they are more than the host's (emulated hosts, containers) the
     shm child hears of it (coll_shm_set_neighbours), so that its waits do
     not spin where other hosts' ranks want the same CPUs.

   HANDLES AND PROGRESS
     The port's handles are its own (0..COLL_HOSTS_HANDLES-1), each naming a
     child and the child's handle, so the two children's numbers never
     clash. Each child moves bytes only inside its own calls, so while
     handles of both are pending, a blocking wait polls both (a finished
     transfer of the other child is kept until it is waited for), yields,
     then sleeps in short naps; while only one child has pending handles, a
     wait blocks in that child with its own deadline and wake-ups.

   DEADLINE, ABORT, FAILURES
     One timeout for both children (timeout_ms; coll_hosts_set_timeout
     changes both). A wait that polls both and sees nothing move for
     timeout_ms returns COLL_ERR_TIMEOUT. In epoch 0 (from init until the
     first renew) the first failure of either child breaks the whole port:
     both children are aborted with that code (abort frames on the TCP
     links, so the other hosts fail at once; the shm group marked failed,
     so this host's other ranks stop at once), every pending handle ends
     with it, and every later call returns it. coll_hosts_abort does the
     same on purpose, in any epoch; it is also the port's abort hook.

   EPOCHS AND MISSING RANKS (coll_port.renew and .missing)
     renew(ctx, e) (coll_hosts_renew; coll_comm_shrink calls it) renews
     both children to epoch e - the TCP one always, the shm one where this
     host has a group (a host of one rank has none) - then the composite:
     every handle of an earlier epoch is void (its transfer ended by the
     child's renew, never delivered into the new epoch) and the epoch's
     failure is forgotten. Each child keeps an earlier epoch's messages
     from the new one and holds a later one's. In a renewed epoch a
     deadline or a dead peer fails only the call that met it, in the
     child as here: where the composite's own deadline passes with both
     children busy, the transfers waited for end in their child (its
     blocking wait under a 1 ms deadline, which a renewed epoch makes the
     transfer's failure alone) and nothing else does. An abort - coll.h's
     after a collective error, coll_comm_revoke's, coll_hosts_abort -
     still fails the epoch, on both children (a child's own epoch failure,
     a TCP peer's abort frame say, fails that child's calls). renew to an
     epoch not later than ours is COLL_ERR_INVAL; after close, an error.
     missing(ctx, peer) (coll_hosts_missing) asks the child that reaches
     `peer`, with the peer's number there, and turns its answer back into
     a rank of the job (an answer out of the child's range: `peer`). Each
     child answers from what it sees: the shm child its host's waits in
     the segment, the TCP child what its links tell it (`peer` where its
     coll_port has no missing). A chain of waits that crosses from one
     child into the other is followed only within the child that owns
     `peer`: it ends at the last rank that child knows of (a rank of this
     host waiting for one on another host, say). make test-shrink-hosts
     runs both, and coll_comm_shrink, over emulated hosts.

   COUNTERS
     h.tcp and h.shm (coll_hosts_traffic): messages and payload bytes this
     rank posted through each child, each way; h.both: blocking waits that
     found both children busy and polled them in turn. coll_tcp's own
     h.t.bytes_sent / bytes_received count what reached its sockets.

   NOT OFFERED
     irecv_fold: TCP has none, and folding a TCP message would need a
     bounce buffer of its size. The library then copies and reduces, as
     over TCP alone.

   CONFIGURATION
     COLL_HOSTS_HANDLES     outstanding isend/irecv per rank          (16)
     COLL_HOSTS_MAX_RANKS   largest job (at most COLL_TCP_MAX_RANKS)
                            (COLL_TCP_MAX_RANKS)
     COLL_HOSTS_NAP_US      longest nap of a wait polling both children (200)
     plus every macro of coll_tcp.h and coll_shm.h.

   REVISIONS
     1  first version: host table at the rendezvous, shm inside a host,
        TCP between, one deadline and one abort.
     2  renew (epochs: coll_comm_shrink) and missing, through the children.

   LICENCE: MIT, as coll.h.
*/
/* Outside the include guard: it matters only before the first system header. */
#if defined(COLL_HOSTS_IMPLEMENTATION) && !defined(__cplusplus) && !defined(_GNU_SOURCE) && \
    !defined(_DEFAULT_SOURCE) && !defined(_BSD_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _DEFAULT_SOURCE 1
#endif

#if defined(COLL_HOSTS_IMPLEMENTATION) && !defined(COLL_HOSTS_EXTERN_PORTS)
#ifndef COLL_TCP_IMPLEMENTATION
#define COLL_TCP_IMPLEMENTATION
#endif
#ifndef COLL_SHM_IMPLEMENTATION
#define COLL_SHM_IMPLEMENTATION
#endif
#endif
#if defined(COLL_HOSTS_STATIC)
#ifndef COLL_TCP_STATIC
#define COLL_TCP_STATIC
#endif
#ifndef COLL_SHM_STATIC
#define COLL_SHM_STATIC
#endif
#endif
#include "coll_shm.h"
#include "coll_tcp.h"

#ifndef COLL_HOSTS_H
#define COLL_HOSTS_H

#ifndef COLL_HOSTS_HANDLES
#define COLL_HOSTS_HANDLES 16
#endif
#ifndef COLL_HOSTS_MAX_RANKS
#define COLL_HOSTS_MAX_RANKS COLL_TCP_MAX_RANKS
#endif
#ifndef COLL_HOSTS_NAP_US
#define COLL_HOSTS_NAP_US 200
#endif
#if COLL_HOSTS_MAX_RANKS > COLL_TCP_MAX_RANKS || COLL_HOSTS_MAX_RANKS > COLL_SHM_MAX_RANKS
#error "COLL_HOSTS_MAX_RANKS is above what the TCP or shm port takes"
#endif

#ifndef COLL_HOSTS_API
#ifdef COLL_HOSTS_STATIC
#define COLL_HOSTS_API static
#else
#define COLL_HOSTS_API extern
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* One child's traffic from this rank: posted messages and payload bytes. */
typedef struct coll_hosts_traffic {
    unsigned long long sent, received;           /* messages */
    unsigned long long bytes_sent, bytes_received;
} coll_hosts_traffic;

/* One handle of the composite port (private). */
typedef struct coll_hosts__slot {
    int state;                 /* 0 free; 1 pending in child `via`; 2 done  */
    int via;                   /* 0: TCP, 1: shm                            */
    int child;                 /* the child's handle                        */
    int result;                /* state 2: what the wait will return        */
} coll_hosts__slot;

typedef struct coll_hosts {
    int rank, nranks;
    int nhosts, host;          /* hosts in the job; this rank's host index  */
    int local_rank, local_size;/* this rank on its host                     */
    unsigned timeout_ms;
    int failed;                /* 0, or the code every call of this epoch
                                  now returns                               */
    uint32_t epoch;            /* 0 from init, then what renew said         */
    int shm_up;                /* 1: this host's shm group is open          */
    int attached;              /* communicators coll_init put on this port  */
    coll_hosts_traffic tcp, shm;
    unsigned long long both;   /* blocking waits that had to poll both      */
    int pending[2];            /* slots in state 1, per child               */
    coll_hosts__slot slot[COLL_HOSTS_HANDLES + 2];   /* +2: blocking calls  */
    short host_of[COLL_HOSTS_MAX_RANKS];   /* host index of every rank      */
    short local_of[COLL_HOSTS_MAX_RANKS];  /* its rank on its host          */
    char shm_name[48];         /* this host's group, while it is joined     */
    char why[200];             /* after a failed init: why                  */
    int tcp_made;              /* 1: coll_tcp_init ran (close may close it) */
    int machine_ranks;         /* ranks of the job on this rank's kernel    */
    unsigned char table[COLL_HOSTS_MAX_RANKS * 36];  /* the rendezvous' rows */
    coll_tcp t;                /* the children (caller-owned with us)       */
    coll_shm s;
} coll_hosts;

/* Join the job: the TCP mesh, the host table, each host's shm group.
   COLL_OK, or the TCP port's codes (its rendezvous), COLL_ERR_MISMATCH
   (LOCAL_RANK / LOCAL_WORLD_SIZE disagree with the table, or a peer's
   table does not match ours), COLL_ERR_INVAL (bad arguments, a
   COLL_HOST_ID that is empty or too long, LOCAL_RANK not a number), the
   shm port's codes (some host's group could not be opened); the same code
   on every rank, except where the TCP rendezvous itself failed.
   h->why says what went wrong. */
COLL_HOSTS_API int coll_hosts_init(coll_hosts *h, const char *master_addr, int master_port,
                                   int rank, int world, unsigned timeout_ms);
COLL_HOSTS_API int coll_hosts_init_env(coll_hosts *h, unsigned timeout_ms);
COLL_HOSTS_API coll_port coll_hosts_port(coll_hosts *h);
COLL_HOSTS_API void coll_hosts_set_timeout(coll_hosts *h, unsigned timeout_ms);
COLL_HOSTS_API void coll_hosts_abort(coll_hosts *h, int code);
COLL_HOSTS_API void coll_hosts_close(coll_hosts *h);

/* What the rendezvous learned. host_of: -1 for a rank out of range. */
COLL_HOSTS_API int coll_hosts_nhosts(const coll_hosts *h);
COLL_HOSTS_API int coll_hosts_host(const coll_hosts *h);
COLL_HOSTS_API int coll_hosts_host_of(const coll_hosts *h, int rank);
COLL_HOSTS_API int coll_hosts_local_rank(const coll_hosts *h);
COLL_HOSTS_API int coll_hosts_local_size(const coll_hosts *h);
/* How many ranks of the job run on this rank's machine (its kernel's
   boot_id), whatever host each is: emulated hosts and containers on one
   machine share its CPUs. */
COLL_HOSTS_API int coll_hosts_machine_ranks(const coll_hosts *h);
/* The identity this process sends (NUL-terminated, cut to n - 1 bytes);
   0, or COLL_ERR_INVAL for a bad COLL_HOST_ID. */
COLL_HOSTS_API int coll_hosts_identity(char *buf, size_t n);

/* The port functions (ctx is the coll_hosts). */
COLL_HOSTS_API int coll_hosts_send(void *ctx, int peer, const void *buf, size_t bytes);
COLL_HOSTS_API int coll_hosts_recv(void *ctx, int peer, void *buf, size_t bytes);
COLL_HOSTS_API int coll_hosts_sendrecv(void *ctx, int to, const void *sbuf, size_t sbytes,
                                       int from, void *rbuf, size_t rbytes);
COLL_HOSTS_API int coll_hosts_isend(void *ctx, int peer, const void *buf, size_t bytes,
                                    int *handle);
COLL_HOSTS_API int coll_hosts_irecv(void *ctx, int peer, void *buf, size_t bytes, int *handle);
COLL_HOSTS_API int coll_hosts_wait(void *ctx, int handle, int block);
/* coll_port.renew and coll_port.missing (see EPOCHS AND MISSING RANKS). */
COLL_HOSTS_API int coll_hosts_renew(void *ctx, uint32_t epoch);
COLL_HOSTS_API int coll_hosts_missing(void *ctx, int peer);

#ifdef __cplusplus
}
#endif
#endif /* COLL_HOSTS_H */

#ifdef COLL_HOSTS_IMPLEMENTATION
#ifndef COLL_HOSTS_IMPLEMENTED
#define COLL_HOSTS_IMPLEMENTED
#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define COLL_HOSTS__MAGIC 0x636f6873u      /* "cohs" */
#define COLL_HOSTS__ROW 36                 /* digest 16, claims 2 x 4, magic 4, machine 8 */
#define COLL_HOSTS__MACHINE 28             /* where a row's machine starts   */
#define COLL_HOSTS__UNSET 0xffffffffu      /* a claim not made               */
#define COLL_HOSTS__BAD 0xfffffffeu        /* a claim that is not a number   */
enum { COLL_HOSTS__TCP = 0, COLL_HOSTS__SHM = 1 };

/* ---- >>identity ---------------------------------------------------------- */

static void coll_hosts__put32(unsigned char *p, unsigned long v)
{
    p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);  p[3] = (unsigned char)v;
}

static unsigned long coll_hosts__get32(const unsigned char *p)
{
    return ((unsigned long)p[0] << 24) | ((unsigned long)p[1] << 16) |
           ((unsigned long)p[2] << 8) | p[3];
}

/* The kernel's boot_id ("" where it cannot be read). */
static void coll_hosts__boot_id(char *boot, int n)
{
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    boot[0] = 0;
    if (!f) return;
    if (!fgets(boot, n, f)) boot[0] = 0;
    fclose(f);
    boot[strcspn(boot, "\r\n")] = 0;
}

COLL_HOSTS_API int coll_hosts_identity(char *buf, size_t n)
{
    const char *env = getenv("COLL_HOST_ID");
    char boot[64] = "", name[256] = "";
    struct stat st;
    unsigned long long ino = 0;
    if (!buf || n == 0) return COLL_ERR_INVAL;
    buf[0] = 0;
    if (env) {
        if (!*env || strlen(env) > 255) return COLL_ERR_INVAL;
        snprintf(buf, n, "env:%s", env);
        return COLL_OK;
    }
    coll_hosts__boot_id(boot, sizeof boot);
    if (stat("/proc/self/ns/net", &st) == 0) ino = (unsigned long long)st.st_ino;
    if (gethostname(name, sizeof name - 1) != 0) name[0] = 0;
    name[sizeof name - 1] = 0;
    snprintf(buf, n, "boot:%s net:%llu name:%s", boot, ino, name);
    return COLL_OK;
}

/* 16 bytes that stand for the identity: two SipHashes under fixed keys. */
static void coll_hosts__digest(const char *id, unsigned char out[16])
{
    size_t n = strlen(id);
    uint64_t a = coll_tcp_siphash(0x636f6c6c686f7374ull, 1, id, n);
    uint64_t b = coll_tcp_siphash(0x636f6c6c686f7374ull, 2, id, n);
    int i;
    for (i = 0; i < 8; i++) {
        out[i] = (unsigned char)(a >> (8 * i));
        out[8 + i] = (unsigned char)(b >> (8 * i));
    }
}

/* LOCAL_RANK / LOCAL_WORLD_SIZE as the table carries them. */
static unsigned long coll_hosts__claim(const char *var)
{
    const char *s = getenv(var);
    char *end;
    long v;
    if (!s || !*s) return COLL_HOSTS__UNSET;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end || v < 0 || v > COLL_HOSTS_MAX_RANKS) return COLL_HOSTS__BAD;
    return (unsigned long)v;
}

/* ---- >>rendezvous: the host table, over the TCP mesh --------------------- */

static int coll_hosts__fail_init(coll_hosts *h, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(h->why, sizeof h->why, fmt, ap);
    va_end(ap);
    fprintf(stderr, "coll_hosts: rank %d: %s\n", h->rank, h->why);
    return rc;
}

/* Every rank's row to rank 0, the table back to everyone. `table` holds
   nranks rows; nonce gets rank 0's 16 bytes. */
static int coll_hosts__exchange(coll_hosts *h, unsigned char *table, unsigned char nonce[16],
                                const unsigned char mine[COLL_HOSTS__ROW])
{
    coll_tcp *t = &h->t;
    unsigned char head[24];
    int r, rc;
    if (h->rank == 0) {
        char hex[33];
        memcpy(table, mine, COLL_HOSTS__ROW);
        for (r = 1; r < h->nranks; r++)
            if ((rc = coll_tcp_recv(t, r, table + (size_t)r * COLL_HOSTS__ROW,
                                    COLL_HOSTS__ROW)) != 0)
                return rc;
        if ((rc = coll_tcp_new_token(hex)) != 0) return rc;
        for (r = 0; r < 16; r++) {
            unsigned v = 0;
            sscanf(hex + 2 * r, "%2x", &v);
            nonce[r] = (unsigned char)v;
        }
        coll_hosts__put32(head, COLL_HOSTS__MAGIC);
        coll_hosts__put32(head + 4, (unsigned long)h->nranks);
        memcpy(head + 8, nonce, 16);
        for (r = 1; r < h->nranks; r++)
            if ((rc = coll_tcp_send(t, r, head, sizeof head)) != 0 ||
                (rc = coll_tcp_send(t, r, table, (size_t)h->nranks * COLL_HOSTS__ROW)) != 0)
                return rc;
        return COLL_OK;
    }
    if ((rc = coll_tcp_send(t, 0, mine, COLL_HOSTS__ROW)) != 0 ||
        (rc = coll_tcp_recv(t, 0, head, sizeof head)) != 0 ||
        (rc = coll_tcp_recv(t, 0, table, (size_t)h->nranks * COLL_HOSTS__ROW)) != 0)
        return rc;
    if (coll_hosts__get32(head) != COLL_HOSTS__MAGIC ||
        coll_hosts__get32(head + 4) != (unsigned long)h->nranks)
        return COLL_ERR_MISMATCH;
    memcpy(nonce, head + 8, 16);
    return COLL_OK;
}

/* The numbering every rank works out from the same table: hosts by their
   lowest rank, local ranks in rank order. Then the claims, checked on
   every rank against it: the first bad one (lowest rank) is the answer. */
static int coll_hosts__learn(coll_hosts *h, const unsigned char *table)
{
    int r, q, bad = -1;
    unsigned long lr = 0, ls = 0;
    int size[COLL_HOSTS_MAX_RANKS] = { 0 };
    h->nhosts = 0;
    for (r = 0; r < h->nranks; r++) {
        const unsigned char *row = table + (size_t)r * COLL_HOSTS__ROW;
        if (coll_hosts__get32(row + 24) != COLL_HOSTS__MAGIC)
            return coll_hosts__fail_init(h, COLL_ERR_INVAL, "rank %d has no host identity "
                                         "(COLL_HOST_ID empty or over 255 bytes)", r);
        for (q = 0; q < r; q++)
            if (memcmp(table + (size_t)q * COLL_HOSTS__ROW, row, 16) == 0) break;
        if (q == r) {
            h->host_of[r] = (short)h->nhosts;
            h->local_of[r] = 0;
            size[h->nhosts++] = 1;
        } else {
            h->host_of[r] = h->host_of[q];
            h->local_of[r] = (short)size[h->host_of[q]]++;
        }
    }
    for (r = 0; r < h->nranks && bad < 0; r++) {
        const unsigned char *row = table + (size_t)r * COLL_HOSTS__ROW;
        lr = coll_hosts__get32(row + 16);
        ls = coll_hosts__get32(row + 20);
        if ((lr != COLL_HOSTS__UNSET && lr != (unsigned long)h->local_of[r]) ||
            (ls != COLL_HOSTS__UNSET && ls != (unsigned long)size[h->host_of[r]]))
            bad = r;
    }
    if (bad >= 0) {
        if (lr == COLL_HOSTS__BAD || ls == COLL_HOSTS__BAD)
            return coll_hosts__fail_init(h, COLL_ERR_INVAL,
                                         "rank %d: LOCAL_RANK or LOCAL_WORLD_SIZE is not a "
                                         "number in 0..%d", bad, COLL_HOSTS_MAX_RANKS);
        if (lr != COLL_HOSTS__UNSET && lr != (unsigned long)h->local_of[bad])
            return coll_hosts__fail_init(h, COLL_ERR_MISMATCH,
                                         "rank %d says LOCAL_RANK=%lu, but the host table makes "
                                         "it local rank %d", bad, lr, h->local_of[bad]);
        return coll_hosts__fail_init(h, COLL_ERR_MISMATCH,
                                     "rank %d says LOCAL_WORLD_SIZE=%lu, but its host has %d "
                                     "ranks", bad, ls, size[h->host_of[bad]]);
    }
    h->host = h->host_of[h->rank];
    h->local_rank = h->local_of[h->rank];
    h->local_size = size[h->host];
    h->machine_ranks = 0;
    for (r = 0; r < h->nranks; r++)
        h->machine_ranks += memcmp(table + (size_t)r * COLL_HOSTS__ROW + COLL_HOSTS__MACHINE,
                                   table + (size_t)h->rank * COLL_HOSTS__ROW + COLL_HOSTS__MACHINE, 8) == 0;
    return COLL_OK;
}

/* Everyone's outcome and a digest of the table it holds to rank 0, the
   first failure (lowest rank) back: init succeeds or fails on every rank
   alike, and only where every rank holds the same table. */
static int coll_hosts__agree(coll_hosts *h, int mine, uint64_t digest, int *who)
{
    unsigned char b[12];
    int r, rc, i, first = mine, at = mine ? 0 : -1;
    if (h->rank == 0) {
        for (r = 1; r < h->nranks; r++) {
            uint64_t d = 0;
            if ((rc = coll_tcp_recv(&h->t, r, b, 12)) != 0) return rc;
            for (i = 0; i < 8; i++) d |= (uint64_t)b[4 + i] << (8 * i);
            if (!first && coll_hosts__get32(b)) {
                int v = (int)(int32_t)(uint32_t)coll_hosts__get32(b);
                first = v < 0 ? v : COLL_ERR_IO;
                at = r;
            } else if (!first && d != digest) {
                first = COLL_ERR_MISMATCH;
                at = r;
            }
        }
        coll_hosts__put32(b, (unsigned long)(uint32_t)first);
        coll_hosts__put32(b + 4, (unsigned long)(uint32_t)at);
        for (r = 1; r < h->nranks; r++)
            if ((rc = coll_tcp_send(&h->t, r, b, 8)) != 0) return rc;
    } else {
        coll_hosts__put32(b, (unsigned long)(uint32_t)mine);
        for (i = 0; i < 8; i++) b[4 + i] = (unsigned char)(digest >> (8 * i));
        if ((rc = coll_tcp_send(&h->t, 0, b, 12)) != 0 || (rc = coll_tcp_recv(&h->t, 0, b, 8)) != 0)
            return rc;
        first = (int)(int32_t)(uint32_t)coll_hosts__get32(b);
        at = (int)(int32_t)(uint32_t)coll_hosts__get32(b + 4);
        if (first > 0 || (first != 0 && (at < 0 || at >= h->nranks))) first = COLL_ERR_IO;
    }
    *who = at;
    return first;
}

/* The shm group of this rank's host, named from what every rank has
   alike: rank 0's nonce (fresh for each job) and the port - not
   MASTER_ADDR, which ranks may spell differently. A failure is kept in
   h->why and returned, for the verdict that goes round. */
static int coll_hosts__open_shm(coll_hosts *h, int port, const unsigned char *nonce)
{
    uint64_t tag = coll_tcp_siphash(0x636f6c6c73686dull, (uint64_t)port, nonce, 16);
    int rc;
    snprintf(h->shm_name, sizeof h->shm_name, "/collh-%016llx-%d", (unsigned long long)tag, h->host);
    rc = coll_shm_init(&h->s, h->shm_name, h->local_rank, h->local_size, h->timeout_ms);
    if (rc) {
        snprintf(h->why, sizeof h->why, "host %d's shm group %s: %s", h->host, h->shm_name,
                 h->s.why ? h->s.why : coll_result_str(rc));
        fprintf(stderr, "coll_hosts: rank %d: %s\n", h->rank, h->why);
    } else {
        h->shm_up = 1;
        if (h->machine_ranks > h->local_size) coll_shm_set_neighbours(&h->s, h->machine_ranks);
    }
    return rc;
}

/* 8 bytes that stand for this machine: its kernel's boot_id, which
   network namespaces and COLL_HOST_ID leave alike; the host digest's
   first 8 where there is none (each host then counts as a machine). */
static void coll_hosts__machine(const unsigned char *host, unsigned char out[8])
{
    char boot[64];
    uint64_t d;
    int i;
    coll_hosts__boot_id(boot, sizeof boot);
    if (!boot[0]) { memcpy(out, host, 8); return; }
    d = coll_tcp_siphash(0x636f6c6c6d616368ull, 3, boot, strlen(boot));
    for (i = 0; i < 8; i++) out[i] = (unsigned char)(d >> (8 * i));
}

/* This rank's row of the host table: its host identity's digest, the
   LOCAL_RANK and LOCAL_WORLD_SIZE it claims, whether it has one, and its
   machine (coll_hosts__machine). */
static void coll_hosts__my_row(const char *id, unsigned char *mine)
{
    coll_hosts__digest(id, mine);
    coll_hosts__put32(mine + 16, coll_hosts__claim("LOCAL_RANK"));
    coll_hosts__put32(mine + 20, coll_hosts__claim("LOCAL_WORLD_SIZE"));
    coll_hosts__put32(mine + 24, id[0] ? COLL_HOSTS__MAGIC : 0);
    coll_hosts__machine(mine, mine + COLL_HOSTS__MACHINE);
}

/* Join: the TCP rendezvous, the host table (every rank's row, through
   rank 0), what it says about hosts and local ranks, the host's shm
   group, and one verdict for all (a failure this rank alone saw goes
   round). */
static int coll_hosts__init(coll_hosts *h, const char *addr, int port, int rank, int world,
                            unsigned timeout_ms)
{
    unsigned char *table = h->table;
    unsigned char mine[COLL_HOSTS__ROW], nonce[16];
    char id[300];
    int rc, who = -1;

    if (world < 1 || world > COLL_HOSTS_MAX_RANKS || rank < 0 || rank >= world) {
        snprintf(h->why, sizeof h->why, "rank %d of %d: out of range", rank, world);
        return h->failed = COLL_ERR_INVAL;
    }
    h->rank = rank; h->nranks = world;
    if (coll_hosts_identity(id, sizeof id) != 0) {
        snprintf(h->why, sizeof h->why, "COLL_HOST_ID is empty or longer than 255 bytes");
        fprintf(stderr, "coll_hosts: rank %d: %s\n", rank, h->why);
        /* Still join, so that every rank hears of it: a row that is no
           identity fails the table on every rank (below). */
    }
    rc = coll_tcp_init(&h->t, addr, port, rank, world, timeout_ms);
    h->tcp_made = 1;
    if (rc) {
        snprintf(h->why, sizeof h->why, "the TCP rendezvous failed: %s (%d)", coll_result_str(rc), rc);
        return h->failed = rc;
    }
    h->timeout_ms = h->t.timeout_ms;
    coll_hosts__my_row(id, mine);
    rc = world > 1 ? coll_hosts__exchange(h, table, nonce, mine) : COLL_OK;
    if (world == 1) { memcpy(table, mine, sizeof mine); memset(nonce, 0, sizeof nonce); }
    if (rc) {
        coll_tcp_close(&h->t);
        snprintf(h->why, sizeof h->why, "the host table exchange failed: %s (%d)", coll_result_str(rc), rc);
        return h->failed = rc;
    }
    if (memcmp(table + (size_t)rank * COLL_HOSTS__ROW, mine, sizeof mine) != 0)
        rc = coll_hosts__fail_init(h, COLL_ERR_MISMATCH, "rank 0 sent back another row for rank %d", rank);
    if (!rc) rc = coll_hosts__learn(h, table);
    if (!rc && h->local_size > 1) rc = coll_hosts__open_shm(h, port, nonce);
    if (world > 1) {
        /* the table as this rank holds it, and the numbering it made */
        uint64_t d = coll_tcp_siphash(0x636f6c6c746162ull, (uint64_t)h->nhosts, table,
                                      (size_t)world * COLL_HOSTS__ROW);
        int all = coll_hosts__agree(h, rc, d, &who);
        if (all && !rc)
            snprintf(h->why, sizeof h->why, "rank %d failed to join: %s (%d)", who, coll_result_str(all), all);
        rc = all;
    }
    if (rc) {
        coll_hosts_close(h);
        return h->failed = rc;
    }
    h->why[0] = 0;
    return COLL_OK;
}

static void coll_hosts__reset(coll_hosts *h)
{
    memset(h, 0, sizeof *h);
    h->rank = -1;
    h->local_size = 1;
    h->machine_ranks = 1;
    h->nhosts = 1;
}

COLL_HOSTS_API int coll_hosts_init(coll_hosts *h, const char *master_addr, int master_port,
                                   int rank, int world, unsigned timeout_ms)
{
    if (!h) return COLL_ERR_INVAL;
    coll_hosts__reset(h);
    if (!master_addr || master_port <= 0 || master_port > 65535) {
        snprintf(h->why, sizeof h->why, "no master address or a bad port");
        return h->failed = COLL_ERR_INVAL;
    }
    return coll_hosts__init(h, master_addr, master_port, rank, world, timeout_ms);
}

COLL_HOSTS_API int coll_hosts_init_env(coll_hosts *h, unsigned timeout_ms)
{
    const char *addr = getenv("MASTER_ADDR"), *p = getenv("MASTER_PORT"),
               *w = getenv("WORLD_SIZE"), *r = getenv("RANK");
    char *e1, *e2, *e3;
    long port, world, rank;
    if (!h) return COLL_ERR_INVAL;
    coll_hosts__reset(h);
    if (!addr || !*addr || !p || !w || !r) {
        snprintf(h->why, sizeof h->why, "MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK must be set");
        return h->failed = COLL_ERR_INVAL;
    }
    port = strtol(p, &e1, 10); world = strtol(w, &e2, 10); rank = strtol(r, &e3, 10);
    if (!*p || !*w || !*r || *e1 || *e2 || *e3 || port <= 0 || port > 65535 ||
        world < 1 || world > COLL_HOSTS_MAX_RANKS || rank < 0 || rank >= world) {
        snprintf(h->why, sizeof h->why, "MASTER_PORT, WORLD_SIZE or RANK out of range");
        return h->failed = COLL_ERR_INVAL;
    }
    return coll_hosts__init(h, addr, (int)port, (int)rank, (int)world, timeout_ms);
}

COLL_HOSTS_API void coll_hosts_set_timeout(coll_hosts *h, unsigned timeout_ms)
{
    coll_tcp_set_timeout(&h->t, timeout_ms);
    h->timeout_ms = h->t.timeout_ms;
    h->s.timeout_ms = h->timeout_ms;
}

COLL_HOSTS_API int coll_hosts_nhosts(const coll_hosts *h) { return h->nhosts; }
COLL_HOSTS_API int coll_hosts_host(const coll_hosts *h) { return h->host; }
COLL_HOSTS_API int coll_hosts_local_rank(const coll_hosts *h) { return h->local_rank; }
COLL_HOSTS_API int coll_hosts_local_size(const coll_hosts *h) { return h->local_size; }
COLL_HOSTS_API int coll_hosts_machine_ranks(const coll_hosts *h) { return h->machine_ranks; }
COLL_HOSTS_API int coll_hosts_host_of(const coll_hosts *h, int rank)
{
    return rank >= 0 && rank < h->nranks ? h->host_of[rank] : -1;
}

/* ---- >>dispatch ---------------------------------------------------------- */

/* Which child reaches `peer`, and its number there; -1 for a bad peer. */
static int coll_hosts__route(const coll_hosts *h, int peer, int *child_peer)
{
    if (peer < 0 || peer >= h->nranks || peer == h->rank) return -1;
    if (h->host_of[peer] == h->host && h->shm_up) {
        *child_peer = h->local_of[peer];
        return COLL_HOSTS__SHM;
    }
    *child_peer = peer;
    return COLL_HOSTS__TCP;
}

static void coll_hosts__count(coll_hosts *h, int via, int is_send, size_t bytes)
{
    coll_hosts_traffic *k = via == COLL_HOSTS__SHM ? &h->shm : &h->tcp;
    if (is_send) { k->sent++; k->bytes_sent += bytes; }
    else { k->received++; k->bytes_received += bytes; }
}

/* The epoch fails: both children are aborted (each fails its own epoch for
   its peers) and every pending handle ends with the code. In epoch 0 the
   port's first failure of any kind comes here; after renew, only an abort
   asked for (coll.h's hook, coll_comm_revoke, the caller). */
COLL_HOSTS_API void coll_hosts_abort(coll_hosts *h, int code)
{
    int i;
    if (code >= 0) code = COLL_ERR_ABORTED;
    if (!h->failed) h->failed = code;
    if (h->tcp_made) coll_tcp_abort(&h->t, h->failed);
    if (h->shm_up) coll_shm_abort(&h->s, h->failed);
    for (i = 0; i < COLL_HOSTS_HANDLES + 2; i++)
        if (h->slot[i].state == 1) {
            h->slot[i].state = 2;
            h->slot[i].result = h->failed;
            h->pending[h->slot[i].via]--;
        }
}

static int coll_hosts__child_post(coll_hosts *h, int via, int is_send, int peer, void *buf,
                                  size_t bytes, int *ch)
{
    if (via == COLL_HOSTS__SHM)
        return is_send ? coll_shm_isend(&h->s, peer, buf, bytes, ch)
                       : coll_shm_irecv(&h->s, peer, buf, bytes, ch);
    return is_send ? coll_tcp_isend(&h->t, peer, buf, bytes, ch)
                   : coll_tcp_irecv(&h->t, peer, buf, bytes, ch);
}

/* A wait in the child, over whichever port carries the channel. */
static int coll_hosts__child_wait(coll_hosts *h, int via, int ch, int block)
{
    if (via == COLL_HOSTS__TCP) return coll_tcp_wait(&h->t, ch, block);
    return coll_shm_wait(&h->s, ch, block);
}

/* A child's call failed with `code`. In epoch 0 that breaks the whole
   port (both children, every handle); after renew the failure is the
   call's alone, as it is in the child. */
static void coll_hosts__broke(coll_hosts *h, int code)
{
    if (h->epoch == 0) coll_hosts_abort(h, code);
}

/* Ends child transfer `ch` now, in a renewed epoch, without failing the
   child's epoch: the child's own blocking wait under a deadline of 1 ms,
   which a renewed epoch makes the transfer's failure alone (the child
   leaves its link or ring in step), then the deadline back. What it
   returns: the transfer's result - COLL_OK if it finished meanwhile. Only
   for a failure path: the composite's deadline has passed with both
   children busy, and the child (TCP) has no deadline of its own in a
   poll. The shm child ends every transfer it still has with the code, as
   its own deadline does. */
static int coll_hosts__give_up(coll_hosts *h, int via, int ch)
{
    int rc;
    if (via == COLL_HOSTS__SHM) {
        h->s.timeout_ms = 1;
        rc = coll_shm_wait(&h->s, ch, 1);
        h->s.timeout_ms = h->timeout_ms;
    } else {
        coll_tcp_set_timeout(&h->t, 1);
        rc = coll_tcp_wait(&h->t, ch, 1);
        coll_tcp_set_timeout(&h->t, h->timeout_ms);
    }
    return rc == COLL_AGAIN ? COLL_ERR_TIMEOUT : rc;
}

/* Post into a free slot of [lo, hi), *at: 0, COLL_AGAIN (nothing
   posted), or an error. */
static int coll_hosts__post(coll_hosts *h, int is_send, int peer, const void *buf, size_t bytes,
                            int lo, int hi, int *at)
{
    int cp, via, i, rc, ch = -1;
    if (h->failed) return h->failed;
    if ((via = coll_hosts__route(h, peer, &cp)) < 0 || !buf || bytes == 0)
        return COLL_ERR_INVAL;
    for (i = lo; i < hi && h->slot[i].state; i++)
        ;
    if (i == hi) return COLL_AGAIN;
    rc = coll_hosts__child_post(h, via, is_send, cp, (void *)buf, bytes, &ch);
    if (rc == COLL_AGAIN) return rc;
    if (rc) { coll_hosts__broke(h, rc); return rc; }
    h->slot[i].state = 1;
    h->slot[i].via = via;
    h->slot[i].child = ch;
    h->slot[i].result = COLL_AGAIN;
    h->pending[via]++;
    coll_hosts__count(h, via, is_send, bytes);
    *at = i;
    return COLL_OK;
}

/* One poll of slot i's transfer: 1 if it finished (result kept, an
   error too), 0 if not, or the error that broke the port (epoch 0: every
   failure does; after renew a failure is its transfer's result alone). */
static int coll_hosts__poll(coll_hosts *h, int i, int block)
{
    coll_hosts__slot *q = &h->slot[i];
    int rc;
    if (q->state != 1) return 1;
    rc = coll_hosts__child_wait(h, q->via, q->child, block);
    if (rc == COLL_AGAIN) return 0;
    q->state = 2;
    q->result = rc;
    h->pending[q->via]--;
    if (rc < 0 && h->epoch == 0) { coll_hosts_abort(h, rc); return rc; }
    return 1;
}

/* Slot i given up: a transfer still pending ends in its child first (no
   byte of it lands later), then the slot is free. */
static void coll_hosts__drop(coll_hosts *h, int i)
{
    coll_hosts__slot *q = &h->slot[i];
    if (q->state == 1) {
        (void)coll_hosts__give_up(h, q->via, q->child);
        h->pending[q->via]--;
    }
    q->state = 0;
}

/* Polls every pending transfer of child `via`: how many finished, or the
   error that broke the port. */
static int coll_hosts__poll_child(coll_hosts *h, int via)
{
    int i, n = 0, rc;
    for (i = 0; i < COLL_HOSTS_HANDLES + 2 && h->pending[via]; i++)
        if (h->slot[i].state == 1 && h->slot[i].via == via) {
            if ((rc = coll_hosts__poll(h, i, 0)) < 0) return rc;
            n += rc;
        }
    return n;
}

static long long coll_hosts__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Progress either child can show without a completion: TCP bytes moved,
   the shm port's last progress stamp. */
static unsigned long long coll_hosts__mark(const coll_hosts *h)
{
    return h->t.bytes_sent + h->t.bytes_received + (unsigned long long)h->s.last_ms;
}

/* Waits for slots idx[0..n): each is then in state 2 (COLL_OK), or the
   port broke (its code; epoch 0, or an abort). Blocks in the child when
   nothing of the other is pending; else polls both, yields, naps. */
static int coll_hosts__wait_all(coll_hosts *h, const int *idx, int n)
{
    long long idle = -1;
    unsigned long long mark = coll_hosts__mark(h);
    int spins = 0, nap = 1, counted = 0;
    for (;;) {
        int i, open = -1, moved = 0, rc;
        for (i = 0; i < n; i++)
            if (h->slot[idx[i]].state == 1) { open = idx[i]; break; }
        if (open < 0) return COLL_OK;
        if (h->failed) return h->failed;
        if (!h->pending[1 - h->slot[open].via]) {
            /* Only one child has work: its own blocking wait, deadline and
               wake-ups. */
            if ((rc = coll_hosts__poll(h, open, 1)) < 0) return rc;
            continue;
        }
        if (!counted) { counted = 1; h->both++; }
        for (i = 0; i < 2; i++) {
            if ((rc = coll_hosts__poll_child(h, i)) < 0) return rc;
            moved += rc;
        }
        if (coll_hosts__mark(h) != mark) { mark = coll_hosts__mark(h); moved = 1; }
        if (moved) { spins = 0; nap = 1; idle = -1; continue; }
        if (spins < 64) { spins++; sched_yield(); continue; }
        {
            long long now = coll_hosts__now_ms();
            struct timespec ts;
            if (idle < 0) idle = now;
            if (now - idle >= (long long)h->timeout_ms) {
                if (h->epoch == 0) {
                    coll_hosts_abort(h, COLL_ERR_TIMEOUT);
                    return h->failed;
                }
                /* a renewed epoch: the deadline ends the transfers waited
                   for, and nothing else */
                for (i = 0; i < n; i++) {
                    coll_hosts__slot *q = &h->slot[idx[i]];
                    if (q->state != 1) continue;
                    q->result = coll_hosts__give_up(h, q->via, q->child);
                    q->state = 2;
                    h->pending[q->via]--;
                }
                continue;
            }
            ts.tv_sec = 0;
            ts.tv_nsec = (long)nap * 1000;
            nanosleep(&ts, NULL);
            if (nap < COLL_HOSTS_NAP_US) nap *= 2;
        }
    }
}

static int coll_hosts__take(coll_hosts *h, int i)
{
    int rc = h->slot[i].result;
    h->slot[i].state = 0;
    return rc;
}

COLL_HOSTS_API int coll_hosts_isend(void *ctx, int peer, const void *buf, size_t bytes,
                                    int *handle)
{
    return coll_hosts__post((coll_hosts *)ctx, 1, peer, buf, bytes, 0, COLL_HOSTS_HANDLES, handle);
}

COLL_HOSTS_API int coll_hosts_irecv(void *ctx, int peer, void *buf, size_t bytes, int *handle)
{
    return coll_hosts__post((coll_hosts *)ctx, 0, peer, buf, bytes, 0, COLL_HOSTS_HANDLES, handle);
}

COLL_HOSTS_API int coll_hosts_wait(void *ctx, int handle, int block)
{
    coll_hosts *h = (coll_hosts *)ctx;
    coll_hosts__slot *q;
    int rc;
    if (handle < 0 || handle >= COLL_HOSTS_HANDLES || h->slot[handle].state == 0)
        return COLL_ERR_INVAL;
    q = &h->slot[handle];
    if (q->state == 1 && !block) {
        if ((rc = coll_hosts__poll(h, handle, 0)) < 0) return coll_hosts__take(h, handle);
        /* Keep the other child moving too: its transfers advance only
           inside its own calls. */
        if (q->state == 1 && h->pending[1 - q->via] &&
            coll_hosts__poll_child(h, 1 - q->via) < 0)
            return coll_hosts__take(h, handle);
        if (q->state == 1) return COLL_AGAIN;
    }
    if (q->state == 1) (void)coll_hosts__wait_all(h, &handle, 1);
    return coll_hosts__take(h, handle);
}

/* A blocking transfer: straight to the child while the other has nothing
   pending (its fast path), else posted and waited for like the rest. */
static int coll_hosts__blocking(coll_hosts *h, int is_send, int peer, void *buf, size_t bytes)
{
    int cp, via, i, rc;
    if (h->failed) return h->failed;
    if ((via = coll_hosts__route(h, peer, &cp)) < 0 || !buf || bytes == 0)
        return COLL_ERR_INVAL;
    if (!h->pending[1 - via]) {
        coll_hosts__count(h, via, is_send, bytes);
        if (via == COLL_HOSTS__SHM)
            rc = is_send ? coll_shm_send(&h->s, cp, buf, bytes) : coll_shm_recv(&h->s, cp, buf, bytes);
        else
            rc = is_send ? coll_tcp_send(&h->t, cp, buf, bytes) : coll_tcp_recv(&h->t, cp, buf, bytes);
        if (rc < 0) coll_hosts__broke(h, rc);
        return rc;
    }
    while ((rc = coll_hosts__post(h, is_send, peer, buf, bytes, COLL_HOSTS_HANDLES + is_send,
                                  COLL_HOSTS_HANDLES + is_send + 1, &i)) == COLL_AGAIN) {
        /* the child's table is full of transfers still to finish */
        if ((rc = coll_hosts__poll_child(h, via)) < 0) return rc;
        if (rc == 0) sched_yield();
    }
    if (rc) return rc;
    rc = coll_hosts__wait_all(h, &i, 1);
    if (rc) { coll_hosts__drop(h, i); return rc; }
    return coll_hosts__take(h, i);
}

COLL_HOSTS_API int coll_hosts_send(void *ctx, int peer, const void *buf, size_t bytes)
{
    return coll_hosts__blocking((coll_hosts *)ctx, 1, peer, (void *)buf, bytes);
}

COLL_HOSTS_API int coll_hosts_recv(void *ctx, int peer, void *buf, size_t bytes)
{
    return coll_hosts__blocking((coll_hosts *)ctx, 0, peer, buf, bytes);
}

/* Both directions at once. Through one child with the other idle: the
   child's own sendrecv; else both posted and waited for together. */
COLL_HOSTS_API int coll_hosts_sendrecv(void *ctx, int to, const void *sbuf, size_t sbytes,
                                       int from, void *rbuf, size_t rbytes)
{
    coll_hosts *h = (coll_hosts *)ctx;
    int ct, cf, vt, vf, idx[2], n = 0, rc, i;
    if (h->failed) return h->failed;
    if (to < 0 || !sbytes) return from < 0 || !rbytes ? COLL_OK : coll_hosts_recv(h, from, rbuf, rbytes);
    if (from < 0 || !rbytes) return coll_hosts_send(h, to, sbuf, sbytes);
    if ((vt = coll_hosts__route(h, to, &ct)) < 0 || (vf = coll_hosts__route(h, from, &cf)) < 0 ||
        !sbuf || !rbuf)
        return COLL_ERR_INVAL;
    if (vt == vf && !h->pending[1 - vt]) {
        coll_hosts__count(h, vt, 1, sbytes);
        coll_hosts__count(h, vt, 0, rbytes);
        rc = vt == COLL_HOSTS__SHM ? coll_shm_sendrecv(&h->s, ct, sbuf, sbytes, cf, rbuf, rbytes)
                                   : coll_tcp_sendrecv(&h->t, ct, sbuf, sbytes, cf, rbuf, rbytes);
        if (rc < 0) coll_hosts__broke(h, rc);
        return rc;
    }
    /* the receive first, so that a rendezvous send of the peer finds it */
    for (i = 0; i < 2; i++) {
        int is_send = i == 1, k = -1, v = is_send ? vt : vf;
        while ((rc = coll_hosts__post(h, is_send, is_send ? to : from,
                                      is_send ? sbuf : rbuf, is_send ? sbytes : rbytes,
                                      COLL_HOSTS_HANDLES + is_send,
                                      COLL_HOSTS_HANDLES + is_send + 1, &k)) == COLL_AGAIN) {
            if ((rc = coll_hosts__poll_child(h, v)) < 0) break;
            if (rc == 0) sched_yield();
        }
        if (rc < 0) {
            /* epoch 0: the port is broken now (post and poll abort it);
               after renew the receive already posted ends in its child */
            for (i = 0; i < n; i++) coll_hosts__drop(h, idx[i]);
            return rc;
        }
        idx[n++] = k;
    }
    rc = coll_hosts__wait_all(h, idx, n);
    for (i = 0; i < n; i++) {
        int r = h->slot[idx[i]].state == 2 ? h->slot[idx[i]].result : rc;
        coll_hosts__drop(h, idx[i]);
        if (!rc) rc = r;
    }
    return rc;
}

static void coll_hosts__abort_hook(void *ctx, int code)
{
    coll_hosts_abort((coll_hosts *)ctx, code);
}

static int coll_hosts__attach(void *ctx)
{
    return ((coll_hosts *)ctx)->attached++;
}

/* coll_port.renew: both children start epoch `epoch` (the TCP one always;
   the shm one where this host has a group), then the composite: every
   handle of an earlier epoch is void (the children have voided theirs,
   and coll.h has let go of every one an error left behind), and the
   epoch's failure is forgotten. Local: no peer is waited for. 0;
   COLL_ERR_INVAL for an epoch that is not later than ours; after close
   (or a failed init) the code it left. A child that refuses leaves the
   port failed with its code (the children are never out of step with us
   otherwise: every renew of theirs comes from here). */
COLL_HOSTS_API int coll_hosts_renew(void *ctx, uint32_t epoch)
{
    coll_hosts *h = (coll_hosts *)ctx;
    coll_port cp;
    int i, rc = COLL_OK;
    if (!h->tcp_made) return h->failed ? h->failed : COLL_ERR_ABORTED;
    if (epoch <= h->epoch) return COLL_ERR_INVAL;
    cp = coll_tcp_port(&h->t);
    rc = cp.renew ? cp.renew(cp.ctx, epoch) : COLL_ERR_NOSYS;
    if (rc != COLL_OK) return h->failed = rc;       /* nothing moved yet */
    if (h->shm_up) {
        cp = coll_shm_port(&h->s);
        rc = cp.renew ? cp.renew(cp.ctx, epoch) : COLL_ERR_NOSYS;
    }
    for (i = 0; i < COLL_HOSTS_HANDLES + 2; i++) h->slot[i].state = 0;
    h->pending[0] = h->pending[1] = 0;
    h->epoch = epoch;
    h->failed = rc;
    return rc;
}

/* coll_port.missing: the child that reaches `peer` follows its own chain
   of waits from the peer's number there, and its answer comes back as a
   rank of the job. Only that child's waits are seen: a chain that crosses
   into the other child (a rank of this host waiting for one on another
   host, say) ends at the last rank the child knows of. An answer out of
   the child's range, or a child without missing, gives `peer`. */
COLL_HOSTS_API int coll_hosts_missing(void *ctx, int peer)
{
    coll_hosts *h = (coll_hosts *)ctx;
    coll_port cp;
    int via, cpeer = -1, m, r;
    if ((via = coll_hosts__route(h, peer, &cpeer)) < 0) return peer;
    cp = via == COLL_HOSTS__SHM ? coll_shm_port(&h->s) : coll_tcp_port(&h->t);
    if (!cp.missing) return peer;
    m = cp.missing(cp.ctx, cpeer);
    if (via == COLL_HOSTS__TCP) return m >= 0 && m < h->nranks ? m : peer;
    if (m < 0 || m >= h->local_size) return peer;
    for (r = 0; r < h->nranks; r++)           /* this host's local rank m */
        if (h->host_of[r] == h->host && h->local_of[r] == m) return r;
    return peer;
}

COLL_HOSTS_API coll_port coll_hosts_port(coll_hosts *h)
{
    coll_port p;
    memset(&p, 0, sizeof p);
    p.ctx = h;
    p.send = coll_hosts_send;
    p.recv = coll_hosts_recv;
    p.sendrecv = coll_hosts_sendrecv;
    p.isend = coll_hosts_isend;
    p.irecv = coll_hosts_irecv;
    p.wait = coll_hosts_wait;
    p.abort = coll_hosts__abort_hook;
    p.attach = coll_hosts__attach;
    p.missing = coll_hosts_missing;
    p.renew = coll_hosts_renew;
    return p;
}

COLL_HOSTS_API void coll_hosts_close(coll_hosts *h)
{
    if (h->shm_up) { coll_shm_close(&h->s); h->shm_up = 0; }
    if (h->tcp_made) { coll_tcp_close(&h->t); h->tcp_made = 0; }
    if (!h->failed) h->failed = COLL_ERR_ABORTED;
}

#endif /* COLL_HOSTS_IMPLEMENTED */
#endif /* COLL_HOSTS_IMPLEMENTATION */

/* MIT licence: see the end of coll.h. */
