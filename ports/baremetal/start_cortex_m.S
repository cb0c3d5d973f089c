/* start_cortex_m.S - reset to main() on any Cortex-M (v6-M and up).

   A Cortex-M needs no assembly to boot: the core loads the stack pointer
   from word 0 of the vector table and jumps to word 1. What is left is C's
   promise about memory: initialised data copied from flash to RAM, the
   rest of RAM's statics zeroed. Thumb-1 instructions only, so the same
   file serves the Cortex-M0+. */
    .syntax unified
    .thumb

    .section .vectors, "a"
    .align 2
    .globl __vectors
__vectors:
    .word __stack_top        /* 0: initial stack pointer                   */
    .word bm_reset           /* 1: reset                                   */
    .word bm_fault_entry     /* 2: NMI                                     */
    .word bm_fault_entry     /* 3: HardFault                               */
    .word bm_fault_entry     /* 4: MemManage                               */
    .word bm_fault_entry     /* 5: BusFault                                */
    .word bm_fault_entry     /* 6: UsageFault                              */
    .word 0, 0, 0, 0         /* 7-10: reserved                             */
    .word bm_fault_entry     /* 11: SVCall                                 */
    .word bm_fault_entry     /* 12: debug monitor                          */
    .word 0                  /* 13: reserved                               */
    .word bm_fault_entry     /* 14: PendSV                                 */
    .word bm_fault_entry     /* 15: SysTick                                */

    .text
    .align 1
    .globl bm_reset
    .thumb_func
    .type bm_reset, %function
bm_reset:
    /* .data: from its load address in flash to its place in RAM. */
    ldr r0, =__data_load
    ldr r1, =__data_start
    ldr r2, =__data_end
1:  cmp r1, r2
    bhs 2f
    ldr r3, [r0]
    str r3, [r1]
    adds r0, #4
    adds r1, #4
    b 1b
    /* .bss: zero. */
2:  ldr r1, =__bss_start
    ldr r2, =__bss_end
    movs r3, #0
3:  cmp r1, r2
    bhs 4f
    str r3, [r1]
    adds r1, #4
    b 3b
4:
#if defined(__ARM_FP)
    /* Hard-float builds use the FPU from the first C function on: grant
       CP10 and CP11 full access in CPACR before any of them runs. */
    ldr r0, =0xE000ED88
    ldr r1, [r0]
    ldr r2, =(0xF << 20)
    orrs r1, r2
    str r1, [r0]
    dsb
    isb
#endif
    bl bm_stack_paint        /* for the high-water mark, bm_stack_used()   */
    bl main
    bl bm_exit               /* main's return value is the exit code      */
    .size bm_reset, . - bm_reset

    .thumb_func
    .type bm_fault_entry, %function
bm_fault_entry:
    ldr r0, =__stack_top     /* a fault may come from a blown stack        */
    mov sp, r0
    bl bm_fault
    .size bm_fault_entry, . - bm_fault_entry

/* long bm_semihost(long op, void *arg): op in r0, arg in r1, answer in r0.
   On M-profile cores semihosting is the breakpoint instruction with
   immediate 0xab. */
    .globl bm_semihost
    .thumb_func
    .type bm_semihost, %function
bm_semihost:
    bkpt 0xab
    bx lr
    .size bm_semihost, . - bm_semihost
    .pool
