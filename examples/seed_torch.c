/* seed_torch.c - naive and ring all-reduce as in the torch.distributed seed,
   four processes talking TCP, launched the torchrun way.

   The seed (all_reduce.py) builds naive_all_reduce from reduce-to-rank-0 +
   broadcast, and ring_all_reduce from isend/recv around a ring (a
   scatter-reduce phase, then an all-gather phase), on 4 processes over the
   gloo backend, each tensor filled with its rank - and notes that the
   tensor "has to be a multiple of world_size". Here both are coll's
   COLL_ALGO_NAIVE and COLL_ALGO_RING, in place, on a tensor of 10 int64
   elements over 4 ranks: 10 is not a multiple of 4, so the ring's chunks are
   3, 3, 2, 2 elements. Each rank checks its result against a plain loop and
   prints it with the bytes it sent: the naive root sends (p-1)·n, every
   ring rank about 2(p-1)/p·n - the seed's cost 2(p-1)(t_s + (m/p) t_w).

   Run:  make seed-torch          (this program starts the 4 ranks itself)
         seed_torch N rank        N elements filled with the rank, as the seed
                                  does (the seed: N = 4); "ramp" (the
                                  default) fills rank r with r*10 + i
   or start each rank yourself, on one host or several:
         export COLL_TCP_TOKEN=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
         MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 WORLD_SIZE=4 RANK=0 build/tcp/seed_torch &
         MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 WORLD_SIZE=4 RANK=1 build/tcp/seed_torch &
         ...
   (every rank needs the same COLL_TCP_TOKEN; the launcher makes one).
*/
#define _POSIX_C_SOURCE 200809L
#define COLL_IMPLEMENTATION
#include "coll.h"
#define COLL_TCP_IMPLEMENTATION
#include "ports/coll_tcp.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

enum { WORLD = 4, MAXN = 64 };
static int N = 10, fill_rank;     /* the tensor's length and how it is filled */

static int64_t input(int rank, int i) { return fill_rank ? rank : rank * 10 + i; }

/* One rank: returns the number of failed checks (0, 1 or 2). */
static int rank_main(void)
{
    static const coll_algo algos[2] = { COLL_ALGO_NAIVE, COLL_ALGO_RING };
    static coll_tcp t;
    static unsigned char scratch[4096];
    coll_comm c;
    coll_port port;
    int a, i, r, failed = 0, rc = coll_tcp_init_env(&t, 10000);
    if (rc) {
        fprintf(stderr, "rendezvous failed: %s\n", coll_result_str(rc));
        return 2;
    }
    port = coll_tcp_port(&t);
    coll_init(&c, t.rank, t.nranks, &port, scratch, sizeof scratch);
    for (a = 0; a < 2; a++) {
        int64_t tensor[MAXN];
        unsigned long long sent = t.bytes_sent;
        int ok = 1;
        for (i = 0; i < N; i++) tensor[i] = input(t.rank, i);   /* rank r: r0, r1, r2, ... */
        rc = coll_allreduce(&c, tensor, tensor, N, COLL_INT64, COLL_SUM, algos[a]);
        sent = t.bytes_sent - sent;
        for (i = 0; i < N; i++) {                             /* the plain-loop reference */
            int64_t want = 0;
            for (r = 0; r < t.nranks; r++) want += input(r, i);
            ok &= rc == COLL_OK && tensor[i] == want;
        }
        failed += !ok;
        /* print in rank order: each rank waits its turn behind a barrier */
        for (r = 0; r < t.nranks; r++) {
            if (r == t.rank) {
                printf("%-5s %d tensor([", coll_algo_name(algos[a]), t.rank);
                for (i = 0; i < N; i++) printf(i ? ", %lld" : "%lld", (long long)tensor[i]);
                printf("])  sent %llu bytes  %s\n", sent,
                       ok ? "ok" : rc ? coll_result_str(rc) : "WRONG");
                fflush(stdout);
            }
            coll_barrier(&c, COLL_ALGO_AUTO);
        }
    }
    coll_tcp_close(&t);
    return failed;
}


/* No WORLD_SIZE in the environment: be the launcher. Start WORLD processes
   with the variables torchrun would set, on a port the kernel picks. */
static int launch(void)
{
    pid_t pid[WORLD];
    char port[16], num[16];
    int mport = coll_tcp_free_port(), r, failed = 0;
    if (mport < 0) {
        perror("seed_torch: no free port");
        return 1;
    }
    snprintf(port, sizeof port, "%d", mport);
    if (coll_tcp_token_env() != COLL_OK) { perror("seed_torch: no random source"); return 1; }   /* one secret per job */
    printf("MASTER_ADDR=127.0.0.1 MASTER_PORT=%s WORLD_SIZE=%d, tensor of %d int64 "
           "(%sa multiple of %d), all-reduce in place:\n", port, WORLD, N,
           N % WORLD ? "not " : "", WORLD);
    fflush(stdout);
    for (r = 0; r < WORLD; r++) {
        pid[r] = fork();
        if (pid[r] == 0) {
            setenv("MASTER_ADDR", "127.0.0.1", 1);
            setenv("MASTER_PORT", port, 1);
            snprintf(num, sizeof num, "%d", WORLD);
            setenv("WORLD_SIZE", num, 1);
            snprintf(num, sizeof num, "%d", r);
            setenv("RANK", num, 1);
            setenv("LOCAL_RANK", num, 1);
            _exit(rank_main());
        }
    }
    for (r = 0; r < WORLD; r++) {
        int status = 0;
        waitpid(pid[r], &status, 0);
        failed += WIFEXITED(status) ? WEXITSTATUS(status) : 2;
    }
    printf("seed-torch: %d passed, %d failed\n", 2 * WORLD - failed, failed);
    return failed != 0;
}

int main(int argc, char **argv)
{
    if (argc > 1) N = atoi(argv[1]);
    if (argc > 2) fill_rank = strcmp(argv[2], "rank") == 0;
    if (N < 1 || N > MAXN) { fprintf(stderr, "seed_torch: N must be 1..%d\n", MAXN); return 2; }
    if (getenv("WORLD_SIZE")) return rank_main() != 0;
    return launch();
}
