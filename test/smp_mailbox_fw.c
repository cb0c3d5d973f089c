/* smp_mailbox_fw.c - ports/coll_smp_mailbox.h as firmware for one core of
   a multi-core microcontroller: compiled freestanding for Cortex-M4 by
   `make test-smp-mailbox` (as C11 with <stdatomic.h>, and as C99 with
   COLL_SMP_BARRIER() a DMB), which then checks that the object needs
   nothing from a C library but memcpy, and holds both roads: messages
   through the rings, and windows (coll_window.h: each core reads the
   other's buffers in the shared SRAM). Compiled only, never run. */
#define COLL_IMPLEMENTATION
#include "coll_window.h"
#define COLL_SMP_MAILBOX_IMPLEMENTATION
#define COLL_SMP_MAILBOX_STATIC
#include "ports/coll_smp_mailbox.h"

#define NRANKS 2
#define NSLOTS 8
#define SLOT   128

/* The block both cores see: the linker script would place this section in
   shared (non-cacheable) SRAM. */
__attribute__((section(".shared"), aligned(8)))
unsigned char smp_block[COLL_SMP_MAILBOX_BYTES(NRANKS, NSLOTS, SLOT)];

static coll_smp_mailbox mb;
static coll_comm comm;
static unsigned char scratch[512];

/* The boot core formats the block before it starts the other core. */
int smp_boot_format(void)
{
    return coll_smp_mailbox_format(smp_block, sizeof smp_block, NRANKS, NSLOTS, SLOT);
}

/* Each core: join as `rank`, then sum `n` floats with the other core. */
int smp_core_allreduce(int rank, float *x, size_t n)
{
    coll_port port;
    int rc = coll_smp_mailbox_init(&mb, smp_block, sizeof smp_block, rank, NRANKS, NSLOTS, SLOT);
    if (rc) return rc;
    port = coll_smp_mailbox_port(&mb);
    rc = coll_init(&comm, rank, NRANKS, &port, scratch, sizeof scratch);
    if (rc) return rc;
    rc = coll_allreduce(&comm, x, x, n, COLL_FLOAT32, COLL_SUM, COLL_ALGO_AUTO);
    coll_smp_mailbox_close(&mb);
    return rc;
}

/* The direct road: both cores' vectors lie in the shared SRAM (`region`,
   alike on both), and each folds its half of the sum straight from the
   other's buffer (coll_window.h's two-shot form, or one-shot when small). */
__attribute__((section(".shared"), aligned(8)))
float smp_vectors[NRANKS][256];

int smp_core_window_allreduce(int rank, size_t n)
{
    coll_port port;
    int rc = coll_smp_mailbox_init(&mb, smp_block, sizeof smp_block, rank, NRANKS, NSLOTS, SLOT);
    if (rc) return rc;
    if (n > 256) return COLL_ERR_INVAL;
    rc = coll_smp_mailbox_set_window(&mb, smp_vectors, sizeof smp_vectors);
    if (rc) return rc;
    port = coll_smp_mailbox_port(&mb);
    rc = coll_init(&comm, rank, NRANKS, &port, scratch, sizeof scratch);
    if (rc) return rc;
    rc = coll_window_allreduce(&comm, smp_vectors[rank], smp_vectors[rank], n, COLL_FLOAT32,
                               COLL_SUM, COLL_WINDOW_AUTO);
    coll_smp_mailbox_close(&mb);
    return rc;
}
