/* bench_shmctl.h - the benchmarks' control plane for ranks that share
   memory (threads, or processes forked from one parent): a process-shared
   barrier and one slot per rank in an anonymous shared mapping. It only
   tells the ranks when to start and combines their times and checks; it
   never carries the data being measured.

   Also: bench_fork_ranks, which runs fn(rank, arg) in p child processes. */
#ifndef BENCH_SHMCTL_H
#define BENCH_SHMCTL_H

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define BENCH_MAX_RANKS 64

typedef struct bench_shm {
    pthread_barrier_t b;
    int p;
    volatile double v[BENCH_MAX_RANKS];
} bench_shm;

typedef struct bench_shm_rank {
    bench_shm *s;
    int rank;
} bench_shm_rank;

static inline bench_shm *bench_shm_create(int p)
{
    pthread_barrierattr_t at;
    void *m;
    bench_shm *s;
    if (p < 1 || p > BENCH_MAX_RANKS) return NULL;
    m = mmap(NULL, sizeof(bench_shm), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    s = (bench_shm *)m;
    pthread_barrierattr_init(&at);
    pthread_barrierattr_setpshared(&at, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&s->b, &at, (unsigned)p);
    pthread_barrierattr_destroy(&at);
    s->p = p;
    return s;
}

static inline void bench_shm_destroy(bench_shm *s)
{
    pthread_barrier_destroy(&s->b);
    munmap(s, sizeof *s);
}

static inline void bench_shm_barrier(void *ctx)
{
    pthread_barrier_wait(&((bench_shm_rank *)ctx)->s->b);
}

/* Every rank writes its slot, all meet, all read every slot, all meet
   again so nobody overwrites a slot still being read. */
static inline double bench_shm_combine(void *ctx, double x, int want_max)
{
    bench_shm_rank *r = (bench_shm_rank *)ctx;
    bench_shm *s = r->s;
    double acc;
    int i;
    s->v[r->rank] = x;
    pthread_barrier_wait(&s->b);
    acc = s->v[0];
    for (i = 1; i < s->p; i++)
        acc = want_max ? (s->v[i] > acc ? s->v[i] : acc) : acc + s->v[i];
    pthread_barrier_wait(&s->b);
    return acc;
}
static inline double bench_shm_sum(void *ctx, double x) { return bench_shm_combine(ctx, x, 0); }
static inline double bench_shm_max(void *ctx, double x) { return bench_shm_combine(ctx, x, 1); }

/* Runs fn(rank, arg) in p forked children and waits for all of them.
   Returns 0 when every child exited 0. Children leave through _exit so
   the parent's stdio buffers are written once. */
static inline int bench_fork_ranks(int p, int (*fn)(int rank, void *arg), void *arg)
{
    pid_t pid[BENCH_MAX_RANKS];
    int r, started, bad = 0;
    fflush(stdout);
    fflush(stderr);
    for (started = 0; started < p; started++) {
        pid[started] = fork();
        if (pid[started] < 0) { bad = 1; break; }
        if (pid[started] == 0) {
            int rc = fn(started, arg);
            fflush(stdout);
            fflush(stderr);
            _exit(rc ? 1 : 0);
        }
    }
    if (bad)        /* the started children would wait forever for the missing ones */
        for (r = 0; r < started; r++) kill(pid[r], SIGTERM);
    for (r = 0; r < started; r++) {
        int st;
        if (waitpid(pid[r], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) bad = 1;
    }
    return bad;
}

#endif /* BENCH_SHMCTL_H */
