/* bm_task.c - cooperative tasks on one core: each has its own stack, and
   one switches to another only by calling bm_switch (see bm.h).

   This is what lets several ranks on one core each make a *blocking* call:
   a rank that would wait (the mailbox port's `idle` hook) switches to the
   next rank instead, and is resumed where it stopped once the others have
   had their turn. No interrupts, no preemption, nothing shared but what the
   program shares on purpose.

   A suspended task's stack holds its callee-saved registers under the
   address where bm_switch resumes it; the stack pointer is all that is
   kept outside. bm_task_stack builds that frame for a task that has not
   run yet, with its entry function as the return address. */
#include "bm.h"

#if defined(__arm__)
/* Callee-saved: r4-r11, and s16-s31 when the FPU is in use. Thumb-1 can
   push only r0-r7 and lr, so r8-r11 go through r4-r7 (the same code serves
   the Cortex-M0+). Frame, from the saved sp up: [s16-s31], r8-r11, r4-r7,
   return address. */
#if defined(__ARM_FP)
#define BM_TASK_FP_WORDS 16
#define BM_VPUSH "    vpush {s16-s31}\n"
#define BM_VPOP  "    vpop {s16-s31}\n"
#else
#define BM_TASK_FP_WORDS 0
#define BM_VPUSH ""
#define BM_VPOP  ""
#endif
#define BM_TASK_WORDS (9 + BM_TASK_FP_WORDS)
#define BM_TASK_RA    (BM_TASK_WORDS - 1)       /* slot of the return address */
__asm__(
    "    .text\n"
    "    .syntax unified\n"
    "    .thumb\n"
    "    .align 1\n"
    "    .globl bm_switch\n"
    "    .thumb_func\n"
    "    .type bm_switch, %function\n"
    "bm_switch:\n"
    "    push {r4-r7, lr}\n"
    "    mov r4, r8\n"
    "    mov r5, r9\n"
    "    mov r6, r10\n"
    "    mov r7, r11\n"
    "    push {r4-r7}\n"
    BM_VPUSH
    "    mov r2, sp\n"
    "    str r2, [r0]\n"
    "    mov sp, r1\n"
    BM_VPOP
    "    pop {r4-r7}\n"
    "    mov r8, r4\n"
    "    mov r9, r5\n"
    "    mov r10, r6\n"
    "    mov r11, r7\n"
    "    pop {r4-r7, pc}\n"
    "    .size bm_switch, . - bm_switch\n");

#elif defined(__riscv)
/* Callee-saved: ra, s0-s11 (no F registers on rv32imac/rv64imac). A frame
   of 16 slots keeps sp 16-byte aligned, as the psABI asks. */
#if __riscv_xlen == 64
#define BM_S "sd"
#define BM_L "ld"
#define BM_W "8"
#else
#define BM_S "sw"
#define BM_L "lw"
#define BM_W "4"
#endif
#define BM_TASK_WORDS 16
#define BM_TASK_RA    0
#define BM_REG(op, r, i) "    " op " " r ", " #i "*" BM_W "(sp)\n"
#define BM_REGS(op) \
    BM_REG(op, "ra", 0) BM_REG(op, "s0", 1) BM_REG(op, "s1", 2) BM_REG(op, "s2", 3) \
    BM_REG(op, "s3", 4) BM_REG(op, "s4", 5) BM_REG(op, "s5", 6) BM_REG(op, "s6", 7) \
    BM_REG(op, "s7", 8) BM_REG(op, "s8", 9) BM_REG(op, "s9", 10) BM_REG(op, "s10", 11) \
    BM_REG(op, "s11", 12)
__asm__(
    "    .text\n"
    "    .balign 4\n"
    "    .globl bm_switch\n"
    "    .type bm_switch, @function\n"
    "bm_switch:\n"
    "    addi sp, sp, -16*" BM_W "\n"
    BM_REGS(BM_S)
    "    " BM_S " sp, 0(a0)\n"
    "    mv sp, a1\n"
    BM_REGS(BM_L)
    "    addi sp, sp, 16*" BM_W "\n"
    "    ret\n"
    "    .size bm_switch, . - bm_switch\n");

#else
#error "bm_task.c: no bm_switch for this architecture"
#endif

void *bm_task_stack(void *stack, size_t bytes, void (*entry)(void))
{
    /* Top of the area, rounded down to 16 bytes; the frame sits under it. */
    size_t top = ((size_t)stack + bytes) & ~(size_t)15;
    size_t *frame = (size_t *)top - BM_TASK_WORDS;
    int i;
    for (i = 0; i < BM_TASK_WORDS; i++) frame[i] = 0;
    frame[BM_TASK_RA] = (size_t)entry;     /* Thumb: bit 0 is already set */
    return frame;
}
