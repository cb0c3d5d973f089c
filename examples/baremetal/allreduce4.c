/* allreduce4.c - four ranks on one microcontroller core, each a state
   machine, all-reducing a float32 vector over mailboxes in RAM.

   This is the shape of firmware that drives coll from its main loop (or a
   timer tick): start a request per rank, then keep calling coll_progress,
   which never blocks, until every rank reports COLL_OK. `make qemu` runs it
   on a Cortex-M3 and an RV32 core; it exits non-zero if any rank's result
   differs from the sum computed by a plain loop. */
#define COLL_IMPLEMENTATION
#include "coll.h"
#define COLL_MAILBOX_MAX_RANKS 4         /* size the mailbox for this program */
#define COLL_MAILBOX_IMPLEMENTATION
#include "ports/coll_mailbox.h"
#include "bm.h"

#define RANKS 4
#define N 10

static coll_mailbox world;          /* the whole transport: plain memory */
static coll_comm comm[RANKS];
static coll_request req[RANKS];
static float data[RANKS][N];           /* each rank's vector, reduced in place */
static unsigned char scratch[RANKS][128];

int main(void)
{
    const coll_algo algos[3] = { COLL_ALGO_RING, COLL_ALGO_TREE, COLL_ALGO_NAIVE };
    int a, r, i, bad = 0;

    for (a = 0; a < 3; a++) {
        coll_args args;
        int rc[RANKS], busy, spins = 0;

        coll_mailbox_init(&world, RANKS);
        for (r = 0; r < RANKS; r++) {
            coll_port port;
            port = coll_mailbox_port(&world, r);
            coll_init(&comm[r], r, RANKS, &port, scratch[r], sizeof scratch[r]);
            for (i = 0; i < N; i++) data[r][i] = (float)(r + 1) * 0.5f + (float)i;
        }
        /* One description; each rank gets its own buffers. */
        for (r = 0; r < RANKS; r++) {
            args.kind = COLL_ALLREDUCE; args.algo = algos[a];
            args.src = data[r]; args.dst = data[r]; args.count = N;
            args.counts = 0; args.dtype = COLL_FLOAT32; args.op = COLL_SUM;
            args.root = 0; args.group = 0;
            rc[r] = coll_start(&req[r], &comm[r], &args);
            if (rc[r] == COLL_OK) rc[r] = COLL_AGAIN;
        }
        /* The main loop: give every unfinished rank a turn. */
        do {
            busy = 0;
            for (r = 0; r < RANKS; r++)
                if (rc[r] == COLL_AGAIN) {
                    rc[r] = coll_progress(&req[r]);
                    busy += rc[r] == COLL_AGAIN;
                }
        } while (busy && ++spins < 100000);

        bm_printf("allreduce/%s on %d ranks, %lu messages:", coll_algo_name(algos[a]), RANKS,
                  world.msgs_sent[0] + world.msgs_sent[1] + world.msgs_sent[2] + world.msgs_sent[3]);
        for (i = 0; i < 4; i++) bm_printf(" %g", (double)data[0][i]);
        bm_printf(" ...\n");
        for (r = 0; r < RANKS; r++) {
            if (rc[r] != COLL_OK) { bm_printf("  rank %d: %s\n", r, coll_result_str(rc[r])); bad++; }
            for (i = 0; i < N; i++)    /* 0.5 * (1+2+3+4) + 4i, exact in float */
                if (data[r][i] != 5.0f + 4.0f * (float)i) { bad++; break; }
        }
    }
    bm_printf("allreduce4: %s\n", bad ? "WRONG RESULTS" : "all ranks agree with the reference");
    return bad != 0;
}
