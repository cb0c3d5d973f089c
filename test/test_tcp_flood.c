/* test_tcp_flood.c - the TCP rendezvous against strangers that would hold
   it (ports/coll_tcp.h, "THE RENDEZVOUS"; ports/README.md, "Threat model").

   Every rank and stranger is a fork()ed process on 127.0.0.1 only, at a
   port the kernel just handed out; every stranger is bounded in
   connections and in time. What is tested:
     - a stranger that sends the "coll" magic with protocol version 1 and
       then streams bytes without end, at the master before rank 1 comes:
       the job forms, and the master is never held past its deadline (a
       lone master with such a stranger returns at its deadline); the same
       at rank 1's own listener, where rank 2 dials in;
     - a flood: one process keeps 200 silent connections open against
       MASTER_PORT, reconnecting each as soon as it is dropped (or its
       connect is not answered within 20 ms), from before the ranks start
       until they are done; 4 ranks must still form the job (all-reduces
       checked against a plain loop) well within a 15 s deadline, and the
       master must have recycled strangers' slots. The same with strangers
       that send a well-formed hello (no token needed) and then stall
       inside the handshake; and with a second such flood at rank 1's own
       listener, where ranks 2 and 3 dial in;
     - MASTER_PORT already bound by another program: rank 0 returns
       COLL_TCP_ERR_INUSE at once and says "address in use"; the workers,
       where that program takes their connection and hangs up (as torch's
       store does with bytes it does not understand), return
       COLL_TCP_ERR_AUTH within a second and say why; where it takes the
       connection and says nothing, COLL_ERR_TIMEOUT at their deadline,
       saying that too.
   Ends with "tcp-flood: N passed, N failed"; TCP_FLOOD_VERBOSE=1 shows the
   port's log lines. */
#define _POSIX_C_SOURCE 200809L
#define COLL_IMPLEMENTATION
#include "coll.h"

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

static const char *const TOKEN = "0d9e4b7c1a2f38e5b6c7d8e9f0a1b2c3";

enum { SAID_INUSE = 1, SAID_MUTE = 2, SAID_QUIET = 4, SAID_KEPT = 8, SAID_RECYCLED = 16 };
static unsigned g_logged, g_said;

static void test_log(const char *line)
{
    const char *v = getenv("TCP_FLOOD_VERBOSE");
    g_logged++;
    if (strstr(line, "address in use")) g_said |= SAID_INUSE;
    if (strstr(line, "without a word")) g_said |= SAID_MUTE;
    if (strstr(line, "said nothing until the deadline")) g_said |= SAID_QUIET;
    if (strstr(line, "kept sending")) g_said |= SAID_KEPT;
    if (strstr(line, "for one waiting")) g_said |= SAID_RECYCLED;
    if (v && strcmp(v, "1") == 0) fputs(line, stderr);
}

/* ---- children and what they report ----------------------------------- */

typedef struct outcome {
    int rc;                    /* init's code, or a stranger's own summary   */
    int data_ok;               /* every all-reduce matched the reference     */
    unsigned dropped;          /* t.dropped after init                       */
    long long ms;              /* how long init took                         */
    long sent, conns;          /* a stranger's bytes sent, connections made  */
    unsigned logged, said;
    int exited;
} outcome;

#define CHILD_ALARM_S 40                 /* a backstop on every child */
#include "test_children.h"

/* ---- a real rank --------------------------------------------------------- */

typedef struct job { int port, world; unsigned timeout_ms; } job;

static long long input(int rank, size_t i)
{
    return (long long)((rank * 29 + (long long)i * 5) % 19) - 9;
}

static int allreduce_checked(coll_tcp *t)
{
    static const coll_algo algos[] = { COLL_ALGO_RING, COLL_ALGO_RECURSIVE_DOUBLING };
    static unsigned char scratch[1 << 16];
    enum { N = 3001 };
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
    outcome o;
    long long t0 = coll_tcp__now_ms();
    memset(&o, 0, sizeof o);
    o.rc = coll_tcp_init_token(&t, "127.0.0.1", j->port, rank, j->world, j->timeout_ms, TOKEN);
    o.ms = coll_tcp__now_ms() - t0;
    o.dropped = t.dropped;
    if (o.rc == COLL_OK) o.data_ok = allreduce_checked(&t);
    coll_tcp_close(&t);
    return o;
}

/* ---- scenario: a stranger of protocol version 1 that streams forever ---- */

typedef struct streamer_cfg { int port, ready_fd, ms; pid_t worker; } streamer_cfg;

/* Sends the version-1 registration ("coll", 1, ...) and then bytes as fast
   as the master takes them, for cfg->ms at most or until hung up on. */
static outcome streamer(int idx, void *arg)
{
    const streamer_cfg *sc = (const streamer_cfg *)arg;
    unsigned char b[4096];
    struct sockaddr_storage a;
    long long end = coll_tcp__now_ms() + sc->ms;
    outcome o;
    int fd, port = sc->port, tries;
    (void)idx;
    memset(&o, 0, sizeof o);
    for (tries = 0; sc->worker && !(port = listener_of(sc->worker)) && tries < 300; tries++)
        sleep_ms(10);                       /* a worker's own listener */
    if (!port) { o.rc = 2; return o; }
    loopback(&a, port);
    fd = coll_tcp__connect(&a, sizeof(struct sockaddr_in), end);
    if (fd < 0) { o.rc = 1; return o; }
    memset(b, 0x5a, sizeof b);
    coll_tcp__put32(b, COLL_TCP__MAGIC);
    coll_tcp__put32(b + 4, 1);
    if (write(sc->ready_fd, "r", 1) != 1) o.rc = 4;
    o.conns = 1;
    while (coll_tcp__left(end) > 0) {
        ssize_t k = send(fd, b, o.sent ? sizeof b : 32, MSG_NOSIGNAL);
        if (k > 0) { o.sent += k; continue; }
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (coll_tcp__poll1(fd, POLLOUT, end) == COLL_ERR_IO) break;
            continue;
        }
        o.rc = 0x10;                                   /* hung up on: good */
        break;
    }
    close(fd);
    return o;
}

static void test_streamer(void)
{
    job j;
    streamer_cfg sc;
    child st, c0, c1;
    outcome os, o0, o1;
    int pfd[2];
    memset(&j, 0, sizeof j);
    j.port = coll_tcp_free_port(); j.world = 2; j.timeout_ms = 3000;
    if (pipe(pfd) < 0) exit(2);
    sc.port = j.port; sc.ready_fd = pfd[1]; sc.ms = 8000; sc.worker = 0;
    c0 = spawn(real_rank, 0, &j);
    st = spawn(streamer, 0, &sc);
    CHECK(wait_ready(pfd[0], 3000), "streamer: it never connected");
    sleep_ms(200);                          /* the master is now reading it */
    c1 = spawn(real_rank, 1, &j);
    o0 = reap(c0); o1 = reap(c1); os = reap(st);
    CHECK(o0.rc == COLL_OK && o1.rc == COLL_OK, "streamer: init returned %d and %d", o0.rc, o1.rc);
    CHECK(o0.data_ok && o1.data_ok, "streamer: all-reduce differs from the reference");
    CHECK(o0.ms < 2500, "streamer: the master's rendezvous took %lld ms (deadline 3000)", o0.ms);
    CHECK(os.rc == 0x10, "streamer: it was never hung up on (code %d, sent %ld B)", os.rc, os.sent);
    CHECK(o0.said & SAID_KEPT, "streamer: the master did not say why it hung up");
    printf("    master %lld ms, the stranger sent %ld B before it was hung up on\n", o0.ms, os.sent);

    /* Nobody else comes: the master returns at its deadline, not when the
       stranger stops. */
    j.port = coll_tcp_free_port(); j.timeout_ms = 1000;
    sc.port = j.port;
    c0 = spawn(real_rank, 0, &j);
    st = spawn(streamer, 0, &sc);
    CHECK(wait_ready(pfd[0], 3000), "streamer alone: it never connected");
    o0 = reap(c0); os = reap(st);
    CHECK(o0.rc == COLL_ERR_TIMEOUT, "streamer alone: the master returned %d", o0.rc);
    CHECK(o0.ms < 1500, "streamer alone: the master took %lld ms (deadline 1000)", o0.ms);
    close(pfd[0]); close(pfd[1]);
}

/* The same at rank 1's own listener, where rank 2 must dial in. */
static void test_streamer_worker(void)
{
    job j;
    streamer_cfg sc;
    child st, c[3];
    outcome os, o[3];
    int pfd[2], r;
    memset(&j, 0, sizeof j);
    j.port = coll_tcp_free_port(); j.world = 3; j.timeout_ms = 3000;
    if (pipe(pfd) < 0) exit(2);
    c[0] = spawn(real_rank, 0, &j);
    c[1] = spawn(real_rank, 1, &j);
    sc.port = 0; sc.ready_fd = pfd[1]; sc.ms = 8000; sc.worker = c[1].pid;
    st = spawn(streamer, 0, &sc);
    CHECK(wait_ready(pfd[0], 4000), "streamer at rank 1: it never connected");
    sleep_ms(200);
    c[2] = spawn(real_rank, 2, &j);
    for (r = 0; r < 3; r++) o[r] = reap(c[r]);
    os = reap(st);
    close(pfd[0]); close(pfd[1]);
    for (r = 0; r < 3; r++) {
        CHECK(o[r].rc == COLL_OK && o[r].data_ok, "streamer at rank 1: rank %d init %d, data %d",
              r, o[r].rc, o[r].data_ok);
        CHECK(o[r].ms < 2500, "streamer at rank 1: rank %d took %lld ms (deadline 3000)", r, o[r].ms);
    }
    CHECK(os.rc == 0x10, "streamer at rank 1: never hung up on (code %d)", os.rc);
}

/* ---- scenario: a flood of silent strangers ------------------------------ */

typedef struct flood_cfg { int port, n, ready_fd, stop_fd, ms, hello; pid_t worker; } flood_cfg;

static int open_nb(int port)
{
    struct sockaddr_storage a;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL, 0) | O_NONBLOCK);
    loopback(&a, port);
    if (connect(fd, (struct sockaddr *)&a, sizeof(struct sockaddr_in)) < 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Keeps cfg->n connections to the port until stop_fd becomes readable or
   cfg->ms have passed: each is opened again at once when it is hung up
   on, and so is a connect still unanswered after 20 ms (a SYN dropped by
   a full backlog: a fresh one takes the first room there, long before the
   kernel would send it again). Each says nothing or, with cfg->hello, a
   well-formed hello (no token needed), and then nothing: it stalls
   inside the handshake. `conns` counts connections opened. */
static outcome flood(int idx, void *arg)
{
    const flood_cfg *fc = (const flood_cfg *)arg;
    struct pollfd p[257];
    long long born[256];
    long long end = coll_tcp__now_ms() + fc->ms;
    outcome o;
    int i, n = fc->n < 256 ? fc->n : 256, port = fc->port, tries;
    (void)idx;
    memset(&o, 0, sizeof o);
    for (tries = 0; fc->worker && !(port = listener_of(fc->worker)) && tries < 500; tries++)
        sleep_ms(10);                       /* a worker's own listener */
    if (!port) { o.rc = 2; return o; }
    for (i = 0; i < n; i++) {
        p[i].fd = open_nb(port); p[i].events = POLLOUT; p[i].revents = 0;
        born[i] = coll_tcp__now_ms();
        o.conns += p[i].fd >= 0;
    }
    p[n].fd = fc->stop_fd; p[n].events = POLLIN; p[n].revents = 0;
    if (write(fc->ready_fd, "r", 1) != 1) o.rc = 4;
    while (coll_tcp__left(end) > 0) {
        long long now;
        int k = poll(p, (nfds_t)n + 1, 10);
        if (k < 0 && errno != EINTR) break;
        if (p[n].revents) break;                              /* told to stop */
        now = coll_tcp__now_ms();
        for (i = 0; i < n; i++) {
            unsigned char b[64];
            int again = p[i].fd < 0, err = 0;
            socklen_t elen = sizeof err;
            if (!again && p[i].events == POLLOUT) {           /* connecting */
                if (p[i].revents) {
                    if (getsockopt(p[i].fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0 || err) again = 1;
                    else {                                    /* in: stall */
                        p[i].events = POLLIN;
                        if (fc->hello) {
                            unsigned char h[COLL_TCP__HELLO];
                            coll_tcp fake;
                            memset(&fake, 0, sizeof fake);
                            fake.nranks = 4;
                            memset(h, 0, sizeof h);
                            coll_tcp__hello(&fake, h, 1 + i % 3);
                            (void)send(p[i].fd, h, sizeof h, MSG_NOSIGNAL | MSG_DONTWAIT);
                        }
                    }
                } else if (now - born[i] >= 20) again = 1;
            } else if (!again && p[i].revents) {
                ssize_t got = recv(p[i].fd, b, sizeof b, MSG_DONTWAIT);
                again = got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR);
            }
            if (!again) { p[i].revents = 0; continue; }
            if (p[i].fd >= 0) close(p[i].fd);
            p[i].fd = open_nb(port);
            p[i].events = POLLOUT; p[i].revents = 0;
            born[i] = now;
            o.conns += p[i].fd >= 0;
        }
    }
    for (i = 0; i < n; i++) if (p[i].fd >= 0) close(p[i].fd);
    return o;
}

/* With at_worker, a second flood of the same kind holds rank 1's own
   listener, where ranks 2 and 3 must dial in. */
static void test_flood(int hello, int at_worker)
{
    enum { WORLD = 4 };
    job j;
    flood_cfg fc, fw;
    child fl, flw, ranks[WORLD];
    outcome of, ow, o[WORLD];
    int pfd[2], sfd[2], r;
    long long t0, worst = 0;
    memset(&j, 0, sizeof j);
    memset(&ow, 0, sizeof ow);
    memset(&flw, 0, sizeof flw);
    j.port = coll_tcp_free_port(); j.world = WORLD; j.timeout_ms = 15000;
    if (pipe(pfd) < 0 || pipe(sfd) < 0) exit(2);
    fc.port = j.port; fc.n = 200; fc.ready_fd = pfd[1]; fc.stop_fd = sfd[0]; fc.ms = 25000;
    fc.hello = hello; fc.worker = 0;
    ranks[0] = spawn(real_rank, 0, &j);
    sleep_ms(100);                                   /* the master listens */
    fl = spawn(flood, 0, &fc);
    CHECK(wait_ready(pfd[0], 5000), "flood: the strangers never got going");
    sleep_ms(500);                                   /* in full flow */
    t0 = coll_tcp__now_ms();
    ranks[1] = spawn(real_rank, 1, &j);
    if (at_worker) {
        fw = fc; fw.worker = ranks[1].pid;
        flw = spawn(flood, 1, &fw);
        CHECK(wait_ready(pfd[0], 5000), "flood: the strangers at rank 1 never got going");
        sleep_ms(500);
    }
    for (r = 2; r < WORLD; r++) ranks[r] = spawn(real_rank, r, &j);
    for (r = 0; r < WORLD; r++) o[r] = reap(ranks[r]);
    if (write(sfd[1], "s", 1) != 1) exit(2);
    of = reap(fl);
    if (at_worker) {
        ow = reap(flw);
        CHECK(ow.exited && ow.rc == 0 && ow.conns >= 200, "flood: the strangers at rank 1 made "
              "%ld connections (code %d)", ow.conns, ow.rc);
        CHECK(o[1].said & SAID_RECYCLED, "flood: rank 1 never recycled a stranger's slot");
    }
    close(pfd[0]); close(pfd[1]); close(sfd[0]); close(sfd[1]);
    for (r = 0; r < WORLD; r++) {
        CHECK(o[r].rc == COLL_OK, "flood: rank %d init %d after %lld ms", r, o[r].rc, o[r].ms);
        CHECK(o[r].data_ok, "flood: rank %d all-reduce differs from the reference", r);
        if (r > 0 && o[r].ms > worst) worst = o[r].ms;
    }
    CHECK(worst < 10000, "flood: a worker took %lld ms to join (deadline 15000)", worst);
    CHECK(of.exited && of.conns >= 200, "flood: the strangers made only %ld connections", of.conns);
    CHECK(o[0].said & SAID_RECYCLED, "flood: the master never recycled a stranger's slot");
    printf("    the job formed %lld ms after the workers started (worst worker %lld ms); "
           "%ld stranger connections, %u dropped by the master, %u by rank 1\n",
           coll_tcp__now_ms() - t0, worst, of.conns + (at_worker ? ow.conns : 0), o[0].dropped,
           o[1].dropped);
}

/* ---- scenario: MASTER_PORT held by another program ----------------------- */

typedef struct squat_cfg { int port, ready_fd, stop_fd, hangup; } squat_cfg;

/* Listens on the port; takes every connection and either hangs up at once
   (after reading what came, as a store that does not understand it would)
   or holds it without a word, until told to stop. */
static outcome squatter(int idx, void *arg)
{
    const squat_cfg *sq = (const squat_cfg *)arg;
    struct sockaddr_storage a;
    int held[64], nheld = 0, lfd, i;
    long long end = coll_tcp__now_ms() + 20000;
    outcome o;
    (void)idx;
    memset(&o, 0, sizeof o);
    loopback(&a, sq->port);
    lfd = coll_tcp__listen(&a, sizeof(struct sockaddr_in), 64);
    if (lfd < 0) { o.rc = 1; return o; }
    if (write(sq->ready_fd, "r", 1) != 1) o.rc = 4;
    while (coll_tcp__left(end) > 0) {
        struct pollfd p[2];
        p[0].fd = lfd; p[0].events = POLLIN; p[0].revents = 0;
        p[1].fd = sq->stop_fd; p[1].events = POLLIN; p[1].revents = 0;
        if (poll(p, 2, 100) < 0 && errno != EINTR) break;
        if (p[1].revents) break;
        if (p[0].revents) {
            int fd = accept(lfd, NULL, NULL);
            unsigned char b[256];
            if (fd < 0) continue;
            o.conns++;
            if (sq->hangup) {
                sleep_ms(2);
                (void)recv(fd, b, sizeof b, MSG_DONTWAIT);
                close(fd);
            } else if (nheld < 64) held[nheld++] = fd;
            else close(fd);
        }
    }
    for (i = 0; i < nheld; i++) close(held[i]);
    close(lfd);
    return o;
}

static void test_port_taken(int hangup, const char *what)
{
    enum { WORLD = 3 };
    job j;
    squat_cfg sq;
    child sqc, ranks[WORLD];
    outcome osq, o[WORLD];
    int pfd[2], sfd[2], r;
    memset(&j, 0, sizeof j);
    j.port = coll_tcp_free_port(); j.world = WORLD; j.timeout_ms = 3000;
    if (pipe(pfd) < 0 || pipe(sfd) < 0) exit(2);
    sq.port = j.port; sq.ready_fd = pfd[1]; sq.stop_fd = sfd[0]; sq.hangup = hangup;
    sqc = spawn(squatter, 0, &sq);
    CHECK(wait_ready(pfd[0], 3000), "%s: the other program could not take the port", what);
    for (r = 0; r < WORLD; r++) ranks[r] = spawn(real_rank, r, &j);
    for (r = 0; r < WORLD; r++) o[r] = reap(ranks[r]);
    if (write(sfd[1], "s", 1) != 1) exit(2);
    osq = reap(sqc);
    close(pfd[0]); close(pfd[1]); close(sfd[0]); close(sfd[1]);
    CHECK(o[0].rc == COLL_TCP_ERR_INUSE, "%s: rank 0 returned %d, want COLL_TCP_ERR_INUSE", what, o[0].rc);
    CHECK(o[0].ms < 500, "%s: rank 0 took %lld ms", what, o[0].ms);
    CHECK(o[0].said & SAID_INUSE, "%s: rank 0 did not say \"address in use\"", what);
    for (r = 1; r < WORLD; r++) {
        if (hangup) {
            CHECK(o[r].rc == COLL_TCP_ERR_AUTH, "%s: worker %d returned %d, want COLL_TCP_ERR_AUTH",
                  what, r, o[r].rc);
            CHECK(o[r].ms < 1500, "%s: worker %d took %lld ms", what, r, o[r].ms);
            CHECK(o[r].said & SAID_MUTE, "%s: worker %d did not say why", what, r);
        } else {
            CHECK(o[r].rc == COLL_ERR_TIMEOUT, "%s: worker %d returned %d, want COLL_ERR_TIMEOUT",
                  what, r, o[r].rc);
            CHECK(o[r].ms < 3500, "%s: worker %d took %lld ms", what, r, o[r].ms);
            CHECK(o[r].said & SAID_QUIET, "%s: worker %d did not say why", what, r);
        }
    }
    CHECK(osq.exited && osq.rc == 0 && osq.conns >= WORLD - 1, "%s: the other program saw %ld "
          "connections (code %d)", what, osq.conns, osq.rc);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    printf("TCP rendezvous against strangers that would hold it, on 127.0.0.1:\n");
    fflush(stdout);
    RUN(test_streamer(), "a version-1 stranger that streams without end");
    RUN(test_streamer_worker(), "the same at rank 1's own listener");
    RUN(test_port_taken(1, "taken, hangs up"), "MASTER_PORT held by a program that hangs up");
    RUN(test_port_taken(0, "taken, silent"), "MASTER_PORT held by a program that says nothing");
    RUN(test_flood(0, 0), "200 silent strangers, reconnecting, 4 ranks");
    RUN(test_flood(1, 0), "200 strangers stalling after a hello, 4 ranks");
    RUN(test_flood(0, 1), "200 silent strangers at the master and at rank 1");
    printf("tcp-flood: %ld passed, %ld failed\n", g_pass, g_fail);
    return g_fail != 0;
}
