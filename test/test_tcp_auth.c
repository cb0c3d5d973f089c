/* test_tcp_auth.c - the TCP port's rendezvous against strangers and hostile
   peers (ports/coll_tcp.h, "THE JOB TOKEN").

   Every rank, intruder and impostor is a fork()ed process on 127.0.0.1, at
   a port the kernel just handed out. Each process sends back what happened
   to it (the code init returned, how long it took, how many connections it
   dropped, whether its all-reduce results match a plain-loop reference, and
   what an intruder managed to read); the parent checks those. What is
   tested:
     - SipHash-2-4 against the reference vectors;
     - intruders without the token connect before the real rank 1 and
       claim rank 1 (one answers with another job's token, one replays the
       master's own MAC, one goes silent): the job succeeds with the real
       ranks, the intruders read nothing past the master's challenge, and
       nobody ever dials the address they advertised;
     - an impostor holding MASTER_PORT first (wrong MAC, or another protocol
       version): the workers return COLL_TCP_ERR_AUTH / COLL_TCP_ERR_VERSION
       at once and never send their own proof;
     - noise during the rendezvous, at the master and at a worker's own
       listener: more idle connections than the listener serves at once,
       junk, a truncated hello, an unauthenticated hello with another
       WORLD_SIZE, a peer of protocol version 1 and one of version 99: the
       job still succeeds, each stranger is dropped, and the old-version
       ones are told our version;
     - ranks with different tokens; two authenticated ranks claiming one
       rank (COLL_ERR_MISMATCH); no token at all (COLL_ERR_INVAL), an empty
       one, and the COLL_TCP_INSECURE=1 opt-in;
     - what the token does not cover: a relay between rank 1 and the master
       that flips a bit or inserts a byte after the handshake. With
       coll_set_checks(COLL_CHECK_CALLS | COLL_CHECK_CRC) every rank must
       fail that call (never COLL_OK with wrong data), in the same call,
       within its deadline.
   Ends with "tcp-auth: N passed, N failed"; TCP_AUTH_VERBOSE=1 also shows
   the port's log lines. Every wait is bounded: each child has an alarm,
   each loop a deadline. */
#define _POSIX_C_SOURCE 200809L
#define COLL_IMPLEMENTATION
#include "coll.h"

/* The port's log lines come here: counted, searched for what the test
   expects to be said, and shown on stderr only with TCP_AUTH_VERBOSE=1. */
static void test_log(const char *line);
#define COLL_TCP_LOG(t, line) ((void)(t), test_log(line))
#define COLL_TCP_IMPLEMENTATION
#include "ports/coll_tcp.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "test_tally.h"

static const char *const TOKEN = "6b1f0c9e2d7a45b8a3e0f1c2d3b4a596";

enum { SAID_TOKEN = 1, SAID_VERSION = 2, SAID_SILENT = 4, SAID_NOT_COLL = 8, SAID_NO_TOKEN = 16 };
static unsigned g_logged, g_said;            /* this process's log lines    */

static void test_log(const char *line)
{
    const char *v = getenv("TCP_AUTH_VERBOSE");
    g_logged++;
    if (strstr(line, "failed the token check")) g_said |= SAID_TOKEN;
    if (strstr(line, "protocol version 99") || strstr(line, "protocol version 1 ")) g_said |= SAID_VERSION;
    if (strstr(line, "did not authenticate within") || strstr(line, "said nothing, for one waiting"))
        g_said |= SAID_SILENT;
    if (strstr(line, "not a coll rank")) g_said |= SAID_NOT_COLL;
    if (strstr(line, "no job token")) g_said |= SAID_NO_TOKEN;
    if (v && strcmp(v, "1") == 0) fputs(line, stderr);
}

/* ---- what a child reports ---------------------------------------------- */

typedef struct outcome {
    int rc;                    /* init's code, or the intruder's own summary */
    int data_ok;               /* every all-reduce matched the reference     */
    unsigned dropped;          /* t.dropped after init                       */
    long long ms;              /* how long init took                         */
    long got;                  /* bytes an intruder read past the challenge  */
    long dialled;              /* connections to an intruder's own listener  */
    long ended;                /* intruder connections that were hung up on  */
    unsigned logged, said;     /* its log lines, and SAID_* seen in them     */
    int exited;                /* set by the parent: the child reported      */
} outcome;

#define CHILD_ALARM_S 20                 /* a backstop on every child */
#include "test_children.h"

/* ---- a real rank --------------------------------------------------------- */

typedef struct job {
    int port, world;
    unsigned timeout_ms;
    const char *token;         /* NULL: from the environment                 */
    const char *token_of[8];   /* per rank, overriding `token` when set      */
} job;

static long long input(int rank, size_t i)
{
    return (long long)((rank * 31 + (long long)i * 7) % 23) - 11;
}

/* All-reduces by three algorithms (so links between every pair are used)
   and compares every element with a plain loop over the ranks' inputs. */
static int allreduce_checked(coll_tcp *t)
{
    static const coll_algo algos[] = { COLL_ALGO_RING, COLL_ALGO_RECURSIVE_DOUBLING, COLL_ALGO_NAIVE };
    static unsigned char scratch[1 << 16];
    enum { N = 4099 };
    static int32_t buf[N];
    coll_comm c;
    coll_port port = coll_tcp_port(t);
    size_t a, i;
    int ok = coll_init(&c, t->rank, t->nranks, &port, scratch, sizeof scratch) == COLL_OK, r;
    for (a = 0; ok && a < sizeof algos / sizeof *algos; a++) {
        int rc;
        for (i = 0; i < N; i++) buf[i] = (int32_t)input(t->rank, i + a);
        rc = coll_allreduce(&c, buf, buf, N, COLL_INT32, COLL_SUM, algos[a]);
        if (rc == COLL_ERR_NOSYS) continue;
        if (rc != COLL_OK) { ok = 0; break; }
        for (i = 0; i < N; i++) {
            long long want = 0;
            for (r = 0; r < t->nranks; r++) want += input(r, i + a);
            if (buf[i] != (int32_t)want) { ok = 0; break; }
        }
    }
    return ok;
}

static outcome real_rank(int rank, void *arg)
{
    static coll_tcp t;
    const job *j = (const job *)arg;
    const char *token = j->token_of[rank] ? j->token_of[rank] : j->token;
    outcome o;
    long long t0 = coll_tcp__now_ms();
    memset(&o, 0, sizeof o);
    o.rc = coll_tcp_init_token(&t, "127.0.0.1", j->port, rank, j->world, j->timeout_ms, token);
    o.ms = coll_tcp__now_ms() - t0;
    o.dropped = t.dropped;
    if (o.rc == COLL_OK) o.data_ok = allreduce_checked(&t);
    coll_tcp_close(&t);
    return o;
}

/* Rank 1 twice: the second child of this function also claims rank 1. */
static outcome rank_one(int idx, void *arg)
{
    (void)idx;
    return real_rank(1, arg);
}

/* ---- raw protocol pieces for intruders and impostors --------------------- */

static int dial_raw(int port, long long deadline)
{
    struct sockaddr_storage a;
    int fd;
    loopback(&a, port);
    fd = coll_tcp__connect(&a, sizeof(struct sockaddr_in), deadline);
    return fd;
}

/* A hello as rank `rank` of `world` would send it, advertising `entry`. */
static void make_hello(unsigned char *h, int rank, int world, const unsigned char *entry)
{
    coll_tcp fake;
    memset(&fake, 0, sizeof fake);
    fake.nranks = world;
    coll_tcp__hello(&fake, h, rank);
    if (coll_tcp__nonce(h + 16)) memset(h + 16, 7, 16);
    if (entry) memcpy(h + 32, entry, COLL_TCP__ENTRY);
    else memset(h + 32, 0, COLL_TCP__ENTRY);
}

/* The MAC a process holding `token` would compute. */
static void mac_with(const char *token, char role, const unsigned char *hello,
                     const unsigned char *reply, unsigned char *out)
{
    coll_tcp fake;
    memset(&fake, 0, sizeof fake);
    coll_tcp__derive(&fake, token);
    coll_tcp__mac(&fake, role, hello, reply, out);
}

/* Reads until EOF/reset or the deadline; returns the byte count, and sets
   *ended when the other side hung up. */
static long drain(int fd, long long deadline, int *ended)
{
    unsigned char b[512];
    long n = 0;
    *ended = 0;
    for (;;) {
        ssize_t k;
        if (coll_tcp__poll1(fd, POLLIN, deadline)) return n;
        k = recv(fd, b, sizeof b, 0);
        if (k > 0) { n += k; continue; }
        if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        *ended = 1;
        return n;
    }
}

/* ---- scenario: intruders claim rank 1 before rank 1 comes --------------- */

typedef struct intrusion { int port, world, ready_fd; } intrusion;

/* mode 0: answers with another job's token; 1: sends the master's own MAC
   back as its proof; 2: says nothing after the challenge, so it is still
   pending when the real rank 1 registers. Each advertises
   a listener of its own and counts who dials it. */
static outcome intruder(int mode, void *arg)
{
    const intrusion *in = (const intrusion *)arg;
    unsigned char hello[COLL_TCP__HELLO], reply[COLL_TCP__REPLY], proof[COLL_TCP__TAG], entry[COLL_TCP__ENTRY];
    struct sockaddr_storage me;
    socklen_t melen = sizeof me;
    long long deadline = coll_tcp__now_ms() + 4000;
    outcome o;
    int fd, lfd, ended = 0;
    memset(&o, 0, sizeof o);
    loopback(&me, 0);
    lfd = coll_tcp__listen(&me, sizeof(struct sockaddr_in), 8);
    getsockname(lfd, (struct sockaddr *)&me, &melen);
    coll_tcp__put_addr(entry, &me);
    fd = dial_raw(in->port, deadline);
    if (fd < 0) { o.rc = 1; return o; }
    make_hello(hello, 1, in->world, entry);
    if (coll_tcp__write_all(fd, hello, sizeof hello, deadline) ||
        coll_tcp__read_all(fd, reply, sizeof reply, deadline)) { o.rc = 2; return o; }
    o.rc = coll_tcp__get32(reply) == COLL_TCP__MAGIC &&
           coll_tcp__get32(reply + 4) == COLL_TCP_VERSION ? 0 : 3;   /* 0: challenged */
    if (mode == 0) mac_with("another job's token", 'C', hello, reply, proof);
    if (mode == 1) memcpy(proof, reply + COLL_TCP__HEAD, COLL_TCP__TAG);
    if (mode != 2) (void)coll_tcp__write_all(fd, proof, sizeof proof, deadline);
    if (write(in->ready_fd, "r", 1) != 1) o.rc = 4;     /* now rank 1 may come */
    o.got = drain(fd, deadline, &ended);
    o.ended = ended;
    for (;;) {                               /* did anyone dial our address? */
        int c = accept(lfd, NULL, NULL);
        if (c < 0) break;
        o.dialled++;
        close(c);
    }
    close(fd); close(lfd);
    return o;
}

static void test_intruders_first(void)
{
    enum { WORLD = 3, NI = 3 };
    job j;
    intrusion in;
    child master, ranks[WORLD], intr[NI];
    outcome om, o[WORLD], oi[NI];
    int pfd[2], i, r, ready = 0;
    memset(&j, 0, sizeof j);
    j.port = coll_tcp_free_port(); j.world = WORLD; j.timeout_ms = 6000; j.token = TOKEN;
    if (pipe(pfd) < 0) exit(2);
    in.port = j.port; in.world = WORLD; in.ready_fd = pfd[1];
    master = spawn(real_rank, 0, &j);
    for (i = 0; i < NI; i++) intr[i] = spawn(intruder, i, &in);
    for (i = 0; i < NI; i++) ready += wait_ready(pfd[0], 5000);
    CHECK(ready == NI, "only %d of %d intruders were challenged by the master", ready, NI);
    for (r = 1; r < WORLD; r++) ranks[r] = spawn(real_rank, r, &j);
    om = reap(master);
    for (r = 1; r < WORLD; r++) o[r] = reap(ranks[r]);
    for (i = 0; i < NI; i++) oi[i] = reap(intr[i]);
    close(pfd[0]); close(pfd[1]);
    o[0] = om;
    for (r = 0; r < WORLD; r++) {
        CHECK(o[r].rc == COLL_OK, "intruders first: rank %d init %d", r, o[r].rc);
        CHECK(o[r].data_ok, "intruders first: rank %d all-reduce differs from the reference", r);
    }
    CHECK(om.dropped >= NI, "the master dropped %u connections, %d intruders came", om.dropped, NI);
    CHECK(om.logged >= om.dropped && (om.said & SAID_TOKEN),
          "intruders first: the master logged %u lines for %u drops, none about the token",
          om.logged, om.dropped);
    CHECK(om.ms < 3000, "intruders first: the rendezvous took %lld ms", om.ms);
    for (i = 0; i < NI; i++) {
        CHECK(oi[i].exited && oi[i].rc == 0, "intruder %d: not challenged (%d)", i, oi[i].rc);
        CHECK(oi[i].got == 0, "intruder %d read %ld bytes past the challenge", i, oi[i].got);
        CHECK(oi[i].ended, "intruder %d was not hung up on", i);
        CHECK(oi[i].dialled == 0, "intruder %d's advertised address was dialled %ld times", i, oi[i].dialled);
    }
}

/* ---- scenario: an impostor holds MASTER_PORT ----------------------------- */

typedef struct impostor_cfg { int port, world, ready_fd, version; } impostor_cfg;

/* Listens on the master's port first; answers each of world - 1 workers
   with a challenge it cannot make right (a random MAC, or another
   version), then counts what each sends back before hanging up. */
static outcome impostor(int idx, void *arg)
{
    const impostor_cfg *im = (const impostor_cfg *)arg;
    struct sockaddr_storage a;
    long long deadline = coll_tcp__now_ms() + 5000;
    outcome o;
    int lfd, served;
    (void)idx;
    memset(&o, 0, sizeof o);
    loopback(&a, im->port);
    lfd = coll_tcp__listen(&a, sizeof(struct sockaddr_in), 8);
    if (lfd < 0) { o.rc = 1; return o; }
    if (write(im->ready_fd, "r", 1) != 1) o.rc = 4;
    for (served = 0; served < im->world - 1; served++) {
        unsigned char hello[COLL_TCP__HELLO], reply[COLL_TCP__REPLY];
        int fd = -1, ended = 0;
        while (fd < 0 && coll_tcp__left(deadline) > 0) {
            if (coll_tcp__poll1(lfd, POLLIN, deadline)) break;
            fd = accept(lfd, NULL, NULL);
        }
        if (fd < 0) { o.rc = 2; break; }
        coll_tcp__tune(fd);
        if (coll_tcp__read_all(fd, hello, sizeof hello, deadline)) { o.rc = 3; close(fd); break; }
        coll_tcp__put32(reply, COLL_TCP__MAGIC);
        coll_tcp__put32(reply + 4, (unsigned long)im->version);
        coll_tcp__put32(reply + 8, 0);
        coll_tcp__put32(reply + 12, (unsigned long)im->world);
        if (coll_tcp__nonce(reply + 16) || coll_tcp__nonce(reply + 24)) o.rc = 5;   /* nonce + a random MAC */
        (void)coll_tcp__write_all(fd, reply, sizeof reply, deadline);
        o.got += drain(fd, deadline, &ended);    /* a proof would land here */
        o.ended += ended;
        close(fd);
    }
    close(lfd);
    return o;
}

static void test_impostor_master(int version, int want_rc, const char *what)
{
    enum { WORLD = 3 };
    job j;
    impostor_cfg im;
    child imp, ranks[WORLD];
    outcome oi, o[WORLD];
    int pfd[2], r;
    memset(&j, 0, sizeof j);
    j.port = coll_tcp_free_port(); j.world = WORLD; j.timeout_ms = 3000; j.token = TOKEN;
    if (pipe(pfd) < 0) exit(2);
    im.port = j.port; im.world = WORLD; im.ready_fd = pfd[1]; im.version = version;
    imp = spawn(impostor, 0, &im);
    CHECK(wait_ready(pfd[0], 5000), "%s: the impostor could not take the port", what);
    for (r = 1; r < WORLD; r++) ranks[r] = spawn(real_rank, r, &j);
    for (r = 1; r < WORLD; r++) o[r] = reap(ranks[r]);
    /* The real master comes too late: the port is taken, or the workers
       have gone. It must fail, not hang. */
    j.timeout_ms = 700;
    ranks[0] = spawn(real_rank, 0, &j);
    o[0] = reap(ranks[0]);
    oi = reap(imp);
    close(pfd[0]); close(pfd[1]);
    for (r = 1; r < WORLD; r++) {
        CHECK(o[r].rc == want_rc, "%s: worker %d returned %d, want %d", what, r, o[r].rc, want_rc);
        CHECK(o[r].ms < 1500, "%s: worker %d took %lld ms to refuse the impostor", what, r, o[r].ms);
        CHECK(o[r].said & (want_rc == COLL_TCP_ERR_VERSION ? SAID_VERSION : SAID_TOKEN),
              "%s: worker %d did not say why it refused", what, r);
    }
    CHECK(o[0].exited && o[0].rc != COLL_OK, "%s: the late master returned %d", what, o[0].rc);
    CHECK(oi.exited && oi.rc == 0, "%s: the impostor's own run failed (%d)", what, oi.rc);
    CHECK(oi.got == 0, "%s: the workers sent the impostor %ld bytes after its challenge", what, oi.got);
    CHECK(oi.ended == WORLD - 1, "%s: %ld of %d workers hung up on the impostor", what, oi.ended, WORLD - 1);
}

/* ---- scenario: noise at the master and at a worker's listener ----------- */

typedef struct noise_cfg { int port, world, ready_fd; pid_t worker; } noise_cfg;

enum { N_IDLE = COLL_TCP_MAX_PENDING + 4 };

typedef struct noisy { int fd, kind; long got; int ended; unsigned char hello[COLL_TCP__HELLO], reply[COLL_TCP__REPLY]; } noisy;
enum { K_IDLE, K_JUNK, K_TRUNC, K_WORLD9, K_WRONGTOKEN, K_V1, K_V99 };

static int noisy_open(noisy *c, int port, int kind, int world, long long deadline)
{
    unsigned char b[COLL_TCP__HELLO];
    memset(c, 0, sizeof *c);
    c->kind = kind;
    c->fd = dial_raw(port, deadline);
    if (c->fd < 0) return 0;
    switch (kind) {
    case K_JUNK:
        memcpy(b, "GET / HTTP/1.0\r\n\r\n", 18);
        (void)coll_tcp__write_all(c->fd, b, 18, deadline);
        break;
    case K_TRUNC:                           /* half a hello, then gone */
        make_hello(b, 1, world, NULL);
        (void)coll_tcp__write_all(c->fd, b, 20, deadline);
        shutdown(c->fd, SHUT_WR);
        break;
    case K_WORLD9:                          /* unauthenticated, another world */
        make_hello(c->hello, 2, 9, NULL);
        (void)coll_tcp__write_all(c->fd, c->hello, sizeof c->hello, deadline);
        break;
    case K_WRONGTOKEN:                      /* claims the rank not come yet */
        make_hello(c->hello, world - 1, world, NULL);
        (void)coll_tcp__write_all(c->fd, c->hello, sizeof c->hello, deadline);
        break;
    case K_V1:                              /* the old 32-byte registration */
        coll_tcp__put32(b, COLL_TCP__MAGIC);
        coll_tcp__put32(b + 4, 1);
        coll_tcp__put32(b + 8, (unsigned long)world);
        memset(b + 12, 0, 20);
        (void)coll_tcp__write_all(c->fd, b, 32, deadline);
        break;
    case K_V99:
        make_hello(b, 1, world, NULL);
        coll_tcp__put32(b + 4, 99);
        (void)coll_tcp__write_all(c->fd, b, sizeof b, deadline);
        break;
    default: break;
    }
    return 1;
}

/* Serves every noisy connection until each is hung up on or the deadline
   (or, with until_proved, until every wrong-token one has answered its
   challenge - with another job's MAC). */
static void noisy_run(noisy *c, int n, long long deadline, int until_proved)
{
    struct pollfd p[64];
    int i, open_n = 0;
    for (i = 0; i < n; i++) open_n += !c[i].ended;
    while (open_n > 0 && coll_tcp__left(deadline) > 0) {
        int m = 0, waiting = 0;
        for (i = 0; i < n; i++)
            waiting += c[i].kind == K_WRONGTOKEN && !c[i].ended && c[i].got < COLL_TCP__REPLY;
        if (until_proved && !waiting) return;
        for (i = 0; i < n; i++) {
            if (c[i].ended || c[i].fd < 0) continue;
            p[m].fd = c[i].fd; p[m].events = POLLIN; p[m].revents = 0; m++;
        }
        if (poll(p, (nfds_t)m, coll_tcp__left(deadline)) <= 0) break;
        for (i = 0; i < n; i++) {
            unsigned char b[256];
            ssize_t k;
            if (c[i].ended || c[i].fd < 0) continue;
            k = recv(c[i].fd, b, sizeof b, MSG_DONTWAIT);
            if (k < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (k <= 0) { c[i].ended = 1; open_n--; continue; }
            if (c[i].got < COLL_TCP__REPLY)
                memcpy(c[i].reply + c[i].got, b,
                       (size_t)k < (size_t)(COLL_TCP__REPLY - c[i].got) ? (size_t)k : (size_t)(COLL_TCP__REPLY - c[i].got));
            if (c[i].kind == K_WRONGTOKEN && c[i].got < COLL_TCP__REPLY && c[i].got + k >= COLL_TCP__REPLY) {
                unsigned char proof[COLL_TCP__TAG];
                mac_with("another job's token", 'C', c[i].hello, c[i].reply, proof);
                (void)coll_tcp__write_all(c[i].fd, proof, sizeof proof, deadline);
            }
            c[i].got += k;
        }
    }
}

/* The noise process: strangers at the master, then at rank 1's own
   listener, then "ready" so the last rank may come; then it waits to be
   hung up on. Reports in `got` the bytes the strangers read beyond what
   each kind should get, in `ended` how many were hung up on, in `dialled`
   how many connections it made. */
static outcome noise(int idx, void *arg)
{
    const noise_cfg *nc = (const noise_cfg *)arg;
    static const int kinds[] = { K_JUNK, K_TRUNC, K_WORLD9, K_WRONGTOKEN, K_V1, K_V99 };
    noisy c[64];
    long long deadline = coll_tcp__now_ms() + 8000;
    outcome o;
    int n = 0, i, wport = 0, tries;
    (void)idx;
    memset(&o, 0, sizeof o);
    /* The talkers first, served until the wrong-token one has answered its
       challenge; then more idle ones than there are slots (a connect may
       then wait a while in a full backlog - nobody else is waiting on us). */
    for (i = 0; i < (int)(sizeof kinds / sizeof *kinds); i++)
        n += noisy_open(&c[n], nc->port, kinds[i], nc->world, deadline);
    noisy_run(c, n, coll_tcp__now_ms() + 3000, 1);
    for (i = 0; i < N_IDLE; i++) n += noisy_open(&c[n], nc->port, K_IDLE, nc->world, deadline);
    for (tries = 0; !wport && tries < 300; tries++) {
        wport = listener_of(nc->worker);
        if (!wport) sleep_ms(10);
    }
    if (!wport) o.rc = 1;
    else {
        n += noisy_open(&c[n], wport, K_IDLE, nc->world, deadline);
        n += noisy_open(&c[n], wport, K_JUNK, nc->world, deadline);
        n += noisy_open(&c[n], wport, K_WRONGTOKEN, nc->world, deadline);
        n += noisy_open(&c[n], wport, K_V99, nc->world, deadline);
    }
    sleep_ms(50);
    if (write(nc->ready_fd, "r", 1) != 1) o.rc = 4;
    noisy_run(c, n, deadline, 0);
    o.dialled = n;
    for (i = 0; i < n; i++) {
        /* a silent one hears "coll" + version as it is dropped, no more */
        long allowed = c[i].kind == K_WORLD9 || c[i].kind == K_WRONGTOKEN ? COLL_TCP__REPLY
                     : c[i].kind == K_V1 || c[i].kind == K_V99 || c[i].kind == K_IDLE ? 8 : 0;
        if (c[i].got > allowed) o.got += c[i].got - allowed;
        if (c[i].kind == K_IDLE && c[i].got > 0 &&
            (c[i].got != 8 || coll_tcp__get32(c[i].reply) != COLL_TCP__MAGIC))
            o.got += c[i].got;                /* anything but our header */
        if ((c[i].kind == K_V1 || c[i].kind == K_V99) &&
            (c[i].got != 8 || coll_tcp__get32(c[i].reply) != COLL_TCP__MAGIC ||
             coll_tcp__get32(c[i].reply + 4) != COLL_TCP_VERSION))
            o.rc = 2;                       /* not told our version */
        o.ended += c[i].ended;
        close(c[i].fd);
    }
    return o;
}

static void test_noise(void)
{
    enum { WORLD = 4 };
    job j;
    noise_cfg nc;
    child ranks[WORLD], nz;
    outcome o[WORLD], on;
    int pfd[2], r;
    long long t0;
    memset(&j, 0, sizeof j);
    j.port = coll_tcp_free_port(); j.world = WORLD; j.timeout_ms = 8000; j.token = TOKEN;
    if (pipe(pfd) < 0) exit(2);
    t0 = coll_tcp__now_ms();
    for (r = 0; r < WORLD - 1; r++) ranks[r] = spawn(real_rank, r, &j);
    nc.port = j.port; nc.world = WORLD; nc.ready_fd = pfd[1]; nc.worker = ranks[1].pid;
    nz = spawn(noise, 0, &nc);
    CHECK(wait_ready(pfd[0], 8000), "noise: the strangers never got going");
    ranks[WORLD - 1] = spawn(real_rank, WORLD - 1, &j);
    for (r = 0; r < WORLD; r++) o[r] = reap(ranks[r]);
    on = reap(nz);
    close(pfd[0]); close(pfd[1]);
    for (r = 0; r < WORLD; r++) {
        CHECK(o[r].rc == COLL_OK, "noise: rank %d init %d", r, o[r].rc);
        CHECK(o[r].data_ok, "noise: rank %d all-reduce differs from the reference", r);
    }
    CHECK(coll_tcp__now_ms() - t0 < 6000, "noise: the job took %lld ms", coll_tcp__now_ms() - t0);
    /* 20 idle + 6 others at the master: those dealt with before the job
       was complete are counted; the rest die with the listener. */
    CHECK(o[0].dropped >= COLL_TCP_MAX_PENDING, "noise: the master dropped only %u strangers", o[0].dropped);
    CHECK(o[1].dropped >= 3, "noise: rank 1's listener dropped only %u strangers", o[1].dropped);
    CHECK(o[0].logged >= o[0].dropped && o[1].logged >= o[1].dropped,
          "noise: %u and %u lines logged for %u and %u drops", o[0].logged, o[1].logged,
          o[0].dropped, o[1].dropped);
    CHECK((o[0].said & (SAID_TOKEN | SAID_VERSION | SAID_SILENT | SAID_NOT_COLL)) ==
          (SAID_TOKEN | SAID_VERSION | SAID_SILENT | SAID_NOT_COLL),
          "noise: the master's log lacks a reason (seen: %#x)", o[0].said);
    CHECK(on.exited && on.rc == 0, "noise: %s", on.rc == 1 ? "rank 1's listener not found" :
          on.rc == 2 ? "an old-version peer was not told our version" : "the noise process failed");
    CHECK(on.got == 0, "noise: strangers read %ld bytes they should not have", on.got);
    CHECK(on.ended == on.dialled, "noise: %ld of %ld strangers were hung up on", on.ended, on.dialled);
}

/* ---- scenario: tokens disagree; one rank claimed twice ------------------ */

static void test_other_token(void)
{
    job j;
    child c0, c1;
    outcome o0, o1;
    memset(&j, 0, sizeof j);
    j.port = coll_tcp_free_port(); j.world = 2; j.timeout_ms = 800; j.token = TOKEN;
    j.token_of[1] = "a different job";
    c0 = spawn(real_rank, 0, &j);
    c1 = spawn(real_rank, 1, &j);
    o0 = reap(c0); o1 = reap(c1);
    CHECK(o1.rc == COLL_TCP_ERR_AUTH, "another token: rank 1 returned %d, want COLL_TCP_ERR_AUTH", o1.rc);
    CHECK(o1.ms < 700, "another token: rank 1 took %lld ms to refuse", o1.ms);
    CHECK(o0.rc == COLL_ERR_TIMEOUT, "another token: the master returned %d, want TIMEOUT", o0.rc);
    CHECK(o0.dropped >= 1, "another token: the master dropped nobody");
}

static void test_duplicate_rank(void)
{
    job j;
    child c0, c1, c1b;
    outcome o0, o1, o1b;
    memset(&j, 0, sizeof j);
    j.port = coll_tcp_free_port(); j.world = 3; j.timeout_ms = 2000; j.token = TOKEN;
    c0 = spawn(real_rank, 0, &j);
    c1 = spawn(rank_one, 0, &j);
    c1b = spawn(rank_one, 1, &j);
    o0 = reap(c0); o1 = reap(c1); o1b = reap(c1b);
    CHECK(o0.rc == COLL_ERR_MISMATCH, "rank 1 twice: the master returned %d, want MISMATCH", o0.rc);
    CHECK(o1.exited && o1.rc != COLL_OK && o1b.exited && o1b.rc != COLL_OK,
          "rank 1 twice: the claimants returned %d and %d", o1.rc, o1b.rc);
    CHECK((o1.rc == COLL_ERR_MISMATCH) + (o1b.rc == COLL_ERR_MISMATCH) >= 1,
          "rank 1 twice: neither claimant was told it was refused (%d, %d)", o1.rc, o1b.rc);
}

/* ---- scenario: no token, an empty one, the insecure opt-in -------------- */

static outcome env_rank(int rank, void *arg)
{
    static coll_tcp t;
    const job *j = (const job *)arg;
    outcome o;
    memset(&o, 0, sizeof o);
    unsetenv("COLL_TCP_TOKEN");
    if (j->token) setenv("COLL_TCP_TOKEN", j->token, 1);
    if (j->token_of[rank]) setenv("COLL_TCP_INSECURE", j->token_of[rank], 1);
    else unsetenv("COLL_TCP_INSECURE");
    o.rc = coll_tcp_init(&t, "127.0.0.1", j->port, rank, j->world, j->timeout_ms);
    if (o.rc == COLL_OK) o.data_ok = allreduce_checked(&t);
    coll_tcp_close(&t);
    return o;
}

static void test_token_sources(void)
{
    static coll_tcp t;
    job j;
    child c0, c1;
    outcome o0, o1;
    long long t0;
    int rc;
    unsetenv("COLL_TCP_TOKEN");
    unsetenv("COLL_TCP_INSECURE");
    t0 = coll_tcp__now_ms();
    g_said = 0;
    rc = coll_tcp_init(&t, "127.0.0.1", coll_tcp_free_port(), 0, 2, 5000);
    CHECK(rc == COLL_ERR_INVAL, "no token at all: init returned %d, want INVAL", rc);
    CHECK(g_said & SAID_NO_TOKEN, "no token at all: nothing said about COLL_TCP_TOKEN");
    CHECK(coll_tcp__now_ms() - t0 < 200, "no token at all: init did not refuse at once");
    CHECK(coll_tcp_send(&t, 1, "x", 1) != COLL_OK, "no token: the port works anyway");
    rc = coll_tcp_init_token(&t, "127.0.0.1", coll_tcp_free_port(), 1, 2, 5000, "");
    CHECK(rc == COLL_ERR_INVAL, "an empty token: init returned %d, want INVAL", rc);
    setenv("COLL_TCP_INSECURE", "yes", 1);           /* only "1" opts in */
    rc = coll_tcp_init(&t, "127.0.0.1", coll_tcp_free_port(), 0, 2, 5000);
    CHECK(rc == COLL_ERR_INVAL, "COLL_TCP_INSECURE=yes accepted: %d", rc);
    unsetenv("COLL_TCP_INSECURE");
    rc = coll_tcp_init(&t, "127.0.0.1", coll_tcp_free_port(), 0, 1, 100);
    CHECK(rc == COLL_OK, "a world of one needs no token: %d", rc);
    coll_tcp_close(&t);

    memset(&j, 0, sizeof j);                          /* both insecure: works */
    j.port = coll_tcp_free_port(); j.world = 2; j.timeout_ms = 3000;
    j.token_of[0] = "1"; j.token_of[1] = "1";
    c0 = spawn(env_rank, 0, &j); c1 = spawn(env_rank, 1, &j);
    o0 = reap(c0); o1 = reap(c1);
    CHECK(o0.rc == COLL_OK && o1.rc == COLL_OK && o0.data_ok && o1.data_ok,
          "COLL_TCP_INSECURE=1 on both: %d %d, data %d %d", o0.rc, o1.rc, o0.data_ok, o1.data_ok);

    memset(&j, 0, sizeof j);                          /* token from the environment */
    j.port = coll_tcp_free_port(); j.world = 2; j.timeout_ms = 3000; j.token = TOKEN;
    c0 = spawn(env_rank, 0, &j); c1 = spawn(env_rank, 1, &j);
    o0 = reap(c0); o1 = reap(c1);
    CHECK(o0.rc == COLL_OK && o1.rc == COLL_OK && o0.data_ok && o1.data_ok,
          "COLL_TCP_TOKEN on both: %d %d, data %d %d", o0.rc, o1.rc, o0.data_ok, o1.data_ok);

    memset(&j, 0, sizeof j);                          /* an insecure master, a worker with a token */
    j.port = coll_tcp_free_port(); j.world = 2; j.timeout_ms = 800;
    j.token_of[0] = "1";
    c0 = spawn(env_rank, 0, &j);
    j.token = TOKEN; j.token_of[0] = NULL;
    c1 = spawn(env_rank, 1, &j);
    o0 = reap(c0); o1 = reap(c1);
    CHECK(o1.rc == COLL_TCP_ERR_AUTH, "a tokened worker accepted an insecure master: %d", o1.rc);
    CHECK(o0.rc != COLL_OK, "an insecure master accepted a tokened worker: %d", o0.rc);
}

/* ---- scenario: a relay damages the stream between two ranks ------------ */

/* Rank 1 reaches the master through a relay on loopback that passes the
   handshake untouched and then flips one bit of, or inserts one byte into,
   one direction of the stream at a chosen offset. With call checks and
   CRCs on, every rank must fail the call the damage lands in - never
   return COLL_OK with wrong data - and within its deadline. */
typedef struct relay_cfg {
    int listen_port, to_port, ready_fd;
    int dir;                   /* 0: rank 1 -> master, 1: master -> rank 1   */
    long offset;               /* byte of that direction's stream to damage  */
    int insert;                /* 1: insert a byte there, 0: flip a bit      */
} relay_cfg;

static outcome relay(int idx, void *arg)
{
    const relay_cfg *rc = (const relay_cfg *)arg;
    struct sockaddr_storage a;
    long long deadline = coll_tcp__now_ms() + 10000;
    long pos[2] = { 0, 0 };
    int fd[2] = { -1, -1 }, open_dir[2] = { 1, 1 }, lfd, d;
    outcome o;
    (void)idx;
    memset(&o, 0, sizeof o);
    o.rc = 1;                                        /* 1 until the damage is done */
    loopback(&a, rc->listen_port);
    lfd = coll_tcp__listen(&a, sizeof(struct sockaddr_in), 4);
    if (lfd < 0) { o.rc = 2; return o; }
    if (write(rc->ready_fd, "r", 1) != 1) { o.rc = 4; return o; }
    while (fd[0] < 0 && coll_tcp__left(deadline) > 0) {
        if (coll_tcp__poll1(lfd, POLLIN, deadline)) break;
        fd[0] = accept(lfd, NULL, NULL);
    }
    close(lfd);
    if (fd[0] < 0) { o.rc = 3; return o; }
    coll_tcp__tune(fd[0]);
    fd[1] = dial_raw(rc->to_port, deadline);
    if (fd[1] < 0) { close(fd[0]); o.rc = 3; return o; }
    /* direction d carries bytes from fd[d] to fd[1 - d] */
    while ((open_dir[0] || open_dir[1]) && coll_tcp__left(deadline) > 0) {
        struct pollfd p[2];
        int m = 0, which[2];
        for (d = 0; d < 2; d++) if (open_dir[d]) {
            p[m].fd = fd[d]; p[m].events = POLLIN; p[m].revents = 0; which[m++] = d;
        }
        if (poll(p, (nfds_t)m, coll_tcp__left(deadline)) <= 0) break;
        for (m = m - 1; m >= 0; m--) {
            unsigned char b[4097];
            ssize_t k;
            d = which[m];
            if (!p[m].revents) continue;
            k = recv(fd[d], b, 4096, MSG_DONTWAIT);
            if (k < 0 && (errno == EAGAIN || errno == EINTR)) continue;
            if (k <= 0) { open_dir[d] = 0; shutdown(fd[1 - d], SHUT_WR); continue; }
            if (d == rc->dir && rc->offset >= pos[d] && rc->offset < pos[d] + k) {
                size_t at = (size_t)(rc->offset - pos[d]);
                if (rc->insert) {
                    memmove(b + at + 1, b + at, (size_t)k - at);
                    b[at] = 0x5A;
                    pos[d] -= 1;                     /* the stream's offsets stay the sender's */
                    k += 1;
                } else {
                    b[at] ^= 0x10;
                }
                o.rc = 0;
            }
            pos[d] += k;
            if (coll_tcp__write_all(fd[1 - d], b, (size_t)k, deadline)) {
                open_dir[d] = 0;
                shutdown(fd[d], SHUT_RD);
            }
        }
    }
    o.got = pos[rc->dir];
    close(fd[0]); close(fd[1]);
    return o;
}

typedef struct damaged_job { int port, relay_port, world; } damaged_job;

/* All-reduces up to 4 times with COLL_CHECK_CALLS | COLL_CHECK_CRC. Reports
   in `got` the index of the first call that failed (-1: none), in `rc` its
   code, and data_ok = 0 if any call returned COLL_OK with wrong data. */
static outcome checked_rank(int rank, void *arg)
{
    static coll_tcp t;
    static unsigned char scratch[1 << 16];
    enum { N = 4099 };
    static int32_t buf[N];
    const damaged_job *j = (const damaged_job *)arg;
    long long t0 = coll_tcp__now_ms();
    coll_comm c;
    coll_port port;
    outcome o;
    int call, r;
    size_t i;
    memset(&o, 0, sizeof o);
    o.data_ok = 1;
    o.got = -1;
    o.rc = coll_tcp_init_token(&t, "127.0.0.1", rank == 1 ? j->relay_port : j->port,
                               rank, j->world, 3000, TOKEN);
    if (o.rc) { o.got = -2; return o; }
    coll_tcp_set_timeout(&t, 1500);
    port = coll_tcp_port(&t);
    if (coll_init(&c, rank, j->world, &port, scratch, sizeof scratch) ||
        coll_set_checks(&c, COLL_CHECK_CALLS | COLL_CHECK_CRC)) { o.rc = -9998; return o; }
    for (call = 0; call < 4; call++) {
        int rc;
        for (i = 0; i < N; i++) buf[i] = (int32_t)input(rank, i + (size_t)call);
        rc = coll_allreduce(&c, buf, buf, N, COLL_INT32, COLL_SUM, COLL_ALGO_RING);
        if (rc != COLL_OK) { o.rc = rc; o.got = call; break; }
        for (i = 0; i < N; i++) {
            long long want = 0;
            for (r = 0; r < j->world; r++) want += input(r, i + (size_t)call);
            if (buf[i] != (int32_t)want) o.data_ok = 0;
        }
    }
    o.ms = coll_tcp__now_ms() - t0;
    coll_tcp_close(&t);
    return o;
}

static void test_damage(int world, int dir, long offset, int insert, int want_call, const char *what)
{
    damaged_job j;
    relay_cfg rc;
    child rel, ranks[8];
    outcome orl, o[8];
    int pfd[2], r, first = -3;
    j.port = coll_tcp_free_port(); j.relay_port = coll_tcp_free_port(); j.world = world;
    if (pipe(pfd) < 0) exit(2);
    rc.listen_port = j.relay_port; rc.to_port = j.port; rc.ready_fd = pfd[1];
    rc.dir = dir; rc.offset = offset; rc.insert = insert;
    rel = spawn(relay, 0, &rc);
    CHECK(wait_ready(pfd[0], 5000), "%s: the relay did not start", what);
    for (r = 0; r < world; r++) ranks[r] = spawn(checked_rank, r, &j);
    for (r = 0; r < world; r++) o[r] = reap(ranks[r]);
    orl = reap(rel);
    close(pfd[0]); close(pfd[1]);
    CHECK(orl.exited && orl.rc == 0, "%s: the relay did not damage byte %ld (it passed %ld, code %d)",
          what, offset, orl.got, orl.rc);
    for (r = 0; r < world; r++) {
        CHECK(o[r].exited, "%s: rank %d did not report", what, r);
        CHECK(o[r].data_ok, "%s: rank %d got COLL_OK with wrong data", what, r);
        CHECK(o[r].rc != COLL_OK && o[r].got >= 0, "%s: rank %d never failed (rc %d, call %ld)",
              what, r, o[r].rc, o[r].got);
        CHECK(o[r].ms < 6000, "%s: rank %d took %lld ms", what, r, o[r].ms);
        if (r == 0) first = (int)o[r].got;
        else CHECK(o[r].got == first, "%s: rank %d failed in call %ld, rank 0 in call %d",
                   what, r, o[r].got, first);
    }
    CHECK(first == want_call, "%s: the ranks failed in call %d, the damage was in call %d",
          what, first, want_call);
    printf("    %s: call %d failed with", what, first);
    for (r = 0; r < world; r++) printf(" %d", o[r].rc);
    printf("\n");
}

/* ---- SipHash-2-4 known answers --------------------------------------------- */

static void test_siphash(void)
{
    unsigned char key[16], msg[64];
    uint64_t k0 = 0, k1 = 0;
    int i;
    for (i = 0; i < 16; i++) key[i] = (unsigned char)i;
    for (i = 0; i < 64; i++) msg[i] = (unsigned char)i;
    for (i = 7; i >= 0; i--) { k0 = k0 << 8 | key[i]; k1 = k1 << 8 | key[8 + i]; }
    /* the reference vectors: key 00..0f, message 00..(n-1) */
    CHECK(coll_tcp_siphash(k0, k1, msg, 0) == 0x726fdb47dd0e0e31ull, "siphash of 0 bytes");
    CHECK(coll_tcp_siphash(k0, k1, msg, 15) == 0xa129ca6149be45e5ull, "siphash of 15 bytes");
    CHECK(coll_tcp_siphash(k0, k1, msg, 8) == 0x93f5f5799a932462ull, "siphash of 8 bytes");
    CHECK(coll_tcp_siphash(k0, k1, msg, 63) == 0x958a324ceb064572ull, "siphash of 63 bytes");
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    (void)argc; (void)argv;
    printf("TCP port against strangers and hostile peers, on 127.0.0.1:\n");
    fflush(stdout);
    RUN(test_siphash(), "SipHash-2-4 reference vectors");
    RUN(test_intruders_first(), "three intruders claim rank 1 before it comes");
    RUN(test_impostor_master(COLL_TCP_VERSION, COLL_TCP_ERR_AUTH, "impostor"), "an impostor holds MASTER_PORT");
    RUN(test_impostor_master(99, COLL_TCP_ERR_VERSION, "impostor v99"), "an impostor of protocol version 99");
    RUN(test_noise(), "idle, junk, truncated, old-version strangers");
    RUN(test_other_token(), "a rank with another token");
    RUN(test_duplicate_rank(), "two authenticated ranks claim rank 1");
    RUN(test_token_sources(), "no token, empty token, insecure opt-in");
    /* Handshake bytes: rank 1 -> master 60, master -> rank 1 40 + 8 + the
       table (20 per rank + 8); the offsets below land past them. */
    RUN(test_damage(2, 0, 60 + 1000, 0, 0, "bit flip, 2 ranks"), "a relay flips a bit, rank 1 -> master, 2 ranks");
    RUN(test_damage(2, 1, 96 + 3001, 1, 0, "byte inserted, 2 ranks"), "a relay inserts a byte, master -> rank 1, 2 ranks");
    /* With 3 ranks the ring sends 0 -> 1 -> 2 -> 0, so payload flows master
       -> rank 1: about 22 KB per call, and byte 30000 lands in the second. */
    RUN(test_damage(3, 1, 116 + 30000, 0, 1, "bit flip, 3 ranks"), "a relay flips a bit in call 2, master -> rank 1, 3 ranks");
    RUN(test_damage(3, 1, 116 + 7, 1, 0, "byte in a check frame, 3 ranks"), "a relay inserts a byte in a check frame, 3 ranks");
    printf("tcp-auth: %ld passed, %ld failed\n", g_pass, g_fail);
    return g_fail != 0;
}
