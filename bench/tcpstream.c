/* tcpstream.c - the loopback TCP ceiling: how many bytes per second two
   processes on this machine can push through one TCP connection, with the
   socket settings of ports/coll_tcp.h (its own coll_tcp__tune: TCP_NODELAY,
   COLL_TCP_SOCKBUF, non-blocking) and its way of moving bytes (send/recv
   with MSG_DONTWAIT of whatever is left of the message, poll() only when
   neither direction can move). No coll.h call in the timed loop.

       build/bench/tcpstream [-s bytes] [-T ms] [-r runs]
       build/bench/tcpstream -l ADDR:PORT [-s -T -r]    serve one peer
       build/bench/tcpstream -c ADDR:PORT [-s]          be that peer

   -l and -c split the two processes, so that they can run on two hosts
   (bench/bench_hosts.sh: in two network namespaces): -l listens at
   ADDR:PORT, times the exchange pattern alone and prints its row with
   algo=hosts; -c connects there (trying for 5 s) and answers. -s must
   be the same on both.

   Two patterns, each timed in `runs` runs (3) of back-to-back messages of
   `bytes` (8 MiB) filling about T ms (200), the median run reported:
     exchange  both processes send and receive at once, as every rank of
               a ring or a pairwise exchange does
     oneway    one sends, the other receives
   The parent forks the child, they meet on 127.0.0.1 (a port the kernel
   picks), and the parent times: from its "go" to the last byte it
   received (exchange) or to the child's one-byte acknowledgement
   (oneway). The last message of each run is checked byte for byte.

   Rows (bench table columns): impl=tcpstream, collective=exchange|oneway,
   algo=loopback, ranks=2, bytes=message size, time_us=per message,
   algbw=bytes per second in one direction, busbw=bytes per second through
   the loopback in all directions together (the machine's loopback
   capacity C: exchange 2 x algbw, oneway algbw). A collective whose busbw
   is B at p ranks moves p x B bytes per second through the loopback
   (every rank sends B per second), so its ceiling is C / p. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define COLL_IMPLEMENTATION
#include "../coll.h"
#define COLL_TCP_IMPLEMENTATION
#include "../ports/coll_tcp.h"
#include "bench_common.h"

#define RUNS_MAX 15

static unsigned char pattern(size_t i, int who) { return (unsigned char)(i * 7u + (size_t)who * 13u + 1u); }

/* Moves `count` messages of `bytes` out of src (if sending) and into dst
   (if receiving) at once on the non-blocking socket fd. 0, or -1. */
static int stream(int fd, const unsigned char *src, unsigned char *dst, size_t bytes,
                  long count, int sending, int receiving)
{
    size_t total = bytes * (size_t)count;
    size_t sent = sending ? 0 : total, got = receiving ? 0 : total;
    while (sent < total || got < total) {
        int moved = 0;
        if (sent < total) {
            size_t at = sent % bytes;
            ssize_t n = send(fd, src + at, bytes - at, MSG_DONTWAIT | MSG_NOSIGNAL);
            if (n > 0) { sent += (size_t)n; moved = 1; }
            else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
        }
        if (got < total) {
            size_t at = got % bytes;
            ssize_t n = recv(fd, dst + at, bytes - at, MSG_DONTWAIT);
            if (n > 0) { got += (size_t)n; moved = 1; }
            else if (n == 0) return -1;
            else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
        }
        if (!moved) {
            struct pollfd pf;
            pf.fd = fd;
            pf.events = (short)((sent < total ? POLLOUT : 0) | (got < total ? POLLIN : 0));
            pf.revents = 0;
            if (poll(&pf, 1, 10000) == 0) return -1;           /* nothing for 10 s: give up */
        }
    }
    return 0;
}

/* Blocking-style small control messages over the same socket. */
static int ctl_send(int fd, const void *b, size_t n) { return stream(fd, (const unsigned char *)b, NULL, n, 1, 1, 0); }
static int ctl_recv(int fd, void *b, size_t n) { return stream(fd, NULL, (unsigned char *)b, n, 1, 0, 1); }

/* Whether dst holds the message `who` sends. */
static int intact(const unsigned char *dst, size_t bytes, int who)
{
    size_t i;
    for (i = 0; i < bytes; i++)
        if (dst[i] != pattern(i, who)) return 0;
    return 1;
}

/* One run as the parent: tells the child the pattern (0 exchange, 1
   oneway) and the count, streams, returns the seconds (or -1). */
static double parent_run(int fd, const unsigned char *src, unsigned char *dst, size_t bytes,
                         int mode, long count, int *ok)
{
    long hdr[2];
    char ack;
    double t0;
    hdr[0] = mode; hdr[1] = count;
    if (ctl_send(fd, hdr, sizeof hdr)) return -1;
    t0 = bench_now();
    if (mode == 0) {
        if (stream(fd, src, dst, bytes, count, 1, 1)) return -1;
        *ok = intact(dst, bytes, 1);
    } else {
        if (stream(fd, src, NULL, bytes, count, 1, 0) || ctl_recv(fd, &ack, 1)) return -1;
        *ok = ack == 1;
    }
    return bench_now() - t0;
}

static int child(int fd, size_t bytes)
{
    unsigned char *src = (unsigned char *)malloc(bytes), *dst = (unsigned char *)malloc(bytes);
    long hdr[2];
    size_t i;
    if (!src || !dst) return 1;
    for (i = 0; i < bytes; i++) { src[i] = pattern(i, 1); dst[i] = 0; }
    while (ctl_recv(fd, hdr, sizeof hdr) == 0 && hdr[0] >= 0) {
        if (hdr[0] == 0) {
            if (stream(fd, src, dst, bytes, hdr[1], 1, 1)) return 1;
        } else {
            char ack;
            if (stream(fd, NULL, dst, bytes, hdr[1], 0, 1)) return 1;
            ack = (char)intact(dst, bytes, 0);
            if (ctl_send(fd, &ack, 1)) return 1;
        }
    }
    return 0;
}

/* Listener at a (port 0: one the kernel picks); its port in *port. */
static int listen_at(struct sockaddr_in a, int *port)
{
    socklen_t len = sizeof a;
    int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 1) ||
        getsockname(fd, (struct sockaddr *)&a, &len)) { close(fd); return -1; }
    *port = ntohs(a.sin_port);
    return fd;
}

/* Connects to a, trying for up to `ms` (the listener may not be up yet). */
static int connect_at(struct sockaddr_in a, int ms)
{
    for (;;) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        if (fd < 0) return -1;
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) return fd;
        close(fd);
        if ((ms -= 10) < 0) return -1;
        usleep(10000);
    }
}

/* "ADDR:PORT" (IPv4) into *a; 127.0.0.1 and port 0 when s is NULL. */
static int parse_at(const char *s, struct sockaddr_in *a)
{
    char host[64];
    const char *colon = s ? strrchr(s, ':') : NULL;
    memset(a, 0, sizeof *a);
    a->sin_family = AF_INET;
    if (!s) { a->sin_addr.s_addr = htonl(INADDR_LOOPBACK); return 0; }
    if (!colon || (size_t)(colon - s) >= sizeof host) return -1;
    memcpy(host, s, (size_t)(colon - s));
    host[colon - s] = 0;
    a->sin_port = htons((unsigned short)atoi(colon + 1));
    return inet_pton(AF_INET, host, &a->sin_addr) == 1 ? 0 : -1;
}

int main(int argc, char **argv)
{
    size_t bytes = (size_t)8 << 20, i;
    double target = 0.2, t[RUNS_MAX];
    int runs = 3, k, lfd, fd, port, status, mode, bad = 0;
    long stop[2] = {-1, 0};
    pid_t pid = 0;
    unsigned char *src, *dst;
    const char *serve = NULL, *peer = NULL;
    struct sockaddr_in at;
    for (k = 1; k < argc; k++) {
        if (k + 1 >= argc) goto usage;
        if (!strcmp(argv[k], "-s")) bytes = bench_parse_size(argv[++k]);
        else if (!strcmp(argv[k], "-T")) target = atof(argv[++k]) / 1e3;
        else if (!strcmp(argv[k], "-r")) runs = atoi(argv[++k]);
        else if (!strcmp(argv[k], "-l")) serve = argv[++k];
        else if (!strcmp(argv[k], "-c")) peer = argv[++k];
        else goto usage;
    }
    if (bytes == 0 || runs < 1 || runs > RUNS_MAX || !(target > 0) || (serve && peer) ||
        parse_at(peer ? peer : serve, &at))
        goto usage;
    if (peer) {                            /* the other end, on its own host */
        if ((fd = connect_at(at, 5000)) < 0) { perror("tcpstream: connect"); return 1; }
        coll_tcp__tune(fd);
        return child(fd, bytes);
    }
    src = (unsigned char *)malloc(bytes);
    dst = (unsigned char *)malloc(bytes);
    if (!src || !dst) { fprintf(stderr, "tcpstream: cannot allocate 2 x %zu B\n", bytes); return 1; }
    for (i = 0; i < bytes; i++) { src[i] = pattern(i, 0); dst[i] = 0; }
    if ((lfd = listen_at(at, &port)) < 0) { perror("tcpstream: listen"); return 1; }
    fflush(stdout);
    if (!serve && (pid = fork()) < 0) { perror("tcpstream: fork"); return 1; }
    if (!serve && pid == 0) {
        close(lfd);
        at.sin_port = htons((unsigned short)port);
        fd = connect_at(at, 0);
        if (fd < 0) _exit(1);
        coll_tcp__tune(fd);
        _exit(child(fd, bytes));
    }
    fd = accept(lfd, NULL, NULL);
    close(lfd);
    if (fd < 0) { perror("tcpstream: accept"); if (pid) { kill(pid, SIGKILL); waitpid(pid, &status, 0); } return 1; }
    coll_tcp__tune(fd);
    for (mode = 0; mode < (serve ? 1 : 2) && !bad; mode++) {
        int ok = 1, okr;
        long count;
        double t1 = parent_run(fd, src, dst, bytes, mode, 1, &okr);   /* warm-up, and the count */
        if (t1 < 0) { bad = 1; break; }
        count = (long)bench_iters(t1, target, 3, 100000);
        for (k = 0; k < runs; k++) {
            t[k] = parent_run(fd, src, dst, bytes, mode, count, &okr);
            if (t[k] < 0) { bad = 1; break; }
            ok &= okr;
            memset(dst, 0, bytes);
        }
        if (bad) break;
        {
            double per = bench_median(t, runs) / (double)count;
            bench_row("tcpstream", mode ? "oneway" : "exchange", serve ? "hosts" : "loopback", 2, bytes, per,
                      mode ? 1.0 : 2.0, ok);
        }
    }
    if (!bad) ctl_send(fd, stop, sizeof stop);
    close(fd);
    if (pid && (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status))) bad = 1;
    if (bad) fprintf(stderr, "tcpstream: the stream failed (a socket error, or nothing moved for 10 s)\n");
    free(src);
    free(dst);
    return bad;
usage:
    fprintf(stderr, "usage: tcpstream [-s bytes] [-T ms] [-r runs] [-l ADDR:PORT | -c ADDR:PORT]\n");
    return 2;
}
