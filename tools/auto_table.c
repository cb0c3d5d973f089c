/* auto_table.c - what COLL_ALGO_AUTO picks, by message size and rank count,
   with the default α-β-γ constants and the call checks on, as a
   communicator starts (coll_choose; no data moves): a call small enough
   rides in the check rounds as the collective's dissemination row.
   make auto-table */
#define COLL_IMPLEMENTATION
#include "../coll.h"
#include <stdio.h>
#include <string.h>

static int never(void *c, int p, const void *b, size_t n) { (void)c; (void)p; (void)b; (void)n; return COLL_ERR_IO; }
static int never_r(void *c, int p, void *b, size_t n) { (void)c; (void)p; (void)b; (void)n; return COLL_ERR_IO; }

int main(void)
{
    static const coll_kind kinds[] = { COLL_ALLREDUCE, COLL_REDUCE_SCATTER, COLL_ALLGATHER,
                                       COLL_BROADCAST, COLL_REDUCE, COLL_ALLTOALL };
    static const int ps[] = { 2, 3, 4, 8, 16, 64, 256, 4096 };
    static const size_t sizes[] = { 8, 1024, 65536, 1u << 20, 16u << 20, 256u << 20 };
    static unsigned char scratch[1 << 17];
    coll_port port;
    size_t k, si, pi;
    memset(&port, 0, sizeof port);
    port.send = never; port.recv = never_r;
    for (k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        printf("\n%s (bytes = whole vector)\n\n| bytes |", coll_kind_name(kinds[k]));
        for (pi = 0; pi < sizeof ps / sizeof ps[0]; pi++) printf(" p=%d |", ps[pi]);
        printf("\n|---|");
        for (pi = 0; pi < sizeof ps / sizeof ps[0]; pi++) printf("---|");
        printf("\n");
        for (si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            printf("| %zu |", sizes[si]);
            for (pi = 0; pi < sizeof ps / sizeof ps[0]; pi++) {
                coll_comm c;
                coll_args a;
                int p = ps[pi];
                memset(&a, 0, sizeof a);
                a.algo = COLL_ALGO_AUTO; a.dtype = COLL_UINT8; a.op = COLL_SUM;
                coll_init(&c, 0, p, &port, scratch, sizeof scratch);
                a.kind = kinds[k];
                a.count = kinds[k] == COLL_ALLREDUCE || kinds[k] == COLL_BROADCAST ||
                          kinds[k] == COLL_REDUCE ? sizes[si] : sizes[si] / (size_t)p;
                printf(" %s |", coll_algo_name(coll_choose(&c, &a)));
            }
            printf("\n");
        }
    }
    return 0;
}
