/* min_allreduce.c - the smallest firmware that uses coll: four ranks on one
   core, each calling only coll_init and the blocking coll_allreduce (ring,
   float32 sum), and a check of every rank's result.

   It is the image `make size` measures for the "minimal" profile: the
   library is its own object (ports/baremetal/coll_lib.c, built with
   BM_MIN_DEFS), everything is compiled with -ffunction-sections
   -fdata-sections and linked with --gc-sections, so the library's share of
   the image is exactly what this program needs of it. `make qemu-min` runs
   it on a Cortex-M3 and an RV32 core.

   A blocking call cannot wait on one core: nothing else would run. So each
   rank is a cooperative task with its own stack (bm_task.c), and the
   mailbox port's `idle` hook, called whenever a rank would wait, switches
   to the next rank. Rank 0 runs on main's stack; when it has its result,
   main keeps switching until the others have theirs too. The painted task
   stacks then tell how deep a blocking all-reduce really went, port and
   switch included. */
#include "coll.h"
#define COLL_MAILBOX_MAX_RANKS 4         /* size the mailbox for this program */
#define COLL_MAILBOX_IMPLEMENTATION
#include "ports/coll_mailbox.h"
#include "bm.h"

#define RANKS 4
#define N 10
#define TASK_STACK 2048
#define PAINT 0xa5u

static coll_mailbox world;
static coll_comm comm[RANKS];
static float data[RANKS][N];
static uint64_t scratch[RANKS][16];            /* 128 bytes, 8-aligned */
static uint64_t stacks[RANKS - 1][TASK_STACK / 8]; /* ranks 1..; 0 has main's */

static void *saved_sp[RANKS];   /* where each suspended rank's stack stops */
static int current;             /* the rank running now */
static int finished[RANKS];
static int result[RANKS];

/* The idle hook: give the next rank that still has work a turn. Rank 0
   never counts as finished, so the round always comes back to main. */
static void next_rank(void *user)
{
    int from = current, to = current;
    (void)user;
    do to = (to + 1) % RANKS; while (finished[to] && to != from);
    if (to == from) return;
    current = to;
    bm_switch(&saved_sp[from], saved_sp[to]);
}

static void run_rank(int r)
{
    coll_port port = { 0 };
    int i;
    port = coll_mailbox_port(&world, r);
    for (i = 0; i < N; i++) data[r][i] = (float)(r + 1) * 0.5f + (float)i;
    result[r] = coll_init(&comm[r], r, RANKS, &port, scratch[r], sizeof scratch[r]);
    if (result[r] == COLL_OK)
        result[r] = coll_allreduce(&comm[r], data[r], data[r], N, COLL_FLOAT32, COLL_SUM,
                                   COLL_ALGO_RING);
}

static void rank_task(void)
{
    int r = current;
    run_rank(r);
    finished[r] = 1;
    for (;;) next_rank(0);          /* never resumed again */
}

/* Deepest use of a task's stack: the painted bytes left at its low end. */
static unsigned long stack_used(int r)
{
    const unsigned char *p = (const unsigned char *)stacks[r - 1];
    unsigned long n = 0;
    while (n < sizeof stacks[0] && p[n] == PAINT) n++;
    return (unsigned long)sizeof stacks[0] - n;
}

static int others_running(void)
{
    int r, n = 0;
    for (r = 1; r < RANKS; r++) n += !finished[r];
    return n;
}

static void put_num(const char *before, unsigned long v, const char *after)
{
    char buf[24], *p = buf + sizeof buf;
    *--p = '\0';
    do *--p = (char)('0' + v % 10); while ((v /= 10) != 0);
    bm_puts(before); bm_puts(p); bm_puts(after);
}

int main(void)
{
    unsigned long deepest = 0;
    int r, i, bad = 0;

    coll_mailbox_init(&world, RANKS);
    world.idle = next_rank;
    for (r = 1; r < RANKS; r++) {
        unsigned char *s = (unsigned char *)stacks[r - 1];
        unsigned j;
        for (j = 0; j < sizeof stacks[0]; j++) s[j] = PAINT;
        saved_sp[r] = bm_task_stack(s, sizeof stacks[0], rank_task);
    }
    run_rank(0);
    while (others_running()) next_rank(0);

    for (r = 0; r < RANKS; r++) {
        if (result[r] != COLL_OK) { put_num("rank ", (unsigned long)r, ": coll_allreduce failed\n"); bad++; }
        for (i = 0; i < N; i++)     /* 0.5 * (1+2+3+4) + 4i, exact in float */
            if (data[r][i] != 5.0f + 4.0f * (float)i) { put_num("rank ", (unsigned long)r, ": wrong sum\n"); bad++; break; }
    }
    for (r = 1; r < RANKS; r++)
        if (stack_used(r) > deepest) deepest = stack_used(r);
    put_num("min_allreduce: ring all-reduce of ", N, " floats on ");
    put_num("", RANKS, " ranks, ");
    put_num("", world.msgs_sent[0] + world.msgs_sent[1] + world.msgs_sent[2] + world.msgs_sent[3],
            " messages\n");
    put_num("min_allreduce: deepest rank stack ", deepest,
            " bytes (coll_allreduce + mailbox port + task switch)\n");
    bm_puts(bad ? "min_allreduce: WRONG RESULTS\n" : "min_allreduce: all ranks agree with the reference\n");
    return bad != 0;
}
