/* soak_victim.h - the victim of a shrink soak over processes
   (test_shrink_tcp.c, test_shrink_hosts.c): how it fails, the port it
   runs over, which fails it after its k-th send of a call, and the
   inputs every rank computes alike; and the ranks as processes: forked,
   their results read back through pipes, reaped. Include after coll.h
   and ports/coll_tcp.h, <poll.h>, <signal.h>, <stdio.h>, <string.h>,
   <stdlib.h>, <sys/wait.h>, <time.h>, <unistd.h>; the includer defines
   MAXN (the largest call, in floats) and child_setup. */
#ifndef SOAK_VICTIM_H
#define SOAK_VICTIM_H

static uint64_t mix(uint64_t x)            /* splitmix64 */
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static void sleep_ms(long ms)
{
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) < 0) {}
}

/* How the victim fails: it kills itself, stops itself, goes silent (alive,
   sending nothing), or the parent kills it from outside at a random time. */
enum { M_KILL, M_STOP, M_SILENT, M_PARENT_KILL, M_COUNT };
static const char *const mode_name[M_COUNT] = { "kill", "stop", "silence", "parent-kill" };

static void fail_now(int mode)
{
    switch (mode) {
    case M_KILL: raise(SIGKILL); break;
    case M_STOP: raise(SIGSTOP); break;
    default: break;
    }
    for (;;) sleep_ms(1000);                   /* silent until killed */
}

/* The victim's port: the inner one, and a death at its `at_send`-th send
   of call `at_call` (the caller sets `call` before each call, and `sends`
   to 0). A rank that is not dying passes everything on. */
typedef struct wrap {
    coll_port in;
    int dying, mode, at_call, at_send;
    int call, sends;
} wrap;

static void maybe_fail(wrap *w)
{
    if (!w->dying || w->call < w->at_call || w->sends++ < w->at_send) return;
    fail_now(w->mode);
}

static int w_send(void *ctx, int peer, const void *buf, size_t n)
{
    wrap *w = (wrap *)ctx;
    maybe_fail(w);
    return w->in.send(w->in.ctx, peer, buf, n);
}
static int w_recv(void *ctx, int peer, void *buf, size_t n)
{
    wrap *w = (wrap *)ctx;
    return w->in.recv(w->in.ctx, peer, buf, n);
}
static int w_sendrecv(void *ctx, int to, const void *s, size_t sn, int from, void *r, size_t rn)
{
    wrap *w = (wrap *)ctx;
    maybe_fail(w);
    return w->in.sendrecv(w->in.ctx, to, s, sn, from, r, rn);
}
static int w_isend(void *ctx, int peer, const void *buf, size_t n, int *h)
{
    wrap *w = (wrap *)ctx;
    maybe_fail(w);
    return w->in.isend(w->in.ctx, peer, buf, n, h);
}
static int w_irecv(void *ctx, int peer, void *buf, size_t n, int *h)
{
    wrap *w = (wrap *)ctx;
    return w->in.irecv(w->in.ctx, peer, buf, n, h);
}
static int w_wait(void *ctx, int h, int block)
{
    wrap *w = (wrap *)ctx;
    return w->in.wait(w->in.ctx, h, block);
}
static void w_abort(void *ctx, int code)
{
    wrap *w = (wrap *)ctx;
    w->in.abort(w->in.ctx, code);
}
static int w_attach(void *ctx)
{
    wrap *w = (wrap *)ctx;
    return w->in.attach(w->in.ctx);
}
static int w_missing(void *ctx, int peer)
{
    wrap *w = (wrap *)ctx;
    return w->in.missing(w->in.ctx, peer);
}
static int w_renew(void *ctx, uint32_t epoch)
{
    wrap *w = (wrap *)ctx;
    return w->in.renew(w->in.ctx, epoch);
}

/* The port over w, which wraps `in` (it must have every member passed on). */
static coll_port victim_port(wrap *w, coll_port in, int dying, int mode, int at_call, int at_send)
{
    coll_port p;
    memset(w, 0, sizeof *w);
    w->in = in;
    w->dying = dying;
    w->mode = mode;
    w->at_call = at_call;
    w->at_send = at_send;
    memset(&p, 0, sizeof p);
    p.ctx = w;
    p.send = w_send; p.recv = w_recv; p.sendrecv = w_sendrecv;
    p.isend = w_isend; p.irecv = w_irecv; p.wait = w_wait;
    p.abort = w_abort; p.attach = w_attach; p.renew = w_renew; p.missing = w_missing;
    return p;
}

/* The rank an error text names ("port failed: rank M, ..."), -1 none. */
static int named_rank(const char *why)
{
    const char *p = strstr(why, "rank ");
    return p ? atoi(p + 5) : -1;
}

/* Call c's size and rank r's input in it, the same on every rank. */
static size_t call_count(uint64_t seed, int call)
{
    return 1 + (size_t)(mix(seed ^ (0x1000u + (unsigned)call)) % MAXN);
}
static float input(uint64_t seed, int call, int r, size_t i)
{
    return (float)((mix(seed + (uint64_t)call * 131 + (uint64_t)r * 7919 + i) % 201) - 100);
}


/* ---- the ranks as processes ----------------------------------------------- */

static long long soak_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The includer's: a forked rank's own state before it runs (its globals,
   its environment; fd: the write end of its pipe). */
static void child_setup(int r, int fd);

/* Forks `n` ranks on a free TCP port: each runs child_setup(r, fd), then
   fn(r, n, port, arg), then writes res[0..size) into its pipe. pid[r] the
   children, fds[r] the read ends. */
static void soak_spawn(int n, void (*fn)(int, int, int, void *), void *arg, const void *res, size_t size,
                       pid_t *pid, int *fds)
{
    int r, port = coll_tcp_free_port();
    fflush(stdout);
    fflush(stderr);
    for (r = 0; r < n; r++) {
        int pfd[2];
        if (pipe(pfd) < 0) { perror("pipe"); exit(2); }
        pid[r] = fork();
        if (pid[r] < 0) { perror("fork"); exit(2); }
        if (pid[r] == 0) {
            int i;
            for (i = 0; i < r; i++) close(fds[i]);
            close(pfd[0]);
            signal(SIGPIPE, SIG_DFL);           /* a send must never raise it */
            child_setup(r, pfd[1]);
            fn(r, n, port, arg);
            if (write(pfd[1], res, size) != (ssize_t)size) _exit(3);
            _exit(0);
        }
        close(pfd[1]);
        fds[r] = pfd[0];
    }
}

/* Reads `size` bytes of a child's pipe by `until`; 1 if they came whole. */
static int soak_collect(int fd, void *out, size_t size, long long until)
{
    size_t got = 0;
    while (got < size) {
        struct pollfd p;
        long long left = until - soak_now_ms();
        ssize_t k;
        if (left <= 0) return 0;
        p.fd = fd; p.events = POLLIN; p.revents = 0;
        if (poll(&p, 1, (int)left) <= 0) continue;
        k = read(fd, (char *)out + got, size - got);
        if (k <= 0) return 0;
        got += (size_t)k;
    }
    return 1;
}

/* Kills what still runs of pid[0..n) and reaps them all, within ~2 s. */
static void soak_reap_all(pid_t *pid, int n, int *status)
{
    int r;
    long long until = soak_now_ms() + 2000;
    for (r = 0; r < n; r++) {
        status[r] = -1;
        if (pid[r] <= 0) continue;
        while (waitpid(pid[r], &status[r], WNOHANG) == 0) {
            if (soak_now_ms() > until) { kill(pid[r], SIGKILL); waitpid(pid[r], &status[r], 0); break; }
            sleep_ms(2);
        }
    }
}

#endif
