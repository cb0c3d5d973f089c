/* test_shm_room.c - the shm port where /dev/shm is too small for its segment
   (ports/coll_shm.h, "Rank 0 reserves every page of the segment").

   tmpfs lets ftruncate size an object past the room the mount has; the
   first touch of a page beyond it is a SIGBUS. So every rank must get
   COLL_ERR_NOSPC from coll_shm_open, with both sizes in s->why, and no
   rank may die of a signal. The test makes its own /dev/shm: it enters a
   private mount namespace (unshare) and mounts a small tmpfs over
   /dev/shm for each case, so the host's is never touched. That needs
   root; without it the test skips loudly, and under CI=true fails.

   Cases (forked ranks, coll_shm_open with a 3 s deadline, then - where it
   succeeds - a ring all-reduce and an all-to-all checked against a plain
   loop, which touch every channel the algorithms use):
     - room for 2 ranks' segment and 256 KiB (789 KiB with the
       defaults), 2 ranks: the segment fits, the calls are right;
     - the same room, 4 and 8 ranks; 64 MiB (Docker's default), 32 ranks
       (133 MiB): COLL_ERR_NOSPC on every rank, the reason names the room
       and the size, no signal, within 2 s;
     - a /dev/shm already full (a file holds all of it, so not even rank
       0's 64-byte record fits): rank 0 COLL_ERR_NOSPC, the others
       COLL_ERR_TIMEOUT at their deadline, every reason naming both sizes.
   Ends with "shm-room: N passed, N failed". */
#define _GNU_SOURCE 1
#define COLL_IMPLEMENTATION
#define COLL_SHM_IMPLEMENTATION
#include "ports/coll_shm.h"

#include <sched.h>
#include <sys/mount.h>
#include <sys/statvfs.h>

static long g_pass, g_fail;

#define CHECK(cond, ...) do {                                                 \
        if (cond) g_pass++;                                                    \
        else { g_fail++; fprintf(stderr, "test_shm_room.c:%d: ", __LINE__);    \
               fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); }           \
    } while (0)

enum { MAXR = 32, N = 4096 };

typedef struct report {
    int rc;                    /* coll_shm_open's code                      */
    int calls_ok;              /* -1 not run, 0 a call failed or was wrong  */
    long long ms;              /* how long coll_shm_open took               */
    char why[200];
} report;

static long long now_ms(void)
{
    return (long long)(coll_shm__now_ns() / 1000000u);
}

static int32_t input(int rank, int i)
{
    return (int32_t)((rank * 131 + i * 7) % 1001) - 500;
}

/* A ring all-reduce and an all-to-all, each compared with a plain loop. */
static int run_calls(coll_port *port, int rank, int n)
{
    static unsigned char scratch[1 << 16];
    static int32_t a[N], b[N];
    coll_comm c;
    int i, r, ok = coll_init(&c, rank, n, port, scratch, sizeof scratch) == COLL_OK;
    for (i = 0; i < N; i++) a[i] = input(rank, i);
    ok = ok && coll_allreduce(&c, a, a, N, COLL_INT32, COLL_SUM, COLL_ALGO_RING) == COLL_OK;
    for (i = 0; ok && i < N; i++) {
        int32_t want = 0;
        for (r = 0; r < n; r++) want += input(r, i);
        ok = a[i] == want;
    }
    for (i = 0; i < N; i++) a[i] = input(rank, i);
    ok = ok && coll_alltoall(&c, a, b, (size_t)(N / n), COLL_INT32, COLL_ALGO_AUTO) == COLL_OK;
    for (r = 0; ok && r < n; r++)            /* block r came from rank r */
        for (i = 0; ok && i < N / n; i++)
            ok = b[r * (N / n) + i] == input(r, rank * (N / n) + i);
    return ok;
}

static void rank_main(int rank, int n, const char *name, int fd)
{
    static coll_shm s;
    coll_port port;
    report rep;
    long long t0 = now_ms();
    memset(&rep, 0, sizeof rep);
    rep.rc = coll_shm_open(&s, name, rank, n, 3000, &port);
    rep.ms = now_ms() - t0;
    rep.calls_ok = -1;
    if (s.why) snprintf(rep.why, sizeof rep.why, "%s", s.why);
    if (rep.rc == COLL_OK) {
        rep.calls_ok = run_calls(&port, rank, n);
        coll_shm_close(&s);
    }
    if (write(fd, &rep, sizeof rep) != (ssize_t)sizeof rep) _exit(3);
    _exit(0);
}

/* Mounts a fresh tmpfs of `kib` KiB over /dev/shm (inside our namespace). */
static int mount_shm(unsigned kib)
{
    char opt[64];
    snprintf(opt, sizeof opt, "size=%uk,mode=1777", kib);
    return mount("tmpfs", "/dev/shm", "tmpfs", 0, opt);
}

/* Runs n ranks on the current /dev/shm. Each rank's report in rep[],
   and how many ranks did not exit normally (a signal). */
static int run_group(int n, report *rep)
{
    pid_t pid[MAXR];
    int pfd[MAXR][2], r, killed = 0;
    char name[64];
    snprintf(name, sizeof name, "/coll_room_%d", (int)getpid());
    fflush(NULL);
    for (r = 0; r < n; r++) {
        if (pipe(pfd[r]) < 0) { perror("pipe"); exit(2); }
        pid[r] = fork();
        if (pid[r] < 0) { perror("fork"); exit(2); }
        if (pid[r] == 0) {
            int k;
            alarm(20);                         /* a backstop, never expected */
            for (k = 0; k <= r; k++) close(pfd[k][0]);
            rank_main(r, n, name, pfd[r][1]);
        }
        close(pfd[r][1]);
    }
    for (r = 0; r < n; r++) {
        int st = 0;
        memset(&rep[r], 0, sizeof rep[r]);
        if (read(pfd[r][0], &rep[r], sizeof rep[r]) != (ssize_t)sizeof rep[r]) {
            rep[r].rc = -9999;
            snprintf(rep[r].why, sizeof rep[r].why, "(no report)");
        }
        close(pfd[r][0]);
        waitpid(pid[r], &st, 0);
        if (!WIFEXITED(st)) {
            killed++;
            fprintf(stderr, "    rank %d of %d: killed by signal %d\n", r, n,
                    WIFSIGNALED(st) ? WTERMSIG(st) : -1);
        }
    }
    shm_unlink(name);                          /* nothing should be left, but */
    return killed;
}

static void case_fits(unsigned kib, int n)
{
    report rep[MAXR];
    int r, killed;
    if (mount_shm(kib) != 0) { CHECK(0, "mount %u KiB tmpfs: %s", kib, strerror(errno)); return; }
    killed = run_group(n, rep);
    CHECK(killed == 0, "%u KiB, %d ranks: %d ranks killed", kib, n, killed);
    for (r = 0; r < n; r++) {
        CHECK(rep[r].rc == COLL_OK, "%u KiB, %d ranks: rank %d open %d (%s)", kib, n, r,
              rep[r].rc, rep[r].why);
        CHECK(rep[r].calls_ok == 1, "%u KiB, %d ranks: rank %d calls wrong or failed", kib, n, r);
    }
    umount("/dev/shm");
}

static void case_no_room(unsigned kib, int n)
{
    report rep[MAXR];
    int r, killed;
    if (mount_shm(kib) != 0) { CHECK(0, "mount %u KiB tmpfs: %s", kib, strerror(errno)); return; }
    killed = run_group(n, rep);
    CHECK(killed == 0, "%u KiB, %d ranks: %d ranks killed by a signal", kib, n, killed);
    for (r = 0; r < n; r++) {
        CHECK(rep[r].rc == COLL_ERR_NOSPC, "%u KiB, %d ranks: rank %d open returned %d, want "
              "COLL_ERR_NOSPC (%s)", kib, n, r, rep[r].rc, rep[r].why);
        CHECK(strstr(rep[r].why, "KiB free") && strstr(rep[r].why, "needs"),
              "%u KiB, %d ranks: rank %d's reason names no sizes: %s", kib, n, r, rep[r].why);
        CHECK(rep[r].ms < 2000, "%u KiB, %d ranks: rank %d took %lld ms", kib, n, r, rep[r].ms);
    }
    printf("    %u KiB, %d ranks, rank %d: %s\n", kib, n, n - 1, rep[n - 1].why);
    umount("/dev/shm");
}

/* /dev/shm full to the last page: rank 0 cannot even leave its record. */
static void case_full(void)
{
    report rep[4];
    struct statvfs v;
    int r, killed, fd, e;
    if (mount_shm(256) != 0) { CHECK(0, "mount tmpfs: %s", strerror(errno)); return; }
    fd = open("/dev/shm/filler", O_RDWR | O_CREAT, 0600);
    for (e = 0; fd >= 0 && e == 0;)            /* a page at a time, to the end */
        e = posix_fallocate(fd, lseek(fd, 0, SEEK_END), 4096);
    CHECK(fd >= 0 && fstatvfs(fd, &v) == 0 && v.f_bavail == 0, "could not fill /dev/shm");
    killed = run_group(4, rep);
    CHECK(killed == 0, "full /dev/shm: %d ranks killed by a signal", killed);
    CHECK(rep[0].rc == COLL_ERR_NOSPC, "full /dev/shm: rank 0 returned %d (%s)", rep[0].rc, rep[0].why);
    for (r = 1; r < 4; r++)
        CHECK(rep[r].rc == COLL_ERR_TIMEOUT, "full /dev/shm: rank %d returned %d, want "
              "COLL_ERR_TIMEOUT (%s)", r, rep[r].rc, rep[r].why);
    for (r = 0; r < 4; r++)
        CHECK(strstr(rep[r].why, "KiB free") && strstr(rep[r].why, "needs"),
              "full /dev/shm: rank %d's reason names no sizes: %s", r, rep[r].why);
    printf("    full, rank 1: %s\n", rep[1].why);
    if (fd >= 0) close(fd);
    umount("/dev/shm");
}

int main(void)
{
    const char *ci = getenv("CI");
    printf("shm port on a /dev/shm too small for its segment (private tmpfs mounts):\n");
    if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
        printf("*** cannot make a private mount namespace (%s): needs root - SKIPPING ***\n",
               strerror(errno));
        if (ci && strcmp(ci, "true") == 0) g_fail++;
        printf("shm-room: %ld passed, %ld failed\n", g_pass, g_fail);
        return g_fail != 0;
    }
    {   /* a room that holds 2 ranks' segment and 256 KiB more, whatever the
           configuration (533 + 256 KiB with the defaults), and not 4 ranks' */
        unsigned room = (unsigned)(coll_shm__bytes(2) / 1024) + 256;
        case_fits(room, 2);
        case_no_room(room, 4);
        case_no_room(room, 8);
    }
    case_no_room(64 * 1024, 32);              /* Docker's default; 133 MiB */
    case_full();
    printf("shm-room: %ld passed, %ld failed\n", g_pass, g_fail);
    return g_fail != 0;
}
