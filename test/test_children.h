/* test_children.h - forked children for the TCP tests (test_tcp_auth.c,
   test_tcp_flood.c): spawn(fn) runs fn in a child, which writes the
   `outcome` it returns through a pipe; reap() reads it (exited = 0 if the
   child died first) and waits for the child. Plus loopback addresses,
   sleeps, a "ready" pipe and the port a child listens on (listener_of).
   Include after defining `outcome` (with rc, logged, said and exited
   among its fields), g_logged and g_said (the child's log counts), and
   CHILD_ALARM_S (a backstop on every child). */
#ifndef TEST_CHILDREN_H
#define TEST_CHILDREN_H

typedef outcome (*child_fn)(int idx, void *arg);
typedef struct child { pid_t pid; int fd; } child;

static child spawn(child_fn fn, int idx, void *arg)
{
    child c;
    int pfd[2];
    if (pipe(pfd) < 0) { perror("pipe"); exit(2); }
    fflush(stdout); fflush(stderr);
    c.pid = fork();
    if (c.pid < 0) { perror("fork"); exit(2); }
    if (c.pid == 0) {
        outcome o;
        close(pfd[0]);
        alarm(CHILD_ALARM_S);                        /* a backstop, never expected */
        g_logged = g_said = 0;
        o = fn(idx, arg);
        o.logged = g_logged; o.said = g_said;
        if (write(pfd[1], &o, sizeof o) != (ssize_t)sizeof o) _exit(3);
        _exit(0);
    }
    close(pfd[1]);
    c.fd = pfd[0];
    return c;
}

static outcome reap(child c)
{
    outcome o;
    int status = 0;
    memset(&o, 0, sizeof o);
    if (read(c.fd, &o, sizeof o) == (ssize_t)sizeof o) o.exited = 1;
    else o.rc = -9999;
    close(c.fd);
    waitpid(c.pid, &status, 0);
    return o;
}

static void loopback(struct sockaddr_storage *s, int port)
{
    struct sockaddr_in *a = (struct sockaddr_in *)s;
    memset(s, 0, sizeof *s);
    a->sin_family = AF_INET;
    a->sin_port = htons((unsigned short)port);
    a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

static void sleep_ms(int ms)
{
    struct timespec ts;
    ts.tv_sec = ms / 1000; ts.tv_nsec = (long)(ms % 1000) * 1000000L;
    nanosleep(&ts, NULL);
}

/* Waits up to `ms` for one byte on a "ready" pipe. */
static int wait_ready(int fd, int ms)
{
    struct pollfd p;
    char b;
    p.fd = fd; p.events = POLLIN; p.revents = 0;
    return poll(&p, 1, ms) == 1 && read(fd, &b, 1) == 1;
}

/* The port of the 127.0.0.1 listener that process `pid` holds: its socket
   inodes from /proc/PID/fd, matched against the LISTEN rows of
   /proc/net/tcp. Only ever a socket of our own child. 0 if none yet. */
static int listener_of(pid_t pid)
{
    char path[64], link[64], line[512];
    unsigned long inodes[64];
    int n = 0, port = 0, i;
    DIR *d;
    struct dirent *e;
    FILE *f;
    snprintf(path, sizeof path, "/proc/%d/fd", (int)pid);
    if (!(d = opendir(path))) return 0;
    while ((e = readdir(d)) && n < 64) {
        char fdpath[400];
        ssize_t k;
        snprintf(fdpath, sizeof fdpath, "%s/%s", path, e->d_name);
        k = readlink(fdpath, link, sizeof link - 1);
        if (k <= 0) continue;
        link[k] = 0;
        if (sscanf(link, "socket:[%lu]", &inodes[n]) == 1) n++;
    }
    closedir(d);
    if (!(f = fopen("/proc/net/tcp", "r"))) return 0;
    while (!port && fgets(line, sizeof line, f)) {
        unsigned addr, lport, st;
        unsigned long inode;
        if (sscanf(line, " %*d: %x:%x %*x:%*x %x %*x:%*x %*x:%*x %*x %*d %*d %lu",
                   &addr, &lport, &st, &inode) != 4 || st != 0x0A)
            continue;
        for (i = 0; i < n; i++) if (inodes[i] == inode) port = (int)lport;
    }
    fclose(f);
    return port;
}

#endif
