/* bench_ports.h - one world of p ranks over one of coll's ports, for the
   benchmark programs that measure coll itself (bench_coll.c, overlap.c)

   Ranks are threads of this process (ports/coll_threads.h), processes
   forked by the port's own launcher (ports/coll_shm.h), or processes
   forked here (bench_fork_ranks) that meet on 127.0.0.1 with a fresh port
   number and job token for each world, as a launcher makes them
   (ports/coll_tcp.h). Every world gets a fresh control block
   (bench_shmctl.h) that its ranks share.

   The ports are the ones the build found: BENCH_HAVE_THREADS, _SHM and
   _TCP, each set when ports/coll_<name>.h was there. This header includes
   them with their implementations, so include it once, after coll.h with
   COLL_IMPLEMENTATION, bench_common.h and bench_shmctl.h. */
#ifndef BENCH_PORTS_H
#define BENCH_PORTS_H

#ifdef BENCH_HAVE_THREADS
#define COLL_THREADS_IMPLEMENTATION
#include "../ports/coll_threads.h"
#endif
#ifdef BENCH_HAVE_SHM
#define COLL_SHM_IMPLEMENTATION
#include "../ports/coll_shm.h"
#endif
#ifdef BENCH_HAVE_TCP
#define COLL_TCP_IMPLEMENTATION
#include "../ports/coll_tcp.h"
#endif

/* bench_world_run's answer when the control block could not be made
   (more than BENCH_MAX_RANKS ranks, or no memory). */
#define BENCH_WORLD_NO_CTL (-2)

typedef struct bench_world bench_world;

/* What every rank does once its port is up: 0, or nonzero on a failure. */
typedef int (*bench_rank_fn)(bench_world *w, int rank, coll_port *port);

struct bench_world {
    const char *prog;            /* messages begin "<prog>: <tcp_name> rank R" */
    const char *tcp_name;
    unsigned timeout_ms;         /* the port's deadline                        */
    int p;
    bench_rank_fn fn;
    void *arg;                   /* the program's own                          */
    bench_shm *shm;              /* this world's control block                 */
    int tcp_port;
    char tcp_token[33];          /* the job token the tcp ranks share          */
#ifdef BENCH_HAVE_THREADS
    coll_threads *tw;
#endif
};

/* Whether the port `port` ("threads", "shm", "tcp") was built in. */
static inline int bench_port_built(const char *port)
{
#ifdef BENCH_HAVE_THREADS
    if (strcmp(port, "threads") == 0) return 1;
#endif
#ifdef BENCH_HAVE_SHM
    if (strcmp(port, "shm") == 0) return 1;
#endif
#ifdef BENCH_HAVE_TCP
    if (strcmp(port, "tcp") == 0) return 1;
#endif
    (void)port;
    return 0;
}

#ifdef BENCH_HAVE_THREADS
static inline int bench_world_threads_rank(int rank, void *arg)
{
    bench_world *w = (bench_world *)arg;
    coll_port port = coll_threads_port(w->tw, rank);
    return w->fn(w, rank, &port);
}
#endif

#ifdef BENCH_HAVE_SHM
static inline int bench_world_shm_rank(int rank, coll_port *port, void *arg)
{
    bench_world *w = (bench_world *)arg;
    return w->fn(w, rank, port);
}
#endif

#ifdef BENCH_HAVE_TCP
static inline int bench_world_tcp_rank(int rank, void *arg)
{
    bench_world *w = (bench_world *)arg;
    static coll_tcp t;           /* one per forked rank */
    coll_port port;
    int rc = coll_tcp_init_token(&t, "127.0.0.1", w->tcp_port, rank, w->p, w->timeout_ms,
                                 w->tcp_token);
    if (rc) {
        fprintf(stderr, "%s: %s rank %d: rendezvous failed (%d)\n", w->prog, w->tcp_name,
                rank, rc);
        return 1;
    }
    port = coll_tcp_port(&t);
    rc = w->fn(w, rank, &port);
    coll_tcp_close(&t);
    return rc;
}
#endif

/* Runs w->fn on w->p ranks over `port` with a fresh control block in
   w->shm. Returns 0 when every rank came back with 0; -1 for a port not
   built in or a world that did not start; BENCH_WORLD_NO_CTL when the
   control block could not be made; else the port launcher's answer. */
static inline int bench_world_run(bench_world *w, const char *port)
{
    int rc = -1;
    if (!(w->shm = bench_shm_create(w->p))) return BENCH_WORLD_NO_CTL;
    if (strcmp(port, "threads") == 0) {
#ifdef BENCH_HAVE_THREADS
        static coll_threads tw;
        if ((rc = coll_threads_init(&tw, w->p, w->timeout_ms)) == 0) {
            w->tw = &tw;
            rc = coll_threads_run(&tw, bench_world_threads_rank, w);
            coll_threads_destroy(&tw);
        }
#endif
    } else if (strcmp(port, "shm") == 0) {
#ifdef BENCH_HAVE_SHM
        fflush(stdout);
        rc = coll_shm_spawn(w->p, bench_world_shm_rank, w, w->timeout_ms);
#endif
    } else if (strcmp(port, "tcp") == 0) {
#ifdef BENCH_HAVE_TCP
        w->tcp_port = coll_tcp_free_port();
        rc = w->tcp_port > 0 && coll_tcp_new_token(w->tcp_token) == COLL_OK
             ? bench_fork_ranks(w->p, bench_world_tcp_rank, w) : -1;
#endif
    }
    bench_shm_destroy(w->shm);
    w->shm = NULL;
    return rc;
}

#endif /* BENCH_PORTS_H */
